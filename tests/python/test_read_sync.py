"""A host read waits for what the value depends on, not for the whole stream (issue 30).

`loss.item()` after `opt.step()` used to wait until the optimizer step had run; in compile and
adaptive mode it now waits only for the flushes whose records reference the loss (the forward),
and the optimizer step runs while the program records the next step (Stream::SyncRead). What is
asserted, in a fresh process per mode:
  - a training loop with `loss.item()` after the optimizer step reads the same losses as CPU, and
    every such read waited for earlier flushes only (stats()["reads_before_last_flush"]);
  - a read of a tensor that the last flush writes (an in-place update recorded after backward)
    waits for it and sees the update;
  - a failure in an op recorded after the read's producers is never lost: exactly one of the
    read and the next sync raises it, with PyTorch's class (IndexError);
  - eager mode and torch_trn.sync() keep waiting for everything (the counter stays 0).
"""
import pytest
import torch

from helpers import last_json, run_python

PROGRAM = """import json, torch, torch_trn
dev = torch_trn.device()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
cpu_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
cpu_model.load_state_dict(model.state_dict())
model = model.to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
cpu_opt = torch.optim.AdamW(cpu_model.parameters(), lr=1e-2)
xs = [torch.randn(4, 8) for _ in range(5)]
out = {"losses": [], "cpu_losses": []}
torch_trn.sync()
torch_trn.reset_stats()
for x in xs:
    loss = model(x.to(dev)).square().mean()
    loss.backward(); opt.step(); opt.zero_grad()
    out["losses"].append(loss.item())   # after the optimizer step
    cpu_loss = cpu_model(x).square().mean()
    cpu_loss.backward(); cpu_opt.step(); cpu_opt.zero_grad()
    out["cpu_losses"].append(cpu_loss.item())
out["reads_in_loop"] = torch_trn.stats()["reads_before_last_flush"]

# A read of what the last flush writes waits for it.
w = model[0].weight
loss = model(xs[0].to(dev)).sum()
loss.backward()                     # (a flush: the recording thread changes)
with torch.no_grad():
    w.add_(1.0)                     # pending until the read below
before = torch_trn.stats()["reads_before_last_flush"]
out["w_after_add"] = w.cpu().tolist()
out["w_read_waited_for_all"] = torch_trn.stats()["reads_before_last_flush"] == before
out["w_expected"] = (cpu_model[0].weight.detach() + 1.0).tolist()  # the same weights, + 1

# A failure after the read's producers is reported by the read or by the next sync, once.
x = torch.arange(4.0).to(dev)
idx = torch.tensor([0, 9]).to(dev)
loss = model(xs[1].to(dev)).sum()
loss.backward()                     # (a flush)
bad = x.index_select(0, idx)        # fails when it runs, in the last flush
raised = []
for name, read in [("item", loss.item), ("sync", torch_trn.sync)]:
    try:
        read()
    except Exception as e:
        raised.append([name, type(e).__name__])
out["raised"] = raised
torch_trn.sync()
before = torch_trn.stats()["reads_before_last_flush"]
torch_trn.sync()
out["good_after"] = (x * 2).cpu().tolist()
out["sync_counted"] = torch_trn.stats()["reads_before_last_flush"] - before
print(json.dumps(out))
"""


def run(mode):
    return last_json(run_python(PROGRAM, env={"NEURON_MODE": mode}))


@pytest.mark.parametrize("mode", ["compile", "adaptive", "eager"])
def test_host_read_waits_for_its_producers_only(mode):
    got = run(mode)
    assert got["losses"] == pytest.approx(got["cpu_losses"], rel=1e-5, abs=1e-6)
    if mode == "eager":
        assert got["reads_in_loop"] == 0
    else:
        # Every step's loss.item() waited for the forward's flush only, not the optimizer's.
        assert got["reads_in_loop"] == len(got["losses"])
    # The in-place add recorded after backward is seen by the read.
    assert got["w_read_waited_for_all"]
    assert torch.tensor(got["w_after_add"]) == pytest.approx(torch.tensor(got["w_expected"]), rel=1e-4, abs=1e-5)
    # exactly one of the read and the next sync reports the failure, as IndexError
    assert len(got["raised"]) == 1, got["raised"]
    assert got["raised"][0][1] == "IndexError"
    assert got["good_after"] == [0.0, 2.0, 4.0, 6.0]
    assert got["sync_counted"] == 0
