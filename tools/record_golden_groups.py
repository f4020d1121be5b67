#!/usr/bin/env python3
"""Records the inputs of the front's golden tests: small PyTorch calls on the neuron device,
traced with torch_trn.trace_ops(geometry=True), one JSON file per op family.

    PYTHONPATH=python python3 tools/record_golden_groups.py            # rewrites tests/lit/front/Inputs/
    PYTHONPATH=python python3 tools/record_golden_groups.py --family elementwise --out /tmp/x

Each file is {"groups": [{"name", "ops", "live"}]}: the ops of one call in stream order (their
"source" dropped: it names lines of this file) and "live", the storage ids of the tensors the
caller still holds after the call (its inputs and results, parameters and their grads). That is
what `torch-trn-replay-group` (src/mlir_lowering/replay_group.cpp) reads; the FileCheck files
next to the inputs (tests/lit/front/<family>.test) state what the lowering must emit for them.
Rerun after changing what a case records, then check the FileCheck files still pass
(`./dev test`, or `lit tests/lit --param build_dir=build -v`).
"""
from __future__ import annotations

import argparse
import json
import os

import torch
import torch.nn.functional as F

import torch_trn  # noqa: F401  (registers the device)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV = "neuron"


def dev(*shape, dtype=torch.float32, grad=False):
    t = torch.randn(*shape, dtype=dtype).to(DEV)
    return t.requires_grad_() if grad else t


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, torch.nn.Module):
        for p in value.parameters():
            yield p
            if p.grad is not None:
                yield p.grad


def record(name, make, fn):
    """Traces fn(*make()); live: the inputs, the results, and grads of inputs that have them."""
    torch.manual_seed(0)
    inputs = make()
    torch_trn.sync()
    with torch_trn.trace_ops(geometry=True) as t:
        result = fn(*inputs)
        torch_trn.sync()
        held = list(_tensors(inputs)) + list(_tensors(result))
        held += [x.grad for x in _tensors(inputs) if x.is_leaf and x.grad is not None]
        live = sorted({t.storage_id(x) for x in held} - {-1})
    ops = [{k: v for k, v in op.items() if k != "source"} for op in t.ops]
    return {"name": name, "ops": ops, "live": live}


def elementwise():
    return [
        # a chain with a runtime scalar (alpha) and an internal temporary (the product)
        record("mul_add_relu", lambda: (dev(4, 8), dev(4, 8)),
               lambda a, b: torch.relu(torch.add(a * b, b, alpha=0.5))),
        # a broadcast row and a transposed (strided) input
        record("broadcast_transposed", lambda: (dev(8, 4), dev(8)),
               lambda a, r: a.t() + r),
        # comparisons, where, and an in-place update of the caller's tensor
        record("where_inplace", lambda: (dev(16), dev(16)),
               lambda a, b: a.mul_(torch.where(a > b, a, b).sigmoid())),
        # integer and bool dtypes
        record("int_bool", lambda: (torch.arange(12).reshape(3, 4).to(DEV),),
               lambda i: (i * 3 + 1, (i % 2 == 0) & (i > 4))),
    ]


def reductions():
    return [
        record("sum_mean", lambda: (dev(6, 10),), lambda x: (x.sum(dim=1), x.mean(dim=0, keepdim=True))),
        record("amax_argmax", lambda: (dev(5, 7),), lambda x: (x.amax(dim=-1), x.argmax(dim=0))),
        record("softmax_logsoftmax", lambda: (dev(4, 16),), lambda x: (x.softmax(-1), x.log_softmax(-1))),
        record("var_norm", lambda: (dev(3, 9),), lambda x: (x.var(dim=1), torch.linalg.vector_norm(x, dim=1))),
    ]


def normalization():
    def batch_norm(x, w, b):
        rm, rv = torch.zeros(4, device=DEV), torch.ones(4, device=DEV)
        return F.batch_norm(x, rm, rv, w, b, training=True), rm, rv

    return [
        record("layer_norm", lambda: (dev(8, 32), dev(32), dev(32)),
               lambda x, w, b: F.layer_norm(x, (32,), w, b)),
        record("batch_norm_training", lambda: (dev(6, 4, 5), dev(4), dev(4)), batch_norm),
    ]


def contractions():
    return [
        record("mm_relu", lambda: (dev(8, 16), dev(16, 4)), lambda a, b: torch.relu(a @ b)),
        record("linear", lambda: (dev(5, 16), dev(8, 16), dev(8)), lambda x, w, b: F.linear(x, w, b)),
        record("bmm", lambda: (dev(3, 4, 6), dev(3, 6, 5)), lambda a, b: torch.bmm(a, b)),
        record("linear_bf16", lambda: (dev(5, 16, dtype=torch.bfloat16), dev(8, 16, dtype=torch.bfloat16),
                                       dev(8, dtype=torch.bfloat16)), lambda x, w, b: F.linear(x, w, b)),
    ]


def shape():
    def slice_write(x, y):
        x[:, 1:3] = y
        return x

    return [
        record("cat", lambda: (dev(2, 3), dev(4, 3)), lambda a, b: torch.cat([a, b]) * 2),
        record("flip_permute", lambda: (dev(2, 3, 4),), lambda x: x.flip(1).permute(2, 0, 1) + 1),
        record("arange", lambda: (dev(10),), lambda x: x + torch.arange(10, device=DEV)),
        record("linspace", lambda: (dev(7),), lambda x: x * torch.linspace(0.5, 6.5, 7, device=DEV)),
        record("slice_write", lambda: (dev(4, 5), dev(4, 2)), slice_write),
    ]


def indexing():
    def idx(*values):
        return torch.tensor(values).to(DEV)

    return [
        record("index_select", lambda: (dev(10, 6), idx(3, 0, 9, 3)),
               lambda t, i: torch.index_select(t, 0, i) * 2),
        record("embedding", lambda: (dev(20, 8), idx(1, 5, 19)), lambda w, i: F.embedding(i, w)),
        record("gather", lambda: (dev(4, 6), idx(0, 5, 2, 2).reshape(4, 1)),
               lambda t, i: torch.gather(t, 1, i)),
        record("index_none_first", lambda: (dev(3, 5, 2), idx(4, -1, 0)), lambda t, i: t[:, i] * 2),
        record("index_put_accumulate", lambda: (dev(4, 5), idx(0, 3, 3), idx(1, -1, 1), dev(3)),
               lambda t, i, j, v: torch.index_put(t * 1, (i, j), v, accumulate=True)),
    ]


def losses():
    def ce(x, y):
        return F.cross_entropy(x, y)

    return [
        record("cross_entropy", lambda: (dev(6, 10), torch.tensor([1, 0, 9, 3, 3, 2]).to(DEV)), ce),
        record("mse", lambda: (dev(4, 5), dev(4, 5)), lambda a, b: F.mse_loss(a, b)),
        record("smooth_l1", lambda: (dev(4, 5), dev(4, 5)), lambda a, b: F.smooth_l1_loss(a, b, beta=0.5)),
    ]


def backward():
    # The forward runs before the trace (in the stream, autograd's thread starts a new group
    # anyway): the traced ops are the backward pass alone.
    def mlp():
        x, w, y = dev(4, 8), dev(8, 6, grad=True), dev(4, 6)
        return F.mse_loss(torch.relu(x @ w), y), w

    def gelu_softmax():
        x = dev(3, 7, grad=True)
        return F.gelu(x).softmax(-1).sum(), x

    def ce():
        x = dev(5, 4, grad=True)
        return F.cross_entropy(x, torch.tensor([0, 3, 1, 1, 2]).to(DEV)), x

    def run_backward(loss, leaf):
        loss.backward()
        return leaf.grad

    return [
        record("mlp_relu_mse", mlp, run_backward),
        record("gelu_softmax", gelu_softmax, run_backward),
        record("cross_entropy", ce, run_backward),
    ]


FAMILIES = {f.__name__: f for f in (elementwise, reductions, normalization, contractions, shape, indexing, losses,
                                    backward)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", choices=sorted(FAMILIES), action="append")
    p.add_argument("--out", default=os.path.join(ROOT, "tests", "lit", "front", "Inputs"))
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.family or FAMILIES:
        path = os.path.join(args.out, f"{name}.json")
        with open(path, "w") as f:
            json.dump({"groups": FAMILIES[name]()}, f, indent=1, sort_keys=True)
            f.write("\n")
        print(path)


if __name__ == "__main__":
    main()
