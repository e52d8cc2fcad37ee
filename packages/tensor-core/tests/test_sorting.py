"""Sorting, selection, searching and comparison ops against NumPy.

Covers sort/argsort/msort, topk, kthvalue, median/nanmedian, mode, cummax/cummin, unique and
unique_consecutive, searchsorted/bucketize, histc/histogram, bincount, quantile/nanquantile,
diff, isclose/allclose/equal, count_nonzero and nansum/nanmean over dtypes, 0-d / empty /
non-contiguous inputs, negative dims, NaN and tie rules (stability), out= and the error paths,
plus the autograd hook's canonical calls.
"""

from __future__ import annotations

import warnings

import exact_values
import numpy as np
import pytest
from exact_values import FLOATS, INTS, E, N

import ember

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # the property tests are skipped, the rest still runs
    given = None

ALL = ["bool", *INTS, *FLOATS]


def sample(shape, dtype: str, rng, lo=-4, hi=5) -> np.ndarray:
    return exact_values.sample(shape, dtype, rng, lo, hi)


def np_of(a, dtype):
    """NumPy array with the dtype's values (bfloat16 as float32)."""
    return a.astype("float32" if dtype == "bfloat16" else dtype)


def stable_argsort(a, axis, descending):
    """NumPy's stable argsort; descending keeps ties in input order and puts NaN first."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    r = np.flip(a, axis)
    idx = np.argsort(r, axis=axis, kind="stable")
    return a.shape[axis] - 1 - np.flip(idx, axis) if a.ndim else idx


def assert_same(actual, expected):
    np.testing.assert_array_equal(N(actual), np.asarray(expected))


# Layouts: shape of the base array, and the same (possibly non-contiguous) view in NumPy/ember.
LAYOUTS = [
    ((7,), lambda x: x),
    ((5, 6), lambda x: x),
    ((3, 4, 5), lambda x: x),
    ((6, 5), lambda x: x.T),
    ((4, 10), lambda x: x[:, ::3]),
    ((3, 4, 5), lambda x: x.transpose(2, 0, 1)),
]


def view(t, fn):
    """Applies the NumPy-style view `fn` to an ember tensor."""
    probe = fn(np.empty(tuple(t.shape)))
    if probe.base is None or probe.flags.c_contiguous and probe.shape == tuple(t.shape):
        return t
    strides = tuple(s // 8 for s in probe.strides)
    offset = (probe.__array_interface__["data"][0] - probe.base.__array_interface__["data"][0]) // 8
    return t.as_strided(probe.shape, strides, offset)


# ---------------------------------------------------------------------------------------------
# sort / argsort / msort


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_numpy_stable(dtype, layout, descending, rng):
    shape, fn = LAYOUTS[layout]
    base = sample(shape, dtype, rng)
    a = fn(np_of(base, dtype))
    t = view(E(base, dtype), fn)
    for dim in range(-a.ndim, a.ndim):
        v, i = ember.sort(t, dim=dim, descending=descending, stable=True)
        idx = stable_argsort(a, dim, descending)
        assert i.dtype == ember.int64 and v.dtype == t.dtype
        assert_same(i, idx)
        assert_same(v, np.take_along_axis(a, idx, dim))
        assert_same(ember.argsort(t, dim=dim, descending=descending, stable=True), idx)
        assert_same(t.argsort(dim=dim, descending=descending, stable=True), idx)
        assert_same(t.sort(dim=dim, descending=descending, stable=True).values, np.take_along_axis(a, idx, dim))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_sort_nan_last_ascending_first_descending(dtype):
    a = np.array([3.0, np.nan, -0.0, 1.0, np.nan, 0.0, -np.inf, np.inf, -2.5])
    t = E(a, dtype)
    v, i = ember.sort(t)
    assert_same(i, np.argsort(a, kind="stable"))
    v, i = ember.sort(t, descending=True)
    assert_same(i, [1, 4, 7, 0, 3, 2, 5, 8, 6])
    assert np.isnan(N(v)[:2]).all()
    # -0.0 and 0.0 compare equal: stable order kept, signs kept
    v, i = ember.sort(E(np.array([0.0, -0.0, 0.0, -0.0]), dtype))
    assert_same(i, [0, 1, 2, 3])
    assert list(np.signbit(N(v))) == [False, True, False, True]


@pytest.mark.parametrize("dtype", ["float32", "int64", "int16", "float64", "uint8", "float16"])
@pytest.mark.parametrize("n", [3000, 200_000])
def test_sort_long_rows_radix(dtype, n, rng):
    a = rng.integers(-1000, 1000, size=n) if n < 10_000 else rng.standard_normal(n) * 1e4
    if dtype == "uint8":
        a = np.abs(a) % 256
    a = a.astype(dtype)
    for desc in (False, True):
        v, i = ember.sort(E(a), descending=desc, stable=True)
        idx = stable_argsort(a, 0, desc)
        assert_same(i, idx)
        assert_same(v, a[idx])


def test_sort_many_rows_parallel_and_wide_keys(rng):
    a = rng.integers(-(2**62), 2**62, size=(64, 2048)).astype(np.int64)
    a[:, ::7] = a[:, :1]  # ties
    v, i = ember.sort(E(a), dim=1, stable=True)
    assert_same(i, np.argsort(a, 1, kind="stable"))
    assert_same(v, np.sort(a, 1))
    f = rng.standard_normal((3, 70_000))
    f[:, ::11] = np.nan
    v, i = ember.sort(E(f), -1)
    np.testing.assert_array_equal(N(v), np.sort(f, -1))
    assert_same(i, np.argsort(f, -1, kind="stable"))


def test_sort_zero_d_empty_out_and_errors():
    v, i = ember.sort(ember.tensor(3.0))
    assert v.shape == () and i.item() == 0 and v.item() == 3.0
    v, i = ember.sort(ember.tensor(3.0), 0)
    v, i = ember.sort(ember.empty(0, 4), 0)
    assert v.shape == (0, 4) and i.shape == (0, 4)
    r = ember.sort(ember.tensor([2, 1]))
    assert type(r).__name__ == "sort" and r.values.tolist() == [1, 2] and r.indices.tolist() == [1, 0]
    ov, oi = ember.empty(0, dtype=ember.int64), ember.empty(0, dtype=ember.int64)
    r = ember.sort(ember.tensor([3, 1, 2]), out=(ov, oi))
    assert r.values is ov and ov.tolist() == [1, 2, 3] and oi.tolist() == [1, 2, 0]
    with pytest.raises(RuntimeError):
        ember.sort(ember.tensor([3, 1]), out=(ember.empty(2), ember.empty(2, dtype=ember.int64)))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.sort(ember.tensor([1.0]), 1)
    with pytest.raises(IndexError):
        ember.sort(ember.tensor(1.0), -2)
    with pytest.raises(TypeError):
        ember.sort([1, 2])


def test_msort(rng):
    a = rng.standard_normal((5, 3))
    assert_same(ember.msort(E(a)), np.sort(a, 0))
    assert_same(E(a).msort(), np.sort(a, 0))
    assert ember.msort(ember.tensor(2.0)).item() == 2.0
    out = ember.empty(0, dtype=ember.float64)
    assert ember.msort(E(a), out=out) is out
    assert_same(out, np.sort(a, 0))


# ---------------------------------------------------------------------------------------------
# topk / kthvalue / median / mode


NUMERIC = [*INTS, *FLOATS]


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("layout", [0, 1, 3, 5])
def test_topk(dtype, layout, rng):
    shape, fn = LAYOUTS[layout]
    base = sample(shape, dtype, rng)
    a = fn(np_of(base, dtype))
    t = view(E(base, dtype), fn)
    for dim in (-1, 0):
        n = a.shape[dim]
        for k in (0, 1, n // 2, n):
            for largest in (True, False):
                v, i = ember.topk(t, k, dim, largest)
                srt = np.sort(a, dim)
                expect = np.flip(srt, dim) if largest else srt
                assert_same(v, np.take(expect, range(k), dim))
                assert_same(v, np.take_along_axis(a, N(i), dim))  # indices point at the values
                v2, i2 = t.topk(k, dim=dim, largest=largest, sorted=False)
                assert_same(np.sort(N(v2), dim), np.sort(N(v), dim))


def test_topk_nan_and_errors():
    t = ember.tensor([3.0, float("nan"), 1.0, 2.0])
    v, i = ember.topk(t, 2)
    assert np.isnan(v[0].item()) and v[1].item() == 3.0 and i.tolist() == [1, 0]
    assert ember.topk(t, 2, largest=False).values.tolist() == [1.0, 2.0]
    for k in (5, -1):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            ember.topk(t, k)
    assert ember.topk(ember.tensor(2.0), 1).values.item() == 2.0
    assert ember.topk(ember.empty(0), 0).values.shape == (0,)


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue(dtype, keepdim, rng):
    a = np_of(sample((4, 9), dtype, rng), dtype)
    t = E(a, dtype)
    for dim in (0, 1, -1):
        for k in (1, 3, a.shape[dim]):
            v, i = ember.kthvalue(t, k, dim, keepdim)
            expect = np.take(np.sort(a, dim), [k - 1], dim)
            if not keepdim:
                expect = expect.squeeze(dim)
            assert_same(v, expect)
            ii = N(i) if keepdim else np.expand_dims(N(i), dim)
            assert_same(v, np.take_along_axis(a, ii, dim).reshape(v.shape))
    assert t.kthvalue(2).values.shape == (4,)


def test_bool_is_refused_like_pytorch():
    b = ember.tensor([True, False])
    with pytest.raises(RuntimeError, match="topk does not support bool dtypes on CPU"):
        ember.topk(b, 1)
    with pytest.raises(NotImplementedError, match="\"kthvalue_cpu\" not implemented for 'Bool'"):
        ember.kthvalue(b, 1)
    with pytest.raises(NotImplementedError, match="\"median_cpu\" not implemented for 'Bool'"):
        ember.median(b)
    with pytest.raises(NotImplementedError, match="\"median_out\" not implemented for 'Bool'"):
        ember.nanmedian(b, 0)
    with pytest.raises(NotImplementedError, match="\"searchsorted_out_cpu\" not implemented for 'Bool'"):
        ember.searchsorted(b, b)
    assert ember.mode(b).values.item() in (True, False)  # these accept bool, as in PyTorch
    assert ember.cummax(b, 0).values.tolist() == [True, True]


def test_kthvalue_errors():
    t = ember.tensor([1.0, 2.0])
    for k in (0, 3):
        with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 0"):
            ember.kthvalue(t, k)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        ember.kthvalue(ember.empty(0), 1)
    assert ember.kthvalue(ember.tensor(5.0), 1).values.item() == 5.0
    assert ember.kthvalue(ember.tensor([[1.0, 2.0, 1.5]]), 2, 1).indices.tolist() == [2]


@pytest.mark.parametrize("dtype", NUMERIC)
def test_median(dtype, rng):
    a = np_of(sample((5, 8), dtype, rng), dtype)
    t = E(a, dtype)
    flat = np.sort(a.ravel())
    assert N(ember.median(t)) == flat[(flat.size - 1) // 2]
    assert N(t.median()) == flat[(flat.size - 1) // 2]
    for dim in (0, 1, -2):
        for keepdim in (False, True):
            v, i = ember.median(t, dim, keepdim)
            s = np.sort(a, dim)
            expect = np.take(s, [(a.shape[dim] - 1) // 2], dim)
            assert_same(v, expect if keepdim else expect.squeeze(dim))
            ii = N(i) if keepdim else np.expand_dims(N(i), dim)
            assert_same(v, np.take_along_axis(a, ii, dim).reshape(v.shape))
            assert_same(ember.nanmedian(t, dim, keepdim).values, N(v))


def test_median_nan_rules():
    nan = float("nan")
    t = ember.tensor([3.0, nan, 1.0, 2.0, nan, 2.0])
    assert np.isnan(ember.median(t).item())
    v, i = ember.median(t, 0)
    assert np.isnan(v.item()) and i.item() == 1
    assert ember.nanmedian(t).item() == 2.0
    v, i = ember.nanmedian(t, 0)
    assert v.item() == 2.0 and i.item() == 3
    v, i = ember.nanmedian(ember.tensor([nan, nan]), 0)
    assert np.isnan(v.item()) and i.item() == 0
    a = np.array([[1.0, nan, 3.0, 4.0], [nan, nan, nan, 2.0], [5.0, 6.0, 7.0, 8.0]])
    expect = [np.sort(r[~np.isnan(r)])[(np.sum(~np.isnan(r)) - 1) // 2] for r in a]
    assert_same(ember.nanmedian(E(a), 1).values, expect)
    assert np.isnan(ember.median(ember.empty(0)).item())
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero size"):
        ember.median(ember.empty(2, 0), 1)
    r = ember.median(ember.tensor(3.0), 0)
    assert r.values.item() == 3.0 and r.indices.item() == 0
    assert type(r).__name__ == "median"


def _np_mode(row):
    vals, counts = np.unique(row, return_counts=True)
    return vals[np.argmax(counts)]  # the smallest among the most frequent


@pytest.mark.parametrize("dtype", ALL)
def test_mode(dtype, rng):
    a = np_of(sample((4, 11), dtype, rng), dtype)
    t = E(a, dtype)
    v, i = ember.mode(t)
    assert_same(v, [_np_mode(r) for r in a])
    assert_same(v, np.take_along_axis(a, N(i)[:, None], 1)[:, 0])
    v, i = t.mode(0, keepdim=True)
    assert_same(v, [[_np_mode(c) for c in a.T]])
    assert_same(v, np.take_along_axis(a, N(i), 0))
    assert ember.mode(ember.tensor([1, 2, 2, 3, 3, 1, 5])).indices.item() == 5
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 0 to have non-zero size"):
        ember.mode(ember.empty(0))


# ---------------------------------------------------------------------------------------------
# cummax / cummin


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", [0, 1, 3, 5])
def test_cummax_cummin(dtype, layout, rng):
    shape, fn = LAYOUTS[layout]
    base = sample(shape, dtype, rng)
    a = fn(np_of(base, dtype))
    t = view(E(base, dtype), fn)
    for dim in range(-a.ndim, a.ndim):
        for name, acc in (("cummax", np.maximum), ("cummin", np.minimum)):
            v, i = getattr(ember, name)(t, dim)
            assert_same(v, acc.accumulate(a, axis=dim))
            assert_same(v, np.take_along_axis(a, N(i), dim))
            # ties move the index to the latest occurrence
            ii = N(i)
            moved = np.moveaxis(ii, dim, -1)
            cur = np.moveaxis(a, dim, -1)
            for row_i, row_a in zip(moved.reshape(-1, moved.shape[-1]), cur.reshape(-1, cur.shape[-1])):
                for j, k in enumerate(row_i):
                    assert row_a[j] != row_a[k] or k == j
            assert_same(getattr(t, name)(dim).indices, ii)


def test_cummax_nan_and_edge_cases():
    nan = float("nan")
    r = ember.cummax(ember.tensor([1.0, 3.0, 3.0, nan, 5.0, nan]), 0)
    assert r.indices.tolist() == [0, 1, 2, 3, 3, 5]
    r = ember.cummin(ember.tensor([1.0, 0.0, nan, -1.0]), 0)
    assert r.indices.tolist() == [0, 1, 2, 2] and np.isnan(r.values[3].item())
    assert ember.cummin(ember.tensor([3, 1, 1, 2, 0, 0]), 0).indices.tolist() == [0, 1, 2, 2, 4, 5]
    assert ember.cummax(ember.tensor(2.0), 0).values.item() == 2.0
    assert ember.cummax(ember.empty(0, 3), 0).values.shape == (0, 3)
    with pytest.raises(IndexError):
        ember.cummax(ember.empty(2), 1)


# ---------------------------------------------------------------------------------------------
# unique / unique_consecutive


@pytest.mark.parametrize("dtype", ALL)
def test_unique_flat(dtype, rng):
    a = np_of(sample((6, 7), dtype, rng), dtype)
    t = E(a, dtype)
    u, inv, cnt = ember.unique(t, return_inverse=True, return_counts=True)
    eu, einv, ecnt = np.unique(a, return_inverse=True, return_counts=True)
    assert_same(u, eu)
    assert_same(inv, einv.reshape(a.shape))
    assert_same(cnt, ecnt)
    assert_same(ember.unique(t), eu)
    assert_same(t.unique(sorted=False), eu)
    u, inv = t.unique(return_inverse=True)
    assert inv.shape == t.shape
    u, cnt = ember.unique(t, return_counts=True)
    assert_same(cnt, ecnt)


@pytest.mark.parametrize("dtype", ["int64", "float32", "bool", "bfloat16"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unique_dim(dtype, axis, rng):
    a = np_of(rng.integers(0, 2, size=(6, 3)), dtype)
    a = np.concatenate([a, a[:2]], 0)
    if axis != 0:
        a = a.T.copy()
    t = E(a, dtype)
    u, inv, cnt = ember.unique(t, dim=axis, return_inverse=True, return_counts=True)
    eu, einv, ecnt = np.unique(a, axis=axis, return_inverse=True, return_counts=True)
    assert_same(u, eu)
    assert_same(inv, einv.ravel())
    assert_same(cnt, ecnt)


def _np_unique_consecutive(a):
    keep = np.ones(a.size, bool)
    keep[1:] = a[1:] != a[:-1]
    starts = np.nonzero(keep)[0]
    counts = np.diff(np.append(starts, a.size))
    return a[starts], np.cumsum(keep) - 1, counts


@pytest.mark.parametrize("dtype", ALL)
def test_unique_consecutive(dtype, rng):
    a = np_of(np.repeat(sample((9,), dtype, rng), rng.integers(1, 4, size=9)), dtype)
    t = E(a, dtype)
    u, inv, cnt = ember.unique_consecutive(t, return_inverse=True, return_counts=True)
    eu, einv, ecnt = _np_unique_consecutive(a)
    assert_same(u, eu)
    assert_same(inv, einv)
    assert_same(cnt, ecnt)
    assert_same(t.unique_consecutive(), eu)
    m = E(np.array([[1, 2], [1, 2], [3, 4], [1, 2]]))
    u, inv, cnt = ember.unique_consecutive(m, return_inverse=True, return_counts=True, dim=0)
    assert u.tolist() == [[1, 2], [3, 4], [1, 2]] and inv.tolist() == [0, 0, 1, 2] and cnt.tolist() == [2, 1, 1]


def test_unique_edge_cases():
    nan = float("nan")
    assert ember.unique(ember.empty(0)).shape == (0,)
    u, inv = ember.unique(ember.tensor(3), return_inverse=True)
    assert u.tolist() == [3] and inv.shape == ()
    u = ember.unique(ember.tensor([nan, 1.0, nan]))  # NaNs are never merged, as in PyTorch
    assert u[0].item() == 1.0 and u.shape == (3,)
    u = ember.unique(ember.tensor([-0.0, 0.0]))
    assert u.shape == (1,)
    with pytest.raises(IndexError):
        ember.unique(ember.zeros(2, 3), dim=2)
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        ember.unique(ember.zeros(3, 0), dim=0)


def test_unique_large_parallel(rng):
    a = rng.integers(-50_000, 50_000, size=300_000)
    u, inv, cnt = ember.unique(E(a), return_inverse=True, return_counts=True)
    eu, einv, ecnt = np.unique(a, return_inverse=True, return_counts=True)
    assert_same(u, eu)
    assert_same(inv, einv)
    assert_same(cnt, ecnt)


# ---------------------------------------------------------------------------------------------
# searchsorted / bucketize


@pytest.mark.parametrize("dtype", INTS + ["float32", "float64", "float16", "bfloat16"])
def test_searchsorted_1d(dtype, rng):
    seq = np_of(np.sort(sample((12,), dtype, rng, 0, 9)), dtype)
    vals = np_of(sample((3, 5), dtype, rng, -1, 11), dtype)
    s, v = E(seq, dtype), E(vals, dtype)
    for right in (False, True):
        side = "right" if right else "left"
        expect = np.searchsorted(seq, vals, side=side)
        r = ember.searchsorted(s, v, right=right)
        assert r.dtype == ember.int64
        assert_same(r, expect)
        assert_same(ember.searchsorted(s, v, side=side), expect)
        r = ember.searchsorted(s, v, right=right, out_int32=True)
        assert r.dtype == ember.int32
        assert_same(r, expect)
        b = ember.bucketize(v, s, right=right)
        assert_same(b, np.searchsorted(seq, vals, side=side))
        assert_same(b, np.digitize(vals, seq, right=not right))


def test_searchsorted_batched_sorter_scalar_and_mixed_dtypes(rng):
    seq = np.sort(rng.standard_normal((2, 3, 10)), -1)
    vals = rng.standard_normal((2, 3, 4))
    r = ember.searchsorted(E(seq), E(vals))
    expect = np.stack([[np.searchsorted(seq[i, j], vals[i, j]) for j in range(3)] for i in range(2)])
    assert_same(r, expect)
    # sorter
    raw = rng.standard_normal(8)
    order = np.argsort(raw)
    q = rng.standard_normal(5)
    r = ember.searchsorted(E(raw), E(q), sorter=E(order))
    assert_same(r, np.searchsorted(raw, q, sorter=order))
    # scalars
    r = ember.searchsorted(ember.tensor([1, 3, 5, 7, 9]), 3)
    assert r.shape == () and r.item() == 1
    assert ember.searchsorted(ember.tensor([1, 3, 5, 7, 9]), 3, right=True).item() == 2
    assert ember.bucketize(4.5, ember.tensor([1, 3, 5])).item() == 2
    # int sequence, float values: compared in the promoted type
    assert ember.searchsorted(ember.tensor([1, 3, 5, 7, 9]), ember.tensor([3.5, 6.0])).tolist() == [2, 3]
    # NaN values land after every boundary
    assert ember.searchsorted(ember.tensor([1.0, 2.0]), ember.tensor([float("nan")])).tolist() == [2]
    # empty
    assert ember.searchsorted(ember.tensor([1.0, 2.0]), ember.empty(0)).shape == (0,)
    out = ember.empty(0, dtype=ember.int64)
    ember.searchsorted(ember.tensor([1.0, 2.0]), ember.tensor([1.5]), out=out)
    assert out.tolist() == [1]


def test_searchsorted_errors():
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension or the first N-1"):
        ember.searchsorted(ember.zeros(2, 3), ember.zeros(3, 3))
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        ember.searchsorted(ember.tensor(1.0), ember.zeros(3))
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ember.searchsorted(ember.zeros(3), ember.zeros(3), side="left", right=True)
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right'"):
        ember.searchsorted(ember.zeros(3), ember.zeros(3), side="middle")
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype"):
        ember.searchsorted(ember.zeros(3), ember.zeros(3), sorter=ember.zeros(3, dtype=ember.int32))
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        ember.searchsorted(ember.zeros(3), ember.zeros(3), sorter=ember.zeros(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        ember.searchsorted(ember.zeros(3), ember.zeros(3), sorter=ember.tensor([0, 1, 3]))
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        ember.bucketize(ember.zeros(3), ember.zeros(2, 2))


# ---------------------------------------------------------------------------------------------
# histc / histogram / bincount


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_histc(dtype, rng):
    a = np_of(sample((50,), dtype, rng), dtype)
    t = E(a, dtype)
    h = ember.histc(t, bins=10, min=-2, max=3)  # exact edges: values on edges are unambiguous
    assert h.dtype == t.dtype
    expect, _ = np.histogram(a.astype(np.float64), bins=10, range=(-2, 3))
    assert_same(h, expect)
    nb = int((a.max() - a.min()) * 2)
    h = t.histc(nb)  # the data's range
    expect, _ = np.histogram(a.astype(np.float64), bins=nb, range=(a.min(), a.max()))
    assert_same(h, expect)
    assert_same(ember.histc(ember.tensor([2.0, 2.0]), bins=4), [0, 0, 2, 0])
    assert_same(ember.histc(ember.tensor([1.0, float("nan"), 9.0]), bins=2, min=0, max=2), [0, 1])


def test_histc_errors():
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ember.histc(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        ember.histc(ember.tensor([1.0]), bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        ember.histc(ember.tensor([1.0]), min=2, max=1)


def test_histogram(rng):
    a = rng.standard_normal(200)
    w = rng.random(200)
    h, e = ember.histogram(E(a), bins=7)
    eh, ee = np.histogram(a, bins=7)
    assert_same(h, eh)
    np.testing.assert_allclose(N(e), ee, rtol=1e-12)
    h, e = ember.histogram(E(a), bins=5, range=(-1.0, 1.0), weight=E(w), density=True)
    eh, ee = np.histogram(a, bins=5, range=(-1.0, 1.0), weights=w, density=True)
    np.testing.assert_allclose(N(h), eh, rtol=1e-12)
    edges = np.array([-3.0, -1.0, 0.0, 0.5, 3.0])
    r = E(a).histogram(E(edges))
    assert type(r).__name__ == "histogram"
    assert_same(r.hist, np.histogram(a, bins=edges)[0])
    assert_same(r.bin_edges, edges)
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.histogram(E(a), E(edges.astype(np.float32)))
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        ember.histogram(E(a), bins=0)


@pytest.mark.parametrize("dtype", INTS)
def test_bincount(dtype, rng):
    a = rng.integers(0, 9, size=30).astype(dtype)
    t = E(a)
    r = ember.bincount(t)
    assert r.dtype == ember.int64
    assert_same(r, np.bincount(a))
    assert_same(t.bincount(minlength=15), np.bincount(a, minlength=15))
    w = rng.random(30)
    r = ember.bincount(t, E(w))
    assert r.dtype == ember.float64
    np.testing.assert_allclose(N(r), np.bincount(a, w))
    r = ember.bincount(t, E(w.astype(np.float32)))
    assert r.dtype == ember.float32
    assert ember.bincount(t, ember.ones(30, dtype=ember.int32)).dtype == ember.float64
    assert_same(ember.bincount(ember.empty(0, dtype=ember.int64), minlength=3), [0, 0, 0])


def test_bincount_errors():
    msg = "bincount only supports 1-d non-negative integral inputs"
    with pytest.raises(RuntimeError, match=msg):
        ember.bincount(ember.tensor([-1, 2]))
    with pytest.raises(RuntimeError, match=msg):
        ember.bincount(ember.zeros(2, 2, dtype=ember.int64))
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        ember.bincount(ember.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        ember.bincount(ember.tensor([1]), minlength=-1)
    with pytest.raises(RuntimeError, match="weights should be 1-d and have the same length as input"):
        ember.bincount(ember.tensor([1, 2]), ember.ones(3))


# ---------------------------------------------------------------------------------------------
# quantile / nanquantile

METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("method", METHODS)
def test_quantile(dtype, method, rng):
    a = rng.standard_normal((4, 7)).astype(dtype)
    t = E(a)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12)
    for q in (0.0, 0.3, 0.5, 0.75, 1.0):
        np.testing.assert_allclose(N(ember.quantile(t, q, interpolation=method)),
                                   np.quantile(a, q, method=method), **tol)
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                np.testing.assert_allclose(
                    N(ember.quantile(t, q, dim, keepdim, interpolation=method)),
                    np.quantile(a, q, axis=dim, keepdims=keepdim, method=method), **tol)
    qs = np.array([0.1, 0.5, 0.9], dtype=dtype)
    r = t.quantile(E(qs), dim=1, keepdim=True, interpolation=method)
    assert r.shape == (3, 4, 1)
    np.testing.assert_allclose(N(r), np.quantile(a, qs, axis=1, keepdims=True, method=method), **tol)
    r = ember.quantile(t, E(qs), keepdim=True)
    assert r.shape == (3, 1, 1)
    np.testing.assert_allclose(N(ember.quantile(t, E(qs))), np.quantile(a, qs), **tol)


@pytest.mark.parametrize("method", METHODS)
def test_nanquantile(method, rng):
    a = rng.standard_normal((5, 6))
    a[0, 1] = a[2, :] = a[3, 0] = np.nan
    t = E(a)
    for q in (0.2, 0.5, 1.0):
        with warnings.catch_warnings():  # NumPy warns about the all-NaN row
            warnings.simplefilter("ignore")
            expect = np.nanquantile(a, q, axis=1, method=method)
        np.testing.assert_allclose(N(ember.nanquantile(t, q, 1, interpolation=method)), expect, rtol=1e-12)
        np.testing.assert_allclose(N(t.nanquantile(q, interpolation=method)),
                                   np.nanquantile(a, q, method=method), rtol=1e-12)
        r = N(ember.quantile(t, q, 1, interpolation=method))  # NaN in a row -> NaN
        np.testing.assert_allclose(r, np.quantile(a, q, axis=1, method=method), rtol=1e-12)


def test_quantile_errors():
    t = ember.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"quantile\(\) q must be in the range \[0, 1\] but got 1.5"):
        ember.quantile(t, 1.5)
    with pytest.raises(RuntimeError, match=r"q values must be in the range \[0, 1\]"):
        ember.quantile(t, ember.tensor([0.5, -0.1]))
    with pytest.raises(RuntimeError, match="q must be a scalar or 1D tensor"):
        ember.quantile(t, ember.tensor([[0.5]]))
    with pytest.raises(RuntimeError, match="input tensor must be either float or double dtype"):
        ember.quantile(ember.tensor([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match="q tensor must be same dtype as the input tensor"):
        ember.quantile(t, ember.tensor([0.5], dtype=ember.float64))
    with pytest.raises(RuntimeError, match="interpolation must be one of linear, lower, higher, midpoint or nearest"):
        ember.quantile(t, 0.5, interpolation="foo")
    with pytest.raises(RuntimeError, match=r"nanquantile\(\) input tensor must be non-empty"):
        ember.nanquantile(ember.empty(0), 0.5)
    with pytest.raises(IndexError):
        ember.quantile(t, 0.5, dim=1)


# ---------------------------------------------------------------------------------------------
# diff / isclose / allclose / equal / count_nonzero / nansum / nanmean


@pytest.mark.parametrize("dtype", ALL)
def test_diff(dtype, rng):
    a = np_of(sample((4, 6), dtype, rng), dtype)
    t = E(a, dtype)
    for n in (0, 1, 2, 7):
        for dim in (0, 1, -1):
            assert_same(ember.diff(t, n, dim), np.diff(a, n, axis=dim))
    pre, app = np_of(sample((4, 2), dtype, rng), dtype), np_of(sample((4, 1), dtype, rng), dtype)
    r = t.diff(dim=1, prepend=E(pre, dtype), append=E(app, dtype))
    assert_same(r, np.diff(a, axis=1, prepend=pre, append=app))
    assert_same(ember.diff(t.T), np.diff(a.T))  # non-contiguous
    for n in (0, 1, 2, 9):
        out = ember.empty(0, dtype=t.dtype)
        r = ember.diff(t, n, out=out)
        assert r is out
        assert_same(out, np.diff(a, n))


def test_diff_errors():
    with pytest.raises(RuntimeError, match="at least one-dimensional"):
        ember.diff(ember.tensor(1.0))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        ember.diff(ember.ones(3), n=-1)
    with pytest.raises(RuntimeError, match="same dimension as input"):
        ember.diff(ember.ones(2, 3), prepend=ember.ones(3))
    with pytest.raises(RuntimeError, match="except along the differencing dimension"):
        ember.diff(ember.ones(2, 3), prepend=ember.ones(3, 3))
    with pytest.raises(IndexError):
        ember.diff(ember.ones(3), dim=1)


@pytest.mark.parametrize("dtype", ALL)
def test_isclose_allclose_equal(dtype, rng):
    a = np_of(sample((20,), dtype, rng), dtype)
    b = a.copy()
    if dtype != "bool":
        b[::3] = b[::3] + (1 if dtype in INTS else 1e-3)
    ta, tb = E(a, dtype), E(b, dtype)
    r = ember.isclose(ta, tb)
    assert r.dtype == ember.bool
    if dtype in ("float32", "float64"):
        assert_same(r, np.isclose(a, b))
        assert_same(ember.isclose(ta, tb, rtol=0, atol=2e-3), np.isclose(a, b, rtol=0, atol=2e-3))
    elif dtype in INTS:
        assert_same(ember.isclose(ta, tb, atol=1), np.isclose(a, b, atol=1))
    assert ember.allclose(ta, ta) and ta.allclose(ta)
    assert ember.equal(ta, ta) and ta.equal(E(a, dtype))
    assert ember.equal(ta, tb) == bool((a == b).all())
    assert not ember.equal(ta, ta[:3])


def test_isclose_nan_and_errors():
    nan = float("nan")
    x = ember.tensor([1.0, nan, float("inf"), 1.0])
    y = ember.tensor([1.0, nan, float("inf"), 1.0 + 1e-6])
    assert ember.isclose(x, y).tolist() == [True, False, True, True]
    assert ember.isclose(x, y, equal_nan=True).tolist() == [True, True, True, True]
    assert not ember.allclose(x, y) and ember.allclose(x, y, equal_nan=True)
    assert not ember.equal(x, x)
    assert ember.equal(ember.tensor([1, 2]), ember.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        ember.isclose(ember.tensor([1]), ember.tensor([1.0]))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got -1"):
        ember.isclose(x, y, rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        ember.isclose(x, y, atol=-1)


@pytest.mark.parametrize("dtype", ALL)
def test_count_nonzero(dtype, rng):
    a = np_of(sample((3, 4, 5), dtype, rng, -1, 2), dtype)
    t = E(a, dtype)
    assert N(ember.count_nonzero(t)) == np.count_nonzero(a)
    for dim in (0, -1, (0, 2), (1, 0)):
        assert_same(ember.count_nonzero(t, dim), np.count_nonzero(a, axis=dim))
        assert_same(t.count_nonzero(dim=dim), np.count_nonzero(a, axis=dim))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nansum_nanmean_match_numpy(dtype, rng):
    a = rng.standard_normal((4, 5)).astype(dtype)
    a[0, 0] = a[1, :] = a[3, 2] = np.nan
    t = E(a)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12)
    np.testing.assert_allclose(N(ember.nansum(t)), np.nansum(a), **tol)
    np.testing.assert_allclose(N(ember.nansum(t, 1)), np.nansum(a, 1), **tol)
    np.testing.assert_allclose(N(ember.nansum(t.T, 0)), np.nansum(a.T, 0), **tol)
    np.testing.assert_allclose(N(ember.nanmean(t)), np.nanmean(a), **tol)
    np.testing.assert_allclose(N(ember.nanmean(t, 0, keepdim=True)), np.nanmean(a, 0, keepdims=True), **tol)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expect = np.nanmean(a, 1)
    np.testing.assert_allclose(N(ember.nanmean(t, 1)), expect, **tol)  # all-NaN row -> NaN
    assert N(ember.nansum(E(np.full(3, np.nan)))) == 0.0
    assert_same(ember.nansum(ember.tensor([1, 2, 3])), 6)


# ---------------------------------------------------------------------------------------------
# PyTorch parity spot checks (skipped without torch)


def test_parity_with_torch(torch, rng):
    a = rng.standard_normal((6, 9)).astype(np.float32)
    a[1, 2] = a[4, 4] = np.nan
    ta, ea = torch.from_numpy(a), E(a)
    for fn in (lambda m, x: m.sort(x, dim=1, stable=True).indices, lambda m, x: m.topk(x, 3).indices,
               lambda m, x: m.nanmedian(x, 1).indices, lambda m, x: m.cummin(x, 0).indices,
               lambda m, x: m.kthvalue(x, 4, 0).indices, lambda m, x: m.mode(x.round(), 1).indices):
        np.testing.assert_array_equal(N(fn(ember, ea)), fn(torch, ta).numpy())
    # many ties: the indices of equal values agree too
    b = rng.integers(0, 6, size=(4, 300)).astype(np.float32)
    b[0, ::13] = np.nan
    tb, eb = torch.from_numpy(b), E(b)
    for k in (1, 4, 5, 150):
        for m_fn in (lambda m, x, k=k: m.topk(x, k).indices,
                     lambda m, x, k=k: m.topk(x, k, largest=False).indices,
                     lambda m, x, k=k: m.kthvalue(x, k).indices,
                     lambda m, x, k=k: m.topk(x, min(k, 4), 0).indices):
            np.testing.assert_array_equal(N(m_fn(ember, eb)), m_fn(torch, tb).numpy())
    for m_fn in (lambda m, x: m.median(x, 1).indices, lambda m, x: m.nanmedian(x, 1).indices,
                 lambda m, x: m.mode(x, 1).indices, lambda m, x: m.mode(x, 0).indices):
        np.testing.assert_array_equal(N(m_fn(ember, eb)), m_fn(torch, tb).numpy())


# ---------------------------------------------------------------------------------------------
# the autograd hook


def test_autograd_hook_receives_canonical_calls(recorded_calls):
    x = ember.tensor([[1.0, 2.0, 0.5], [3.0, 5.0, 4.0]]).requires_grad_()
    C = ember._C
    q = ember.tensor([0.25, 0.5])
    expected = [
        (lambda: x.sort(), "sort", C.sort, {"dim": -1, "descending": False, "stable": False}),
        (lambda: ember.sort(x, dim=0, descending=True, stable=True), "sort", C.sort, {"dim": 0, "descending": True, "stable": True}),
        (lambda: x.topk(2), "topk", C.topk, {"k": 2, "dim": -1, "largest": True, "sorted": True}),
        (lambda: x.kthvalue(1, 0, True), "kthvalue", C.kthvalue, {"k": 1, "dim": 0, "keepdim": True}),
        (lambda: x.median(), "median", C.median, {}),
        (lambda: x.median(1), "median", C.median, {"dim": 1, "keepdim": False}),
        (lambda: x.nanmedian(), "nanmedian", C.nanmedian, {}),
        (lambda: ember.nanmedian(x, 0, True), "nanmedian", C.nanmedian, {"dim": 0, "keepdim": True}),
        (lambda: x.mode(), "mode", C.mode, {"dim": -1, "keepdim": False}),
        (lambda: x.cummax(1), "cummax", C.cummax, {"dim": 1}),
        (lambda: ember.cummin(x, 0), "cummin", C.cummin, {"dim": 0}),
        (lambda: x.quantile(0.5), "quantile", C.quantile,
         {"q": 0.5, "dim": None, "keepdim": False, "interpolation": "linear"}),
        (lambda: x.nanquantile(q, 1, True, interpolation="lower"), "nanquantile", C.nanquantile,
         {"q": q, "dim": 1, "keepdim": True, "interpolation": "lower"}),
    ]
    for call, name, fn, kwargs in expected:
        recorded_calls.clear()
        call()
        assert len(recorded_calls) == 1, name
        got_name, got_fn, args, got_kwargs = recorded_calls[0]
        assert got_name == name and got_fn is fn and args[0] is x
        assert got_kwargs == kwargs, (name, got_kwargs)
    # ops without a gradient do not go through the hook
    recorded_calls.clear()
    x.argsort()
    ember.unique(x)
    ember.searchsorted(x.detach()[0].sort().values, x.detach())
    assert recorded_calls == []
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.sort(x, out=(ember.empty(0), ember.empty(0, dtype=ember.int64)))


# ---------------------------------------------------------------------------------------------
# properties

if given is not None:

    @settings(max_examples=60, deadline=None)
    @given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=9),
                      elements=st.floats(-10, 10, width=32) | st.just(np.nan)),
           st.integers(-3, 2), st.booleans())
    def test_sort_property(a, dim, descending):
        dim = dim % a.ndim
        v, i = ember.sort(E(a), dim=dim, descending=descending, stable=True)
        idx = stable_argsort(a, dim, descending)
        np.testing.assert_array_equal(N(i), idx)
        np.testing.assert_array_equal(N(v), np.take_along_axis(a, idx, dim))

    @settings(max_examples=60, deadline=None)
    @given(hnp.arrays(np.int64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=8),
                      elements=st.integers(-5, 5)))
    def test_unique_property(a):
        u, inv, cnt = ember.unique(E(a), return_inverse=True, return_counts=True)
        eu, einv, ecnt = np.unique(a, return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(N(u), eu)
        np.testing.assert_array_equal(N(inv), einv.reshape(a.shape))
        np.testing.assert_array_equal(N(cnt), ecnt)
