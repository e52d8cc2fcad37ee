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


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def _always_with_indices(fn, name):
    def with_indices(input, *args, **kwargs):
        kwargs["return_indices"] = True
        return fn(input, *args, **kwargs)

    with_indices.__name__ = name
    with_indices.__doc__ = f"``{fn.__name__}(..., return_indices=True)``: (values, indices)."
    return with_indices


max_pool1d_with_indices = _always_with_indices(max_pool1d, "max_pool1d_with_indices")
max_pool2d_with_indices = _always_with_indices(max_pool2d, "max_pool2d_with_indices")
max_pool3d_with_indices = _always_with_indices(max_pool3d, "max_pool3d_with_indices")
adaptive_max_pool1d_with_indices = _always_with_indices(adaptive_max_pool1d,
                                                        "adaptive_max_pool1d_with_indices")
adaptive_max_pool2d_with_indices = _always_with_indices(adaptive_max_pool2d,
                                                        "adaptive_max_pool2d_with_indices")
adaptive_max_pool3d_with_indices = _always_with_indices(adaptive_max_pool3d,
                                                        "adaptive_max_pool3d_with_indices")


# ---------------------------------------------------------------------------------------------
# fractional max pooling (Graham 2014): pseudo-random window starts, one draw per plane

def _fractional_starts(samples, input_size, output_size, pool_size):
    """torch's generate_intervals for each plane: ``samples`` (N, C) in [0, 1), computed in the
    input's dtype as torch does, so the same samples give the same windows. -> (N, C, out)."""
    n, c = samples.shape
    if output_size == 1:
        return ember.full((n, c, 1), input_size - pool_size, dtype=ember.int64,
                          device=samples.device)
    alpha = ember.tensor(input_size - pool_size, dtype=samples.dtype) / (output_size - 1)
    alpha = alpha.to(samples.device)
    i = ember.arange(output_size - 1, dtype=samples.dtype, device=samples.device)
    s = samples.unsqueeze(-1)
    starts = ((i + s) * alpha).to(ember.int64) - (s * alpha).to(ember.int64)
    last = ember.full((n, c, 1), input_size - pool_size, dtype=ember.int64,
                      device=samples.device)
    return ember.cat([starts, last], dim=-1)


def _fractional_max_pool(k, input, kernel_size, output_size, output_ratio, return_indices,
                         _random_samples):
    name = f"fractional_max_pool{k}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         "output_ratio")
    unbatched = input.dim() == k + 1
    if input.dim() not in (k + 1, k + 2):
        raise RuntimeError(f"{name}(): Expected {k + 1}D or {k + 2}D tensor, but got "
                           f"{input.dim()}D")
    x = input.unsqueeze(0) if unbatched else input
    ks = _ntuple(kernel_size, k)
    spatial = tuple(x.shape[-k:])
    if output_size is None:
        ratio = _ntuple(output_ratio, k)
        output_size = tuple(int(spatial[d] * ratio[d]) for d in range(k))
    out = _ntuple(output_size, k)
    for d in range(k):
        if out[d] + ks[d] - 1 > spatial[d]:
            raise RuntimeError(f"{name}(): pool size {ks[d]} too large relative to output "
                               f"size {out[d]} and input size {spatial[d]}")
    n, c = x.shape[0], x.shape[1]
    if _random_samples is None:
        _random_samples = ember.rand(n, c, k, dtype=x.dtype, device=x.device)
    elif unbatched and _random_samples.dim() == 2:
        _random_samples = _random_samples.unsqueeze(0)
    # torch's sample order: 2-d (width, height), 3-d (time, height, width)
    order = (1, 0) if k == 2 else tuple(range(k))
    starts = [_fractional_starts(_random_samples[:, :, order[d]], spatial[d], out[d], ks[d])
              for d in range(k)]
    # flat index into each plane of every window element: (N, C, *out, *ks)
    strides = [math.prod(spatial[d + 1:]) for d in range(k)]
    total = k + k
    index = None
    for d in range(k):
        shape_o = [n, c] + [1] * total
        shape_o[2 + d] = out[d]
        offs = ember.arange(ks[d], device=x.device).reshape([1] * (2 + k + d) + [ks[d]]
                                                             + [1] * (k - d - 1))
        term = (starts[d].reshape(shape_o) + offs) * strides[d]
        index = term if index is None else index + term
    index = index.expand(n, c, *out, *ks).reshape(n, c, -1)
    window = math.prod(ks)
    values = x.reshape(n, c, -1).gather(2, index).reshape(n, c, *out, window)
    result, arg = values.max(dim=-1)
    if unbatched:
        result = result.squeeze(0)
    if not return_indices:
        return result
    indices = index.reshape(n, c, *out, window).gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    return result, (indices.squeeze(0) if unbatched else indices)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)
