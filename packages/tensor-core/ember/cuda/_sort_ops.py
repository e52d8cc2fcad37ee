"""Sorting, selection, searching, counting and scan ops on CUDA tensors: ``sort``/``argsort``,
``topk``, ``kthvalue``, ``median``/``nanmedian``, ``mode``, ``cummax``/``cummin``, ``quantile``/
``nanquantile``, ``unique``/``unique_consecutive``, ``searchsorted``/``bucketize``, ``histc``,
``histogram``, ``bincount``, ``cumsum``/``cumprod``; registered in ``_dispatch.OPS``.

Everything that orders values sorts the CPU kernels' *keys* (ops/sort.cpp): each element becomes
an unsigned integer whose order is the CPU's order of the values (NaN largest, -0.0 equal to
+0.0), and a stable sort of the keys is the CPU's sort, index order on ties included. Results
read the input back by index, so -0.0 and NaN payloads survive as on the CPU.

Where the CPU picks among equal values with an unstable algorithm (topk's partial sort,
kthvalue's quick select, mode's std::sort) the device takes the first index in stable order
(topk, kthvalue) or the last occurrence (mode): the values agree, the index may differ on ties.

An op on an empty input runs the CPU op on a host copy (no data to move) so that its shape rules,
fill values and errors are the CPU's. Output sizes that depend on the data (unique, bincount) and
checks of index values (searchsorted's sorter, bincount) synchronise with the device. Float scans
and weighted counts accumulate in the CPU's dtypes; on a GPU CuPy adds in another order (parallel
scans, atomics), so they may differ from the CPU in the last bit there.
"""

from __future__ import annotations

import numpy

from ember import _C
from ember.cuda._core_ops import _reduced_shape
from ember.cuda._ops import (
    _is_tensor,
    _meta,
    _np_dtype,
    _on_current_stream,
    _operand,
    _result,
    device_of,
    view,
    xp,
)

# ---- keys and helpers --------------------------------------------------------------------------

_UNSIGNED = {1: numpy.uint8, 2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}


def _keys(a):
    """Unsigned keys whose order is the CPU kernels' order of a's values (sort.cpp's Key<T>)."""
    mod = xp()
    kind = a.dtype.kind
    if kind == "b":
        return a.astype(numpy.uint8)
    if kind == "u":
        return a
    u = _UNSIGNED[a.dtype.itemsize]
    bits = mod.ascontiguousarray(a).view(u)
    sign = u(1 << (8 * a.dtype.itemsize - 1))
    if kind == "i":
        return bits ^ sign
    # floats: negatives flip every bit, the others set the sign bit; -0.0 -> +0.0; NaN largest
    key = mod.where((bits & sign) != 0, ~bits, bits | sign)
    key = mod.where(a == 0, sign, key)
    return mod.where(mod.isnan(a), u(numpy.iinfo(u).max), key)


def _nan_key(keys):
    """Where a key is the key of NaN (floats only)."""
    return keys == keys.dtype.type(numpy.iinfo(keys.dtype).max)


def _order(keys, axis: int):
    """The stable sort order of keys along axis."""
    mod = xp()
    if mod is numpy:
        return numpy.argsort(keys, axis=axis, kind="stable")
    return mod.argsort(keys, axis=axis)  # CuPy's sorts are always stable (and take no kind=)


def _running(a, axis: int, op):
    """The running `op` (maximum, minimum) along axis: log2(n) passes over shifted slices."""
    mod = xp()
    r = mod.moveaxis(a, axis, -1).copy()
    n, s = r.shape[-1], 1
    while s < n:
        r[..., s:] = op(r[..., s:], r[..., :-s])
        s *= 2
    return mod.moveaxis(r, -1, axis)


def _data(x):
    """The view of x, a 0-d tensor as one element."""
    a = view(x)
    return a.reshape(1) if x.dim() == 0 else a


def _dim(kwargs, x, default=-1) -> int:
    d = kwargs.get("dim", default)
    return d % max(x.dim(), 1)


def _along(a, dim: int, lo: int, hi: int):
    key = [slice(None)] * a.ndim
    key[dim] = slice(lo, hi)
    return a[tuple(key)]


def _host(a):
    if _is_tensor(a) and a.device.type != "cpu":
        return a.cpu()
    if isinstance(a, (list, tuple)):
        return type(a)(_host(b) for b in a)
    return a


def _to_device(r, device: int):
    if _is_tensor(r):
        return r.to(f"cuda:{device}")
    if isinstance(r, tuple):
        items = [_to_device(t, device) for t in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    return r


def _on_host(name: str, args, kwargs, device: int):
    """The CPU op on host copies (an empty input: nothing to compute), results moved back."""
    fn = getattr(_C, name)
    r = fn(*(_host(a) for a in args), **{k: _host(v) for k, v in kwargs.items()})
    return _to_device(r, device)


def _pair(meta, device: int, shape, dtype, values, indices):
    """(values, indices) as the CPU's named tuple type (that of `meta`)."""
    return type(meta)(_result(device, shape, dtype, values.reshape(shape)),
                      _result(device, shape, _C.int64, indices.reshape(shape)))


def _selected(name, x, kwargs, device, meta, idx, dim):
    """(values, indices) of one element per row along dim (idx: keepdims-shaped indices)."""
    mod = xp()
    keep = bool(kwargs.get("keepdim", False))
    shape = _reduced_shape(x, (dim,), keep) if x.dim() else ()
    a = _data(x)
    values = mod.take_along_axis(a, idx, axis=dim)
    return _pair(meta, device, shape, x.dtype, values, idx)


# ---- sort / argsort / topk / kthvalue ------------------------------------------------------------


def _sorted_order(x, dim: int, descending: bool):
    keys = _keys(_data(x))
    return _order(~keys if descending else keys, dim)


def _sort(name, args, kwargs):
    x = args[0]
    device = device_of(name, args)
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    meta = _meta(name, args, kwargs)  # the CPU's dim check; the result's type
    dim = _dim(kwargs, x)
    with _on_current_stream(device):
        order = _sorted_order(x, dim, bool(kwargs.get("descending", False)))
        if name == "argsort":
            return _result(device, tuple(x.shape), _C.int64, order.reshape(tuple(x.shape)))
        values = xp().take_along_axis(_data(x), order, axis=dim)
        return _pair(meta, device, tuple(x.shape), x.dtype, values, order)


def _k_checked(name, args, kwargs, low: int):
    """The CPU's checks that do not read the row length (on stand-ins, k clamped into their
    range), then the check of k against the real row length, with the CPU's message."""
    x = args[0]
    k = kwargs["k"]
    meta = _meta(name, args, {**kwargs, "k": min(max(k, low), 1)})
    dim = _dim(kwargs, x)
    n = x.shape[dim] if x.dim() else 1
    if not low <= k <= n:
        if name == "topk":
            raise RuntimeError("selected index k out of range")
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    return meta, dim, k


def _topk(name, args, kwargs):
    x = args[0]
    device = device_of(name, args)
    if x.numel() == 0 or (x.dim() == 0 and kwargs["k"] == 0):  # nothing to select
        return _on_host(name, args, kwargs, device)
    meta, dim, k = _k_checked(name, args, kwargs, 0)
    with _on_current_stream(device):
        # always sorted: the CPU's order for sorted=False is its selection algorithm's
        order = _along(_sorted_order(x, dim, bool(kwargs.get("largest", True))), dim, 0, k)
        values = xp().take_along_axis(_data(x), order, axis=dim)
        shape = tuple(x.shape[:dim]) + (k,) + tuple(x.shape[dim + 1:]) if x.dim() else ()
        return _pair(meta, device, shape, x.dtype, values, order)


def _kthvalue(name, args, kwargs):
    x = args[0]
    device = device_of(name, args)
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    meta, dim, k = _k_checked(name, args, kwargs, 1)
    with _on_current_stream(device):
        idx = _along(_sorted_order(x, dim, False), dim, k - 1, k)
        return _selected(name, x, kwargs, device, meta, idx, dim)


# ---- median / mode -----------------------------------------------------------------------------


def _median_index(a, dim: int, ignore_nan: bool):
    """The CPU's median index along dim (keepdims): the element of rank (n - nans - 1) // 2 in
    stable order, or the first NaN (median: any NaN; nanmedian: all NaN)."""
    mod = xp()
    keys = _keys(a)
    order = _order(keys, dim)
    n = a.shape[dim]
    if a.dtype.kind != "f":
        return _along(order, dim, (n - 1) // 2, (n - 1) // 2 + 1)
    nan = _nan_key(keys)
    nans = nan.sum(axis=dim, keepdims=True)
    rank = mod.clip((n - nans - 1) // 2, 0, n - 1)
    idx = mod.take_along_axis(order, rank, axis=dim)
    first_nan = mod.expand_dims(mod.argmax(nan, axis=dim), dim)
    use_nan = (nans == n) if ignore_nan else (nans > 0)
    return mod.where(use_nan, first_nan, idx)


def _median(name, args, kwargs):
    x = args[0]
    device = device_of(name, args)
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    meta = _meta(name, args, kwargs)
    ignore_nan = name == "nanmedian"
    with _on_current_stream(device):
        if "dim" not in kwargs:
            a = view(x).reshape(-1)
            idx = _median_index(a, 0, ignore_nan)
            return _result(device, (), x.dtype, a[idx].reshape(()))
        dim = _dim(kwargs, x)
        return _selected(name, x, kwargs, device, meta, _median_index(_data(x), dim, ignore_nan),
                         dim)


def _mode(name, args, kwargs):
    """The smallest of the most frequent values and its last occurrence (the CPU's index for
    rows of up to 16 elements, where its sort is an insertion sort; NaNs count singly)."""
    x = args[0]
    device = device_of(name, args)
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    meta = _meta(name, args, kwargs)
    dim = _dim(kwargs, x)
    mod = xp()
    with _on_current_stream(device):
        keys = mod.moveaxis(_keys(_data(x)), dim, -1)
        order = _order(keys, -1)
        sk = mod.take_along_axis(keys, order, axis=-1)
        n = sk.shape[-1]
        new = mod.ones(sk.shape, dtype=bool)  # a run of equal values starts here
        new[..., 1:] = sk[..., 1:] != sk[..., :-1]
        if x.dtype.is_floating_point:
            new |= _nan_key(sk)
        end = mod.ones(sk.shape, dtype=bool)
        end[..., :-1] = new[..., 1:]
        pos = mod.arange(n, dtype=numpy.int64)
        start = _running(mod.where(new, pos, 0), -1, mod.maximum)
        length = mod.where(end, pos - start + 1, 0)
        best = mod.expand_dims(mod.argmax(length, axis=-1), -1)  # the first longest run
        idx = mod.moveaxis(mod.take_along_axis(order, best, axis=-1), -1, dim)
        return _selected(name, x, kwargs, device, meta, idx, dim)


# ---- cummax / cummin ---------------------------------------------------------------------------


def _cumextreme(name, args, kwargs):
    x = args[0]
    device = device_of(name, args)
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    meta = _meta(name, args, kwargs)
    dim = _dim(kwargs, x)
    mod = xp()
    with _on_current_stream(device):
        a = _data(x)
        keys = _keys(a)
        if name == "cummax":  # NaN (the largest key) sticks; an equal value moves the index
            best = _running(keys, dim, mod.maximum)
        else:  # NaN sticks here too: it becomes the smallest key
            if x.dtype.is_floating_point:
                keys = mod.where(_nan_key(keys), keys.dtype.type(0), keys)
            best = _running(keys, dim, mod.minimum)
        shape = [1] * a.ndim
        shape[dim] = a.shape[dim]
        pos = mod.arange(a.shape[dim], dtype=numpy.int64).reshape(shape)
        idx = _running(mod.where(keys == best, pos, 0), dim, mod.maximum)
        values = mod.take_along_axis(a, idx, axis=dim)
        return _pair(meta, device, tuple(x.shape), x.dtype, values, idx)


# ---- quantile ----------------------------------------------------------------------------------


def _fma(a, b, c, mod=None):
    """a * b + c rounded once (arrays of one float dtype), as a fused multiply-add."""
    mod = mod or xp()
    if a.dtype != numpy.float64:  # the product is exact in float64
        f8 = numpy.float64
        return (a.astype(f8) * b.astype(f8) + c.astype(f8)).astype(a.dtype)
    # float64: the product's rounding error (Dekker's split), added back with the sum's (TwoSum)
    p = a * b

    def split(x):
        t = 134217729.0 * x
        hi = t - (t - x)
        return hi, x - hi

    ah, al = split(a)
    bh, bl = split(b)
    err = al * bl - (((p - ah * bh) - al * bh) - ah * bl)
    s = p + c
    z = s - p
    r = s + (((p - (s - z)) + (c - z)) + err)
    return mod.where(mod.isfinite(r), r, s)  # infinities and overflow: the plain sum


_FUSED: dict = {}


def _cpu_lerp_fuses(npd, upper: bool) -> bool:
    """Whether the CPU kernel's interpolation `a + w * (b - a)` (upper: `b - (b - a) * (1 - w)`)
    rounds once: compilers contract it into a fused multiply-add where the CPU has one. Found once
    per dtype by running the CPU kernel on pairs where the two roundings differ."""
    key = (npd.str, upper)
    if key not in _FUSED:
        pairs = numpy.sort(numpy.random.default_rng(0).standard_normal((512, 2)), axis=1)
        pairs = pairs.astype(npd)
        a, b = pairs[:, 0], pairs[:, 1]
        w = npd.type(0.7 if upper else 0.3)
        d = b - a
        with numpy.errstate(all="ignore"):
            plain = b - d * (1 - w) if upper else a + w * d
            fused = (_fma(-d, numpy.full_like(d, 1 - w), b, numpy) if upper
                     else _fma(numpy.full_like(d, w), d, a, numpy))
        cpu = _C.quantile(_C.from_numpy(pairs), float(w), 1).numpy()
        differ = plain != fused
        _FUSED[key] = bool(differ.any()) and bool((cpu[differ] == fused[differ]).all())
    return _FUSED[key]


def _quantile(name, args, kwargs):
    x = args[0]
    q = kwargs["q"]
    device = device_of(name, [x, q])
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    _meta(name, args, kwargs)  # dtypes, q's rank
    mod = xp()
    npd = _np_dtype(x.dtype)
    ignore_nan = name == "nanquantile"
    interp = kwargs.get("interpolation", "linear")
    dim, keep = kwargs.get("dim"), bool(kwargs.get("keepdim", False))
    with _on_current_stream(device):
        qa = _operand(q, x.dtype).reshape(-1)
        if _is_tensor(q) and bool(((qa < 0) | (qa > 1)).any()):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        a = _data(x)
        if dim is None:
            rows = a.reshape(1, -1)
            shape = (1,) * x.dim() if keep else ()
        else:
            d = dim % max(x.dim(), 1)
            rows = mod.moveaxis(a, d, -1).reshape(-1, a.shape[d])
            shape = _reduced_shape(x, (d,), keep) if x.dim() else ()
        n = rows.shape[-1]
        srt = mod.sort(rows, axis=-1)  # NaN last
        nan = mod.isnan(rows)
        m = n - nan.sum(axis=-1, keepdims=True)  # (rows, 1)
        all_nan = (m == 0) if ignore_nan else (m < n) | (m == 0)
        rank = qa[:, None, None] * (m - 1).astype(npd)  # (nq, rows, 1), in x's dtype
        below = mod.floor(rank).astype(numpy.int64)
        above = mod.ceil(rank).astype(numpy.int64)

        def at(i):
            i = mod.clip(i, 0, n - 1)
            return mod.take_along_axis(mod.broadcast_to(srt, i.shape[:1] + srt.shape), i, axis=-1)

        if interp == "lower":
            res = at(below)
        elif interp == "higher":
            res = at(above)
        elif interp == "nearest":
            res = at(mod.rint(rank).astype(numpy.int64))
        else:
            w = mod.full_like(rank, 0.5) if interp == "midpoint" else rank - below.astype(npd)
            lo, hi = at(below), at(above)
            d = hi - lo
            one = npd.type(1)
            low = _fma(w, d, lo) if _cpu_lerp_fuses(npd, False) else lo + w * d
            high = _fma(-d, one - w, hi) if _cpu_lerp_fuses(npd, True) else hi - d * (one - w)
            res = mod.where(mod.abs(w) < 0.5, low, high)
        res = mod.where(all_nan, npd.type(numpy.nan), res)[..., 0]  # (nq, rows)
        full = (qa.shape[0],) + tuple(shape) if _is_tensor(q) and q.dim() == 1 else tuple(shape)
        return _result(device, full, x.dtype, res.reshape(full))


# ---- unique ------------------------------------------------------------------------------------


def _unique(name, args, kwargs):
    x = args[0]
    device = device_of(name, args)
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    _meta(name, args, kwargs)  # the dim checks
    consecutive = name == "unique_consecutive"
    dim = kwargs.get("dim")
    mod = xp()
    with _on_current_stream(device):
        a = view(x)
        if dim is None:
            values, inverse, counts = _unique_flat(a.reshape(-1), consecutive)
            inverse = inverse.reshape(tuple(x.shape))
        else:
            d = dim % x.dim()
            moved = mod.ascontiguousarray(mod.moveaxis(a, d, 0))
            rows, inverse, counts = _unique_rows(moved.reshape(moved.shape[0], -1), consecutive)
            values = mod.moveaxis(rows.reshape((rows.shape[0],) + moved.shape[1:]), 0, d)
        out = [_result(device, values.shape, x.dtype, values)]
        if kwargs.get("return_inverse", False):
            out.append(_result(device, inverse.shape, _C.int64, inverse))
        if kwargs.get("return_counts", False):
            out.append(_result(device, counts.shape, _C.int64, counts))
    return out[0] if len(out) == 1 else tuple(out)


def _groups(new, order, n: int):
    """(first index of each group, inverse, counts) from the group starts in sorted order."""
    mod = xp()
    starts = mod.flatnonzero(new)  # the one synchronisation: the number of groups
    gid = mod.cumsum(new) - 1
    if order is None:
        inverse = gid
        firsts = starts
    else:
        inverse = mod.empty(n, dtype=numpy.int64)
        inverse[order] = gid
        firsts = order[starts]
    counts = mod.diff(mod.concatenate([starts, mod.asarray([n], dtype=starts.dtype)]))
    return firsts, inverse.astype(numpy.int64), counts.astype(numpy.int64)


def _unique_flat(a, consecutive: bool):
    """A NaN is a group of its own, as in the CPU kernel."""
    mod = xp()
    n = a.shape[0]
    keys = _keys(a)
    order = None if consecutive else _order(keys, 0)
    sk = keys if order is None else keys[order]
    new = mod.ones(n, dtype=bool)
    new[1:] = sk[1:] != sk[:-1]
    if a.dtype.kind == "f":
        new |= _nan_key(sk)
    firsts, inverse, counts = _groups(new, order, n)
    return a[firsts], inverse, counts


def _unique_rows(rows, consecutive: bool):
    """Rows compared lexicographically by their keys (equal keys: equal rows, NaN included)."""
    mod = xp()
    n = rows.shape[0]
    keys = _keys(rows)
    order = None
    if not consecutive:  # the row index as the last key makes any sort the stable one
        cols = [mod.arange(n, dtype=numpy.uint64)]
        cols += [keys[:, j].astype(numpy.uint64) for j in range(keys.shape[1] - 1, -1, -1)]
        order = mod.lexsort(mod.stack(cols))
        keys = keys[order]
    new = mod.ones(n, dtype=bool)
    new[1:] = (keys[1:] != keys[:-1]).any(axis=1)
    firsts, inverse, counts = _groups(new, order, n)
    return rows[firsts], inverse, counts


# ---- searchsorted / bucketize ------------------------------------------------------------------


def _shape_str(t) -> str:
    return str(list(t.shape))


def _searchsorted(name, args, kwargs):
    if name == "bucketize":
        values, seq = args
        sorter = None
    else:
        seq, values = args
        sorter = kwargs.get("sorter")
    device = device_of(name, [seq, values] + ([sorter] if sorter is not None else []))
    # the CPU kernel's checks, in its order
    mismatch = RuntimeError(
        "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
        "dimensions of boundaries tensor and input value tensor must match, but we got "
        f"boundaries tensor {_shape_str(seq)} and input value tensor {_shape_str(values)}")
    batched = seq.dim() > 1
    if seq.dim() == 0:
        raise mismatch
    if batched and (values.dim() != seq.dim() or tuple(seq.shape[:-1]) != tuple(values.shape[:-1])):
        raise mismatch
    if sorter is not None:
        if sorter.dtype != _C.int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {sorter.dtype._torch_name}")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, "
                               f"but got boundary tensor {_shape_str(seq)}and got sorter tensor "
                               f"{_shape_str(sorter)}")
    # the Bool refusal, on one-element stand-ins
    _C.searchsorted(_C.ones([1], dtype=seq.dtype), _C.ones([1], dtype=values.dtype))
    common = _C.promote_types(seq.dtype, values.dtype)
    out_dtype = _C.int32 if kwargs.get("out_int32", False) else _C.int64
    right = bool(kwargs.get("right", False))
    m = seq.shape[-1]
    mod = xp()
    with _on_current_stream(device):
        srt = None
        if sorter is not None:
            srt = view(sorter).reshape(-1, m) if sorter.numel() else None
            if srt is not None and bool(((srt < 0) | (srt >= m)).any()):
                raise RuntimeError("torch.searchsorted(): sorter index out of range")
        shape = tuple(values.shape)
        if values.numel() == 0 or m == 0:
            return _result(device, shape, out_dtype, 0)
        s = _operand(seq, common).reshape(-1, m)
        v = _operand(values, common).reshape(-1)
        total = v.shape[0]
        per_row = values.shape[-1] if values.dim() else 1
        row = mod.arange(total) // per_row if batched else mod.zeros(total, dtype=numpy.int64)
        # the CPU's binary search, every value at once: identical results, NaN included
        lo = mod.zeros(total, dtype=numpy.int64)
        hi = mod.full(total, m, dtype=numpy.int64)
        for _ in range(int(m).bit_length()):
            active = lo < hi
            mid = lo + (hi - lo) // 2
            at = mod.minimum(mid, m - 1)
            if srt is not None:
                at = srt[row, at]
            mv = s[row, at]
            go_right = ~(mv > v) if right else ~(mv >= v)
            lo = mod.where(active & go_right, mid + 1, lo)
            hi = mod.where(active & ~go_right, mid, hi)
        return _result(device, shape, out_dtype, lo.reshape(shape))


# ---- histc / histogram / bincount --------------------------------------------------------------


def _opmath(npd):
    return numpy.dtype(numpy.float64) if npd == numpy.float64 else numpy.dtype(numpy.float32)


def _linear_edges(lo: float, hi: float, nb: int, dtype):
    """The CPU's nb + 1 equal bin edges over [lo, hi] (lo < hi, finite), from the CPU op itself
    on no data: its rounding (fused or not) is the CPU's."""
    edges = _C.histogram(_C.empty([0], dtype=dtype), bins=nb, range=(lo, hi))[1]
    return xp().asarray(edges.numpy())


def _data_range(a) -> tuple[float, float]:
    mod = xp()
    return float(mod.min(a)), float(mod.max(a))


def _hist(a, w, edges, nb: int, linear: bool, search: bool):
    """The CPU's hist_kernel: counts (or weight sums) of a's elements in the nb bins of `edges`
    (an array in a's dtype); elements outside [edges[0], edges[-1]] and NaN are dropped."""
    mod = xp()
    npd = a.dtype
    c = _opmath(npd)
    v = a.reshape(-1).astype(c)
    e = edges.astype(c)
    lo, hi = e[0], e[-1]
    keep = (v >= lo) & (v <= hi)
    v = mod.where(keep, v, lo)
    if linear:
        def rt(t):  # rounded to the data's dtype after each step, as the CPU's Half arithmetic
            return t.astype(npd).astype(c) if npd != c else t

        pos = rt(rt(rt(v - lo) * c.type(nb)) / rt(hi - lo)).astype(numpy.int64)
        if search:  # histogram corrects the bin against the edges; histc does not
            pmin = mod.maximum(pos - 1, 0)
            pmax = mod.minimum(pos + 2, nb + 1)
            below = mod.zeros_like(pos)
            for k in range(3):
                at = pmin + k
                below += ((at < pmax) & (e[mod.minimum(at, nb)] <= v)).astype(numpy.int64)
            pos = pmin + below - 1
    else:
        pos = mod.searchsorted(e, v, side="right").astype(numpy.int64) - 1
    pos = mod.where(keep, mod.minimum(pos, nb - 1), nb)  # dropped elements: one extra bin
    if w is None:
        counts = mod.bincount(pos, minlength=nb + 1)
    else:
        weights = w.reshape(-1).astype(c).astype(numpy.float64)
        counts = mod.bincount(pos, weights=weights, minlength=nb + 1)
    return counts[:nb].astype(npd)


def _range_error(op: str, lo: float, hi: float):
    return RuntimeError(f"{op} range of [{lo:g}, {hi:g}] is not finite")


def _histc(name, args, kwargs):
    x = args[0]
    bins, lo, hi = kwargs.get("bins", 100), kwargs.get("min", 0.0), kwargs.get("max", 0.0)
    device = device_of(name, args)
    # dtype, bins and min <= max checks, on an empty stand-in (its own range is [0, 0])
    _C.histc(_C.empty([0], dtype=x.dtype), bins=bins, min=lo, max=hi)
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    with _on_current_stream(device):
        a = view(x)
        if lo == hi:
            lo, hi = _data_range(a)
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (numpy.isfinite(lo) and numpy.isfinite(hi)):
            raise _range_error("torch.histc:", lo, hi)
        edges = _linear_edges(lo, hi, bins, x.dtype)
        return _result(device, (bins,), x.dtype, _hist(a, None, edges, bins, True, False))


def _histogram(name, args, kwargs):
    x = args[0]
    bins, rng = kwargs.get("bins", 100), kwargs.get("range")
    weight, density = kwargs.get("weight"), bool(kwargs.get("density", False))
    device = device_of(name, [x, bins, weight])
    edges_t = bins if _is_tensor(bins) else None
    # the stand-in holds one zero where x has data: torch takes an int bins' range from the data
    # only for float32/float64 inputs
    empty = _C.zeros([1 if x.numel() and edges_t is None and rng is None else 0], dtype=x.dtype)
    stand_bins = _C.empty(list(bins.shape), dtype=bins.dtype) if edges_t is not None else bins

    def cpu_checks():  # the dtype, bins and range checks, on an empty stand-in
        # range= only when given: torch's form with a tensor of edges takes none
        _C.histogram(empty, bins=stand_bins, **({} if rng is None else {"range": rng}))

    if not x.dtype.is_floating_point:
        cpu_checks()
    if weight is not None:  # torch's histogramdd checks: the dtype, then the element count
        if weight.dtype != x.dtype:
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                f"should have the same dtype, but got input({x.dtype._cpp_name}), and weight("
                f"{weight.dtype._cpp_name})")
        if weight.numel() != x.numel():
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided it should have the same shape as "
                f"the input tensor excluding its innermost dimension, but got input with shape "
                f"[{x.numel()}, 1] and weight with shape [{weight.numel()}]")
    cpu_checks()
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    npd = _np_dtype(x.dtype)
    mod = xp()
    with _on_current_stream(device):
        a = view(x)
        if edges_t is not None:
            edges = mod.ascontiguousarray(view(edges_t))
            nb = edges_t.numel() - 1
        else:
            lo, hi = rng if rng is not None else _data_range(a)
            if not (numpy.isfinite(lo) and numpy.isfinite(hi)):
                raise RuntimeError(f"torch.histogramdd: dimension 0's range [{lo:g}, {hi:g}] is "
                                   "not finite")
            if lo == hi:  # NumPy's and PyTorch's rule for a degenerate range
                lo, hi = lo - 0.5, hi + 0.5
            nb = bins
            edges = _linear_edges(lo, hi, nb, x.dtype)
        w = view(weight) if weight is not None else None
        hist = (_hist(a, w, edges, nb, edges_t is None, True) if nb > 0
                else mod.zeros(0, dtype=npd))
        if density:
            c = _opmath(npd)
            hc = hist.astype(c)
            total = mod.cumsum(hc)[-1:]  # summed in order, as on the CPU
            e = edges.astype(c)
            hist = (hc / (total * (e[1:] - e[:-1]))).astype(npd)
        return (_result(device, (nb,), x.dtype, hist),
                _result(device, (nb + 1,), x.dtype, edges))


def _bincount(name, args, kwargs):
    x = args[0]
    weights, minlength = kwargs.get("weights"), kwargs.get("minlength", 0)
    device = device_of(name, [x, weights])
    if x.dtype.is_floating_point or x.dtype == _C.bool:
        _C.bincount(_C.empty([0], dtype=x.dtype))  # the CPU's refusal of the dtype
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.dim() != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != x.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if x.numel() == 0:
        return _on_host(name, args, kwargs, device)
    mod = xp()
    with _on_current_stream(device):
        a = view(x).astype(numpy.int64)
        lo, hi = (int(v) for v in mod.stack([a.min(), a.max()]).tolist())  # one synchronisation
        if lo < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        length = max(hi + 1, minlength)
        if weights is None:
            return _result(device, (length,), _C.int64, mod.bincount(a, minlength=length))
        dtype = _C.float32 if weights.dtype == _C.float32 else _C.float64
        w = view(weights).astype(numpy.float64)
        return _result(device, (length,), dtype, mod.bincount(a, weights=w, minlength=length))


# ---- cumsum / cumprod --------------------------------------------------------------------------


def _scan(name, args, kwargs):
    """Accumulated as the CPU does: float16 in float32, integers and bool in int64, the input
    first converted to the result's dtype."""
    x = args[0]
    device = device_of(name, args)
    meta = _meta(name, args, kwargs)  # the result dtype (dtype=, int -> int64), the dim check
    if x.numel() == 0:
        return _result(device, tuple(x.shape), meta.dtype, 0)
    npd = _np_dtype(meta.dtype)
    acc = _opmath(npd) if npd.kind == "f" else numpy.dtype(numpy.int64)
    mod = xp()
    with _on_current_stream(device):
        a = _data(x).astype(npd).astype(acc)
        fn = mod.cumprod if name == "cumprod" else mod.cumsum
        r = fn(a, axis=_dim(kwargs, x)).astype(npd)
        return _result(device, tuple(x.shape), meta.dtype, r.reshape(tuple(x.shape)))


SORT_OPS = {
    "sort": _sort,
    "argsort": _sort,
    "topk": _topk,
    "kthvalue": _kthvalue,
    "median": _median,
    "nanmedian": _median,
    "mode": _mode,
    "cummax": _cumextreme,
    "cummin": _cumextreme,
    "quantile": _quantile,
    "nanquantile": _quantile,
    "unique": _unique,
    "unique_consecutive": _unique,
    "searchsorted": _searchsorted,
    "bucketize": _searchsorted,
    "histc": _histc,
    "histogram": _histogram,
    "bincount": _bincount,
    "cumsum": _scan,
    "cumprod": _scan,
}
