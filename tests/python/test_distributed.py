"""torch.distributed on the neuron device: collectives, DDP and faults across processes.

Each mode (eager, adaptive, compile) is one torchrun launch of tests/python/dist_worker.py with
2 ranks (4 with --full) running every case; the tests below assert on what each rank wrote. What
is proven:
  - every collective on neuron tensors (inputs made by device ops, results read by later ones)
    equals the same collective on CPU tensors through the group's gloo backend;
  - a mismatched collective (different shapes on two ranks) raises on every rank, naming both
    sides, and the group keeps working;
  - DistributedDataParallel on the device: N ranks x batch b for 5 AdamW steps give the losses
    and parameters of one CPU process with batch N*b (rtol 1e-5), also with gradient
    accumulation under no_sync() and with find_unused_parameters;
  - FSDP2 (fully_shard) on the device: the same parity;
  - the group keys of a DDP step are the same on every rank, and each key is compiled once over
    all ranks (the distributed compile cache: compiles summed over ranks = distinct keys);
  - a rank that is SIGKILLed, or that stops issuing collectives, makes the others raise gloo's
    error (a RuntimeError naming the collective and its line) at their next sync, within the
    process group's timeout.
The launch uses init_process_group("gloo") in adaptive/compile mode and "cpu:gloo,neuron:neuron"
in eager mode; the killed-rank test uses init_process_group() (the device is the accelerator).
"""
import json
import math
import os
import socket
import subprocess
import sys

import pytest
import torch

from helpers import ROOT

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import make_batches, make_model  # noqa: E402

WORKER = os.path.join(ROOT, "tests", "python", "dist_worker.py")
MODES = ["eager", "adaptive", "compile"]
BACKEND = {"eager": "cpu:gloo,neuron:neuron", "adaptive": "gloo", "compile": "gloo"}
COLLECTIVES = ["all_reduce", "all_reduce_max", "all_reduce_int64", "all_reduce_async", "broadcast", "all_gather",
               "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single", "all_to_all_single_uneven",
               "reduce", "gather_scatter", "send_recv", "barrier"]
LAUNCH_TIMEOUT_S = 600
LR, WD, STEPS = 1e-2, 0.01, 5


def world_size(config):
    return 4 if config.getoption("--full") else 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(mode, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NEURON_", "TORCHELASTIC_")) and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update({"PYTHONPATH": os.path.join(ROOT, "python"), "NEURON_MODE": mode, "NEURON_CACHE_DIR": "off",
                "NEURON_TIERING": "0", "NEURON_OPT_LEVEL": "1", "NEURON_EXECUTOR_THREADS": "1",
                "OMP_NUM_THREADS": "1"})
    env.update(extra)
    return env


def head_tail(text, n=3000):
    return text if len(text) <= 2 * n else f"{text[:n]}\n[...]\n{text[-n:]}"


def read_ranks(out_dir, world, diag):
    outs = []
    for r in range(world):
        path = out_dir / f"rank{r}.json"
        assert path.exists(), f"rank {r} wrote no result\n{head_tail(diag)}"
        outs.append(json.loads(path.read_text()))
    return outs


@pytest.fixture(scope="module", params=MODES)
def launch(request, tmp_path_factory):
    """One torchrun launch of every case in this mode; the ranks' results."""
    mode = request.param
    world = world_size(request.config)
    out = tmp_path_factory.mktemp(f"dist_{mode}")
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={world}", f"--master_port={free_port()}",
           WORKER, "--out", str(out), "--backend", BACKEND[mode]]
    proc = subprocess.run(cmd, env=base_env(mode), capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
    diag = f"{proc.stdout[-2000:]}\n{proc.stderr}"
    assert proc.returncode == 0, f"torchrun exit {proc.returncode}\n{head_tail(diag)}"
    outs = read_ranks(out, world, diag)
    assert all(o["mode"] == mode and o["world"] == world for o in outs)
    return outs


@pytest.mark.parametrize("case", COLLECTIVES)
def test_collective_equals_cpu(launch, case):
    for o in launch:
        got = o["collectives"][case]
        assert got["ok"], f"{o['mode']} rank {o['rank']} {case}: {got['detail'][:3000]}"


def test_mismatched_collective_errors_on_every_rank(launch):
    world = len(launch)
    for o in launch:
        m = o["mismatch"]
        assert m["error"] is not None, f"rank {o['rank']}: a mismatched all_reduce did not raise"
        assert m["error"]["type"] == "RuntimeError", m["error"]
        msg = m["error"]["message"]
        assert "collective mismatch" in msg and "all_reduce" in msg, msg
        assert "dist_worker.py" in msg, f"the error names the line that issued the collective: {msg}"
        mine, other = (4, 6) if o["rank"] == 0 else (6, 4)
        assert f"{mine} element(s)" in msg and f"{other} element(s)" in msg, msg
        # The check ran instead of the collective: the next all_reduce is right.
        assert m["after"] == [float(sum(range(world)))] * 3, m["after"]


def cpu_reference(model, steps, world, accumulate=1):
    """One CPU process on the whole batch (world x the per-rank shard): per-step losses of each
    micro-batch and the final parameters."""
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    losses = []
    for i, (x, y) in enumerate(make_batches("mlp", steps * accumulate)):
        n = x.shape[0] // world * world
        loss = torch.nn.functional.cross_entropy(model(x[:n]), y[:n])
        loss.backward()
        if (i + 1) % accumulate == 0:
            opt.step()
            opt.zero_grad()
        losses.append(loss.item())
    return losses, {n: p.detach().flatten() for n, p in model.named_parameters()}


def assert_matches_reference(outs, loss_key, param_key, ref_losses, ref_params, skip=()):
    world = len(outs)
    ddp = [o["ddp"] for o in outs]
    for step, want in enumerate(ref_losses):
        # Every rank's loss is the mean over its shard; their mean is the mean over the batch.
        got = sum(d[loss_key][step] for d in ddp) / world
        assert math.isclose(got, want, rel_tol=1e-5), f"{outs[0]['mode']} step {step}: ddp={got!r} cpu={want!r}"
    for name, want in ref_params.items():
        if any(name.startswith(s) for s in skip):
            continue
        first = torch.tensor(ddp[0][param_key][name])
        for d in ddp[1:]:
            other = torch.tensor(d[param_key][name])
            if outs[0]["mode"] != "adaptive":
                assert torch.equal(other, first), f"{name}: ranks disagree"
            else:  # (a group may run compiled on one rank, op by op on another: last-bit rounding)
                torch.testing.assert_close(other, first, rtol=1e-5, atol=1e-6, msg=lambda m: f"{name}: {m}")
        torch.testing.assert_close(first, want, rtol=1e-5, atol=1e-5, msg=lambda m: f"{name}: {m}")


def test_ddp_matches_one_process_with_the_whole_batch(launch):
    losses, params = cpu_reference(make_model("mlp"), STEPS, len(launch))
    assert_matches_reference(launch, "losses", "params", losses, params)


def test_ddp_gradient_accumulation_under_no_sync(launch):
    losses, params = cpu_reference(make_model("mlp"), 3, len(launch), accumulate=2)
    assert_matches_reference(launch, "accum_losses", "accum_params", losses, params)


def test_ddp_find_unused_parameters(launch):
    model = make_model("mlp")
    losses, params = cpu_reference(model, 3, len(launch))
    params = {f"mlp.{n}": p for n, p in params.items()}
    assert_matches_reference(launch, "unused_losses", "unused_params", losses, params)
    assert all(o["ddp"]["unused_grad_is_none"] for o in launch)


def test_fsdp2_fully_shard_matches_one_process_with_the_whole_batch(launch):
    losses, params = cpu_reference(make_model("mlp"), STEPS, len(launch))
    fsdp = [dict(o, ddp=o["fsdp"]) for o in launch]  # (the same layout as the DDP results)
    assert_matches_reference(fsdp, "losses", "params", losses, params)
    for o in launch:
        f = o["fsdp"]
        assert f["sharded"], "fully_shard left a parameter unsharded"
        c = f["collectives"]
        assert c.get("allgather_into_tensor", {}).get("count", 0) > 0, c
        assert c.get("reduce_scatter_tensor", {}).get("count", 0) > 0, c
        # Freeing an unsharded parameter's storage waits for the ops that still read it.
        assert f["resize_syncs"] > 0, f


def test_ddp_collectives_ran_on_the_executor(launch):
    for o in launch:
        c = o["ddp"]["collectives"]
        assert c.get("allreduce", {}).get("count", 0) > 0 and c["allreduce"]["bytes"] > 0, c
        assert c.get("broadcast", {}).get("count", 0) > 0, c  # (DDP's initial parameter broadcast)
        if o["mode"] != "eager":
            assert "torch_trn::allreduce" in o["ddp"]["unlowered_ops"], "collectives run op by op, between groups"


@pytest.mark.parametrize("launch", ["adaptive", "compile"], indirect=True)  # (eager runs no groups)
def test_group_keys_identical_across_ranks_each_compiled_once(launch):
    ddp = [o["ddp"] for o in launch]
    summary = [(o["rank"], d["compiles"], d["fetches"], d["entries"]) for o, d in zip(launch, ddp)]
    first = ddp[0]["step_keys"]
    assert len(first) > 3, f"a DDP step should run several groups: {first}"
    for d in ddp[1:]:
        assert d["step_keys"] == first, "ranks ran different groups in the same step"
    keys = [k for d in ddp for k in d["keys"]]
    assert len(keys) == len(set(keys)), f"a key was compiled on two ranks: {summary}"
    distinct = ddp[0]["entries"]
    for d in ddp:
        assert d["entries"] == distinct, f"ranks needed different keys: {summary}"
        assert d["compiles"] + d["fetches"] + d["disk_hits"] == distinct, summary
    assert sum(d["compiles"] for d in ddp) == distinct, summary


# --------------------------------------------------------------------------------------------
# Faults: launched by hand (torchrun would stop every rank when one dies).
# --------------------------------------------------------------------------------------------
def pytest_generate_tests(metafunc):
    """Fault tests: adaptive mode by default, every mode with --full."""
    if "fault_mode" in metafunc.fixturenames:
        metafunc.parametrize("fault_mode", MODES if metafunc.config.getoption("--full") else ["adaptive"])


def run_fault(tmp_path, mode, world, case, backend, timeout_s):
    port = free_port()
    out = tmp_path / case
    out.mkdir()
    victim = 1  # not rank 0, which hosts the store in a manual launch
    procs = {}
    for r in range(world):
        env = base_env(mode, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r), WORLD_SIZE=str(world),
                       LOCAL_RANK=str(r))
        cmd = [sys.executable, WORKER, "--out", str(out), "--cases", case, "--backend", backend,
               "--timeout", str(timeout_s), "--victim", str(victim)]
        procs[r] = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = {}
    try:
        for r, p in procs.items():
            if r != victim:
                results[r] = p.communicate(timeout=LAUNCH_TIMEOUT_S)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.communicate()
    diag = "\n".join(f"--- rank {r} exit {procs[r].returncode}\n{err[-3000:]}" for r, (_, err) in results.items())
    survivors = []
    for r in sorted(results):
        assert procs[r].returncode == 0, diag
        survivors.append(json.loads((out / f"rank{r}.json").read_text())[case])
    return procs[victim], survivors, diag


def test_killed_rank_makes_the_others_fail_within_the_timeout(request, tmp_path, fault_mode):
    mode = fault_mode
    timeout_s = 60
    victim, survivors, diag = run_fault(tmp_path, mode, world_size(request.config), "kill", "default", timeout_s)
    assert victim.returncode == -9, diag
    for s in survivors:
        e = s["error"]
        assert e is not None, f"a survivor finished its steps although a rank died\n{diag}"
        assert e["runtime_error"], e  # (gloo's errors are RuntimeErrors, some DistBackendErrors)
        assert "torch_trn::" in e["message"] and "dist_worker.py" in e["message"], e["message"]
        assert e["seconds"] < timeout_s, e


def test_hung_rank_makes_the_others_time_out(request, tmp_path, fault_mode):
    mode = fault_mode
    timeout_s = 5
    victim, survivors, diag = run_fault(tmp_path, mode, world_size(request.config), "hang", "gloo", timeout_s)
    for s in survivors:
        e = s["error"]
        assert e is not None, f"a survivor finished its steps although a rank hung\n{diag}"
        assert e["runtime_error"], e
        assert "Timed out" in e["message"] or "timed out" in e["message"], e["message"]
