"""The device and its execution: device(), sync(), mode(), wait_for_compiles(), knobs().

Each call reaches the runtime through `_native.native()` (the device is started by
`import torch_trn`, _bootstrap.py). Callable from any thread.
"""
from ._native import native as _native

_BACKEND = "neuron"


def device(index: int = 0):
    """The neuron device (one device, index 0): torch.device("neuron", index)."""
    import torch
    return torch.device(_BACKEND, index)


def check_index(index) -> None:
    """ValueError unless `index` (an int, a device name or a torch.device) names device 0."""
    if not isinstance(index, int):
        import torch
        index = torch.device(index).index
    if index not in (None, 0):
        raise ValueError(f"neuron: device index {index} is out of range (one device: neuron:0)")


def check_device(device) -> None:
    """ValueError unless `device` (None, an index, a name or a torch.device) is neuron:0."""
    if device is None:
        return
    if not isinstance(device, int):
        import torch
        if torch.device(device).type != _BACKEND:
            raise ValueError(f"neuron: {device} is not a neuron device")
    check_index(device)


def sync() -> None:
    """Runs every recorded op; raises the first error an op raised since the last sync."""
    _native().sync()


def mode() -> str:
    """The execution mode read from NEURON_MODE at import: 'eager', 'adaptive' or 'compile'."""
    return _native().mode()


def wait_for_compiles() -> None:
    """adaptive mode: blocks until every queued background compile (tier-ups included) is done.

    Never needed for correctness; benchmarks and tests use it to measure the fully compiled state.
    """
    _native().wait_for_compiles()


def knobs() -> list:
    """Every NEURON_* knob: name, default, allowed values, help."""
    return _native().knobs()
