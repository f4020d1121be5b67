"""A tiny 2-layer net trained for a few SGD steps; driven under ``python3 -m pdb`` by test_pdb.py.

The device comes from PDB_DEVICE (``cpu`` or ``neuron``), so one pdb command sequence can run
on both and the printed values can be compared. Model weights and batches are made on the CPU
from fixed seeds; the device model is a copy of the CPU-built weights. Markers (``# MARK-...``)
let the test find lines without hard-coding numbers.

Printed lines the test reads: ``LOSS <step> <value>`` each step, ``done`` at the end and, on
the neuron device, ``COMPILED <before the breakpoint step> <at the end>`` (ops_run_compiled).
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = os.environ.get("PDB_DEVICE", "cpu")
STEPS = int(os.environ.get("PDB_STEPS", "8"))
BREAK_STEP = int(os.environ.get("PDB_BREAK_STEP", "4"))  # the test's breakpoint condition
ON_NEURON = DEVICE == "neuron"
if ON_NEURON:
    import torch_trn


class TwoLayer(nn.Module):
    def __init__(self, d_in=16, hidden=32, n_classes=5):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, n_classes)


def compute_loss(model, x, y):
    h = model.fc1(x)  # MARK-H
    a = torch.relu(h)
    logits = model.fc2(a)
    loss = F.cross_entropy(logits, y)
    return loss


torch.manual_seed(0)
cpu_model = TwoLayer()
torch.manual_seed(1234)  # a different init: the copy below must overwrite it
model = TwoLayer()
model.load_state_dict(cpu_model.state_dict())
model = model.to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

g = torch.Generator().manual_seed(1)
batches = [(torch.randn(8, 16, generator=g), torch.randint(0, 5, (8,), generator=g))
           for _ in range(STEPS)]

compiled_before_break = None
for it in range(STEPS):
    if ON_NEURON and it == BREAK_STEP:
        compiled_before_break = torch_trn.stats()["ops_run_compiled"]
    x, y = batches[it][0].to(DEVICE), batches[it][1].to(DEVICE)
    loss = compute_loss(model, x, y)  # MARK-BREAK
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("LOSS", it, repr(loss.item()))
    if ON_NEURON and it < BREAK_STEP:
        torch_trn.wait_for_compiles()  # warm-up: the later steps find their groups compiled

if ON_NEURON:
    torch_trn.sync()
    print("COMPILED", compiled_before_break, torch_trn.stats()["ops_run_compiled"])
print("done")
