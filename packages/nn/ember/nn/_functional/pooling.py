"""Pooling: max/avg/adaptive pooling on core kernels; lp_pool over avg_pool; max_unpool as a
scatter."""

from __future__ import annotations

import math

import ember

from .common import _ntuple

# ---------------------------------------------------------------------------------------------
# pooling (core kernels)

avg_pool1d = ember.avg_pool1d
avg_pool2d = ember.avg_pool2d
avg_pool3d = ember.avg_pool3d
adaptive_avg_pool1d = ember.adaptive_avg_pool1d


def _output_size_with_default(output_size, input):
    """torch.nn.functional's rule for 2-d and 3-d adaptive pooling: None entries of output_size
    keep the input's size (the core's kernels take ints only)."""
    if not isinstance(output_size, (list, tuple)):
        return output_size
    sizes = tuple(input.shape)
    if len(sizes) <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    return [s if s is not None else d for s, d in zip(output_size, sizes[-len(output_size):])]


def _adaptive_avg(k):
    fn = getattr(ember, f"adaptive_avg_pool{k}d")

    def adaptive_avg_pool(input, output_size):
        return fn(input, _output_size_with_default(output_size, input))

    adaptive_avg_pool.__name__ = f"adaptive_avg_pool{k}d"
    return adaptive_avg_pool


adaptive_avg_pool2d, adaptive_avg_pool3d = (_adaptive_avg(k) for k in (2, 3))


def _max_pool(k):
    # the core's max_pool{k}d returns the values only (as torch's); the indices come from
    # max_pool{k}d_with_indices
    values = getattr(ember, f"max_pool{k}d")
    with_indices = getattr(ember, f"max_pool{k}d_with_indices")

    def max_pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 return_indices=False):
        fn = with_indices if return_indices else values
        return fn(input, kernel_size, stride, padding, dilation, ceil_mode)

    max_pool.__name__ = f"max_pool{k}d"
    return max_pool


max_pool1d, max_pool2d, max_pool3d = (_max_pool(k) for k in (1, 2, 3))


def _adaptive_max(k):
    fn = getattr(ember, f"adaptive_max_pool{k}d")

    def adaptive_max_pool(input, output_size, return_indices=False):
        if k > 1:
            output_size = _output_size_with_default(output_size, input)
        out, idx = fn(input, output_size)
        return (out, idx) if return_indices else out

    adaptive_max_pool.__name__ = f"adaptive_max_pool{k}d"
    return adaptive_max_pool


adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d = (_adaptive_max(k)
                                                                 for k in (1, 2, 3))


# ---------------------------------------------------------------------------------------------
# power-average pooling

def _lp_pool(k, input, norm_type, kernel_size, stride, ceil_mode):
    ks = _ntuple(kernel_size, k)
    pool = getattr(ember, f"avg_pool{k}d")
    out = pool(input.pow(norm_type), ks, stride if stride is not None else ks, 0, ceil_mode)
    return (out.sign() * ember.relu(out.abs())).mul(math.prod(ks)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


# ---------------------------------------------------------------------------------------------
# unpooling

def _max_unpool(k, input, indices, kernel_size, stride, padding, output_size):
    ks = _ntuple(kernel_size, k)
    st = _ntuple(stride if stride is not None else kernel_size, k)
    pd = _ntuple(padding, k)
    spatial = tuple(input.shape[-k:])
    if output_size is None:
        out_sp = tuple((spatial[i] - 1) * st[i] - 2 * pd[i] + ks[i] for i in range(k))
    else:
        out_sp = tuple(output_size)[-k:]
    lead = tuple(input.shape[:-k])
    planes = 1
    for s_ in lead:
        planes *= s_
    plane = 1
    for s_ in out_sp:
        plane *= s_
    idx = indices.reshape(planes, -1)
    if idx.numel() and (int(idx.max()) >= plane or int(idx.min()) < 0):
        raise RuntimeError(f"Found an invalid max index: {int(idx.max())} (output volumes are "
                           f"of size {'x'.join(str(s_) for s_ in out_sp)}")
    offs = (ember.arange(planes, dtype=ember.int64, device=idx.device) * plane).reshape(planes, 1)
    # a scatter of the values to their flat indices, written as the embedding backward kernel
    out = ember.embedding_dense_backward(input.reshape(-1, 1), (idx + offs).reshape(-1),
                                         planes * plane, -1, False)
    return out.reshape(lead + out_sp)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)
