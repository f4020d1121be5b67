"""python3 -m torch_trn audit (python/torch_trn/audit.py): the graph checked before the full run.

What is proven (each audit runs the script in a fresh process):
  - the script is stopped cleanly after --steps optimizer steps (it asked for 10);
  - a host fallback is reported with its reason and the script's line, an op without a lowering
    with its count, and a batch size that changes between steps as a recompile hazard naming
    the op, its line and the sizes;
  - --strict exits 1 for that script and 0 for a clean one, whenever the garbage collector runs
    after the stop; --json writes the report;
  - a script without an optimizer is stopped at --time-limit and still reported;
  - on --target trn2 the modeled NeuronCore time and the share of ops on the modeled core.
"""
import json
import os
import subprocess
import sys

from helpers import ROOT, line_of

SCRIPT = """
import sys, torch, torch_trn
dev = torch_trn.device()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    n = 8 if step < 2 or not {hazards} else 9     # MARK-BATCH
    x = torch.randn(n, 16).to(dev)
    loss = model(x).pow(2).mean()
    if {hazards}:
        nz = torch.nonzero(x > 2.5)               # MARK-FALLBACK
        c = torch.cumprod(x, 0).sum()             # MARK-UNLOWERED
    loss.backward(); opt.step(); opt.zero_grad()
    print("done step", step, loss.item(), flush=True)
"""


def audit(tmp_path, text, *flags):
    script = tmp_path / "train.py"
    script.write_text(text)
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    proc = subprocess.run([sys.executable, "-m", "torch_trn", "audit", "--json", str(out), *flags, str(script)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert out.exists(), f"no report (exit {proc.returncode})\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc, json.loads(out.read_text()), str(script)


def test_fallbacks_missing_lowerings_and_recompiles_are_reported_with_lines(tmp_path):
    proc, r, script = audit(tmp_path, SCRIPT.format(hazards=True), "--steps", "3", "--strict")
    assert proc.returncode == 1, proc.stdout
    assert r["steps"] == 3 and r["stopped"] == "after 3 optimizer steps", r
    # (the third optimizer step is where it stops: its print, after opt.step(), never runs)
    assert "done step 1" in proc.stderr and "done step 2" not in proc.stderr, proc.stderr[-2000:]
    (fb,) = [f for f in r["host_fallbacks"] if f["op"] == "aten::nonzero"]
    assert fb["count"] == 3 and "data-dependent output shape" in fb["reasons"], fb
    assert fb["lines"] == [f"{script}:{line_of(script, 'MARK-FALLBACK')} (<module>)"], fb
    assert any(u["op"].startswith("aten::cumprod") and u["count"] == 3 for u in r["unlowered_ops"]), r["unlowered_ops"]
    batch_line = f"{script}:{line_of(script, 'MARK-BATCH') + 2}"   # the forward line, where x's rows flow in
    hazards = "\n".join(r["recompile_hazards"])
    assert "aten::addmm" in hazards and "sizes [8, 16] -> [9, 16]" in hazards and batch_line in hazards, hazards
    assert r["verdict"].startswith("CHECK:"), r["verdict"]
    assert "Host fallbacks" in proc.stdout and script in proc.stdout, proc.stdout
    assert 0 < r["compiled_share"] < 1, r


def test_a_clean_script_passes_strict(tmp_path):
    proc, r, _ = audit(tmp_path, SCRIPT.format(hazards=False), "--steps", "2", "--strict")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert not r["host_fallbacks"] and not r["unlowered_ops"] and not r["recompile_hazards"], r
    assert r["compiled_share"] > 0.5 and r["verdict"].startswith("OK:"), r   # (copies in run op by op)


def test_the_stop_is_no_recompile_hazard_whenever_the_collector_runs(tmp_path):
    # The script stops mid-step by an exception; a garbage collection before the report (here the
    # script's own exit handler, which runs before the audit's) must not free the script's model
    # and tensors under the final sync: that changed the last group's outputs, hence its key, and
    # reported a recompile hazard that was only the stop.
    text = "import atexit, gc\natexit.register(gc.collect)\n" + SCRIPT.format(hazards=False)
    proc, r, _ = audit(tmp_path, text, "--steps", "2", "--strict")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert r["steps"] == 2 and not r["recompile_hazards"], r


def test_time_limit_and_trn_target(tmp_path):
    text = """
import torch, torch_trn
x = torch.ones(64, 64, device="neuron")
while True:                       # inference without an optimizer: stopped by the time limit
    x = (x @ x).tanh()
    x.sum().item()
"""
    proc, r, _ = audit(tmp_path, text, "--target", "trn2", "--time-limit", "3")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert r["stopped"].startswith("at the time limit"), r
    assert r["ops_executed"] > 0 and r["modeled_ms_per_step"] > 0, r
    assert 0 < r["ops_on_device_share"] <= 1, r
