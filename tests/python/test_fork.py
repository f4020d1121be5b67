"""Fork after device use (issue 34 item 2), as CUDA handles it.

A process forked after its parent started the device has none of the device's threads (the
executor, the compilers), so it is marked "bad fork": torch.neuron._is_in_bad_fork() is True
there, every device use raises `RuntimeError: Cannot re-initialize neuron in forked subprocess`
at once (before the fix, the child waited for good for an executor thread that does not exist),
torch.manual_seed leaves the device alone, and CPU work is unaffected. So a DataLoader with
forked workers (which call torch.manual_seed) can feed a model on the device.

Each mode runs in a fresh process (the mode is read at import), under a timeout: a hang fails
the test instead of hanging the suite. Expected losses come from PyTorch CPU, computed here.
"""
import math

import pytest
import torch

from helpers import ROOT, last_json, run_python

MODES = ["eager", "compile", "adaptive"]
STEPS = 3

# The dataset builds each batch in the worker process, from CPU ops only.
DATASET = """
import torch

class Batches(torch.utils.data.Dataset):
    def __len__(self):
        return {steps}

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(100 + i)
        x = torch.randn(8, 16, generator=g) * 0.5 + torch.arange(16.0) / 16
        return x, torch.randint(0, 5, (8,), generator=g)
""".format(steps=STEPS)

PROGRAM = DATASET + """
import json, os, sys, time
import torch_trn
sys.path.insert(0, {tests!r})
from models import make_model

dev = torch_trn.device()
x = torch.ones(4).to(dev) * 2
assert x.sum().item() == 8.0
y = x + 1  # still queued at the fork in compile mode (pending segment)

# 1. os.fork after device use: the child fails fast on device use, works on the CPU.
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    out = {{"bad_fork": torch.neuron._is_in_bad_fork(), "initialized": torch.neuron.is_initialized()}}
    errors = {{}}
    for name, use in [("read", lambda: y.cpu()), ("op", lambda: x * 3), ("factory", lambda: torch.ones(2, device=dev)),
                      ("to_device", lambda: torch.ones(2).to(dev)), ("sync", torch_trn.sync),
                      ("synchronize", torch.neuron.synchronize), ("rng_state", torch.neuron.get_rng_state)]:
        try:
            use()
            errors[name] = None
        except RuntimeError as e:
            errors[name] = str(e)
    torch.manual_seed(3)  # what a DataLoader worker does: must leave the device alone
    out["cpu"] = (torch.arange(4.0) * 2).sum().item()
    out["errors"] = errors
    os.write(w, json.dumps(out).encode())
    os.close(w)
    sys.exit(0)  # a normal exit (atexit handlers run): must not wait for the parent's device
os.close(w)
deadline = time.monotonic() + 30
status = None
while time.monotonic() < deadline:
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = st
        break
    time.sleep(0.01)
if status is None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
child = json.loads(os.read(r, 1 << 16) or b"null")
parent = {{"bad_fork": torch.neuron._is_in_bad_fork(), "y": (y * 2).sum().item()}}

# 2. DataLoader with forked workers feeding a device model. The workers are forked while device
# ops are still queued (compile and adaptive mode: in the pending segment), as in a loop that
# reads its losses only now and then; each worker calls torch.manual_seed. A worker that hangs
# fails the loop after `timeout` seconds.
model = make_model("mlp").to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
queued = (x * 5).sum()
loader = torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=2, multiprocessing_context="fork",
                                     timeout=30)
losses = []
for xb, yb in loader:
    loss = model.loss(xb.to(dev), yb.to(dev))
    loss.backward(); opt.step(); opt.zero_grad()
    losses.append(loss.item())
parent["queued"] = queued.item()
print(json.dumps({{"child_status": status, "child": child, "parent": parent, "losses": losses}}))
"""


def cpu_reference():
    ns = {}
    exec(DATASET, ns)
    import sys
    sys.path.insert(0, f"{ROOT}/tests/python")
    from models import make_model
    model = make_model("mlp")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    out = []
    for i in range(STEPS):
        x, y = ns["Batches"]()[i]
        loss = model.loss(x, y)
        loss.backward(); opt.step(); opt.zero_grad()
        out.append(loss.item())
    return out


@pytest.mark.parametrize("mode", MODES)
def test_fork_child_fails_fast_and_dataloader_workers_feed_the_device(mode):
    proc = run_python(PROGRAM.format(tests=f"{ROOT}/tests/python"), env={"NEURON_MODE": mode})
    out = last_json(proc)
    # The child exited by itself, at once, with status 0 (before: killed after the timeout).
    assert out["child_status"] == 0, out
    child = out["child"]
    assert child["bad_fork"] is True and child["initialized"] is False
    for name, err in child["errors"].items():
        assert err is not None and "Cannot re-initialize neuron in forked subprocess" in err, (name, err)
    assert child["cpu"] == 12.0
    # The parent is not a bad fork and keeps working, its queued op included.
    assert out["parent"] == {"bad_fork": False, "y": 24.0, "queued": 40.0}
    expected = cpu_reference()
    assert len(out["losses"]) == STEPS
    for got, want in zip(out["losses"], expected):
        assert math.isclose(got, want, rel_tol=1e-5), (out["losses"], expected)
