"""torch.nn.modules.pixelshuffle's path (the classes live in ``flatten``)."""

from .flatten import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
