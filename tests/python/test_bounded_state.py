"""Long runs keep flat memory (issue 34; docs/memory.md, "Bounded state").

- Source capture keeps a reference to every Python code object it saw (so their addresses are not
  reused while they key its memo): bounded, a program that exec()s new code in a loop gets its
  code objects freed (weakrefs die) and the release is counted.
- A training loop of 1000 steps from step 200 on (--full: compile and adaptive mode; by default
  compile mode, 300 steps from step 100 on, ~20-30 s on a busy 2-core machine): the process RSS
  grows by less than a bound, device memory (torch_trn.memory_stats) at a sync
  point is exactly the same, the executor's queue depth (ops submitted, not yet run) seen before
  each sync never exceeds that step's own ops (nothing of an earlier step still waits; how much
  of the step already ran depends on timing), and the compile caches, the compile history and the source table stay
  the same size. Growth bounds, not timings.
"""
from helpers import last_json, run_python

MB = 1 << 20


def test_code_objects_are_released_beyond_the_limit():
    proc = run_python("""
        import gc, json, weakref, torch, torch_trn
        torch_trn._C._set_code_object_limit(64)
        x = torch.ones(4, device="neuron")
        refs = []
        for i in range(300):
            # a new code object each time (as exec/eval in a loop, or generated code, make)
            fn = eval(compile(f"lambda t: t + {i}", f"<generated {i}>", "eval"))
            y = fn(x)                      # records an op: its source is captured
            refs.append(weakref.ref(fn.__code__))
            del fn
        float(y.sum())
        gc.collect()
        bounded = torch_trn.cache_stats()["bounded"]
        alive = sum(r() is not None for r in refs)
        print(json.dumps(dict(bounded=bounded, alive=alive, value=float(y[0]))))
    """, env={"NEURON_MODE": "eager"})
    r = last_json(proc)
    assert r["value"] == 1.0 + 299
    assert r["bounded"]["code_objects_kept"] <= 64
    # every code object beyond the limit was let go (the first ones are collected)
    assert r["bounded"]["code_objects_released"] >= 300 - 64
    assert r["alive"] <= 64, r


LOOP = """
import json, os, torch, torch_trn
import torch.nn as nn

STEPS = int(os.environ["LOOP_STEPS"])
WARM = int(os.environ["LOOP_WARM"])
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.LayerNorm(64), nn.Linear(64, 8)).to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randn(16, 32, device="neuron")
target = torch.randint(0, 8, (16,), device="neuron")


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024


def snapshot():
    torch_trn._C.wait_for_compiles()
    m = torch_trn.memory_stats()
    c = torch_trn.cache_stats()
    return dict(rss=rss(), allocated=m["allocated_bytes"], cached=m["cached_bytes"],
                code_entries=c["memory"]["entries"], compiled_keys=len(torch_trn._C.compiled_keys()),
                compiles=c["compiles"])


depths, step_ops = [], []
marks = {}
for step in range(1, STEPS + 1):
    recorded = torch_trn.stats()["ops_recorded"]
    # a different mix of shapes would be a different program: the same step, over and over
    loss = nn.functional.cross_entropy(model(data), target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    depths.append(torch_trn._C.pending())  # queued, not yet run (before the sync)
    step_ops.append(torch_trn.stats()["ops_recorded"] - recorded)
    value = loss.item()
    if step >= WARM // 2 and torch_trn.stats()["group_growth"] not in ("", "grown"):
        # adaptive mode: the warm-up includes its groups' growth (group_growth.h), whose phases
        # advance at sync points once the compiles are done
        torch_trn.wait_for_compiles()
    if step in (WARM, STEPS):
        marks[step] = snapshot()
print(json.dumps(dict(marks=marks, depths=depths, step_ops=step_ops, loss=value)))
"""


def test_a_long_training_loop_keeps_memory_and_queues_flat(request):
    full = request.config.getoption("--full", default=False)
    warm, steps = (200, 1000) if full else (100, 300)
    for mode in ["compile", "adaptive"] if full else ["compile"]:
        check_loop(mode, warm, steps)


def check_loop(mode, warm, steps):
    proc = run_python(LOOP, env={"NEURON_MODE": mode, "LOOP_STEPS": str(steps), "LOOP_WARM": str(warm)})
    r = last_json(proc)
    early, late = r["marks"][str(warm)], r["marks"][str(steps)]
    assert late["allocated"] == early["allocated"], (mode, r["marks"])
    assert late["cached"] <= early["cached"], (mode, r["marks"])
    # compiled state: nothing new after warm-up (the step is the same program every time)
    assert late["code_entries"] == early["code_entries"], (mode, r["marks"])
    assert late["compiled_keys"] == early["compiled_keys"], (mode, r["marks"])
    assert late["compiles"] == early["compiles"], (mode, r["marks"])
    # host memory: allocator noise only (a leak of one 16x64 float tensor per step would be
    # 4 KiB x 800 = 3.2 MiB; of one small record or string per op, more). Measured: +0 and
    # +4 KiB over steps 200-400 in compile and adaptive mode.
    assert late["rss"] - early["rss"] < 3 * MB, (mode, (late["rss"] - early["rss"]) / MB)
    # queue depth before each sync: at most the step's own ops (each sync drains the queue, so
    # nothing of an earlier step may still wait). How many of them the executor has already run
    # depends on timing, so that is all a test can ask.
    for i, (depth, ops) in enumerate(zip(r["depths"], r["step_ops"])):
        assert 0 <= depth <= ops, (mode, i + 1, depth, ops)
