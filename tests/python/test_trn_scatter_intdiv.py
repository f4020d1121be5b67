"""NEURON_TARGET=trn2: embedding backward, index_add and scatter_add (scatter-adds by index) and
integer division run on the modeled NeuronCore, with results equal to PyTorch CPU's.

Each test runs a fresh process (the target is read at import) in compile mode and checks the
values against the same ops on CPU (exactly: the scatter adds rows in index order as ATen's CPU
kernel does; integer quotients are exact), that the ops ran on the modeled core
(stats()["device"]["ops_by_name"]) and that no group went to the host.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from helpers import TRN, last_json, ran_on_core, run_python  # noqa: E402


def assert_scatter_run(out, op, refused_on_host):
    """Every result equal to CPU; `op` and `op`_ ran on the modeled core with nothing on the host
    and no internal failure; the refused cases ran on the host (`refused_on_host` ops)."""
    assert all(out["equal"].values()), out["equal"]
    dev = out["dev"]
    assert op + "_" in ran_on_core(dev) and op in ran_on_core(dev), dev["ops_by_name"]
    assert dev["ops_on_host"] == 0 and dev["trn_internal_failures"] == 0, dev
    assert not dev["host_group_reasons"], dev["host_group_reasons"]
    assert out["host_ops"] == refused_on_host and out["host_failures"] == 0, out


def test_index_add_on_trn2():
    # index_add_ / index_add along dim 0 with alpha 1 (dma_scatter_add onto a copy of self):
    # repeated indices (added in index order, bit for bit as CPU), > 128 indices, int32 indices,
    # 1-D and 3-D self, rows wider than one chunk (2048), the result of a fused op as self. Along
    # dim 1, with alpha 2 or in f64 the op is refused and runs on the host, as exactly.
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        def case(shape, n, dtype=torch.float32, idx_dtype=torch.long):
            x = torch.randn(*shape, generator=g, dtype=dtype)
            src = torch.randn(n, *shape[1:], generator=g, dtype=dtype)
            idx = torch.randint(0, shape[0], (n,), generator=g).to(idx_dtype)
            idx[:9] = shape[0] // 2                            # a row hit many times
            return x, idx, src
        on_core = {"inplace": case((50, 16), 300), "int32": case((40, 8), 20, idx_dtype=torch.int32),
                   "1d": case((7,), 40), "3d": case((10, 2, 3), 25), "wide": case((6, 2100), 12)}
        def run(dev, cases, fn):
            return {k: fn(*(t.clone().to(dev) for t in v)).cpu() for k, v in cases.items()}
        inplace = lambda x, i, s: x.index_add_(0, i, s) * 1
        fused = lambda x, i, s: torch.index_add(x * 2, 0, i, s)
        ref, ref_f = run("cpu", on_core, inplace), run("cpu", on_core, fused)
        torch_trn.reset_stats()
        got, got_f = run("neuron", on_core, inplace), run("neuron", on_core, fused)
        d = torch_trn.stats()["device"]
        eq = {k: torch.equal(got[k], ref[k]) for k in ref}
        eq.update({"fused_" + k: torch.equal(got_f[k], ref_f[k]) for k in ref})
        x, idx, src = case((5, 6), 4)
        host = {"dim1": lambda dev: x.clone().to(dev).index_add_(1, idx.to(dev) % 6, src[:, :5].t().contiguous().to(dev)),
                "alpha": lambda dev: x.clone().to(dev).index_add_(0, idx.to(dev), src.to(dev), alpha=2),
                "f64": lambda dev: x.double().clone().to(dev).index_add_(0, idx.to(dev), src.double().to(dev))}
        torch_trn.reset_stats()
        eq.update({k: torch.equal(f("neuron").cpu(), f("cpu")) for k, f in host.items()})
        h = torch_trn.stats()["device"]
        print(json.dumps({"equal": eq, "dev": d, "host_ops": h["ops_on_host"],
                          "host_failures": h["trn_internal_failures"]}))
    """, env=TRN))
    assert_scatter_run(out, "aten::index_add", refused_on_host=3)


def test_scatter_add_rows_on_trn2():
    # scatter_add_ / scatter_add along dim 0 where it is a row scatter (the same dma_scatter_add):
    # 1-D (src longer than index), 2-D with an index expanded along dim 1 from an input or from a
    # value computed in the group, narrower than self and src; repeated and > 128 indices, bit for
    # bit as CPU. A general 2-D index (varying along dim 1) runs on the host, as exactly.
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        x = torch.randn(50, 16, generator=g); src = torch.randn(300, 20, generator=g)
        idx = torch.randint(0, 50, (300,), generator=g); idx[:9] = 4
        def f(dev):
            X, I, S = x.to(dev), idx.to(dev), src.to(dev)
            return {
                "inplace": X.clone().scatter_add_(0, I.view(-1, 1).expand(-1, 16), S[:, :16].contiguous()) * 1,
                "narrow": torch.scatter_add(X * 2, 0, I[:200].unsqueeze(1).expand(200, 5), S),
                "computed": torch.scatter_add(X, 0, (I % 50).unsqueeze(1).expand(-1, 16), S[:, 4:].contiguous()),
                "1d": torch.zeros(7, device=dev).scatter_add_(0, I[:40] % 7, S[:, 0].contiguous()),
            }
        def general(dev):
            return torch.zeros(5, 4, device=dev).scatter_add_(0, (idx[:12] % 5).view(3, 4).to(dev), src[:3, :4].to(dev))
        ref = {k: v.cpu() for k, v in f("cpu").items()}
        torch_trn.reset_stats()
        got = {k: v.cpu() for k, v in f("neuron").items()}
        d = torch_trn.stats()["device"]
        eq = {k: torch.equal(got[k], ref[k]) for k in ref}
        torch_trn.reset_stats()
        eq["general"] = torch.equal(general("neuron").cpu(), general("cpu"))
        h = torch_trn.stats()["device"]
        print(json.dumps({"equal": eq, "dev": d, "host_ops": h["ops_on_host"],
                          "host_failures": h["trn_internal_failures"]}))
    """, env=TRN))
    assert_scatter_run(out, "aten::scatter_add", refused_on_host=1)


def test_index_add_index_out_of_range_is_an_index_error(tmp_path):
    # As on CPU: IndexError "index out of range in self" (from the dma_scatter_add instruction), naming
    # the op and the model's line (4, in the exec'd script).
    script = tmp_path / "oob.py"
    script.write_text(
        "import torch, torch_trn\n"
        "x = torch.zeros(10, 4).to('neuron')\n"
        "try:\n"
        "    x.index_add_(0, torch.tensor([1, 10]).to('neuron'), torch.ones(2, 4).to('neuron')); x.cpu()\n"
        "except IndexError as e:\n"
        "    print('INDEXERROR', e)\n"
        "print('STATS', torch_trn.stats()['device']['trn_internal_failures'])\n")
    proc = run_python(f"exec(open({str(script)!r}).read())", env=TRN)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "INDEXERROR" in proc.stdout and "index out of range in self" in proc.stdout, proc.stdout + proc.stderr[-2000:]
    assert "aten::index_add_ at <string>:4" in proc.stdout, proc.stdout
    assert "NeuronCore model" in proc.stdout, proc.stdout  # raised on the core, not by ATen
    assert "STATS 0" in proc.stdout, proc.stdout


def test_embedding_backward_on_trn2():
    # Repeated indices (accumulated in index order), padding_idx (its row gets no gradient, even
    # an inf one), more than 128 indices (several blocks), a row wider than one chunk (2048), and
    # nn.Embedding with and without padding inside a training step; token type ids expanded along
    # the batch (stride 0) and a transposed gradient (passed as contiguous copies made on the core).
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        cases = {  # table rows, row width, index shape, padding_idx, strided operands
            "repeated_padding": (50, 16, (4, 70), 3, False),
            "no_padding": (300, 24, (333,), None, False),
            "wide_rows": (20, 2100, (3, 9), 0, False),
            "expanded_ids": (8, 16, (4, 12), None, True),
        }
        eq, ran, host = {}, set(), {}
        for name, (rows, d, shape, pad, strided) in cases.items():
            w = torch.randn(rows, d, generator=g)
            ids = torch.randint(0, rows, shape, generator=g)
            ids.view(-1)[:7] = 5                              # a row hit many times
            if pad is not None:
                ids.view(-1)[7:12] = pad
            up = torch.randn(*shape, d, generator=g)
            if pad is not None:
                up[(ids == pad)] = float("inf")               # CPU skips these rows entirely
            def run(dev):
                W = w.clone().to(dev).requires_grad_()
                i = ids.to(dev)[:1].expand(*shape) if strided else ids.to(dev)
                out = torch.nn.functional.embedding(i, W, padding_idx=pad)
                if strided:   # the gradient reaching the embedding is a transposed view
                    out = out.transpose(0, 1).contiguous().transpose(0, 1)
                (out * up.to(dev)).sum().backward()
                return W.grad.cpu()
            ref = run("cpu")
            torch_trn.reset_stats()
            got = run("neuron")
            s = torch_trn.stats()["device"]
            ran |= {k.split(".")[0] for k in s["ops_by_name"]}
            host[name] = [s["ops_on_host"], s["host_group_reasons"]]
            eq[name] = bool(torch.equal(got, ref))
        torch_trn.reset_stats()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Embedding(40, 8, padding_idx=0), torch.nn.Flatten(), torch.nn.Linear(48, 3))
        x = torch.randint(0, 40, (5, 6)); x[0, 0] = 0; x[1, :] = 7
        def train(m, dev):
            m = m.to(dev); opt = torch.optim.SGD(m.parameters(), lr=0.1)
            for _ in range(2):
                loss = m(x.to(dev)).square().mean(); loss.backward(); opt.step(); opt.zero_grad()
            return m[0].weight.detach().cpu()
        import copy
        ref = train(copy.deepcopy(model), "cpu")
        got = train(copy.deepcopy(model), "neuron")
        eq["training"] = bool(torch.allclose(got, ref, rtol=1e-5, atol=1e-6))
        s = torch_trn.stats()["device"]
        print(json.dumps({"equal": eq, "ran": sorted(ran), "host": host, "dev": s}))
    """, env=TRN))
    assert all(out["equal"].values()), out["equal"]
    assert "aten::embedding_dense_backward" in out["ran"], out["ran"]
    assert all(h == [0, {}] for h in out["host"].values()), out["host"]
    dev = out["dev"]
    assert "aten::embedding_dense_backward" in ran_on_core(dev)
    assert dev["ops_on_host"] == 0 and dev["host_transfer_bytes"] == 0, dev
    assert dev["engine_busy_ns"]["dma"] > 0


def test_integer_division_on_trn2():
    # Truncating and floored quotients, Python's and C's remainders, of int64 and int32 tensors
    # by tensors and scalars of both signs, values up to 2e9 (beyond fp32's exact 2^24: the
    # rounded fp32 quotient is refined and corrected in integers), exactly as CPU.
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        a = torch.randint(-2_000_000_000, 2_000_000_000, (40, 50), generator=g)
        a[0, :8] = torch.tensor([0, 7, -7, 6, -6, 2_000_000_000, -2_000_000_000, 1])
        b = torch.randint(-70_000, 70_000, (40, 50), generator=g)
        b[b == 0] = 3
        b[0, :8] = torch.tensor([3, 2, 2, -3, -3, 7, -1, -2_000_000_000])
        s = torch.randint(-300, 300, (40, 50), generator=g, dtype=torch.int32)
        t = torch.randint(1, 17, (40, 50), generator=g, dtype=torch.int32) * torch.tensor([1, -1]).repeat(25).int()
        def f(dev):
            A, B, S, T = a.to(dev), b.to(dev), s.to(dev), t.to(dev)
            r = {"trunc": torch.div(A, B, rounding_mode="trunc"), "floor": torch.div(A, B, rounding_mode="floor"),
                 "floordiv": A // B, "rem": A % B, "fmod": torch.fmod(A, B),
                 "scalar_floordiv": A // 7, "scalar_rem": A % -5, "scalar_trunc": torch.div(A, -3, rounding_mode="trunc"),
                 "i32_floordiv": S // T, "i32_rem": torch.remainder(S, T), "i32_fmod": torch.fmod(S, 4),
                 "index_math": (torch.arange(1000, device=dev) // 37) * 37 + torch.arange(1000, device=dev) % 37}
            return {k: v.cpu() for k, v in r.items()}
        ref = f("cpu")
        torch_trn.reset_stats()
        got = f("neuron")
        d = torch_trn.stats()["device"]
        errors = {}
        for name, op in {"floordiv": lambda x, y: x // y, "rem": lambda x, y: x % y,
                         "trunc": lambda x, y: torch.div(x, y, rounding_mode="trunc")}.items():
            msgs = []
            for dev in ("cpu", "neuron"):
                try:
                    op(torch.tensor([5, 6]).to(dev), torch.tensor([1, 0]).to(dev)).cpu()
                    msgs.append(None)
                except RuntimeError as e:
                    msgs.append(str(e))
            errors[name] = msgs
        print(json.dumps({"equal": {k: bool(torch.equal(got[k], ref[k])) for k in ref},
                          "dtypes": {k: str(got[k].dtype) == str(ref[k].dtype) for k in ref},
                          "errors": errors, "dev": d}))
    """, env=TRN))
    assert all(out["equal"].values()), out["equal"]
    assert all(out["dtypes"].values()), out["dtypes"]
    dev = out["dev"]
    ran = ran_on_core(dev)
    for op in ("aten::div", "aten::floor_divide", "aten::remainder", "aten::fmod"):
        assert op in ran, sorted(ran)
    assert dev["ops_on_host"] == 0, dev
    # A zero divisor raises ATen's RuntimeError, naming the op and the line on the device.
    for name, (cpu, neuron) in out["errors"].items():
        assert cpu and "ZeroDivisionError" in cpu, (name, cpu)
        assert neuron and "ZeroDivisionError" in neuron, (name, neuron)


# Advanced indexing: x[idx], x[:, idx], x[idx2d], x[i, j], x[:, i, j], broadcast index tensors, negative
# indices, repeated ones, > 128 indices, rows wider than one chunk, int32 indices, a boolean self; and the
# backward (index_put_ with accumulate=True, repeated indices summed); CPU index tensors on a device
# tensor (copied to the device when recorded, as CUDA does, so the op still joins a group); values
# whose index dims do not merge into one stride (refused per op: the rest of the group stays).
# `case(dev)` returns the results.
INDEX_CASES = """
import json, torch, torch_trn
g = torch.Generator().manual_seed(0)
x = torch.randn(6, 5, 4, generator=g); big = torch.randn(300, 3, generator=g); wide = torch.randn(5, 2100, generator=g)
i = torch.tensor([0, -1, 3, 3, -6, 2]); j = torch.tensor([1, 4, -5, 0, 2, 2]); i2 = torch.tensor([[0, 5], [-2, 1], [3, 3]])
many = torch.randint(-300, 300, (400,), generator=g); many[:9] = -7
mask = torch.rand(3, 7, generator=g) > 0.5; v = torch.randn(6, 4, generator=g)
b = torch.arange(3).view(3, 1, 1); kv = torch.tensor([0, 2, -1, 6]).view(1, 1, 4)
def forward(dev):
    X, I, J, I2, M = x.to(dev), i.to(dev), j.to(dev), i2.to(dev), many.to(dev)
    r = {"x[i]": X[I], "x[:, j]": X[:, J], "x[i2]": X[I2], "x[i, j]": X[I, J], "x[:, j, i]": X[:, J, I % 4 - 4],
         "x[..., j % 4]": X[..., J % 4], "int32": X[I.int()], "many": big.to(dev)[M], "wide": wide.to(dev)[I % 5],
         "bool_bcast": mask.to(dev)[b.to(dev), kv.to(dev)], "cpu_index": X[i] * 3, "cpu_pair": X[i, j] + 1,
         "arange_view": big.to(dev)[torch.arange(12, device=dev).view(3, 4) * 7]}
    return {k: (v & True if v.dtype == torch.bool else v * 1).cpu() for k, v in r.items()}
def backward(dev):
    X = x.clone().to(dev).requires_grad_(); B = big.clone().to(dev).requires_grad_()
    loss = (X[i.to(dev)] * 2).sum() + X[:, j.to(dev)].pow(2).sum() + X[i.to(dev), j.to(dev)].sum()
    loss = loss + (B[many.to(dev)] * torch.arange(1200.0, device=dev).view(400, 3)).sum()
    loss.backward()
    return {"grad_x": X.grad.cpu(), "grad_big": B.grad.cpu()}
def put(dev):
    y = x.clone().to(dev)
    y[i.to(dev)] = torch.ones(6, 5, 4, device=dev) * 2        # accumulate=False: the host (trn) or compiled (host)
    z = torch.zeros(6, 5, 4, device=dev)
    z.index_put_((i.to(dev), j.to(dev)), v.to(dev), accumulate=True)                # (0, 0) twice: summed
    w = torch.zeros(6, 5, 4, device=dev)
    strided = torch.arange(144.0).view(6, 3, 2, 4).to(dev).transpose(1, 2)   # index dims [2, 3]: strides 8, 24
    torch.ops.aten.index_put_(w * 1, [None, i2.t().contiguous().to(dev) % 5], strided, True)
    w2 = torch.ops.aten.index_put(w + 1, [None, i2.t().contiguous().to(dev) % 5], strided, True)
    return {"put": (y * 1).cpu(), "put_acc": (z * 1).cpu(), "put_strided": (w2 * 1).cpu()}
def run(fn):
    ref = fn("cpu"); torch_trn.reset_stats(); got = fn("neuron"); s = torch_trn.stats()
    return {k: bool(torch.equal(got[k], ref[k])) for k in ref}, s
out = {}
for name, fn in {"forward": forward, "backward": backward, "put": put}.items():
    eq, s = run(fn)
    out[name] = {"equal": eq, "unlowered": s["unlowered_ops"], "failures": s["compile_failures"],
                 "dev": s.get("device")}
print(json.dumps(out))
"""


def test_advanced_indexing_on_trn2():
    out = last_json(run_python(INDEX_CASES, env=TRN))
    for name, r in out.items():
        assert all(r["equal"].values()), (name, r["equal"])
        dev = r["dev"]
        assert dev["trn_internal_failures"] == 0 and not dev["host_group_reasons"], (name, dev)
    ran = {name: ran_on_core(r["dev"]) for name, r in out.items()}
    assert "aten::index" in ran["forward"] and "aten::index" in ran["backward"], ran
    assert "aten::_index_put_impl_" in ran["backward"] and "aten::_index_put_impl_" in ran["put"], ran
    assert out["forward"]["dev"]["ops_on_host"] == 0 and out["backward"]["dev"]["ops_on_host"] == 0, out
    # x[i] = v (accumulate=False) has no on-core lowering, nor an accumulating put of values whose
    # index dims have two strides: those ops run on the host, alone (no host group above).
    assert out["put"]["dev"]["ops_on_host"] == 3, out["put"]
    assert out["put"]["unlowered"] == {"aten::_index_put_impl_": 3}, out["put"]


def test_advanced_indexing_runs_compiled_on_host():
    out = last_json(run_python(INDEX_CASES, env={"NEURON_MODE": "compile"}))
    for name, r in out.items():
        assert all(r["equal"].values()), (name, r["equal"])
        # Integer remainders (the cases' `%`) run op by op on the host target; indexing runs compiled.
        assert set(r["unlowered"]) <= {"aten::remainder.Tensor_out"} and r["failures"] == {}, (name, r)


def test_advanced_indexing_out_of_range_is_an_index_error():
    # As on CPU, an IndexError, also where the combined row of x[i, j] would be inside x (j = 5 of 5
    # columns) and for a negative index below -size; raised on the core (the indirect DMA), naming the op.
    out = last_json(run_python("""
        import json, torch, torch_trn
        x = torch.randn(4, 5)
        cases = {"pair": (torch.tensor([0, 1]), torch.tensor([2, 5])), "negative": (torch.tensor([1, -5]),)}
        res = {}
        for name, idx in cases.items():
            msgs = []
            for dev in ("cpu", "neuron"):
                try:
                    (x.to(dev)[tuple(t.to(dev) for t in idx)] * 1).cpu(); msgs.append(None)
                except IndexError as e:
                    msgs.append(str(e))
            res[name] = msgs
        print(json.dumps({"errors": res, "failures": torch_trn.stats()["device"]["trn_internal_failures"]}))
    """, env=TRN))
    for name, (cpu, neuron) in out["errors"].items():
        assert cpu is not None and neuron is not None, (name, cpu, neuron)
        assert "aten::index" in neuron and "NeuronCore model" in neuron, (name, neuron)
    assert out["failures"] == 0


def test_gathers_of_strided_indices_on_trn2():
    # A strided index_select index (a step-3 slice of a device tensor the group reads) is passed to
    # the core's gather as a contiguous copy made on the core; before, the gather's whole group went
    # to the host ("gathers with strided indices"). (Expanded token type ids reach embedding's
    # gather through its reshape, a copy.)
    out = last_json(run_python("""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        w = torch.randn(8, 16, generator=g); ids = torch.randint(0, 8, (1, 12), generator=g)
        def f(dev):
            W = w.to(dev)
            r = {"embedding": torch.nn.functional.embedding(ids.to(dev).expand(4, 12), W) * 1,
                 "index_select": torch.index_select(W, 0, (torch.arange(24) % 8).to(dev)[::3]) * 1}
            return {k: v.cpu() for k, v in r.items()}
        ref = f("cpu")
        torch_trn.reset_stats()
        got = f("neuron")
        print(json.dumps({"equal": {k: bool(torch.equal(got[k], ref[k])) for k in ref}, "dev": torch_trn.stats()["device"]}))
    """, env=TRN))
    assert all(out["equal"].values()), out["equal"]
    dev = out["dev"]
    assert "aten::index_select" in ran_on_core(dev), sorted(ran_on_core(dev))   # (embedding is an index_select)
    assert dev["ops_on_host"] == 0 and not dev["host_group_reasons"], dev
