"""The main demo (`./dev demo`): the small transformer trained in the three modes, side by side.

    PYTHONPATH=python python3 examples/demo.py [--steps 60] [--out build/demo]

Runs examples/train_demo.py (device vs CPU eager, losses compared every step) once per mode in
a fresh process: eager, compile, then adaptive with the profiler on, each with an empty disk
cache (<out>/cache/<mode>); then compile mode once more, restarted on the compile run's warm disk
cache (it loads every group instead of compiling it); compile mode with the loss under
torch.compile(backend="neuron") (its forward and backward graphs replayed after their first
call: no per-op recording); and compile mode on NEURON_TARGET=trn2 (the NeuronCore model). Writes the adaptive run's
overlap timeline as <out>/adaptive_trace.json (open it in https://ui.perfetto.dev) and
<out>/adaptive_trace.png, prints the timeline summary, and a table of the three runs. Exits 1
if any run fails or diverges from CPU.
"""
import argparse
import json
import shutil
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def run(mode, steps, out_dir, profile=None, warm=False, target=None, torch_compile=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    env["NEURON_MODE"] = mode
    env["NEURON_CACHE_DIR"] = os.path.join(out_dir, "cache", mode + (f"_{target}" if target else "")
                                           + ("_torch_compile" if torch_compile else ""))
    if target:
        env["NEURON_TARGET"] = target
    if not warm:
        shutil.rmtree(env["NEURON_CACHE_DIR"], ignore_errors=True)
    if profile:
        env["NEURON_PROFILE"] = profile
    label = mode + ("_warm" if warm else "") + (f"_{target}" if target else "") + ("_torch_compile" if torch_compile else "")
    result = os.path.join(out_dir, f"{label}.json")
    print(f"\n=== NEURON_MODE={mode}{' (restart: warm disk cache)' if warm else ''}"
          f"{f' NEURON_TARGET={target} (NeuronCore model)' if target else ''}"
          f"{' torch.compile(backend=neuron)' if torch_compile else ''} " + "=" * 40, flush=True)
    t0 = time.time()
    proc = subprocess.run([sys.executable, os.path.join(HERE, "train_demo.py"), "--steps", str(steps),
                           "--json", result] + (["--torch-compile"] if torch_compile else []), env=env)
    wall = time.time() - t0
    if proc.returncode != 0:
        print(f"demo: the {mode} run failed (exit {proc.returncode})", file=sys.stderr)
        return None
    with open(result) as f:
        r = json.load(f)
    r["process_s"] = wall
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--out", default=os.path.join(REPO, "build", "demo"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    trace = os.path.join(args.out, "adaptive_trace.json")
    runs = {m: run(m, args.steps, args.out, trace if m == "adaptive" else None)
            for m in ("eager", "compile", "adaptive")}
    runs["compile, warm"] = run("compile", args.steps, args.out, warm=True)
    runs["torch.compile"] = run("compile", args.steps, args.out, torch_compile=True)
    runs["compile, trn2"] = run("compile", args.steps, args.out, target="trn2")
    if any(r is None for r in runs.values()):
        return 1

    sys.path.insert(0, os.path.join(REPO, "python"))
    from torch_trn import timeline
    t = timeline.load(trace)
    png = os.path.join(args.out, "adaptive_trace.png")
    timeline.render(t, png)
    summary = timeline.summarize(t)
    print("\n=== adaptive-mode overlap timeline " + "=" * 44)
    print(timeline.format_summary(summary))
    print(f"timeline: {trace} (Perfetto / chrome://tracing) and {png}")

    print("\n=== the three modes (same model, same batches, each in a fresh process) " + "=" * 8)
    print(f"{'mode':13s} {'first step s':>12s} {'steady step ms':>14s} {'total s':>8s} {'process s':>9s} "
          f"{'compiles':>8s} {'compile s':>9s} {'ops compiled':>12s} {'max rel.diff':>12s}")
    for mode, r in runs.items():
        steady = statistics.median(r["steps"][4:]) if len(r["steps"]) > 4 else r["steps"][-1]
        share = r["ops_run_compiled"] / max(r["ops_executed"], 1)
        print(f"{mode:13s} {r['steps'][0]:12.2f} {1e3 * steady:14.1f} {sum(r['steps']):8.2f} {r['process_s']:9.1f} "
              f"{r['compiles']:8d} {r['compile_ms'] / 1e3:9.1f} {100 * share:11.1f}% {r['worst_rel']:12.1e}")
    print("(first step: the device's first training step; steady: median of steps 5..N; total: the "
          "device steps only, CPU reference excluded; 'compile, warm': compile mode restarted on the "
          "first compile run's disk cache; 'torch.compile': compile mode, the loss through "
          "torch.compile(backend=\"neuron\"), its graphs replayed without per-op recording after the "
          "first call; 'compile, trn2': groups run as NeuronCore instruction "
          "streams on the NeuronCore model, wall times are the model's, not a Trainium's)")
    dev = runs["compile, trn2"].get("device")
    if dev:
        per_step = dev["modeled_ns"] / 1e3 / args.steps
        print(f"trn2 modeled device time: {per_step:.1f} us per training step; "
              f"{dev['ops_on_device']} ops ran on the modeled core, {dev['ops_on_host']} on the host "
              f"(docs/trn_pipeline.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
