"""float16 and bfloat16 ops compiled on the host (src/mlir_lowering/ir_builder.h: computed in f32,
rounded to nearest even when stored) vs PyTorch CPU.

Each mode (compile, adaptive) runs in a fresh subprocess. Every case runs on CPU tensors and on
device copies; arithmetic, casts, comparisons and reductions must be bit-identical to CPU (one
rounding per op, as ATen's kernels), the transcendental ones (polynomial approximations of
exp/tanh/erf in f32) within one ulp of the half type. The subprocess then checks that the group
lowering handled every op: no op in `unlowered_ops`, no compile failure, and every op of each
case ran compiled (adaptive mode runs each case again after `wait_for_compiles` and counts that run).

On NEURON_TARGET=trn2 (compile mode) the same cases run on the modeled NeuronCore (bf16 / f16
stay 2 bytes in HBM, DMA widens them into f32 tiles and rounds when it stores: docs/trn_pipeline.md)
and must match CPU the same way; every case but those whose f32 form is refused by the trn
lowering too (TRN_HOST) must run on the core.
"""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import run_python  # noqa: E402

CODE = r'''
import json, math, os, struct, torch, torch_trn
import torch.nn.functional as F
torch.manual_seed(0)
DEV = torch_trn.device()
ADAPTIVE = torch_trn.mode() == "adaptive"
failures = []
not_compiled = []  # cases whose ops did not all run compiled (adaptive: in their second run)
# One ulp of the half type at 1.0 (relative), for the approximated math.
ULP = {torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10}

on_host = []  # trn targets: cases with ops that ran on the host, not on the modeled NeuronCore

def run(fn, args):
    """fn on device copies of args -> (CPU copies of its results, ops executed and run compiled,
    and on a trn target ops run on the host)."""
    dev_args = [a.to(DEV) for a in args]
    torch_trn.sync()
    before = torch_trn.stats()
    out = fn(*dev_args)
    out = [o.cpu() for o in (out if isinstance(out, (tuple, list)) else [out])]
    after = torch_trn.stats()
    ran = {k: after[k] - before[k] for k in ("ops_executed", "ops_run_compiled")}
    if "device" in after:
        ran["ops_on_host"] = after["device"]["ops_on_host"] - before["device"]["ops_on_host"]
    return out, ran

def check(name, fn, *args, exact=True):
    dt = args[0].dtype
    try:
        ref = fn(*args)
        ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        got, ran = run(fn, args)
        if ADAPTIVE:  # again once the group's code is ready: compiled code this time
            torch_trn.wait_for_compiles()
            got, ran = run(fn, args)
        if ran["ops_run_compiled"] != ran["ops_executed"]:
            not_compiled.append(f"{name} {dt}: {ran}")
        if ran.get("ops_on_host"):
            on_host.append(f"{name} {dt}")
        for r, g in zip(ref, got):
            assert g.dtype == r.dtype, (g.dtype, r.dtype)
            if exact:
                torch.testing.assert_close(g, r, rtol=0, atol=0, equal_nan=True)
            else:
                torch.testing.assert_close(g, r, rtol=ULP[dt], atol=ULP[dt] * 1e-2, equal_nan=True)
    except Exception as e:
        failures.append(f"{name} {dt}: {type(e).__name__}: {str(e)[:300]}")

for dt in (torch.bfloat16, torch.float16):
    # 24 x 64: no scalar tail in ATen's vectorised loops (32 bf16 lanes), whose tail rounds some
    # intermediates (alpha * other, rsqrt) where the vector body does not.
    a = torch.randn(24, 64).to(dt)
    b = torch.randn(24, 64).to(dt)
    t = a.t()  # a transposed view
    check("add", lambda a, b: a + b, a, b)
    check("add scalar", lambda a, b: a + 0.3, a, b)
    check("sub alpha", lambda a, b: torch.sub(a, b, alpha=0.7), a, b, exact=False)  # ATen: an fma
    check("mul", lambda a, b: a * b, a, b)
    check("mul scalar", lambda a, b: a * 0.1, a, b)
    check("div", lambda a, b: a / b, a, b)
    check("div scalar", lambda a, b: a / 0.3, a, b)
    check("rsub", lambda a, b: 1 - a, a, b)
    check("chain", lambda a, b: (a * b + a) * 0.5 - b, a, b)
    check("clamp", lambda a, b: a.clamp(-0.3, 0.7), a, b)
    check("where", lambda a, b: torch.where(a > b, a, b), a, b)
    check("maximum", lambda a, b: torch.maximum(a, b), a, b)
    check("compare", lambda a, b: (a < b) | (a == b), a, b)
    check("abs neg relu", lambda a, b: F.relu(-a.abs() + b), a, b)
    check("pow 2", lambda a, b: a ** 2, a, b)
    check("rsqrt", lambda a, b: a.abs().rsqrt(), a, b, exact=False)
    check("transposed", lambda t: t * 2 + 1, t)
    check("to float", lambda a, b: a.float() * 1.5, a, b)
    check("from float", lambda a, b: (a.float() * 1.37).to(dt), a, b)
    check("to int", lambda a, b: (a * 10).to(torch.int32), a, b)
    check("sum", lambda a, b: a.sum(1), a, b)
    check("sum all", lambda a, b: a.sum(), a, b)
    check("mean", lambda a, b: a.mean(0, keepdim=True), a, b)
    check("amax", lambda a, b: a.amax(1), a, b)
    check("max with index", lambda a, b: a.max(1), a, b)
    check("argmin", lambda a, b: a.argmin(0), a, b)
    check("layer_norm", lambda a, w, c: F.layer_norm(a, (64,), w[0], c[0]), a, b, b)
    check("exp", lambda a, b: a.exp(), a, b, exact=False)
    check("tanh", lambda a, b: a.tanh(), a, b, exact=False)
    check("gelu", lambda a, b: F.gelu(a), a, b, exact=False)
    check("silu", lambda a, b: F.silu(a), a, b, exact=False)
    check("sigmoid", lambda a, b: a.sigmoid(), a, b, exact=False)
    check("softmax", lambda a, b: torch.softmax(a, -1), a, b, exact=False)
    check("log_softmax", lambda a, b: torch.log_softmax(a, -1), a, b, exact=False)

# Rounding on store: f32 values halfway between two half values go to the even one; NaN, inf,
# overflow to inf, signed zero, float16 subnormals and underflow.
def halfway(dt):
    bits = torch.randint(0, 1 << 15, (256,), dtype=torch.int32) << 16  # bfloat16 values as f32 bits
    if dt == torch.bfloat16:
        mid = (bits | 0x8000).view(torch.float32)                       # exactly between two
    else:
        h = torch.randint(0, 0x7C00, (256,), dtype=torch.int32).to(torch.int16).view(torch.float16).float()
        mid = h + torch.where(h == 0, 0.0, h.abs() * 2.0 ** -11)       # ties of normal values
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 3.4e38, -3.4e38, 1e5, 65519.0,
                            65520.0, -0.0, 0.0, 1e-8, 6e-8, 3e-5, 1e-40, 1.00390625, 1.01171875])
    return torch.cat([mid, -mid, special])
for dt in (torch.bfloat16, torch.float16):
    x = halfway(dt)
    check(f"round to {dt}", lambda x: x.to(dt), x)
    check(f"round to {dt} after math", lambda x: (x * 1.0 + 0.0).to(dt) * 1, x)

# A backward pass in bfloat16: gelu and layer norm's gradients, as autograd records them.
def grads(x, w, r):
    x = x.clone().requires_grad_(True)
    w = w.clone().requires_grad_(True)
    y = F.layer_norm(F.gelu(x) * w, (64,))
    (y * r).sum().backward()  # (not y * y: its sum is constant, the gradient rounding noise)
    return x.grad, w.grad
for dt in (torch.bfloat16, torch.float16):
    x = torch.randn(8, 64).to(dt)
    w = torch.randn(64).to(dt)
    r = torch.linspace(-1, 1, 64).to(dt)
    try:
        ref = grads(x, w, r)
        got = grads(x.to(DEV), w.to(DEV), r.to(DEV))
        for r, g in zip(ref, got):
            scale = r.float().abs().max().item()
            torch.testing.assert_close(g.cpu().float() / scale, r.float() / scale, rtol=4 * ULP[dt], atol=4 * ULP[dt])
    except Exception as e:
        failures.append(f"backward {dt}: {type(e).__name__}: {str(e)[:300]}")

torch_trn.sync()
s = torch_trn.stats()
print(json.dumps({"failures": failures, "not_compiled": not_compiled, "unlowered": s["unlowered_ops"],
                  "on_host": on_host, "device": s.get("device"),
                  "compile_failures": s["compile_failures"], "ops_executed": s["ops_executed"],
                  "ops_run_compiled": s["ops_run_compiled"]}))
'''


@pytest.mark.parametrize("mode", ["compile", "adaptive"])
def test_half_ops_compile_and_match_cpu(mode):
    proc = run_python(CODE, env={"NEURON_MODE": mode})
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\n[{mode}] ops executed {report['ops_executed']}, run compiled {report['ops_run_compiled']}")
    assert report["failures"] == [], "\n".join(report["failures"])
    assert report["unlowered"] == {}, report["unlowered"]
    assert report["compile_failures"] == {}, report["compile_failures"]
    assert report["not_compiled"] == [], report["not_compiled"]
    assert report["ops_run_compiled"] > 0


# Cases the trn lowering sends to the host in float32 as well: a float -> int cast of a tile
# (truncation: `arith.fptosi`) and value-and-index reductions (max with its index, argmin).
TRN_HOST = {"to int", "max with index", "argmin"}


def test_half_ops_on_trn2_core_match_cpu():
    proc = run_python(CODE, env={"NEURON_MODE": "compile", "NEURON_TARGET": "trn2"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    dev = report["device"]
    print(f"\n[trn2] ops on the core {dev['ops_on_device']}, on the host {dev['ops_on_host']}: {report['on_host']}")
    assert report["failures"] == [], "\n".join(report["failures"])
    assert report["unlowered"] == {} and report["compile_failures"] == {}
    assert dev["trn_internal_failures"] == 0
    assert {case.rsplit(" ", 1)[0] for case in report["on_host"]} <= TRN_HOST, report["on_host"]
    assert dev["ops_on_device"] >= 120, dev
