"""ember.cpu: the CPU allocator's byte counters and its cache, under torch.cuda's names.

PyTorch has no counter of live CPU tensor memory (``torch.cpu`` has none of these functions);
ember's CPU allocator keeps one, so that what a graph or a training step holds can be measured
exactly instead of through the process's RSS (which also moves with malloc's caches, the
interpreter and other libraries). Only storages from ember's default CPU allocator count: memory
borrowed from NumPy or DLPack, or shared-memory storages, does not.

The allocator keeps freed blocks of 128 KiB to 32 MiB and hands them to the next request of the
same size class (a training or inference loop then re-uses its pages instead of having the
kernel zero new ones on every iteration). At most 64 MiB stay cached (the least recently used
size classes go first). ``empty_cache()`` returns it all to malloc; the environment variable
``EMBER_CPU_CACHE`` (read at import) sets the cap in MiB, ``0`` turns the cache off.
"""

from __future__ import annotations

from ember import _C

__all__ = ["empty_cache", "memory_allocated", "memory_reserved", "max_memory_allocated",
           "reset_peak_memory_stats"]


def memory_allocated() -> int:
    """Bytes of live CPU tensor storages (their requested sizes)."""
    return int(_C._cpu_memory_allocated())


def max_memory_allocated() -> int:
    """Peak of memory_allocated since the start or the last reset_peak_memory_stats."""
    return int(_C._cpu_max_memory_allocated())


def memory_reserved() -> int:
    """Bytes the allocator holds: memory_allocated plus the cache's blocks (their class sizes)."""
    return memory_allocated() + int(_C._cpu_cache_stats()["cached_bytes"])


def empty_cache() -> None:
    """Returns the cached blocks to malloc (live tensors are untouched)."""
    _C._cpu_empty_cache()


def reset_peak_memory_stats() -> None:
    """Sets the peak to the current memory_allocated."""
    _C._cpu_reset_peak_memory_stats()


def __getattr__(name: str):
    # ember.cpu.amp (torch.cpu.amp's spellings of ember.amp), imported on first touch
    if name == "amp":
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
