"""ember.cuda: devices, streams, events and the CUDA caching allocator, with torch.cuda's API.

The CUDA runtime (libcudart) is loaded with ``dlopen`` on first use, so one build of ember serves
machines with and without a GPU. Where none is usable, :func:`is_available` is False,
:func:`device_count` is 0, the memory queries answer as on a GPU that has allocated nothing
(``memory_allocated() == 0``, ``memory_stats() == {}``, ``empty_cache()`` does nothing: PyTorch's
behaviour before CUDA is initialised), and every other call raises a RuntimeError that says why.

Allocator settings come from ``EMBER_CUDA_ALLOC_CONF`` (PyTorch's ``PYTORCH_CUDA_ALLOC_CONF``
keys ``max_split_size_mb`` and ``garbage_collection_threshold``), read when a device's allocator
is first used.

Tensors on CUDA devices (``device="cuda"``, ``.cuda()``, ``.to("cuda")``) keep their bytes in that
allocator; ops on them run as CuPy kernels over zero-copy views, on the current stream
(``ember.cuda._ops``, whose table docs/cuda.md lists).
"""

from __future__ import annotations

import sys

from ember import _C
from ember.cuda._device import (
    _get_device_index,
    current_device,
    device,
    device_count,
    get_device_capability,
    get_device_name,
    get_device_properties,
    init,
    is_available,
    is_initialized,
    set_device,
    synchronize,
)
from ember.cuda.memory import (
    caching_allocator_alloc,
    caching_allocator_delete,
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from ember.cuda.random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from ember.cuda.streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)


def _device_hook(name, args, kwargs):
    """Every op call with a CUDA tensor among its arguments comes here (CuPy kernels, see
    docs/cuda.md). The op module (and NumPy/CuPy with it) loads on the first such call, so
    `import ember` stays light."""
    from ember.cuda._dispatch import dispatch

    _C._set_device_hook(dispatch)
    return dispatch(name, args, kwargs)


_C._set_device_hook(_device_hook)

OutOfMemoryError = _C.OutOfMemoryError
"""Raised when the caching allocator cannot find device memory even after freeing its cache
(a RuntimeError, like ``torch.cuda.OutOfMemoryError``)."""

__all__ = [
    "Event",
    "ExternalStream",
    "OutOfMemoryError",
    "Stream",
    "StreamContext",
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "get_device_capability",
    "get_rng_state",
    "get_rng_state_all",
    "get_device_name",
    "get_device_properties",
    "init",
    "initial_seed",
    "is_available",
    "is_initialized",
    "max_memory_allocated",
    "max_memory_reserved",
    "manual_seed",
    "manual_seed_all",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_device",
    "seed",
    "seed_all",
    "set_per_process_memory_fraction",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
    "_get_device_index",
]


def _use_host_backend(capacity: int = 0, devices: int = 1) -> None:
    """Tests only: run ember.cuda over simulated devices of `capacity` bytes each (the host
    backend of the C++ allocator) instead of the CUDA runtime; ``capacity=0`` goes back to the
    runtime. Refused while device memory is allocated."""
    from ember.cuda import streams

    _C._cuda_use_host_backend(capacity, devices)
    streams._reset_pools()
    ops = sys.modules.get("ember.cuda._ops")
    if ops is not None:
        ops._backend_changed()


def _set_compiled_kernels(on: bool) -> None:
    """Elementwise ops on CUDA tensors through the core's run-time compiled kernels, launched
    from C++ (True, the default), or through this package's CuPy path (False).
    EMBER_CUDA_COMPILED_KERNELS=0 starts a process with False."""
    _C._cuda_set_compiled_kernels(bool(on))


def _compiled_kernels() -> dict:
    """Whether the compiled-kernel path is in use (and why not), and how many kernels this
    process has compiled."""
    return dict(_C._cuda_native_elementwise())


def __getattr__(name: str):
    if name == "default_generators":
        from ember.cuda import random

        return random.default_generators
    if name == "amp":  # torch.cuda.amp's spellings of ember.amp, imported on first touch
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

