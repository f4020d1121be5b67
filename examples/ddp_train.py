"""Data-parallel training on the neuron device: DistributedDataParallel over N processes.

    NEURON_MODE=adaptive PYTHONPATH=python torchrun --nproc_per_node=2 examples/ddp_train.py
    NEURON_MODE=adaptive PYTHONPATH=python torchrun --nproc_per_node=4 examples/ddp_train.py --fsdp

Every rank trains the same tiny GPT on its shard of each batch; DDP broadcasts rank 0's weights
at the start and all-reduces the gradients bucket by bucket as backward produces them. The
collectives run on the device's stream with gloo underneath (docs/distributed.md). With --fsdp
the model is sharded with FSDP2's fully_shard instead. Rank 0 prints the losses (the mean over
the ranks' shards, i.e. the loss of the whole batch) and where the time went; the ranks share
their compiles through the process group's store, so each group is compiled once in the job.
Exits with status 1 when the ranks' parameters differ at the end.
"""
import argparse
import os
import sys
import time

import torch
import torch_trn  # before any backward pass; NEURON_MODE is read here
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from models import gpt_batches, make_model  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=4, help="sequences per rank and step")
    parser.add_argument("--fsdp", action="store_true", help="FSDP2 (fully_shard) instead of DDP")
    args = parser.parse_args()

    dist.init_process_group("gloo")  # CPU tensors: gloo; neuron tensors: the device's backend
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch_trn.device()

    model = make_model("gpt").to(dev)  # the same seeded weights everywhere (DDP broadcasts anyway)
    if args.fsdp:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("neuron", (world,))
        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        model = fully_shard(model, mesh=mesh)
    else:
        model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)

    # Each step's global batch holds world x batch sequences; this rank trains on its slice.
    batches = gpt_batches(args.steps, batch=world * args.batch)
    if rank == 0:
        print(f"{'DDP' if not args.fsdp else 'FSDP2'} on {world} ranks x {args.batch} sequences, "
              f"mode={torch_trn.mode()}")
        print(f"{'step':>4}  {'loss':>10}  {'step ms':>8}")
    torch_trn.reset_stats()
    begin = time.perf_counter()
    for step, (x, y) in enumerate(batches):
        t0 = time.perf_counter()
        x = x[rank * args.batch:(rank + 1) * args.batch].to(dev)
        y = y[rank * args.batch:(rank + 1) * args.batch].to(dev)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # a collective on a device tensor, in stream order
        mean = mean.item() / world  # (a sync point)
        if rank == 0:
            print(f"{step:>4}  {mean:>10.6f}  {(time.perf_counter() - t0) * 1e3:>8.1f}")
    wall = time.perf_counter() - begin

    # Every rank must end with the same parameters.
    flat = torch.cat([(p.full_tensor() if hasattr(p, "full_tensor") else p).detach().reshape(-1)
                      for p in model.parameters()])
    mine = flat.clone()
    dist.broadcast(flat, src=0)
    same = torch.equal(mine.cpu(), flat.cpu())
    s = torch_trn.stats()
    cache = torch_trn.cache_stats()
    if rank == 0:
        coll = s["collectives"]
        print(f"\nwall time:     {wall:.2f} s for {args.steps} steps")
        print("collectives:   " + ", ".join(f"{k} x{v['count']} {v['seconds'] * 1e3:.1f} ms" for k, v in sorted(coll.items())))
        print(f"compiles:      {cache['compiles']} here, {cache['remote']['fetches']} fetched from other ranks")
        print(f"ranks agree:   {same}")
    ok = torch.tensor([1.0 if same else 0.0])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)  # (CPU tensors: the group's gloo)
    dist.destroy_process_group()
    return 0 if ok.item() == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
