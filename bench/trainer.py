"""transformers.Trainer fine-tuning a tiny BERT classifier: steps/s per mode vs PyTorch CPU and eager.

    PYTHONPATH=python python3 bench/trainer.py                        # every row, 5 warm-up + 20 timed steps
    PYTHONPATH=python python3 bench/trainer.py --rows cpu,compile --steps 40

The model and data are tests/python/hf_train.py's (a BertForSequenceClassification from a config
with seeded random weights, no dropout, random token ids; no network), sized up with --hidden,
--layers, --seq and --batch. The Trainer gets no device argument: with torch_trn imported it
trains on `neuron:0` (use_cpu=True for the cpu row). Each row runs in a fresh process; a callback
times every optimizer step from on_step_begin to on_step_end, syncing the device at the end (so a
step's time includes its execution), and steps/s is reported as median (min, max) over the timed
steps after --warmup (adaptive: then wait_for_compiles() and two more steps). Rows:

    cpu            PyTorch CPU eager (use_cpu=True; torch_trn not imported)
    eager          NEURON_MODE=eager
    compile        NEURON_MODE=compile
    adaptive       NEURON_MODE=adaptive, timed after wait_for_compiles()
    torch_compile  NEURON_MODE=compile with TrainingArguments(torch_compile=True): the Trainer wraps
                   the model in torch.compile(backend="neuron")
    bf16           NEURON_MODE=compile with TrainingArguments(bf16=True) (autocast to bfloat16)

Disk cache off (NEURON_CACHE_DIR=off). Ratios are against the cpu and eager rows of the same run.
On a loaded machine PyTorch CPU's default threads spin against other work: --threads 1
(OMP_NUM_THREADS for every row) gives steadier numbers.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, tempfile, time
import torch
row = os.environ["TR_ROW"]
if row != "cpu":
    import torch_trn
sys.path.insert(0, os.path.join(os.environ["TR_REPO"], "tests", "python"))
import hf_train as H
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

hidden, layers = int(os.environ["TR_HIDDEN"]), int(os.environ["TR_LAYERS"])
H.SEQ, H.BATCH = int(os.environ["TR_SEQ"]), int(os.environ["TR_BATCH"])
warmup, steps = int(os.environ["TR_WARMUP"]), int(os.environ["TR_STEPS"])
total = warmup + (2 if row == "adaptive" else 0) + steps
config = BertConfig(vocab_size=H.VOCAB, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=max(hidden // 32, 1),
                    intermediate_size=4 * hidden, max_position_embeddings=H.SEQ, num_labels=H.N_LABELS,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
torch.manual_seed(0)
model = BertForSequenceClassification(config)
times = []

class Timer(TrainerCallback):
    def on_step_begin(self, args, state, control, **kw):
        self.t = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        if row != "cpu":
            torch_trn.sync()
        times.append(time.perf_counter() - self.t)
        if row == "adaptive" and len(times) == warmup:
            torch_trn.wait_for_compiles()

with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(output_dir=out, use_cpu=row == "cpu", max_steps=total, per_device_train_batch_size=H.BATCH,
                             learning_rate=1e-3, logging_steps=10 ** 6, save_strategy="no", report_to=[], seed=7,
                             disable_tqdm=True, dataloader_num_workers=0, torch_compile=row == "torch_compile",
                             bf16=row == "bf16")
    trainer = Trainer(model=model, args=args, train_dataset=H._Data(H.BATCH * total), callbacks=[Timer()])
    result = trainer.train()
timed = times[total - steps:]
out = {"steps": timed, "first": times[0], "loss": result.training_loss, "device": str(args.device)}
if row != "cpu":
    s = torch_trn.stats()
    out.update(compiles=s.get("compiles", 0), ops_executed=s["ops_executed"], ops_compiled=s.get("ops_run_compiled", 0))
print("RESULT " + json.dumps(out))
"""

ROWS = {"cpu": {}, "eager": {"NEURON_MODE": "eager"}, "compile": {"NEURON_MODE": "compile"},
        "adaptive": {"NEURON_MODE": "adaptive"}, "torch_compile": {"NEURON_MODE": "compile"},
        "bf16": {"NEURON_MODE": "compile"}}


def run(row, args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    env.update(ROWS[row], NEURON_CACHE_DIR="off", PYTHONPATH=os.path.join(REPO, "python"), TR_ROW=row, TR_REPO=REPO,
               TR_HIDDEN=str(args.hidden), TR_LAYERS=str(args.layers), TR_SEQ=str(args.seq), TR_BATCH=str(args.batch),
               TR_WARMUP=str(args.warmup), TR_STEPS=str(args.steps))
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=3600)
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{row} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    r = json.loads(lines[-1][len("RESULT "):])
    r["sps"] = sorted(1.0 / t for t in r["steps"])
    r["median"] = statistics.median(r["sps"])
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--steps", type=int, default=20, help="timed steps per process")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, help="OMP_NUM_THREADS for every row (default: torch's default)")
    args = ap.parse_args()
    rows = [r for r in args.rows.split(",") if r]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        ap.error(f"unknown rows {unknown}; known: {list(ROWS)}")
    results = {}
    for row in rows:
        results[row] = r = run(row, args)
        print(f"  {row:13s} {r['median']:7.2f} steps/s on {r['device']}", flush=True)
    print(f"\nBERT hidden {args.hidden}, {args.layers} layers, seq {args.seq}, batch {args.batch}; "
          f"{args.steps} timed steps after {args.warmup}")
    hdr = (f"{'row':13s} {'steps/s':>8s} {'(min':>7s} {'max)':>7s} {'/cpu':>6s} {'/eager':>6s} {'first s':>8s} "
           f"{'compiles':>8s} {'ops compiled':>13s} {'train loss':>10s}")
    print(hdr)
    print("-" * len(hdr))
    cpu, eager = results.get("cpu"), results.get("eager")
    for row in rows:
        r = results[row]

        def ratio(base):  # speed relative to the base row: > 1 is faster
            return f"{r['median'] / base['median']:.2f}" if base else "-"
        compiled = f"{r['ops_compiled']}/{r['ops_executed']}" if "ops_executed" in r else "-"
        print(f"{row:13s} {r['median']:8.2f} {r['sps'][0]:7.2f} {r['sps'][-1]:7.2f} {ratio(cpu):>6s} {ratio(eager):>6s} "
              f"{r['first']:8.2f} {r.get('compiles', '-'):>8} {compiled:>13s} {r['loss']:10.4f}")
    print("ratios: steps/s over the cpu (eager) row's; > 1 is faster. first s: the first step (compiles included, "
          "disk cache off). ops compiled: whole process")


if __name__ == "__main__":
    main()
