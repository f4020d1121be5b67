"""torch_trn._dist_cache: the store adapter the C++ cache's distributed tier talks to.

Runs against torch's real stores (TCPStore, HashStore, and the PrefixStore over a TCPStore that
store_for_cache() builds). What is proven:
  - get of an absent key returns None at once (torch's own get would wait for the store timeout);
  - set/get round-trip any bytes, the empty value included; get of a deleted key is None at once;
  - compare_set: b"" expected sets only when the key is absent (also when a present key holds b"",
    which torch's raw compare_set would overwrite), a mismatch changes nothing and returns the
    current value, a match swaps; an absent key with a non-empty expected stays absent (b"");
  - two clients of one TCPStore race for a key through compare_set: exactly one wins;
  - store_for_cache() is None when torch.distributed is not initialised or the world has one rank,
    and under a real 2-rank gloo group it is a store namespaced under "torch_trn/cache/" of the
    default store, shared by both ranks, or None with NEURON_CACHE_DISTRIBUTED=0.
The module is loaded from its file so this process does not initialise the device runtime
(cpu_losses runs backward passes in the pytest process; torch_trn must come before those).
"""
import datetime
import importlib.util
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest
import torch.distributed as dist

from helpers import ROOT

SRC = os.path.join(ROOT, "python", "torch_trn", "_dist_cache.py")
_spec = importlib.util.spec_from_file_location("torch_trn_dist_cache_under_test", SRC)
dc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(dc)

TIMEOUT = datetime.timedelta(seconds=5)


def tcp_master():
    return dist.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False, timeout=TIMEOUT)


@pytest.fixture(params=["tcp", "hash", "prefix_tcp"])
def store(request):
    if request.param == "tcp":
        raw = tcp_master()
    elif request.param == "hash":
        raw = dist.HashStore()
    else:
        raw = dist.PrefixStore(dc.PREFIX, tcp_master())
    return dc.CacheStore(raw, rank=0, world_size=1)


def test_get_absent_is_none_without_waiting(store):
    t0 = time.perf_counter()
    assert store.get("nothing/here") is None
    assert time.perf_counter() - t0 < 1.0, "get of an absent key waited (store timeout is 5 s)"


def test_set_get_round_trip(store):
    blob = bytes(range(256)) * 4096 + b"\x00"
    store.set("a", blob)
    assert store.get("a") == blob
    store.set("empty", b"")
    assert store.get("empty") == b""
    store.set("a", b"second")
    assert store.get("a") == b"second"


def test_delete_then_get_is_none_without_waiting(store):
    # ranks delete the keys of their oldest builds (remote_tier.h): a get after a delete must
    # answer None at once (a check-then-get would wait for the store timeout)
    store.set("old/done", b"ok:")
    store.delete("old/done")
    store.delete("old/done")  # absent: nothing happens
    t0 = time.perf_counter()
    assert store.get("old/done") is None
    assert time.perf_counter() - t0 < 1.0, "get of a deleted key waited (store timeout is 5 s)"
    # the probe left nothing behind: the key is still absent for a claim
    assert store.compare_set("old/done", b"", b"again") == b"again"


def test_compare_set_semantics(store):
    # Absent + b"": sets, returns desired.
    assert store.compare_set("lease", b"", b"0:11:1000") == b"0:11:1000"
    assert store.get("lease") == b"0:11:1000"
    # Present + b"": no swap, returns the current value.
    assert store.compare_set("lease", b"", b"1:22:2000") == b"0:11:1000"
    # Mismatch: no swap, returns the current value.
    assert store.compare_set("lease", b"stale", b"1:22:2000") == b"0:11:1000"
    assert store.get("lease") == b"0:11:1000"
    # Match: swaps, returns desired.
    assert store.compare_set("lease", b"0:11:1000", b"1:22:2000") == b"1:22:2000"
    assert store.get("lease") == b"1:22:2000"
    # Absent + non-empty expected: nothing set, b"" returned.
    assert store.compare_set("other", b"x", b"y") == b""
    assert store.get("other") is None
    # A present key holding b"" is present: b"" expected does not overwrite it.
    store.set("held_empty", b"")
    assert store.compare_set("held_empty", b"", b"z") == b""
    assert store.get("held_empty") == b""
    assert store.compare_set("held_empty", b"", b"z") != b"z"


def test_two_clients_race_one_winner():
    master = tcp_master()
    client = dist.TCPStore("127.0.0.1", master.port, 1, False, timeout=TIMEOUT)
    a = dc.CacheStore(dist.PrefixStore(dc.PREFIX, master), 0, 2)
    b = dc.CacheStore(dist.PrefixStore(dc.PREFIX, client), 1, 2)
    got_a = a.compare_set("k.O1c1/lease", b"", b"A")
    got_b = b.compare_set("k.O1c1/lease", b"", b"B")
    assert (got_a, got_b) == (b"A", b"A")
    assert b.get("k.O1c1/lease") == b"A"
    # The loser takes over once it has seen the old value (as a takeover of an expired lease).
    assert b.compare_set("k.O1c1/lease", b"A", b"B") == b"B"
    assert a.compare_set("k.O1c1/lease", b"A", b"A2") == b"B"


def test_store_for_cache_none_without_a_group():
    assert not dist.is_initialized()
    assert dc.store_for_cache() is None


def test_store_for_cache_none_for_one_rank():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert dc.store_for_cache() is None
    finally:
        dist.destroy_process_group()


RANK_SCRIPT = """
import importlib.util, json, os, torch.distributed as dist
from torch.distributed import distributed_c10d
spec = importlib.util.spec_from_file_location("dc", {src!r})
dc = importlib.util.module_from_spec(spec); spec.loader.exec_module(dc)
dist.init_process_group("gloo")
st = dc.store_for_cache()
out = {{"rank": st.rank, "world_size": st.world_size}}
mine = b"rank%d" % st.rank
out["claim"] = st.compare_set("h.O1c1/lease", b"", mine).decode()
dist.barrier()
out["seen"] = st.get("h.O1c1/lease").decode()
out["raw_namespaced"] = distributed_c10d._get_default_store().check(["torch_trn/cache/h.O1c1/lease"])
os.environ["NEURON_CACHE_DISTRIBUTED"] = "0"
out["disabled"] = dc.store_for_cache() is None
print(json.dumps(out), flush=True)
dist.barrier()
dist.destroy_process_group()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_store_for_cache_under_two_ranks():
    import json
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": "2"}
    env.pop("NEURON_CACHE_DISTRIBUTED", None)
    code = textwrap.dedent(RANK_SCRIPT.format(src=SRC))
    procs = [subprocess.Popen([sys.executable, "-c", code], env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
    outs = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=60)
            assert p.returncode == 0, f"exit {p.returncode}\n{stdout}\n{stderr[-3000:]}"
            outs.append(json.loads([l for l in stdout.splitlines() if l.startswith("{")][-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [o["rank"] for o in outs] == [0, 1] and all(o["world_size"] == 2 for o in outs)
    winner = outs[0]["claim"]
    assert winner in ("rank0", "rank1") and outs[1]["claim"] == winner, outs
    assert all(o["seen"] == winner for o in outs), outs
    assert all(o["raw_namespaced"] for o in outs), "keys are not under torch_trn/cache/ of the default store"
    assert all(o["disabled"] for o in outs), "NEURON_CACHE_DISTRIBUTED=0 did not disable the store"
