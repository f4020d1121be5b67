"""torch_trn.trace_ops(): the recorded stream as data (the zoo's feature extraction reads it)."""
import os
import sys

import pytest
import torch

import torch_trn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import line_of, run_python  # noqa: E402


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


def test_structured_ops_record_one_op_each_as_their_out_overload():
    # Structured ops (add, max.dim, sum.dim_IntList, mul_) reach the recorder directly: one record
    # per call (no TensorIterator detour through the composite kernel), a functional call as its
    # out= overload writing the fresh result, an in-place call as itself; values as on the CPU.
    a_cpu, b_cpu = torch.randn(3, 4), torch.randn(3, 4)
    a, b = a_cpu.to("neuron"), b_cpu.to("neuron")
    with torch_trn.trace_ops() as t:
        c = a + b
        values, indices = torch.max(a, dim=1)
        s = a.sum(dim=0)
        d = torch.empty_like(a)
        d.copy_(a)
        d.mul_(b)
        torch_trn.sync()
    assert [o["op"] for o in t.ops] == ["aten::add.out", "aten::max.dim_max", "aten::sum.IntList_out",
                                        "aten::copy_", "aten::mul_.Tensor"]
    assert t.ops[1]["outputs"] == [] or all(o is None for o in t.ops[1]["outputs"])
    torch.testing.assert_close(c.cpu(), a_cpu + b_cpu)
    ref_values, ref_indices = torch.max(a_cpu, dim=1)
    torch.testing.assert_close(values.cpu(), ref_values)
    assert torch.equal(indices.cpu(), ref_indices)
    torch.testing.assert_close(s.cpu(), a_cpu.sum(dim=0))
    torch.testing.assert_close(d.cpu(), a_cpu * b_cpu)


@pytest.mark.parametrize("mode", ["eager", "adaptive"])
def test_structured_op_with_a_strided_result_or_channels_last_argument_runs_functionally(mode):
    # The Meta kernel of _log_softmax_backward_data (a Python decomposition in torch 2.14) gives a
    # transposed gradient's layout to its result; the CPU out= kernel trusts a correctly sized
    # out's strides and writes it as if contiguous. Such a call must be recorded functionally
    # (and copied into the strided result), never as its out= overload, and so must a call with
    # a channels_last argument, where the C++ meta picks a memory format: values as on the CPU.
    # CTC losses hit it in every backward (log_softmax over a time-major transpose).
    code = """
        import torch, torch_trn
        g = torch.randn(12, 2, 32).transpose(0, 1)
        y = torch.log_softmax(torch.randn(2, 12, 32), -1)
        ref = torch.ops.aten._log_softmax_backward_data(g, y, -1, torch.float32)
        with torch_trn.trace_ops() as t:
            got = torch.ops.aten._log_softmax_backward_data(g.to("neuron"), y.to("neuron"), -1, torch.float32)
            torch_trn.sync()
        # (Its geometry now comes from the C++ structured meta, cpp_meta.h: CPU's own layout, so
        # the out= overload is safe; with the Python meta it had to be the functional one.)
        assert [o["op"] for o in t.ops] in (["aten::_log_softmax_backward_data"],
                                             ["aten::_log_softmax_backward_data.out"]), [o["op"] for o in t.ops]
        assert got.stride() == ref.stride(), (got.stride(), ref.stride())
        torch.testing.assert_close(got.cpu(), ref)
        x = torch.randn(2, 12, 32, requires_grad=True)
        xd = x.detach().to("neuron").requires_grad_()
        for inp in (x, xd):
            lp = torch.log_softmax(inp, -1).transpose(0, 1)
            (lp * torch.arange(32.0).to(inp.device)).sum().backward()
        torch.testing.assert_close(xd.grad.cpu(), x.grad)
        # The other way round: replication_pad2d's decomposition gives a channels_last input a
        # contiguous result, the CPU kernel writes channels_last.
        c = torch.randn(2, 3, 8, 8).contiguous(memory_format=torch.channels_last)
        pad = torch.nn.functional.pad(c.to("neuron"), (1, 1, 1, 1), mode="replicate")
        torch.testing.assert_close(pad.cpu(), torch.nn.functional.pad(c, (1, 1, 1, 1), mode="replicate"))
        print("ok")
    """
    out = run_python(code, env={"NEURON_MODE": mode})
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_geometry_trace_has_strides_offsets_and_storage_ids():
    # trace_ops(geometry=True) is the input of torch-trn-replay-group (tests/lit/front): each
    # device tensor carries its strides, offset and a storage id shared by views of one storage.
    a = torch.randn(4, 6).to("neuron")
    with torch_trn.trace_ops(geometry=True) as t:
        b = a.t() * 2
        c = b[1:3] + 1
        ids = (t.storage_id(a), t.storage_id(b), t.storage_id(c))
    mul, add = t.ops
    assert mul["args"]["self"] == {"shape": [6, 4], "dtype": "Float", "strides": [1, 6], "offset": 0,
                                   "device": "neuron", "storage": ids[0], "storage_bytes": 4 * 24}
    assert mul["args"]["other"] == {"shape": [], "dtype": "Long", "strides": [], "offset": 0, "device": "cpu",
                                    "value": 2}  # the wrapped Python scalar
    assert mul["outputs"][0]["storage"] == ids[1] != ids[0]
    view = add["args"]["self"]  # b[1:3]: a view of b's storage (b is a transposed layout)
    assert (view["shape"], view["strides"], view["offset"], view["storage"]) == ([2, 4], [1, 6], 1, ids[1])
    assert add["outputs"][0]["storage"] == ids[2] and ids[2] not in (ids[0], ids[1], -1)
    # Outside a geometry trace no ids are given.
    assert t.storage_id(a) == -1
