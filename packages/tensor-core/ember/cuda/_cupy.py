"""Routing CuPy's device allocations through ember's caching allocator (cupy.cuda.set_allocator).

CuPy's kernels run over memory that ember's allocator owns (tensors' storages, and CuPy's own
temporaries through this hook), so ``ember.cuda.memory_stats`` sees every device byte. Written
against CuPy's documented allocator interface; run on a GPU with CuPy 14 (docs/cuda.md).
"""

from __future__ import annotations

from ember.cuda._device import is_available
from ember.cuda.memory import caching_allocator_alloc, caching_allocator_delete


class _Block:
    """Owns one allocation; CuPy keeps it alive through UnownedMemory(owner=...)."""

    __slots__ = ("ptr",)

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    # bound at definition: a block freed while the interpreter exits (an array a module cache
    # held) runs after the module's globals are cleared
    def __del__(self, _delete=caching_allocator_delete) -> None:
        if self.ptr:
            _delete(self.ptr)
            self.ptr = 0


def _malloc(size: int):
    import cupy

    if size == 0:
        return cupy.cuda.MemoryPointer(cupy.cuda.memory.Memory(0), 0)
    device = cupy.cuda.Device().id
    # Allocate on CuPy's current stream: the block is reused on that stream only, as in CuPy's
    # own pool; memory used on another stream needs record_stream, as in torch.
    stream = cupy.cuda.get_current_stream().ptr
    block = _Block(caching_allocator_alloc(size, device, stream))
    mem = cupy.cuda.UnownedMemory(block.ptr, size, block, device)
    return cupy.cuda.MemoryPointer(mem, 0)


def route_cupy_allocations() -> None:
    """Makes CuPy take its device memory from ember's caching allocator."""
    if not is_available():
        from ember import _C

        raise RuntimeError(_C._cuda_no_gpu_error("route_cupy_allocations"))
    try:
        import cupy
    except ImportError:
        raise ImportError("route_cupy_allocations needs CuPy: pip install cupy-cuda12x") from None
    cupy.cuda.set_allocator(_malloc)


def restore_cupy_allocator() -> None:
    """Gives CuPy back its own memory pool."""
    import cupy

    cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)
