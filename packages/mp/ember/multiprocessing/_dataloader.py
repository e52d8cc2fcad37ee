"""The DataLoader's transport when ember-mp is installed (the seam of ember.utils.data._transport).

ember.utils.data's ``SegmentTransport`` does the bookkeeping (segment names
``<prefix>_<worker>_<n>``, finding the segment a collated tensor lies in, small tensors by value,
cleanup); this subclass makes each segment an ember shared storage:

- worker side: ``out_array`` hands ``default_collate`` a NumPy view of a fresh named storage, so
  the batch is stacked straight into memory the main process maps (the one copy of a batch); a
  tensor that lies in such a segment travels as the segment's name and its geometry, and the
  message holds one count of the segment (see shm_allocator.h); tensors already in shared
  memory, or that need autograd or a device, travel as ember.multiprocessing sends them;
- main side: the first tensor of a message on a segment maps it as an ember shared storage and
  unlinks its name at once (``take=True``): the batch is the only thing that keeps the memory,
  and the storage is ``is_shared()``.

Named segments rather than descriptors: no per-batch ``sendmsg`` with the descriptor-passing
server of ``multiprocessing.resource_sharer``, and no descriptor held per batch in the main
process (a program that keeps a whole epoch of batches would run out of them). This module is
imported only by ember.utils.data (through ``ember.multiprocessing._dataloader_transport``).
"""

from __future__ import annotations

import ember
from ember.utils.data._transport import SegmentTransport, _contiguous_strides, segment_pickler

from . import reductions


def _rebuild_batch_tensor(name: str, nbytes: int, dtype: str, offset: int, shape, stride):
    # The first tensor of a message on a segment maps it and removes its name; the next ones get
    # the same storage (the core's per-process map of segments).
    s = ember.UntypedStorage._new_shared_filename_cpu(name, nbytes, take=True)
    return ember.empty(0, dtype=getattr(ember, dtype)).set_(s, offset, shape, stride)


class SharedTransport(SegmentTransport):
    """Batches in named shared segments, received as ember shared storages."""

    name = "ember-mp"
    pickler = segment_pickler(reductions.ForkingPickler)

    def _open_segment(self, name: str, nbytes: int):
        return ember.UntypedStorage._new_using_filename_cpu(nbytes, "/" + name)

    def _send_other(self, t):
        if t.device.type != "cpu" or t.requires_grad or t.is_shared():
            return reductions.reduce_tensor(t)  # as ember.multiprocessing sends it
        return None

    def _copy_into(self, storage, t) -> None:
        shape = tuple(t.shape)
        ember.empty(0, dtype=t.dtype).set_(storage, 0, shape, _contiguous_strides(shape)).copy_(t)

    def _send_segment(self, name, storage, t, offset, stride, first) -> tuple:
        if first:
            storage._shared_incref()  # the message's count, until the main process takes the name
        dtype = str(t.dtype).rpartition(".")[2]
        return _rebuild_batch_tensor, ("/" + name, storage.nbytes(), dtype, offset, tuple(t.shape),
                                       stride)
    # A segment no message names (memory a collate function allocated and dropped) goes with its
    # last reference: the default _unsent.
