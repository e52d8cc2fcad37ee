"""torch.nn.utils.memory_format: ember tensors have one memory format (contiguous, row-major),
so converting a convolution's weights to channels_last leaves them as they are."""

from __future__ import annotations

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def convert_conv2d_weight_memory_format(module, memory_format):
    """Returns ``module`` unchanged (no channels_last layout in ember)."""
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """Returns ``module`` unchanged (no channels_last_3d layout in ember)."""
    return module
