"""Shape ops that move elements on CUDA tensors: ``roll``, ``repeat_interleave``, ``diag_embed``
(so ``diag``/``diagflat``) and in-place ``tril_``/``triu_``, registered in ``_dispatch.OPS``. Checks
and messages are the CPU kernels' (csrc/ops/shape_ops.cpp), in their order.
"""

from __future__ import annotations

import operator

import numpy

from ember import _C
from ember.cuda import _ops as base
from ember.cuda._index_ops import _wrap_dim
from ember.cuda._ops import _on_current_stream, _result, device_of, view, xp


def _roll(name, args, kwargs):
    (x,) = args
    shifts, dims = list(kwargs["shifts"]), list(kwargs.get("dims") or ())
    device = device_of(name, args)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) != 1:
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
    if dims and len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    nd = x.dim()
    shape = tuple(x.shape)
    shift = [0] * max(nd, 1)
    for s, d in zip(shifts, dims):
        if nd == 0:  # (the core's and torch's IndexError: a 0-d tensor has no dim to roll)
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        d = _wrap_dim(d, nd)
        n = shape[d]
        if n > 0:
            shift[d] = (shift[d] + s) % n
    mod = xp()
    with _on_current_stream(device):
        a = view(x)
        if not dims:  # the flattened tensor, rolled
            value = mod.roll(a.reshape(-1), shifts[0]).reshape(shape)
        elif nd == 0 or x.numel() == 0:
            value = a
        else:
            value = mod.roll(a, tuple(shift), axis=tuple(range(nd)))
        return _result(device, shape, x.dtype, value)


def _counts(repeats):
    """The repeat counts of a repeats tensor, read on the host (the result's shape needs them),
    with the CPU's checks."""
    if repeats.dtype not in (_C.int64, _C.int32):
        raise NotImplementedError("\"repeat_interleave_cpu\" not implemented for "
                                  f"'{repeats.dtype._torch_name}'")
    counts = repeats.cpu().to(_C.int64).reshape(-1).tolist()
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    return counts


def _check_output_size(output_size, total: int):
    if output_size is not None and output_size >= 0 and output_size != total:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {total} but got "
                           f"{output_size}")


def _repeat_by_counts(a, counts, axis: int):
    """a with element i along `axis` repeated counts[i] times: the source position of each
    output position by a binary search over the running totals (one gather, any count)."""
    mod = xp()
    total = sum(counts)
    ends = mod.cumsum(mod.asarray(counts, dtype=numpy.int64))
    src = mod.searchsorted(ends, mod.arange(total, dtype=numpy.int64), side="right")
    return mod.take(a, src, axis=axis)


def _repeat_interleave(name, args, kwargs):
    (x,) = args
    repeats, dim, output_size = kwargs.get("repeats"), kwargs.get("dim"), kwargs.get("output_size")
    if output_size is not None:
        output_size = operator.index(output_size)
    if repeats is None:  # repeat_interleave(counts): each position i, counts[i] times
        device = device_of(name, args)
        if x.dim() != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        counts = _counts(x)
        _check_output_size(output_size, sum(counts))
        with _on_current_stream(device):
            positions = xp().arange(len(counts), dtype=base._np_dtype(x.dtype))
            value = _repeat_by_counts(positions, counts, 0)
            return _result(device, value.shape, x.dtype, value)
    is_tensor = base._is_tensor(repeats)
    if not is_tensor and (isinstance(repeats, bool) or not _is_int(repeats)):
        raise TypeError("repeat_interleave(): argument 'repeats' must be Tensor or int, not "
                        f"{type(repeats).__name__}")
    device = device_of(name, [x, repeats] if is_tensor else [x])
    shape = (x.numel(),) if dim is None else (tuple(x.shape) or (1,))
    d = 0 if dim is None else _wrap_dim(dim, x.dim())
    n = shape[d]
    if is_tensor:
        if repeats.dim() > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        counts = _counts(repeats)
        if repeats.dim() == 0:
            counts = counts * n
        if len(counts) != n:
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {len(counts)} and input.size({d}) = {n}")
    else:
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        counts = None
    total = sum(counts) if counts is not None else n * int(repeats)
    _check_output_size(output_size, total)
    out_shape = shape[:d] + (total,) + shape[d + 1:]
    with _on_current_stream(device):
        a = view(x).reshape(shape)
        if counts is None:
            value = xp().repeat(a, int(repeats), axis=d)
        else:
            value = _repeat_by_counts(a, counts, d)
        return _result(device, out_shape, x.dtype, value.reshape(out_shape))


def _is_int(v) -> bool:
    return isinstance(v, int) or isinstance(v, numpy.integer)


def _diag_embed(name, args, kwargs):
    (x,) = args
    offset, dim1, dim2 = kwargs.get("offset", 0), kwargs.get("dim1", -2), kwargs.get("dim2", -1)
    device = device_of(name, args)
    nd = x.dim() + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {d1}, {d2}")
    n = x.shape[-1] if x.dim() else 1
    m = n + abs(offset)
    rest = list(x.shape[:-1])
    shape = tuple(m if d in (d1, d2) else rest.pop(0) for d in range(nd))
    mod = xp()
    with _on_current_stream(device):
        out = _result(device, shape, x.dtype, 0)
        if n:
            planes = mod.moveaxis(view(out), (d1, d2), (-2, -1))  # (..., m, m), a view
            i = mod.arange(n)
            planes[..., i + max(-offset, 0), i + max(offset, 0)] = view(x).reshape(
                tuple(x.shape) or (1,))
        return out


def _tri_inplace(upper: bool):
    def run(name, args, kwargs):
        (x,) = args
        device = device_of(name, args)
        if x.dim() < 2:
            raise RuntimeError(f"{'triu' if upper else 'tril'}: input tensor must have at least 2 "
                               "dimensions")
        with _on_current_stream(device):
            a = view(x)
            a[...] = (xp().triu if upper else xp().tril)(a, kwargs.get("diagonal", 0))
        return x

    return run


SHAPE_OPS = {
    "roll": _roll,
    "repeat_interleave": _repeat_interleave,
    "diag_embed": _diag_embed,
    "tril_": _tri_inplace(False),
    "triu_": _tri_inplace(True),
}
