"""Reductions, scans and softmax against NumPy (and PyTorch's documented rules).

Covers sum/nansum/mean/nanmean/prod, max/min (three forms), amax/amin, argmax/argmin, var/std
(+ _mean), norm, logsumexp, all/any, count_nonzero, cumsum/cumprod and softmax/log_softmax over
dtypes, 0-d / empty / non-contiguous inputs, dim forms, keepdim, dtype=, out=, NaN rules, the
error messages, the parallel paths (split reductions, outer reductions, copies) and the autograd
hook. bfloat16 values are compared through float32 with loose tolerances.
"""

from __future__ import annotations

import math
import warnings

import exact_values
import numpy as np
import pytest
from exact_values import FLOATS, INTS, E, N

import ember

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # the property test is skipped, the rest still runs
    given = None

TOL = {
    "float16": dict(rtol=2e-3, atol=1e-3),
    "bfloat16": dict(rtol=2e-2, atol=1e-2),
    "float32": dict(rtol=1e-5, atol=1e-6),
    "float64": dict(rtol=1e-10, atol=1e-12),
}


def sample(shape, dtype: str, rng, lo=-3, hi=4) -> np.ndarray:
    return exact_values.sample(shape, dtype, rng, lo, hi)


def close(actual, expected, dtype="float64", **kw):
    tol = dict(TOL.get(dtype, dict(rtol=0, atol=0)))
    tol.update(kw)
    np.testing.assert_allclose(N(actual), np.asarray(expected, dtype=np.float64), **tol)


# Layouts: (name, shape of the base array, the same view in NumPy and in ember).
LAYOUTS = [
    ("0d", (), lambda x: x, lambda t: t),
    ("1d", (7,), lambda x: x, lambda t: t),
    ("2d", (5, 6), lambda x: x, lambda t: t),
    ("3d", (3, 4, 5), lambda x: x, lambda t: t),
    ("empty", (3, 0, 2), lambda x: x, lambda t: t),
    ("transposed", (5, 6), lambda x: x.T, lambda t: t.t()),
    ("permuted", (3, 4, 5), lambda x: x.transpose(2, 0, 1), lambda t: t.permute(2, 0, 1)),
    ("strided", (6, 9), lambda x: x[::2, 1::3], lambda t: t[::2, 1::3]),
    ("strided3d", (4, 6, 5), lambda x: x[1:, ::2, ::2], lambda t: t[1:, ::2, ::2]),
]
LAYOUT_IDS = [layout[0] for layout in LAYOUTS]


def dims_for(ndim: int):
    out = [None]
    if ndim == 0:
        return out + [0, -1]
    out += [0, -1]
    if ndim >= 2:
        out += [(0, -1), [1]]
    if ndim >= 3:
        out += [(0, 2), (2, 1, 0), (1,)]
    return out


def np_axis(dim, ndim):
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if ndim == 0:
        return None
    return tuple(d % ndim for d in dims)


def cases(layouts=LAYOUTS):
    for name, shape, npv, emv in layouts:
        for dim in dims_for(len(npv(np.empty(shape)).shape)):
            for keepdim in (False, True):
                yield pytest.param(shape, npv, emv, dim, keepdim, id=f"{name}-{dim}-{keepdim}")


def build(shape, npv, emv, dtype, rng, **kw):
    base = sample(shape, dtype, rng, **kw)
    return npv(base), emv(E(base, dtype))


def np_reduce(fn, a, dim, keepdim, **kw):
    axis = np_axis(dim, a.ndim)
    r = fn(a, axis=axis, keepdims=keepdim, **kw)
    return np.asarray(r)


# ---------------------------------------------------------------------------------------------
# sum / mean / prod / nansum / nanmean


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
@pytest.mark.parametrize("shape,npv,emv,dim,keepdim", list(cases()))
def test_sum(dtype, shape, npv, emv, dim, keepdim, rng):
    a, t = build(shape, npv, emv, dtype, rng)
    r = ember.sum(t, dim, keepdim) if dim is not None else t.sum(dim=None, keepdim=keepdim)
    ref = np_reduce(np.sum, a.astype(np.float64 if dtype in FLOATS else np.int64), dim, keepdim)
    expect_dtype = dtype if dtype in FLOATS else "int64"
    assert r.dtype == getattr(ember, expect_dtype)
    assert tuple(r.shape) == ref.shape
    close(r, ref, expect_dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,npv,emv,dim,keepdim", list(cases()))
def test_mean(dtype, shape, npv, emv, dim, keepdim, rng):
    a, t = build(shape, npv, emv, dtype, rng)
    r = t.mean(dim, keepdim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np_reduce(np.mean, a.astype(np.float64), dim, keepdim)
    assert r.dtype == getattr(ember, dtype)
    assert tuple(r.shape) == ref.shape
    close(r, ref, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "bool", "float16"])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_prod(dtype, dim, keepdim, rng):
    a = sample((3, 4), dtype, rng, lo=-2, hi=3)
    t = E(a, dtype)
    r = t.prod(dim, keepdim) if dim is not None else ember.prod(t)
    ref = np_reduce(
        np.prod,
        a.astype(np.float64 if dtype in FLOATS else np.int64),
        dim,
        keepdim if dim is not None else False,
    )
    expect = dtype if dtype in FLOATS else "int64"
    assert r.dtype == getattr(ember, expect)
    close(r, ref, expect)


def test_prod_dim_must_be_int():
    # torch's two forms, neither taking a tuple of dims: its message lists them
    with pytest.raises(TypeError, match="prod\\(\\) received an invalid combination of "
                                        "arguments - got \\(Tensor, tuple\\)"):
        ember.prod(ember.ones(2, 3), (0, 1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_nansum_nanmean(dtype, dim, rng):
    a = sample((4, 5), dtype, rng)
    a[0, 1] = a[2, 3] = a[3, 3] = np.nan
    a[:, 4] = np.nan
    t = E(a, dtype)
    close(t.nansum(dim), np_reduce(np.nansum, a, dim, False), dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np_reduce(np.nanmean, a, dim, False)
    close(ember.nanmean(t, dim), ref, dtype)
    # plain sum/mean propagate the NaN
    assert np.isnan(N(t.sum())) and np.isnan(N(t.mean()))


def test_nansum_int_and_nanmean_int():
    assert ember.tensor([[1, 2]]).nansum().item() == 3
    assert ember.tensor([[1, 2]]).nansum().dtype == ember.int64
    with pytest.raises(
        RuntimeError,
        match="nanmean\\(\\): expected input to have floating point or complex dtype but got Long",
    ):
        ember.tensor([1, 2]).nanmean()


def test_sum_dtype_argument():
    t = ember.tensor([1, 2, 3], dtype=ember.int32)
    assert t.sum(dtype=ember.float64).dtype == ember.float64
    assert t.sum(dtype=ember.int32).dtype == ember.int32
    assert ember.tensor([True, True]).sum(dtype=ember.float16).dtype == ember.float16
    assert ember.tensor([True, True]).sum(dtype=ember.float16).item() == 2.0
    assert ember.tensor([1.5, 2.5]).sum(dtype=ember.int32).item() == 3  # cast first, then sum
    assert ember.tensor([1, 2]).mean(dtype=ember.float32).item() == 1.5
    assert ember.tensor([1, 2]).prod(dtype=ember.float32).dtype == ember.float32
    assert ember.tensor([1, 2]).sum(0, True, dtype=ember.float32).tolist() == [3.0]
    x = ember.tensor([1.0, 2.0], dtype=ember.float16)
    assert x.sum().dtype == ember.float16 and x.mean().dtype == ember.float16


def test_integer_sums_wrap_like_int64():
    big = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    assert E(big).sum().item() == int(np.sum(big))  # wraps identically
    assert E(np.array([100, 100], dtype=np.int8)).sum().item() == 200  # accumulates in int64


def test_mean_errors():
    with pytest.raises(
        RuntimeError,
        match=r"mean\(\): could not infer output dtype\. Input dtype "
        r"must be either a floating point or complex dtype\. "
        r"Got: Long",
    ):
        ember.tensor([1, 2]).mean()
    with pytest.raises(RuntimeError, match="Got: Bool"):
        ember.tensor([True]).mean()
    with pytest.raises(
        RuntimeError,
        match="Optional dtype must be either a floating point or complex dtype. Got: Long",
    ):
        ember.tensor([1.0, 2.0]).mean(dtype=ember.int64)


def test_empty_reductions():
    e = ember.empty(0)
    assert e.sum().item() == 0.0
    assert e.prod().item() == 1.0
    assert math.isnan(e.mean().item())
    assert math.isnan(e.nanmean().item())
    assert e.nansum().item() == 0.0
    assert e.all().item() is True and e.any().item() is False
    assert e.count_nonzero().item() == 0
    z = ember.empty(0, 3)
    assert z.sum(0).tolist() == [0.0, 0.0, 0.0]
    assert z.prod(0).tolist() == [1.0, 1.0, 1.0]
    assert all(math.isnan(v) for v in z.mean(0).tolist())
    assert z.sum(1).shape == (0,)
    assert z.sum(1, keepdim=True).shape == (0, 1)
    assert z.logsumexp(0).tolist() == [-math.inf] * 3
    assert z.max(1).values.shape == (0,)
    assert z.amax(dim=(1,)).shape == (0,)


def test_float32_sum_is_exact_on_ones_and_accurate_on_random(rng):
    n = 16 * 1024 * 1024
    assert E(np.ones(n, dtype=np.float32)).sum().item() == 16777216.0
    a = rng.random(3_000_001).astype(np.float32)
    ref = np.sum(a.astype(np.float64))
    assert abs(E(a).sum().item() - ref) <= 1e-5 * ref
    m = rng.random((1000, 3001)).astype(np.float32)
    np.testing.assert_allclose(N(E(m).sum(1)), m.astype(np.float64).sum(1), rtol=1e-5)
    np.testing.assert_allclose(N(E(m).sum(0)), m.astype(np.float64).sum(0), rtol=1e-5)
    np.testing.assert_allclose(N(E(m).t().sum(1)), m.astype(np.float64).sum(0), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# the parallel paths: many threads, split reductions, outer reductions, copies


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_parallel_paths(threads, rng):
    ember.set_num_threads(threads)
    shapes_dims = [
        ((3, 200_001), 1),  # few outputs: each output's reduction is split
        ((200_001, 3), 0),  # outer reduction, narrow kept dim: rows split over threads
        ((2000, 700), 0),  # outer reduction, tiles of the kept dim
        ((700, 2000), 1),  # inner reduction over many outputs
        ((50, 60, 70), (0, 2)),  # inner runs with an outer reduced dim
        ((900_001,), 0),  # full reduction split into chunks
    ]
    for shape, dim in shapes_dims:
        x = rng.standard_normal(shape)
        t = E(x)
        ax = dim if isinstance(dim, tuple) else (dim,)
        np.testing.assert_allclose(N(t.sum(dim)), x.sum(ax), rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(N(t.amax(dim)), x.max(ax))
        np.testing.assert_array_equal(N(t.amin(dim)), x.min(ax))
        if isinstance(dim, int):
            np.testing.assert_array_equal(N(t.argmax(dim)), x.argmax(dim))
            np.testing.assert_array_equal(N(t.argmin(dim)), x.argmin(dim))
            np.testing.assert_array_equal(N(t.max(dim).indices), x.argmax(dim))
    # a transposed tensor's flat argmax is in logical order (it goes through a copy)
    a = rng.standard_normal((300, 500))
    t = E(a).t()
    assert t.argmax().item() == int(np.argmax(a.T))
    assert t.argmin().item() == int(np.argmin(a.T))


def test_ties_take_the_first_index_across_splits():
    ember.set_num_threads(4)
    a = np.zeros((3, 100_000))
    a[:, [5, 50_000, 99_999]] = 7.0
    t = E(a)
    assert N(t.argmax(1)).tolist() == [5, 5, 5]
    assert N(t.max(1).indices).tolist() == [5, 5, 5]
    assert t.argmax().item() == 5
    assert N(t.t().argmax(0)).tolist() == [5, 5, 5]
    assert N(t.argmin(1)).tolist() == [0, 0, 0]
    b = np.zeros((100_000, 3))
    b[[7, 60_000], :] = 1.0
    assert N(E(b).argmax(0)).tolist() == [7, 7, 7]


# ---------------------------------------------------------------------------------------------
# max / min / amax / amin / argmax / argmin


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
@pytest.mark.parametrize("shape,npv,emv,dim,keepdim", list(cases()))
def test_amax_amin(dtype, shape, npv, emv, dim, keepdim, rng):
    a, t = build(shape, npv, emv, dtype, rng)
    if a.size == 0:
        return  # the error cases are tested below
    for fn, ref_fn in ((ember.amax, np.max), (ember.amin, np.min)):
        r = fn(t, dim if dim is not None else (), keepdim)
        ref = np_reduce(ref_fn, a, dim, keepdim)
        assert r.dtype == t.dtype
        assert tuple(r.shape) == ref.shape
        np.testing.assert_array_equal(N(r), ref.astype(N(r).dtype))


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("layout", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_dim_and_argmax(dtype, layout, keepdim, rng):
    _, shape, npv, emv = layout
    a, t = build(shape, npv, emv, dtype, rng, lo=-2, hi=2)  # many ties
    if a.size == 0:
        return
    for d in range(-max(a.ndim, 1), max(a.ndim, 1)):
        ax = d % a.ndim if a.ndim else None
        for is_max in (True, False):
            vals, idx = (t.max if is_max else t.min)(d, keepdim)
            r = (ember.max if is_max else ember.min)(t, dim=d, keepdim=keepdim)
            assert r.values.tolist() == vals.tolist() and r.indices.tolist() == idx.tolist()
            ref_i = (np.argmax if is_max else np.argmin)(a, axis=ax)
            ref_v = (np.max if is_max else np.min)(a, axis=ax)
            if keepdim and a.ndim:
                ref_i, ref_v = np.expand_dims(ref_i, ax), np.expand_dims(ref_v, ax)
            assert idx.dtype == ember.int64 and vals.dtype == t.dtype
            np.testing.assert_array_equal(N(idx), ref_i)
            np.testing.assert_array_equal(N(vals), np.asarray(ref_v).astype(N(vals).dtype))
            arg = (t.argmax if is_max else t.argmin)(d, keepdim)
            np.testing.assert_array_equal(N(arg), ref_i)
    # no dim: a value; argmax: the flat index
    assert N(t.max()).item() == np.max(a) and N(ember.min(t)).item() == np.min(a)
    assert t.argmax().item() == int(np.argmax(a)) and t.argmin().item() == int(np.argmin(a))
    assert tuple(t.argmax(keepdim=True).shape) == (1,) * a.ndim


def test_max_result_is_a_named_tuple():
    r = ember.tensor([[1.0, 5.0], [7.0, 2.0]]).max(1)
    values, indices = r
    assert r.values is values and r[1] is indices and isinstance(r, tuple)
    assert type(r).__name__ == "max" and type(ember.min(ember.ones(2), 0)).__name__ == "min"
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    assert ember.tensor(5.0).max(dim=-1).indices.item() == 0


def test_max_with_other_is_maximum():
    a, b = ember.tensor([1.0, 5.0]), ember.tensor([3.0, 2.0])
    assert ember.max(a, b).tolist() == [3.0, 5.0]
    assert a.min(b).tolist() == [1.0, 2.0]
    assert ember.max(a, other=b).tolist() == [3.0, 5.0]


def test_nan_propagation():
    nan = float("nan")
    x = ember.tensor([[1.0, nan, 3.0, nan], [4.0, 5.0, 6.0, 0.0]])
    assert math.isnan(x.max().item()) and math.isnan(x.min().item())
    assert math.isnan(x.amax().item())
    assert x.argmax().item() == 1 and x.argmin().item() == 1  # the first NaN wins
    v, i = x.max(1)
    assert math.isnan(v.tolist()[0]) and v.tolist()[1] == 6.0 and i.tolist() == [1, 2]
    v, i = x.min(1)
    assert math.isnan(v.tolist()[0]) and i.tolist() == [1, 3]
    assert [math.isnan(u) for u in x.amax(0).tolist()] == [False, True, False, True]
    assert x.argmax(0).tolist() == [1, 0, 1, 0]
    h = x.half()
    assert math.isnan(h.amax().item()) and h.argmax(1).tolist() == [1, 2]
    # NaN in every position of a vectorised lane block
    for pos in (0, 17, 63, 64, 1000, 4095):
        a = np.arange(5000, dtype=np.float32)
        a[pos] = np.nan
        t = E(a)
        assert math.isnan(t.max().item()) and math.isnan(t.amin().item())
        assert t.argmax().item() == pos
        assert math.isnan(t.norm(float("inf")).item())


def test_bool_max_and_argmax():
    b = ember.tensor([False, True, True])
    assert b.max().item() is True and b.amin().item() is False
    assert b.max(0).indices.item() == 1
    with pytest.raises(RuntimeError, match="argmax\\(\\): does not support bool input"):
        b.argmax()


def test_extreme_errors():
    with pytest.raises(
        RuntimeError,
        match=r"^max\(\): Expected reduction dim to be specified for "
        r"input.numel\(\) == 0. Specify the reduction dim "
        r"with the 'dim' argument.$",
    ):
        ember.empty(0).max()
    with pytest.raises(RuntimeError, match="^min\\(\\): Expected reduction dim to be specified"):
        ember.empty(0, 3).min()
    with pytest.raises(RuntimeError, match="^amax\\(\\): Expected reduction dim to be specified"):
        ember.empty(0, 3).amax()
    with pytest.raises(
        IndexError,
        match=r"^max\(\): Expected reduction dim 0 to have non-zero "
        r"size.$",
    ):
        ember.empty(0, 3).max(0)
    with pytest.raises(IndexError, match="max\\(\\): Expected reduction dim 1 to have non-zero"):
        ember.empty(3, 0).max(-1)
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim -1 to have non-zero"):
        ember.empty(3, 0).amax(-1)
    with pytest.raises(
        IndexError,
        match=r"^argmax\(\): Expected reduction dim to be specified for "
        r"input.numel\(\) == 0.$",
    ):
        ember.empty(0, 3).argmax()
    with pytest.raises(IndexError, match="argmin\\(\\): Expected reduction dim 0 to have non-zero"):
        ember.empty(0, 3).argmin(0)


# ---------------------------------------------------------------------------------------------
# var / std


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,npv,emv,dim,keepdim", list(cases()))
def test_var_std(dtype, shape, npv, emv, dim, keepdim, rng):
    a, t = build(shape, npv, emv, dtype, rng)
    n_red = a.size // max(1, np_reduce(np.sum, a, dim, False).size) if a.size else 0
    for corr in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rv = t.var(dim, correction=corr, keepdim=keepdim)
            rs = ember.std(t, dim, keepdim=keepdim, correction=corr)
            ref = np_reduce(np.var, a.astype(np.float64), dim, keepdim, ddof=corr)
        if n_red - corr <= 0:
            ref = np.full(ref.shape, np.nan)  # 0/0, as PyTorch
        assert tuple(rv.shape) == ref.shape and rv.dtype == t.dtype
        close(rv, ref, dtype)
        close(rs, np.sqrt(ref), dtype)


def test_var_forms_and_var_mean():
    x = ember.tensor([[1.0, 2.0, 4.0], [3.0, 3.0, 9.0]], dtype=ember.float64)
    a = np.array(x.tolist())
    close(x.var(), a.var(ddof=1))
    close(x.var(False), a.var())  # legacy var(unbiased)
    close(ember.var(x, True), a.var(ddof=1))
    close(x.var(1, False), a.var(1))  # var(dim, unbiased)
    close(x.var(1, True, True), a.var(1, ddof=1, keepdims=True))
    close(x.var(dim=1, unbiased=False), a.var(1))
    close(x.var(dim=1, correction=2), a.var(1, ddof=2))
    close(x.std(0, correction=0), a.std(0))
    close(x.var(1, correction=1.5), a.var(1, ddof=1.5))
    v, m = ember.var_mean(x, 1)
    close(v, a.var(1, ddof=1))
    close(m, a.mean(1))
    s, m = ember.std_mean(x, (0, 1), correction=0, keepdim=True)
    assert s.shape == (1, 1) and m.shape == (1, 1)
    close(s, [[a.std()]])
    assert type(ember.var_mean(x)) is tuple
    with pytest.raises(TypeError):
        ember.var(x, 1, unbiased=True, correction=1)
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex"):
        ember.tensor([1, 2]).var()
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        assert math.isnan(ember.tensor(3.0).var().item())
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom is <= 0"):
        ember.tensor([1.0, 2.0]).std(correction=3)


def test_var_is_accurate_with_a_large_mean(rng):
    a = (1e4 + rng.random(100_000)).astype(np.float32)
    ref = a.astype(np.float64).var(ddof=1)
    assert abs(E(a).var().item() - ref) <= 1e-4 * ref


# ---------------------------------------------------------------------------------------------
# norm / logsumexp


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("p", [2, "fro", None, 1, 0, 3, 0.5, -1, math.inf, -math.inf])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_norm(dtype, p, dim, keepdim, rng):
    a = sample((4, 5), dtype, rng)
    a[1, 2] = 0.0
    t = E(a, dtype)
    r = t.norm(p, dim, keepdim) if p is not None else ember.norm(t, dim=dim, keepdim=keepdim)
    q = 2.0 if p in (None, "fro") else float(p)
    axis = np_axis(dim, 2)
    x = np.abs(a.astype(np.float64))
    with np.errstate(divide="ignore"):
        if q == math.inf:
            ref = x.max(axis=axis, keepdims=keepdim)
        elif q == -math.inf:
            ref = x.min(axis=axis, keepdims=keepdim)
        elif q == 0:
            ref = (x != 0).sum(axis=axis, keepdims=keepdim).astype(np.float64)
        else:
            ref = (x**q).sum(axis=axis, keepdims=keepdim) ** (1 / q)
    assert r.dtype == t.dtype and tuple(r.shape) == np.shape(ref)
    close(r, ref, dtype)


def test_norm_dtype_and_errors():
    x = ember.tensor([[3.0, 4.0]])
    assert x.norm(2, 1, True, dtype=ember.float64).dtype == ember.float64
    assert abs(ember.norm(x, 2, 1).item() - 5.0) < 1e-6
    with pytest.raises(
        RuntimeError,
        match="linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long",
    ):
        ember.tensor([1, 2]).norm()
    with pytest.raises(
        RuntimeError,
        match=r"should be convertible without narrowing to the "
        r"specified dtype \(Half\)",
    ):
        x.norm(dtype=ember.float16)
    with pytest.raises(
        RuntimeError, match="dtype should be floating point or complex, but got Long"
    ):
        x.norm(dtype=ember.int64)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        ember.empty(0).norm(math.inf)
    with pytest.raises(RuntimeError, match="cannot compute the -1 norm on the dimension 1"):
        ember.empty(3, 0).norm(-1, dim=1)
    assert ember.empty(3, 0).norm(math.inf, dim=0).shape == (0,)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order abc not supported."):
        x.norm("abc")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64"])
@pytest.mark.parametrize("shape,npv,emv,dim,keepdim", list(cases(LAYOUTS[:8])))
def test_logsumexp(dtype, shape, npv, emv, dim, keepdim, rng):
    if dim is None:
        dim = tuple(range(len(npv(np.empty(shape)).shape)))
    a, t = build(shape, npv, emv, dtype, rng)
    r = ember.logsumexp(t, dim, keepdim)
    with np.errstate(divide="ignore"):
        ref = np.log(np_reduce(np.sum, np.exp(a.astype(np.float64)), dim, keepdim))
    expect = dtype if dtype != "int64" else "float32"
    assert r.dtype == getattr(ember, expect) and tuple(r.shape) == ref.shape
    close(r, ref, expect)


def test_logsumexp_infinities():
    inf, nan = math.inf, math.nan
    x = ember.tensor(
        [
            [1.0, 2.0, 3.0],
            [inf, 1.0, 2.0],
            [-inf, -inf, -inf],
            [nan, 1.0, 2.0],
            [1000.0, 1000.0, -inf],
        ]
    )
    r = x.logsumexp(1).tolist()
    assert abs(r[0] - math.log(math.exp(1) + math.exp(2) + math.exp(3))) < 1e-6
    assert r[1] == inf and r[2] == -inf and math.isnan(r[3])
    assert abs(r[4] - (1000 + math.log(2))) < 1e-3


# ---------------------------------------------------------------------------------------------
# all / any / count_nonzero


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float32", "float16"])
@pytest.mark.parametrize("shape,npv,emv,dim,keepdim", list(cases()))
def test_all_any(dtype, shape, npv, emv, dim, keepdim, rng):
    a, t = build(shape, npv, emv, dtype, rng, lo=0, hi=3)
    out_dtype = ember.uint8 if dtype == "uint8" else ember.bool
    for fn, ref_fn in ((ember.all, np.all), (ember.any, np.any)):
        r = fn(t, dim, keepdim)
        ref = np_reduce(ref_fn, a, dim, keepdim)
        assert r.dtype == out_dtype and tuple(r.shape) == ref.shape
        np.testing.assert_array_equal(N(r).astype(bool), ref)
    r = t.count_nonzero(dim)
    ref = np.asarray(np.count_nonzero(a, axis=np_axis(dim, a.ndim)))
    assert r.dtype == ember.int64 and tuple(r.shape) == ref.shape
    np.testing.assert_array_equal(N(r), ref)


def test_all_any_details():
    x = ember.tensor([[0.0, 2.0], [1.0, float("nan")]])
    assert x.all(()).tolist() == [[False, True], [True, True]]  # dim=(): elementwise
    assert x.any(dim=(0, 1)).item() is True
    assert x.all(1).tolist() == [False, True]
    assert ember.tensor([1, 2], dtype=ember.uint8).all().dtype == ember.uint8
    assert ember.count_nonzero(x, (0, 1)).item() == 3
    big = np.ones(100_000, dtype=np.float32)
    assert E(big).all().item() is True
    big[77_777] = 0
    assert E(big).all().item() is False and E(big).any().item() is True
    assert E(big).count_nonzero().item() == 99_999


# ---------------------------------------------------------------------------------------------
# cumsum / cumprod


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "bfloat16", "int32", "int8", "bool"]
)
@pytest.mark.parametrize("layout", LAYOUTS, ids=LAYOUT_IDS)
def test_cumsum_cumprod(dtype, layout, rng):
    _, shape, npv, emv = layout
    a, t = build(shape, npv, emv, dtype, rng, lo=-2, hi=3)
    expect = dtype if dtype in FLOATS else "int64"
    wide = a.astype(np.float64 if dtype in FLOATS else np.int64)
    for d in range(-max(a.ndim, 1), max(a.ndim, 1)):
        ax = d % a.ndim if a.ndim else None
        for fn, ref_fn in ((ember.cumsum, np.cumsum), (ember.cumprod, np.cumprod)):
            r = fn(t, d)
            ref = ref_fn(wide, axis=ax).reshape(a.shape)
            assert r.dtype == getattr(ember, expect) and tuple(r.shape) == a.shape
            close(r, ref, expect)
        close(t.cumsum(dim=d, dtype=ember.float64), np.cumsum(wide, axis=ax).reshape(a.shape))


def test_cumsum_large_and_inplace(rng):
    ember.set_num_threads(3)
    a = rng.standard_normal((300, 2000))
    for d in (0, 1):
        np.testing.assert_allclose(N(E(a).cumsum(d)), np.cumsum(a, axis=d), rtol=1e-9, atol=1e-9)
    x = ember.tensor([1, 2, 3], dtype=ember.int32)
    y = x.cumsum_(0)
    assert y is x and x.tolist() == [1, 3, 6] and x.dtype == ember.int32
    ember.cumprod_(x, 0)
    assert x.tolist() == [1, 3, 18]
    with pytest.raises(
        RuntimeError,
        match="Bad in-place call: input tensor dtype int and output "
        "tensor dtype float should match",
    ):
        x.cumsum_(0, dtype=ember.float32)
    with pytest.raises(
        IndexError,
        match=r"Dimension out of range \(expected to be in range of "
        r"\[-1, 0\], but got 1\)",
    ):
        x.cumsum(1)


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax


def np_softmax(a, axis):
    m = np.max(a, axis=axis, keepdims=True)
    e = np.exp(a - m)
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS, ids=LAYOUT_IDS)
def test_softmax(dtype, layout, rng):
    _, shape, npv, emv = layout
    base = rng.standard_normal(shape) * 3
    a, t = npv(base), emv(E(base, dtype))
    a = N(E(a, dtype))  # the values as rounded to the dtype
    for d in range(-max(a.ndim, 1), max(a.ndim, 1)):
        ax = d % a.ndim if a.ndim else None
        ref = np_softmax(a, ax) if a.size else a
        r = t.softmax(d)
        assert r.dtype == t.dtype and tuple(r.shape) == a.shape
        close(r, ref, dtype)
        with np.errstate(divide="ignore"):
            close(
                ember.log_softmax(t, d),
                np.log(ref) if a.size else a,
                dtype,
                atol=TOL[dtype]["atol"] * 10,
            )


def test_softmax_large_rows_and_special_values(rng):
    ember.set_num_threads(2)
    a = (rng.standard_normal((64, 4099)) * 30).astype(np.float32)
    t = E(a)
    np.testing.assert_allclose(
        N(t.softmax(1)), np_softmax(a.astype(np.float64), 1), rtol=1e-5, atol=1e-9
    )
    np.testing.assert_allclose(
        N(t.softmax(0)), np_softmax(a.astype(np.float64), 0), rtol=1e-5, atol=1e-9
    )
    ls = np.log(np_softmax(a.astype(np.float64), 1))
    np.testing.assert_allclose(N(t.log_softmax(1)), ls, rtol=1e-5, atol=1e-4)
    inf, nan = math.inf, math.nan
    x = ember.tensor(
        [
            [0.0, -inf, 1.0, -200.0],
            [-inf, -inf, -inf, -inf],
            [inf, 1.0, 2.0, 3.0],
            [nan, 1.0, 2.0, 3.0],
        ]
    )
    r = x.softmax(1).tolist()
    assert r[0][1] == 0.0 and r[0][3] == 0.0 and abs(sum(r[0]) - 1) < 1e-6
    assert all(math.isnan(v) for row in r[1:] for v in row)
    ls = x.log_softmax(1).tolist()
    assert ls[0][1] == -inf and all(math.isnan(v) for v in ls[1])


def test_softmax_dtype_and_errors():
    x = ember.tensor([1.0, 2.0, 3.0])
    r = ember.softmax(x, 0, dtype=ember.float64)
    assert r.dtype == ember.float64
    np.testing.assert_allclose(N(r), np_softmax(np.array([1.0, 2.0, 3.0]), 0), rtol=1e-12)
    assert x.softmax(0, ember.float16).dtype == ember.float16
    assert ember.tensor([1, 2]).log_softmax(0, dtype=ember.float32).dtype == ember.float32
    assert ember.tensor(5.0).softmax(0).item() == 1.0
    assert ember.tensor(5.0).log_softmax(-1).item() == 0.0
    with pytest.raises(
        NotImplementedError, match="\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"
    ):
        ember.tensor([1, 2]).softmax(0)
    with pytest.raises(NotImplementedError, match='"log_softmax_kernel_impl" not implemented'):
        ember.tensor([[1, 2]]).log_softmax(0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.softmax(1)
    with pytest.raises(TypeError):
        ember.softmax(x)


# ---------------------------------------------------------------------------------------------
# dims: forms and errors


def test_dim_forms():
    x = ember.arange(24.0).reshape(2, 3, 4)
    a = np.arange(24.0).reshape(2, 3, 4)
    for dim in [(0, 2), [0, 2], (-3, -1), ember.Size([0, 2]) if hasattr(ember, "Size") else (0, 2)]:
        assert x.sum(dim).tolist() == a.sum((0, 2)).tolist()
    assert x.sum(()).item() == a.sum()  # an empty list reduces every dim
    assert x.sum([]).item() == a.sum()
    assert x.sum(np.int64(1)).tolist() == a.sum(1).tolist()
    assert x.sum(dim=(0,), keepdim=True).shape == (1, 3, 4)
    assert ember.tensor(3.0).sum(0).item() == 3.0
    assert ember.tensor(3.0).sum(-1, keepdim=True).shape == ()
    with pytest.raises(TypeError, match="must be tuple of ints"):
        x.sum(0.5)
    with pytest.raises(TypeError):
        x.sum("a")


@pytest.mark.parametrize(
    "op",
    [
        "sum",
        "mean",
        "nansum",
        "amax",
        "amin",
        "logsumexp",
        "var",
        "std",
        "norm",
        "all",
        "any",
        "count_nonzero",
    ],
)
def test_dim_errors(op):
    x = ember.ones(2, 3)
    kw = {"p": 2} if op == "norm" else {}
    with pytest.raises(
        IndexError,
        match=r"^Dimension out of range \(expected to be in range of "
        r"\[-2, 1\], but got 5\)$",
    ):
        getattr(ember, op)(x, dim=5, **kw)
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got -3"):
        getattr(ember, op)(x, dim=(0, -3), **kw)
    with pytest.raises(RuntimeError, match="^dim 0 appears multiple times in the list of dims$"):
        getattr(ember, op)(x, dim=(0, -2), **kw)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        getattr(ember.tensor(3.0), op)(dim=(0, -1), **kw)


@pytest.mark.parametrize(
    "op", ["max", "min", "argmax", "argmin", "prod", "cumsum", "cumprod", "softmax", "log_softmax"]
)
def test_single_dim_errors(op):
    x = ember.ones(2, 3)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2\)"):
        getattr(ember, op)(x, 2)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-1, 0\], but got 1\)"):
        getattr(ember, op)(ember.tensor(1.0), 1)


# ---------------------------------------------------------------------------------------------
# out=


def test_out_arguments():
    x = ember.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    o = ember.empty(3)
    assert ember.sum(x, 0, out=o) is o and o.tolist() == [3.0, 5.0, 7.0]
    o = ember.empty(3, dtype=ember.int64)
    ember.sum(x, 0, out=o)
    assert o.tolist() == [3, 5, 7]
    o = ember.empty(0)
    ember.mean(x, 1, out=o)
    assert o.shape == (2,) and o.tolist() == [1.0, 4.0]
    o = ember.empty(5)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        ember.sum(x, 0, out=o)
    assert o.shape == (3,) and o.tolist() == [3.0, 5.0, 7.0]
    v, i = ember.empty(3), ember.empty(3, dtype=ember.int64)
    r = ember.max(x, 0, out=(v, i))
    assert r.values is v and r.indices is i and v.tolist() == [3.0, 4.0, 5.0]
    assert i.tolist() == [1, 1, 1]
    with pytest.raises(
        RuntimeError, match="Expected out tensor to have dtype float, but got double"
    ):
        ember.max(x, 0, out=(ember.empty(3, dtype=ember.float64), i))
    with pytest.raises(
        RuntimeError, match="Expected out tensor to have dtype long int, but got int"
    ):
        ember.argmax(x, 0, out=ember.empty(3, dtype=ember.int32))
    with pytest.raises(
        RuntimeError,
        match="Expected the dtype for input and out to match, but got "
        "Float for input's dtype and Double for out's dtype.",
    ):
        ember.amax(x, 0, out=ember.empty(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="all only supports bool tensor for result, got: Float"):
        ember.all(x, 1, out=ember.empty(2))
    o = ember.empty(2, dtype=ember.bool)
    assert ember.any(x, 1, out=o) is o and o.tolist() == [True, True]
    o = ember.empty(2, 3)
    ember.cumsum(x, 1, out=o)
    assert o.tolist() == [[0.0, 1.0, 3.0], [3.0, 7.0, 12.0]]
    o = ember.empty(2)
    ember.logsumexp(x, 1, out=o)
    ember.var(x, 1, out=o)
    assert o.tolist() == [1.0, 1.0]
    ember.norm(x, 1, 1, out=o)
    assert o.tolist() == [3.0, 12.0]
    ember.prod(x, 1, out=o)
    assert o.tolist() == [0.0, 60.0]
    a = ember.argmin(x, out=ember.empty((), dtype=ember.int64))
    assert a.item() == 0


# ---------------------------------------------------------------------------------------------
# the autograd hook


def test_autograd_hook_receives_canonical_calls(recorded_calls):
    x = ember.tensor([[1.0, 2.0], [3.0, 5.0]]).requires_grad_()
    C = ember._C
    expected = [
        (lambda: x.sum(), "sum", C.sum, {"dim": None, "keepdim": False, "dtype": None}),
        (
            lambda: ember.sum(x, 1, True, dtype=ember.float64),
            "sum",
            C.sum,
            {"dim": (1,), "keepdim": True, "dtype": ember.float64},
        ),
        (lambda: x.mean((0, 1)), "mean", C.mean, {"dim": (0, 1), "keepdim": False, "dtype": None}),
        (lambda: x.nansum(0), "nansum", C.nansum, {"dim": (0,), "keepdim": False, "dtype": None}),
        (lambda: x.nanmean(), "nanmean", C.nanmean, {"dim": None, "keepdim": False, "dtype": None}),
        (lambda: x.prod(1), "prod", C.prod, {"dim": 1, "keepdim": False, "dtype": None}),
        (lambda: x.max(), "max", C.max, {}),
        (lambda: x.min(1, True), "min", C.min, {"dim": 1, "keepdim": True}),
        (lambda: x.amax(0), "amax", C.amax, {"dim": (0,), "keepdim": False}),
        (lambda: x.amin(), "amin", C.amin, {"dim": (), "keepdim": False}),
        (lambda: x.var(1, False), "var", C.var, {"dim": (1,), "correction": 0, "keepdim": False}),
        (
            lambda: x.std(correction=2),
            "std",
            C.std,
            {"dim": None, "correction": 2, "keepdim": False},
        ),
        (
            lambda: ember.var_mean(x, 0),
            "var_mean",
            C.var_mean,
            {"dim": (0,), "correction": 1, "keepdim": False},
        ),
        (
            lambda: x.norm(),
            "norm",
            C.norm,
            {"p": 2.0, "dim": None, "keepdim": False, "dtype": None},
        ),
        (lambda: x.logsumexp(1), "logsumexp", C.logsumexp, {"dim": (1,), "keepdim": False}),
        (lambda: x.cumsum(0), "cumsum", C.cumsum, {"dim": 0, "dtype": None}),
        (lambda: x.cumprod(1), "cumprod", C.cumprod, {"dim": 1, "dtype": None}),
        (lambda: x.softmax(1), "softmax", C.softmax, {"dim": 1, "dtype": None}),
        (lambda: ember.log_softmax(x, 0), "log_softmax", C.log_softmax, {"dim": 0, "dtype": None}),
    ]
    for call, name, fn, kwargs in expected:
        recorded_calls.clear()
        call()
        assert len(recorded_calls) == 1, name
        got_name, got_fn, got_args, got_kwargs = recorded_calls[0]
        assert got_name == name and got_fn == fn and got_args[0] is x and got_kwargs == kwargs
    recorded_calls.clear()
    x.argmax(), x.all(), x.count_nonzero()  # not differentiable: never recorded
    assert recorded_calls == []
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.sum(x, 0, out=ember.empty(2))


def test_methods_and_functions_agree(rng):
    a = rng.standard_normal((3, 4))
    t = E(a)
    for name, args in [
        ("sum", (1,)),
        ("mean", (0,)),
        ("prod", (1,)),
        ("amax", (1,)),
        ("amin", (0,)),
        ("argmax", (1,)),
        ("argmin", (None,)),
        ("var", (1,)),
        ("std", (0,)),
        ("norm", (3,)),
        ("logsumexp", (1,)),
        ("all", (1,)),
        ("any", (0,)),
        ("count_nonzero", (1,)),
        ("cumsum", (0,)),
        ("cumprod", (1,)),
        ("softmax", (0,)),
        ("log_softmax", (1,)),
        ("nansum", (0,)),
        ("nanmean", (1,)),
    ]:
        m = getattr(t, name)(*args)
        f = getattr(ember, name)(t, *args)
        np.testing.assert_array_equal(N(m), N(f), err_msg=name)


# ---------------------------------------------------------------------------------------------
# property tests


if given is None:

    @pytest.mark.skip(reason="hypothesis is not installed")
    def test_property_sum_mean_amax():
        pass

else:

    @st.composite
    def array_and_dims(draw):
        ndim = draw(st.integers(0, 4))
        shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
        seed = draw(st.integers(0, 2**31))
        a = np.random.default_rng(seed).standard_normal(shape)
        if ndim:
            dims = draw(
                st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda d: d % ndim, max_size=ndim)
            )
            dim = draw(st.sampled_from([None, tuple(dims)] + ([dims[0]] if dims else [])))
        else:
            dim = draw(st.sampled_from([None, 0, -1, ()]))
        perm = draw(st.permutations(range(ndim)))
        step = draw(st.integers(1, 2))
        return a, dim, tuple(perm), step, draw(st.booleans())

    @settings(max_examples=150, deadline=None)
    @given(array_and_dims())
    def test_property_sum_mean_amax(case):
        a, dim, perm, step, keepdim = case
        # the same view of the data in both libraries: permuted, then every `step`-th element
        t = E(a).permute(*perm) if a.ndim else E(a)
        x = a.transpose(perm) if a.ndim else a
        if a.ndim and step > 1:
            t, x = t[::step], x[::step]
        axis = np_axis(dim, x.ndim)
        if axis == ():
            axis = None
        ref = np.asarray(np.sum(x, axis=axis, keepdims=keepdim))
        r = t.sum(dim, keepdim)
        assert tuple(r.shape) == ref.shape
        np.testing.assert_allclose(N(r), ref, rtol=1e-12, atol=1e-12)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref = np.asarray(np.mean(x, axis=axis, keepdims=keepdim))
        np.testing.assert_allclose(N(t.mean(dim, keepdim)), ref, rtol=1e-12, atol=1e-12)
        red = x.size if axis is None else int(np.prod([x.shape[d] for d in axis]))
        if red == 0:  # max over nothing is an error (tested above)
            return
        ref = np.asarray(np.max(x, axis=axis, keepdims=keepdim))
        r = t.amax(dim if dim is not None else (), keepdim)
        np.testing.assert_array_equal(N(r), ref)


# ---------------------------------------------------------------------------------------------
# PyTorch as an oracle (skipped where it is not installed): result dtype, shape, values and the
# error type and message, over dtypes x shapes x dims x ops.

ORACLE_OPS = {
    "sum": lambda m, x, d, k: m.sum(x, d, k) if d is not None else m.sum(x),
    "mean": lambda m, x, d, k: m.mean(x, d, k) if d is not None else m.mean(x),
    "prod": lambda m, x, d, k: m.prod(x, d if isinstance(d, int) else 0, k),
    "nansum": lambda m, x, d, k: m.nansum(x, d, k) if d is not None else m.nansum(x),
    "nanmean": lambda m, x, d, k: m.nanmean(x, d, k),
    "amax": lambda m, x, d, k: m.amax(x, d if d is not None else (), k),
    "max": lambda m, x, d, k: (
        m.max(x) if d is None else m.max(x, d if isinstance(d, int) else 0, k)[0]
    ),
    "min.indices": lambda m, x, d, k: m.min(x, d if isinstance(d, int) else -1, k)[1],
    "argmax": lambda m, x, d, k: m.argmax(x, d if isinstance(d, int) else None, k),
    "var": lambda m, x, d, k: m.var(x, d, keepdim=k),
    "std": lambda m, x, d, k: m.std(x, d, correction=0, keepdim=k),
    "norm": lambda m, x, d, k: m.norm(x, 2, d, k),
    "norm.inf": lambda m, x, d, k: m.norm(x, float("inf"), d, k),
    "logsumexp": lambda m, x, d, k: m.logsumexp(x, d if d is not None else 0, k),
    "all": lambda m, x, d, k: m.all(x, d, k) if d is not None else m.all(x),
    "count_nonzero": lambda m, x, d, k: m.count_nonzero(x, d),
    "cumsum": lambda m, x, d, k: m.cumsum(x, d if isinstance(d, int) else 0),
    "cumprod": lambda m, x, d, k: m.cumprod(x, d if isinstance(d, int) else -1),
    "softmax": lambda m, x, d, k: m.softmax(x, d if isinstance(d, int) else 0),
    "log_softmax": lambda m, x, d, k: m.log_softmax(x, d if isinstance(d, int) else -1),
}


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("shape", [(), (0,), (4, 5), (2, 0, 3), (3, 4, 5)], ids=str)
def test_against_torch(torch, dtype, shape):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(shape) * 2
    if dtype == "bool":
        a = a > 0
    elif dtype == "uint8":
        a = np.abs(a).round()
    elif dtype not in FLOATS:
        a = a.round()
    elif a.size > 3:
        a.flat[2] = np.nan
    et = E(np.asarray(a, dtype=np.float64 if dtype in FLOATS else a.dtype), dtype)
    tt = torch.from_numpy(np.array(a)).to(getattr(torch, dtype))
    dims = [None, 0, -1, (0, -1)] if len(shape) else [None, 0]
    for name, f in ORACLE_OPS.items():
        for d in dims:
            for k in (False, True):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        want = f(torch, tt, d, k)
                    except Exception as ex:  # noqa: BLE001
                        want = ex
                    try:
                        got = f(ember, et, d, k)
                    except Exception as ex:  # noqa: BLE001
                        got = ex
                where = f"{name} dim={d} keepdim={k}"
                if isinstance(want, Exception):
                    assert isinstance(got, Exception), f"{where}: expected {want!r}, got a result"
                    assert type(got).__name__ == type(want).__name__, where
                    assert str(got).split("\n")[0] == str(want).split("\n")[0], where
                    continue
                assert not isinstance(got, Exception), f"{where}: raised {got!r}"
                assert got.dtype.name == str(want.dtype).split(".")[1], where
                assert tuple(got.shape) == tuple(want.shape), where
                ref = want.double().numpy() if want.is_floating_point() else want.numpy()
                tol = {"float16": 2e-3, "bfloat16": 2e-2}.get(dtype, 1e-5)
                np.testing.assert_allclose(
                    N(got).astype(np.float64),
                    ref.astype(np.float64),
                    rtol=tol,
                    atol=tol,
                    err_msg=where,
                )


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 32773, 100003, (1 << 20) + 3])
def test_full_sums_of_contiguous_16bit_floats(name, n):
    """sum/mean/nansum/nanmean of a contiguous float16/bfloat16 tensor over every element take
    one pass (float lanes, blocks added in double, chunks over the pool): NumPy's float64 sum of
    the same 16-bit values, to float32 rounding; NaN and inf propagate; the result's dtype,
    keepdim shape and 16-bit rounding as the other reductions'."""
    dt = getattr(ember, name)
    rng = np.random.default_rng(n)
    x = ember.from_numpy((rng.standard_normal(n) * 3).astype(np.float32)).to(dt)
    ref = x.float().numpy().astype(np.float64)  # the exact 16-bit values
    bound = 1e-6 * max(np.abs(ref).sum(), 1.0)
    assert abs(float(x.sum(dtype=ember.float32)) - ref.sum()) <= bound
    if n:
        assert abs(float(x.mean(dtype=ember.float32)) - ref.mean()) <= bound / n
        assert math.isnan(float(ember.tensor(float("nan"), dtype=dt).expand(1).contiguous()
                                .sum()))
    s = x.sum()
    assert s.dtype == dt and s.shape == ()
    assert float(s) == float(ember.tensor(float(x.sum(dtype=ember.float32))).to(dt))
    k = x.reshape(1, -1).sum(dim=(0, 1), keepdim=True)
    assert k.shape == (1, 1) and float(k) == float(s)
    if n >= 3:
        y = x.clone()
        y[1] = float("nan")
        kept = ref.copy()
        kept[1] = 0.0
        assert math.isnan(float(y.sum()))
        assert abs(float(y.nansum(dtype=ember.float32)) - kept.sum()) <= bound
        assert abs(float(y.nanmean().float()) - kept.sum() / (n - 1)) <= 2e-2 * max(
            1.0, abs(kept.sum() / (n - 1)))
        y[2] = float("inf")
        assert float(y.nansum()) == math.inf
        y[0] = -float("inf")
        assert math.isnan(float(y.nansum()))
    elif n == 0:
        assert float(x.sum()) == 0.0 and math.isnan(float(x.mean()))
