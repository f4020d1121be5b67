"""`torch.autocast("neuron")`: PyTorch's autocast op policy on the device (src/trace/autocast.cpp).

An autocast(bf16) training step of the MLP and of the gpt test model (forward, loss, backward,
AdamW) on the device must match the same step under CPU autocast within bf16 tolerance, in each
mode (autocast_step.py does the comparison in a fresh process per mode), with the outputs'
dtypes equal to CPU autocast's. The bf16 ops compile (src/mlir_lowering/ir_builder.h: computed in
f32, rounded when stored): no op is left unlowered, and in compile mode every op but the input
copies runs compiled. fp16 goes through torch.amp.GradScaler("neuron"), also with a step whose
gradients overflow; its two ops (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_)
run on the device op by op (ATen's CPU kernels on the device buffers). On NEURON_TARGET=trn2 the
bf16 and fp16 steps run on the modeled NeuronCore (test_autocast_steps_run_on_trn2_core).
"""
import json
import os

import pytest
import torch

import torch_trn

from helpers import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ["eager", "compile", "adaptive"]


def _run_steps(mode, *specs, env=None):
    script = os.path.join(HERE, "autocast_step.py")
    code = f"import runpy, sys; sys.argv = [{script!r}, *{list(specs)!r}]; runpy.run_path({script!r}, run_name='__main__')"
    proc = run_python(code, env={"NEURON_MODE": mode, "NEURON_CACHE_DIR": "off", **(env or {})})
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-6000:]}"
    rows = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    assert len(rows) == len(specs), proc.stdout
    return rows


AMP_OPS = {"aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"}


def _check_compiled(row, mode, allowed_unlowered=()):
    """The low-precision ops ran compiled: none unlowered, and compiled groups ran (compile mode:
    every op but the 2 input copies per step)."""
    assert row["half_ops"], "no op of the low dtype was recorded"
    assert set(row["unlowered_ops"]) <= set(allowed_unlowered), row["unlowered_ops"]
    assert row["compile_failures"] == {}, row["compile_failures"]
    if mode == "compile":
        unlowered = sum(row["unlowered_ops"].values())
        assert row["ops_run_compiled"] >= row["ops_executed"] - unlowered - 2 * len(row["losses"]), row
    elif mode == "adaptive":
        assert row["ops_run_compiled"] > 0 and row["groups_run_compiled"] > 0, row


@pytest.mark.parametrize("mode", MODES)
def test_autocast_bf16_training_step_matches_cpu_autocast(mode):
    rows = _run_steps(mode, "mlp:bfloat16", "gpt:bfloat16")
    for row in rows:
        print(f"\n[{row['model']} {mode}] losses {row['losses']} cpu {row['cpu_losses']} ops {row['ops_executed']} "
              f"compiled {row['ops_run_compiled']} unlowered {row['unlowered_ops']}")
        assert row["mode"] == mode
        assert row["out_dtype"] == row["cpu_out_dtype"] == "torch.bfloat16"
        _check_compiled(row, mode)


@pytest.mark.parametrize("mode", MODES)
def test_autocast_fp16_grad_scaler_matches_cpu(mode):
    rows = _run_steps(mode, "mlp:float16", "mlp:float16:overflow")
    for row in rows:
        print(f"\n[{row['model']} {mode}] losses {row['losses']} cpu {row['cpu_losses']} scales {row['scales']} "
              f"ops {row['ops_executed']} compiled {row['ops_run_compiled']} unlowered {row['unlowered_ops']}")
        assert row["out_dtype"] == row["cpu_out_dtype"] == "torch.float16"
        assert row["scales"] == row["cpu_scales"]
        assert AMP_OPS <= set(row["ops"]), "GradScaler's ops did not run on the device"
        _check_compiled(row, mode, allowed_unlowered=AMP_OPS)
    # The overflow run skipped its first step (scale 2^30 -> 2^16) and grew the scale after the second.
    assert rows[1]["scales"] == [2.0**16, 2.0**17]


def test_autocast_policy_dtypes_in_process():
    """The policy itself: matmuls in the low dtype, fp32 ops in float32, others follow inputs."""
    dev = torch_trn.device()
    a = torch.randn(4, 8)
    b = torch.randn(8, 3)
    with torch.autocast("neuron", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("neuron") and torch.neuron.is_autocast_enabled()
        mm = a.to(dev) @ b.to(dev)                      # lower_precision_fp
        sm = torch.softmax(mm, dim=-1)                  # fp32_set_opt_dtype
        ln = torch.nn.functional.layer_norm(mm, (3,))   # fp32
        added = mm + 1.0                                # no policy: follows its input
    assert not torch.neuron.is_autocast_enabled()
    assert (mm.dtype, sm.dtype, ln.dtype, added.dtype) == (torch.bfloat16, torch.float32, torch.float32,
                                                           torch.bfloat16)
    ref = a.to(torch.bfloat16) @ b.to(torch.bfloat16)   # what the device computed, done on the CPU
    assert torch.equal(mm.cpu(), ref)
    torch.testing.assert_close(sm.cpu(), torch.softmax(ref.float(), dim=-1))
    torch.testing.assert_close(added.cpu(), ref + 1.0)


def test_autocast_bce_is_refused_like_on_cuda():
    dev = torch_trn.device()
    p = torch.rand(4, device=dev)
    with torch.autocast("neuron", dtype=torch.bfloat16), \
            pytest.raises(RuntimeError, match="unsafe to autocast"):
        torch.nn.functional.binary_cross_entropy(p, p)


def test_neuron_amp_shortcuts():
    with torch.neuron.amp.autocast():
        assert torch.get_autocast_dtype("neuron") == torch.bfloat16
        assert torch.is_autocast_enabled("neuron")
    scaler = torch.neuron.amp.GradScaler()
    assert isinstance(scaler, torch.amp.GradScaler) and scaler._device == "neuron"


# GradScaler's ops the trn lowering leaves to the host: the AMP kernels, and its inverse scale,
# computed in float64 (`_scale.double().reciprocal()`; the NeuronCore has no f64).
TRN_GRAD_SCALER_HOST = AMP_OPS | {"aten::copy_", "aten::reciprocal.out"}
BF16_BATCH_NORM = {"aten::native_batch_norm", "aten::native_batch_norm_backward"}


def test_autocast_steps_run_on_trn2_core():
    """NEURON_TARGET=trn2, compile mode: the autocast(bf16) AdamW steps of the MLP, gpt and the
    CNN, and an fp16 GradScaler step of the MLP, match CPU autocast (autocast_step.py's tolerances) with their
    bf16 / fp16 groups on the modeled NeuronCore (docs/trn_pipeline.md, "bf16 and fp16"): casts,
    elementwise, reductions, softmax, layer norm, the matrix products (TensorE on bf16 / fp16
    operands), convolutions and pooling, and their backwards. Before, every op with a half tensor ran op by op on the host
    (a third of gpt's step)."""
    rows = _run_steps("compile", "mlp:bfloat16", "gpt:bfloat16", "mlp:float16", "cnn:bfloat16",
                      env={"NEURON_TARGET": "trn2"})
    for row in rows:
        dev = row["device"]
        on, off = dev["ops_on_device"], dev["ops_on_host"]
        print(f"\n[{row['model']} {row['dtype']} trn2] losses {row['losses']} cpu {row['cpu_losses']} ops on the "
              f"core {on}, on the host {off}, modeled {dev['modeled_ns'] / 2:.0f} ns/step, "
              f"host groups {dev['host_group_reasons']}")
        assert row["out_dtype"] == row["cpu_out_dtype"]
        assert dev["trn_internal_failures"] == 0 and row["compile_failures"] == {}, row
        assert dev["groups_on_host"] == 0, dev["host_group_reasons"]
        ran = {name.split(".")[0] for name in dev["ops_by_name"]}
        assert {"aten::copy_", "aten::addmm", "aten::mm"} <= ran, sorted(ran)  # copy_: the dtype casts
        assert dev["engine_busy_ns"]["tensor"] > 0 and dev["matmul_flops"] > 0
        if row["dtype"] == "torch.float16" or row["model"] == "cnn":
            # fp16: GradScaler's host ops; cnn: batch norm of bf16 activations with f32 weights,
            # which the group lowering leaves to ATen on the host target too.
            allowed = TRN_GRAD_SCALER_HOST if row["dtype"] == "torch.float16" else BF16_BATCH_NORM
            assert set(row["unlowered_ops"]) <= allowed, row["unlowered_ops"]
            assert off <= sum(row["unlowered_ops"].values()), (off, row["unlowered_ops"])
            continue
        assert row["unlowered_ops"] == {}, row["unlowered_ops"]
        # Every executed op but the two input copies per step ran on the modeled core.
        assert on >= row["ops_executed"] - 2 * len(row["losses"]) and off == 0, (on, off, row["ops_executed"])
    assert {"aten::bmm", "aten::_softmax", "aten::native_layer_norm"} <= {
        name.split(".")[0] for name in rows[1]["device"]["ops_by_name"]}
    assert {"aten::convolution", "aten::convolution_backward", "aten::max_pool2d_with_indices"} <= {
        name.split(".")[0] for name in rows[3]["device"]["ops_by_name"]}
