"""Device basics: creation, views, in-place ops, copies, printing, dtypes, sync semantics."""
import torch
import pytest

import torch_trn

DEV = torch_trn.device()


def test_device_is_named_neuron():
    x = torch.ones(2, device="neuron")
    assert x.device == torch.device("neuron", 0)
    assert x.is_neuron
    assert str(x.device) == "neuron:0"
    assert torch.neuron.device_count() == 1
    assert torch.ones(1).neuron().is_neuron


def test_to_and_back_roundtrip_preserves_values():
    x = torch.randn(3, 5)
    y = x.to("neuron")
    assert y.device.type == "neuron"
    torch.testing.assert_close(y.cpu(), x, rtol=0, atol=0)


def test_arithmetic_matches_cpu():
    a, b = torch.randn(4, 6), torch.randn(6, 3)
    out = ((a.to(DEV) @ b.to(DEV)).relu() * 2 - 1).softmax(dim=-1)
    torch.testing.assert_close(out.cpu(), ((a @ b).relu() * 2 - 1).softmax(dim=-1))


def test_views_share_storage_and_see_later_writes():
    x = torch.zeros(4, 4, device=DEV)
    row = x[1]
    col = x[:, 2]
    t = x.t()
    x.add_(1)
    row.mul_(5)
    expected = torch.ones(4, 4)
    expected[1] *= 5
    torch.testing.assert_close(x.cpu(), expected)
    torch.testing.assert_close(col.cpu(), expected[:, 2])
    torch.testing.assert_close(t.cpu(), expected.t())
    assert t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def test_inplace_metadata_ops_do_not_change_queued_ops():
    x = torch.arange(6.0).reshape(2, 3).to(DEV)
    y = x * 1  # queued with x's current (2, 3) geometry
    x.unsqueeze_(0)
    x.transpose_(1, 2)
    assert x.shape == (1, 3, 2)
    torch.testing.assert_close(y.cpu(), torch.arange(6.0).reshape(2, 3))
    torch.testing.assert_close(x.cpu(), torch.arange(6.0).reshape(2, 3).unsqueeze(0).transpose(1, 2))


def test_out_variant_resizes_output():
    a = torch.randn(5).to(DEV)
    out = torch.empty(0, device=DEV)
    torch.abs(a, out=out)
    assert out.shape == (5,)
    torch.testing.assert_close(out.cpu(), a.cpu().abs())


def test_host_tensor_mutated_after_copy_does_not_change_device_value():
    h = torch.ones(3)
    d = torch.zeros(3, device=DEV)
    d.copy_(h)  # d's storage is not fresh here: the copy is queued with a private copy of h
    h.fill_(7)
    torch.testing.assert_close(d.cpu(), torch.ones(3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16,
                                   torch.int64, torch.int32, torch.bool, torch.uint8])
def test_dtypes(dtype):
    x = (torch.arange(12) % 5).to(dtype)
    d = x.to(DEV)
    assert d.dtype == dtype
    torch.testing.assert_close(d.cpu(), x)
    if dtype == torch.bool:
        torch.testing.assert_close((d & d.logical_not()).cpu(), torch.zeros(12, dtype=torch.bool))
    else:
        torch.testing.assert_close((d + d).cpu(), x + x)


def test_dtype_conversion_in_copies():
    x = torch.tensor([1.75, -2.25, 3.5])
    d = x.to(DEV, torch.bfloat16)
    assert d.dtype == torch.bfloat16
    back = d.to("cpu", torch.int64)
    assert back.dtype == torch.int64
    assert back.tolist() == x.to(torch.bfloat16).to(torch.int64).tolist()


def test_printing_syncs_and_shows_values():
    d = torch.tensor([1.5, 2.5]).to(DEV) * 2
    text = repr(d)
    assert "3." in text and "5." in text
    assert "neuron" in text


def test_item_bool_and_host_reads_are_sync_points():
    torch_trn.reset_stats()
    d = torch.tensor([3.0]).to(DEV) + 1
    assert d.item() == 4.0
    assert bool(d > 3)
    s = torch_trn.stats()
    assert s["sync_total"] >= 2
    assert s["ops_executed"] == s["ops_recorded"]


def test_ops_are_recorded_not_run_until_sync():
    torch_trn.sync()
    torch_trn.reset_stats()
    x = torch.randn(64, 64).to(DEV)
    for _ in range(50):
        x = x * 1.0001
    s = torch_trn.stats()
    assert s["ops_recorded"] >= 50
    torch_trn.sync()
    assert torch_trn._C.pending() == 0
    assert torch_trn.stats()["ops_executed"] == torch_trn.stats()["ops_recorded"]


def test_bounded_queue_under_many_ops():
    # Far more ops than NEURON_MAX_PENDING_OPS: recording blocks instead of growing without bound.
    x = torch.zeros(8).to(DEV)
    for _ in range(10000):
        x.add_(1)
    assert torch_trn._C.pending() <= 4096 + 1
    assert x.sum().item() == 80000.0


def test_autograd_on_device():
    w = torch.randn(3, 3, requires_grad=True)
    wd = w.detach().to(DEV).requires_grad_()
    x = torch.randn(2, 3)
    (x.to(DEV) @ wd).tanh().sum().backward()
    (x @ w).tanh().sum().backward()
    torch.testing.assert_close(wd.grad.cpu(), w.grad)


def test_new_empty_strided_is_an_allocation_not_a_recorded_op():
    # AccumulateGrad calls new_empty_strided for every gradient of a non-contiguous parameter;
    # it allocates like empty_strided instead of being recorded and run on the executor.
    x = torch.randn(4, 6).to(DEV)
    torch_trn.sync()
    torch_trn.reset_stats()
    y = x.new_empty_strided((4, 6), (1, 4))
    h = x.new_empty_strided((2, 3), (3, 1), dtype=torch.float64, device="cpu")
    assert torch_trn.stats()["ops_recorded"] == 0
    assert y.device == x.device and y.stride() == (1, 4) and y.dtype == torch.float32
    assert h.device.type == "cpu" and h.dtype == torch.float64 and h.stride() == (3, 1)
    w = torch.randn(6, 4)
    wd = torch.nn.Parameter(w.to(DEV).t())   # a non-contiguous parameter
    (wd * wd).sum().backward()
    torch.testing.assert_close(wd.grad.cpu(), 2 * w.t())
    assert wd.grad.stride() == wd.stride()
    assert "aten::new_empty_strided" not in torch_trn.stats()["unlowered_ops"]


def test_data_dependent_ops_fall_back_to_host_and_are_counted():
    torch_trn.reset_stats()
    x = torch.tensor([0.0, 1.0, 0.0, 2.0]).to(DEV)
    nz = torch.nonzero(x)
    assert nz.device.type == "neuron"
    assert nz.cpu().flatten().tolist() == [1, 3]
    sel = x[x > 0]
    assert sel.cpu().tolist() == [1.0, 2.0]
    fallbacks = torch_trn.stats()["host_fallbacks"]
    assert "aten::nonzero" in fallbacks
    assert "data-dependent output shape" in fallbacks["aten::nonzero"]


def test_mode_defaults_to_eager():
    assert torch_trn.mode() in ("eager", "adaptive", "compile")


def test_manual_seed_does_not_warn_about_the_device(recwarn):
    torch.manual_seed(0)
    assert not [w for w in recwarn if "neuron" in str(w.message)]


def test_save_and_load_state_dict_roundtrip():
    import io
    m = torch.nn.Linear(3, 2).to(DEV)
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    on_cpu = torch.load(buf, map_location="cpu")
    assert on_cpu["weight"].device.type == "cpu"
    torch.testing.assert_close(on_cpu["weight"], m.weight.detach().cpu(), rtol=0, atol=0)
    buf.seek(0)
    on_dev = torch.load(buf)  # back to the device it was saved from
    assert on_dev["bias"].device == DEV
    torch.testing.assert_close(on_dev["bias"].cpu(), m.bias.detach().cpu(), rtol=0, atol=0)


def test_masked_and_indexed_assignment():
    x = torch.arange(6.0).reshape(2, 3).to(DEV)
    x[torch.tensor([0])] = 5.0
    x[x > 4] = 0
    expected = torch.arange(6.0).reshape(2, 3)
    expected[torch.tensor([0])] = 5.0
    expected[expected > 4] = 0
    torch.testing.assert_close(x.cpu(), expected)
    assert x.tolist() == expected.tolist()


def test_random_ops_are_reproducible_whatever_the_host_does_meanwhile():
    torch.manual_seed(7)
    a = torch.rand(4, device=DEV)
    torch.rand(3)  # a host draw between the two device draws
    b = torch.randn(4, device=DEV)
    big = torch.randn(256, 256).to(DEV)
    torch.manual_seed(7)
    _ = big @ big  # the executor is busy while the next ops are recorded
    a2 = torch.rand(4, device=DEV)
    torch.rand(11)
    b2 = torch.randn(4, device=DEV)
    torch.testing.assert_close(a.cpu(), a2.cpu(), rtol=0, atol=0)
    torch.testing.assert_close(b.cpu(), b2.cpu(), rtol=0, atol=0)


def test_module_to_device_keeps_tied_weights():
    # An LM head sharing the embedding matrix (transformers' tie_weights): Module._apply swaps
    # the data in place only if the device allows it, otherwise each module gets its own copy.
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = emb.weight
    model = torch.nn.Sequential(emb, head).to("neuron")
    assert model[1].weight is model[0].weight
    assert model[0].weight.device.type == "neuron" and isinstance(model[0].weight, torch.nn.Parameter)
    model(torch.tensor([1, 2, 3]).to("neuron")).sum().backward()
    ref = torch.nn.Sequential(emb, head).cpu()  # the same (shared) parameter, back on the host
    assert ref[1].weight is ref[0].weight
    grad = model[0].weight.grad.cpu()
    # Both uses accumulate into the one gradient: rows 1-3 get the lookup and the head's part.
    assert grad[1].abs().sum() > 0 and torch.all(grad[0] != 0)


def test_large_matrix_products_split_over_the_kernel_pool_match_cpu():
    # Products above the split threshold run in row (or batch) chunks on the executor and its
    # kernel-pool helpers (NEURON_MATMUL_THREADS, default one per core): mm, addmm with a 1-D and
    # a 2-D bias, transposed operands, bmm and baddbmm.
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(300, 200, generator=g), torch.randn(200, 100, generator=g)
    bias1, bias2 = torch.randn(100, generator=g), torch.randn(300, 100, generator=g)
    x, y = torch.randn(6, 128, 64, generator=g), torch.randn(6, 64, 96, generator=g)
    z = torch.randn(6, 128, 96, generator=g)
    dev = torch_trn.device()
    cases = {
        "mm": lambda t: t["a"] @ t["b"],
        "mm_transposed": lambda t: t["b"].t() @ t["a"].t(),
        "addmm_1d": lambda t: torch.addmm(t["bias1"], t["a"], t["b"], beta=0.5, alpha=2.0),
        "addmm_2d": lambda t: torch.addmm(t["bias2"], t["a"], t["b"]),
        "bmm": lambda t: torch.bmm(t["x"], t["y"]),
        "baddbmm": lambda t: torch.baddbmm(t["z"], t["x"], t["y"], alpha=0.5),
    }
    host = {"a": a, "b": b, "bias1": bias1, "bias2": bias2, "x": x, "y": y, "z": z}
    on_dev = {k: v.to(dev) for k, v in host.items()}
    for name, f in cases.items():
        got = f(on_dev).cpu()
        want = f(host)
        assert got.shape == want.shape, name
        assert torch.allclose(got, want, rtol=1e-4, atol=1e-4), name


@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_copies_to_and_from_the_device_start_no_openmp_workers(mode):
    # The recording thread makes these copies itself; with its OpenMP team they woke a worker that
    # then spun on the executor's core (docs/adaptive.md, "Threads on a small machine"). They run
    # on that thread alone, the values are right, and the caller's team size is unchanged.
    from helpers import last_json, run_python
    proc = run_python("""
        import json, os, torch, torch_trn
        torch.set_num_threads(2)
        def threads(): return len(os.listdir("/proc/self/task"))
        dev = torch_trn.device()
        xs = [torch.randn(1 << 20) for _ in range(3)]  # (randn runs serially: no team yet)
        torch_trn.sync()
        before = threads()
        outs = [(x.to(dev) * 2).cpu() for x in xs]
        torch_trn.sync()
        after = threads()
        print(json.dumps({"before": before, "after": after, "team": torch.get_num_threads(),
                          "equal": all(torch.equal(o, x * 2) for x, o in zip(xs, outs))}))
    """, env={"NEURON_MODE": mode})
    out = last_json(proc)
    assert out["equal"]
    assert out["team"] == 2
    assert out["after"] == out["before"], "a copy started threads (an OpenMP team on the recording thread)"
