"""Output geometry from PyTorch's C++ structured Meta functions (src/trace/cpp_meta.h).

torch 2.14 answers most Meta calls in Python; for the common ops the recorder asks the C++
structured Meta functions instead. What is proven:
  - for every op of the table, over contiguous, transposed, broadcast, expanded, 0-dim,
    channels_last and type-promoting inputs, a device result has the sizes, strides, dtype and
    values of the CPU result (the CPU out= kernel the executor runs is what these functions
    describe), and the C++ path was the one taken (stats()["meta_kernels_cpp"] grows);
  - a shape error raised by a C++ Meta function still surfaces as PyTorch CPU's exception;
  - `import torch_trn` runs no Python Meta kernel: it imports neither torch._dynamo nor sympy.
"""
import pytest
import torch
import torch.nn.functional as F

import torch_trn
from helpers import last_json, run_python

DEV = torch_trn.device()


def inputs():
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g)
    return {
        "contiguous": (r(3, 4), r(3, 4)),
        "transposed": (r(4, 3).t(), r(3, 4)),
        "broadcast": (r(3, 1), r(1, 4)),
        "expanded": (r(1, 4).expand(3, 4), r(3, 4).t().contiguous().t()),
        "scalar": (r(3, 4), torch.tensor(1.5)),
        "int_float": (torch.randint(-3, 4, (3, 4), generator=g), r(3, 4)),
        "channels_last": (r(2, 3, 4, 5).contiguous(memory_format=torch.channels_last), r(2, 3, 4, 5)),
    }


UNARY = {
    "neg": torch.neg, "exp": torch.exp, "log": lambda x: torch.log(x.exp() + 1), "sqrt": lambda x: torch.sqrt(x.exp()),
    "rsqrt": lambda x: torch.rsqrt(x.exp() + 1), "reciprocal": lambda x: torch.reciprocal(x + 10), "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "silu": F.silu, "sin": torch.sin, "cos": torch.cos, "erf": torch.erf, "relu": torch.relu,
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "clamp_min": lambda x: x.clamp_min(0.1),
    "clamp": lambda x: x.clamp(-0.5, 0.5), "pow_scalar": lambda x: x.pow(2), "sum": lambda x: x.sum(0),
    "sum_keepdim": lambda x: x.sum(-1, keepdim=True), "mean": lambda x: x.mean((0, 1)), "amax": lambda x: x.amax(1),
    "amin": lambda x: x.amin(0), "argmax": lambda x: x.argmax(-1), "softmax": lambda x: x.softmax(-1),
    "log_softmax": lambda x: x.log_softmax(0), "eq_scalar": lambda x: x.eq(0.5), "gt_scalar": lambda x: x > 0,
}
BINARY = {
    "add": torch.add, "add_alpha": lambda a, b: torch.add(a, b, alpha=2), "sub": torch.sub, "mul": torch.mul,
    "div": torch.div, "maximum": torch.maximum, "minimum": torch.minimum, "eq": torch.eq, "ne": torch.ne,
    "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge, "pow": lambda a, b: (a * a + 1).pow(b),
    "lerp": lambda a, b: torch.lerp(a.float(), b.float(), 0.3),
    "addcmul": lambda a, b: torch.addcmul(a.float(), a, b, value=0.5),
    "addcdiv": lambda a, b: torch.addcdiv(a.float(), a, b.exp(), value=0.5),
    "tanh_backward": lambda a, b: torch.ops.aten.tanh_backward(a.float(), b.float()),
    "threshold_backward": lambda a, b: torch.ops.aten.threshold_backward(a.float(), b.float(), 0.0),
}
INPLACE = {
    "add_": lambda a, b: a.add_(b, alpha=0.5), "mul_": lambda a, b: a.mul_(b), "div_": lambda a, b: a.div_(b.exp()),
    "lerp_": lambda a, b: a.lerp_(b, 0.1), "addcmul_": lambda a, b: a.addcmul_(b, b, value=0.1),
    "addcdiv_": lambda a, b: a.addcdiv_(b, b.exp(), value=0.1), "sqrt_": lambda a, b: a.exp_().sqrt_(),
    "fill_": lambda a, b: a.fill_(2.5), "zero_": lambda a, b: a.zero_(), "relu_": lambda a, b: a.relu_(),
    "clamp_": lambda a, b: a.clamp_(max=0.2),
}


def same(got, want, what):
    assert got.device.type == "neuron", what
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} vs CPU {want.dtype}"
    assert got.shape == want.shape, f"{what}: sizes {tuple(got.shape)} vs CPU {tuple(want.shape)}"
    assert got.stride() == want.stride(), f"{what}: strides {got.stride()} vs CPU {want.stride()}"
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, msg=lambda m: f"{what}: {m}")


def on_both(*ts):
    """Device copies and CPU twins with the device copies' strides (.to() densifies a
    non-dense view, as it does for CUDA): the CPU reference sees the layouts the device saw."""
    devs = [t.to(DEV) for t in ts]
    cpus = [d.cpu() for d in devs]
    for d, c in zip(devs, cpus):
        assert c.stride() == d.stride()
    return devs, cpus


def cpp_calls():
    return torch_trn.stats()["meta_kernels_cpp"]


def test_the_table_names_real_operators():
    names = torch_trn._C.cpp_meta_ops()
    assert len(names) > 100, names
    for name in names:
        op, _, overload = name.partition(".")
        packet = getattr(torch.ops.aten, op.removeprefix("aten::"))
        assert (overload or "default") in packet.overloads(), name


@pytest.mark.parametrize("layout", list(inputs()))
def test_unary_and_reductions_match_cpu_geometry(layout):
    (xd,), (x,) = on_both(inputs()[layout][0].float())
    for name, fn in UNARY.items():
        same(fn(xd), fn(x), f"{name} on {layout}")


@pytest.mark.parametrize("layout", list(inputs()))
def test_binary_match_cpu_geometry_and_promotion(layout):
    (ad, bd), (a, b) = on_both(*inputs()[layout])
    for name, fn in BINARY.items():
        same(fn(ad, bd), fn(a, b), f"{name} on {layout}")


@pytest.mark.parametrize("layout", [k for k in inputs() if k not in ("broadcast", "expanded", "int_float")])
def test_inplace_keep_cpu_strides_and_values(layout):
    (ad, bd), (a, b) = on_both(*inputs()[layout])
    for name, fn in INPLACE.items():
        want = torch.empty_strided(a.shape, a.stride()).copy_(a)
        got = torch.empty_strided(a.shape, a.stride(), device=DEV).copy_(ad)
        r = fn(got, bd)
        fn(want, b)
        assert r is got, name
        same(got, want, f"{name} on {layout}")


def test_matmul_losses_and_pooling_match_cpu():
    g = torch.Generator().manual_seed(1)
    a, b, c = torch.randn(5, 3, generator=g), torch.randn(3, 4, generator=g), torch.randn(4, generator=g)
    x3, y3 = torch.randn(2, 5, 3, generator=g), torch.randn(2, 3, 4, generator=g)
    img = torch.randn(2, 3, 8, 8, generator=g, requires_grad=True)
    logits = torch.randn(6, 10, generator=g, requires_grad=True)
    target = torch.randint(0, 10, (6,), generator=g)
    cases = {
        "mm": lambda t: t(a) @ t(b), "mm_t": lambda t: t(b).t() @ t(a).t(), "addmm": lambda t: torch.addmm(t(c), t(a), t(b)),
        "bmm": lambda t: torch.bmm(t(x3), t(y3)), "baddbmm": lambda t: torch.baddbmm(t(x3) @ t(y3), t(x3), t(y3), beta=0.5),
    }
    before = cpp_calls()
    for name, fn in cases.items():
        same(fn(lambda v: v.to(DEV)), fn(lambda v: v), name)
    for name, fn in {
        "nll_loss": lambda t: F.nll_loss(F.log_softmax(t(logits), -1), t(target)),
        "max_pool2d": lambda t: F.max_pool2d(t(img), 2).sum(),
        "avg_pool2d": lambda t: F.avg_pool2d(t(img), 3, stride=2, padding=1).sum(),
    }.items():
        want = fn(lambda v: v)
        grads_cpu = torch.autograd.grad(want, [logits if name == "nll_loss" else img])
        leaf = (logits if name == "nll_loss" else img).detach().to(DEV).requires_grad_()
        got = fn(lambda v: leaf if v.requires_grad else v.to(DEV))
        (grad_dev,) = torch.autograd.grad(got, [leaf])
        same(got, want, name)
        same(grad_dev, grads_cpu[0], f"{name} backward")
    assert cpp_calls() > before


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (6, 3), (2, 3, 1, 1)])
def test_batch_norm_forward_and_backward_match_cpu_from_cpp(shape, affine):
    """native_batch_norm and its backward (no structured Meta function: cpp_meta.cpp's own) in
    training and eval mode: outputs, statistics, running statistics and gradients have CPU's
    geometry and values, and the C++ functions were the ones asked (geometries no other test
    uses, so every call is a meta cache miss)."""
    g = torch.Generator().manual_seed(2)
    shape = (shape[0] + (0 if affine else 1),) + shape[1:]  # each case its own geometry
    x = torch.randn(*shape, generator=g)
    bn_cpu = torch.nn.BatchNorm2d(3, affine=affine) if len(shape) == 4 else torch.nn.BatchNorm1d(3, affine=affine)
    bn_dev = type(bn_cpu)(3, affine=affine).to(DEV)
    bn_dev.load_state_dict(bn_cpu.state_dict())
    before = cpp_calls()
    for training in (True, False):
        bn_cpu.train(training)
        bn_dev.train(training)
        xc = x.clone().requires_grad_()
        xd = x.to(DEV).requires_grad_()
        want, got = bn_cpu(xc), bn_dev(xd)
        same(got, want, f"batch_norm {shape} training={training}")
        grad = torch.randn(*shape, generator=g)
        want.backward(grad)
        got.backward(grad.to(DEV))
        same(xd.grad, xc.grad, f"batch_norm {shape} training={training}: grad_input")
        if affine:
            same(bn_dev.weight.grad, bn_cpu.weight.grad, f"batch_norm {shape}: grad_weight")
            same(bn_dev.bias.grad, bn_cpu.bias.grad, f"batch_norm {shape}: grad_bias")
        same(bn_dev.running_mean, bn_cpu.running_mean, f"batch_norm {shape}: running_mean")
        same(bn_dev.running_var, bn_cpu.running_var, f"batch_norm {shape}: running_var")
    # Forward and backward, in training and in eval mode.
    assert cpp_calls() >= before + 4


@pytest.mark.parametrize("affine", ["both", "weight", "none"])
@pytest.mark.parametrize("shape,normalized", [((4, 6, 10), (10,)), ((3, 5, 4, 6), (4, 6)), ((7, 9), (9,))])
def test_layer_norm_forward_and_backward_match_cpu_from_cpp(shape, normalized, affine):
    """native_layer_norm and its backward (cpp_meta.cpp's own): output, mean, rstd and the
    gradients of input, weight and bias have CPU's geometry and values, and the C++ functions
    were the ones asked (each case its own geometry: meta cache misses)."""
    g = torch.Generator().manual_seed(5)
    shape = (shape[0] + ["both", "weight", "none"].index(affine),) + shape[1:]
    x = torch.randn(*shape, generator=g)
    w = torch.randn(*normalized, generator=g) if affine != "none" else None
    b = torch.randn(*normalized, generator=g) if affine == "both" else None
    leaves_cpu = [t.clone().requires_grad_() for t in (x, w, b) if t is not None]
    leaves_dev = [t.to(DEV).requires_grad_() for t in (x, w, b) if t is not None]

    def run(leaves):
        it = iter(leaves)
        xi = next(it)
        wi = next(it) if w is not None else None
        bi = next(it) if b is not None else None
        return torch.ops.aten.native_layer_norm(xi, list(normalized), wi, bi, 1e-5)

    before = cpp_calls()
    got, want = run(leaves_dev), run(leaves_cpu)
    for i, (d, c) in enumerate(zip(got, want)):
        same(d, c, f"native_layer_norm {shape} {normalized} {affine}: result {i}")
    grad = torch.randn(*shape, generator=g)
    grads_dev = torch.autograd.grad(got[0], leaves_dev, grad.to(DEV))
    grads_cpu = torch.autograd.grad(want[0], leaves_cpu, grad)
    for i, (d, c) in enumerate(zip(grads_dev, grads_cpu)):
        same(d, c, f"native_layer_norm {shape} {normalized} {affine}: gradient {i}")
    assert cpp_calls() >= before + 2  # the forward and the backward


def test_batch_norm_outside_the_cpp_case_keeps_the_dispatchers_kernel():
    """channels_last input and float64: the Python Meta kernel answers (no C++ call), and the
    results are still CPU's."""
    g = torch.Generator().manual_seed(3)
    for x in (torch.randn(2, 3, 4, 5, generator=g).contiguous(memory_format=torch.channels_last),
              torch.randn(2, 3, 4, 5, generator=g, dtype=torch.float64)):
        bn = torch.nn.BatchNorm2d(3).to(x.dtype)
        bn_dev = torch.nn.BatchNorm2d(3).to(x.dtype).to(DEV)
        xd = x.to(DEV)
        before = cpp_calls()
        got = torch.ops.aten.native_batch_norm(xd, bn_dev.weight, bn_dev.bias, bn_dev.running_mean,
                                               bn_dev.running_var, True, 0.1, 1e-5)
        assert cpp_calls() == before, f"{x.dtype}, strides {x.stride()}: the C++ function was asked"
        want = torch.ops.aten.native_batch_norm(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, True, 0.1, 1e-5)
        for i, (d, c) in enumerate(zip(got, want)):
            same(d, c, f"native_batch_norm {x.dtype} {x.stride()} result {i}")


def test_layer_norm_outside_the_cpp_case_keeps_the_dispatchers_kernel():
    """A transposed input and bfloat16: the dispatcher's Meta kernel answers, results are CPU's."""
    g = torch.Generator().manual_seed(6)
    for x in (torch.randn(8, 5, generator=g).t(), torch.randn(5, 8, generator=g).to(torch.bfloat16)):
        w = torch.randn(8, generator=g).to(x.dtype)
        before = cpp_calls()
        got = torch.ops.aten.native_layer_norm(x.to(DEV), [8], w.to(DEV), None, 1e-5)
        assert cpp_calls() == before, f"{x.dtype}, strides {x.stride()}: the C++ function was asked"
        want = torch.ops.aten.native_layer_norm(x, [8], w, None, 1e-5)
        for i, (d, c) in enumerate(zip(got, want)):
            same(d, c, f"native_layer_norm {x.dtype} {x.stride()} result {i}")


def test_batch_norm_with_a_wrong_parameter_is_cpus_case():
    """A weight that is not [C]: F.batch_norm raises CPU's error; the native op itself (which does
    not check it on the CPU either) is not the C++ function's case, and gives CPU's result."""
    g = torch.Generator().manual_seed(4)
    x, w = torch.randn(2, 3, 4, 4, generator=g), torch.randn(4, generator=g)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        F.batch_norm(x.to(DEV), None, None, w.to(DEV), None, True)
    before = cpp_calls()
    got = torch.ops.aten.native_batch_norm(x.to(DEV), w.to(DEV), None, None, None, True, 0.1, 1e-5)
    assert cpp_calls() == before
    want = torch.ops.aten.native_batch_norm(x, w, None, None, None, True, 0.1, 1e-5)
    for i, (d, c) in enumerate(zip(got, want)):
        same(d, c, f"native_batch_norm with a [4] weight, result {i}")


def test_the_cpp_functions_are_the_ones_asked():
    before = cpp_calls()
    x = torch.randn(7, 13, device=DEV)  # geometry no other test uses: a meta cache miss
    y = (x * 2 + x.exp()).sum(1).cpu()
    assert y.shape == (7,)
    assert cpp_calls() >= before + 3


def test_a_shape_error_is_cpus_exception():
    a, b = torch.randn(3, 4, device=DEV), torch.randn(5, 4, device=DEV)
    with pytest.raises(RuntimeError, match="must match the size"):
        (a + b).cpu()
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        (a @ b).cpu()


def test_import_runs_no_python_meta_kernel():
    proc = run_python("""
        import json, sys, torch
        before = {m for m in ("torch._dynamo", "sympy") if m in sys.modules}
        import torch_trn
        print(json.dumps({"before": sorted(before),
                          "after": sorted(m for m in ("torch._dynamo", "sympy") if m in sys.modules)}))
    """)
    out = last_json(proc)
    assert out["before"] == [], out
    assert out["after"] == [], f"import torch_trn imported {out['after']}"
