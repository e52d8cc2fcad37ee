"""``ember.nn.parallel``: data-parallel training across processes (``DistributedDataParallel``,
over ``ember.distributed``, which ember-mp installs)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
