"""The torch_trn package's shape: the public names (one definition each, re-exported by
`torch_trn`), and the command lines that run without starting the device (_bootstrap.py)."""
import os
import subprocess
import sys

import pytest

import torch
import torch_trn
from helpers import ROOT

# Every name users, tests, examples and docs use as `torch_trn.NAME` (docs/api.md, README).
PUBLIC = ["device", "sync", "mode", "stats", "reset_stats", "last_ops", "current_op", "knobs",
          "wait_for_compiles", "profile", "trace_ops", "cache_stats", "reset_cache_stats",
          "memory_stats", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
          "empty_cache"]


def test_the_public_names_are_exported_once():
    assert sorted(torch_trn.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert callable(getattr(torch_trn, name)), name
    for name in ("stats", "reset_stats", "last_ops", "current_op", "trace_ops", "profile",
                 "cache_stats", "reset_cache_stats"):
        assert getattr(torch_trn, name) is getattr(torch_trn.debug, name), name
    for name in ("memory_stats", "memory_allocated", "max_memory_allocated",
                 "reset_peak_memory_stats", "empty_cache"):
        assert getattr(torch_trn, name) is getattr(torch_trn.memory, name), name
    # torch.neuron's memory functions (torch.cuda's names) are the same ones.
    for name in torch_trn.memory.__all__:
        assert getattr(torch.neuron, name) is getattr(torch_trn.memory, name), name


def test_the_memory_functions_agree_and_check_the_device():
    x = torch.ones(1024, device=torch_trn.device())
    stats = torch_trn.memory_stats()
    assert stats["allocated_bytes"] >= x.numel() * 4
    assert torch.neuron.memory_allocated("neuron:0") == torch_trn.memory_allocated() == stats["allocated_bytes"]
    assert torch.neuron.memory_reserved(0) == stats["allocated_bytes"] + stats["cached_bytes"]
    with pytest.raises(ValueError, match="not a neuron device"):
        torch.neuron.memory_stats("cpu")
    with pytest.raises(ValueError, match="out of range"):
        torch.neuron.memory_allocated(1)
    with pytest.raises(ValueError, match="out of range"):
        torch.neuron.set_device("neuron:1")
    del x


def run_module(*args, env=None):
    """`python3 -X importtime -m ARGS` with torch_trn importable: (CompletedProcess, the modules it
    imported)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    full_env.update(env or {})
    full_env["PYTHONPATH"] = os.path.join(ROOT, "python")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", *args], env=full_env,
                          capture_output=True, text=True, timeout=120)
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    return proc, imported


@pytest.mark.parametrize("args, says", [
    (("torch_trn.timeline", "--help"), "usage:"),
    (("torch_trn", "--help"), "python3 -m torch_trn COMMAND"),
    (("torch_trn", "timeline", "--help"), "usage:"),
    (("torch_trn", "audit", "--help"), "usage:"),
    (("torch_trn", "cache", "--help"), "usage: python3 -m torch_trn cache"),
])
def test_the_command_lines_run_without_the_device(args, says, tmp_path):
    profile = tmp_path / "profile.json"
    proc, imported = run_module(*args, env={"NEURON_PROFILE": str(profile)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert says in proc.stdout, proc.stdout
    assert "torch_trn" in imported
    assert "torch" not in imported and "torch_trn._C" not in imported, \
        f"python3 -m {' '.join(args)} imported torch or the extension"
    assert not profile.exists(), "a command line wrote NEURON_PROFILE"


def test_the_cache_command_starts_the_device_without_the_profile(tmp_path):
    profile = tmp_path / "profile.json"
    proc, imported = run_module("torch_trn", "cache", "stats", "--json", "--dir", str(tmp_path / "cache"),
                                env={"NEURON_PROFILE": str(profile)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "torch_trn._C" in imported
    assert '"entries": 0' in proc.stdout, proc.stdout
    assert not profile.exists(), "python3 -m torch_trn cache wrote NEURON_PROFILE"


def test_a_program_run_with_dash_m_starts_the_device(tmp_path):
    # Only torch_trn's own command lines skip the start: a program's module run with -m that
    # imports torch_trn gets the device (and its NEURON_PROFILE) as with a script.
    (tmp_path / "prog.py").write_text(
        "import torch, torch_trn\n"
        "print((torch.ones(3, device='neuron') * 2).sum().item())\n")
    profile = tmp_path / "profile.json"
    env = {"NEURON_PROFILE": str(profile)}
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NEURON_")}
    full_env.update(env)
    full_env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), str(tmp_path)])
    proc = subprocess.run([sys.executable, "-m", "prog"], env=full_env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "6.0"
    assert profile.exists(), "NEURON_PROFILE was not written"
