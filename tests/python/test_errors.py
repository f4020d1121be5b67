"""Error attribution: errors raised while executing an op surface at the next sync point as the
exception class eager PyTorch raises, naming the op and the model's source line."""
import os

import pytest
import torch
import torch.nn as nn

import torch_trn
from helpers import line_of, run_python

DEV = torch_trn.device()
HERE = os.path.abspath(__file__)


class Gatherer(nn.Module):
    def forward(self, x, idx):
        return x.index_select(0, idx)  # MARK-index-select


class BadShapes(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x):
        h = self.proj(x)
        return h @ h  # MARK-bad-matmul


def test_index_error_at_sync_names_op_and_model_line():
    m = Gatherer()
    out = m(torch.ones(3).to(DEV), torch.tensor([0, 7]).to(DEV))
    with pytest.raises(IndexError) as info:
        out.cpu()
    msg = str(info.value)
    assert "aten::index_select" in msg
    assert f"{HERE}:{line_of(HERE, 'MARK-index-select')}" in msg
    assert "forward" in msg
    # The error was reported once; the device keeps working.
    assert (torch.ones(2).to(DEV) * 3).sum().item() == 6.0


def test_shape_error_in_model_forward_names_the_model_line():
    # Shape errors are found by the Meta kernel while recording: raised at the call itself.
    m = BadShapes().to(DEV)
    with pytest.raises(RuntimeError) as info:
        m(torch.randn(2, 8).to(DEV))
        torch_trn.sync()
    assert "cannot be multiplied" in str(info.value) or "mat1 and mat2" in str(info.value) \
        or "size mismatch" in str(info.value)


def test_error_class_matches_eager():
    x = torch.ones(3)
    idx = torch.tensor([5])
    with pytest.raises(IndexError):
        x.index_select(0, idx)
    d = x.to(DEV).index_select(0, idx.to(DEV))
    with pytest.raises(IndexError):
        torch_trn.sync()
    del d


def test_launch_blocking_raises_at_the_op_itself():
    code = """
        import torch, torch_trn
        d = torch_trn.device()
        x = torch.ones(3).to(d)
        idx = torch.tensor([9]).to(d)
        try:
            x.index_select(0, idx)   # line 7
        except IndexError as e:
            print("RAISED_AT_OP", "<string>:7" in str(e))
        else:
            print("NOT_RAISED")
        print("LB", torch_trn._C.launch_blocking(), torch_trn._C.pending())
    """
    r = run_python(code, env={"NEURON_LAUNCH_BLOCKING": "1"})
    assert r.returncode == 0, r.stderr
    assert "RAISED_AT_OP True" in r.stdout
    assert "LB True 0" in r.stdout
    r = run_python(code, drop=("NEURON_LAUNCH_BLOCKING",))  # without launch blocking the op only records: no error at the call
    assert "NOT_RAISED" in r.stdout, r.stdout + r.stderr
