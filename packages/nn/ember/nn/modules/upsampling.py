"""torch.nn.modules.upsampling's path (the classes live in ``flatten``)."""

from .flatten import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
