"""The `torch.neuron` device module (registered with torch._register_device_module).

PyTorch calls into it for device-generic features (torch.manual_seed, fork_rng, autocast
queries); users call torch.neuron.synchronize() like torch.cuda.synchronize().
Random ops on the device run with CPU kernels and draw from the CPU generator, so the RNG
functions here forward to the CPU generator.
"""
import torch as _torch


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def _is_in_bad_fork() -> bool:
    return False


def _lazy_init() -> None:
    pass


def device_count() -> int:
    return 1


def current_device() -> int:
    return 0


def set_device(index) -> None:
    index = _torch.device(index).index if not isinstance(index, int) else index
    if index not in (None, 0):
        raise ValueError(f"neuron: device index {index} is out of range (one device: neuron:0)")


def synchronize(device=None) -> None:
    from . import _C
    _C.sync()


def manual_seed(seed: int) -> None:
    _torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    _torch.default_generator.seed()


def seed_all() -> None:
    seed()


def initial_seed() -> int:
    return _torch.default_generator.initial_seed()


def get_rng_state(device=None) -> _torch.Tensor:
    return _torch.default_generator.get_state()


def set_rng_state(state, device=None) -> None:
    _torch.default_generator.set_state(state)


def get_amp_supported_dtype():
    return [_torch.float16, _torch.bfloat16]


def is_autocast_enabled() -> bool:
    return False
