"""Histograms over several dimensions (histogramdd)."""

from __future__ import annotations

import builtins
import collections
import math

from ember import _C
from ember._composite_ops._common import _dtype_name, _is_tensor

_histogramdd_result = collections.namedtuple("histogramdd", ["hist", "bin_edges"])


_HISTOGRAMDD_SIGNATURES = (
    "(Tensor input, int bins, tuple of floats range = None, Tensor weight = None, bool density = "
    "False), (Tensor input, tuple of ints bins, tuple of floats range = None, Tensor weight = "
    "None, bool density = False), (Tensor input, tuple of Tensors bins, tuple of floats range = "
    "None, Tensor weight = None, bool density = False)")


def _histogramdd_bins_kind(input, bins, range, weight, density):  # noqa: A002
    """"int", "ints" or "tensors", the overload torch's parser picks; a TypeError for none."""
    kind = None
    if isinstance(bins, int) and not isinstance(bins, bool):
        kind = "int"
    elif isinstance(bins, (list, tuple)):
        if bins and all(_is_tensor(b) for b in bins):
            kind = "tensors"
        elif all(isinstance(b, int) for b in bins):
            kind = "ints"
    ok = (kind is not None and _is_tensor(input)
          and (range is None or (isinstance(range, (list, tuple))
                                 and all(isinstance(v, (int, float)) for v in range)))
          and (weight is None or _is_tensor(weight)) and isinstance(density, bool))
    if not ok:
        got = ", ".join([type(input).__name__, type(bins).__name__])
        raise TypeError(f"histogramdd() received an invalid combination of arguments - got "
                        f"({got}), but expected one of: {_HISTOGRAMDD_SIGNATURES}")
    return kind


def _histogramdd_check_weight(input, weight):  # noqa: A002
    if weight is None:
        return
    if weight.dtype != input.dtype:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and "
                           f"weight tensor should have the same dtype, but got input("
                           f"{input.dtype._cpp_name}), and weight({weight.dtype._cpp_name})")
    if list(weight.shape or [1]) != list(input.shape[:-1]):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the "
                           "same shape as the input tensor excluding its innermost dimension, but "
                           f"got input with shape {list(input.shape)} and weight with shape "
                           f"{list(weight.shape)}")


def histogramdd(input, bins, range=None, weight=None, density=False):  # noqa: A002
    """The histogram of the points input[..., :] (the last dim holds each point's D coordinates)
    on a grid of bins: ``bins`` an int, one int per dim, or one tensor of edges per dim;
    ``range`` the (min, max) pairs flattened (default: the data's, widened by 0.5 each way when
    they are equal). Bins are closed on the left, the last one on both sides (NumPy's).
    The checks come in torch's order: the input's rank, the bins, the range, the edges in the
    input's dtype, the weight, the bin counts, then the dtype of the counting kernel."""
    kind = _histogramdd_bins_kind(input, bins, range, weight, density)
    if kind == "int":
        if input.dim() == 0:
            raise IndexError("Dimension specified as -1 but tensor has no dimensions")
        bins = [bins] * input.shape[-1]
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    D = input.shape[-1]
    points = input.reshape(math.prod(input.shape[:-1]), D)  # (D may be 0: no -1 to infer)
    floating = input.dtype.is_floating_point
    if kind == "tensors":
        if len(bins) != D:
            raise RuntimeError(f"torch.histogramdd: expected {D} sequences of bin edges for a {D}"
                               f"-dimensional histogram but got {len(bins)}")
        for d, b in enumerate(bins):
            if b.dtype != input.dtype:
                raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have "
                                   f"the same dtype, but got input with dtype "
                                   f"{input.dtype._cpp_name} and bins for dimension {d} with "
                                   f"dtype {b.dtype._cpp_name}")
            if b.dim() != 1:
                raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but "
                                   f"got {b.dim()} dimensions in the bins tensor for dimension {d}")
            if b.numel() == 0:
                raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, "
                                   f"but got 0 elements in the bins tensor for dimension {d}")
        _histogramdd_check_weight(input, weight)
        bin_edges = list(bins)
    else:
        if len(bins) != D:
            raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                               "dimension of the input.")
        if range is not None and len(range) != 2 * D:
            raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should "
                               f"have {2 * D} elements, but got {len(range)}")
        if range is None and points.shape[0] and input.dtype not in (_C.float32, _C.float64):
            raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                      f"'{_dtype_name(input.dtype)}'")
        ends = []
        for d in builtins.range(D):
            if range is not None:
                lo, hi = float(range[2 * d]), float(range[2 * d + 1])
            elif points.shape[0]:
                lo, hi = float(points[:, d].min()), float(points[:, d].max())
            else:
                lo, hi = 0.0, 1.0
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo:g}, {hi:g}] "
                                   "is not finite")
            if lo > hi:
                raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                                   f"{lo:g} max {hi:g} for dimension {d}")
            ends.append((lo - 0.5, hi + 0.5) if lo == hi else (lo, hi))
        bin_edges = []
        for (lo, hi), b in zip(ends, bins):
            steps = int(b) + 1
            if steps >= 2 and input.dtype == _C.bool:
                raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
            for v in (lo, hi)[:builtins.max(0, builtins.min(steps, 2))]:
                _C.full([], v, dtype=input.dtype)  # torch's linspace: an end the dtype can't hold
            bin_edges.append(_C.linspace(lo, hi, steps, dtype=input.dtype if floating
                                         else _C.float64, device=input.device))
        for d, e in enumerate(bin_edges):
            if e.numel() == 0:
                raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, "
                                   f"but got 0 elements in the bins tensor for dimension {d}")
        _histogramdd_check_weight(input, weight)
    for d, e in enumerate(bin_edges):
        if e.numel() - 1 <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {e.numel() - 1} "
                               f"for dimension {d}")
    if not floating:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{_dtype_name(input.dtype)}'")
    if D == 0:  # points without coordinates: torch's 0-d histogram, nothing counted
        hist = _C.zeros((), dtype=input.dtype, device=input.device)
        return _histogramdd_result(hist / hist if density else hist, ())
    edges, index, valid = [], None, None
    sizes = []
    for d, e in enumerate(bin_edges):
        column = points[:, d]
        n = e.shape[0] - 1
        i = _C.bucketize(column, e, right=True) - 1
        i = _C.where(column == e[-1], _C.full([], n - 1, dtype=i.dtype, device=i.device), i)
        ok = (i >= 0) & (i < n)
        index = i if index is None else index * n + i
        valid = ok if valid is None else valid & ok
        edges.append(e)
        sizes.append(n)
    total = 1
    for n in sizes:
        total *= n
    w = None if weight is None else weight.reshape(-1)[valid]
    hist = _C.bincount(index[valid], weights=w, minlength=total).to(input.dtype)
    hist = hist.reshape(tuple(sizes))
    if density:
        volume = None
        for d, e in enumerate(edges):
            shape = [1] * D
            shape[d] = sizes[d]
            width = (e[1:] - e[:-1]).reshape(shape)
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return _histogramdd_result(hist, tuple(edges))
