"""Greedy generate() of a tiny Llama: tokens/s per mode vs PyTorch CPU and vs eager mode.

    PYTHONPATH=python python3 bench/generate.py                       # every row, 32 new tokens, 5 calls
    PYTHONPATH=python python3 bench/generate.py --rows cpu,compile --tokens 64 --calls 9

The model is the tiny Llama of tests/python/test_shape_variants.py, built from a LlamaConfig with
seeded random weights (no network); the prompt is 6 random tokens, batch 1. Each row runs in a
fresh process: one first call (its time includes every compile: printed as `first s`), then
--calls timed calls of generate(max_new_tokens=--tokens, do_sample=False); tokens/s is new tokens
over the call's wall time, reported as median (min, max) over the calls. Every call's tokens are
checked against PyTorch CPU's (the row fails otherwise). Rows:

    cpu       PyTorch CPU eager (no torch_trn), dynamic cache
    eager     NEURON_MODE=eager, dynamic cache
    compile   NEURON_MODE=compile, dynamic cache (NEURON_SHAPE_VARIANTS bounds the compiles)
    adaptive  NEURON_MODE=adaptive, dynamic cache; the timed calls start after wait_for_compiles()
    dynamo    NEURON_MODE=compile, cache_implementation="static" and
              compile_config=CompileConfig(backend="neuron"): transformers compiles the decoding
              forward with torch.compile(backend="neuron") (docs/ecosystem.md)

The disk cache is off (NEURON_CACHE_DIR=off): `first s` is a cold start. Ratios are against the
cpu and eager rows of the same run. On a loaded machine PyTorch CPU's default threads spin against
other work: --threads 1 (OMP_NUM_THREADS for every row) gives steadier numbers.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, time
import torch
row = os.environ["GEN_ROW"]
if row != "cpu":
    import torch_trn
from transformers import LlamaConfig, LlamaForCausalLM
tokens, calls = int(os.environ["GEN_TOKENS"]), int(os.environ["GEN_CALLS"])
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
model = LlamaForCausalLM(cfg).eval()
prompt = torch.randint(0, 128, (1, 6))
kwargs = dict(max_new_tokens=tokens, do_sample=False)
with torch.no_grad():
    want = model.generate(prompt, **kwargs)
    if row != "cpu":
        model = model.to("neuron")
        prompt = prompt.to("neuron")
    if row == "dynamo":
        from transformers.generation.configuration_utils import CompileConfig
        kwargs.update(cache_implementation="static", compile_config=CompileConfig(backend="neuron"))

    def call():
        t = time.perf_counter()
        out = model.generate(prompt, **kwargs).cpu()
        dt = time.perf_counter() - t
        assert torch.equal(out, want), f"{row}: tokens differ from PyTorch CPU's"
        return dt

    first = call()
    if row == "adaptive":
        torch_trn.wait_for_compiles()
        call()
    times = [call() for _ in range(calls)]
out = {"first": first, "calls": times}
if row != "cpu":
    s = torch_trn.stats()
    out.update(compiles=s.get("compiles", 0), ops_executed=s["ops_executed"], ops_compiled=s.get("ops_run_compiled", 0),
               replays=s.get("graph_replays", 0), refused=s.get("graph_captures_refused", 0))
if row == "dynamo":
    from torch._dynamo.utils import counters
    out["dynamo_graphs"] = counters["stats"]["unique_graphs"]
print("RESULT " + json.dumps(out))
"""

ROWS = {"cpu": {}, "eager": {"NEURON_MODE": "eager"}, "compile": {"NEURON_MODE": "compile"},
        "adaptive": {"NEURON_MODE": "adaptive"}, "dynamo": {"NEURON_MODE": "compile"}}


def run(row, args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    env.update(ROWS[row], NEURON_CACHE_DIR="off", PYTHONPATH=os.path.join(REPO, "python"), GEN_ROW=row,
               GEN_TOKENS=str(args.tokens), GEN_CALLS=str(args.calls))
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=3600)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{row} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    r = json.loads(lines[-1][len("RESULT "):])
    r["tps"] = sorted(args.tokens / t for t in r["calls"])
    r["median"] = statistics.median(r["tps"])
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--tokens", type=int, default=32, help="new tokens per generate() call")
    ap.add_argument("--calls", type=int, default=5, help="timed calls per process")
    ap.add_argument("--threads", type=int, help="OMP_NUM_THREADS for every row (default: torch's default)")
    args = ap.parse_args()
    rows = [r for r in args.rows.split(",") if r]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        ap.error(f"unknown rows {unknown}; known: {list(ROWS)}")
    results = {}
    for row in rows:
        results[row] = r = run(row, args)
        print(f"  {row:9s} {r['median']:8.1f} tokens/s", flush=True)
    hdr = (f"{'row':9s} {'tok/s':>8s} {'(min':>8s} {'max)':>8s} {'/cpu':>6s} {'/eager':>6s} {'first s':>8s} "
           f"{'compiles':>8s} {'ops compiled':>12s}")
    print(f"\n{args.tokens} new tokens per call, {args.calls} timed calls per row (tokens equal to CPU's in every call)")
    print(hdr)
    print("-" * len(hdr))
    cpu, eager = results.get("cpu"), results.get("eager")
    for row in rows:
        r = results[row]

        def ratio(base):  # speed relative to the base row: > 1 is faster
            return f"{r['median'] / base['median']:.2f}" if base else "-"
        compiled = f"{r['ops_compiled']}/{r['ops_executed']}" if "ops_executed" in r else "-"
        print(f"{row:9s} {r['median']:8.1f} {r['tps'][0]:8.1f} {r['tps'][-1]:8.1f} {ratio(cpu):>6s} {ratio(eager):>6s} "
              f"{r['first']:8.2f} {r.get('compiles', '-'):>8} {compiled:>12s}")
    if "dynamo" in results:
        d = results["dynamo"]
        print(f"\ndynamo: {d.get('dynamo_graphs')} Dynamo graphs, {d.get('replays')} graph replays, "
              f"{d.get('refused')} captures refused")
    print("ratios: tokens/s over the cpu (eager) row's; > 1 is faster. first s: the first call, compiles included "
          "(disk cache off). ops compiled: over the whole process, first call included")


if __name__ == "__main__":
    main()
