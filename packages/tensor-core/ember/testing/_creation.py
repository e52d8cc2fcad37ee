"""ember.testing.make_tensor, as torch.testing.make_tensor: random values in [low, high) with
torch's defaults (floating point: [-9, 9); integers: [-9, 10), unsigned from 0; bool: False or
True), from ember's global generator."""

from __future__ import annotations

import math

import ember

__all__ = ["make_tensor"]

_INT_RANGES = {ember.uint8: (0, 255), ember.int8: (-128, 127), ember.int16: (-32768, 32767),
               ember.int32: (-2**31, 2**31 - 1), ember.int64: (-2**63, 2**63 - 1)}
_FLOAT_MAX = {ember.float16: 65504.0, ember.bfloat16: 3.3895313892515355e38,
              ember.float32: 3.4028234663852886e38, ember.float64: 1.7976931348623157e308}
_FLOAT_TINY = {ember.float16: 6.103515625e-05, ember.bfloat16: 1.1754943508222875e-38,
               ember.float32: 1.1754943508222875e-38, ember.float64: 2.2250738585072014e-308}


def _low_high(low, high, lowest_inclusive, highest_exclusive, default_low, default_high, dtype):
    def clamp(a, lo, hi):
        return min(max(a, lo), hi)

    low = low if low is not None else default_low
    high = high if high is not None else default_high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low >= high and not (low == high and dtype.is_floating_point):
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    if high < lowest_inclusive or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports "
                         f"[{lowest_inclusive}, {highest_exclusive})")
    low = clamp(low, lowest_inclusive, highest_exclusive)
    high = clamp(high, lowest_inclusive, highest_exclusive)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` (ints, or one sequence) with random values of ``dtype`` on
    ``device``; ``noncontiguous`` gives a strided view, ``exclude_zero`` replaces zeros (by
    1 for integers, the smallest normal number for floating point)."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple, ember.Size)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if requires_grad and not dtype.is_floating_point:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         "dtypes")
    if dtype == ember.bool:
        result = ember.randint(0, 2, shape, device=device).to(ember.bool)
    elif dtype in _INT_RANGES:
        lo, hi = _INT_RANGES[dtype]
        low, high = _low_high(low, high, lo, hi + 1, -9 if lo < 0 else 0, 10, dtype)
        result = ember.randint(int(math.ceil(low)), int(math.ceil(high)), shape, device=device,
                               dtype=dtype)
    elif dtype.is_floating_point:
        m = _FLOAT_MAX[dtype]
        low, high = _low_high(low, high, -m, m, -9, 9, dtype)
        result = ember.empty(shape, device=device, dtype=dtype)
        result.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "ember.testing.make_tensor(). To request support, file an issue.")
    if noncontiguous and result.numel() > 1:
        result = ember.repeat_interleave(result, 2, dim=-1)
        result = result[..., ::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if not dtype.is_floating_point else _FLOAT_TINY[dtype]
    if dtype.is_floating_point:
        result.requires_grad = requires_grad
    return result
