"""Share of executed ops on the modeled NeuronCore, per zoo model (docs/trn_pipeline.md "Measured").

    PYTHONPATH=python python3 bench/trn_share.py [--target trn2] [--steps 2] [MODEL ...]

For each model (default: the set docs/trn_pipeline.md reports, all of them in the zoo's
representative set): a fresh process in compile mode on NEURON_TARGET, the given number of
AdamW steps on the device and on the CPU from the same weights and inputs, then
  share      = ops_on_device / (ops_on_device + ops_on_host)   (stats()["device"])
  loss diff  = max relative difference of the step losses vs CPU
  modeled ms = the NeuronCore model's time for the steps, and the busiest engines
  host ops   = in the JSON line: ops without a lowering (unlowered_ops), host fallbacks, groups
               sent to the host and why, shape variants refused
One JSON line per model, then a Markdown table. A model that fails prints its error.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(os.path.dirname(HERE), "tests", "zoo")
MODELS = ["repo/layernorm_mlp", "repo/mha_key_padding", "hf/ibert/masked-lm", "hf/llama4_text/causal-lm",
          "hf/apertus/causal-lm", "repo/lstm_packed_classifier", "repo/embedding_bag", "timm/convnextv2_atto",
          "repo/depthwise_separable"]

CHILD = r"""
import copy, json, sys
sys.path.insert(0, {zoo!r})
import torch, torch_trn
from registry import all_models
zm = all_models()[{name!r}]
torch.manual_seed(0)
cpu_model = zm.build()
dev_model = copy.deepcopy(cpu_model).to("neuron")
cpu_in = zm.make_inputs(0)
dev_in = {{k: (v.to("neuron") if isinstance(v, torch.Tensor) else v) for k, v in cpu_in.items()}}

def train(model, inputs):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range({steps}):
        loss = zm.loss(model, inputs)
        loss.backward()
        opt.step(); opt.zero_grad()
        losses.append(float(loss.item()))
    return losses

torch_trn.reset_stats()
dev = train(dev_model, dev_in)
torch_trn.wait_for_compiles()
st = torch_trn.stats()
d = st["device"]
ref = train(cpu_model, cpu_in)
rel = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(dev, ref))
on, off = d.get("ops_on_device", 0), d.get("ops_on_host", 0)
print("RESULT " + json.dumps({{"model": {name!r}, "share": on / max(1, on + off), "loss_rel_diff": rel,
      "modeled_ms": d.get("modeled_ns", 0) / 1e6,
      "engines_ms": {{k: v / 1e6 for k, v in sorted(d.get("engine_busy_ns", {{}}).items(), key=lambda kv: -kv[1])}},
      "host_group_reasons": d.get("host_group_reasons", {{}}), "unlowered_ops": st.get("unlowered_ops", {{}}),
      "host_fallbacks": st.get("host_fallbacks", {{}}), "shape_variants_refused": st.get("shape_variants_refused", 0)}}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="trn2")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    env = dict(os.environ, NEURON_TARGET=args.target, NEURON_MODE="compile")
    rows = []
    for name in args.models:
        code = CHILD.format(zoo=ZOO, name=name, steps=args.steps)
        try:
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                               timeout=args.timeout)
            line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
            rec = json.loads(line[-1][7:]) if line else {"model": name, "error": p.stderr.strip()[-2000:]}
        except subprocess.TimeoutExpired:
            rec = {"model": name, "error": f"timeout after {args.timeout} s"}
        print(json.dumps(rec), flush=True)
        rows.append(rec)
    print("\n| model | on-core share | loss vs CPU (rel) | modeled ms | busiest engines (ms) |")
    print("|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['model']} | error | | | |")
            continue
        eng = ", ".join(f"{k} {v:.3f}" for k, v in list(r["engines_ms"].items())[:2])
        print(f"| {r['model']} | {100 * r['share']:.1f} % | {r['loss_rel_diff']:.1e} | {r['modeled_ms']:.3f} | {eng} |")


if __name__ == "__main__":
    main()
