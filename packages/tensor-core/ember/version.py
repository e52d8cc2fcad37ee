"""ember.version: torch.version's names.

``cuda`` is the version of the CUDA runtime ember's CUDA tensors run on, read when first asked
(None where no GPU is usable). torch's is the CUDA it was built against; ember's core is built
without CUDA and loads the runtime at run time (docs/cuda.md), so the runtime found is the
answer. ember has no HIP, ROCm or XPU backend: those are None.
"""

from __future__ import annotations

from ember import __version__

__all__ = ["__version__", "cuda", "hip", "rocm", "xpu"]  # noqa: F822 - cuda: module __getattr__

hip = None
rocm = None
xpu = None


def __getattr__(name: str):
    if name == "cuda":
        from ember import _C

        return _C._cuda_runtime_version()
    raise AttributeError(f"module 'ember.version' has no attribute '{name}'")
