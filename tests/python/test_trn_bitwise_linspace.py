"""NEURON_TARGET=trn2: bitwise and / or / xor / not of integer and bool tensors (the ALU's
bitwise_and / _or / _xor on integer tiles, the logical ops on booleans) run on the modeled
NeuronCore, with results equal to PyTorch CPU's.

Before, a group with an integer `arith.ori` went to the host whole (host_group_reasons
"'arith.ori' op integer bit operation has no trn lowering": hf/cpmant), docs/trn_pipeline.md.
"""
import os
import sys

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

