"""The distributed tier of the compiled-group cache: ranks share compiles through torch.distributed's store.

The C++ cache calls ``store_for_cache()`` whenever it needs the remote tier and has no store yet,
then calls ``get`` / ``set`` / ``compare_set`` on the object it returned. All these calls come from
the runtime's background compile threads, with the GIL held, so every method returns promptly:
``get`` never waits for a key (torch's ``Store.get`` of a missing key blocks until the store's
timeout). The store calls themselves release the GIL while they talk to the store.
"""
import os

PREFIX = "torch_trn/cache"

# Every value is stored behind this one-byte tag, so a stored value is never empty. torch's stores
# (TCPStore, HashStore, FileStore, PrefixStore) implement compare_set(key, b"", desired) as "set when
# the key is absent OR holds b''"; with the tag no present key holds b"", which leaves exactly the
# "only if absent" meaning the cache protocol relies on.
_TAG = b"\x01"
# Never a stored value (every stored value starts with _TAG): get()'s probe.
_ABSENT = b"\x00absent"


def store_for_cache():
    """The store the cache shares compiles through, or None when there is nothing to share with:
    torch.distributed unavailable or not initialised, world size 1, or NEURON_CACHE_DISTRIBUTED=0.
    Keys live under "torch_trn/cache/" on the default process group's store."""
    if os.environ.get("NEURON_CACHE_DISTRIBUTED", "auto") == "0":
        return None
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_initialized():
        return None
    world_size = dist.get_world_size()
    if world_size <= 1:
        return None
    from torch.distributed import distributed_c10d
    store = dist.PrefixStore(PREFIX, distributed_c10d._get_default_store())
    return CacheStore(store, dist.get_rank(), world_size)


class CacheStore:
    """A torch.distributed Store seen as the C++ cache wants it (see SPEC: distributed tier)."""

    def __init__(self, store, rank, world_size):
        self.store, self.rank, self.world_size = store, rank, world_size

    def get(self, key):
        """The value of `key`, or None when it is absent (never waits). One atomic compare_set
        whose expected value no stored value can hold: an absent key answers that value and stays
        absent, a present one answers its value unchanged. (check() then get() would wait for the
        store's timeout when another rank deletes the key in between: ranks delete the keys of
        their oldest builds, remote_tier.h.)"""
        got = bytes(self.store.compare_set(key, _ABSENT, _ABSENT + b"-"))
        if got == _ABSENT:
            return None
        return got[len(_TAG):]

    def delete(self, key):
        """Removes `key` (absent: nothing happens)."""
        self.store.delete_key(key)

    def set(self, key, value):
        self.store.set(key, _TAG + bytes(value))

    def compare_set(self, key, expected, desired):
        """Atomically sets `key` to `desired` if it holds `expected` (b"": if it does not exist).
        Returns the value after the call: `desired` when the swap happened, else the current value
        (b"" when the key does not exist)."""
        want = _TAG + bytes(expected) if expected else b""
        got = bytes(self.store.compare_set(key, want, _TAG + bytes(desired)))
        # torch answers `expected` for an absent key with a non-empty `expected` (no swap, key absent);
        # a present key holding `expected` would have been swapped to `desired` instead.
        if expected and got == want and desired != expected:
            return b""
        return got[len(_TAG):]

    def __repr__(self):
        return f"CacheStore(rank={self.rank}, world_size={self.world_size}, store={self.store!r})"
