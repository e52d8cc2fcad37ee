"""ember.cuda.amp: torch.cuda.amp's (deprecated) spellings of ember.amp for CUDA. ember.amp holds
the one implementation of each; these pass "cuda" and warn as torch does."""

from __future__ import annotations

import functools
import warnings

from ember import amp as _amp

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_amp.autocast):
    """``ember.cuda.amp.autocast(args...)`` is ``ember.amp.autocast("cuda", args...)``."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        import ember

        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled,
                         dtype=ember.float16 if dtype is None else dtype,
                         cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """``ember.cuda.amp.GradScaler(args...)`` is ``ember.amp.GradScaler("cuda", args...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``ember.amp.custom_fwd(device_type="cuda")``."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``ember.amp.custom_bwd(device_type="cuda")``."""
    return _amp.custom_bwd(bwd, device_type="cuda")
