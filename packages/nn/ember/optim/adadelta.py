"""torch.optim.adadelta's module path: ``from ember.optim.adadelta import Adadelta``."""

from ._composed import Adadelta

__all__ = ["Adadelta"]
