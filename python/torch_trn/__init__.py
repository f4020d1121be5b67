"""torch_trn: run unchanged PyTorch models on AWS Trainium through a lazy-tensor tracer.

    import torch, torch_trn
    dev = torch_trn.device()              # torch.device("neuron:0")
    model = Model().to(dev)
    loss = model(x.to(dev)).sum(); loss.backward()
    print(loss.item())                    # a sync point: the recorded stream runs up to here

Every op on the device is recorded (with the Python line that issued it) and executed by the
runtime's executor in stream order; NEURON_MODE selects how (see docs/knobs.md).

Importing the package starts the device (_bootstrap.py: loads the extension, registers
`torch.neuron`); the functions live in _runtime.py (device, sync, mode, knobs, compiles),
debug.py (counters, op traces, profiles) and memory.py (device memory).
"""
from . import _bootstrap

_bootstrap.start_unless_cli()

from ._runtime import device, knobs, mode, sync, wait_for_compiles  # noqa: E402
from .debug import (  # noqa: E402
    cache_stats, current_op, last_ops, profile, reset_cache_stats, reset_stats, stats, trace_ops)
from .memory import (  # noqa: E402
    empty_cache, max_memory_allocated, memory_allocated, memory_stats, reset_peak_memory_stats)

__all__ = ["device", "sync", "mode", "stats", "reset_stats", "last_ops", "current_op", "knobs",
           "wait_for_compiles", "profile", "trace_ops", "cache_stats", "reset_cache_stats",
           "memory_stats", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
           "empty_cache"]
