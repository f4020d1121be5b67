"""torch.compile(model, backend="neuron") (python/torch_trn/_dynamo_backend.py).

What is proven, each program in a fresh process:
  - torch finds the backend by name (an entry point): no torch._dynamo import by torch_trn;
  - a compiled training step of the gpt and cnn test models (forward and backward graphs from
    AOTAutograd) trains like PyTorch CPU eager, in compile mode with compiled groups (--full:
    every mode and both models);
  - a graph break (a host read in the middle of the function) runs the Python between the two
    graphs on the device, with CPU's result;
  - dynamic= and mode= are accepted; options= is refused with a clear error.
"""
import pytest

from helpers import ROOT, cpu_losses, last_json, run_python

TRAIN = """
import json, sys, torch, torch_trn
sys.path.insert(0, {tests!r})
from models import make_model, make_batches
torch.manual_seed(0)
model = make_model({name!r}).to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
step = torch.compile(lambda x, y: model.loss(x, y), backend="neuron")
losses = []
for x, y in make_batches({name!r}, {steps}):
    loss = step(x.to("neuron"), y.to("neuron"))
    loss.backward(); opt.step(); opt.zero_grad()
    losses.append(loss.item())
s = torch_trn.stats()
from torch._dynamo.utils import counters
print(json.dumps({{"losses": losses, "compiled": s["ops_run_compiled"], "graphs": counters["stats"]["unique_graphs"]}}))
"""


def pytest_generate_tests(metafunc):
    if "mode" in metafunc.fixturenames:
        full = metafunc.config.getoption("--full")
        metafunc.parametrize("mode", ["eager", "compile", "adaptive"] if full else ["compile"])
        metafunc.parametrize("name", ["gpt", "cnn"] if full else ["gpt"])


def test_training_step_matches_cpu(mode, name):
    steps = 4
    got = last_json(run_python(TRAIN.format(tests=f"{ROOT}/tests/python", name=name, steps=steps),
                               env={"NEURON_MODE": mode}))
    want = cpu_losses(name, steps)
    for i, (a, b) in enumerate(zip(got["losses"], want)):
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), f"step {i}: neuron={a!r} cpu={b!r}"
    assert got["graphs"] >= 1, got
    if mode == "compile":
        assert got["compiled"] > 0, f"no op of the graphs ran compiled: {got}"


def test_graph_break_and_options():
    got = last_json(run_python("""
        import json, sys, torch, torch_trn
        found_at_import = "torch._dynamo" in sys.modules
        def f(x):
            y = (x * 2).sin()
            if y.sum().item() > 0:      # a host read: Dynamo breaks the graph here
                y = y + 1
            return (y * y).sum()
        x = torch.linspace(-1, 2, 64)
        got = torch.compile(f, backend="neuron")(x.to("neuron")).cpu().item()
        want = f(x).item()
        from torch._dynamo.utils import counters
        out = {"found_at_import": found_at_import, "got": got, "want": want,
               "breaks": sum(counters["graph_break"].values())}
        for kw in ({"dynamic": True}, {"mode": "max-autotune"}):
            torch._dynamo.reset()
            out[str(kw)] = torch.compile(f, backend="neuron", **kw)(x.to("neuron")).cpu().item()
        torch._dynamo.reset()
        try:
            torch.compile(f, backend="neuron", options={"max_autotune": True})(x.to("neuron"))
            out["options"] = "accepted"
        except Exception as e:
            out["options"] = str(e)
        print(json.dumps(out))
    """, env={"NEURON_MODE": "compile"}))
    assert not got["found_at_import"], "import torch_trn imported torch._dynamo"
    assert got["breaks"] >= 1, got
    assert abs(got["got"] - got["want"]) <= 1e-5 * abs(got["want"]), got
    for kw in ("{'dynamic': True}", "{'mode': 'max-autotune'}"):
        assert abs(got[kw] - got["want"]) <= 1e-5 * abs(got["want"]), (kw, got)
    assert "takes no options=" in got["options"], got["options"]
