"""Differential fuzzer: random op programs (gen.py) on the neuron device vs PyTorch CPU.

    python3 tests/fuzz/run_fuzz.py [--programs N] [--seed S] [--modes eager,compile,adaptive]
                                   [--known tests/fuzz/known_failures.txt] [--summary out.json]

Runs programs seeds S .. S+N-1 split evenly over the modes (program i runs in mode i % 3). Each
mode runs in its own worker process (NEURON_MODE is read at import), which runs every program on
CPU and on the device and compares: values (allclose with dtype tolerances, exact for ints and
bools), dtypes and shapes of every live tensor at the end; for an invalid program the exception
class (CPU raised class X at step k; the device must raise X at step k or later, at the final read
of the tensors or at the final sync: errors surface at the next sync). A failing program is shrunk
in the worker (steps dropped while it still fails the same way) and printed as a runnable snippet
with its seed. Exits 1 on a failure not listed in --known (`mode | regex | reason`, fields split on " | "; the regex is
searched in the shrunk reproducer), or a worker crash.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODES = ("eager", "compile", "adaptive")

# (rtol, atol) per dtype; ints and bools compare exactly
TOL = {"torch.float32": (1e-4, 1e-4), "torch.float64": (1e-7, 1e-7)}


# --- worker side (runs with NEURON_MODE set) --------------------------------------------------
def run_program(lines, dev, torch, on_device):
    """Runs `lines` on `dev`: {"error": [class, step] or None, "values": {name: cpu tensor}}."""
    ns = {"torch": torch, "dev": dev,
          "T": lambda v, dtype=torch.int64: torch.tensor(v, dtype=dtype, device=dev)}
    out = {"error": None, "values": {}, "float32": any(
        ".float()" in l or "torch.ones(" in l or "torch.zeros(" in l
        or ("torch.randn(" in l and "float64" not in l) for l in lines)}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, line in enumerate(lines):
            try:
                exec(line, ns)
                if any(torch.is_tensor(v) and v.dtype == torch.float32 for v in ns.values()):
                    out["float32"] = True
            except Exception as e:
                out["error"] = [type(e).__name__, k, str(e).splitlines()[0][:200] if str(e) else ""]
                return out
        # the final read of every live tensor
        for name in sorted(n for n, v in ns.items() if torch.is_tensor(v)):
            try:
                out["values"][name] = ns[name].cpu()
            except Exception as e:
                out["error"] = [type(e).__name__, len(lines), str(e).splitlines()[0][:200]]
                return out
        if on_device:
            import torch_trn
            try:
                torch_trn.sync()
            except Exception as e:
                out["error"] = [type(e).__name__, len(lines) + 1, str(e).splitlines()[0][:200]]
    return out


def compare(cpu, neu, torch):
    """None when the device run matches the CPU run, else (kind, detail)."""
    if cpu["error"] is not None:
        cls, step, _ = cpu["error"]
        if neu["error"] is None:
            return "missing_error", f"CPU raised {cls} at step {step}; the device raised nothing"
        if neu["error"][0] != cls:
            return "wrong_error", (f"CPU raised {cls} at step {step}; the device raised "
                                   f"{neu['error'][0]} at step {neu['error'][1]}: {neu['error'][2]}")
        if neu["error"][1] < step:
            return "early_error", (f"CPU raised {cls} at step {step}; the device raised it at "
                                   f"step {neu['error'][1]}: {neu['error'][2]}")
        return None
    if neu["error"] is not None:
        return "unexpected_error", (f"the device raised {neu['error'][0]} at step {neu['error'][1]}"
                                    f" (CPU did not): {neu['error'][2]}")
    for name, c in cpu["values"].items():
        d = neu["values"].get(name)
        if d is None:
            return "missing", f"{name} missing on the device"
        if d.dtype != c.dtype:
            return "dtype", f"{name}: dtype {d.dtype} on the device, {c.dtype} on CPU"
        if d.shape != c.shape:
            return "shape", f"{name}: shape {tuple(d.shape)} on the device, {tuple(c.shape)} on CPU"
        if c.dtype.is_floating_point:
            # float64 results computed from float32 data carry float32 rounding: float32
            # tolerances unless the program never held float32 data
            key = "torch.float32" if cpu["float32"] else str(c.dtype)
            rtol, atol = TOL.get(key, (1e-3, 1e-3))
            ok = torch.allclose(d, c, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = torch.equal(d, c)
        if not ok:
            return "value", f"{name} ({c.dtype}): device {d.tolist()} != CPU {c.tolist()}"
    return None


def check(lines, torch, dev):
    cpu = run_program(lines, torch.device("cpu"), torch, False)
    neu = run_program(lines, dev, torch, True)
    return compare(cpu, neu, torch)


def shrink(lines, kind, torch, dev):
    """Drops steps (never line 0, the generator) while the program still fails with `kind`."""
    changed = True
    while changed:
        changed = False
        for i in range(len(lines) - 1, 0, -1):
            cand = lines[:i] + lines[i + 1:]
            try:
                r = check(cand, torch, dev)
            except Exception:
                r = None
            if r is not None and r[0] == kind:
                lines = cand
                changed = True
    return lines


def snippet(seed, mode, lines):
    body = "\n".join("    " + l for l in lines)
    return f'''# fuzz seed {seed}, mode {mode}: NEURON_MODE={mode} PYTHONPATH=python python3 repro.py
import torch, torch_trn

def run(dev):
    T = lambda v, dtype=torch.int64: torch.tensor(v, dtype=dtype, device=dev)
{body}
    return {{k: v.cpu() for k, v in sorted(locals().items()) if torch.is_tensor(v)}}

cpu = run(torch.device("cpu"))
neu = run(torch_trn.device())
torch_trn.sync()
for k in cpu:
    same = torch.equal(cpu[k], neu[k]) if not cpu[k].is_floating_point() else torch.allclose(
        cpu[k], neu[k], rtol=1e-4, atol=1e-4, equal_nan=True)
    print(k, "ok" if same and cpu[k].dtype == neu[k].dtype else f"DIFFERS cpu={{cpu[k]}} neuron={{neu[k]}}")
'''


def worker(seeds, mode):
    sys.path.insert(0, HERE)
    import torch
    import torch_trn
    from gen import generate
    dev = torch_trn.device()
    for seed in seeds:
        print(json.dumps({"start": seed}), flush=True)
        lines, invalid = generate(seed)
        try:
            torch_trn.sync()  # an error a previous program left pending is not this one's
        except Exception:
            pass
        try:
            r = check(lines, torch, dev)
        except Exception:
            r = ("harness", traceback.format_exc()[-600:])
        rec = {"seed": seed, "mode": mode, "invalid": invalid, "steps": len(lines)}
        if r is None:
            rec["status"] = "pass"
        else:
            small = shrink(list(lines), r[0], torch, dev) if r[0] != "harness" else lines
            small_r = check(small, torch, dev) if small is not lines else r
            rec.update(status="fail", kind=r[0], detail=(small_r or r)[1], lines=small,
                       repro=snippet(seed, mode, small))
        print(json.dumps(rec), flush=True)


# --- parent side ------------------------------------------------------------------------------
def load_known(paths):
    known = []
    for p in paths:
        with open(p) as f:
            for raw in f:
                raw = raw.strip()
                if not raw or raw.startswith("#"):
                    continue
                mode, regex, reason = (x.strip() for x in raw.split(" | ", 2))
                known.append((mode, re.compile(regex), reason))
    return known


def run_mode(mode, seeds, timeout):
    """Runs `seeds` in worker processes of `mode` (restarting after a crash): list of records."""
    env = dict(os.environ, NEURON_MODE=mode)
    env.setdefault("NEURON_CACHE_DIR", "off")
    if mode in ("compile", "adaptive"):
        env.setdefault("NEURON_OPT_LEVEL", "0")
    env["PYTHONPATH"] = os.path.join(REPO, "python") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    records = []
    todo = list(seeds)
    while todo:
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", mode,
                                 "--seeds", ",".join(map(str, todo))],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started = None
        done = set()
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            out, err = proc.communicate()
        for line in out.splitlines():
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            if "start" in rec:
                started = rec["start"]
            else:
                records.append(rec)
                done.add(rec["seed"])
        todo = [s for s in todo if s not in done]
        if todo:  # the worker died (or timed out) in program `started`
            seed = started if started in todo else todo[0]
            records.append({"seed": seed, "mode": mode, "status": "fail", "kind": "crash",
                            "detail": f"worker exit {proc.returncode}"
                            + (f" (killed after the {timeout} s timeout)" if timed_out else "")
                            + f": {err[-1500:]}",
                            "lines": [], "repro": f"# seed {seed}: see gen.generate({seed})"})
            todo = [s for s in todo if s != seed]
    return records


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--known", action="append", default=[])
    ap.add_argument("--summary")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--worker")
    ap.add_argument("--seeds")
    a = ap.parse_args()
    if a.worker:
        worker([int(s) for s in a.seeds.split(",")], a.worker)
        return 0
    modes = a.modes.split(",")
    known = load_known(a.known)
    t0 = time.time()
    per_mode = {m: [a.seed + i for i in range(a.programs) if i % len(modes) == k]
                for k, m in enumerate(modes)}
    records = []
    # two modes at a time (2 cores)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as ex:
        for recs in ex.map(lambda m: run_mode(m, per_mode[m], a.timeout), modes):
            records.extend(recs)
    unexpected, expected = [], []
    for r in records:
        if r["status"] != "fail":
            continue
        text = "\n".join(r.get("lines", []))
        hit = next((reason for mode, rx, reason in known
                    if mode in ("*", r["mode"]) and rx.search(text)), None)
        (expected if hit else unexpected).append(dict(r, known=hit))
    elapsed = time.time() - t0
    counts = {m: sum(1 for r in records if r["mode"] == m) for m in modes}
    print(f"fuzz: {len(records)} programs (seeds {a.seed}..{a.seed + a.programs - 1}; "
          + ", ".join(f"{m} {counts[m]}" for m in modes)
          + f"), {sum(r.get('invalid', False) for r in records)} invalid, "
          f"{len(expected)} known failures, {len(unexpected)} unexpected, {elapsed:.1f} s")
    for r in unexpected:
        print(f"\n=== FAIL seed {r['seed']} mode {r['mode']}: {r['kind']}: {r['detail']}\n{r['repro']}")
    for r in expected:
        print(f"known: seed {r['seed']} mode {r['mode']}: {r['kind']} ({r['known'][:100]}...)")
    if a.summary:
        with open(a.summary, "w") as f:
            json.dump({"programs": len(records), "per_mode": counts, "seconds": elapsed,
                       "unexpected": unexpected, "expected": expected}, f, indent=1)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
