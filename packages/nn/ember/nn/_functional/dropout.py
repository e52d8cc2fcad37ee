"""Dropout: elementwise, per feature map (1d/2d/3d) and alpha dropout, as bernoulli masks."""

from __future__ import annotations

import warnings

import ember

from .activation import _SELU_ALPHA, _SELU_SCALE

# ---------------------------------------------------------------------------------------------
# dropout

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        # the mask scaled first, then one product (torch's order): backward keeps only the
        # mask, where ``input * mask / (1 - p)`` also kept the unscaled product
        mask = ember.empty(tuple(input.shape), dtype=input.dtype,
                           device=input.device).bernoulli_(1 - p).div_(1 - p)
        out = input * mask
    return input.copy_(out) if inplace else out


def _feature_dropout(input, p, training, inplace, batched):
    """One mask value per (sample, channel), or per channel when not ``batched``."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    kept = 2 if batched else 1
    mshape = tuple(input.shape[:kept]) + (1,) * (input.dim() - kept)
    if p == 1.0:
        out = input * 0.0
    else:
        mask = ember.empty(mshape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
        out = input * mask.div_(1 - p)
    return input.copy_(out) if inplace else out


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
            "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, batched=input.dim() == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    # torch's rules, deprecated cases included: any input of 2 or more dimensions is taken as
    # (N, C, *), so a 2-D (N, C) input drops elements and a 3-D one is (N, C, L), not (C, H, W).
    _check_p(p)
    if input.dim() not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if input.dim() == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace, batched=True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.dim() not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and "
            "will result in an error in a future release. To retain the behavior and silence "
            "this warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, batched=input.dim() == 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    keep = ember.empty(tuple(input.shape), dtype=input.dtype,
                       device=input.device).bernoulli_(1 - p)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """alpha_dropout with one mask value per (sample, channel): whole feature maps are set to
    SELU's negative saturation value, keeping the mean and variance (torch's formula)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
        return input.copy_(out) if inplace else out
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    noise_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    keep = ember.empty(noise_shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out
