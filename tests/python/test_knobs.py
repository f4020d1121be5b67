"""NEURON_* knobs: validation at import, the docs table, mode names."""
import os
import subprocess
import sys

import torch_trn

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _import(env):
    full_env = dict(os.environ, **env)
    full_env["PYTHONPATH"] = os.path.join(ROOT, "python")
    return subprocess.run([sys.executable, "-c", "import torch_trn; print('MODE', torch_trn.mode())"],
                          env=full_env, capture_output=True, text=True, timeout=300)


def test_invalid_mode_is_an_import_error_naming_allowed_values():
    r = _import({"NEURON_MODE": "fast"})
    assert r.returncode != 0
    assert "ValueError" in r.stderr
    assert "NEURON_MODE='fast'" in r.stderr
    assert "eager | adaptive | compile" in r.stderr


def test_unimplemented_modes_run_as_eager_and_say_so_once():
    for mode in ("adaptive", "compile"):
        r = _import({"NEURON_MODE": mode})
        assert r.returncode == 0, r.stderr
        assert f"MODE {mode}" in r.stdout
        assert r.stderr.count("running in eager mode") == 1


def test_default_mode_is_eager():
    env = {k: v for k, v in os.environ.items() if k != "NEURON_MODE"}
    r = subprocess.run([sys.executable, "-c", "import torch_trn; print(torch_trn.mode())"],
                       env=dict(env, PYTHONPATH=os.path.join(ROOT, "python")),
                       capture_output=True, text=True, timeout=300)
    assert r.stdout.strip() == "eager", r.stderr


def test_docs_table_lists_every_knob():
    with open(os.path.join(ROOT, "docs", "knobs.md")) as f:
        doc = f.read()
    for knob in torch_trn.knobs():
        assert f"`{knob['name']}`" in doc, f"{knob['name']} missing from docs/knobs.md"
        assert knob["default"] in doc


def test_every_neuron_env_var_in_the_sources_is_registered():
    names = {k["name"] for k in torch_trn.knobs()}
    import re
    found = set()
    for base in ("src", "python"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
            for f in files:
                if f.endswith((".cpp", ".h", ".py")):
                    with open(os.path.join(dirpath, f), errors="ignore") as fh:
                        found |= set(re.findall(r"\bNEURON_[A-Z_]+\b", fh.read()))
    assert found <= names, f"unregistered knobs: {sorted(found - names)}"


def test_importing_after_a_cpu_backward_is_a_clear_error():
    code = ("import torch\n"
            "x = torch.ones(2, requires_grad=True); (x * 2).sum().backward()\n"
            "import torch_trn\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert r.returncode != 0
    assert "ImportError" in r.stderr
    assert "must be imported before the first backward pass" in r.stderr
