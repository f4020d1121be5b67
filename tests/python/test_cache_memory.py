"""The memory tier of the compiled-group cache, and miss explanations (issue 5).

What is asserted (each program runs in a fresh process, NEURON_MODE=compile, disk tier off):
  - with room for only 2 loaded groups, a training loop that needs more evicts the least
    recently used ones (counted), keeps at most 2 loaded, recompiles what it evicted, and its
    losses still equal PyTorch CPU's;
  - a group that recompiles because a tensor's shape changed is explained once: the op, its
    source line and the property that changed ("input 0 (self) sizes [8, 128] -> [8, 129]"), in
    cache_stats() and, at NEURON_LOG_LEVEL=2, on stderr; the same shape again explains nothing;
  - a new group from different lines is not "explained" (no earlier group to compare with).
"""
from helpers import ROOT, cpu_losses, last_json, run_python

ENV = {"NEURON_MODE": "compile", "NEURON_CACHE_DIR": "off", "NEURON_OPT_LEVEL": "0"}

TRAIN = f"""
import json, sys, torch, torch_trn
sys.path.insert(0, {ROOT + '/tests/python'!r})
from models import make_model, make_batches
model = make_model("mlp").to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
losses = []
for x, y in make_batches("mlp", 4):
    loss = model.loss(x.to("neuron"), y.to("neuron"))
    loss.backward(); opt.step(); opt.zero_grad()
    losses.append(loss.item())
print(json.dumps({{"losses": losses, "cache": torch_trn.cache_stats()}}))
"""


def test_memory_lru_evicts_and_results_stay_right():
    roomy = last_json(run_python(TRAIN, env=ENV))
    tight = last_json(run_python(TRAIN, env={**ENV, "NEURON_CACHE_MEM_ENTRIES": "2"}))
    ref = cpu_losses("mlp", 4)
    for got in (roomy, tight):
        assert all(abs(a - b) <= 1e-5 * max(1.0, abs(b)) for a, b in zip(got["losses"], ref)), (got["losses"], ref)
    assert roomy["cache"]["memory"]["evictions"] == 0
    mem = tight["cache"]["memory"]
    assert mem["evictions"] > 0, mem
    assert mem["entries"] <= 2, mem
    # What was evicted had to be built again: more compiles than with room for everything.
    assert tight["cache"]["compiles"] > roomy["cache"]["compiles"], (tight["cache"], roomy["cache"])


def test_adaptive_mode_keeps_the_memory_limit_at_syncs():
    # Background builds finish after the flush that asked for them, so eviction could not touch
    # them then; the tier held 19 entries with a limit of 6 before syncs trimmed it.
    code = TRAIN.replace("print(json.dumps(", "torch_trn.wait_for_compiles(); torch_trn.sync()\nprint(json.dumps(")
    env = {**ENV, "NEURON_MODE": "adaptive", "NEURON_CACHE_MEM_ENTRIES": "2"}
    got = last_json(run_python(code, env=env))
    ref = cpu_losses("mlp", 4)
    assert all(abs(a - b) <= 1e-5 * max(1.0, abs(b)) for a, b in zip(got["losses"], ref)), (got["losses"], ref)
    mem = got["cache"]["memory"]
    assert got["cache"]["compiles"] > 2, got["cache"]
    assert mem["entries"] <= 2, mem


EXPLAIN = """
import json, torch, torch_trn
def f(x, w):
    return (x * w + 1.0).relu().sum()  # MARK-EXPLAIN
for cols in (128, 128, 129, 129, 128):
    x, w = torch.ones(8, cols).to("neuron"), torch.full((cols,), 2.0).to("neuron")
    f(x, w).item()
def g(x):
    return (x - 2.0).abs().sum()  # other lines: nothing to compare with
g(torch.ones(3, device="neuron")).item()
print(json.dumps(torch_trn.cache_stats()))
"""


def test_shape_change_is_explained_once_with_op_line_and_property():
    proc = run_python(EXPLAIN, env={**ENV, "NEURON_LOG_LEVEL": "2"})
    stats = last_json(proc)
    explanations = stats["miss_explanations"]
    assert len(explanations) == 1, explanations
    why = explanations[0]
    assert "<string>:4" in why, why  # the line of f's body
    assert "sizes [8, 128] -> [8, 129]" in why, why
    assert "aten::mul" in why, why
    # Logged once, at info level, with the same text.
    logged = [l for l in proc.stderr.splitlines() if "recompiles" in l]
    assert len(logged) == 1 and why in logged[0], proc.stderr[-3000:]


def test_explanations_are_quiet_at_the_default_log_level():
    proc = run_python(EXPLAIN, env=ENV)
    assert len(last_json(proc)["miss_explanations"]) == 1
    assert "recompiles" not in proc.stderr, proc.stderr[-3000:]
