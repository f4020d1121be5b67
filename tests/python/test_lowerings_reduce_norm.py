"""Compile-mode lowerings of reductions, losses, backward ops, normalization and pooling vs CPU eager.

Each family runs in a fresh subprocess with NEURON_MODE=compile. Every case runs its function
on CPU tensors and on device copies (contiguous, transposed and sliced views, keepdim variants),
and compares with torch.testing.assert_close. The subprocess then checks that the group lowering
handled every op: torch_trn.stats()['unlowered_ops'] must not name any of them (only the
listed ALLOWED_UNLOWERED ops, which other families own, may appear) and 'compile_failures'
must be empty; and that compiled groups actually ran.
"""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import run_python  # noqa: E402

PRELUDE = r'''
import json, torch, torch_trn
import torch.nn.functional as F
torch.manual_seed(0)
DEV = torch_trn.device()
failures = []

def to_dev(a):
    return a.to(DEV) if isinstance(a, torch.Tensor) else a

def flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]

def check(name, fn, *args, grad=False, atol=1e-5, rtol=1.3e-6):
    """fn(*args) on CPU and on the device; with grad=True also the gradients of the float
    tensor args after backward() of the (scalar) result."""
    cpu_args = [a.detach().clone().requires_grad_(grad and a.is_floating_point())
                if isinstance(a, torch.Tensor) else a for a in args]
    dev_args = [to_dev(a.detach()).requires_grad_(grad and a.is_floating_point())
                if isinstance(a, torch.Tensor) else a for a in args]
    try:
        ref = flat(fn(*cpu_args))
        got = flat(fn(*dev_args))
        if grad:
            ref[0].backward()
            got[0].backward()
            ref += [a.grad for a in cpu_args if isinstance(a, torch.Tensor) and a.requires_grad]
            got += [a.grad for a in dev_args if isinstance(a, torch.Tensor) and a.requires_grad]
        torch_trn.sync()
        assert len(ref) == len(got), (len(ref), len(got))
        for r, g in zip(ref, got):
            torch.testing.assert_close(g.detach().cpu(), r.detach(), equal_nan=True, atol=atol, rtol=rtol)
    except Exception as e:
        failures.append(f"{name}: {type(e).__name__}: {str(e)[:400]}")

def finish(allowed_unlowered=()):
    s = torch_trn.stats()
    unlowered = {k: v for k, v in s["unlowered_ops"].items() if k.split(".")[0] not in allowed_unlowered}
    print(json.dumps({"failures": failures, "unlowered": unlowered,
                      "compile_failures": s["compile_failures"],
                      "ops_run_compiled": s["ops_run_compiled"]}))
'''

REDUCTIONS = r'''
x = torch.randn(6, 10)
base = torch.randn(10, 12)
views = {"contig": x, "t": base.t()[:, 1:7].t(), "slice": base[2:8, ::1][:, :10]}
x3 = torch.randn(3, 4, 5)
for vn, v in views.items():
    for name, fn in [
        ("sum_dim", lambda a: a.sum(1)), ("sum_all", lambda a: a.sum()),
        ("sum_keep", lambda a: a.sum(0, keepdim=True)), ("sum_dtype", lambda a: a.sum(1, dtype=torch.float64)),
        ("mean", lambda a: a.mean(0)), ("mean_keep", lambda a: a.mean(1, keepdim=True)), ("mean_all", lambda a: a.mean()),
        ("prod", lambda a: (a * 0.5 + 1).prod(1)),
        ("amax", lambda a: a.amax(1)), ("amin_keep", lambda a: a.amin(0, keepdim=True)),
        ("max_all", lambda a: a.max()), ("min_all", lambda a: a.min()),
        ("max_dim", lambda a: a.max(1)), ("min_dim_keep", lambda a: a.min(0, keepdim=True)),
        ("argmax", lambda a: a.argmax()), ("argmax_dim", lambda a: a.argmax(1)),
        ("argmin_keep", lambda a: a.argmin(0, keepdim=True)),
        ("var", lambda a: a.var(1)), ("var_c0", lambda a: torch.var(a, 0, correction=0)),
        ("std_keep", lambda a: a.std(1, keepdim=True)), ("var_mean", lambda a: torch.var_mean(a, 1)),
        ("std_all", lambda a: a.std()),
        ("softmax1", lambda a: torch.softmax(a, 1)), ("softmax0", lambda a: torch.softmax(a, 0)),
        ("log_softmax1", lambda a: torch.log_softmax(a, 1)), ("log_softmax0", lambda a: torch.log_softmax(a, 0)),
        ("logsumexp", lambda a: torch.logsumexp(a, 1)), ("logsumexp_keep", lambda a: torch.logsumexp(a, 0, keepdim=True)),
        ("norm2", lambda a: a.norm(dim=1)), ("norm_all", lambda a: torch.linalg.vector_norm(a)),
        ("norm1", lambda a: torch.linalg.vector_norm(a, 1, dim=0)),
        ("norm_inf", lambda a: torch.linalg.vector_norm(a, float("inf"), dim=1)),
        ("all", lambda a: (a > -1.5).all(1)), ("any_keep", lambda a: (a > 1.5).any(0, keepdim=True)),
        ("any_all", lambda a: (a > 2.0).any()),
    ]:
        check(f"{name}[{vn}]", fn, v)
for name, fn in [("sum_dims", lambda a: a.sum((0, 2))), ("sum_neg", lambda a: a.sum(-1, keepdim=True)),
                 ("amax_dims", lambda a: a.amax((0, 2), keepdim=True)), ("softmax_mid", lambda a: torch.softmax(a, 1)),
                 ("max_mid", lambda a: a.max(1)), ("argmax_all3", lambda a: a.argmax()),
                 ("var_dims", lambda a: a.var((1, 2))), ("sum_unit", lambda a: a[:, :1].sum(1))]:
    check(name, fn, x3)
ties = torch.tensor([[1.0, 3.0, 3.0, 0.0], [float("nan"), 2.0, float("nan"), 5.0], [-1.0, -1.0, -2.0, -2.0]])
check("max_ties_nan", lambda a: a.max(1), ties)
check("min_ties_nan", lambda a: a.min(1), ties)
check("argmax_ties_nan", lambda a: a.argmax(1), ties)
check("amax_nan", lambda a: a.amax(1), ties)
# softmax, log_softmax and logsumexp take their max with NaNs read as -inf (vectorisable): a
# NaN must still make its whole slice NaN, and all--inf / +inf slices stay as on CPU.
odd = torch.tensor([[float("nan"), 1.0, 2.0, 3.0], [-float("inf")] * 4, [0.0, float("inf"), 1.0, -2.0],
                    [1.0, float("nan"), -float("inf"), 4.0], [0.5, -0.0, 0.0, 2.0]])
for name, fn in [("softmax_nan", lambda a: torch.softmax(a, 1)), ("log_softmax_nan", lambda a: torch.log_softmax(a, 1)),
                 ("logsumexp_nan", lambda a: torch.logsumexp(a, 1)), ("softmax_nan0", lambda a: torch.softmax(a, 0)),
                 ("log_softmax_nan_t", lambda a: torch.log_softmax(a.t(), 1))]:
    check(name, fn, odd)
# Long rows: the vectorised max and the reassociated f64 sums against ATen.
wide = torch.randn(64, 1000) * 30
check("log_softmax_wide", lambda a: torch.log_softmax(a, 1), wide, atol=1e-4)
check("sum_wide", lambda a: a.sum(1), wide, atol=1e-3)
check("mean_wide", lambda a: a.mean(0), wide, atol=1e-4)
# Reductions over views of values computed in the same group (combined / stride-0 index maps).
check("sum_reshaped", lambda a: (a * 2).view(4, 16, 8).sum((0, 1)), torch.randn(64, 8))
check("sum_expanded", lambda a: (a * 2).expand(5, 6, 10).sum(0), x)
check("max_reshaped", lambda a: (a + 1).view(4, 16, 8).max(1), torch.randn(64, 8))
check("int_sum", lambda a: a.sum(1), torch.randint(-5, 5, (4, 6)))
check("int_max", lambda a: a.max(0), torch.randint(-5, 5, (4, 6)))
finish()
'''

LOSSES = r'''
x = torch.randn(6, 5)
t = torch.tensor([0, 4, -100, 2, 2, 1])
w = torch.rand(5)
y = torch.randn(6, 5)
for red in ["none", "mean", "sum"]:
    check(f"nll[{red}]", lambda a, b: F.nll_loss(a, b, reduction=red), torch.log_softmax(x, 1), t)
    check(f"nll_w[{red}]", lambda a, b, c: F.nll_loss(a, b, weight=c, reduction=red), torch.log_softmax(x, 1), t, w)
    check(f"nll_ignore[{red}]", lambda a, b: F.nll_loss(a, b, ignore_index=2, reduction=red), x, torch.tensor([0, 4, 3, 2, 2, 1]))
    check(f"mse[{red}]", lambda a, b: F.mse_loss(a, b, reduction=red), x, y.t().contiguous().t())
    check(f"smooth_l1[{red}]", lambda a, b: F.smooth_l1_loss(a, b, reduction=red, beta=0.5), x, y)
    check(f"huber[{red}]", lambda a, b: F.huber_loss(a, b, reduction=red, delta=0.7), x, y)
check("nll_1d", lambda a, b: F.nll_loss(a, b), x[0], torch.tensor(3))
check("nll_2d", lambda a, b: F.nll_loss(a, b), torch.randn(2, 5, 3, 4), torch.randint(0, 5, (2, 3, 4)))
check("cross_entropy", lambda a, b: F.cross_entropy(a, b), x, t)
check("cross_entropy_grad", lambda a, b: F.cross_entropy(a, b), x, t, grad=True)
check("nll_w_grad", lambda a, b: F.nll_loss(torch.log_softmax(a, 1), b, weight=w.to(a.device)), x, t, grad=True)
check("nll_sum_grad", lambda a, b: F.nll_loss(a, b, reduction="sum"), x, t, grad=True)
check("mse_grad", lambda a, b: F.mse_loss(a, b), x, y, grad=True)
check("smooth_l1_grad", lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), x, y, grad=True)
check("huber_grad", lambda a, b: F.huber_loss(a, b, reduction="sum", delta=0.7), x, y, grad=True)
finish(allowed_unlowered=("aten::ones_like", "aten::expand", "aten::new_empty_strided", "aten::fill"))
'''

BACKWARD = r'''
x = torch.randn(5, 7) * 3
x[0, :4] = torch.tensor([-3.0, 3.0, 0.0, 1.0])
g = torch.randn(5, 7)
acts = [
    ("relu", F.relu), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid),
    ("gelu", F.gelu), ("gelu_tanh", lambda a: F.gelu(a, approximate="tanh")), ("silu", F.silu),
    ("mish", F.mish), ("hardtanh", lambda a: F.hardtanh(a, -2.0, 2.5)),
    ("leaky_relu", lambda a: F.leaky_relu(a, 0.2)), ("elu", F.elu), ("selu", F.selu), ("celu", lambda a: F.celu(a, 0.7)),
    ("softplus", lambda a: F.softplus(a, 2.0, 4.0)), ("hardsigmoid", F.hardsigmoid), ("hardswish", F.hardswish),
    ("softmax", lambda a: torch.softmax(a, 1)), ("softmax0", lambda a: torch.softmax(a, 0)),
    ("log_softmax", lambda a: torch.log_softmax(a, 1)), ("log_softmax0", lambda a: torch.log_softmax(a, 0)),
]
for name, f in acts:
    check(f"{name}_grad", lambda a, b, f=f: (f(a) * b).sum(), x, g, grad=True)
    check(f"{name}_grad_t", lambda a, b, f=f: (f(a.t()) * b.t()).sum(), x, g, grad=True)
p = torch.rand(5, 7) * 0.98 + 0.01
check("logit_grad", lambda a, b: (torch.logit(a) * b).sum(), p, g, grad=True)
check("logit_eps_grad", lambda a, b: (torch.logit(a, eps=0.1) * b).sum(), p, g, grad=True)
check("elu_result", lambda a, b: (F.elu(a.clone(), inplace=True) * b).sum(), x, g, grad=True)
# aten::logit (forward) belongs to the elementwise family.
finish(allowed_unlowered=("aten::ones_like", "aten::expand", "aten::new_empty_strided", "aten::fill", "aten::logit"))
'''

NORMALIZATION = r'''
x = torch.randn(4, 6, 8)
w, b = torch.rand(8) + 0.5, torch.randn(8)
check("layer_norm", lambda a, c, d: F.layer_norm(a, (8,), c, d), x, w, b)
check("layer_norm_2d", lambda a: F.layer_norm(a, (6, 8)), x)
check("layer_norm_t", lambda a, c, d: F.layer_norm(a.transpose(0, 2), (4,), c[:4], d[:4]), x, w, b)
check("native_layer_norm", lambda a, c, d: torch.native_layer_norm(a, (8,), c, d, 1e-5), x, w, b)
check("layer_norm_grad", lambda a, c, d, e: (F.layer_norm(a, (8,), c, d) * e).sum(), x, w, b, torch.randn(4, 6, 8), grad=True)
check("layer_norm_grad_nw", lambda a, e: (F.layer_norm(a, (6, 8)) * e).sum(), x, torch.randn(4, 6, 8), grad=True)
xb = torch.randn(4, 3, 5, 5)
rm, rv = torch.randn(3) * 0.1, torch.rand(3) + 0.5
def bn_train(a, c, d, m, v):
    m, v = m.clone(), v.clone()
    out = F.batch_norm(a, m, v, c, d, training=True, momentum=0.2)
    return out, m, v
check("batch_norm_train", bn_train, xb, torch.rand(3) + 0.5, torch.randn(3), rm, rv)
check("batch_norm_train_2d", lambda a: F.batch_norm(a, None, None, training=True), torch.randn(8, 5))
check("native_batch_norm", lambda a, c, d: torch.native_batch_norm(a, c, d, None, None, True, 0.1, 1e-5),
      xb, torch.rand(3), torch.randn(3))
check("batch_norm_grad", lambda a, c, d, e: (F.batch_norm(a, None, None, c, d, training=True) * e).sum(),
      xb, torch.rand(3) + 0.5, torch.randn(3), torch.randn(4, 3, 5, 5), grad=True)
check("batch_norm_grad_nw", lambda a, e: (F.batch_norm(a, None, None, training=True) * e).sum(),
      torch.randn(6, 4), torch.randn(6, 4), grad=True)
finish(allowed_unlowered=("aten::ones_like", "aten::expand", "aten::new_empty_strided", "aten::fill"))
'''

POOLING = r'''
# max_pool2d_with_indices is a loop nest on the host (ops/pooling.cpp): values and indices must
# be ATen's bit for bit, NaN (the last one in a window wins), all -inf windows (the first
# in-bounds index) and padding, dilation and ceil_mode included.
x = torch.randn(4, 3, 9, 10)
x[0, 0, :3, :3] = float("-inf")
x[1, 1, 2, 2] = float("nan")
x[1, 1, 3, 3] = float("nan")
x[2, 2] = x[2, 2].round()  # ties: the first maximum in the window keeps it
cases = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(3, 2), stride=(2, 1)),
         dict(kernel_size=2, ceil_mode=True), dict(kernel_size=3, stride=1, padding=1, dilation=1),
         dict(kernel_size=(2, 3), stride=2, padding=(1, 0), dilation=(2, 1), ceil_mode=True),
         dict(kernel_size=9, stride=1)]  # 81 positions: a runtime call
for i, kw in enumerate(cases):
    fn = lambda a, kw=kw: F.max_pool2d(a, return_indices=True, **kw)
    check(f"max_pool2d[{i}]", fn, x, atol=0, rtol=0)
    check(f"max_pool2d_3d[{i}]", fn, x[0], atol=0, rtol=0)
    check(f"max_pool2d_grad[{i}]", lambda a, kw=kw: F.max_pool2d(a * 2, **kw).sum(), torch.randn(2, 3, 9, 10), grad=True)
check("max_pool2d_channels_last", lambda a: F.max_pool2d(a, 2, return_indices=True),
      x.contiguous(memory_format=torch.channels_last), atol=0, rtol=0)
check("max_pool2d_view", lambda a: F.max_pool2d(a[:, :, 1:, ::2], 2, return_indices=True), x, atol=0, rtol=0)
# avg_pool2d and its backward are loop nests too: ATen's sums (row by row, in the dtype), its
# divisors (count_include_pad, divisor_override, windows clipped at the padded edge) exactly.
y = torch.randn(3, 4, 9, 10)
for i, kw in enumerate([dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                        dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                        dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 1), ceil_mode=True),
                        dict(kernel_size=3, stride=2, ceil_mode=True, count_include_pad=False),
                        dict(kernel_size=2, divisor_override=3), dict(kernel_size=3, stride=1, padding=1)]):
    check(f"avg_pool2d[{i}]", lambda a, kw=kw: F.avg_pool2d(a, **kw), y, atol=0, rtol=0)
    check(f"avg_pool2d_3d[{i}]", lambda a, kw=kw: F.avg_pool2d(a, **kw), y[0], atol=0, rtol=0)
    check(f"avg_pool2d_grad[{i}]", lambda a, kw=kw: (F.avg_pool2d(a * 2, **kw) * 1.5).sum(), y, grad=True)
    k = kw["kernel_size"]
    args = [[k, k] if isinstance(k, int) else list(k), kw.get("stride", []), kw.get("padding", 0),
            kw.get("ceil_mode", False), kw.get("count_include_pad", True), kw.get("divisor_override")]
    gout = torch.randn(F.avg_pool2d(y, **kw).shape)
    check(f"avg_pool2d_backward[{i}]", lambda go, a, args=args: torch.ops.aten.avg_pool2d_backward(go, a, *args),
          gout, y, atol=0, rtol=0)
check("avg_pool2d_channels_last", lambda a: F.avg_pool2d(a, 2), y.contiguous(memory_format=torch.channels_last),
      atol=0, rtol=0)
finish()
'''


def _run(code):
    proc = run_python(PRELUDE + code, env={"NEURON_MODE": "compile"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.parametrize("family", ["reductions", "losses", "backward", "normalization", "pooling"])
def test_lowerings_match_cpu_and_compile(family):
    code = {"reductions": REDUCTIONS, "losses": LOSSES, "backward": BACKWARD, "normalization": NORMALIZATION,
            "pooling": POOLING}[family]
    report = _run(code)
    assert report["failures"] == [], "\n".join(report["failures"])
    assert report["unlowered"] == {}, report["unlowered"]
    assert report["compile_failures"] == {}, report["compile_failures"]
    assert report["ops_run_compiled"] > 0


def test_pooling_is_a_loop_nest_on_the_host(tmp_path):
    """On the host target max and avg pooling compile to their own loops, not runtime calls of
    ATen's kernels (several times slower there); a window of more than 64 positions stays a
    runtime call."""
    code = r'''
import torch, torch_trn
import torch.nn.functional as F
x = torch.randn(2, 3, 12, 12, device=torch_trn.device())
small = F.max_pool2d(x, 2, return_indices=True)
torch_trn.sync()
large = F.max_pool2d(x, 9, stride=1, return_indices=True)
torch_trn.sync()
x.requires_grad_()
F.avg_pool2d(x, 3).sum().backward()
torch_trn.sync()
'''
    dump = tmp_path / "mlir"
    dump.mkdir()
    proc = run_python(code, env={"NEURON_MODE": "compile", "NEURON_DUMP_MLIR": str(dump),
                                 "NEURON_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr[-4000:]
    modules = [p.read_text() for p in dump.glob("*.mlir")]
    small_mods = [m for m in modules if "tensor<2x3x6x6xi64>" in m]
    large_mods = [m for m in modules if "tensor<2x3x4x4xi64>" in m]
    assert len(small_mods) == 1 and len(large_mods) == 1, [m[:300] for m in modules]
    assert "trn_ext" not in small_mods[0] and "linalg.index" in small_mods[0]
    assert "trn_ext" in large_mods[0]
    # avg_pool2d ([2, 3, 12, 12] -> [2, 3, 4, 4] f32) and its backward (-> [2, 3, 12, 12] f32).
    avg = [m for m in modules if "tensor<2x3x4x4xf32>" in m and "tensor<2x3x4x4xi64>" not in m]
    assert len(avg) == 2 and all("trn_ext" not in m for m in avg), [m[:300] for m in avg]
