"""Compile latency per group: the three training models' groups compiled at LLVM -O0 and -O3.

    python3 bench/compile_latency.py [--steps 2]

Runs each model's training loop in compile mode in a fresh process per (model, level: --levels,
default 0,3) and prints the median / p90 / max wall time of one group compile (the group's module
emitted -> host pipeline -> LLVM -> object -> loaded), the number of groups and the ops per group,
and the O3/O0 ratio.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = r"""
import json, sys, torch, torch_trn
sys.path.insert(0, sys.argv[2])
from models import make_model, make_batches
name, steps = sys.argv[1], int(sys.argv[3])
model = make_model(name).to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for x, y in make_batches(name, steps):
    loss = model.loss(x.to("neuron"), y.to("neuron")); loss.backward(); opt.step(); opt.zero_grad()
    loss.item()
s = torch_trn.stats()
print(json.dumps({"ms": torch_trn._C.compile_millis(), "groups": s["groups_run_compiled"],
                  "ops": s["ops_run_compiled"]}))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--models", default="mlp,cnn,gpt")
    p.add_argument("--levels", default="0,3", help="LLVM levels to compare (first and last give the ratio)")
    args = p.parse_args()
    print(f"{'model':<6}{'level':>6}{'groups':>8}{'ops/group':>10}{'median ms':>11}{'p90 ms':>8}{'max ms':>8}")
    medians = {}
    for name in args.models.split(","):
        levels = [int(v) for v in args.levels.split(",")]
        for level in levels:
            env = dict(os.environ, NEURON_MODE="compile", NEURON_OPT_LEVEL=str(level), NEURON_CACHE_DIR="off",
                       PYTHONPATH=os.path.join(REPO, "python"))
            proc = subprocess.run([sys.executable, "-c", WORKER, name, os.path.join(REPO, "tests", "python"),
                                   str(args.steps)], env=env, capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                sys.exit(proc.stderr[-3000:])
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            ms = sorted(r["ms"])
            med = statistics.median(ms)
            medians[(name, level)] = med
            print(f"{name:<6}{level:>6}{len(ms):>8}{r['ops'] / max(r['groups'], 1):>10.1f}{med:>11.1f}"
                  f"{ms[int(0.9 * (len(ms) - 1))]:>8.1f}{ms[-1]:>8.1f}")
    lo, hi = levels[0], levels[-1]
    for name in args.models.split(","):
        print(f"{name}: median O{hi} / O{lo} = {medians[(name, hi)] / medians[(name, lo)]:.1f}x")


if __name__ == "__main__":
    main()
