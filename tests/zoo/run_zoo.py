"""The zoo tiers: train zoo models on the neuron device in each mode and compare with CPU.

    PYTHONPATH=python python3 tests/zoo/run_zoo.py --tier 2            # the representative set
    PYTHONPATH=python python3 tests/zoo/run_zoo.py --tier 3 [--shard I/N] [--report docs/zoo_report.md]

For every (model, mode): 2 training steps (forward, loss, backward, AdamW step) on the device
and the same 2 steps on the CPU from the same weights and inputs; the run passes when every
step's loss agrees within --rtol (relative, with an absolute floor of --atol). A run outside
--rtol still passes when its difference is float32 rounding, judged against a float64 CPU run
of the same steps from the same weights:
  - step 1 (the forward on identical weights): the device is no farther from float64 than
    F64_FACTOR_STEP1 (4) times CPU float32 is. Ill-conditioned forwards need this: BatchNorm
    over 2 samples normalises a difference of two nearly equal values, so hf/levit's step-1
    loss is 2.3e-3 from float64 on CPU float32 (the device: 1.4e-3);
  - every step: the device is no farther from float64 than F64_FACTOR (10) times CPU float32
    is. Adam's first update is ~lr * sign(g) even for a noise-level g, so a BatchNorm bias
    gradient that cancels to 0 on CPU and to 5e-7 on the device moves by a full step; deep BN
    nets on 2-sample batches then differ by 1e-2..1e-1 at step 2, and CPU float32 differs from
    float64 by as much (one sample of a noisy distance, hence the factor).
When CPU float32 itself (or a noise sample, below) is more than UNINFORMATIVE (50 %) from float64, the later steps say
nothing (timm/dla102: BatchNorm over 2 values per channel has a near-zero true input gradient,
so every layer before it gets rounding noise, which Adam's first step turns into full-size
updates; CPU float32's step-2 loss is 0.0235, float64's 0.00105) and only step 1 is judged
(the record's step1_only). "CPU float32" is one sample of the rounding noise; when the device
fails these checks against it, up to three more are taken (noise_samples in the record) and the
largest distance counts: CPU float32 summed on 2 threads (another order; tv/efficientnet_b1's
step-2 loss is 1.0e-3 from float64 on 1 thread, 2.8e-3 on 2, 1.1e-2 in compile mode), and from
weights moved by +-1 ulp (tv/mnasnet0_5's step 2 is chaotic: three such draws move CPU's loss
by 0.3 %, 12 % and 53 %; compile mode's is 12 % off). The record keeps the distances
(cpu_vs_f64, device_vs_f64 over all steps; *_step1 for step 1; noise_samples). A model whose
float64 run would not fit in memory (32 bytes a parameter; --f64-budget-gb) is judged the same
way against CPU float32 and its noise samples (judged_without_f64),
and the groups that did not compile (compile_failures: reason -> count; their ops ran op by op,
so the result stands, but each is a lowering bug the report lists). Tier 2 runs the
models of tests/zoo/representative.json, tier 3 the whole registry. Each (mode, chunk of models)
runs in a worker process (NEURON_MODE set; compile and adaptive at NEURON_OPT_LEVEL=0, the
same lowering with ~4x faster LLVM; one CPU thread each, CPU reference included), so a crash
costs one chunk's unfinished models.

Results go to --results (JSON lines, default build/zoo/tier<N>.jsonl); a run skips the (model,
mode) pairs already there unless --fresh (which drops the old results of the selected pairs
only) or, with --rerun, those not passing; so tier 3 is resumable. Known failures live in
tests/zoo/expected_failures.txt, one `<model> | <mode|*> | <reason>` per line: such a failure is
reported as expected; any other failure fails the run (exit 1), and so does an expected failure
that now passes (remove its line). --report writes the tier-3 table (docs/zoo_report.md).
"""
import argparse
import collections
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODES = ("eager", "compile", "adaptive")
# How much farther from float64 than CPU float32 the device may be after step 1 (see the docstring).
F64_FACTOR = 10
# The same for step 1 alone, where both runs start from identical weights and inputs.
F64_FACTOR_STEP1 = 4
# When CPU float32's own losses are this far (relative) from float64's, the later steps carry
# no information (neither float32 run reproduces float64) and only step 1 is judged; the record
# says so (step1_only) and the report counts such runs.
UNINFORMATIVE = 0.5
# A model with more parameters than this is not kept on the CPU during its device steps; the
# CPU reference rebuilds it afterwards. timm/resnetv2_152x4_bit (928M) peaks at ~21 GB resident
# in compile mode without its CPU copy: the copy's 3.7 GB more would not fit in 24 GiB.
REBUILD_PARAMS = 300_000_000

WORKER = r"""
import copy, gc, json, math, os, sys, time
sys.path.insert(0, {here!r})
import torch, torch_trn
from registry import all_models
models = all_models()
out = open(sys.argv[2], "a", buffering=1)
STEPS = {steps}

F64_FACTOR = {f64_factor}
F64_FACTOR_STEP1 = {f64_factor_step1}
UNINFORMATIVE = {uninformative}
REBUILD_PARAMS = {rebuild_params}

def rel(got, ref):
    if any(math.isnan(a) != math.isnan(b) for a, b in zip(got, ref)):
        return float("inf")
    return max((abs(a - b) / max(abs(b), {atol}) for a, b in zip(got, ref)), default=0.0)

def fingerprint(model):
    # build() is deterministic (zoo_model.py), so the float64 run rebuilds the initial weights
    # instead of keeping a copy of them: one copy fewer of a ~600M-parameter model.
    return [(k, tuple(v.shape), float(v.double().sum())) for k, v in model.state_dict().items()
            if v.is_floating_point()]

ADAPTIVE = os.environ["NEURON_MODE"] == "adaptive"

def _mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None

def _status_mb(key):
    # VmRSS / VmHWM (peak resident) of this worker, in MB; None where /proc is missing
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) // 1024
    except OSError:
        return None
    return None

def _reset_peak_rss():
    # Linux >= 4.0: writing 5 to clear_refs resets VmHWM to the current RSS
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False

def train(model, inputs, device):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(STEPS):
        loss = zm.loss(model, inputs)
        loss.backward()
        opt.step(); opt.zero_grad()
        losses.append(float(loss.item()))
        if device == "neuron" and ADAPTIVE and step + 1 < STEPS:
            # Let the background compiler catch up, so the next step runs the groups it built
            # (compiled and op-by-op groups mixed, as in a long run). Without the wait, 2 steps
            # run almost every op one by one and adaptive's compiled code goes untested.
            torch_trn.wait_for_compiles()
    return losses

for name in sys.argv[1].split(","):
    zm = models[name]
    rec = {{"model": name, "mode": os.environ["NEURON_MODE"]}}
    t0 = time.time()
    try:
        cpu_model = zm.build()
        dev_model = copy.deepcopy(cpu_model).to("neuron")
        init_print = fingerprint(cpu_model)
        n_params = sum(p.numel() for p in cpu_model.parameters())
        cpu_in = zm.make_inputs(0)
        rebuild = n_params > REBUILD_PARAMS
        if rebuild:
            # The CPU copy's weights (4 bytes a parameter) would sit idle in RAM through the
            # device steps: rebuild them for the CPU run instead (build() is deterministic).
            cpu_model = None
            gc.collect()
        dev_in = {{k: (v.to("neuron") if isinstance(v, torch.Tensor) else v) for k, v in cpu_in.items()}}
        torch_trn.reset_stats()
        torch_trn.reset_peak_memory_stats()
        alloc_before = torch_trn.memory_allocated()
        peak_reset = _reset_peak_rss()
        base_rss = _status_mb("VmRSS")
        t1 = time.time()
        dev = train(dev_model, dev_in, "neuron")
        rec["device_s"] = round(time.time() - t1, 3)
        torch_trn.wait_for_compiles()
        if peak_reset and base_rss is not None:
            # resident memory before the device steps (the CPU model, the device model and the
            # inputs) and its peak during them: the steps' own cost is the difference
            rec["rss_before_mb"], rec["device_peak_rss_mb"] = base_rss, _status_mb("VmHWM")
        # device memory of the steps themselves (gradients, optimizer state, activations)
        rec["device_peak_alloc_mb"] = (torch_trn.max_memory_allocated() - alloc_before) // (1 << 20)
        s = torch_trn.stats()
        del dev_model, dev_in  # the CPU run does not need the device's weights and Adam state
        torch_trn.empty_cache()  # nor the device's cached free blocks (up to 2 GiB)
        if rebuild:
            cpu_model = zm.build()
            if fingerprint(cpu_model) != init_print:
                raise RuntimeError("build() is not deterministic: a second build has other weights")
        ref = train(cpu_model, cpu_in, "cpu")
        worst = rel(dev, ref)
        ok = worst <= {rtol}
        if not ok and math.isfinite(worst):
            # Is the difference float32 rounding (amplified by an ill-conditioned forward, or by
            # Adam's first steps, whose update is ~lr * sign(g) even for a noise-level g)? Then
            # CPU float32 is about as far from a float64 run as the device is: compare both with
            # float64 from the same weights.
            try:
                del cpu_model
                # float64 weights, gradients and AdamW's two moments: 32 bytes a parameter. A
                # ~640M-parameter model (tv/regnet_y_128gf) needs ~20 GB, more than 24 GiB
                # leaves: then the CPU float32 samples below are judged against CPU float32
                # itself (judged_without_f64), never a worker the OOM killer takes.
                need = 32 * n_params
                avail = {f64_budget} if {f64_budget} is not None else _mem_available()
                if avail is not None and {f64_budget} is None:
                    avail *= 0.8
                if avail is None or need <= avail:
                    m64 = zm.build()
                    if fingerprint(m64) != init_print:
                        raise RuntimeError("build() is not deterministic: a second build has other weights")
                    m64 = m64.double()
                    in64 = {{k: (v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
                             for k, v in cpu_in.items()}}
                    ref64 = train(m64, in64, "cpu")
                    m64 = None
                    rec.update(f64_losses=ref64, cpu_vs_f64=rel(ref, ref64), device_vs_f64=rel(dev, ref64),
                               cpu_vs_f64_step1=rel(ref[:1], ref64[:1]), device_vs_f64_step1=rel(dev[:1], ref64[:1]))
                    base, dev_d, dev_d1 = ref64, rec["device_vs_f64"], rec["device_vs_f64_step1"]
                    noise, noise1 = [rec["cpu_vs_f64"]], [rec["cpu_vs_f64_step1"]]
                else:
                    rec["f64_error"] = (f"MemoryError: the float64 reference run needs ~{{need / 1e9:.1f}} GB "
                                        f"({{n_params / 1e6:.0f}}M parameters), {{avail / 1e9:.1f}} GB available "
                                        "for it; judged against CPU float32 samples instead")
                    rec["judged_without_f64"] = True
                    base, dev_d, dev_d1 = ref, worst, rel(dev[:1], ref[:1])
                    noise, noise1 = [], []

                def judge():
                    # the device's distance from `base` vs the noise samples' distances from it
                    n_all = max([x for x in noise if math.isfinite(x)], default=0.0)
                    n_1 = max([x for x in noise1 if math.isfinite(x)], default=0.0)
                    if n_all > UNINFORMATIVE:
                        rec["step1_only"] = True
                    good = dev_d1 <= max({rtol}, F64_FACTOR_STEP1 * n_1)
                    return good and (rec.get("step1_only") or dev_d <= max({rtol}, F64_FACTOR * n_all))

                ok = bool(noise) and judge()
                if not ok:
                    # One CPU float32 run is one sample of the rounding noise. More samples: CPU
                    # float32 summed in another order (2 threads), and from weights moved by +-1 ulp
                    # (float32 rounding of the weights themselves). Where step 2 is chaotic they
                    # spread widely: tv/mnasnet0_5's CPU step-2 loss moves by 0.3 %, 12 % and 53 %
                    # for three +-1 ulp draws (a ReLU whose float64 input is exactly 0 in a
                    # zero-variance BatchNorm channel flips). The largest distance counts (a
                    # sample that went NaN/inf says nothing about the noise's size); the samples
                    # stop as soon as the device is within it.
                    rec["noise_samples"] = {{}}
                    for sample in ("2 threads", "+-1 ulp seed 0", "+-1 ulp seed 1"):
                        m2 = zm.build()
                        if fingerprint(m2) != init_print:
                            raise RuntimeError("build() is not deterministic: a second build has other weights")
                        if sample.startswith("+-1 ulp"):
                            gen = torch.Generator().manual_seed(int(sample[-1]))
                            with torch.no_grad():
                                for prm in m2.parameters():
                                    if prm.is_floating_point():
                                        prm.mul_(1 + 2.0 ** -23 * torch.randint(-1, 2, prm.shape, generator=gen).to(prm.dtype))
                        torch.set_num_threads(2 if sample == "2 threads" else 1)
                        try:
                            ref2 = train(m2, cpu_in, "cpu")
                        finally:
                            torch.set_num_threads(1)
                        m2 = None
                        rec["noise_samples"][sample] = [rel(ref2, base), rel(ref2[:1], base[:1]), ref2]
                        noise.append(rel(ref2, base))
                        noise1.append(rel(ref2[:1], base[:1]))
                        ok = judge()
                        if ok:
                            break
            except Exception as e:
                rec["f64_error"] = (type(e).__name__ + ": " + str(e)).splitlines()[0][:200]
        rec.update(losses=dev, cpu_losses=ref, max_rel=worst,
                   status="pass" if ok else "fail",
                   host_fallback_ops=sorted(s["host_fallbacks"]),
                   compiled_share=round(s["ops_run_compiled"] / max(s["ops_executed"], 1), 4),
                   ops=s["ops_executed"])
        if ADAPTIVE:
            rec["adaptive_waited"] = True  # step 2 ran after the compiler caught up (train())
        if s["compile_failures"]:
            rec["compile_failures"] = {{k.splitlines()[0][:200] + " " + (k.splitlines()[1][:200] if "\n" in k else ""): v
                                       for k, v in s["compile_failures"].items()}}
        if rec["status"] == "fail":
            rec["error"] = f"loss differs from CPU: max rel {{worst:.2e}} ({{dev}} vs {{ref}})"
            if "cpu_vs_f64" in rec:
                rec["error"] += (f"; vs float64: device {{rec['device_vs_f64']:.2e}}, "
                                 f"CPU float32 {{rec['cpu_vs_f64']:.2e}} (step 1: "
                                 f"{{rec['device_vs_f64_step1']:.2e}}, {{rec['cpu_vs_f64_step1']:.2e}})")
            if rec.get("judged_without_f64"):
                rec["error"] += "; " + rec["f64_error"] + " (distances below: from CPU float32)"
            for sample, (d, d1, _) in rec.get("noise_samples", {{}}).items():
                rec["error"] += f"; CPU float32 {{sample}} {{d:.2e}} (step 1: {{d1:.2e}})"
    except Exception as e:
        try:
            torch_trn.sync()
        except Exception:
            pass
        rec.update(status="error", error=(type(e).__name__ + ": " + str(e)).splitlines()[0][:300])
    cpu_model = dev_model = dev_in = m64 = None  # free this model before building the next
    rec["s"] = round(time.time() - t0, 2)
    out.write(json.dumps(rec) + "\n")
"""


def load_expected(path):
    exp = {}
    if not os.path.exists(path):
        return exp
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|", 2)]
        if len(parts) != 3 or not parts[2]:
            raise SystemExit(f"{path}: bad line (want `model | mode|* | reason`): {line}")
        exp[(parts[0], parts[1])] = parts[2]
    return exp


def expected_reason(exp, model, mode):
    return exp.get((model, mode)) or exp.get((model, "*"))


def run(pairs, args, sink):
    """pairs: [(mode, [models])] -> records; each finished chunk's records are also written to
    `sink` (a file) at once, so an interrupted run keeps them."""
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        # Modes interleaved chunk by chunk, so a run stopped early has every mode for its models.
        per_mode = [[(mode, names[i:i + args.chunk]) for i in range(0, len(names), args.chunk)]
                    for mode, names in pairs]
        # Work items are (mode, models, alone): a model whose worker the kernel killed (SIGKILL
        # without our timeout: the OOM killer, as the ~600M-parameter models are with two
        # workers on 24 GiB) is tried once more alone, next, once the running workers finish.
        work = [(*w, False) for group in itertools.zip_longest(*per_mode) for w in group if w]
        running, n = [], 0
        total = sum(len(c) for _, c, _ in work)
        while work or running:
            while work and len(running) < args.jobs and not any(e[-1] for e in running):
                if work[0][2] and running:
                    break  # an item to run alone waits for the running workers to finish
                mode, chunk, alone = work.pop(0)
                n += 1
                path = os.path.join(tmp, f"w{n}.jsonl")
                env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
                # One CPU thread per worker, for the CPU reference and for the executor alike:
                # --jobs workers then fill the cores without OpenMP threads spinning against each
                # other (2x faster on 2 cores), and eager runs sum in the CPU's order, so their
                # losses match CPU bit for bit instead of needing the float64 check.
                env.update(NEURON_MODE=mode, NEURON_CACHE_DIR="off", PYTHONPATH=os.path.join(REPO, "python"),
                           OMP_NUM_THREADS="1", NEURON_EXECUTOR_THREADS="1")
                if mode != "eager":
                    env["NEURON_OPT_LEVEL"] = "0"
                if mode == "compile":
                    # the segment builders: the cores this worker's share allows (adaptive keeps
                    # its one background compiler)
                    env["NEURON_COMPILE_WORKERS"] = str(max(1, (os.cpu_count() or 1) // args.jobs))
                # stderr goes to a file: a pipe nobody reads until the worker ends would block a
                # worker that warns a lot (every group that does not compile warns).
                err_path = os.path.join(tmp, f"w{n}.err")
                with open(err_path, "w") as err_file:
                    code = WORKER.format(here=HERE, steps=args.steps, rtol=args.rtol, atol=args.atol,
                                         f64_factor=F64_FACTOR, f64_factor_step1=F64_FACTOR_STEP1,
                                         uninformative=UNINFORMATIVE, rebuild_params=REBUILD_PARAMS,
                                         f64_budget=None if args.f64_budget_gb is None else args.f64_budget_gb * 1e9)
                    p = subprocess.Popen([sys.executable, "-c", code, ",".join(chunk), path],
                                         env=env, stdout=subprocess.DEVNULL, stderr=err_file)
                running.append((p, mode, chunk, path, err_path, time.time(), alone))
            time.sleep(0.2)
            for entry in list(running):
                p, mode, chunk, path, err_path, t0, alone = entry
                if p.poll() is None and time.time() - t0 < args.chunk_timeout:
                    continue
                timed_out = p.poll() is None
                if timed_out:
                    p.kill()
                    p.wait()
                running.remove(entry)
                done = [json.loads(line) for line in open(path)] if os.path.exists(path) else []
                rest = [m for m in chunk if m not in {r["model"] for r in done}]
                if rest:
                    err = [l for l in open(err_path, errors="replace").read().splitlines() if l.strip()]
                    oom = p.returncode == -9 and not timed_out
                    if oom and not alone:
                        work.insert(0, (mode, rest[:1], True))
                    else:
                        why = (f"timed out: its chunk ran past {args.chunk_timeout:.0f} s" if timed_out else
                               "killed by SIGKILL while running alone (the kernel's OOM killer: out of memory)"
                               if oom else
                               f"worker died (exit {p.returncode}): {err[-1][:200] if err else 'no message'}")
                        done.append({"model": rest[0], "mode": mode, "status": "error", "error": why})
                    if rest[1:]:
                        work.append((mode, rest[1:], False))
                records += done
                for r in done:
                    sink.write(json.dumps(r) + "\n")
                sink.flush()
                print(f"  {len(records)}/{total} runs done", flush=True)
    return records


def judged_by(r):
    """How a run outside rtol was judged: "float64" (the float64 check), "f32 samples" (CPU float32
    noise samples alone: the float64 run would not fit), "beyond rtol" (one of the two, read back
    from a report that did not say which), or None (within rtol, or not judged)."""
    if r.get("judged_without_f64"):
        return "f32 samples"
    if "cpu_vs_f64" in r:
        return "float64"
    return r.get("judged_by")


def write_report(path, records, features, tier, zoo_size):
    by_model = collections.defaultdict(dict)
    for r in records:
        by_model[r["model"]][r["mode"]] = r
    counts = {m: collections.Counter(by_model[n][m]["status"] for n in by_model if m in by_model[n]) for m in MODES}
    lines = [f"# Zoo report (tier {tier})", "",
             "Generated by `python3 tests/zoo/run_zoo.py --tier 3 --report docs/zoo_report.md` (`./dev test --full`).",
             "Per model: its features (tests/zoo/features.json), the result per mode (2 AdamW steps vs CPU), "
             "the device time of the eager run, the ops that fell back to the host, and the share of ops "
             "run compiled in compile and in adaptive mode (adaptive waits for the background compiler "
             "after step 1, so step 2 runs what it built; step 1 runs a group compiled only when the same "
             "group, as in a repeated block, was built earlier in it: without repeats ~0.5 is the most). "
             "Adaptive shares of runs before 2026-12-02 16:34 UTC are lower: groups were then cut every "
             "64 ops, and AdamW's first step, which also creates its state, shifted every later cut, so "
             "step 2's optimizer ran op by op (docs/adaptive.md, Cuts).", "",
             f"Models with results: {len(by_model)} of the {zoo_size} the run covers"
             + ("." if len(by_model) >= zoo_size else " (a partial run: rerun the command to resume it)."), "",
             "| mode | models | pass | fail | error | expected |", "|---|---|---|---|---|---|"]
    for m in MODES:
        c = counts[m]
        lines.append(f"| {m} | {sum(c.values())} | {c['pass']} | {c['fail']} | {c['error']} | {c['xfail']} |")
    passes = [r for rs in by_model.values() for r in rs.values() if r["status"] == "pass"]
    how = collections.Counter(judged_by(r) for r in passes)
    lines += ["", f"Of the {len(passes)} passing runs, {how['float64']} were outside rtol and passed by the float64 "
              f"check (their difference from CPU is float32 rounding; cells say \"by float64\"), "
              f"{how['f32 samples']} by CPU float32 noise samples alone (the float64 run would not fit in "
              f"memory; \"by f32 samples\")"
              + (f", {how['beyond rtol']} by one of the two (\"beyond rtol\": read back from a report that "
                 "did not say which)" if how["beyond rtol"] else "")
              + f", and {sum(bool(r.get('step1_only')) for r in passes)} of those were judged on step 1 only (CPU "
              f"float32's own later losses are more than 50 % from float64's). The cells give the max "
              "relative loss difference from CPU."]
    unwaited = [r for rs in by_model.values() for r in rs.values()
                if r["mode"] == "adaptive" and not r.get("adaptive_waited")]
    if unwaited:
        lines += ["", f"{len(unwaited)} adaptive results (\"no wait\") predate the wait for the background "
                  "compiler after step 1: their step 2 ran almost every op one by one (rerun them with "
                  "--fresh --modes adaptive)."]
    seeded = [r for rs in by_model.values() for r in rs.values() if r.get("from_report")]
    if seeded:
        lines += ["", f"{len(seeded)} of the results were read back from an earlier report "
                  f"({', '.join(sorted({r['from_report'] for r in seeded}))}; run_zoo.py --seed-from-report): "
                  "a report keeps status, max difference and how a pass outside rtol was judged, but not "
                  "losses, float64 distances or compile failures, so the list of groups that did not compile "
                  "omits them."]
    lines += ["", "| model | features | eager | compile | adaptive | eager s | host-fallback ops | compiled share (compile / adaptive) |",
              "|---|---|---|---|---|---|---|---|"]
    for name in sorted(by_model):
        rs = by_model[name]
        feats = [x for x in features.get("models", {}).get(name, {}).get("features", [])
                 if not x.startswith(("dtype:", "input:", "output:"))]
        cells = []
        for m in MODES:
            r = rs.get(m)
            cells.append("—" if r is None else r["status"] + (f" ({r['max_rel']:.1e})" if "max_rel" in r else "")
                         + (f" by {judged_by(r)}" if r["status"] == "pass" and judged_by(r) else "")
                         + (" step 1 only" if r.get("step1_only") else "")
                         + (" no wait" if m == "adaptive" and not r.get("adaptive_waited") else ""))
        e = rs.get("eager", {})
        c = rs.get("compile", {})
        a = rs.get("adaptive", {})
        share = "" if not c and not a else f"{c.get('compiled_share', '—')} / {a.get('compiled_share', '—')}"
        lines.append(f"| {name} | {', '.join(feats)} | {' | '.join(cells)} | {e.get('device_s', '')} | "
                     f"{', '.join(x.replace('aten::', '') for x in e.get('host_fallback_ops', []))} | "
                     f"{share} |")
    failures = [r for rs in by_model.values() for r in rs.values() if r["status"] not in ("pass",)]
    if failures:
        lines += ["", "## Failures", "", "| model | mode | status | error (expected: the reason listed) |",
                  "|---|---|---|---|"]
        for r in sorted(failures, key=lambda r: (r["model"], MODES.index(r["mode"]))):
            err = (r.get("reason") or r.get("error", "")).replace("|", "\\|")[:240]
            lines.append(f"| {r['model']} | {r['mode']} | {r['status']} | {err} |")
    uncompiled = [r for rs in by_model.values() for r in rs.values() if r.get("compile_failures")]
    if uncompiled:
        lines += ["", "## Groups that did not compile", "",
                  "Their ops ran op by op, so the result stands; each is a lowering bug.", "",
                  "| model | mode | groups | first reason |", "|---|---|---|---|"]
        for r in sorted(uncompiled, key=lambda r: (r["model"], MODES.index(r["mode"]))):
            why, _ = next(iter(r["compile_failures"].items()))
            lines.append(f"| {r['model']} | {r['mode']} | {sum(r['compile_failures'].values())} | "
                         f"{why.replace('|', '/')[:200]} |")
    measured = [r for rs in by_model.values() for r in rs.values() if "device_peak_rss_mb" in r]
    if measured:
        lines += ["", "## Memory", "",
                  "Resident memory of the worker (MB) before the device steps (CPU model, device model "
                  "and inputs) and its peak during them (VmHWM, reset before the steps); the steps' own "
                  "cost is the difference; \"device peak\" is the most device memory the steps allocated "
                  "beyond the model and inputs (torch_trn.max_memory_allocated(), docs/memory.md). "
                  "Recorded since 2026-12-02.", "",
                  "| model | mode | before MB | peak MB | steps MB | device peak MB |", "|---|---|---|---|---|---|"]
        for r in sorted(measured, key=lambda r: (r["model"], MODES.index(r["mode"]))):
            lines.append(f"| {r['model']} | {r['mode']} | {r['rss_before_mb']} | {r['device_peak_rss_mb']} | "
                         f"{r['device_peak_rss_mb'] - r['rss_before_mb']} | {r.get('device_peak_alloc_mb', '')} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tier", type=int, choices=(2, 3), default=2)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--only", default=None, help="regex on model names")
    p.add_argument("--shard", default=None, help="I/N")
    p.add_argument("--jobs", type=int, default=2)
    # A worker's start (python, torch, torch_trn, timm, transformers, torchvision) takes ~7 s.
    # Tier 2's 50 small models run 17 to a worker (3 workers a mode: the tier took 6 min 48 s on
    # 2 cores, 8 min 11 s with 6 a worker); tier 3's large models 6, so an OOM or crash re-runs
    # few models.
    p.add_argument("--chunk", type=int, default=None, help="models per worker process (tier 2: 17, tier 3: 6)")
    p.add_argument("--chunk-timeout", type=float, default=1200)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--results", default=None)
    p.add_argument("--fresh", action="store_true",
                   help="run the selected (model, mode) pairs again, dropping their old results (others stay)")
    p.add_argument("--rerun", action="store_true",
                   help="also run again the (model, mode) pairs whose latest result is not a pass")
    p.add_argument("--expected", default=os.path.join(HERE, "expected_failures.txt"))
    p.add_argument("--report", default=None)
    p.add_argument("--summary", default=None, help="write a JSON summary here")
    p.add_argument("--seed-from-report", default=None, metavar="REPORT",
                   help="first add to --results the results a tier-3 report (docs/zoo_report.md) gives for "
                        "pairs the file lacks, marked from_report (tests/zoo/report_records.py)")
    p.add_argument("--f64-budget-gb", type=float, default=None,
                   help="memory the float64 reference run may take (default: 80%% of MemAvailable); a model "
                        "needing more is judged against CPU float32 samples alone")
    p.add_argument("--no-run", action="store_true", help="only summarise/report the results already there")
    args = p.parse_args(argv)
    if args.chunk is None:
        args.chunk = 17 if args.tier == 2 else 6
    sys.path.insert(0, HERE)
    if args.tier == 2:
        with open(os.path.join(HERE, "representative.json")) as f:
            names = json.load(f)["models"]
    else:
        from registry import all_models
        names = list(all_models())
    if args.only:
        names = [n for n in names if re.search(args.only, n)]
    if args.shard:
        i, n = (int(x) for x in args.shard.split("/"))
        names = names[i::n]
    results = args.results or os.path.join(REPO, "build", "zoo", f"tier{args.tier}.jsonl")
    os.makedirs(os.path.dirname(results), exist_ok=True)
    modes = args.modes.split(",")
    old = [json.loads(line) for line in open(results)] if os.path.exists(results) else []
    if args.fresh and not args.no_run:
        # Only the selected (model, mode) pairs start over: every other record stays. The file is
        # rewritten through a temporary file, so an interrupted rewrite loses nothing either.
        selected = {(n, m) for n in names for m in modes}
        old = [r for r in old if (r["model"], r["mode"]) not in selected]
        with open(results + ".tmp", "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in old)
        os.replace(results + ".tmp", results)
    if args.seed_from_report:
        from report_records import records_from_report
        there = {(r["model"], r["mode"]) for r in old}
        seeded = [r for r in records_from_report(args.seed_from_report, os.path.relpath(args.seed_from_report, REPO))
                  if (r["model"], r["mode"]) not in there]
        with open(results, "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in seeded)
        old += seeded
        print(f"seeded {len(seeded)} results from {args.seed_from_report} (pairs the results file lacked)")
    latest_old = {(r["model"], r["mode"]): r["status"] for r in old}
    have = {k for k, status in latest_old.items() if status == "pass" or not args.rerun}
    pairs = [(m, [] if args.no_run else [n for n in names if (n, m) not in have]) for m in modes]
    todo = sum(len(x) for _, x in pairs)
    print(f"tier {args.tier}: {len(names)} models x {len(modes)} modes, {todo} runs to do", flush=True)
    t0 = time.time()
    with open(results, "a") as sink:
        new = run([(m, x) for m, x in pairs if x], args, sink)
    latest = {}
    for r in old + new:
        latest[(r["model"], r["mode"])] = r
    records = [r for (n, m), r in sorted(latest.items()) if n in set(names) and m in modes]
    exp = load_expected(args.expected)
    unexpected, xpass = [], []
    for r in records:
        reason = expected_reason(exp, r["model"], r["mode"])
        if r["status"] != "pass" and reason:
            r["status"], r["reason"] = "xfail", reason
        elif r["status"] != "pass":
            unexpected.append(r)
        elif reason:
            xpass.append(r)
    counts = {m: collections.Counter(r["status"] for r in records if r["mode"] == m) for m in modes}
    for m in modes:
        c = counts[m]
        print(f"{m:9s} pass {c['pass']}, fail {c['fail']}, error {c['error']}, expected {c['xfail']}")
    worst = max((r.get("max_rel", 0.0) for r in records if r["status"] == "pass" and not r.get("step1_only")),
                default=0.0)
    f64 = sum(1 for r in records if r["status"] == "pass" and judged_by(r))
    step1_only = sum(1 for r in records if r["status"] == "pass" and r.get("step1_only"))
    print(f"max relative loss difference of the passing runs judged on every step: {worst:.2e} ({f64} passed "
          f"by the float64 check or, where float64 does not fit, CPU float32 samples; {step1_only} of which were judged "
          f"on step 1 only); {time.time() - t0:.0f}s")
    uncompiled = [r for r in records if r.get("compile_failures")]
    if uncompiled:
        print(f"{len(uncompiled)} runs had groups that did not compile (their ops ran op by op; "
              f"each is a lowering bug): {', '.join(sorted({r['model'] for r in uncompiled})[:10])}")
    for r in unexpected:
        print(f"UNEXPECTED {r['status'].upper()}: {r['model']} [{r['mode']}]: {r.get('error', '')}")
    for r in xpass:
        print(f"EXPECTED FAILURE NOW PASSES (remove it from {os.path.relpath(args.expected, REPO)}): "
              f"{r['model']} [{r['mode']}]")
    if args.report:
        fpath = os.path.join(HERE, "features.json")
        features = json.load(open(fpath)) if os.path.exists(fpath) else {}
        write_report(args.report, records, features, args.tier, len(names))
        print(f"report: {args.report}")
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump({"counts": {m: dict(c) for m, c in counts.items()}, "max_rel": worst,
                       "unexpected": [(r["model"], r["mode"], r.get("error", "")) for r in unexpected],
                       "xpass": [(r["model"], r["mode"]) for r in xpass]}, f, indent=1)
    return 1 if unexpected or xpass else 0


if __name__ == "__main__":
    sys.exit(main())
