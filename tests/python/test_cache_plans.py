"""The plan cache's disk tier (issue 31 item 4, warm restart): a process restarted on a warm disk
cache plans no group from scratch and emits no IR, and a damaged plan entry is a miss.

Each program runs in a fresh process (the knobs are read at import) with its own
NEURON_CACHE_DIR under pytest's tmp_path; it trains models.py's "mlp" on the device and, with
the same weights and batches, on the CPU (the reference). What is asserted:
  - a cold run writes plan entries (`<h>.plan`, verified by `cache verify`); a restart on that
    directory, in compile and adaptive mode, has no plan-cache miss at all (every unit of its
    first step and of every later one comes from the stored plans), emits no IR, compiles
    nothing, and its losses equal CPU's;
  - the entries' names do not depend on source lines: the same training issued from other
    lines writes the same plan entries;
  - a damaged plan entry (a flipped payload byte, a truncated file) is rejected with its reason,
    counted, deleted and rewritten; that run plans its groups again (misses) and its losses still
    equal CPU's; the run after it has no miss again;
  - NEURON_CACHE_PLANS=0 writes no plan entry.
"""
import json
import math
import os

import pytest

from helpers import ROOT, flip_entry_payload_byte, last_json, run_python, truncate_entry

TESTS = os.path.join(ROOT, "tests", "python")
MODEL, STEPS = "mlp", 4
COMPILE = {"NEURON_MODE": "compile", "NEURON_OPT_LEVEL": "1"}
# Group growth off: when a process grows its groups depends on its compiler's progress, so a
# restart could grow where the first run did not (test_group_growth.py restarts a grown loop).
ADAPTIVE = {"NEURON_MODE": "adaptive", "NEURON_OPT_LEVEL": "1", "NEURON_ADAPTIVE_GROW": "0"}

# `pad` blank lines move every line of the training loop (the entries must not change).
TRAIN = """
import json, os, sys, torch, torch_trn
sys.path.insert(0, {tests!r})
from models import make_model, make_batches, clone_to
{pad}
cpu = make_model({model!r})
dev = clone_to({model!r}, cpu, "neuron")
opts = [torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.01) for m in (cpu, dev)]
losses, ref, first = [], [], None
for x, y in make_batches({model!r}, {steps}):
    for m, opt, out, d in ((dev, opts[1], losses, "neuron"), (cpu, opts[0], ref, "cpu")):
        loss = m.loss(x.to(d), y.to(d))
        loss.backward(); opt.step(); opt.zero_grad()
        out.append(loss.item())
    if first is None:
        first = {{k: torch_trn.stats()[k] for k in ("plan_cache_misses", "plan_cache_hits", "lowerings_emitted")}}
if torch_trn.mode() == "adaptive":
    torch_trn.wait_for_compiles()
torch_trn.sync()
s = torch_trn.stats()
print(json.dumps({{"losses": losses, "ref": ref, "first": first, "cache": torch_trn.cache_stats(),
                  "stats": {{k: s[k] for k in ("plan_cache_misses", "plan_cache_hits", "lowerings_emitted", "compiles")}}}}))
"""


def train(cache_dir, mode_env, pad=0, env=None):
    program = TRAIN.format(tests=TESTS, model=MODEL, steps=STEPS, pad="\n" * pad)
    knobs = {**mode_env, "NEURON_CACHE_DIR": str(cache_dir), **(env or {})}
    out = last_json(run_python(program, env=knobs, drop=[k for k in os.environ if k.startswith("NEURON_")]))
    for a, b in zip(out["losses"], out["ref"]):
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6), (out["losses"], out["ref"])
    return out


def plan_files(d):
    return sorted(os.path.join(r, n) for r, _, files in os.walk(d) for n in files if n.endswith(".plan"))


@pytest.mark.parametrize("mode", ["compile", "adaptive"])
def test_restart_plans_nothing_from_scratch(mode, tmp_path):
    env = COMPILE if mode == "compile" else ADAPTIVE
    d = tmp_path / "cache"
    cold = train(d, env)
    assert cold["stats"]["plan_cache_misses"] > 0 and cold["cache"]["plans"]["writes"] > 0, cold
    files = plan_files(d)
    assert len(files) >= cold["cache"]["plans"]["writes"], files  # (and the import's flushes)
    from torch_trn import cache_cli
    assert cache_cli.main(["verify", "--dir", str(d)]) == 0

    warm = train(d, env)
    s, c = warm["stats"], warm["cache"]
    assert warm["first"]["plan_cache_misses"] == 0 and warm["first"]["plan_cache_hits"] > 0, warm["first"]
    assert s["plan_cache_misses"] == 0, s
    assert s["lowerings_emitted"] == 0 and s["compiles"] == 0, s
    assert c["plans"]["hits"] > 0 and c["plans"]["writes"] == 0 and c["plans"]["rejected"] == {}, c["plans"]
    assert c["disk"]["hits"] > 0 and c["disk"]["rejected"] == {}, c["disk"]
    assert plan_files(d) == files


def test_plan_entries_do_not_depend_on_lines(tmp_path):
    a = train(tmp_path / "a", COMPILE)
    b = train(tmp_path / "b", COMPILE, pad=7)
    names = [sorted(os.path.basename(p) for p in plan_files(tmp_path / d)) for d in ("a", "b")]
    assert names[0] and names[0] == names[1]
    assert a["losses"] == b["losses"]


@pytest.mark.parametrize("reason,damage", [("hash_mismatch", flip_entry_payload_byte), ("truncated", truncate_entry)])
def test_damaged_plan_entry_is_a_miss(reason, damage, tmp_path):
    d = tmp_path / "cache"
    train(d, COMPILE)
    files = plan_files(d)
    for p in files:
        damage(p)
    out = train(d, COMPILE)
    s, c = out["stats"], out["cache"]
    # (The import's own flush loads, rejects and rewrites its entry before the counters are reset.)
    rejected = c["plans"]["rejected"]
    assert list(rejected) == [reason] and 1 <= rejected[reason] <= len(files), c["plans"]
    assert c["plans"]["hits"] == 0 and s["plan_cache_misses"] > 0, (s, c["plans"])
    assert s["compiles"] == 0 and c["disk"]["rejected"] == {}, (s, c["disk"])
    assert c["plans"]["writes"] == rejected[reason], c["plans"]
    assert plan_files(d) == files, "each damaged entry is replaced under its own name"
    again = train(d, COMPILE)
    assert again["stats"]["plan_cache_misses"] == 0 and again["cache"]["plans"]["rejected"] == {}, again["stats"]
    assert out["losses"] == again["losses"]


def test_plans_knob_off_writes_no_plan(tmp_path):
    d = tmp_path / "cache"
    out = train(d, COMPILE, env={"NEURON_CACHE_PLANS": "0"})
    assert plan_files(d) == [] and out["cache"]["plans"]["writes"] == 0
    assert out["cache"]["disk"]["writes"] > 0
