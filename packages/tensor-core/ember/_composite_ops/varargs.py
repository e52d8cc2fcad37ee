"""The functions torch itself writes in Python over varargs (cartesian_prod(*tensors),
block_diag(*tensors), ...) and its plain queries: exported from ``ember`` as they are."""

from __future__ import annotations

import collections.abc
import math
import numbers
import warnings

from ember import _C, _shape
from ember._composite_ops._common import _finish, _is_tensor, _Tensor


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, as itertools.product: (N1*...*Nk, k), or the
    tensor itself for one."""
    for i, t in enumerate(tensors):  # torch's parser first: a TensorList, given unpacked
        if not _is_tensor(t):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = _shape.meshgrid(*tensors, indexing="ij")
    return _shape.stack([g.reshape(-1) for g in grids], 1)


def block_diag(*tensors):
    """The block-diagonal matrix of the tensors (0-d and 1-d ones as one-row matrices), in
    their promoted dtype."""
    for i, t in enumerate(tensors):  # every element's type first, as torch's parser
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.dim()} dimensions")
        mats.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not mats:
        return _C.empty((1, 0))  # torch's
    dt = _C._result_type(*tensors)  # torch's rule: 0-d tensors count only by category
    rows = sum(m.shape[0] for m in mats)
    cols = sum(m.shape[1] for m in mats)
    device = mats[0].device
    parts = []
    col = 0
    for m in mats:
        left = _C.zeros((m.shape[0], col), dtype=dt, device=device)
        right = _C.zeros((m.shape[0], cols - col - m.shape[1]), dtype=dt, device=device)
        parts.append(_C.cat([left, m.to(dt), right], 1))
        col += m.shape[1]
    return _C.cat(parts, 0) if rows else _C.zeros((0, cols), dtype=dt, device=device)


def chain_matmul(*matrices, out=None):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    from ember import linalg

    for i, m in enumerate(matrices):
        if not isinstance(m, _C.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(m).__name__}")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return _finish(matrices[0].clone(), out)
    return linalg.multi_dot(list(matrices), out=out)


def unravel_index(indices, shape):
    """The coordinates of flat indices in an array of `shape`: a tuple of tensors."""
    # torch's order of checks: the indices' dtype, the shape's type, its entries, their signs
    if not _is_tensor(indices):  # (ember also takes ints and lists of them, as NumPy's)
        if not isinstance(indices, (numbers.Integral, list, tuple)):
            raise TypeError(f"unravel_index(): argument 'indices' must be Tensor, not "
                            f"{type(indices).__name__}")
        indices = _C.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype == _C.bool:
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    # any sequence, as torch's (a bool is an int; a str is a sequence: '' is the shape ())
    if not isinstance(shape, (int, collections.abc.Sequence)):
        raise TypeError("expected 'shape' to be int or sequence of ints, but got "
                        f"{type(shape)}")
    if isinstance(shape, int):
        shape = (shape,)
    for d in shape:
        if not isinstance(d, int):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    total = math.prod(shape)
    indices = indices.to(_C.int64)  # (torch's coordinates are int64 whatever the indices' dtype)
    # (beyond int64's range every int64 index is in range: nothing to compare)
    if total <= 2**63 - 1 and bool(((indices < -total) | (indices >= total)).any()):
        raise ValueError(f"'indices' must be in range [{-total}, {total})")
    # torch's formula: coordinate d is floor(index / (the product of the sizes after d)) modulo
    # size d, so a negative index counts from the end
    coords, coef = [], 1
    for s in reversed(shape):
        if coef > 2**63 - 1:  # (floor of an int64 index over it: 0, or -1 below 0)
            q = -(indices < 0).to(_C.int64)
        else:
            q = indices.div(coef, rounding_mode="floor")
        coords.append(q.remainder(s) if s else q)
        coef *= s
    return tuple(reversed(coords))


def numel(input) -> int:
    if not _is_tensor(input):
        raise TypeError(f"numel(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.numel()


def is_tensor(obj) -> bool:
    return isinstance(obj, _Tensor)


def is_storage(obj) -> bool:
    return type(obj).__name__ in ("UntypedStorage", "TypedStorage")


def _expect_tensor(name: str, input) -> None:
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def is_floating_point(input) -> bool:
    _expect_tensor("is_floating_point", input)
    return input.is_floating_point()


def is_signed(input) -> bool:
    _expect_tensor("is_signed", input)
    return input.is_signed()
