"""torch.optim.adagrad's module path: ``from ember.optim.adagrad import Adagrad``."""

from ._composed import Adagrad

__all__ = ["Adagrad"]
