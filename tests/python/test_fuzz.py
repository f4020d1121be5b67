"""Differential fuzzer (tests/fuzz/README.md): random op programs on the device vs PyTorch CPU.

test_fuzz_programs runs tests/fuzz/run_fuzz.py: 300 programs by default (100 per mode: eager,
compile, adaptive; each mode in its own worker process), 10 000 with pytest --full. The seed is
FUZZ_SEED (default 0) and the count FUZZ_PROGRAMS overrides both. It fails on any failure not
listed in tests/fuzz/known_failures.txt (the output holds each failure's shrunk reproducer) and on
a worker crash.

The other tests are the fuzzer's findings, as focused regressions: fixed ones pass, open ones are
strict xfails with their root cause (they fail loudly once fixed).
"""
import os
import subprocess
import sys

import pytest

from helpers import ROOT, last_json, run_python

RUNNER = os.path.join(ROOT, "tests", "fuzz", "run_fuzz.py")
KNOWN = os.path.join(ROOT, "tests", "fuzz", "known_failures.txt")


def test_fuzz_programs(request, tmp_path):
    full = request.config.getoption("--full", default=False)
    n = int(os.environ.get("FUZZ_PROGRAMS", 10000 if full else 300))
    seed = int(os.environ.get("FUZZ_SEED", 0))
    cmd = [sys.executable, RUNNER, "--programs", str(n), "--seed", str(seed), "--known", KNOWN,
           "--summary", str(tmp_path / "fuzz.json")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=4 * 3600)
    print(proc.stdout[-20000:])
    assert proc.returncode == 0, (
        f"the fuzzer found failures (fix them, or add a known_failures.txt entry with a strict "
        f"xfail test):\n{proc.stdout[-20000:]}\n{proc.stderr[-3000:]}")
    assert f"fuzz: {n} programs" in proc.stdout, proc.stdout[-3000:]


CHECK = """import json, torch, torch_trn, warnings
warnings.simplefilter("ignore")
dev = torch_trn.device()
def outcome(dev):
    try:
{body}
        torch_trn.sync()
        return {{"value": result.cpu().tolist()}}
    except Exception as e:
        return {{"error": type(e).__name__}}
print(json.dumps({{"cpu": outcome(torch.device("cpu")), "neuron": outcome(dev)}}))
"""


def device_vs_cpu(mode, body):
    """Runs `body` (it sets `result`) on CPU and on the device in a fresh process of `mode`."""
    code = CHECK.format(body="\n".join("        " + l for l in body.strip().splitlines()))
    out = last_json(run_python(code, env={"NEURON_MODE": mode, "NEURON_OPT_LEVEL": "0"}))
    return out["cpu"], out["neuron"]


# Finding (seed 229 and 13 others, compile mode): masked_fill with an int64 mask compiled as
# mask != 0 and raised nothing; CPU (and eager) raise RuntimeError "masked_fill_ only supports
# boolean masks". Fixed: the lowering leaves a non-bool mask to the op-by-op path.
@pytest.mark.parametrize("mode", ["eager", "compile", "adaptive"])
def test_masked_fill_non_bool_mask_raises(mode):
    cpu, neu = device_vs_cpu(mode, """
x = torch.tensor([0.5, -1.0, 2.0]).to(dev)
result = x.masked_fill(x.long(), 1.0)
""")
    assert cpu == {"error": "RuntimeError"}
    assert neu == cpu


# Finding (seeds 1247, 1670, 2357, 3239, 31411, compile mode): an in-place write through an
# expanded (self-overlapping) view raised "more than one element of the written-to tensor refers
# to a single memory location" at the next sync; PyTorch CPU and eager mode write it. Fixed: a
# write through a self-overlapping view is not lowered (Target::CanGroup); ATen's kernel
# runs it op by op and decides, as in eager mode.
@pytest.mark.parametrize("op", ["masked_fill_", "fill_", "zero_"])
def test_inplace_write_through_expanded_view(op):
    write = {"masked_fill_": "e.masked_fill_(torch.tensor([[True], [False]]).to(dev), 5.0)",
             "fill_": "e.fill_(-1.25)", "zero_": "e.zero_()"}[op]
    cpu, neu = device_vs_cpu("compile", f"""
x = torch.tensor([[1.0], [2.0]]).to(dev)
y = torch.tensor([3.0, 4.0]).to(dev)
z = y[::1] * x
e = x.expand(2, 2)
{write}
result = torch.cat([x.flatten(), z.flatten()])
""")
    assert "value" in cpu
    assert neu == cpu


# Finding (seed 10195, eager): copy_ between two views of the same elements (two expands of one
# tensor) raised the internal-overlap RuntimeError on the device; at::copy_ returns first (nothing
# to copy). Fixed: the device's copy_ returns as at::copy_ does.
@pytest.mark.parametrize("mode", ["eager", "compile", "adaptive"])
def test_copy_between_views_of_the_same_elements(mode):
    cpu, neu = device_vs_cpu(mode, """
m = torch.tensor([3.0, 1.0]).to(dev).argmax()
a = m.expand(2)
b = m.expand(2)
b.copy_(a)
result = b + 0
""")
    assert cpu == {"value": [0, 0]}
    assert neu == cpu


# Found while reducing seed 10195: the other side of compile mode's overlap handling (compiled
# code wrote the expanded view where ATen raises). Fixed with the one above.
def test_copy_into_expanded_view_raises_in_compile_mode():
    cpu, neu = device_vs_cpu("compile", """
y = torch.tensor([3.0]).to(dev)
y.expand(2).copy_(torch.tensor([1.0, 2.0]).to(dev))
result = y + 0
""")
    assert cpu == {"error": "RuntimeError"}
    assert neu == cpu
