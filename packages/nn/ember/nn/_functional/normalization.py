"""Normalisation: batch/layer norm on core kernels (eval-mode batch norm composed when a
gradient is wanted), group/instance/RMS/local-response norm and normalize composed."""

from __future__ import annotations

import ember
from ember._padding import pad

from .common import _ntuple, _size
from .pooling import avg_pool2d, avg_pool3d

# ---------------------------------------------------------------------------------------------
# normalisation

def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if training:
        size = input.numel() // input.shape[1] if input.dim() > 1 else 0
        if size == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {_size(input.shape)}")
    if input.numel() == 0:  # torch's shortcut: no statistics (the running ones untouched)
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    if not training and running_mean is not None and _wants_grad(input, weight, bias):
        return _batch_norm_eval(input, running_mean, running_var, weight, bias, eps)
    return ember.native_batch_norm(input, weight, bias, running_mean, running_var, training,
                                   0.0 if momentum is None else momentum, eps)[0]


def _wants_grad(*ts):
    return ember.is_grad_enabled() and any(t is not None and t.requires_grad for t in ts)


def _batch_norm_eval(input, running_mean, running_var, weight, bias, eps):
    """Eval-mode batch norm as one scale and shift per channel, composed from core ops, so that
    its gradient needs no saved running statistics (see autograd/_formulas_nn.py)."""
    scale = (running_var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    shp = (1, -1) + (1,) * (input.dim() - 2)
    return input * scale.reshape(shp) + shift.reshape(shp)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    ns = _ntuple(normalized_shape, 1)
    if tuple(input.shape[input.dim() - len(ns):]) != tuple(ns) or input.dim() < len(ns):
        raise RuntimeError(
            f"Given normalized_shape={list(ns)}, expected input with shape [*, "
            f"{', '.join(str(s) for s in ns)}], but got input of size{_size(input.shape)}")
    return ember.native_layer_norm(input, list(ns), weight, bias, eps)[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    ns = _ntuple(normalized_shape, 1)
    dims = tuple(range(input.dim() - len(ns), input.dim()))
    if eps is None:
        eps = {ember.float64: 2.220446049250313e-16, ember.float16: 0.0009765625,
               ember.bfloat16: 0.0078125}.get(input.dtype, 1.1920928955078125e-07)
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {_size(input.shape)} and "
                           f"num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, correction=0, keepdim=True)
    out = ((x - mean) * (var + eps).rsqrt()).reshape(tuple(input.shape))
    shp = (1, c) + (1,) * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shp)
    if bias is not None:
        out = out + bias.reshape(shp)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    n, c = input.shape[0], input.shape[1]
    x = input.reshape((1, n * c) + tuple(input.shape[2:]))
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    if not use_input_stats and _wants_grad(input, weight, bias):
        out = _batch_norm_eval(x, rm, rv, w, b, eps)
    else:
        out = ember.native_batch_norm(x, w, b, rm, rv, use_input_stats, momentum, eps)[0]
    if use_input_stats and running_mean is not None:
        with ember.no_grad():
            running_mean.copy_(rm.reshape(n, c).mean(0))
            running_var.copy_(rv.reshape(n, c).mean(0))
    return out.reshape(tuple(input.shape))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    sq = (input * input).unsqueeze(1)
    if input.dim() == 3:
        sq = pad(sq, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(sq, (size, 1), stride=1).squeeze(1)
    else:
        shp = tuple(input.shape)
        sq = sq.reshape(shp[0], 1, shp[1], shp[2], -1)
        sq = pad(sq, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(sq, (size, 1, 1), stride=1).squeeze(1).reshape(shp)
    return input / (div * alpha + k) ** beta


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    r = input / denom
    return r if out is None else out.copy_(r)
