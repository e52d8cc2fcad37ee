"""ember.array_api.linalg: the standard's linear-algebra extension.

Products, norms, diagonals and traces are composed here from core ops (complex inputs
included: norms are of ``abs(x)``, ``vecdot`` conjugates its first operand); the factorisations
and solvers (``inv``, ``solve``, ``cholesky``, ``qr``, ``svd``, ``eigh``, ``det``, ...) forward to
``ember.linalg`` with the standard's signatures, and raise ``NotImplementedError`` naming the op
while the core lacks it (and the core's error for a complex input while it has no complex
kernel for them).
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
    """The vector norm over `axis` (all by default), of |x|: real, in the precision of x for a
    complex x (complex64 -> float32)."""
    a = ember.abs(x)
    if ord == math.inf:
        return _xp.max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return _xp.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _xp.sum((a != 0).to(a.dtype), axis=axis, keepdims=keepdims)
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
    dtype = _xp.result_type(x1, x2)  # (the products of 0-d components promote by category)
    x1, x2 = x1.to(dtype), x2.to(dtype)
    a = _xp.moveaxis(x1, axis, -1)
    b = _xp.moveaxis(x2, axis, -1)
    a0, a1, a2 = (a[..., i] for i in range(3))
    b0, b1, b2 = (b[..., i] for i in range(3))
    out = _xp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return _xp.moveaxis(out, -1, axis)


# The factorisations and solvers: ember.linalg's, with the standard's signatures (the options
# are keyword-only, named as the standard names them). Their complex cases raise where the core
# has no complex kernel for them yet.


def cholesky(x, /, *, upper: builtins.bool = False):
    return _la("cholesky")(x, upper=upper)


def det(x, /):
    return _la("det")(x)


def eigh(x, /):
    return _la("eigh")(x)


def eigvalsh(x, /):
    return _la("eigvalsh")(x)


def inv(x, /):
    return _la("inv")(x)


def _rtol(rtol):
    """The standard's rtol array is one per matrix (shape: the batch); the core's, as torch's, is
    compared with the singular values (shape: the batch, then k): a trailing unit axis."""
    return rtol.unsqueeze(-1) if isinstance(rtol, ember.Tensor) else rtol


def matrix_rank(x, /, *, rtol=None):
    return _la("matrix_rank")(x, rtol=_rtol(rtol))


def pinv(x, /, *, rtol=None):
    return _la("pinv")(x, rtol=_rtol(rtol))


def qr(x, /, *, mode: str = "reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return _la("qr")(x, mode=mode)


def slogdet(x, /):
    return _la("slogdet")(x)


def solve(x1, x2, /):
    """The solution X of x1 X = x2; a 1-d x2 is one vector (shape (M,)), any other x2 a stack of
    matrices (the standard's rule, which torch's shape heuristic can read otherwise)."""
    if x2.ndim >= 2 and x2.ndim == x1.ndim - 1 and tuple(x2.shape) == tuple(x1.shape[:-1]):
        # torch's rule would take x2 for a batch of vectors here: a leading unit batch dim
        # makes it a stack of matrices, with the same broadcast batch
        x2 = x2.unsqueeze(0)
    dtype = _xp.result_type(x1, x2)  # the core wants one dtype; the standard promotes
    return _la("solve")(x1.to(dtype), x2.to(dtype))


def svd(x, /, *, full_matrices: builtins.bool = True):
    return _la("svd")(x, full_matrices=full_matrices)


def svdvals(x, /):
    return _la("svdvals")(x)
