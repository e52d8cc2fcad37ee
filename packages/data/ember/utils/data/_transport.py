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


def _rebuild_inline(data: bytes, np_dtype: str, shape, ember_dtype: str | None):
    arr = np.frombuffer(bytearray(data), dtype=np_dtype).reshape(shape)
    t = ember.from_numpy(arr)
    return t if ember_dtype is None else t.to(getattr(ember, ember_dtype))


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


class ShmTransport(PickleTransport):
    """Batch tensors in /dev/shm files, mapped by the main process without a copy."""

    name = "shm"

    def __init__(self, prefix: str) -> None:
        super().__init__(prefix)
        self._counter = 0  # a plain int: the transport is pickled to spawned workers
        # name -> (start address, end address, size); a dropped segment's address may be reused
        self._segments: dict[str, tuple[int, int, int]] = {}
        self._sent: set[str] = set()  # names the message being pickled refers to
        self.tag = "main"

    # -- worker side
    def _new_segment(self, nbytes: int):
        name = f"{self.prefix}_{self.tag}_{self._counter}"
        self._counter += 1
        size = max(nbytes, 1)
        path = os.path.join(_SHM_DIR, name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, size)
            # The worker writes every byte: fault the pages in with one call (about 2x faster
            # than one fault per page).
            mm = mmap.mmap(fd, size, flags=_POPULATE)
        finally:
            os.close(fd)
        start = np.frombuffer(mm, dtype=np.uint8).ctypes.data
        self._segments[name] = (start, start + size, size)
        return mm, name, size

    def out_array(self, shape, np_dtype):
        np_dtype = np.dtype(np_dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
        if nbytes < _INLINE_BYTES:
            return None
        mm, _, _ = self._new_segment(nbytes)
        return np.ndarray(shape, dtype=np_dtype, buffer=mm)

    def _find(self, ptr: int, nbytes: int):
        """The newest segment holding [ptr, ptr + nbytes), as (start, name, size), or None."""
        for name, (start, end, size) in reversed(self._segments.items()):
            if start <= ptr and ptr + nbytes <= end:
                return start, name, size
        return None

    def _reduce_tensor(self, t):
        if t.device.type != "cpu" or t.requires_grad:
            return NotImplemented
        np_dtype = _np_dtype(t.dtype)
        if np_dtype is None:  # bfloat16: by value, through float32
            arr = t.to(ember.float32).contiguous().numpy()
            return _rebuild_inline, (arr.tobytes(), "float32", arr.shape, "bfloat16")
        arr = t.numpy()
        if t.nbytes < _INLINE_BYTES or t.numel() == 0:
            arr = np.ascontiguousarray(arr)
            return _rebuild_inline, (arr.tobytes(), arr.dtype.str, arr.shape, None)
        found = self._find(arr.ctypes.data, arr.nbytes) if self._segments else None
        if found is None:
            mm, name, size = self._new_segment(arr.nbytes)
            dst = np.ndarray(arr.shape, dtype=arr.dtype, buffer=mm)
            np.copyto(dst, arr)
            self._sent.add(name)
            return _rebuild_shm, (name, size, 0, arr.shape, dst.strides, arr.dtype.str)
        start, name, size = found
        offset = arr.ctypes.data - start
        self._sent.add(name)
        return _rebuild_shm, (name, size, offset, arr.shape, arr.strides, arr.dtype.str)

    def dumps(self, obj) -> bytes:
        buf = io.BytesIO()
        self._sent = set()
        try:
            _ShmPickler(buf, self).dump(obj)
        finally:
            # The segments the message names now belong to the main process; the others (memory
            # a collate function allocated and dropped, or a batch that failed) are removed.
            for name in self._segments:
                if name not in self._sent:
                    _unlink_quietly(name)
            self._segments.clear()
        return buf.getvalue()

    # -- main side
    def loads(self, data: bytes):
        _local.maps = {}
        try:
            return pickle.loads(data)
        finally:
            _local.maps = None

    def cleanup(self) -> None:
        try:
            names = os.listdir(_SHM_DIR)
        except OSError:
            return
        head = self.prefix + "_"
        for name in names:
            if name.startswith(head):
                _unlink_quietly(name)


class _ShmPickler(pickle.Pickler):
    """Pickles ember tensors as references to shared-memory files (ShmTransport)."""

    def __init__(self, file, transport: ShmTransport) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.transport = transport

    def reducer_override(self, obj):
        if isinstance(obj, ember.Tensor):
            return self.transport._reduce_tensor(obj)
        return NotImplemented


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
