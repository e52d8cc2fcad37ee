"""torch.nn.modules.channelshuffle's path (the classes live in ``extra``)."""

from .extra import ChannelShuffle

__all__ = ["ChannelShuffle"]
