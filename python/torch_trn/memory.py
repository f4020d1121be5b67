"""Device memory, with torch.cuda's names (docs/memory.md): `torch_trn.memory_stats()` and
`torch.neuron.memory_stats()` are these functions.

Every function is a sync point: the pending ops run first, so tensors that only queued ops still
held count as freed. `device` (torch.cuda's optional argument) must be None or neuron:0.
Callable from any thread.
"""
from ._native import native as _native
from ._runtime import check_device as _check_device


def memory_stats(device=None) -> dict:
    """Device memory counters, exact at this point of the program.

    {"allocated_bytes": bytes of live device tensors' blocks,
     "peak_allocated_bytes": the most allocated since start or reset_peak_memory_stats(),
     "cached_bytes": freed blocks kept for reuse (NEURON_DEVICE_CACHE_BYTES),
     "reserved_bytes": allocated + cached, "allocations", "cache_reuses",
     "released_bytes": cached bytes returned to the system by empty_cache() and retries}
    """
    _check_device(device)
    C = _native()
    C.sync()
    return C.memory_stats()


def memory_allocated(device=None) -> int:
    """Bytes of live device tensors' blocks."""
    return memory_stats(device)["allocated_bytes"]


def max_memory_allocated(device=None) -> int:
    """The most bytes allocated since start or reset_peak_memory_stats()."""
    return memory_stats(device)["peak_allocated_bytes"]


def memory_reserved(device=None) -> int:
    """Bytes allocated plus the freed blocks kept for reuse."""
    return memory_stats(device)["reserved_bytes"]


def max_memory_reserved(device=None) -> int:
    """The device keeps no peak of reserved bytes: the peak allocated plus what is cached now."""
    stats = memory_stats(device)
    return max(stats["reserved_bytes"], stats["peak_allocated_bytes"])


def reset_peak_memory_stats(device=None) -> None:
    """Starts a new peak at the bytes allocated now (after the pending ops ran)."""
    _check_device(device)
    C = _native()
    C.sync()
    C.reset_peak_memory_stats()


def reset_max_memory_allocated(device=None) -> None:
    reset_peak_memory_stats(device)


def empty_cache() -> int:
    """Returns the freed device blocks kept for reuse to the system; the bytes released.

    Like torch.cuda.empty_cache(): live tensors are untouched. Blocks that only queued ops still
    held are released too.
    """
    C = _native()
    C.sync()
    return C.empty_cache()


__all__ = ["memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated",
           "empty_cache"]
