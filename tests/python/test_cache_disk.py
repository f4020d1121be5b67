"""The compiled-group cache's memory and disk tiers (issue 5), and `python3 -m torch_trn cache`.

Every training run is a fresh process (the cache knobs are read at import) training models.py's
"mlp" for 3 steps in compile mode (blocking compiles: the counts are deterministic) at
NEURON_OPT_LEVEL=1 (quick compiles), with its own NEURON_CACHE_DIR under pytest's tmp_path. One
module-scoped warm directory is filled once; cases that need a warm cache work on a copy of it.
What is asserted:
  - restart: a second process compiles nothing, loads every build from disk and computes the
    same losses bit for bit; the same in adaptive mode (compiles 0 after wait_for_compiles);
  - memory tier: a second model instance in one process compiles nothing;
  - faults: a truncated entry, a flipped object byte, another format version, a group-writable
    entry, a world-writable shard directory, entries owned by someone else: each is rejected
    with its reason (counted, one warning naming it), recompiled, and the losses stay right;
    wrong content is deleted and rewritten, insecure files are left alone;
  - foreign files in the tree are never loaded, and `cache ls` shows them as foreign;
  - read-only mode writes and touches nothing; 4 processes sharing an empty directory agree
    and leave a clean cache; a process killed mid-write leaves only a temp file; the size bound
    evicts the least recently used entries;
  - the CLI: ls / stats / verify / clear, JSON and human output, exit codes.
Runs also write plan entries (`<h>.plan`, the plan cache's disk tier: test_cache_plans.py); here
they are only required to verify, to be left alone by the code entries' checks and to be listed,
verified, counted and cleared by the CLI.
"""
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import time
import types

import pytest

import torch_trn
from helpers import ROOT, flip_entry_payload_byte, last_json, run_python, truncate_entry
from torch_trn import cache_cli

TESTS = os.path.join(ROOT, "tests", "python")
MODEL, STEPS = "mlp", 3
# One segment builder: entries are written one at a time, in stream order, so "the entries
# written last" is the same set in every run (with two builders it depends on which finishes first).
COMPILE = {"NEURON_MODE": "compile", "NEURON_OPT_LEVEL": "1", "NEURON_COMPILE_WORKERS": "1"}
# > 1: tiered (fast build, then -O2). Group growth off: when a process grows its groups depends on
# its compiler's progress, so a restart could grow where the first run did not
# (test_group_growth.py restarts a grown loop).
ADAPTIVE = {"NEURON_MODE": "adaptive", "NEURON_OPT_LEVEL": "2", "NEURON_ADAPTIVE_GROW": "0"}

# `instances` models of the same architecture, trained one after the other in one process; the
# cache counters are read after each. `at_import`: the entries in the directory when the import
# is done. The import itself runs one group (torch_trn's autograd warm-up), which compiles or loads
# and is written like any other; the import then resets the counters, so cache_stats() counts
# the training alone.
TRAIN = """
import json, os, sys, torch, torch_trn
sys.path.insert(0, {tests!r})
from models import make_model, make_batches
at_import = sorted(n for _, _, files in os.walk(os.environ["NEURON_CACHE_DIR"]) for n in files
                   if ".O" in n and not n.startswith("."))
runs = []
for _ in range({instances}):
    model = make_model({model!r}).to("neuron")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    losses = []
    for x, y in make_batches({model!r}, {steps}):
        loss = model.loss(x.to("neuron"), y.to("neuron"))
        loss.backward(); opt.step(); opt.zero_grad()
        losses.append(loss.item())
    if torch_trn.mode() == "adaptive":
        torch_trn.wait_for_compiles()
    torch_trn.sync()
    runs.append({{"losses": losses, "cache": torch_trn.cache_stats()}})
s = torch_trn.stats()
print(json.dumps({{"runs": runs, "losses": runs[0]["losses"], "cache": runs[-1]["cache"], "at_import": at_import,
                  "stats": {{k: v for k, v in s.items() if isinstance(v, (int, float, dict))}}}}))
"""


def program(instances=1):
    return TRAIN.format(tests=TESTS, model=MODEL, steps=STEPS, instances=instances)


def child_env(cache_dir, env):
    """The knobs of a run: only these (inherited NEURON_* dropped, conftest's included)."""
    return {**COMPILE, "NEURON_CACHE_DIR": str(cache_dir), **(env or {})}


def inherited():
    return [k for k in os.environ if k.startswith("NEURON_")]


def run(cache_dir, env=None, instances=1):
    return run_python(program(instances), env=child_env(cache_dir, env), drop=inherited())


def train(cache_dir, env=None, instances=1):
    proc = run(cache_dir, env, instances)
    out = last_json(proc)
    out["stderr"] = proc.stderr
    return out


# --------------------------------------------------------------------------------------------
# the directory
# --------------------------------------------------------------------------------------------
def listing(d, verify=True):
    return torch_trn._C.cache_entries(str(d), verify)


def entries(d):
    return [e for e in listing(d) if e["kind"] == "entry"]


def plan_entries(d):
    return [e for e in listing(d) if e["kind"] == "plans"]


def name(path):
    return os.path.basename(path)


def every_file(d):
    """{path: (bytes, mode, mtime_ns)} of every file under d, and (mode) of every directory."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs:
            p = os.path.join(root, n)
            out[p] = (None, os.stat(p).st_mode, None)
        for n in files:
            p = os.path.join(root, n)
            st = os.stat(p)
            with open(p, "rb") as f:
                out[p] = (f.read(), st.st_mode, st.st_mtime_ns)
    return out


def age(d, seconds=3600):
    """Sets every entry's mtime (its last access) `seconds` into the past."""
    t = time.time() - seconds
    for e in entries(d):
        os.utime(e["path"], (t, t))


def cli(capsys, *args):
    """`python3 -m torch_trn cache ARGS` in this process: (exit code, stdout)."""
    capsys.readouterr()
    code = cache_cli.main([str(a) for a in args])
    return code, capsys.readouterr().out


def cli_process(*args):
    """`python3 -m torch_trn ARGS` in a fresh process: the CompletedProcess."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    return subprocess.run([sys.executable, "-m", "torch_trn", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def warnings_naming(stderr, path):
    return [l for l in stderr.splitlines() if path in l]


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """One run on an empty directory: its output (cache counters of the first model instance;
    a second instance then trains in the same process, for the memory tier's test); `entries`:
    every entry, in the order they were written (compile mode compiles one group at a time, in
    stream order); `built`: those the training wrote (not the import's), `n` of them."""
    d = tmp_path_factory.mktemp("warm") / "cache"
    out = train(d, instances=2)
    out["second"], out["cache"] = out["runs"][1], out["runs"][0]["cache"]
    written = sorted(entries(d), key=lambda e: e["mtime"])
    imported = set(out["at_import"])
    built = [e for e in written if name(e["path"]) not in imported]
    return types.SimpleNamespace(dir=d, out=out, entries=written, built=built, n=len(built), imported=imported,
                                 names=sorted(name(e["path"]) for e in written))


def in_copy(warm, d, entry):
    """The path of a warm `entry` in the copy `d`."""
    return entry["path"].replace(str(warm.dir), str(d))


def warm_copy(warm, tmp_path):
    d = tmp_path / "cache"
    shutil.copytree(warm.dir, d)   # modes and mtimes preserved
    return d


# --------------------------------------------------------------------------------------------
# restarts and the memory tier
# --------------------------------------------------------------------------------------------
def test_first_run_writes_every_build(warm):
    """An empty directory: every build this process compiled is written once, as a verified
    entry named by its levels (-O1 IR and codegen), and nothing was loaded."""
    c = warm.out["cache"]
    assert c["compiles"] > 0
    assert c["disk"]["enabled"] and c["disk"]["dir"] == str(warm.dir) and not c["disk"]["readonly"]
    assert c["disk"]["writes"] == c["compiles"] == warm.n, c
    assert c["disk"]["hits"] == 0 and c["disk"]["rejected"] == {} and c["disk"]["write_errors"] == 0
    assert c["disk"]["bytes_written"] == sum(e["size"] for e in warm.built)
    assert len(warm.entries) == c["memory"]["entries"], "one entry per build in memory (the import's too)"
    for e in warm.entries:
        assert e["status"] == "ok" and e["opt_level"] == 1 and e["codegen_level"] == 1, e
        assert name(e["path"]) == f"{e['key']}.O1c1" and len(e["key"]) == 32
        assert e["path"].startswith(os.path.join(str(warm.dir), e["key"][:2], e["key"][2:4]) + os.sep)
        assert stat.S_IMODE(os.stat(e["path"]).st_mode) == 0o600
    assert [e for e in listing(warm.dir) if e["kind"] not in ("entry", "plans")] == []
    plans = plan_entries(warm.dir)
    assert plans and all(e["status"] == "ok" and name(e["path"]) == f"{e['key']}.plan" for e in plans), plans


def test_restart_compiles_nothing(warm, tmp_path):
    """A new process on the warm directory loads every build from disk (each one once, then the
    memory tier), compiles nothing, touches each entry it used (its recency) and computes exactly
    the losses of the run that compiled them."""
    d = warm_copy(warm, tmp_path)
    age(d)
    before = time.time() - 60
    out = train(d)
    c = out["cache"]
    assert c["compiles"] == 0, c
    assert c["disk"]["hits"] == warm.n and c["disk"]["writes"] == 0 and c["disk"]["rejected"] == {}, c
    assert c["memory"]["hits"] > 0
    assert out["losses"] == warm.out["losses"]
    assert all(e["mtime"] > before for e in entries(d)), "a hit must record the entry's last access"


def test_restart_adaptive_compiles_nothing(tmp_path):
    """Adaptive mode: the first process compiles both tiers of every group in the background
    and writes them; the second finds them all on disk and compiles nothing, even after waiting
    for its background work. (Losses agree to rounding, not bit for bit: in the first run the
    first steps run op by op while their groups compile.)"""
    d = tmp_path / "cache"
    first = train(d, ADAPTIVE)
    c1 = first["cache"]
    assert c1["compiles"] > 0 and c1["disk"]["writes"] == c1["compiles"], c1
    levels = {(e["opt_level"], e["codegen_level"]) for e in entries(d)}
    assert levels == {(1, 0), (2, 2)}, f"tiering writes the fast build and the optimised one: {levels}"
    second = train(d, ADAPTIVE)
    c2 = second["cache"]
    assert c2["compiles"] == 0, c2
    assert c2["disk"]["hits"] > 0 and c2["disk"]["writes"] == 0 and c2["disk"]["rejected"] == {}, c2
    assert second["losses"] == pytest.approx(first["losses"], rel=1e-5)


def test_memory_tier_serves_a_second_model_instance(warm):
    """A second model of the same architecture in the same process (the warm run's) finds every
    group in memory: no compile, no disk access, the same losses."""
    one, two = warm.out["runs"]
    assert one["cache"]["compiles"] > 0
    assert two["cache"]["compiles"] == one["cache"]["compiles"], "the second instance compiled"
    assert two["cache"]["memory"]["hits"] > one["cache"]["memory"]["hits"]
    assert two["cache"]["disk"]["hits"] == one["cache"]["disk"]["hits"] == 0
    assert two["cache"]["disk"]["misses"] == one["cache"]["disk"]["misses"]
    assert two["losses"] == one["losses"]


# --------------------------------------------------------------------------------------------
# damaged and untrusted entries
# --------------------------------------------------------------------------------------------
def set_format_version(path, version=99):
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(struct.pack("<I", version))


def add_mode(path, bits):
    os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | bits)


CONTENT_FAULTS = {"truncated": truncate_entry, "hash_mismatch": flip_entry_payload_byte, "format_version": set_format_version}


@pytest.mark.parametrize("reason", list(CONTENT_FAULTS))
def test_damaged_entry_is_replaced(warm, tmp_path, capsys, reason):
    """One entry with wrong content: the next run rejects it for `reason` (counted, one warning
    naming it), deletes it, recompiles that group alone, writes a good entry in its place, and
    computes the same losses; `cache verify` is clean afterwards."""
    d = warm_copy(warm, tmp_path)
    victim = in_copy(warm, d, warm.built[0])
    CONTENT_FAULTS[reason](victim)
    out = train(d)
    c = out["cache"]
    assert c["disk"]["rejected"] == {reason: 1}, c["disk"]
    assert c["compiles"] == 1 and c["disk"]["writes"] == 1 and c["disk"]["hits"] == warm.n - 1, c
    assert out["losses"] == warm.out["losses"]
    lines = warnings_naming(out["stderr"], victim)
    assert len(lines) == 1 and reason in lines[0], out["stderr"][-3000:]
    fresh = [e for e in entries(d) if e["path"] == victim]
    assert len(fresh) == 1 and fresh[0]["status"] == "ok", fresh
    assert cli(capsys, "verify", "--dir", d)[0] == 0


def untrusted_entry(warm, d):
    """A group-writable entry: anyone in the group could have replaced its code."""
    victim = in_copy(warm, d, warm.built[0])
    add_mode(victim, stat.S_IWGRP)
    return [victim], {}


def untrusted_shard_dir(warm, d):
    """A world-writable shard directory: anyone could swap the entries in it."""
    victim = in_copy(warm, d, warm.built[0])
    shard = os.path.dirname(victim)
    add_mode(shard, stat.S_IWOTH)
    return [e["path"] for e in entries(d) if os.path.dirname(e["path"]) == shard], {}


def foreign_owner(warm, d):
    """Every file and directory owned by another user (the expected uid is made to differ)."""
    return [e["path"] for e in entries(d)], {"NEURON_TEST_CACHE_UID": str(os.geteuid() + 1)}


INSECURE = {"insecure_mode_file": ("insecure_mode", untrusted_entry),
            "insecure_mode_dir": ("insecure_mode", untrusted_shard_dir),
            "insecure_owner": ("insecure_owner", foreign_owner)}


@pytest.mark.parametrize("case", list(INSECURE))
def test_untrusted_entry_is_ignored_not_touched(warm, tmp_path, case):
    """An entry we cannot trust (wrong owner, or writable by others, itself or its directory) is
    never loaded: rejected for its reason (counted, one warning naming it), its group recompiled
    in memory only; the file is neither deleted nor overwritten, and the losses are right.
    (Entries of the import's own group are rejected during the import, before the counters are
    reset: they are warned about but not counted.)"""
    reason, make = INSECURE[case]
    d = warm_copy(warm, tmp_path)
    victims, env = make(warm, d)
    counted = [v for v in victims if name(v) not in warm.imported]
    assert counted
    before = every_file(d)
    out = train(d, env)
    c = out["cache"]
    assert c["disk"]["rejected"] == {reason: len(counted)}, c["disk"]
    assert c["compiles"] == len(counted) and c["disk"]["hits"] == warm.n - len(counted), c
    assert c["disk"]["writes"] == 0, "an untrusted entry must not be overwritten"
    assert out["losses"] == warm.out["losses"]
    for v in victims:
        lines = warnings_naming(out["stderr"], v)
        assert len(lines) == 1 and reason in lines[0], (v, out["stderr"][-3000:])
    after = every_file(d)
    for p in victims + [os.path.dirname(v) for v in victims]:
        assert after.get(p, (None, None))[:2] == before[p][:2], f"{p} was changed"


def test_foreign_files_are_never_loaded(warm, tmp_path, capsys):
    """Files the cache did not write (a junk file and directory at the root, a junk file in a
    shard directory, a file named like an entry holding garbage) are never loaded: the run uses
    the real entries only and leaves the others alone. `cache ls` calls them foreign, and the
    entry-named garbage a bad entry (bad_magic) that `cache verify` reports."""
    d = warm_copy(warm, tmp_path)
    real = in_copy(warm, d, warm.built[0])
    junk_file, junk_dir = d / "notes.txt", d / "scratch"
    junk_file.write_text("not an entry\n")
    junk_dir.mkdir()
    shard_junk = os.path.join(os.path.dirname(real), "README")
    with open(shard_junk, "w") as f:
        f.write("not an entry either\n")
    fake_key = "ab" * 16
    fake = d / "ab" / "ab" / f"{fake_key}.O1c1"
    fake.parent.mkdir(parents=True, exist_ok=True)
    with open(real, "rb") as f:
        fake.write_bytes(b"GARBAGE!" + f.read()[8:])
    os.chmod(fake, 0o600)
    planted = {str(junk_file), str(junk_dir), shard_junk, str(fake)}

    out = train(d)
    c = out["cache"]
    assert c["compiles"] == 0 and c["disk"]["hits"] == warm.n and c["disk"]["rejected"] == {}, c
    assert out["losses"] == warm.out["losses"]
    assert all(os.path.exists(p) for p in planted)

    code, text = cli(capsys, "ls", "--dir", d, "--json")
    assert code == 0
    listed = {e["path"]: e for e in json.loads(text)}
    for p in (str(junk_file), str(junk_dir), shard_junk):
        assert listed[p]["kind"] == "foreign", listed.get(p)
    assert listed[str(fake)]["kind"] == "entry" and listed[str(fake)]["status"] == "bad_magic"
    assert sum(e["kind"] == "entry" and e["status"] == "ok" for e in listed.values()) == len(warm.entries)
    code, text = cli(capsys, "verify", "--dir", d)
    assert code == 1 and str(os.path.relpath(fake, d)) in text and "bad_magic" in text, text


# --------------------------------------------------------------------------------------------
# read-only, concurrency, crashes, eviction
# --------------------------------------------------------------------------------------------
def test_readonly_on_an_empty_dir_writes_nothing(warm, tmp_path):
    """NEURON_CACHE_READONLY=1 on an empty directory: every group compiles, nothing is written
    (not even a shard directory)."""
    d = tmp_path / "cache"
    d.mkdir()
    out = train(d, {"NEURON_CACHE_READONLY": "1"})
    c = out["cache"]
    assert c["disk"]["readonly"] and c["compiles"] == warm.n and c["disk"]["writes"] == 0, c
    assert out["losses"] == warm.out["losses"]
    assert os.listdir(d) == []


def test_readonly_on_a_warm_dir_touches_nothing(warm, tmp_path):
    """NEURON_CACHE_READONLY=1 on a warm directory: every build is loaded, and no file is
    created, changed or touched (mtimes, the recorded last accesses, stay)."""
    d = warm_copy(warm, tmp_path)
    age(d)
    before = every_file(d)
    out = train(d, {"NEURON_CACHE_READONLY": "1"})
    c = out["cache"]
    assert c["compiles"] == 0 and c["disk"]["hits"] == warm.n, c
    assert out["losses"] == warm.out["losses"]
    assert every_file(d) == before


def test_concurrent_processes_share_an_empty_dir(warm, tmp_path, capsys):
    """4 processes started at once on one empty directory, same model: all succeed with the
    single run's losses; each build was either compiled or loaded; the directory ends with one
    verified entry per distinct build and no temp file."""
    d = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    env.update(child_env(d, {}))
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    procs = [subprocess.Popen([sys.executable, "-c", program()], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        outs.append(last_json(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)))
    for out in outs:
        c = out["cache"]
        assert out["losses"] == warm.out["losses"]
        assert c["compiles"] + c["disk"]["hits"] == warm.n and c["disk"]["rejected"] == {}, c
    assert sum(o["cache"]["disk"]["writes"] for o in outs) >= warm.n
    found = listing(d)
    assert [e for e in found if e["kind"] not in ("entry", "plans")] == [], "temp or stray files left"
    assert sorted(name(e["path"]) for e in found if e["kind"] == "entry") == warm.names
    assert all(e["status"] == "ok" for e in found)
    assert cli(capsys, "verify", "--dir", d)[0] == 0


def test_killed_mid_write_leaves_no_bad_entry(warm, tmp_path, capsys):
    """A process SIGKILLed halfway through writing its first entry leaves a temp file, never a
    visible partial entry; the next run compiles and writes normally with the right losses, and
    `cache clear` removes the leftover temp."""
    d = tmp_path / "cache"
    proc = run(d, {"NEURON_TEST_CACHE_FAULT": "kill_mid_write"})
    assert proc.returncode == -9, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    found = listing(d)
    assert any(e["kind"] == "temp" for e in found), found
    assert all(e["kind"] == "temp" or (e["kind"] in ("entry", "plans") and e["status"] == "ok") for e in found), found

    out = train(d)
    assert out["losses"] == warm.out["losses"]
    assert out["cache"]["disk"]["rejected"] == {}
    assert sorted(name(e["path"]) for e in entries(d)) == warm.names
    assert cli(capsys, "verify", "--dir", d)[0] == 0

    code, text = cli(capsys, "clear", "--dir", d)
    assert code == 0 and "removed" in text, text
    assert [e for e in listing(d) if e["kind"] in ("entry", "plans", "temp")] == []


def test_eviction_keeps_the_most_recently_used(warm, tmp_path):
    """NEURON_CACHE_DISK_BYTES bounds the entries' bytes: room for about two entries leaves
    exactly the two written last (least recently used evicted first), counted as evictions."""
    sizes = [e["size"] for e in warm.built]
    limit = sizes[-1] + sizes[-2] + min(sizes) // 2   # a third entry never fits
    d = tmp_path / "cache"
    # Code entries alone (plan entries are evicted by the same rule, but would take room here).
    out = train(d, {"NEURON_CACHE_DISK_BYTES": str(limit), "NEURON_CACHE_PLANS": "0"})
    c = out["cache"]
    assert out["losses"] == warm.out["losses"]
    # Every entry written (the import's first) but the last two was evicted.
    assert c["disk"]["writes"] == warm.n and c["disk"]["evictions"] == len(warm.entries) - 2, c["disk"]
    kept = entries(d)
    assert sum(e["size"] for e in kept) <= limit
    assert sorted(name(e["path"]) for e in kept) == sorted(name(e["path"]) for e in warm.built[-2:])


# --------------------------------------------------------------------------------------------
# the CLI
# --------------------------------------------------------------------------------------------
def test_cli_ls_stats_verify_clear(warm, tmp_path, capsys):
    """`python3 -m torch_trn cache` on a warm directory: ls and stats (JSON and aligned text)
    describe every entry; verify is clean, then exits 1 naming a damaged entry, and
    `verify --delete` removes it; clear removes every entry; a missing directory is empty."""
    d = warm_copy(warm, tmp_path)
    code, text = cli(capsys, "ls", "--dir", d, "--json")
    assert code == 0
    listed = json.loads(text)
    assert sorted(name(e["path"]) for e in listed if e["kind"] == "entry") == warm.names
    assert all(e["kind"] in ("entry", "plans") and e["status"] == "ok" for e in listed)
    plans = [e for e in listed if e["kind"] == "plans"]
    assert plans

    age(d)
    code, text = cli(capsys, "ls", "--dir", d)
    rows = text.splitlines()
    assert code == 0 and rows[0] == f"{d}:", text
    assert rows[1].split() == ["KEY", "LEVELS", "SIZE", "LAST", "ACCESS", "STATUS"], text
    column = rows[1].index("LEVELS")
    for e in warm.entries:
        row = next(r for r in rows if r.startswith(e["key"]))
        assert row.index("O1c1") == column, f"columns not aligned:\n{text}"
        assert re.search(r" \d+(\.\d)? (B|KiB|MiB) ", row) and "1 h ago" in row and row.endswith(" ok"), row

    code, text = cli(capsys, "stats", "--dir", d, "--json")
    s = json.loads(text)
    code_bytes, plan_bytes = sum(e["size"] for e in warm.entries), sum(e["size"] for e in plans)
    assert code == 0 and s["entries"] == len(warm.entries) + len(plans) and s["bytes"] == code_bytes + plan_bytes
    assert s["by_level"] == {"O1c1": {"entries": len(warm.entries), "bytes": code_bytes},
                             "plans": {"entries": len(plans), "bytes": plan_bytes}}
    assert s["temps"] == 0 and s["foreign"] == 0 and s["limit"] > 0
    code, text = cli(capsys, "stats", "--dir", d)
    assert code == 0 and "entries" in text and "limit" in text and "KiB" in text, text

    assert cli(capsys, "verify", "--dir", d)[0] == 0
    victim = in_copy(warm, d, warm.built[0])
    flip_entry_payload_byte(victim)
    proc = cli_process("cache", "verify", "--dir", d)
    assert proc.returncode == 1 and os.path.relpath(victim, d) in proc.stdout and "hash_mismatch" in proc.stdout, proc.stdout
    code, text = cli(capsys, "verify", "--dir", d, "--delete", "--json")
    v = json.loads(text)
    assert code == 1 and v["deleted"] == [victim] and v["ok"] == len(warm.entries) + len(plans) - 1, v
    assert not os.path.exists(victim)
    assert cli(capsys, "verify", "--dir", d)[0] == 0

    code, text = cli(capsys, "clear", "--dir", d)
    assert code == 0 and f"removed {len(warm.entries) + len(plans) - 1} file" in text, text
    assert entries(d) == []
    assert cli(capsys, "ls", "--dir", d) == (0, f"{d}: empty\n")

    missing = tmp_path / "nothing-here"
    for command in ("ls", "stats", "verify"):
        code, text = cli(capsys, command, "--dir", missing)
        assert code == 0 and "empty" in text, (command, text)
    assert not missing.exists()


def test_cli_usage_errors(capsys):
    """Unknown commands and options are usage errors (exit 2) that print the usage."""
    from torch_trn import __main__ as main_module
    assert main_module.main(["frobnicate"]) == 2
    assert "cache ls|stats|clear|verify" in capsys.readouterr().err
    assert main_module.main(["cache", "ls", "--frob"]) == 2
    assert "usage:" in capsys.readouterr().err
    assert main_module.main(["cache"]) == 2
    assert "a command is required" in capsys.readouterr().err
