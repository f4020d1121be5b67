"""Model features from the recorded stream: one traced forward + backward per zoo model.

    PYTHONPATH=python python3 tests/zoo/features.py [--only REGEX] [--shard I/N] [--jobs 2]
                                                   [--out tests/zoo/features.json] [--fresh]

Each model runs once on the neuron device (NEURON_MODE=eager, float32) inside
`torch_trn.trace_ops()`, which returns every op the device recorded with its argument shapes,
dtypes and values. The features are derived from those ops (rules below); the model's declared
input kind and its task (the entry's name) fill in what ops cannot say. The result is merged
into --out (default tests/zoo/features.json): {"models": {name: {"features": [...], "ops":
[...]}}, "failed": {name: reason}}. Runs are resumable: models already in the file are skipped
unless --fresh; --shard I/N takes every N-th model starting at I (0-based). Models run in worker
processes, a chunk each, so a crash loses one chunk's unfinished models (retried once).

Feature rules (a feature is "kind:value"):
- input:{image,video,audio,tokens,...}: the entry's input_kind.
- attention:{full,causal,cross,grouped-query,shifted-window}: a softmax over the last axis of a
  batched product whose operands come from the same activations (attention scores [.., L, S]);
  causal when the stream builds a lower-triangular mask (tril/triu, or index comparisons that
  produce an [L, S] boolean) or calls SDPA with is_causal; cross when L != S; grouped-query when
  SDPA's enable_gqa is set or the key/value heads are repeated before the scores
  (repeat_interleave, or a 5-D copy [B, Hkv, n_rep, S, D] feeding a product over B*Hkv*n_rep);
  shifted-window when the stream rolls a 4-D feature map over two dims (Swin).
- norm:{layer,batch,group,instance,rms}: the normalisation ops, rms from x * rsqrt(mean(x^2)).
- act:{relu,gelu,gelu-tanh,silu,sigmoid,tanh,hardswish,hardsigmoid,leaky-relu,elu,softplus,
  mish,glu,prelu,softmax}: the activation ops.
- conv:{1d,2d,3d,depthwise,grouped,transposed,dilated,strided}: aten::convolution's weight rank,
  groups, transposed flag, dilation and stride.
- pool:{max,avg,adaptive-avg,adaptive-max}: the pooling ops.
- recurrence:{lstm,gru,rnn}: PyTorch's RNN modules reach the device as per-step cell ops, so one
  source line issuing the same gate ops many times; the cell kind from its gate pattern
  (3 sigmoids + 2 tanh per step: lstm; 2 sigmoids + 1 tanh: gru; tanh only: rnn).
- embedding:{lookup,bag}: aten::embedding / aten::_embedding_bag.
- output:{logits,sequence,masks,boxes,flow,features}: from the task in the entry's name.
- dtype:<dtype>: every dtype of a recorded tensor.
The op set ("op:aten::name", without the overload) is kept separately for the set cover.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(HERE, "features.json")

ACTIVATIONS = {
    "aten::relu": "relu", "aten::relu_": "relu", "aten::threshold": "relu", "aten::silu": "silu", "aten::silu_": "silu",
    "aten::sigmoid": "sigmoid", "aten::tanh": "tanh", "aten::hardswish": "hardswish", "aten::hardswish_": "hardswish",
    "aten::hardsigmoid": "hardsigmoid", "aten::hardsigmoid_": "hardsigmoid", "aten::leaky_relu": "leaky-relu",
    "aten::leaky_relu_": "leaky-relu", "aten::elu": "elu", "aten::elu_": "elu", "aten::softplus": "softplus",
    "aten::mish": "mish", "aten::mish_": "mish", "aten::glu": "glu", "aten::_prelu_kernel": "prelu",
    "aten::hardtanh": "hardtanh", "aten::hardtanh_": "hardtanh", "aten::_softmax": "softmax",
    "aten::_log_softmax": "log-softmax", "aten::gelu": "gelu",
}
NORMS = {
    "aten::native_layer_norm": "layer", "aten::native_batch_norm": "batch", "aten::_native_batch_norm_legit": "batch",
    "aten::_native_batch_norm_legit_functional": "batch", "aten::native_group_norm": "group",
    "aten::_fused_rms_norm": "rms", "aten::rms_norm": "rms",
}
POOLS = {
    "aten::max_pool2d_with_indices": "max", "aten::max_pool3d_with_indices": "max", "aten::max_pool1d": "max",
    "aten::avg_pool2d": "avg", "aten::avg_pool3d": "avg", "aten::avg_pool1d": "avg",
    "aten::_adaptive_avg_pool2d": "adaptive-avg", "aten::_adaptive_avg_pool3d": "adaptive-avg",
    "aten::adaptive_avg_pool2d": "adaptive-avg", "aten::adaptive_max_pool2d": "adaptive-max",
    "aten::adaptive_max_pool3d": "adaptive-max",
}
TASK_OUTPUT = [
    (r"detection|detr|yolo|fasterrcnn|maskrcnn|retinanet|fcos|ssd|keypointrcnn", "boxes"),
    (r"segmentation|deeplab|fcn_|lraspp|segformer|mask2former|maskformer|upernet", "masks"),
    (r"raft|flow", "flow"),
    (r"causal-lm|seq2seq|masked-lm|ctc|token-classification|speech-seq2seq|text2text", "sequence"),
    (r"feature-extraction|/base$|backbone", "features"),
]


def _base(op):
    return op.split(".")[0]


def _shape(x):
    return x.get("shape") if isinstance(x, dict) else None


def _outs(o):
    """The op's result summaries: its returns, or the tensor it wrote (out= and in-place forms)."""
    outs = [x for x in o["outputs"] if x]
    if not outs:
        outs = [o["args"][k] for k in ("out", "grad_input", "self") if isinstance(o["args"].get(k), dict)][:1]
    return outs


def derive(ops, name, input_kind):
    """(features, op names) of one model's traced forward + backward."""
    f = {f"input:{input_kind}"}
    names = [_base(o["op"]) for o in ops]
    opset = set(names)
    for o in ops:
        for v in list(o["args"].values()) + o["outputs"]:
            for t in (v if isinstance(v, list) else [v]):
                if isinstance(t, dict) and "dtype" in t:
                    f.add(f"dtype:{t['dtype']}")
    for op in opset:
        if op in ACTIVATIONS:
            f.add(f"act:{ACTIVATIONS[op]}")
        if op in NORMS:
            f.add(f"norm:{NORMS[op]}")
        if op in POOLS:
            f.add(f"pool:{POOLS[op]}")
    for o in ops:
        op = _base(o["op"])
        a = o["args"]
        if op == "aten::gelu" and a.get("approximate") == "tanh":
            f.discard("act:gelu")
            f.add("act:gelu-tanh")
        if op == "aten::convolution":
            w = _shape(a.get("weight")) or []
            x = _shape(a.get("input")) or []
            if len(w) == 4 and len(x) == 4 and x[2] == 1 and w[2] == 1 and x[3] > 1:
                # conv1d reaches non-CPU backends as a conv2d over [N, C, 1, L]; a 2-D conv on a
                # 1x1 map (late stages of a CNN at tiny inputs) stays 2-D
                f.add("conv:1d")
            elif len(w) >= 3:
                f.add(f"conv:{len(w) - 2}d")
            groups = a.get("groups", 1) or 1
            if groups > 1:
                f.add("conv:depthwise" if len(x) > 1 and groups == x[1] else "conv:grouped")
            if a.get("transposed"):
                f.add("conv:transposed")
            if any(d > 1 for d in (a.get("dilation") or [])):
                f.add("conv:dilated")
            if any(s > 1 for s in (a.get("stride") or [])):
                f.add("conv:strided")
        if op in ("aten::embedding", "aten::embedding_dense_backward", "aten::embedding_backward"):
            f.add("embedding:lookup")
        if op in ("aten::_embedding_bag", "aten::embedding_bag", "aten::_embedding_bag_forward_only",
                  "aten::_embedding_bag_backward"):
            f.add("embedding:bag")
        if op == "aten::native_batch_norm" or op == "aten::_native_batch_norm_legit":
            x = _shape(a.get("input")) or []
            # instance norm runs batch norm over [1, N*C, ...]
            if len(x) >= 3 and x[0] == 1 and a.get("training"):
                f.add("norm:instance")
        if op == "aten::roll" and len(_shape(a.get("self")) or []) == 4 and len(a.get("dims") or []) == 2:
            f.add("attention:shifted-window")  # Swin: a feature map [B, H, W, C] rolled over H and W
        if op in ("aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_flash_attention",
                  "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::scaled_dot_product_attention",
                  "aten::_scaled_dot_product_attention_math"):
            q, k = _shape(a.get("query")) or [], _shape(a.get("key")) or []
            f.add("attention:causal" if a.get("is_causal") else "attention:full")
            if q and k and q[-2] != k[-2]:
                f.add("attention:cross")
            if a.get("enable_gqa") or (len(q) == 4 and len(k) == 4 and q[1] != k[1]):
                f.add("attention:grouped-query")
    # Attention from eager ops: a softmax over the last axis of scores [.., L, S] that a batched
    # product made (views between them are not recorded, so match the last two dimensions).
    scores = set()
    for o in ops:
        if _base(o["op"]) in ("aten::bmm", "aten::baddbmm"):
            for out in _outs(o):
                s = _shape(out)
                if s and len(s) == 3:
                    scores.add(tuple(s[-2:]))
    masks = any(_base(o["op"]) in ("aten::tril", "aten::triu") for o in ops)
    for o in ops:
        if _base(o["op"]) != "aten::_softmax":
            continue
        s = _shape(o["args"].get("self")) or []
        dim = o["args"].get("dim")
        if len(s) >= 3 and dim in (-1, len(s) - 1) and tuple(s[-2:]) in scores:
            f.add("attention:full")
            if s[-1] != s[-2]:
                f.add("attention:cross")
            L, S = s[-2], s[-1]
            for p in ops:
                out = [_shape(x) for x in _outs(p)]
                if _base(p["op"]) in ("aten::le", "aten::lt", "aten::ge", "aten::gt") and any(
                        x and len(x) >= 2 and x[-2:] == [L, S] and L == S and L > 1 for x in out):
                    masks = True
    if masks and any(x.startswith("attention:") for x in f):
        f.add("attention:causal")
    if "aten::repeat_interleave" in opset and any(x.startswith("attention:") for x in f):
        f.add("attention:grouped-query")
    # Grouped-query attention spelled out (HF repeat_kv): the key/value heads expanded to
    # [B, Hkv, n_rep, S, D] and copied, then used by a batched product over B*Hkv*n_rep.
    if any(x.startswith("attention:") for x in f):
        bmm_shapes = {tuple(_shape(o["args"].get(k)) or ()) for o in ops if _base(o["op"]) == "aten::bmm"
                      for k in ("self", "mat2")}
        for o in ops:
            s = _shape(o["args"].get("self")) if _base(o["op"]) == "aten::copy_" else None
            if s and len(s) == 5 and s[2] > 1 and ((s[0] * s[1] * s[2], s[3], s[4]) in bmm_shapes or
                                                   (s[0] * s[1] * s[2], s[4], s[3]) in bmm_shapes):
                f.add("attention:grouped-query")
                break
    # rms norm spelled out: x * rsqrt(mean(x^2) + eps)
    if "aten::rsqrt" in opset and "aten::mean" in opset and "aten::pow" in opset and not any(
            x.startswith("norm:layer") for x in f):
        f.add("norm:rms")
    # Recurrence: one source line issuing the same gate ops for many steps.
    gates = collections.defaultdict(collections.Counter)
    for o in ops:
        src = o.get("source") or ""
        if _base(o["op"]) in ("aten::sigmoid", "aten::tanh") and "(backward)" not in src:
            gates[src][_base(o["op"])] += 1  # the forward pass: a backward's tanh would look like an RNN
    for line, c in gates.items():
        sig, tanh = c["aten::sigmoid"], c["aten::tanh"]
        if sig + tanh < 8:
            continue
        if sig and tanh and abs(sig / tanh - 1.5) < 0.2:
            f.add("recurrence:lstm")
        elif sig and tanh and abs(sig / tanh - 2.0) < 0.2:
            f.add("recurrence:gru")
        elif tanh >= 8 and not sig:
            f.add("recurrence:rnn")
    out = "logits"
    for pattern, form in TASK_OUTPUT:
        if re.search(pattern, name):
            out = form
            break
    f.add(f"output:{out}")
    return sorted(f), sorted(opset)


WORKER = r"""
import json, os, sys, time, traceback
sys.path.insert(0, {here!r})
import torch, torch_trn
from registry import all_models
from features import derive
models = all_models()
out = open(sys.argv[2], "a", buffering=1)
for name in sys.argv[1].split(","):
    zm = models[name]
    t0 = time.time()
    try:
        model = zm.build().to("neuron")
        inputs = {{k: (v.to("neuron") if isinstance(v, torch.Tensor) else v) for k, v in zm.make_inputs(0).items()}}
        with torch_trn.trace_ops() as t:
            loss = zm.loss(model, inputs)
            loss.backward()
        feats, ops = derive(t.ops, name, zm.input_kind)
        rec = {{"name": name, "features": feats, "ops": ops, "recorded": len(t.ops), "s": round(time.time() - t0, 2)}}
    except Exception as e:
        try:
            torch_trn.sync()
        except Exception:
            pass
        rec = {{"name": name, "error": (type(e).__name__ + ": " + str(e)).splitlines()[0][:300]}}
    out.write(json.dumps(rec) + "\n")
"""


def run_chunks(names, jobs, timeout, on_chunk=None):
    """Traces `names` in worker processes; `on_chunk(results)` runs after each finished chunk."""
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        chunks = [names[i:i + 8] for i in range(0, len(names), 8)]
        pending = list(enumerate(chunks))
        running = []
        env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
        env.update(NEURON_MODE="eager", PYTHONPATH=os.path.join(REPO, "python"), NEURON_CACHE_DIR="off")
        while pending or running:
            while pending and len(running) < jobs:
                i, chunk = pending.pop(0)
                path = os.path.join(tmp, f"c{i}.jsonl")
                p = subprocess.Popen([sys.executable, "-c", WORKER.format(here=HERE), ",".join(chunk), path], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                running.append((p, chunk, path, time.time()))
            time.sleep(0.2)
            for entry in list(running):
                p, chunk, path, t0 = entry
                if p.poll() is None and time.time() - t0 < timeout:
                    continue
                if p.poll() is None:
                    p.kill()
                running.remove(entry)
                done = {}
                if os.path.exists(path):
                    for line in open(path):
                        r = json.loads(line)
                        done[r["name"]] = r
                results.update(done)
                rest = [n for n in chunk if n not in done]
                if rest:  # crashed or timed out: the first unfinished model is blamed, the rest retried
                    err = (p.stderr.read() or "").strip().splitlines()
                    results[rest[0]] = {"name": rest[0], "error": f"worker died (exit {p.returncode}): "
                                                                   f"{err[-1][:200] if err else 'timeout'}"}
                    if rest[1:]:
                        pending.append((len(chunks) + len(pending) + len(running) + 1000, rest[1:]))
                print(f"  {len(results)}/{len(names)} models traced", flush=True)
                if on_chunk:
                    on_chunk(done if not rest else {**done, rest[0]: results[rest[0]]})
    return results


def dumps(data):
    """features.json's text: valid JSON with one line per model, so diffs show which models changed."""
    parts = []
    for key in ("failed", "models"):
        rows = [f" {json.dumps(n)}: {json.dumps(v, sort_keys=True)}" for n, v in sorted(data[key].items())]
        parts.append(f'"{key}": {{' + ("\n" + ",\n".join(rows) + "\n" if rows else "") + "}")
    return "{" + ",\n".join(parts) + "}\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default=None, help="regex on model names")
    p.add_argument("--shard", default=None, help="I/N")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", default=DEFAULT_OUT)
    p.add_argument("--fresh", action="store_true", help="retrace models already in --out")
    p.add_argument("--chunk-timeout", type=float, default=900)
    args = p.parse_args(argv)
    sys.path.insert(0, HERE)
    from registry import all_models
    names = list(all_models())
    if args.only:
        names = [n for n in names if re.search(args.only, n)]
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        names = names[i::n]
    data = {"models": {}, "failed": {}}
    if os.path.exists(args.out):
        with open(args.out) as f:
            data = json.load(f)
    if not args.fresh:
        names = [n for n in names if n not in data["models"] and n not in data["failed"]]
    print(f"tracing {len(names)} models ({args.jobs} workers)", flush=True)
    t0 = time.time()

    def merge(results):  # after every chunk, so an interrupted run keeps what it traced
        for name, r in results.items():
            data["models"].pop(name, None)
            data["failed"].pop(name, None)
            if "error" in r:
                data["failed"][name] = r["error"].replace(REPO + os.sep, "")  # the same text in every checkout
            else:
                data["models"][name] = {"features": r["features"], "ops": r["ops"], "recorded": r["recorded"]}
        data["models"] = dict(sorted(data["models"].items()))
        data["failed"] = dict(sorted(data["failed"].items()))
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(dumps(data))
        os.replace(tmp, args.out)

    merge(run_chunks(names, args.jobs, args.chunk_timeout, on_chunk=merge))
    feats = {x for m in data["models"].values() for x in m["features"]}
    print(f"{len(data['models'])} models with features ({len(feats)} distinct features), "
          f"{len(data['failed'])} failed; {time.time() - t0:.0f}s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
