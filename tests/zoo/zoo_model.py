"""Shared record type for the tiered model-test zoo (tests/zoo).

Every zoo module (vision_models.py, repo_models.py, hf_models.py) exposes
``models() -> list[ZooModel]`` and ``unbuildable() -> list[tuple[str, str]]``.
The harness puts tests/zoo on sys.path, so modules import this file as
``from zoo_model import ZooModel``.

Contract for an entry (what the harness relies on):
  * ``build()`` returns a CPU float32 ``torch.nn.Module`` with random weights,
    calls ``torch.manual_seed(0)`` before constructing, and is deterministic in
    training mode (dropout / stochastic depth disabled).
  * ``make_inputs(seed)`` returns a *flat* dict of CPU tensors, generated from
    ``torch.Generator().manual_seed(seed)``.
  * ``loss(model, inputs)`` returns a scalar loss tensor for one training step.
"""
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class ZooModel:
    name: str                 # "tv/<name>", "timm/<name>", "repo/<name>"
    family: str               # "torchvision" | "timm" | "repo"
    input_kind: str           # "image" | "video" | "audio" | "tokens" | "sequence" | "features" | "other"
    build: Callable[[], Any]  # -> torch.nn.Module on CPU, float32, random weights; deterministic: torch.manual_seed(0) inside before constructing
    make_inputs: Callable[[int], dict]   # seed -> dict of CPU tensors (kwargs for the loss function), deterministic via torch.Generator(seed)
    loss: Callable[[Any, dict], Any]     # (model, inputs) -> scalar loss tensor for a training step
    tier2_ok: bool = True     # False if too slow/large for a fast CI tier (still part of the full zoo)


def disable_stochastic(module):
    """Make a module deterministic in train mode: zero every dropout-like prob.

    Covers torch.nn dropout layers, torchvision StochasticDepth / DropBlock and
    timm DropPath / DropBlock / PatchDropout.  Float attributes used with
    functional dropout (``drop_rate``, ``attn_drop``...) are zeroed only on
    modules whose class name marks them as dropout-ish or when the attribute
    name is unambiguous (``drop_rate``, ``drop_path_rate``, ``attention_dropout``).
    """
    import torch.nn as nn

    for m in module.modules():
        cls = type(m).__name__
        if isinstance(m, nn.modules.dropout._DropoutNd) or isinstance(m, nn.AlphaDropout):
            m.p = 0.0
        elif any(k in cls for k in ("DropPath", "StochasticDepth", "DropBlock", "PatchDropout")):
            for attr in ("p", "drop_prob", "prob"):
                if isinstance(getattr(m, attr, None), float):
                    setattr(m, attr, 0.0)
        for attr in ("drop_rate", "drop_path_rate", "attention_dropout", "attn_drop_rate", "proj_drop_rate"):
            if isinstance(getattr(m, attr, None), float):
                setattr(m, attr, 0.0)
    return module


# ----------------------------------------------------------------------------
# CPU check shared by the zoo modules' ``--check`` command lines.
# ----------------------------------------------------------------------------

class CheckTimeout(Exception):
    pass


def _alarm(signum, frame):  # pragma: no cover - signal handler
    raise CheckTimeout("time limit exceeded")


def check_entry(zm, timeout=120.0, determinism=True):
    """Build ``zm``, run loss + backward + one SGD step on CPU.

    Returns a dict: status ("pass" | "fail"), params, step_s (CPU time of
    forward+backward+step; run with torch.set_num_threads(1) for a per-core
    figure), step_wall_s, build_s, error.  With ``determinism`` the training-mode loss is
    computed twice (the first time without grad) and must agree to rtol 1e-5.
    A per-model wall-clock limit is enforced with SIGALRM (checked between ops).
    """
    import math
    import signal
    import time
    import traceback

    import torch

    rec = {"name": zm.name, "status": "fail", "params": None, "build_s": None, "step_s": None, "error": None}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, float(timeout))
    try:
        t0 = time.perf_counter()
        model = zm.build()
        rec["build_s"] = round(time.perf_counter() - t0, 3)
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"build() returned {type(model).__name__}")
        rec["params"] = sum(p.numel() for p in model.parameters())
        bad = [n for n, p in model.named_parameters() if p.dtype != torch.float32 or p.device.type != "cpu"]
        if bad:
            raise TypeError(f"non-float32/CPU parameter {bad[0]}")
        inputs = zm.make_inputs(0)
        if not isinstance(inputs, dict) or not all(isinstance(v, torch.Tensor) for v in inputs.values()):
            raise TypeError("make_inputs must return a flat dict of tensors")
        again = zm.make_inputs(0)
        if any(not torch.equal(inputs[k], again[k]) for k in inputs):
            raise AssertionError("make_inputs(0) is not deterministic")
        if not model.training:
            raise AssertionError("model not in training mode")
        ref = None
        if determinism:
            with torch.no_grad():
                ref = zm.loss(model, inputs).detach().clone()
        opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1e-3)
        t1, c1 = time.perf_counter(), time.process_time()
        loss = zm.loss(model, inputs)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
            raise TypeError(f"loss must be a scalar tensor requiring grad, got {getattr(loss, 'shape', type(loss))}")
        loss.backward()
        opt.step()
        rec["step_wall_s"] = round(time.perf_counter() - t1, 3)
        rec["step_s"] = round(time.process_time() - c1, 3)  # CPU time: robust on a loaded machine
        val = float(loss.detach())
        rec["loss"] = val
        if not math.isfinite(val):
            raise FloatingPointError(f"non-finite loss {val}")
        # no_grad may take other kernels (e.g. SDPA) -> allow last-bit noise, catch real randomness
        if ref is not None and not torch.allclose(ref.reshape(()), loss.detach().reshape(()), rtol=1e-5, atol=1e-7):
            raise AssertionError(f"training-mode loss not deterministic: {float(ref)} vs {val}")
        if not any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters()):
            raise AssertionError("no parameter received a non-zero gradient")
        rec["status"] = "pass"
    except BaseException as e:  # noqa: BLE001 - report everything, incl. timeouts
        if isinstance(e, KeyboardInterrupt):
            raise
        msg = (type(e).__name__ + ": " + str(e)).strip().splitlines()
        rec["error"] = (msg[0] if msg else type(e).__name__)[:300]
        if not isinstance(e, CheckTimeout):
            tb = traceback.extract_tb(e.__traceback__)
            if tb:
                rec["where"] = f"{tb[-1].filename.split('site-packages/')[-1]}:{tb[-1].lineno}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return rec


def format_record(rec):
    p = rec.get("params")
    ps = f"{p / 1e6:9.3f}M" if p is not None else "        ?"
    st = f"{rec['step_s']:7.2f}s" if rec.get("step_s") is not None else "       -"
    line = f"{rec['status']:5s} {ps} {st}  {rec['name']}"
    if rec.get("error"):
        line += f"  -- {rec['error'][:160]}"
    return line
