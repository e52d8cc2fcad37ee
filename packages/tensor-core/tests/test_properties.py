"""Property tests (hypothesis): random shapes, strides, broadcasting and dtypes for add, mul,
where, reshape, transpose and slicing, compared with NumPy on the same data.

The examples are derandomized (the same ones every run) and limited in number so the suite stays
quick; EMBER_HYPOTHESIS_EXAMPLES=N raises the count and EMBER_HYPOTHESIS_RANDOM=1 draws fresh
examples each run, for a deeper search.
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember
from ember.testing.opdb import NP_DTYPE, edtype, result_type, to_numpy

SETTINGS = settings(max_examples=int(os.environ.get("EMBER_HYPOTHESIS_EXAMPLES", "100")),
                    deadline=None, derandomize=os.environ.get("EMBER_HYPOTHESIS_RANDOM") is None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Values small enough that no op below overflows any dtype, and exact in every dtype.
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]


@st.composite
def arrays(draw, shape, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return draw(hnp.arrays(np.bool_, shape))
    lo = 0 if dtype == "uint8" else -10
    ints = draw(hnp.arrays(np.int64, shape, elements=st.integers(lo, 10)))
    return ints.astype(np.float64) if dtype in FLOATS else ints


FLOATS = ("float16", "bfloat16", "float32", "float64")


@st.composite
def strided_tensor(draw, dtype: str, max_dims: int = 4):
    """(ember tensor, the same view in NumPy): a random base, sliced with random starts/steps and
    randomly permuted, so sizes, strides and offsets all vary."""
    base_shape = draw(hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=0, max_side=6))
    base = draw(arrays(base_shape, dtype))
    t = ember.tensor(base.tolist(), dtype=edtype(dtype)).reshape(base_shape)
    a = base
    if base.ndim:
        idx = []
        for n in base_shape:
            start = draw(st.integers(-n - 1, n + 1)) if n else 0
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            step = draw(st.integers(1, 3))
            idx.append(slice(start, stop, step))
        t, a = t[tuple(idx)], a[tuple(idx)]
        perm = draw(st.permutations(range(base.ndim)))
        t, a = t.permute(*perm), a.transpose(perm)
    return t, a


def assert_same(t: ember.Tensor, a: np.ndarray, dtype: str) -> None:
    assert t.dtype.name == dtype
    assert tuple(t.shape) == a.shape
    np.testing.assert_array_equal(to_numpy(t), a.astype(NP_DTYPE[dtype]))


@SETTINGS
@given(st.data(), st.sampled_from(DTYPES), st.sampled_from(DTYPES))
def test_add_mul_broadcasting(data, da, db):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4))
    a = data.draw(arrays(shapes.input_shapes[0], da))
    b = data.draw(arrays(shapes.input_shapes[1], db))
    ta = ember.tensor(a.tolist(), dtype=edtype(da)).reshape(a.shape)
    tb = ember.tensor(b.tolist(), dtype=edtype(db)).reshape(b.shape)
    rdt = result_type(ta, tb)
    npdt = NP_DTYPE[rdt]
    for op, ref in ((ember.add, np.add), (ember.mul, np.multiply)):
        expected = ref(a.astype(npdt), b.astype(npdt))
        assert_same(op(ta, tb), expected, rdt)
    assert tuple((ta + tb).shape) == shapes.result_shape


@SETTINGS
@given(st.data(), st.sampled_from(DTYPES))
def test_add_on_strided_views(data, dtype):
    t, a = data.draw(strided_tensor(dtype))
    # the other operand broadcasts from a suffix of the view's shape
    k = data.draw(st.integers(0, a.ndim))
    other_shape = tuple(data.draw(st.sampled_from([1, n])) for n in a.shape[a.ndim - k:])
    b = data.draw(arrays(other_shape, dtype))
    tb = ember.tensor(b.tolist(), dtype=edtype(dtype)).reshape(other_shape)
    rdt = dtype
    npdt = NP_DTYPE[rdt]
    expected = np.add(a.astype(npdt), b.astype(npdt))
    assert_same(t + tb, expected, rdt)
    assert_same(ember.mul(tb, t), np.multiply(b.astype(npdt), a.astype(npdt)), rdt)
    # in place through the view, when the result fits it
    if expected.shape == a.shape:
        t.add_(tb)
        assert_same(t, expected, dtype)


@SETTINGS
@given(st.data(), st.sampled_from(DTYPES), st.sampled_from(DTYPES))
def test_where_broadcasting(data, da, db):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=4))
    c = data.draw(hnp.arrays(np.bool_, shapes.input_shapes[0]))
    a = data.draw(arrays(shapes.input_shapes[1], da))
    b = data.draw(arrays(shapes.input_shapes[2], db))
    tc = ember.tensor(c.tolist(), dtype=ember.bool).reshape(c.shape)
    ta = ember.tensor(a.tolist(), dtype=edtype(da)).reshape(a.shape)
    tb = ember.tensor(b.tolist(), dtype=edtype(db)).reshape(b.shape)
    rdt = result_type(ta, tb)
    npdt = NP_DTYPE[rdt]
    assert_same(ember.where(tc, ta, tb), np.where(c, a.astype(npdt), b.astype(npdt)), rdt)


def _factorizations(n: int) -> st.SearchStrategy:
    """Shapes whose product is n (n > 0), 0 to 4 dims."""

    @st.composite
    def build(draw):
        dims, rest = [], n
        for _ in range(draw(st.integers(0, 3))):
            divisors = [d for d in range(1, rest + 1) if rest % d == 0]
            d = draw(st.sampled_from(divisors))
            dims.append(d)
            rest //= d
        if rest != 1 or not dims:
            dims.append(rest)
        if n == 1 and draw(st.booleans()):
            return ()
        return tuple(draw(st.permutations(dims)))

    return build()


@SETTINGS
@given(st.data(), st.sampled_from(DTYPES))
def test_reshape_and_view(data, dtype):
    t, a = data.draw(strided_tensor(dtype))
    if a.size == 0:
        new = (0,) + a.shape[1:] if a.ndim else (0,)
        new = data.draw(st.sampled_from([(0,), (-1,), new]))
    else:
        new = data.draw(_factorizations(a.size))
        if new and data.draw(st.booleans()):
            i = data.draw(st.integers(0, len(new) - 1))
            new = new[:i] + (-1,) + new[i + 1:]
    expected = a.reshape(new)
    r = t.reshape(new)
    assert_same(r, expected, dtype)
    try:
        v = t.view(new)
    except RuntimeError as e:
        assert "Use .reshape(...) instead" in str(e)
        assert not r._shares_storage(t) or a.size == 0
    else:
        assert_same(v, expected, dtype)
        assert v._shares_storage(t)
        assert r._shares_storage(t)  # reshape returns a view whenever view() can
    assert_same(ember.reshape(t, new), expected, dtype)


@SETTINGS
@given(st.data(), st.sampled_from(DTYPES))
def test_transpose_and_permute(data, dtype):
    t, a = data.draw(strided_tensor(dtype))
    if a.ndim == 0:
        assert_same(t.t(), a, dtype)
        return
    d0 = data.draw(st.integers(-a.ndim, a.ndim - 1))
    d1 = data.draw(st.integers(-a.ndim, a.ndim - 1))
    tt = t.transpose(d0, d1)
    assert_same(tt, np.swapaxes(a, d0, d1), dtype)
    assert tt._shares_storage(t)
    s = list(t.stride())
    s[d0], s[d1] = s[d1], s[d0]
    assert tt.stride() == tuple(s)
    perm = data.draw(st.permutations(range(a.ndim)))
    assert_same(t.permute(*perm), a.transpose(perm), dtype)
    assert_same(t.permute(*perm).contiguous(), a.transpose(perm), dtype)
    assert t.permute(*perm).contiguous().is_contiguous()


@st.composite
def basic_index(draw, shape):
    """A random basic index for `shape`: ints (negative too), slices with steps, None, Ellipsis."""
    items, dim = [], 0
    used_ellipsis = False
    while dim < len(shape) and draw(st.booleans()):
        n = shape[dim]
        kind = draw(st.sampled_from(["int", "slice", "slice", "none", "ellipsis"]))
        if kind == "int" and n > 0:
            items.append(draw(st.integers(-n, n - 1)))
            dim += 1
        elif kind == "none":
            items.append(None)
        elif kind == "ellipsis" and not used_ellipsis:
            items.append(Ellipsis)
            used_ellipsis = True
            dim = len(shape)  # the rest is taken by the ellipsis; later items index from the end
        else:
            start = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            step = draw(st.one_of(st.none(), st.integers(1, 4)))
            items.append(slice(start, stop, step))
            dim += 1
    return tuple(items)


@SETTINGS
@given(st.data(), st.sampled_from(DTYPES))
def test_slicing_get_and_set(data, dtype):
    t, a = data.draw(strided_tensor(dtype))
    idx = data.draw(basic_index(a.shape))
    expected = a[idx]
    got = t[idx]
    assert_same(got, expected, dtype)
    assert got._shares_storage(t)
    # writing through the index writes exactly the selected elements
    a = a.copy()
    v = data.draw(arrays(expected.shape[expected.ndim - 1:] if expected.ndim else (), dtype))
    tv = ember.tensor(v.tolist(), dtype=edtype(dtype)).reshape(v.shape)
    t[idx] = tv
    a[idx] = v
    assert_same(t, a, dtype)


@SETTINGS
@given(st.data(), st.sampled_from(DTYPES), st.sampled_from(DTYPES))
def test_conversion_round_trip(data, src, dst):
    t, a = data.draw(strided_tensor(src, max_dims=3))
    if dst == "uint8" and src in ("float16", "bfloat16", "float32", "float64"):
        t, a = t.abs(), np.abs(a)  # a negative float has no uint8 value (undefined in C)
    r = t.to(edtype(dst))
    if dst == "bool":
        expected = a.astype(bool)
    elif dst == "uint8":
        expected = a.astype(np.int64) % 256  # integers wrap
    else:
        expected = a.astype(NP_DTYPE[dst])
    assert_same(r, expected, dst)
    if src == dst:
        assert r is t
    else:
        assert not r._shares_storage(t)
