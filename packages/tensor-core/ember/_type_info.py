"""torch.finfo and torch.iinfo: the numeric limits of ember's dtypes, as torch reports them
(scripts write `ember.finfo(x.dtype).eps`, `ember.iinfo(ember.int32).max`)."""

from __future__ import annotations

import math

from ember import _C

builtin_type = type  # the parameters below are named `type`, as torch's

# floating dtypes: (exponent bits, explicit mantissa bits) of their binary formats
_FLOAT_FORMATS = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23), "float64": (11, 52)}


_DEFAULT = object()  # finfo() without an argument: the default dtype (None is refused, as torch)


def _dtype_arg(name: str, type) -> _C.dtype:  # noqa: A002 - torch's parameter name
    if type is _DEFAULT:
        return _C.get_default_dtype()
    if not isinstance(type, _C.dtype):
        raise TypeError(f"{name}(): argument 'type' (position 1) must be torch.dtype, not "
                        f"{builtin_type(type).__name__}")
    return type


class finfo:  # noqa: N801 - torch's name
    """finfo(type): bits, eps, max, min, tiny (= smallest_normal), resolution and dtype of a
    floating dtype (the default dtype when none is given)."""

    def __init__(self, type=_DEFAULT):  # noqa: A002
        dt = _dtype_arg("finfo", type)
        if dt.is_complex:  # a complex dtype's limits are its parts' (complex64's: float32's)
            dt = dt.to_real()
        if dt.name not in _FLOAT_FORMATS:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                            "to handle 'torch.finfo'")
        exponent, mantissa = _FLOAT_FORMATS[dt.name]
        bias = 2 ** (exponent - 1) - 1
        self.bits = dt.itemsize * 8
        self.eps = 2.0 ** -mantissa
        self.max = (2.0 - 2.0 ** -mantissa) * 2.0 ** bias
        self.min = -self.max
        self.smallest_normal = self.tiny = 2.0 ** (1 - bias)
        # NumPy's and torch's: 10 ** -(the decimal digits the mantissa holds)
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))
        self.dtype = dt.name

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    __hash__ = None  # torch's finfo is unhashable too

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - torch's name
    """iinfo(type): bits, min, max and dtype of an integer dtype."""

    def __init__(self, type):  # noqa: A002
        dt = _dtype_arg("iinfo", type)
        if dt.name == "bool":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if dt.is_floating_point or dt.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        self.bits = dt.itemsize * 8
        if dt.is_signed:
            self.min, self.max = -(2 ** (self.bits - 1)), 2 ** (self.bits - 1) - 1
        else:
            self.min, self.max = 0, 2 ** self.bits - 1
        self.dtype = dt.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    __hash__ = None

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
