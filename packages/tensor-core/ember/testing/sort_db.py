"""The sorting and selecting ops in the op database: each works along one dim, and each entry
gives its NumPy reference, the input dtypes it takes (torch's), what an empty or short dim
does, and how its indices are checked.

References order NaN as the largest value (torch's order) and keep equal values in their
original order (``stable=True``). Where torch does not promise which of several equal values'
indices it returns (topk, kthvalue, median, cummax, ...), the indices are checked by what they
select: gathering the input at them must give the values. The generic tests are
``tests/test_ops_sort_db.py``; the ops of the sort family with other argument forms (unique,
searchsorted, bucketize, histc, histogram, isin, bincount, mode) are named in ``ELSEWHERE``
with the module that tests each.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

import ember
from ember.testing.opdb import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    Domain,
    make_tensor,
    rng_for,
    round_to,
)

NUMERIC = INT_DTYPES + FLOAT_DTYPES  # everything but bool
# small integers and whole floats, so that rows have ties; NaN added to floating inputs
TIES = Domain(lo=-3.0, hi=3.0, int_lo=-3, int_hi=3, integer_valued=True)


def _dense_rank(a: np.ndarray) -> np.ndarray:
    """Equal values share a rank, NaN ranks above everything (torch's order)."""
    if a.size == 0:
        return np.zeros(a.shape, dtype=np.int64)
    _, inverse = np.unique(a.reshape(-1), return_inverse=True)  # NaNs last, as one value
    return inverse.reshape(a.shape)


def _order(a: np.ndarray, axis: int, descending: bool = False) -> np.ndarray:
    rank = _dense_rank(a)
    return np.argsort(-rank if descending else rank, axis=axis, kind="stable")


def _sorted(a, axis, descending=False):
    return np.take_along_axis(a, _order(a, axis, descending), axis)


def _lower_median(a, axis, skip_nan):
    s = _sorted(a, axis)
    n = a.shape[axis]
    if skip_nan and a.dtype.kind == "f":
        valid = (~np.isnan(a)).sum(axis=axis, keepdims=True)
        pos = np.maximum(valid - 1, 0) // 2
        out = np.take_along_axis(s, pos, axis)
        return np.where(valid == 0, np.nan, out).squeeze(axis)
    out = np.take(s, (n - 1) // 2, axis=axis)
    if a.dtype.kind == "f":
        out = np.where(np.isnan(a).any(axis=axis), np.nan, out)
    return out


def _cumulative(f):
    def ref(a, axis):
        return f.accumulate(a, axis=axis)  # NaN propagates, as torch's cummax/cummin
    return ref


def _quantile(nan_aware):
    def ref(a, axis):
        with warnings.catch_warnings():  # an all-NaN row: NaN, as torch (NumPy warns)
            warnings.simplefilter("ignore", RuntimeWarning)
            f = np.nanquantile if nan_aware else np.quantile
            return f(a, 0.3, axis=axis)
    return ref


@dataclass
class SortInfo:
    name: str  # the entry's name: the registry op's, or the op's and a variant's
    call: Callable  # (tensor, dim, keepdim) -> ember's result (a tensor or (values, indices))
    ref: Callable  # (array, axis) -> the values, keepdims=False
    dtypes: tuple = ALL_DTYPES
    # "none" (values only), "only" (the result is the indices), "exact" (compared with
    # `ref_indices`), "gather" (checked by what they select)
    indices: str = "none"
    ref_indices: Callable | None = None  # (array, axis) -> the indices, for "exact"/"only"
    keepdim: bool = False  # the op reduces the dim (and takes keepdim=)
    reduces: bool = False
    k: int = 0  # topk / kthvalue's k: a dim shorter than k raises
    nan: bool = True  # floating samples include NaN
    dims: str = "any"  # "any" or "first" (msort: dim 0 only)
    result_dtype: Callable[[str], str] = lambda dt: dt
    op: str = ""  # the registry op, where the entry is a variant of it ("" : the name)

    @property
    def registry_name(self) -> str:
        return self.op or self.name

    def expected_error(self, shape: tuple, dim: int):
        """The exception class torch raises for this shape (None: it returns)."""
        n = shape[dim] if shape else 1
        numel = int(np.prod(shape)) if shape else 1
        if self.name == "quantile" or self.name == "nanquantile":
            return RuntimeError if numel == 0 else None
        if self.name in ("kthvalue", "median", "nanmedian") and n == 0:
            return IndexError
        if self.k and n < self.k:
            return RuntimeError
        return None

    def samples(self) -> Iterator[tuple]:
        """(shape, dim, keepdim, layout)"""
        shapes = [(), (6,), (3, 5), (2, 3, 4), (0,), (3, 0), (0, 4), (2, 0, 3)]
        for shape in shapes:
            dims = [0] if self.dims == "first" or not shape else [0, -1]
            for dim in dims:
                for keepdim in ((False, True) if self.keepdim else (False,)):
                    yield shape, dim, keepdim, "contiguous"
        for layout in ("transposed", "strided"):
            yield (4, 5), 0 if self.dims == "first" else -1, False, layout
            yield (3, 4, 2), 0 if self.dims == "first" else 1, self.keepdim, layout

    def make_input(self, shape, dtype, layout) -> tuple[np.ndarray, ember.Tensor]:
        rng = rng_for(self.name, dtype, shape, layout)
        if dtype == "bool":
            arr = rng.integers(0, 2, size=shape).astype(bool)
        elif dtype in INT_DTYPES:
            lo = 0 if dtype == "uint8" else TIES.int_lo
            arr = rng.integers(lo, TIES.int_hi + 1, size=shape).astype(np.int64)
        else:
            arr = np.asarray(np.round(rng.uniform(TIES.lo, TIES.hi, size=shape)))
            if self.nan and arr.size:
                arr[np.asarray(rng.random(shape)) < 0.15] = np.nan
            arr = round_to(arr, dtype)
        return arr, make_tensor(arr, dtype, layout)


def _sort(descending):
    return lambda x, d, k: ember.sort(x, dim=d, descending=descending, stable=True)


SORTS: dict[str, SortInfo] = {
    op.name: op for op in [
        SortInfo("sort", _sort(False), lambda a, ax: _sorted(a, ax), indices="exact",
                 ref_indices=lambda a, ax: _order(a, ax)),
        SortInfo("sort_descending", _sort(True), lambda a, ax: _sorted(a, ax, True),
                 indices="exact", ref_indices=lambda a, ax: _order(a, ax, True), op="sort"),
        SortInfo("argsort", lambda x, d, k: ember.argsort(x, stable=True, dim=d),
                 lambda a, ax: _order(a, ax), indices="only",
                 ref_indices=lambda a, ax: _order(a, ax)),
        SortInfo("msort", lambda x, d, k: ember.msort(x), lambda a, ax: _sorted(a, 0),
                 dims="first"),
        SortInfo("topk", lambda x, d, k: ember.topk(x, 2, d),
                 lambda a, ax: np.take(_sorted(a, ax, True), [0, 1], axis=ax),
                 dtypes=NUMERIC, indices="gather", k=2),
        SortInfo("topk_smallest", lambda x, d, k: ember.topk(x, 2, d, largest=False),
                 lambda a, ax: np.take(_sorted(a, ax), [0, 1], axis=ax),
                 dtypes=NUMERIC, indices="gather", k=2, op="topk"),
        SortInfo("kthvalue", lambda x, d, k: ember.kthvalue(x, 2, d, keepdim=k),
                 lambda a, ax: np.take(_sorted(a, ax), 1, axis=ax), dtypes=NUMERIC,
                 indices="gather", keepdim=True, reduces=True, k=2),
        SortInfo("median", lambda x, d, k: ember.median(x, d, keepdim=k),
                 lambda a, ax: _lower_median(a, ax, False), dtypes=NUMERIC,
                 indices="gather", keepdim=True, reduces=True),
        SortInfo("nanmedian", lambda x, d, k: ember.nanmedian(x, d, keepdim=k),
                 lambda a, ax: _lower_median(a, ax, True), dtypes=NUMERIC,
                 indices="gather", keepdim=True, reduces=True),
        SortInfo("cummax", lambda x, d, k: ember.cummax(x, d), _cumulative(np.maximum),
                 indices="gather"),
        SortInfo("cummin", lambda x, d, k: ember.cummin(x, d), _cumulative(np.minimum),
                 indices="gather"),
        SortInfo("quantile", lambda x, d, k: ember.quantile(x, 0.3, d, keepdim=k),
                 _quantile(False), dtypes=("float32", "float64"), keepdim=True, reduces=True),
        SortInfo("nanquantile", lambda x, d, k: ember.nanquantile(x, 0.3, d, keepdim=k),
                 _quantile(True), dtypes=("float32", "float64"), keepdim=True, reduces=True),
    ]
}

# The sort family's other ops and the test module that checks each.
ELSEWHERE = {
    "unique": "test_sorting.py",
    "unique_consecutive": "test_sorting.py",
    "searchsorted": "test_sorting.py",
    "bucketize": "test_sorting.py",
    "histc": "test_sorting.py",
    "histogram": "test_sorting.py",
    "isin": "test_api_ops.py",
    "bincount": "test_sorting.py",
    "mode": "test_sorting.py",
}
