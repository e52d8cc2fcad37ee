"""ember.backends.cudnn: torch.backends.cudnn's flags, read by ember's cuDNN path (convolution and
batch norm on CUDA tensors, ``ember/cuda/_cudnn.py``; docs/cuda.md). cuDNN 9 is loaded at run time
from the ``nvidia-cudnn-cu12``/``-cu13`` wheel, ``$EMBER_CUDNN`` or the system; without it the
ops run ember's own CUDA kernels (im2col + cuBLAS) and ``is_available()`` is False.

- ``enabled``: True. False sends convolution and batch norm to ember's own kernels.
- ``benchmark``: False: cuDNN's heuristics pick each convolution's algorithm; True: cuDNN times
  its algorithms once per shape and keeps the fastest, as torch.
- ``deterministic``: False. True (or ``ember.use_deterministic_algorithms(True)``) keeps to
  cuDNN's deterministic algorithms.
- ``allow_tf32``: True (torch's default): float32 convolutions may use TF32 tensor cores (about
  1e-3 relative error); False keeps them in full float32.
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
    """Whether cuDNN is loaded and usable: a CUDA GPU and cuDNN 9."""
    from ember import _C

    if _C._cuda_backend_name() != "cudart":
        return False
    from ember.cuda import _cudnn

    return _cudnn.available()


def version():
    """cuDNN's version as an int (e.g. 91900 for 9.19.0), or None when it is not available."""
    if not is_available():
        return None
    from ember.cuda import _cudnn

    return _cudnn.version()


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take ``tensor``: a CUDA tensor of a floating dtype cuDNN has, with
    cuDNN enabled and available."""
    return (enabled and getattr(tensor, "is_cuda", False)
            and tensor.dtype.name in ("float16", "bfloat16", "float32", "float64")
            and is_available())


def _unavailable_reason() -> str:
    """Why is_available() is False ("" when it is True)."""
    from ember.cuda import _cudnn

    return _cudnn.unavailable_reason()


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
