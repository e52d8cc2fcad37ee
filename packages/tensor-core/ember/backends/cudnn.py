"""ember.backends.cudnn: torch.backends.cudnn's flags. ember does not use cuDNN (convolutions on
CUDA are an im2col plus one GEMM, see docs/cuda.md), so ``is_available()`` is False and
``version()`` None; the flags are kept and read back for programs that set them:

- ``enabled``: True. ember has no cuDNN path to turn off; False changes nothing.
- ``benchmark``: False. ember has one convolution algorithm, so there is nothing to pick.
- ``deterministic``: False. ember's convolutions give the same result run to run either way.
- ``allow_tf32``: True (torch's default). ember's convolutions never use TF32.
"""

from __future__ import annotations

import contextlib

__all__ = ["is_available", "version", "is_acceptable", "flags", "enabled", "benchmark",
           "deterministic", "allow_tf32", "benchmark_limit"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available() -> bool:
    """False: ember does not use cuDNN."""
    return False


def version():
    """None, as torch's when cuDNN is not available."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take ``tensor``: never here."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None,
              _allow_tf32=None):
    """Sets the flags given (not None) and returns the previous values, as torch's."""
    global enabled, benchmark, benchmark_limit, deterministic, allow_tf32
    orig = (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    if _enabled is not None:
        enabled = bool(_enabled)
    if _benchmark is not None:
        benchmark = bool(_benchmark)
    if _benchmark_limit is not None:
        benchmark_limit = int(_benchmark_limit)
    if _deterministic is not None:
        deterministic = bool(_deterministic)
    if _allow_tf32 is not None:
        allow_tf32 = bool(_allow_tf32)
    return orig


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Sets the flags inside a ``with`` block and restores them after, as torch's."""
    orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    try:
        yield
    finally:
        set_flags(*orig)
