"""torch.distributed on the neuron device: the device's c10d backend, registered with torch.

    dist.init_process_group("gloo")                   # CPU tensors: gloo; neuron tensors: the
                                                      # neuron backend (gloo underneath)
    dist.init_process_group("cpu:gloo,neuron:neuron")  # the same, named
    dist.init_process_group()                          # neuron only (torch's current accelerator)

The backend (src/trace/c10d_backend.h) records each collective on the device stream; the
executor runs it with gloo on host aliases of the device tensors, in stream order. It uses a
gloo context of its own, created here from the process group's store next to the group's CPU
backend. See docs/distributed.md.
"""
import torch

_DEVICE = "neuron"
_STORE_PREFIX = "neuron/"


def _neuron_backend(store, rank, size, timeout):
    """A c10d backend for neuron tensors of one process group, on a gloo context of its own."""
    import torch.distributed as dist
    gloo = dist.ProcessGroupGloo(dist.PrefixStore(_STORE_PREFIX, store), rank, size, timeout)
    # The C++ side receives the gloo backend through a ProcessGroup (a TorchScript class the
    # dispatcher can pass); torch's Backend objects cannot cross into our extension otherwise.
    holder = dist.ProcessGroup(store, rank, size)
    holder._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, gloo)
    torch.ops.torch_trn._attach_c10d_backend(holder.boxed())
    return holder._get_backend(torch.device(_DEVICE))


def _create_neuron(opts, backend_options):
    """Creator of the named backend "neuron" ("cpu:gloo,neuron:neuron", init_process_group())."""
    return _neuron_backend(opts.store, opts.group_rank, opts.group_size, opts.timeout)


def _wrap_gloo(builtin):
    """The "gloo" creator, also giving the group its neuron backend (init_process_group("gloo"))."""

    def create(opts, backend_options):
        backend = builtin(opts, backend_options)
        neuron = _neuron_backend(opts.store, opts.group_rank, opts.group_size, opts.timeout)
        import torch.distributed as dist
        opts.process_group._register_backend(torch.device(_DEVICE), dist.ProcessGroup.BackendType.CUSTOM, neuron)
        return backend

    create._torch_trn_wraps = builtin
    return create


def register():
    """Registers the backends with torch.distributed (at import of torch_trn; idempotent)."""
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available():
        return
    from torch.distributed.distributed_c10d import Backend
    Backend.register_backend(_DEVICE, _create_neuron, extended_api=True, devices=[_DEVICE])
    Backend._ensure_backend_registered(Backend.GLOO)
    gloo = Backend._plugins.get(Backend.GLOO.upper())
    if gloo is None or hasattr(gloo.creator_fn, "_torch_trn_wraps") or not gloo.extended_api:
        return
    Backend.register_backend(Backend.GLOO, _wrap_gloo(gloo.creator_fn), extended_api=True,
                             devices=Backend.backend_capability[Backend.GLOO],
                             _backend_type=dist.ProcessGroup.BackendType.GLOO)
