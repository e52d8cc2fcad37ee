"""How a batch crosses from a worker process to the main process: the one seam to replace.

A transport has four methods:

- ``out_array(shape, np_dtype)`` (worker side): memory for a collated batch, so that
  ``default_collate`` stacks the samples straight into memory the main process can map (the one
  copy of the batch that any loader makes);
- ``dumps(obj) -> bytes`` (worker side) and ``loads(bytes) -> obj`` (main side);
- ``cleanup()`` (main side, and a worker whose main process died): releases whatever a batch
  that was never received left behind.

``get_transport(prefix)`` picks one. When ember-mp is installed and offers
``ember.multiprocessing._dataloader_transport(prefix)``, that one is used, so tensors travel as
ember-mp's shared storages. Otherwise, the fallback:

- ``ShmTransport`` (Linux, where /dev/shm exists): a batch tensor lives in a POSIX shared-memory
  file ``/dev/shm/<prefix>_<worker>_<n>`` that the worker writes once; the pickled message
  carries only its name, shape, strides and dtype. The main process maps the file, unlinks it at
  once and wraps the mapping with ``ember.from_numpy`` (no copy); the memory goes back to the
  system when the last tensor viewing it is freed. Names not yet unlinked (a batch in flight when
  the loop stopped, or a worker killed mid-batch) all start with the iterator's prefix, and
  ``cleanup()`` removes them when the workers are shut down. Small tensors (< 64 KiB) travel
  inside the message instead: a file costs more than copying them.
- ``PickleTransport`` (elsewhere): the batch is pickled into the message, tensors by value.

``SegmentTransport`` holds what ShmTransport and ember-mp's transport share (the segments'
names and bookkeeping, finding the segment a collated tensor lies in, small tensors by value,
releasing what no message names, cleanup); each says only how it makes a segment and how a
tensor in one travels.
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
import threading

import numpy as np

import ember

_SHM_DIR = "/dev/shm"
_INLINE_BYTES = 1 << 16
_POPULATE = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)


def _np_dtype(dtype):
    """The NumPy dtype of an ember dtype, or None (bfloat16)."""
    name = str(dtype).rsplit(".", 1)[-1]
    if name == "bfloat16":
        return None
    return np.dtype("bool" if name == "bool" else name)


_local = threading.local()


def _rebuild_shm(name: str, size: int, offset: int, shape, strides, np_dtype: str):
    maps = getattr(_local, "maps", None)
    mm = None if maps is None else maps.get(name)
    if mm is None:
        path = os.path.join(_SHM_DIR, name)
        fd = os.open(path, os.O_RDWR)
        try:
            mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
            os.unlink(path)  # the mapping keeps the memory; the name is gone at once
        if maps is not None:
            maps[name] = mm
    arr = np.ndarray(shape, dtype=np_dtype, buffer=mm, offset=offset, strides=strides)
    return ember.from_numpy(arr)


def _unlink_quietly(name: str) -> None:
    try:
        os.unlink(os.path.join(_SHM_DIR, name))
    except OSError:
        pass


class PickleTransport:
    """Batches are pickled by value into the message (any platform)."""

    name = "pickle"

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    def out_array(self, shape, np_dtype):
        return None  # let the collate function allocate as usual

    def dumps(self, obj) -> bytes:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)

    def loads(self, data: bytes):
        return pickle.loads(data)

    def cleanup(self) -> None:
        pass


def _small_message(t) -> tuple:
    """t by value: its bytes travel inside the message."""
    c, esize = t.contiguous(), t.element_size()
    begin = c.storage_offset() * esize
    data = bytes(memoryview(c.untyped_storage()).cast("B")[begin:begin + c.numel() * esize])
    return _rebuild_small, (data, _dtype_name(t), tuple(t.shape))


def _rebuild_small(data: bytes, dtype: str, shape):
    t = ember.empty(shape, dtype=getattr(ember, dtype))
    if t.numel():
        memoryview(t.untyped_storage()).cast("B")[:] = data
    return t


def _dtype_name(t) -> str:
    return str(t.dtype).rpartition(".")[2]


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def segment_pickler(base):
    """A pickler class over `base` that hands ember tensors to its transport's _reduce_tensor."""

    class SegmentPickler(base):
        def __init__(self, file, transport) -> None:
            super().__init__(file, pickle.HIGHEST_PROTOCOL)
            self.transport = transport

        def reducer_override(self, obj):
            if isinstance(obj, ember.Tensor):
                return self.transport._reduce_tensor(obj)
            return NotImplemented

    return SegmentPickler


class SegmentTransport(PickleTransport):
    """Batch tensors in named shared-memory segments ``<prefix>_<worker>_<n>``: the bookkeeping
    that ShmTransport and ember-mp's transport share. A subclass says how a segment is made
    (``_open_segment``: a buffer, mapped in this process), how a tensor in one travels
    (``_send_segment``), how a tensor is copied into a new one (``_copy_into``), which tensors
    travel otherwise (``_send_other``) and what becomes of a segment no message names
    (``_unsent``). Tensors under 64 KiB travel inside the message."""

    pickler = segment_pickler(pickle.Pickler)

    def __init__(self, prefix: str) -> None:
        super().__init__(prefix)
        self.tag = "main"  # the worker's id, set in the worker
        self._counter = 0
        # name -> (start address, end address, buffer); a dropped segment's address may be reused
        self._segments: dict[str, tuple[int, int, object]] = {}
        self._sent: set[str] = set()  # names the message being pickled refers to

    def __getstate__(self):  # spawned workers get the names, not this process's segments
        return {"prefix": self.prefix, "tag": self.tag, "_counter": 0}

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._segments, self._sent = {}, set()

    # -- a subclass's part
    def _open_segment(self, name: str, nbytes: int):
        raise NotImplementedError

    def _send_segment(self, name: str, buffer, t, offset: int, stride, first: bool) -> tuple:
        """The reduction of tensor t lying in segment `name` at element offset/strides; first:
        the message's first tensor there."""
        raise NotImplementedError

    def _copy_into(self, buffer, t) -> None:
        raise NotImplementedError

    def _send_other(self, t):
        return None

    def _unsent(self, name: str, buffer) -> None:
        pass

    # -- worker side
    def _new_segment(self, nbytes: int):
        name = f"{self.prefix}_{self.tag}_{self._counter}"
        self._counter += 1
        size = max(nbytes, 1)
        buffer = self._open_segment(name, size)
        start = np.frombuffer(buffer, dtype=np.uint8, count=size).ctypes.data
        self._segments[name] = (start, start + size, buffer)
        return name, buffer

    def out_array(self, shape, np_dtype):
        np_dtype = np.dtype(np_dtype)
        count = int(np.prod(shape, dtype=np.int64))
        if count * np_dtype.itemsize < _INLINE_BYTES:
            return None
        _, buffer = self._new_segment(count * np_dtype.itemsize)
        return np.frombuffer(buffer, dtype=np_dtype, count=count).reshape(shape)

    def _find(self, ptr: int, nbytes: int):
        """The newest segment holding [ptr, ptr + nbytes), as (name, start, buffer), or None."""
        for name, (start, end, buffer) in reversed(self._segments.items()):
            if start <= ptr and ptr + nbytes <= end:
                return name, start, buffer
        return None

    def _reduce_tensor(self, t):
        other = self._send_other(t)
        if other is not None:
            return other
        esize = t.element_size()
        if t.numel() * esize < _INLINE_BYTES:
            return _small_message(t)
        ptr = t.data_ptr()
        # the bytes the view spans (collated tensors have non-negative strides)
        extent = (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))) * esize
        found = self._find(ptr, extent) if self._segments else None
        if found is None:
            name, buffer = self._new_segment(t.numel() * esize)
            offset, stride = 0, _contiguous_strides(t.shape)
            self._copy_into(buffer, t)
        else:
            name, start, buffer = found
            offset, stride = (ptr - start) // esize, tuple(t.stride())
        first = name not in self._sent
        self._sent.add(name)
        return self._send_segment(name, buffer, t, offset, stride, first)

    def dumps(self, obj) -> bytes:
        buf = io.BytesIO()
        self._sent = set()
        try:
            self.pickler(buf, self).dump(obj)
        finally:
            # The segments the message names now belong to the main process; the others (memory
            # a collate function allocated and dropped, or a batch that failed) are released.
            for name, (_, _, buffer) in self._segments.items():
                if name not in self._sent:
                    self._unsent(name, buffer)
            self._segments.clear()
        return buf.getvalue()

    # -- main side
    def cleanup(self) -> None:
        try:
            names = os.listdir(_SHM_DIR)
        except OSError:
            return
        head = self.prefix + "_"
        for name in names:
            if name.startswith(head):
                _unlink_quietly(name)


class ShmTransport(SegmentTransport):
    """Batch tensors in /dev/shm files, mapped by the main process without a copy."""

    name = "shm"

    def _open_segment(self, name: str, nbytes: int):
        fd = os.open(os.path.join(_SHM_DIR, name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, nbytes)
            # The worker writes every byte: fault the pages in with one call (about 2x faster
            # than one fault per page).
            return mmap.mmap(fd, nbytes, flags=_POPULATE)
        finally:
            os.close(fd)

    def _send_other(self, t):
        if t.device.type != "cpu" or t.requires_grad:
            return NotImplemented  # the tensor's own pickling
        if _np_dtype(t.dtype) is None:  # bfloat16: no NumPy dtype to map the file with
            return _small_message(t)
        return None

    def _copy_into(self, buffer, t) -> None:
        np_dtype = _np_dtype(t.dtype)
        dst = np.frombuffer(buffer, dtype=np_dtype, count=t.numel()).reshape(tuple(t.shape))
        np.copyto(dst, t.numpy())

    def _send_segment(self, name, buffer, t, offset, stride, first) -> tuple:
        esize = t.element_size()
        return _rebuild_shm, (name, len(buffer), offset * esize, tuple(t.shape),
                              tuple(s * esize for s in stride), _np_dtype(t.dtype).str)

    def _unsent(self, name: str, buffer) -> None:
        _unlink_quietly(name)

    def loads(self, data: bytes):
        _local.maps = {}  # each file of the message mapped once
        try:
            return pickle.loads(data)
        finally:
            _local.maps = None


_mp_factory = False  # not looked up yet


def _mp_transport_factory():
    global _mp_factory
    if _mp_factory is False:
        try:
            import ember.multiprocessing as emp  # optional: ember-mp
        except ImportError:
            emp = None
        _mp_factory = getattr(emp, "_dataloader_transport", None)
    return _mp_factory


def get_transport(prefix: str):
    """The transport for one DataLoader iterator; ``prefix`` names its shared-memory files."""
    factory = _mp_transport_factory()
    if factory is not None:
        return factory(prefix)
    if os.path.isdir(_SHM_DIR) and os.access(_SHM_DIR, os.W_OK):
        return ShmTransport(prefix)
    return PickleTransport(prefix)


# The transport of this process while it is a DataLoader worker (None in the main process).
_worker_transport = None


def out_array(shape, np_dtype):
    """Memory for a collated batch: a shared array in a worker, None (allocate as usual) else."""
    t = _worker_transport
    return None if t is None else t.out_array(shape, np_dtype)
