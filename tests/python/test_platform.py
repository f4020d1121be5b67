"""Platform proof: torch 2.14 from PyPI and Debian's MLIR/LLVM 16 JIT in one process."""
import torch

import torch_trn


def test_torch_is_the_pinned_wheel():
    assert torch.__version__.startswith("2.14.1")


def test_mlir_jit_runs_after_import_torch():
    x = torch.randn(8).to(torch_trn.device()) * 2  # torch and the device are live
    result = torch_trn._C.mlir_selftest()
    assert result["results_match"] is True
    assert result["compile_ms_o0"] > 0 and result["compile_ms_o3"] > 0
    assert x.cpu().shape == (8,)
