"""Ops driven by index tensors on CUDA tensors: advanced indexing (``x[idx]``, ``x[idx] = v``,
``index_put_``), ``index_select``, ``gather``, the scatter family, ``index_add``/``index_fill``,
``masked_fill``/``masked_select`` and ``nonzero``, registered in ``_dispatch.OPS``.

Index tensors may live on the CPU (as in PyTorch) and are moved to the device. Every index is
checked against its dimension before anything is written, with the CPU kernels' messages: CuPy
does not check bounds, so an unchecked index would read or write the wrong element silently. The
check costs one synchronisation, where PyTorch raises a device-side assertion instead.
"""

from __future__ import annotations

import warnings

import numpy

from ember import _C
from ember._checks import scalar_fits
from ember._shape import _broadcast_with_core_message
from ember.cuda import _ops as base
from ember.cuda._ops import (
    _check_fill_range,
    _fill_value,
    _on_current_stream,
    _result,
    _scalar_array,
    _scatter_add,
    device_of,
    view,
    xp,
)

_INT_INDEX = ("int64", "int32", "int16", "int8", "uint8")


def _device_array(t, device: int):
    """The array of an index tensor, moved to the device when it is on the CPU."""
    if t.device.type == "cpu":
        t = t.to(f"cuda:{device}")
    return view(t)


def _first_bad(idx, size: int, negative: bool = True):
    """The first index outside [-size, size) ([0, size) without `negative`), or None."""
    if idx.size == 0:
        return None
    bad = ((idx < -size) if negative else (idx < 0)) | (idx >= size)
    if not bool(bad.any()):
        return None
    return int(idx.reshape(-1)[int(xp().argmax(bad.reshape(-1)))])


def _checked(idx, size: int, message, negative: bool = True):
    bad = _first_bad(idx, size, negative)
    if bad is not None:
        raise message(bad)
    return idx


# ---- advanced indexing ---------------------------------------------------------------------


def _index_key(target, indices, device: int):
    """The NumPy/CuPy key of an index list (None: the dim left whole; a mask covers its dims)."""
    key, dim, nth = [], 0, 0  # nth: the position among the index tensors (the CPU's message)
    for t in indices:
        if t is None:
            key.append(slice(None))
            dim += 1
            continue
        if not base._is_tensor(t):
            t = _C.tensor(t)
        if t.dtype.name not in _INT_INDEX + ("bool",):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        a = _device_array(t, device)
        if t.dtype in (_C.bool, _C.uint8):
            if dim + t.dim() > len(target.shape):
                raise IndexError(f"too many indices for tensor of dimension {len(target.shape)}")
            for j in range(t.dim()):
                if t.shape[j] != target.shape[dim + j]:
                    raise IndexError(
                        f"The shape of the mask {list(t.shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {list(target.shape)} at index {dim + j}")
            key.append(a.astype(bool))
            dim += t.dim()
            nth += t.dim()
            continue
        size = target.shape[dim]
        key.append(_checked(a.astype(numpy.int64), size, lambda v, k=nth, size=size: IndexError(
            f"index {v} is out of bounds for dimension {k} with size {size}")))
        dim += 1
        nth += 1
    return tuple(key)


def _indexed_device(self, indices) -> int:
    """The device of an advanced-indexing call: self's; index tensors may be on it or on the CPU
    (torch's rule and message)."""
    device = self.get_device()
    for t in indices:
        if base._is_tensor(t) and t.get_device() not in (-1, device):
            where = "cpu" if device < 0 else f"cuda:{device}"
            raise RuntimeError("indices should be either on cpu or on the same device as the "
                               f"indexed tensor ({where})")
    return device


def _index(name, args, kwargs):
    self, indices = args
    device = _indexed_device(self, indices)
    with _on_current_stream(device):
        a = view(self)
        value = a[_index_key(a, indices, device)]
        return _result(device, value.shape, self.dtype, value)


def _index_put_(name, args, kwargs):
    self, indices, values = args
    _indexed_device(self, indices)
    device = device_of(name, [self] + ([values] if base._is_tensor(values) else []))
    if base._is_tensor(values) and values.dtype != self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{self.dtype._torch_name} for the destination "
                           f"and {values.dtype._torch_name} for the source.")
    mod = xp()
    with _on_current_stream(device):
        a = view(self)
        key = _index_key(a, list(indices), device)
        v = base._operand(values, self.dtype)
        if kwargs.get("accumulate", False):
            positions = mod.arange(a.size).reshape(a.shape)[key]
            flat = mod.ascontiguousarray(a).reshape(-1)
            values = mod.broadcast_to(v, positions.shape).reshape(-1)
            _scatter_add(flat, positions.reshape(-1), values)
            a[...] = flat.reshape(a.shape)
        else:
            a[key] = v
    return self


# ---- dim-wise gathers and scatters -----------------------------------------------------------


def _wrap_dim(dim: int, ndim: int) -> int:
    """dim in [-n, n) (a 0-d tensor counts as 1-d), with the CPU's error."""
    n = max(ndim, 1)
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _shape1(t) -> tuple:
    """A tensor's shape, 0-d read as 1-d (the CPU kernels' as_1d)."""
    return tuple(t.shape) or (1,)


def _open_key(idx, dim: int):
    """The NumPy/CuPy key that picks a[..., idx[...], ...] along `dim` at each element's own
    coordinates elsewhere (gather's / scatter's addressing)."""
    mod = xp()
    nd = idx.ndim
    return tuple(idx if d == dim else
                 mod.arange(idx.shape[d]).reshape((1,) * d + (-1,) + (1,) * (nd - d - 1))
                 for d in range(nd))


def _gather_sizes(self, dim: int, index, src=None, scatter: bool = False):
    """The CPU's shape checks of gather (scatter=False) and the scatter family."""
    if index.numel() == 0:
        return
    nd = max(index.dim(), 1)
    if max(self.dim(), 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           f"{'self' if scatter else 'input'} tensor")
    if src is not None and max(src.dim(), 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    s1, i1 = _shape1(self), _shape1(index)
    r1 = _shape1(src) if src is not None else None
    for d in range(nd):
        ok = d == dim or i1[d] <= s1[d]
        if scatter:
            ok = ok and (r1 is None or i1[d] <= r1[d])
            if not ok:
                extra = (f" and to be no larger size than src {list(src.shape)}"
                         if src is not None else "")
                raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                                   f"{list(self.shape)} apart from dimension {dim}{extra}")
        elif not ok:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(self.shape)} apart from dimension {dim}")


def _dim_index(index, size: int, dim: int, device: int, negative: bool = False,
               op: str | None = None):
    """An index tensor (0-d read as 1-d) as an int64 array on the device, checked against `size`
    with the gather/scatter kernels' message (RuntimeError), or with `op` index_add's
    (IndexError, as torch's)."""
    def error(v):
        message = f"index {v} is out of bounds for dimension {dim} with size {size}"
        return RuntimeError(message) if op is None else IndexError(f"{op}(): {message}")
    return _checked(_device_array(index, device).astype(numpy.int64).reshape(_shape1(index)),
                    size, error, negative)


def _index_select(name, args, kwargs):
    self, dim, index = args
    # a CPU index may serve a CUDA tensor; a CUDA index, not a CPU one
    device = device_of(name, [self] if self.get_device() >= 0 else [self, index])
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    d = _wrap_dim(dim, self.dim())
    with _on_current_stream(device):
        idx = _checked(_device_array(index, device).astype(numpy.int64).reshape(-1),
                       self.shape[d] if self.dim() else 1,
                       lambda v: IndexError("index out of range in self"), negative=False)
        a = view(self)
        value = xp().take(a.reshape(1) if self.dim() == 0 else a, idx, axis=d)
        shape = tuple(value.shape) if self.dim() else ((1,) if index.dim() else ())
        return _result(device, shape, self.dtype, value.reshape(shape))


def _gather(name, args, kwargs):
    self, dim, index = args
    device = device_of(name, [self, index])
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    d = _wrap_dim(dim, self.dim())
    _gather_sizes(self, d, index)
    if index.numel() == 0:
        return base.empty(tuple(index.shape), self.dtype, device)
    with _on_current_stream(device):
        a = view(self).reshape(_shape1(self))
        idx = _dim_index(index, a.shape[d], d, device)
        value = a[_open_key(idx, d)]
        return _result(device, tuple(index.shape), self.dtype, value.reshape(tuple(index.shape)))


# scatter_reduce's reductions: the ufunc that folds one value in, and the starting value of an
# element that include_self=False leaves out (None: the dtype's lowest / highest).
_REDUCE = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def _reduce_identity(reduce: str, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    is_max = reduce == "amax"
    if dtype == numpy.bool_:
        return not is_max
    if dtype.kind == "f":
        return -numpy.inf if is_max else numpy.inf
    info = numpy.iinfo(dtype)
    return info.min if is_max else info.max


def _scatter_checks(op: str, self, dim: int, index, src):
    """scatter_'s checks in the CPU's order; the wrapped dim."""
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    if base._is_tensor(src) and src.dtype != self.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    d = _wrap_dim(dim, self.dim())
    _gather_sizes(self, d, index, src if base._is_tensor(src) else None, scatter=True)
    return d


def _scatter_into(target, d: int, index, src, reduce, device: int, include_self: bool = True):
    """target (written in place) at index along d: src's values (a tensor or a number), set
    (reduce None) or folded in with a scatter_reduce reduction; index checked first."""
    if index.numel() == 0:
        return target
    mod = xp()
    with _on_current_stream(device):
        a = view(target).reshape(_shape1(target))
        idx = _dim_index(index, a.shape[d], d, device)
        if base._is_tensor(src):
            s = _device_array(src, device).reshape(_shape1(src))
            s = s[tuple(slice(0, n) for n in idx.shape)]
        else:
            _check_fill_range(src, target.dtype)
            s = mod.full(idx.shape, _fill_value(src, a.dtype), dtype=a.dtype)
        if reduce is None:
            a[_open_key(idx, d)] = s
            return target
        flat = mod.ascontiguousarray(a).reshape(-1)
        pos = _flat_positions(a.shape, d, idx).reshape(-1)
        if not include_self:
            flat[pos] = _reduce_identity(reduce, a.dtype)
        base._scatter_reduce(flat, pos, s.reshape(-1), _REDUCE[reduce])
        if reduce == "mean":
            count = mod.bincount(pos, minlength=flat.size) + int(include_self)
            count = mod.maximum(count, 1)
            if a.dtype.kind in "iu":  # the CPU rounds toward -inf
                flat[...] = mod.floor_divide(flat.astype(numpy.int64), count)
            else:
                math_dtype = numpy.float32 if a.dtype == numpy.float16 else a.dtype
                flat[...] = flat.astype(math_dtype) / count.astype(math_dtype)
        a[...] = flat.reshape(a.shape)
    return target


def _flat_positions(shape, dim: int, idx):
    """Flat offsets into a C-contiguous array of `shape` of the elements idx picks along `dim`
    (every other coordinate is the element's own)."""
    mod = xp()
    flat = 0
    for d, size in enumerate(shape):
        if d == dim:
            coord = idx % max(size, 1)  # negative indices count from the end
        else:
            coord = mod.arange(idx.shape[d]).reshape((1,) * d + (-1,) + (1,) * (idx.ndim - d - 1))
        flat = flat * size + coord
    return mod.broadcast_to(flat, idx.shape)


_SCATTER_DEPRECATED = ("The reduce argument of ember.scatter with Tensor src is deprecated and "
                       "will be removed in a future release. Use ember.scatter_reduce instead for "
                       "more reduction options.")


def _scatter(name, args, kwargs):
    self, dim, index, src = args
    device = device_of(name, [t for t in (self, index, src) if base._is_tensor(t)])
    reduce = kwargs.get("reduce")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if base._is_tensor(src):
            warnings.warn(_SCATTER_DEPRECATED, UserWarning, stacklevel=2)
        reduce = "sum" if reduce == "add" else "prod"
    if not base._is_tensor(src) and not _is_number(src):
        raise TypeError(f"{name}(): argument 'value' must be Number or Tensor, not "
                        f"{type(src).__name__}")
    d = _scatter_checks("scatter", self, dim, index, src)
    target = self if name.endswith("_") else self.clone()
    return _scatter_into(target, d, index, src, reduce, device)


def _is_number(v) -> bool:
    return isinstance(v, (bool, int, float)) or isinstance(v, numpy.generic)


def _scatter_add_op(name, args, kwargs):
    self, dim, index, src = args
    device = device_of(name, [self, index, src])
    d = _scatter_checks("scatter_add", self, dim, index, src)
    target = self if name.endswith("_") else self.clone()
    return _scatter_into(target, d, index, src, "sum", device)


def _scatter_reduce(name, args, kwargs):
    self, dim, index, src, reduce = args
    include_self = bool(kwargs.get("include_self", True))
    device = device_of(name, [self, index, src])
    if reduce not in _REDUCE:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if reduce == "mean" and self.dtype == _C.bool:
        raise NotImplementedError(
            "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
    d = _scatter_checks("scatter_reduce", self, dim, index, src)
    target = self if name.endswith("_") else self.clone()
    return _scatter_into(target, d, index, src, reduce, device, include_self)


def _index_vector(op: str, self, dim: int, index, src):
    """index_add's checks, in the CPU's order; the wrapped dim."""
    d = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.dim()} "
                         f"with type: {index.dtype._torch_name} and size: {list(index.shape)}")
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: "
                           f"{index.dtype._torch_name}")
    if src.dtype != self.dtype:
        raise RuntimeError(f"{op}(): self ({self.dtype._torch_name}) and source "
                           f"({src.dtype._torch_name}) must have the same scalar type")
    s1, r1 = _shape1(self), _shape1(src)
    n = r1[d] if len(r1) > d else 1
    if index.numel() != n:
        raise RuntimeError(f"{op}(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({n}), for dim: {d}")
    if len(s1) != len(r1) or any(k != d and s1[k] != r1[k] for k in range(len(s1))):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(self.shape)} "
                           f"source.shape = {list(src.shape)}")
    return d


def _index_add(name, args, kwargs):
    self, dim, index, src = args
    device = device_of(name, [self, index, src])
    alpha = kwargs.get("alpha", 1)
    scalar_fits(alpha, self.dtype)  # torch converts alpha into the dtype, checked
    if not (self.dtype.is_floating_point or self.dtype.is_complex) and isinstance(alpha, float):
        alpha = int(alpha)  # (an integer type truncates it)
    d = _index_vector("index_add_", self, dim, index, src)
    target = self if name.endswith("_") else self.clone()
    mod = xp()
    with _on_current_stream(device):
        a = view(target).reshape(_shape1(target))
        idx = _dim_index(index, a.shape[d], d, device, op="index_add_").reshape(-1)
        s = view(src).reshape(_shape1(src))
        full = mod.broadcast_to(idx.reshape((1,) * d + (-1,) + (1,) * (s.ndim - d - 1)), s.shape)
        # float16 adds in float32 as the CPU kernel does (its opmath), alpha included
        acc = numpy.dtype(numpy.float32 if a.dtype == numpy.float16 else a.dtype)
        flat = mod.ascontiguousarray(a).reshape(-1).astype(acc)
        values = s.astype(acc) * acc.type(alpha) if alpha != 1 else s
        base._scatter_reduce(flat, _flat_positions(a.shape, d, full).reshape(-1),
                             values.astype(acc).reshape(-1), "add")
        a[...] = flat.reshape(a.shape)
    return target


def _index_copy(name, args, kwargs):
    self, dim, index, src = args
    device = device_of(name, [self, index, src])
    d = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.dim()})")
    if src.dim() == 0 and index.numel() != 1:  # (torch's order, as the CPU core's)
        raise IndexError("index_copy_(): When source is scalar, index should have one element "
                         f"(got {index.numel()})")
    if self.dim() != src.dim() and self.dim() != 0 and src.dim() != 0:
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({src.dim()}), "
                         f"destination dimensionality ({self.dim()})")
    if index.dtype != _C.int64:
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got "
                           f"{index.dtype._torch_name}")
    if self.dtype != src.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {self.dtype._torch_name} and (source) "
                           f"{src.dtype._torch_name}")
    s1, r1 = _shape1(self), _shape1(src)
    if len(s1) != len(r1):
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({src.dim()}), "
                         f"destination dimensionality ({self.dim()})")
    j = 0
    for k in range(len(s1)):
        if k == d:
            continue
        if s1[k] != r1[k]:
            raise RuntimeError("index_copy_(): Source/destination tensor must have same slice "
                               f"shapes. Destination slice shape: {s1[k]} at dimension {j} and "
                               f"source slice shape: {r1[k]} at dimension {j}.")
        j += 1
    if index.numel() != r1[d]:
        raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal "
                           f"to source.size(dim) ({r1[d]})")
    target = self if name.endswith("_") else self.clone()
    with _on_current_stream(device):
        a = view(target).reshape(s1)
        idx = _checked(_device_array(index, device).reshape(-1), s1[d],
                       lambda v: IndexError(f"index_copy_(): index {v} is out of bounds for "
                                            f"dimension {d} with size {s1[d]}"), negative=False)
        a[(slice(None),) * d + (idx,)] = _device_array(src, device).reshape(r1)
    return target


def _index_fill(name, args, kwargs):
    self, dim, index, value = args
    device = device_of(name, [t for t in (self, index, value) if base._is_tensor(t)])
    d = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if index.dtype != _C.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    target = self if name.endswith("_") else self.clone()
    with _on_current_stream(device):
        a = view(target)
        size = a.shape[d] if a.ndim else 1
        idx = _checked(_device_array(index, device).reshape(-1), size,
                       lambda v: IndexError(f"index {v} is out of bounds for dimension {d} "
                                            f"with size {size}"))
        _check_fill_range(base._number(value), self.dtype)
        v = _fill_value(base._number(value), a.dtype)
        if a.ndim == 0:
            if idx.size:
                a[...] = v
        else:
            a[(slice(None),) * d + (idx,)] = v
    return target


# ---- flat and along-dim gathers ----------------------------------------------------------------


def _take(name, args, kwargs):
    self, index = args
    device = device_of(name, [self, index])
    if index.dtype != _C.int64:
        raise RuntimeError("take(): Expected a long tensor for index, but got "
                           f"{index.dtype._torch_name}")
    n = self.numel()
    if n == 0 and index.numel() != 0:
        raise IndexError("take(): tried to take from an empty tensor")
    with _on_current_stream(device):
        idx = _checked(_device_array(index, device), n, lambda v: IndexError(
            f"out of range: tried to access index {v} on a tensor of {n} elements."))
        value = view(self).reshape(-1)[idx]
        return _result(device, tuple(index.shape), self.dtype, value)


def _take_along_dim(name, args, kwargs):
    self, indices = args
    dim = kwargs.get("dim")
    device = device_of(name, [self, indices])
    if indices.dtype != _C.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype._torch_name}")
    mod = xp()
    if dim is None:  # over the flattened input: gather's bounds (no negative indices), as torch
        n = self.numel()
        shape = (indices.numel(),)
        with _on_current_stream(device):
            idx = _dim_index(indices, n, 0, device, negative=False).reshape(-1)
            return _result(device, shape, self.dtype, view(self).reshape(-1)[idx])
    if self.dim() != indices.dim():
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number "
                           f"of dimensions, but got {self.dim()} dimensions for input, and "
                           f"{indices.dim()} dimensions for indices")
    d = _wrap_dim(dim, self.dim())
    xs = list(self.shape)
    if xs:
        xs[d] = indices.shape[d]
    shape = _broadcast_with_core_message(tuple(xs), tuple(indices.shape))  # the result's
    src_shape = list(shape)
    if src_shape:
        src_shape[d] = self.shape[d]
    if 0 in shape:
        return base.empty(shape, self.dtype, device)
    with _on_current_stream(device):
        a = mod.broadcast_to(view(self), tuple(src_shape)).reshape(tuple(src_shape) or (1,))
        idx = _dim_index(indices, a.shape[d], d, device, negative=True)
        idx = mod.broadcast_to(idx, shape or (1,))
        return _result(device, shape, self.dtype, a[_open_key(idx, d)].reshape(shape))


# ---- masks -------------------------------------------------------------------------------------


def _mask_array(mask, device: int, op: str):
    if mask.dtype != _C.bool:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype._cpp_name}")
    return _device_array(mask, device)


def _masked_fill(name, args, kwargs):
    self, mask, value = args
    device = device_of(name, [t for t in (self, mask, value) if base._is_tensor(t)])
    if base._is_tensor(value) and value.dim() != 0:
        raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    inplace = name.endswith("_")
    shape = base._broadcast_shapes(tuple(self.shape), tuple(mask.shape))
    if inplace and shape != tuple(self.shape):
        raise RuntimeError(f"masked_fill_: output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(shape)}")
    with _on_current_stream(device):
        m = _mask_array(mask, device, "masked_fill_")
        v = base._number(value.cpu() if base._is_tensor(value) else value)
        _check_fill_range(v, self.dtype)
        if inplace:
            a = view(self)
            a[xp().broadcast_to(m, a.shape)] = _fill_value(v, a.dtype)
            return self
        a = xp().broadcast_to(view(self), shape)
        return _result(device, shape, self.dtype, xp().where(m, _scalar_array(v, a.dtype), a))


def _masked_select(name, args, kwargs):
    self, mask = args
    device = device_of(name, [self, mask])
    shape = base._broadcast_shapes(tuple(self.shape), tuple(mask.shape))
    with _on_current_stream(device):
        m = xp().broadcast_to(_mask_array(mask, device, "masked_select:"), shape)
        value = xp().broadcast_to(view(self), shape)[m]
        return _result(device, value.shape, self.dtype, value)


def _masked_scatter(name, args, kwargs):
    self, mask, src = args
    device = device_of(name, [self, mask, src])
    if mask.dtype != _C.bool:
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype._torch_name}")
    if self.dtype != src.dtype:  # sic: the CPU's message has no space after "got"
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           f"{self.dtype._torch_name} and {src.dtype._torch_name}")
    inplace = name.endswith("_")
    if inplace:
        mask.expand(tuple(self.shape))  # the CPU's error when mask does not expand to self
        shape = tuple(self.shape)
    else:
        shape = _broadcast_with_core_message(tuple(self.shape), tuple(mask.shape))
    mod = xp()
    with _on_current_stream(device):
        m = mod.broadcast_to(_device_array(mask, device), shape).reshape(shape or (1,))
        count = int(m.sum())
        if src.numel() < count:
            raise RuntimeError("Number of elements of source < number of ones in mask")
        if inplace:
            target = self
            a = view(self).reshape(shape or (1,))
        else:
            target = _result(device, shape, self.dtype, mod.broadcast_to(view(self), shape))
            a = view(target).reshape(shape or (1,))
        if count:
            a[m] = _device_array(src, device).reshape(-1)[:count]
    return target


def _nonzero(name, args, kwargs):
    (self,) = args
    device = device_of(name, args)
    mod = xp()
    with _on_current_stream(device):
        a = view(self)
        coords = mod.nonzero(a.reshape(1) if a.ndim == 0 else a)
        if kwargs.get("as_tuple", False):
            return tuple(_result(device, c.shape, _C.int64, c) for c in coords)
        value = (mod.stack(coords, axis=1) if a.ndim else mod.zeros((len(coords[0]), 0),
                                                                     dtype=numpy.int64))
        return _result(device, value.shape, _C.int64, value)


# ---- the table ---------------------------------------------------------------------------------

INDEX_OPS = {
    "index": _index,
    "index_put_": _index_put_,
    "index_put": lambda n, a, k: _index_put_(n, (a[0].clone(),) + tuple(a[1:]), k),
    "index_select": _index_select,
    "gather": _gather,
    "masked_select": _masked_select,
    "nonzero": _nonzero,
}
for _name_ in ("scatter", "scatter_"):
    INDEX_OPS[_name_] = _scatter
for _name_ in ("scatter_add", "scatter_add_"):
    INDEX_OPS[_name_] = _scatter_add_op
for _name_ in ("index_add", "index_add_"):
    INDEX_OPS[_name_] = _index_add
for _name_ in ("index_fill", "index_fill_"):
    INDEX_OPS[_name_] = _index_fill
for _name_ in ("masked_fill", "masked_fill_"):
    INDEX_OPS[_name_] = _masked_fill
INDEX_OPS.update({
    "take": _take,
    "take_along_dim": _take_along_dim,
    "scatter_reduce": _scatter_reduce,
    "scatter_reduce_": _scatter_reduce,
    "index_copy": _index_copy,
    "index_copy_": _index_copy,
    "masked_scatter": _masked_scatter,
    "masked_scatter_": _masked_scatter,
})
