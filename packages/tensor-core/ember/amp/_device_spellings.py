"""torch.cpu.amp's and torch.cuda.amp's (deprecated) spellings of ember.amp: the same classes
with the device fixed, warning as torch does. ember.cpu.amp and ember.cuda.amp take theirs from
here."""

from __future__ import annotations

import warnings

from ember.amp.autocast_mode import autocast as _autocast
from ember.amp.grad_scaler import GradScaler as _GradScaler


def spellings(device: str, default_dtype_name: str):
    """The (autocast, GradScaler) classes of `torch.<device>.amp`."""

    class autocast(_autocast):
        __doc__ = (f"``ember.{device}.amp.autocast(args...)`` is "
                   f"``ember.amp.autocast(\"{device}\", args...)``.")

        def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
            import ember

            warnings.warn(f"`torch.{device}.amp.autocast(args...)` is deprecated. Please use "
                          f"`torch.amp.autocast('{device}', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__(device, enabled=enabled,
                             dtype=getattr(ember, default_dtype_name) if dtype is None else dtype,
                             cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        __doc__ = (f"``ember.{device}.amp.GradScaler(args...)`` is "
                   f"``ember.amp.GradScaler(\"{device}\", args...)``.")

        def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`torch.amp.GradScaler('{device}', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    module = f"ember.{device}.amp"
    for cls in (autocast, GradScaler):
        cls.__module__ = module
        cls.__qualname__ = cls.__name__
    return autocast, GradScaler
