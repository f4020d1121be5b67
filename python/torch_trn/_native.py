"""The extension (torch_trn._C) once the device is started: what the API modules call.

_bootstrap.start() sets it; the API modules (_runtime, debug, memory) only read it, so they
import nothing that starts the device, and `python3 -m torch_trn ...` can import them cheaply.
"""
_C = None


def native():
    """torch_trn._C; RuntimeError when the device was not started (a command-line process of
    torch_trn's that does not need it: _bootstrap.py)."""
    if _C is None:
        raise RuntimeError("torch_trn: the device is not started in this process (a torch_trn command line); "
                           "torch_trn._bootstrap.start() starts it")
    return _C
