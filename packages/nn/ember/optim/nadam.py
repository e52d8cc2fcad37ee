"""torch.optim.nadam's module path: ``from ember.optim.nadam import NAdam``."""

from ._composed import NAdam

__all__ = ["NAdam"]
