"""NEURON_TARGET=trn2: bitwise and / or / xor / not of integer and bool tensors (the ALU's
bitwise_and / _or / _xor on integer tiles, the logical ops on booleans), signed shifts and
linspace run on the modeled NeuronCore, with results equal to PyTorch CPU's; shifts and
linspace also compiled for the host.

Before, a group with an integer `arith.ori` went to the host whole (host_group_reasons
"'arith.ori' op integer bit operation has no trn lowering": hf/cpmant), and linspace.out had
no lowering at all (unlowered_ops: hf/deformable_detr), docs/trn_pipeline.md.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import TRN, last_json, ran_on_core, run_python  # noqa: E402


def test_bitwise_ops_of_integers_and_bools_on_trn2():
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        a = torch.randint(-100_000, 100_000, (64, 40), generator=g)
        b = torch.randint(-100_000, 100_000, (64, 40), generator=g)
        a[0, :6] = torch.tensor([0, -1, 1, 16777217, -16777219, 2**30 + 5])
        m = torch.rand(64, 40, generator=g) > 0.5
        k = torch.rand(64, 40, generator=g) > 0.3
        def f(dev):
            A, B, M, K = (t.to(dev) for t in (a, b, m, k))
            A = A * 1  # computed on the device, so the bitwise ops fuse into its group
            r = {"and": A & B, "or": A | B, "xor": A ^ B, "not": ~A, "and_mask": A & 0xff,
                 "or_const": A | 12, "xor_neg": A ^ -6, "int32": A.int() ^ B.int(),
                 "bool_or": (M | K) ^ (A > 0), "bool_and": M & K, "bool_xor": M ^ K, "bool_not": ~(M & K)}
            return {k: v.cpu() for k, v in r.items()}
        ref = f("cpu")
        torch_trn.reset_stats()
        got = f("neuron")
        d = torch_trn.stats()["device"]
        print(json.dumps({"equal": {k: bool(torch.equal(got[k], ref[k])) for k in ref},
                          "dtypes": {k: got[k].dtype == ref[k].dtype for k in ref}, "dev": d}))
    """, env=TRN))
    assert all(out["equal"].values()), out["equal"]
    assert all(out["dtypes"].values()), out["dtypes"]
    dev = out["dev"]
    assert {"aten::bitwise_and", "aten::bitwise_or", "aten::bitwise_xor", "aten::bitwise_not"} <= ran_on_core(dev), \
        sorted(ran_on_core(dev))
    assert dev["ops_on_host"] == 0 and dev["trn_internal_failures"] == 0, dev
    assert not dev["host_group_reasons"], dev["host_group_reasons"]


SHIFTS = """
    import json, torch, torch_trn
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-100_000, 100_000, (64, 40), generator=g)
    s = torch.randint(-3, 70, (64, 40), generator=g)
    counts = torch.tensor([-3, -1, 0, 1, 5, 27, 64, 65, 69, 1000])  # in and out of [0, 64)
    o = counts[torch.randint(0, 10, (64, 40), generator=g)]
    def f(dev):
        A, S, O = a.to(dev), s.to(dev), o.to(dev)
        A = A * 1
        # counts outside [0, 64) shift everything out (ATen's kernels); a left shift whose int64
        # result leaves int32's range would not fit the core's i32 tiles: small values there
        r = {"shl": A << 3, "shr": A >> 2, "shl_t": torch.bitwise_left_shift(A, S.clamp(0, 12)), "shr_t": A >> S,
             "shl_oor": (A & 7) << O, "shr_neg": torch.bitwise_right_shift(A, -1), "int32": (A.int() << 2) >> 1,
             "shifted_scalar": 5 << S.clamp(0, 20)}
        return {k: v.cpu() for k, v in r.items()}
    ref = f("cpu")
    torch_trn.reset_stats()
    got = f("neuron")
    d = torch_trn.stats().get("device", {})
    print(json.dumps({"equal": {k: bool(torch.equal(got[k], ref[k])) for k in ref},
                      "dtypes": {k: got[k].dtype == ref[k].dtype for k in ref}, "dev": d,
                      "unlowered": torch_trn.stats()["unlowered_ops"]}))
"""


@pytest.mark.parametrize("target", ["trn2", "host"])
def test_shifts_as_atens(target):
    env = TRN if target == "trn2" else {"NEURON_MODE": "compile"}
    out = last_json(run_python(SHIFTS, env=env, drop=("NEURON_TARGET",)))
    assert all(out["equal"].values()), out["equal"]
    assert all(out["dtypes"].values()), out["dtypes"]
    assert not [op for op in out["unlowered"] if "shift" in op], out["unlowered"]
    if target == "trn2":
        dev = out["dev"]
        assert {"aten::__lshift__", "aten::__rshift__", "aten::bitwise_left_shift", "aten::bitwise_right_shift"} \
            <= ran_on_core(dev), sorted(ran_on_core(dev))
        assert dev["ops_on_host"] == 0 and dev["trn_internal_failures"] == 0, dev
        assert not dev["host_group_reasons"], dev["host_group_reasons"]


LINSPACE = """
    import json, torch, torch_trn
    import numpy as np
    cases = [(-1.5, 2.25, 37, torch.float32), (0.5, 63.5, 64, torch.float32), (3.0, -5.0, 10, torch.float32),
             (2.0, 7.0, 1, torch.float32), (0.0, 1.0, 2, torch.float32), (1e-3, 1e3, 129, torch.float32),
             (-3.7, 50.2, 20, torch.int64), (0, 10, 4, torch.int64), (5, -5, 7, torch.int32),
             (-2.0, 3.0, 11, torch.bfloat16)]
    def formula(start, end, steps, dtype):
        # ATen's linspace kernel as scalar code: in f32 for float32 (half types: in f32, rounded
        # once), in double from start and end truncated for integers. One step is start.
        if steps == 1:
            return torch.tensor([start], dtype=torch.float32 if dtype.is_floating_point else torch.float64).to(dtype)
        if dtype.is_floating_point:
            s, e = np.float32(start), np.float32(end)
            step = (e - s) / np.float32(steps - 1)
            v = [s + step * np.float32(i) if i < steps // 2 else e - step * np.float32(steps - 1 - i)
                 for i in range(steps)]
            return torch.tensor(np.array(v, dtype=np.float32)).to(dtype)
        s, e = float(int(start)), float(int(end))
        step = (e - s) / (steps - 1)
        return torch.tensor([int(s + step * i) if i < steps // 2 else int(e - step * (steps - 1 - i))
                             for i in range(steps)], dtype=dtype)
    def f(dev, x):
        # times a device tensor, so that the linspace is one op of a group
        return [(torch.linspace(s, e, n, dtype=t, device=dev) * x[:n].to(t)).cpu() for s, e, n, t in cases]
    x = torch.ones(200)
    ref = f("cpu", x)
    empty = torch.linspace(1.0, 2.0, 0, device="neuron").cpu()  # zero steps: nothing to write
    torch_trn.reset_stats()
    got = f("neuron", x.to("neuron"))
    d = torch_trn.stats().get("device", {})
    print(json.dumps({
        "formula": [bool(torch.equal(g, formula(*c))) for g, c in zip(got, cases)],
        "ref": [bool(torch.allclose(g.double(), r.double(), rtol=1e-6, atol=1e-6)) if c[3].is_floating_point
                else bool(torch.equal(g, r)) for g, r, c in zip(got, ref, cases)],
        "dtypes": [g.dtype == r.dtype for g, r in zip(got, ref)],
        "empty": empty.shape == (0,) and empty.dtype == torch.float32, "dev": d,
        "unlowered": torch_trn.stats()["unlowered_ops"]}))
"""


@pytest.mark.parametrize("target", ["trn2", "host"])
def test_linspace_is_atens_formula(target):
    """Exactly ATen's scalar formula (its vectorized CPU loop may differ from it in the last bit of
    a float: close to CPU there), integer outputs equal to CPU's."""
    env = TRN if target == "trn2" else {"NEURON_MODE": "compile"}
    out = last_json(run_python(LINSPACE, env=env, drop=("NEURON_TARGET",)))
    assert all(out["formula"]), out["formula"]
    assert all(out["ref"]), out["ref"]
    assert all(out["dtypes"]), out["dtypes"]
    assert out["empty"]
    assert not [op for op in out["unlowered"] if "linspace" in op], out["unlowered"]
    if target == "trn2":
        dev = out["dev"]
        assert "aten::linspace" in ran_on_core(dev), sorted(ran_on_core(dev))
        assert dev["ops_on_host"] == 0 and dev["trn_internal_failures"] == 0, dev
        assert not dev["host_group_reasons"], dev["host_group_reasons"]
