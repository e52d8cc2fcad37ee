"""Ops driven by index tensors on CUDA tensors: advanced indexing (``x[idx]``, ``x[idx] = v``,
``index_put_``), ``index_select``, ``gather``, the scatter family, ``index_add``/``index_fill``,
``masked_fill``/``masked_select`` and ``nonzero``, registered in ``_ops.OPS``.

Index tensors may live on the CPU (as in PyTorch) and are moved to the device. Every index is
checked against its dimension before anything is written, with the CPU kernels' messages: CuPy
does not check bounds, so an unchecked index would read or write the wrong element silently. The
check costs one synchronisation, where PyTorch raises a device-side assertion instead.
"""

from __future__ import annotations

import numpy

from ember import _C
from ember.cuda import _ops as base
from ember.cuda._nn_ops import _torch_name as _name
from ember.cuda._ops import _on_current_stream, _result, _scatter_add, device_of, view, xp

_INT_INDEX = ("int64", "int32", "int16", "int8", "uint8")


def _device_array(t, device: int):
    """The array of an index tensor, moved to the device when it is on the CPU."""
    if t.device.type == "cpu":
        t = t.to(f"cuda:{device}")
    return view(t)


def _first_bad(idx, size: int):
    """The first index outside [-size, size), or None."""
    if idx.size == 0:
        return None
    bad = (idx < -size) | (idx >= size)
    if not bool(bad.any()):
        return None
    return int(idx.reshape(-1)[int(xp().argmax(bad.reshape(-1)))])


def _checked(idx, size: int, message):
    bad = _first_bad(idx, size)
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


def _index(name, args, kwargs):
    self, indices = args
    device = device_of(name, [self])
    with _on_current_stream(device):
        a = view(self)
        value = a[_index_key(a, indices, device)]
        return _result(device, value.shape, self.dtype, value)


def _index_put_(name, args, kwargs):
    self, indices, values = args
    device = device_of(name, [self] + ([values] if base._is_tensor(values) else []))
    if base._is_tensor(values) and values.dtype != self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_name(self.dtype)} for the destination "
                           f"and {_name(values.dtype)} for the source.")
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


def _index_select(name, args, kwargs):
    self, dim, index = args
    device = device_of(name, [self])
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError("index_select(): Expected dtype int32/int64 for index")
    d = dim % max(self.dim(), 1)
    with _on_current_stream(device):
        idx = _checked(_device_array(index, device).astype(numpy.int64).reshape(-1),
                       self.shape[d] if self.dim() else 1,
                       lambda v: IndexError("index out of range in self"))
        a = view(self)
        value = xp().take(a.reshape(1) if self.dim() == 0 else a, idx, axis=d)
        shape = tuple(value.shape) if self.dim() else ((1,) if index.dim() else ())
        return _result(device, shape, self.dtype, value.reshape(shape))


def _gather_check(op: str, self, dim: int, index, src=None):
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    if max(index.dim(), 1) != max(self.dim(), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as "
                           f"{'self' if src is None else 'output'} tensor")
    for d in range(index.dim()):
        if d != dim and index.shape[d] > self.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(index.shape)} to be smaller than self "
                               f"{list(self.shape)} apart from dimension {dim}")


def _gather(name, args, kwargs):
    self, dim, index = args
    device = device_of(name, [self, index])
    d = dim % max(self.dim(), 1)
    _gather_check("gather", self, d, index)
    with _on_current_stream(device):
        a = xp().ascontiguousarray(view(self))
        shape = a.shape if a.ndim else (1,)
        idx = _checked(view(index).astype(numpy.int64).reshape(tuple(index.shape) or (1,)),
                       shape[d], lambda v: RuntimeError(f"index {v} is out of bounds for "
                                                        f"dimension {d} with size {shape[d]}"))
        value = a.reshape(-1)[_flat_positions(shape, d, idx)]
        return _result(device, tuple(index.shape), self.dtype, value.reshape(tuple(index.shape)))


def _scatter_into(op: str, target, dim: int, index, src, reduce_add: bool, device: int):
    """target (a CUDA tensor, written in place) at index along dim: src's values, set or added."""
    mod = xp()
    d = dim % max(target.dim(), 1)
    _gather_check(op, target, d, index, src)
    if base._is_tensor(src):
        if src.dtype != target.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
        for k in range(index.dim()):
            if index.shape[k] > src.shape[k]:
                raise RuntimeError(f"Size does not match at dimension {k} expected index "
                                   f"{list(index.shape)} to be smaller than src {list(src.shape)}")
    with _on_current_stream(device):
        a = view(target)
        shape = a.shape if a.ndim else (1,)
        idx = _checked(view(index).astype(numpy.int64).reshape(tuple(index.shape) or (1,)),
                       shape[d], lambda v: RuntimeError(f"index {v} is out of bounds for "
                                                        f"dimension {d} with size {shape[d]}"))
        if base._is_tensor(src):
            s = view(src).reshape(tuple(src.shape) or (1,))
            s = s[tuple(slice(0, n) for n in idx.shape)]
        else:
            s = mod.full(idx.shape, src, dtype=a.dtype)
        flat = mod.ascontiguousarray(a).reshape(-1)
        pos = _flat_positions(shape, d, idx).reshape(-1)
        if reduce_add:
            _scatter_add(flat, pos, s.astype(a.dtype).reshape(-1))
        else:
            flat[pos] = s.astype(a.dtype).reshape(-1)
        a[...] = flat.reshape(a.shape)
    return target


def _scatter(name, args, kwargs):
    self, dim, index, src = args
    device = device_of(name, [t for t in (self, index, src) if base._is_tensor(t)])
    reduce = kwargs.get("reduce")
    if reduce not in (None, "add"):
        raise NotImplementedError(f"ember: scatter(reduce={reduce!r}) has no CUDA implementation "
                                  "yet")
    target = self if name.endswith("_") else self.clone()
    return _scatter_into(name.rstrip("_"), target, dim, index, src, reduce == "add", device)


def _scatter_add_op(name, args, kwargs):
    self, dim, index, src = args
    device = device_of(name, [self, index, src])
    target = self if name.endswith("_") else self.clone()
    return _scatter_into(name.rstrip("_"), target, dim, index, src, True, device)


def _index_add(name, args, kwargs):
    self, dim, index, src = args
    device = device_of(name, [self, index, src])
    alpha = kwargs.get("alpha", 1)
    d = dim % max(self.dim(), 1)
    if index.dim() > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError("index_add_(): Expected dtype int32/int64 for index")
    if src.dtype != self.dtype:
        raise RuntimeError(f"index_add_(): self ({_name(self.dtype)}) and source "
                           f"({_name(src.dtype)}) must have the same scalar type")
    n = src.shape[d] if src.dim() else 1
    if index.numel() != n:
        raise RuntimeError("index_add_(): Number of indices (" f"{index.numel()}) should be equal "
                           f"to source.size(dim) ({n})")
    target = self if name.endswith("_") else self.clone()
    mod = xp()
    with _on_current_stream(device):
        a = view(target)
        shape = a.shape if a.ndim else (1,)
        idx = _checked(view(index).astype(numpy.int64).reshape(-1), shape[d],
                       lambda v: RuntimeError(f"index {v} is out of bounds for dimension {d} "
                                              f"with size {shape[d]}"))
        s = view(src).reshape(tuple(src.shape) or (1,))
        full = mod.broadcast_to(idx.reshape((1,) * d + (-1,) + (1,) * (s.ndim - d - 1)), s.shape)
        flat = mod.ascontiguousarray(a).reshape(-1)
        values = s * a.dtype.type(alpha) if alpha != 1 else s
        _scatter_add(flat, _flat_positions(shape, d, full).reshape(-1),
                     values.astype(a.dtype).reshape(-1))
        a[...] = flat.reshape(a.shape)
    return target


def _index_fill(name, args, kwargs):
    self, dim, index, value = args
    device = device_of(name, [t for t in (self, index, value) if base._is_tensor(t)])
    d = dim % max(self.dim(), 1)
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
        v = base._number(value)
        if a.ndim == 0:
            if idx.size:
                a[...] = v
        else:
            a[(slice(None),) * d + (idx,)] = v
    return target


# ---- masks -------------------------------------------------------------------------------------


_CPP_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char",
              "int16": "short int", "int32": "int", "int64": "long int", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}


def _mask_array(mask, device: int, op: str):
    if mask.dtype != _C.bool:
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{_CPP_NAMES.get(mask.dtype.name, mask.dtype.name)}")
    return _device_array(mask, device)


def _masked_fill(name, args, kwargs):
    self, mask, value = args
    device = device_of(name, [t for t in (self, mask, value) if base._is_tensor(t)])
    if base._is_tensor(value) and value.dim() != 0:
        raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    inplace = name.endswith("_")
    shape = tuple(base._broadcast_shapes(tuple(self.shape), tuple(mask.shape)))
    if inplace and shape != tuple(self.shape):
        raise RuntimeError(f"masked_fill_: output with shape {list(self.shape)} doesn't match the "
                           f"broadcast shape {list(shape)}")
    with _on_current_stream(device):
        m = _mask_array(mask, device, "masked_fill_")
        v = base._number(value.cpu() if base._is_tensor(value) else value)
        if inplace:
            a = view(self)
            a[xp().broadcast_to(m, a.shape)] = v
            return self
        a = xp().broadcast_to(view(self), shape)
        return _result(device, shape, self.dtype,
                       xp().where(m, xp().asarray(v).astype(a.dtype), a))


def _masked_select(name, args, kwargs):
    self, mask = args
    device = device_of(name, [self, mask])
    shape = tuple(base._broadcast_shapes(tuple(self.shape), tuple(mask.shape)))
    with _on_current_stream(device):
        m = xp().broadcast_to(_mask_array(mask, device, "masked_select:"), shape)
        value = xp().broadcast_to(view(self), shape)[m]
        return _result(device, value.shape, self.dtype, value)


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
