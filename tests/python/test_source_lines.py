"""Source lines: every recorded op carries the innermost Python frame outside torch."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_trn
from helpers import line_of

DEV = torch_trn.device()
HERE = os.path.abspath(__file__)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)  # MARK-fc
        return F.gelu(h)  # MARK-gelu


def test_functional_op_reports_the_callers_line():
    x = torch.randn(3, 4).to(DEV)
    y = F.relu(x)  # MARK-relu
    torch_trn.sync()
    del y
    last = torch_trn.last_ops(1)[0]
    assert last["op"].startswith("aten::relu")
    assert last["file"] == HERE
    assert last["line"] == line_of(HERE, "MARK-relu")
    assert last["function"] == "test_functional_op_reports_the_callers_line"


def test_module_forward_lines_and_backward_attribution():
    net = Net().to(DEV)
    x = torch.randn(2, 4).to(DEV)
    torch_trn.sync()
    start = torch_trn.last_ops(1)[0]["seq"]
    loss = net(x).sum()
    loss.backward()
    torch_trn.sync()
    ops = [o for o in torch_trn.last_ops(100) if o["seq"] > start]
    fc_line, gelu_line = line_of(HERE, "MARK-fc"), line_of(HERE, "MARK-gelu")
    fwd = {(o["op"].split(".")[0], o["line"]) for o in ops if o["function"] == "Net.forward"}
    assert ("aten::addmm", fc_line) in fwd
    assert ("aten::gelu", gelu_line) in fwd
    bwd = [o for o in ops if o["function"].endswith("(backward)")]
    assert any(o["op"].startswith("aten::gelu_backward") and o["line"] == gelu_line for o in bwd)
    assert any(o["op"].startswith("aten::mm") and o["line"] == fc_line for o in bwd)
    assert all(o["file"] == HERE for o in bwd)


def test_source_lines_are_interned():
    before = torch_trn._C.source_count()
    x = torch.randn(4).to(DEV)
    for _ in range(100):
        x = x + 1  # one line, one id
    torch_trn.sync()
    assert torch_trn._C.source_count() - before <= 3
