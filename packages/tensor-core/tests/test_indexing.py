"""Advanced indexing (get / set / index_put_), and the errors, autograd-hook calls and torch
parity of it and of the index ops (whose values are checked in test_index_ops.py).

NumPy is the reference. PyTorch applies ints, slices and None first and the tensor indices to
the resulting view (so `x[:, 0, :, [0, 1]]` keeps the list's dim in place, where NumPy moves it
first); `torch_ref` below does the same in NumPy, and is checked against NumPy's own result
wherever the two rules agree.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from index_helpers import LAYOUTS, T, sample

import ember as E
from ember.testing.opdb import ALL_DTYPES, edtype, make_tensor, to_numpy


def to_ember_index(idx):
    if isinstance(idx, tuple):
        return tuple(to_ember_index(i) for i in idx)
    if isinstance(idx, np.ndarray):
        return E.from_numpy(np.array(idx, copy=True))
    return idx


def torch_ref(arr, idx):
    """PyTorch's rule in NumPy: ints / slices / None / `...` first, then the arrays."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    specified = sum(
        (i.ndim if isinstance(i, np.ndarray) and i.dtype == bool else 1)
        for i in idx
        if i is not None and i is not Ellipsis and not isinstance(i, bool)
    )
    basic, adv, dim = [], [], 0
    for i in idx:
        if i is Ellipsis:
            n = arr.ndim - specified
            basic.extend([slice(None)] * n)
            dim += n
        elif i is None:
            basic.append(None)
            dim += 1
        elif isinstance(i, (int, np.integer)) or (
            isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype != bool
        ):  # a 0-d integer tensor is an int to PyTorch
            basic.append(int(i))
        elif isinstance(i, slice):
            basic.append(i)
            dim += 1
        else:
            i = np.asarray(i)
            k = i.ndim if i.dtype == bool else 1
            basic.extend([slice(None)] * k)
            adv.append((dim, i, k))
            dim += k
    view = arr[tuple(basic) + (Ellipsis,)]  # a 0-d view, not a scalar, when all are ints
    if not adv:
        return view, None
    second, cur = [], 0  # a mask is one entry spanning k dims
    for d, i, k in adv:
        second.extend([slice(None)] * (d - cur))
        second.append(i)
        cur = d + k
    return view, tuple(second)


def ref_get(arr, idx):
    view, second = torch_ref(arr, idx)
    return view if second is None else view[second]


def check_get(arr, idx, dtype="float32"):
    t = T(arr, dtype)
    got = t[to_ember_index(idx)]
    want = ref_get(np.asarray(to_numpy(t)), idx)
    assert tuple(got.shape) == want.shape, (idx, tuple(got.shape), want.shape)
    np.testing.assert_array_equal(to_numpy(got), want)
    return got


# ---------------------------------------------------------------------------------------------
# getitem

X = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
B = np.array([True, False, True])
GET_CASES = [
    ([0, 1],),
    (np.array([1, 0, 1]),),
    (np.array([[0, 1], [1, 0]]),),
    (slice(None), [2, 0, -1]),
    (Ellipsis, [4, -5, 0]),
    ([1, 0], slice(1, None), [0, 2]),             # separated: broadcast dims first
    ([1, 0], [2, 1], [0, 3]),                     # adjacent
    (slice(None), [0, 2], [1, 3]),                # adjacent, after a slice
    (slice(None), [[0], [2]], slice(None), [1, 3]),
    (0, [0, 2], slice(1, 3)),                     # ints are applied first (PyTorch)
    (slice(None), 0, slice(None), [0, 1]),
    (None, [0, 1]),
    ([[0], [1]], None, slice(None), [1, 2]),
    (slice(None), B),
    (slice(None), X[0, :, :, 0] > 20),
    (1, X[0, :, :, 0] > 20),
    (0, 0, X[0, 0] > 3),
    (X > 50,),
    (slice(None, None, 2), B, slice(1, None, 2)),
    (np.array([], dtype=np.int64),),
    (np.zeros((0, 2), dtype=np.int64),),
    (slice(None), np.array([0, 0, 0, 2])),        # duplicates
    (np.array([1], dtype=np.int32), slice(None), np.array([0, 1], dtype=np.int32)),
    (Ellipsis, None, [1]),
    ([-1, -2], Ellipsis, [-1]),
]


@pytest.mark.parametrize("idx", GET_CASES, ids=[str(i)[:60] for i in range(len(GET_CASES))])
def test_getitem_matches_numpy(idx):
    check_get(X, idx)


def test_torch_ref_agrees_with_numpy_where_the_rules_agree():
    for idx in GET_CASES:
        if any(isinstance(i, (int, np.integer)) for i in idx) or any(
            isinstance(i, np.ndarray) and i.dtype == np.int32 for i in idx
        ):
            continue
        np.testing.assert_array_equal(ref_get(X, idx), X[idx])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_getitem_dtypes_and_layouts(dtype, layout):
    arr = sample((4, 6), dtype)
    t = make_tensor(arr, dtype, layout)
    ref = to_numpy(t)
    for idx in [(np.array([3, 0, 0, -1]),), (slice(None), np.array([[1, 2], [0, 0]])),
                (ref > ref.min(),), (np.array([1, 2]), np.array([0, -1]))]:
        got = t[to_ember_index(idx)]
        np.testing.assert_array_equal(to_numpy(got), ref[idx])
        assert got.dtype == t.dtype


def test_getitem_with_non_contiguous_index_tensors():
    t = T(X)
    idx = E.tensor([[0, 1, 1, 0], [1, 1, 0, 0]]).t()  # (4, 2), transposed
    np.testing.assert_array_equal(to_numpy(t[idx]), X[idx.numpy()])
    step = E.tensor([2, 9, 0, 9, 1])[::2]
    np.testing.assert_array_equal(to_numpy(t[:, step]), X[:, [2, 0, 1]])
    exp = E.tensor([1, 0]).expand(3, 2)
    np.testing.assert_array_equal(to_numpy(t[exp]), X[np.broadcast_to([1, 0], (3, 2))])


def test_getitem_lists_arrays_and_bools():
    t = T(X)
    assert t[[0, 1]].shape == (2, 3, 4, 5)
    assert t[[True, False]].shape == (1, 3, 4, 5)
    assert t[True].shape == (1, 2, 3, 4, 5) and t[False].shape == (0, 2, 3, 4, 5)
    assert t[E.tensor(True)].shape == (1, 2, 3, 4, 5)
    assert t[None, True, 0].shape == (1, 1, 3, 4, 5)
    assert t[[]].shape == (0, 3, 4, 5)
    assert t[np.array([1, 0])].shape == (2, 3, 4, 5)
    assert t[np.array([0.0, 1.7])].shape == (2, 3, 4, 5)  # float arrays index as int64
    assert t[np.int64(1), np.array(2)].shape == (4, 5)
    assert t[E.tensor(1)].shape == (3, 4, 5)
    np.testing.assert_array_equal(to_numpy(t[[1, -1]]), X[[1, -1]])
    s = E.tensor(5.0)
    assert s[True].tolist() == [5.0] and s[None, True].shape == (1, 1)
    assert s[...].shape == () and s[..., None].shape == (1,)


def test_getitem_list_of_lists_is_a_tuple_with_a_warning():
    t = T(X)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        r = t[[[0, 1], [0, 2]]]
    np.testing.assert_array_equal(to_numpy(r), X[[0, 1], [0, 2]])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        assert t[[0, slice(None)]].shape == (3, 4, 5)


def test_getitem_uint8_mask_warns():
    t = T(X)
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        r = t[E.tensor([1, 0], dtype=E.uint8)]
    assert r.shape == (1, 3, 4, 5)


def test_multiple_ellipses_follow_pytorch():
    t = T(X)
    assert t[..., ...].shape == X.shape
    np.testing.assert_array_equal(to_numpy(t[0, ..., 1, ...]), X[0, :, :, 1])
    np.testing.assert_array_equal(to_numpy(t[..., 0, ...]), X[..., 0])


def test_getitem_result_is_a_copy():
    t = T(X)
    r = t[[0]]
    r.fill_(-1)
    assert float(t.min()) == 0.0 and not r._shares_storage(t)


def test_getitem_empty_and_zero_dim():
    e = E.zeros(0, 3)
    assert e[[]].shape == (0, 3)
    assert e[:, [0, 2]].shape == (0, 2)
    assert e[e > 0].shape == (0,)
    with pytest.raises(IndexError, match="index 0 is out of bounds for dimension 0 with size 0"):
        e[[0]]


def test_getitem_large_rows_parallel_path():
    table = np.random.default_rng(1).standard_normal((1000, 33)).astype(np.float32)
    idx = np.random.default_rng(2).integers(-1000, 1000, size=50000)
    got = T(table)[E.from_numpy(idx)]
    np.testing.assert_array_equal(got.numpy(), table[idx])
    got = T(table)[:, E.from_numpy(idx % 33)]
    np.testing.assert_array_equal(got.numpy(), table[:, idx % 33])


# ---------------------------------------------------------------------------------------------
# setitem / index_put_

def check_set(arr, idx, value, dtype="float32"):
    t = T(arr, dtype)
    ref = to_numpy(t).copy()
    v = value.numpy() if isinstance(value, E.Tensor) else value
    view, second = torch_ref(ref, idx)
    if second is None:
        view[...] = v
    else:
        view[second] = v
    ver = t._version
    t[to_ember_index(idx)] = value
    np.testing.assert_array_equal(to_numpy(t), ref)
    assert t._version > ver


SET_CASES = [
    (([0, 1],), 7.0),
    (([1, 0], slice(1, None), [0, 2]), E.tensor([1.0, 2.0]).reshape(2, 1, 1)),
    ((slice(None), [0, 2]), E.arange(2.0 * 2 * 4 * 5).reshape(2, 2, 4, 5)),
    ((0, [0, 2], slice(1, 3)), E.tensor([[1.0], [2.0]])),
    ((X > 70,), -1.0),
    ((X > 70,), E.arange(49.0)),
    ((slice(None), np.array([True, False, True])), E.ones(1, 1, 4, 5)),
    ((Ellipsis, [-1]), E.tensor(3.0)),
    ((None, [1]), 2),
    ((np.array([], dtype=np.int64),), 1.0),
]


@pytest.mark.parametrize("idx,value", SET_CASES, ids=[str(i) for i in range(len(SET_CASES))])
def test_setitem_matches_numpy(idx, value):
    check_set(X, idx, value)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_setitem_dtypes_scalars_are_cast(dtype):
    arr = sample((5, 3), dtype)
    t = T(arr, dtype)
    ref = to_numpy(t).copy()
    t[[0, 4, -2]] = 1
    ref[[0, 4, -2]] = 1
    t[:, E.tensor([True, False, True])] = E.zeros((), dtype=edtype(dtype))
    ref[:, [True, False, True]] = 0
    np.testing.assert_array_equal(to_numpy(t), ref)
    if dtype in ("int32", "int64", "uint8", "int8", "int16"):
        t[[0]] = 2.7  # truncates like PyTorch
        assert to_numpy(t)[0].tolist() == [2, 2, 2]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_setitem_mask_with_a_scalar(layout):
    arr = np.arange(60.0).reshape(3, 4, 5)
    t = make_tensor(arr, "float64", layout)
    ref = to_numpy(t).copy()
    m = ref[0] % 3 == 0  # covers dims 1, 2
    t[:, E.from_numpy(m)] = 7.0
    ref[:, m] = 7.0
    t[E.from_numpy(ref[:, :, 0] > 20)] = E.tensor(-1.0, dtype=E.float64)  # covers dims 0, 1
    ref[ref[:, :, 0] > 20] = -1.0
    t[1, ..., E.from_numpy(np.array([True, False, True, False, False]))] = 5
    ref[1, ..., [True, False, True, False, False]] = 5
    np.testing.assert_array_equal(to_numpy(t), ref)
    with pytest.raises(IndexError, match="The shape of the mask"):
        t[:, E.from_numpy(m[:, :4])] = 1.0


def test_setitem_duplicates_last_write_wins():
    t = E.zeros(4)
    t[[1, 1, 1, 3]] = E.tensor([1.0, 2.0, 3.0, 4.0])
    assert t.tolist() == [0.0, 3.0, 0.0, 4.0]
    t = E.zeros(3, 4)
    t[[0, 0], [1, 1]] = E.tensor([5.0, 6.0])
    assert t.tolist()[0] == [0.0, 6.0, 0.0, 0.0]


def test_setitem_non_contiguous_self_and_values():
    base = E.zeros(6, 8)
    t = base[::2, 1::2]  # (3, 4) strided view
    ref = np.zeros((6, 8), np.float32)
    vals = E.arange(8.0).reshape(4, 2).t()  # (2, 4), non-contiguous
    t[[2, 0]] = vals
    ref[::2, 1::2][[2, 0]] = vals.numpy()
    np.testing.assert_array_equal(base.numpy(), ref)


def test_setitem_with_values_aliasing_self():
    t = E.arange(6.0)
    t[[0, 1, 2]] = t[3:]
    assert t.tolist() == [3.0, 4.0, 5.0, 3.0, 4.0, 5.0]
    t = E.tensor([1, 0, 3, 2])
    t[t] = E.tensor([3, 2, 1, 0])  # the index is self: read before any write
    assert t.tolist() == [2, 3, 0, 1]


def test_setitem_zero_dim():
    s = E.tensor(5.0)
    s[True] = 2
    assert s.item() == 2.0
    s[False] = 7
    assert s.item() == 2.0
    s[E.tensor(True)] = E.tensor([9.0])
    assert s.item() == 9.0


def test_setitem_large_parallel_scatter():
    rng = np.random.default_rng(3)
    ref = np.zeros((3000, 40), np.float32)
    idx = rng.integers(0, 40, size=3000)
    t = T(ref)
    vals = rng.standard_normal(3000).astype(np.float32)
    t[E.arange(3000), E.from_numpy(idx)] = E.from_numpy(vals)
    ref[np.arange(3000), idx] = vals
    np.testing.assert_array_equal(t.numpy(), ref)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8", "bool"])
def test_index_put_accumulate_matches_add_at(dtype):
    rng = np.random.default_rng(4)
    arr = sample((5, 4), dtype)
    rows = rng.integers(-5, 5, size=12)
    cols = rng.integers(0, 4, size=12)
    vals = sample((12,), dtype, seed=9)
    t = T(arr, dtype)
    r = t.index_put_((E.from_numpy(rows), E.from_numpy(cols)), T(vals, dtype), accumulate=True)
    assert r is t
    ref = to_numpy(T(arr, dtype)).astype(np.float64 if dtype != "bool" else bool)
    if dtype == "bool":
        np.logical_or.at(ref, (rows, cols), vals)
    else:
        np.add.at(ref, (rows, cols), to_numpy(T(vals, dtype)).astype(np.float64))
        if dtype in ("int8",):
            ref = ref.astype(np.int64).astype(np.int8)
    np.testing.assert_array_equal(to_numpy(t).astype(ref.dtype), ref)


def test_index_put_forms():
    x = E.zeros(3, 4)
    y = E.index_put(x, (E.tensor([0, 0]),), E.tensor(1.0), accumulate=True)
    assert y.tolist()[0] == [2.0] * 4 and x.sum().item() == 0
    y = x.index_put((E.tensor([2]), E.tensor([3])), E.tensor(5.0))
    assert y[2, 3].item() == 5.0
    E.index_put_(x, [E.tensor([1])], E.tensor([1.0, 2.0, 3.0, 4.0]))
    assert x[1].tolist() == [1.0, 2.0, 3.0, 4.0]
    x.index_put_((E.tensor([True, False, False]),), E.tensor(9.0))
    assert x[0].tolist() == [9.0] * 4
    x.index_put_((E.tensor([0, 0], dtype=E.int32),), E.tensor(1.0), True)
    assert x[0].tolist() == [11.0] * 4


def test_index_accumulate_helper_sums_duplicates():
    g = E.zeros(4)
    E._C._index_accumulate_(g, ([0, 0, 3],), E.tensor([1.0, 2.0, 3.0]))
    assert g.tolist() == [3.0, 0.0, 0.0, 3.0]
    E._C._index_accumulate_(g, (slice(1, 3),), E.tensor([1.0, 1.0]))
    assert g.tolist() == [3.0, 1.0, 1.0, 3.0]


# ---------------------------------------------------------------------------------------------
# errors

x34 = E.arange(12.0).reshape(3, 4)
i22 = E.tensor([[0, 1], [2, 0]])
ERRORS = [
    ("get-oob", lambda: x34[[5]], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ("get-oob-neg", lambda: x34[[-4]], IndexError, "index -4 is out of bounds for dimension 0 with size 3"),
    ("get-oob-dim", lambda: x34[:, [4]], IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
    ("get-oob-second", lambda: x34[[0], [9]], IndexError, "index 9 is out of bounds for dimension 1 with size 4"),
    ("get-int-oob", lambda: x34[3], IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
    ("get-dtype", lambda: x34[E.tensor([0, 1], dtype=E.int16)], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    ("get-float-tensor", lambda: x34[E.tensor([0.0])], IndexError, "tensors used as indices must be"),
    ("get-float", lambda: x34[1.5], IndexError, "are valid indices (got float)"),
    ("get-mask-shape", lambda: x34[E.tensor([True, False])], IndexError,
     "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"),
    ("get-too-many", lambda: x34[[0], [0], [0]], IndexError, "too many indices for tensor of dimension 2"),
    ("get-too-many-mask", lambda: x34[0, E.ones(4, 1, dtype=E.bool)], IndexError, "too many indices"),
    ("get-broadcast", lambda: x34[[0, 1], [0, 1, 2]], IndexError,
     "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ("get-zero-dim", lambda: E.tensor(5.0)[[0]], IndexError, "too many indices for tensor of dimension 0"),
    ("set-shape", lambda: x34.clone().__setitem__([0, 1], E.ones(3)), RuntimeError,
     "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 4]"),
    ("set-dtype", lambda: x34.clone().__setitem__([0], E.tensor([7])), RuntimeError,
     "Index put requires the source and destination dtypes match, got Float for the destination and Long"),
    ("set-oob", lambda: x34.clone().__setitem__([0, 5], 1.0), IndexError, "index 5 is out of bounds"),
    ("set-overflow", lambda: E.zeros(3, dtype=E.int8).__setitem__([0], 300), RuntimeError,
     "cannot be converted to type int8_t without overflow"),
    ("put-values-type", lambda: x34.clone().index_put_((E.tensor([0]),), 1.0), TypeError, "must be Tensor"),
    ("put-none", lambda: x34.clone().index_put_((None, E.tensor([0])), E.tensor(1.0)), TypeError,
     "expected Tensor as element 0"),
    ("put-acc-oob", lambda: x34.clone().index_put_((E.tensor([3]),), E.tensor(1.0), True), IndexError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("select-oob", lambda: E.index_select(x34, 0, E.tensor([3])), IndexError, "index out of range in self"),
    ("select-neg", lambda: E.index_select(x34, 1, E.tensor([-1])), IndexError, "index out of range in self"),
    ("select-dtype", lambda: E.index_select(x34, 0, E.tensor([0], dtype=E.int16)), RuntimeError,
     "index_select(): Expected dtype int32 or int64 for index"),
    ("select-2d", lambda: E.index_select(x34, 0, E.tensor([[0]])), IndexError,
     "index_select(): Index is supposed to be a vector"),
    ("select-dim", lambda: E.index_select(x34, 2, E.tensor([0])), IndexError, "Dimension out of range"),
    ("select-out-dtype", lambda: E.index_select(x34, 0, E.tensor([0]), out=E.empty(0, dtype=E.float64)),
     RuntimeError, "index_select(): self and result must have the same scalar type"),
    ("gather-oob", lambda: E.gather(x34, 1, E.tensor([[4]])), RuntimeError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    ("gather-neg", lambda: E.gather(x34, 1, E.tensor([[-1]])), RuntimeError,
     "index -1 is out of bounds for dimension 1 with size 4"),
    ("gather-ndim", lambda: E.gather(x34, 1, E.tensor([0])), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    ("gather-size", lambda: E.gather(x34, 1, E.zeros(4, 1, dtype=E.int64)), RuntimeError,
     "Size does not match at dimension 0 expected index [4, 1] to be no larger than self [3, 4] apart from dimension 1"),
    ("gather-dtype", lambda: E.gather(x34, 1, i22.short()), RuntimeError,
     "gather(): Expected dtype int32/int64 for index"),
    ("gather-out", lambda: E.gather(x34, 0, E.tensor([[1]]), out=E.empty(0, dtype=E.float64)),
     RuntimeError, "Expected out tensor to have dtype float, but got double instead"),
    ("scatter-oob", lambda: E.scatter(x34, 1, E.tensor([[5]]), 1.0), RuntimeError,
     "index 5 is out of bounds for dimension 1 with size 4"),
    ("scatter-neg", lambda: E.scatter_add(x34, 0, E.tensor([[-1]]), E.ones(1, 1)), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    ("scatter-src-dtype", lambda: E.scatter(x34, 1, i22, E.ones(2, 2, dtype=E.float64)), RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    ("scatter-size", lambda: E.scatter(x34, 1, i22, E.ones(1, 1)), RuntimeError,
     "Expected index [2, 2] to be no larger than self [3, 4] apart from dimension 1 and to be no larger size than src [1, 1]"),
    ("scatter-reduce-name", lambda: E.scatter(x34, 1, i22, 1.0, reduce="mean"), RuntimeError,
     "reduce argument must be either add or multiply."),
    ("scatter-dtype", lambda: E.scatter(x34, 1, i22.short(), 1.0), RuntimeError,
     "scatter(): Expected dtype int32/int64 for index"),
    ("scatter-add-scalar", lambda: E.scatter_add(x34, 1, i22, 1.0), TypeError, "must be Tensor"),
    ("scatter-reduce-bad", lambda: E.scatter_reduce(x34, 1, i22, E.ones(2, 2), "foo"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    ("index-add-oob", lambda: E.index_add(x34, 0, E.tensor([0, 4]), E.ones(2, 4)), IndexError,
     "index_add_(): index 4 is out of bounds for dimension 0 with size 3"),
    ("index-add-count", lambda: E.index_add(x34, 0, E.tensor([0, 0]), E.ones(3, 4)), RuntimeError,
     "index_add_(): Number of indices (2) should be equal to source.size(dim): (3), for dim: 0"),
    ("index-add-shape", lambda: E.index_add(x34, 0, E.tensor([0, 0]), E.ones(2, 3)), RuntimeError,
     "source tensor shape must match self tensor shape, excluding the specified dimension"),
    ("index-add-dtype", lambda: E.index_add(x34, 0, E.tensor([0]), E.ones(1, 4, dtype=E.float64)),
     RuntimeError, "index_add_(): self (Float) and source (Double) must have the same scalar type"),
    ("index-add-idx-dtype", lambda: E.index_add(x34, 0, E.tensor([0]).short(), E.ones(1, 4)), RuntimeError,
     "index_add_(): Expected dtype int32/int64 for index but got: Short"),
    ("index-copy-oob", lambda: E.index_copy(x34, 0, E.tensor([0, 4]), E.ones(2, 4)), IndexError,
     "index_copy_(): index 4 is out of bounds for dimension 0 with size 3"),
    ("index-copy-int32", lambda: E.index_copy(x34, 0, E.tensor([0]).int(), E.ones(1, 4)), RuntimeError,
     "index_copy_(): Expected a long tensor for index, but got Int"),
    ("index-copy-dtype", lambda: E.index_copy(x34, 0, E.tensor([0]), E.ones(1, 4).double()), RuntimeError,
     "index_copy_(): self and source expected to have the same dtype"),
    ("index-copy-slice", lambda: E.index_copy(x34, 0, E.tensor([0, 1]), E.ones(2, 3)), RuntimeError,
     "index_copy_(): Source/destination tensor must have same slice shapes"),
    ("index-fill-oob", lambda: E.index_fill(x34, 1, E.tensor([0, 5]), 1.5), IndexError,
     "index 5 is out of bounds for dimension 1 with size 4"),
    ("index-fill-int32", lambda: E.index_fill(x34, 1, E.tensor([0]).int(), 1.5), IndexError,
     "index_fill_(): Expected dtype int64 for index."),
    ("index-fill-value", lambda: E.index_fill(x34, 1, E.tensor([0]), E.tensor([1.0])), RuntimeError,
     "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
    ("masked-fill-dtype", lambda: E.masked_fill(x34, (x34 > 5).byte(), 1.5), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"),
    ("masked-fill-shape", lambda: x34[0].clone().masked_fill_(x34 > 5, 1), RuntimeError,
     "doesn't match the broadcast shape [3, 4]"),
    ("masked-fill-value", lambda: E.masked_fill(x34, x34 > 5, E.tensor([2.0])), RuntimeError,
     "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
    ("masked-fill-broadcast", lambda: E.masked_fill(x34, E.ones(5, dtype=E.bool), 1), RuntimeError,
     "must match the size of tensor b"),
    ("masked-select-dtype", lambda: E.masked_select(x34, (x34 > 5).float()), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    ("masked-scatter-few", lambda: E.masked_scatter(x34, x34 > 5, E.arange(3.0)), RuntimeError,
     "Number of elements of source < number of ones in mask"),
    ("masked-scatter-dtype", lambda: E.masked_scatter(x34, x34 > 5, E.arange(100)), RuntimeError,
     "masked_scatter: expected self and source to have same dtypes but gotFloat and Long"),
    ("masked-scatter-mask", lambda: E.masked_scatter(x34, (x34 > 5).byte(), E.arange(100.0)), RuntimeError,
     "masked_scatter_ only supports boolean masks, but got mask with dtype Byte"),
    ("take-oob", lambda: E.take(x34, E.tensor([12])), IndexError,
     "out of range: tried to access index 12 on a tensor of 12 elements."),
    ("take-neg-oob", lambda: E.take(x34, E.tensor([-13])), IndexError, "tried to access index -13"),
    ("take-dtype", lambda: E.take(x34, E.tensor([1]).int()), RuntimeError,
     "take(): Expected a long tensor for index, but got Int"),
    ("take-empty", lambda: E.take(E.ones(0), E.tensor([0])), IndexError,
     "take(): tried to take from an empty tensor"),
    ("tad-dtype", lambda: E.take_along_dim(x34, E.tensor([[0]]).int(), dim=1), RuntimeError,
     "torch.take_along_dim(): dtype of indices should be Long but got Int"),
    ("tad-ndim", lambda: E.take_along_dim(x34, E.tensor([0]), dim=1), RuntimeError,
     "input and indices should have the same number of dimensions"),
    ("tad-oob", lambda: E.take_along_dim(x34, E.tensor([[4]]), dim=1), RuntimeError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    ("nonzero-out", lambda: E.nonzero(x34, out=E.empty(0, dtype=E.int32)), RuntimeError,
     "nonzero: Expected out tensor to have scalar type Long"),
]


@pytest.mark.parametrize("fn,exc,message", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors(fn, exc, message):
    with pytest.raises(exc) as info:
        fn()
    assert message in str(info.value), str(info.value)


def test_failed_index_ops_leave_the_tensor_unchanged():
    t = E.arange(6.0).reshape(2, 3)
    bad = [
        lambda: t.__setitem__(([0, 1], [0, 3]), 9.0),
        lambda: t.index_put_((E.tensor([0, 2]),), E.tensor(1.0), accumulate=True),
        lambda: t.scatter_(1, E.tensor([[0, 3]]), 9.0),
        lambda: t.scatter_add_(1, E.tensor([[0, 5]]), E.ones(1, 2)),
        lambda: t.index_add_(0, E.tensor([0, 2]), E.ones(2, 3)),
        lambda: t.index_copy_(1, E.tensor([1, 7]), E.ones(2, 2)),
        lambda: t.index_fill_(1, E.tensor([1, 7]), 9.0),
    ]
    for f in bad:
        with pytest.raises((IndexError, RuntimeError)):
            f()
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_inplace_on_an_expanded_tensor_is_refused():
    t = E.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="more than one element"):
        t.index_put_((E.tensor([0]),), E.tensor(1.0))


# ---------------------------------------------------------------------------------------------
# the autograd hook: differentiable ops hand a canonical call to it, which reruns the same op

@pytest.fixture
def recording_hook():
    calls = []
    old = E._C._get_autograd_hook()

    def hook(name, fn, args, kwargs):
        calls.append(name)
        prev = E.is_grad_enabled()
        E._C._set_grad_enabled(False)
        try:
            return fn(*args, **kwargs)
        finally:
            E._C._set_grad_enabled(prev)

    E._C._set_autograd_hook(hook)
    try:
        yield calls
    finally:
        E._C._set_autograd_hook(old)


IDX = E.tensor([[0, 2, 1], [1, 0, 0]])
HOOKED = [
    ("_getitem", lambda x: x[[1, 0], 1:]),
    ("_getitem", lambda x: x[x > 2]),
    ("index_select", lambda x: E.index_select(x, 1, E.tensor([2, 0]))),
    ("gather", lambda x: x.gather(1, IDX, sparse_grad=False)),
    ("scatter", lambda x: E.scatter(x, 1, IDX[:, :1], E.ones(2, 1))),
    ("scatter", lambda x: x.scatter(1, IDX[:, :1], 2.0, reduce="add")),
    ("scatter_", lambda x: x.scatter_(1, IDX[:, :1], 2.0)),
    ("scatter_add", lambda x: E.scatter_add(x, 1, IDX, E.ones(2, 3))),
    ("scatter_add_", lambda x: x.scatter_add_(1, IDX, E.ones(2, 3))),
    ("scatter_reduce", lambda x: x.scatter_reduce(1, IDX, E.ones(2, 3), "amax", include_self=False)),
    ("scatter_reduce_", lambda x: x.scatter_reduce_(1, IDX, E.ones(2, 3), "mean")),
    ("index_add", lambda x: E.index_add(x, 0, E.tensor([1, 1]), E.ones(2, 3), alpha=3)),
    ("index_add_", lambda x: x.index_add_(1, E.tensor([2]), E.ones(2, 1))),
    ("index_copy", lambda x: x.index_copy(0, E.tensor([1]), E.ones(1, 3))),
    ("index_copy_", lambda x: x.index_copy_(0, E.tensor([1]), E.ones(1, 3))),
    ("index_fill", lambda x: x.index_fill(1, E.tensor([0]), -1.0)),
    ("index_fill_", lambda x: x.index_fill_(1, E.tensor([0]), E.tensor(-1.0))),
    ("masked_fill", lambda x: E.masked_fill(x, x > 2, 0.5)),
    ("masked_fill_", lambda x: x.masked_fill_(E.tensor([True, False, True]), 0.5)),
    ("masked_select", lambda x: x.masked_select(E.tensor([True, False, True]))),
    ("masked_scatter", lambda x: x.masked_scatter(E.tensor([True, False, True]), E.arange(9.0))),
    ("masked_scatter_", lambda x: x.masked_scatter_(E.tensor([False, True, True]), E.arange(9.0))),
    ("take", lambda x: E.take(x, E.tensor([[5, -6]]))),
    ("take_along_dim", lambda x: E.take_along_dim(x, IDX, dim=1)),
    ("take_along_dim", lambda x: x.take_along_dim(E.tensor([4, 1]))),
    ("index_put", lambda x: E.index_put(x, (E.tensor([1, 1]),), E.tensor(1.0), accumulate=True)),
    ("index_put_", lambda x: x.index_put_((E.tensor([0]), E.tensor([2])), E.tensor(9.0))),
]


@pytest.mark.parametrize("name,fn", HOOKED, ids=[f"{i}-{c[0]}" for i, c in enumerate(HOOKED)])
def test_differentiable_ops_call_the_hook_with_a_canonical_call(recording_hook, name, fn):
    base = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    plain = E.from_numpy(base.copy())
    want = fn(plain)
    x = E.from_numpy(base.copy()).requires_grad_(True)
    got = fn(x)
    assert recording_hook and recording_hook[-1] == name, recording_hook
    np.testing.assert_array_equal(got.detach().numpy(), want.numpy())
    np.testing.assert_array_equal(x.detach().numpy(), plain.numpy())


def test_setitem_calls_the_hook(recording_hook):
    x = E.zeros(3).requires_grad_(True)
    x[[0, 2]] = 1.0
    assert recording_hook == ["_setitem"] and x.detach().tolist() == [1.0, 0.0, 1.0]
    y = E.zeros(3)
    y[1:] = E.ones(2).requires_grad_(True)
    assert recording_hook[-1] == "_setitem" and y.tolist() == [0.0, 1.0, 1.0]
    with E.no_grad():
        x[[1]] = 5.0
    assert len(recording_hook) == 2 and x.detach().tolist() == [1.0, 5.0, 1.0]


# ---------------------------------------------------------------------------------------------
# property tests: mixed basic / advanced expressions against NumPy

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SETTINGS = settings(max_examples=int(os.environ.get("EMBER_HYPOTHESIS_EXAMPLES", "100")),
                    deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def index_expressions(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    adv_shape = tuple(draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    ellipsis = draw(st.sampled_from(["none", "start", "end"]))
    dim = draw(st.integers(0, ndim)) if ellipsis == "start" else 0  # dims a leading ... covers
    items = []
    n_items = draw(st.integers(0, ndim + 2))
    for _ in range(n_items):
        kind = draw(st.sampled_from(["int", "slice", "none", "array", "mask"]))
        if kind == "none":
            items.append(None)
            continue
        if dim >= ndim:
            break
        size = shape[dim]
        if kind == "int" and size > 0:
            items.append(draw(st.integers(-size, size - 1)))
            dim += 1
        elif kind == "slice" or (kind == "int" and size == 0):
            start = draw(st.one_of(st.none(), st.integers(-5, 5)))
            stop = draw(st.one_of(st.none(), st.integers(-5, 5)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))
            items.append(slice(start, stop, step))
            dim += 1
        elif kind == "array":
            n = int(np.prod(adv_shape))
            if size == 0 and n > 0:
                items.append(slice(None))
                dim += 1
                continue
            vals = draw(st.lists(st.integers(-size, size - 1), min_size=n, max_size=n)) if n else []
            items.append(np.array(vals, dtype=np.int64).reshape(adv_shape))
            dim += 1
        else:  # a mask over one or two dims
            k = min(draw(st.integers(1, 2)), ndim - dim)
            mshape = shape[dim:dim + k]
            bits = draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)), max_size=int(np.prod(mshape))))
            items.append(np.array(bits, dtype=bool).reshape(mshape))
            dim += k
    if ellipsis == "start":
        items = [Ellipsis] + items + [slice(None)] * (ndim - dim)
    elif ellipsis == "end":
        items.append(Ellipsis)
    return shape, tuple(items)


def _expected_or_error(arr, idx):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ref_get(arr, idx), None
    except IndexError as e:  # broadcast failures between the arrays / masks
        return None, e


@SETTINGS
@given(index_expressions(), st.sampled_from(["contiguous", "transposed", "strided"]))
def test_property_getitem_matches_numpy(case, layout):
    shape, idx = case
    arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t = make_tensor(arr, "float32", layout) if len(shape) > 0 else T(arr)
    ref = to_numpy(t)
    want, err = _expected_or_error(ref, idx)
    if err is not None:
        with pytest.raises(IndexError):
            t[to_ember_index(idx)]
        return
    got = t[to_ember_index(idx)]
    assert tuple(got.shape) == want.shape, (idx, tuple(got.shape), want.shape)
    np.testing.assert_array_equal(to_numpy(got), want)


@SETTINGS
@given(index_expressions())
def test_property_setitem_matches_numpy(case):
    shape, idx = case
    arr = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    want, err = _expected_or_error(arr, idx)
    if err is not None:
        return
    values = np.asarray(-1.0 - np.arange(want.size, dtype=np.float64).reshape(want.shape))
    ref = arr.copy()
    view, second = torch_ref(ref, idx)
    if second is None:
        view[...] = values
    else:
        view[second] = values
    t = T(arr)
    t[to_ember_index(idx)] = E.from_numpy(values)
    np.testing.assert_array_equal(t.numpy(), ref)  # duplicates: the last write wins on both sides


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 12), st.integers(0, 2**31))
def test_property_index_put_accumulate(rows, cols, n, seed):
    rng = np.random.default_rng(seed)
    idx = rng.integers(-rows, rows, size=n)
    vals = rng.integers(-5, 5, size=(n, cols)).astype(np.float64)
    ref = np.zeros((rows, cols))
    np.add.at(ref, idx, vals)
    t = E.zeros(rows, cols, dtype=E.float64)
    t.index_put_((E.from_numpy(idx),), E.from_numpy(vals), accumulate=True)
    np.testing.assert_array_equal(t.numpy(), ref)


# ---------------------------------------------------------------------------------------------
# PyTorch parity (optional)

def test_torch_parity_of_index_expressions_and_messages():
    torch = pytest.importorskip("torch")
    x = torch.arange(2 * 3 * 4 * 5.0).reshape(2, 3, 4, 5)
    e = E.from_numpy(x.numpy())
    exprs = [
        lambda m, t: t[:, 0, :, [0, 1]],
        lambda m, t: t[[1, 0], 1:, [0, 2]],
        lambda m, t: t[0, ..., 1, ...],
        lambda m, t: t[m.tensor([[0, 1]]), 0],
        lambda m, t: t[True, None, [1]],
        lambda m, t: t[t > 100],
        lambda m, t: m.take_along_dim(t, m.tensor([[[[-1]]]]), dim=3),
        lambda m, t: m.scatter_reduce(t, 1, m.zeros(2, 3, 4, 5, dtype=m.int64), t, "mean", include_self=False),
    ]
    for f in exprs:
        np.testing.assert_array_equal(f(E, e).numpy(), f(torch, x).numpy())
    for f in [lambda m, t: t[:, [9]], lambda m, t: t[[0], [0], [9]], lambda m, t: t[[0, 1], [0, 1, 2]]]:
        with pytest.raises(IndexError) as a:
            f(E, e)
        with pytest.raises(IndexError) as b:
            f(torch, x)
        assert str(a.value) == str(b.value)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_torch_parity_of_the_ops_across_dtypes(dtype):
    torch = pytest.importorskip("torch")
    arr = sample((4, 5), dtype)
    src = sample((4, 5), dtype, seed=1)
    e, t = T(arr, dtype), torch.from_numpy(to_numpy(T(arr, dtype)))
    es, ts = T(src, dtype), torch.from_numpy(to_numpy(T(src, dtype)))
    if dtype == "bfloat16":
        t, ts = t.bfloat16(), ts.bfloat16()
    idx = np.array([[3, 0, 1, 1, 2], [0, 0, 3, 2, 1]])
    ops = [
        lambda m, x, s, i: x[i(idx)],
        lambda m, x, s, i: x[:, i([4, -1])],
        lambda m, x, s, i: m.gather(x, 0, i(idx)),
        lambda m, x, s, i: m.index_select(x, 1, i([0, 4, 4])),
        lambda m, x, s, i: m.scatter(x, 0, i(idx), s),
        lambda m, x, s, i: m.scatter_add(x, 0, i(idx), s),
        lambda m, x, s, i: m.index_add(x, 0, i([3, 3]), s[:2]),
        lambda m, x, s, i: m.index_copy(x, 1, i([2, 0]), s[:, :2]),
        lambda m, x, s, i: m.index_fill(x, 1, i([1, -1]), 1),
        lambda m, x, s, i: m.masked_fill(x, s > s.min(), 1),
        lambda m, x, s, i: m.masked_select(x, s != s.max()),
        lambda m, x, s, i: m.masked_scatter(x, s == s.max(), s),
        lambda m, x, s, i: m.take(x, i([[19, -20], [7, 7]])),
        lambda m, x, s, i: m.take_along_dim(x, i(idx), dim=0),
        lambda m, x, s, i: m.nonzero(x),
        lambda m, x, s, i: x.index_put((i([0, 0, 1]),), s[0, 0], accumulate=True),
    ]
    ops += [lambda m, x, s, i, r=r, inc=inc: m.scatter_reduce(x, 0, i(idx), s, r, include_self=inc)
            for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)
            if not (dtype == "bool" and r == "mean")]
    for k, op in enumerate(ops):
        got = op(E, e, es, lambda v: E.tensor(np.asarray(v)))
        want = op(torch, t, ts, lambda v: torch.tensor(np.asarray(v)))
        if want.dtype == torch.bfloat16:
            want = want.float()
        assert tuple(got.shape) == tuple(want.shape), k
        np.testing.assert_array_equal(to_numpy(got), want.numpy(), err_msg=str(k))
