"""ember.cpu: the CPU allocator's byte counters, under torch.cuda's names.

PyTorch has no counter of live CPU tensor memory (``torch.cpu`` has none of these functions);
ember's CPU allocator keeps one, so that what a graph or a training step holds can be measured
exactly instead of through the process's RSS (which also moves with malloc's caches, the
interpreter and other libraries). Only storages from ember's default CPU allocator count: memory
borrowed from NumPy or DLPack, or shared-memory storages, does not.
"""

from __future__ import annotations

from ember import _C

__all__ = ["memory_allocated", "max_memory_allocated", "reset_peak_memory_stats"]


def memory_allocated() -> int:
    """Bytes of live CPU tensor storages (their requested sizes)."""
    return int(_C._cpu_memory_allocated())


def max_memory_allocated() -> int:
    """Peak of memory_allocated since the start or the last reset_peak_memory_stats."""
    return int(_C._cpu_max_memory_allocated())


def reset_peak_memory_stats() -> None:
    """Sets the peak to the current memory_allocated."""
    _C._cpu_reset_peak_memory_stats()


def __getattr__(name: str):
    # ember.cpu.amp (torch.cpu.amp's spellings of ember.amp), imported on first touch
    if name == "amp":
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
