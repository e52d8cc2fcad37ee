"""Tensors from NumPy values and back, and samples exact in every dtype: shared by the reduction
and sorting tests, whose NumPy oracles need the same values in each dtype."""

from __future__ import annotations

import numpy as np

import ember

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def E(a, dtype: str | None = None):
    """An ember tensor with the values of NumPy array `a` (bfloat16 through float32)."""
    a = np.asarray(a)
    if dtype == "bfloat16":
        return E(a.astype(np.float32)).to(ember.bfloat16)
    if dtype is not None:
        a = a.astype(dtype)
    return ember.from_numpy(a.copy(order="C"))  # (ascontiguousarray makes 0-d 1-d)


def N(t) -> np.ndarray:
    """The values of an ember tensor as a NumPy array (bfloat16/float16 as float64)."""
    shape = tuple(t.shape)  # (tolist() of an empty tensor loses its shape)
    if t.dtype in (ember.bfloat16, ember.float16):
        return np.array(t.float().tolist(), dtype=np.float64).reshape(shape)
    dt = t.dtype.name if t.dtype != ember.bool else np.bool_
    return np.array(t.tolist(), dtype=dt).reshape(shape)


def sample(shape, dtype: str, rng, lo: int, hi: int) -> np.ndarray:
    """Integers in [lo, hi) (ties likely), plus halves for floats: exact in every dtype."""
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == "uint8":
        lo = 0
    a = rng.integers(lo, hi, size=shape)
    if dtype in FLOATS:
        return (a + rng.integers(0, 2, size=shape) * 0.5).astype(np.float64)
    return a.astype(np.int64)
