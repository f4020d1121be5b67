"""NEURON_TARGET=trn2: float -> integer conversion (truncation toward zero, `arith.fptosi`) and
integer abs (`math.absi`) run on the modeled NeuronCore, with results equal to PyTorch CPU's.

Before they were lowered, a group holding either went to the host whole (host_group_reasons
"'arith.fptosi' op has no trn lowering": hf/tapas, hf/sew-d, hf/yoso in docs/trn_pipeline.md).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import TRN, last_json, ran_on_core, run_python  # noqa: E402


def test_float_to_int_truncates_toward_zero_and_int_abs_on_trn2():
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        x = torch.randn(64, 40, generator=g) * 1000
        # Halves and near-integers of both signs (round-to-nearest would differ), zeros of both
        # signs, the largest exact float integers, values beyond 2^24 and near int32's range.
        special = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.999, -0.999, 1.0001, -1.0001, 0.0, -0.0,
                   16777215.0, -16777215.0, 3.0e8, -3.0e8, 2.1e9, -2.1e9, 7.0, -7.0]
        x[0, :len(special)] = torch.tensor(special)
        n = torch.randint(-100_000, 100_000, (64, 40), generator=g)
        n[0, :4] = torch.tensor([0, -1, 1, -2_000_000_000])
        def f(dev):
            X, N = x.to(dev), n.to(dev)
            r = {"long": (X * 1.0).long(), "int": (X + 0.0).int(), "scaled": (X * 0.37).to(torch.int32),
                 "abs_long": torch.abs(N * 1), "abs_int": (N.int() - 3).abs(), "abs_of_cast": (X * 0.1).long().abs()}
            return {k: v.cpu() for k, v in r.items()}
        ref = f("cpu")
        torch_trn.reset_stats()
        got = f("neuron")
        d = torch_trn.stats()["device"]
        print(json.dumps({"equal": {k: bool(torch.equal(got[k], ref[k])) for k in ref},
                          "dtypes": {k: got[k].dtype == ref[k].dtype for k in ref},
                          "first": {k: got[k][0, :20].tolist() for k in ("long", "int")},
                          "dev": d}))
    """, env=TRN))
    assert all(out["equal"].values()), (out["equal"], out["first"])
    assert all(out["dtypes"].values()), out["dtypes"]
    dev = out["dev"]
    assert "aten::abs" in ran_on_core(dev), sorted(ran_on_core(dev))
    assert dev["ops_on_host"] == 0 and dev["trn_internal_failures"] == 0, dev
    assert not dev["host_group_reasons"], dev["host_group_reasons"]


def test_float_scalar_into_an_integer_tensor_truncates_on_trn2():
    # A float Scalar written into an integer tensor (fill_, full(...).to(int)) is a runtime
    # scalar, a column on the core: it used to be taken as already integral, and the copy into
    # an i32 tile rounded it to nearest (fill_(2.7) gave 3). Eager mode on trn2 runs each op as
    # a group of one, compile mode fuses the fill with the conversion.
    for mode in ("compile", "eager"):
        out = last_json(run_python("""
            import json, torch, torch_trn
            vals = [2.7, -2.7, 3.5, -3.5, 0.5, -0.5, 1e6 + 0.75, 7.0]
            def f(dev):
                r = []
                for v in vals:
                    x = torch.zeros(4, 3, dtype=torch.int32, device=dev)
                    x.fill_(v)
                    y = torch.full((4, 3), v, device=dev).to(torch.int64) + 0
                    z = torch.full((4, 3), 1, dtype=torch.int32, device=dev).fill_(v) * 2
                    r += [x.cpu().tolist(), y.cpu().tolist(), z.cpu().tolist()]
                return r
            ref = f("cpu")
            torch_trn.reset_stats()
            got = f("neuron")
            print(json.dumps({"equal": got == ref, "got": got[:3], "ref": ref[:3],
                              "dev": torch_trn.stats()["device"]}))
        """, env={**TRN, "NEURON_MODE": mode, "NEURON_CACHE_DIR": "off"}))
        assert out["equal"], (mode, out["got"], out["ref"])
        dev = out["dev"]
        assert "aten::fill_" in ran_on_core(dev), (mode, sorted(ran_on_core(dev)))
        assert dev["ops_on_host"] == 0 and dev["trn_internal_failures"] == 0, (mode, dev)
