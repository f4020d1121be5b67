"""torch_trn.sync() raises the failing op's own exception class, as reading its result does
(issue 34 item 6).

An op that fails when it executes stores its error; the next sync or host read reports it. The
read (.cpu()) raised the class PyTorch CPU raises (torch.linalg.LinAlgError, IndexError, ...),
but torch_trn.sync() raised a plain RuntimeError for LinAlgError and OutOfMemoryError. Now both
edges map an error kind to the same class.

The failing ops are recorded and fail only at execution: linalg_cholesky_ex(check_errors=True)
of a matrix that is not positive-definite (LinAlgError) and index_select out of range
(IndexError). Each mode runs in a fresh process (the mode is read at import).
"""
import pytest
import torch

from helpers import last_json, run_python

MODES = ["eager", "compile", "adaptive"]

PROGRAM = """import json, torch, torch_trn
dev = torch_trn.device()
not_pd = torch.tensor([[1.0, 2.0], [2.0, 1.0]]).to(dev)
x = torch.arange(4.0).to(dev)
idx = torch.tensor([0, 9]).to(dev)
torch_trn.sync()
out = {}

def read(name, fn):
    try:
        fn()
        out[name] = {"error": None}
    except Exception as e:
        out[name] = {"error": type(e).__name__, "msg": str(e)}

L, info = torch.linalg.cholesky_ex(not_pd, check_errors=True)  # MARK-cholesky
out["cholesky_recorded"] = True
read("cholesky_sync", torch_trn.sync)
L, info = torch.linalg.cholesky_ex(not_pd, check_errors=True)
read("cholesky_cpu", lambda: L.cpu())
torch_trn.sync()
bad = x.index_select(0, idx)  # MARK-index
read("index_sync", torch_trn.sync)
bad = x.index_select(0, idx)
read("index_cpu", lambda: bad.cpu())
torch_trn.sync()
read("good", lambda: (x * 2).cpu())
print(json.dumps(out))
"""


def cpu_class(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__


@pytest.mark.parametrize("mode", MODES)
def test_sync_raises_the_ops_exception_class(mode):
    want = {
        "cholesky": cpu_class(lambda: torch.linalg.cholesky_ex(torch.tensor([[1.0, 2.0], [2.0, 1.0]]),
                                                               check_errors=True)),
        "index": cpu_class(lambda: torch.arange(4.0).index_select(0, torch.tensor([0, 9]))),
    }
    assert want == {"cholesky": "_LinAlgError", "index": "IndexError"}  # torch.linalg.LinAlgError
    out = last_json(run_python(PROGRAM, env={"NEURON_MODE": mode}))
    assert out["cholesky_recorded"] is True  # not raised at the call: the failure is at execution
    for op, name in [("cholesky", "aten::linalg_cholesky_ex"), ("index", "aten::index_select")]:
        for edge in ["sync", "cpu"]:
            got = out[f"{op}_{edge}"]
            assert got["error"] == want[op], (op, edge, got)
            assert name in got["msg"] and "<string>:" in got["msg"], (op, edge, got)
    assert out["good"] == {"error": None}
