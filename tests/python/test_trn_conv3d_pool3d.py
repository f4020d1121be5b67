"""NEURON_TARGET=trn2: 3-D convolutions (forward, grad input, grad weight, grad bias) and 3-D
max pooling (and its backward) run on the modeled NeuronCore, with results equal to PyTorch
CPU's.

Each test runs a fresh process (the target is read at import) in compile mode and checks the
values against the same ops on CPU, that the ops ran on the modeled core
(stats()["device"]["ops_by_name"]) and that nothing ran on the host.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import TRN, assert_convolutions_wholly_on_core, last_json, ran_on_core, run_python, train_on_trn2  # noqa: E402


def test_conv3d_forward_and_backward_on_trn2():
    out = last_json(run_python("""
        import json, torch, torch_trn, torch.nn.functional as F
        torch.manual_seed(0)
        cases = {  # input, weight, stride, padding, dilation, groups, bias
            "k3p1": ((2, 3, 4, 6, 5), (5, 3, 3, 3, 3), 1, 1, 1, 1, True),
            "depth_strided": ((1, 4, 5, 4, 4), (6, 4, 3, 3, 3), (2, 1, 1), 1, 1, 1, True),
            "strided_dilated_grouped": ((2, 4, 6, 7, 6), (6, 2, 2, 3, 2), (2, 1, 2), (1, 0, 1), (2, 1, 1), 2, False),
            "separable_spatial": ((1, 3, 3, 9, 8), (4, 3, 1, 3, 3), (1, 2, 2), (0, 1, 1), 1, 1, True),
            "separable_temporal": ((1, 4, 6, 3, 3), (4, 4, 3, 1, 1), (2, 1, 1), (1, 0, 0), 1, 1, False),
            "depthwise": ((2, 5, 4, 5, 5), (5, 1, 3, 3, 3), (1, 2, 2), 1, 1, 5, True),
            "pointwise_wide": ((1, 130, 2, 3, 3), (140, 130, 1, 1, 1), 1, 0, 1, 1, True),  # > 128 channels
        }
        diffs = {}
        for name, (xs, ws, stride, padding, dilation, groups, has_bias) in cases.items():
            x, w = torch.randn(xs), torch.randn(ws)
            b = torch.randn(ws[0]) if has_bias else None
            def run(dev):
                X, W = x.clone().to(dev).requires_grad_(), w.clone().to(dev).requires_grad_()
                B = b.clone().to(dev).requires_grad_() if b is not None else None
                y = F.conv3d(X, W, B, stride=stride, padding=padding, dilation=dilation, groups=groups)
                g = torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(dev)
                (y * g).sum().backward()
                return [t.detach().cpu() for t in [y, X.grad, W.grad] + ([B.grad] if B is not None else [])]
            ref, got = run("cpu"), run("neuron")
            diffs[name] = [float((a - r).abs().max() / r.abs().max().clamp_min(1e-6)) for a, r in zip(got, ref)]
        # transposed (output_padding, a grouped one)
        for name, (xs, ws, stride, padding, out_pad, groups) in {
                "transposed": ((1, 4, 3, 4, 3), (4, 3, 3, 3, 3), 2, 1, 1, 1),
                "transposed_grouped": ((2, 4, 2, 3, 3), (4, 2, 2, 3, 2), (1, 2, 1), (0, 1, 0), 0, 2)}.items():
            x, w = torch.randn(xs), torch.randn(ws)
            def run_t(dev):
                X, W = x.clone().to(dev).requires_grad_(), w.clone().to(dev).requires_grad_()
                y = F.conv_transpose3d(X, W, stride=stride, padding=padding, output_padding=out_pad, groups=groups)
                (y * torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(dev)).sum().backward()
                return [t.detach().cpu() for t in (y, X.grad, W.grad)]
            diffs[name] = [float((a - r).abs().max() / r.abs().max()) for a, r in zip(run_t("neuron"), run_t("cpu"))]
        torch_trn.sync()
        print(json.dumps({"diffs": diffs, "dev": torch_trn.stats()["device"]}))
    """, env=TRN))
    assert_convolutions_wholly_on_core(out)


def test_max_pool3d_forward_and_backward_on_trn2():
    # Values, indices (d * H * W + h * W + w; the first maximum on ties, NaN wins) and grad input
    # against CPU: padding, depth stride, dilation, ceil_mode, unbatched, and windows whose values
    # inside the input are all -inf (ATen keeps the first position inside the input).
    out = last_json(run_python("""
        import json, torch, torch_trn, torch.nn.functional as F
        torch.manual_seed(0)
        x0 = torch.randn(2, 3, 5, 7, 6)
        x0[0, 0, 1, 0, :3] = float("nan")
        x0[1, 1, 2, 2, 2] = x0[1, 1, 3, 2, 2] = 9.0   # a tie across depth slices
        x0[1, 2, :2] = float("-inf")
        u0 = torch.randn(3, 4, 6, 5)                   # unbatched
        cases = {"k3s2p1": dict(kernel_size=3, stride=2, padding=1),
                 "k122": dict(kernel_size=(1, 2, 2)),
                 "k2_dil_ceil": dict(kernel_size=(2, 2, 3), stride=(1, 2, 1), dilation=(2, 1, 2), ceil_mode=True),
                 "k3s1p1": dict(kernel_size=3, stride=1, padding=1)}
        def run(dev):
            r = {}
            for name, kw in cases.items():
                x = x0.clone().to(dev).requires_grad_()
                v, i = F.max_pool3d(x, return_indices=True, **kw)
                w = torch.linspace(-1, 1, v.numel()).reshape(v.shape).to(dev)
                (v.masked_fill(~torch.isfinite(v), 0.0) * w).sum().backward()
                r[name], r[name + "_idx"], r[name + "_grad"] = v.detach().cpu(), i.cpu(), x.grad.cpu()
            u = u0.clone().to(dev).requires_grad_()
            v = F.max_pool3d(u, 2, stride=(1, 2, 2))
            (v * torch.linspace(-1, 1, v.numel()).reshape(v.shape).to(dev)).sum().backward()
            r["unbatched"], r["unbatched_grad"] = v.detach().cpu(), u.grad.cpu()
            return r
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
    assert {"aten::max_pool3d_with_indices", "aten::max_pool3d_with_indices_backward"} <= ran, sorted(ran)
    assert dev["host_group_reasons"] == {}, dev["host_group_reasons"]
    assert dev["ops_on_host"] == 0, dev
    assert dev["engine_busy_ns"]["vector"] > 0 and dev["engine_busy_ns"]["gpsimd"] > 0  # iota indices


def test_video_cnn_training_steps_run_wholly_on_trn2():
    # Conv3d + BatchNorm3d + ReLU + MaxPool3d + strided Conv3d + adaptive avg pool + linear:
    # two AdamW steps, every executed op on the modeled core, losses as on CPU.
    out = train_on_trn2(
        "nn.Sequential(nn.Conv3d(3, 8, 3, padding=1), nn.BatchNorm3d(8), nn.ReLU(), nn.MaxPool3d((1, 2, 2)), "
        "nn.Conv3d(8, 16, 3, stride=(2, 1, 1), padding=1), nn.ReLU(), nn.AdaptiveAvgPool3d(1), nn.Flatten(), "
        "nn.Linear(16, 5))",
        "torch.randn(2, 3, 4, 8, 8), torch.randint(0, 5, (2,))")
    for g, r in zip(out["got"], out["ref"]):
        assert abs(g - r) <= 1e-5 * max(1.0, abs(r)), (out["got"], out["ref"])
    dev = out["dev"]
    assert out["unlowered"] == {}, out["unlowered"]
    assert dev["ops_on_host"] == 0, (dev["ops_on_host"], dev["host_group_reasons"])
    assert dev["ops_on_device"] > 0 and dev["engine_busy_ns"]["tensor"] > 0
