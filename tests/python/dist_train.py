"""One rank of the distributed compile-cache tests (tests/python/test_cache_distributed.py).

Every rank trains the same seeded models.py model on the neuron device in adaptive mode (no DDP,
no collectives during training: the ranks only share compiles through the store), waits for its
compiles, and prints one JSON line: rank, losses, the groups it compiled, cache_stats() (all
counted from joining the process group on).

    python3 -m torch.distributed.run --nproc_per_node=4 dist_train.py [options]
    RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. python3 dist_train.py [options]

--start-after-exit PID   after joining the group, wait until process PID (another rank) has died
                  before training (lets that rank claim a lease and die holding it)
--wait-after I    also wait for the compiles after step I, so later steps run compiled code that
                  may come from another rank (default 1; -1: only at the end)
--end barrier     barrier + destroy_process_group (default)
--end store:N     no collective (a rank may be dead): every rank adds 1 to a store counter; rank 0,
                  which hosts the TCPStore in a manual launch, waits until it reaches N so no live
                  rank loses the store; then destroy_process_group
--out DIR         also write the JSON to DIR/rank<r>.json
"""
import argparse
import datetime
import json
import os
import sys
import time

import torch

# Tests only: this rank signs with a secret of its own, as a store client that does not know the
# job's secret would (test_cache_distributed.py). Read at import of torch_trn.
if os.environ.get("DIST_TRAIN_FOREIGN_SECRET_RANK") == os.environ.get("RANK", "-"):
    os.environ["NEURON_CACHE_SECRET"] = "not this job's secret, but long enough"
import torch_trn  # noqa: E402  (before the first backward pass)
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import make_batches, make_model  # noqa: E402


def wait_for_exit(pid, timeout=60):
    """Waits until `pid` is gone or a zombie (its parent, the test, reaps it later)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return
        except FileNotFoundError:
            return
        time.sleep(0.02)
    raise SystemExit(f"process {pid} did not exit within {timeout}s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--wait-after", type=int, default=1)
    ap.add_argument("--start-after-exit", type=int)
    ap.add_argument("--end", default="barrier")
    ap.add_argument("--out")
    args = ap.parse_args()

    # The group of torch_trn's import-time backward compiles before the process group exists
    # (nothing to share it with): let it finish so it is not counted below.
    torch_trn.wait_for_compiles()
    keys_before = list(torch_trn._C.compiled_keys())
    entries_before = torch_trn.stats()["compile_cache_entries"]
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    torch_trn.reset_cache_stats()
    rank = dist.get_rank()
    if args.start_after_exit:
        wait_for_exit(args.start_after_exit)

    dev = torch_trn.device()
    model = make_model(args.model).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    losses = []
    for i, (x, y) in enumerate(make_batches(args.model, args.steps)):
        loss = model.loss(x.to(dev), y.to(dev))
        loss.backward(); opt.step(); opt.zero_grad()
        losses.append(loss.item())
        if i == args.wait_after:
            torch_trn.wait_for_compiles()
    torch_trn.wait_for_compiles()
    torch_trn.sync()

    cache = torch_trn.cache_stats()
    s = torch_trn.stats()
    # keys: the groups this rank compiled while in the process group, in compile order;
    # entries: the distinct groups it needed there (it holds code for each).
    out = {"rank": rank, "pid": os.getpid(), "losses": losses, "compiles": cache["compiles"],
           "keys": list(torch_trn._C.compiled_keys())[len(keys_before):], "keys_before": keys_before, "cache": cache,
           "entries": s["compile_cache_entries"] - entries_before, "ops_run_compiled": s["ops_run_compiled"],
           "compile_failures": s["compile_failures"]}
    line = json.dumps(out)
    if args.out:
        with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
            f.write(line + "\n")
    print(line, flush=True)

    if args.end == "barrier":
        dist.barrier()
    elif args.end.startswith("store:"):
        store = dist.distributed_c10d._get_default_store()
        store.add("dist_train/done", 1)
        if rank == 0:
            n = int(args.end.split(":")[1])
            deadline = time.monotonic() + 60
            while store.add("dist_train/done", 0) < n and time.monotonic() < deadline:
                time.sleep(0.05)
    else:
        raise SystemExit(f"unknown --end {args.end!r}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
