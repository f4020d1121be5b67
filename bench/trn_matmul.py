"""Modeled TensorE utilisation of matmul on the NeuronCore model, and the model's own speed.

    python3 bench/trn_matmul.py [--sizes 128,256,512,1024,2048,4096] [--target trn2] [--build build]

For each size n and dtype (bf16, fp32) writes a linalg module C = A @ B (n x n x n, row-major,
C zero-filled), compiles it with the trn pipeline and runs it on the NeuronCore model with
build/bin/trn-run (--timing-only above 512: values are not computed, time is charged the same).
Prints modeled time, TFLOPS, utilisation against the per-core bf16 peak of the target (79 TFLOPS
on Trn2; fp32 runs at a quarter of that rate on TensorE), TensorE and DMA busy shares, and the
model's speed in simulated instructions per second, functional and timing-only.
Target (issue 6): >= 70 % modeled utilisation at 1024^3 bf16.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODULE = """func.func @group(%a: memref<{n}x{n}x{t}>, %b: memref<{n}x{n}x{t}>, %c: memref<{n}x{n}x{t}>) {{
  %zero = arith.constant 0.0 : {t}
  linalg.fill ins(%zero : {t}) outs(%c : memref<{n}x{n}x{t}>)
  linalg.matmul ins(%a, %b : memref<{n}x{n}x{t}>, memref<{n}x{n}x{t}>) outs(%c : memref<{n}x{n}x{t}>)
  return
}}
"""


def run(tool, n, dtype, target, timing_only, tmp):
    path = os.path.join(tmp, f"mm_{n}_{dtype}.mlir")
    with open(path, "w") as f:
        f.write(MODULE.format(n=n, t=dtype))
    cmd = [tool, path, "--target", target, "--repeat", "2"] + (["--timing-only"] if timing_only else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"trn-run failed for {n}^3 {dtype}: {out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="128,256,512,1024,2048,4096")
    p.add_argument("--target", default="trn2")
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    p.add_argument("--functional-max", type=int, default=512, help="largest n computed functionally")
    args = p.parse_args()
    tool = os.path.join(args.build, "bin", "trn-run")
    if not os.path.exists(tool):
        sys.exit(f"{tool} not found: build first (./dev build)")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"target {args.target}; utilisation = achieved / per-core bf16 peak; fp32 peak is 1/4 of it")
    print(f"{'n':>6} {'dtype':>5} {'modeled us':>11} {'TFLOPS':>8} {'util %':>7} {'of dtype peak %':>16} "
          f"{'TensorE %':>10} {'DMA %':>6} {'instr':>7} {'compile s':>10} {'model instr/s':>14} {'mode':>11}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in ("bf16", "f32"):
            for n in sizes:
                timing_only = n > args.functional_max
                r = run(tool, n, dtype, args.target, timing_only, tmp)
                peak = r["peak_bf16_tflops"] * (1.0 if dtype == "bf16" else 0.25)
                util = 100.0 * r["tflops"] / r["peak_bf16_tflops"]
                of_dtype = 100.0 * r["tflops"] / peak
                ips = r["instructions"] / r["model_s"] if r["model_s"] > 0 else float("inf")
                print(f"{n:>6} {dtype:>5} {r['modeled_ns'] / 1e3:>11.2f} {r['tflops']:>8.2f} {util:>7.1f} "
                      f"{of_dtype:>16.1f} {100 * r['engines']['tensor']['utilisation']:>10.1f} "
                      f"{100 * r['engines']['dma']['utilisation']:>6.1f} {r['instructions']:>7} "
                      f"{r['compile_s']:>10.3f} {ips:>14.0f} {'timing-only' if timing_only else 'functional':>11}",
                      flush=True)
                rows.append({"n": n, "dtype": dtype, **r, "util_percent": util})
    k = [r for r in rows if r["n"] == 1024 and r["dtype"] == "bf16"]
    if k:
        verdict = "met" if k[0]["util_percent"] >= 70 else "MISSED"
        print(f"target: >= 70 % modeled utilisation at 1024^3 bf16: {k[0]['util_percent']:.1f} % ({verdict})")


if __name__ == "__main__":
    main()
