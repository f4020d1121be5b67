"""Train-step parity: 5 AdamW steps on the neuron device vs the same steps on CPU eager.

Both runs start from bit-identical weights (the device model is loaded from the CPU model's
state_dict) and see the same batches. Losses must agree to 1e-5 relative at every step; final
parameters and buffers are compared with a looser tolerance (Adam's update divides by
sqrt(v)+eps, which amplifies last-bit differences in tiny gradients; see PARAM_ATOL).

Runs in whatever NEURON_MODE the process was started with:
    PYTHONPATH=python python3 -m pytest tests/python/test_training_parity.py -v -s
    NEURON_MODE=adaptive PYTHONPATH=python python3 -m pytest tests/python/test_training_parity.py
"""
import math
import os
import sys

import pytest
import torch

import torch_trn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import MODELS, clone_to, make_batches, make_model  # noqa: E402

STEPS = 5
LOSS_RTOL = 1e-5
LR = 1e-2
# Loose on purpose: a different reduction order (the executor thread's intra-op thread count
# differs from the main thread's) changes gradients in the last bits, and Adam's first steps
# move a weight by about +-lr whatever the gradient's size, so a near-zero gradient's rounding
# can shift that weight by a visible fraction of lr. 1e-3 absolute is a tenth of one step.
PARAM_RTOL, PARAM_ATOL = 1e-3, LR / 10


def _train(model, batches, device):
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    losses = []
    for x, y in batches:
        loss = model.loss(x.to(device), y.to(device))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())          # a sync point on the device
    return losses


@pytest.mark.parametrize("name", list(MODELS))
def test_training_parity(name):
    dev = torch_trn.device()
    batches = make_batches(name, STEPS)
    cpu_model = make_model(name)
    dev_model = clone_to(name, cpu_model, dev)   # identical weights, copied via state_dict

    torch_trn.reset_stats()
    try:
        dev_losses = _train(dev_model, batches, dev)
        torch_trn.sync()
    finally:  # report fallbacks even when the device run raised
        stats = torch_trn.stats()
        print(f"\n[{name}] mode={torch_trn.mode()}")
        assert "host_fallback_total" in stats, f"stats() lacks host_fallback_total: {stats}"
        print(f"  ops recorded={stats['ops_recorded']} executed={stats['ops_executed']} "
              f"syncs={stats['sync_total']} host_fallback_total={stats['host_fallback_total']}")
        for op, reasons in sorted(stats.get("host_fallbacks", {}).items()):
            print(f"  host fallback: {op}: {reasons}")
    cpu_losses = _train(cpu_model, batches, torch.device("cpu"))
    for i, (ld, lc) in enumerate(zip(dev_losses, cpu_losses)):
        rel = abs(ld - lc) / max(abs(lc), 1e-30)
        print(f"  step {i}: neuron={ld:.8f} cpu={lc:.8f} rel.diff={rel:.2e}")

    for i, (ld, lc) in enumerate(zip(dev_losses, cpu_losses)):
        assert math.isclose(ld, lc, rel_tol=LOSS_RTOL), \
            f"{name}: step {i} loss neuron={ld!r} cpu={lc!r}"

    dev_state = dev_model.state_dict()
    for key, ref in cpu_model.state_dict().items():
        got = dev_state[key].cpu()
        if ref.is_floating_point():
            torch.testing.assert_close(got, ref, rtol=PARAM_RTOL, atol=PARAM_ATOL, msg=lambda m: f"{name}.{key}: {m}")
        else:
            assert torch.equal(got, ref), f"{name}.{key}: {got} != {ref}"
