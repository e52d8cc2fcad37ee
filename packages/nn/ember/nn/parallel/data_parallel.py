"""DataParallel: torch's single-process, multi-GPU wrapper.

ember runs the wrapped module on one device, ``device_ids[0]`` (the first CUDA device by
default, or the CPU when there is none): the results are those of one replica, which is what
DataParallel computes, without the split across devices. For training on several devices use
DistributedDataParallel (one process per device).
"""

from __future__ import annotations

import ember

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _device_of(device_ids):
    if device_ids:
        d = device_ids[0]
        return ember.device(f"cuda:{d}" if isinstance(d, int) else d)
    if ember.cuda.is_available():
        return ember.device("cuda:0")
    return None


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: forward runs
    ``module`` on ``device_ids[0]``; the parameters must be there (as torch requires);
    the output goes to ``output_device`` (default ``device_ids[0]``). ``self.module`` is the
    wrapped module, so ``model.module.state_dict()`` works as with torch."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.dim = dim
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.src_device_obj = _device_of(self.device_ids)
        if output_device is None:
            self.output_device = self.src_device_obj
        else:
            self.output_device = ember.device(f"cuda:{output_device}"
                                              if isinstance(output_device, int)
                                              else output_device)
        if self.src_device_obj is not None:
            for t in list(module.parameters()) + list(module.buffers()):
                if t.device != self.src_device_obj:
                    raise RuntimeError(
                        "module must have its parameters and buffers on device "
                        f"{self.src_device_obj} (device_ids[0]) but found one of them on "
                        f"device: {t.device}")

    def forward(self, *inputs, **kwargs):
        dev = self.src_device_obj
        if dev is not None:
            inputs = tuple(_to(x, dev) for x in inputs)
            kwargs = {k: _to(v, dev) for k, v in kwargs.items()}
        out = self.module(*inputs, **kwargs)
        if self.output_device is not None and self.output_device != dev:
            out = _to(out, self.output_device)
        return out


def _to(x, device):
    if isinstance(x, ember.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(_to(v, device) for v in x)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    return x


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """The functional form: ``DataParallel(module, ...)(*inputs, **module_kwargs)``."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return DataParallel(module, device_ids, output_device, dim)(*inputs,
                                                                **(module_kwargs or {}))
