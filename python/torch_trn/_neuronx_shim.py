"""The `torch_neuronx` module torch_trn provides when no real torch-neuronx is installed.

Hugging Face transformers and accelerate decide that a machine has Neuron devices when
`importlib.util.find_spec("torch_neuronx")` finds a module and `torch.neuron.is_available()` is
true; then they train on `neuron:0`. torch_trn serves `torch.neuron`, so it answers that spec
lookup with this module (see torch_trn/_ecosystem.py). It is only ever loaded under the name
`torch_neuronx`, and only when no real `torch_neuronx` is importable: a real install is found
first and this file is never used (docs/ecosystem.md).

Importing it imports torch_trn, which registers the device; it offers nothing of torch-neuronx's
own API (no `torch_neuronx.trace`).
"""
import torch_trn as _torch_trn

__version__ = "0.0.0+torch_trn"
TORCH_TRN_SHIM = True  # tells this module from a real torch-neuronx install
device = _torch_trn.device
