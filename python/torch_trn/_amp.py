"""`torch.neuron.amp`: autocast and GradScaler bound to the neuron device (like torch.cuda.amp).

    with torch.neuron.amp.autocast():               # = torch.autocast("neuron", dtype=torch.bfloat16)
        loss = model(x).sum()
    scaler = torch.neuron.amp.GradScaler()          # = torch.amp.GradScaler("neuron"), for float16

The op policy is PyTorch's (src/trace/autocast.cpp registers it for the AutocastPrivateUse1 key);
docs/ecosystem.md lists what runs compiled.
"""
import torch as _torch


class autocast(_torch.amp.autocast):
    """`torch.autocast("neuron", ...)`; the default dtype is bfloat16, Trainium's native one."""

    def __init__(self, enabled: bool = True, dtype: _torch.dtype = _torch.bfloat16, cache_enabled: bool = True):
        super().__init__("neuron", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_torch.amp.GradScaler):
    """`torch.amp.GradScaler("neuron", ...)`: loss scaling for float16 autocast."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        super().__init__("neuron", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
