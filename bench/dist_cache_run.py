"""One rank of bench/cache.py's distributed measurement (started by torchrun, one process per rank).

    python3 -m torch.distributed.run --standalone --nproc_per_node=4 bench/dist_cache_run.py --model gpt --steps 5

Every rank trains the same seeded model on the same batches (no DDP and no collectives while
training: the ranks only share compiled groups, through the process group's store, when
NEURON_CACHE_DISTRIBUTED=auto). The ranks meet at a barrier after `import torch_trn` and
init_process_group, so their clocks start together; the time to first step (TTFS) is from that
barrier to the first loss on the host. Prints one line per rank: RESULT {json}.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch_trn  # before the first backward pass
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "python"))
from models import make_batches, make_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gpt")
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
    rank, world = dist.get_rank(), dist.get_world_size()
    batches = make_batches(args.model, args.steps)
    dist.barrier()
    t0 = time.perf_counter()
    dev = torch_trn.device()
    model = make_model(args.model).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    losses, times, ttfs = [], [], None
    for x, y in batches:
        t = time.perf_counter()
        loss = model.loss(x.to(dev), y.to(dev))
        loss.backward(); opt.step(); opt.zero_grad()
        losses.append(loss.item())
        times.append(time.perf_counter() - t)
        if ttfs is None:
            ttfs = time.perf_counter() - t0
    torch_trn.wait_for_compiles()
    torch_trn.sync()
    total = time.perf_counter() - t0
    c = torch_trn.cache_stats()
    out = {"rank": rank, "world": world, "ttfs": ttfs, "total": total, "losses": losses,
           "steady": statistics.median(times[2:]) if len(times) > 2 else times[-1],
           "compiles": c["compiles"], "compile_seconds": c["compile_seconds"], "remote": c["remote"],
           "disk_enabled": c["disk"]["enabled"]}
    print("RESULT " + json.dumps(out), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
