"""OpInfo registry test (DESIGN.md §6.1): every float32 op_db sample on the neuron device vs CPU.

Runs tests/opinfo/run_opinfo.py (one worker process per chunk of ~60 ops, 2 at a time; a
crashing kernel only loses its own op), in each mode (eager, compile, adaptive). A full run takes ~4-7 minutes on 2 cores, so it is the
default (FULL_BY_DEFAULT); set FULL_BY_DEFAULT = False to run the every-4th-op --quick subset
unless pytest is given --full (tests/python/conftest.py).
Known failures: tests/opinfo_expected_failures.txt (`<op.variant>[#idx] | <root cause>`).
Fails on: any unexpected failure/crash, an expected failure that now passes, pass rate < 98 %.
"""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(REPO, "tests", "opinfo", "run_opinfo.py")
MIN_PASS_PERCENT = 98.0
# A full run takes ~4-7 minutes on 2 cores (< ~10 minutes): the default.
FULL_BY_DEFAULT = True


# Compile mode compiles one group per sample (~18,700 distinct groups): its default run is the
# --quick subset (every 4th op) at LLVM -O0 (NEURON_OPT_LEVEL=0: same lowering and pipeline,
# ~4x faster LLVM); --full runs every op. Adaptive mode runs the same subset: samples run op by
# op or compiled depending on how far the background compiler got (both must be right).
@pytest.mark.parametrize("mode", ["eager", "compile", "adaptive"])
def test_opinfo_registry(request, tmp_path, mode):
    full_flag = request.config.getoption("--full", default=False)
    full = full_flag or (FULL_BY_DEFAULT and mode == "eager")
    summary_path = tmp_path / "opinfo_summary.json"
    cmd = [sys.executable, RUNNER, "--jobs", "2", "--mode", mode, "--summary", str(summary_path),
           "--allow-xpass"]
    if not full:
        cmd.append("--quick")
    env = dict(os.environ)
    if mode in ("compile", "adaptive"):
        env.setdefault("NEURON_OPT_LEVEL", "0")
        cmd += ["--expected", os.path.join(REPO, "tests", "opinfo_expected_failures.txt"),
                "--expected", os.path.join(REPO, "tests", "opinfo_expected_failures_compile.txt")]
    env["PYTHONPATH"] = os.path.join(REPO, "python") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    print(proc.stdout)
    assert summary_path.exists(), (
        f"the OpInfo runner wrote no summary (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")
    s = json.loads(summary_path.read_text())
    line = [l for l in proc.stdout.splitlines() if l.startswith("opinfo:")]
    print(line[-1] if line else s)

    problems = []
    if s["unexpected_failures"]:
        shown = "\n".join(f"  {u['id']}: [{u['status']}] {u['error']}"
                          for u in s["unexpected_failures"][:40])
        more = len(s["unexpected_failures"]) - 40
        problems.append(f"{len(s['unexpected_failures'])} unexpected OpInfo failures "
                        f"(add a fix, or an entry with its root cause to "
                        f"tests/opinfo_expected_failures.txt):\n{shown}"
                        + (f"\n  ... {more} more" if more > 0 else ""))
    if s["unexpected_passes"]:
        problems.append("expected failures that now PASS -- remove them from "
                        "tests/opinfo_expected_failures.txt:\n  "
                        + "\n  ".join(s["unexpected_passes"]))
    if s["pass_percent"] < MIN_PASS_PERCENT:
        problems.append(f"pass rate {s['pass_percent']}% < {MIN_PASS_PERCENT}%")
    assert not problems, "\n\n".join(problems)
