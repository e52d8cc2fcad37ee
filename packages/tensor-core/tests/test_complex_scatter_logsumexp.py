"""complex64/complex128 in the scatter/index family's sums and products, and in logsumexp,
logaddexp, logcumsumexp and lerp: values against NumPy, the edges (inf, NaN, empty, duplicate
indices) as torch computes them, and torch's refusals (scatter amax/amin, index_reduce)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

C64, C128 = ember.complex64, ember.complex128
NP = {C64: np.complex64, C128: np.complex128}
TOL = {C64: dict(rtol=2e-6, atol=2e-6), C128: dict(rtol=1e-12, atol=1e-12)}
inf, nan = math.inf, math.nan


def rand_complex(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), NP[dtype])


def check(got, expected, dtype):
    got = got.numpy()
    assert got.dtype == np.dtype(NP[dtype])
    np.testing.assert_allclose(got, expected, equal_nan=True, **TOL[dtype])


def np_logsumexp(a, axis, keepdims=False):
    # torch's: shifted by the largest real part (an infinite one by 0)
    m = np.max(a.real, axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    r = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


# ---------------------------------------------------------------------------------------------
# scatter / index family


def np_scatter_add(base, dim, index, src):
    out = base.copy()
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        out[tuple(tgt)] += src[pos]
    return out


@pytest.mark.parametrize("dtype", [C64, C128])
def test_scatter_add_and_scatter_reduce_sum_mean_prod(dtype):
    base = rand_complex((3, 5), dtype, 1)
    src = rand_complex((3, 6), dtype, 2)
    index = np.array([[0, 1, 0, 2, 2, 0], [4, 4, 4, 1, 0, 3], [1, 1, 1, 1, 1, 1]])  # duplicates
    idx = ember.tensor(index[:, :4])
    expected = np_scatter_add(base, 1, index[:, :4], src[:, :4])
    b, s = ember.from_numpy(base), ember.from_numpy(src)
    check(b.scatter_add(1, idx, s), expected, dtype)  # src wider than index
    check(b.scatter_reduce(1, idx, s, "sum"), expected, dtype)
    check(b.scatter(1, idx, s, reduce="add"), expected, dtype)
    # mean: include_self counts self; prod multiplies, with and without self
    count = np_scatter_add(np.ones(base.shape), 1, index[:, :4], np.ones(src.shape))
    check(b.scatter_reduce(1, idx, s, "mean"), expected / count, dtype)
    prod = base.copy()
    noself = base.copy()
    seen = set()
    for pos in np.ndindex(3, 4):
        tgt = (pos[0], index[pos])
        prod[tgt] *= src[pos]
        noself[tgt] = src[pos] if tgt not in seen else noself[tgt] * src[pos]
        seen.add(tgt)
    check(b.scatter_reduce(1, idx, s, "prod"), prod, dtype)
    check(b.scatter(1, idx, s, reduce="multiply"), prod, dtype)
    check(b.scatter_reduce(1, idx, s, "prod", include_self=False), noself, dtype)
    # a number source, in place
    out = b.clone()
    out.scatter_(1, idx, 2 - 1j, reduce="add")
    check(out, np_scatter_add(base, 1, index[:, :4], np.full((3, 4), 2 - 1j, NP[dtype])), dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_scatter_add_non_contiguous_and_empty(dtype):
    base = rand_complex((5, 3), dtype, 3)
    src = rand_complex((4, 3), dtype, 4)
    index = np.array([[0, 4, 4], [1, 0, 4], [0, 0, 0], [2, 3, 1]])
    b = ember.from_numpy(base.T.copy()).t()  # a transposed view
    s = ember.from_numpy(src.T.copy()).t()
    check(b.scatter_add(0, ember.tensor(index), s), np_scatter_add(base, 0, index, src), dtype)
    empty = ember.zeros((0, 3), dtype=ember.int64)
    check(b.scatter_add(0, empty, s), base, dtype)
    check(b.scatter_reduce(0, empty, s, "mean"), base, dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_index_add_index_put_put_accumulate(dtype):
    base = rand_complex((4, 3), dtype, 5)
    src = rand_complex((5, 3), dtype, 6)
    index = np.array([0, 3, 0, 0, 2])
    expected = base.copy()
    np.add.at(expected, index, src * (2 - 1j))
    b, s, idx = ember.from_numpy(base), ember.from_numpy(src), ember.tensor(index)
    check(b.index_add(0, idx, s, alpha=2 - 1j), expected, dtype)
    expected = base.copy()
    np.add.at(expected, index, src)
    check(b.index_put((idx,), s, accumulate=True), expected, dtype)
    # broadcast values, a non-contiguous self
    expected = base.T.copy()
    np.add.at(expected, (slice(None), index), 1j)
    t = ember.from_numpy(base).t().clone()
    t.index_put_((ember.arange(3).reshape(3, 1), idx.reshape(1, 5)), ember.tensor(1j, dtype=dtype),
                 accumulate=True)
    check(t, expected, dtype)
    flat = base.reshape(-1).copy()
    np.add.at(flat, index, src[:, 0])
    out = b.clone()
    out.put_(idx, s[:, 0].contiguous(), accumulate=True)
    check(out, flat.reshape(4, 3), dtype)


def test_refusals_match_torch():
    z = ember.zeros(3, dtype=C64)
    idx, src = ember.tensor([0, 0, 2]), ember.ones(3, dtype=C64)
    for reduce in ("amax", "amin"):
        with pytest.raises(NotImplementedError,
                           match=f"scatter_gather_tensor_cpu_reduce_{reduce}\" not implemented "
                                 "for 'ComplexFloat'"):
            z.scatter_reduce(0, idx, src, reduce)
    for reduce in ("prod", "mean", "amax", "amin"):
        with pytest.raises(NotImplementedError,
                           match="\"index_func_\" not implemented for 'ComplexDouble'"):
            z.to(C128).index_reduce(0, idx, src.to(C128), reduce)
    with pytest.raises(NotImplementedError, match="logaddexp2_cpu\" not implemented"):
        ember.logaddexp2(z, z)
    with pytest.raises(RuntimeError, match="normal expects standard deviation to be non-complex"):
        ember.normal(z, z)
    assert ember.normal(z, 1.0).dtype is C64  # a complex mean is fine


def _refusals(lib):
    z = lib.zeros(3, dtype=lib.complex64)
    idx, src = lib.tensor([0, 0, 2]), lib.ones(3, dtype=lib.complex64)
    calls = (lambda: z.scatter_reduce(0, idx, src, "amax"),
             lambda: z.index_reduce(0, idx, src, "mean"),
             lambda: lib.logaddexp2(z, z),
             lambda: lib.lerp(z, z, lib.ones(3)),
             lambda: lib.normal(1.0, z),
             lambda: lib.cummax(z, 0),
             lambda: lib.cummin(z, 0))
    msgs = []
    for fn in calls:
        with pytest.raises(Exception) as info:
            fn()
        msgs.append((info.type.__name__, str(info.value)))
    return msgs


def test_messages_match_torch():
    torch = pytest.importorskip("torch")
    assert _refusals(ember) == _refusals(torch)


# ---------------------------------------------------------------------------------------------
# logsumexp, logaddexp, logcumsumexp


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("dim, keepdim", [(0, False), (1, True), ((0, 2), False), (-1, False)])
def test_logsumexp_against_numpy(dtype, dim, keepdim):
    a = rand_complex((3, 4, 5), dtype, 7) * 3
    a[0, 0, 0] += 200  # the shift keeps it finite
    check(ember.logsumexp(ember.from_numpy(a), dim, keepdim),
          np_logsumexp(a, dim if isinstance(dim, tuple) else (dim,), keepdim), dtype)
    check(ember.logsumexp(ember.from_numpy(a).transpose(0, 2), dim, keepdim),
          np_logsumexp(a.transpose(2, 1, 0), dim if isinstance(dim, tuple) else (dim,), keepdim),
          dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_logsumexp_edges(dtype):
    a = np.array([[1 + 2j, complex(-inf, 1)], [complex(-inf, 1), complex(-inf, 2)],
                  [complex(inf, 1), 3 + 1j], [complex(nan, 1), 1j]], NP[dtype])
    got = ember.logsumexp(ember.from_numpy(a), 1).numpy()
    with np.errstate(all="ignore"):
        expected = np_logsumexp(a, (1,))
    np.testing.assert_allclose(got, expected, equal_nan=True, **TOL[dtype])
    assert got[1].real == -inf and got[2].real == inf and np.isnan(got[3].real)
    empty = ember.logsumexp(ember.zeros((3, 0), dtype=dtype), 1).numpy()
    assert empty.dtype == NP[dtype] and (empty == complex(-inf, 0)).all()
    assert ember.logsumexp(ember.zeros((0, 3), dtype=dtype), 0).shape == (3,)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_logaddexp_edges(dtype):
    # torch's rules: NaN anywhere -> NaN + NaN j; equal -inf real parts -> the -inf operand;
    # equal +inf ones -> log(e^a + e^b), unshifted
    a = ember.tensor([complex(nan, 0), complex(0, nan), complex(-inf, 1), complex(inf, 1),
                      complex(-inf, 0), 1 + 2j], dtype=dtype)
    b = ember.tensor([1j, 1 + 1j, complex(-inf, 2), complex(inf, -1), 1 + 2j, complex(-inf, 5)],
                     dtype=dtype)
    got = ember.logaddexp(a, b).numpy()
    assert np.isnan(got[0].real) and np.isnan(got[0].imag) and np.isnan(got[1].imag)
    assert got[2] == complex(-inf, 2)  # torch's pick of the two
    assert got[3].real == inf
    np.testing.assert_allclose(got[4:], [1 + 2j, 1 + 2j], **TOL[dtype])
    # a real operand promotes; in place
    x = ember.tensor([1 + 1j, -1j], dtype=dtype)
    r = ember.tensor([0.5, 2.0], dtype=ember.float64 if dtype is C128 else ember.float32)
    np.testing.assert_allclose(ember.logaddexp(x, r).numpy(),
                               np.log(np.exp(x.numpy()) + np.exp(r.numpy())), **TOL[dtype])
    y = x.clone()
    y.logaddexp_(x)
    np.testing.assert_allclose(y.numpy(), x.numpy() + np.log(2), **TOL[dtype])


@pytest.mark.parametrize("dtype", [C64, C128])
def test_logcumsumexp(dtype):
    a = rand_complex((3, 6), dtype, 8) * 2
    a[1, 2] = 800 + 1j  # exp would overflow without the shift
    a[2, 0] = complex(-inf, 0)
    got = ember.logcumsumexp(ember.from_numpy(a), 1)
    expected = np.empty_like(a)
    for i in range(3):
        for j in range(6):
            expected[i, j] = np_logsumexp(a[i, :j + 1], (0,))
    # the running sums' phases are not wrapped into (-pi, pi] (as torch's): compare exp(i Im)
    for r, e in ((got.numpy(), expected), (ember.logcumsumexp(ember.from_numpy(a).t(), 0).numpy(),
                                           expected.T)):
        np.testing.assert_allclose(r.real, e.real, **TOL[dtype])
        np.testing.assert_allclose(np.exp(1j * r.imag), np.exp(1j * e.imag), **TOL[dtype])


def test_values_match_torch():
    torch = pytest.importorskip("torch")
    a = rand_complex((4, 5), C128, 9) * 4
    b = rand_complex((4, 5), C128, 10) * 4
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    ea, eb = ember.from_numpy(a), ember.from_numpy(b)
    for e, t in ((ember.logsumexp(ea, 1), torch.logsumexp(ta, 1)),
                 (ember.logaddexp(ea, eb), torch.logaddexp(ta, tb)),
                 (ember.logcumsumexp(ea, 0), torch.logcumsumexp(ta, 0)),
                 (ember.lerp(ea, eb, 0.3 + 0.4j), torch.lerp(ta, tb, 0.3 + 0.4j)),
                 (ember.lerp(ea, eb, ember.from_numpy(b * 0.1)),
                  torch.lerp(ta, tb, torch.from_numpy(b * 0.1)))):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_lerp(dtype):
    s, e = rand_complex((3, 4), dtype, 11), rand_complex((4,), dtype, 12)
    for w in (0.25, 0.75 - 0.5j):
        check(ember.lerp(ember.from_numpy(s), ember.from_numpy(e), w), s + w * (e - s), dtype)
    w = rand_complex((3, 1), dtype, 13)
    check(ember.lerp(ember.from_numpy(s), ember.from_numpy(e), ember.from_numpy(w)),
          s + w * (e - s), dtype)
