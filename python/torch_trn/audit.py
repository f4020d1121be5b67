"""python3 -m torch_trn audit: check a script's graph before the full run.

    python3 -m torch_trn audit [--target host|trn2|trn3] [--steps N] [--time-limit S]
                               [--json OUT] [--strict] script.py [args ...]

Runs the script in a fresh process (compile mode, so every group is compiled before it runs and
what runs compiled is what would; the chosen NEURON_TARGET) for its first N optimizer steps (or
until the time limit, for scripts without an optimizer), stops it cleanly, and reports:
  - ops that fall back to the host, why, and the source lines that issued them;
  - ops with no compiled lowering on the target, and groups the trn target refused (why);
  - shapes that changed between steps and made new group keys (recompile hazards), naming the
    op, its line and the property that changed;
  - the share of executed ops that would run compiled, the number of groups, and, on trn
    targets, the modeled NeuronCore time per step;
  - a one-line verdict. With --strict the exit code is 1 when anything falls back or has no
    lowering. --json writes everything as JSON too.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# The child: runs the script, stops it after N optimizer steps or at the time limit, and writes
# what the runtime counted. Module-level so that the script's own code runs as __main__.
_RUNNER = r"""
import atexit, json, os, runpy, signal, sys, time
import torch, torch_trn
_out, _steps, _limit = os.environ["AUDIT_OUT"], int(os.environ["AUDIT_STEPS"]), float(os.environ["AUDIT_TIME_LIMIT"])
_state = {"steps": 0, "stopped": "the script ended", "start": time.monotonic()}

def _report():
    try:
        torch_trn.sync()
    except Exception as e:  # the script's own error is reported below, not here
        _state.setdefault("error", f"{type(e).__name__}: {e}")
    torch_trn.wait_for_compiles()
    s, c = torch_trn.stats(), torch_trn.cache_stats()
    with open(_out, "w") as f:
        json.dump({"steps": _state["steps"], "stopped": _state["stopped"], "error": _state.get("error"),
                   "seconds": time.monotonic() - _state["start"], "stats": s,
                   "miss_explanations": c.get("miss_explanations", [])}, f, default=str)

atexit.register(_report)

class _Stop(SystemExit):
    pass

def _stop(why):
    # Keep the script's module globals (its model, optimizer, tensors) until the report is
    # written. The script stops by an exception mid-step; once that is handled, only reference
    # cycles hold them, so whether the final sync saw them alive (and which results of the last
    # groups count as used, part of the group keys) would depend on when the garbage collector
    # last ran: a recompile hazard that is nothing but the stop.
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is not globals() and frame.f_globals.get("__name__") == "__main__":
            _state["script_globals"] = frame.f_globals
            break
        frame = frame.f_back
    _state["stopped"] = why
    raise _Stop(0)

def _after_step(optimizer, args, kwargs):
    _state["steps"] += 1
    if _state["steps"] >= _steps:
        _stop(f"after {_steps} optimizer steps")

from torch.optim.optimizer import register_optimizer_step_post_hook
register_optimizer_step_post_hook(_after_step)

def _timeout(signum, frame):
    _stop(f"at the time limit ({_limit:g} s)")

if _limit > 0:
    signal.signal(signal.SIGALRM, _timeout)
    signal.setitimer(signal.ITIMER_REAL, _limit)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except _Stop:
    pass
except SystemExit as e:
    if e.code not in (None, 0):
        _state["error"] = f"the script exited with {e.code!r}"
except BaseException as e:
    _state["error"] = f"{type(e).__name__}: {e}"
finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
"""


def run(script, args, target="host", steps=3, time_limit=120.0, env=None):
    """Runs the audit; returns the report as a dict."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "audit.json")
        child_env = dict(os.environ if env is None else env)
        child_env.update(NEURON_MODE="compile", NEURON_TARGET=target,
                         AUDIT_OUT=out, AUDIT_STEPS=str(steps), AUDIT_TIME_LIMIT=str(time_limit))
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        child_env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, child_env.get("PYTHONPATH")) if p)
        proc = subprocess.run([sys.executable, "-c", _RUNNER, script, *args], env=child_env,
                              stdout=sys.stderr, stderr=sys.stderr)
        if not os.path.exists(out):
            raise SystemExit(f"audit: the script's process ended without a report (exit {proc.returncode})")
        with open(out) as f:
            raw = json.load(f)
    return summarize(raw, target)


def summarize(raw, target):
    s = raw["stats"]
    steps = max(raw["steps"], 1)
    fallbacks = []
    for op, reasons in sorted(s.get("host_fallbacks", {}).items()):
        fallbacks.append({"op": op, "count": sum(reasons.values()), "reasons": reasons,
                          "lines": s.get("host_fallback_lines", {}).get(op, [])})
    unlowered = [{"op": op, "count": n} for op, n in sorted(s.get("unlowered_ops", {}).items(), key=lambda kv: -kv[1])]
    device = s.get("device") or {}
    executed = s.get("ops_executed", 0)
    report = {
        "target": target, "steps": raw["steps"], "stopped": raw["stopped"], "error": raw.get("error"),
        "ops_executed": executed, "ops_recorded": s.get("ops_recorded", 0),
        "compiled_share": (s.get("ops_run_compiled", 0) / executed) if executed else 0.0,
        "groups": s.get("compile_cache_entries", 0),
        "host_fallbacks": fallbacks, "unlowered_ops": unlowered,
        "compile_failures": s.get("compile_failures", {}),
        "refused_by_target": device.get("host_group_reasons", {}),
        "recompile_hazards": raw.get("miss_explanations", []),
    }
    # In compile mode every group is compiled before it runs: what ran compiled is what would.
    # On trn targets, a group the target refused runs on the host instead of the modeled core.
    if device:
        report["modeled_ms_per_step"] = device.get("modeled_ns", 0) / 1e6 / steps
        on_device, on_host = device.get("ops_on_device", 0), device.get("ops_on_host", 0)
        report["ops_on_device_share"] = on_device / (on_device + on_host) if on_device + on_host else 0.0
    problems = []
    if fallbacks:
        problems.append(f"{sum(f['count'] for f in fallbacks)} host fallbacks ({len(fallbacks)} ops)")
    if unlowered:
        problems.append(f"{sum(u['count'] for u in unlowered)} ops without a lowering ({len(unlowered)} kinds)")
    if report["refused_by_target"]:
        problems.append(f"{sum(report['refused_by_target'].values())} groups refused by {target}")
    if report["recompile_hazards"]:
        problems.append(f"{len(report['recompile_hazards'])} recompile hazards")
    share = f"{100 * report['compiled_share']:.1f}% of executed ops run compiled"
    report["verdict"] = (("OK: " if not problems else "CHECK: ") + share +
                         ("" if not problems else "; " + ", ".join(problems)))
    report["clean"] = not fallbacks and not unlowered and not report["refused_by_target"]
    return report


def format_report(r):
    lines = [f"torch_trn audit, target {r['target']}: {r['steps']} steps, stopped {r['stopped']}"]
    if r.get("error"):
        lines.append(f"  the script raised: {r['error']}")
    lines.append(f"  ops recorded {r['ops_recorded']}, executed {r['ops_executed']}, groups {r['groups']}, "
                 f"run compiled {100 * r['compiled_share']:.1f}%")
    if "modeled_ms_per_step" in r:
        lines.append(f"  NeuronCore (modeled): {r['modeled_ms_per_step']:.3f} ms per step, "
                     f"{100 * r['ops_on_device_share']:.1f}% of ops on the modeled core")
    if r["host_fallbacks"]:
        lines.append("\nHost fallbacks (the op runs on the host CPU, its data copied there and back):")
        for f in r["host_fallbacks"]:
            why = ", ".join(f"{k} x{v}" for k, v in f["reasons"].items())
            lines.append(f"  {f['count']:6d}  {f['op']}  ({why})")
            for line in f["lines"]:
                lines.append(f"          at {line}")
    if r["unlowered_ops"]:
        lines.append(f"\nOps without a compiled lowering on {r['target']} (they run op by op):")
        for u in r["unlowered_ops"]:
            lines.append(f"  {u['count']:6d}  {u['op']}")
    if r["refused_by_target"]:
        lines.append(f"\nGroups the {r['target']} pipeline refused (they run on the host):")
        for why, n in sorted(r["refused_by_target"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {n:6d}  {why}")
    if r["compile_failures"]:
        lines.append("\nCompile failures (a bug: please report):")
        for why, n in r["compile_failures"].items():
            lines.append(f"  {n:6d}  {why}")
    if r["recompile_hazards"]:
        lines.append("\nShapes that changed between steps (each change is a new group to compile):")
        for e in r["recompile_hazards"]:
            lines.append("  " + e.replace("\n", "\n  "))
    lines.append("\n" + r["verdict"])
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m torch_trn audit", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="host", choices=["host", "trn2", "trn3"])
    ap.add_argument("--steps", type=int, default=3, help="optimizer steps to run (default 3)")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds before the script is stopped")
    ap.add_argument("--json", help="also write the report here as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 1 when anything falls back or has no lowering")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    report = run(a.script, a.args, a.target, a.steps, a.time_limit)
    sys.stdout.write(format_report(report))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if a.strict and not report["clean"] else 0


if __name__ == "__main__":
    sys.exit(main())
