"""The index ops against NumPy: index_select, gather, take, take_along_dim, scatter (+ add /
reduce), index_add / index_copy / index_fill, masked_fill / masked_select / masked_scatter,
nonzero / argwhere / where(cond). Advanced indexing itself is in test_indexing.py."""

from __future__ import annotations

import numpy as np
import pytest
from index_helpers import LAYOUTS, T, sample

import ember as E
from ember.testing.opdb import ALL_DTYPES, make_tensor, to_numpy

# ---------------------------------------------------------------------------------------------
# index_select / gather / take / take_along_dim

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_index_select_matches_take(dtype, layout):
    arr = sample((5, 6), dtype)
    t = make_tensor(arr, dtype, layout)
    ref = to_numpy(t)
    for dim in (0, 1, -1):
        for idx in ([4, 0, 0, 2], [], [1]):
            for idt in (E.int64, E.int32):
                i = E.tensor(idx, dtype=idt)
                got = E.index_select(t, dim, i)
                np.testing.assert_array_equal(to_numpy(got), np.take(ref, np.array(idx, int), axis=dim))
                np.testing.assert_array_equal(to_numpy(t.index_select(dim, i)), to_numpy(got))


def test_index_select_zero_dim_and_out():
    s = E.tensor(5.0)
    assert E.index_select(s, 0, E.tensor([0])).shape == ()
    assert E.index_select(E.arange(6.0).reshape(2, 3), 0, E.tensor(1)).shape == (1, 3)
    out = E.empty(0)
    r = E.index_select(E.arange(6.0).reshape(2, 3), 1, E.tensor([2, 0]), out=out)
    assert r is out and out.tolist() == [[2.0, 0.0], [5.0, 3.0]]
    idx = E.tensor([5, 0, 7, 2])[::2]  # strided index
    assert E.index_select(E.arange(10.0), 0, idx).tolist() == [5.0, 7.0]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_gather_matches_take_along_axis(dtype):
    arr = sample((4, 5, 3), dtype)
    t = T(arr, dtype)
    ref = to_numpy(t)
    rng = np.random.default_rng(5)
    for dim in (0, 1, 2, -1):
        shape = list(ref.shape)
        shape[dim] = 6
        idx = rng.integers(0, ref.shape[dim], size=shape)
        got = E.gather(t, dim, E.from_numpy(idx))
        np.testing.assert_array_equal(to_numpy(got), np.take_along_axis(ref, idx, axis=dim))
        got32 = t.gather(dim, E.from_numpy(idx.astype(np.int32)), sparse_grad=True)
        np.testing.assert_array_equal(to_numpy(got32), to_numpy(got))


def test_gather_smaller_index_and_non_contiguous():
    ref = np.arange(20.0, dtype=np.float32).reshape(4, 5)
    t = make_tensor(ref, "float32", "transposed")  # (5, 4) view
    tr = to_numpy(t)
    idx = np.array([[0, 3], [1, 1]])
    got = E.gather(t, 1, E.from_numpy(idx).t())
    np.testing.assert_array_equal(to_numpy(got), np.take_along_axis(tr[:2], idx.T, axis=1))
    assert E.gather(E.tensor(5.0), 0, E.tensor([0, 0])).tolist() == [5.0, 5.0]
    assert E.gather(E.tensor(5.0), 0, E.tensor(0)).shape == ()
    assert E.gather(E.zeros(3, 4), 0, E.zeros(0, 4, dtype=E.int64)).shape == (0, 4)


def test_take_and_take_along_dim():
    ref = np.arange(12.0).reshape(3, 4)
    t = T(ref)
    idx = np.array([[0, 11], [-1, -12]])
    np.testing.assert_array_equal(E.take(t, E.from_numpy(idx)).numpy(), np.take(ref, idx))
    np.testing.assert_array_equal(t.t().take(E.tensor([1, 2])).numpy(), ref.T.ravel()[[1, 2]])
    assert E.take(E.tensor(5.0), E.tensor(0)).shape == ()
    i = np.array([[0], [3], [2]])
    np.testing.assert_array_equal(E.take_along_dim(t, E.from_numpy(i), dim=1).numpy(),
                                  np.take_along_axis(ref, i, axis=1))
    j = np.array([[2, 0, 1, -1]])  # broadcast over dim 0's partner dims
    np.testing.assert_array_equal(t.take_along_dim(E.from_numpy(j), 0).numpy(),
                                  np.take_along_axis(ref, np.where(j < 0, j + 3, j), axis=0))
    np.testing.assert_array_equal(E.take_along_dim(t, E.tensor([3, 0])).numpy(), ref.ravel()[[3, 0]])
    out = E.empty(0, dtype=t.dtype)  # (torch's gather out=: exactly the input's dtype)
    assert E.take_along_dim(t, E.tensor([[0]]), dim=1, out=out) is out and out.shape == (3, 1)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        E.take_along_dim(t, E.tensor([[0]]), dim=1, out=E.empty(0, dtype=E.float32))


# ---------------------------------------------------------------------------------------------
# scatter family

def scatter_ref(arr, dim, idx, src, op):
    out = arr.astype(np.float64).copy()
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[dim] = idx[pos]
        tgt = tuple(tgt)
        v = src if np.isscalar(src) else src[pos]
        if op == "copy":
            out[tgt] = v
        elif op == "add":
            out[tgt] += v
        elif op == "mul":
            out[tgt] *= v
    return out


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_scatter_matches_put_along_axis(dtype):
    arr = sample((4, 5), dtype)
    src = sample((4, 5), dtype, seed=3)
    rng = np.random.default_rng(6)
    for dim in (0, 1, -1):
        # distinct targets along dim (a partial permutation), so put_along_axis is exact
        if dim == 0:
            idx = np.stack([rng.permutation(4)[:3] for _ in range(5)]).T  # (3, 5)
        else:
            idx = np.stack([rng.permutation(5)[:3] for _ in range(4)])  # (4, 3)
        s = to_numpy(T(src, dtype))[: idx.shape[0], : idx.shape[1]]
        want = to_numpy(T(arr, dtype)).copy()
        np.put_along_axis(want, idx, s, axis=dim)
        got = E.scatter(T(arr, dtype), dim, E.from_numpy(idx), T(src, dtype))
        np.testing.assert_array_equal(to_numpy(got), want)
        t = T(arr, dtype)
        assert t.scatter_(dim, E.from_numpy(idx.astype(np.int32)), T(src, dtype)) is t
        np.testing.assert_array_equal(to_numpy(t), want)


def test_scatter_scalar_value_and_legacy_reduce():
    x = E.arange(12.0).reshape(3, 4)
    i2 = E.tensor([[0, 1], [2, 0]])
    ref = x.numpy()
    assert E.scatter(x, 1, i2, 9.5).tolist()[0] == [9.5, 9.5, 2.0, 3.0]
    assert E.scatter(x.long(), 1, i2, 9.5).tolist()[0] == [9, 9, 2, 3]
    assert x.scatter(1, i2, value=2).tolist()[1] == [2.0, 5.0, 2.0, 7.0]
    np.testing.assert_array_equal(E.scatter(x, 1, i2, 2.0, reduce="add").numpy(),
                                  scatter_ref(ref, 1, i2.numpy(), 2.0, "add"))
    with pytest.warns(UserWarning, match="deprecated"):
        r = E.scatter(x, 1, i2, E.full((2, 2), 3.0), reduce="multiply")
    np.testing.assert_array_equal(r.numpy(), scatter_ref(ref, 1, i2.numpy(), np.full((2, 2), 3.0), "mul"))
    out = E.empty(0)
    assert E.scatter(x, 0, E.tensor([[0]]), 1.0, out=out) is out and out[0, 0].item() == 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8"])
def test_scatter_add_matches_add_at(dtype):
    rng = np.random.default_rng(7)
    arr = sample((4, 6), dtype)
    src = sample((7, 6), dtype, seed=2)
    idx = rng.integers(0, 4, size=(7, 6))
    got = E.scatter_add(T(arr, dtype), 0, E.from_numpy(idx), T(src, dtype))
    want = scatter_ref(to_numpy(T(arr, dtype)), 0, idx, to_numpy(T(src, dtype)), "add")
    if dtype == "uint8":
        want = want.astype(np.int64).astype(np.uint8)
    np.testing.assert_array_equal(to_numpy(got).astype(want.dtype), want)
    t = T(arr, dtype)
    t.scatter_add_(0, E.from_numpy(idx), T(src, dtype))
    np.testing.assert_array_equal(to_numpy(t), to_numpy(got))


def test_scatter_add_large_parallel():
    rng = np.random.default_rng(8)
    idx = rng.integers(0, 50, size=(200, 300))
    src = rng.standard_normal((200, 300))
    got = E.zeros(50, 300, dtype=E.float64).scatter_add_(0, E.from_numpy(idx), E.from_numpy(src))
    want = np.zeros((50, 300))
    np.add.at(want, (idx, np.arange(300)[None, :].repeat(200, 0)), src)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_scatter_reduce_matches_loops(reduce, include_self, dtype):
    rng = np.random.default_rng(9)
    arr = sample((3, 5), dtype)
    src = sample((3, 4), dtype, seed=11)
    idx = rng.integers(0, 5, size=(3, 4))
    a, s = to_numpy(T(arr, dtype)).astype(np.float64), to_numpy(T(src, dtype)).astype(np.float64)
    want = a.copy()
    groups = {}
    for pos in np.ndindex(*idx.shape):
        groups.setdefault((pos[0], idx[pos]), []).append(s[pos])
    for tgt, vals in groups.items():
        vals = ([a[tgt]] if include_self else []) + vals
        if reduce == "sum":
            want[tgt] = np.sum(vals)
        elif reduce == "prod":
            want[tgt] = np.prod(vals)
        elif reduce == "mean":
            m = np.sum(vals) / len(vals)
            want[tgt] = m if dtype.startswith("float") else np.floor(m)
        elif reduce == "amax":
            want[tgt] = np.max(vals)
        else:
            want[tgt] = np.min(vals)
    got = E.scatter_reduce(T(arr, dtype), 1, E.from_numpy(idx), T(src, dtype), reduce,
                           include_self=include_self)
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), want, rtol=1e-6)
    t = T(arr, dtype)
    t.scatter_reduce_(1, E.from_numpy(idx), T(src, dtype), reduce, include_self=include_self)
    np.testing.assert_array_equal(to_numpy(t), to_numpy(got))


def test_scatter_reduce_nan_and_bool():
    x = E.zeros(3)
    r = E.scatter_reduce(x, 0, E.tensor([0, 0]), E.tensor([float("nan"), 1.0]), "amax")
    assert np.isnan(r[0].item())
    b = E.tensor([False, True, True])
    assert E.scatter_reduce(b, 0, E.tensor([0]), E.tensor([True]), "sum").tolist() == [True, True, True]
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        E.scatter_reduce(b, 0, E.tensor([0]), E.tensor([True]), "mean")


# ---------------------------------------------------------------------------------------------
# index_add / index_copy / index_fill

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int16", "bool"])
def test_index_add_matches_add_at(dtype):
    arr = sample((5, 3), dtype)
    src = sample((4, 3), dtype, seed=5)
    idx = np.array([4, 0, 4, 1])
    alpha = 1 if dtype == "bool" else 2
    got = E.index_add(T(arr, dtype), 0, E.from_numpy(idx), T(src, dtype), alpha=alpha)
    a, s = to_numpy(T(arr, dtype)), to_numpy(T(src, dtype))
    if dtype == "bool":
        want = a.copy()
        np.logical_or.at(want, idx, s)
    else:
        want = a.astype(np.float64)
        np.add.at(want, idx, alpha * s.astype(np.float64))
    np.testing.assert_array_equal(to_numpy(got).astype(want.dtype), want)
    t = T(arr, dtype)
    assert t.index_add_(0, E.from_numpy(idx.astype(np.int32)), T(src, dtype), alpha=alpha) is t
    np.testing.assert_array_equal(to_numpy(t), to_numpy(got))


def test_index_add_dim1_noncontiguous_and_out():
    ref = np.zeros((3, 4), np.float32)
    src = np.arange(6.0, dtype=np.float32).reshape(2, 3).T  # (3, 2)
    got = E.index_add(E.zeros(3, 4), -1, E.tensor([3, 3]), E.from_numpy(np.ascontiguousarray(src.T)).t())
    np.add.at(ref, (slice(None), [3, 3]), src)
    np.testing.assert_array_equal(got.numpy(), ref)
    out = E.empty(0)
    assert E.index_add(E.zeros(2), 0, E.tensor([1]), E.ones(1), out=out) is out
    assert out.tolist() == [0.0, 1.0]
    assert E.index_add(E.tensor(1.0), 0, E.tensor([0]), E.tensor(2.0)).item() == 3.0


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_copy_and_index_fill(dtype):
    arr = sample((4, 3), dtype)
    src = sample((2, 3), dtype, seed=4)
    want = to_numpy(T(arr, dtype)).copy()
    want[[3, 1]] = to_numpy(T(src, dtype))
    got = E.index_copy(T(arr, dtype), 0, E.tensor([3, 1]), T(src, dtype))
    np.testing.assert_array_equal(to_numpy(got), want)
    t = T(arr, dtype)
    assert t.index_copy_(0, E.tensor([3, 1]), T(src, dtype)) is t
    np.testing.assert_array_equal(to_numpy(t), want)
    want = to_numpy(T(arr, dtype)).copy()
    want[:, [0, -1]] = 1
    got = T(arr, dtype).index_fill(1, E.tensor([0, -1]), 1)
    np.testing.assert_array_equal(to_numpy(got), want)
    t = T(arr, dtype)
    E.index_fill_(t, 1, E.tensor([0, 2]), E.tensor(1))
    np.testing.assert_array_equal(to_numpy(t), want)


def test_index_fill_casts_value():
    x = E.arange(12).reshape(3, 4)
    assert E.index_fill(x, 1, E.tensor([0, 2]), 1.5).tolist()[0] == [1, 1, 1, 3]
    assert E.index_fill(E.tensor(2.0), 0, E.tensor(0), -1).item() == -1.0


# ---------------------------------------------------------------------------------------------
# masks

@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_masked_fill_matches_where(dtype):
    arr = sample((3, 4), dtype)
    mask = sample((3, 4), "bool", seed=3)
    want = np.where(mask, np.array(1).astype(to_numpy(T(arr, dtype)).dtype), to_numpy(T(arr, dtype)))
    got = E.masked_fill(T(arr, dtype), E.from_numpy(mask), 1)
    np.testing.assert_array_equal(to_numpy(got), want)
    t = T(arr, dtype)
    assert t.masked_fill_(E.from_numpy(mask[0]), E.tensor(1)) is t  # mask broadcasts
    np.testing.assert_array_equal(to_numpy(t), np.where(mask[0], want.dtype.type(1), to_numpy(T(arr, dtype))))


def test_masked_fill_broadcast_out_of_place_and_layouts():
    x = E.arange(4.0)
    m = E.tensor([[True, False, False, True], [False, False, False, False]])
    r = E.masked_fill(x, m, -1.0)
    assert r.shape == (2, 4) and r.tolist()[0] == [-1.0, 1.0, 2.0, -1.0]
    base = np.arange(20.0, dtype=np.float32).reshape(4, 5)
    t = make_tensor(base, "float32", "transposed")
    ref = to_numpy(t)
    t.masked_fill_(t > 7, 0.5)
    np.testing.assert_array_equal(to_numpy(t), np.where(ref > 7, 0.5, ref))
    assert E.masked_fill(E.arange(5).int(), E.arange(5) > 2, E.tensor(2.5)).tolist() == [0, 1, 2, 2, 2]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_masked_select_matches_boolean_indexing(dtype, layout):
    arr = sample((4, 5), dtype)
    t = make_tensor(arr, dtype, layout)
    ref = to_numpy(t)
    mask = sample(ref.shape, "bool", seed=8)
    np.testing.assert_array_equal(to_numpy(E.masked_select(t, E.from_numpy(mask))), ref[mask])
    np.testing.assert_array_equal(to_numpy(t.masked_select(E.from_numpy(mask[1]))),
                                  ref[np.broadcast_to(mask[1], ref.shape)])


def test_masked_select_broadcast_zero_dim_and_out():
    x = E.arange(4.0)
    m = E.tensor([[True], [False]])
    assert E.masked_select(x, m).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert E.masked_select(E.tensor(5.0), E.tensor(True)).tolist() == [5.0]
    out = E.empty(0)
    assert E.masked_select(x, x > 1, out=out) is out and out.tolist() == [2.0, 3.0]


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_masked_scatter(dtype):
    arr = sample((3, 4), dtype)
    mask = sample((3, 4), "bool", seed=2)
    src = sample((20,), dtype, seed=6)
    want = to_numpy(T(arr, dtype)).copy()
    want[mask] = to_numpy(T(src, dtype))[: mask.sum()]
    got = E.masked_scatter(T(arr, dtype), E.from_numpy(mask), T(src, dtype).reshape(4, 5))
    np.testing.assert_array_equal(to_numpy(got), want)
    t = T(arr, dtype)
    assert t.masked_scatter_(E.from_numpy(mask), T(src, dtype)) is t
    np.testing.assert_array_equal(to_numpy(t), want)
    r = E.masked_scatter(E.zeros(4), E.tensor([[True, False, False, True], [False] * 4]), E.arange(9.0))
    assert r.shape == (2, 4) and r.tolist()[0] == [0.0, 0.0, 0.0, 1.0]


# ---------------------------------------------------------------------------------------------
# nonzero / argwhere / where(cond)

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 0, 3), (2, 3, 2)])
def test_nonzero_matches_numpy(dtype, shape):
    arr = sample(shape, dtype) if dtype != "bool" else sample(shape, "bool")
    arr = np.where(sample(shape, "bool", seed=5), arr, 0).astype(arr.dtype)
    t = T(arr, dtype)
    ref = to_numpy(t)
    nz = E.nonzero(t)
    assert nz.dtype == E.int64
    np.testing.assert_array_equal(nz.numpy().reshape(-1, len(shape)), np.argwhere(ref))
    np.testing.assert_array_equal(E.argwhere(t).numpy().reshape(-1, len(shape)), np.argwhere(ref))
    for got, want in zip(t.nonzero(as_tuple=True), np.nonzero(ref)):
        np.testing.assert_array_equal(got.numpy(), want)
    for got, want in zip(E.where(t), np.nonzero(ref)):
        np.testing.assert_array_equal(got.numpy(), want)


def test_nonzero_edge_cases():
    assert E.nonzero(E.tensor(5.0)).shape == (1, 0) and E.nonzero(E.tensor(0.0)).shape == (0, 0)
    assert [t.tolist() for t in E.nonzero(E.tensor(5.0), as_tuple=True)] == [[0]]
    assert [t.tolist() for t in E.where(E.tensor(0))] == [[]]
    assert E.nonzero(E.tensor([float("nan"), 0.0, -0.0])).tolist() == [[0]]
    big = np.random.default_rng(0).random(300000) > 0.7
    np.testing.assert_array_equal(E.nonzero(E.from_numpy(big)).numpy()[:, 0], np.flatnonzero(big))
    out = E.empty(0, dtype=E.int64)
    assert E.nonzero(E.tensor([0, 3]), out=out) is out and out.tolist() == [[1]]
    # where(c, x, y) still works beside where(c)
    assert E.where(E.tensor([True, False]), 1.0, 0.0).tolist() == [1.0, 0.0]


def test_where_with_out():
    c = E.tensor([True, False, True])
    a, b = E.tensor([1.0, 2.0, 3.0]), E.tensor([4.0, 5.0, 6.0])
    out = E.empty(3)
    assert E.where(c, a, b, out=out) is out
    np.testing.assert_array_equal(out.numpy(), np.where(c.numpy(), a.numpy(), b.numpy()))
    grown = E.empty(0)
    E.where(c, a, E.tensor(0.0), out=grown)  # resized to the result, as torch's out=
    np.testing.assert_array_equal(grown.numpy(), [1.0, 0.0, 3.0])
    with pytest.raises(RuntimeError, match="Expected out type to be Float but got Double"):
        E.where(c, a, b, out=E.empty(3, dtype=E.float64))


def test_where_with_out_refuses_autograd():
    pytest.importorskip("ember.autograd")  # requires_grad needs it
    c, b = E.tensor([True, False, True]), E.tensor([4.0, 5.0, 6.0])
    x = E.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        E.where(c, x, b, out=E.empty(3))
