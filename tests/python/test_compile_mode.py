"""NEURON_MODE=compile: groups lowered through MLIR to native code (issue 3).

Each test runs its program in a fresh process (the mode is read once at import) and compares
with PyTorch's CPU results computed here. What is asserted:
  - training parity of the three models vs CPU, and that most ops ran compiled;
  - steady state compiles nothing (the in-memory cache), and group keys are equal in two
    processes running the same program;
  - internal temporaries are never written to device memory (bytes written by compiled code);
  - ops without a lowering run op by op and are reported by name;
  - a runtime scalar that changes every step (Adam's bias correction) does not change the key;
  - a segment's new groups build on several segment builders at once (their profile lanes
    overlap in time) and still run in stream order with CPU's results.
"""
import json
import math
import sys
import textwrap

import pytest
import torch

from helpers import ROOT, cpu_losses, last_json, run_python
from models import MODELS, make_batches, make_model

COMPILE = {"NEURON_MODE": "compile"}


def run_json(code, env=COMPILE):
    return last_json(run_python(code, env=env))


TRAIN = """
import json, sys, torch, torch_trn
sys.path.insert(0, {tests!r})
from models import make_model, make_batches
name, steps, optim = {name!r}, {steps}, {optim!r}
model = make_model(name).to("neuron")
opt = (torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01) if optim == "adamw"
       else torch.optim.SGD(model.parameters(), lr=1e-2))
losses, compiles = [], []
for x, y in make_batches(name, steps):
    loss = model.loss(x.to("neuron"), y.to("neuron"))
    loss.backward(); opt.step(); opt.zero_grad()
    losses.append(loss.item())
    compiles.append(torch_trn.stats()["compiles"])
torch_trn.sync()
s = torch_trn.stats()
print(json.dumps({{"losses": losses, "compiles": compiles, "keys": torch_trn._C.compiled_keys(),
                  "ops_run_compiled": s["ops_run_compiled"], "ops_executed": s["ops_executed"],
                  "unlowered": s["unlowered_ops"], "failures": s["compile_failures"]}}))
"""


def train_in_compile_mode(name, steps, optim="adamw"):
    return run_json(TRAIN.format(tests=f"{ROOT}/tests/python", name=name, steps=steps, optim=optim))


@pytest.mark.parametrize("name", list(MODELS))
def test_training_parity_compile_mode(name):
    steps = 4
    got = train_in_compile_mode(name, steps)
    ref = cpu_losses(name, steps)
    print(f"\n[{name}] losses {got['losses']} vs cpu {ref}; ran compiled "
          f"{got['ops_run_compiled']}/{got['ops_executed']} ops; op by op: {got['unlowered']}")
    assert got["failures"] == {}, f"compile failures: {got['failures']}"
    for i, (a, b) in enumerate(zip(got["losses"], ref)):
        assert math.isclose(a, b, rel_tol=1e-5), f"{name} step {i}: compile {a!r} vs cpu {b!r}"
    assert got["ops_run_compiled"] > 0
    # Steady state: after step 2 (step 1 also creates the optimizer state) nothing compiles.
    assert got["compiles"][1:] == [got["compiles"][1]] * (steps - 1), got["compiles"]


def test_second_step_compiles_nothing_and_keys_repeat_across_processes():
    a = train_in_compile_mode("mlp", 3, optim="sgd")
    b = train_in_compile_mode("mlp", 3, optim="sgd")
    assert a["compiles"][0] > 0
    assert a["compiles"][1] == a["compiles"][0], f"step 2 compiled: {a['compiles']}"
    assert a["compiles"][2] == a["compiles"][0], f"step 3 compiled: {a['compiles']}"
    # (as sets: with several compile threads, builds start in no fixed order)
    assert sorted(a["keys"]) == sorted(b["keys"]), "two processes running one program made different group keys"
    assert len(set(a["keys"])) == len(a["keys"]), f"a key was compiled twice: {a['keys']}"
    assert a["losses"] == b["losses"]


def test_internal_temporaries_are_not_written():
    n = 1 << 16
    out = run_json(f"""
        import json, torch, torch_trn
        x = torch.linspace(-3, 3, {n}).to("neuron")
        torch_trn.sync(); torch_trn.reset_stats()
        y = ((((x * 2 + 1).relu() * 3 - x).tanh() + 0.5) * x).sigmoid()   # 9 ops, 8 temporaries
        host = y.cpu()
        s = torch_trn.stats()
        print(json.dumps({{"bytes": s["compiled_bytes_written"], "elided": s["temporaries_elided"],
                          "groups": s["groups_run_compiled"], "y": host[::4096].tolist()}}))
    """)
    x = torch.linspace(-3, 3, n)
    ref = ((((x * 2 + 1).relu() * 3 - x).tanh() + 0.5) * x).sigmoid()
    torch.testing.assert_close(torch.tensor(out["y"]), ref[::4096], rtol=1e-5, atol=1e-6)
    assert out["groups"] == 1
    assert out["bytes"] == n * 4, f"compiled code wrote {out['bytes']} bytes for one {n}-float output"
    assert out["elided"] == 8


def test_transposed_values_reach_runtime_calls_without_a_copy(tmp_path):
    # A value computed in the group and read transposed by a product (a linear layer's weight
    # gradient, grad_out^T @ x; attention's k^T) is passed to the runtime call as a strided view
    # of its buffer (trn.extern_perms), not copied into transposed order by a loop first.
    out = run_json(f"""
        import json, torch, torch_trn
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(6, 5, generator=g), torch.randn(6, 3, generator=g)
        q, k = torch.randn(2, 4, 3, generator=g), torch.randn(2, 4, 3, generator=g)
        na, nb, nq, nk = (t.to("neuron") for t in (a, b, q, k))
        w = ((na * 2).t() @ nb).cpu()                          # 5x6 view of a 6x5 value
        s = (nq @ (nk + 1).permute(0, 2, 1)).cpu()             # bmm with k^T
        nhwc = torch.randn(2, 5, 6, 4, generator=g)            # channels last -> NCHW: not an
        wc = torch.randn(4, 1, 3, 3, generator=g)              # involution (0, 3, 1, 2)
        c = torch.nn.functional.conv2d((nhwc.to("neuron") * 2).permute(0, 3, 1, 2), wc.to("neuron"),
                                       padding=1, groups=4).cpu()
        print(json.dumps({{"w": w.tolist(), "s": s.tolist(), "c": c.tolist()}}))
    """, env={**COMPILE, "NEURON_DUMP_MLIR": str(tmp_path), "NEURON_CACHE_DIR": "off"})
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(6, 5, generator=g), torch.randn(6, 3, generator=g)
    q, k = torch.randn(2, 4, 3, generator=g), torch.randn(2, 4, 3, generator=g)
    torch.testing.assert_close(torch.tensor(out["w"]), (a * 2).t() @ b)
    torch.testing.assert_close(torch.tensor(out["s"]), q @ (k + 1).permute(0, 2, 1))
    nhwc, wc = torch.randn(2, 5, 6, 4, generator=g), torch.randn(4, 1, 3, 3, generator=g)
    torch.testing.assert_close(torch.tensor(out["c"]),
                               torch.nn.functional.conv2d((nhwc * 2).permute(0, 3, 1, 2), wc, padding=1, groups=4))
    modules = [p.read_text() for p in tmp_path.glob("*.mlir")]
    calls = [m for m in modules if 'library_call = "trn_ext' in m]
    assert len(calls) == 3, [m[:200] for m in modules]
    for m in calls:
        assert ("trn.extern_perms = [array<i64: 1, 0>, array<i64>" in m
                or "trn.extern_perms = [array<i64>, array<i64: 0, 2, 1>" in m
                or "trn.extern_perms = [array<i64: 0, 3, 1, 2>" in m), m
        assert not any(s in m for s in ("-> (d1, d0)>", "-> (d0, d2, d1)>", "-> (d0, d2, d3, d1)>")), \
            f"a transposing copy:\n{m}"


SPLIT = """
import json, torch, torch_trn
g = torch.Generator().manual_seed(0)
x, w = torch.randn(1001, 96, generator=g), torch.randn(96, generator=g)
nx, nw = x.to("neuron"), w.to("neuron")
torch_trn.sync(); torch_trn.reset_stats()
y = (torch.softmax(nx * 2, dim=-1) * nw + nx.tanh()).cpu()   # rows: softmax, then elementwise
small = (nx[:3] * 3).cpu()                                    # 288 elements: one thread
print(json.dumps({"y": y.tolist(), "small": small.tolist(), "split": torch_trn.stats()["loops_split"]}))
"""

def test_a_sum_over_a_size_one_dim_read_through_a_broadcast_stays_right():
    # nanquantile counts the non-NaN values with a sum over the last dim, here of size 1, and
    # multiplies the quantiles by the count: a generic that reads its init, under a broadcast.
    # Fused, it accumulated once per quantile (count 2 for 1: a gather index out of bounds).
    out = run_json("""
        import json, torch, torch_trn
        q = torch.tensor([0.25, 0.5, 1.0])
        x = torch.arange(12.0).reshape(3, 2, 1, 2)
        a = torch.nanquantile(torch.tensor(1.0).to("neuron"), q.to("neuron")).cpu()
        b = torch.nanquantile(x.to("neuron"), q.to("neuron"), dim=2, keepdim=True).cpu()
        print(json.dumps({"a": a.tolist(), "b": b.tolist()}))
    """)
    q = torch.tensor([0.25, 0.5, 1.0])
    x = torch.arange(12.0).reshape(3, 2, 1, 2)
    torch.testing.assert_close(torch.tensor(out["a"]), torch.nanquantile(torch.tensor(1.0), q))
    torch.testing.assert_close(torch.tensor(out["b"]), torch.nanquantile(x, q, dim=2, keepdim=True))


def test_dumped_modules_locate_each_op_at_the_model_line(tmp_path):
    # NEURON_DUMP_MLIR writes each group's module with its ops' locations: the recorded ATen op
    # and the Python line that issued it (the group lowering's IrEmitter::SetOp).
    script = textwrap.dedent("""
        import json, torch, torch_trn
        x = torch.randn(4, 8).to("neuron")
        y = (x * 3).exp()
        print(json.dumps({"s": y.sum().item()}))
    """)
    line = script.splitlines().index("y = (x * 3).exp()") + 1
    run_json(script, env={**COMPILE, "NEURON_DUMP_MLIR": str(tmp_path), "NEURON_CACHE_DIR": "off"})
    modules = [p.read_text() for p in tmp_path.glob("*.mlir")]
    group = [m for m in modules if "math.exp" in m]
    assert len(group) == 1, modules
    assert f'loc("<string>":{line}:0)' in group[0], group[0]
    assert 'loc("op 0 aten::mul' in group[0] and 'loc("op 1 aten::exp' in group[0], group[0]


@pytest.mark.parametrize("threads", ["0", "1"])
def test_large_loop_nests_split_over_the_kernel_pool(threads):
    # 1001 rows of 96 (odd: the chunks are uneven) run as chunks of rows on the executor and the
    # kernel pool's helper; NEURON_MATMUL_THREADS=1 (no helpers) runs them on the executor alone.
    # Same values either way; tiny nests are never split.
    out = run_json(SPLIT, env={**COMPILE, "NEURON_MATMUL_THREADS": threads, "NEURON_CACHE_DIR": "off"})
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(1001, 96, generator=g), torch.randn(96, generator=g)
    torch.testing.assert_close(torch.tensor(out["y"]), torch.softmax(x * 2, dim=-1) * w + x.tanh())
    torch.testing.assert_close(torch.tensor(out["small"]), x[:3] * 3)
    if threads == "1":
        assert out["split"] == 0, out["split"]
    else:
        assert out["split"] >= 1, "no loop nest of the 1001x96 group was split"


def test_ops_without_lowering_run_op_by_op_and_are_named():
    out = run_json("""
        import json, torch, torch_trn
        x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        y = (torch.cumprod(x.to("neuron") * 2, dim=1) + 1).cpu()
        s = torch_trn.stats()
        print(json.dumps({"y": y.tolist(), "unlowered": s["unlowered_ops"], "compiled": s["ops_run_compiled"]}))
    """)
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert out["y"] == (torch.cumprod(x * 2, dim=1) + 1).tolist()
    assert any(op.startswith("aten::cumprod") for op in out["unlowered"]), out["unlowered"]
    assert out["compiled"] >= 2  # the mul before and the add after still ran compiled


def test_runtime_scalars_do_not_change_the_key():
    out = run_json("""
        import json, torch, torch_trn
        x = torch.ones(8).to("neuron")
        vals = []
        for step in range(1, 5):
            vals.append((x * (1 - 0.9 ** step) + step).cpu().tolist()[0])
        s = torch_trn.stats()
        print(json.dumps({"vals": vals, "compiles": s["compiles"], "hits": s["compile_cache_hits"]}))
    """)
    assert out["vals"] == pytest.approx([(1 - 0.9 ** k) + k for k in range(1, 5)], rel=1e-6)
    assert out["compiles"] == 1, f"a per-step scalar recompiled the group: {out}"
    assert out["hits"] == 3


def test_views_and_in_place_updates_inside_a_group():
    out = run_json("""
        import json, torch, torch_trn
        a = torch.arange(24, dtype=torch.float32).reshape(4, 6)
        d = a.to("neuron")
        t = d.t() * 2               # a transposed read
        d[1:3].mul_(-1)             # an in-place write through a slice
        u = d[:, ::2] + t.t()[:, ::2]  # reads the written storage through another view
        d.add_(1)                   # in place on the whole buffer (an input of the group)
        print(json.dumps({"d": d.cpu().tolist(), "u": u.cpu().tolist()}))
    """)
    a = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    t = a.t() * 2
    a[1:3].mul_(-1)
    u = a[:, ::2] + t.t()[:, ::2]
    a.add_(1)
    assert out["d"] == a.tolist()
    assert out["u"] == u.tolist()


def test_in_place_outputs_written_straight_into_their_inputs_stay_right():
    # Patterns around in-place outputs that skip staging (GroupLowering::NeedsStaging): an
    # AdamW-like chain (unstaged), an old value read outside the chain, a write that does not
    # read the previous value, and a transposed in-place read (all staged). Values vs CPU.
    prog = """
        import json, torch, torch_trn
        def run(dev):
            g = torch.Generator().manual_seed(0)
            x, y, v, q = (torch.randn(64, 32, generator=g).to(dev) for _ in range(4))
            m = torch.randn(32, 32, generator=g).to(dev)
            v.abs_().mul_(0.9); v.addcmul_(y, y, value=0.1); v.sqrt_()  # chain
            a = x * 3; x.mul_(2); b = a + 1                         # old x read after x's write
            q.mul_(2); z = q + 1; torch.mul(y, y, out=q); w = z * 5  # write not reading q
            m.copy_(m.t() * 2)                                      # transposed in-place read
            return [t.cpu().tolist() for t in (v, x, b, q, w, m)]
        print(json.dumps({"dev": run("neuron"), "cpu": run("cpu")}))
    """
    out = run_json(prog)
    for got, want in zip(out["dev"], out["cpu"]):
        assert torch.allclose(torch.tensor(got), torch.tensor(want), rtol=1e-6, atol=1e-6)


def test_prefix_reads_of_values_written_in_the_group_compile():
    # A read of a prefix of a dim the group wrote (the first part of a q/k/v split) is indexed
    # by a bare loop dim over a longer tensor dim, which linalg's verifier rejects: such a read
    # must start a new group, not make the group fail to compile (found by the zoo: levit).
    out = run_json("""
        import json, torch, torch_trn
        x = torch.linspace(-3, 3, 8 * 64).reshape(8, 64).to("neuron")
        z = x * 3
        q, k, v = z.view(2, 4, 64).split([16, 16, 32], dim=-1)
        a = q + 1
        b = z[:, :1] * 2
        c = (z.t()[:5] - 1) + k.sum()
        r = {"a": a.cpu().tolist(), "b": b.cpu().tolist(), "c": c.cpu().tolist(), "v": v.cpu().tolist()}
        r["failures"] = torch_trn.stats()["compile_failures"]
        r["compiled"] = torch_trn.stats()["ops_run_compiled"]
        print(json.dumps(r))
    """)
    z = torch.linspace(-3, 3, 8 * 64).reshape(8, 64) * 3
    q, k, v = z.view(2, 4, 64).split([16, 16, 32], dim=-1)
    assert out["failures"] == {}, out["failures"]
    assert out["compiled"] > 0
    assert out["a"] == (q + 1).tolist()
    assert out["b"] == (z[:, :1] * 2).tolist()
    assert torch.allclose(torch.tensor(out["c"]), (z.t()[:5] - 1) + k.sum(), rtol=1e-6)
    assert out["v"] == v.tolist()


def test_device_side_check_raises_index_error_at_the_ops_line():
    proc = run_python("""
        import torch, torch_trn
        import torch.nn.functional as F
        x = torch.randn(4, 5).to("neuron")
        t = torch.tensor([1, 7, 0, 2]).to("neuron")      # 7 is not a class of 5
        loss = F.nll_loss(x.log_softmax(1), t)  # MARK-NLL
        try:
            loss.item()
        except IndexError as e:
            print("CAUGHT", e)
        s = torch_trn.stats()
        print("COMPILED", s["groups_run_compiled"], "UNLOWERED", sorted(s["unlowered_ops"]))
        print("AFTER", F.nll_loss(x.log_softmax(1), torch.tensor([1, 4, 0, 2]).to("neuron")).item() > 0)
    """, env=COMPILE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "CAUGHT aten::nll_loss_forward" in out, out
    assert "<string>:6" in out, f"the error does not name the op's line:\n{out}"
    assert "out of bounds" in out
    assert "UNLOWERED []" in out, out           # the loss ran compiled: the check is the device's
    assert "AFTER True" in out, out              # the device keeps working after the error


PARALLEL = """
import json, torch, torch_trn
x = torch.linspace(-1, 1, 64)
d = x.to("neuron")
torch_trn.sync()
torch_trn.reset_stats()
with torch_trn.profile({path!r}):
    got = d.sin().cos().exp().tanh().cpu()  # one group per op (NEURON_MAX_GROUP_OPS=1)
s = torch_trn.stats()
print(json.dumps({{"max_err": float((got - x.sin().cos().exp().tanh()).abs().max()),
                  "compiles": s["compiles"], "groups_run_compiled": s["groups_run_compiled"]}}))
"""


def test_new_groups_of_a_segment_build_in_parallel_and_run_in_order(tmp_path):
    # Every compile takes 2 s longer (the test fault), so two builders that overlap in time are
    # what parallel building looks like, independent of how loaded the machine is.
    path = tmp_path / "trace.json"
    got = run_json(PARALLEL.format(path=str(path)),
                   env={**COMPILE, "NEURON_COMPILE_WORKERS": "2", "NEURON_MAX_GROUP_OPS": "1",
                        "NEURON_TEST_COMPILE_FAULT": "slow", "NEURON_OPT_LEVEL": "0"})
    assert got["max_err"] <= 1e-6, got
    assert got["compiles"] == 4 and got["groups_run_compiled"] == 4, got
    doc = json.load(open(path))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    compiles = [e for e in events if e.get("ph") == "X" and e.get("cat") == "compile"]
    assert len(compiles) == 4, compiles
    assert {lanes[e["tid"]] for e in compiles} == {"segment builder 0", "segment builder 1"}, compiles
    overlapping = [(a, b) for a in compiles for b in compiles
                   if a["tid"] != b["tid"] and a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]]
    assert overlapping, f"no two builds ran at once: {compiles}"


def test_host_time_counts_waiting_for_the_executor_as_waiting():
    # A flush that waits for the units of two flushes back (their tensors are released at fixed
    # stream points) adds that wait to host_time["sync_wait"], not to "flush"; only syncs count
    # as sync_wait ops. Two-op segments (NEURON_MAX_GROUP_OPS=2) behind large products keep the
    # executor far behind the recording thread, so nearly all of its time is waiting, whether at
    # a flush or at the sync.
    out = run_json("""
        import json, torch, torch_trn
        a = torch.randn(1024, 1024).to("neuron")
        torch_trn.sync(); torch_trn.reset_stats()
        for _ in range(3):
            x = a
            for _ in range(8):
                x = (x @ a).tanh() * 0.01
            x.sum().item()
        s = torch_trn.stats()
        h = s["host_time"]
        print(json.dumps({"sync_ops": h["sync_wait"]["ops"], "sync_ns": h["sync_wait"]["ns"],
                          "flush_ops": h["flush"]["ops"], "flush_ns": h["flush"]["ns"],
                          "syncs": sum(s["syncs"].values())}))
    """, env={**COMPILE, "NEURON_CACHE_DIR": "off", "NEURON_MAX_GROUP_OPS": "2"})
    assert out["sync_ops"] == out["syncs"] == 3, out
    assert out["flush_ops"] > 0, out
    assert out["sync_ns"] > out["flush_ns"], f"waiting for the executor was counted as flushing: {out}"


@pytest.mark.parametrize("mode", ["compile", "adaptive"])
def test_a_backward_pass_is_handed_to_the_executor_when_it_ends(mode):
    # The backward's ops are flushed by a final callback on the autograd engine's graph task, so
    # they run while the Python thread is still between backward() and its next op (the
    # optimizer's prologue), not when that next op or a sync is recorded. Without it, nothing here
    # would flush the pending segment: ops_executed would stay behind ops_recorded until the
    # deadline. The keys must not change: the callback cuts where the next op's thread change
    # would cut (the second step compiles nothing new).
    out = run_json("""
        import json, time, torch, torch_trn
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).to("neuron")
        x = torch.randn(4, 8).to("neuron")
        caught_up, compiles = [], []
        for step in range(3):
            loss = model(x).sum()
            loss.backward()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                s = torch_trn.stats()
                if s["ops_executed"] == s["ops_recorded"]:
                    break
                time.sleep(0.005)
            caught_up.append(s["ops_executed"] == s["ops_recorded"])
            grads = [p.grad.cpu() for p in model.parameters()]
            for p in model.parameters():
                p.grad = None
            torch_trn.wait_for_compiles()
            compiles.append(torch_trn.stats()["compiles"])
        cpu = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        cpu.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
        cpu(x.cpu()).sum().backward()
        ok = all(torch.allclose(g, p.grad, atol=1e-6) for g, p in zip(grads, cpu.parameters()))
        print(json.dumps({"caught_up": caught_up, "compiles": compiles, "grads_match": ok}))
    """, env={"NEURON_MODE": mode, "NEURON_CACHE_DIR": "off"})
    assert out["caught_up"] == [True, True, True], out
    assert out["grads_match"], out
    assert out["compiles"][2] == out["compiles"][1], f"a step after the first compiled new groups: {out}"


def test_perf_map_names_each_loaded_group_at_its_code():
    # NEURON_PERF_MAP=1: every loaded group's entry function is listed in /tmp/perf-<pid>.map
    # (hex start, hex size, "trn group <key> <symbol>"), at an address inside an executable
    # mapping of the process, so `perf report` can name compiled code.
    out = run_json("""
        import json, os, torch, torch_trn
        x = torch.randn(64, 32).to("neuron")
        y = ((x * 2).tanh() + 1).sum(dim=0).cpu()
        z = (x.exp() - x).cpu()
        keys = torch_trn._C.compiled_keys()
        path = f"/tmp/perf-{os.getpid()}.map"
        lines = open(path).read().splitlines()
        execs = []
        for m in open("/proc/self/maps"):
            addrs, perms = m.split()[:2]
            if "x" in perms:
                lo, hi = (int(a, 16) for a in addrs.split("-"))
                execs.append((lo, hi))
        entries = []
        for line in lines:
            start, size, rest = line.split(" ", 2)
            s, n = int(start, 16), int(size, 16)
            entries.append({"name": rest, "size": n, "in_exec": any(lo <= s and s + n <= hi for lo, hi in execs)})
        os.remove(path)
        print(json.dumps({"keys": keys, "entries": entries}))
    """, env={**COMPILE, "NEURON_CACHE_DIR": "off", "NEURON_PERF_MAP": "1"})
    assert len(out["keys"]) >= 2, out
    for key in out["keys"]:
        named = [e for e in out["entries"] if e["name"] == f"trn group {key} _mlir_ciface_group"]
        assert len(named) == 1, (key, out["entries"])
        assert named[0]["size"] > 0 and named[0]["in_exec"], named


@pytest.mark.parametrize("mode", ["eager", "compile", "adaptive"])
def test_reentrant_checkpoint_double_backward_and_grad_hooks_match_cpu(mode):
    # Backward passes inside a backward pass (a reentrant checkpoint recomputes its forward and
    # runs a nested graph task on the autograd thread), a gradient penalty (autograd.grad with
    # create_graph, then a backward through the gradient's graph) and a tensor hook: each queues
    # its own end-of-pass flush (a final callback per graph task); the gradients must match CPU's
    # over three steps, and the later steps compile nothing new.
    out = run_json("""
        import json, torch, torch_trn
        from torch.utils.checkpoint import checkpoint
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
        def build():
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16),
                                       torch.nn.Tanh(), torch.nn.Linear(16, 1))
        def grads(m):
            return [(p.grad.cpu() if p.grad is not None else torch.zeros(())).tolist() for p in m.parameters()]
        def run(dev):
            m, out, compiles = build().to(dev), {}, []
            for step in range(3):
                m.zero_grad()
                y = checkpoint(lambda a: m[2](m[1](m[0](a))), x.to(dev).requires_grad_(), use_reentrant=True)
                m[4](m[3](y)).sum().backward()
                out["checkpoint"] = grads(m)
                m.zero_grad()
                xg = x.to(dev).requires_grad_()
                (g,) = torch.autograd.grad(m(xg).sum(), xg, create_graph=True)
                (g ** 2).sum().backward()
                out["penalty"] = grads(m)
                m.zero_grad()
                h = m[0].weight.register_hook(lambda gr: gr * 2)
                m(x.to(dev)).sum().backward()
                h.remove()
                out["hook"] = grads(m)
                if dev != "cpu":
                    torch_trn.wait_for_compiles()
                    compiles.append(torch_trn.stats()["compiles"])
            return out, compiles
        cpu, _ = run("cpu")
        dev, compiles = run("neuron")
        print(json.dumps({"cpu": cpu, "dev": dev, "compiles": compiles}))
    """, env={"NEURON_MODE": mode, "NEURON_CACHE_DIR": "off"})
    for case in ("checkpoint", "penalty", "hook"):
        for c, d in zip(out["cpu"][case], out["dev"][case]):
            torch.testing.assert_close(torch.tensor(d), torch.tensor(c), atol=1e-5, rtol=1e-5, msg=case)
    assert out["compiles"][2] == out["compiles"][1], out["compiles"]
