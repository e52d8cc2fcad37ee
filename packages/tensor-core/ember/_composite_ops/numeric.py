"""Numerical methods over tensors: integrals (trapezoid), differences (gradient), vander,
combinations, isin."""

from __future__ import annotations

import builtins
import itertools
import math

from ember import _C
from ember._composite_ops._common import (
    _SHELL_UNSIGNED,
    _dtype_name,
    _finish,
    _is_tensor,
    _wrap_dim,
)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    # torch's order: the dim, no samples, the dtypes, dx, the spacing, the sums' kernels
    d = _wrap_dim(dim, y.dim())
    n = y.shape[d]
    if n == 0:  # torch's zeros_like_except: zeros of y's dtype without the dim (not a sum's)
        return _C.zeros(tuple(y.shape[:d]) + tuple(y.shape[d + 1:]), dtype=y.dtype,
                        device=y.device)
    _check_integrand("trapezoid", y, x)
    _check_dx("trapezoid", dx)
    # torch's formulas (Integration.cpp), so the dtypes and roundings are its own
    spacing = _spacing("trapezoid", y, x, dx, d)
    _no_add_kernel(y)
    if not isinstance(spacing, _C.Tensor):
        return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * spacing
    return (spacing * (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))).sum(d) / 2.0


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    # torch's order: given x, the dim, then the dtypes; given dx (or neither), the dtypes and
    # dx, then the dim. No shortcut for no samples: the result is then empty, in the dtype of
    # the formula (an integer y's halves are floats)
    if x is None:
        _check_integrand("cumulative_trapezoid", y, x)
        _check_dx("cumulative_trapezoid", dx)
    d = _wrap_dim(dim, y.dim())
    if x is not None:
        _check_integrand("cumulative_trapezoid", y, x)
    spacing = _spacing("cumulative_trapezoid", y, x, dx, d)
    _no_add_kernel(y)
    pairs = _tail(y, d) + _head(y, d)
    if not isinstance(spacing, _C.Tensor):
        return (spacing / 2.0 * pairs).cumsum(d)
    return (spacing * pairs).cumsum(d) / 2.0


def _head(t, d):
    """t[:-1] along dim d (empty when t has no entries there), as torch's slice."""
    return t.narrow(d, 0, max(t.shape[d] - 1, 0))


def _tail(t, d):
    """t[1:] along dim d (empty when t has no entries there)."""
    n = t.shape[d]
    return t.narrow(d, min(n, 1), max(n - 1, 0))


def _no_add_kernel(t):
    if t.dtype in _SHELL_UNSIGNED:
        raise NotImplementedError(f"\"add_stub\" not implemented for '{_dtype_name(t.dtype)}'")


def _check_integrand(name, y, x):
    """torch's refusals of bool samples (its message names y, or x or y)."""
    if y.dtype == _C.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    if _is_tensor(x) and x.dtype == _C.bool:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           "supported")


def _check_dx(name, dx):
    if isinstance(dx, (bool, builtins.complex)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")


def _spacing(name, y, x, dx, d):
    if x is None:
        return 1.0 if dx is None else dx
    if x.dim() == 1:
        n = x.shape[0]
        if n != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[d] = max(n - 1, 0)
        _no_add_kernel(x)  # (the unsigned types have no difference kernel either)
        return (_tail(x, 0) - _head(x, 0)).reshape(shape)
    if x.dim() < y.dim():  # torch's: x's shape padded with leading 1s to y's rank first
        x = x.reshape((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    _no_add_kernel(x)
    return _tail(x, d) - _head(x, d)


def vander(x, N=None, increasing=False):
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype in _SHELL_UNSIGNED:  # (torch promotes the input with an int64 tensor first)
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {_dtype_name(x.dtype)} and Long")
    dt = x.dtype if x.dtype != _C.bool else _C.int64
    if not (dt.is_floating_point or dt.is_complex):
        dt = _C.int64
    if n == 0:
        return _C.empty((x.shape[0], 0), dtype=dt, device=x.device)
    cols = [_C.ones((x.shape[0], 1), dtype=dt, device=x.device)]
    if n > 1:
        cols.append(x.to(dt).unsqueeze(1).expand(x.shape[0], n - 1))
    r = _C.cat(cols, 1).cumprod(1)
    return r if increasing else r.flip(1)


def combinations(input, r=2, with_replacement=False):
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.empty((0,), dtype=input.dtype, device=input.device)
    n = input.shape[0]
    count = math.comb(n + r - 1, r) if with_replacement else math.comb(n, r)
    if not count:  # (r beyond n: itertools would still allocate r indices)
        return _C.empty((0, r), dtype=input.dtype, device=input.device)
    if count * r > 2**48:  # (torch fails building its n**r grid long before: a RuntimeError)
        raise RuntimeError(f"combinations: the result would hold {count} x {r} elements, more "
                           "than this machine's memory")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = list(pick(range(n), r))
    return input[_C.tensor(index, device=input.device)]


_NUMBER_DTYPES = {bool: _C.bool, int: _C.int64, float: _C.float64, complex: _C.complex128}


def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    if not _is_tensor(elements) and not _is_tensor(test_elements):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but "
                        "expected one of: (Tensor elements, Tensor test_elements), (Number "
                        "element, Tensor test_elements), (Tensor elements, Number test_element)")
    # a Python number is torch's wrapped number: float64, int64, bool or complex128 (its dtype
    # checked below), which a comparison takes in the other side's dtype
    number = test_elements if _is_tensor(elements) else elements
    number_dtype = None if _is_tensor(number) else _C.tensor(
        number, dtype=_NUMBER_DTYPES.get(type(number))).dtype
    for x in (elements, test_elements):  # torch's check_for_unsupported_isin_dtype, each input
        dtype = x.dtype if _is_tensor(x) else number_dtype
        if dtype == _C.bool or dtype.is_complex:
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{_dtype_name(dtype)}")
    if out is not None and out.dtype != _C.bool:
        raise RuntimeError(f"Expected out tensor to have dtype bool, but got {out.dtype._cpp_name} "
                           "instead")
    if not _is_tensor(test_elements):  # torch's isin(Tensor, Number): elements == the number
        return _finish((_C.ne if invert else _C.eq)(elements, test_elements), out)
    # torch's two kernels: few test elements (NumPy's heuristic) are compared with each element
    # in the inputs' result_type (where a number or a 0-d tensor takes the other's dtype); more
    # are sorted together with the elements, whose concatenation promotes the dtypes
    count = elements.numel() if _is_tensor(elements) else 1
    brute_force = test_elements.numel() < int(10.0 * count ** 0.145)
    if brute_force:
        dt = _C.result_type(elements, test_elements)
    else:
        dt = _C.promote_types(elements.dtype if _is_tensor(elements) else number_dtype,
                              test_elements.dtype)
    if not _is_tensor(elements):
        elements = _C.tensor(elements, dtype=number_dtype, device=test_elements.device)
    if dt in _SHELL_UNSIGNED and elements.numel() and brute_force:
        # torch's heuristic (NumPy's) sends few test elements to its brute-force kernel, which
        # has no uint16-64; its sorting path takes them
        raise NotImplementedError(f"\"isin_default_cpu\" not implemented for "
                                  f"'{_dtype_name(dt)}'")
    values = test_elements.reshape(-1).to(dt).sort().values
    if dt.is_floating_point:  # a NaN equals nothing, and one among the keys misleads the search
        values = values[:int((values == values).sum())]  # (sorted last)
    probe = elements.to(dt)
    if values.numel() == 0:
        found = _C.zeros(elements.shape, dtype=_C.bool, device=elements.device)
    else:
        keys, probe_keys = values, probe.reshape(-1)
        if dt in _SHELL_UNSIGNED:  # (no searchsorted for these, as torch's: their order as
            # int64, uint64's with its top bit flipped)
            keys, probe_keys = (_C.bitwise_xor(k.view(_C.int64), -2**63) if dt == _C.uint64
                                else k.to(_C.int64) for k in (keys, probe_keys.contiguous()))
        at = _C.searchsorted(keys, probe_keys).clamp(max=values.numel() - 1)
        found = (values[at] == probe.reshape(-1)).reshape(elements.shape)
    return _finish(~found if invert else found, out)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of input sampled on a grid, one tensor per dim: central differences inside,
    one-sided ones (first or second order) at the edges, with uniform spacing (a number, or one
    per dim) or sample coordinates (one 1-d tensor per dim), as torch.gradient and NumPy's."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if not _is_tensor(input):
        raise TypeError(f"gradient(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype == _C.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    ndim = input.dim()
    dims = list(range(ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but got "
                               f"a spacing argument of length {len(spacing)} and a dim argument "
                               f"of length {len(dims)}.")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    given, dims = dims, [_wrap_dim(d, ndim) for d in dims]
    seen = set()
    for d in dims:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    # (torch's order: the spacing, the dims as a set, then each dim against the shape, where a
    # 0-d input has none; a bool input fails later, at its first subtraction)
    for d, g in zip(dims, given):
        if ndim == 0:
            raise IndexError(f"Dimension specified as {g} but tensor has no dimensions")
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    if not dims:  # (a 0-d input: no dim to differentiate along, nothing computed)
        return ()
    if input.dtype == _C.bool:  # (torch's message: its subtraction of two bool tensors)
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    _no_add_kernel(input)
    inexact = input.dtype.is_floating_point or input.dtype.is_complex
    f = input if inexact else input.to(_C.get_default_dtype())
    return tuple(_gradient_along(f, d, h, edge_order) for d, h in zip(dims, spacings))


def _gradient_along(f, d, h, edge_order):
    n = f.shape[d]

    def part(start, length):
        return f.narrow(d, start, length)

    def along(v):  # a 1-d tensor of coefficients shaped to broadcast along d
        shape = [1] * f.dim()
        shape[d] = v.shape[0]
        return v.reshape(shape)

    if _is_tensor(h):  # sample coordinates
        if h.dim() != 1 or h.shape[0] != n:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"and to have one dimension of the size of input's dim {d} ({n})"
                               f", but got spacing of size {list(h.shape)}")
        x = h.to(f.dtype)
        dx = x[1:] - x[:-1]
        dx1, dx2 = dx[:-1], dx[1:]
        a = -dx2 / (dx1 * (dx1 + dx2))
        b = (dx2 - dx1) / (dx1 * dx2)
        c = dx1 / (dx2 * (dx1 + dx2))
        inner = (along(a) * part(0, n - 2) + along(b) * part(1, n - 2)
                 + along(c) * part(2, n - 2)) if n > 2 else None
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / dx[0]
            last = (part(n - 1, 1) - part(n - 2, 1)) / dx[-1]
        else:
            d1, d2 = dx[0], dx[1]
            first = (-(2 * d1 + d2) / (d1 * (d1 + d2)) * part(0, 1)
                     + (d1 + d2) / (d1 * d2) * part(1, 1) - d1 / (d2 * (d1 + d2)) * part(2, 1))
            d1, d2 = dx[-2], dx[-1]
            last = (d2 / (d1 * (d1 + d2)) * part(n - 3, 1) - (d2 + d1) / (d1 * d2)
                    * part(n - 2, 1) + (2 * d2 + d1) / (d2 * (d1 + d2)) * part(n - 1, 1))
    else:  # uniform spacing h
        inner = (part(2, n - 2) - part(0, n - 2)) / (2 * h) if n > 2 else None
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / h
            last = (part(n - 1, 1) - part(n - 2, 1)) / h
        else:
            first = (-3 * part(0, 1) + 4 * part(1, 1) - part(2, 1)) / (2 * h)
            last = (3 * part(n - 1, 1) - 4 * part(n - 2, 1) + part(n - 3, 1)) / (2 * h)
    pieces = [first] + ([inner] if inner is not None else []) + [last]
    return _C.cat(pieces, d)
