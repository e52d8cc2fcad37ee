"""ember.array_api.linalg: the standard's linear-algebra extension.

Products, norms, diagonals and traces are composed here from core ops; the factorisations and
solvers (``inv``, ``solve``, ``cholesky``, ``qr``, ``svd``, ``eigh``, ``det``, ...) forward to
``ember.linalg`` and raise ``NotImplementedError`` naming the op while the core lacks it.
"""

from __future__ import annotations

import builtins
import importlib
import math

import ember
from ember import array_api as _xp

__all__ = [
    "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
    "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
    "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]

matmul = _xp.matmul
matrix_transpose = _xp.matrix_transpose
tensordot = _xp.tensordot
vecdot = _xp.vecdot


def _la(name: str):
    mod = getattr(ember, "linalg", None)
    if mod is None:
        try:
            mod = importlib.import_module("ember.linalg")
        except ImportError:
            mod = None
    fn = getattr(mod, name, None)
    if fn is None:
        raise NotImplementedError(
            f"ember.array_api.linalg.{name} needs ember.linalg.{name}, which this build of the "
            "core does not have")
    return fn


def outer(x1, x2, /):
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("outer takes two 1-d arrays")
    return ember.outer(x1, x2)


def diagonal(x, /, *, offset: int = 0):
    """The offset-th diagonal of the last two dims, as a view."""
    if x.ndim < 2:
        raise ValueError("diagonal needs an array of at least 2 dims")
    rows, cols = x.shape[-2], x.shape[-1]
    length = builtins.max(0, builtins.min(rows + builtins.min(offset, 0),
                                          cols - builtins.max(offset, 0)))
    rs, cs = x.stride()[-2], x.stride()[-1]
    start = x.storage_offset() + (offset * cs if offset >= 0 else -offset * rs)
    return x.as_strided((*x.shape[:-2], length), (*x.stride()[:-2], rs + cs), start)


def trace(x, /, *, offset: int = 0, dtype=None):
    return ember.sum(diagonal(x, offset=offset), dim=-1, dtype=dtype)


def vector_norm(x, /, *, axis=None, keepdims: builtins.bool = False, ord=2):  # noqa: A002
    a = ember.abs(x)
    if ord == math.inf:
        return _xp.max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return _xp.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _xp.sum((a != 0).to(x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return _xp.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return ember.sqrt(_xp.sum(a * a, axis=axis, keepdims=keepdims))
    return _xp.sum(a ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def matrix_norm(x, /, *, keepdims: builtins.bool = False, ord="fro"):  # noqa: A002
    if ord == "fro":
        return vector_norm(x, axis=(-2, -1), keepdims=keepdims, ord=2)
    if ord in (1, -1, math.inf, -math.inf):
        axis = -2 if ord in (1, -1) else -1  # sum over rows (1) or over columns (inf)
        sums = _xp.sum(ember.abs(x), axis=axis, keepdims=True)
        red = _xp.max if ord > 0 else _xp.min
        out = red(sums, axis=-1 if axis == -2 else -2, keepdims=True)
        return out if keepdims else out.reshape(x.shape[:-2])
    return _la("matrix_norm")(x, ord=ord, keepdim=keepdims)


def matrix_power(x, n: int, /):
    if n < 0:
        return matrix_power(inv(x), -n)
    result = ember.zeros_like(x) + _xp.eye(x.shape[-1], dtype=x.dtype)
    base = x
    while n:
        if n & 1:
            result = ember.matmul(result, base)
        n >>= 1
        if n:
            base = ember.matmul(base, base)
    return result


def cross(x1, x2, /, *, axis: int = -1):
    a = _xp.moveaxis(x1, axis, -1)
    b = _xp.moveaxis(x2, axis, -1)
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    out = _xp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return _xp.moveaxis(out, -1, axis)


def _forward(name: str, **renames):
    def fn(x, /, *args, **kwargs):
        for k, v in renames.items():
            if k in kwargs:
                kwargs[v] = kwargs.pop(k)
        return _la(name)(x, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The array API's linalg.{name}: ember.linalg.{name}."
    return fn


cholesky = _forward("cholesky")
det = _forward("det")
eigh = _forward("eigh")
eigvalsh = _forward("eigvalsh")
inv = _forward("inv")
matrix_rank = _forward("matrix_rank")
pinv = _forward("pinv")
qr = _forward("qr")
slogdet = _forward("slogdet")
solve = _forward("solve")
svd = _forward("svd")
svdvals = _forward("svdvals")
