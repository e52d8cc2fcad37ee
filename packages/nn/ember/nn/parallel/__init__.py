"""``ember.nn.parallel``: data-parallel training across processes (``DistributedDataParallel``,
over ``ember.distributed``, which ember-mp installs), and ``DataParallel`` (one device)."""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]
