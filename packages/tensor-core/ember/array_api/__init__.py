"""ember.array_api: the Python array API standard (2023.12) over ember tensors.

``x.__array_namespace__()`` returns this module, so code written against the standard
(``xp = x.__array_namespace__()``; ``xp.mean(x, axis=0)``) runs on ember as on NumPy, CuPy or
PyTorch. The arrays are ember Tensors; every function here is a thin wrapper that maps the
standard's names and keywords (``axis=``, ``keepdims=``, ``copy=``, ``correction=``, ...) onto
ember's PyTorch-style ops, or composes them where ember has no op of its own (``tensordot``,
``tile``, ``meshgrid``, ``tril``, ...).

The dtypes are the standard's (``complex64`` and ``complex128`` included) except the unsigned
types wider than 8 bits; ``float16`` and ``bfloat16`` are extra (real floating, but not listed by
``__array_namespace_info__().dtypes()``, which lists the standard's only). ``x.size`` is a method,
as in PyTorch (use ``size(x)`` in portable code, as array-api-compat does). Functions whose core op
is missing from the build raise ``NotImplementedError`` naming that op, and so do the complex
cases of the ops that have no complex kernel in the core yet (``prod``, ``unique_*``,
``linalg.solve``/``inv``/``det``/..., whose core ops raise for complex input): nothing is
computed on another dtype behind the caller's back.

Extensions: ``linalg`` (ember.array_api.linalg) and ``fft`` (ember.array_api.fft, over ember.fft).
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

import ember

__array_api_version__ = "2023.12"

_API_VERSIONS = ("2021.12", "2022.12", "2023.12")


def _core(name: str):
    """ember.<name>, or NotImplementedError naming the op this build of the core lacks."""
    fn = getattr(ember, name, None)
    if fn is None:
        raise NotImplementedError(
            f"ember.array_api needs ember.{name}, which this build of the core does not have")
    return fn


def _is_tensor(x) -> builtins.bool:
    return isinstance(x, ember.Tensor)


# the Python scalars that take part in the standard's operations (the module defines bool, ...)
_PY_NUMBERS = (builtins.bool, builtins.int, builtins.float, builtins.complex)


def _check_device(device) -> None:
    if device is not None and str(device) != "cpu":
        raise ValueError(f"device {device!r} is not available in this build of ember")


def _axes(axis, ndim: int) -> tuple:
    """axis (None / int / tuple) as a tuple of non-negative ints, with the standard's checks."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, builtins.int):
        axis = (axis,)
    out = []
    for a in axis:
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise IndexError(f"axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(a % builtins.max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axis}")
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Constants and dtypes

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

bool = ember.bool  # noqa: A001
int8, int16, int32, int64 = ember.int8, ember.int16, ember.int32, ember.int64
uint8 = ember.uint8
float16, bfloat16, float32, float64 = ember.float16, ember.bfloat16, ember.float32, ember.float64
complex64, complex128 = ember.complex64, ember.complex128

_SIGNED = (int8, int16, int32, int64)
_UNSIGNED = (uint8,)
_FLOATS = (float16, bfloat16, float32, float64)
_COMPLEX = (complex64, complex128)
_ALL = (bool, *_SIGNED, *_UNSIGNED, *_FLOATS, *_COMPLEX)
# what __array_namespace_info__().dtypes() lists: the standard's dtypes that ember has
_STANDARD = (bool, *_SIGNED, *_UNSIGNED, float32, float64, *_COMPLEX)
# a complex dtype -> the real dtype of its components, and back
_COMPONENT = {complex64: float32, complex128: float64}
_COMPLEX_OF = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128}

_KINDS = {
    "bool": (bool,),
    "signed integer": _SIGNED,
    "unsigned integer": _UNSIGNED,
    "integral": _SIGNED + _UNSIGNED,
    "real floating": _FLOATS,
    "complex floating": _COMPLEX,
    "numeric": _SIGNED + _UNSIGNED + _FLOATS + _COMPLEX,
}


def _is_complex(x) -> builtins.bool:
    return _dtype_of(x) in _COMPLEX


def isdtype(dtype, kind) -> builtins.bool:
    """Whether `dtype` is of `kind`: a dtype, a kind name ('integral', 'real floating', ...) or
    a tuple of them."""
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"unknown dtype kind {kind!r}; expected one of {sorted(_KINDS)}")
        return dtype in _KINDS[kind]
    if isinstance(kind, ember.dtype):
        return dtype == kind
    raise TypeError(f"kind must be a dtype, a str or a tuple, got {type(kind).__name__}")


def _dtype_of(x):
    return x.dtype if _is_tensor(x) else x


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion rules give `arrays_and_dtypes` (Python scalars take
    part by kind, as in ember's binary ops)."""
    if not arrays_and_dtypes:
        raise ValueError("at least one array or dtype is required")
    typed = [_dtype_of(a) for a in arrays_and_dtypes if _is_tensor(a) or
             isinstance(a, ember.dtype)]
    scalars = [a for a in arrays_and_dtypes if isinstance(a, _PY_NUMBERS)]
    if len(typed) + len(scalars) != len(arrays_and_dtypes):
        raise TypeError("result_type() takes arrays, dtypes and Python scalars")
    if not typed:
        raise ValueError("result_type() needs at least one array or dtype")
    out = typed[0]
    for d in typed[1:]:
        out = ember.promote_types(out, d)
    for s in scalars:
        out = ember.result_type(ember.empty(0, dtype=out), s)
    return out


def can_cast(from_, to, /) -> builtins.bool:
    """Whether `from_` (a dtype or an array) casts to `to` under the promotion rules."""
    return ember.promote_types(_dtype_of(from_), to) == to


_finfo = namedtuple("finfo", "bits eps max min smallest_normal dtype")
_finfo.__doc__ = ("finfo(dtype): the standard's floating-point limits; for a complex dtype, "
                  "those of its real components (finfo(complex64).dtype is float32)")
_iinfo = namedtuple("iinfo", "bits max min dtype")


def finfo(type, /):  # noqa: A002 - the standard's name
    import numpy as np

    dt = _dtype_of(type)
    dt = _COMPONENT.get(dt, dt)  # complex: the limits of the components, as the standard says
    if dt == bfloat16:
        return _finfo(16, 2.0 ** -7, 3.3895313892515355e38, -3.3895313892515355e38,
                      1.1754943508222875e-38, dt)
    if dt not in _FLOATS:
        raise TypeError(f"finfo() takes a floating-point dtype, got {dt}")
    info = np.finfo(dt.name)
    return _finfo(info.bits, builtins.float(info.eps), builtins.float(info.max),
                  builtins.float(info.min), builtins.float(info.smallest_normal), dt)


def iinfo(type, /):  # noqa: A002 - the standard's name
    import numpy as np

    dt = _dtype_of(type)
    if dt not in _SIGNED + _UNSIGNED:
        raise TypeError(f"iinfo() takes an integer dtype, got {dt}")
    info = np.iinfo(dt.name)
    return _iinfo(info.bits, builtins.int(info.max), builtins.int(info.min), dt)


def astype(x, dtype, /, *, copy: builtins.bool = True, device=None):
    _check_device(device)
    if _is_complex(x) and dtype not in _COMPLEX and dtype != bool:
        # the standard: complex to real "should not be permitted" (use real, imag or abs)
        raise TypeError(f"astype: casting {x.dtype} to {dtype} would discard the imaginary "
                        "part; take real(x), imag(x) or abs(x) first")
    if _is_complex(x) and dtype == bool:
        return x != 0  # (the same values as the core's cast, without its real-cast warning)
    if not copy and x.dtype == dtype:
        return x
    return x.to(dtype, copy=True) if x.dtype == dtype else x.to(dtype)


# ---------------------------------------------------------------------------------------------
# Creation


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """An ember tensor from a tensor, a NumPy array, a buffer, a DLPack capsule owner, a scalar
    or nested sequences. copy=False never copies (ValueError when it would have to)."""
    _check_device(device)
    if _is_tensor(obj):
        if copy is False:
            if dtype is not None and dtype != obj.dtype:
                raise ValueError("asarray(copy=False): a dtype change needs a copy")
            return obj
        if dtype is not None and dtype != obj.dtype:
            return obj.to(dtype)
        return obj.clone() if copy else obj
    if copy is False:
        try:
            t = ember.from_dlpack(obj) if hasattr(obj, "__dlpack__") else None
        except (TypeError, BufferError, RuntimeError):
            t = None
        if t is None:
            import numpy as np

            try:
                t = ember.from_numpy(np.asarray(memoryview(obj)) if not isinstance(
                    obj, np.ndarray) else obj)
            except TypeError:
                raise ValueError("asarray(copy=False): the object cannot be shared without a "
                                 "copy") from None
        if dtype is not None and t.dtype != dtype:
            raise ValueError("asarray(copy=False): a dtype change needs a copy")
        return t
    if copy:
        return ember.tensor(obj, dtype=dtype)
    return ember.as_tensor(obj, dtype=dtype)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    _check_device(device)
    if stop is None:
        start, stop = 0, start
    if dtype is None and builtins.any(isinstance(v, builtins.float) for v in (start, stop, step)):
        dtype = ember.get_default_dtype()  # (a float anywhere, not only in start)
    if step != 0 and math.ceil((stop - start) / step) <= 0:
        # the standard: an empty array where the core's arange rejects the step's sign
        return ember.arange(start, start, step, dtype=dtype)
    return ember.arange(start, stop, step, dtype=dtype)


def empty(shape, *, dtype=None, device=None):
    _check_device(device)
    return ember.empty(shape, dtype=dtype)


def empty_like(x, /, *, dtype=None, device=None):
    _check_device(device)
    return ember.empty_like(x, dtype=dtype)


def zeros(shape, *, dtype=None, device=None):
    _check_device(device)
    return ember.zeros(shape, dtype=dtype)


def zeros_like(x, /, *, dtype=None, device=None):
    _check_device(device)
    return ember.zeros_like(x, dtype=dtype)


def ones(shape, *, dtype=None, device=None):
    _check_device(device)
    return ember.ones(shape, dtype=dtype)


def ones_like(x, /, *, dtype=None, device=None):
    _check_device(device)
    return ember.ones_like(x, dtype=dtype)


def full(shape, fill_value, *, dtype=None, device=None):
    _check_device(device)
    if isinstance(shape, builtins.int):
        shape = (shape,)
    return ember.full(tuple(shape), fill_value, dtype=dtype)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    _check_device(device)
    return ember.full_like(x, fill_value, dtype=dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    _check_device(device)
    n_cols = n_rows if n_cols is None else n_cols
    out = ember.zeros((n_rows, n_cols), dtype=dtype)
    length = builtins.min(n_rows + builtins.min(k, 0), n_cols - builtins.max(k, 0))
    if length > 0:  # the k-th diagonal as a strided view, filled in place
        start = k if k >= 0 else -k * n_cols
        out.as_strided((length,), (n_cols + 1,), start).fill_(1)
    return out


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    _check_device(device)
    if dtype in _COMPLEX or (dtype is None and (isinstance(start, builtins.complex) or
                                                 isinstance(stop, builtins.complex))):
        # The core's linspace has no complex kernel: the real and imaginary parts are two real
        # linspaces (the same points, a straight line in the complex plane).
        start, stop = builtins.complex(start), builtins.complex(stop)
        if dtype is None:
            dtype = _COMPLEX_OF[ember.get_default_dtype()]
        part = _COMPONENT[dtype]
        re = linspace(start.real, stop.real, num, dtype=part, endpoint=endpoint)
        im = linspace(start.imag, stop.imag, num, dtype=part, endpoint=endpoint)
        return ember.complex(re, im)
    if endpoint:
        return ember.linspace(start, stop, num, dtype=dtype)
    return ember.linspace(start, stop, num + 1, dtype=dtype)[:num]


def from_dlpack(x, /, *, device=None, copy=None):
    _check_device(device)
    t = ember.from_dlpack(x)
    return t.clone() if copy else t


def meshgrid(*arrays, indexing: str = "xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', got {indexing!r}")
    sizes = [a.numel() for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and len(arrays) > 1 and i < 2:
            axis = 1 - i
        shape = [1] * len(arrays)
        shape[axis] = a.numel()
        out.append(a.reshape(shape).expand(tuple(sizes)))
    return out


def _tri_mask(x, k: int, lower: builtins.bool):
    rows, cols = x.shape[-2], x.shape[-1]
    diff = ember.arange(cols).reshape(1, cols) - ember.arange(rows).reshape(rows, 1)
    return diff <= k if lower else diff >= k


def tril(x, /, *, k: int = 0):
    return ember.where(_tri_mask(x, k, True), x, ember.zeros_like(x))


def triu(x, /, *, k: int = 0):
    return ember.where(_tri_mask(x, k, False), x, ember.zeros_like(x))


# ---------------------------------------------------------------------------------------------
# Element-wise functions: the standard's name -> ember's


def _unary(api: str, core: str):
    def fn(x, /):
        return getattr(ember, core)(x)

    fn.__name__ = fn.__qualname__ = api
    fn.__doc__ = f"The array API's ``{api}``: ember.{core}."
    return fn


def _tensor_positions(core: str, signatures: dict[str, str]) -> tuple[bool, bool]:
    """Which operands ember.<core> takes as a Tensor only (torch's signature: hypot, maximum,
    logical_and, ... take no Python number), from its registry signature."""
    sig = signatures.get(core)
    if sig is None:
        return False, False
    types = [p.split(" ")[0] for p in sig[sig.index("(") + 1:].split(", ")[:2]]
    return types[0] == "Tensor", types[1] == "Tensor"


def _promote_0d(x1, x2):
    """x1 and x2 (tensors) in their common dtype where one is 0-d and the dtypes differ: the
    core promotes a 0-d tensor by category only (as torch does: an int16 0-d tensor and an int8
    array give int8, and -1 <= uint8 0 compares in uint8); the standard promotes 0-d arrays as
    any other."""
    if x1.dtype != x2.dtype and (x1.ndim == 0 or x2.ndim == 0):
        dtype = ember.promote_types(x1.dtype, x2.dtype)
        return x1.to(dtype), x2.to(dtype)
    return x1, x2


def _binary(api: str, core: str, signatures: dict[str, str]):
    op = getattr(ember, core)
    first_tensor, second_tensor = _tensor_positions(core, signatures)

    def fn(x1, x2, /):
        if _is_tensor(x1) and _is_tensor(x2):
            return op(*_promote_0d(x1, x2))
        # The standard takes a Python scalar on either side; a 0-d tensor promotes the same way
        # (by category only), so it stands in where the core takes a Tensor only.
        if first_tensor and isinstance(x1, _PY_NUMBERS):
            x1 = ember.tensor(x1)
        if second_tensor and isinstance(x2, _PY_NUMBERS):
            x2 = ember.tensor(x2)
        return op(x1, x2)

    fn.__name__ = fn.__qualname__ = api
    fn.__doc__ = f"The array API's ``{api}``: ember.{core}."
    return fn


_UNARY = {
    "abs": "abs", "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh",
    "atan": "atan", "atanh": "atanh", "bitwise_invert": "bitwise_not", "ceil": "ceil",
    "cos": "cos", "cosh": "cosh", "exp": "exp", "expm1": "expm1", "floor": "floor",
    "isfinite": "isfinite", "isinf": "isinf", "isnan": "isnan", "log": "log", "log1p": "log1p",
    "log2": "log2", "log10": "log10", "logical_not": "logical_not", "negative": "neg",
    "reciprocal": "reciprocal", "signbit": "signbit", "sin": "sin",
    "sinh": "sinh", "square": "square", "sqrt": "sqrt", "tan": "tan", "tanh": "tanh",
    "trunc": "trunc",
}
_BINARY = {
    "add": "add", "atan2": "atan2", "bitwise_and": "bitwise_and",
    "bitwise_left_shift": "bitwise_left_shift", "bitwise_or": "bitwise_or",
    "bitwise_right_shift": "bitwise_right_shift", "bitwise_xor": "bitwise_xor",
    "copysign": "copysign", "divide": "div", "equal": "eq", "floor_divide": "floor_divide",
    "greater": "gt", "greater_equal": "ge", "hypot": "hypot", "less": "lt", "less_equal": "le",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "maximum": "maximum", "minimum": "minimum", "multiply": "mul", "not_equal": "ne",
    "pow": "pow", "remainder": "remainder", "subtract": "sub",
}
for _api, _c in _UNARY.items():
    globals()[_api] = _unary(_api, _c)
# the functions' first signatures, read from the registry once
_SIGNATURES = {row["name"]: row["signatures"][0] for row in ember._C._ops()
               if "function" in row["variants"]}
for _api, _c in _BINARY.items():
    globals()[_api] = _binary(_api, _c, _SIGNATURES)
del _api, _c, _SIGNATURES


def positive(x, /):
    return ember.clone(x)


def sign(x, /):
    """The standard's sign: -1, 0 or 1 for real numbers, NaN for NaN; x / |x| (0 at 0) for
    complex ones."""
    if _is_complex(x):
        return ember.sgn(x)
    out = ember.sign(x)
    if x.dtype in _FLOATS:  # the core's sign, as torch's, gives 0 for NaN
        out = ember.where(ember.isnan(x), x, out)
    return out


def round(x, /):  # noqa: A001 - the standard's name
    if _is_complex(x):
        # the standard rounds the real and imaginary components independently
        return ember.complex(ember.round(x.real), ember.round(x.imag))
    return ember.round(x)


def real(x, /):
    """The real part (a new array; real(x) of a real array is a copy of x)."""
    return x.real.clone() if _is_complex(x) else ember.clone(x)


def imag(x, /):
    """The imaginary part (a new array; zeros for a real array)."""
    return x.imag.clone() if _is_complex(x) else ember.zeros_like(x)


def conj(x, /):
    """The complex conjugate (a copy of x for a real array)."""
    return ember.conj(x) if _is_complex(x) else ember.clone(x)  # (the core's conj copies)


def clip(x, /, min=None, max=None):  # noqa: A002 - the standard's names
    if min is None and max is None:
        return ember.clone(x)
    out = ember.clamp(x, min, max)
    return out if out.dtype == x.dtype else out.to(x.dtype)


def logaddexp(x1, x2, /):
    return ember.logaddexp(*_promote_0d(asarray(x1), asarray(x2)))


# ---------------------------------------------------------------------------------------------
# Statistical and utility functions


def _no_reduction(axis) -> builtins.bool:
    return isinstance(axis, tuple) and len(axis) == 0


def sum(x, /, *, axis=None, dtype=None, keepdims: builtins.bool = False):  # noqa: A001
    if _no_reduction(axis):
        return astype(x, dtype or ember.sum(ember.empty(0, dtype=x.dtype)).dtype)
    return ember.sum(x, dim=axis, keepdim=keepdims, dtype=dtype)


def prod(x, /, *, axis=None, dtype=None, keepdims: builtins.bool = False):
    axes = () if _no_reduction(axis) else _axes(axis, x.ndim)
    if dtype is None and isdtype(x.dtype, ("bool", "integral")):
        dtype = int64
    out = x if dtype is None else x.to(dtype)
    if x.ndim == 0 or not axes:
        return out.clone()
    if len(axes) == x.ndim and not keepdims:
        return ember.prod(out, dtype=out.dtype)
    for a in sorted(axes, reverse=True):
        out = ember.prod(out, a, keepdim=True, dtype=out.dtype)
    return out if keepdims else out.reshape([s for i, s in enumerate(out.shape) if i not in axes])


def max(x, /, *, axis=None, keepdims: builtins.bool = False):  # noqa: A001
    if _no_reduction(axis):
        return ember.clone(x)
    return ember.amax(x, dim=() if axis is None else axis, keepdim=keepdims)


def min(x, /, *, axis=None, keepdims: builtins.bool = False):  # noqa: A001
    if _no_reduction(axis):
        return ember.clone(x)
    return ember.amin(x, dim=() if axis is None else axis, keepdim=keepdims)


def mean(x, /, *, axis=None, keepdims: builtins.bool = False):
    if _no_reduction(axis):
        return ember.clone(x)
    return ember.mean(x, dim=axis, keepdim=keepdims)


def _var_of_one(x, correction):
    """The variance of each element alone (axis=()): 0 / max(1 - correction, 0) (so NaN from a
    correction of 1 on), NaN for NaN or an infinity, as a reduction over one element gives."""
    d = x - x
    return (d * d) / builtins.max(1 - correction, 0)


def var(x, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False):
    if _no_reduction(axis):
        return _var_of_one(x, correction)
    return ember.var(x, dim=axis, correction=correction, keepdim=keepdims)


def std(x, /, *, axis=None, correction=0.0, keepdims: builtins.bool = False):
    if _no_reduction(axis):
        return ember.sqrt(_var_of_one(x, correction))
    return ember.std(x, dim=axis, correction=correction, keepdim=keepdims)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: builtins.bool = False):
    if axis is None:
        if x.ndim != 1:
            raise ValueError("cumulative_sum: axis must be given for arrays of more than 1 dim")
        axis = 0
    out = ember.cumsum(x, axis, dtype=dtype)
    if include_initial:
        shape = list(out.shape)
        shape[axis] = 1
        out = concat([ember.zeros(shape, dtype=out.dtype), out], axis=axis)
    return out


def all(x, /, *, axis=None, keepdims: builtins.bool = False):  # noqa: A001
    if _no_reduction(axis):
        return x != 0
    out = ember.all(x, dim=axis, keepdim=keepdims)
    return out if out.dtype == bool else out.to(bool)  # (the core's all of uint8 is uint8)


def any(x, /, *, axis=None, keepdims: builtins.bool = False):  # noqa: A001
    if _no_reduction(axis):
        return x != 0
    out = ember.any(x, dim=axis, keepdim=keepdims)
    return out if out.dtype == bool else out.to(bool)  # (the core's any of uint8 is uint8)


def count_nonzero(x, /, *, axis=None, keepdims: builtins.bool = False):
    return sum(x != 0, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------------------------
# Searching, sorting, sets


def argmax(x, /, *, axis=None, keepdims: builtins.bool = False):
    out = ember.argmax(x, dim=axis, keepdim=keepdims)
    return out.reshape((1,) * x.ndim) if axis is None and keepdims else out


def argmin(x, /, *, axis=None, keepdims: builtins.bool = False):
    out = ember.argmin(x, dim=axis, keepdim=keepdims)
    return out.reshape((1,) * x.ndim) if axis is None and keepdims else out


def nonzero(x, /):
    if x.ndim == 0:
        raise ValueError("nonzero is not defined for 0-d arrays")
    return tuple(_core("nonzero")(x, as_tuple=True))


def where(condition, x1, x2, /):
    if _is_tensor(x1) and _is_tensor(x2):
        x1, x2 = _promote_0d(x1, x2)
    return ember.where(condition, x1, x2)


def searchsorted(x1, x2, /, *, side: str = "left", sorter=None):
    return _core("searchsorted")(x1, x2, side=side, sorter=sorter)


def sort(x, /, *, axis: int = -1, descending: builtins.bool = False,
         stable: builtins.bool = True):
    return _core("sort")(x, dim=axis, descending=descending, stable=stable)[0]


def argsort(x, /, *, axis: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = True):
    return _core("argsort")(x, dim=axis, descending=descending, stable=stable)


UniqueAllResult = namedtuple("UniqueAllResult", "values indices inverse_indices counts")
UniqueCountsResult = namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = namedtuple("UniqueInverseResult", "values inverse_indices")


def unique_values(x, /):
    return _core("unique")(x, sorted=True)


def unique_counts(x, /):
    values, counts = _core("unique")(x, sorted=True, return_counts=True)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /):
    values, inverse = _core("unique")(x, sorted=True, return_inverse=True)
    return UniqueInverseResult(values, inverse.reshape(x.shape))


def unique_all(x, /):
    values, inverse, counts = _core("unique")(x, sorted=True, return_inverse=True,
                                              return_counts=True)
    # first occurrence of each value: the head of each run in a stable sort of the inverse
    order = argsort(inverse.reshape(-1), stable=True)
    starts = ember.cumsum(counts, 0) - counts
    indices = take(order, starts)
    return UniqueAllResult(values, indices, inverse.reshape(x.shape), counts)


# ---------------------------------------------------------------------------------------------
# Indexing


def take(x, indices, /, *, axis=None):
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis must be given for arrays of more than 1 dim")
        axis = 0
    axis = _axes(axis, x.ndim)[0]
    if x.ndim == 1:
        return _core("take")(x, indices)
    # index of out[p, j, s] in the contiguous flattening of x: (p * n + indices[j]) * inner + s
    n = x.shape[axis]
    outer = math.prod(x.shape[:axis])
    inner = math.prod(x.shape[axis + 1:])
    idx = ember.where(indices < 0, indices + n, indices).reshape(1, -1, 1)
    flat = (ember.arange(outer).reshape(-1, 1, 1) * n + idx) * inner + \
        ember.arange(inner).reshape(1, 1, -1)
    out = _core("take")(x.contiguous(), flat)
    return out.reshape(*x.shape[:axis], indices.numel(), *x.shape[axis + 1:])


# ---------------------------------------------------------------------------------------------
# Manipulation


def broadcast_shapes(*shapes) -> tuple:
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d != 1:
                if out[i] not in (1, d):
                    raise ValueError(f"shapes {shapes} cannot be broadcast together")
                out[i] = d
    return tuple(out)


def broadcast_to(x, /, shape):
    if broadcast_shapes(tuple(x.shape), tuple(shape)) != tuple(shape):
        raise ValueError(f"cannot broadcast an array of shape {tuple(x.shape)} to {tuple(shape)}")
    return x.expand(tuple(shape))


def broadcast_arrays(*arrays):
    shape = broadcast_shapes(*(tuple(a.shape) for a in arrays))
    return [a.expand(shape) for a in arrays]


def concat(arrays, /, *, axis=0):
    arrays = list(arrays)
    if axis is None:
        arrays, axis = [a.reshape(-1) for a in arrays], 0
    cat = getattr(ember, "cat", None)
    if cat is not None:
        return cat(arrays, dim=axis)
    # Until the core has cat: one allocation, each input copied into its slice.
    first = arrays[0]
    axis = _axes(axis, first.ndim)[0]
    dtype = result_type(*arrays)
    shape = list(first.shape)
    shape[axis] = builtins.sum(a.shape[axis] for a in arrays)
    out = ember.empty(shape, dtype=dtype)
    offset = 0
    for a in arrays:
        out.narrow(axis, offset, a.shape[axis]).copy_(a)
        offset += a.shape[axis]
    return out


def stack(arrays, /, *, axis: int = 0):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("stack expects a non-empty sequence of arrays")
    stack_ = getattr(ember, "stack", None)
    if stack_ is not None:
        return stack_(arrays, dim=axis)
    axis = _axes(axis, arrays[0].ndim + 1)[0]
    return concat([a.unsqueeze(axis) for a in arrays], axis=axis)


def unstack(x, /, *, axis: int = 0):
    axis = _axes(axis, x.ndim)[0]
    return tuple(x.select(axis, i) for i in range(x.shape[axis]))


def expand_dims(x, /, axis: int = 0):
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise IndexError(f"axis {axis} is out of bounds for an array of dimension {x.ndim}")
    return x.unsqueeze(axis)


def squeeze(x, /, axis):
    axes = _axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a} of size {x.shape[a]}")
    return ember.squeeze(x, axes) if axes else x


def permute_dims(x, /, axes):
    return x.permute(tuple(axes))


def moveaxis(x, source, destination, /):
    src = _axes(source, x.ndim)
    dst = _axes(destination, x.ndim)
    if len(src) != len(dst):
        raise ValueError("source and destination must have the same number of axes")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.permute(tuple(order))


def matrix_transpose(x, /):
    if x.ndim < 2:
        raise ValueError("matrix_transpose needs an array of at least 2 dims")
    return x.mT


def reshape(x, /, shape, *, copy=None):
    if copy:
        return x.clone().reshape(shape)
    if copy is False:
        try:
            return x.view(tuple(shape))
        except RuntimeError as e:
            raise ValueError(f"reshape(copy=False): {e}") from None
    return x.reshape(shape)


def flip(x, /, *, axis=None):
    return _core("flip")(x, _axes(axis, x.ndim))


def roll(x, /, shift, *, axis=None):
    if axis is None:
        return _core("roll")(x.reshape(-1), shift).reshape(x.shape)
    return _core("roll")(x, shift, axis)


def repeat(x, repeats, /, *, axis=None):
    if axis is None:
        x, axis = x.reshape(-1), 0
    if _is_tensor(repeats):
        # the core takes int64 counts, one per element along the axis: a one-element array
        # broadcasts, as the standard says
        repeats = repeats.to(int64)
        if repeats.numel() == 1 and x.shape[axis] != 1:
            repeats = repeats.reshape(1).expand((x.shape[axis],))
    return _core("repeat_interleave")(x, repeats, dim=axis)


def tile(x, repetitions, /):
    reps = tuple(repetitions)
    ndim = builtins.max(len(reps), x.ndim)
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - x.ndim) + tuple(x.shape)
    # Interleave a broadcast axis before each axis, then fold it in: no per-element Python.
    inter = x.reshape([d for s in shape for d in (1, s)])
    expanded = inter.expand(tuple(d for r, s in zip(reps, shape) for d in (r, s)))
    return expanded.reshape([r * s for r, s in zip(reps, shape)])


# ---------------------------------------------------------------------------------------------
# Linear algebra (the main namespace's part; the extension is ember.array_api.linalg)


def matmul(x1, x2, /):
    if x1.dtype != x2.dtype:  # the core's products take one dtype; the standard promotes
        dtype = ember.promote_types(x1.dtype, x2.dtype)
        x1, x2 = x1.to(dtype), x2.to(dtype)
    return ember.matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    if isinstance(axes, builtins.int):
        if axes < 0:
            raise ValueError("tensordot: axes must be non-negative")
        a1 = list(range(x1.ndim - axes, x1.ndim))
        a2 = list(range(axes))
    else:
        a1 = [a % x1.ndim for a in axes[0]]
        a2 = [a % x2.ndim for a in axes[1]]
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(f"tensordot: contracted axes {i} and {j} differ in size "
                             f"({x1.shape[i]} vs {x2.shape[j]})")
    free1 = [a for a in range(x1.ndim) if a not in a1]
    free2 = [a for a in range(x2.ndim) if a not in a2]
    k = math.prod(x1.shape[a] for a in a1)
    m = math.prod(x1.shape[a] for a in free1)
    n = math.prod(x2.shape[a] for a in free2)
    lhs = x1.permute((*free1, *a1)).reshape(m, k)
    rhs = x2.permute((*a2, *free2)).reshape(k, n)
    dtype = result_type(x1, x2)
    out = ember.matmul(lhs.to(dtype), rhs.to(dtype))
    return out.reshape([x1.shape[a] for a in free1] + [x2.shape[a] for a in free2])


def vecdot(x1, x2, /, *, axis: int = -1):
    """sum(conj(x1) * x2) along `axis` (the standard conjugates the first operand)."""
    if x1.shape[axis] != x2.shape[axis]:  # the contracted axis does not broadcast
        raise ValueError(f"vecdot: axis {axis} differs in size ({x1.shape[axis]} vs "
                         f"{x2.shape[axis]})")
    x1, x2 = broadcast_arrays(x1, x2)
    if _is_complex(x1):
        x1 = ember.conj(x1)
    prod = x1 * x2
    return ember.sum(prod, dim=axis, dtype=prod.dtype)  # (no widening of small integers)


# ---------------------------------------------------------------------------------------------
# Inspection


class _Info:
    """What ``__array_namespace_info__()`` returns."""

    def capabilities(self) -> dict:
        return {"boolean indexing": False, "data-dependent shapes": True,
                "max dimensions": None}

    def default_device(self):
        return ember.device("cpu")

    def devices(self) -> list:
        return [ember.device("cpu")]

    def default_dtypes(self, *, device=None) -> dict:
        _check_device(device)
        real = ember.get_default_dtype()
        return {"real floating": real, "complex floating": _COMPLEX_OF[real],
                "integral": int64, "indexing": int64}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The standard's dtypes ember has (float16 and bfloat16, extra, are not listed)."""
        _check_device(device)
        return {d.name: d for d in _STANDARD if kind is None or isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()


# the extensions, after the names they use
from ember.array_api import fft, linalg  # noqa: E402,F401
