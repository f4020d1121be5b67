"""PyTorch's RNN modules on the device: the fused-cell ops (`_thnn_fused_lstm_cell`,
`_thnn_fused_gru_cell` and their backwards) that nn.LSTM/GRU/LSTMCell/GRUCell issue on a
non-CPU device are decomposed into recorded ops (src/trace/rnn_cells.cpp). Outputs and every
gradient must match PyTorch CPU, which runs its own (unfused) cells.

    PYTHONPATH=python python3 -m pytest tests/python/test_rnn_cells.py -v
"""
import copy

import pytest
import torch

import torch_trn

RTOL, ATOL = 1e-5, 1e-6


def _modules():
    torch.manual_seed(0)
    return {
        "lstm": (torch.nn.LSTM(6, 8, num_layers=2, batch_first=True), (3, 5, 6)),
        "lstm-bidir-nobias": (torch.nn.LSTM(6, 8, bias=False, bidirectional=True), (5, 3, 6)),
        "lstm-proj": (torch.nn.LSTM(6, 8, proj_size=4, batch_first=True), (3, 5, 6)),
        "gru": (torch.nn.GRU(6, 8, num_layers=2, batch_first=True), (3, 5, 6)),
        "gru-bidir-nobias": (torch.nn.GRU(6, 8, bias=False, bidirectional=True), (5, 3, 6)),
        "lstmcell": (torch.nn.LSTMCell(6, 8), (3, 6)),
        "grucell": (torch.nn.GRUCell(6, 8), (3, 6)),
    }


def _loss(name, module, x):
    """A loss reaching every output (sequence and final states) through different weights."""
    out = module(x)
    if name == "lstmcell":
        h, c = out
        return (h * h).sum() + 0.5 * c.sum()
    if name == "grucell":
        return (out * out).sum()
    seq, state = out
    states = state if isinstance(state, tuple) else (state,)
    return (seq * seq).sum() + sum(0.3 * s.sum() for s in states)


@pytest.mark.parametrize("name", list(_modules()))
def test_forward_backward_match_cpu(name):
    module, shape = _modules()[name]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    ref = copy.deepcopy(module)
    xr = x.clone().requires_grad_()
    ref_loss = _loss(name, ref, xr)
    ref_loss.backward()

    dev = copy.deepcopy(module).to("neuron")
    xd = x.to("neuron").requires_grad_()
    with torch_trn.trace_ops() as t:
        loss = _loss(name, dev, xd)
        loss.backward()
    ops = {o["op"].split(".")[0] for o in t.ops}  # without the overload
    assert not any("_thnn_fused" in op for op in ops), sorted(ops)
    assert "aten::sigmoid" in ops and "aten::tanh" in ops, sorted(ops)

    torch.testing.assert_close(loss.cpu(), ref_loss, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(xd.grad.cpu(), xr.grad, rtol=RTOL, atol=ATOL)
    grads = dict(dev.named_parameters())
    for pname, p in ref.named_parameters():
        assert grads[pname].grad is not None, pname
        torch.testing.assert_close(grads[pname].grad.cpu(), p.grad, rtol=RTOL, atol=ATOL, msg=pname)


def test_lstm_cell_gradient_through_the_cell_state_only():
    # Only cy reaches the loss: the fused backward runs with grad_hy undefined.
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(4, 5)
    x = torch.randn(2, 4)
    h0, c0 = torch.randn(2, 5), torch.randn(2, 5)
    ref = copy.deepcopy(cell)
    (ref(x, (h0, c0))[1] ** 2).sum().backward()
    dev = copy.deepcopy(cell).to("neuron")
    (dev(x.to("neuron"), (h0.to("neuron"), c0.to("neuron")))[1] ** 2).sum().backward()
    for (pname, p), (_, q) in zip(ref.named_parameters(), dev.named_parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=RTOL, atol=ATOL, msg=pname)
    # weight_hh only reaches cy through the gates, so its gradient must be non-zero here.
    assert dev.weight_hh.grad.abs().sum().item() > 0


def test_bad_gate_shapes_name_the_op():
    gates = torch.randn(2, 12).to("neuron")
    cx = torch.randn(2, 4).to("neuron")  # 12 gates / 4 = 3 != 4
    with pytest.raises(RuntimeError, match="_thnn_fused_lstm_cell: the previous state"):
        torch.ops.aten._thnn_fused_lstm_cell(gates, gates, cx)
