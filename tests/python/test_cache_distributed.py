"""The compiled-group cache's distributed tier: ranks share compiles through torch.distributed's store.

Four ranks (gloo, no DDP) train the same seeded MLP in adaptive mode with tiering off (one build
per group key) and print what they compiled (tests/python/dist_train.py), counted from joining the
process group on (the group of torch_trn's import-time backward is built by every rank before any
process group exists: there is nobody to share it with). What is proven:
  - store only (no disk tier), under torchrun: every distinct group key is compiled exactly once
    across the ranks (no key in two ranks' compiled_keys(), the ranks' compile counts sum to the
    number of distinct keys), every rank ends with every key (its compiles + remote fetches ==
    the keys it needed), and the losses of every rank, which ran fetched code after the mid-run
    wait, equal PyTorch CPU's;
  - a disk cache directory shared by all ranks: still one compile per key in total, one entry
    file per key on disk, and a second run of all ranks compiles nothing;
  - the same in compile mode, where ranks wait for the builds other ranks claimed;
  - the holder of a lease dies (SIGKILL right after claiming, before compiling; manual launch,
    since torchrun would stop every rank): the other ranks wait for the lease to expire, take it
    over, compile that group once among themselves, and finish with CPU losses.
"""
import collections
import math
import os
import re
import socket
import subprocess
import sys

import pytest

from helpers import ROOT, cpu_losses

SCRIPT = os.path.join(ROOT, "tests", "python", "dist_train.py")
MODEL, STEPS, WORLD = "mlp", 5, 4
ENTRY_NAME = re.compile(r"^[0-9a-f]{32}\.O\dc\d$")
TIMEOUT_S = 150


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(cache_dir, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NEURON_", "TORCHELASTIC_")) and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update({"PYTHONPATH": os.path.join(ROOT, "python"), "NEURON_MODE": "adaptive", "NEURON_TIERING": "0",
                "NEURON_OPT_LEVEL": "1", "NEURON_EXECUTOR_THREADS": "1", "OMP_NUM_THREADS": "1",
                "NEURON_CACHE_DIR": str(cache_dir)})
    env.update(extra)
    return env


def head_tail(text, n=2500):
    """The start (the first worker's error) and the end (torchrun's summary) of a long log."""
    return text if len(text) <= 2 * n else f"{text[:n]}\n[...]\n{text[-n:]}"


def torchrun(out_dir, cache_dir, **env):
    """Runs WORLD ranks of dist_train.py under torchrun; returns their JSON outputs by rank."""
    out_dir.mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={WORLD}",
           f"--master_port={free_port()}", SCRIPT, "--model", MODEL, "--steps", str(STEPS), "--out", str(out_dir)]
    proc = subprocess.run(cmd, env=base_env(cache_dir, **env), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, f"torchrun exit {proc.returncode}\n{proc.stdout[-2000:]}\n{head_tail(proc.stderr)}"
    import json
    outs = []
    for r in range(WORLD):
        path = out_dir / f"rank{r}.json"
        assert path.exists(), f"rank {r} wrote no result\n{head_tail(proc.stderr)}"
        outs.append(json.loads(path.read_text()))
    return outs, proc.stderr


def needed(o):
    """Builds a rank obtained: compiled itself, fetched from another rank, or read from disk."""
    c = o["cache"]
    return o["compiles"] + c["remote"]["fetches"] + c["disk"]["hits"]


def assert_compiled_once(outs, diag):
    """No key compiled by two ranks; compiles sum to the distinct keys; every rank has every key.
    Returns the number of distinct keys."""
    keys = [k for o in outs for k in o["keys"]]
    twice = [k for k, n in collections.Counter(keys).items() if n > 1]
    summary = [(o["rank"], o["compiles"], o["cache"]["remote"], o["cache"]["disk"]["hits"], o["entries"]) for o in outs]
    assert not twice, f"keys compiled on more than one rank: {twice}\n{summary}\n{diag}"
    distinct = max(o["entries"] for o in outs)
    assert distinct > 3, f"too few groups to share: {summary}"
    for o in outs:
        assert o["cache"]["remote"]["enabled"] and o["cache"]["remote"]["rank"] == o["rank"], o["cache"]["remote"]
        assert o["compiles"] == len(o["keys"]), f"rank {o['rank']}: tiering is off, one build per compiled key"
        assert o["entries"] == distinct, f"ranks needed different keys: {summary}"
        assert needed(o) == distinct, f"rank {o['rank']} did not get every key exactly once: {summary}\n{diag}"
        assert not o["compile_failures"], o["compile_failures"]
    assert sum(o["compiles"] for o in outs) == distinct == len(set(keys)), f"{summary}\n{diag}"
    return distinct


def assert_cpu_losses(outs):
    want = cpu_losses(MODEL, STEPS)
    for o in outs:
        got = o["losses"]
        assert len(got) == len(want), (o["rank"], got)
        for i, (a, b) in enumerate(zip(got, want)):
            assert math.isclose(a, b, rel_tol=1e-5), f"rank {o['rank']} step {i}: neuron={a!r} cpu={b!r}"
        # Steps after the mid-run wait run compiled code, fetched from another rank for most groups.
        assert o["ops_run_compiled"] > 0, f"rank {o['rank']} never ran compiled code"


def test_store_only_each_key_compiled_once(tmp_path):
    outs, diag = torchrun(tmp_path / "out", "off")
    assert all(not o["cache"]["disk"]["enabled"] for o in outs)
    distinct = assert_compiled_once(outs, diag[-4000:])
    fetches = sum(o["cache"]["remote"]["fetches"] for o in outs)
    assert fetches == (WORLD - 1) * distinct, f"every key reaches the other ranks through the store: {fetches}"
    assert sum(o["cache"]["remote"]["publishes"] for o in outs) == distinct
    assert_cpu_losses(outs)


def test_compile_mode_ranks_wait_for_each_other_and_compile_once(tmp_path):
    """Compile mode: a rank that finds a group claimed builds the unclaimed ones of its segment
    first, then waits for (fetches) the claimed ones; still one compile per key in total."""
    outs, diag = torchrun(tmp_path / "out", "off", NEURON_MODE="compile")
    distinct = assert_compiled_once(outs, diag[-4000:])
    assert sum(o["cache"]["remote"]["fetches"] for o in outs) == (WORLD - 1) * distinct
    assert_cpu_losses(outs)


def test_builds_signed_with_another_secret_are_never_used(tmp_path):
    """Rank 1 signs and verifies with a secret of its own (what a store client without the job's
    secret has): it links none of the other ranks' builds, they link none of its builds, each
    such build is compiled again instead, and every rank still trains like the CPU."""
    outs, diag = torchrun(tmp_path / "out", "off", NEURON_CACHE_SECRET="the job's secret, 32 characters!",
                          DIST_TRAIN_FOREIGN_SECRET_RANK="1")
    by_rank = {o["rank"]: o for o in outs}
    foreign = by_rank[1]["cache"]["remote"]
    assert foreign["fetches"] == 0, f"rank 1 linked a build signed with another secret: {foreign}\n{diag}"
    assert foreign["errors"] > 0 or by_rank[1]["compiles"] == by_rank[1]["entries"], foreign
    rank1_keys = set(by_rank[1]["keys"])
    for r in (0, 2, 3):
        o = by_rank[r]
        assert needed(o) == o["entries"], f"rank {r} did not get every key: {o['cache']}"
    # Every key rank 1 compiled was compiled by at least one other rank as well: its build was
    # refused by all of them.
    others = set(k for r in (0, 2, 3) for k in by_rank[r]["keys"])
    assert rank1_keys <= others, (sorted(rank1_keys - others), diag[-3000:])
    assert_cpu_losses(outs)


def disk_entries(cache_dir):
    found = []
    for root, _, files in os.walk(cache_dir):
        found += [f for f in files if ENTRY_NAME.match(f)]
    return found


def test_shared_disk_dir_compiled_once_then_reused(tmp_path):
    cache_dir = tmp_path / "cache"
    outs, diag = torchrun(tmp_path / "out1", cache_dir)
    distinct = assert_compiled_once(outs, diag[-4000:])
    assert all(o["cache"]["disk"]["enabled"] and o["cache"]["disk"]["dir"] == str(cache_dir) for o in outs)
    # Plus the group of torch_trn's import-time backward, built by every rank before the process
    # group existed (the same key everywhere: one file).
    before = {k for o in outs for k in o["keys_before"]}
    entries = disk_entries(cache_dir)
    assert len(entries) == distinct + len(before), f"{len(entries)} entry files for {distinct}+{len(before)} keys: {entries}"
    assert_cpu_losses(outs)

    # Second run on the warm directory: nothing compiles anywhere.
    outs2, diag2 = torchrun(tmp_path / "out2", cache_dir)
    summary = [(o["rank"], o["compiles"], o["cache"]["disk"]["hits"], o["cache"]["remote"]["fetches"]) for o in outs2]
    assert sum(o["compiles"] for o in outs2) == 0, f"{summary}\n{diag2[-4000:]}"
    assert all(needed(o) == distinct for o in outs2), summary
    assert sum(o["cache"]["disk"]["hits"] for o in outs2) > 0, summary
    assert len(disk_entries(cache_dir)) == distinct + len(before)
    assert_cpu_losses(outs2)


def test_lease_holder_dies_others_take_over(tmp_path):
    import json
    port = free_port()
    dead = 2   # not rank 0: it hosts the TCPStore in a manual launch

    def launch(rank, extra_args=(), **extra_env):
        env = base_env("off", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                       WORLD_SIZE=str(WORLD), LOCAL_RANK=str(rank), NEURON_CACHE_LEASE_S="2", **extra_env)
        cmd = [sys.executable, SCRIPT, "--model", MODEL, "--steps", str(STEPS), "--end", f"store:{WORLD - 1}",
               *extra_args]
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    # The doomed rank trains at once; the others join the group, then wait for it to die (after
    # its first lease claim), so they find its lease still held.
    procs = {dead: launch(dead, NEURON_TEST_CACHE_FAULT="kill_after_claim")}
    for r in range(WORLD):
        if r != dead:
            procs[r] = launch(r, ["--start-after-exit", str(procs[dead].pid)])
    results = {}
    try:
        for r, p in procs.items():
            results[r] = p.communicate(timeout=TIMEOUT_S)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.communicate()
    diag = "\n".join(f"--- rank {r} exit {procs[r].returncode}\n{err[-2500:]}" for r, (_, err) in results.items())

    assert procs[dead].returncode == -9, f"rank {dead} should die by SIGKILL\n{diag}"
    outs = []
    for r in sorted(procs):
        if r == dead:
            continue
        out, _ = results[r]
        assert procs[r].returncode == 0, diag
        lines = [l for l in out.splitlines() if l.startswith("{")]
        assert lines, f"rank {r} printed no JSON\n{out}\n{diag}"
        outs.append(json.loads(lines[-1]))

    takeovers = [o["cache"]["remote"]["lease_takeovers"] for o in outs]
    assert sum(takeovers) >= 1, f"no survivor took over the dead rank's lease: {[o['cache']['remote'] for o in outs]}"
    assert_compiled_once(outs, diag)
    assert_cpu_losses(outs)
