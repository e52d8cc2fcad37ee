"""Device selection and availability for ember.cuda (torch.cuda's functions of the same names)."""

from __future__ import annotations

from typing import Any

from ember import _C
from ember._device import device as _device_type


def is_available() -> bool:
    """True when the CUDA runtime loads and sees at least one GPU. Never raises."""
    return bool(_C._cuda_is_available())


def device_count() -> int:
    """The number of usable GPUs (0 where CUDA is not available). Never raises."""
    return int(_C._cuda_device_count())


def is_initialized() -> bool:
    """True once the CUDA runtime has been loaded and found a device."""
    return is_available()


def init() -> None:
    """Loads the CUDA runtime now; raises the no-GPU RuntimeError where there is none."""
    _C._cuda_get_device()


def _get_device_index(device: Any = None, optional: bool = True) -> int:
    """The device ordinal of `device` (an int, "cuda:N", an ember.device or None: the current
    device), as torch.cuda._utils._get_device_index."""
    if device is None:
        if not optional:
            raise ValueError(
                "Expected an ember.device with a specified index or an integer, but got:None"
            )
        return current_device()
    if isinstance(device, str):
        device = _device_type(device)
    if isinstance(device, _device_type):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return current_device() if device.index is None else device.index
    if isinstance(device, bool) or not isinstance(device, int):
        raise ValueError(f"Expected a cuda device, but got: {device!r}")
    return device if device >= 0 else current_device()


def current_device() -> int:
    """The index of the currently selected device."""
    return int(_C._cuda_get_device())


def set_device(device: Any) -> None:
    """Selects the current device; a negative index does nothing (as in torch)."""
    if isinstance(device, int) and not isinstance(device, bool) and device < 0:
        return
    _C._cuda_set_device(_get_device_index(device))


def get_device_name(device: Any = None) -> str:
    """The name of a device (default: the current one)."""
    return _C._cuda_get_device_name(_get_device_index(device))


class _CudaDeviceProperties:
    """What get_device_properties reports (torch's attribute names); the simulated devices of the
    tests report capability (0, 0), one multiprocessor and their capacity as memory."""

    def __init__(self, name: str, major: int, minor: int, total_memory: int,
                 multi_processor_count: int) -> None:
        self.name = name
        self.major = major
        self.minor = minor
        self.total_memory = total_memory
        self.multi_processor_count = multi_processor_count

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device: Any = None) -> _CudaDeviceProperties:
    """Name, compute capability, memory and multiprocessor count of a device."""
    return _CudaDeviceProperties(**_C._cuda_device_properties(_get_device_index(device)))


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The (major, minor) compute capability of a device (default: the current one)."""
    p = get_device_properties(device)
    return (p.major, p.minor)


def synchronize(device: Any = None) -> None:
    """Waits for all work queued on every stream of a device (default: the current one)."""
    _C._cuda_synchronize(_get_device_index(device))


class device:  # noqa: N801 - torch's name
    """Context manager that selects a device and restores the previous one on exit."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else _get_device_index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            if self.prev_idx != self.idx:
                set_device(self.idx)
        return self

    def __exit__(self, *exc) -> bool:
        if self.idx >= 0 and self.prev_idx != self.idx:
            set_device(self.prev_idx)
        return False
