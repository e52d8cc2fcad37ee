"""Helpers shared by the indexing and index-op tests."""

from __future__ import annotations

import numpy as np

from ember.testing.opdb import NP_DTYPE, make_tensor

LAYOUTS = ("contiguous", "transposed", "strided", "offset")


def T(arr, dtype=None):
    arr = np.asarray(arr)
    return make_tensor(arr, dtype or arr.dtype.name)


def sample(shape, dtype="float32", seed=0):
    """Random values of `dtype`, integers for every dtype, so exact in every float."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype in ("uint8",):
        return rng.integers(0, 100, size=shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-50, 50, size=shape).astype(NP_DTYPE[dtype])
    return rng.integers(-8, 8, size=shape).astype(NP_DTYPE[dtype])  # exact in every float
