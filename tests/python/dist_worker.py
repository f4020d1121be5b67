"""One rank of the distributed tests on the neuron device (tests/python/test_distributed.py).

One launch runs many cases and writes what it saw to <out>/rank<r>.json; the tests assert on
those files (one torchrun launch per mode: importing torch and joining the group dominate).

    python3 -m torch.distributed.run --nproc_per_node=N dist_worker.py --out DIR [--cases ...]
    RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. python3 dist_worker.py --cases kill ...

Cases (--cases, comma-separated; default "collectives,mismatch,ddp,fsdp"):
  collectives  every collective on neuron tensors against the same collective on CPU tensors
               (the group's gloo), inputs made by device ops and results read through later ones
  mismatch     the ranks all_reduce tensors of different shapes: the error, then a good all_reduce
  ddp          DistributedDataParallel on the device: parity steps, gradient accumulation under
               no_sync(), find_unused_parameters, and the group keys of a steady step
  fsdp         FSDP2 (fully_shard per layer and the root) on the device: the parity steps
  kill         rank --victim SIGKILLs itself before its second DDP step; the others report the
               error their next sync raised (and how long it took)
  hang         rank --victim stops issuing collectives (sleeps); the others report the error
"""
import argparse
import datetime
import json
import os
import signal
import sys
import time
import traceback

import torch
import torch_trn  # before the first backward pass
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import make_batches, make_model  # noqa: E402

DEV = torch_trn.device()
STEPS = 5
LR, WD = 1e-2, 0.01


# --------------------------------------------------------------------------------------------
# Collectives: each case runs once on CPU tensors (the group's gloo backend) and once on neuron
# tensors, from the same inputs; the results must be equal.
# --------------------------------------------------------------------------------------------
def make_input(rank, shape, dev, dtype=torch.float32, salt=0):
    base = torch.arange(int(torch.tensor(shape).prod()), dtype=torch.float64).reshape(shape)
    base = (base * 0.37 + rank * 1.5 + salt).sin() * 10
    x = base.to(dtype).to(dev)
    return x * 2 - 1  # (a recorded op on the device: the collective reads its result)


def c_all_reduce(rank, world, dev, op=dist.ReduceOp.SUM, dtype=torch.float32):
    t = make_input(rank, (5, 3), dev, dtype)
    dist.all_reduce(t, op=op)
    return [t, t * 3 + 1]  # (a later op sees the result)


def c_all_reduce_async(rank, world, dev):
    t = make_input(rank, (7,), dev)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    fut = dist.all_reduce(t, async_op=True).get_future()
    return [t, fut.wait()[0] + 0]


def c_broadcast(rank, world, dev):
    t = make_input(rank, (4, 2), dev)
    dist.broadcast(t, src=world - 1)
    return [t, t + 1]


def c_all_gather(rank, world, dev):
    t = make_input(rank, (3,), dev)
    outs = [torch.zeros(3, device=dev) for _ in range(world)]
    dist.all_gather(outs, t)
    return outs


def c_all_gather_into_tensor(rank, world, dev):
    t = make_input(rank, (2, 3), dev)
    out = torch.zeros(world * 2, 3, device=dev)
    work = dist.all_gather_into_tensor(out, t, async_op=True)
    work.wait()
    return [out, out.sum(0)]


def c_reduce_scatter_tensor(rank, world, dev):
    t = make_input(rank, (world * 2, 3), dev)
    out = torch.zeros(2, 3, device=dev)
    dist.reduce_scatter_tensor(out, t)
    return [out]


def c_all_to_all_single(rank, world, dev):
    t = make_input(rank, (world * 2,), dev)
    out = torch.zeros(world * 2, device=dev)
    dist.all_to_all_single(out, t)
    return [out]


def c_all_to_all_single_uneven(rank, world, dev):
    # rank r sends j + 1 elements to rank j, so it receives r + 1 from every rank.
    in_splits = [j + 1 for j in range(world)]
    out_splits = [rank + 1] * world
    t = make_input(rank, (sum(in_splits),), dev)
    out = torch.zeros(sum(out_splits), device=dev)
    dist.all_to_all_single(out, t, out_splits, in_splits)
    return [out]


def c_reduce(rank, world, dev):
    t = make_input(rank, (6,), dev)
    dist.reduce(t, dst=0)
    return [t] if rank == 0 else []


def c_gather_scatter(rank, world, dev):
    t = make_input(rank, (3,), dev)
    gathered = [torch.zeros(3, device=dev) for _ in range(world)] if rank == 0 else None
    dist.gather(t, gathered, dst=0)
    out = torch.zeros(3, device=dev)
    pieces = [make_input(j, (3,), dev, salt=7) for j in range(world)] if rank == 0 else None
    dist.scatter(out, pieces, src=0)
    return (gathered or []) + [out]


def c_send_recv(rank, world, dev):
    # A ring posted asynchronously (isend + irecv, then both waits), then blocking send/recv
    # between pairs (even ranks send first).
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    t = make_input(rank, (4,), dev)
    got = torch.zeros(4, device=dev)
    reqs = [dist.isend(t, nxt), dist.irecv(got, prv)]
    for r in reqs:
        r.wait()
    peer = rank ^ 1
    mine = make_input(rank, (2, 2), dev, salt=3)
    theirs = torch.zeros(2, 2, device=dev)
    if peer < world:
        if rank % 2 == 0:
            dist.send(mine, peer)
            dist.recv(theirs, peer)
        else:
            dist.recv(theirs, peer)
            dist.send(mine, peer)
    return [got, got * 2, theirs]


def c_barrier(rank, world, dev):
    t = make_input(rank, (3,), dev)
    y = t * 5
    if dev.type == "cpu":
        dist.barrier()
    else:
        dist.barrier(device_ids=[0])  # the neuron device's barrier
        # A host barrier: everything recorded before it has run.
        assert torch_trn._C.pending() == 0, torch_trn._C.pending()
    return [y]


COLLECTIVES = {
    "all_reduce": c_all_reduce,
    "all_reduce_max": lambda r, w, d: c_all_reduce(r, w, d, op=dist.ReduceOp.MAX),
    "all_reduce_int64": lambda r, w, d: c_all_reduce(r, w, d, dtype=torch.int64),
    "all_reduce_async": c_all_reduce_async,
    "broadcast": c_broadcast,
    "all_gather": c_all_gather,
    "all_gather_into_tensor": c_all_gather_into_tensor,
    "reduce_scatter_tensor": c_reduce_scatter_tensor,
    "all_to_all_single": c_all_to_all_single,
    "all_to_all_single_uneven": c_all_to_all_single_uneven,
    "reduce": c_reduce,
    "gather_scatter": c_gather_scatter,
    "send_recv": c_send_recv,
    "barrier": c_barrier,
}


def run_collectives(rank, world):
    results = {}
    for name, fn in COLLECTIVES.items():
        try:
            want = [t.clone() for t in fn(rank, world, torch.device("cpu"))]
            got = [t.cpu() for t in fn(rank, world, DEV)]
            # (compiled code may round a derived value differently: fused multiply-adds, sums)
            same = len(want) == len(got) and all(
                a.dtype == b.dtype and a.shape == b.shape and torch.allclose(a, b, rtol=1e-6, atol=1e-5)
                for a, b in zip(want, got))
            detail = "" if same else f"cpu={[t.tolist() for t in want]} neuron={[t.tolist() for t in got]}"
            results[name] = {"ok": same, "detail": detail}
        except Exception as e:  # noqa: BLE001  (reported per case)
            results[name] = {"ok": False, "detail": f"{type(e).__name__}: {e}\n{traceback.format_exc()}"}
    return results


def run_mismatch(rank, world):
    out = {}
    t = torch.ones(4 if rank == 0 else 6, device=DEV) * 2
    dist.all_reduce(t)
    try:
        t.cpu()
        out["error"] = None
    except Exception as e:  # noqa: BLE001
        out["error"] = {"type": type(e).__name__, "message": str(e)}
    # The check ran instead of the collective: the group is still in step.
    u = torch.full((3,), float(rank), device=DEV)
    dist.all_reduce(u)
    out["after"] = u.cpu().tolist()
    return out


# --------------------------------------------------------------------------------------------
# DDP
# --------------------------------------------------------------------------------------------
class WithUnused(nn.Module):
    """The mlp plus a parameter forward never uses (find_unused_parameters). One tensor: DDP's
    reducer zeroes unused parameters' gradients in the order of a pointer-keyed map, so with
    several the group doing it may differ from rank to rank (docs/distributed.md)."""

    def __init__(self):
        super().__init__()
        self.mlp = make_model("mlp")
        self.unused = nn.Linear(16, 16, bias=False)

    def forward(self, x):
        return self.mlp(x)


def shard(t, rank, world):
    n = t.shape[0] // world
    return t[rank * n:(rank + 1) * n]


def ddp_run(rank, world, model, steps, accumulate=1, **ddp_kwargs):
    """Trains `model` under DDP on this rank's shard of every batch; returns local losses and the
    final parameters. With `accumulate` > 1, each optimizer step covers that many batches, all
    but the last under no_sync()."""
    ddp = DDP(model.to(DEV), bucket_cap_mb=0.002, **ddp_kwargs)  # (a few buckets for the mlp)
    opt = torch.optim.AdamW(ddp.parameters(), lr=LR, weight_decay=WD)
    losses = []
    batches = make_batches("mlp", steps * accumulate)
    for i, (x, y) in enumerate(batches):
        x, y = shard(x, rank, world).to(DEV), shard(y, rank, world).to(DEV)
        last = (i + 1) % accumulate == 0
        if last:
            loss = _loss(ddp, x, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        else:
            with ddp.no_sync():
                loss = _loss(ddp, x, y)
                loss.backward()
        losses.append(loss.item())
    params = {n: p.detach().cpu().flatten().tolist() for n, p in ddp.module.named_parameters()}
    return ddp, opt, losses, params


def _loss(ddp, x, y):
    return F.cross_entropy(ddp(x), y)


def group_keys_of_step(ddp, opt, rank, world, out_dir):
    """The group keys the executor runs in one steady step, in order (from the profile)."""
    x, y = make_batches("mlp", 1)[0]
    x, y = shard(x, rank, world).to(DEV), shard(y, rank, world).to(DEV)
    path = os.path.join(out_dir, f"profile{rank}.json")
    with torch_trn.profile(path):
        loss = _loss(ddp, x, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        loss.item()
    with open(path) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    return [e["args"]["key"] for e in events if e.get("args", {}).get("key")]


def run_ddp(rank, world, out_dir):
    out = {}
    torch_trn.wait_for_compiles()
    keys_before = list(torch_trn._C.compiled_keys())
    entries_before = torch_trn.stats()["compile_cache_entries"]
    torch_trn.reset_cache_stats()

    ddp, opt, out["losses"], out["params"] = ddp_run(rank, world, make_model("mlp"), STEPS)
    _, _, out["accum_losses"], out["accum_params"] = ddp_run(rank, world, make_model("mlp"), 3, accumulate=2)
    model = WithUnused()
    _, _, out["unused_losses"], params = ddp_run(rank, world, model, 3, find_unused_parameters=True)
    out["unused_params"] = {n: v for n, v in params.items() if not n.startswith("unused")}
    out["unused_grad_is_none"] = all(p.grad is None for p in model.unused.parameters())

    torch_trn.wait_for_compiles()
    out["step_keys"] = group_keys_of_step(ddp, opt, rank, world, out_dir)
    torch_trn.wait_for_compiles()
    cache = torch_trn.cache_stats()
    s = torch_trn.stats()
    out["compiles"] = cache["compiles"]
    out["keys"] = list(torch_trn._C.compiled_keys())[len(keys_before):]
    out["entries"] = s["compile_cache_entries"] - entries_before
    out["fetches"] = cache["remote"]["fetches"]
    out["disk_hits"] = cache["disk"]["hits"]
    out["collectives"] = s["collectives"]
    out["unlowered_ops"] = s["unlowered_ops"]
    return out


# --------------------------------------------------------------------------------------------
# FSDP2
# --------------------------------------------------------------------------------------------
def run_fsdp(rank, world):
    """fully_shard on every layer and the root; the same steps as the DDP parity case."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("neuron", (world,))
    model = make_model("mlp").to(DEV)
    for layer in (model.fc1, model.fc2, model.out):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    syncs_before = torch_trn.stats()["syncs"].get("resize_storage", 0)
    losses = []
    for x, y in make_batches("mlp", STEPS):
        x, y = shard(x, rank, world).to(DEV), shard(y, rank, world).to(DEV)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    params = {n: p.full_tensor().cpu().flatten().tolist() for n, p in model.named_parameters()}
    return {"losses": losses, "params": params, "collectives": torch_trn.stats()["collectives"],
            "sharded": all(type(p).__name__ == "DTensor" for p in model.parameters()),
            "resize_syncs": torch_trn.stats()["syncs"].get("resize_storage", 0) - syncs_before}


# --------------------------------------------------------------------------------------------
# Faults
# --------------------------------------------------------------------------------------------
def run_fault(rank, world, kind, victim):
    """DDP steps until the victim dies (kill) or stops participating (hang); the survivors
    report the error of their next sync and how long it took to come."""
    ddp = DDP(make_model("mlp").to(DEV))
    opt = torch.optim.AdamW(ddp.parameters(), lr=LR)
    out = {"error": None}
    begin = None
    for i, (x, y) in enumerate(make_batches("mlp", 4)):
        if i == 1 and rank == victim:
            if kind == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(3600)  # hang: alive, never joins another collective
        x, y = shard(x, rank, world).to(DEV), shard(y, rank, world).to(DEV)
        begin = time.monotonic()
        try:
            loss = _loss(ddp, x, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            loss.item()
        except Exception as e:  # noqa: BLE001  (what the test asserts on)
            out["error"] = {"type": type(e).__name__, "runtime_error": isinstance(e, RuntimeError),
                            "message": str(e)[:2000], "step": i, "seconds": time.monotonic() - begin}
            break
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default="collectives,mismatch,ddp,fsdp")
    ap.add_argument("--backend", default="gloo", help='"default": init_process_group() without one')
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--victim", type=int, default=1)
    args = ap.parse_args()

    # The group of torch_trn's import-time backward compiles before the process group exists.
    torch_trn.wait_for_compiles()
    backend = None if args.backend == "default" else args.backend
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    result = {"rank": rank, "world": world, "mode": torch_trn.mode()}
    for case in args.cases.split(","):
        if case == "collectives":
            result["collectives"] = run_collectives(rank, world)
        elif case == "mismatch":
            result["mismatch"] = run_mismatch(rank, world)
        elif case == "ddp":
            result["ddp"] = run_ddp(rank, world, args.out)
        elif case == "fsdp":
            result["fsdp"] = run_fsdp(rank, world)
        elif case in ("kill", "hang"):
            result[case] = run_fault(rank, world, case, args.victim)
        else:
            raise SystemExit(f"unknown case {case!r}")
    with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    if any(c in args.cases for c in ("kill", "hang")):
        os._exit(0)  # (the group has a dead or hung member: no orderly teardown)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
