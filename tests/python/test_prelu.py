"""PReLU (`_prelu_kernel` and its backward) lowered in the group front: compiled on the host and on
the modeled NeuronCore (NEURON_TARGET=trn2), values and gradients equal to PyTorch CPU's."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import TRN, last_json, ran_on_core, run_python  # noqa: E402

PRELU = """
    import json, torch, torch_trn
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, 5, 5, generator=g)
    x[0, 0, 0, :3] = torch.tensor([0.0, -0.0, float("nan")])
    def run(dev, channels):
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Conv2d(6, 6, 3, padding=1), torch.nn.PReLU(channels)).to(dev)
        with torch.no_grad():
            m[1].weight.copy_(torch.linspace(-0.5, 0.75, channels))
        X = x.clone().to(dev).requires_grad_()
        y = m(X) * 1
        (y.nan_to_num(0.0) * torch.arange(150.0, device=dev).view(6, 5, 5)).sum().backward()
        return {"y": y.detach().cpu(), "dx": X.grad.cpu(), "dw": m[1].weight.grad.cpu()}
    eq = {}
    for channels in (1, 6):
        ref = run("cpu", channels)
        got = run("neuron", channels)
        for k in ref:
            eq[f"{k}_{channels}"] = bool(torch.allclose(got[k], ref[k], rtol=1e-5, atol=1e-4, equal_nan=True))
    s = torch_trn.stats()
    print(json.dumps({"equal": eq, "unlowered": s["unlowered_ops"], "dev": s.get("device")}))
"""


@pytest.mark.parametrize("target", ["host", "trn2"])
def test_prelu_forward_and_backward_match_cpu(target):
    out = last_json(run_python(PRELU, env=TRN if target == "trn2" else {"NEURON_MODE": "compile"}))
    assert all(out["equal"].values()), out["equal"]
    assert not any("prelu" in k for k in out["unlowered"]), out["unlowered"]
    if target == "trn2":
        ran = ran_on_core(out["dev"])
        assert {"aten::_prelu_kernel", "aten::_prelu_kernel_backward"} <= ran, sorted(ran)
        assert not out["dev"]["host_group_reasons"], out["dev"]["host_group_reasons"]
