"""torch.nn.modules.fold's path (the classes live in ``flatten``)."""

from .flatten import Fold, Unfold

__all__ = ["Fold", "Unfold"]
