"""Comparison and differencing ops composed from core ops (differentiable through their parts):
``msort``, ``diff``, ``isclose``, ``allclose``, ``equal``. The sorting primitives themselves
(sort, topk, unique, searchsorted, quantile, ...) are C++ (csrc/ops/sort.cpp)."""

from __future__ import annotations

import builtins

from ember import _C
from ember._checks import tensor_args

__all__ = ["allclose", "diff", "equal", "isclose", "msort"]


@tensor_args("input")
def msort(input, *, out=None):
    """Sorts ``input`` along its first dim: ``sort(input, dim=0).values``."""
    if out is not None:
        _C.sort(input, 0, out=(out, _C.empty(0, dtype=_C.int64)))
        return out
    return _C.sort(input, 0).values


def _cat(tensors, dim):
    """Concatenation along ``dim`` (the core's ``cat`` when present)."""
    cat = getattr(_C, "cat", None)
    if cat is not None:
        return cat(tensors, dim)
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = _C.promote_types(dtype, t.dtype)
    shape = list(tensors[0].shape)
    shape[dim] = builtins.sum(t.shape[dim] for t in tensors)
    out = _C.empty(shape, dtype=dtype)
    offset = 0
    for t in tensors:
        out.narrow(dim, offset, t.shape[dim]).copy_(t)
        offset += t.shape[dim]
    return out


@tensor_args("input", "prepend", "append")
def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None, *, out=None):
    """The n-th forward difference along ``dim`` (``ne`` for bool), as torch.diff."""
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0 and prepend is None and append is None and out is None:
        return input  # torch returns the input itself, before it reads dim
    ndim = input.dim()
    if not -ndim <= dim < ndim:
        raise IndexError("Dimension out of range (expected to be in range of "
                         f"[{-ndim}, {ndim - 1}], but got {dim})")
    dim %= ndim
    parts = []
    for extra in (prepend, append):
        if extra is None:
            continue
        if not isinstance(extra, _C.Tensor):
            raise TypeError("diff(): argument 'prepend'/'append' must be Tensor, not "
                            f"{type(extra).__name__}")
        if extra.dim() != ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        for d in range(ndim):
            if d != dim and extra.shape[d] != input.shape[d]:
                raise RuntimeError(
                    "diff expects the shape of tensor to prepend or append to match that of input "
                    f"except along the differencing dimension; input.size({d}) = {input.shape[d]}, "
                    f"but got tensor.size({d}) = {extra.shape[d]}")
    if prepend is not None:
        parts.append(prepend)
    parts.append(input)
    if append is not None:
        parts.append(append)
    x = _cat(parts, dim) if len(parts) > 1 else input
    is_bool = x.dtype == _C.bool
    for i in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        hi, lo = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        last = out is not None and (i == n - 1 or length == 1)
        kw = {"out": out} if last else {}
        x = _C.ne(hi, lo, **kw) if is_bool else _C.sub(hi, lo, **kw)
        if last:
            return out
    if out is not None:  # nothing was differenced: out receives a copy
        if n == 0 and out.dtype != x.dtype:  # (torch's copy for n=0 takes out's dtype as is)
            raise RuntimeError(f"expected scalar_type {x.dtype._torch_name} but found "
                               f"{out.dtype._torch_name}")
        return _C.bitwise_or(x, False, out=out) if is_bool else _C.add(x, 0, out=out)
    return x


@tensor_args("input", "other")
def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """|input - other| <= atol + rtol * |other| elementwise (exact equality always counts)."""
    if input.dtype != other.dtype:
        raise RuntimeError(f"{input.dtype._torch_name} did not match {other.dtype._torch_name}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = _C.eq(input, other)
    floating = input.is_floating_point() or input.is_complex()  # complex: |z - w| is real
    if equal_nan and floating:
        close = _C.logical_or(close, _C.logical_and(_C.isnan(input), _C.isnan(other)))
    if rtol == 0 and atol == 0:
        return close
    if not floating:
        input, other = input.to(_C.get_default_dtype()), other.to(_C.get_default_dtype())
    allowed = _C.add(_C.abs(_C.mul(other, rtol)), atol)
    actual = _C.abs(_C.sub(input, other))
    return _C.logical_or(close, _C.logical_and(_C.isfinite(actual), _C.le(actual, allowed)))


@tensor_args("input", "other")
def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True when every element of ``input`` is close to ``other`` (see isclose)."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


@tensor_args("input", "other")
def equal(input, other) -> bool:
    """True when both tensors have the same shape and elements (NaN never equals)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool(_C.eq(input, other).all().item())


def install(cls) -> None:
    """Installs the Tensor methods of these ops."""
    cls.msort = msort
    cls.diff = diff
    cls.isclose = isclose
    cls.allclose = allclose
    cls.equal = equal
