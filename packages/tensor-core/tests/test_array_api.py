"""ember.array_api: the array API standard's namespace. Its surface against the standard's list
of names, and its values against NumPy (and array-api-strict where installed), with a skip that
names the core op when a wrapper's op is not in the core yet."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

xp = ember.ones(1).__array_namespace__()

# The 2023.12 standard's functions and constants (the wide unsigned dtypes aside).
SPEC_NAMES = """
e inf nan newaxis pi bool int8 int16 int32 int64 uint8 float32 float64 complex64 complex128
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like
tril triu zeros zeros_like astype can_cast finfo iinfo isdtype result_type
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert
bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp expm1
floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal log
log1p log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply
negative not_equal positive pow real remainder round sign signbit sin sinh square sqrt subtract
tan tanh trunc take matmul matrix_transpose tensordot vecdot broadcast_arrays broadcast_to concat
expand_dims flip moveaxis permute_dims repeat reshape roll squeeze stack tile unstack argmax
argmin nonzero searchsorted where unique_all unique_counts unique_inverse unique_values argsort
sort cumulative_sum max mean min prod std sum var all any __array_namespace_info__
""".split()
LINALG_NAMES = """cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power
matrix_rank matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot
vector_norm""".split()
FFT_NAMES = """fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift
ifftshift""".split()


def needs(*ops):
    missing = [op for op in ops if not hasattr(ember, op)]
    return pytest.mark.skipif(bool(missing), reason=f"core op ember.{', ember.'.join(missing)} "
                              "is not in this build yet")


def np_of(t) -> np.ndarray:
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.asarray(t.contiguous())


def check(got, want, **tol):
    want = np.asarray(want)
    g = np_of(got)
    assert g.shape == want.shape, (g.shape, want.shape)
    if tol or g.dtype.kind == "f":
        np.testing.assert_allclose(g, want, rtol=tol.get("rtol", 1e-6), atol=tol.get("atol", 0),
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(g, want)


@pytest.fixture
def data(rng):
    return {
        "f": rng.uniform(0.1, 0.9, (3, 4)),
        "g": rng.uniform(-2, 2, (3, 4)),
        "i": rng.integers(-5, 6, (3, 4)),
        "j": rng.integers(1, 4, (3, 4)),
        "b": rng.uniform(size=(3, 4)) > 0.5,
    }


def T(a):  # noqa: N802
    return ember.tensor(a)


# ---------------------------------------------------------------------------------------------
# Surface


def test_namespace_and_version():
    x = ember.ones(2)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    assert xp.__array_api_version__ == "2023.12"
    with pytest.raises(ValueError, match="version"):
        x.__array_namespace__(api_version="1999.01")
    assert x.to_device("cpu") is x


def test_every_spec_name_is_present():
    missing = [n for n in SPEC_NAMES if not hasattr(xp, n)]
    assert missing == []
    assert [n for n in LINALG_NAMES if not hasattr(xp.linalg, n)] == []
    assert [n for n in FFT_NAMES if not hasattr(xp.fft, n)] == []


def test_names_match_array_api_strict():
    strict = pytest.importorskip("array_api_strict")
    ours = {n for n in dir(xp) if not n.startswith("_")}
    theirs = {n for n in dir(strict) if not n.startswith("_") and n[0].islower()}
    # newer-than-2023.12 names, strict's own helpers, and the dtypes ember does not have
    newer = {"diff", "isin", "nextafter", "take_along_axis", "cumulative_prod",
             "broadcast_shapes", "count_nonzero", "reciprocal"}
    extra = {"get_array_api_strict_flags", "set_array_api_strict_flags",
             "reset_array_api_strict_flags", "uint16", "uint32", "uint64"}
    assert sorted(theirs - ours - newer - extra) == []


def test_info():
    info = xp.__array_namespace_info__()
    assert info.default_device() == ember.device("cpu")
    assert info.devices() == [ember.device("cpu")]
    d = info.default_dtypes()
    assert d["real floating"] == ember.get_default_dtype() and d["indexing"] == ember.int64
    assert set(info.dtypes(kind="integral").values()) == {xp.int8, xp.int16, xp.int32, xp.int64,
                                                          xp.uint8}
    assert info.dtypes()["bool"] == xp.bool
    assert info.capabilities()["boolean indexing"] is False


def test_array_api_compat_sees_the_namespace():
    compat = pytest.importorskip("array_api_compat")
    x = ember.ones(2, 3)
    assert compat.array_namespace(x) is xp
    assert compat.size(x) == 6
    assert str(compat.device(x)) == "cpu"


# ---------------------------------------------------------------------------------------------
# Data types


def test_isdtype_result_type_can_cast():
    assert xp.isdtype(xp.int8, "signed integer") and xp.isdtype(xp.uint8, "integral")
    assert xp.isdtype(xp.float32, ("bool", "real floating")) and not xp.isdtype(xp.bool, "numeric")
    assert xp.isdtype(xp.float64, xp.float64) and not xp.isdtype(xp.float64, "complex floating")
    with pytest.raises(ValueError):
        xp.isdtype(xp.int8, "whatever")
    assert xp.result_type(xp.uint8, xp.int8) == xp.int16
    assert xp.result_type(ember.ones(1, dtype=ember.int32), xp.float32) == xp.float32
    assert xp.result_type(xp.int8, 1.5) == ember.get_default_dtype()
    assert xp.can_cast(xp.int8, xp.int32) and not xp.can_cast(xp.float64, xp.float32)
    assert xp.can_cast(ember.ones(1, dtype=ember.uint8), xp.int16)


@pytest.mark.parametrize("name", ["float16", "float32", "float64", "bfloat16"])
def test_finfo(name):
    info = xp.finfo(getattr(xp, name))
    if name != "bfloat16":
        ref = np.finfo(name)
        assert (info.bits, info.eps, info.max, info.min) == (ref.bits, ref.eps, ref.max, ref.min)
        assert info.smallest_normal == ref.smallest_normal
    else:
        assert info.bits == 16 and info.eps == 2 ** -7
    assert info.dtype == getattr(xp, name)
    with pytest.raises(TypeError):
        xp.finfo(xp.int32)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    info = xp.iinfo(ember.ones(1, dtype=getattr(xp, name)))
    ref = np.iinfo(name)
    assert (info.bits, info.max, info.min) == (ref.bits, ref.max, ref.min)
    with pytest.raises(TypeError):
        xp.iinfo(xp.float32)


def test_astype():
    x = ember.arange(3)
    y = xp.astype(x, xp.float64)
    assert y.dtype == xp.float64
    assert xp.astype(x, xp.int64, copy=False) is x
    z = xp.astype(x, xp.int64)
    assert z is not x and not z._shares_storage(x)


# ---------------------------------------------------------------------------------------------
# Creation


def test_asarray_copy_semantics():
    a = np.arange(4.0)
    t = xp.asarray(a, copy=False)
    a[0] = 9
    assert t[0].item() == 9  # shares memory
    t2 = xp.asarray(a, copy=True)
    a[1] = 7
    assert t2[1].item() == 1
    with pytest.raises(ValueError):
        xp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError):
        xp.asarray(t, dtype=xp.float32, copy=False)
    assert xp.asarray(t) is t and xp.asarray(t, copy=False) is t
    assert xp.asarray(t, copy=True) is not t
    assert xp.asarray([[1, 2]], dtype=xp.int8).dtype == xp.int8
    assert xp.asarray(True).dtype == xp.bool and xp.asarray(2).dtype == xp.int64
    with pytest.raises(ValueError, match="device"):
        xp.asarray([1], device="cuda:3")


def test_creation_functions():
    check(xp.arange(5), np.arange(5))
    check(xp.arange(1, 2, 0.25, dtype=xp.float64), np.arange(1, 2, 0.25))
    check(xp.zeros((2, 3)), np.zeros((2, 3)))
    check(xp.ones(3, dtype=xp.int8), np.ones(3, np.int8))
    check(xp.full((2, 2), 7), np.full((2, 2), 7))
    assert xp.full(2, True).dtype == xp.bool
    check(xp.full_like(xp.zeros(3), 2.5), np.full(3, 2.5))
    assert xp.empty((0, 2)).shape == (0, 2) and xp.empty_like(xp.ones(2)).shape == (2,)
    check(xp.zeros_like(xp.ones(2, dtype=xp.int32)), np.zeros(2, np.int32))
    check(xp.ones_like(xp.ones(2), dtype=xp.int16), np.ones(2, np.int16))
    for n, m, k in [(3, None, 0), (3, 4, 1), (4, 3, -2), (2, 2, 5), (3, 5, -3), (0, 0, 0)]:
        check(xp.eye(n, m, k=k), np.eye(n, m, k=k))
    check(xp.linspace(0, 1, 5, dtype=xp.float64), np.linspace(0, 1, 5))
    check(xp.linspace(0, 1, 4, endpoint=False, dtype=xp.float64),
          np.linspace(0, 1, 4, endpoint=False))
    a, b = np.arange(2), np.arange(3)
    for ix in ("xy", "ij"):
        for got, want in zip(xp.meshgrid(T(a), T(b), indexing=ix), np.meshgrid(a, b, indexing=ix)):
            check(got, want)
    m = np.arange(12.0).reshape(3, 4)
    for k in (-1, 0, 2):
        check(xp.tril(T(m), k=k), np.tril(m, k))
        check(xp.triu(T(m), k=k), np.triu(m, k))
    check(xp.from_dlpack(np.arange(3)), np.arange(3))


# ---------------------------------------------------------------------------------------------
# Element-wise


UNARY = {  # name -> (numpy reference, input key, shift)
    "abs": (np.abs, "g", 0), "acos": (np.arccos, "f", 0), "acosh": (np.arccosh, "f", 1),
    "asin": (np.arcsin, "f", 0), "asinh": (np.arcsinh, "g", 0), "atan": (np.arctan, "g", 0),
    "atanh": (np.arctanh, "f", 0), "ceil": (np.ceil, "g", 0), "cos": (np.cos, "g", 0),
    "cosh": (np.cosh, "g", 0), "exp": (np.exp, "g", 0), "expm1": (np.expm1, "g", 0),
    "floor": (np.floor, "g", 0), "isfinite": (np.isfinite, "g", 0),
    "isinf": (np.isinf, "g", 0), "isnan": (np.isnan, "g", 0), "log": (np.log, "f", 0),
    "log1p": (np.log1p, "f", 0), "log2": (np.log2, "f", 0), "log10": (np.log10, "f", 0),
    "negative": (np.negative, "g", 0), "positive": (np.positive, "g", 0),
    "round": (np.round, "g", 0), "sign": (np.sign, "g", 0), "signbit": (np.signbit, "g", 0),
    "sin": (np.sin, "g", 0), "sinh": (np.sinh, "g", 0), "square": (np.square, "g", 0),
    "sqrt": (np.sqrt, "f", 0), "tan": (np.tan, "g", 0), "tanh": (np.tanh, "g", 0),
    "trunc": (np.trunc, "g", 0), "real": (np.real, "g", 0), "conj": (np.conj, "g", 0),
    "imag": (np.imag, "g", 0), "reciprocal": (np.reciprocal, "f", 0),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, data):
    ref, key, shift = UNARY[name]
    a = data[key] + shift
    check(getattr(xp, name)(T(a)), ref(a), rtol=1e-12)


BINARY = {
    "add": np.add, "atan2": np.arctan2, "copysign": np.copysign, "divide": np.divide,
    "equal": np.equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "hypot": np.hypot, "less": np.less, "less_equal": np.less_equal, "maximum": np.maximum,
    "minimum": np.minimum, "multiply": np.multiply, "not_equal": np.not_equal, "pow": np.power,
    "subtract": np.subtract, "logaddexp": np.logaddexp, "floor_divide": np.floor_divide,
    "remainder": np.remainder,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, data):
    a, b = data["g"], data["f"]
    with np.errstate(all="ignore"):
        want, want_scalar = BINARY[name](a, b), BINARY[name](a, 0.5)
    check(getattr(xp, name)(T(a), T(b)), want, rtol=1e-12)
    check(getattr(xp, name)(T(a), 0.5), want_scalar, rtol=1e-12)  # a Python scalar


@pytest.mark.parametrize("name, ref", [
    ("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
    ("bitwise_xor", np.bitwise_xor), ("bitwise_left_shift", np.left_shift),
    ("bitwise_right_shift", np.right_shift), ("floor_divide", np.floor_divide),
    ("remainder", np.remainder),
])
def test_integer_binary(name, ref, data):
    a, b = data["i"], data["j"]
    check(getattr(xp, name)(T(a), T(b)), ref(a, b))


def test_logical_and_bitwise_invert(data):
    a, b = data["b"], ~data["b"][::-1]
    check(xp.logical_and(T(a), T(b)), a & b)
    check(xp.logical_or(T(a), T(b)), a | b)
    check(xp.logical_xor(T(a), T(b)), a ^ b)
    check(xp.logical_not(T(a)), ~a)
    check(xp.bitwise_invert(T(data["i"])), ~data["i"])
    check(xp.bitwise_invert(T(a)), ~a)


def test_logaddexp_infinities():
    a = np.array([np.inf, -np.inf, np.inf, 1.0])
    b = np.array([np.inf, -np.inf, -np.inf, np.nan])
    with np.errstate(all="ignore"):
        want = np.logaddexp(a, b)
    check(xp.logaddexp(T(a), T(b)), want)


def test_clip(data):
    a = data["g"]
    check(xp.clip(T(a), -1.0, 1.0), np.clip(a, -1, 1))
    check(xp.clip(T(a), min=0.0), np.clip(a, 0, None))
    check(xp.clip(T(a), max=0.0), np.clip(a, None, 0))
    check(xp.clip(T(a)), a)
    i = data["i"]
    out = xp.clip(T(i), 0, 3)
    assert out.dtype == xp.int64
    check(out, np.clip(i, 0, 3))


# ---------------------------------------------------------------------------------------------
# Statistics and utilities


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(axis, keepdims, data):
    a = data["g"]
    kw = dict(axis=axis, keepdims=keepdims)
    check(xp.sum(T(a), **kw), np.sum(a, **kw), rtol=1e-12)
    check(xp.prod(T(a), **kw), np.prod(a, **kw), rtol=1e-12)
    check(xp.max(T(a), **kw), np.max(a, **kw))
    check(xp.min(T(a), **kw), np.min(a, **kw))
    check(xp.mean(T(a), **kw), np.mean(a, **kw), rtol=1e-12)
    check(xp.all(T(a > 0), **kw), np.all(a > 0, **kw))
    check(xp.any(T(a > 0), **kw), np.any(a > 0, **kw))
    if axis != ():
        check(xp.var(T(a), **kw), np.var(a, **kw), rtol=1e-12)
        check(xp.std(T(a), correction=1, **kw), np.std(a, ddof=1, **kw), rtol=1e-12)
        check(xp.count_nonzero(T(a > 0), **kw), np.count_nonzero(a > 0, **kw))


def test_reduction_dtypes(data):
    i = ember.tensor(data["i"], dtype=ember.int32)
    assert xp.sum(i).dtype == xp.int64 and xp.prod(i).dtype == xp.int64
    assert xp.sum(i, dtype=xp.float64).dtype == xp.float64
    assert xp.sum(ember.ones(2, dtype=ember.float32)).dtype == xp.float32


def test_cumulative_sum(data):
    a = data["g"]
    check(xp.cumulative_sum(T(a), axis=1), np.cumsum(a, axis=1), rtol=1e-12)
    check(xp.cumulative_sum(T(a[0])), np.cumsum(a[0]), rtol=1e-12)
    check(xp.cumulative_sum(T(a), axis=0, include_initial=True),
          np.concatenate([np.zeros((1, 4)), np.cumsum(a, axis=0)]), rtol=1e-12)
    with pytest.raises(ValueError):
        xp.cumulative_sum(T(a))


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin(axis, keepdims, data):
    a = data["g"]
    check(xp.argmax(T(a), axis=axis, keepdims=keepdims), np.argmax(a, axis=axis,
                                                                   keepdims=keepdims))
    check(xp.argmin(T(a), axis=axis, keepdims=keepdims), np.argmin(a, axis=axis,
                                                                   keepdims=keepdims))


def test_where(data):
    a, b, c = data["g"], data["f"], data["b"]
    check(xp.where(T(c), T(a), T(b)), np.where(c, a, b))


# ---------------------------------------------------------------------------------------------
# Manipulation and linear algebra


def test_manipulation(data):
    a = data["g"]
    x = T(a)
    check(xp.reshape(x, (4, 3)), a.reshape(4, 3))
    check(xp.reshape(x, (12,), copy=True), a.reshape(12))
    with pytest.raises(ValueError):
        xp.reshape(x.mT, (12,), copy=False)
    check(xp.permute_dims(x, (1, 0)), a.T)
    check(xp.matrix_transpose(x), a.T)
    check(xp.expand_dims(x, axis=1), a[:, None])
    check(xp.expand_dims(x, axis=-1), a[..., None])
    with pytest.raises(IndexError):
        xp.expand_dims(x, axis=3)
    check(xp.squeeze(xp.expand_dims(x, axis=0), axis=0), a)
    with pytest.raises(ValueError):
        xp.squeeze(x, axis=0)
    check(xp.moveaxis(T(np.zeros((2, 3, 4))), 0, -1), np.moveaxis(np.zeros((2, 3, 4)), 0, -1))
    b3 = np.arange(24).reshape(2, 3, 4)
    check(xp.moveaxis(T(b3), (0, 1), (2, 0)), np.moveaxis(b3, (0, 1), (2, 0)))
    check(xp.broadcast_to(T(a[0]), (2, 4)), np.broadcast_to(a[0], (2, 4)))
    with pytest.raises(ValueError):
        xp.broadcast_to(x, (4, 4))
    p, q = xp.broadcast_arrays(T(a[:, :1]), T(a[0]))
    check(p, np.broadcast_to(a[:, :1], (3, 4)))
    check(q, np.broadcast_to(a[0], (3, 4)))
    for axis in (0, 1, -1, None):
        check(xp.concat([x, x * 2], axis=axis), np.concatenate([a, a * 2], axis=axis))
    check(xp.concat([T(np.ones(2, np.int8)), T(np.ones(3))]), np.ones(5))
    for axis in (0, 1, 2, -1):
        check(xp.stack([x, x + 1], axis=axis), np.stack([a, a + 1], axis=axis))
    for got, want in zip(xp.unstack(x, axis=1), np.moveaxis(a, 1, 0)):
        check(got, want)
    for reps in [(2,), (2, 1), (1, 3), (2, 2, 2)]:
        check(xp.tile(x, reps), np.tile(a, reps))


@needs("flip")
def test_flip(data):
    a = data["g"]
    for axis in (None, 0, 1, (0, 1)):
        check(xp.flip(T(a), axis=axis), np.flip(a, axis=axis))


@needs("roll")
def test_roll(data):
    a = data["g"]
    check(xp.roll(T(a), 2), np.roll(a, 2))
    check(xp.roll(T(a), 1, axis=1), np.roll(a, 1, axis=1))
    check(xp.roll(T(a), (1, -1), axis=(0, 1)), np.roll(a, (1, -1), axis=(0, 1)))


@needs("repeat_interleave")
def test_repeat(data):
    a = data["g"]
    check(xp.repeat(T(a), 2, axis=0), np.repeat(a, 2, axis=0))
    check(xp.repeat(T(a), 2), np.repeat(a, 2))


@needs("take")
def test_take(data):
    a = data["g"]
    idx = np.array([2, 0, -1])
    check(xp.take(T(a), T(idx), axis=0), np.take(a, idx, axis=0))
    check(xp.take(T(a), T(idx), axis=1), np.take(a, idx, axis=1))
    check(xp.take(T(a[0]), T(idx)), np.take(a[0], idx))


@needs("nonzero")
def test_nonzero(data):
    b = data["b"]
    for got, want in zip(xp.nonzero(T(b)), np.nonzero(b)):
        check(got, want)


@needs("searchsorted")
def test_searchsorted():
    s = np.array([1.0, 2.0, 2.0, 5.0])
    v = np.array([0.0, 2.0, 3.0, 6.0])
    for side in ("left", "right"):
        check(xp.searchsorted(T(s), T(v), side=side), np.searchsorted(s, v, side=side))


@needs("sort", "argsort")
def test_sort_argsort(data):
    a = data["i"]
    for axis in (0, -1):
        check(xp.sort(T(a), axis=axis), np.sort(a, axis=axis, kind="stable"))
        check(xp.argsort(T(a), axis=axis), np.argsort(a, axis=axis, kind="stable"))
        check(xp.sort(T(a), axis=axis, descending=True), -np.sort(-a, axis=axis, kind="stable"))
        check(xp.argsort(T(a), axis=axis, descending=True),
              np.argsort(-a, axis=axis, kind="stable"))


@needs("unique")
def test_unique_family(data):
    a = data["i"]
    values, counts = np.unique(a, return_counts=True)
    check(xp.unique_values(T(a)), values)
    r = xp.unique_counts(T(a))
    check(r.values, values)
    check(r.counts, counts)
    r = xp.unique_inverse(T(a))
    check(r.values, values)
    check(r.inverse_indices, np.unique(a, return_inverse=True)[1].reshape(a.shape))


@needs("unique", "argsort", "take")
def test_unique_all(data):
    a = data["i"]
    values, index, inverse, counts = np.unique(a, return_index=True, return_inverse=True,
                                               return_counts=True)
    r = xp.unique_all(T(a))
    check(r.values, values)
    check(r.indices, index)
    check(r.inverse_indices, inverse.reshape(a.shape))
    check(r.counts, counts)


def test_linear_algebra(data):
    a, b = data["g"], data["f"]
    check(xp.matmul(T(a), T(b.T)), a @ b.T, rtol=1e-12)
    check(xp.vecdot(T(a), T(b)), np.sum(a * b, axis=-1), rtol=1e-12)
    check(xp.vecdot(T(a), T(b), axis=0), np.sum(a * b, axis=0), rtol=1e-12)
    c = np.arange(24.0).reshape(2, 3, 4)
    d = np.arange(12.0).reshape(4, 3)
    check(xp.tensordot(T(a), T(d), axes=1), np.tensordot(a, d, axes=1), rtol=1e-12)
    check(xp.tensordot(T(c), T(d), axes=([1, 2], [1, 0])),
          np.tensordot(c, d, axes=([1, 2], [1, 0])), rtol=1e-12)
    check(xp.tensordot(T(a), T(b), axes=0), np.tensordot(a, b, axes=0), rtol=1e-12)
    check(xp.tensordot(T(a), T(b), axes=2), np.tensordot(a, b, axes=2), rtol=1e-12)
    with pytest.raises(ValueError):
        xp.tensordot(T(a), T(a), axes=1)


def test_linalg_extension(data):
    la = xp.linalg
    a = data["g"]
    sq = a[:, :3]
    for off in (-1, 0, 1, 3):
        check(la.diagonal(T(a), offset=off), np.diagonal(a, offset=off))
        check(la.trace(T(a), offset=off), np.trace(a, offset=off), rtol=1e-12)
    c = np.arange(24.0).reshape(2, 3, 4)
    check(la.diagonal(T(c)), np.diagonal(c, axis1=-2, axis2=-1))
    check(la.outer(T(a[0]), T(a[1])), np.outer(a[0], a[1]), rtol=1e-12)
    for ord_ in (2, 1, math.inf, -math.inf, 0, 3):
        check(la.vector_norm(T(a), ord=ord_), np.linalg.norm(a.reshape(-1), ord_), rtol=1e-12)
    check(la.vector_norm(T(a), axis=1, keepdims=True),
          np.linalg.norm(a, axis=1, keepdims=True), rtol=1e-12)
    for ord_ in ("fro", 1, -1, math.inf, -math.inf):
        check(la.matrix_norm(T(a), ord=ord_), np.linalg.norm(a, ord_), rtol=1e-12)
    check(la.matrix_power(T(sq), 3), np.linalg.matrix_power(sq, 3), rtol=1e-12)
    check(la.matrix_power(T(sq), 0), np.eye(3))
    u, v = a[:, :3], data["f"][:, :3]
    check(la.cross(T(u), T(v)), np.cross(u, v), rtol=1e-12)
    check(la.matrix_transpose(T(a)), a.T)


def test_linalg_missing_core_op_names_it():
    if hasattr(ember, "linalg"):
        pytest.skip("the core has ember.linalg")
    with pytest.raises(NotImplementedError, match="ember.linalg.inv"):
        xp.linalg.inv(ember.eye(2))


# ---------------------------------------------------------------------------------------------
# One program, two namespaces: array-api-strict as a second oracle


def _program(xp_, x):
    y = xp_.exp(-x * x) + xp_.sin(x)
    z = xp_.concat([y, xp_.ones_like(y)], axis=0)
    m = xp_.mean(z, axis=0, keepdims=True)
    s = xp_.std(z, axis=0, correction=1)
    return xp_.matmul(xp_.matrix_transpose(z - m), z) / s[:, None], xp_.argmax(z, axis=1)


def test_same_program_as_array_api_strict(data):
    strict = pytest.importorskip("array_api_strict")
    a = data["g"]
    ours = _program(xp, T(a))
    theirs = _program(strict, strict.asarray(a))
    for o, t in zip(ours, theirs):
        check(o, np.asarray(t), rtol=1e-10)


def _boolean_indexing_works() -> bool:
    try:
        ember.arange(3)[ember.tensor([True, False, True])]
    except NotImplementedError:
        return False
    return True


@pytest.mark.skipif(not _boolean_indexing_works(),
                    reason="scikit-learn needs boolean-mask indexing, not in the core yet")
@pytest.mark.parametrize("name", ["MinMaxScaler", "StandardScaler"])
def test_scikit_learn_array_api_dispatch(name, monkeypatch, rng):
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    sklearn = pytest.importorskip("sklearn")
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    X = rng.standard_normal((40, 3))
    want = getattr(preprocessing, name)().fit_transform(X)
    try:
        with sklearn.config_context(array_api_dispatch=True):
            got = getattr(preprocessing, name)().fit_transform(ember.from_numpy(X))
    except RuntimeError as e:  # scipy was imported before SCIPY_ARRAY_API could be set
        pytest.skip(str(e))
    assert isinstance(got, ember.Tensor)
    np.testing.assert_allclose(np_of(got), want, rtol=1e-10)


def test_zero_dim_and_empty_arrays():
    s = xp.asarray(2.5, dtype=xp.float64)
    assert s.ndim == 0
    check(xp.sum(s), np.sum(2.5))
    check(xp.exp(s), np.exp(2.5), rtol=1e-12)
    check(xp.expand_dims(s, axis=0), np.array([2.5]))
    check(xp.prod(s), np.float64(2.5))
    check(xp.tile(s, (2,)), np.tile(2.5, (2,)))
    e = xp.zeros((0, 3))
    check(xp.sum(e, axis=0), np.zeros(3))
    check(xp.prod(e, axis=0), np.ones(3))
    check(xp.concat([e, xp.ones((2, 3))]), np.ones((2, 3)))
    check(xp.stack([e, e], axis=1), np.zeros((0, 2, 3)))
    check(xp.tensordot(e, xp.zeros((3, 2)), axes=1), np.zeros((0, 2)))
    check(xp.vecdot(e, e), np.zeros(0))
    check(xp.tile(e, (2, 2)), np.zeros((0, 6)))
    assert xp.unstack(e, axis=0) == ()


# ---------------------------------------------------------------------------------------------
# Complex dtypes (NumPy 2's array API namespace as the oracle)

STANDARD_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64",
                   "complex64", "complex128"]
KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric"]
FLOATING = ["float32", "float64", "complex64", "complex128"]


@pytest.fixture
def cdata(rng):
    def c(shape):
        return rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)
    return {"z": c((3, 4)), "w": c((3, 4)), "v": c(5)}


def test_complex_dtypes_in_the_namespace():
    assert xp.complex64 is ember.complex64 and xp.complex128 is ember.complex128
    assert xp.asarray(1j).dtype == xp.complex64  # the default complex of a float32 default
    assert xp.asarray([1, 2j], dtype=xp.complex128).dtype == xp.complex128


@pytest.mark.parametrize("kind", KINDS)
def test_isdtype_complex_kinds(kind):
    for name in STANDARD_DTYPES:
        assert xp.isdtype(getattr(xp, name), kind) == np.isdtype(np.dtype(name), kind), name
    assert xp.isdtype(xp.complex64, ("bool", "complex floating"))
    assert not xp.isdtype(xp.complex64, ("real floating", "integral"))


@pytest.mark.parametrize("kind", [None, *KINDS, ("real floating", "complex floating")])
def test_info_dtypes_complex(kind):
    info = xp.__array_namespace_info__()
    ref = np.__array_namespace_info__().dtypes(kind=kind)
    ours = info.dtypes(kind=kind)
    # NumPy's, less the unsigned integers wider than 8 bits that ember does not have
    assert sorted(ours) == sorted(n for n in ref if n not in ("uint16", "uint32", "uint64"))
    assert all(ours[n] == getattr(xp, n) for n in ours)


def test_info_default_complex_dtype():
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["complex floating"] == xp.complex64
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        d = info.default_dtypes()
        assert (d["real floating"], d["complex floating"]) == (xp.float64, xp.complex128)
    finally:
        ember.set_default_dtype(old)


def test_result_type_and_can_cast_complex():
    for a in FLOATING:
        for b in FLOATING:
            want = np.result_type(np.dtype(a), np.dtype(b)).name
            assert xp.result_type(getattr(xp, a), getattr(xp, b)) == getattr(xp, want), (a, b)
            assert xp.can_cast(getattr(xp, a), getattr(xp, b)) == np.can_cast(a, b), (a, b)
    z = xp.asarray([1j], dtype=xp.complex64)
    assert xp.result_type(z, xp.float64) == xp.complex128
    assert xp.result_type(xp.asarray([1.0]), 1j) == xp.complex64  # a Python complex, by kind
    assert not xp.can_cast(z, xp.float64)


def test_finfo_of_complex():
    for name, part in (("complex64", "float32"), ("complex128", "float64")):
        info, ref = xp.finfo(getattr(xp, name)), np.finfo(name)
        assert (info.bits, info.eps, info.max, info.min) == (ref.bits, ref.eps, ref.max, ref.min)
        assert info.smallest_normal == ref.smallest_normal
        assert info.dtype == getattr(xp, part)


def test_real_imag_conj(cdata):
    z = cdata["z"]
    t = T(z)
    for name, ref in (("real", np.real), ("imag", np.imag), ("conj", np.conj)):
        got = getattr(xp, name)(t)
        want = ref(z)
        assert np_of(got).dtype == want.dtype, name
        check(got, want, rtol=1e-15)
    for dt, part in ((xp.complex64, xp.float32), (xp.complex128, xp.float64)):
        assert xp.real(xp.astype(t, dt)).dtype == part and xp.imag(xp.astype(t, dt)).dtype == part
    re = xp.real(t)
    re[0, 0] = 100.0  # a new array, not a view of t
    assert t[0, 0].item() == z[0, 0]
    # real arrays: real is the array, imag zeros, conj the array
    g = np.linspace(-1, 1, 6)
    check(xp.real(T(g)), g)
    check(xp.imag(T(g)), np.zeros(6))
    check(xp.conj(T(g)), g)


def test_complex_elementwise(cdata):
    z, w = cdata["z"], cdata["w"]
    check(xp.abs(T(z)), np.abs(z), rtol=1e-14)
    assert xp.abs(xp.astype(T(z), xp.complex64)).dtype == xp.float32
    check(xp.sign(T(z)), np.sign(z), rtol=1e-14)  # NumPy 2: z / |z|
    check(xp.sign(T(np.array([0j, complex(0, -0.0)]))), np.zeros(2, complex))
    check(xp.round(T(z * 3)), np.round(z * 3))
    for name, ref in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin),
                      ("tanh", np.tanh), ("square", np.square), ("expm1", np.expm1)):
        check(getattr(xp, name)(T(z)), ref(z), rtol=1e-12)
    for name, ref in (("add", np.add), ("multiply", np.multiply), ("divide", np.divide),
                      ("pow", np.power), ("equal", np.equal), ("not_equal", np.not_equal)):
        check(getattr(xp, name)(T(z), T(w)), ref(z, w), rtol=1e-12)
    check(xp.equal(T(z), complex(z[0, 0])), np.equal(z, z[0, 0]))
    check(xp.multiply(T(z), 2j), z * 2j, rtol=1e-15)
    check(xp.isnan(T(np.array([complex(np.nan, 1), 1j]))), [True, False])


def test_sign_of_nan():
    check(xp.sign(T(np.array([np.nan, -3.0, 0.0, 2.0]))), np.sign([np.nan, -3.0, 0.0, 2.0]))


def test_complex_astype():
    z = xp.asarray([1 + 2j, 0j], dtype=xp.complex128)
    check(xp.astype(z, xp.complex64), np.array([1 + 2j, 0j], np.complex64))
    check(xp.astype(z, xp.bool), [True, False])
    check(xp.astype(xp.asarray([1.5, 2.0]), xp.complex128), np.array([1.5, 2.0], complex))
    with pytest.raises(TypeError, match="imaginary"):  # the standard: use real, imag or abs
        xp.astype(z, xp.float64)


def test_complex_creation():
    check(xp.zeros(2, dtype=xp.complex64), np.zeros(2, np.complex64))
    check(xp.ones((2, 2), dtype=xp.complex128), np.ones((2, 2), complex))
    check(xp.full((2,), 1 - 2j), np.full(2, 1 - 2j, np.complex64))
    check(xp.full_like(xp.zeros(3), 2j, dtype=xp.complex128), np.full(3, 2j))
    check(xp.eye(3, k=1, dtype=xp.complex64), np.eye(3, k=1, dtype=np.complex64))
    check(xp.linspace(0j, 1 + 2j, 5), np.linspace(0j, 1 + 2j, 5).astype(np.complex64),
          rtol=1e-6)
    check(xp.linspace(1, 2j, 4, dtype=xp.complex128, endpoint=False),
          np.linspace(1, 2j, 4, endpoint=False), rtol=1e-15)
    check(xp.linspace(0, 1, 3, dtype=xp.complex128), np.linspace(0, 1, 3, dtype=complex))


def test_complex_reductions_and_products(cdata):
    z, w, v = cdata["z"], cdata["w"], cdata["v"]
    check(xp.sum(T(z), axis=0), np.sum(z, axis=0), rtol=1e-14)
    check(xp.mean(T(z)), np.mean(z), rtol=1e-14)
    check(xp.cumulative_sum(T(z), axis=1), np.cumsum(z, axis=1), rtol=1e-14)
    check(xp.matmul(T(z), T(w.T)), z @ w.T, rtol=1e-13)
    check(xp.vecdot(T(z), T(w)), np.vecdot(z, w), rtol=1e-13)  # conjugates the first
    check(xp.linalg.vecdot(T(z), T(w), axis=0), np.vecdot(z, w, axis=0), rtol=1e-13)
    check(xp.tensordot(T(z), T(w), axes=([1], [1])), np.tensordot(z, w, axes=([1], [1])),
          rtol=1e-13)
    check(xp.linalg.outer(T(v), T(v)), np.outer(v, v), rtol=1e-14)
    check(xp.linalg.trace(T(z[:, :3])), np.trace(z[:, :3]), rtol=1e-14)
    for ord_ in (2, 1, math.inf, -math.inf, 0, 3):
        got = xp.linalg.vector_norm(T(v), ord=ord_)
        assert got.dtype == xp.float64
        check(got, np.linalg.norm(v, ord_), rtol=1e-13)
    assert xp.linalg.vector_norm(xp.astype(T(v), xp.complex64)).dtype == xp.float32
    check(xp.linalg.matrix_norm(T(z)), np.linalg.norm(z, "fro"), rtol=1e-13)


def test_complex_core_gaps_raise_or_match(cdata):
    """Where the core has no complex kernel the namespace raises, never computes something else:
    once the kernel exists, the value is checked instead."""
    z = cdata["z"]
    cases = [
        (lambda: xp.prod(T(z), axis=0), lambda: np.prod(z, axis=0)),
        (lambda: xp.linalg.det(T(z[:, :3])), lambda: np.linalg.det(z[:, :3])),
        (lambda: xp.linalg.inv(T(z[:, :3])), lambda: np.linalg.inv(z[:, :3])),
    ]
    for ours, ref in cases:
        try:
            got = ours()
        except (NotImplementedError, RuntimeError):
            continue
        check(got, ref(), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# The fft extension (numpy.fft as the oracle)


def test_fft_is_the_extension():
    assert xp.fft.__name__ == "ember.array_api.fft"
    assert all(callable(getattr(xp.fft, n)) for n in FFT_NAMES)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fft_1d(norm, cdata, rng):
    z = cdata["z"]
    r = rng.standard_normal((3, 6))
    for name in ("fft", "ifft"):
        for kw, npkw in (({}, {}), ({"n": 6, "axis": 0}, {"n": 6, "axis": 0}), ({"n": 3}, {"n": 3})):
            got = getattr(xp.fft, name)(T(z), norm=norm, **kw)
            assert got.dtype == xp.complex128
            check(got, getattr(np.fft, name)(z, norm=norm, **npkw), rtol=1e-12, atol=1e-12)
    got = xp.fft.rfft(T(r), n=8, norm=norm)
    assert got.dtype == xp.complex128 and got.shape == (3, 5)
    check(got, np.fft.rfft(r, n=8, norm=norm), rtol=1e-12, atol=1e-12)
    check(xp.fft.irfft(T(z), n=5, axis=0, norm=norm), np.fft.irfft(z, n=5, axis=0, norm=norm),
          rtol=1e-12, atol=1e-12)
    check(xp.fft.hfft(T(z), norm=norm), np.fft.hfft(z, norm=norm), rtol=1e-12, atol=1e-12)
    check(xp.fft.ihfft(T(r), norm=norm), np.fft.ihfft(r, norm=norm), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fft_nd(norm, cdata, rng):
    z = cdata["z"]
    r = rng.standard_normal((2, 3, 4))
    check(xp.fft.fftn(T(z), norm=norm), np.fft.fftn(z, norm=norm), rtol=1e-12, atol=1e-12)
    check(xp.fft.ifftn(T(z), s=(4, 2), axes=(0, 1), norm=norm),
          np.fft.ifftn(z, s=(4, 2), axes=(0, 1), norm=norm), rtol=1e-12, atol=1e-12)
    check(xp.fft.fftn(T(z), axes=[1], norm=norm), np.fft.fftn(z, axes=[1], norm=norm),
          rtol=1e-12, atol=1e-12)
    check(xp.fft.rfftn(T(r), axes=(0, 2), norm=norm), np.fft.rfftn(r, axes=(0, 2), norm=norm),
          rtol=1e-12, atol=1e-12)
    check(xp.fft.irfftn(T(z), s=(3, 5), axes=(0, 1), norm=norm),
          np.fft.irfftn(z, s=(3, 5), axes=(0, 1), norm=norm), rtol=1e-12, atol=1e-12)


def test_fft_dtypes():
    z64 = xp.asarray(np.ones((4,), np.complex64))
    r32 = xp.ones(4, dtype=xp.float32)
    assert xp.fft.fft(z64).dtype == xp.complex64 and xp.fft.ifftn(z64).dtype == xp.complex64
    assert xp.fft.rfft(r32).dtype == xp.complex64 and xp.fft.ihfft(r32).dtype == xp.complex64
    assert xp.fft.irfft(z64).dtype == xp.float32 and xp.fft.hfft(z64).dtype == xp.float32
    assert xp.fft.irfftn(z64).dtype == xp.float32
    with pytest.raises(ValueError, match="norm"):
        xp.fft.fft(z64, norm="none")


def test_fft_helpers(rng):
    for n in (1, 4, 7):
        for d in (1.0, 0.25):
            got = xp.fft.fftfreq(n, d=d)
            assert got.dtype == ember.get_default_dtype()
            check(got, np.fft.fftfreq(n, d=d), rtol=1e-6)
            check(xp.fft.rfftfreq(n, d=d), np.fft.rfftfreq(n, d=d), rtol=1e-6)
    assert xp.fft.fftfreq(4, dtype=xp.float64).dtype == xp.float64
    a = rng.standard_normal((3, 4, 5))
    for axes in (None, 1, (0, 2), [2, 1]):
        check(xp.fft.fftshift(T(a), axes=axes), np.fft.fftshift(a, axes=axes))
        check(xp.fft.ifftshift(T(a), axes=axes), np.fft.ifftshift(a, axes=axes))


# ---------------------------------------------------------------------------------------------
# The standard's rules where the core's torch-style ops differ (found by array-api-tests)


def test_zero_dim_arrays_promote_as_arrays():
    i16, i8 = xp.asarray(300, dtype=xp.int16), xp.asarray([44, 1], dtype=xp.int8)
    assert xp.add(i16, i8).dtype == xp.int16 and xp.multiply(i8, i16).dtype == xp.int16
    check(xp.equal(i16, i8), np.equal(np.int16(300), np.array([44, 1], np.int8)))
    check(xp.less_equal(xp.asarray(-1, dtype=xp.int16), xp.asarray([0], dtype=xp.uint8)), [True])
    assert xp.divide(xp.asarray(1.0, dtype=xp.float64), xp.ones(2)).dtype == xp.float64
    assert xp.where(xp.asarray([True]), xp.asarray(1, dtype=xp.int16),
                    xp.asarray([2], dtype=xp.int8)).dtype == xp.int16
    assert xp.logaddexp(xp.ones(1), xp.asarray(0.0, dtype=xp.float64)).dtype == xp.float64
    assert xp.add(i8, 1).dtype == xp.int8  # Python scalars still promote by kind
    assert xp.matmul(xp.asarray([1, 2], dtype=xp.int8),
                     xp.asarray([3, 4], dtype=xp.int16)).dtype == xp.int16
    assert xp.linalg.cross(xp.asarray([1, 0, 0], dtype=xp.int16),
                           xp.asarray([[0, 1, 0]], dtype=xp.int8)).dtype == xp.int16
    assert xp.vecdot(xp.ones(3, dtype=xp.uint8), xp.ones(3, dtype=xp.uint8)).dtype == xp.uint8


def test_standard_edge_cases():
    check(xp.arange(5, 0, 1), np.arange(5, 0, 1))
    assert xp.arange(0.0, step=2).dtype == ember.get_default_dtype()
    assert xp.arange(3, 1, 0.5).shape == (0,)
    x = xp.asarray([1.0, 2.0])
    check(xp.repeat(x, xp.asarray([2])), np.repeat([1.0, 2.0], 2))
    check(xp.repeat(x, xp.asarray([1, 3], dtype=xp.int8)), np.repeat([1.0, 2.0], [1, 3]))
    check(xp.var(x, axis=()), np.zeros(2))
    check(xp.std(x, axis=(), correction=1), np.full(2, np.nan))
    s = xp.asarray(False)
    assert xp.broadcast_to(s, ()).shape == () and xp.broadcast_arrays(s)[0].shape == ()
    check(xp.tensordot(xp.zeros((0, 0)), xp.zeros((0, 0))), np.float32(0))
    check(xp.tensordot(xp.asarray(2.0), xp.asarray(3.0), axes=([], [])), np.float32(6))
    check(xp.expand_dims(x, 1), np.array([[1.0], [2.0]]))  # axis positional, as the standard
    assert xp.all(xp.asarray([1, 2], dtype=xp.uint8)).dtype == xp.bool
    assert xp.any(xp.asarray(0, dtype=xp.uint8), axis=()).dtype == xp.bool
    with pytest.raises(ValueError):  # the contracted axis does not broadcast
        xp.vecdot(xp.ones(3), xp.ones(1))


def test_linalg_signatures_are_the_standards():
    import inspect

    params = {name: inspect.signature(getattr(xp.linalg, name)).parameters
              for name in ("cholesky", "matrix_rank", "pinv", "qr", "svd")}
    assert params["cholesky"]["upper"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "rtol" in params["matrix_rank"] and "rtol" in params["pinv"]
    assert params["qr"]["mode"].default == "reduced"
    assert params["svd"]["full_matrices"].default is True
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    check(xp.linalg.cholesky(T(a), upper=True), np.linalg.cholesky(a).T, rtol=1e-12)
    b = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)  # solve promotes float64 and float32
    got = xp.linalg.solve(T(a), T(b))
    assert got.dtype == xp.float64
    check(got, np.linalg.solve(a, b.astype(np.float64)), rtol=1e-12)
    stack = np.stack([a, 2 * a])  # a (2, 2) x2 under a (2, 2, 2) x1 is a matrix, not vectors
    check(xp.linalg.solve(T(stack), T(b.astype(np.float64))),
          np.linalg.solve(stack, b.astype(np.float64)), rtol=1e-12)
    check(xp.linalg.matrix_rank(T(np.stack([a, np.zeros((2, 2))])), rtol=T(np.array([0.1, 0.1]))),
          [2, 0])
