"""``ember.utils.data.distributed.DistributedSampler``, where torch has it."""

from ember.utils.data.sampler import DistributedSampler

__all__ = ["DistributedSampler"]
