"""CUDA streams and events (torch.cuda.Stream / Event / stream() / current_stream).

As in PyTorch, streams come from a pool of 32 per device and priority, handed out round robin and
never destroyed: a destroyed stream's handle could be reused by a new stream, and blocks the
allocator caches per stream would then be shared by two streams that are not ordered.
"""

from __future__ import annotations

from typing import Any

from ember import _C
from ember.cuda._device import _get_device_index
from ember.cuda._device import device as _device_ctx

_POOL_SIZE = 32
_pools: dict[tuple[int, int], list[int]] = {}
_next: dict[tuple[int, int], int] = {}
_generation = 0  # bumped when tests swap the backend: older handles belong to the old one


def _reset_pools() -> None:
    global _generation
    _pools.clear()
    _next.clear()
    _generation += 1


def _pooled_stream(device: int, priority: int) -> int:
    key = (device, priority)
    pool = _pools.setdefault(key, [])
    i = _next.get(key, 0)
    _next[key] = (i + 1) % _POOL_SIZE
    if i >= len(pool):
        pool.append(int(_C._cuda_stream_create(device, priority)))
    return pool[i]


class Stream:
    """A CUDA stream: work queued on it runs in order, and concurrently with other streams.

    ``Stream(device=None, priority=0)`` takes a stream of the device's pool (lower priority
    numbers run first). ``cuda_stream`` is the cudaStream_t as an int (0: the default stream).
    """

    def __init__(self, device: Any = None, priority: int = 0, *, _handle: int | None = None):
        self.device_index = _get_device_index(device)
        self.priority = min(0, max(-1, int(priority)))  # CUDA knows two priorities: 0 and -1
        self.cuda_stream = (
            _pooled_stream(self.device_index, self.priority) if _handle is None else int(_handle)
        )

    @property
    def device(self):
        from ember._device import device

        return device("cuda", self.device_index)

    def query(self) -> bool:
        """True when all work queued on the stream has finished."""
        return bool(_C._cuda_stream_query(self.device_index, self.cuda_stream))

    def synchronize(self) -> None:
        """Waits for all work queued on the stream."""
        _C._cuda_stream_synchronize(self.device_index, self.cuda_stream)

    def wait_event(self, event: Event) -> None:
        """Work queued on this stream from now on waits for `event`."""
        event.wait(self)

    def wait_stream(self, stream: Stream) -> None:
        """Work queued on this stream from now on waits for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Records `event` (a new one by default) on this stream and returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    # torch.Stream's attributes (ember.Stream): the device type's number, the handle
    device_type = 1
    stream_id = property(lambda self: self.cuda_stream)

    def __enter__(self) -> Stream:
        """``with stream:`` queues the block's work on it (torch.Stream's context manager)."""
        ctx = StreamContext(self)
        self.__dict__.setdefault("_contexts", []).append(ctx)
        ctx.__enter__()
        return self

    def __exit__(self, *exc) -> bool:
        return self.__dict__["_contexts"].pop().__exit__(*exc)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stream):
            return NotImplemented
        return (self.device_index, self.cuda_stream) == (other.device_index, other.cuda_stream)

    def __hash__(self) -> int:
        return hash((self.device_index, self.cuda_stream))

    def __repr__(self) -> str:
        return (f"<ember.cuda.Stream device=cuda:{self.device_index} "
                f"cuda_stream={self.cuda_stream:#x}>")


class ExternalStream(Stream):
    """A stream created outside ember (a cudaStream_t as an int, from CuPy, PyTorch or a CUDA
    library), usable wherever an ember Stream is: ``with ember.cuda.stream(ExternalStream(p))``
    queues ember's work on it. ember neither owns nor destroys it: keep it alive while in use.
    """

    def __init__(self, stream_ptr: int, device: Any = None):
        super().__init__(device, _handle=int(stream_ptr))

    def __repr__(self) -> str:
        return (f"<ember.cuda.ExternalStream device=cuda:{self.device_index} "
                f"cuda_stream={self.cuda_stream:#x}>")


class Event:
    """A CUDA event: a point in a stream's work that other streams or the host can wait for.

    Created on first ``record`` (as in torch), on the recording stream's device.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, *, device: int | None = None) -> None:
        if interprocess:
            raise NotImplementedError("ember.cuda.Event: interprocess events are not supported")
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self._requested_device = device  # ember.Event("cuda:1"): its device before a record
        self._device: int | None = None
        self._handle: int | None = None

    def _ensure(self, device: int) -> int:
        if self._handle is None:
            self._handle = int(_C._cuda_event_create(device, self.enable_timing))
            self._device = device
            self._generation = _generation
        elif device != self._device:
            raise RuntimeError(
                f"Event device {self._device} does not match recording stream's device {device}."
            )
        return self._handle

    def record(self, stream: Stream | None = None) -> None:
        """Records the event on `stream` (default: the current stream)."""
        stream = current_stream() if stream is None else stream
        handle = self._ensure(stream.device_index)
        _C._cuda_event_record(stream.device_index, handle, stream.cuda_stream)

    def wait(self, stream: Stream | None = None) -> None:
        """Makes work queued on `stream` (default: the current stream) from now on wait for it."""
        stream = current_stream() if stream is None else stream
        if self._handle is not None:
            _C._cuda_stream_wait_event(stream.device_index, stream.cuda_stream, self._handle)

    def query(self) -> bool:
        """True when the work recorded before the event has finished (or it was never recorded)."""
        if self._handle is None:
            return True
        return bool(_C._cuda_event_query(self._device, self._handle))

    def synchronize(self) -> None:
        """Waits until the event has completed."""
        if self._handle is not None:
            _C._cuda_event_synchronize(self._device, self._handle)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and `end_event` (both recorded, with timing)."""
        if self._handle is None or end_event._handle is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return float(_C._cuda_event_elapsed_time(self._device, self._handle, end_event._handle))

    device_type = 1  # torch.Event's attributes (ember.Event)

    @property
    def device_index(self) -> int:
        if self._device is not None:
            return self._device
        return self._requested_device if self._requested_device is not None else 0

    @property
    def device(self):
        from ember._device import device

        return device("cuda", self.device_index)

    @property
    def event_id(self) -> int:
        return self.cuda_event

    @property
    def cuda_event(self) -> int:
        return 0 if self._handle is None else self._handle

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None and self._generation == _generation:
            try:
                _C._cuda_event_destroy(self._device, self._handle)
            except Exception:  # noqa: BLE001 - the backend may be gone (interpreter teardown)
                pass
            self._handle = None

    def __repr__(self) -> str:
        if self._handle is None:
            return "<ember.cuda.Event uninitialized>"
        return f"<ember.cuda.Event {self.cuda_event:#x}>"


def current_stream(device: Any = None) -> Stream:
    """The stream work is queued on for a device (default: the current one)."""
    idx = _get_device_index(device)
    return Stream(idx, _handle=int(_C._cuda_current_stream(idx)))


def default_stream(device: Any = None) -> Stream:
    """A device's default stream (handle 0)."""
    return Stream(_get_device_index(device), _handle=0)


def set_stream(stream: Stream | None) -> None:
    """Makes `stream` the current stream of its device (None: does nothing)."""
    if stream is not None:
        _C._cuda_set_stream(stream.device_index, stream.cuda_stream)


class StreamContext:
    """Context manager that makes a stream (and its device) current, and restores both on exit.
    ``StreamContext(None)`` does nothing."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self._dev: _device_ctx | None = None
        self._prev: Stream | None = None

    def __enter__(self):
        if self.stream is None:
            return self.stream
        self._dev = _device_ctx(self.stream.device_index)
        self._dev.__enter__()
        self._prev = current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc) -> bool:
        if self.stream is None:
            return False
        set_stream(self._prev)
        self._dev.__exit__(*exc)
        return False


def stream(stream: Stream | None) -> StreamContext:
    """``with ember.cuda.stream(s):`` queues the block's work on `s`."""
    return StreamContext(stream)


# torch.cuda.Stream and Event are torch.Stream and Event: registered as the generic classes (an
# ember.Stream("cuda") returns one of these)
def _register_generic() -> None:
    from ember import _stream

    _stream.Stream.register(Stream)
    _stream.Event.register(Event)


_register_generic()
