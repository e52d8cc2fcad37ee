"""Dropout: elementwise, per feature map (1d/2d/3d) and alpha dropout, as bernoulli masks."""

from __future__ import annotations

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


def _feature_dropout(input, p, training, inplace, spatial):
    _check_p(p)
    if not training or p == 0.0:
        return input
    batched = input.dim() == spatial + 2
    shape = tuple(input.shape[:2]) if batched else tuple(input.shape[:1])
    mshape = shape + (1,) * spatial
    if p == 1.0:
        out = input * 0.0
    else:
        mask = ember.empty(mshape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
        out = input * mask.div_(1 - p)
    return input.copy_(out) if inplace else out


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3)


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
