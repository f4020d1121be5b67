"""DDP on the neuron device at 1, 2 and 4 ranks: the steady step (weak scaling), the time spent in
collectives, and the compiles over all ranks.

    PYTHONPATH=python python3 bench/ddp_scaling.py                       # gpt, adaptive, 1,2,4 ranks
    PYTHONPATH=python python3 bench/ddp_scaling.py --ranks 1,2 --mode compile --steps 30

Each row is one torchrun launch of this file (--worker): every rank trains the gpt test model
(tests/python/models.py) under DistributedDataParallel on --batch sequences of its own per step
(weak scaling: the global batch grows with the ranks), warms up, waits for its compiles, meets
the other ranks at a barrier, then times --steps steps (each ends at loss.item()). Per row:
the median steady step (the slowest rank's), the executor's time in collectives per step (its
share of the step: the transfer and the wait for the slowest peer), and the compiles summed over
the ranks against the distinct groups one rank needed (the distributed compile cache compiles
each group once in the job). The machine has 2 cores: from 2 ranks on, the ranks share them,
so the step grows with the ranks; read the table as where the time goes, not as scaling.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def worker(args):
    import torch
    import torch_trn  # before the first backward pass
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    from models import gpt_batches, make_model

    torch_trn.wait_for_compiles()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch_trn.reset_cache_stats()
    dev = torch_trn.device()
    model = DDP(make_model("gpt").to(dev))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    batches = gpt_batches(args.warmup + args.steps, batch=args.batch * world)

    def step(x, y):
        x = x[rank * args.batch:(rank + 1) * args.batch].to(dev)
        y = y[rank * args.batch:(rank + 1) * args.batch].to(dev)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.item()

    for x, y in batches[:args.warmup]:
        step(x, y)
    torch_trn.wait_for_compiles()
    dist.barrier()
    before = torch_trn.stats()["collectives"]
    times = []
    for x, y in batches[args.warmup:]:
        t = time.perf_counter()
        step(x, y)
        times.append(time.perf_counter() - t)
    after = torch_trn.stats()["collectives"]
    coll_s = sum(v["seconds"] for v in after.values()) - sum(v["seconds"] for v in before.values())
    coll_n = sum(v["count"] for v in after.values()) - sum(v["count"] for v in before.values())
    cache = torch_trn.cache_stats()
    out = {"rank": rank, "world": world, "step_ms": statistics.median(times) * 1e3,
           "collective_ms": coll_s / len(times) * 1e3, "collectives": coll_n / len(times),
           "compiles": cache["compiles"], "entries": torch_trn.stats()["compile_cache_entries"],
           "fetches": cache["remote"]["fetches"]}
    with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
        json.dump(out, f)
    dist.barrier()
    dist.destroy_process_group()


def launch(n, args, out):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHELASTIC_")}
    env.update({"PYTHONPATH": os.path.join(ROOT, "python"), "NEURON_MODE": args.mode,
                "NEURON_CACHE_DIR": "off", "OMP_NUM_THREADS": "1"})
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}",
           os.path.abspath(__file__), "--worker", "--out", out, "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--batch", str(args.batch)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{n} ranks: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--mode", default="adaptive")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=4, help="sequences per rank and step")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    print(f"gpt DDP, mode={args.mode}, {args.batch} sequences per rank, {args.steps} steps after "
          f"{args.warmup} warm-up; {os.cpu_count()} cores")
    print(f"| ranks | steady step ms (slowest rank) | in collectives ms/step | collectives/step "
          f"| compiles over ranks | distinct groups |")
    print("|---|---|---|---|---|---|")
    for n in [int(r) for r in args.ranks.split(",")]:
        with tempfile.TemporaryDirectory() as out:
            ranks = launch(n, args, out)
        step = max(r["step_ms"] for r in ranks)
        coll = statistics.mean(r["collective_ms"] for r in ranks)
        print(f"| {n} | {step:.1f} | {coll:.1f} ({coll / step:.0%}) | {ranks[0]['collectives']:.0f} "
              f"| {sum(r['compiles'] for r in ranks)} | {ranks[0]['entries']} |", flush=True)


if __name__ == "__main__":
    main()
