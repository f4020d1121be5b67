"""The `torch.neuron` device module (registered with torch._register_device_module).

PyTorch calls into it for device-generic features (torch.manual_seed, fork_rng, autocast
queries); users call torch.neuron.synchronize() like torch.cuda.synchronize().
Random ops on the device draw from the device's own generator (`torch_trn._C.default_generator()`)
when they execute, in stream order: values are reproducible from `torch.manual_seed` whatever the
host does meanwhile, and (as with CUDA) differ from the CPU generator's.
"""
import torch as _torch

from ._runtime import check_device as _check_device, check_index as _check_index
# Memory, with torch.cuda's names (docs/memory.md): torch_trn.memory's functions.
from .memory import (  # noqa: F401
    empty_cache, max_memory_allocated, max_memory_reserved, memory_allocated, memory_reserved,
    memory_stats, reset_max_memory_allocated, reset_peak_memory_stats)


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return not _is_in_bad_fork()


def _is_in_bad_fork() -> bool:
    """True in a process forked after its parent started the device (as torch.cuda's): the
    device's threads do not exist there, so any device use raises at once. torch.manual_seed
    (a DataLoader worker calls it) leaves the device alone in such a child."""
    from . import _C
    return _C._is_in_bad_fork()


def _lazy_init() -> None:
    if _is_in_bad_fork():
        raise RuntimeError(
            "Cannot re-initialize neuron in forked subprocess. To use neuron with multiprocessing, "
            "you must use the 'spawn' start method")


def device_count() -> int:
    return 1


def current_device() -> int:
    return 0


def set_device(index) -> None:
    _check_index(index)


class device:
    """Context manager selecting the neuron device (there is one: neuron:0), like torch.cuda.device."""

    def __init__(self, device):
        if device is None or device == -1:
            self.index = 0
        elif isinstance(device, int):
            self.index = device
        else:
            self.index = _torch.device(device).index or 0
        set_device(self.index)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def synchronize(device=None) -> None:
    from . import _C
    _C.sync()


# Streams and events (FSDP2 and other CUDA-style code create their own). The device runs one
# in-order stream, the op stream: every Stream is that stream, so waits between streams and on
# events are implied by stream order and free; an event's query()/synchronize() looks at, or
# waits for, everything recorded so far (src/trace/device.cpp, NeuronGuardImpl).
class Stream(_torch.Stream):
    """A stream of the neuron device (all of them are the device's one in-order stream)."""

    def __new__(cls, device=None, priority=0, **kwargs):
        _check_device(device)
        return super().__new__(cls, device=_torch.device("neuron", 0), priority=priority)


class Event(_torch.Event):
    """An event of the neuron device: a point of its stream (no timing)."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        return super().__new__(cls, device=_torch.device("neuron", 0), enable_timing=enable_timing,
                               blocking=blocking, interprocess=interprocess)


def current_stream(device=None):
    _check_device(device)
    return _torch.accelerator.current_stream(0) if _torch.accelerator.current_accelerator().type == "neuron" \
        else Stream()


def default_stream(device=None):
    return current_stream(device)


def set_stream(stream) -> None:
    pass  # (one stream)


class StreamContext:
    """`with torch.neuron.stream(s):` (the ops inside run on the device's one stream anyway)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


def stream(stream) -> StreamContext:
    return StreamContext(stream)


def _generator():
    from . import _C
    return _C.default_generator()


def _synced_generator():
    # Queued random ops draw from the generator when they run: let them run before the state
    # is read or replaced, so reseeding affects exactly the ops issued after it.
    from . import _C
    _C.sync()  # (raises in a bad fork child)
    return _C.default_generator()


def manual_seed(seed: int) -> None:
    if _is_in_bad_fork():
        return  # (torch.cuda queues the call for an initialisation that can never happen there)
    _synced_generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    if _is_in_bad_fork():
        return
    _synced_generator().seed()


def seed_all() -> None:
    seed()


def initial_seed() -> int:
    _lazy_init()
    return _generator().initial_seed()


def get_rng_state(device=None) -> _torch.Tensor:
    return _synced_generator().get_state()


def set_rng_state(state, device=None) -> None:
    _synced_generator().set_state(state)


def get_rng_state_all() -> list:
    return [get_rng_state()]


def set_rng_state_all(states) -> None:
    for state in states:
        set_rng_state(state)


def get_amp_supported_dtype():
    return [_torch.float16, _torch.bfloat16]


def is_autocast_enabled() -> bool:
    """True inside `torch.autocast("neuron")` (like torch.cuda.is_autocast_enabled)."""
    return _torch.is_autocast_enabled("neuron")


def get_autocast_dtype():
    return _torch.get_autocast_dtype("neuron")


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 tensors and autocast work on the device (Trainium computes bf16 natively)."""
    return True


def get_device_name(device=None) -> str:
    _check_device(device)
    return "neuron (torch_trn)"

