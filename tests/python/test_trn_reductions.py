"""Reductions the trn pipeline needs in another form than the host's (ops/reductions.cpp): argmax-like, cumsum, prod.

- argmax / argmin and max / min with indices: on trn targets two reductions VectorE's
  tensor_reduce runs (the extremum, then the first index holding it: ValueAndIndex), where the
  host's one pass is a chain of selects on two accumulators that the trn pipeline refuses
  ("reduction body is not `combine(f(inputs), acc)`"), which sent the whole group to the host.
- cumsum: on the host a runtime call of ATen's kernel inside the compiled group; on trn a masked
  sum over one more dim (VectorE has no scan). Before, it had no lowering anywhere.
- full reductions of 5-D tensors (a 3-D convolution's loss): a tile has at most 4 free axes (the
  DMA window), so past them the outer axes advance one index per tile; before, the emitter
  failed the group ("HBM access without a window") and it ran op by op.
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


CUMSUM = """
    import json, torch, torch_trn
    g = torch.Generator().manual_seed(0)
    x = torch.randn(12, 40, generator=g)
    m = (torch.rand(6, 33, generator=g) > 0.3).long()
    y = torch.randn(3, 50, 4, generator=g)
    def f(dev):
        X, M, Y = x.to(dev), m.to(dev), y.to(dev)
        r = {"f32": torch.cumsum(X * 2, dim=1), "neg_dim": (X + 1).cumsum(-2),
             "position_ids": torch.cumsum(M * 1, dim=1) * M + 1, "bool": (M > 0).cumsum(1),
             "middle_dim": torch.cumsum(Y * 1, dim=1), "dtype": torch.cumsum(M * 1, 1, dtype=torch.float32)}
        xg = X.clone().requires_grad_(True)
        (torch.cumsum(xg * 3, dim=1) ** 2).sum().backward()   # backward: flip, cumsum, flip
        r["grad"] = xg.grad
        return {k: v.cpu() for k, v in r.items()}
    ref = f("cpu")
    torch_trn.reset_stats()
    got = f("neuron")
    s = torch_trn.stats()
    def close(a, b):   # CPU accumulates float cumsums in double, the core in f32
        return a.dtype == b.dtype and bool(torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-6 * float(b.abs().max())))
    print(json.dumps({"equal": {k: close(got[k], ref[k]) for k in ref}, "unlowered": s["unlowered_ops"],
                      "dev": s.get("device")}))
"""


def test_cumsum_on_trn2():
    out = last_json(run_python(CUMSUM, env=TRN))
    assert all(out["equal"].values()), out["equal"]
    dev = out["dev"]
    assert "aten::cumsum" in ran_on_core(dev), sorted(ran_on_core(dev))
    assert dev["ops_on_host"] == 0 and dev["trn_internal_failures"] == 0, dev
    assert not dev["host_group_reasons"], dev["host_group_reasons"]


def test_cumsum_runs_compiled_on_the_host():
    out = last_json(run_python(CUMSUM, env={"NEURON_MODE": "compile"}))
    assert all(out["equal"].values()), out["equal"]
    assert not any("cumsum" in k for k in out["unlowered"]), out["unlowered"]


def test_small_products_on_trn2():
    # tensor_reduce has no multiply: a product of at most 16 elements is one pointwise op of the
    # slices on the core (deformable DETR's spatial_shapes.prod(1)); a longer one runs on the host,
    # alone (its group stays on the core).
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        s = torch.tensor([[16, 20], [8, 10], [4, 5], [2, 3]])
        x = torch.rand(3, 4, 5, generator=g) + 0.5
        def f(dev):
            S, X = s.to(dev), x.to(dev)
            r = {"int_rows": S.prod(1) * 1, "keepdim": (X * 1).prod(dim=1, keepdim=True),
                 "dim0": (X + 0).prod(0), "all_of_4": (S[:2] * 1).prod(), "of_5": (X * 2).prod(2) + 1,
                 "of_60": (X * 0.5 + 0.75).prod() * 1}
            return {k: v.cpu() for k, v in r.items()}
        ref = f("cpu")
        torch_trn.reset_stats()
        got = f("neuron")
        print(json.dumps({"equal": {k: got[k].dtype == ref[k].dtype and got[k].shape == ref[k].shape and
                                       bool(torch.allclose(got[k].double(), ref[k].double(), rtol=1e-6)) for k in ref},
                          "unlowered": torch_trn.stats()["unlowered_ops"], "dev": torch_trn.stats()["device"]}))
    """, env=TRN))
    assert all(out["equal"].values()), out["equal"]
    dev = out["dev"]
    assert "aten::prod" in ran_on_core(dev), sorted(ran_on_core(dev))
    assert not dev["host_group_reasons"] and dev["trn_internal_failures"] == 0, dev
    assert len(out["unlowered"]) == 1 and list(out["unlowered"].values()) == [1], out["unlowered"]   # the one of 60


def test_full_reductions_of_five_dim_tensors_on_trn2():
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        x = torch.randn(2, 5, 4, 6, 5, generator=g)
        def f(dev):
            X = x.to(dev)
            r = {"sum": (X * 2).sum(), "amax": (X + 1).amax(), "mean_0234": (X * 1).mean((0, 2, 3, 4))}
            return {k: t.cpu() for k, t in r.items()}
        ref = f("cpu")
        torch_trn.reset_stats()
        got = f("neuron")
        print(json.dumps({"diff": {k: float((got[k] - ref[k]).abs().max() / ref[k].abs().max()) for k in ref},
                          "dev": torch_trn.stats()["device"]}))
    """, env=TRN))
    for k, d in out["diff"].items():
        assert d < 1e-6, f"{k}: relative difference {d} from CPU"
    dev = out["dev"]
    assert {"aten::sum", "aten::amax", "aten::mean"} <= ran_on_core(dev), sorted(ran_on_core(dev))
    assert dev["ops_on_host"] == 0 and dev["trn_internal_failures"] == 0, dev
