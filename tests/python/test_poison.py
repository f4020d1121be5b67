"""Results recorded after a failing op are never read as if valid (issue 34 item 3).

After an op fails on the executor, the ops queued behind it up to the next sync are skipped.
Before the fix their results were readable afterwards without error (fresh tensors held
uninitialised memory, skipped in-place updates were lost). Now every storage a failed or
skipped op writes is poisoned: reading it on the host (.cpu(), .item(), print, or through a
later op that reads it) raises the original failure, with its exception class (the one PyTorch
CPU raises), op and Python line; tensors computed from good data after the sync read correctly,
and the process keeps training.

Each mode runs in a fresh process (the mode is read at import). The failure is an out-of-range
index_select: its index is only checked when the op runs.
"""
import math

import pytest
import torch

from helpers import ROOT, cpu_losses, last_json, run_python

MODES = ["eager", "compile", "adaptive"]

PROGRAM = """import json, sys, torch, torch_trn
sys.path.insert(0, {tests!r})
from models import make_model, make_batches
dev = torch_trn.device()
x = torch.arange(4.0).to(dev)
w = torch.ones(4).to(dev)
z = torch.full((4,), 2.0).to(dev)
torch_trn.sync()
out = {{}}

def read(name, fn):
    try:
        value = fn()
        out[name] = {{"value": value.tolist() if torch.is_tensor(value) else value}}
    except Exception as e:
        out[name] = {{"error": type(e).__name__, "msg": str(e)}}

bad = x.index_select(0, torch.tensor([0, 9]).to(dev))  # MARK-bad-op
dep = bad * 2 + 1        # a fresh result computed from the failed op's output
w.add_(1)                # an in-place update queued after the failure: skipped
ind = z * 3              # independent, but queued before the sync that reports the failure
read("sync", torch_trn.sync)
read("sync_again", torch_trn.sync)
read("bad", lambda: bad.cpu())
read("dep", lambda: dep.cpu())
read("w", lambda: w.cpu())
read("w_item", lambda: w.sum().item())
read("print", lambda: str(dep))
read("ind", lambda: ind.cpu())
later = dep + 1          # recorded after the sync, reads a poisoned tensor: skipped in turn
read("later", lambda: later.cpu())
acc = torch.ones(2).to(dev)
acc.add_(dep)            # a good tensor updated in place from a poisoned one: poisoned too
read("acc", lambda: acc.cpu())
read("later_sync", torch_trn.sync)
read("good", lambda: (z * 5 + x).cpu())
w.copy_(torch.full((4,), 7.0))  # rewritten whole from host data: valid again
read("w_rewritten", lambda: w.cpu())

model = make_model("mlp").to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
losses = []
for xb, yb in make_batches("mlp", 2):
    loss = model.loss(xb.to(dev), yb.to(dev))
    loss.backward(); opt.step(); opt.zero_grad()
    losses.append(loss.item())
out["losses"] = losses
print(json.dumps(out))
"""

BAD_LINE = PROGRAM.splitlines().index(
    next(l for l in PROGRAM.splitlines() if "MARK-bad-op" in l)) + 1


@pytest.fixture(scope="module")
def cpu():
    with pytest.raises(Exception) as info:
        torch.arange(4.0).index_select(0, torch.tensor([0, 9]))
    return {"error": type(info.value).__name__, "losses": cpu_losses("mlp", 2)}


@pytest.mark.parametrize("mode", MODES)
def test_results_of_failed_and_skipped_ops_raise_when_read(mode, cpu):
    out = last_json(run_python(PROGRAM.format(tests=f"{ROOT}/tests/python"), env={"NEURON_MODE": mode}))
    # The failure itself is reported once, at the sync, as CPU's exception class.
    assert out["sync"]["error"] == cpu["error"] == "IndexError", out["sync"]
    assert "aten::index_select" in out["sync"]["msg"] and f"<string>:{BAD_LINE}" in out["sync"]["msg"]
    assert out["sync_again"] == {"value": None}
    # Everything the failed op and the skipped ops wrote raises when read, naming the failure.
    for name in ["bad", "dep", "w", "w_item", "print", "ind", "later", "acc"]:
        got = out[name]
        assert "error" in got, (name, got)
        assert got["error"] == cpu["error"], (name, got)
        assert "has no valid value" in got["msg"], (name, got)
        assert "aten::index_select" in got["msg"] and f"<string>:{BAD_LINE}" in got["msg"], (name, got)
    # A sync after skipping the poisoned reader reports nothing new; good data reads correctly.
    assert out["later_sync"] == {"value": None}
    assert out["good"] == {"value": [10.0, 11.0, 12.0, 13.0]}
    assert out["w_rewritten"] == {"value": [7.0] * 4}
    # The process keeps training.
    for got, want in zip(out["losses"], cpu["losses"]):
        assert math.isclose(got, want, rel_tol=1e-5), (out["losses"], cpu["losses"])
    assert len(out["losses"]) == 2
