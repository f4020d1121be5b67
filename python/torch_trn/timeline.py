"""Read, summarise and draw a torch_trn profile (Chrome trace-event JSON).

    python3 -m torch_trn.timeline trace.json                # text summary
    python3 -m torch_trn.timeline trace.json -o trace.png   # and the lanes, drawn with matplotlib

A profile comes from `with torch_trn.profile("trace.json"):` or NEURON_PROFILE=trace.json. Its
lanes are threads: recording ("python", the autograd thread), "executor" (running units, and
planning each flushed segment into units first: "plan" events), "compile worker N"
(adaptive mode's background compilers), "segment builder N" (compile mode's parallel builds);
"load" events are builds loaded from the disk cache (read + verify and link times, on the lane
that loaded them: a builder, a compile worker, or adaptive mode's executor).
The summary answers the adaptive-mode questions: how long compiling took, how much of it ran
while the executor was busy, how much was hidden (off the program's critical path: on a compile
thread, which nothing waits for, while the program ran), how many ops ran compiled or one by one
(and why), and the first step at which everything that can compile ran compiled. Steps are the
intervals between sync points (loss.item(), .cpu(), torch_trn.sync()).
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field

# How an execute event ran (the "kind" argument written by the runtime).
# "instant": a group without code run through its instant-tier program (docs/adaptive.md).
KINDS = ("compiled", "instant", "awaiting_compile", "compile_failed", "not_lowered", "op")
# Syncs that are not step boundaries.
_NOT_STEPS = {"backpressure", "launch_blocking"}


@dataclass
class Event:
    name: str
    cat: str
    ts: float   # microseconds
    dur: float
    tid: int
    args: dict = field(default_factory=dict)

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass
class Trace:
    events: list
    lanes: dict  # tid -> name
    mode: str


def load(path) -> Trace:
    """Reads a profile; ValueError (with what is wrong) when the file is not a trace-event JSON."""
    with open(path) as f:
        doc = json.load(f)
    raw = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(raw, list):
        raise ValueError("not a Chrome trace-event JSON file (no traceEvents list)")
    lanes, events = {}, []
    for i, e in enumerate(raw):
        try:
            if e.get("ph") == "M" and e.get("name") == "thread_name":
                lanes[e["tid"]] = e["args"]["name"]
            elif e.get("ph") == "X":
                args = e.get("args", {})
                if not isinstance(args, dict):
                    raise TypeError("args is not an object")
                events.append(Event(e["name"], e.get("cat", ""), float(e["ts"]), float(e["dur"]), e["tid"], args))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise ValueError(f"malformed trace event #{i} ({err.__class__.__name__}: {err}): {str(e)[:120]}") from None
    other = doc.get("otherData")
    return Trace(events, lanes, other.get("mode", "?") if isinstance(other, dict) else "?")


def _union(intervals):
    merged = []
    for b, e in sorted(intervals):
        if merged and b <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([b, e])
    return merged


def _overlap(b, e, merged) -> float:
    total = 0.0
    for mb, me in merged:
        if me <= b:
            continue
        if mb >= e:
            break
        total += min(e, me) - max(b, mb)
    return total


def _top_level(events):
    """Execute events that are not nested inside another one on the same lane (groups, not the
    per-op events inside an op-by-op group)."""
    out, last_end = [], {}
    for e in sorted(events, key=lambda e: (e.tid, e.ts, -e.dur)):
        if e.ts < last_end.get(e.tid, float("-inf")):
            continue
        out.append(e)
        last_end[e.tid] = e.end
    return out


def summarize(trace: Trace) -> dict:
    execs = _top_level([e for e in trace.events if e.cat == "execute"])
    compiles = [e for e in trace.events if e.cat == "compile"]
    busy = _union([(e.ts, e.end) for e in execs])
    compile_us = sum(e.dur for e in compiles)
    overlapped_us = sum(_overlap(e.ts, e.end, busy) for e in compiles)
    # Hidden: compile time off the program's critical path, i.e. on a compile thread (which
    # nothing waits for) while the program ran: between its first recorded op and its last
    # sync. Compile mode's builds (on its segment builders) block the sync that flushed them,
    # so none of them is hidden; neither is compiling after the program's last sync.
    workers = {tid for tid, name in trace.lanes.items() if name.startswith("compile worker")}
    program = [e for e in trace.events if e.cat in ("record", "sync")]
    window = [[min(e.ts for e in program), max(e.end for e in program)]] if program else []
    hidden_us = sum(_overlap(e.ts, e.end, window) for e in compiles if e.tid in workers)
    ops = {k: 0 for k in KINDS}
    for e in execs:
        ops[e.args.get("kind", "op")] = ops.get(e.args.get("kind", "op"), 0) + int(e.args.get("ops", 1))

    syncs = sorted((e for e in trace.events if e.cat == "sync" and e.args.get("reason") not in _NOT_STEPS),
                   key=lambda e: e.end)
    # A unit belongs to the step whose sync window holds the flush that submitted it (its "flush"
    # argument; a host read may return before its step's last units ran); eager mode's units,
    # which have no flush, to the window their execution ends in.
    flushed_in = {}
    for e in trace.events:
        if e.cat == "record" and e.name.startswith("flush ") and "flush" in e.args:
            flushed_in[int(e.args["flush"])] = e.end
    def when(e):
        return flushed_in.get(int(e.args["flush"]), e.end) if "flush" in e.args else e.end
    steps = []
    start = float("-inf")
    for s in syncs:
        in_step = [e for e in execs if start < when(e) <= s.end]
        start = s.end
        if not in_step:
            continue
        counts = {k: sum(int(e.args.get("ops", 1)) for e in in_step if e.args.get("kind") == k) for k in KINDS}
        steps.append({"end_ms": s.end / 1000.0, "ops": counts})
    first_all = next((i + 1 for i, st in enumerate(steps)
                      if st["ops"]["compiled"] > 0 and st["ops"]["awaiting_compile"] == 0
                      and st["ops"]["instant"] == 0), None)
    return {
        "mode": trace.mode,
        "wall_ms": (max((e.end for e in trace.events), default=0.0) - min((e.ts for e in trace.events), default=0.0)) / 1e3,
        "compiles": len(compiles),
        "compiles_by_tier": {t: sum(1 for e in compiles if int(e.args.get("tier", 0)) == t) for t in (0, 1)},
        "compile_failures": sum(1 for e in compiles if e.args.get("result", "ok") != "ok"),
        "compile_ms": compile_us / 1e3,
        "compile_overlapped_ms": overlapped_us / 1e3,
        "overlapped_share": overlapped_us / compile_us if compile_us > 0 else 1.0,
        "compile_hidden_ms": hidden_us / 1e3,
        "hidden_share": hidden_us / compile_us if compile_us > 0 else 1.0,
        "execute_busy_ms": sum(e - b for b, e in busy) / 1e3,
        # compile / adaptive mode: the executor's time cutting flushed segments into units
        "plan_ms": sum(e.dur for e in trace.events if e.cat == "plan") / 1e3,
        # builds loaded from the disk cache: how many, and their read + verify and link time
        "loads": sum(1 for e in trace.events if e.cat == "load"),
        "load_read_ms": sum(float(e.args.get("read_ms", 0)) for e in trace.events if e.cat == "load"),
        "load_link_ms": sum(float(e.args.get("link_ms", 0)) for e in trace.events if e.cat == "load"),
        "ops": ops,
        "steps": steps,
        "first_all_compiled_step": first_all,
        # NEURON_TARGET=trn*: modeled busy time per engine lane of the NeuronCore model
        "device_busy_us": _device_busy(trace),
    }


def _device_busy(trace: Trace) -> dict:
    busy = {}
    for e in trace.events:
        if e.cat == "device":
            lane = trace.lanes.get(e.tid, str(e.tid))
            busy[lane] = busy.get(lane, 0.0) + float(e.args.get("busy_ns", e.dur * 1e3)) / 1e3
    return busy


def format_summary(s: dict) -> str:
    total_ops = sum(s["ops"].values()) or 1
    lines = [
        f"mode:                 {s['mode']}",
        f"profiled wall time:   {s['wall_ms']:.1f} ms (executor busy {s['execute_busy_ms']:.1f} ms, "
        f"planning {s.get('plan_ms', 0.0):.1f} ms)",
        f"compiles:             {s['compiles']} (first builds {s['compiles_by_tier'][0]}, "
        f"tier-ups {s['compiles_by_tier'][1]}, failed {s['compile_failures']})",
        f"compile wall time:    {s['compile_ms']:.1f} ms: {100 * s['overlapped_share']:.1f}% of it overlapped "
        f"with execution, {100 * s['hidden_share']:.1f}% hidden (off the critical path: on a "
        f"compile thread while the program ran)",
        "ops executed:         " + ", ".join(f"{k} {v} ({100 * v / total_ops:.1f}%)"
                                             for k, v in s["ops"].items() if v),
        f"steps (sync points):  {len(s['steps'])}",
    ]
    if s.get("loads"):
        lines.insert(4, f"disk loads:           {s['loads']} builds (read + verify {s['load_read_ms']:.1f} ms, "
                        f"link {s['load_link_ms']:.1f} ms)")
    first = s["first_all_compiled_step"]
    lines.append("first step with every lowered op compiled: " +
                 (f"{first} of {len(s['steps'])}" if first else "none in this profile"))
    if s.get("device_busy_us"):
        lines.append("NeuronCore busy (modeled): " + ", ".join(
            f"{lane.rsplit(': ', 1)[-1]} {us:.1f} us" for lane, us in sorted(s["device_busy_us"].items())))
    return "\n".join(lines)


_COLOURS = {
    "compiled": "#2ca02c", "instant": "#bcbd22", "awaiting_compile": "#ffbf00", "compile_failed": "#d62728",
    "not_lowered": "#1f77b4", "op": "#9ecae1", "record": "#7f7f7f", "sync": "#e377c2",
    "compile0": "#ff7f0e", "compile1": "#9467bd", "plan": "#8c564b", "load": "#17becf",
}


def render(trace: Trace, png: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    tids = sorted(trace.lanes) or sorted({e.tid for e in trace.events})
    t0 = min((e.ts for e in trace.events), default=0.0)
    fig, ax = plt.subplots(figsize=(14, 1.0 + 0.7 * len(tids)))
    execs = set(id(e) for e in _top_level([e for e in trace.events if e.cat == "execute"]))
    for row, tid in enumerate(tids):
        bars = {}
        for e in trace.events:
            if e.tid != tid or (e.cat == "execute" and id(e) not in execs):
                continue
            if e.cat == "execute":
                key = e.args.get("kind", "op")
            elif e.cat == "compile":
                key = f"compile{int(e.args.get('tier', 0))}"
            elif e.cat in ("sync", "plan", "load"):
                key = e.cat
            else:
                key = "record"
            bars.setdefault(key, []).append(((e.ts - t0) / 1e3, max(e.dur / 1e3, 0.01)))
        for key, spans in bars.items():
            height = 0.3 if key == "record" else 0.6
            ax.broken_barh(spans, (row - height / 2, height), facecolors=_COLOURS.get(key, "#cccccc"))
    ax.set_yticks(range(len(tids)))
    ax.set_yticklabels([trace.lanes.get(t, f"thread {t}") for t in tids])
    ax.invert_yaxis()
    ax.set_xlabel("time since the profile started (ms)")
    ax.set_title(f"torch_trn overlap timeline (NEURON_MODE={trace.mode})")
    labels = {"compiled": "run compiled", "instant": "instant tier (compiling)",
              "awaiting_compile": "op by op (compiling)",
              "compile_failed": "op by op (compile failed)", "not_lowered": "op by op (no lowering)",
              "op": "op (eager)", "record": "record", "sync": "sync wait", "plan": "plan a segment",
              "compile0": "compile, first build", "compile1": "compile, tier-up", "load": "load from disk"}
    ax.legend(handles=[Patch(color=_COLOURS[k], label=v) for k, v in labels.items()],
              loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=5, fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m torch_trn.timeline", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", help="a profile written by torch_trn.profile or NEURON_PROFILE")
    parser.add_argument("-o", "--output", help="write the lanes as a PNG here")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    try:
        trace = load(args.trace)
    except (OSError, ValueError, KeyError) as e:
        print(f"timeline: cannot read {args.trace}: {e}", file=sys.stderr)
        return 2
    s = summarize(trace)
    print(json.dumps(s, indent=1) if args.json else format_summary(s))
    if args.output:
        try:
            render(trace, args.output)
        except OSError as e:
            print(f"timeline: cannot write {args.output}: {e}", file=sys.stderr)
            return 2
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
