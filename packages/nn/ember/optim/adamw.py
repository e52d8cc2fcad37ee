"""torch.optim.adamw's module path: ``from ember.optim.adamw import AdamW``."""

from .adam import AdamW

__all__ = ["AdamW"]
