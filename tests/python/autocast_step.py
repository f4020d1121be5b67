"""Autocast training steps on the neuron device vs the same steps under CPU autocast (test_autocast.py).

    NEURON_MODE=compile python3 autocast_step.py mlp gpt:bfloat16 mlp:float16:overflow  # one JSON line each

For each model: the same seeded weights and batches on both sides; `STEPS` AdamW steps whose
forward and loss run under `torch.autocast(<device>, dtype)`; fp16 steps go through a GradScaler
of the device ("overflow": one skipped step, then growth). In adaptive mode each device step waits
for the background compiles, so the next step runs their code. It asserts (raising with the model, step and tensor named) that the outputs'
dtypes are CPU autocast's, the outputs, losses and gradients agree within low-precision
tolerance, and prints what it compared.
"""
import json
import os
import sys

import torch

import torch_trn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import clone_to, make_batches, make_model  # noqa: E402

STEPS = 2
LR = 1e-3
# bf16 keeps 8 significant bits (relative step 2^-8 = 0.4%). The two sides round at different
# points (the device runs softmax and layer_norm in float32, as CUDA's autocast policy says; CPU's
# policy keeps them in bf16), so a value may differ by a few bf16 steps.
TOL = {torch.bfloat16: dict(rtol=1e-2, atol=1e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


# GradScaler settings by name: "overflow" starts at a scale whose fp16 gradients overflow for
# certain (the step is skipped, the scale backs off to 2^16), then grows it after each good step.
SCALERS = {"": {}, "overflow": dict(init_scale=2.0**30, backoff_factor=2.0**-14, growth_interval=1)}


def _steps(model, batches, device, dtype, scaler_args):
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    scaler = torch.amp.GradScaler(device.type, **scaler_args) if dtype == torch.float16 else None
    record = []
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=dtype):
            out = model(x)
            loss = model.loss(x, y)
        (scaler.scale(loss) if scaler else loss).backward()
        grads = {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters()}
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad()
        record.append({"out": out.detach().cpu(), "loss": loss.detach().cpu(), "grads": grads,
                       "scale": float(scaler.get_scale()) if scaler else None})
        if device.type != "cpu" and torch_trn.mode() == "adaptive":
            torch_trn.wait_for_compiles()  # the next step runs the groups compiled meanwhile
    params = {n: p.detach().cpu() for n, p in model.named_parameters()}
    return record, params


def compare(name, dtype, scaler_name=""):
    dev = torch_trn.device()
    cpu_model = make_model(name)
    dev_model = clone_to(name, cpu_model, dev)
    batches = make_batches(name, STEPS)
    torch_trn.sync()
    torch_trn.reset_stats()
    with torch_trn.trace_ops() as trace:
        dev_rec, dev_params = _steps(dev_model, batches, dev, dtype, SCALERS[scaler_name])
    torch_trn.sync()
    stats = torch_trn.stats()
    low = "BFloat16" if dtype == torch.bfloat16 else "Half"
    half_ops = {}  # recorded ops with a tensor of the low dtype, by name
    for op in trace.ops:
        if low in json.dumps(op["args"]) or low in json.dumps(op["outputs"]):
            half_ops[op["op"]] = half_ops.get(op["op"], 0) + 1
    cpu_rec, cpu_params = _steps(cpu_model, batches, torch.device("cpu"), dtype, SCALERS[scaler_name])
    tol = TOL[dtype]
    for i, (d, c) in enumerate(zip(dev_rec, cpu_rec)):
        where = f"{name} {dtype} step {i}"
        assert d["out"].dtype == c["out"].dtype, f"{where}: output dtype {d['out'].dtype} != CPU's {c['out'].dtype}"
        assert d["loss"].dtype == c["loss"].dtype, f"{where}: loss dtype {d['loss'].dtype} != CPU's {c['loss'].dtype}"
        torch.testing.assert_close(d["out"], c["out"], **tol, msg=lambda m: f"{where} output: {m}")
        torch.testing.assert_close(d["loss"], c["loss"], **tol, msg=lambda m: f"{where} loss: {m}")
        assert d["scale"] == c["scale"], f"{where}: GradScaler scale {d['scale']} != CPU's {c['scale']}"
        if not all(torch.isfinite(g).all() for g in c["grads"].values()):
            # An overflowing fp16 step (GradScaler skips it): where inf or NaN appear is noise.
            assert not all(torch.isfinite(g).all() for g in d["grads"].values()), f"{where}: no overflow on the device"
            continue
        for n, g in c["grads"].items():
            # Relative to the gradient's size: tiny components carry only rounding noise.
            scale = max(g.abs().max().item(), 1e-6)
            torch.testing.assert_close(d["grads"][n] / scale, g / scale, **tol,
                                       msg=lambda m: f"{where} grad {n}: {m}")
    for n, p in cpu_params.items():
        torch.testing.assert_close(dev_params[n], p, **tol, msg=lambda m: f"{name} {dtype} param {n}: {m}")
    return {"model": name, "dtype": str(dtype), "mode": torch_trn.mode(),
            "out_dtype": str(dev_rec[-1]["out"].dtype), "cpu_out_dtype": str(cpu_rec[-1]["out"].dtype),
            "losses": [float(r["loss"]) for r in dev_rec], "cpu_losses": [float(r["loss"]) for r in cpu_rec],
            "ops_executed": stats["ops_executed"], "ops_run_compiled": stats["ops_run_compiled"],
            "groups_run_compiled": stats.get("groups_run_compiled", 0),
            "unlowered_ops": stats.get("unlowered_ops", {}), "compile_failures": stats.get("compile_failures", {}),
            "half_ops": half_ops, "ops": sorted({op["op"] for op in trace.ops}),
            "scales": [r["scale"] for r in dev_rec], "cpu_scales": [r["scale"] for r in cpu_rec],
            "device": stats.get("device")}  # the modeled NeuronCore's counters (NEURON_TARGET=trn2|trn3)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        model_name, dtype_name, scaler_name = (arg.split(":") + ["", ""])[:3]
        print(json.dumps(compare(model_name, getattr(torch, dtype_name or "bfloat16"), scaler_name)), flush=True)
