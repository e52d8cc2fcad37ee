"""Generic tests of the sorting and selecting ops, driven by the op database
(ember.testing.sort_db): every entry, every dtype it takes, against its NumPy reference on 0-d to
3-d, zero-size and non-contiguous samples with ties and NaN, both dim signs and keepdim both
ways; what an empty or short dim raises; the indices (the stable order exactly, or checked by
gathering the values); the dtypes each op refuses."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import ember
from ember.testing.opdb import ALL_DTYPES, NP_DTYPE, edtype
from ember.testing.sort_db import ELSEWHERE, SORTS, SortInfo

OPS = list(SORTS.values())
PARAMS = [pytest.param(op, dt, id=f"{op.name}-{dt}") for op in OPS for dt in op.dtypes]


def _np(t: ember.Tensor) -> np.ndarray:
    t = t.detach()
    if t.dtype in (ember.bfloat16, ember.float16):
        t = t.float()
    return t.numpy()


def _same(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind == "f" or actual.dtype.kind == "f":
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=1e-6, atol=0, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def _check(op: SortInfo, dtype: str, shape, dim, keepdim, layout) -> None:
    arr, x = op.make_input(shape, dtype, layout)
    what = f"{op.name}({dtype}) shape={shape} dim={dim} keepdim={keepdim} {layout}"
    error = op.expected_error(shape, dim if shape else 0)
    if error is not None:
        with pytest.raises(error):
            op.call(x, dim, keepdim)
        return
    result = op.call(x, dim, keepdim)
    values, indices = (result if isinstance(result, tuple) else (result, None))
    if op.indices == "only":
        values, indices = None, values
    src = arr.astype(np.float64) if dtype in ("float16", "bfloat16") else \
        arr.astype(NP_DTYPE[dtype]) if dtype != "bool" else arr
    axis = dim % max(len(shape), 1) if shape else 0
    view = src.reshape(1) if not shape else src  # a 0-d tensor's dim 0 is its one element
    expected = np.asarray(op.ref(view, axis))
    if not shape:
        expected = expected.reshape(())
    elif keepdim and op.reduces:
        expected = np.expand_dims(expected, axis)
    if op.indices == "only":  # argsort: the indices are the result
        assert indices.dtype == ember.int64
        _same(_np(indices), expected, what)
        return
    assert values.dtype == edtype(op.result_dtype(dtype)), what
    _same(_np(values), expected.astype(np.float64) if dtype in ("float16", "bfloat16")
          else expected, what)
    if indices is None:
        return
    assert indices.dtype == ember.int64 and tuple(indices.shape) == tuple(values.shape), what
    if op.indices == "exact":
        order = np.asarray(op.ref_indices(view, axis))
        _same(_np(indices), order.reshape(tuple(indices.shape)), what + " (indices)")
        return
    # "gather": the values at the returned indices are the returned values
    idx = _np(indices)
    if not shape:
        assert idx.reshape(-1).tolist() == [0], what
        return
    if op.reduces and not keepdim:
        idx = np.expand_dims(idx, axis)
    picked = np.take_along_axis(src, idx, axis)
    if op.reduces and not keepdim:
        picked = picked.squeeze(axis)
    _same(picked.astype(np.float64) if dtype in ("float16", "bfloat16") else picked,
          _np(values).astype(picked.dtype) if dtype not in ("float16", "bfloat16")
          else _np(values).astype(np.float64), what + " (gathered at the indices)")


@pytest.mark.parametrize("op,dtype", PARAMS)
def test_values_and_indices_against_numpy(op, dtype):
    for shape, dim, keepdim, layout in op.samples():
        _check(op, dtype, shape, dim, keepdim, layout)


@pytest.mark.parametrize("op", [op for op in OPS if set(op.dtypes) != set(ALL_DTYPES)],
                         ids=lambda op: op.name)
def test_refused_dtypes(op):
    for dtype in sorted(set(ALL_DTYPES) - set(op.dtypes)):
        x = ember.ones(3, 4, dtype=edtype(dtype))
        with pytest.raises(RuntimeError):  # NotImplementedError is one, as in torch
            op.call(x, 0, False)


def test_every_sort_op_has_an_entry():
    """A registry op of the sort family is in the database or named in ELSEWHERE with the
    test module that checks it (which must exist and call it)."""
    names = {row["name"] for row in ember._C._ops() if row["family"] == "sort"}
    covered = {op.registry_name for op in OPS}
    missing = sorted(names - covered - set(ELSEWHERE))
    assert not missing, f"sort-family ops without an entry in ember.testing.sort_db: {missing}"
    here = pathlib.Path(__file__).parent
    for name, module in ELSEWHERE.items():
        assert name in names, f"ELSEWHERE names {name}, which is not a registered sort op"
        assert f"{name}(" in (here / module).read_text(), f"{module} does not call {name}"
