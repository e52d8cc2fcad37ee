"""ember.testing.assert_close, as torch.testing.assert_close: the same default tolerances per
dtype, the same checks in the same order and the same messages (ember's dtype/Size reprs)."""

from __future__ import annotations

import cmath
import collections.abc
import math

import ember

__all__ = ["assert_close"]

# torch's default (rtol, atol) per dtype; other dtypes (integers, bool) compare exactly.
_DTYPE_PRECISIONS = {
    ember.float16: (1e-3, 1e-5),
    ember.bfloat16: (1.6e-2, 1e-5),
    ember.float32: (1.3e-6, 1e-5),
    ember.float64: (1e-7, 1e-7),
}
for _name, _tols in (("complex32", (1e-3, 1e-5)), ("complex64", (1.3e-6, 1e-5)),
                     ("complex128", (1e-7, 1e-7))):
    if hasattr(ember, _name):
        _DTYPE_PRECISIONS[getattr(ember, _name)] = _tols


class _Mismatch(Exception):
    def __init__(self, cls, message):
        super().__init__(message)
        self.cls, self.message = cls, message


def _fail(cls, message):
    raise _Mismatch(cls, message)


def _tolerances(*dtypes, rtol, atol):
    if (rtol is None) ^ (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None and atol is not None:
        return rtol, atol
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _mismatch_msg(*, default_identifier, identifier, extra, abs_diff, abs_diff_idx, atol,
                  rel_diff, rel_diff_idx, rtol):
    equality = rtol == 0 and atol == 0

    def diff_msg(kind, diff, idx, tol):
        msg = (f"{kind.title()} difference: {diff}" if idx is None
               else f"Greatest {kind} difference: {diff} at index {idx}")
        if not equality:
            msg += f" (up to {tol} allowed)"
        return msg + "\n"

    msg = f"{default_identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_msg("absolute", abs_diff, abs_diff_idx, atol)
    msg += diff_msg("relative", rel_diff, rel_diff_idx, rtol)
    return msg.strip()


def _unravel(flat, shape):
    idx = []
    for size in reversed(tuple(shape)):
        idx.append(flat % size)
        flat //= size
    return tuple(reversed(idx))


def _is_number(x):
    return isinstance(x, (bool, int, float, complex))


def _compare_numbers(actual, expected, *, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        _fail(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    kinds = {bool: ember.bool, int: ember.int64, float: ember.float64, complex: None}
    dtypes = [kinds[type(v)] for v in (actual, expected)]
    if None in dtypes:  # complex numbers: complex128's tolerances
        rtol, atol = (1e-7, 1e-7) if rtol is None else (rtol, atol)
    else:
        rtol, atol = _tolerances(*dtypes, rtol=rtol, atol=atol)
    if actual == expected:
        return
    isnan = cmath.isnan if isinstance(actual, complex) or isinstance(expected, complex) \
        else (lambda v: isinstance(v, float) and math.isnan(v))
    if equal_nan and isnan(actual) and isnan(expected):
        return
    diff = abs(actual - expected)
    if not (isnan(actual) or isnan(expected)) and diff <= atol + rtol * abs(expected):
        return
    _fail(AssertionError, _scalar_msg(actual, expected, rtol, atol))


def _scalar_msg(actual, expected, rtol, atol):
    diff = abs(actual - expected)
    rel = float("inf") if expected == 0 else diff / abs(expected)
    return _mismatch_msg(
        default_identifier="Scalars", identifier=None,
        extra=f"Expected {expected} but got {actual}.", abs_diff=diff, abs_diff_idx=None,
        atol=atol, rel_diff=rel, rel_diff_idx=None, rtol=rtol)


def _as_tensor(x):
    if isinstance(x, ember.Tensor):
        return x
    return ember.as_tensor(x)  # a NumPy array


def _compare_tensors(actual, expected, *, rtol, atol, equal_nan, check_device, check_dtype,
                     check_layout, check_stride):
    def mismatch(attr, a, e):
        _fail(AssertionError, f"The values for attribute '{attr}' do not match: {a} != {e}.")

    if actual.shape != expected.shape:
        mismatch("shape", actual.shape, expected.shape)
    if check_layout and actual.layout != expected.layout:
        mismatch("layout", actual.layout, expected.layout)
    elif check_stride and actual.stride() != expected.stride():
        mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        mismatch("dtype", actual.dtype, expected.dtype)
    rtol, atol = _tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol)

    actual, expected = actual.detach(), expected.detach()
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype != expected.dtype:
        common = ember.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    if actual.dtype == ember.bool:  # torch compares bools as integers
        actual, expected = actual.to(ember.uint8), expected.to(ember.uint8)
    matches = ember.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(matches.all()):
        return
    if actual.dim() == 0:
        _fail(AssertionError, _scalar_msg(actual.item(), expected.item(), rtol, atol))
    n = matches.numel()
    mismatches = n - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    a, e, m = actual.flatten(), expected.flatten(), matches.flatten()
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        a, e = a.to(ember.int64), e.to(ember.int64)
    abs_diff = (a - e).abs()  # real for complex tensors too
    abs_diff[m] = 0
    max_abs, max_abs_idx = ember.max(abs_diff, 0)
    rel_diff = abs_diff / e.abs()
    rel_diff[m] = 0
    max_rel, max_rel_idx = ember.max(rel_diff, 0)
    _fail(AssertionError, _mismatch_msg(
        default_identifier="Tensor-likes", identifier=None, extra=extra,
        abs_diff=max_abs.item(), abs_diff_idx=_unravel(int(max_abs_idx), matches.shape),
        atol=atol, rel_diff=max_rel.item(),
        rel_diff_idx=_unravel(int(max_rel_idx), matches.shape), rtol=rtol))


def _is_tensor_like(x):
    if isinstance(x, ember.Tensor):
        return True
    try:
        import numpy as np
    except ImportError:
        return False
    return isinstance(x, np.ndarray)


def _compare(actual, expected, path, **opts):
    if _is_tensor_like(actual) and _is_tensor_like(expected):
        try:
            _compare_tensors(_as_tensor(actual), _as_tensor(expected), **opts)
        except _Mismatch as m:
            raise _Mismatch(m.cls, m.message + _where(path)) from None
        return
    if _is_number(actual) and _is_number(expected):
        try:
            _compare_numbers(actual, expected, rtol=opts["rtol"], atol=opts["atol"],
                             equal_nan=opts["equal_nan"], check_dtype=opts["check_dtype"])
        except _Mismatch as m:
            raise _Mismatch(m.cls, m.message + _where(path)) from None
        return
    if actual is None and expected is None:
        return
    seq = collections.abc.Sequence
    if (isinstance(actual, seq) and isinstance(expected, seq)
            and not isinstance(actual, str) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            _fail(AssertionError, f"The length of the sequences mismatch: {len(actual)} != "
                                  f"{len(expected)}" + _where(path))
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, path + [i], **opts)
        return
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        a_keys, e_keys = set(actual.keys()), set(expected.keys())
        if a_keys != e_keys:
            missing = sorted(e_keys - a_keys, key=repr)
            extra = sorted(a_keys - e_keys, key=repr)
            _fail(AssertionError, "The keys of the mappings do not match:\n"
                  + (f"Missing keys in the actual mapping: {missing}\n" if missing else "")
                  + (f"Additional keys in the actual mapping: {extra}" if extra else "").rstrip()
                  + _where(path))
        for k in sorted(e_keys, key=repr):
            _compare(actual[k], expected[k], path + [k], **opts)
        return
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                    f"{type(expected)}.")


def _where(path):
    if not path:
        return ""
    return "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Asserts that ``actual`` and ``expected`` are close: ``|actual - expected| <= atol +
    rtol * |expected|`` elementwise, with torch's defaults per dtype (float32: rtol 1.3e-6,
    atol 1e-5; float64: 1e-7, 1e-7; float16: 1e-3, 1e-5; bfloat16: 1.6e-2, 1e-5; integers and
    bool: exact). Tensors, NumPy arrays, Python numbers, and sequences and mappings of them
    (compared item by item). ``msg`` replaces the message, or (a callable) rewrites it.

    >>> import ember
    >>> ember.testing.assert_close(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.0 + 1e-7]))
    """
    if (rtol is None) ^ (atol is None):
        _tolerances(rtol=rtol, atol=atol)  # raises torch's ValueError
    try:
        _compare(actual, expected, [], rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=check_device, check_dtype=check_dtype,
                 check_layout=check_layout, check_stride=check_stride)
    except _Mismatch as m:
        message = m.message
        if callable(msg):
            message = msg(message)
        elif msg is not None:
            message = msg
        raise m.cls(message) from None
