"""The profiler (torch_trn.profile, NEURON_PROFILE), its timeline tool and current_op().

A short training loop of the "mlp" and "gpt" models runs in a fresh process per mode (the mode
is read at import): eager and adaptive profile each model with `with torch_trn.profile(path)`,
compile mode profiles the whole process through NEURON_PROFILE. What is asserted:
  - the file is Chrome trace-event JSON: field types, one named lane per thread, per-lane
    timestamps in order, events on a lane nested properly, every execute event's source lines
    name real code (and, for the models' ops, the right function in models.py);
  - the events agree with torch_trn.stats() for the same region: ops executed and recorded,
    syncs by reason, compiles, ops run compiled / while awaiting their compile;
  - execute kinds per mode (eager: op; compile: compiled, never awaiting; adaptive: awaiting in
    the first step, compiled at the tier-up level after wait_for_compiles), compile tiers;
  - timeline.summarize on those profiles, and the CLI (PNG, summary text, clear errors);
  - profiles do not nest, and an unwritable path is an error naming it;
  - current_op() seen from another thread names the executing op's line, and None after a sync.
Two strict xfails record known gaps outside the profiler (they fail loudly once fixed): some
backward ops of the gpt have no source line, and a host->device copy into a fresh tensor counts
as an executed op but has no execute event.
"""
import ast
import collections
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_trn
from helpers import ROOT, last_json, line_of
from torch_trn import timeline

TESTS = os.path.join(ROOT, "tests", "python")
MODELS_PY = os.path.join(TESTS, "models.py")
STEPS = 3
ADAPTIVE_LEVEL = 2   # NEURON_OPT_LEVEL of the adaptive run (its tier-up level)
RECORDING_LANE = re.compile(r"python|autograd \(backward ops\)|thread \d+")
LINE = re.compile(r"(?P<file>.+):(?P<line>\d+) \((?P<func>.+)\)")
# Some backward ops have no source line yet (see test_every_backward_op_has_a_source_line).
UNKNOWN = "<unknown location>"
US = 0.01  # tolerance (microseconds) when comparing begin + dur sums


def run_script(path, code, env):
    """Writes `code` to `path` and runs it in a fresh python3 (inherited NEURON_* knobs dropped,
    so only `env` decides the configuration); returns the CompletedProcess."""
    path = str(path)
    with open(path, "w") as f:
        f.write(textwrap.dedent(code))
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    # No disk cache unless `env` asks for one: builds from the user's cache (an earlier run of
    # the same build) would leave the compile-mode profile without compiles.
    full_env["NEURON_CACHE_DIR"] = "off"
    full_env.update(env)
    full_env["PYTHONPATH"] = os.path.join(ROOT, "python")
    return subprocess.run([sys.executable, path], env=full_env, capture_output=True, text=True,
                          timeout=300)


# The training program. Each model's region starts after its weights and batches are on the
# device (a sync, then reset_stats) and ends with a sync, so torch_trn.stats() read after it
# counts exactly what the region's events show. `with_block` False: NEURON_PROFILE profiles the
# whole process, and the syncs delimit the regions in the one file.
TRAIN = """
import contextlib, json, os, sys, torch, torch_trn
sys.path.insert(0, {tests!r})
from models import make_model, make_batches
STEPS, OUT, WITH_BLOCK = {steps}, {out!r}, {with_block}
adaptive = torch_trn.mode() == "adaptive"
report, base = {{}}, 0   # torch_trn.sync() calls up to the last reset_stats (manual_seed makes one too)
for name in ("mlp", "gpt"):
    model = make_model(name).to("neuron")
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    batches = [(x.to("neuron"), y.to("neuron")) for x, y in make_batches(name, STEPS)]
    torch_trn.sync()
    if adaptive:
        torch_trn.wait_for_compiles()   # nothing compiling across the region's start
    base += torch_trn.stats()["syncs"].get("user", 0)
    torch_trn.reset_stats()
    region = (torch_trn.profile(os.path.join(OUT, name + ".json")) if WITH_BLOCK
              else contextlib.nullcontext())
    with region:
        for step, (x, y) in enumerate(batches, 1):
            loss = model.loss(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            loss.item()
            if adaptive and step == 2:
                torch_trn.wait_for_compiles()
        if adaptive:
            torch_trn.wait_for_compiles()   # nor across its end
        if not WITH_BLOCK:
            torch_trn.sync()                # the with block ends with this sync itself
    report[name] = torch_trn.stats()
    # The region in the NEURON_PROFILE file: from the end of the base-th "user" sync to the end
    # of the last one in it.
    report[name]["region"] = [base, base + report[name]["syncs"].get("user", 0)]
if WITH_BLOCK:   # a region that moves a tensor to the device inside it
    torch_trn.reset_stats()
    with torch_trn.profile(os.path.join(OUT, "copies.json")):
        y = (torch.ones(8).to("neuron") * 2).cpu()
    report["copies"] = torch_trn.stats()
print(json.dumps(report))
"""


def train(tmp_path_factory, mode, with_block, extra_env=None):
    """Runs TRAIN in `mode`; returns {"mode", "script", "env_path", "dir", model: {"doc",
    "stats", "path"}} where a model's "doc" is its profile (with a block) or the NEURON_PROFILE
    document cut down to the events inside the model's region (then "doc" is also the whole)."""
    out = tmp_path_factory.mktemp(f"profile_{mode}")
    script = out / "train.py"
    env = {"NEURON_MODE": mode, **(extra_env or {})}
    env_path = str(out / "process.json")
    if not with_block:
        env["NEURON_PROFILE"] = env_path
    report = last_json(run_script(script, TRAIN.format(tests=TESTS, steps=STEPS, out=str(out),
                                                       with_block=with_block), env))
    run = {"mode": mode, "script": str(script), "env_path": None if with_block else env_path,
           "dir": str(out)}
    if with_block:
        for name in ("mlp", "gpt"):
            path = os.path.join(out, name + ".json")
            report[name].pop("region")
            run[name] = {"doc": load_json(path), "stats": report[name], "path": path}
        path = os.path.join(out, "copies.json")
        run["copies"] = {"doc": load_json(path), "stats": report["copies"], "path": path}
    else:
        doc = load_json(env_path)
        run["doc"] = doc
        user = sorted((e for e in x_events(doc) if e["cat"] == "sync" and e["args"].get("reason") == "user"),
                      key=lambda e: e["ts"])
        for name in ("mlp", "gpt"):
            first, last = report[name].pop("region")
            begin, stop = user[first - 1]["ts"] + user[first - 1]["dur"], user[last - 1]["ts"] + user[last - 1]["dur"]
            inside = [e for e in x_events(doc) if e["ts"] >= begin and e["ts"] + e["dur"] <= stop + US]
            run[name] = {"doc": {**doc, "traceEvents": inside}, "stats": report[name], "path": env_path}
    return run


def load_json(path):
    with open(path) as f:
        return json.load(f)


def x_events(doc):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def lanes(doc):
    return {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "thread_name"}


def end(e):
    return e["ts"] + e["dur"]


def top_level_executes(events):
    """(top-level execute events, {index of a top-level event: the execute events inside it})
    by containment on each lane, independently of the "kind" argument."""
    execs = sorted((e for e in events if e["cat"] == "execute"), key=lambda e: (e["tid"], e["ts"], -e["dur"]))
    tops, inner = [], collections.defaultdict(list)
    for e in execs:
        if tops and tops[-1]["tid"] == e["tid"] and e["ts"] < end(tops[-1]):
            inner[len(tops) - 1].append(e)
        else:
            tops.append(e)
    return tops, inner


def steps_of(events):
    """Top-level execute events split at the host_read syncs (loss.item(): one per step). In
    eager mode by time; in the grouping modes by the flush that submitted the unit (its "flush"
    argument): a step's flushes are those recorded up to its host read, which may return
    before the step's last units ran (a read waits for what it depends on only)."""
    tops, _ = top_level_executes(events)
    ends = sorted(end(e) for e in events if e["cat"] == "sync" and e["args"]["reason"] == "host_read")
    flushes = [e for e in events if e["cat"] == "record" and e["name"].startswith("flush ")]
    steps, start = [], float("-inf")
    for stop in ends:
        if flushes:
            numbers = {f["args"]["flush"] for f in flushes if start < end(f) <= stop + US}
            steps.append([e for e in tops if e["args"].get("flush") in numbers])
        else:
            steps.append([e for e in tops if start < end(e) <= stop + US])
        start = stop
    return steps


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_SOURCES = {}


def source(path):
    """(lines of the file, {line: qualified name of the innermost def around it}, {qualified
    name of a def: the first lines of the statements in its body})."""
    if path not in _SOURCES:
        with open(path) as f:
            text = f.read()
        defs, bodies = {}, {}

        def visit(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = prefix + child.name
                    if not isinstance(child, ast.ClassDef):
                        for n in range(child.lineno, child.end_lineno + 1):
                            defs[n] = name      # inner defs are visited later: innermost wins
                        bodies[name] = {st.lineno for st in child.body}
                    visit(child, name + ("." if isinstance(child, ast.ClassDef) else ".<locals>."))
                else:
                    visit(child, prefix)

        visit(ast.parse(text), "")
        _SOURCES[path] = (text.splitlines(), defs, bodies)
    return _SOURCES[path]


def check_source_line(text, unknown_ok=False):
    """`text` is "file:line (function)" naming a line of code in an existing file, inside the
    function it names (module level for "<module>"); returns (file, line, function). With
    `unknown_ok`, UNKNOWN passes (returns None)."""
    if unknown_ok and text == UNKNOWN:
        return None
    m = LINE.fullmatch(text)
    assert m, f"not 'file:line (function)': {text!r}"
    path, n, func = m["file"], int(m["line"]), m["func"]
    assert os.path.isfile(path), f"{text}: no such file"
    lines, defs, _ = source(path)
    assert 1 <= n <= len(lines), f"{text}: the file has {len(lines)} lines"
    code = lines[n - 1].strip()
    assert code and not code.startswith("#"), f"{text}: not a line of code: {code!r}"
    func = func.removesuffix(" (backward)")
    if func == "<module>":
        assert n not in defs, f"{text}: line is inside def {defs.get(n)}"
    else:
        assert defs.get(n) == func, f"{text}: line is in def {defs.get(n)}, not {func}"
    return path, n, func


# --------------------------------------------------------------------------------------------
# The three runs (one process each, shared by the tests below)
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def eager_run(tmp_path_factory):
    return train(tmp_path_factory, "eager", with_block=True)


@pytest.fixture(scope="module")
def compile_run(tmp_path_factory):
    # -O0: the format does not depend on the level, and it compiles the gpt ~10x faster.
    return train(tmp_path_factory, "compile", with_block=False, extra_env={"NEURON_OPT_LEVEL": "0"})


@pytest.fixture(scope="module")
def adaptive_run(tmp_path_factory):
    # Tiering (on by default) builds each group fast first, then again at NEURON_OPT_LEVEL; 2 is
    # the cheapest level that still tiers up. Two workers: both compile lanes get used.
    return train(tmp_path_factory, "adaptive", with_block=True,
                 extra_env={"NEURON_OPT_LEVEL": str(ADAPTIVE_LEVEL), "NEURON_COMPILE_WORKERS": "2"})


RUNS = ["eager_run", "compile_run", "adaptive_run"]


def check_format(doc, mode):
    """The document against the trace-event format; returns {tid: lane name}."""
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), type(doc)
    assert doc.get("displayTimeUnit") == "ms"
    assert doc["otherData"]["mode"] == mode
    events = doc["traceEvents"]
    assert events, "an empty profile"
    for e in events:
        assert isinstance(e.get("name"), str) and e["name"], e
        assert e.get("ph") in ("X", "M"), e
        assert isinstance(e.get("pid"), int) and not isinstance(e["pid"], bool), e
        assert isinstance(e.get("tid"), int) and not isinstance(e["tid"], bool), e
        assert isinstance(e.get("args"), dict), e
        if e["ph"] == "X":
            assert is_number(e.get("ts")) and e["ts"] >= 0, e
            assert is_number(e.get("dur")) and e["dur"] >= 0, e
            assert e.get("cat") in ("record", "sync", "compile", "execute", "plan"), e
    assert len({e["pid"] for e in events}) == 1
    meta = [e for e in events if e["ph"] == "M"]
    assert [e["args"]["name"] for e in meta if e["name"] == "process_name"] == \
        [f"torch_trn (NEURON_MODE={mode})"]
    names = collections.Counter(e["tid"] for e in meta if e["name"] == "thread_name")
    assert all(c == 1 for c in names.values()), f"a lane named twice: {names}"
    lane = lanes(doc)
    for tid, name in lane.items():
        assert re.fullmatch(r"python|executor|compile worker \d+|segment builder \d+|autograd \(backward ops\)|thread \d+",
                            name), name
    assert sorted(lane.values()).count("python") == 1 and sorted(lane.values()).count("executor") == 1, lane
    sort_index = {e["tid"]: e["args"]["sort_index"] for e in meta if e["name"] == "thread_sort_index"}
    assert set(sort_index) == set(lane)
    xs = x_events(doc)
    for e in xs:
        assert e["tid"] in lane, f"event on lane {e['tid']} without a thread_name: {e}"
        where = lane[e["tid"]]
        if e["cat"] in ("execute", "plan"):   # plan: a flushed segment cut into units
            assert where == "executor", e
        elif e["cat"] in ("record", "sync"):
            assert RECORDING_LANE.fullmatch(where), (where, e)
        else:  # compile: background workers in adaptive mode, segment builders in compile mode
            assert re.fullmatch(r"compile worker \d+" if mode == "adaptive" else r"segment builder \d+", where), (where, e)
    by_lane = collections.defaultdict(list)
    for e in xs:
        by_lane[e["tid"]].append(e)
    for tid, evs in by_lane.items():
        ts = [e["ts"] for e in evs]
        assert ts == sorted(ts), f"lane {lane[tid]}: timestamps out of order in the file"
        # Nested properly: two events on one lane are disjoint or one contains the other.
        open_ = []
        for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            while open_ and end(open_[-1]) <= e["ts"] + US:
                open_.pop()
            if open_:
                assert end(e) <= end(open_[-1]) + US, \
                    f"lane {lane[tid]}: {e['name']} starts inside {open_[-1]['name']} but ends after it"
            open_.append(e)
    return lane


@pytest.mark.parametrize("run", RUNS)
def test_trace_event_format(run, request):
    r = request.getfixturevalue(run)
    docs = [r["doc"]] if r["env_path"] else [r["mlp"]["doc"], r["gpt"]["doc"]]
    for doc in docs:
        lane = check_format(doc, r["mode"])
        xs = x_events(doc)
        cats = collections.Counter(e["cat"] for e in xs)
        assert cats["record"] and cats["sync"] and cats["execute"], cats
        # Backward ops are recorded on the autograd thread: a lane of its own.
        bwd = {lane[e["tid"]] for e in xs if e["cat"] == "record"
               and any(l.endswith("(backward))") for l in e["args"].get("lines", []))}
        assert bwd and "python" not in bwd, bwd
        for e in xs:
            if e["cat"] == "record":
                if e["name"].startswith("flush "):   # a flush: a segment handed to the executor
                    assert "lines" not in e["args"] and r["mode"] != "eager", e
                else:
                    assert len(e["args"]["lines"]) == 1, e
                    # Only backward ops (the autograd thread's lane) may lack a line.
                    check_source_line(e["args"]["lines"][0], unknown_ok=lane[e["tid"]] != "python")
            elif e["cat"] == "sync":
                assert isinstance(e["args"].get("reason"), str) and e["args"]["reason"], e
                assert e["name"] == f"sync: {e['args']['reason']}", e
            elif e["cat"] == "compile":
                a = e["args"]
                assert re.fullmatch(r"[0-9a-f]+", a["key"]) and a["result"] == "ok", a
                assert a["tier"] in (0, 1) and a["ops"] >= 1 and a["opt_level"] in (0, 1, 2, 3), a
                assert a["codegen_level"] in (0, 1, 2, 3), a
                assert e["name"].startswith(f"compile {a['key']} -O{a['opt_level']:.0f}"), e
                assert is_number(a["ms"]) and 0 < a["ms"] <= e["dur"] / 1000 + 1e-3, (a["ms"], e["dur"])
                assert a["lines"], e
                for l in a["lines"]:
                    check_source_line(l, unknown_ok=True)


@pytest.mark.parametrize("run", RUNS)
def test_execute_events_name_their_source_lines(run, request):
    r = request.getfixturevalue(run)
    for name in ("mlp", "gpt"):
        xs = x_events(r[name]["doc"])
        # The lines an execute event may name: those of the ops recorded in the region.
        recorded = {e["args"]["lines"][0] for e in xs if e["cat"] == "record" and "lines" in e["args"]}
        forward, backward = set(), set()
        for e in (e for e in xs if e["cat"] == "execute"):
            lines = e["args"].get("lines")
            assert isinstance(lines, list) and lines, f"execute event without lines: {e}"
            assert len(set(lines)) == len(lines), f"repeated lines: {lines}"
            assert set(lines) <= recorded, set(lines) - recorded
            for l in lines:
                where = check_source_line(l, unknown_ok=True)
                if where is None:
                    continue
                path, n, func = where
                if path == MODELS_PY:
                    (backward if l.endswith("(backward))") else forward).add((n, func))
                else:   # the optimizer's ops name the training loop's line
                    assert path == r["script"], l
        # The models' ops name the functions of models.py the model runs, forward and backward.
        assert forward and backward, (forward, backward)
        if name == "mlp":
            assert UNKNOWN not in recorded   # no op of the MLP lacks its line
            # Every statement of MLP.forward and MLP.loss runs device ops: each line is there.
            bodies = source(MODELS_PY)[2]
            assert forward == {(n, f) for f in ("MLP.forward", "MLP.loss") for n in bodies[f]}, forward
        assert {f for _, f in forward} == ({"MLP.forward", "MLP.loss"} if name == "mlp" else
                                           {"TinyGPT.forward", "TinyGPT.loss", "Block.forward",
                                            "CausalSelfAttention.forward"}), forward
        assert backward <= forward, backward - forward


@pytest.mark.parametrize("run", RUNS)
def test_events_agree_with_stats(run, request):
    r = request.getfixturevalue(run)
    for name in ("mlp", "gpt"):
        xs, stats = x_events(r[name]["doc"]), r[name]["stats"]
        tops, inner = top_level_executes(xs)
        assert all(is_number(e["args"].get("ops")) and e["args"]["ops"] >= 1 for e in tops), tops[:3]
        ops = lambda kind=None: sum(int(e["args"]["ops"]) for e in tops if kind in (None, e["args"]["kind"]))
        assert ops() == stats["ops_executed"], f"{name}: execute events {ops()} vs stats {stats['ops_executed']}"
        per_op_records = [e for e in xs if e["cat"] == "record" and "lines" in e["args"]]
        assert len(per_op_records) == stats["ops_recorded"]
        assert dict(collections.Counter(e["args"]["reason"] for e in xs if e["cat"] == "sync")) == stats["syncs"]
        compiles = [e for e in xs if e["cat"] == "compile"]
        assert len(compiles) == stats["compiles"] and stats["compile_failures"] == {}
        assert ops("compiled") == stats["ops_run_compiled"]
        assert sum(1 for e in tops if e["args"]["kind"] == "compiled") == stats["groups_run_compiled"]
        assert ops("awaiting_compile") == stats["ops_awaiting_compile"]
        assert ops("instant") == stats["ops_run_instant"]
        # Only top-level events say how their unit ran; an op-by-op unit of n ops holds n events.
        for i, e in enumerate(tops):
            a = e["args"]
            assert a.get("kind") in timeline.KINDS, e
            assert ("key" in a) == e["name"].startswith("group "), e
            nested = inner.get(i, [])
            if a["kind"] == "compiled" or a["ops"] == 1:
                assert not nested, (e, nested[:2])
            elif a["kind"] == "instant":  # an event per chain (its ops in args) and per op run alone
                assert sum(int(n["args"].get("ops", 1)) for n in nested) == a["ops"], (e, nested[:3])
                assert all(n["args"]["lines"] and set(n["args"]["lines"]) <= set(a["lines"]) for n in nested), nested
            else:
                assert len(nested) == a["ops"], (e, len(nested))
                assert all("kind" not in n["args"] and len(n["args"]["lines"]) == 1
                           and n["args"]["lines"][0] in a["lines"] for n in nested), nested
            if a["kind"] == "compiled":
                assert a["tier"] in (0, 1), e


@pytest.mark.xfail(strict=True, reason="known gap in backward attribution (not the profiler): "
                   "the gpt's backward records copy_ (view/transpose backward), add.out (gradient "
                   "accumulation) and masked_fill_ without a source line")
def test_every_backward_op_has_a_source_line(eager_run):
    xs = x_events(eager_run["gpt"]["doc"])
    unknown = collections.Counter(e["name"] for e in xs if e["cat"] == "record" and e["args"].get("lines") == [UNKNOWN])
    assert not unknown, f"recorded without a source line: {dict(unknown)}"


@pytest.mark.xfail(strict=True, reason="a host->device copy into a fresh tensor runs at once on the "
                   "recording thread: counted in stats()['ops_executed'] but absent from the profile")
def test_host_to_device_copies_are_in_the_profile(eager_run):
    xs, stats = x_events(eager_run["copies"]["doc"]), eager_run["copies"]["stats"]
    tops, _ = top_level_executes(xs)
    assert sum(int(e["args"]["ops"]) for e in tops) == stats["ops_executed"]


def test_execute_kinds_eager(eager_run):
    for name in ("mlp", "gpt"):
        xs = x_events(eager_run[name]["doc"])
        execs = [e for e in xs if e["cat"] == "execute"]
        assert {e["args"]["kind"] for e in execs} == {"op"}
        assert all(e["args"]["ops"] == 1 and "key" not in e["args"] for e in execs)
        assert not [e for e in xs if e["cat"] == "compile"]


@pytest.mark.parametrize("run", ["compile_run", "adaptive_run"])
def test_forward_is_flushed_when_the_backward_starts(run, request):
    # The forward's pending ops go to the executor as soon as the autograd thread records the
    # first backward op (so they run while the backward is recorded): every step has a flush on
    # the autograd lane, holding exactly the forward ops recorded since the flush before it
    # (not the backward op that triggered it: the grouper cuts there anyway).
    for name in ("mlp", "gpt"):
        r = request.getfixturevalue(run)
        doc = r[name]["doc"]   # (compile_run: the process's events inside the model's region)
        names, xs = lanes(r.get("doc", doc)), sorted(x_events(doc), key=lambda e: e["ts"])
        flushes = [e for e in xs if e["cat"] == "record" and e["name"].startswith("flush ")]
        records = [e for e in xs if e["cat"] == "record" and not e["name"].startswith("flush ")]
        def lane(e):
            return names[e["tid"]]

        # The flushes the thread change made: on the autograd lane, right after that lane's
        # first record (profiled before the flush it triggers), which follows a Python record.
        at_change = []
        for f in flushes:
            before = [r for r in records if r["ts"] < f["ts"]]
            if (lane(f) == "autograd (backward ops)" and len(before) >= 2 and lane(before[-1]) == lane(f)
                    and lane(before[-2]) == "python"):
                at_change.append(f)
        steps = [e for e in xs if e["cat"] == "sync" and e["args"]["reason"] == "host_read"]
        assert len(at_change) >= len(steps) > 0, (name, len(at_change), len(steps))
        for f in at_change:
            before = max((p for p in flushes if p["ts"] < f["ts"]), key=lambda p: p["ts"], default=None)
            start = before["ts"] if before else float("-inf")
            forward = [r for r in records if start < r["ts"] < f["ts"] and lane(r) == "python"]
            assert forward and int(f["args"]["ops"]) == len(forward), (name, f, len(forward))

def test_execute_kinds_and_compiles_compile_mode(compile_run):
    for name in ("mlp", "gpt"):
        xs = x_events(compile_run[name]["doc"])
        tops, _ = top_level_executes(xs)
        kinds = collections.Counter(e["args"]["kind"] for e in tops)
        assert kinds["compiled"] > 0 and not kinds["awaiting_compile"] and not kinds["compile_failed"], kinds
        compiles = [e for e in xs if e["cat"] == "compile"]
        assert compiles and all(e["args"]["tier"] == 0 and e["args"]["opt_level"] == e["args"]["codegen_level"] == 0
                                for e in compiles), compiles[:2]   # NEURON_OPT_LEVEL=0, no tiers
        # A compile starts once a flush planned its group (at a sync, or once a segment holds
        # enough ops), on the segment builders, and ends before the next full sync does (the
        # executor waits for the code: compile mode runs nothing op by op). A host read that
        # waited for earlier flushes only (Stream::SyncRead) may return before the last flush's
        # groups are built.
        syncs = [e for e in xs if e["cat"] == "sync" and "waited_through_flush" not in e["args"]]
        flushes = [e for e in xs if e["cat"] == "record" and e["name"].startswith("flush ")]
        for c in compiles:
            assert any(f["ts"] <= c["ts"] for f in flushes), c
            next_sync = min((s for s in syncs if end(s) >= c["ts"]), key=end)
            assert end(c) <= end(next_sync) + US, (c, next_sync)
    # The whole process is in one file: every group that ran compiled was compiled in it.
    doc = compile_run["doc"]
    built = {e["args"]["key"] for e in x_events(doc) if e["cat"] == "compile"}
    ran = {e["args"]["key"] for e in x_events(doc) if e["cat"] == "execute" and e["args"].get("kind") == "compiled"}
    assert ran and ran <= built, ran - built


def test_execute_kinds_and_tiers_adaptive(adaptive_run):
    for name in ("mlp", "gpt"):
        xs = x_events(adaptive_run[name]["doc"])
        steps = steps_of(xs)
        assert len(steps) == STEPS and all(steps), [len(s) for s in steps]
        first = collections.Counter(e["args"]["kind"] for e in steps[0])
        # Step 1 runs without code: op by op, or in the instant tier (since the activations'
        # backwards chain too, every group of mlp's step 1 has a chain).
        assert first["awaiting_compile"] + first["instant"] > 0, f"{name}: step 1 ran {first}"
        # wait_for_compiles after step 2: in step 3 every group seen before runs compiled, at
        # the tier-up build. A group first seen in step 3 waits for its compile: the gpt's steps
        # 2 and 3 run the same ops, but some of their group keys differ from run to run (same
        # MLIR, different keys; a runtime issue, not the profiler's).
        seen = {e["args"].get("key") for st in steps[:-1] for e in st}
        last = steps[-1]
        kinds = collections.Counter(e["args"]["kind"] for e in last)
        assert kinds["compiled"] > 0 and not kinds["compile_failed"], kinds
        for e in last:
            if e["args"].get("key") in seen:
                assert e["args"]["kind"] == "compiled" and e["args"]["tier"] == 1, e
            else:
                assert e["args"]["kind"] in ("awaiting_compile", "not_lowered", "op"), e
        compiles = [e for e in xs if e["cat"] == "compile"]
        # Tier 1 builds at NEURON_OPT_LEVEL; tier 0 is one faster build (lower codegen level).
        levels = collections.defaultdict(set)
        for e in compiles:
            levels[e["args"]["tier"]].add((e["args"]["opt_level"], e["args"]["codegen_level"]))
        assert levels[1] == {(ADAPTIVE_LEVEL, ADAPTIVE_LEVEL)}, dict(levels)
        assert len(levels[0]) == 1 and next(iter(levels[0]))[1] < ADAPTIVE_LEVEL, dict(levels)
        workers = {lanes(adaptive_run[name]["doc"])[e["tid"]] for e in compiles}
        assert workers <= {"compile worker 0", "compile worker 1"} and workers, workers
        # Each key is built once per tier, the -O0 build first.
        by_key = collections.defaultdict(list)
        for e in sorted(compiles, key=lambda e: e["ts"]):
            by_key[e["args"]["key"]].append(e["args"]["tier"])
        assert all(t in ([0], [0, 1]) for t in by_key.values()), by_key


# --------------------------------------------------------------------------------------------
# Summary and CLI
# --------------------------------------------------------------------------------------------
def test_summary_adaptive(adaptive_run):
    for name in ("mlp", "gpt"):
        s = timeline.summarize(timeline.load(adaptive_run[name]["path"]))
        stats = adaptive_run[name]["stats"]
        assert s["mode"] == "adaptive"
        assert len(s["steps"]) == STEPS
        # The first step where everything that can compile ran compiled (nothing awaiting its
        # compile), counted here from the events.
        steps = steps_of(x_events(adaptive_run[name]["doc"]))
        kinds = [{e["args"]["kind"] for e in st} for st in steps]
        expect = next((i + 1 for i, k in enumerate(kinds)
                       if "compiled" in k and "awaiting_compile" not in k and "instant" not in k), None)
        assert s["first_all_compiled_step"] == expect
        if name == "mlp":   # its keys repeat: step 3 (after wait_for_compiles) runs all compiled
            assert s["first_all_compiled_step"] is not None and s["first_all_compiled_step"] <= STEPS
        for i, st in enumerate(steps):
            for kind in ("compiled", "awaiting_compile"):
                assert s["steps"][i]["ops"][kind] == sum(int(e["args"]["ops"]) for e in st if e["args"]["kind"] == kind)
        assert s["steps"][0]["ops"]["awaiting_compile"] + s["steps"][0]["ops"]["instant"] > 0
        assert s["ops"]["compiled"] == stats["ops_run_compiled"] > 0
        assert sum(s["ops"].values()) == stats["ops_executed"]
        assert s["compiles"] == stats["compiles"] and s["compiles_by_tier"][1] > 0
        assert 0 < s["compile_ms"] and 0 <= s["compile_overlapped_ms"] <= s["compile_ms"] + 1e-6


def test_summary_compile_mode_hides_no_compile(compile_run):
    # The sync that flushed a segment waits for its builds: none of that time is hidden, even
    # though the builds run on their own threads.
    s = timeline.summarize(timeline.load(compile_run["env_path"]))  # the whole process
    assert s["mode"] == "compile" and s["compiles"] >= sum(compile_run[n]["stats"]["compiles"] for n in ("mlp", "gpt")) > 0
    assert s["compile_ms"] > 0 and s["compile_hidden_ms"] == 0 and s["hidden_share"] == 0, s


def test_summary_eager(eager_run):
    for name in ("mlp", "gpt"):
        s = timeline.summarize(timeline.load(eager_run[name]["path"]))
        assert s["mode"] == "eager" and s["compiles"] == 0 and s["compile_ms"] == 0
        assert s["first_all_compiled_step"] is None
        assert s["ops"]["op"] == sum(s["ops"].values()) == eager_run[name]["stats"]["ops_executed"]
        assert len(s["steps"]) == STEPS


def run_cli(*args, env=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    full_env.update(env or {})
    full_env["PYTHONPATH"] = os.path.join(ROOT, "python")
    return subprocess.run([sys.executable, "-m", "torch_trn.timeline", *args], env=full_env,
                          capture_output=True, text=True, timeout=120)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_cli_summary_and_png(adaptive_run, tmp_path):
    trace, png = adaptive_run["gpt"]["path"], tmp_path / "out.png"
    before = digest(trace)
    # NEURON_PROFILE still exported from profiling the program must not make this process
    # write its own (empty) profile over the trace it reads.
    proc = run_cli(trace, "-o", str(png), env={"NEURON_PROFILE": trace})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert digest(trace) == before, "the timeline CLI overwrote the trace (NEURON_PROFILE)"
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 800 and height >= 200 and len(data) > 10_000, (width, height, len(data))
    compile_ms = sum(e["dur"] for e in x_events(load_json(trace)) if e["cat"] == "compile") / 1000
    m = re.search(r"^compile wall time:\s+([\d.]+) ms", proc.stdout, re.M)
    assert m, proc.stdout
    assert float(m[1]) == pytest.approx(compile_ms, abs=0.06) and compile_ms > 0
    assert re.search(r"^mode:\s+adaptive$", proc.stdout, re.M), proc.stdout
    assert f"wrote {png}" in proc.stdout


@pytest.mark.parametrize("case", ["missing", "malformed"])
def test_cli_rejects_unreadable_trace(case, tmp_path):
    path = tmp_path / "trace.json"
    if case == "malformed":
        path.write_text('{"traceEvents": [{"name": "x", "ph": "X", ')   # cut short
    proc = run_cli(str(path), "-o", str(tmp_path / "out.png"))
    assert proc.returncode != 0
    assert f"cannot read {path}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "out.png").exists()


@pytest.mark.parametrize("content, says", [
    ("[1, 2]", "no traceEvents list"),
    ('{"other": 1}', "no traceEvents list"),
    ('{"traceEvents": [1]}', "malformed trace event #0"),
    ('{"traceEvents": [{"ph": "X", "name": "a", "tid": 1, "ts": 0}]}', "malformed trace event #0"),
    ('{"traceEvents": [{"ph": "X", "name": "a", "tid": 1, "ts": "soon", "dur": 1}]}', "malformed trace event #0"),
])
def test_timeline_main_rejects_wrong_shapes(content, says, tmp_path, capsys):
    path = tmp_path / "trace.json"
    path.write_text(content)
    assert timeline.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert f"cannot read {path}" in err and says in err, err


def test_timeline_main_unwritable_png(eager_run, tmp_path, capsys):
    png = tmp_path / "no_such_dir" / "out.png"
    assert timeline.main([eager_run["mlp"]["path"], "-o", str(png)]) == 2
    assert f"cannot write {png}" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Errors (in this process)
# --------------------------------------------------------------------------------------------
@pytest.fixture
def no_profile():
    if torch_trn._C.profile_active():
        pytest.skip("a profile is active in the test process (NEURON_PROFILE?)")
    yield
    assert not torch_trn._C.profile_active(), "a test left a profile running"


def test_profiles_do_not_nest(no_profile, tmp_path):
    outer, inner = tmp_path / "outer.json", tmp_path / "inner.json"
    x = torch.ones(4).to(torch_trn.device())
    with pytest.raises(RuntimeError, match=r"^a profile is already active \(profiles do not nest\)$"):
        with torch_trn.profile(outer):
            y = x * 2
            with torch_trn.profile(inner):
                y = y + 1
    # The outer profile still stopped and wrote its file; the inner one never started.
    assert not torch_trn._C.profile_active()
    assert not inner.exists()
    assert any(e.get("cat") == "record" for e in load_json(outer)["traceEvents"])
    # The same through the raw API, and stopping with nothing active.
    torch_trn._C.profile_start()
    try:
        with pytest.raises(RuntimeError, match="already active"):
            torch_trn._C.profile_start()
    finally:
        torch_trn._C.profile_stop(str(tmp_path / "raw.json"))
    with pytest.raises(RuntimeError, match=r"^no profile is active$"):
        torch_trn._C.profile_stop(str(tmp_path / "raw2.json"))
    assert not (tmp_path / "raw2.json").exists()


def test_unwritable_profile_path_names_the_path(no_profile, tmp_path):
    bad = tmp_path / "no_such_dir" / "trace.json"
    with pytest.raises(ValueError) as info:
        with torch_trn.profile(bad):
            (torch.ones(4).to(torch_trn.device()) * 3).sum()
    assert str(info.value) == f"cannot write the profile to '{bad}'"
    assert not torch_trn._C.profile_active()   # stopped all the same: a new one can start
    with torch_trn.profile(tmp_path / "ok.json"):
        pass
    assert load_json(tmp_path / "ok.json")["otherData"]["mode"] == torch_trn.mode()


# --------------------------------------------------------------------------------------------
# current_op()
# --------------------------------------------------------------------------------------------
CURRENT_OP = """
import json, threading, time, torch, torch_trn
torch.manual_seed(0)
q = torch.linalg.qr(torch.randn(512, 512))[0].to("neuron")   # orthogonal: x stays finite
x = q.clone()
torch_trn.sync()
seen, stop = [], threading.Event()

def poll():
    while not stop.is_set():
        op = torch_trn.current_op()
        if op is not None:
            seen.append(op)
        time.sleep(0.0005)

poller = threading.Thread(target=poll)
poller.start()
t0 = time.perf_counter()
for _ in range({n}):
    x = x @ q  # MARK-matmul
recorded = time.perf_counter() - t0
torch_trn.sync()
ran = time.perf_counter() - t0
after = torch_trn.current_op()
stop.set()
poller.join()
print(json.dumps({{"seen": seen, "after": after, "recorded_s": recorded, "ran_s": ran,
                  "norm": x.cpu().norm().item()}}))
"""


def test_current_op_from_another_thread(tmp_path):
    script = tmp_path / "matmuls.py"
    n = 600   # 1.5-4 ms each on the CPU backend: about a second of execution after recording
    out = last_json(run_script(script, CURRENT_OP.format(n=n), {"NEURON_MODE": "eager"}))
    mark = line_of(str(script), "MARK-matmul")
    seen = out["seen"]
    print(f"\n{len(seen)} observations; recorded in {out['recorded_s']:.3f} s, ran in {out['ran_s']:.3f} s")
    assert seen, f"current_op() was never non-None over {out['ran_s']:.2f} s of matmuls"
    assert out["after"] is None
    for op in seen:
        assert op["op"].startswith("aten::mm"), op
        assert op["line"] == mark and op["file"] == str(script) and op["function"] == "<module>", op
        assert op["failed"] is False and op["group"] is None and op["compiled"] is False, op
    seqs = [op["seq"] for op in seen]
    assert seqs == sorted(seqs), "the executor ran ops out of order?"
    assert len(set(seqs)) > 1, "a second of execution looked like one op"
    assert out["norm"] == pytest.approx(512 ** 0.5, rel=1e-3)
