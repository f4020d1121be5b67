"""Cached groups cost almost nothing to run again (issue 30): the flush plans, the IR is emitted
only for a build that compiles, and a warm loop finds every group in the plan cache.

What is asserted, each program in a fresh process (the mode is read once at import):
  - once a training loop is warm, further steps plan nothing (no plan cache miss), emit no IR
    (`lowerings_emitted` flat), compile nothing, and the losses still equal CPU's;
  - a process that finds every group on the disk cache emits no IR at all;
  - a value the plan depends on (a pow exponent: compile-time constant) changes between steps:
    results stay right and a new plan (and key) is made for the new value only;
  - a buffer that is a temporary one step and kept alive by the user the next: both steps right.
"""
import json

import pytest
import torch

from helpers import ROOT, assert_losses_match, cpu_losses, last_json, run_python

WARM_LOOP_STEPS = 12
WARM_LOOP = """
STEPS = {steps}
import json, sys, torch, torch_trn
sys.path.insert(0, {tests!r})
from models import make_model, make_batches
name, mode = {name!r}, {mode!r}
model = make_model(name).to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
losses, marks = [], []
grown_steps = 0
for i, (x, y) in enumerate(make_batches(name, STEPS)):
    loss = model.loss(x.to("neuron"), y.to("neuron"))
    loss.backward(); opt.step(); opt.zero_grad()
    losses.append(loss.item())
    # Warm: compile mode after step 3; adaptive mode once its groups have grown (group_growth.h)
    # and run grown for two steps, waiting for its compiles until then.
    if mode == "adaptive" and not marks:
        torch_trn.wait_for_compiles()
        grown_steps += torch_trn.stats()["group_growth"] == "grown"
    if not marks and i >= 2 and (mode != "adaptive" or grown_steps >= 2):
        s = torch_trn.stats()
        marks.append({{k: s[k] for k in ("lowerings_emitted", "compiles", "plan_cache_misses", "plan_cache_hits")}})
        marks[-1]["at"] = i
s = torch_trn.stats()
marks.append({{k: s[k] for k in ("lowerings_emitted", "compiles", "plan_cache_misses", "plan_cache_hits")}})
print(json.dumps({{"losses": losses, "marks": marks, "failures": s["compile_failures"],
                  "compiled": s["ops_run_compiled"]}}))
"""


@pytest.mark.parametrize("mode", ["compile", "adaptive"])
@pytest.mark.parametrize("name", ["mlp", "gpt"])
def test_warm_loop_plans_and_emits_nothing(name, mode, tmp_path):
    out = last_json(run_python(WARM_LOOP.format(tests=f"{ROOT}/tests/python", name=name, mode=mode, steps=WARM_LOOP_STEPS),
                               env={"NEURON_MODE": mode, "NEURON_CACHE_DIR": str(tmp_path)}))
    assert len(out["marks"]) == 2, f"{mode} never got warm in {WARM_LOOP_STEPS} steps: {out['marks']}"
    warm, end = out["marks"]
    assert warm["at"] <= WARM_LOOP_STEPS - 3, f"{mode} got warm too late to check steps after it: {warm}"
    assert out["failures"] == {}, out["failures"]
    assert out["compiled"] > 0
    assert warm["lowerings_emitted"] > 0, warm
    assert end["lowerings_emitted"] == warm["lowerings_emitted"], f"IR emitted in a warm loop: {out['marks']}"
    assert end["compiles"] == warm["compiles"], out["marks"]
    assert end["plan_cache_misses"] == warm["plan_cache_misses"], f"a warm step planned a group: {out['marks']}"
    assert end["plan_cache_hits"] > warm["plan_cache_hits"]
    assert_losses_match(f"{name} {mode}", out["losses"], cpu_losses(name, WARM_LOOP_STEPS))


def test_groups_found_on_disk_emit_no_ir(tmp_path):
    env = {"NEURON_MODE": "compile", "NEURON_CACHE_DIR": str(tmp_path)}
    code = WARM_LOOP.format(tests=f"{ROOT}/tests/python", name="mlp", mode="compile", steps=7)
    first = last_json(run_python(code, env=env))
    again = last_json(run_python(code, env=env))
    assert first["marks"][-1]["lowerings_emitted"] > 0
    assert again["marks"][-1]["compiles"] == 0, again["marks"]
    assert again["marks"][-1]["lowerings_emitted"] == 0, f"IR emitted for groups found on disk: {again['marks']}"
    assert again["losses"] == first["losses"]


def test_a_constant_the_plan_depends_on_changes_between_steps():
    out = last_json(run_python("""
        import json, torch, torch_trn
        x = torch.linspace(0.5, 2.0, 64).to("neuron")
        vals = []
        for p in [2.0, 3.0, 2.0, 0.5, 2.0, 3.0]:
            vals.append(((x * 1.5) ** p + 1).cpu().tolist())
        s = torch_trn.stats()
        print(json.dumps({"vals": vals, "compiles": s["compiles"], "misses": s["plan_cache_misses"],
                          "hits": s["plan_cache_hits"]}))
    """, env={"NEURON_MODE": "compile", "NEURON_CACHE_DIR": "off"}))
    x = torch.linspace(0.5, 2.0, 64)
    for got, p in zip(out["vals"], [2.0, 3.0, 2.0, 0.5, 2.0, 3.0]):
        torch.testing.assert_close(torch.tensor(got), (x * 1.5) ** p + 1, rtol=1e-6, atol=1e-6)
    assert out["compiles"] == 3, out   # one per exponent: the exponent is in the key
    assert out["misses"] == 3 and out["hits"] == 3, out


def test_liveness_that_changes_between_steps():
    out = last_json(run_python("""
        import json, torch, torch_trn
        x = torch.linspace(-1, 1, 32).to("neuron")
        got = []
        for i in range(6):
            h = x * (i + 1)
            y = (h + 1).relu()
            keep = h if i % 2 else None     # h is an output on odd steps, a temporary on even ones
            del h
            got.append([y.cpu().tolist(), None if keep is None else keep.cpu().tolist()])
        print(json.dumps({"got": got, "failures": torch_trn.stats()["compile_failures"]}))
    """, env={"NEURON_MODE": "compile", "NEURON_CACHE_DIR": "off"}))
    x = torch.linspace(-1, 1, 32)
    assert out["failures"] == {}
    for i, (y, keep) in enumerate(out["got"]):
        h = x * (i + 1)
        torch.testing.assert_close(torch.tensor(y), (h + 1).relu())
        if i % 2:
            torch.testing.assert_close(torch.tensor(keep), h)
        else:
            assert keep is None
