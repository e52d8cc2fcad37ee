"""ember.accelerator: torch.accelerator's device-generic API. The one accelerator ember knows is
CUDA (``ember.cuda``); where none is usable, ``current_accelerator()`` is None,
``device_count()`` 0, and the calls that need a device raise torch's RuntimeError."""

from __future__ import annotations

import ember

__all__ = ["current_accelerator", "device_count", "is_available", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "device_index",
           "current_stream", "set_stream", "synchronize", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "memory_stats"]

_NONE = "Cannot access accelerator device when none is available."


def _cuda():
    from ember import cuda

    if not cuda.is_available():
        raise RuntimeError(_NONE)
    return cuda


def current_accelerator(check_available: bool = False):
    """``ember.device("cuda")`` where a GPU is usable, else None."""
    from ember import cuda

    return ember.device("cuda") if cuda.is_available() else None


def device_count() -> int:
    from ember import cuda

    return cuda.device_count() if cuda.is_available() else 0


def is_available() -> bool:
    return device_count() > 0


def current_device_index() -> int:
    return _cuda().current_device()


current_device_idx = current_device_index


def set_device_index(device) -> None:
    _cuda().set_device(device)


set_device_idx = set_device_index


class device_index:
    """Context manager that makes ``device`` (an index; None does nothing) current."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx is not None:
            set_device_index(self.prev_idx)
        return False


def current_stream(device=None):
    return _cuda().current_stream(device)


def set_stream(stream) -> None:
    _cuda().set_stream(stream)


def synchronize(device=None) -> None:
    _cuda().synchronize(device)


def empty_cache() -> None:
    from ember import cuda

    if cuda.is_available():
        cuda.empty_cache()


def memory_allocated(device_index=None) -> int:
    return _cuda().memory_allocated(device_index)


def max_memory_allocated(device_index=None) -> int:
    return _cuda().max_memory_allocated(device_index)


def memory_reserved(device_index=None) -> int:
    return _cuda().memory_reserved(device_index)


def max_memory_reserved(device_index=None) -> int:
    return _cuda().max_memory_reserved(device_index)


def reset_peak_memory_stats(device_index=None) -> None:
    _cuda().reset_peak_memory_stats(device_index)


def memory_stats(device_index=None) -> dict:
    return _cuda().memory_stats(device_index)
