"""What the device did: counters, the ops that ran, the op running now, op traces, profiles.

    torch_trn.stats()["host_fallbacks"]        # also torch_trn.debug.stats()
    with torch_trn.trace_ops() as t: ...       # the ops recorded inside the block
    with torch_trn.profile("trace.json"): ...  # the overlap timeline (python3 -m torch_trn.timeline)

Every function may be called from any thread; none is a sync point unless it says so.
"""
import json as _json
import os as _os

from ._native import native as _native


def stats() -> dict:
    """Counters: ops recorded / executed, views, host fallbacks by op and reason, syncs.

    Waits for the executor to run what has been flushed (not a sync point: nothing recorded since
    is run, and errors stay for the next sync), so that the counts read after `loss.item()`,
    which may return before the step's last units ran, do not depend on timing.
    """
    return _native().stats()


def reset_stats() -> None:
    _native().reset_stats()


def last_ops(n: int = 10) -> list:
    """The last n executed ops, oldest first: dicts with op, file, line, function, seq."""
    return _native().last_ops(n)


def current_op():
    """The op executing right now, or None; callable from any thread.

    A dict like last_ops' entries (op, file, line, function, seq) plus `group` (the hex key of
    the op's group, or None), `group_ops` and `compiled`: when a group runs as compiled code the
    whole group is one call, and the dict names the group's first op.
    """
    return _native().current_op()


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
    return _native().cache_stats()


def reset_cache_stats() -> None:
    _native().reset_cache_stats()


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
        _native().profile_start()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                _native().sync()
        finally:
            _native().profile_stop(self.path)
        return False


class trace_ops:
    """Collects every op recorded on the device inside the block (forward and backward).

        with torch_trn.trace_ops() as t:
            loss = model(x).sum(); loss.backward()
        t.ops  # [{"op": "aten::addmm", "source": "model.py:12 (forward)",
               #   "args": {"self": {"shape": [8], "dtype": "float"}, ...}, "outputs": [...]}, ...]

    Tensors are summarised by shape and dtype, other arguments by value, in stream order. The
    block ends with a sync (the backward ops are recorded by the autograd thread).

    geometry=True: each tensor's summary also has "strides", "offset", "device", and a device
    tensor's "storage" (an id per storage, from 0 in order of appearance) and "storage_bytes"
    (a host scalar its "value"): what `torch-trn-replay-group` needs to replay the ops through
    the lowering (tools/record_golden_groups.py). Inside the block, storage_id(t) is the id of
    t's storage (-1 if no traced op touched it).
    """

    def __init__(self, geometry=False):
        self.ops = []
        self._geometry = geometry

    def __enter__(self):
        _native().optrace_start(self._geometry)
        return self

    def storage_id(self, tensor):
        return _native().optrace_storage_id(tensor)

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                _native().sync()
        finally:
            self.ops = _json.loads(_native().optrace_stop())
        return False


__all__ = ["stats", "reset_stats", "last_ops", "current_op", "cache_stats", "reset_cache_stats",
           "profile", "trace_ops"]
