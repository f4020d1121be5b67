"""What the compiled-group cache saves: time to first step cold, warm from disk, warm in memory,
and compiles shared between ranks.

    PYTHONPATH=python python3 bench/cache.py                       # gpt, mlp; compile + adaptive; 1 vs 4 ranks
    PYTHONPATH=python python3 bench/cache.py --models gpt --modes compile --no-dist --repeat 3
    PYTHONPATH=python python3 bench/cache.py --json cache.json

Each (model, mode) is measured in fresh processes, each with the knobs read at import:

    cold      an empty NEURON_CACHE_DIR: every group compiles (adaptive: the first step runs op
              by op while they compile; the run then waits for the compiles, both tiers, so
              the directory ends complete and the later steps run compiled code)
    disk      a new process on the directory the cold run filled: builds load from disk
    memory    in the cold process, after its steps: a second model instance of the same
              architecture, whose groups are all in the in-memory cache

TTFS here is what a restart costs after `import torch_trn` (which the cache cannot change and
which varies by ~1 s between processes): model build, `.to(device)`, and the first training
step up to its loss on the host. Steady step = median of steps 5..N of the same run. Targets
(issue 5): warm-disk TTFS <= 1.2 x the steady step.

Distributed (--no-dist to skip): bench/dist_cache_run.py under torchrun (the tests' small
"gpt" model, compile mode, NEURON_CACHE_DIR=off so only the distributed tier can share), 1 rank,
then 4 ranks with NEURON_CACHE_DISTRIBUTED=auto (one rank compiles each group, the others fetch
it) and =0 (every rank compiles everything). Reported: total compiles across ranks, TTFS per rank
(from a barrier after import to the first loss), the slowest rank. On this 2-core machine 4
ranks share 2 cores, so absolute times are slower than one rank alone; compare on/off.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The bench-size models of bench/ttfs.py.
CHILD = r"""
import json, os, statistics, sys, time
import torch
import torch_trn
sys.path.insert(0, os.path.join(os.environ["CB_REPO"], "tests", "python"))
from models import MLP, TinyGPT

name, steps = os.environ["CB_MODEL"], int(os.environ["CB_STEPS"])
g = torch.Generator().manual_seed(1)
if name == "mlp":
    build = lambda: MLP(d_in=256, hidden=1024, n_classes=10)
    batches = [(torch.randn(256, 256, generator=g), torch.randint(0, 10, (256,), generator=g)) for _ in range(steps)]
else:
    build = lambda: TinyGPT(vocab=256, block_size=64, d_model=128, n_heads=4, n_layers=2)
    batches = []
    for _ in range(steps):
        seq = torch.randint(0, 256, (8, 65), generator=g)
        batches.append((seq[:, :-1].contiguous(), seq[:, 1:].contiguous()))
adaptive = torch_trn.mode() == "adaptive"
dev = torch_trn.device()


def first_step():
    # model build + .to(device) + one training step up to its loss on the host
    t = time.perf_counter()
    torch.manual_seed(0)
    model = build().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch_trn.sync()
    built = time.perf_counter() - t
    x, y = batches[0]
    loss = model.loss(x.to(dev), y.to(dev))
    loss.backward(); opt.step(); opt.zero_grad()
    losses = [loss.item()]
    return model, opt, losses, time.perf_counter() - t, built


model, opt, losses, ttfs, build_s = first_step()
cache_first = torch_trn.cache_stats()
wait_s = 0.0
if adaptive:                    # complete the cache (both tiers) before the steady steps
    t = time.perf_counter()
    torch_trn.wait_for_compiles()
    wait_s = time.perf_counter() - t
times = []
for x, y in batches[1:]:
    t = time.perf_counter()
    loss = model.loss(x.to(dev), y.to(dev))
    loss.backward(); opt.step(); opt.zero_grad()
    losses.append(loss.item())
    times.append(time.perf_counter() - t)
if adaptive:
    torch_trn.wait_for_compiles()
torch_trn.sync()
out = {"ttfs": ttfs, "build": build_s, "steps": times, "steady": statistics.median(times[3:]) if len(times) > 3 else times[-1],
       "losses": losses, "wait_s": wait_s, "cache": torch_trn.cache_stats(), "cache_first": cache_first}
if os.environ.get("CB_SECOND") == "1":
    before = torch_trn.cache_stats()
    _, _, losses2, ttfs2, build2 = first_step()
    torch_trn.sync()
    after = torch_trn.cache_stats()
    out["memory"] = {"ttfs": ttfs2, "build": build2, "loss": losses2[0], "compiles": after["compiles"] - before["compiles"],
                     "memory_hits": after["memory"]["hits"] - before["memory"]["hits"],
                     "disk_hits": after["disk"]["hits"] - before["disk"]["hits"]}
print("RESULT " + json.dumps(out))
"""

MODES = {"compile": {"NEURON_MODE": "compile"}, "adaptive": {"NEURON_MODE": "adaptive"},
         "eager": {"NEURON_MODE": "eager"}}


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    env.update(extra)
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    return env


def result_of(proc, what):
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return [json.loads(l[len("RESULT "):]) for l in lines]


def child(model, mode, steps, cache_dir, second):
    env = clean_env({**MODES[mode], "NEURON_CACHE_DIR": cache_dir, "CB_REPO": REPO, "CB_MODEL": model,
                     "CB_STEPS": str(steps), "CB_SECOND": "1" if second else "0"})
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=1800)
    return result_of(proc, f"{model}/{mode}")[-1]


def measure(model, mode, steps, tmp, rep):
    """cold (+ memory from the same process) and disk, in fresh processes on a fresh directory."""
    d = os.path.join(tmp, f"{model}-{mode}-{rep}")
    cold = child(model, mode, steps, d, second=True)
    disk = child(model, mode, steps, d, second=False)
    mem = dict(cold["memory"], steady=cold["steady"])
    return {"cold": cold, "disk": disk, "memory": mem}


def median_run(reps, kind):
    runs = sorted((r[kind] for r in reps), key=lambda r: r["ttfs"])
    return runs[len(runs) // 2]


def dist_run(nproc, distributed, model, steps):
    env = clean_env({"NEURON_MODE": "compile", "NEURON_CACHE_DIR": "off",
                     "NEURON_CACHE_DISTRIBUTED": distributed, "OMP_NUM_THREADS": "1"})
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           os.path.join(REPO, "bench", "dist_cache_run.py"), "--model", model, "--steps", str(steps)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t
    ranks = sorted(result_of(proc, f"torchrun {nproc} ranks, distributed={distributed}"), key=lambda r: r["rank"])
    if len(ranks) != nproc:
        raise SystemExit(f"expected {nproc} RESULT lines, got {len(ranks)}:\n{proc.stdout[-2000:]}")
    return {"ranks": ranks, "wall": wall}


def fmt_ms(s):
    return f"{1e3 * s:8.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="gpt,mlp")
    ap.add_argument("--modes", default="compile,adaptive")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=1,
                    help="measurements per (model, mode), each on a fresh directory; the one with the median "
                         "TTFS is reported per row")
    ap.add_argument("--no-dist", action="store_true", help="skip the 1 vs 4 ranks measurement")
    ap.add_argument("--dist-model", default="gpt", help="models.py model of the distributed runs (tests' size)")
    ap.add_argument("--dist-steps", type=int, default=4)
    ap.add_argument("--dist-ranks", type=int, default=4)
    ap.add_argument("--json", help="also write every result here")
    args = ap.parse_args()

    results = {}
    eager = {}  # the fresh-process floor: eager mode compiles nothing, yet its first step is slow too
    with tempfile.TemporaryDirectory(prefix="cache-bench-") as tmp:
        for model in args.models.split(","):
            eager[model] = child(model, "eager", args.steps, "off", second=False)
            print(f"  {model:4s} eager     TTFS {eager[model]['ttfs']:6.2f}s  steady "
                  f"{fmt_ms(eager[model]['steady']).strip()} ms", flush=True)
            for mode in args.modes.split(","):
                reps = []
                for rep in range(args.repeat):
                    reps.append(measure(model, mode, args.steps, tmp, rep))
                    r = reps[-1]
                    print(f"  {model:4s} {mode:9s} cold {r['cold']['ttfs']:6.2f}s  disk {r['disk']['ttfs']:6.2f}s  "
                          f"memory {r['memory']['ttfs']:6.2f}s  steady {fmt_ms(r['disk']['steady']).strip()} ms",
                          flush=True)
                results[(model, mode)] = {k: median_run(reps, k) for k in ("cold", "disk", "memory")}

    print()
    hdr = (f"{'model':5s} {'mode':9s} {'run':7s} {'TTFS s':>7s} {'/cold':>6s} {'build ms':>8s} {'step1 ms':>8s} "
           f"{'steady ms':>9s} {'TTFS/steady':>11s} {'step1/steady':>12s} "
           f"{'compiles':>8s} {'disk hits':>9s} {'writes':>6s} {'mem hits':>8s} {'compile s':>9s}")
    print(hdr)
    print("-" * len(hdr))
    for (model, mode), rows in results.items():
        cold = rows["cold"]
        for kind in ("cold", "disk", "memory"):
            r = rows[kind]
            steady = r["steady"]
            if kind == "memory":
                compiles, hits, writes, mem, cs = r["compiles"], r["disk_hits"], "-", r["memory_hits"], "-"
            else:
                c = r["cache"]
                compiles, hits, writes = c["compiles"], c["disk"]["hits"], c["disk"]["writes"]
                mem, cs = c["memory"]["hits"], f"{c['compile_seconds']:9.1f}"
            step1 = r["ttfs"] - r["build"]
            print(f"{model:5s} {mode:9s} {kind:7s} {r['ttfs']:7.3f} {r['ttfs'] / cold['ttfs']:6.2f} "
                  f"{fmt_ms(r['build']):>8s} {fmt_ms(step1):>8s} {fmt_ms(steady):>9s} "
                  f"{r['ttfs'] / steady:11.2f} {step1 / steady:12.2f} {compiles:8d} {hits:9d} {writes!s:>6s} {mem:8d} {cs:>9s}")
    print("\nTTFS: model build + .to(device) + first step, after import (= build + step1). /cold: TTFS ratio to "
          "the cold run. steady: median step of the same process (memory: the cold process's). compiles / hits: "
          "that run (memory: the second instance alone). Target: warm-disk TTFS/steady <= 1.2. The memory row "
          "is the floor a cache can reach (nothing to load): what is left is model build and the first "
          "step's own costs (first-time recording, allocation), not compiling.")
    for (model, mode), rows in results.items():
        d = rows["disk"]
        e = eager[model]
        verdict = "ok" if d["ttfs"] / d["steady"] <= 1.2 else "MISSED"
        print(f"  {model} {mode}: warm-disk TTFS / steady = {d['ttfs'] / d['steady']:.2f} ({verdict}); "
              f"warm/cold TTFS: disk {d['ttfs'] / rows['cold']['ttfs']:.3f}, "
              f"memory {rows['memory']['ttfs'] / rows['cold']['ttfs']:.3f}; "
              f"warm-disk TTFS / eager TTFS (fresh process, nothing to compile) = {d['ttfs'] / e['ttfs']:.2f}")
    for model, e in eager.items():
        print(f"  fresh-process floor, {model} eager: TTFS {1e3 * e['ttfs']:.1f} ms = "
              f"{e['ttfs'] / e['steady']:.2f} x its steady step {1e3 * e['steady']:.1f} ms "
              f"(first-call costs of a new process, no compiling involved)")

    dist = {}
    if not args.no_dist:
        print(f"\ndistributed tier: models.py '{args.dist_model}', compile mode, {args.dist_steps} steps, "
              f"NEURON_CACHE_DIR=off, OMP_NUM_THREADS=1")
        runs = [(1, "auto"), (args.dist_ranks, "auto"), (args.dist_ranks, "0")]
        for nproc, setting in runs:
            dist[(nproc, setting)] = r = dist_run(nproc, setting, args.dist_model, args.dist_steps)
            print(f"  {nproc} ranks, NEURON_CACHE_DISTRIBUTED={setting}: wall {r['wall']:.1f}s", flush=True)
        hdr = (f"{'ranks':>5s} {'distributed':>11s} {'compiles':>8s} {'per rank':>16s} {'fetched':>7s} "
               f"{'waits':>5s} {'TTFS s per rank':>28s} {'max TTFS':>8s} {'same losses':>11s}")
        print(hdr)
        print("-" * len(hdr))
        for (nproc, setting), r in dist.items():
            ranks = r["ranks"]
            compiles = [x["compiles"] for x in ranks]
            fetched = sum(x["remote"]["fetches"] for x in ranks)
            waits = sum(x["remote"]["lease_waits"] for x in ranks)
            same = all(x["losses"] == ranks[0]["losses"] for x in ranks)
            ttfs = " ".join(f"{x['ttfs']:.2f}" for x in ranks)
            print(f"{nproc:5d} {setting:>11s} {sum(compiles):8d} {'/'.join(map(str, compiles)):>16s} {fetched:7d} "
                  f"{waits:5d} {ttfs:>28s} {max(x['ttfs'] for x in ranks):8.2f} {str(same):>11s}")
        print("compiles: builds compiled, all ranks (per rank after it); fetched: builds a rank took from another "
              "rank; waits: times a rank found another rank's live lease; TTFS from the barrier after import.")

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"single": {f"{m}/{mo}": r for (m, mo), r in results.items()}, "eager": eager,
                       "dist": {f"{n}/{s}": r for (n, s), r in dist.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
