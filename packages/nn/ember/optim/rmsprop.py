"""torch.optim.rmsprop's module path: ``from ember.optim.rmsprop import RMSprop``."""

from ._composed import RMSprop

__all__ = ["RMSprop"]
