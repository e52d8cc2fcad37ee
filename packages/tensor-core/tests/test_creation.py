"""Creation functions: tensor, as_tensor, empty/zeros/ones/full(_like), arange, linspace,
logspace, eye, empty_strided, scalar_tensor: shapes, dtypes (inferred, given, and following the
default dtype), values against NumPy, and keyword forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.testing.opdb import ALL_DTYPES, FLOAT_DTYPES, edtype, is_float, round_to, to_numpy

SHAPES = [(), (0,), (3,), (2, 3), (2, 0, 4), (1, 1, 1)]


def check(t, expected, dtype: str, rtol: float = 0.0, atol: float = 0.0):
    assert isinstance(t, ember.Tensor)
    assert t.dtype.name == dtype, (t.dtype, dtype)
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape, (tuple(t.shape), expected.shape)
    got = to_numpy(t)
    if is_float(dtype):
        np.testing.assert_allclose(got.astype(np.float64), round_to(expected, dtype), rtol=rtol,
                                   atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


# ---------------------------------------------------------------------------------------------
# empty / zeros / ones / full


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_zeros_ones_full(shape, dtype):
    dt = edtype(dtype)
    check(ember.zeros(shape, dtype=dt), np.zeros(shape), dtype)
    check(ember.ones(shape, dtype=dt), np.ones(shape), dtype)
    check(ember.full(shape, 1 if dtype == "bool" else 7, dtype=dt),
          np.full(shape, 1 if dtype == "bool" else 7), dtype)
    e = ember.empty(shape, dtype=dt)
    assert tuple(e.shape) == shape and e.dtype == dt and e.is_contiguous()


@pytest.mark.parametrize("make", [ember.zeros, ember.ones, ember.empty], ids=lambda f: f.__name__)
def test_shape_forms(make):
    assert tuple(make(2, 3).shape) == (2, 3)
    assert tuple(make((2, 3)).shape) == (2, 3)
    assert tuple(make([2, 3]).shape) == (2, 3)
    assert tuple(make(size=(2, 3)).shape) == (2, 3)
    assert tuple(make(ember.Size([2, 3])).shape) == (2, 3)
    assert tuple(make(0).shape) == (0,)
    assert tuple(make(()).shape) == ()
    assert tuple(make(np.int64(4)).shape) == (4,)
    assert make(2).dtype == ember.get_default_dtype()


def test_zero_size_fill_keeps_its_shape():
    for shape in [(0,), (0, 3), (3, 0)]:
        for t in (ember.zeros(shape), ember.ones(shape), ember.full(shape, 2.0)):
            assert tuple(t.shape) == shape and t.numel() == 0 and t.tolist() == np.zeros(
                shape).tolist()


@pytest.mark.parametrize("value,dtype", [(3, "int64"), (2.5, "float32"), (True, "bool"),
                                         (np.float64(1.5), "float32"), (-0.0, "float32")])
def test_full_infers_dtype_from_the_value(value, dtype):
    t = ember.full((2, 2), value)
    assert t.dtype.name == dtype
    assert t.tolist() == [[value] * 2] * 2


def test_full_value_conversion():
    check(ember.full((3,), 2.7, dtype=ember.int32), [2, 2, 2], "int32")
    check(ember.full((3,), -2.7, dtype=ember.int64), [-2, -2, -2], "int64")
    check(ember.full((2,), 0.1, dtype=ember.float16), [0.1, 0.1], "float16")
    check(ember.full((2,), 0.1, dtype=ember.bfloat16), [0.1, 0.1], "bfloat16")
    check(ember.full((2,), float("inf")), [np.inf, np.inf], "float32")
    assert math.isnan(ember.full((1,), float("nan")).item())
    check(ember.full((2,), 5, dtype=ember.bool), [True, True], "bool")


def test_factories_follow_the_default_dtype(default_dtype):
    for name in FLOAT_DTYPES:
        default_dtype(edtype(name))
        for t in (ember.zeros(2), ember.ones(2), ember.empty(2), ember.full((2,), 1.5),
                  ember.tensor([1.5]), ember.tensor(2.5), ember.arange(0.0, 1.0, 0.5),
                  ember.linspace(0, 1, 3), ember.logspace(0, 1, 3), ember.eye(2),
                  ember.empty_strided((2,), (1,)), ember.scalar_tensor(1)):
            assert t.dtype.name == name, (name, t)
        # integer data and integer arange keep int64
        assert ember.tensor([1, 2]).dtype == ember.int64
        assert ember.arange(3).dtype == ember.int64
        assert ember.full((2,), 3).dtype == ember.int64


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_like_functions(dtype):
    base = ember.ones(2, 3, dtype=edtype(dtype))
    for like, value in ((ember.zeros_like, 0), (ember.ones_like, 1)):
        r = like(base)
        check(r, np.full((2, 3), value), dtype)
        assert not r._shares_storage(base)
    check(ember.full_like(base, 1), np.ones((2, 3)), dtype)
    e = ember.empty_like(base)
    assert tuple(e.shape) == (2, 3) and e.dtype == base.dtype
    # dtype= overrides
    check(ember.zeros_like(base, dtype=ember.float64), np.zeros((2, 3)), "float64")
    check(ember.full_like(base, 2.5, dtype=ember.float16), np.full((2, 3), 2.5), "float16")


def test_like_functions_keep_a_dense_permuted_layout():
    t = ember.ones(2, 3, 4).permute(2, 0, 1)
    for like in (ember.empty_like, ember.zeros_like, ember.ones_like):
        r = like(t)
        assert r.stride() == t.stride() and tuple(r.shape) == tuple(t.shape)
    # a sliced (non-dense) input gives a contiguous result
    s = ember.ones(4, 6)[:, ::2]
    assert ember.zeros_like(s).is_contiguous()


def test_full_like_converts_the_value():
    base = ember.zeros(3, dtype=ember.int32)
    check(ember.full_like(base, 7.9), [7, 7, 7], "int32")
    with pytest.raises(TypeError):
        ember.full_like(base)


def test_factory_out_argument():
    out = ember.empty(2, 3)
    assert ember.zeros(2, 3, out=out) is out
    check(out, np.zeros((2, 3)), "float32")
    out = ember.empty(0, dtype=ember.int64)
    ember.arange(5, out=out)
    check(out, np.arange(5), "int64")


# ---------------------------------------------------------------------------------------------
# tensor / as_tensor / scalar_tensor


@pytest.mark.parametrize(
    "data,dtype",
    [
        (3, "int64"),
        (3.5, "float32"),
        (True, "bool"),
        ([1, 2, 3], "int64"),
        ([1.0, 2, 3], "float32"),
        ([True, False], "bool"),
        ([True, 2], "int64"),
        ([1, 2.5, True], "float32"),
        ([[1, 2], [3, 4]], "int64"),
        (((1, 2), (3, 4)), "int64"),
        ([[[1.5]]], "float32"),
        ([], "float32"),
        ([[], []], "float32"),
        ([np.float32(1.5), np.int64(2)], "float32"),
        ([np.int32(2), np.int8(1)], "int64"),
        (np.float64(2.0), "float32"),
        ([float("inf"), float("nan"), -0.0], "float32"),
    ],
    ids=repr,
)
def test_tensor_infers_shape_and_dtype(data, dtype):
    t = ember.tensor(data)
    expected = np.array(data, dtype=np.float64 if is_float(dtype) else None)
    check(t, expected, dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_tensor_with_dtype_converts(dtype):
    data = [[0, 1, 2], [3, 100, 127]]
    t = ember.tensor(data, dtype=edtype(dtype))
    check(t, np.array(data).astype(bool if dtype == "bool" else np.float64), dtype)
    if dtype == "uint8":
        # PyTorch refuses a negative float for uint8 (while a negative int wraps).
        with pytest.raises(RuntimeError, match="without overflow"):
            ember.tensor([-1.7], dtype=edtype(dtype))
        check(ember.tensor([-1], dtype=edtype(dtype)), [255], dtype)
        check(ember.tensor([0.0, 1.7, 2.5], dtype=edtype(dtype)), [0, 1, 2], dtype)
        return
    f = ember.tensor([0.0, 1.7, -1.7, 2.5], dtype=edtype(dtype))
    if dtype == "bool":
        check(f, [False, True, True, True], dtype)
    elif is_float(dtype):
        check(f, [0.0, 1.7, -1.7, 2.5], dtype)
    else:
        check(f, [0, 1, -1, 2], dtype)  # toward zero


def test_tensor_rounds_to_the_half_types():
    vals = [0.1, 1 / 3, 65504.0, 65520.0, 1e-8, -2.5e-5]
    check(ember.tensor(vals, dtype=ember.float16), vals, "float16")
    bvals = [0.1, 1 / 3, 3.0e38, 1.00390625, 1e-40]
    check(ember.tensor(bvals, dtype=ember.bfloat16), bvals, "bfloat16")
    assert ember.tensor([65520.0], dtype=ember.float16).tolist() == [math.inf]


def test_tensor_of_tensors():
    t = ember.tensor([ember.tensor(1.0), ember.tensor(2.0)])
    check(t, [1.0, 2.0], "float32")
    t = ember.tensor([ember.tensor([1, 2]), ember.tensor([3, 4])])
    check(t, [[1, 2], [3, 4]], "int64")
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):  # as in torch
        t = ember.tensor(ember.tensor([1, 2], dtype=ember.int8))
    check(t, [1, 2], "int8")


def test_tensor_copies_its_data():
    src = ember.tensor([1.0, 2.0])
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        t = ember.tensor(src)
    t.add_(1)
    assert src.tolist() == [1.0, 2.0]
    lst = [1, 2]
    t = ember.tensor(lst)
    lst[0] = 9
    assert t.tolist() == [1, 2]


def test_as_tensor():
    t = ember.tensor([1.0, 2.0])
    assert ember.as_tensor(t) is t
    assert ember.as_tensor(t, dtype=ember.float32) is t
    c = ember.as_tensor(t, dtype=ember.int32)
    check(c, [1, 2], "int32")
    check(ember.as_tensor([1, 2]), [1, 2], "int64")
    check(ember.as_tensor([[1.5]], dtype=ember.float64), [[1.5]], "float64")
    check(ember.as_tensor(3), 3, "int64")


@pytest.mark.parametrize("value,dtype,expected", [
    (3, None, "float32"), (2.5, None, "float32"), (True, None, "float32"),
    (3.7, "int32", "int32"), (1, "bool", "bool"), (-1, "int8", "int8"),
])  # fmt: skip
def test_scalar_tensor(value, dtype, expected):
    t = ember.scalar_tensor(value, **({"dtype": edtype(dtype)} if dtype else {}))
    assert t.dim() == 0
    want = value if is_float(expected) else (int(value) if expected != "bool" else bool(value))
    check(t, want, expected)


# ---------------------------------------------------------------------------------------------
# ranges


@pytest.mark.parametrize(
    "args,kwargs",
    [
        ((5,), {}),
        ((0,), {}),
        ((2, 7), {}),
        ((2, 7, 2), {}),
        ((7, 2, -2), {}),
        ((-3, 3), {}),
        ((0, 1, 0.1), {}),
        ((1, 2.5, 0.5), {}),
        ((1.5,), {}),
        ((0.0, -1.0, -0.25), {}),
        ((5,), {"dtype": "float64"}),
        ((0, 10, 3), {"dtype": "float16"}),
        ((0, 10, 3), {"dtype": "int8"}),
        ((0.0, 5.0, 1.0), {"dtype": "int32"}),
        ((2**40, 2**40 + 3), {}),
    ],
    ids=repr,
)
def test_arange(args, kwargs):
    dtype = kwargs.get("dtype")
    t = ember.arange(*args, **({"dtype": edtype(dtype)} if dtype else {}))
    exp = np.arange(*args, dtype=np.float64 if any(isinstance(a, float) for a in args) else None)
    want = dtype or ("float32" if exp.dtype.kind == "f" else "int64")
    check(t, exp, want, rtol=1e-6)


def test_arange_keyword_forms():
    check(ember.arange(end=3), [0, 1, 2], "int64")
    check(ember.arange(start=1, end=4), [1, 2, 3], "int64")
    check(ember.arange(1, 10, step=4), [1, 5, 9], "int64")


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8", "int64"])
def test_arange_of_small_integers_with_fractional_numbers(dtype):
    # the count from the numbers as given, the values from them truncated to integers, as
    # torch's (NumPy's too where its first two values differ by the truncated step); int64
    # truncates the bounds first (its own count) and refuses a step that truncates to 0
    dt = getattr(ember, dtype)
    assert ember.arange(0, 5, 1.5, dtype=dt).tolist() == (
        [0, 1, 2, 3, 4] if dtype == "int64" else [0, 1, 2, 3])
    assert ember.arange(10, 0, -1.5, dtype=dt).tolist()[:3] == [10, 9, 8]
    assert ember.arange(0.5, 7.9, 2.5, dtype=dt).tolist() == (
        [0, 2, 4, 6] if dtype == "int64" else [0, 2, 4])
    if dtype == "int64":
        with pytest.raises(ValueError, match="step must be nonzero"):
            ember.arange(-3, 3, 0.7, dtype=dt)
    else:  # (a step that truncates to 0: the start, as many times as the count)
        assert ember.arange(1, 3, 0.7, dtype=dt).tolist() == [1, 1, 1]
    if dtype == "uint8":  # (a negative start wraps, as any int64 value converted)
        assert ember.arange(-2.5, 1, 1, dtype=dt).tolist() == [254, 255, 0, 1]


def test_arange_length_is_the_ceiling():
    # (end - start) / step = 3.0000000000000004 in double: four elements, as NumPy and PyTorch
    assert ember.arange(0, 0.30000000000000004, 0.1, dtype=ember.float64).numel() == 4
    assert ember.arange(1, 2, 0.3).numel() == np.arange(1, 2, 0.3).size


@pytest.mark.parametrize(
    "start,end,steps",
    [(0, 1, 5), (2, 3, 1), (2, 3, 0), (-1, -5, 7), (0, 10, 11), (1.5, -2.5, 2), (3, 3, 4)],
)
@pytest.mark.parametrize("dtype", [None, "float64", "float16", "bfloat16", "int64"])
def test_linspace(start, end, steps, dtype):
    t = ember.linspace(start, end, steps, **({"dtype": edtype(dtype)} if dtype else {}))
    exp = np.linspace(start, end, steps)
    want = dtype or "float32"
    if want == "int64":
        exp = np.trunc(exp)
    rtol = {"float16": 1e-3, "bfloat16": 8e-3}.get(want, 1e-6)
    check(t, exp, want, rtol=rtol, atol=1e-6)
    if steps >= 1 and want != "int64":
        assert to_numpy(t)[0] == round_to(np.float64(start), want)  # the ends are exact
        assert to_numpy(t)[-1] == round_to(np.float64(end), want) or steps == 1


@pytest.mark.parametrize(
    "start,end,steps,base", [(0, 2, 3, 10.0), (0, 3, 4, 2.0), (-1, 1, 5, 10.0), (1, 1, 1, 3.0)]
)
def test_logspace(start, end, steps, base):
    check(ember.logspace(start, end, steps, base=base),
          np.logspace(start, end, steps, base=base), "float32", rtol=1e-6)
    check(ember.logspace(start, end, steps, base, dtype=ember.float64),
          np.logspace(start, end, steps, base=base), "float64", rtol=1e-12)


def test_logspace_integer_dtype():
    check(ember.logspace(0, 3, 4, dtype=ember.int64), [1, 10, 100, 1000], "int64")


# ---------------------------------------------------------------------------------------------
# eye / empty_strided


@pytest.mark.parametrize("n,m", [(3, None), (2, 3), (3, 2), (0, None), (1, 4), (0, 3)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16"])
def test_eye(n, m, dtype):
    t = ember.eye(n, m, dtype=edtype(dtype)) if m is not None else ember.eye(n, dtype=edtype(dtype))
    check(t, np.eye(n, m), dtype)


@pytest.mark.parametrize("size,stride", [((2, 3), (3, 1)), ((2, 3), (1, 2)), ((2, 3), (0, 1)),
                                         ((2, 0), (1, 2)), ((), ()), ((4,), (2,))])
def test_empty_strided(size, stride):
    t = ember.empty_strided(size, stride)
    assert tuple(t.shape) == size and t.stride() == stride
    assert t.dtype == ember.float32
    t8 = ember.empty_strided(size, stride, dtype=ember.int8)
    assert t8.dtype == ember.int8 and t8.stride() == stride
    if 0 not in size and size:
        # the storage is exactly big enough for the furthest element
        extent = 1 + sum((s - 1) * st for s, st in zip(size, stride))
        assert t._storage_nbytes() == extent * 4


def test_empty_strided_is_writable():
    t = ember.empty_strided((2, 3), (1, 2))
    t.copy_(ember.tensor([[1.0, 2, 3], [4, 5, 6]]))
    assert t.tolist() == [[1.0, 2, 3], [4, 5, 6]]
    assert not t.is_contiguous()


# ---------------------------------------------------------------------------------------------
# set_default_dtype


def test_set_default_dtype(default_dtype):
    assert ember.get_default_dtype() == ember.float32
    for name in FLOAT_DTYPES:
        default_dtype(edtype(name))
        assert ember.get_default_dtype() == edtype(name)
        assert ember.tensor([1.0]).dtype == edtype(name)
        assert (ember.tensor([1]) * 0.5).dtype == edtype(name)
    for bad in ("int64", "int32", "bool", "uint8"):
        with pytest.raises(TypeError, match="only floating-point types are supported"):
            ember.set_default_dtype(edtype(bad))
    assert ember.get_default_dtype() == edtype(FLOAT_DTYPES[-1])  # unchanged by the failures


def test_default_dtype_is_restored_between_tests():
    assert ember.get_default_dtype() == ember.float32


def test_set_default_dtype_accepts_python_float(default_dtype):
    default_dtype(float)
    assert ember.get_default_dtype() == ember.float64


@pytest.mark.parametrize("n", [1, 4, 32768, 32769])  # the small-fill loop and the iterator
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "uint64", "float16",
                                   "bfloat16", "float32", "float64", "complex64"])
def test_fill_of_contiguous_and_strided_tensors_matches_numpy(n, dtype):
    value = {"bool": True, "uint64": 2**64 - 1, "complex64": 1.5 - 2j}.get(dtype, 3)
    np_dtype = np.float32 if dtype == "bfloat16" else np.dtype(dtype)
    for t in (ember.empty(n, dtype=getattr(ember, dtype)),
              ember.empty(n, 2, dtype=getattr(ember, dtype))[:, 0]):  # (a strided view)
        before = t._version
        assert t.fill_(value) is t and t._version == before + 1
        got = t.float().numpy() if dtype == "bfloat16" else t.numpy()
        np.testing.assert_array_equal(got, np.full(n, value, dtype=np_dtype))
    zeros = ember.zeros(n, dtype=getattr(ember, dtype))
    assert not (zeros.float() if dtype == "bfloat16" else zeros).numpy().astype(bool).any()
    # torch's one-element half fill rounds beyond the range to inf; more elements check it
    if dtype == "float16":
        if n == 1:
            assert ember.empty(1, dtype=ember.float16).fill_(1e6).item() == math.inf
        else:
            with pytest.raises(RuntimeError, match="without overflow"):
                ember.empty(n, dtype=ember.float16).fill_(1e6)
