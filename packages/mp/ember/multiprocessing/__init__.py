"""ember.multiprocessing: a drop-in replacement for :mod:`multiprocessing` that shares tensors.

Everything :mod:`multiprocessing` exports is re-exported. Importing this module registers
reducers on ``multiprocessing.reduction.ForkingPickler`` for ``ember.Tensor`` and
``ember.UntypedStorage``: a tensor sent through a Queue, a Pipe, Process arguments or a Pool has
its storage moved to shared memory (in place, once) and arrives as a view of the same bytes, so
sending costs the same for 1 MB and 1 GB, and writes on either side are seen by the other.

Sharing strategies (as torch.multiprocessing):

- ``"file_descriptor"`` (default): an anonymous memfd segment; its descriptor travels with the
  message (``multiprocessing.reduction.DupFd``). Nothing is named, so nothing can leak; each
  received storage holds one descriptor (raise ``ulimit -n`` for very many).
- ``"file_system"``: a named segment ``/dev/shm/ember_<pid>_<n>``, freed when the last process
  that maps it lets go (a reference count in the segment counts mappings and messages in flight).
  A watchdog process per creating process unlinks the names left when that process exits, also
  when processes are killed with SIGKILL.

A segment received by the process that made it, or received twice, comes back as the same
storage. CUDA tensors are refused (CUDA IPC comes later). ``_dataloader_transport`` is the seam
ember-data's DataLoader uses to send batches as shared storages.
"""

import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from . import reductions
from .reductions import (
    get_all_sharing_strategies,
    get_sharing_strategy,
    init_reductions,
    set_sharing_strategy,
)

__all__ = list(multiprocessing.__all__) + [
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "set_sharing_strategy",
]

init_reductions()
del reductions


def _dataloader_transport(prefix: str):
    """ember.utils.data's seam: the DataLoader's transport for one iterator (_dataloader.py)."""
    from ._dataloader import SharedTransport  # imports ember.utils.data, which is calling

    return SharedTransport(prefix)
