"""torch.nn.attention: the choice of scaled-dot-product-attention kernel.

ember's ``F.scaled_dot_product_attention`` has two implementations on the CPU: the fused kernel
(torch's flash attention for the CPU, ``_scaled_dot_product_flash_attention_for_cpu``), used
where it applies while ``SDPBackend.FLASH_ATTENTION`` is allowed, and the math one composed of
core ops, used otherwise. ``sdpa_kernel`` validates its argument as torch does; asking for no
backend at all is refused as torch refuses it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from enum import IntEnum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(IntEnum):
    """torch's attention backends (same names and values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_enabled: list = [list(SDPBackend)[1:]]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Restrict scaled_dot_product_attention to ``backends`` inside the block (after torch's
    argument checks): without FLASH_ATTENTION the CPU takes the composed math form."""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    if not isinstance(backends, Iterable) or not all(isinstance(b, SDPBackend)
                                                     for b in backends):
        raise ValueError("Backend must be an instance of SDPBackend or a list of them")
    backends = list(dict.fromkeys(backends))
    _enabled.append(backends)
    try:
        yield
    finally:
        _enabled.pop()


def _current_backends() -> list:
    return list(_enabled[-1])
