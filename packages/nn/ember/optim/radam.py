"""torch.optim.radam's module path: ``from ember.optim.radam import RAdam``."""

from ._composed import RAdam

__all__ = ["RAdam"]
