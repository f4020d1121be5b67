"""Starting the device: what `import torch_trn` does before a program uses neuron tensors.

`start()` (idempotent) loads the extension (libtorch_trn_core: allocator, guard, kernels,
fallback), names PrivateUse1 "neuron", registers `torch.neuron` and the tensor/module methods,
torch.distributed's backend, `torch.neuron.amp`, the transformers/accelerate detection, runs the
first backward pass on the device (PyTorch sizes its autograd engine then), starts the
NEURON_PROFILE profile and registers the drain at exit.

`import torch_trn` calls it at once, except in the runtime-free command lines
(`python3 -m torch_trn [timeline|audit|cache ...]`, `python3 -m torch_trn.timeline|audit`): Python
imports the package before it runs such a module, and these read files or start another process,
so they must not import torch (~3 s), start the device's threads, nor write a NEURON_PROFILE left
exported from profiling a program. There a command that needs the device (`cache`) calls start(),
which then leaves NEURON_PROFILE alone. Thread-safety: call from the importing thread (Python's
import lock serialises it).
"""
import os
import sys

from . import _native

_BACKEND = "neuron"

# The modules `python3 -m` runs without the runtime: the command-line entry points.
_CLI_MODULES = frozenset({"torch_trn", "torch_trn.__main__", "torch_trn.timeline", "torch_trn.audit"})

_cli = False            # this process is one of the command lines above
_profile_path = None    # NEURON_PROFILE, written at exit (never in a command-line process)


def _main_module() -> str | None:
    """The module `python3 -m NAME` is running, while Python imports its package (else None).

    During that import sys.argv[0] is "-m" (docs.python.org: the -m option); the name comes from
    the interpreter's own command line."""
    if not sys.argv or sys.argv[0] != "-m":
        return None
    argv = list(getattr(sys, "orig_argv", ()))
    for i, arg in enumerate(argv[1:], 1):
        if arg == "-m":
            return argv[i + 1] if i + 1 < len(argv) else None
        if arg.startswith("-m"):
            return arg[2:]
    return None


def start_unless_cli() -> None:
    """`import torch_trn`: starts the device, unless a runtime-free command line is running."""
    global _cli
    if _main_module() in _CLI_MODULES:
        _cli = True
        return
    start()


def start():
    """Starts the device (once); returns torch_trn._C."""
    global _profile_path
    if _native._C is not None:
        return _native._C
    import torch

    # Rename PrivateUse1 before the extension (which registers the device's kernels) is used.
    if torch._C._get_privateuse1_backend_name() != _BACKEND:
        torch.utils.rename_privateuse1_backend(_BACKEND)

    from . import _C
    from . import _amp, _device_module, _distributed, _ecosystem

    package_dir = os.path.dirname(__file__) + os.sep  # as the frames name our files
    _C._init([os.path.dirname(torch.__file__) + os.sep, package_dir])

    if not hasattr(torch, _BACKEND):
        torch._register_device_module(_BACKEND, _device_module)
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_storage=True, for_packed_sequence=True)
    _distributed.register()      # collectives and DDP on the device (docs/distributed.md)
    _device_module.amp = _amp    # torch.neuron.amp.autocast / GradScaler
    _ecosystem.install()         # transformers' and accelerate's Neuron detection (docs/ecosystem.md)

    _start_autograd_on_device(_C)
    _native._C = _C
    _profile_path = None if _cli else os.environ.get("NEURON_PROFILE")
    if _profile_path:
        _C.profile_start()
    import atexit
    atexit.register(_drain_at_exit)
    return _C


def _start_autograd_on_device(C) -> None:
    # PyTorch sizes the autograd engine's per-device queues once, at the first backward pass in
    # the process, from the device types registered then. Run a tiny backward on the device now,
    # so the first backward sees it; if one already ran without it, say so plainly instead of
    # letting the user's first backward die on an internal assert. The pass is built in C++ and
    # holds no Python object, so the autograd thread may free it at any time, even at exit.
    try:
        C.autograd_barrier()
    except RuntimeError as e:
        if "device_ready_queues_" not in str(e):
            raise
        raise ImportError(
            "torch_trn must be imported before the first backward pass of the process: PyTorch's "
            "autograd engine has already started without the neuron device, so backward passes on "
            "it cannot run. Move `import torch_trn` before any training code.") from None
    C.sync()
    C.reset_stats()
    C.reset_cache_stats()


def _drain_at_exit() -> None:
    C = _native._C
    if C._is_in_bad_fork():
        # A forked child: the device's threads (and its pending work) are the parent's. So is
        # the autograd engine's neuron thread, which torch's engine would wait for at exit (up
        # to TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT, 10 s, read then): no wait for a missing thread.
        os.environ["TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT"] = "0"
        return
    try:
        C.sync()
    except Exception:  # an error nobody synced for: the process is ending anyway
        pass
    if _profile_path and C.profile_active():
        try:
            C.profile_stop(_profile_path)
        except Exception as e:  # noqa: BLE001  (report, never mask the program's exit status)
            print(f"torch_trn: could not write NEURON_PROFILE={_profile_path}: {e}", file=sys.stderr)
    try:
        # The autograd thread frees a finished backward pass just after backward() returns, and
        # that frees Python objects (under the GIL). Wait for it now: once the interpreter is
        # finalizing, taking the GIL there would abort the process (docs/architecture.md).
        C.autograd_barrier()
        C.sync()
    except Exception:  # noqa: BLE001  (the engine is unusable: nothing of ours to wait for)
        pass
    # Stop background compilers before the interpreter (and LLVM's statics) go away.
    C.shutdown_compiles()
