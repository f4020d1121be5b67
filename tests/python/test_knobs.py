"""NEURON_* knobs: validation at import, the docs table, mode names."""
import os
import re

import torch_trn
from helpers import ROOT, run_python


def _import(env):
    return run_python("import torch_trn; print('MODE', torch_trn.mode())", env=env)


def test_invalid_mode_is_an_import_error_naming_allowed_values():
    r = _import({"NEURON_MODE": "fast"})
    assert r.returncode != 0
    assert "ValueError" in r.stderr
    assert "NEURON_MODE='fast'" in r.stderr
    assert "eager | adaptive | compile" in r.stderr


def test_every_mode_is_accepted_silently():
    for mode in ("eager", "adaptive", "compile", "ADAPTIVE"):
        r = _import({"NEURON_MODE": mode})
        assert r.returncode == 0, r.stderr
        assert f"MODE {mode.lower()}" in r.stdout
        assert "torch_trn:" not in r.stderr, r.stderr


def test_default_mode_is_eager():
    r = run_python("import torch_trn; print(torch_trn.mode())", drop=("NEURON_MODE",))
    assert r.stdout.strip() == "eager", r.stderr


def test_docs_table_lists_every_knob():
    with open(os.path.join(ROOT, "docs", "knobs.md")) as f:
        doc = f.read()
    for knob in torch_trn.knobs():
        assert f"`{knob['name']}`" in doc, f"{knob['name']} missing from docs/knobs.md"
        assert knob["default"] in doc


def test_every_neuron_env_var_in_the_sources_is_registered():
    names = {k["name"] for k in torch_trn.knobs()}
    found = set()
    for base in ("src", "python"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
            for f in files:
                if f.endswith((".cpp", ".h", ".py")):
                    with open(os.path.join(dirpath, f), errors="ignore") as fh:
                        found |= set(re.findall(r"\bNEURON_[A-Z_]+\b", fh.read()))
    assert found <= names, f"unregistered knobs: {sorted(found - names)}"


def test_importing_after_a_cpu_backward_is_a_clear_error():
    r = run_python("""
        import torch
        x = torch.ones(2, requires_grad=True); (x * 2).sum().backward()
        import torch_trn
    """)
    assert r.returncode != 0
    assert "ImportError" in r.stderr
    assert "must be imported before the first backward pass" in r.stderr
