"""NEURON_TARGET=trn2: convolutions (forward and backward), 2-D pooling (and backward) and
nll_loss forward run on the modeled NeuronCore, with results equal to PyTorch CPU's.

Each test runs a fresh process (the target is read at import) in compile mode and checks the
values against the same ops on CPU, that the ops ran on the modeled core
(stats()["device"]["ops_by_name"]), which engines worked, and that no group went to the host.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import TRN, assert_convolutions_wholly_on_core, last_json, ran_on_core, run_python, train_on_trn2  # noqa: E402


def test_convolutions_forward_and_backward_on_trn2():
    out = last_json(run_python("""
        import json, torch, torch_trn, torch.nn.functional as F
        torch.manual_seed(0)
        cases = {  # input, weight, stride, padding, dilation, groups, bias
            "2d": ((2, 3, 9, 11), (8, 3, 3, 3), 1, 1, 1, 1, True),
            "strided_dilated_grouped": ((2, 4, 10, 9), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2, False),
            "depthwise_strided": ((2, 5, 8, 8), (5, 1, 3, 3), 2, 1, 1, 5, True),
            "depthwise_multiplier": ((1, 2, 7, 7), (4, 1, 3, 3), 1, 2, 2, 2, True),
            "1d_strided": ((2, 4, 13), (6, 4, 5), 2, 2, 1, 1, True),
            "1d_grouped": ((2, 6, 16), (6, 3, 3), 3, 0, 1, 2, False),
            "pointwise_wide": ((1, 130, 4, 5), (140, 130, 1, 1), 1, 0, 1, 1, True),  # > 128 channels
        }
        diffs = {}
        for name, (xs, ws, stride, padding, dilation, groups, has_bias) in cases.items():
            x, w = torch.randn(xs), torch.randn(ws)
            b = torch.randn(ws[0]) if has_bias else None
            conv = F.conv2d if len(xs) == 4 else F.conv1d
            def run(dev):
                X, W = x.clone().to(dev).requires_grad_(), w.clone().to(dev).requires_grad_()
                B = b.clone().to(dev).requires_grad_() if b is not None else None
                y = conv(X, W, B, stride=stride, padding=padding, dilation=dilation, groups=groups)
                g = torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(dev)
                (y * g).sum().backward()
                return [t.detach().cpu() for t in [y, X.grad, W.grad] + ([B.grad] if B is not None else [])]
            ref, got = run("cpu"), run("neuron")
            diffs[name] = [float((a - r).abs().max() / r.abs().max().clamp_min(1e-6)) for a, r in zip(got, ref)]
        # a channels-last input (passed to the call as a permuted view)
        xl, wl = torch.randn(2, 7, 8, 6), torch.randn(4, 6, 3, 3)
        def run_cl(dev):
            X = xl.clone().to(dev).requires_grad_()
            y = F.conv2d(X.permute(0, 3, 1, 2) * 2, wl.to(dev), padding=1)
            y.square().sum().backward()
            return [y.detach().cpu(), X.grad.cpu()]
        diffs["channels_last"] = [float((a - r).abs().max() / r.abs().max()) for a, r in zip(run_cl("neuron"), run_cl("cpu"))]
        torch_trn.sync()
        print(json.dumps({"diffs": diffs, "dev": torch_trn.stats()["device"]}))
    """, env=TRN))
    assert_convolutions_wholly_on_core(out)
    assert out["dev"]["matmul_flops"] > 0


def test_transposed_convolutions_forward_and_backward_on_trn2():
    # conv_transpose1d/2d: strides with output_padding, padding, dilation, groups, depthwise,
    # with and without bias; output, grad input, grad weight and grad bias against CPU.
    out = last_json(run_python("""
        import json, torch, torch_trn, torch.nn.functional as F
        torch.manual_seed(0)
        cases = {  # input, weight (in, out / groups, k...), stride, padding, output_padding, dilation, groups, bias
            "2d_s2_outpad": ((2, 4, 5, 6), (4, 3, 3, 3), 2, 1, 1, 1, 1, True),
            "2d_grouped_dilated": ((1, 6, 4, 5), (6, 2, 2, 3), (2, 1), (0, 1), (1, 0), (1, 2), 3, False),
            "2d_depthwise": ((2, 5, 6, 6), (5, 1, 3, 3), 2, 1, 0, 1, 5, True),
            "2d_k4s2": ((1, 8, 4, 4), (8, 5, 4, 4), 2, 1, 0, 1, 1, True),
            "1d": ((2, 4, 9), (4, 6, 5), 3, 2, 2, 1, 1, True),
            "wide_channels": ((1, 130, 3, 3), (130, 140, 1, 1), 1, 0, 0, 1, 1, False),
        }
        diffs = {}
        for name, (xs, ws, stride, padding, out_pad, dilation, groups, has_bias) in cases.items():
            x, w = torch.randn(xs), torch.randn(ws)
            b = torch.randn(ws[1] * groups) if has_bias else None
            conv = F.conv_transpose2d if len(xs) == 4 else F.conv_transpose1d
            def run(dev):
                X, W = x.clone().to(dev).requires_grad_(), w.clone().to(dev).requires_grad_()
                B = b.clone().to(dev).requires_grad_() if b is not None else None
                y = conv(X, W, B, stride=stride, padding=padding, output_padding=out_pad, groups=groups, dilation=dilation)
                g = torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(dev)
                (y * g).sum().backward()
                return [t.detach().cpu() for t in [y, X.grad, W.grad] + ([B.grad] if B is not None else [])]
            ref, got = run("cpu"), run("neuron")
            diffs[name] = [float((a - r).abs().max() / r.abs().max().clamp_min(1e-6)) for a, r in zip(got, ref)]
        torch_trn.sync()
        print(json.dumps({"diffs": diffs, "dev": torch_trn.stats()["device"]}))
    """, env=TRN))
    for name, d in out["diffs"].items():
        assert max(d) < 1e-5, f"{name}: relative differences vs CPU {d}"
    dev = out["dev"]
    assert {"aten::convolution", "aten::convolution_backward"} <= ran_on_core(dev), sorted(ran_on_core(dev))
    assert dev["host_group_reasons"] == {}, dev["host_group_reasons"]
    assert dev["ops_on_host"] == 0, dev


def test_pooling_forward_and_backward_on_trn2():
    out = last_json(run_python("""
        import json, torch, torch_trn, torch.nn.functional as F
        torch.manual_seed(0)
        x0 = torch.randn(2, 5, 11, 10)
        x0[0, 0, 0, :3] = float("nan")          # NaN wins max pooling, as on CPU
        x0[1, 1, 2, 2] = x0[1, 1, 2, 3] = 9.0   # a tie: the first maximum's index
        u0 = torch.randn(3, 9, 8)                # unbatched
        def run(dev):
            x = x0.clone().to(dev).requires_grad_(); u = u0.clone().to(dev).requires_grad_()
            xs = torch.where(torch.isnan(x), torch.zeros_like(x), x)
            r = {}
            r["max"], r["max_idx"] = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
            r["max_dil_ceil"] = F.max_pool2d(xs, (2, 3), stride=(2, 1), dilation=(2, 1), ceil_mode=True)
            r["max_unbatched"] = F.max_pool2d(u, 2)
            r["avg"] = F.avg_pool2d(xs, 3, stride=2, padding=1)
            r["avg_no_pad_ceil"] = F.avg_pool2d(xs, (3, 2), stride=(2, 3), padding=(1, 1), count_include_pad=False,
                                                ceil_mode=True)
            r["avg_divisor"] = F.avg_pool2d(xs, 2, divisor_override=3)
            r["adaptive"] = F.adaptive_avg_pool2d(xs, (1, 5))
            loss = sum((v * torch.linspace(-1, 1, v.numel(), device=dev).reshape(v.shape)).sum()
                       for k, v in r.items() if k not in ("max", "max_idx"))
            loss.backward()
            r["grad_x"], r["grad_u"] = x.grad, u.grad
            return {k: v.detach().cpu() for k, v in r.items()}
        ref, got = run("cpu"), run("neuron")
        torch_trn.sync()
        def same(a, b):
            if a.dtype == torch.int64:
                return bool(torch.equal(a, b))
            return bool(torch.equal(torch.isnan(a), torch.isnan(b))) and float((a - b).nan_to_num(0).abs().max()) < 1e-5
        print(json.dumps({"same": {k: same(got[k], ref[k]) for k in ref}, "dev": torch_trn.stats()["device"]}))
    """, env=TRN))
    assert all(out["same"].values()), out["same"]
    dev = out["dev"]
    ran = ran_on_core(dev)
    for op in ("aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward", "aten::avg_pool2d",
               "aten::avg_pool2d_backward", "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d_backward"):
        assert op in ran, f"{op} did not run on the modeled core: {sorted(ran)}"
    assert dev["host_group_reasons"] == {}, dev["host_group_reasons"]
    assert dev["engine_busy_ns"]["vector"] > 0 and dev["engine_busy_ns"]["gpsimd"] > 0  # iota indices


def test_max_pool_all_minus_inf_windows_on_trn2():
    # A window whose values inside the input are all -inf: ATen keeps the index of its first
    # position inside the input (not a padding position); the gradient goes there too. Padding on
    # both sides, dilation, a rectangular kernel; columns and rows of -inf at the edges.
    out = last_json(run_python("""
        import json, torch, torch_trn, torch.nn.functional as F
        torch.manual_seed(0)
        x0 = torch.randn(2, 3, 9, 10)
        x0[:, :, :4, :] = float("-inf")
        x0[:, :, :, -3:] = float("-inf")
        x0[1, 2] = float("-inf")
        cases = {"k3s2p1": dict(kernel_size=3, stride=2, padding=1),
                 "k3s1p1": dict(kernel_size=3, stride=1, padding=1),
                 "k3x2_dil": dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 1), dilation=(2, 3))}
        def run(dev):
            r = {}
            for name, kw in cases.items():
                x = x0.clone().to(dev).requires_grad_()
                v, i = F.max_pool2d(x, return_indices=True, **kw)
                v.masked_fill(torch.isinf(v), 0.0).sum().backward()
                r[name], r[name + "_idx"], r[name + "_grad"] = v.detach().cpu(), i.cpu(), x.grad.cpu()
            return r
        ref, got = run("cpu"), run("neuron")
        print(json.dumps({"same": {k: bool(torch.equal(got[k], ref[k])) for k in ref},
                          "dev": torch_trn.stats()["device"]}))
    """, env=TRN))
    assert all(out["same"].values()), out["same"]
    ran = ran_on_core(out["dev"])
    assert {"aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward"} <= ran, sorted(ran)


def test_nll_loss_forward_on_trn2():
    out = last_json(run_python("""
        import json, torch, torch_trn, torch.nn.functional as F
        torch.manual_seed(0)
        x0 = torch.randn(6, 7).log_softmax(1); t0 = torch.tensor([0, 3, 6, -100, 2, 2]); w0 = torch.rand(7)
        x2 = torch.randn(2, 5, 3, 4); t2 = torch.randint(0, 5, (2, 3, 4))
        def run(dev):
            X, T, W = x0.to(dev), t0.to(dev), w0.to(dev)
            r = {"mean": F.nll_loss(X, T), "sum_weighted": F.nll_loss(X, T, weight=W, reduction="sum"),
                 "mean_weighted": F.nll_loss(X, T, weight=W), "none": F.nll_loss(X, T, reduction="none"),
                 "2d_ignore": F.nll_loss(x2.to(dev), t2.to(dev), ignore_index=1),
                 "1d": F.nll_loss(X[1], T[1]), "cross_entropy": F.cross_entropy(X * 3, T)}
            return {k: v.cpu() for k, v in r.items()}
        ref, got = run("cpu"), run("neuron")
        torch_trn.sync()
        dev = torch_trn.stats()["device"]
        try:
            F.nll_loss(x0.to("neuron"), torch.tensor([0, 1, 2, 3, 4, 9]).to("neuron")).item()
            error = None
        except IndexError as e:
            error = str(e)
        print(json.dumps({"diff": {k: float((got[k] - ref[k]).abs().max()) for k in ref}, "dev": dev, "error": error}))
    """, env=TRN))
    for k, d in out["diff"].items():
        assert d < 1e-6, f"{k}: {d} from CPU"
    dev = out["dev"]
    assert {"aten::nll_loss_forward", "aten::nll_loss2d_forward"} <= ran_on_core(dev), sorted(ran_on_core(dev))
    assert dev["ops_on_host"] == 0 and dev["host_group_reasons"] == {}, dev
    assert out["error"] and "out of bounds" in out["error"], out["error"]


def test_cnn_training_steps_run_wholly_on_trn2():
    # conv + batch norm + ReLU + max pool + depthwise conv + avg pool + linear + cross entropy:
    # two AdamW steps, every executed op on the modeled core, losses as on CPU.
    out = train_on_trn2(
        "nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2), "
        "nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 5))",
        "torch.randn(4, 3, 16, 16), torch.randint(0, 5, (4,))")
    for g, r in zip(out["got"], out["ref"]):
        assert abs(g - r) <= 1e-5 * max(1.0, abs(r)), (out["got"], out["ref"])
    dev = out["dev"]
    assert dev["ops_on_host"] == 0, (dev["ops_on_host"], dev["host_group_reasons"])
    assert dev["ops_on_device"] > 0 and dev["engine_busy_ns"]["tensor"] > 0
