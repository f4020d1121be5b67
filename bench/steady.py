"""Steady-state step time: PyTorch CPU eager vs eager, compile and adaptive mode, and where it goes.

    PYTHONPATH=python python3 bench/steady.py                    # mlp, cnn, gpt, demo; 100 steps
    PYTHONPATH=python python3 bench/steady.py --models gpt --steps 30 --repeat 3
    PYTHONPATH=python python3 bench/steady.py --models gpt --groups   # per group: compiled vs op by op
    PYTHONPATH=python python3 bench/steady.py --clock thread_cpu      # breakdown in CPU time

Models: the AdamW training loops of bench/ttfs.py (mlp, cnn, gpt) and the demo transformer of
`./dev demo` (tests/python/models.py "gpt", AdamW lr 1e-2). Each (model, row) runs in a fresh
process with the same data and thread settings; a step ends at `loss.item()`. Rows:

    cpu            PyTorch CPU eager (no torch_trn), torch's default threads
    eager          NEURON_MODE=eager
    compile        NEURON_MODE=compile, empty disk cache (cold)
    compile_warm   NEURON_MODE=compile, restarted on the cold run's disk cache
    adaptive       NEURON_MODE=adaptive, cold; timed after `wait_for_compiles()`
    adaptive_warm  NEURON_MODE=adaptive, restarted on the cold run's disk cache
    adaptive_nogrow  adaptive with NEURON_ADAPTIVE_GROW=0: its small groups for good (not by default)
    dynamo         torch.compile(model.loss, backend="neuron"), NEURON_MODE=compile, cold (not by default)
    dynamo_norep   the same with NEURON_GRAPH_REPLAY=0: every call records its ops (not by default)
    dynamo_opt     dynamo, and the optimizer step compiled too (AdamW capturable=True) (not by default)
    inductor       torch.compile(model.loss) on the CPU: PyTorch's Inductor (not by default: minutes)
    inductor_opt   inductor, and the optimizer step compiled too (capturable=True) (not by default)

The step is timed after --warmup steps (adaptive: warm-up, wait_for_compiles(), then a step and
wait_for_compiles() until its groups have grown (NEURON_ADAPTIVE_GROW, at most 20 rounds), two more steps),
as median (min, max) over --steps steps (defaults 20 and 100: with 5 and 20 a single process's
median of cnn in compile mode came out anywhere from 1.44 to 2.08 ms on the quiet machine); with --repeat R each row runs R processes (round by
round: every row once, then again) and the process with the median steady step is reported. Per step the breakdown (stats()["host_time"],
reset after the warm-up): record µs per recorded op, flush µs per flushed op (the recording
thread hands the segment over), plan µs per flushed op (the executor cuts it into units), executor busy ms on
compiled groups and on ops one by one, and the recording thread's wait at syncs. Ratios are
against PyTorch CPU eager and against eager mode, measured in the same run: absolute times
drift between runs, ratios much less.

--groups (NEURON_BENCH_GROUPS=1, compile mode only): every compiled group also runs op by op on
the same buffers; prints per group its compiled and op-by-op time and its ops, and the total.

--instant-groups (NEURON_BENCH_GROUPS=1, adaptive mode): the same per group for its three tiers:
op by op, the instant tier (its runs before its code was ready, in the warm-up steps) and compiled
(after wait_for_compiles()); groups that had both an instant and a compiled run, medians. With
--env NEURON_TEST_COMPILE_FAULT=slow nothing compiles during the warm-up: every group there runs
in the instant tier (the compiled column is then 0 for groups not compiled by the timed steps).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, time
import torch
mode = os.environ["STEADY_MODE"]
if mode != "cpu":
    import torch_trn
sys.path.insert(0, os.path.join(os.environ["STEADY_REPO"], "tests", "python"))
import models as M

name = os.environ["STEADY_MODEL"]
warmup, steps = int(os.environ["STEADY_WARMUP"]), int(os.environ["STEADY_STEPS"])
n = warmup + steps + 2 + 20  # (+ the rounds of group growth)
torch.manual_seed(0)
g = torch.Generator().manual_seed(1)
lr, wd = 1e-3, 0.01
if name == "mlp":
    model = M.MLP(d_in=256, hidden=1024, n_classes=10)
    batches = [(torch.randn(256, 256, generator=g), torch.randint(0, 10, (256,), generator=g)) for _ in range(n)]
elif name == "cnn":
    model = M.SmallCNN(in_ch=3, n_classes=10)
    batches = [(torch.randn(64, 3, 8, 8, generator=g), torch.randint(0, 10, (64,), generator=g)) for _ in range(n)]
elif name == "gpt":
    model = M.TinyGPT(vocab=256, block_size=64, d_model=128, n_heads=4, n_layers=2)
    batches = []
    for _ in range(n):
        seq = torch.randint(0, 256, (8, 65), generator=g)
        batches.append((seq[:, :-1].contiguous(), seq[:, 1:].contiguous()))
else:  # the demo transformer of examples/train_demo.py
    model = M.make_model("gpt")
    batches = M.make_batches("gpt", n)
    lr = 1e-2
dev = torch.device("cpu") if mode == "cpu" else torch_trn.device()
model = model.to(dev)
opt_compiled = os.environ.get("STEADY_DYNAMO_OPT") == "1"
# A compiled optimizer step keeps its step counters on the device (capturable=True), so that its
# graph has no host inputs and can be replayed (docs/ecosystem.md, "Graph replay").
opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd, capturable=opt_compiled)
loss_fn = model.loss
opt_step = opt.step
if os.environ.get("STEADY_DYNAMO"):  # torch.compile of the loss (forward + AOTAutograd backward)
    loss_fn = torch.compile(model.loss, backend=os.environ["STEADY_DYNAMO"])
    if opt_compiled:
        opt_step = torch.compile(opt.step, backend=os.environ["STEADY_DYNAMO"])

def step(x, y):
    t = time.perf_counter()
    loss = loss_fn(x.to(dev), y.to(dev))
    loss.backward(); opt_step(); opt.zero_grad()
    v = loss.item()
    return time.perf_counter() - t, v

it = iter(batches)
for _ in range(warmup):
    step(*next(it))
growth_rounds = 0
if mode == "adaptive":
    torch_trn.wait_for_compiles()
    # Group growth (NEURON_ADAPTIVE_GROW): once caught up, a probe step plans the larger groups,
    # they build, and then they replace the small ones. The steady state is after that.
    grows = os.environ.get("NEURON_ADAPTIVE_GROW", "1") != "0"
    while grows and torch_trn.stats()["group_growth"] != "grown" and growth_rounds < 20:
        step(*next(it))
        torch_trn.wait_for_compiles()
        growth_rounds += 1
    for _ in range(2):
        step(*next(it))
if mode != "cpu":
    torch_trn.sync()
    torch_trn.reset_stats()
times, losses = [], []
for _ in range(steps):
    t, v = step(*next(it))
    times.append(t); losses.append(v)
out = {"steps": times, "losses": losses}
if mode != "cpu":
    s = torch_trn.stats()
    out.update(host_time=s["host_time"], ops_recorded=s["ops_recorded"], ops_executed=s["ops_executed"],
               ops_compiled=s["ops_run_compiled"], groups_compiled=s["groups_run_compiled"], compiles=s["compiles"],
               plan_hits=s["plan_cache_hits"], plan_misses=s["plan_cache_misses"],
               lowerings_emitted=s["lowerings_emitted"], group_growth=s["group_growth"],
               growth_rounds=growth_rounds)
    if os.environ.get("NEURON_BENCH_GROUPS") == "1":
        out["groups"] = torch_trn._C.group_bench()
print("RESULT " + json.dumps(out))
"""

ROWS = {
    "cpu": ("cpu", {}, None),
    "eager": ("eager", {"NEURON_MODE": "eager"}, None),
    "compile": ("compile", {"NEURON_MODE": "compile"}, "cold"),
    "compile_warm": ("compile", {"NEURON_MODE": "compile"}, "warm"),
    "adaptive": ("adaptive", {"NEURON_MODE": "adaptive"}, "cold"),
    "adaptive_warm": ("adaptive", {"NEURON_MODE": "adaptive"}, "warm"),
    "adaptive_nogrow": ("adaptive", {"NEURON_MODE": "adaptive", "NEURON_ADAPTIVE_GROW": "0"}, "cold"),
    # torch.compile: the neuron backend in compile mode, and PyTorch's Inductor on the CPU.
    "dynamo": ("compile", {"NEURON_MODE": "compile", "STEADY_DYNAMO": "neuron"}, "cold"),
    "dynamo_norep": ("compile", {"NEURON_MODE": "compile", "STEADY_DYNAMO": "neuron", "NEURON_GRAPH_REPLAY": "0"},
                     "cold"),
    "dynamo_opt": ("compile", {"NEURON_MODE": "compile", "STEADY_DYNAMO": "neuron", "STEADY_DYNAMO_OPT": "1"},
                   "cold"),
    "inductor": ("cpu", {"STEADY_DYNAMO": "inductor"}, None),
    "inductor_opt": ("cpu", {"STEADY_DYNAMO": "inductor", "STEADY_DYNAMO_OPT": "1"}, None),
}
DEFAULT_ROWS = ["cpu", "eager", "compile", "compile_warm", "adaptive", "adaptive_warm"]


def run(model, row, args, tmp, extra_env=None):
    mode, mode_env, cache = ROWS[row]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    env.update(mode_env)
    cache_dir = os.path.join(tmp, f"cache_{model}_{mode}")
    if cache == "cold":
        subprocess.run(["rm", "-rf", cache_dir], check=True)
    env["NEURON_CACHE_DIR"] = cache_dir if cache else "off"
    env["NEURON_HOST_TIME_CLOCK"] = args.clock
    env.update(args.env)
    env.update(extra_env or {})
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    env.update(STEADY_MODEL=model, STEADY_MODE=mode, STEADY_REPO=REPO, STEADY_WARMUP=str(args.warmup),
               STEADY_STEPS=str(args.steps))
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=3600)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{model}/{row} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    r = json.loads(lines[-1][len("RESULT "):])
    r["median"] = statistics.median(r["steps"])
    return r


def breakdown(r, steps):
    """The per-step host-time breakdown of one neuron run, as printable columns."""
    if "host_time" not in r:
        return ["-"] * 7
    h = r["host_time"]

    def per_op(k):
        return f"{h[k]['ns'] / max(h[k]['ops'], 1) / 1e3:.2f}" if h[k]["ops"] else "-"

    def ms(k):
        return f"{h[k]['ns'] / steps / 1e6:.2f}"
    misses = f"{r['plan_misses'] / steps:.1f}"
    return [per_op("record"), per_op("flush"), per_op("plan") if "plan" in h else "-", ms("exec_compiled"), ms("exec_op_by_op"), ms("sync_wait"), misses]


def print_groups(model, r):
    """Per group: the median run compiled and op by op (medians: one preempted run would dominate a sum)."""
    rows = sorted(r.get("groups", []), key=lambda g: -g["op_by_op_median_ns"])
    tc = sum(g["compiled_median_ns"] for g in rows)
    to = sum(g["op_by_op_median_ns"] for g in rows)
    print(f"\n{model}: {len(rows)} compiled groups; one run of each (median over {rows[0]['runs'] if rows else 0} runs): "
          f"compiled {tc / 1e3:.1f} us, op by op {to / 1e3:.1f} us (compiled / op by op = {tc / max(to, 1):.2f})")
    print(f"  {'compiled us':>11s} {'op-by-op us':>11s} {'ratio':>6s} {'ops':>4s}  ops")
    for g in rows:
        print(f"  {g['compiled_median_ns'] / 1e3:11.1f} {g['op_by_op_median_ns'] / 1e3:11.1f} "
              f"{g['compiled_median_ns'] / max(g['op_by_op_median_ns'], 1):6.2f} {g['num_ops']:4d}  {g['ops'][:110]}")


def print_instant_groups(model, r, args_instant_only=False):
    """Per group: op by op vs the instant tier (runs without code) vs compiled (medians)."""
    rows = [g for g in r.get("groups", []) if g["instant_runs"] and (g["runs"] or args_instant_only)]
    rows.sort(key=lambda g: -g["instant_op_by_op_median_ns"])
    to = sum(g["instant_op_by_op_median_ns"] for g in rows)
    ti = sum(g["instant_median_ns"] for g in rows)
    tc = sum(g["compiled_median_ns"] for g in rows)
    print(f"\n{model}: {len(rows)} groups run in the instant tier{'' if args_instant_only else ' and compiled'}; one run of each: "
          f"op by op {to / 1e3:.1f} us, instant {ti / 1e3:.1f} us, compiled {tc / 1e3:.1f} us "
          f"(instant / op by op = {ti / max(to, 1):.2f}, compiled / op by op = {tc / max(to, 1):.2f})")
    print(f"  {'op-by-op us':>11s} {'instant us':>10s} {'compiled us':>11s} {'inst/obo':>8s} {'paired':>6s} {'runs':>4s} {'ops':>4s}  ops")
    for g in rows:
        print(f"  {g['instant_op_by_op_median_ns'] / 1e3:11.1f} {g['instant_median_ns'] / 1e3:10.1f} "
              f"{g['compiled_median_ns'] / 1e3:11.1f} {g['instant_median_ns'] / max(g['instant_op_by_op_median_ns'], 1):8.2f} "
              f"{g['instant_ratio_median']:6.2f} {g['instant_runs']:4d} {g['num_ops']:4d}  {g['ops'][:90]}")
    print("  (paired: median over runs of instant / op by op of the same run)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="mlp,cnn,gpt,demo")
    ap.add_argument("--rows", default=",".join(DEFAULT_ROWS),
                    help=f"comma list of rows: {','.join(ROWS)} (default: all but dynamo and inductor)")
    ap.add_argument("--steps", type=int, default=100, help="timed steps per process")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=1, help="processes per row; the median one is reported")
    ap.add_argument("--clock", default="wall", choices=["wall", "thread_cpu"],
                    help="clock of the breakdown (thread_cpu: CPU time of the working thread)")
    ap.add_argument("--groups", action="store_true", help="compile mode, per group: compiled vs op by op")
    ap.add_argument("--instant-groups", action="store_true",
                    help="adaptive mode, per group: op by op vs instant tier vs compiled")
    ap.add_argument("--env", default="", help="NAME=VALUE,... set in every neuron process (e.g. NEURON_MATMUL_THREADS=1)")
    ap.add_argument("--json", help="also write every result here")
    args = ap.parse_args()
    args.env = dict(kv.split("=", 1) for kv in args.env.split(",") if kv)
    models = args.models.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        if args.instant_groups:
            for model in models:
                print_instant_groups(model, run(model, "adaptive", args, tmp, {"NEURON_BENCH_GROUPS": "1"}),
                                     args.env.get("NEURON_TEST_COMPILE_FAULT") == "slow")
            return
        if args.groups:
            results = {}
            for model in models:
                results[model] = run(model, "compile", args, tmp, {"NEURON_BENCH_GROUPS": "1"})
                print_groups(model, results[model])
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({m: r.get("groups", []) for m, r in results.items()}, f, indent=1)
            return
        rows = [r for r in args.rows.split(",") if r]
        unknown = [r for r in rows if r not in ROWS]
        if unknown:
            ap.error(f"unknown rows {unknown}; known: {list(ROWS)}")
        # Repeats run round by round (every row once, then again), so that a slow spell of the
        # machine falls on every row instead of on one row's repeats.
        reps = {}
        for rep in range(args.repeat):
            for model in models:
                for row in rows:
                    r = run(model, row, args, tmp)
                    reps.setdefault((model, row), []).append(r)
                    print(f"  {model:5s} {row:15s} {1e3 * r['median']:8.2f} ms"
                          + (f" (round {rep + 1})" if args.repeat > 1 else ""), flush=True)
        results = {}
        for key, runs in reps.items():
            runs.sort(key=lambda r: r["median"])
            results[key] = runs[len(runs) // 2]
    hdr = (f"{'model':5s} {'row':15s} {'median ms':>9s} {'(min':>7s} {'max)':>7s} {'/cpu':>5s} {'/eager':>6s} "
           f"{'rec us/op':>9s} {'flush us/op':>11s} {'plan us/op':>10s} {'compiled ms':>11s} {'op-by-op ms':>11s} {'sync ms':>7s} "
           f"{'misses':>6s}")
    print()
    print(hdr)
    print("-" * len(hdr))
    for model in models:
        cpu, eager = results.get((model, "cpu")), results.get((model, "eager"))
        for row in rows:
            r = results[(model, row)]

            def ratio(base):
                return f"{r['median'] / base['median']:.2f}" if base else "-"
            print(f"{model:5s} {row:15s} {1e3 * r['median']:9.2f} {1e3 * min(r['steps']):7.2f} "
                  f"{1e3 * max(r['steps']):7.2f} {ratio(cpu):>5s} {ratio(eager):>6s} "
                  + " ".join(f"{c:>{w}s}" for c, w in zip(breakdown(r, args.steps), (9, 11, 10, 11, 11, 7, 6))))
    print(f"\nper step ({args.clock} clock): rec = recording thread per recorded op; flush = recording thread "
          "per flushed op (handing the segment to the executor); plan = executor per flushed op (cutting it into "
          "units, binding cached plans); "
          "compiled / op-by-op = executor busy; sync = recording thread waiting for the executor (at syncs, and at flushes for units two flushes back); misses = plan cache "
          "misses (0 once warm)")
    grown = {f"{m}/{ro}: {r['group_growth']} after {r['growth_rounds']} rounds"
             for (m, ro), r in results.items() if r.get("group_growth")}
    if grown:
        print("adaptive group growth (NEURON_ADAPTIVE_GROW): " + ", ".join(sorted(grown)))
    print("targets: compile and adaptive <= 0.7 x cpu and <= 0.7 x eager; flush <= 1.5 us/op")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{m}/{ro}": r for (m, ro), r in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
