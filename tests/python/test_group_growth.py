"""Adaptive mode's group growth (NEURON_ADAPTIVE_GROW, src/scheduler/group_growth.h): small groups
while the background compiler catches up, compile mode's larger groups once it has.

Each test trains a test model in a fresh process, waiting for the background compiles after every
step, and compares with PyTorch CPU. What is asserted:
  - the phases come in order (small, probe, await, grown) and the losses equal CPU's through
    every change;
  - once grown, steps run compiled in fewer, larger groups than before, and find every key
    (no new cache entry, no plan miss): the large groups' keys repeat as the small ones did;
  - a restart on the disk cache goes through the same phases and compiles nothing;
  - NEURON_ADAPTIVE_GROW=0 stays small with the same keys; compile and eager mode report no phase.
"""

import pytest

from helpers import ROOT, assert_losses_match, cpu_losses, last_json, run_python

TRAIN = """
import json, sys, torch, torch_trn
sys.path.insert(0, {tests!r})
from models import make_model, make_batches
name, steps = {name!r}, {steps}
model = make_model(name).to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
rows = []
prev = None
for i, (x, y) in enumerate(make_batches(name, steps)):
    loss = model.loss(x.to("neuron"), y.to("neuron"))
    loss.backward(); opt.step(); opt.zero_grad()
    v = loss.item()
    torch_trn.wait_for_compiles()
    s = torch_trn.stats()
    cur = {{k: s[k] for k in ("groups_run_compiled", "ops_run_compiled", "ops_executed", "plan_cache_misses",
                             "compiles")}}
    step = {{k: cur[k] - (prev or {{}}).get(k, 0) for k in cur}}
    prev = cur
    rows.append(dict(step, loss=v, phase=s["group_growth"], entries=s["compile_cache_entries"]))
print(json.dumps({{"rows": rows}}))
"""

GPT_STEPS = 14


def train(name, steps, env):
    out = last_json(run_python(TRAIN.format(tests=f"{ROOT}/tests/python", name=name, steps=steps), env=env))
    return out["rows"]


def assert_rows_match_cpu(rows, want):
    assert_losses_match("gpt", [r["loss"] for r in rows], want, labels=[r["phase"] for r in rows])


# Small groups of at most 16 ops, so that growing to 256 is plain in the group counts.
SMALL = {"NEURON_MODE": "adaptive", "NEURON_ADAPTIVE_GROUP_OPS": "16", "NEURON_CACHE_DIR": "off"}


def test_groups_grow_once_compiled_and_keep_their_keys():
    rows = train("gpt", GPT_STEPS, SMALL)
    assert_rows_match_cpu(rows, cpu_losses("gpt", GPT_STEPS))
    phases = [r["phase"] for r in rows]
    order = ["small", "probe", "await", "grown"]
    assert phases[0] == "small" and phases[-1] == "grown", phases
    assert all(order.index(a) <= order.index(b) for a, b in zip(phases, phases[1:])), phases
    assert set(phases) == set(order), f"a phase was skipped: {phases}"
    grown = phases.index("grown")
    assert grown <= GPT_STEPS - 3, f"grown too late to check the steps after it: {phases}"
    # A row's phase is the one its step's sync point left: the ops of the row marked "probe"
    # ran in small groups (all compiled: that is why the probe began), the probe's own ops are
    # the next row's. The first grown row may still hold small groups flushed before its sync.
    small = rows[phases.index("probe")]
    assert small["plan_cache_misses"] == 0 and small["ops_run_compiled"] >= 0.95 * small["ops_executed"], small
    after = rows[grown + 1:]
    for r in after:
        assert r["ops_run_compiled"] >= 0.95 * r["ops_executed"], f"grown steps run compiled: {r}"
        # (the grouper also cuts where the recording thread changes and around ops without a
        # lowering: 59 groups of at most 16 ops became 33)
        assert r["groups_run_compiled"] < 0.75 * small["groups_run_compiled"], \
            f"grown groups should be fewer and larger: {small} -> {r}"
        assert r["plan_cache_misses"] == 0, f"a grown step planned a new group: {r}"
    entries = [r["entries"] for r in after]
    assert entries == [entries[0]] * len(entries), f"grown steps created keys: {entries}"


def test_a_restart_on_the_disk_cache_grows_without_compiling(tmp_path):
    # The first process writes the small groups' builds and plans, then the probe's large ones;
    # a restart starts small again and finds both on disk (its probe runs compiled).
    env = {**SMALL, "NEURON_CACHE_DIR": str(tmp_path)}
    first = train("gpt", 12, env)
    assert first[-1]["phase"] == "grown", [r["phase"] for r in first]
    again = train("gpt", 12, env)
    assert again[-1]["phase"] == "grown", [r["phase"] for r in again]
    assert sum(r["compiles"] for r in again) == 0, [r["compiles"] for r in again]
    assert_rows_match_cpu(again, cpu_losses("gpt", 12))
    probe_ops = again[[r["phase"] for r in again].index("await")]
    assert probe_ops["ops_run_compiled"] >= 0.95 * probe_ops["ops_executed"], f"the probe found its code: {probe_ops}"


def test_growth_off_stays_small():
    rows = train("gpt", 8, {**SMALL, "NEURON_ADAPTIVE_GROW": "0"})
    assert_rows_match_cpu(rows, cpu_losses("gpt", 8))
    assert {r["phase"] for r in rows} == {"small"}
    assert all(r["plan_cache_misses"] == 0 for r in rows[2:]), rows
    entries = [r["entries"] for r in rows[2:]]
    assert entries == [entries[0]] * len(entries), entries
    assert all(r["ops_run_compiled"] / r["groups_run_compiled"] <= 16 for r in rows[2:]), rows


@pytest.mark.parametrize("mode", ["compile", "eager"])
def test_other_modes_have_no_growth(mode):
    rows = train("mlp", 3, {"NEURON_MODE": mode, "NEURON_CACHE_DIR": "off"})
    assert {r["phase"] for r in rows} == {""}
