"""torch_trn.trace_ops(): the recorded stream as data (the zoo's feature extraction reads it)."""
import os
import sys

import pytest
import torch

import torch_trn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import line_of  # noqa: E402


def test_trace_has_forward_and_backward_ops_with_shapes_and_lines():
    m = torch.nn.Sequential(torch.nn.Conv2d(4, 8, 3, groups=4, dilation=2, padding=2), torch.nn.GELU(approximate="tanh"),
                            torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 3)).to("neuron")
    x = torch.randn(2, 4, 6, 6).to("neuron")
    with torch_trn.trace_ops() as t:
        loss = m(x).sum()  # MARK-TRACE
        loss.backward()
    ops = [o["op"] for o in t.ops]
    conv = next(o for o in t.ops if o["op"] == "aten::convolution")
    assert conv["args"]["weight"] == {"shape": [8, 1, 3, 3], "dtype": "Float"}
    assert conv["args"]["groups"] == 4 and conv["args"]["dilation"] == [2, 2] and conv["args"]["transposed"] is False
    assert conv["outputs"] == [{"shape": [2, 8, 6, 6], "dtype": "Float"}]
    assert f"test_trace_ops.py:{line_of(__file__, 'MARK-TRACE')}" in conv["source"]
    gelu = next(o for o in t.ops if o["op"].startswith("aten::gelu"))
    assert gelu["args"]["approximate"] == "tanh"
    assert "aten::convolution_backward" in ops, "backward ops (recorded by the autograd thread) are missing"
    assert any(op.startswith("aten::gelu_backward") for op in ops)
    # A later trace holds only its own ops.
    with torch_trn.trace_ops() as t2:
        (x * 2).sum().item()
    assert [o["op"].split(".")[0] for o in t2.ops] == ["aten::mul", "aten::sum"]


def test_traces_do_not_nest():
    with torch_trn.trace_ops():
        with pytest.raises(Exception, match="already active"):
            with torch_trn.trace_ops():
                pass
