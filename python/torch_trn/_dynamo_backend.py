"""torch.compile(model, backend="neuron"): Dynamo graphs run on the neuron device.

The backend is declared as an entry point (python/torch_trn-0.1.dist-info/entry_points.txt,
group torch_dynamo_backends), so torch finds it by name without torch_trn importing
torch._dynamo (~3 s) at its own import.

What it does: AOTAutograd splits each captured graph into a forward and a backward graph of ATen
ops; both run on the device through the lazy path, so their ops are recorded, cut into groups and
compiled as NEURON_MODE says (eager: op by op; compile and adaptive: compiled groups, cached by
key like any other). Graph breaks run the Python between graphs as usual, also on the device.
Since a graph is known ahead, a call does not pay per-op recording: the first call with a given
input signature records the graph's device ops as usual and keeps them (a capture), later calls
re-issue those records over the new inputs' storages without running the graph's Python, the
dispatcher or Meta inference per op (src/trace/graph_replay.h; NEURON_GRAPH_REPLAY=0 turns it
off). A graph that syncs, falls back to the host or changes tensor metadata in place is not
captured and runs as recorded every call.
Options (docs/ecosystem.md):
  - dynamic=True/False/None: accepted; shapes are concrete when a graph runs, and a new shape
    is a new group key as in the lazy path.
  - mode="default" | "reduce-overhead" | "max-autotune" | "max-autotune-no-cudagraphs": accepted,
    no effect (they select Inductor features: CUDA graphs, autotuning).
  - options={...}: refused (they are Inductor's configuration), with a clear error.
"""


class _Replayed:
    """A graph's forward, replayed from its capture after the first call per input signature."""

    def __init__(self, forward):
        from torch_trn import _C
        self._forward = forward
        self._replayer = _C.GraphReplayer()
        self._as_tuple = False  # the captured graph returned a tuple (else a list)
        self._off = False      # outputs that cannot be replayed: run every call

    def __call__(self, *args):
        replayer = self._replayer
        out = False if self._off else replayer.replay(args)
        if isinstance(out, list):
            return tuple(out) if self._as_tuple else out
        if not out:  # refused before, or not replayable
            return self._forward(*args)
        replayer.begin_capture(args)
        try:
            out = self._forward(*args)
        except BaseException:
            replayer.abort_capture()
            raise
        if not isinstance(out, (list, tuple)):
            replayer.abort_capture()
            self._off = True
            return out
        if not replayer.end_capture(args, out):  # (else refused: the reason is in end_capture's result)
            self._as_tuple = isinstance(out, tuple)
        return out


def _map_graph_lines(gm):
    """Ops recorded from the graph's generated code name the model line of their node (FX's
    stack_trace), not a line of "<eval_with_key>.N"."""
    import linecache
    import re
    from torch_trn import _C
    if getattr(gm, "_needs_recompile", lambda: False)():
        gm.real_recompile()  # (a lazy GraphModule generates its code at its first call)
    code = getattr(gm.forward, "__code__", None)
    if code is None:
        return
    nodes = {n.name: n for n in gm.graph.nodes}
    lines = []
    for at, text in enumerate(linecache.getlines(code.co_filename), 1):
        m = re.match(r"\s+(\w+) = ", text)
        node = nodes.get(m.group(1)) if m else None
        trace = node.meta.get("stack_trace") if node is not None else None
        frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', trace or "")
        if frames:
            file, line, function = frames[-1]
            lines.append((at, file, int(line), function))
    _C._set_graph_lines(code.co_filename, lines)


def _run_on_device(gm, example_inputs):
    from torch._functorch.aot_autograd import make_boxed_func
    from torch_trn import _C
    _map_graph_lines(gm)
    return make_boxed_func(_Replayed(gm.forward) if _C.graph_replay_enabled() else gm.forward)


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
