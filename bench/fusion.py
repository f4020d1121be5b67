"""Fusion bench: chains of elementwise ops over 16 M float32, compile mode vs eager mode vs
PyTorch CPU eager, against a STREAM-style copy measured in the same run.

    python3 bench/fusion.py [--n 16777216] [--reps 5]

Each mode runs in its own process (NEURON_MODE is read at import). A chain reads x once and
writes y once when fused, so its "useful" traffic is 8 bytes per element; GB/s = that traffic /
median time. The copy is `dst.copy_(src)` on the CPU (also 8 bytes per element). Printed: GB/s
per chain and mode, the ratio to copy bandwidth, and the speedup over PyTorch CPU eager.
Targets (issue 30; issue 3 had 0.6x and 5x): cheap chain in compile mode >= 0.8x copy bandwidth;
transcendental chain in compile mode >= 10x faster than PyTorch CPU eager.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Each chain is the body of a function of x returning y: its temporaries die with the call, as
# in a model's forward.
CHAINS = {
    # 8 cheap ops: mul, add, maximum, gt, mul, where, sub, abs
    "cheap8": "t = x * 1.5; t = t + 0.25; t = torch.maximum(t, x); m = t > 1.0; "
              "u = x * 0.5; t = torch.where(m, t, u); t = t - 0.125; return t.abs()",
    # x*a+b -> gelu -> *c -> tanh -> -x -> square -> sigmoid -> +1
    "transcendental8": "t = x * 0.75 + 0.1; t = F.gelu(t); t = t * 1.3; t = torch.tanh(t); "
                       "t = t - x; t = t * t; t = torch.sigmoid(t); return t + 1.0",
}

WORKER = r"""
import json, statistics, sys, time, torch
import torch.nn.functional as F
device, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
chains = json.loads(sys.argv[4])
if device == "neuron":
    import torch_trn
    sync = torch_trn.sync
else:
    sync = lambda: None
x = torch.linspace(-4, 4, n).to(device)
sync()
out = {}
for name, code in chains.items():
    env = {"torch": torch, "F": F}
    exec("def chain(x):\n    " + code.replace("; ", "\n    "), env)
    chain = env["chain"]
    times = []
    for rep in range(reps + 2):          # reps 0-1 warm up (compile; the allocator's block cache)
        start = time.perf_counter()
        y = chain(x)
        sync()
        times.append(time.perf_counter() - start)
        del y
    out[name] = {"median_s": statistics.median(times[2:]), "first_s": times[0]}
if device == "neuron":
    s = torch_trn.stats()
    out["stats"] = {k: s[k] for k in ("compiles", "compile_ms", "groups_run_compiled", "compiled_bytes_written")}
print(json.dumps(out))
"""


def run_mode(mode, n, reps):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "python")
    env["NEURON_CACHE_DIR"] = "off"  # measure compiled code, never a previous run's cache
    device = "cpu" if mode == "cpu" else "neuron"
    if mode != "cpu":
        env["NEURON_MODE"] = mode
    proc = subprocess.run([sys.executable, "-c", WORKER, device, str(n), str(reps), json.dumps(CHAINS)],
                          env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"{mode} run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def copy_bandwidth(n, reps):
    import torch
    src = torch.linspace(-4, 4, n)
    dst = torch.empty_like(src)
    times = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - start)
    return 8 * n / statistics.median(times[1:]) / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=16 * 1024 * 1024)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    import torch
    copy_gbs = copy_bandwidth(args.n, args.reps)
    results = {mode: run_mode(mode, args.n, args.reps) for mode in ("cpu", "eager", "compile")}
    print(f"fusion bench: n={args.n} float32, torch threads={torch.get_num_threads()}, "
          f"copy bandwidth {copy_gbs:.2f} GB/s (8 bytes/element)")
    print(f"{'chain':<18}{'mode':<9}{'median ms':>11}{'GB/s':>8}{'x copy':>8}{'x cpu eager':>13}")
    for chain in CHAINS:
        cpu_s = results["cpu"][chain]["median_s"]
        for mode in ("cpu", "eager", "compile"):
            s = results[mode][chain]["median_s"]
            gbs = 8 * args.n / s / 1e9
            print(f"{chain:<18}{mode:<9}{s * 1e3:>11.1f}{gbs:>8.2f}{gbs / copy_gbs:>8.2f}{cpu_s / s:>13.2f}")
    st = results["compile"]["stats"]
    print(f"compile mode: {st['compiles']} compiles, {st['compile_ms']:.0f} ms compiling "
          f"(first run of each chain includes it: "
          + ", ".join(f"{c} {results['compile'][c]['first_s'] * 1e3:.0f} ms" for c in CHAINS) + ")")
    cheap = 8 * args.n / results["compile"]["cheap8"]["median_s"] / 1e9 / copy_gbs
    trans = results["cpu"]["transcendental8"]["median_s"] / results["compile"]["transcendental8"]["median_s"]
    print(f"targets: cheap8 compile {cheap:.2f}x copy (>= 0.8); transcendental8 compile "
          f"{trans:.2f}x faster than cpu eager (>= 10)")


if __name__ == "__main__":
    main()
