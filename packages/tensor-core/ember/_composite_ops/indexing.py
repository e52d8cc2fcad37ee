"""Copies, scatters and selections written with views: narrow_copy, the *_scatter family,
nonzero_static, index_reduce, put, fill_diagonal_, ravel."""

from __future__ import annotations

import builtins

from ember import _C
from ember._composite_ops._common import (
    _SHELL_UNSIGNED,
    _dtype_name,
    _finish,
    _finish_exact,
    _is_tensor,
    _max,
    _min,
    _wrap_dim,
)
from ember._composite_ops.varargs import unravel_index


def fill_diagonal_(self, fill_value, wrap=False):
    """torch's: the main diagonal as one strided view (stride: the sum of self's strides),
    filled; with wrap (2-d, more than columns + 1 rows) the diagonal that starts again every
    columns + 1 rows as a second view. fill_ takes a 0-d tensor as its number and, as torch's,
    writes through an expanded self."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if self.dim() > 2 and any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    height, width = shape[0], shape[1]
    size, stride, offset = _min(height, width), sum(self.stride()), self.storage_offset()
    self.as_strided((size,), (stride,), offset).fill_(fill_value)
    if wrap and self.dim() == 2 and height > width + 1:
        step = width + 1
        wrap_size = (self.numel() + step - 1) // step - size
        self.as_strided((wrap_size,), (stride,), offset + self.stride(0) * step).fill_(fill_value)
    return self


def narrow_copy(input, dim, start, length, *, out=None):
    """A contiguous copy of input.narrow(dim, start, length)."""
    if out is not None and _is_tensor(out) and out.dtype != input.dtype:  # (torch's check)
        raise RuntimeError("Expected self.dtype() == output.dtype() to be true, but got false.")
    return _finish(input.narrow(dim, start, length).clone(), out)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input, laid out with input's strides and storage offset, with src written where
    copy.as_strided(size, stride, offset) looks (offset: input's by default). Built as scatters
    into a flat buffer of the copy's storage and a strided view of it, so both gradients are
    those ops'."""
    size, stride = [int(v) for v in size], [int(v) for v in stride]
    if any(n > 1 and st == 0 for n, st in zip(input.shape, input.stride())):
        # an input with internal overlap (expanded) cannot keep its layout in the copy, which
        # is written into: torch's clone_preserve_strides makes it a plain contiguous copy
        input = input.contiguous()  # noqa: A001
    base = input.storage_offset()  # the copy has input's sizes, strides and storage offset
    offset = base if storage_offset is None else int(storage_offset)
    # (torch's order: the view's own checks (as_strided's), then src's size, then the overlap)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {stride}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    shape, strides = tuple(input.shape), tuple(input.stride())
    storage = base + 1 + sum((n - 1) * st for n, st in zip(shape, strides)) \
        if input.numel() else base
    reach = offset + sum((n - 1) * st for n, st in zip(size, stride))
    if _min(size, default=1) > 0 and reach >= storage:
        item = input.element_size()
        raise RuntimeError(f"setStorage: sizes {size}, strides {stride}, storage offset {offset}, "
                           f"and itemsize {item} requiring a storage size of {(reach + 1) * item} "
                           f"are out of bounds for storage of size {storage * item}")
    if tuple(src.shape) != tuple(size):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {size}")
    if any(n > 1 and st == 0 for n, st in zip(size, stride)):  # (torch's copy_ into the view)
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")

    def positions(sizes, steps, start):
        p = _C.full([], start, dtype=_C.int64, device=input.device)
        for k, (n, st) in enumerate(zip(sizes, steps)):
            dims = [1] * len(sizes)
            dims[k] = n
            p = p + _C.arange(n, device=input.device).reshape(dims) * st
        return p.expand(tuple(sizes)).reshape(-1)

    buffer = _C.zeros([storage], dtype=input.dtype, device=input.device)
    buffer = buffer.scatter(0, positions(shape, strides, base), input.reshape(-1))
    # (src is copied in, converted into input's dtype, as torch's copy_ into the strided view)
    buffer = buffer.scatter(0, positions(size, stride, offset), src.reshape(-1).to(input.dtype))
    return buffer.as_strided(shape, strides, base)


def nonzero_static(input, *, size, fill_value=-1, out=None):
    """nonzero(input) with exactly `size` rows: cut, or padded with `fill_value`."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"size={size}")
    if out is not None and out.dtype != _C.int64:
        raise RuntimeError("nonzero_static: Expected out tensor to have scalar type Long but got "
                           f"scalar type{out.dtype._torch_name}")  # (torch's, without a space)
    found = _C.nonzero(input)
    n = found.shape[0]
    if n >= size:
        result = found[:size]
    else:
        pad = _C.full([size - n, found.shape[1]], fill_value, dtype=found.dtype,
                      device=found.device)
        result = _C.cat([found, pad])
    return _finish(result.contiguous(), out)


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_reduce(name, self, dim, index, source, reduce, include_self, inplace):
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"{name}(): Expected reduce to be one of prod, mean, amax or amin but "
                           f"got {reduce}.")
    d = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(f"{name}_(): Expected dtype int32/int64 for index but got: "
                           f"{index.dtype._torch_name}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"{name}_(): self ({self.dtype._torch_name}) and source "
                           f"({source.dtype._torch_name}) must have the same scalar type")
    if source.dim() != self.dim() and not (source.dim() == 0 and self.dim() <= 1):
        raise IndexError(f"{name}_(): Source/destination tensor must have same number of "
                         "dimensions")
    count = index.numel()
    if source.dim() and source.shape[d] != count:
        raise IndexError(f"{name}_(): Number of indices ({count}) should be equal to "
                         f"source.size(dim) ({source.shape[d]})")
    if self.dtype.is_complex:  # torch's kernel has no complex type, for any reduction
        raise NotImplementedError(f"\"index_func_\" not implemented for "
                                  f"'{_dtype_name(self.dtype)}'")
    # index_reduce along dim is scatter_reduce with the index broadcast over source's other dims
    shape = [1] * _max(source.dim(), 1)
    shape[d if source.dim() else 0] = count
    expanded = index.reshape(shape).expand(tuple(source.shape) if source.dim() else (count,))
    src = source if source.dim() else source.reshape(1)
    if inplace:
        return self.scatter_reduce_(d, expanded, src, reduce, include_self=include_self)
    return _C.scatter_reduce(self, d, expanded, src, reduce, include_self=include_self)


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    return _finish(_index_reduce("index_reduce", input, dim, index, source, reduce,
                                 include_self, False), out)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return _index_reduce("index_reduce", self, dim, index, source, reduce, include_self, True)


def put_(self, index, source, accumulate=False):
    if source.dtype != self.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_dtype_name(self.dtype)} and source.dtype = "
                           f"{_dtype_name(source.dtype)}")
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{_dtype_name(index.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, "
                         f"index.numel() = {index.numel()}")
    n = self.numel()
    if index.numel() and self.dtype in _SHELL_UNSIGNED:  # (torch's kernel, before its bounds)
        raise NotImplementedError(f"\"take_put_cpu\" not implemented for "
                                  f"'{_dtype_name(self.dtype)}'")
    if index.numel() and bool(((index < -n) | (index >= n)).any()):
        raise IndexError(f"out of range: tried to access index "
                         f"{int(index[(index < -n) | (index >= n)][0])} on a tensor of {n} "
                         "elements.")
    coords = unravel_index(index.reshape(-1), tuple(self.shape)) if self.dim() else ()
    if not self.dim():
        return self.copy_(source.reshape(()) + (self if accumulate else 0))
    return self.index_put_(coords, source.reshape(-1).to(self.dtype), accumulate)


def put(input, index, source, accumulate=False):
    return put_(input.clone(), index, source, accumulate)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    r = input.clone()
    view = r.diagonal(offset, dim1, dim2)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(view.shape)}")
    view.copy_(src)
    return r


def select_scatter(input, src, dim, index):
    r = input.clone()
    view = r.select(dim, index)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(view.shape)}")
    view.copy_(src)
    return r


def slice_scatter(input, src, dim=0, start=None, end=None, step=1, *, out=None):
    if input.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if out is not None and out.dtype != input.dtype:
        return _finish_exact(input, out)  # (torch's message for out's dtype)
    r = input.clone()
    d = _wrap_dim(dim, input.dim())
    index = [builtins.slice(None)] * input.dim()
    index[d] = builtins.slice(start, end, step)
    view = r[tuple(index)]
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(view.shape)}")
    view.copy_(src)
    return _finish(r, out)


def ravel(input):
    return input.reshape(-1)
