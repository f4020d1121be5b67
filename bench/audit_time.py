"""Time of `python3 -m torch_trn audit` against the plain run it audits, per zoo model (issue 36:
the audit runs on every model of the representative set in <= 2x the time of its 2-step run).

    PYTHONPATH=python python3 bench/audit_time.py [--target host] [--steps 2] [--only REGEX]

For each model of tests/zoo/representative.json (the tier-2 set), a script that builds the model,
moves it and its inputs to the device and trains it with AdamW, calling loss.item() every step:
  run    wall time of `python3 script.py` with the script stopping itself after --steps steps
         (NEURON_MODE=compile, NEURON_TARGET=--target), a fresh process
  audit  wall time of `python3 -m torch_trn audit --steps N --target T script.py` on the same
         script told to run for ever: the audit stops it after N optimizer steps and reports
Both cold (NEURON_CACHE_DIR=off), one after the other per model. Prints a line per model and
the ratio audit / run: its median, maximum and how many models are within 2x.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(os.path.dirname(HERE), "tests", "zoo")

SCRIPT = """
import sys
sys.path.insert(0, {zoo!r})
import torch, torch_trn
from registry import all_models
zm = all_models()[{name!r}]
torch.manual_seed(0)
model = zm.build().to("neuron")
inputs = {{k: (v.to("neuron") if isinstance(v, torch.Tensor) else v) for k, v in zm.make_inputs(0).items()}}
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = 0
while {steps} < 0 or step < {steps}:
    loss = zm.loss(model, inputs)
    loss.backward()
    opt.step(); opt.zero_grad()
    loss.item()
    step += 1
torch_trn.sync()
"""


def timed(cmd, env, timeout):
    t = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    return time.monotonic() - t, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="host")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--only", default=None)
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args()
    with open(os.path.join(ZOO, "representative.json")) as f:
        names = json.load(f)["models"]
    if args.only:
        names = [n for n in names if re.search(args.only, n)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    env.update(NEURON_MODE="compile", NEURON_TARGET=args.target, NEURON_CACHE_DIR="off")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            run_py, audit_py = os.path.join(tmp, "run.py"), os.path.join(tmp, "audit.py")
            with open(run_py, "w") as f:
                f.write(SCRIPT.format(zoo=ZOO, name=name, steps=args.steps))
            with open(audit_py, "w") as f:
                f.write(SCRIPT.format(zoo=ZOO, name=name, steps=-1))
            rec = {"model": name}
            try:
                run_s, p = timed([sys.executable, run_py], env, args.timeout)
                if p.returncode != 0:
                    rec["error"] = "run: " + p.stderr.strip()[-500:]
                else:
                    audit_s, q = timed([sys.executable, "-m", "torch_trn", "audit", "--steps", str(args.steps),
                                        "--target", args.target, audit_py], env, args.timeout)
                    rec.update(run_s=round(run_s, 2), audit_s=round(audit_s, 2), ratio=round(audit_s / run_s, 2),
                               verdict=(q.stdout.strip().splitlines() or [""])[-1][:160])
                    if q.returncode != 0:
                        rec["error"] = "audit: " + q.stderr.strip()[-500:]
                    else:
                        ratios.append(audit_s / run_s)
            except subprocess.TimeoutExpired as e:
                rec["error"] = f"timeout after {args.timeout} s: {e.cmd[-1]}"
            print(json.dumps(rec), flush=True)
    if ratios:
        print(f"\naudit / run over {len(ratios)} of {len(names)} models: median {statistics.median(ratios):.2f}, "
              f"max {max(ratios):.2f}, within 2x: {sum(r <= 2.0 for r in ratios)}")


if __name__ == "__main__":
    main()
