"""torch_trn: run unchanged PyTorch models on AWS Trainium through a lazy-tensor tracer.

    import torch, torch_trn
    dev = torch_trn.device()              # torch.device("neuron:0")
    model = Model().to(dev)
    loss = model(x.to(dev)).sum(); loss.backward()
    print(loss.item())                    # a sync point: the recorded stream runs up to here

Every op on the device is recorded (with the Python line that issued it) and executed by the
runtime's executor in stream order; NEURON_MODE selects how (see docs/knobs.md).
"""
import os as _os

import torch as _torch

_BACKEND = "neuron"

# Rename PrivateUse1 before the extension (which registers the device's kernels) is used.
if _torch._C._get_privateuse1_backend_name() != _BACKEND:
    _torch.utils.rename_privateuse1_backend(_BACKEND)

from . import _C  # noqa: E402  (loads libtorch_trn_core: allocator, guard, kernels, fallback)
from . import _device_module  # noqa: E402

_TORCH_DIR = _os.path.dirname(_torch.__file__) + _os.sep
_OWN_DIR = _os.path.dirname(__file__) + _os.sep
_C._init([_TORCH_DIR, _OWN_DIR])

if not hasattr(_torch, _BACKEND):
    _torch._register_device_module(_BACKEND, _device_module)
    _torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True, for_packed_sequence=True)

from . import _distributed  # noqa: E402

_distributed.register()  # collectives and DDP on the device (docs/distributed.md)

from . import _amp  # noqa: E402

_device_module.amp = _amp  # torch.neuron.amp.autocast / GradScaler

from . import _ecosystem  # noqa: E402

_ecosystem.install()  # transformers' and accelerate's Neuron detection (docs/ecosystem.md)

import atexit as _atexit  # noqa: E402


def _start_autograd_on_device():
    # PyTorch sizes the autograd engine's per-device queues once, at the first backward pass in
    # the process, from the device types registered then. Run a tiny backward on the device now,
    # so the first backward sees it; if one already ran without it, say so plainly instead of
    # letting the user's first backward die on an internal assert. The pass is built in C++ and
    # holds no Python object, so the autograd thread may free it at any time, even at exit.
    try:
        _C.autograd_barrier()
    except RuntimeError as e:
        if "device_ready_queues_" not in str(e):
            raise
        raise ImportError(
            "torch_trn must be imported before the first backward pass of the process: PyTorch's "
            "autograd engine has already started without the neuron device, so backward passes on "
            "it cannot run. Move `import torch_trn` before any training code.") from None
    _C.sync()
    _C.reset_stats()
    _C.reset_cache_stats()


_start_autograd_on_device()


def device(index: int = 0) -> _torch.device:
    """The neuron device (one device, index 0)."""
    return _torch.device(_BACKEND, index)


def sync() -> None:
    """Runs every recorded op; raises the first error an op raised since the last sync."""
    _C.sync()


def mode() -> str:
    """The execution mode read from NEURON_MODE at import: 'eager', 'adaptive' or 'compile'."""
    return _C.mode()


def stats() -> dict:
    """Counters: ops recorded / executed, views, host fallbacks by op and reason, syncs."""
    return _C.stats()


def reset_stats() -> None:
    _C.reset_stats()


def last_ops(n: int = 10) -> list:
    """The last n executed ops, oldest first: dicts with op, file, line, function, seq."""
    return _C.last_ops(n)


def current_op():
    """The op executing right now, or None; callable from any thread.

    A dict like last_ops' entries (op, file, line, function, seq) plus `group` (the hex key of
    the op's group, or None), `group_ops` and `compiled`: when a group runs as compiled code the
    whole group is one call, and the dict names the group's first op.
    """
    return _C.current_op()


def wait_for_compiles() -> None:
    """adaptive mode: blocks until every queued background compile (tier-ups included) is done.

    Never needed for correctness; benchmarks and tests use it to measure the fully compiled state.
    """
    _C.wait_for_compiles()


def cache_stats() -> dict:
    """Counters of the compiled-code caches of this process (docs/cache.md).

    {"memory": {hits, misses, entries, bytes, evictions},
     "disk": {enabled, dir, readonly, hits, misses, writes, write_errors, bytes_read,
              bytes_written, evictions, rejected: {reason: count}},
     "remote": {enabled, rank, fetches, misses, publishes, lease_claims, lease_waits,
                lease_takeovers, failures_published, errors},
     "compiles": builds compiled by this process, "compile_seconds": their wall time,
     "miss_explanations": why groups recompiled (what changed since the same source lines
                          were last compiled)}
    """
    return _C.cache_stats()


def reset_cache_stats() -> None:
    _C.reset_cache_stats()


def memory_stats() -> dict:
    """Device memory counters (docs/memory.md), exact at this point of the program.

    It is a sync point: the pending ops run first, so tensors that only queued ops still held
    count as freed.
    {"allocated_bytes": bytes of live device tensors' blocks,
     "peak_allocated_bytes": the most allocated since start or reset_peak_memory_stats(),
     "cached_bytes": freed blocks kept for reuse (NEURON_DEVICE_CACHE_BYTES),
     "reserved_bytes": allocated + cached, "allocations", "cache_reuses",
     "released_bytes": cached bytes returned to the system by empty_cache() and retries}
    """
    _C.sync()
    return _C.memory_stats()


def memory_allocated() -> int:
    """Bytes of live device tensors' blocks (a sync point, like memory_stats())."""
    return memory_stats()["allocated_bytes"]


def max_memory_allocated() -> int:
    """The most bytes allocated since start or reset_peak_memory_stats() (a sync point)."""
    return memory_stats()["peak_allocated_bytes"]


def reset_peak_memory_stats() -> None:
    """Starts a new peak at the bytes allocated now (after the pending ops ran)."""
    _C.sync()
    _C.reset_peak_memory_stats()


def empty_cache() -> int:
    """Returns the freed device blocks kept for reuse to the system; the bytes released.

    Like torch.cuda.empty_cache(): live tensors are untouched. It is a sync point, so blocks
    that only queued ops still held are released too.
    """
    _C.sync()
    return _C.empty_cache()


class profile:
    """Records the overlap timeline of the code inside the block and writes it to `path`.

        with torch_trn.profile("trace.json"):
            train_step()

    The file is Chrome trace-event JSON (open it in https://ui.perfetto.dev or chrome://tracing):
    one lane per thread (recording, executor, compile workers) with every recorded op, every
    compile and every executed group, each with its source lines. `python3 -m torch_trn.timeline
    trace.json -o trace.png` renders it and prints a summary. The block ends with a sync, so
    the timeline covers the execution of everything recorded inside it.
    """

    def __init__(self, path):
        self.path = _os.fspath(path)

    def __enter__(self):
        _C.profile_start()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                _C.sync()
        finally:
            _C.profile_stop(self.path)
        return False


class trace_ops:
    """Collects every op recorded on the device inside the block (forward and backward).

        with torch_trn.trace_ops() as t:
            loss = model(x).sum(); loss.backward()
        t.ops  # [{"op": "aten::addmm", "source": "model.py:12 (forward)",
               #   "args": {"self": {"shape": [8], "dtype": "float"}, ...}, "outputs": [...]}, ...]

    Tensors are summarised by shape and dtype, other arguments by value, in stream order. The
    block ends with a sync (the backward ops are recorded by the autograd thread).
    """

    def __init__(self):
        self.ops = []

    def __enter__(self):
        _C.optrace_start()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                _C.sync()
        finally:
            import json as _json
            self.ops = _json.loads(_C.optrace_stop())
        return False


def knobs() -> list:
    """Every NEURON_* knob: name, default, allowed values, help."""
    return _C.knobs()


_PROFILE_PATH = _os.environ.get("NEURON_PROFILE")
if _PROFILE_PATH:
    _C.profile_start()


def _drain_at_exit():
    if _C._is_in_bad_fork():
        # A forked child: the device's threads (and its pending work) are the parent's. So is
        # the autograd engine's neuron thread, which torch's engine would wait for at exit (up
        # to TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT, 10 s, read then): no wait for a missing thread.
        _os.environ["TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT"] = "0"
        return
    try:
        _C.sync()
    except Exception:  # an error nobody synced for: the process is ending anyway
        pass
    if _PROFILE_PATH and _C.profile_active():
        try:
            _C.profile_stop(_PROFILE_PATH)
        except Exception as e:  # noqa: BLE001  (report, never mask the program's exit status)
            import sys
            print(f"torch_trn: could not write NEURON_PROFILE={_PROFILE_PATH}: {e}", file=sys.stderr)
    try:
        # The autograd thread frees a finished backward pass just after backward() returns, and
        # that frees Python objects (under the GIL). Wait for it now: once the interpreter is
        # finalizing, taking the GIL there would abort the process (docs/architecture.md).
        _C.autograd_barrier()
        _C.sync()
    except Exception:  # noqa: BLE001  (the engine is unusable: nothing of ours to wait for)
        pass
    # Stop background compilers before the interpreter (and LLVM's statics) go away.
    _C.shutdown_compiles()


_atexit.register(_drain_at_exit)

__all__ = ["device", "sync", "mode", "stats", "reset_stats", "last_ops", "current_op", "knobs",
           "wait_for_compiles", "profile", "trace_ops", "cache_stats", "reset_cache_stats",
           "memory_stats", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
           "empty_cache"]
