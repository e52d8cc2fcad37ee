"""ember.backends.cpu: the CPU kernels' instruction set, as torch.backends.cpu.

ember's kernels are compiled for a baseline CPU (x86-64-v2 on x86-64) and once more for AVX2
(x86-64-v3) and AVX-512 (x86-64-v4); ``import ember`` picks the best copy the CPU supports. The
environment variable ``EMBER_CPU_CAPABILITY`` (``default``, ``avx2`` or ``avx512``, as PyTorch's
``ATEN_CPU_CAPABILITY``), set before ember is imported, asks for a lower one.
"""

from __future__ import annotations

from ember import _C

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """The instruction set of the CPU kernels in use: ``"DEFAULT"`` (the baseline), ``"AVX2"`` or
    ``"AVX512"``.

    >>> import ember
    >>> ember.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
    True
    """
    return _C._get_cpu_capability()
