"""torch.optim.adamax's module path: ``from ember.optim.adamax import Adamax``."""

from ._composed import Adamax

__all__ = ["Adamax"]
