"""The DataLoader's transport when ember-mp is installed (the seam of ember.utils.data._transport).

``_dataloader_transport(prefix)`` returns an object with ember-data's transport interface:

- ``out_array(shape, np_dtype)`` (worker): a NumPy view of a fresh named shared segment
  ``/dev/shm/<prefix>_<worker>_<n>``, so that ``default_collate`` stacks the samples straight into
  memory the main process maps (the one copy of a batch);
- ``dumps(obj)`` (worker): pickles the batch; a tensor that lies in such a segment travels as the
  segment's name and its geometry (the message holds one count of the segment, see
  shm_allocator.h), other large tensors are copied into a new segment, tensors already in shared
  memory travel as ember.multiprocessing sends them, and small ones (< 64 KiB) by value;
- ``loads(data)`` (main): maps each segment once, as an ember shared storage, and unlinks its
  name at once (``take=True``): the batch is the only thing that keeps the memory, and the
  storage is ``is_shared()``;
- ``cleanup()`` (main, or a worker whose main process died): removes the names that batches in
  flight left behind (they all start with the iterator's prefix).

Named segments rather than descriptors: no per-batch ``sendmsg`` with the descriptor-passing
server of ``multiprocessing.resource_sharer``, and no descriptor held per batch in the main
process (a program that keeps a whole epoch of batches would run out of them).
"""

from __future__ import annotations

import io
import os
import pickle

import numpy as np

import ember

from . import reductions

_INLINE_BYTES = 1 << 16
_SHM_DIR = "/dev/shm"


def _rebuild_inline(data: bytes, dtype: str, shape):
    t = ember.empty(shape, dtype=getattr(ember, dtype))
    if t.numel():
        memoryview(t.untyped_storage()).cast("B")[:] = data
    return t


def _rebuild_batch_tensor(name: str, nbytes: int, dtype: str, offset: int, shape, stride):
    # The first tensor of a message on a segment maps it and removes its name; the next ones get
    # the same storage (the core's per-process map of segments).
    s = ember.UntypedStorage._new_shared_filename_cpu(name, nbytes, take=True)
    return ember.empty(0, dtype=getattr(ember, dtype)).set_(s, offset, shape, stride)


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _dtype_name(t) -> str:
    return str(t.dtype).rpartition(".")[2]


class SharedTransport:
    """Batches in named shared segments, received as ember shared storages."""

    name = "ember-mp"

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.tag = "main"
        self._counter = 0
        self._segments: dict[str, tuple[int, int, object]] = {}  # name -> (start, end, storage)

    def __getstate__(self):  # spawned workers get the names, not this process's segments
        return {"prefix": self.prefix, "tag": self.tag, "_counter": 0}

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._segments = {}

    # -- worker side
    def _new_segment(self, nbytes: int):
        name = f"/{self.prefix}_{self.tag}_{self._counter}"
        self._counter += 1
        s = ember.UntypedStorage._new_using_filename_cpu(nbytes, name)
        start = s.data_ptr()
        self._segments[name] = (start, start + nbytes, s)
        return name, s

    def out_array(self, shape, np_dtype):
        np_dtype = np.dtype(np_dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
        if nbytes < _INLINE_BYTES:
            return None
        _, s = self._new_segment(nbytes)
        return np.frombuffer(memoryview(s), dtype=np_dtype).reshape(shape)

    def _find(self, ptr: int, nbytes: int):
        for name, (start, end, s) in reversed(self._segments.items()):
            if start <= ptr and ptr + nbytes <= end:
                return name, start, s
        return None

    def _reduce_tensor(self, t):
        if t.device.type != "cpu" or t.requires_grad or t.is_shared():
            return reductions.reduce_tensor(t)  # as ember.multiprocessing sends it
        esize = t.element_size()
        if t.numel() * esize < _INLINE_BYTES:
            c = t.contiguous()
            data = bytes(memoryview(c.untyped_storage()).cast("B")[
                c.storage_offset() * esize:(c.storage_offset() + c.numel()) * esize])
            return _rebuild_inline, (data, _dtype_name(t), tuple(t.shape))
        ptr = t.data_ptr()
        # the bytes the view spans (collated tensors have non-negative strides)
        extent = (1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()))) * esize
        found = self._find(ptr, extent)
        if found is None:
            name, s = self._new_segment(t.numel() * esize)
            offset, stride = 0, _contiguous_strides(t.shape)
            ember.empty(0, dtype=t.dtype).set_(s, 0, tuple(t.shape), stride).copy_(t)
        else:
            name, start, s = found
            offset, stride = (ptr - start) // esize, tuple(t.stride())
        if name not in self._sent:
            self._sent.add(name)
            s._shared_incref()  # the message's count, until the main process takes the name
        return _rebuild_batch_tensor, (name, s.nbytes(), _dtype_name(t), offset, tuple(t.shape),
                                       stride)

    def dumps(self, obj) -> bytes:
        buf = io.BytesIO()
        self._sent = set()
        try:
            _Pickler(buf, self).dump(obj)
        finally:
            # Segments the message names now hold its count; the others (memory a collate
            # function allocated and dropped) go with their last reference, here.
            self._segments.clear()
        return buf.getvalue()

    # -- main side
    def loads(self, data: bytes):
        return pickle.loads(data)

    def cleanup(self) -> None:
        try:
            names = os.listdir(_SHM_DIR)
        except OSError:
            return
        head = self.prefix + "_"
        for name in names:
            if name.startswith(head):
                try:
                    os.unlink(os.path.join(_SHM_DIR, name))
                except OSError:
                    pass


class _Pickler(reductions.ForkingPickler):
    def __init__(self, file, transport: SharedTransport) -> None:
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self.transport = transport

    def reducer_override(self, obj):
        if isinstance(obj, ember.Tensor):
            return self.transport._reduce_tensor(obj)
        return NotImplemented


def _dataloader_transport(prefix: str) -> SharedTransport:
    """The transport ember.utils.data's DataLoader uses for one iterator (see the module doc)."""
    return SharedTransport(prefix)
