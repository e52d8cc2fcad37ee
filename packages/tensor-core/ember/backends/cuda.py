"""ember.backends.cuda: torch.backends.cuda's flags and facts.

- ``is_built()``: True. ember loads the CUDA runtime when first used (``ember.cuda``), so the one
  build serves machines with and without a GPU; ``ember.cuda.is_available()`` says whether one
  is usable.
- ``matmul.allow_tf32``: False by default, tied to ``ember.get_float32_matmul_precision()`` as in
  torch (True means "high", False "highest"). ember's float32 matrix products (CuPy/cuBLAS on
  CUDA, OpenBLAS on the CPU) always run in full float32, so it changes no result.
- ``matmul.allow_fp16_reduced_precision_reduction`` / ``allow_bf16_reduced_precision_reduction``:
  kept and read back; ember reduces half-precision products in float32 either way.
- the scaled-dot-product-attention switches (``enable_flash_sdp`` ...): kept and read back;
  ``enable_flash_sdp(False)`` also keeps the CPU's ``scaled_dot_product_attention`` off its
  fused kernel (as torch's CPU backend choice reads it), the others change nothing.
"""

from __future__ import annotations

import contextlib

from ember import _global_flags

__all__ = ["is_built", "matmul", "cufft_plan_cache", "preferred_linalg_library",
           "preferred_blas_library", "enable_flash_sdp", "flash_sdp_enabled",
           "enable_mem_efficient_sdp", "mem_efficient_sdp_enabled", "enable_math_sdp",
           "math_sdp_enabled", "enable_cudnn_sdp", "cudnn_sdp_enabled", "sdp_kernel",
           "is_flash_attention_available"]


def is_built() -> bool:
    """True: this build of ember can use CUDA where a GPU and its runtime are present."""
    return True


class cuBLASModule:
    """``ember.backends.cuda.matmul``: torch's attributes, settable."""

    def __init__(self):
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.allow_fp16_accumulation = False

    @property
    def allow_tf32(self) -> bool:
        return _global_flags.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        _global_flags.set_float32_matmul_precision("high" if value else "highest")


matmul = cuBLASModule()


class _PlanCache:
    """torch's cuFFT plan cache, empty (ember has no FFT on CUDA)."""

    size = 0
    max_size = 4096

    def clear(self) -> None:
        pass

    def __getitem__(self, device):
        return self


cufft_plan_cache = _PlanCache()

_linalg_library = "default"
_blas_library = "cublas"
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def preferred_linalg_library(backend=None) -> str:
    """Kept and read back: ember's linear algebra on CUDA runs LAPACK on host copies."""
    global _linalg_library
    if backend is not None:
        _linalg_library = str(backend)
    return _linalg_library


def preferred_blas_library(backend=None) -> str:
    global _blas_library
    if backend is not None:
        _blas_library = str(backend)
    return _blas_library


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def is_flash_attention_available() -> bool:
    """False: ember's attention is the math implementation."""
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Sets the attention switches inside a ``with`` block (torch's deprecated spelling)."""
    prev = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(prev)
