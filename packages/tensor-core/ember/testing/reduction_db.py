"""The op database's reductions: one entry per reduction op of the registry (family
"reduction"), read by the generic reduction tests of every package (installed with the core:
``from ember.testing import reduction_db``).

Each entry holds the op's NumPy reference, the input dtypes it takes (the others are refused),
its result dtype rule, which forms of ``dim`` it takes (one int, a tuple, or none), whether it has
``keepdim`` and ``out=``, what it gives over an empty reduction (an identity, NaN, or a refusal)
and whether it is differentiable. ``samples`` generates the sample inputs: 0-d to 3-d shapes,
zero-size ones, every dim form (negative dims, tuples, all dims), keepdim both ways, contiguous
and non-contiguous layouts. Like the elementwise entries, references take torch's rules: integer
sums accumulate in int64, floating ones are computed in float64 and rounded once to the result
dtype.

``ELSEWHERE`` names the registry's other reduction ops and the test module that checks each
(ops whose arguments are not a plain (input, dim, keepdim): cov, norms, trapezoid, ...), so that
a new reduction without an entry in either fails ``test_every_reduction_has_an_entry``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ember.testing.opdb import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    NP_DTYPE,
    TOLERANCES,
    Domain,
    make_tensor,
    rng_for,
    round_to,
    sample_values,
)

NUMERIC = INT_DTYPES + FLOAT_DTYPES  # everything but bool


def _int64_or_same(dtype: str) -> str:
    return "int64" if dtype == "bool" or dtype in INT_DTYPES else dtype


def _same(dtype: str) -> str:
    return dtype


def _bool_or_uint8(dtype: str) -> str:
    return "uint8" if dtype == "uint8" else "bool"


def _int64(dtype: str) -> str:
    return "int64"


def _uint64(dtype: str) -> str:
    return "uint64"


def _float_default(dtype: str) -> str:
    return dtype if dtype in FLOAT_DTYPES else "float32"


@dataclass
class Sample:
    shape: tuple
    dim: Any  # None (every dim), an int, or a tuple of ints
    keepdim: bool
    layout: str = "contiguous"

    def __repr__(self) -> str:
        return f"shape={self.shape} dim={self.dim} keepdim={self.keepdim} {self.layout}"

    def kwargs(self, op: ReductionInfo) -> dict:
        kw = {}
        if self.dim is not None:
            kw["dim"] = self.dim
        if op.keepdim and (self.dim is not None or op.keepdim_without_dim):
            kw["keepdim"] = self.keepdim
        return kw

    def axes(self) -> tuple | None:
        if self.dim is None or self.dim == () or not self.shape:
            return None  # every dim (a () dim reduces them all, as torch; a 0-d's dim 0 too)
        dims = self.dim if isinstance(self.dim, tuple) else (self.dim,)
        n = max(len(self.shape), 1)
        return tuple(sorted(d % n for d in dims))


@dataclass
class ReductionInfo:
    name: str
    ref: Callable  # (float64/int64/bool array, axes tuple or None) -> array (keepdims=False)
    result: Callable[[str], str]  # input dtype -> result dtype
    dtypes: tuple = ALL_DTYPES  # input dtypes it takes; the others raise RuntimeError
    dims: str = "tuple"  # "tuple": an int or a tuple; "int": one int only
    dim_required: bool = False
    keepdim: bool = True
    keepdim_without_dim: bool = False  # keepdim= allowed without dim= (torch's nansum, ...)
    out: bool = True
    empty: str = "identity"  # over an empty reduction: "identity" (its reference) or "raise"
    differentiable: bool = True  # over floating inputs
    domain: Domain = field(default_factory=Domain)
    tol: dict = field(default_factory=dict)  # result dtype -> (rtol, atol)
    method: bool = True

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return self.tol.get(dtype, TOLERANCES.get(dtype, (0.0, 0.0)))

    def reference(self, arr: np.ndarray, sample: Sample, in_dtype: str) -> tuple[np.ndarray, str]:
        """The expected result and its dtype name."""
        rdt = self.result(in_dtype)
        src = arr.astype(np.float64) if in_dtype in FLOAT_DTYPES else arr
        axes = sample.axes()
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "Mean of empty slice"
            r = np.asarray(self.ref(src, axes))
        if sample.keepdim and self.keepdim and (sample.dim is not None
                                                or self.keepdim_without_dim):
            r = r.reshape(tuple(1 if axes is None or i in axes else s
                                for i, s in enumerate(sample.shape)))
        if rdt in FLOAT_DTYPES:
            r = round_to(r, rdt)
        elif rdt != "bool":
            with np.errstate(all="ignore"):
                r = r.astype(NP_DTYPE[rdt])
        return r, rdt

    def is_empty_reduction(self, sample: Sample) -> bool:
        axes = sample.axes()
        shape = sample.shape or (1,)
        return any(shape[a] == 0 for a in (axes if axes is not None else range(len(shape))))

    def samples(self, dtype: str) -> Iterator[Sample]:
        shapes = [(), (5,), (3, 4), (2, 3, 4), (0,), (3, 0), (2, 0, 3)]
        for shape in shapes:
            n = len(shape)
            dims: list = [] if self.dim_required else [None]
            dims += [0, -1] if n else [0]
            if self.dims == "tuple" and n >= 2:
                dims += [(0, -1), tuple(range(n))]
            for dim in dims:
                for keepdim in (False, True) if (dim is not None or self.keepdim_without_dim) \
                        and self.keepdim else (False,):
                    yield Sample(shape, dim, keepdim)
        for layout in ("transposed", "strided"):
            yield Sample((4, 5), -1, False, layout)
            yield Sample((3, 4, 2), 1, True, layout)
            if not self.dim_required:
                yield Sample((4, 5), None, False, layout)

    def make_input(self, sample: Sample, dtype: str) -> tuple[np.ndarray, Any]:
        rng = rng_for(self.name, dtype, repr(sample))
        arr = sample_values(rng, sample.shape, dtype, self.domain)
        return arr, make_tensor(arr, dtype, sample.layout)


# ---- references (keepdims=False; `axes` None means every dim) ----

def _sum(a, axes):
    return np.sum(a.astype(np.int64) if a.dtype != np.float64 else a, axis=axes)


def _prod(a, axes):
    return np.prod(a.astype(np.int64) if a.dtype != np.float64 else a, axis=axes)


def _logsumexp(a, axes):
    a = a.astype(np.float64)
    if a.size == 0:
        return np.log(np.sum(np.exp(a), axis=axes))
    m = np.max(a, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.sum(np.exp(a - m), axis=axes)) + np.squeeze(m, axis=axes)


def _var(a, axes):
    return np.var(a, axis=axes, ddof=1)


def _std(a, axes):
    return np.std(a, axis=axes, ddof=1)


def _arg(f):
    def ref(a, axes):
        if axes is None:
            return f(a.reshape(-1))
        return f(a, axis=axes[0])
    return ref


def _hash(a, axes):
    """hash_tensor: the xor of each element's 64 bits, floats as float64, the rest as int64."""
    bits = (a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64)).view(np.uint64)
    return np.bitwise_xor.reduce(bits, axis=axes)


def _all(a, axes):
    return np.all(a, axis=axes)


def _any(a, axes):
    return np.any(a, axis=axes)


SMALL = Domain(lo=-1.5, hi=1.5, int_lo=-2, int_hi=2)  # products stay in range

REDUCTIONS: dict[str, ReductionInfo] = {
    op.name: op for op in [
        ReductionInfo("sum", _sum, _int64_or_same),
        ReductionInfo("nansum", lambda a, ax: np.nansum(a.astype(np.int64) if a.dtype != np.float64
                                                        else a, axis=ax),
                      _int64_or_same, keepdim_without_dim=True),
        ReductionInfo("prod", _prod, _int64_or_same, dims="int", domain=SMALL),
        ReductionInfo("mean", lambda a, ax: np.mean(a, axis=ax), _same, dtypes=FLOAT_DTYPES),
        ReductionInfo("nanmean", lambda a, ax: np.nanmean(a, axis=ax), _same, dtypes=FLOAT_DTYPES,
                      keepdim_without_dim=True),
        ReductionInfo("amax", lambda a, ax: np.max(a, axis=ax), _same, empty="raise",
                      keepdim_without_dim=True),
        ReductionInfo("amin", lambda a, ax: np.min(a, axis=ax), _same, empty="raise",
                      keepdim_without_dim=True),
        ReductionInfo("all", _all, _bool_or_uint8, differentiable=False),
        ReductionInfo("any", _any, _bool_or_uint8, differentiable=False),
        ReductionInfo("logsumexp", _logsumexp, _float_default, dim_required=True),
        ReductionInfo("var", _var, _same, dtypes=FLOAT_DTYPES, keepdim_without_dim=True,
                      tol={"float16": (4e-3, 1e-3), "bfloat16": (3e-2, 1e-2)}),
        ReductionInfo("std", _std, _same, dtypes=FLOAT_DTYPES, keepdim_without_dim=True,
                      tol={"float16": (4e-3, 1e-3), "bfloat16": (3e-2, 1e-2)}),
        ReductionInfo("argmax", _arg(np.argmax), _int64, dtypes=NUMERIC, dims="int",
                      empty="raise", differentiable=False, keepdim_without_dim=True),
        ReductionInfo("argmin", _arg(np.argmin), _int64, dtypes=NUMERIC, dims="int",
                      empty="raise", differentiable=False, keepdim_without_dim=True),
        ReductionInfo("count_nonzero", lambda a, ax: np.count_nonzero(a, axis=ax), _int64,
                      keepdim=False, out=False, differentiable=False),
        ReductionInfo("hash_tensor", _hash, _uint64, keepdim_without_dim=True, out=False,
                      empty="raise", differentiable=False),
    ]
}

# The registry's other reduction ops, each checked by its own tests (their arguments are not a
# plain (input, dim, keepdim), or they return several tensors).
ELSEWHERE = {
    "max": "test_reductions.py",  # values and indices, or elementwise with another tensor
    "min": "test_reductions.py",
    "aminmax": "test_api_ops.py",
    "std_mean": "test_reductions.py",
    "var_mean": "test_reductions.py",
    "norm": "test_api_ops.py",
    "frobenius_norm": "test_api_ops.py",
    "nuclear_norm": "test_api_ops.py",
    "dist": "test_api_ops.py",
    "renorm": "test_api_ops.py",
    "renorm_": "test_api_ops.py",
    "cov": "test_api_ops.py",
    "corrcoef": "test_api_ops.py",
    "trapezoid": "test_api_ops.py",
    "trapz": "test_api_ops.py",
    "cumulative_trapezoid": "test_api_ops.py",
    "logcumsumexp": "test_api_ops.py",
    "sum_to_size": "test_api_ops.py",
}
