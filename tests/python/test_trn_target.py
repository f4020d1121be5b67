"""NEURON_TARGET=trn2: groups run as NeuronCore instruction streams on the NeuronCore model.

Each test runs a fresh process (the target is read at import):
- 3 training steps of the MLP and the small transformer in eager, compile and adaptive mode:
  losses equal CPU's to 1e-4 relative, and the matrix products and elementwise work ran on the
  modeled core (device groups, TensorE FLOPs, modeled time > 0);
- an op the trn pipeline cannot lower (torch.atan) runs as host code, named, with its
  transfers charged, and its result is right;
- refused is told from failed: a trn pipeline failure that is not a refusal (injected:
  NEURON_TEST_COMPILE_FAULT=trn_internal) fails the build and is counted
  (stats()["device"]["trn_internal_failures"]), never run as host code as if refused; every
  other trn test expects none;
- the profiler's NeuronCore engine lanes: modeled, per engine, tagged with the model's lines;
- the OpInfo registry under trn2 (eager: one op per group): no unexpected failure, and at
  least 60 ATen ops ran on the modeled core (tests/opinfo/run_opinfo.py reports which).
"""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import ROOT, cpu_losses, last_json, line_of, run_python  # noqa: E402

TRN = {"NEURON_TARGET": "trn2"}
STEPS = 3

TRAIN = """
import json, sys, torch, torch_trn
sys.path.insert(0, {tests!r})
from models import make_model, make_batches
name = {name!r}
model = make_model(name).to("neuron")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
losses = []
for x, y in make_batches(name, {steps}):
    loss = model.loss(x.to("neuron"), y.to("neuron"))
    loss.backward(); opt.step(); opt.zero_grad()
    losses.append(loss.item())
torch_trn.wait_for_compiles()
s = torch_trn.stats()
print(json.dumps({{"losses": losses, "device": s["device"], "target": s["target"]}}))
"""


@pytest.mark.parametrize("mode", ["eager", "compile", "adaptive"])
@pytest.mark.parametrize("name", ["mlp", "gpt"])
def test_training_steps_on_trn2(name, mode):
    proc = run_python(TRAIN.format(tests=os.path.join(ROOT, "tests", "python"), name=name, steps=STEPS),
                      env={**TRN, "NEURON_MODE": mode})
    out = last_json(proc)
    want = cpu_losses(name, STEPS)
    assert out["target"] == "trn2"
    for step, (got, ref) in enumerate(zip(out["losses"], want)):
        assert abs(got - ref) <= 1e-4 * abs(ref), f"step {step}: {got} vs CPU {ref} ({mode})"
    dev = out["device"]
    assert dev["modeled_ns"] > 0
    assert dev["trn_internal_failures"] == 0, out
    if mode == "adaptive":
        # Groups run op by op until their background build is ready; with 3 steps some did.
        assert dev["ops_on_device"] + dev["ops_on_host"] > 0
        return
    assert dev["groups_on_device"] > 0 and dev["ops_on_device"] > 0, dev
    assert dev["matmul_flops"] > 0, "no matrix product ran on TensorE"
    assert dev["engine_busy_ns"]["tensor"] > 0 and dev["engine_busy_ns"]["dma"] > 0
    ran = {name.split(".")[0] for name in dev["ops_by_name"]}  # "aten::addmm.out" -> "aten::addmm"
    for op in ("aten::addmm", "aten::mm"):
        assert op in ran, f"{op} did not run on the modeled core: {sorted(dev['ops_by_name'])}"


def test_unlowerable_op_runs_on_host_and_is_named():
    proc = run_python("""
        import json, torch, torch_trn
        x = torch.linspace(-3, 3, 1000)
        y = (torch.atan(x.to("neuron")) * 2).cpu()
        s = torch_trn.stats()["device"]
        print(json.dumps({"err": (y - torch.atan(x) * 2).abs().max().item(), "dev": s}))
    """, env={**TRN, "NEURON_MODE": "compile"})
    out = last_json(proc)
    assert out["err"] < 1e-6
    dev = out["dev"]
    assert dev["groups_on_host"] >= 1 and dev["host_transfer_bytes"] >= 2 * 1000 * 4
    assert dev["host_group_reasons"].get("'math.atan' op has no trn lowering", 0) >= 1, dev["host_group_reasons"]
    assert dev["trn_internal_failures"] == 0


def test_internal_trn_failure_is_a_failure_not_a_refusal():
    # A trn pass that fails without refusing an op (injected at the end of the trn pipeline) is
    # an internal error: the build fails (the group runs op by op, values still right), counted
    # and named as a compile failure, and never counted as a refusal run as host code.
    proc = run_python("""
        import json, torch, torch_trn
        x = torch.linspace(-3, 3, 1000)
        y = (torch.exp(x.to("neuron")) * 2).cpu()
        s = torch_trn.stats()
        print(json.dumps({"err": (y - torch.exp(x) * 2).abs().max().item(), "dev": s["device"],
                          "failures": s["compile_failures"]}))
    """, env={**TRN, "NEURON_MODE": "compile", "NEURON_TEST_COMPILE_FAULT": "trn_internal"})
    out = last_json(proc)
    assert out["err"] < 1e-5
    dev = out["dev"]
    assert dev["trn_internal_failures"] >= 1, dev
    assert dev["host_group_reasons"] == {}, dev["host_group_reasons"]
    assert dev["groups_on_device"] == 0 and dev["groups_on_host"] == 0, dev
    assert any("without refusing" in r and "injected internal failure" in r for r in out["failures"]), out["failures"]


def test_bad_target_is_an_import_error():
    proc = run_python("import torch_trn", env={"NEURON_TARGET": "trn1"})
    assert proc.returncode != 0
    assert "NEURON_TARGET" in proc.stderr and "trn1" in proc.stderr and "trn2" in proc.stderr


def test_profile_has_modeled_engine_lanes(tmp_path):
    trace = tmp_path / "trace.json"
    script = tmp_path / "model.py"
    script.write_text(
        "import torch, torch_trn\n"
        "x = torch.randn(256, 256).to('neuron')\n"
        "w = torch.randn(256, 384).to('neuron')\n"
        f"with torch_trn.profile({str(trace)!r}):\n"
        "    y = torch.relu(x @ w)  # MARK-MATMUL\n"
        "    y.cpu()\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **TRN, "NEURON_MODE": "compile",
                               "PYTHONPATH": os.path.join(ROOT, "python")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = json.loads(trace.read_text())["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    engine_lanes = {tid: name for tid, name in lanes.items() if "(modeled)" in name}
    assert any(n.endswith(": tensor") for n in engine_lanes.values()), lanes
    assert any(n.endswith(": dma") for n in engine_lanes.values()), lanes
    on_tensor = [e for e in events if e.get("ph") == "X" and lanes.get(e["tid"], "").endswith("(modeled): tensor")]
    assert on_tensor, "no instruction on the TensorE lane"
    mm = [e for e in on_tensor if e["name"].startswith("aten::mm")]
    assert mm, [e["name"] for e in on_tensor]
    line = line_of(str(script), "MARK-MATMUL")
    assert any(f"model.py:{line}" in json.dumps(e.get("args", {})) for e in mm), mm[0]
    assert all(e["args"].get("time") == "modeled" for e in on_tensor)
    # The timeline tool sums the modeled engine lanes (in a fresh process: importing torch_trn
    # here, after other tests ran CPU backward passes, is refused).
    out = last_json(run_python(f"""
        import json
        from torch_trn import timeline
        s = timeline.summarize(timeline.load({str(trace)!r}))
        print(json.dumps({{"busy": s["device_busy_us"], "text": timeline.format_summary(s)}}))
    """))
    busy = {lane.rsplit(": ", 1)[-1]: us for lane, us in out["busy"].items()}
    assert busy.get("tensor", 0) > 0 and busy.get("dma", 0) > 0, out["busy"]
    assert "NeuronCore busy (modeled)" in out["text"]


def test_opinfo_registry_on_trn2(tmp_path):
    summary = tmp_path / "summary.json"
    cmd = [sys.executable, os.path.join(ROOT, "tests", "opinfo", "run_opinfo.py"), "--jobs", "2", "--mode", "eager",
           "--summary", str(summary), "--allow-xpass",
           "--expected", os.path.join(ROOT, "tests", "opinfo_expected_failures.txt"),
           "--expected", os.path.join(ROOT, "tests", "opinfo_expected_failures_trn.txt")]
    env = {**os.environ, **TRN, "PYTHONPATH": os.path.join(ROOT, "python")}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    print(proc.stdout[-6000:])
    assert summary.exists(), proc.stderr[-4000:]
    s = json.loads(summary.read_text())
    assert not s["unexpected_failures"], "\n".join(f"{u['id']}: {u['error']}" for u in s["unexpected_failures"][:40])
    assert not s["unexpected_passes"], s["unexpected_passes"]
    lowered = s["device_aten_ops"]
    assert len(lowered) >= 60, f"only {len(lowered)} ATen ops ran on the NeuronCore model: {sorted(lowered)}"
