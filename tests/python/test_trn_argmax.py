"""NEURON_TARGET=trn2: argmax / argmin and max / min with indices run on the modeled NeuronCore.

On trn targets the front lowers them as two reductions VectorE's tensor_reduce runs (the
extremum, then the first index holding it: ops/reductions.cpp, ValueAndIndex), where the host's
one pass is a chain of selects on two accumulators that the trn pipeline refuses ("reduction body
is not `combine(f(inputs), acc)`"), which sent the whole group to the host.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import TRN, last_json, ran_on_core, run_python  # noqa: E402


def test_argmax_and_max_with_indices_on_trn2():
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        x = torch.randn(48, 37, generator=g)
        x[0, 5] = x[0, 9] = 50.0                           # a tie: the first index wins
        x[1, :] = float("-inf")                            # all -inf: index 0
        x[2, 7] = float("nan"); x[2, 11] = float("nan")    # a NaN is the max and the min; the first wins
        x[3, :] = 0.0
        y = torch.randn(6, 5, 7, generator=g)
        n = torch.randint(-5, 5, (40, 30), generator=g)
        def f(dev):
            X, Y, N = x.to(dev), y.to(dev), n.to(dev)
            v, i = torch.max(X * 1.0, dim=1)
            w, j = torch.min(X + 0.0, dim=0, keepdim=True)
            r = {"argmax": torch.argmax(X * 2, dim=1), "argmin": torch.argmin(X - 1, dim=1), "max_v": v, "max_i": i,
                 "min_v": w, "min_i": j, "argmax_3d": torch.argmax(Y * 1, dim=1),
                 "argmax_int": torch.argmax(N * 1, dim=1), "argmax_all": torch.argmax(Y + 0)}
            return {k: t.cpu() for k, t in r.items()}
        ref = f("cpu")
        torch_trn.reset_stats()
        got = f("neuron")
        d = torch_trn.stats()["device"]
        print(json.dumps({"equal": {k: bool(torch.equal(got[k], ref[k]) or (got[k].is_floating_point() and
                                                bool(torch.allclose(got[k], ref[k], rtol=0, atol=0, equal_nan=True))))
                                    for k in ref},
                          "dtypes": {k: got[k].dtype == ref[k].dtype and got[k].shape == ref[k].shape for k in ref},
                          "dev": d}))
    """, env=TRN))
    assert all(out["equal"].values()), out["equal"]
    assert all(out["dtypes"].values()), out["dtypes"]
    dev = out["dev"]
    ran = ran_on_core(dev)
    for op in ("aten::argmax", "aten::argmin", "aten::max", "aten::min"):
        assert op in ran, sorted(ran)
    assert dev["ops_on_host"] == 0 and dev["trn_internal_failures"] == 0, dev
    assert not dev["host_group_reasons"], dev["host_group_reasons"]
