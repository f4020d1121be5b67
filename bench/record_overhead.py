"""Per-op cost of recording a tiny op on the neuron device vs PyTorch CPU eager, in one run.

    PYTHONPATH=python python3 bench/record_overhead.py [--numel 4] [--batch 1000] [--repeats 30]

What is measured (each row: median over --repeats batches of the batch's mean time per op):
  cpu eager         `c = a + b` on CPU tensors: dispatch + the CPU kernel + allocation.
  neuron record     `c = a + b` on device tensors, the Python call only: dispatch, Meta-kernel
                    shape inference, output allocation, source-line capture, enqueue. The
                    stream is synced after each batch, outside the timed region, so the
                    pending-op limit (NEURON_MAX_PENDING_OPS, default 4096 > --batch) never
                    blocks recording. The executor thread runs queued ops concurrently (on
                    the other core) while the batch is recorded.
  neuron rec+exec   `c = a + b; torch_trn.sync()` per op: record, execute on the executor
                    thread, and wait for it: the full round trip of one op.
  launch blocking   `c = a + b` in a child process with NEURON_LAUNCH_BLOCKING=1 (each op
                    executes before the call returns), if the child runs.
  meta add          `c = a + b` on PyTorch's own meta device (no torch_trn involved): the
                    cost of the Meta kernel the recorder runs for shape inference. For many
                    ops (add included) torch 2.x registers a Python Meta kernel
                    (torch/_meta_registrations.py) over the C++ one, so this is Python code.
  python loop       an empty loop iteration (`c = a`): the floor included in every row.
The headline ratio is neuron record / cpu eager (both include the loop floor).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import torch_trn


def per_op_times(a, b, batch, repeats, after_batch=None, sync_each=False, empty=False):
    """Median (and min/max) over `repeats` batches of mean seconds per op."""
    means = []
    for r in range(repeats + 1):                  # batch 0 is a warm-up, dropped
        if sync_each:
            t0 = time.perf_counter()
            for _ in range(batch):
                c = a + b
                torch_trn.sync()
            t1 = time.perf_counter()
        elif empty:
            t0 = time.perf_counter()
            for _ in range(batch):
                c = a
            t1 = time.perf_counter()
        else:
            t0 = time.perf_counter()
            for _ in range(batch):
                c = a + b
            t1 = time.perf_counter()
        if after_batch is not None:
            after_batch()                         # untimed (sync of the recorded batch)
        if r > 0:
            means.append((t1 - t0) / batch)
    del c
    return {"median": statistics.median(means), "min": min(means), "max": max(means)}


def child_launch_blocking(numel, batch, repeats):
    dev = torch_trn.device()
    a, b = torch.ones(numel, device=dev), torch.ones(numel, device=dev)
    return per_op_times(a, b, batch, repeats, after_batch=torch_trn.sync)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--numel", type=int, default=4)
    p.add_argument("--batch", type=int, default=1000, help="ops per timed batch")
    p.add_argument("--repeats", type=int, default=30, help="timed batches per row")
    p.add_argument("--no-child", action="store_true", help="skip the NEURON_LAUNCH_BLOCKING=1 row")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.child:
        print(json.dumps(child_launch_blocking(args.numel, args.batch, args.repeats)))
        return 0

    pending = int(os.environ.get("NEURON_MAX_PENDING_OPS", "4096"))
    if args.batch > pending:
        print(f"--batch {args.batch} > NEURON_MAX_PENDING_OPS={pending}: recording would block; "
              f"lower --batch or raise the knob", file=sys.stderr)
        return 2

    dev = torch_trn.device()
    a_cpu, b_cpu = torch.ones(args.numel), torch.ones(args.numel)
    a_dev, b_dev = a_cpu.to(dev), b_cpu.to(dev)
    torch_trn.sync()

    # Check that recording carries this file's line (source lines are always on).
    torch_trn.reset_stats()
    probe = a_dev + b_dev
    torch_trn.sync()
    last = torch_trn.last_ops(1)[0]
    src = f"{os.path.basename(str(last.get('file')))}:{last.get('line')}"

    rows = []
    rows.append(("python loop", per_op_times(a_cpu, b_cpu, args.batch, args.repeats, empty=True)))
    rows.append(("cpu eager", per_op_times(a_cpu, b_cpu, args.batch, args.repeats)))
    a_meta, b_meta = a_cpu.to("meta"), b_cpu.to("meta")
    rows.append(("meta add", per_op_times(a_meta, b_meta, max(10, args.batch // 10), args.repeats)))
    torch_trn.reset_stats()
    rows.append(("neuron record", per_op_times(a_dev, b_dev, args.batch, args.repeats,
                                               after_batch=torch_trn.sync)))
    stats = torch_trn.stats()
    rec_batch = max(10, args.batch // 10)          # the round trip is slower: fewer ops
    rows.append(("neuron rec+exec", per_op_times(a_dev, b_dev, rec_batch, args.repeats, sync_each=True)))
    if not args.no_child:
        env = dict(os.environ, NEURON_LAUNCH_BLOCKING="1")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--numel", str(args.numel),
               "--batch", str(rec_batch), "--repeats", str(args.repeats)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if out.returncode == 0:
            rows.append(("launch blocking", json.loads(out.stdout.strip().splitlines()[-1])))
        else:
            print(f"(NEURON_LAUNCH_BLOCKING=1 child failed: {out.stderr.strip()[-300:]})")

    print(f"torch {torch.__version__}, torch_trn mode={torch_trn.mode()}, op: c = a + b on "
          f"float32[{args.numel}], {args.repeats} batches of {args.batch} ops "
          f"({rec_batch} for the round-trip rows); recorded source: {src}")
    print(f"{'row':<16} {'median us/op':>12} {'min':>8} {'max':>8} {'x cpu eager':>11}")
    cpu = dict(rows)["cpu eager"]["median"]
    for name, t in rows:
        print(f"{name:<16} {t['median'] * 1e6:>12.2f} {t['min'] * 1e6:>8.2f} {t['max'] * 1e6:>8.2f} "
              f"{t['median'] / cpu:>11.2f}")
    ratio = dict(rows)["neuron record"]["median"] / cpu
    print(f"\nrecord overhead ratio (neuron record / cpu eager, median per op): {ratio:.2f}x")
    print(f"ops recorded during the record row: {stats['ops_recorded']}, host fallbacks: "
          f"{stats['host_fallback_total']}, syncs: {stats['sync_total']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
