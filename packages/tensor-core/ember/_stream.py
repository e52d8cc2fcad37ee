"""ember.Stream / ember.Event: torch.Stream and torch.Event, the device-generic stream and event.

On a CUDA device they are ember.cuda's (``ember.Stream("cuda")`` returns an
``ember.cuda.Stream``, registered as an ``ember.Stream``); with no device, the current
accelerator's, else the CPU's. The CPU runs work in order with the host, so a CPU stream is always
done and has no events (torch's "cpu backend doesn't support events.").
"""

from __future__ import annotations

import abc
from typing import Any

from ember._device import device as _device_type

# torch's c10::DeviceType numbers, what Stream.device_type / Event.device_type hold
_DEVICE_TYPES = {"cpu": 0, "cuda": 1}
_NO_EVENTS = "cpu backend doesn't support events."


def _resolve(device: Any, owner: str) -> _device_type:
    if device is None:
        from ember import accelerator

        return accelerator.current_accelerator() or _device_type("cpu")
    if isinstance(device, bool) or not isinstance(device, (int, str, _device_type)):
        raise TypeError(f"{owner}(): argument 'device' (position 1) must be ember.device, not "
                        f"{type(device).__name__}")
    # (an int is the accelerator's device of that index: an error where there is none)
    return device if isinstance(device, _device_type) else _device_type(device)


class Stream(metaclass=abc.ABCMeta):  # noqa: B024 - ABCMeta for register(): a concrete class
    """An in-order queue of work on a device (torch.Stream)."""

    def __new__(cls, device: Any = None, *, priority: int = 0):
        d = _resolve(device, "Stream")
        if d.type == "cuda":
            from ember.cuda.streams import Stream as CudaStream

            return CudaStream(d, priority)  # not a subclass: __init__ is not run again
        return super().__new__(cls)

    def __init__(self, device: Any = None, *, priority: int = 0) -> None:
        self.priority = 0

    device_type = _DEVICE_TYPES["cpu"]
    device_index = -1
    stream_id = 0

    @property
    def device(self) -> _device_type:
        return _device_type("cpu")

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: Event) -> None:
        return None  # the host already ran everything before the call

    def wait_stream(self, stream: Stream) -> None:
        raise RuntimeError(_NO_EVENTS)

    def record_event(self, event: Event | None = None) -> Event:
        raise RuntimeError(_NO_EVENTS)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return type(other) is Stream or NotImplemented

    def __hash__(self) -> int:
        return hash(("cpu", -1, 0))

    def __repr__(self) -> str:
        return "ember.Stream device_type=cpu, device_index=-1, stream_id=0"


class Event(metaclass=abc.ABCMeta):  # noqa: B024 - ABCMeta for register(): a concrete class
    """A marker in a stream's work (torch.Event)."""

    def __new__(cls, device: Any = None, *, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False):
        d = _resolve(device, "Event")
        if d.type == "cuda":
            from ember.cuda.streams import Event as CudaEvent

            return CudaEvent(enable_timing, blocking, interprocess, device=d.index)
        return super().__new__(cls)

    def __init__(self, device: Any = None, *, enable_timing: bool = False,
                 blocking: bool = False, interprocess: bool = False) -> None:
        self.enable_timing = bool(enable_timing)

    device_type = _DEVICE_TYPES["cpu"]
    device_index = -1
    event_id = 0

    @property
    def device(self) -> _device_type:
        return _device_type("cpu")

    def record(self, stream: Stream | None = None) -> None:
        raise RuntimeError(_NO_EVENTS)

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: Event) -> float:
        raise RuntimeError(_NO_EVENTS)

    def __repr__(self) -> str:
        return "ember.Event device_type=cpu, device_index=-1, event_flag=0, event_id=0"
