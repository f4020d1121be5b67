"""Train a tiny GPT for a few steps on the neuron device and on CPU eager, side by side.

    PYTHONPATH=python python3 examples/train_demo.py
    NEURON_MODE=adaptive PYTHONPATH=python python3 examples/train_demo.py
    NEURON_MODE=compile PYTHONPATH=python python3 examples/train_demo.py --torch-compile

With --torch-compile the device's loss (forward and backward) goes through
torch.compile(backend="neuron"): its graphs are replayed after their first call, without per-op
recording (docs/ecosystem.md, "Graph replay"). The optimizer step stays uncompiled: a compiled
AdamW step needs capturable=True to be replayed, and that variant measured slower here.

Both runs start from the same weights (the device model is loaded from the CPU model's
state_dict) and see the same batches. Exits with status 1 when a step's losses differ by more
than 1e-5 relative.
"""
import argparse
import json
import math
import os
import sys
import time

import torch

import torch_trn  # the mode comes from NEURON_MODE, read here at import (default: eager)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from models import clone_to, make_batches, make_model  # noqa: E402

REL_TOL = 1e-5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--model", default="gpt", choices=["gpt", "gpt_sdpa"])
    parser.add_argument("--json", help="also write the run's numbers (losses, times, stats) here")
    parser.add_argument("--torch-compile", action="store_true",
                        help='the device loss through torch.compile(backend="neuron")')
    args = parser.parse_args()

    dev = torch_trn.device()
    cpu_model = make_model(args.model)
    dev_model = clone_to(args.model, cpu_model, dev)
    cpu_opt = torch.optim.AdamW(cpu_model.parameters(), lr=1e-2, weight_decay=0.01)
    dev_opt = torch.optim.AdamW(dev_model.parameters(), lr=1e-2, weight_decay=0.01)
    dev_loss = torch.compile(dev_model.loss, backend="neuron") if args.torch_compile else dev_model.loss

    print(f"model={args.model} params={sum(p.numel() for p in cpu_model.parameters())} "
          f"mode={torch_trn.mode()} device={dev}")
    print(f"{'step':>4}  {'loss(neuron)':>14}  {'loss(cpu)':>14}  {'rel.diff':>9}")
    torch_trn.reset_stats()
    worst, t_dev, t_cpu = 0.0, 0.0, 0.0
    step_times, losses = [], []
    for step, (x, y) in enumerate(make_batches(args.model, args.steps)):
        t0 = time.perf_counter()
        loss = dev_loss(x.to(dev), y.to(dev))
        loss.backward()
        dev_opt.step()
        dev_opt.zero_grad()
        loss_dev = loss.item()                       # a read: waits for the forward's work
        torch_trn.sync()                             # the step's optimizer work too, timed
        t1 = time.perf_counter()
        ref = cpu_model.loss(x, y)
        ref.backward()
        cpu_opt.step()
        cpu_opt.zero_grad()
        loss_cpu = ref.item()
        t2 = time.perf_counter()
        t_dev += t1 - t0
        step_times.append(t1 - t0)
        losses.append(loss_dev)
        t_cpu += t2 - t1
        rel = abs(loss_dev - loss_cpu) / max(abs(loss_cpu), 1e-30)
        worst = max(worst, rel)
        flag = "" if math.isclose(loss_dev, loss_cpu, rel_tol=REL_TOL) else "  <-- DIVERGED"
        print(f"{step:>4}  {loss_dev:>14.8f}  {loss_cpu:>14.8f}  {rel:>9.2e}{flag}")
    torch_trn.sync()

    s = torch_trn.stats()
    print()
    print(f"mode:            {torch_trn.mode()}")
    print(f"ops recorded:    {s['ops_recorded']}  executed: {s['ops_executed']}  views: {s['views']}")
    print(f"host fallbacks:  {s['host_fallback_total']}" +
          "".join(f"\n  {op}: {r}" for op, r in sorted(s['host_fallbacks'].items())))
    print(f"syncs:           {s['sync_total']}  {s['syncs']}")
    print(f"wall time:       neuron {t_dev:.2f}s, cpu {t_cpu:.2f}s for {args.steps} steps")
    print(f"compiled:        {s['ops_run_compiled']} of {s['ops_executed']} ops executed ran compiled; "
          f"{s['compiles']} compiles ({s['compile_ms'] / 1e3:.1f} s of compile time)")
    if args.torch_compile:
        print(f"torch.compile:   {s['graph_replays']} graph calls replayed ({s['graph_replay_ops']} ops), "
              f"{s['graph_captures_refused']} captures refused")
    print(f"max rel.diff:    {worst:.2e} (tolerance {REL_TOL:g})")
    dev = s.get("device")
    if dev:  # NEURON_TARGET=trn2|trn3: the modeled NeuronCore
        busy = ", ".join(f"{e} {ns / 1e3:.1f}" for e, ns in dev["engine_busy_ns"].items())
        print(f"{dev['target']} (modeled): {dev['modeled_ns'] / 1e3:.1f} us of device time for {args.steps} steps; "
              f"engines busy (us): {busy}; {dev['ops_on_device']} ops on the core, {dev['ops_on_host']} on the host")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mode": torch_trn.mode(), "steps": step_times, "losses": losses, "worst_rel": worst,
                       "compiles": s["compiles"], "compile_ms": s["compile_ms"],
                       "ops_run_compiled": s["ops_run_compiled"], "ops_executed": s["ops_executed"],
                       "graph_replays": s["graph_replays"],
                       "device": dev}, f)
    if worst > REL_TOL:
        print("FAIL: losses diverged", file=sys.stderr)
        return 1
    print("OK: losses match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
