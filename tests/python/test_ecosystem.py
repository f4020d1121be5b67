"""Hugging Face transformers and accelerate pick the neuron device with only `import torch_trn`.

- detection: the `torch_neuronx` spec (torch_trn's shim, and a real install wins over it),
  transformers' and accelerate's Neuron checks, `TrainingArguments().device`;
- `torch.neuron`: what those libraries call;
- a Trainer fine-tunes a tiny BERT classifier (hf_train.py: built from a BertConfig, random
  weights, data made in the test) with no device argument: parameters on neuron, losses equal a
  CPU Trainer run (use_cpu=True, same seed) to 1e-4 relative. Eager mode in this process by
  default; --full adds compile and adaptive mode (fresh processes).
No network anywhere.
"""
import gc
import importlib.util
import math
import os

import pytest
import torch

import torch_trn

from helpers import last_json, run_python

HERE = os.path.dirname(os.path.abspath(__file__))
LOSS_RTOL = 1e-4


def test_torch_neuronx_spec_is_the_shim():
    spec = importlib.util.find_spec("torch_neuronx")
    assert spec is not None and spec.origin.endswith(os.path.join("torch_trn", "_neuronx_shim.py"))
    assert torch_trn._ecosystem.shim_active()
    import torch_neuronx
    assert torch_neuronx.TORCH_TRN_SHIM and torch_neuronx.device() == torch.device("neuron:0")


def test_transformers_and_accelerate_detect_neuron(tmp_path):
    from accelerate import PartialState
    from accelerate.utils import is_neuron_available
    from transformers import TrainingArguments
    from transformers.utils.import_utils import is_torch_bf16_gpu_available, is_torch_neuron_available

    assert is_torch_neuron_available() and is_torch_neuron_available(check_device=True)
    assert is_neuron_available() and is_neuron_available(check_device=True)
    assert is_torch_bf16_gpu_available()              # transformers' bf16=True check
    assert TrainingArguments(output_dir=str(tmp_path), report_to=[]).device == torch.device("neuron:0")
    assert PartialState().device.type == "neuron"
    assert TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True).device == torch.device("cpu")


def test_detection_answer_cached_before_import_is_refreshed():
    # transformers' detection is lru_cached: asked before torch_trn was imported it said False.
    proc = run_python("""
        import json
        from transformers.utils.import_utils import is_torch_neuron_available
        before = is_torch_neuron_available()
        import torch_trn
        print(json.dumps({"before": before, "after": is_torch_neuron_available()}))
    """)
    assert last_json(proc) == {"before": False, "after": True}


def test_a_real_torch_neuronx_install_wins_over_the_shim(tmp_path):
    real = tmp_path / "site" / "torch_neuronx"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    proc = run_python(f"""
        import importlib.util, json, sys
        sys.path.insert(0, {str(tmp_path / 'site')!r})
        import torch_trn
        spec = importlib.util.find_spec("torch_neuronx")
        print(json.dumps({{"origin": spec.origin, "shim": torch_trn._ecosystem.shim_active(),
                          "finders": [type(f).__name__ for f in sys.meta_path]}}))
    """)
    out = last_json(proc)
    assert out["origin"] == str(real / "__init__.py")
    assert not out["shim"] and "NeuronxShimFinder" not in out["finders"]


def test_torch_neuron_api_the_libraries_call():
    n = torch.neuron
    assert n.is_available() and n.device_count() == 1 and n.current_device() == 0
    assert n.is_bf16_supported()
    n.set_device(torch.device("neuron:0"))
    n.set_device(0)
    with pytest.raises(ValueError, match="out of range"):
        n.set_device(1)
    # Seeds: the device generator, like torch.cuda's (accelerate's set_seed / RNG checkpointing).
    n.manual_seed_all(3)
    a = torch.rand(4, device="neuron").cpu()
    state = n.get_rng_state_all()
    b = torch.rand(4, device="neuron").cpu()
    n.set_rng_state_all(state)
    assert torch.equal(torch.rand(4, device="neuron").cpu(), b)
    n.manual_seed(3)
    assert torch.equal(torch.rand(4, device="neuron").cpu(), a)
    n.synchronize()
    # Memory (accelerate's release_memory / peak tracking).
    gc.collect()  # device tensors of earlier tests that only a cycle still held go now, not below
    n.empty_cache()
    n.reset_peak_memory_stats()
    base = n.memory_allocated()
    t = torch.empty(1 << 20, dtype=torch.uint8, device="neuron")
    assert n.memory_allocated() >= base + (1 << 20)
    assert n.max_memory_allocated() >= base + (1 << 20)
    assert n.memory_reserved() >= n.memory_allocated() and n.max_memory_reserved() >= n.memory_reserved()
    del t
    assert n.memory_allocated() == base


def _check_trainer_run(dev, cpu):
    print(f"\n  neuron losses {dev['losses']}\n  cpu    losses {cpu['losses']}")
    assert dev["args_device"] == "neuron:0" and dev["param_devices"] == ["neuron:0"]
    assert cpu["args_device"] == "cpu" and cpu["param_devices"] == ["cpu"]
    assert len(dev["losses"]) == len(cpu["losses"]) > 0
    for i, (ld, lc) in enumerate(zip(dev["losses"], cpu["losses"])):
        assert math.isclose(ld, lc, rel_tol=LOSS_RTOL), f"step {i}: loss neuron={ld!r} cpu={lc!r}"


@pytest.fixture(scope="module")
def cpu_trainer_run():
    from hf_train import train
    return train(use_cpu=True)


def pytest_generate_tests(metafunc):
    if "mode" in metafunc.fixturenames:
        metafunc.parametrize("mode", ["eager", "compile", "adaptive"] if metafunc.config.getoption("--full")
                             else ["eager"])


def test_trainer_fine_tunes_on_neuron_like_cpu(mode, cpu_trainer_run):
    if mode == torch_trn.mode():        # this process's mode (eager unless NEURON_MODE says otherwise)
        from hf_train import train
        dev_run = train()
    else:
        script = os.path.join(HERE, "hf_train.py")
        dev_run = last_json(run_python(
            f"import runpy, sys; sys.argv = [{script!r}]; runpy.run_path({script!r}, run_name='__main__')",
            env={"NEURON_MODE": mode, "NEURON_CACHE_DIR": "off"}))
    _check_trainer_run(dev_run, cpu_trainer_run)


def test_trainer_bf16_runs_under_neuron_autocast_like_cpu(cpu_trainer_run):
    """TrainingArguments(bf16=True): accelerate wraps the forward in torch.autocast("neuron", bf16)."""
    from hf_train import train
    dev, cpu = train(bf16=True), train(use_cpu=True, bf16=True)
    print(f"\n  neuron bf16 losses {dev['losses']}\n  cpu    bf16 losses {cpu['losses']}")
    assert dev["param_devices"] == ["neuron:0"] and len(dev["losses"]) == len(cpu["losses"]) > 0
    for i, (ld, lc) in enumerate(zip(dev["losses"], cpu["losses"])):
        assert math.isclose(ld, lc, rel_tol=1e-2), f"step {i}: bf16 loss neuron={ld!r} cpu={lc!r}"
    # Autocast was on: the bf16 losses are not the float32 run's.
    assert dev["losses"] != cpu_trainer_run["losses"]


def test_trainer_torch_compile_uses_the_neuron_backend_like_cpu(cpu_trainer_run):
    """TrainingArguments(torch_compile=True): transformers picks backend "neuron" for the device
    and the compiled model trains like the uncompiled CPU run (compile mode: compiled groups)."""
    script = os.path.join(HERE, "hf_train.py")
    dev_run = last_json(run_python(
        f"import runpy, sys; sys.argv = [{script!r}, '--torch-compile']; runpy.run_path({script!r}, run_name='__main__')",
        env={"NEURON_MODE": "compile", "NEURON_CACHE_DIR": "off"}))
    assert dev_run["compile_backend"] == "neuron", dev_run
    _check_trainer_run(dev_run, cpu_trainer_run)
