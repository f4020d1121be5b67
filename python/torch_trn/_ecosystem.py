"""What Hugging Face transformers and accelerate look for to train on the neuron device.

Both libraries detect Neuron with (transformers.utils.import_utils.is_torch_neuron_available,
accelerate.utils.imports.is_neuron_available):

    importlib.util.find_spec("torch_neuronx") is not None and torch.neuron.is_available()

then pick `torch.device("neuron:0")`, call `torch.neuron.set_device`, `current_device`,
`manual_seed_all`, `get_rng_state(_all)`, `is_bf16_supported`, `empty_cache` and the memory
functions (all in _device_module.py), and use `torch.autocast("neuron", ...)` for bf16.

`torch.neuron` is ours. For the module spec, `install()` appends a finder to the end of
`sys.meta_path` that answers `torch_neuronx` with torch_trn's shim (_neuronx_shim.py), and only
when no real `torch_neuronx` is importable: then at import time no finder is installed at all,
and a real install that appears on sys.path later is still found first, since every regular
finder runs before ours. docs/ecosystem.md describes this.
"""
import importlib.abc
import importlib.util
import os
import sys

SHIM_NAME = "torch_neuronx"
_SHIM_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_neuronx_shim.py")


class NeuronxShimFinder(importlib.abc.MetaPathFinder):
    """Finds `torch_neuronx` as torch_trn's shim; asked last, after every real finder."""

    def find_spec(self, name, path=None, target=None):
        if name != SHIM_NAME:
            return None
        return importlib.util.spec_from_file_location(SHIM_NAME, _SHIM_PATH)


def shim_active() -> bool:
    """True when `torch_neuronx` resolves to torch_trn's shim (no real torch-neuronx installed)."""
    spec = importlib.util.find_spec(SHIM_NAME)
    return spec is not None and spec.origin == _SHIM_PATH


def install() -> None:
    """Makes transformers and accelerate detect the neuron device (see the module docstring)."""
    installed = any(isinstance(f, NeuronxShimFinder) for f in sys.meta_path)
    if not installed and importlib.util.find_spec(SHIM_NAME) is None:  # no real torch-neuronx
        sys.meta_path.append(NeuronxShimFinder())
    # Their detection functions are lru_cached: forget an answer given before torch_trn existed.
    for module_name, function_names in (
            ("transformers.utils.import_utils", ("is_torch_neuron_available", "is_torch_bf16_gpu_available")),
            ("accelerate.utils.imports", ("is_neuron_available",))):
        module = sys.modules.get(module_name)
        for fn_name in function_names:
            cache_clear = getattr(getattr(module, fn_name, None), "cache_clear", None)
            if cache_clear is not None:
                cache_clear()
