"""A non-scalar CPU tensor mixed with neuron tensors raises as on CUDA (issue 34 item 6).

Before the fix mm, cat, where, linear and add accepted a CPU operand next to a neuron tensor and
silently ran on the host. CUDA raises `RuntimeError: Expected all tensors to be on the same
device, but got mat2 is on cpu, different from other tensors on cuda:0 (when checking argument in
method wrapper_CUDA_mm)`; the recording fallback now raises the same kind of error, naming the
argument, both devices, the op and the model's Python line, before anything runs or is recorded.
What CUDA allows keeps working: 0-dim CPU tensors (wrapped Python scalars), CPU indices for
index / index_put, copies in both directions; the results match PyTorch CPU.

Each mode runs in a fresh process (the mode is read at import).
"""
import pytest
import torch

from helpers import last_json, run_python

MODES = ["eager", "compile", "adaptive"]

PROGRAM = """import json, torch, torch_trn
import torch.nn.functional as F
dev = torch_trn.device()
a = torch.arange(6.0).reshape(2, 3)
b = torch.arange(12.0).reshape(3, 4) / 7
c = torch.arange(6.0).reshape(2, 3) - 2
cond = a > 2
d_a, d_c, d_cond = a.to(dev), c.to(dev), cond.to(dev)
torch_trn.sync()
out = {}

def bad(name, fn):
    before = torch_trn.stats()
    try:
        fn()
        out[name] = {"error": None}
    except Exception as e:
        out[name] = {"error": type(e).__name__, "msg": str(e)}
    after = torch_trn.stats()
    out[name]["recorded"] = after["ops_recorded"] - before["ops_recorded"]
    out[name]["fallbacks"] = after["host_fallback_total"] - before["host_fallback_total"]

bad("mm", lambda: torch.mm(d_a, b))  # MARK-mm
bad("cat", lambda: torch.cat([d_a, c]))  # MARK-cat
bad("where", lambda: torch.where(d_cond, d_a, c))  # MARK-where
bad("linear", lambda: F.linear(d_a, b.t()))  # MARK-linear
bad("add", lambda: d_a + c)  # MARK-add
torch_trn.sync()

def good(name, fn):
    try:
        value = fn()
        out[name] = {"value": value.cpu().tolist()}
    except Exception as e:
        out[name] = {"error": type(e).__name__, "msg": str(e)}

good("scalar_add", lambda: d_a + torch.tensor(2.5))
good("scalar_where", lambda: torch.where(d_cond, d_a, torch.tensor(-1.0)))
good("scalar_mul_", lambda: d_a.clone().mul_(torch.tensor(3.0)))
good("index_cpu", lambda: d_a[torch.tensor([1, 0, 1])])
good("index_cpu_2d", lambda: d_a[torch.tensor([0, 1]), torch.tensor([2, 0])])
def index_put():
    t = d_a.clone()
    t.index_put_((torch.tensor([1, 0]),), torch.full((2, 3), 9.0).to(dev))
    return t
good("index_put_cpu", index_put)
def setitem():
    t = d_a.clone()
    t[torch.tensor([0])] = torch.full((1, 3), 5.0).to(dev)
    return t
good("setitem_cpu", setitem)
def copy_in():
    t = torch.zeros(2, 3).to(dev)
    t.copy_(c)
    return t
good("copy_in", copy_in)
def copy_out():
    t = torch.zeros(2, 3)
    t.copy_(d_c)
    return t
good("copy_out", copy_out)
good("to_dev", lambda: c.to(dev) * 2)
good("mm_ok", lambda: torch.mm(d_a, b.to(dev)))
print(json.dumps(out))
"""

LINES = {name: PROGRAM.splitlines().index(next(l for l in PROGRAM.splitlines() if f"MARK-{name}" in l)) + 1
         for name in ["mm", "cat", "where", "linear", "add"]}


def cpu_expected():
    a = torch.arange(6.0).reshape(2, 3)
    b = torch.arange(12.0).reshape(3, 4) / 7
    c = torch.arange(6.0).reshape(2, 3) - 2
    cond = a > 2
    t1 = a.clone(); t1.index_put_((torch.tensor([1, 0]),), torch.full((2, 3), 9.0))
    t2 = a.clone(); t2[torch.tensor([0])] = torch.full((1, 3), 5.0)
    return {
        "scalar_add": a + torch.tensor(2.5),
        "scalar_where": torch.where(cond, a, torch.tensor(-1.0)),
        "scalar_mul_": a.clone().mul_(torch.tensor(3.0)),
        "index_cpu": a[torch.tensor([1, 0, 1])],
        "index_cpu_2d": a[torch.tensor([0, 1]), torch.tensor([2, 0])],
        "index_put_cpu": t1,
        "setitem_cpu": t2,
        "copy_in": c,
        "copy_out": c,
        "to_dev": c * 2,
        "mm_ok": torch.mm(a, b),
    }


# The op each call reaches the device with (linear and where decompose or dispatch as these).
OPS = {"mm": "aten::mm", "cat": "aten::cat", "where": "aten::where", "linear": "aten::", "add": "aten::add"}
ARGS = {"mm": "mat2", "cat": "tensors[1]", "add": "other"}


@pytest.mark.parametrize("mode", MODES)
def test_cpu_tensor_next_to_device_tensor(mode):
    out = last_json(run_python(PROGRAM, env={"NEURON_MODE": mode}))
    for name, line in LINES.items():
        got = out[name]
        assert got["error"] == "RuntimeError", (name, got)
        msg = got["msg"]
        assert "Expected all tensors to be on the same device" in msg, (name, msg)
        assert "is on cpu, different from other tensors on neuron:0" in msg, (name, msg)
        assert OPS[name] in msg and "when checking argument in method aten::" in msg, (name, msg)
        if name in ARGS:
            assert f"but got {ARGS[name]} is on cpu" in msg, (name, msg)
        assert f"<string>:{line}" in msg, (name, msg)
        # Refused before anything ran or was recorded.
        assert got["recorded"] == 0 and got["fallbacks"] == 0, (name, got)
    for name, want in cpu_expected().items():
        got = out[name]
        assert "value" in got, (name, got)
        torch.testing.assert_close(torch.tensor(got["value"]), want, msg=name)
