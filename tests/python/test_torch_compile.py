"""torch.compile(model, backend="neuron") (python/torch_trn/_dynamo_backend.py).

What is proven, each program in a fresh process:
  - torch finds the backend by name (an entry point): no torch._dynamo import by torch_trn;
  - a compiled training step of the gpt and cnn test models (forward and backward graphs from
    AOTAutograd) trains like PyTorch CPU eager, in compile mode with compiled groups (--full:
    every mode and both models);
  - a graph break (a host read in the middle of the function) runs the Python between the two
    graphs on the device, with CPU's result;
  - dynamic= and mode= are accepted; options= is refused with a clear error;
  - graph replay (src/trace/graph_replay.h): after its first call a graph is re-issued from its
    capture (forward and backward graphs of the training step, and a compiled AdamW step with
    capturable=True; NEURON_GRAPH_REPLAY=0 turns it
    off), with new data every call; a graph that falls back to the host is refused and runs
    normally; inputs written in place get the writes and their version bumps; random ops draw a
    new mask every call; outputs aliasing inputs or intermediates, a second input shape and a
    device-side index error behave as without replay; the error names the model's line (the
    graph node's stack_trace), not the graph's generated code.
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
print(json.dumps({{"losses": losses, "compiled": s["ops_run_compiled"], "graphs": counters["stats"]["unique_graphs"],
                  "replays": s["graph_replays"], "refused": s["graph_captures_refused"]}}))
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
    # The forward and the backward graph are each captured at the first step, replayed after.
    assert got["replays"] == 2 * (steps - 1) and got["refused"] == 0, got


def test_training_without_replay_matches_cpu():
    steps = 3
    got = last_json(run_python(TRAIN.format(tests=f"{ROOT}/tests/python", name="cnn", steps=steps),
                               env={"NEURON_MODE": "compile", "NEURON_GRAPH_REPLAY": "0"}))
    want = cpu_losses("cnn", steps)
    for i, (a, b) in enumerate(zip(got["losses"], want)):
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), f"step {i}: neuron={a!r} cpu={b!r}"
    assert got["replays"] == 0 and got["refused"] == 0, got


def test_compiled_optimizer_step_is_replayed():
    # capturable=True keeps AdamW's step counters on the device: the optimizer graph has no host
    # input, so it is replayed like the forward and backward graphs.
    steps = 3
    program = TRAIN.replace("weight_decay=0.01)", "weight_decay=0.01, capturable=True)").replace(
        "opt.step()", "opt_step()").replace("losses = []", "opt_step = torch.compile(opt.step, backend='neuron')\nlosses = []")
    got = last_json(run_python(program.format(tests=f"{ROOT}/tests/python", name="gpt", steps=steps),
                               env={"NEURON_MODE": "compile"}))
    want = cpu_losses("gpt", steps)
    for i, (a, b) in enumerate(zip(got["losses"], want)):
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), f"step {i}: neuron={a!r} cpu={b!r}"
    assert got["replays"] == 3 * (steps - 1) and got["refused"] == 0, got


REPLAY_CASES = """
import json, torch, torch_trn
import torch.nn.functional as F
def counts():
    s = torch_trn.stats()
    return [s["graph_replays"], s["graph_captures_refused"]]
def delta(before):
    return [b - a for a, b in zip(before, counts())]
out = {}
torch.manual_seed(0)
# A host fallback inside the graph (histc's output is computed on the host): refused.
def fa(x):
    return torch.histc(x, bins=4, min=-2, max=2) * 2 + x.sum()
ca = torch.compile(fa, backend="neuron")
before = counts()
out["fallback"] = [torch.allclose(ca(x.to("neuron")).cpu(), fa(x)) for x in [torch.randn(64) for _ in range(3)]]
out["fallback_counts"] = delta(before)
# An input written in place: the writes land, every call, and bump its version.
def fb(x, buf):
    buf.add_(x)
    return x * buf
cb = torch.compile(fb, backend="neuron")
buf_d, buf_c = torch.zeros(8, device="neuron"), torch.zeros(8)
before, ok, versions = counts(), [], []
for i in range(4):
    x = torch.randn(8)
    ok.append(torch.allclose(cb(x.to("neuron"), buf_d).cpu(), fb(x, buf_c)))
    versions.append(buf_d._version)
ok.append(torch.allclose(buf_d.cpu(), buf_c))
out["inplace"], out["versions"], out["inplace_counts"] = ok, versions, delta(before)
# A host tensor among the outputs: refused (a replay would hand out the same object every call).
ch = torch.compile(lambda x: (x * 2, torch.arange(3.0) + 1), backend="neuron")
before, outs = counts(), []
for i in range(3):
    dev_out, host_out = ch(torch.full((2,), float(i), device="neuron"))
    outs.append(dev_out.cpu().tolist() == [2.0 * i] * 2 and host_out.tolist() == [1.0, 2.0, 3.0])
    host_out.add_(100)  # the caller owns it: the next call must not see this
out["host_output"], out["host_output_counts"] = outs, delta(before)
# Dropout: a new mask every call, never the captured one.
cc = torch.compile(lambda x: F.dropout(x, 0.5, training=True), backend="neuron")
ones = torch.ones(256, device="neuron")
masks = [cc(ones).cpu() for _ in range(4)]
out["masks_equal_first"] = [torch.equal(masks[0], m) for m in masks[1:]]
out["masks_valid"] = [bool(((m == 0) | (m == 2)).all()) for m in masks]
# Outputs aliasing the input and an intermediate.
def fd(x):
    y = x * 3
    return x.t(), y.view(-1)[2:], y
cd = torch.compile(fd, backend="neuron")
out["aliases"] = []
for i in range(3):
    x = torch.randn(4, 5)
    out["aliases"] += [torch.equal(g.cpu(), w) for g, w in zip(cd(x.to("neuron")), fd(x))]
# Other input shapes (Dynamo makes the second shape dynamic: SymInt inputs run without replay).
ce = torch.compile(lambda x: (x.sin() * 2).sum(0), backend="neuron")
out["shapes"] = []
for n in [3, 3, 5, 5, 7, 3]:
    x = torch.randn(n, 4)
    out["shapes"].append(torch.allclose(ce(x.to("neuron")).cpu(), (x.sin() * 2).sum(0)))
# A device-side error in a replayed graph: raised at the sync, the next call works.
def gather_twice(x, i):
    return x[i] * 2
cf = torch.compile(gather_twice, backend="neuron")
x = torch.arange(6.0, device="neuron")
out["index"] = []
for idx in [[1, 2], [3, 4], [9, 1], [0, 5]]:
    try:
        out["index"].append(cf(x, torch.tensor(idx, device="neuron")).cpu().tolist())
    except IndexError as e:
        out["index"].append("IndexError" + (" names the op" if "aten::index" in str(e) else ""))
        out["index_message"] = str(e)
# A graph long enough to be flushed in the middle of its capture and its replays
# (NEURON_MAX_GROUP_OPS=16): each flush sees the same references in both (the capture holds no
# storage, a replay drops its handle on an intermediate after its last use), so the groups have
# the same temporaries and outputs and no plan or build is new.
def chain(x, y):
    for _ in range(40):
        x = (x + y).sin() * 0.5
    return x
cg = torch.compile(chain, backend="neuron")
a, b = torch.randn(64, device="neuron"), torch.randn(64, device="neuron")
want = chain(a.cpu(), b.cpu())  # (a sync: the capture's first segment starts with the graph too)
keys = ("compiles", "plan_cache_misses", "temporaries_elided", "storages_released_early", "graph_replays")
out["long"], out["long_counts"] = [], []
for i in range(4):
    s1 = torch_trn.stats()
    out["long"].append(torch.allclose(cg(a, b).cpu(), want, atol=1e-5))
    s2 = torch_trn.stats()
    out["long_counts"].append([s2[k] - s1[k] for k in keys])
print(json.dumps(out))
"""


@pytest.mark.parametrize("run_mode", ["compile", "eager"])
def test_replay_cases(run_mode):
    got = last_json(run_python(REPLAY_CASES, env={"NEURON_MODE": run_mode, "NEURON_MAX_GROUP_OPS": "16"}))
    assert got["fallback"] == [True] * 3 and got["fallback_counts"] == [0, 1], got
    assert got["inplace"] == [True] * 5 and got["versions"] == [1, 2, 3, 4], got
    assert got["inplace_counts"] == [3, 0], got  # captured at the first call, replayed after
    assert got["host_output"] == [True] * 3 and got["host_output_counts"][0] == 0, got
    assert got["masks_equal_first"] == [False] * 3 and got["masks_valid"] == [True] * 4, got
    assert got["aliases"] == [True] * 9, got
    assert got["shapes"] == [True] * 6, got
    assert got["index"] == [[2.0, 4.0], [6.0, 8.0], "IndexError names the op", [0.0, 10.0]], got
    assert got["long"] == [True] * 4, got
    capture, replays = got["long_counts"][0], got["long_counts"][1:]
    assert capture[4] == 0 and all(r[4] == 1 for r in replays), got
    if run_mode == "compile":  # (eager mode compiles nothing and keeps every storage)
        assert capture[0] > 0 and capture[2] > 0, got
        for r in replays:  # nothing new to plan or build; the same temporaries and early frees
            assert r[:2] == [0, 0] and r[2:4] == capture[2:4], got
    # The model's line (FX's stack_trace of the graph node), not the graph's generated code.
    assert "(gather_twice)" in got["index_message"] and "eval_with_key" not in got["index_message"], got


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
