"""torch.compile(model, backend="neuron"): Dynamo graphs run on the neuron device.

The backend is declared as an entry point (python/torch_trn-0.1.dist-info/entry_points.txt,
group torch_dynamo_backends), so torch finds it by name without torch_trn importing
torch._dynamo (~3 s) at its own import.

What it does: AOTAutograd splits each captured graph into a forward and a backward graph of ATen
ops; both run on the device through the lazy path, so their ops are recorded, cut into groups and
compiled as NEURON_MODE says (eager: op by op; compile and adaptive: compiled groups, cached by
key like any other). Graph breaks run the Python between graphs as usual, also on the device.
Options (docs/ecosystem.md):
  - dynamic=True/False/None: accepted; shapes are concrete when a graph runs, and a new shape
    is a new group key as in the lazy path.
  - mode="default" | "reduce-overhead" | "max-autotune" | "max-autotune-no-cudagraphs": accepted,
    no effect (they select Inductor features: CUDA graphs, autotuning).
  - options={...}: refused (they are Inductor's configuration), with a clear error.
"""


def _run_on_device(gm, example_inputs):
    from torch._functorch.aot_autograd import make_boxed_func
    return make_boxed_func(gm.forward)


def neuron(gm, example_inputs, **kwargs):
    """The Dynamo backend "neuron" (torch.compile(..., backend="neuron"))."""
    options = kwargs.pop("options", None)
    kwargs.pop("mode", None)
    if options:
        raise ValueError(
            "torch.compile(backend='neuron') takes no options= (those configure Inductor); got "
            f"{sorted(options)}. Use NEURON_MODE and the NEURON_* knobs (docs/knobs.md) instead.")
    from torch._dynamo.backends.common import aot_autograd
    return aot_autograd(fw_compiler=_run_on_device, bw_compiler=_run_on_device)(gm, example_inputs)
