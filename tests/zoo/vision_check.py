"""CPU check / timm probe command line for vision_models.py (run via that file).

    python3 tests/zoo/vision_models.py --check [--only REGEX] [--limit N] [--sample]
        [--timeout S] [--max-params N] [--json tests/zoo/vision_check.json] [--resume]
    python3 tests/zoo/vision_models.py --meta [--only REGEX] [--limit N] [--json FILE]

--check builds each selected entry, runs loss + backward + one SGD step on CPU
(zoo_model.check_entry: also checks input/loss determinism) under a per-model
time limit, prints ``status params step-time name -- error`` and writes
{"results": {name: record}, "failures": {name: reason}} to --json after every
model (--resume skips names already recorded as pass/skip).  timm models are first built on
the meta device to count parameters; above --max-params they are skipped
(reported as "skip", not as failures).

--sample keeps every torchvision entry and one timm model per family (the name
prefix before the first '_' or digit), the one with the fewest parameters.

--meta builds timm models on the meta device and runs the forward with the
entry's input policy (shape propagation only, no compute).  Failures are probed
with alternative (img_size kwarg, input size) policies; the first that works is
printed as a TIMM_POLICY suggestion.  Errors caused by the meta device itself
(ops without meta kernels, data-dependent code) are reported as "meta-n/a".
"""
import argparse
import gc
import json
import os
import re
import time
import warnings

import torch

import vision_models as vm
from zoo_model import check_entry, format_record

CANDIDATES = [(64, 64), (None, 64), (56, 56), (None, 56), (32, 32), (None, 32), (28, 28), (96, 96), (None, 96),
              (112, 112), (None, 112),
              (128, 128), (None, 128), (160, 160), (192, 192), (224, 224), (None, 224), (None, "default")]
META_NA = re.compile(r"meta|Meta|data-dependent|NotImplemented|Cannot copy out|item\(\)|numpy|nonzero", re.S)


def _meta_params(name, img):
    with torch.device("meta"):
        m = vm.timm_build(name, img)
    return sum(p.numel() for p in m.parameters())


def _meta_forward(name, img, chw):
    with torch.device("meta"):
        m = vm.timm_build(name, img).train()
        out = m(torch.empty((vm.B,) + tuple(chw)))
    return sum(p.numel() for p in m.parameters()), out


def meta_probe(name):
    """-> dict(params, status ok|fail|meta-n/a, policy, error, suggestion)."""
    import timm
    img, chw = vm._timm_policy(name)
    rec = {"name": name, "policy": [img, chw[1]]}
    try:
        rec["params"], _ = _meta_forward(name, img, chw)
        rec["status"] = "ok"
        return rec
    except Exception as e:  # noqa: BLE001
        rec["error"] = (type(e).__name__ + ": " + str(e)).splitlines()[0][:200]
        rec["status"] = "meta-n/a" if META_NA.search(rec["error"]) else "fail"
    if rec["status"] != "fail":
        return rec
    cfg = timm.models.get_pretrained_cfg(name)
    default = cfg.input_size[1] if cfg is not None else 224
    no_img = False
    for cimg, csize in CANDIDATES:
        size = default if csize == "default" else csize
        if (cimg, size) == (img, chw[1]) or (cimg is not None and no_img):
            continue
        try:
            _meta_forward(name, cimg, (chw[0], size, size))
        except TypeError as e:
            if "img_size" in str(e):
                no_img = True
            continue
        except Exception:  # noqa: BLE001
            continue
        rec["suggestion"] = [cimg, "default" if csize == "default" else size]
        break
    return rec


def _sample_timm(names):
    fams = {}
    for n in names:
        fams.setdefault(vm.timm_family(n), []).append(n)
    picked = []
    for fam, members in sorted(fams.items()):
        best = None
        for n in members:
            try:
                p = _meta_params(n, vm._timm_policy(n)[0])
            except Exception:  # noqa: BLE001
                p = float("inf")
            if best is None or p < best[0]:
                best = (p, n)
        picked.append(best[1])
    return picked


def _load(path):
    if path and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def _save(path, data):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true")
    p.add_argument("--meta", action="store_true")
    p.add_argument("--only", default=None, help="regex on entry names (tv/..., timm/...)")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--sample", action="store_true")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--max-params", type=float, default=700e6)
    p.add_argument("--json", default=os.path.join(vm.HERE, "vision_check.json"))
    p.add_argument("--resume", action="store_true")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)  # step_s is then single-core CPU time
    data = _load(args.json) if args.resume or args.meta else {}
    if args.meta:
        import timm
        names = [n for n in timm.list_models() if not args.only or re.search(args.only, "timm/" + n)]
        names = names[:args.limit] if args.limit else names
        meta = data.setdefault("meta", {})
        t0 = time.time()
        for i, n in enumerate(names):
            rec = meta_probe(n)
            meta[n] = rec
            if rec["status"] != "ok":
                print(f"{rec['status']:8s} {n}: {rec.get('error', '')[:150]}  suggestion={rec.get('suggestion')}",
                      flush=True)
            if i % 50 == 49:
                _save(args.json, data)
                print(f"  {i + 1}/{len(names)} {time.time() - t0:.0f}s", flush=True)
        _save(args.json, data)
        c = {}
        for n in names:
            c[meta[n]["status"]] = c.get(meta[n]["status"], 0) + 1
        print(f"meta probe: {c}, {time.time() - t0:.0f}s")
        return 0
    if not args.check:
        p.print_help()
        return 2
    entries = vm.torchvision_models() + [vm._timm_entry(n) for n in vm._timm_names()]
    if args.sample:
        keep = set(_sample_timm(list(vm._timm_names())))
        entries = [e for e in entries if e.family != "timm" or e.name[5:] in keep]
    if args.only:
        entries = [e for e in entries if re.search(args.only, e.name)]
    entries.sort(key=lambda e: e.name)
    if args.limit:
        entries = entries[:args.limit]
    results = data.setdefault("results", {})
    failures = data.setdefault("failures", {})
    t0 = time.time()
    for zm in entries:
        if args.resume and results.get(zm.name, {}).get("status") in ("pass", "skip"):
            continue
        rec = None
        if zm.family == "timm":
            try:
                params = _meta_params(zm.name[5:], vm._timm_policy(zm.name[5:])[0])
                if params > args.max_params:
                    rec = {"name": zm.name, "status": "skip", "params": params, "step_s": None,
                           "error": f"not checked: {params / 1e6:.0f}M params > --max-params"}
            except Exception:  # noqa: BLE001 - the real build reports it
                pass
        if rec is None:
            t1 = time.time()
            rec = check_entry(zm, timeout=args.timeout)
            rec["total_s"] = round(time.time() - t1, 2)
        gc.collect()
        results[zm.name] = rec
        failures.pop(zm.name, None)
        if rec["status"] == "fail":
            failures[zm.name] = rec["error"]
        print(format_record(rec), flush=True)
        _save(args.json, data)
    done = [results[e.name] for e in entries if e.name in results]
    n_pass = sum(r["status"] == "pass" for r in done)
    n_fail = sum(r["status"] == "fail" for r in done)
    print(f"checked {len(done)}: pass {n_pass}, fail {n_fail}, skip {len(done) - n_pass - n_fail}; "
          f"{time.time() - t0:.0f}s wall")
    return 1 if n_fail else 0
