"""ember.cuda.amp: torch.cuda.amp's (deprecated) spellings of ember.amp for CUDA. ember.amp holds
the one implementation of each; these pass "cuda" and warn as torch does."""

from __future__ import annotations

import functools

from ember import amp as _amp
from ember.amp._device_spellings import spellings

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


autocast, GradScaler = spellings("cuda", "float16")


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``ember.amp.custom_fwd(device_type="cuda")``."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``ember.amp.custom_bwd(device_type="cuda")``."""
    return _amp.custom_bwd(bwd, device_type="cuda")
