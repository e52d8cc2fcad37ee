"""The op database: one entry per elementwise op, read by the generic op tests of every package
(installed with the core: ``from ember.testing import opdb``).

In the spirit of PyTorch's OpInfo (``torch/testing/_internal/opinfo/core.py``): each entry holds
the op's name, its dtype rule (the ``kind`` of ``ember._C._op_table()``), a NumPy reference, the
input dtypes it supports, a sample-input generator (broadcast shapes, non-contiguous and
zero-size inputs, Python scalars and 0-d tensors), tolerances per dtype and known skips with
their reasons. The generic tests (test_ops_elementwise.py) run op x dtype x variant from here.

The table ops are generated from ``ember._C._op_table()``; ``OPS`` must hold an entry for every
row of the table, so an op declared in op_table.h without an entry here fails
``test_every_table_op_has_an_entry``.

References are computed the way ember must compute, by PyTorch's rules: inputs are cast to the
op's compute dtype first (the promoted dtype; float64 for floating math, as the half types are
computed in float32 and rounded once), then the result is cast to the result dtype. NumPy's
own promotion (value-based scalars, int64 + float16 -> float64, ...) is never relied on.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import ember

# ---------------------------------------------------------------------------------------------
# dtypes

ALL_DTYPES = (
    "bool", "uint8", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64",
)  # fmt: skip
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("uint8", "int8", "int16", "int32", "int64")
INTEGRAL_DTYPES = ("bool",) + INT_DTYPES
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES  # everything but bool

# NumPy has no bfloat16: its values are held in float32 (every bfloat16 is a float32).
NP_DTYPE = {name: np.dtype(name) for name in ALL_DTYPES if name != "bfloat16"}
NP_DTYPE["bfloat16"] = np.dtype("float32")
NP_DTYPE["uint64"] = np.dtype("uint64")  # a result dtype only (hash_tensor)

# Tolerances (rtol, atol) per result dtype, as torch.testing.assert_close's defaults.
TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}


def edtype(name: str) -> ember.dtype:
    return getattr(ember, name)


def is_float(name: str) -> bool:
    return name in FLOAT_DTYPES


def category(name: str) -> int:
    return 0 if name == "bool" else 2 if is_float(name) else 1


# ---------------------------------------------------------------------------------------------
# PyTorch's type promotion, written out independently of ember (checked against torch's table in
# test_promotion.py)

_ORDER = ALL_DTYPES
# promote_types for the table's dtypes (c10/core/ScalarType.cpp), row/column in _ORDER.
_PROMOTE_ROWS = {
    "bool":     "b1 u1 i1 i2 i4 i8 f2 bf f4 f8",
    "uint8":    "u1 u1 i2 i2 i4 i8 f2 bf f4 f8",
    "int8":     "i1 i2 i1 i2 i4 i8 f2 bf f4 f8",
    "int16":    "i2 i2 i2 i2 i4 i8 f2 bf f4 f8",
    "int32":    "i4 i4 i4 i4 i4 i8 f2 bf f4 f8",
    "int64":    "i8 i8 i8 i8 i8 i8 f2 bf f4 f8",
    "float16":  "f2 f2 f2 f2 f2 f2 f2 f4 f4 f8",
    "bfloat16": "bf bf bf bf bf bf f4 bf f4 f8",
    "float32":  "f4 f4 f4 f4 f4 f4 f4 f4 f4 f8",
    "float64":  "f8 f8 f8 f8 f8 f8 f8 f8 f8 f8",
}  # fmt: skip
_ABBREV = dict(zip("b1 u1 i1 i2 i4 i8 f2 bf f4 f8".split(), _ORDER))
PROMOTE_TABLE = {
    (a, b): _ABBREV[code]
    for a, row in _PROMOTE_ROWS.items()
    for b, code in zip(_ORDER, row.split())
}


def promote(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return PROMOTE_TABLE[a, b]


def operand_kind(x: Any) -> tuple[str, str]:
    """('dim' | 'zero' | 'scalar', dtype name) of an op argument (ember tensor or Python number)."""
    if isinstance(x, ember.Tensor):
        return ("dim" if x.dim() > 0 else "zero"), x.dtype.name
    if isinstance(x, bool):
        return "scalar", "bool"
    if isinstance(x, int):
        return "scalar", "int64"
    if isinstance(x, float):
        return "scalar", ember.get_default_dtype().name
    raise TypeError(f"not an operand: {x!r}")


def result_type(*operands: Any) -> str:
    """torch.result_type: dimensioned tensors first, then 0-d tensors, then Python numbers; each
    lower tier can only raise the category (bool < integer < floating)."""
    tiers: dict[str, str | None] = {"dim": None, "zero": None, "scalar": None}
    for x in operands:
        kind, dt = operand_kind(x)
        tiers[kind] = promote(tiers[kind], dt)

    def combine(higher: str | None, lower: str | None) -> str | None:
        if higher is None:
            return lower
        if lower is None or is_float(higher):
            return higher
        if higher == "bool" or is_float(lower):
            return promote(higher, lower)
        return higher

    return combine(tiers["dim"], combine(tiers["zero"], tiers["scalar"]))


class Unsupported(Exception):
    """The op refuses these dtypes (the tests expect NotImplementedError / RuntimeError)."""


def unary_dtypes(kind: str, dt: str) -> tuple[str, str]:
    """(compute, result) dtype of a unary op of `kind` on `dt`; Unsupported if refused."""
    default = ember.get_default_dtype().name
    if kind == "FLOAT":
        return (dt, dt) if is_float(dt) else (default, default)
    if kind == "FLOAT_ONLY":
        if not is_float(dt):
            raise Unsupported
        return dt, dt
    if kind == "SAME":
        if dt == "bool":
            raise Unsupported
        return dt, dt
    if kind == "PRED":
        return dt, "bool"
    if kind == "INTEGRAL":
        if is_float(dt):
            raise Unsupported
        return dt, dt
    raise AssertionError(f"unknown unary kind {kind}")


# ARITH ops that PyTorch computes on bool as their logical counterparts; the rest refuse bool.
BOOL_ARITH_OK = {"add", "mul", "maximum", "minimum", "fmax", "fmin"}


def binary_dtypes(name: str, kind: str, common: str) -> tuple[str, str]:
    """(compute, result) dtype of a binary op of `kind` whose operands promote to `common`."""
    default = ember.get_default_dtype().name
    if kind == "ARITH":
        if common == "bool" and name not in BOOL_ARITH_OK:
            raise Unsupported
        return common, common
    if kind in ("TRUEDIV", "FLOAT2"):
        return (common, common) if is_float(common) else (default, default)
    if kind == "FLOAT_ONLY2":
        if not is_float(common):
            raise Unsupported
        return common, common
    if kind in ("CMP", "LOGICAL"):
        return common, "bool"
    if kind == "BITWISE":
        if is_float(common):
            raise Unsupported
        return common, common
    if kind == "SHIFT":
        if common == "bool" or is_float(common):
            raise Unsupported
        return common, common
    raise AssertionError(f"unknown binary kind {kind}")


# ---------------------------------------------------------------------------------------------
# conversions

def to_numpy(t: ember.Tensor) -> np.ndarray:
    """The tensor's values as a NumPy array (bfloat16 as float32), through tolist()."""
    return np.array(t.tolist(), dtype=NP_DTYPE[t.dtype.name]).reshape(tuple(t.shape))


def make_tensor(arr: np.ndarray, dtype: str, layout: str = "contiguous") -> ember.Tensor:
    """An ember tensor holding `arr` (converted to `dtype`) in the requested memory layout:

    contiguous   a fresh C-ordered tensor
    transposed   a transposed view of a tensor (the last two dims swapped; 1-d: a stepped view)
    strided      a view taking every other element of each dimension of a larger tensor
    offset       a view that starts inside its storage ([1:] of a larger tensor)
    """
    arr = np.asarray(arr)
    if dtype not in ("bool", "bfloat16") and arr.dtype != NP_DTYPE[dtype]:
        # Convert in NumPy (wrapping, truncating): ember.tensor refuses out-of-range values.
        with np.errstate(invalid="ignore", over="ignore"):
            arr = arr.astype(NP_DTYPE[dtype])
    t = ember.tensor(arr.tolist(), dtype=edtype(dtype)).reshape(arr.shape)
    if layout == "contiguous" or arr.size <= 1:
        return t
    if layout == "transposed" and arr.ndim >= 2:
        base = ember.tensor(np.swapaxes(arr, -1, -2).tolist(), dtype=edtype(dtype))
        return base.reshape(np.swapaxes(arr, -1, -2).shape).transpose(-1, -2)
    if layout in ("strided", "transposed"):
        big = np.zeros(tuple(2 * s for s in arr.shape), dtype=arr.dtype)
        big[tuple(slice(None, None, 2) for _ in arr.shape)] = arr
        base = ember.tensor(big.tolist(), dtype=edtype(dtype)).reshape(big.shape)
        return base[tuple(slice(None, None, 2) for _ in arr.shape)]
    if layout == "offset":
        big = np.concatenate([np.zeros((1,) + arr.shape[1:], dtype=arr.dtype), arr])
        base = ember.tensor(big.tolist(), dtype=edtype(dtype)).reshape(big.shape)
        return base[1:]
    raise ValueError(f"unknown layout {layout}")


def values(t: Any) -> np.ndarray:
    """The exact values an operand holds, in float64 / int64 / bool (references start here)."""
    if isinstance(t, ember.Tensor):
        return to_numpy(t)
    return np.asarray(t)


def assert_close(actual: ember.Tensor, expected: np.ndarray, dtype: str,
                 rtol: float | None = None, atol: float | None = None, msg: str = "") -> None:
    """`actual` has dtype `dtype`, `expected`'s shape, and its values (floating: within the
    dtype's tolerance, NaN where NaN, inf where inf; others: exactly)."""
    assert isinstance(actual, ember.Tensor), f"{msg}: expected a Tensor, got {type(actual)}"
    assert actual.dtype.name == dtype, f"{msg}: dtype {actual.dtype.name}, expected {dtype}"
    assert tuple(actual.shape) == tuple(expected.shape), (
        f"{msg}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
    )
    got = to_numpy(actual)
    if is_float(dtype):
        r, a = TOLERANCES[dtype]
        r = r if rtol is None else rtol
        a = a if atol is None else atol
        exp = np.asarray(expected, dtype=np.float64)
        if dtype in ("float16", "bfloat16"):
            exp = round_to(exp, dtype)
        got = got.astype(np.float64)
        # a lean check first: assert_allclose is slow, and only needed to describe a failure
        with np.errstate(invalid="ignore"):
            ok = (got == exp) | (np.isfinite(exp) & (np.abs(got - exp) <= a + r * np.abs(exp)))
        ok |= np.isnan(got) & np.isnan(exp)
        if not ok.all():
            np.testing.assert_allclose(got, exp, rtol=r, atol=a, equal_nan=True, err_msg=msg)
    else:
        exp = np.asarray(expected).astype(NP_DTYPE[dtype])
        if not np.array_equal(got, exp):
            np.testing.assert_array_equal(got, exp, err_msg=msg)


def round_to(arr: np.ndarray, dtype: str) -> np.ndarray:
    """`arr` rounded to `dtype` (nearest even), returned as float64: the value ember stores."""
    arr = np.asarray(arr, dtype=np.float64)
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return arr.astype(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        with np.errstate(over="ignore"):
            f = arr.astype(np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
        out = rounded.view(np.float32).astype(np.float64)
        return np.where(np.isnan(arr), np.nan, out)
    if dtype == "float32":
        with np.errstate(over="ignore"):
            return arr.astype(np.float32).astype(np.float64)
    return arr


def np_compute(arr: np.ndarray, compute: str) -> np.ndarray:
    """Inputs cast to the compute dtype, floating math carried out in float64."""
    arr = np.asarray(arr)
    if is_float(compute):
        # a value converted to the compute dtype (e.g. int64 -> float16) is rounded first
        return round_to(arr.astype(np.float64), compute)
    with np.errstate(over="ignore", invalid="ignore"):
        return arr.astype(NP_DTYPE[compute])


# ---------------------------------------------------------------------------------------------
# sample inputs

_REGISTRY_SCHEMAS: dict[str, list[str]] = {}


def registry_schemas() -> dict[str, list[str]]:
    """{name: signatures} of the functions the op registry declares."""
    if not _REGISTRY_SCHEMAS:
        for row in ember._C._ops():
            if "function" in row["variants"]:
                _REGISTRY_SCHEMAS.setdefault(row["name"], list(row["signatures"]))
    return _REGISTRY_SCHEMAS


@dataclass
class SampleInput:
    args: tuple  # NumPy arrays (tensors-to-be) or Python numbers
    layouts: tuple = ()  # per array argument, see make_tensor
    kwargs: dict = field(default_factory=dict)
    desc: str = ""

    def tensors(self, dtypes: tuple[str, ...]) -> tuple:
        """The ember arguments: arrays as tensors of `dtypes` (one per argument), numbers as is."""
        out = []
        for i, a in enumerate(self.args):
            if isinstance(a, np.ndarray):
                layout = self.layouts[i] if i < len(self.layouts) else "contiguous"
                out.append(make_tensor(a, dtypes[i], layout))
            else:
                out.append(a)
        return tuple(out)

    def __repr__(self) -> str:
        shapes = [a.shape if isinstance(a, np.ndarray) else repr(a) for a in self.args]
        return f"SampleInput({self.desc or ''} {shapes} {self.layouts} {self.kwargs or ''})"


UNARY_SHAPES = [(), (7,), (3, 4), (2, 3, 4), (0,), (3, 0), (1, 5)]
NONCONTIG_SHAPES = [(4, 5), (2, 3, 4), (9,)]
BINARY_SHAPES = [
    ((3, 4), (3, 4)),
    ((3, 1), (1, 4)),
    ((4,), (3, 4)),
    ((2, 1, 4), (3, 1)),
    ((), (3, 4)),
    ((3, 4), ()),
    ((5,), (1,)),
    ((0, 4), (1, 4)),
    ((2, 0), (2, 1)),
]


def rng_for(*keys: Any) -> np.random.Generator:
    """A generator seeded from the test's identity, so every run sees the same samples (not
    hash(): str hashes are salted per process)."""
    return np.random.default_rng(zlib.crc32(repr(keys).encode()))


@dataclass
class Domain:
    """Where sample values are drawn from, per dtype category."""

    lo: float = -5.0
    hi: float = 5.0
    int_lo: int = -9
    int_hi: int = 9
    exclude_zero: bool = False  # e.g. integer divisors
    integer_valued: bool = False  # floating samples rounded to integers (exact references)


def sample_values(rng: np.random.Generator, shape: tuple, dtype: str, dom: Domain) -> np.ndarray:
    if dtype == "bool":
        v = rng.integers(0, 2, size=shape).astype(bool)
        if dom.exclude_zero:
            v = np.ones(shape, dtype=bool)
        return v
    if dtype in INT_DTYPES:
        lo, hi = dom.int_lo, dom.int_hi
        if dtype == "uint8":
            lo = max(lo, 0)
        v = rng.integers(lo, hi + 1, size=shape).astype(np.int64)
        if dom.exclude_zero:
            v[v == 0] = 1 if hi >= 1 else -1
        return v
    v = rng.uniform(dom.lo, dom.hi, size=shape)
    if dom.integer_valued:
        v = np.round(v)
    if dom.exclude_zero:
        v[v == 0] = 1.0
    # values exactly representable in the dtype, so that NumPy sees what ember holds
    return round_to(v, dtype)


# ---------------------------------------------------------------------------------------------
# the entries

@dataclass
class Skip:
    """A known difference: the tests named in `tests` ("reference", "scalar", "special", "large",
    "torch"; () for all) skip these input dtypes, giving `reason`."""

    reason: str
    dtypes: tuple = ALL_DTYPES
    tests: tuple = ()

    def applies(self, test: str, dtype: str) -> bool:
        return dtype in self.dtypes and (not self.tests or any(t in test for t in self.tests))


@dataclass
class OpInfo:
    name: str  # the table's name (the public function, unless `fn_name` says otherwise)
    arity: int
    kind: str
    ref: Callable  # NumPy reference over arrays in the compute dtype
    dtypes: tuple = ALL_DTYPES  # input dtypes the op accepts
    domain: Domain = field(default_factory=Domain)
    rhs_domain: Domain | None = None  # the second operand's domain, when it differs
    tol: dict = field(default_factory=dict)  # dtype -> (rtol, atol) overriding TOLERANCES
    skips: list = field(default_factory=list)
    fn_name: str | None = None  # the ember function when not `name` (div_trunc -> _div_trunc)
    operator: str | None = None  # Python operator, e.g. "+" ("-x" style for unary)
    scalar_rhs: tuple = (2, 1.5, True)  # Python numbers tried as the other operand
    in_table: bool = True
    inplace: bool = True  # has op_ / Tensor.op_ (torch's predicates do not)
    out: bool = True  # takes out=
    # input dtypes for which out= must have the result dtype itself (torch's "Found dtype Float
    # but expected Char" for floor of an int8 tensor; signbit's bool-only out=)
    exact_out: tuple = ()
    bool_result: str | None = None  # a SAME-kind op that takes bool: its result dtype then
    sample_fn: Callable | None = None  # custom generator (parametrised ops)
    call: Callable | None = None  # custom call(args, kwargs) for parametrised ops

    @property
    def fn(self) -> Callable:
        name = self.fn_name or self.name
        # private names (div_trunc's `_div_trunc`) are not re-exported by `import *`
        return getattr(ember, name, None) or getattr(ember._C, name)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return self.tol.get(dtype, TOLERANCES.get(dtype, (0.0, 0.0)))

    def skip_reason(self, test: str, dtype: str) -> str | None:
        for s in self.skips:
            if s.applies(test, dtype):
                return s.reason
        return None

    def supports(self, dtype: str) -> bool:
        return dtype in self.dtypes

    # ---- samples ----
    def sample_inputs(self, dtype: str, rhs_dtype: str | None = None) -> Iterator[SampleInput]:
        if self.sample_fn is not None:
            yield from self.sample_fn(self, dtype)
            return
        rng = rng_for(self.name, dtype, rhs_dtype)
        if self.arity == 1:
            for shape in UNARY_SHAPES:
                yield SampleInput((sample_values(rng, shape, dtype, self.domain),), desc="contig")
            for shape in NONCONTIG_SHAPES:
                for layout in ("transposed", "strided", "offset"):
                    a = sample_values(rng, shape, dtype, self.domain)
                    yield SampleInput((a,), (layout,), desc=layout)
            return
        rd = self.rhs_domain or self.domain
        bd = rhs_dtype or dtype
        for sa, sb in BINARY_SHAPES:
            a = sample_values(rng, sa, dtype, self.domain)
            b = sample_values(rng, sb, bd, rd)
            yield SampleInput((a, b), desc="broadcast")
        for layouts in (("transposed", "contiguous"), ("contiguous", "strided"),
                        ("strided", "transposed"), ("offset", "offset")):
            a = sample_values(rng, (4, 5), dtype, self.domain)
            b = sample_values(rng, (4, 5), bd, rd)
            yield SampleInput((a, b), layouts, desc="noncontig")
        # broadcasting a non-contiguous operand
        a = sample_values(rng, (3, 4), dtype, self.domain)
        b = sample_values(rng, (4,), bd, rd)
        yield SampleInput((a, b), ("transposed", "strided"), desc="noncontig-broadcast")

    def scalar_samples(self, dtype: str, signature: bool = True) -> Iterator[SampleInput]:
        """A tensor with a Python number on each side the op's signature takes one (its
        registry schema: `Tensor|Scalar`, as torch's overloads); both sides with
        signature=False (Python's operators)."""
        rng = rng_for(self.name, dtype, "scalar")
        a = sample_values(rng, (3, 4), dtype, self.domain)
        b = sample_values(rng, (3, 4), dtype, self.rhs_domain or self.domain)
        number_input, number_other = self.number_operands() if signature else (True, True)
        for s in self.scalar_rhs:
            if number_other:
                yield SampleInput((a, s), desc="tensor-scalar")
            if number_input:
                yield SampleInput((s, b), desc="scalar-tensor")

    def number_operands(self) -> tuple[bool, bool]:
        """Whether the function takes a Python number as its first / second operand (in any of
        its signatures: torch's Scalar-self overloads take one first)."""
        schemas = registry_schemas().get(self.fn_name or self.name)
        if schemas is None:
            return True, True
        takes = [False, False]
        for schema in schemas:
            types = [p.split(" ")[0] for p in schema[schema.index("(") + 1:].split(", ")[:2]]
            for i, t in enumerate(types):
                takes[i] = takes[i] or t in ("Tensor|Scalar", "Scalar")
        return tuple(takes)

    def large_sample(self, dtype: str) -> SampleInput:
        """More elements than one parallel chunk (the iterator's grain is 32768)."""
        rng = rng_for(self.name, dtype, "large")
        shape = (300, 257)
        args = tuple(sample_values(rng, shape, dtype, self.domain if i == 0 else
                                   (self.rhs_domain or self.domain))
                     for i in range(self.arity))
        return SampleInput(args, desc="large")

    # ---- reference ----
    def reference(self, args: tuple) -> tuple[np.ndarray, str]:
        """(expected values, expected dtype name) for ember arguments `args` (tensors/numbers).
        Raises Unsupported when the op must refuse these dtypes."""
        if self.arity == 1:
            (x,) = args
            if self.bool_result and x.dtype.name == "bool":
                compute, result = "int64", self.bool_result
            else:
                compute, result = unary_dtypes(self.kind, x.dtype.name)
            with np.errstate(all="ignore"):
                out = self.ref(np_compute(values(x), compute))
            return cast_result(out, result), result
        common = result_type(*args)
        compute, result = binary_dtypes(self.name, self.kind, common)
        a, b = (np_compute(values(v), compute) for v in args)
        with np.errstate(all="ignore"):
            out = self.ref(a, b)
        return cast_result(out, result), result


def cast_result(out: Any, result: str) -> np.ndarray:
    out = np.asarray(out)
    if is_float(result):
        return round_to(out.astype(np.float64), result)
    with np.errstate(over="ignore", invalid="ignore"):
        return out.astype(NP_DTYPE[result])


# ---- references needing more than one NumPy call ----

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _float_only(f: Callable) -> Callable:
    """Integer inputs pass through (floor/ceil/trunc of an integer is itself)."""
    return lambda x: x if x.dtype.kind in "biu" else f(x)


def _trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.trunc(a / b)
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return (q * np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64))).astype(a.dtype)


def _erfinv_scalar(y: float) -> float:
    """x with erf(x) = y, to double precision, independently of ember's algorithm: Winitzki's
    closed form as a start, then Newton on erf (|y| <= 0.5) or on log(erfc(x)) with the exact
    target 1 - |y| (the tails, where erf(x) rounds to 1 and only erfc keeps the digits)."""
    if math.isnan(y) or abs(y) > 1.0:
        return math.nan
    if abs(y) == 1.0 or y == 0.0:
        return math.copysign(math.inf, y) if y else y
    a, k = abs(y), 2.0 / math.sqrt(math.pi)
    ln = math.log1p(-a * a)
    t = 2.0 / (math.pi * 0.147) + ln / 2.0
    x = math.sqrt(math.sqrt(t * t - ln / 0.147) - t)
    for _ in range(6):
        if a <= 0.5:
            x -= (math.erf(x) - a) / (k * math.exp(-x * x))
        else:
            c = math.erfc(x)
            x += (math.log(c) - math.log1p(-a)) * c / (k * math.exp(-x * x))
    return math.copysign(x, y)


erfinv_reference = np.vectorize(_erfinv_scalar, otypes=[np.float64])


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log(y)))


def _fmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_or(a, b) if a.dtype == bool else np.fmax(a, b)


def _fmin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_and(a, b) if a.dtype == bool else np.fmin(a, b)


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_or(a, b) if a.dtype == bool else np.maximum(a, b)


def _minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.logical_and(a, b) if a.dtype == bool else np.minimum(a, b)


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind not in "iu":
        return np.power(a, b)
    # Integers: a negative (tensor) exponent gives 1 / a**-b truncated, as PyTorch computes it
    # (NumPy refuses); the Python-number case raises and is tested in test_errors.py.
    a, b = np.broadcast_arrays(a, b)
    neg = b < 0
    out = np.power(a, np.where(neg, 0, b))
    one = np.ones_like(a)
    inv = np.where(a == 1, one, np.where(a == -1, np.where(b % 2 == 0, one, -one), 0 * one))
    return np.where(neg, inv, out).astype(a.dtype)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), x, np.maximum(x, 0)) if x.dtype.kind == "f" else np.maximum(x, 0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))



# ---- the gamma-family, Bessel, normal-distribution and zeta functions: references by other
# algorithms than the kernels' (csrc/kernels/special_math.h), in plain Python ----

def _digamma_scalar(x: float) -> float:
    """Reflection below 1/2, then the recurrence up to 30 and the Stirling series with its
    Bernoulli terms written out (the kernel stops at 10 and uses Cephes's coefficients)."""
    if math.isnan(x) or x == math.inf:
        return x
    if x <= 0 and (x.is_integer() or math.isinf(x)):
        return math.copysign(math.inf, -x) if x == 0 else math.nan
    if x < 0.5:
        return _digamma_scalar(1 - x) - math.pi / math.tan(math.pi * x)
    acc = 0.0
    while x < 30:
        acc -= 1 / x
        x += 1
    bernoulli = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
    z = 1 / (x * x)
    series = sum(b * z**k / (2 * k) for k, b in enumerate(bernoulli, start=1))
    return acc + math.log(x) - 1 / (2 * x) - series


def _bessel_i_scalar(nu: int, x: float, scaled: bool) -> float:
    """(1/pi) integral_0^pi exp(x cos t) cos(nu t) dt by the trapezoid rule, which converges
    geometrically for a periodic integrand; scaled: times exp(-|x|)."""
    if math.isnan(x):
        return x
    if abs(x) < 1e-4:  # the series' first terms (the quadrature's rounding is 1e-17 absolute)
        r = (1 + x * x / 4) if nu == 0 else x / 2 * (1 + x * x / 8)
        return r * math.exp(-abs(x)) if scaled else r
    if abs(x) > 700:  # beyond exp's range: the leading term of the asymptotic series
        scaled_value = 1 / math.sqrt(2 * math.pi * abs(x)) if not math.isinf(x) else 0.0
        value = scaled_value if scaled else math.inf
        return math.copysign(value, x) if nu == 1 else value
    n = 400
    shift = abs(x)
    total = 0.0
    for j in range(n + 1):
        t = math.pi * j / n
        w = 0.5 if j in (0, n) else 1.0
        total += w * math.exp(x * math.cos(t) - shift) * math.cos(nu * t)
    r = total / n
    return r if scaled else r * math.exp(shift)


def _ndtr_scalar(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def _ndtri_scalar(p: float) -> float:
    """Bisection on ndtr (the kernel uses Newton's method on log_ndtr)."""
    if math.isnan(p) or p < 0 or p > 1:
        return math.nan
    if p in (0.0, 0.5, 1.0):
        return {0.0: -math.inf, 0.5: 0.0, 1.0: math.inf}[p]
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if _ndtr_scalar(mid) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _log_ndtr_scalar(x: float) -> float:
    """log(ndtr(x)); below -30 (where ndtr underflows) the asymptotic expansion
    -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4)."""
    if math.isnan(x) or x > -30:
        return x if math.isnan(x) else math.log(_ndtr_scalar(x))
    if math.isinf(x):
        return -math.inf
    return -x * x / 2 - math.log(-x * math.sqrt(2 * math.pi)) + math.log1p(-1 / x**2 + 3 / x**4)


def _erfcx_scalar(x: float) -> float:
    """exp(x^2) erfc(x); above 25 the asymptotic series (erfc underflows)."""
    if math.isnan(x):
        return x
    if x > 25:
        r = 1 / (2 * x * x)
        return (1 - r + 3 * r * r - 15 * r**3) / (x * math.sqrt(math.pi))
    if x * x > 709:
        return math.inf
    return math.exp(x * x) * math.erfc(x)


def _entr_scalar(x: float) -> float:
    if math.isnan(x):
        return x
    return -x * math.log(x) if x > 0 else 0.0 if x == 0 else -math.inf


def _zeta_scalar(s: float, q: float) -> float:
    """sum_{k<N} (k+q)^-s plus the Euler-Maclaurin tail at N = 200 (three terms)."""
    if math.isnan(s) or math.isnan(q) or s < 1:
        return math.nan
    if s == 1:
        return math.inf
    if q <= 0 and (q == math.floor(q) or s != math.floor(s)):
        return math.inf if q == math.floor(q) else math.nan  # a pole; a complex power
    try:
        return _zeta_sum(s, q)
    except OverflowError:  # a term (k + q)^-s beyond the float range
        return math.inf


def _zeta_sum(s: float, q: float) -> float:
    n = 200
    head = math.fsum((k + q) ** -s for k in range(n))
    a = n + q
    return head + a ** (1 - s) / (s - 1) + 0.5 * a ** -s + s / 12 * a ** (-s - 1)


def _igamma_scalar(a: float, x: float, upper: bool) -> float:
    """P(a, x) from its power series summed in full (math.fsum), Q = 1 - P; the kernel switches
    to a continued fraction for x >= a + 1. For the sample domain (x <= 9)."""
    if math.isnan(a) or math.isnan(x) or a < 0 or x < 0 or (a == 0 and x == 0):
        return math.nan
    if a == 0:
        return 0.0 if upper else 1.0
    if x == 0:
        return 1.0 if upper else 0.0
    terms, term = [], 1 / a
    for n in range(1, 400):
        terms.append(term)
        term *= x / (a + n)
    p = math.fsum(terms) * math.exp(a * math.log(x) - x - math.lgamma(a))
    return 1 - p if upper else p


def _xlog1py(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log1p(y)))


def _vec(f: Callable) -> Callable:
    return np.vectorize(f, otypes=[np.float64])


def _lgamma_scalar(x: float) -> float:
    if x <= 0 and float(x).is_integer():
        return math.inf  # the poles (math.lgamma raises there)
    return math.lgamma(x)


_lgamma = _vec(_lgamma_scalar)


def _orthogonal(family: str, shift: bool = False) -> Callable:
    """P_n(x) from numpy.polynomial (a unit coefficient vector), n truncated; 0 for n < 0. The
    Chebyshev V and W kinds, which NumPy lacks, from their relation to U:
    V_n = U_n - U_{n-1}, W_n = U_n + U_{n-1}."""
    from numpy.polynomial import chebyshev, hermite, hermite_e, laguerre, legendre

    evaluate = {"t": chebyshev.chebval, "u": None, "h": hermite.hermval,
                "he": hermite_e.hermeval, "l": laguerre.lagval, "p": legendre.legval}

    def cheb_u(x: float, n: int) -> float:
        if n < 0:
            return 0.0
        return float(chebyshev.chebval(x, chebyshev.poly2cheb(_u_power_series(n))))

    def one(x: float, n: float) -> float:
        if math.isnan(n):
            return math.nan
        k = int(math.trunc(n))
        if k <= 0:
            return 0.0 if k < 0 else 1.0  # whatever x is, as torch's
        if math.isnan(x):
            return math.nan
        if shift:
            x = 2 * x - 1
        if family in ("u", "v", "w"):
            u, u_prev = cheb_u(x, k), cheb_u(x, k - 1)
            return {"u": u, "v": u - u_prev, "w": u + u_prev}[family]
        c = np.zeros(k + 1)
        c[k] = 1
        return float(evaluate[family](x, c))

    return _vec(one)


def _u_power_series(n: int) -> np.ndarray:
    """U_n's coefficients in powers of x, from U_{k+1} = 2x U_k - U_{k-1}."""
    prev, cur = np.array([1.0]), np.array([0.0, 2.0])
    if n == 0:
        return prev
    for _ in range(n - 1):
        nxt = np.zeros(len(cur) + 1)
        nxt[1:] += 2 * cur
        nxt[: len(prev)] -= prev
        prev, cur = cur, nxt
    return cur


def _mpmath_unary(name: str) -> Callable:
    """torch.special's Bessel and Airy functions from mpmath at 30 digits (its own algorithms:
    hypergeometric series with as many guard digits as they need), with torch's values where the
    function is not evaluated: NaN at +-inf for J, Y and Ai, NaN below 0 and -inf (Y) or +inf (K)
    at 0; K is 0 at +inf. Ai below -2^40 is NaN in ember: its phase (2/3)|x|^(3/2) is beyond what
    the kernel resolves (see special_math.h)."""
    import mpmath

    j_or_y = name.startswith("bessel_")
    order = 1 if name.endswith("1") else 0
    evaluate = {
        "bessel_j": lambda x: mpmath.besselj(order, x),
        "bessel_y": lambda x: mpmath.bessely(order, x),
        "modified_bessel_k": lambda x: mpmath.besselk(order, x),
        "scaled_modified_bessel_k": lambda x: mpmath.exp(x) * mpmath.besselk(order, x),
        "airy_ai": mpmath.airyai,
    }[name.rstrip("01")]

    @functools.cache  # the variant tests evaluate the same samples again
    def one(x: float) -> float:
        if math.isnan(x):
            return x
        if name.startswith("bessel_j") or name == "airy_ai":
            if math.isinf(x) or (name == "airy_ai" and x < -(2.0**40)):
                return math.nan
        elif x < 0 or (j_or_y and math.isinf(x)):
            return math.nan
        elif x == 0:
            return -math.inf if j_or_y else math.inf
        elif math.isinf(x):
            return 0.0
        if "_k" in name and x <= 60:  # mpmath's besselk takes ~15 ms at 30 digits
            k = _k_series_mpmath(mpmath, order, x)
            return float(k * mpmath.exp(x) if name.startswith("scaled") else k)
        with mpmath.workdps(30):
            return float(evaluate(mpmath.mpf(x)))

    return _vec(lambda x: one(float(x)))


def _k_series_mpmath(mpmath, order: int, x: float):
    """K_0, K_1 from their defining series (Abramowitz and Stegun 9.6.13) in mpmath, carried
    with enough digits that the cancellation of its log term and its sum (~e^(2x)) leaves 30:
    K_n = (-1)^(n+1) (ln(x/2) + gamma) I_n + n/x
          + (-1)^n (1/2) sum_k (H_k + H_(k+n)) (x/2)^(2k+n) / (k! (k+n)!)."""
    with mpmath.workdps(30 + int(x)):
        z = mpmath.mpf(x)
        q = z * z / 4
        term = (z / 2) ** order
        h_k, h_kn = mpmath.mpf(0), mpmath.mpf(order)
        total, bessel_i, k = term * (h_k + h_kn), term, 0  # bessel_i: I_n's own series
        eps = mpmath.mpf(10) ** -(35 + int(x))
        while True:
            k += 1
            term = term * q / (k * (k + order))
            h_k += mpmath.mpf(1) / k
            h_kn += mpmath.mpf(1) / (k + order)
            step = term * (h_k + h_kn)
            total += step
            bessel_i += term
            if k > x and step < total * eps:
                break
        log_term = (mpmath.log(z / 2) + mpmath.euler) * bessel_i
        if order == 0:
            return +(total / 2 - log_term)
        return +(log_term + 1 / z - total / 2)


# J over both switch points' sides (the power series below 20, Hankel's series above) and both
# signs; Y and K over (0, 30] (K's series below 1, its quadrature above); Ai from -15 to 15 (the
# Maclaurin series from -10 to 2, the asymptotic series below, K_1/3 above).
_BESSEL_DOMAINS = {
    "bessel_j0": Domain(lo=-30.0, hi=30.0, int_lo=-30, int_hi=30),
    "bessel_y0": Domain(lo=0.01, hi=30.0, int_lo=1, int_hi=30),
    "modified_bessel_k0": Domain(lo=0.01, hi=30.0, int_lo=1, int_hi=30),
    "airy_ai": Domain(lo=-15.0, hi=15.0, int_lo=-15, int_hi=15),
}
_BESSEL = {f"special_{n}": _BESSEL_DOMAINS[n.replace("scaled_", "").replace("1", "0")]
           for n in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
                     "modified_bessel_k1", "scaled_modified_bessel_k0",
                     "scaled_modified_bessel_k1", "airy_ai")}


# x over [-1.5, 1.5] (inside and outside the orthogonality interval), degrees 0..12 (and -1).
_POLY_X = Domain(lo=-1.5, hi=1.5, int_lo=-1, int_hi=1)
_POLY_N = Domain(lo=-1.0, hi=12.0, int_lo=-1, int_hi=12, integer_valued=True)
_POLYNOMIALS = {
    f"special_{prefix}{name}": (kind, prefix == "shifted_")
    for prefix, name, kind in [
        ("", "chebyshev_polynomial_t", "t"), ("", "chebyshev_polynomial_u", "u"),
        ("", "chebyshev_polynomial_v", "v"), ("", "chebyshev_polynomial_w", "w"),
        ("shifted_", "chebyshev_polynomial_t", "t"), ("shifted_", "chebyshev_polynomial_u", "u"),
        ("shifted_", "chebyshev_polynomial_v", "v"), ("shifted_", "chebyshev_polynomial_w", "w"),
        ("", "hermite_polynomial_h", "h"), ("", "hermite_polynomial_he", "he"),
        ("", "laguerre_polynomial_l", "l"), ("", "legendre_polynomial_p", "p")]
}


POSITIVE = Domain(lo=0.05, hi=6.0, int_lo=1, int_hi=9)
UNIT = Domain(lo=-0.95, hi=0.95, int_lo=-1, int_hi=1)
NONZERO = Domain(exclude_zero=True)
SMALL_EXP = Domain(lo=-3.0, hi=3.0, int_lo=0, int_hi=3)

UNARY_REFS: dict[str, dict] = {
    "exp": dict(ref=np.exp),
    "exp2": dict(ref=np.exp2),
    "expm1": dict(ref=np.expm1),
    "log": dict(ref=np.log, domain=POSITIVE),
    "log2": dict(ref=np.log2, domain=POSITIVE),
    "log10": dict(ref=np.log10, domain=POSITIVE),
    "log1p": dict(ref=np.log1p, domain=Domain(lo=-0.9, hi=6.0, int_lo=0, int_hi=9)),
    "sqrt": dict(ref=np.sqrt, domain=POSITIVE),
    "rsqrt": dict(ref=lambda x: 1.0 / np.sqrt(x), domain=POSITIVE),
    "sin": dict(ref=np.sin),
    "cos": dict(ref=np.cos),
    "tan": dict(ref=np.tan, domain=Domain(lo=-1.4, hi=1.4, int_lo=-1, int_hi=1)),
    "asin": dict(ref=np.arcsin, domain=UNIT),
    "acos": dict(ref=np.arccos, domain=UNIT),
    "atan": dict(ref=np.arctan),
    "sinh": dict(ref=np.sinh),
    "cosh": dict(ref=np.cosh),
    "tanh": dict(ref=np.tanh),
    "asinh": dict(ref=np.arcsinh),
    "acosh": dict(ref=np.arccosh, domain=Domain(lo=1.0, hi=6.0, int_lo=1, int_hi=9)),
    "atanh": dict(ref=np.arctanh, domain=UNIT),
    "sigmoid": dict(ref=_sigmoid),
    "erf": dict(ref=_erf),
    "erfc": dict(ref=_erfc),
    "erfinv": dict(ref=erfinv_reference, domain=UNIT),
    "sinc": dict(ref=np.sinc),
    "lgamma": dict(ref=_lgamma, domain=Domain(lo=0.05, hi=6.0, int_lo=1, int_hi=9)),
    "digamma": dict(ref=_vec(_digamma_scalar), domain=Domain(lo=0.05, hi=6.0, int_lo=1, int_hi=9)),
    "i0": dict(ref=_vec(lambda x: _bessel_i_scalar(0, x, False))),
    "special_i0e": dict(ref=_vec(lambda x: _bessel_i_scalar(0, x, True)), fn_name="_special_i0e"),
    "special_i1": dict(ref=_vec(lambda x: _bessel_i_scalar(1, x, False)), fn_name="_special_i1"),
    "special_i1e": dict(ref=_vec(lambda x: _bessel_i_scalar(1, x, True)), fn_name="_special_i1e"),
    "special_ndtr": dict(ref=_vec(_ndtr_scalar), fn_name="_special_ndtr"),
    "special_ndtri": dict(ref=_vec(_ndtri_scalar),
                          domain=Domain(lo=0.01, hi=0.99, int_lo=0, int_hi=1),
                          fn_name="_special_ndtri"),
    "special_log_ndtr": dict(ref=_vec(_log_ndtr_scalar),
                             fn_name="_special_log_ndtr"),
    "special_erfcx": dict(ref=_vec(_erfcx_scalar),
                          fn_name="_special_erfcx"),
    "special_entr": dict(ref=_vec(_entr_scalar), domain=POSITIVE, fn_name="_special_entr"),
    **{name: dict(ref=_mpmath_unary(name.removeprefix("special_")), domain=domain,
                  fn_name="_" + name)
       for name, domain in _BESSEL.items()},
    "deg2rad": dict(ref=np.deg2rad),
    "rad2deg": dict(ref=np.rad2deg),
    "reciprocal": dict(ref=lambda x: 1.0 / x, domain=NONZERO),
    # (exact_out: torch's structured kernels of these write an out= of the result dtype only)
    "frac": dict(ref=lambda x: x - np.trunc(x), dtypes=FLOAT_DTYPES, exact_out=ALL_DTYPES),
    "neg": dict(ref=np.negative, dtypes=NUMERIC_DTYPES, operator="-x", exact_out=ALL_DTYPES),
    "abs": dict(ref=np.abs, dtypes=NUMERIC_DTYPES, operator="abs(x)", exact_out=ALL_DTYPES,
                domain=Domain(int_lo=-9, int_hi=9)),
    # bool: pow(x, 2) in int64, as torch's square; sign of a bool is itself
    "square": dict(ref=np.square, bool_result="int64"),
    "sign": dict(ref=lambda x: np.where(np.isnan(x), 0, np.sign(x)).astype(x.dtype),
                 bool_result="bool", exact_out=ALL_DTYPES),  # torch's sign(NaN) is 0, NumPy's NaN
    # NumPy's angle(-0.0) is pi, torch's 0
    "angle": dict(ref=lambda x: np.where(np.isnan(x), x, np.where(x < 0, np.pi, 0.0))),
    "relu": dict(ref=_relu, dtypes=NUMERIC_DTYPES, out=False),  # torch has no out= for relu
    "floor": dict(ref=_float_only(np.floor), dtypes=NUMERIC_DTYPES, exact_out=ALL_DTYPES),
    "ceil": dict(ref=_float_only(np.ceil), dtypes=NUMERIC_DTYPES, exact_out=ALL_DTYPES),
    "trunc": dict(ref=_float_only(np.trunc), dtypes=NUMERIC_DTYPES, exact_out=ALL_DTYPES),
    # torch's predicates have no in-place form; isnan/isinf/isfinite no out= either
    "isnan": dict(ref=np.isnan, inplace=False, out=False),
    "isinf": dict(ref=np.isinf, inplace=False, out=False),
    "isfinite": dict(ref=np.isfinite, inplace=False, out=False),
    "signbit": dict(ref=np.signbit, inplace=False, exact_out=ALL_DTYPES),
    "logical_not": dict(ref=np.logical_not),
    "bitwise_not": dict(ref=np.invert, dtypes=INTEGRAL_DTYPES, operator="~x",
                        exact_out=ALL_DTYPES),
}

_SHIFT_DOMAIN = Domain(int_lo=0, int_hi=6)

BINARY_REFS: dict[str, dict] = {
    "add": dict(ref=np.add, operator="+"),
    "sub": dict(ref=np.subtract, operator="-", dtypes=NUMERIC_DTYPES),
    "mul": dict(ref=np.multiply, operator="*"),
    "div": dict(ref=np.true_divide, operator="/", rhs_domain=NONZERO),
    "floor_divide": dict(ref=np.floor_divide, operator="//", rhs_domain=NONZERO,
                         dtypes=NUMERIC_DTYPES, scalar_rhs=(2, 1.5)),
    "div_trunc": dict(ref=_trunc_divide, rhs_domain=NONZERO, dtypes=NUMERIC_DTYPES,
                      fn_name="_div_trunc", scalar_rhs=(2, 1.5)),
    "remainder": dict(ref=np.remainder, operator="%", rhs_domain=NONZERO,
                      dtypes=NUMERIC_DTYPES, scalar_rhs=(2, 1.5)),
    "fmod": dict(ref=np.fmod, rhs_domain=NONZERO, dtypes=NUMERIC_DTYPES, scalar_rhs=(2, 1.5)),
    "pow": dict(ref=_pow, operator="**", dtypes=NUMERIC_DTYPES,
                domain=Domain(lo=0.1, hi=3.0, int_lo=-3, int_hi=3), rhs_domain=SMALL_EXP,
                scalar_rhs=(2, 0.5)),
    "maximum": dict(ref=_maximum),
    "minimum": dict(ref=_minimum),
    "atan2": dict(ref=np.arctan2),
    "hypot": dict(ref=np.hypot, dtypes=FLOAT_DTYPES),
    "copysign": dict(ref=np.copysign),
    "xlogy": dict(ref=_xlogy, rhs_domain=POSITIVE),
    "special_xlog1py": dict(ref=_xlog1py, rhs_domain=POSITIVE, fn_name="_special_xlog1py"),
    "igamma": dict(ref=_vec(lambda a, x: _igamma_scalar(a, x, False)), dtypes=FLOAT_DTYPES,
                   domain=Domain(lo=0.1, hi=6.0), rhs_domain=Domain(lo=0.05, hi=9.0)),
    "igammac": dict(ref=_vec(lambda a, x: _igamma_scalar(a, x, True)), dtypes=FLOAT_DTYPES,
                    domain=Domain(lo=0.1, hi=6.0), rhs_domain=Domain(lo=0.05, hi=9.0)),
    "special_zeta": dict(ref=_vec(_zeta_scalar), domain=Domain(lo=1.1, hi=6.0, int_lo=2, int_hi=9),
                         rhs_domain=POSITIVE, fn_name="_special_zeta"),
    **{name: dict(ref=_orthogonal(kind, shift), domain=_POLY_X, rhs_domain=_POLY_N,
                  fn_name="_" + name)
       for name, (kind, shift) in _POLYNOMIALS.items()},
    "logaddexp": dict(ref=np.logaddexp, dtypes=FLOAT_DTYPES),
    "logaddexp2": dict(ref=np.logaddexp2, dtypes=FLOAT_DTYPES),
    "fmax": dict(ref=_fmax),
    "fmin": dict(ref=_fmin),
    "eq": dict(ref=np.equal, operator="==", domain=Domain(lo=-2, hi=2, integer_valued=True,
                                                          int_lo=-2, int_hi=2)),
    "ne": dict(ref=np.not_equal, operator="!=",
               domain=Domain(lo=-2, hi=2, integer_valued=True, int_lo=-2, int_hi=2)),
    "lt": dict(ref=np.less, operator="<"),
    "le": dict(ref=np.less_equal, operator="<=",
               domain=Domain(lo=-2, hi=2, integer_valued=True, int_lo=-2, int_hi=2)),
    "gt": dict(ref=np.greater, operator=">"),
    "ge": dict(ref=np.greater_equal, operator=">=",
               domain=Domain(lo=-2, hi=2, integer_valued=True, int_lo=-2, int_hi=2)),
    "logical_and": dict(ref=np.logical_and, domain=Domain(lo=-1, hi=1, integer_valued=True,
                                                          int_lo=-1, int_hi=1)),
    "logical_or": dict(ref=np.logical_or, domain=Domain(lo=-1, hi=1, integer_valued=True,
                                                        int_lo=-1, int_hi=1)),
    "logical_xor": dict(ref=np.logical_xor, domain=Domain(lo=-1, hi=1, integer_valued=True,
                                                          int_lo=-1, int_hi=1)),
    "bitwise_and": dict(ref=np.bitwise_and, operator="&", dtypes=INTEGRAL_DTYPES,
                        domain=Domain(int_lo=-100, int_hi=100), scalar_rhs=(6, True)),
    "bitwise_or": dict(ref=np.bitwise_or, operator="|", dtypes=INTEGRAL_DTYPES,
                       domain=Domain(int_lo=-100, int_hi=100), scalar_rhs=(6, True)),
    "bitwise_xor": dict(ref=np.bitwise_xor, operator="^", dtypes=INTEGRAL_DTYPES,
                        domain=Domain(int_lo=-100, int_hi=100), scalar_rhs=(6, True)),
    "bitwise_left_shift": dict(ref=np.left_shift, operator="<<", dtypes=INT_DTYPES,
                               domain=Domain(int_lo=-9, int_hi=9), rhs_domain=_SHIFT_DOMAIN,
                               scalar_rhs=(3,)),
    "bitwise_right_shift": dict(ref=np.right_shift, operator=">>", dtypes=INT_DTYPES,
                                domain=Domain(int_lo=-100, int_hi=100), rhs_domain=_SHIFT_DOMAIN,
                                scalar_rhs=(3,)),
}

# Known differences, each with its reason. A Skip's `tests` names the tests it silences
# ("torch": the comparison with PyTorch in test_ops_elementwise.py).
SKIPS: dict[str, list[Skip]] = {
    **{n: [Skip("the mpmath reference costs up to 15 ms a value: the large sample (77,100 values) "
                "would take minutes; the chunked loop is the FLOAT kind's, which the other FLOAT "
                "ops test", FLOAT_DTYPES, ("large",))]
       for n in _BESSEL},
    "sign": [
        Skip("sign(nan) is nan here (as NumPy), 0 in PyTorch", FLOAT_DTYPES, ("torch",)),
    ],
    "i0": [Skip("PyTorch's i0 is NaN at +-inf (its Chebyshev form gives inf * 0); ember's is inf, "
                "as SciPy's and the function's limit", FLOAT_DTYPES, ("torch",))],
    **{n: [Skip("+-inf, 1e30 and the negative shapes follow torch's edge rules: checked against "
                "torch in test_api_ops.py", FLOAT_DTYPES, ("special",))]
       for n in ("igamma", "igammac")},
    **{n: [Skip("degrees of +-inf and 1e30: NaN where a recurrence would run that long, the "
                "closed forms at |x| <= 1 for the Chebyshev kinds: checked by hand and against "
                "torch in test_api_ops.py", FLOAT_DTYPES, ("special",))]
       for n in _POLYNOMIALS},
    "special_zeta": [Skip("the orders and arguments at +-inf and 1e30 follow Cephes's zeta, as "
                          "torch's: checked against torch in test_api_ops.py",
                          ("float32", "float64"), ("special",))],
    "sinc": [Skip("float32's pi is not pi: sinc at a nonzero integer is about 3e-8 / n, not "
                  "1e-17 (as in PyTorch)", ("float32",), ("special",))],
}

# Tolerance overrides: ops whose float32 kernels are not correctly rounded everywhere.
TOL_OVERRIDES: dict[str, dict] = {
    # fast_expf (< 2 ulp) feeds these; sigmoid/expm1 near 0 lose relative accuracy
    "exp": {"float32": (3e-6, 1e-5)},
    "sigmoid": {"float32": (3e-6, 1e-5)},
    "pow": {"float32": (3e-6, 1e-5)},
    # tan near +-pi/2 amplifies the input's rounding in the half types
    "tan": {"bfloat16": (3e-2, 1e-2), "float16": (2e-3, 1e-3)},
    # written for ember and checked against mpmath at 30 digits: float64 to 1e-13
    **{n: {"float64": (1e-13, 1e-15)} for n in _BESSEL},
}


# ---- parametrised and ternary ops (not in the table) ----

def _where_samples(op: OpInfo, dtype: str) -> Iterator[SampleInput]:
    rng = rng_for("where", dtype)
    for sc, sa, sb in [((3, 4), (3, 4), (3, 4)), ((3, 1), (1, 4), (4,)), ((), (2, 3), ()),
                       ((0, 3), (1, 3), (3,)), ((2, 3), (), (2, 3))]:
        c = rng.integers(0, 2, size=sc).astype(bool)
        yield SampleInput((c, sample_values(rng, sa, dtype, op.domain),
                           sample_values(rng, sb, dtype, op.domain)), desc="broadcast")
    c = rng.integers(0, 2, size=(4, 5)).astype(bool)
    a = sample_values(rng, (4, 5), dtype, op.domain)
    b = sample_values(rng, (4, 5), dtype, op.domain)
    yield SampleInput((c, a, b), ("transposed", "strided", "offset"), desc="noncontig")
    yield SampleInput((c, a, 2), desc="scalar other")
    yield SampleInput((c, 1.5, b), desc="scalar input")


def _where_call(args: tuple, kwargs: dict) -> ember.Tensor:
    c, a, b = args
    return ember.where(c, a, b)


def _where_ref(args: tuple, kwargs: dict) -> tuple[np.ndarray, str]:
    c, a, b = args
    dt = result_type(a, b)
    return np.where(values(c), np_compute(values(a), dt), np_compute(values(b), dt)), dt


def _where_tensors(sample: SampleInput, dtype: str) -> tuple:
    return sample.tensors(("bool", dtype, dtype))


def _clamp_samples(op: OpInfo, dtype: str) -> Iterator[SampleInput]:
    rng = rng_for("clamp", dtype)
    for shape in [(3, 4), (), (0,), (2, 3, 4)]:
        x = sample_values(rng, shape, dtype, op.domain)
        yield SampleInput((x,), kwargs=dict(min=-2, max=3), desc="int bounds")
        yield SampleInput((x,), kwargs=dict(min=-1.5), desc="min only")
        yield SampleInput((x,), kwargs=dict(max=0.5), desc="max only")
    x = sample_values(rng, (4, 5), dtype, op.domain)
    yield SampleInput((x,), ("transposed",), kwargs=dict(min=-1, max=1), desc="noncontig")
    lo = sample_values(rng, (4, 1), dtype, op.domain)
    hi = lo + 2
    yield SampleInput((x, lo, hi), desc="tensor bounds broadcast")
    yield SampleInput((x,), kwargs=dict(min=3, max=1), desc="min > max gives max")


def _clamp_call(args: tuple, kwargs: dict) -> ember.Tensor:
    if len(args) == 3:
        return ember.clamp(args[0], args[1], args[2])
    return ember.clamp(args[0], **kwargs)


def _clamp_ref(args: tuple, kwargs: dict) -> tuple[np.ndarray, str]:
    x = args[0]
    lo = args[1] if len(args) == 3 else kwargs.get("min")
    hi = args[2] if len(args) == 3 else kwargs.get("max")
    dt = result_type(*[v for v in (x, lo, hi) if v is not None])
    if dt == "bool":
        raise Unsupported
    r = np_compute(values(x), dt)
    with np.errstate(invalid="ignore"):
        if lo is not None:
            r = np.where(np.isnan(r), r, np.maximum(r, np_compute(values(lo), dt)))
        if hi is not None:
            r = np.where(np.isnan(r), r, np.minimum(r, np_compute(values(hi), dt)))
    return r, dt


def _lerp_samples(op: OpInfo, dtype: str) -> Iterator[SampleInput]:
    rng = rng_for("lerp", dtype)
    for sa, sb in [((3, 4), (3, 4)), ((3, 1), (4,)), ((0, 2), (1, 2)), ((), ())]:
        a = sample_values(rng, sa, dtype, op.domain)
        b = sample_values(rng, sb, dtype, op.domain)
        yield SampleInput((a, b, 0.25), desc="scalar weight")
        yield SampleInput((a, b, 0.75), desc="scalar weight > 0.5")
    a = sample_values(rng, (4, 5), dtype, op.domain)
    b = sample_values(rng, (4, 5), dtype, op.domain)
    w = sample_values(rng, (5,), dtype, Domain(lo=-0.5, hi=1.5))
    yield SampleInput((a, b, w), ("transposed", "strided", "contiguous"), desc="tensor weight")


def _lerp_call(args: tuple, kwargs: dict) -> ember.Tensor:
    return ember.lerp(*args)


def _lerp_ref(args: tuple, kwargs: dict) -> tuple[np.ndarray, str]:
    s, e, w = (values(a).astype(np.float64) for a in args)
    dt = args[0].dtype.name
    if not is_float(dt):
        raise Unsupported
    return s + w * (e - s), dt


def _nan_to_num_samples(op: OpInfo, dtype: str) -> Iterator[SampleInput]:
    rng = rng_for("nan_to_num", dtype)
    x = sample_values(rng, (3, 4), dtype, op.domain)
    if is_float(dtype):
        x = x.astype(np.float64)
        x[0, 0], x[1, 1], x[2, 2], x[0, 3] = np.nan, np.inf, -np.inf, -0.0
    yield SampleInput((x,), desc="defaults")
    yield SampleInput((x,), kwargs=dict(nan=1.5, posinf=100.0, neginf=-100.0), desc="values")
    yield SampleInput((x,), ("transposed",), kwargs=dict(nan=-1.0), desc="noncontig")
    yield SampleInput((np.zeros((0, 3)),), desc="empty")


_FINITE_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": float(np.finfo(np.float32).max),
    "float64": float(np.finfo(np.float64).max),
}


def _nan_to_num_call(args: tuple, kwargs: dict) -> ember.Tensor:
    return ember.nan_to_num(args[0], **kwargs)


def _nan_to_num_ref(args: tuple, kwargs: dict) -> tuple[np.ndarray, str]:
    dt = args[0].dtype.name
    x = values(args[0])
    if not is_float(dt):
        return x, dt
    big = _FINITE_MAX[dt]
    out = np.nan_to_num(x.astype(np.float64), nan=kwargs.get("nan", 0.0),
                        posinf=kwargs.get("posinf", big), neginf=kwargs.get("neginf", -big))
    return out, dt


def _round_samples(op: OpInfo, dtype: str) -> Iterator[SampleInput]:
    rng = rng_for("round", dtype)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.0, 0.0])
    yield SampleInput((halves,), desc="ties to even")
    x = sample_values(rng, (3, 4), dtype, Domain(lo=-50, hi=50, int_lo=-50, int_hi=50))
    yield SampleInput((x,), desc="decimals=0")
    yield SampleInput((x,), ("transposed",), desc="noncontig")
    if is_float(dtype):
        yield SampleInput((x,), kwargs=dict(decimals=1), desc="decimals=1")
        yield SampleInput((x,), kwargs=dict(decimals=-1), desc="decimals=-1")
    yield SampleInput((np.zeros((0,)),), desc="empty")


def _round_call(args: tuple, kwargs: dict) -> ember.Tensor:
    return ember.round(args[0], **kwargs)


def _round_ref(args: tuple, kwargs: dict) -> tuple[np.ndarray, str]:
    dt = args[0].dtype.name
    x = values(args[0])
    d = kwargs.get("decimals", 0)
    if not is_float(dt):
        if "decimals" in kwargs or dt == "bool":  # torch's round(x, decimals=) has no integer
            raise Unsupported                      # kernel, and round(x) none for bool
        return x, dt
    x = x.astype(np.float64)
    if d == 0:
        return np.round(x), dt
    if d > 0:
        return np.round(x * 10.0**d) / 10.0**d, dt
    return np.round(x / 10.0**-d) * 10.0**-d, dt


def _logit_samples(op: OpInfo, dtype: str) -> Iterator[SampleInput]:
    rng = rng_for("logit", dtype)
    inside = Domain(lo=0.05, hi=0.95, int_lo=0, int_hi=1)
    around = Domain(lo=-0.2, hi=1.2, int_lo=-1, int_hi=2)
    for shape in [(3, 4), (), (0,), (2, 3, 2)]:
        yield SampleInput((sample_values(rng, shape, dtype, inside),), desc="no eps")
    x = sample_values(rng, (4, 5), dtype, around)
    yield SampleInput((x,), kwargs=dict(eps=0.1), desc="eps clamps")
    yield SampleInput((x,), ("transposed",), kwargs=dict(eps=1e-6), desc="noncontig")
    yield SampleInput((x,), kwargs=dict(eps=0.0), desc="eps=0 clamps to [0, 1]")
    yield SampleInput((x,), kwargs=dict(eps=0.7), desc="eps > 0.5: the lower bound tested first")
    yield SampleInput((sample_values(rng, (3, 4), dtype, inside),), kwargs=dict(eps=-1.0),
                      desc="negative eps: none")


def _logit_call(args: tuple, kwargs: dict) -> ember.Tensor:
    return ember.logit(args[0], **kwargs)


def _logit_ref(args: tuple, kwargs: dict) -> tuple[np.ndarray, str]:
    dt = args[0].dtype.name
    dt = dt if is_float(dt) else ember.get_default_dtype().name
    x = np_compute(values(args[0]), dt)
    eps = kwargs.get("eps")
    if eps is not None and eps >= 0:  # bounds in the tensor's dtype, lower one tested first
        lo = float(round_to(eps, dt))
        hi = float(round_to(1.0 - lo, dt))
        x = np.where(x < lo, lo, np.where(x > hi, hi, x))
    with np.errstate(all="ignore"):
        return np.log(x / (1.0 - x)), dt


@dataclass
class ParamOpInfo(OpInfo):
    """An op outside the table: its own samples, call, reference and input-dtype rule."""

    param_ref: Callable | None = None  # (ember args, kwargs) -> (values, dtype)
    make_args: Callable | None = None  # (sample, dtype) -> ember args

    def args_for(self, sample: SampleInput, dtype: str) -> tuple:
        if self.make_args is not None:
            return self.make_args(sample, dtype)
        return sample.tensors((dtype,) * len(sample.args))

    def reference(self, args: tuple, kwargs: dict | None = None) -> tuple[np.ndarray, str]:
        out, dt = self.param_ref(args, kwargs or {})
        return cast_result(out, dt), dt


PARAM_OPS: dict[str, ParamOpInfo] = {
    "where": ParamOpInfo("where", 3, "TERNARY", ref=None, sample_fn=_where_samples,
                         call=_where_call, param_ref=_where_ref, make_args=_where_tensors,
                         in_table=False),
    "clamp": ParamOpInfo("clamp", 1, "PARAM", ref=None, sample_fn=_clamp_samples,
                         call=_clamp_call, param_ref=_clamp_ref, in_table=False,
                         dtypes=NUMERIC_DTYPES),
    "lerp": ParamOpInfo("lerp", 3, "PARAM", ref=None, sample_fn=_lerp_samples, call=_lerp_call,
                        param_ref=_lerp_ref, in_table=False, dtypes=FLOAT_DTYPES,
                        tol={"bfloat16": (2e-2, 2e-2), "float16": (2e-3, 2e-3)}),
    "nan_to_num": ParamOpInfo("nan_to_num", 1, "PARAM", ref=None, sample_fn=_nan_to_num_samples,
                              call=_nan_to_num_call, param_ref=_nan_to_num_ref, in_table=False),
    "logit": ParamOpInfo("logit", 1, "PARAM", ref=None, sample_fn=_logit_samples,
                         call=_logit_call, param_ref=_logit_ref, in_table=False),
    "round": ParamOpInfo("round", 1, "PARAM", ref=None, sample_fn=_round_samples,
                         call=_round_call, param_ref=_round_ref, in_table=False,
                         dtypes=NUMERIC_DTYPES, exact_out=ALL_DTYPES,
                         tol={"float32": (1e-6, 1e-5), "bfloat16": (1.6e-2, 1e-1)}),
}


def _build_table_ops() -> dict[str, OpInfo]:
    ops: dict[str, OpInfo] = {}
    for row in ember._C._op_table():
        name, arity, kind = row["name"], row["arity"], row["kind"]
        refs = UNARY_REFS if arity == 1 else BINARY_REFS
        if name not in refs:
            continue  # reported by test_every_table_op_has_an_entry
        spec = dict(refs[name])
        ops[name] = OpInfo(
            name=name,
            arity=arity,
            kind=kind,
            skips=SKIPS.get(name, []),
            tol=TOL_OVERRIDES.get(name, {}),
            **spec,
        )
    return ops


OPS: dict[str, OpInfo] = _build_table_ops()
TABLE = ember._C._op_table()
UNARY_OPS = [op for op in OPS.values() if op.arity == 1]
BINARY_OPS = [op for op in OPS.values() if op.arity == 2]

# The kind each entry was written for: a change of an op's dtype rule in op_table.h must be
# looked at here too (its reference and dtypes may need to change with it).
EXPECTED_KINDS = {
    **{n: "FLOAT" for n in (
        "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh "
        "tanh asinh acosh atanh sigmoid erf erfc erfinv sinc deg2rad rad2deg reciprocal "
        "lgamma digamma i0 special_i0e special_i1 special_i1e special_ndtr special_ndtri "
        "special_log_ndtr special_erfcx special_entr angle").split()},
    **{n: "FLOAT" for n in _BESSEL},
    "frac": "FLOAT_ONLY",
    **{n: "SAME" for n in "neg abs square sign relu floor ceil trunc".split()},
    **{n: "PRED" for n in "isnan isinf isfinite signbit logical_not".split()},
    "bitwise_not": "INTEGRAL",
    **{n: "ARITH" for n in (
        "add sub mul floor_divide div_trunc remainder fmod pow maximum minimum fmax fmin").split()},
    "div": "TRUEDIV",
    **{n: "FLOAT2" for n in "atan2 copysign xlogy special_xlog1py special_zeta".split()},
    **{n: "FLOAT2" for n in _POLYNOMIALS},
    **{n: "FLOAT_ONLY2" for n in "hypot logaddexp logaddexp2 igamma igammac".split()},
    **{n: "CMP" for n in "eq ne lt le gt ge".split()},
    **{n: "LOGICAL" for n in "logical_and logical_or logical_xor".split()},
    **{n: "BITWISE" for n in "bitwise_and bitwise_or bitwise_xor".split()},
    **{n: "SHIFT" for n in "bitwise_left_shift bitwise_right_shift".split()},
}


def op_dtype_params(ops: list[OpInfo], dtypes: tuple = ALL_DTYPES) -> list[tuple[OpInfo, str]]:
    """(op, dtype) pairs for pytest.mark.parametrize, every dtype, supported or not."""
    return [(op, dt) for op in ops for dt in dtypes]


def param_id(value: Any) -> str:
    return value.name if isinstance(value, OpInfo) else str(value)
