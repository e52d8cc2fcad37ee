"""complex64/complex128 tensors: creation, casting, promotion, the op table's complex kernels,
views of the parts, reductions, matmul and interop, against NumPy (and torch where installed)."""

from __future__ import annotations

import io
import math
import warnings

import numpy as np
import pytest

import ember

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

C64, C128 = ember.complex64, ember.complex128
NP = {C64: np.complex64, C128: np.complex128}
TOL = {C64: dict(rtol=2e-6, atol=1e-6), C128: dict(rtol=1e-12, atol=1e-12)}
REAL_TOL = {C64: dict(rtol=2e-6, atol=1e-6), C128: dict(rtol=1e-12, atol=1e-12)}


def rand_complex(shape, dtype=C64, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale
    return np.asarray(a, NP[dtype])


def to_np(t):
    return t.numpy()


# ---------------------------------------------------------------------------------------------
# dtypes and promotion


def test_dtype_objects():
    assert ember.cfloat is C64 and ember.cdouble is C128
    assert C64.is_complex and not C64.is_floating_point and C64.itemsize == 8
    assert C128.itemsize == 16 and repr(C128) == "ember.complex128"
    assert C64.to_real() is ember.float32 and C128.to_real() is ember.float64
    assert ember.float32.to_complex() is C64 and ember.float64.to_complex() is C128
    assert ember.float32.to_real() is ember.float32 and not ember.float32.is_complex
    with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for BFloat16"):
        ember.bfloat16.to_complex()
    assert ember.finfo(C64).eps == ember.finfo(ember.float32).eps
    assert ember.finfo(C128).bits == 64


@pytest.mark.parametrize("other, expected", [
    ("bool", C64), ("int64", C64), ("float16", C64), ("bfloat16", C64), ("float32", C64),
    ("float64", C128), ("complex128", C128),
])
def test_promote_types(other, expected):
    assert ember.promote_types(C64, getattr(ember, other)) is expected
    assert ember.promote_types(getattr(ember, other), C64) is expected


def test_result_type_of_python_complex():
    # a complex Python number keeps a floating tensor's precision (torch's combine_categories)
    assert (ember.ones(2) * 1j).dtype is C64
    assert (ember.ones(2, dtype=ember.float64) * 1j).dtype is C128
    assert (ember.arange(3) * 1j).dtype is C64
    assert (ember.ones(2) + ember.tensor(1j, dtype=C128)).dtype is C64  # a 0-d tensor
    assert (ember.ones(2, dtype=C64) + ember.ones(2, dtype=ember.float64)).dtype is C128
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1j]).dtype is C128
        assert (ember.arange(3) * 1j).dtype is C128
    finally:
        ember.set_default_dtype(ember.float32)


def test_can_cast():
    assert not ember.can_cast(C64, ember.float32)
    assert ember.can_cast(ember.float64, C64) and ember.can_cast(C128, C64)


# ---------------------------------------------------------------------------------------------
# creation, casting, interop


def test_creation():
    x = ember.tensor([1 + 2j, 3, -0.5j])
    assert x.dtype is C64
    np.testing.assert_array_equal(to_np(x), np.array([1 + 2j, 3, -0.5j], np.complex64))
    assert ember.zeros(2, 3, dtype=C128).dtype is C128
    np.testing.assert_array_equal(to_np(ember.ones(2, dtype=C64)), np.ones(2, np.complex64))
    f = ember.full((2, 2), 1 - 2j)
    assert f.dtype is C64 and to_np(f).tolist() == [[1 - 2j] * 2] * 2
    assert ember.tensor([[1, 2], [3, 4j]]).shape == (2, 2)
    np.testing.assert_array_equal(to_np(ember.eye(2, dtype=C64)), np.eye(2, dtype=np.complex64))
    z = ember.zeros(3, dtype=C64).fill_(2 + 1j)
    assert z.tolist() == [2 + 1j] * 3
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.zeros(3).fill_(1j)  # a real tensor cannot take an imaginary part


def test_item_and_python_conversions():
    t = ember.tensor(2 - 3j)
    assert t.item() == 2 - 3j and isinstance(t.item(), complex)
    assert complex(t) == 2 - 3j and bool(ember.tensor(1j)) and not bool(ember.tensor(0j))
    assert float(ember.tensor(2 + 0j)) == 2.0 and int(ember.tensor(7 + 0j)) == 7
    with pytest.raises(RuntimeError, match="without overflow"):
        float(t)
    assert ember.tensor([[1j, 2]]).tolist() == [[1j, 2 + 0j]]


@pytest.mark.parametrize("dtype", [C64, C128])
def test_numpy_round_trip_shares_memory(dtype):
    a = rand_complex((3, 4), dtype)
    t = ember.from_numpy(a)
    assert t.dtype is dtype
    t[0, 0] = 5 + 5j
    assert a[0, 0] == 5 + 5j  # the same memory
    back = t.numpy()
    assert back.dtype == NP[dtype] and np.shares_memory(back, a)
    np.testing.assert_array_equal(to_np(ember.tensor(a)), a)
    np.testing.assert_array_equal(to_np(ember.as_tensor(a[:, ::2])), a[:, ::2])


def test_dlpack_and_buffer():
    x = ember.tensor([1 + 2j, 3 - 4j], dtype=C128)
    np.testing.assert_array_equal(np.from_dlpack(x), to_np(x))
    y = ember.from_dlpack(rand_complex(5))
    assert y.dtype is C64
    assert memoryview(x).format == "Zd"
    assert np.asarray(memoryview(ember.tensor([1j]))).dtype == np.complex64


@pytest.mark.parametrize("to", ["float32", "float64", "int64", "bool", "float16"])
def test_casts_from_complex_keep_the_real_part_and_warn(to):
    a = np.array([1.5 + 2j, -3 - 1j, 0j, 2j], np.complex64)
    if to == "bool":  # both parts are read: no warning, as torch's
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = ember.from_numpy(a).to(ember.bool)
        np.testing.assert_array_equal(to_np(r), a != 0)  # either part nonzero
        return
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        r = ember.from_numpy(a).to(getattr(ember, to))
    np.testing.assert_array_equal(to_np(r), a.real.astype(to))


@pytest.mark.parametrize("src", ["float32", "float64", "int32", "bool", "bfloat16"])
def test_casts_to_complex(src):
    x = ember.tensor([1, 0, 3], dtype=getattr(ember, src))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = x.to(C128)
    expected = np.array([1, 0, 3], src if src != "bfloat16" else "float32").astype(np.complex128)
    np.testing.assert_array_equal(to_np(c), expected)
    assert to_np(c.to(C64)).dtype == np.complex64


def test_copy_into_real_tensor_warns():
    r = ember.zeros(2)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        r.copy_(ember.tensor([1 + 1j, 2 - 1j]))
    assert r.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("dtype", [C64, C128])
def test_save_load(dtype):
    x = ember.from_numpy(rand_complex((2, 3), dtype))
    buf = io.BytesIO()
    ember.save({"x": x, "view": x[:, 1]}, buf)
    buf.seek(0)
    got = ember.load(buf)
    assert got["x"].dtype is dtype
    np.testing.assert_array_equal(to_np(got["x"]), to_np(x))
    np.testing.assert_array_equal(to_np(got["view"]), to_np(x[:, 1]))


def test_printing():
    assert repr(ember.tensor([1 + 2j, -0.5j])) == \
        "tensor([1.0000+2.0000j, -0.0000-0.5000j])" or "j]" in repr(ember.tensor([1 + 2j]))
    s = repr(ember.tensor([1 + 2j, 3 - 1j], dtype=C128))
    assert s.endswith("dtype=ember.complex128)") and "1.+2.j" in s


def test_printing_matches_torch():
    torch = pytest.importorskip("torch")
    for values in ([1 + 2j, 3 - 1j, -0.5], [[1.25 + 1e-5j, 2j], [1e6 + 1j, 0]], [1j]):
        for dt, tdt in ((C64, torch.complex64), (C128, torch.complex128)):
            e = repr(ember.tensor(values, dtype=dt))
            t = repr(torch.tensor(values, dtype=tdt))
            assert e == t.replace("torch.", "ember."), (e, t)


# ---------------------------------------------------------------------------------------------
# the op table's complex kernels, against NumPy


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


UNARY_REFERENCES = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda z: 1 / np.sqrt(z),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "sigmoid": _sigmoid,
    "reciprocal": lambda z: 1 / z, "neg": np.negative, "square": lambda z: z * z,
    "abs": np.abs, "angle": np.angle, "isnan": np.isnan, "isinf": np.isinf,
    "isfinite": np.isfinite, "logical_not": np.logical_not, "sinc": np.sinc,
}
def _logaddexp(a, b):
    # torch's complex logaddexp: shifted by the operand of the larger real part
    a, b = np.broadcast_arrays(a, b)
    swap = a.real < b.real
    hi, lo = np.where(swap, b, a), np.where(swap, a, b)
    return hi + np.log1p(np.exp(lo - hi))


BINARY_REFERENCES = {
    "logaddexp": _logaddexp, "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "pow": np.power, "eq": np.equal, "ne": np.not_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
TABLE = {row["name"]: row for row in ember._C._op_table()}
COMPLEX_UNARY = sorted(n for n, r in TABLE.items() if r["arity"] == 1 and r["complex"])
COMPLEX_BINARY = sorted(n for n, r in TABLE.items() if r["arity"] == 2 and r["complex"])
REFUSED = sorted(n for n, r in TABLE.items() if not r["complex"] and not n.startswith("special_")
                 and n not in ("div_trunc",))


def test_every_complex_table_op_has_a_reference():
    assert set(COMPLEX_UNARY) == set(UNARY_REFERENCES)
    assert set(COMPLEX_BINARY) == set(BINARY_REFERENCES)


def _special_values(dtype):
    values = [0, 1, -1, 1j, -1j, 0.5 + 0.5j, 1e-4 + 1e-4j, -2.5 + 3j, 3 - 40j,
              math.inf, -math.inf + 1j, complex(math.nan, 1), complex(1, math.nan)]
    return np.array(values, NP[dtype])


def _check(got, expected, dtype):
    tol = TOL[dtype]
    assert to_np(got).dtype == expected.dtype, (to_np(got).dtype, expected.dtype)
    np.testing.assert_allclose(to_np(got), expected, equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("name", COMPLEX_UNARY)
def test_unary_against_numpy(name, dtype):
    a = rand_complex((5, 7), dtype, seed=1)
    if name in ("log", "log2", "log10", "sqrt", "rsqrt"):
        a = a * 3  # away from 0, where NumPy's and the kernel's rounding differ most
    fn = getattr(ember, name)
    with np.errstate(all="ignore"):
        expected = UNARY_REFERENCES[name](a)
    _check(fn(ember.from_numpy(a)), expected, dtype)
    # non-contiguous: a transposed view, and a strided slice
    _check(fn(ember.from_numpy(a).t()), expected.T, dtype)
    _check(fn(ember.from_numpy(a)[:, ::3]), expected[:, ::3], dtype)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "abs", "angle", "isnan", "isinf",
                                  "isfinite", "neg", "reciprocal", "tanh", "expm1", "log1p"])
def test_unary_special_values(name, dtype):
    a = _special_values(dtype)
    with np.errstate(all="ignore"):
        expected = UNARY_REFERENCES[name](a)
    got = to_np(getattr(ember, name)(ember.from_numpy(a)))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], **TOL[dtype])
    # where NumPy gives a non-finite value, ember's is non-finite too
    assert not np.isfinite(got[~finite]).any() if got.dtype.kind != "b" else True


@pytest.mark.parametrize("dtype", [C64, C128])
def test_expm1_log1p_near_zero_keep_their_digits(dtype):
    # NumPy's own complex expm1/log1p lose these digits (exp(z) - 1): mpmath is the oracle
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    z = np.array([1e-10 + 1e-10j, -3e-9 + 2e-12j, 1e-30j, 0.3 - 0.2j], NP[dtype])
    for name, ref in (("expm1", mpmath.expm1), ("log1p", mpmath.log1p)):
        got = to_np(getattr(ember, name)(ember.from_numpy(z)))
        expected = np.array([complex(ref(mpmath.mpc(complex(v)))) for v in z])
        rtol, atol = (1e-6, 1e-37) if dtype is C64 else (1e-14, 0)  # float32 underflows at 1e-45
        np.testing.assert_allclose(got.real, expected.real, rtol=rtol, atol=atol)
        np.testing.assert_allclose(got.imag, expected.imag, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("name", COMPLEX_BINARY)
def test_binary_against_numpy(name, dtype):
    a = rand_complex((4, 1, 5), dtype, seed=2)
    b = rand_complex((3, 5), dtype, seed=3)
    fn = getattr(ember, name)
    with np.errstate(all="ignore"):
        expected = BINARY_REFERENCES[name](a, b)
    _check(fn(ember.from_numpy(a), ember.from_numpy(b)), expected, dtype)  # broadcasting
    # a Python complex, a real tensor and a 0-d tensor as the other operand
    others = [(ember.from_numpy(b.real.copy()), b.real.astype(NP[dtype]))]
    if not name.startswith("logical") and name != "logaddexp":  # a tensor `other` only, as torch
        others.append((1.5 - 2j, np.asarray(1.5 - 2j, NP[dtype])))
    for other, np_other in others:
        with np.errstate(all="ignore"):
            expected = BINARY_REFERENCES[name](a, np_other)
        _check(fn(ember.from_numpy(a), other), expected, dtype)


def test_pow_edges():
    x = ember.tensor([0j, 2 + 1j, -1 + 0j, 0j])
    np.testing.assert_array_equal(to_np(x ** 0), np.ones(4, np.complex64))
    assert (x ** 2).tolist()[1] == (2 + 1j) ** 2
    assert ember.pow(ember.tensor(0j), 2.5).item() == 0
    np.testing.assert_allclose(to_np(2 ** x), 2 ** to_np(x), rtol=2e-6)


def test_inplace_and_out():
    a = rand_complex((3, 3))
    x = ember.from_numpy(a.copy())
    x.mul_(2 - 1j).add_(1j).exp_()
    np.testing.assert_allclose(to_np(x), np.exp(a * (2 - 1j) + 1j), rtol=1e-5)
    out = ember.empty(3, 3, dtype=C128)
    ember.mul(ember.from_numpy(a), ember.from_numpy(a), out=out)
    np.testing.assert_allclose(to_np(out), a.astype(np.complex128) ** 2, rtol=1e-6)
    r = ember.empty(3, 3)
    ember.abs(ember.from_numpy(a), out=r)  # a real result into a real out=
    np.testing.assert_allclose(to_np(r), np.abs(a), rtol=1e-6)
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
        ember.from_numpy(a).abs_()
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Float"):
        ember.ones(2).add_(ember.tensor([1j, 1j]))


def test_add_with_alpha():
    a, b = rand_complex(4, seed=4), rand_complex(4, seed=5)
    ea, eb = ember.from_numpy(a), ember.from_numpy(b)
    np.testing.assert_allclose(to_np(ember.add(ea, eb, alpha=2 - 1j)), a + (2 - 1j) * b, rtol=2e-6)
    np.testing.assert_allclose(to_np(ember.sub(ea, eb, alpha=3)), a - 3 * b, rtol=2e-6)
    np.testing.assert_allclose(to_np(ea.clone().add_(eb, alpha=1j)), a + 1j * b, rtol=2e-6)
    with pytest.raises(RuntimeError, match="must not be a complex number"):
        ember.add(ember.ones(2), ember.ones(2), alpha=1j)


@pytest.mark.parametrize("name", REFUSED)
def test_ops_without_complex_kernels_refuse(name):
    x = ember.tensor([1 + 1j, 2 - 1j])
    fn = getattr(ember._C, name if not name.startswith("special_") else f"_{name}")
    args = (x,) if TABLE[name]["arity"] == 1 else (x, x)
    with pytest.raises((NotImplementedError, RuntimeError)):
        fn(*args)


def test_refusals_use_torchs_messages():
    x = ember.tensor([1 + 1j])
    with pytest.raises(NotImplementedError, match="Please use torch.sgn instead"):
        x.sign()
    with pytest.raises(NotImplementedError, match="floor is not supported for complex inputs"):
        x.floor()
    with pytest.raises(RuntimeError, match="deg2rad is not supported for complex tensors"):
        x.deg2rad()
    with pytest.raises(NotImplementedError, match="\"frac_cpu\" not implemented for 'ComplexFloat'"):
        x.frac()
    with pytest.raises(NotImplementedError, match="\"lt_cpu\" not implemented for 'ComplexFloat'"):
        x < x  # noqa: B015
    with pytest.raises(RuntimeError, match="maximum not implemented for complex tensors"):
        ember.maximum(x, x)
    with pytest.raises(RuntimeError, match="clamp is not supported for complex types"):
        x.clamp(0, 1)
    with pytest.raises(RuntimeError, match="isposinf does not support complex inputs"):
        ember.isposinf(x)


# ---------------------------------------------------------------------------------------------
# the parts: views and compositions


@pytest.mark.parametrize("dtype", [C64, C128])
def test_view_as_real_and_back(dtype):
    a = rand_complex((3, 4), dtype)
    x = ember.from_numpy(a)
    r = ember.view_as_real(x)
    assert r.dtype is dtype.to_real() and r.shape == (3, 4, 2) and r.stride() == (8, 2, 1)
    np.testing.assert_array_equal(to_np(r), a.view(NP[dtype](0).real.dtype).reshape(3, 4, 2))
    r[0, 0, 1] = 7  # a view: writes reach the complex tensor
    assert x[0, 0].item().imag == 7
    c = ember.view_as_complex(r)
    assert c.dtype is dtype and c.data_ptr() == x.data_ptr()
    # a transposed complex tensor's pairs
    rt = ember.view_as_real(x.t())
    assert rt.stride() == (2, 8, 1)
    np.testing.assert_array_equal(to_np(ember.view_as_complex(rt)), to_np(x).T)
    # an offset view
    np.testing.assert_array_equal(to_np(ember.view_as_real(x[1:, 2:])), to_np(r)[1:, 2:])


def test_view_as_complex_checks():
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        ember.view_as_complex(ember.zeros(3, 3))
    with pytest.raises(RuntimeError, match="last dimension with stride 1"):
        ember.view_as_complex(ember.zeros(2, 3).t())
    with pytest.raises(RuntimeError, match="stride divisible by 2"):
        ember.view_as_complex(ember.zeros(3, 3)[:, :2])
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        ember.view_as_complex(ember.zeros(5)[1:3])
    with pytest.raises(RuntimeError, match="only supported for float and double tensors"):
        ember.view_as_complex(ember.zeros(2, dtype=ember.float16))
    with pytest.raises(RuntimeError, match="one or more dimensions"):
        ember.view_as_complex(ember.tensor(1.0))
    with pytest.raises(RuntimeError, match="only supported for complex tensors"):
        ember.view_as_real(ember.zeros(2))


def test_real_imag_conj():
    a = rand_complex((2, 3))
    x = ember.from_numpy(a.copy())
    np.testing.assert_array_equal(to_np(x.real), a.real)
    np.testing.assert_array_equal(to_np(ember.imag(x)), a.imag)
    assert x.real.dtype is ember.float32 and x.imag.stride() == (6, 2)
    x.imag.mul_(0)  # views
    assert not to_np(x).imag.any()
    x.real = ember.ones(2, 3)  # assignment writes the part
    assert to_np(x).real.tolist() == [[1.0] * 3] * 2
    y = ember.from_numpy(a)
    np.testing.assert_array_equal(to_np(y.conj()), a.conj())
    np.testing.assert_array_equal(to_np(ember.conj_physical(y)), a.conj())
    assert not y.is_conj() and y.resolve_conj() is y
    z = y.clone().conj_physical_()
    np.testing.assert_array_equal(to_np(z), a.conj())
    np.testing.assert_array_equal(to_np(y.mH), a.T.conj())
    np.testing.assert_array_equal(to_np(y.adjoint()), a.T.conj())
    assert ember.is_complex(y) and y.is_complex() and not ember.ones(1).is_complex()
    np.testing.assert_array_equal(to_np(ember.isreal(ember.tensor([1 + 0j, 1j]))), [True, False])
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        ember.ones(2).imag  # noqa: B018


def test_complex_polar_sgn():
    re, im = np.array([1.0, -2.0, 0.0], np.float32), np.array([0.5, 3.0, 0.0], np.float32)
    c = ember.complex(ember.from_numpy(re), ember.from_numpy(im))
    assert c.dtype is C64
    np.testing.assert_array_equal(to_np(c), re + 1j * im)
    p = ember.polar(ember.from_numpy(np.abs(re)), ember.from_numpy(im))
    np.testing.assert_allclose(to_np(p), np.abs(re) * np.exp(1j * im), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(to_np(ember.sgn(c)), np.where(c.abs().numpy() == 0, 0,
                                                               to_np(c) / np.abs(to_np(c))),
                               rtol=1e-6)
    assert ember.sgn(ember.tensor([-2.0, 0.0, 3.0])).tolist() == [-1.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float"):
        ember.complex(ember.ones(1), ember.ones(1, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="Half, Float or Double"):
        ember.complex(ember.ones(1, dtype=ember.int64), ember.ones(1, dtype=ember.int64))


# ---------------------------------------------------------------------------------------------
# reductions, scans, products


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)])
def test_sum_mean_against_numpy(dtype, dim):
    a = rand_complex((3, 4, 5), dtype, seed=6)
    x = ember.from_numpy(a)
    kw = {} if dim is None else {"dim": dim}
    axis = None if dim is None else dim
    np.testing.assert_allclose(to_np(x.sum(**kw)), a.sum(axis=axis), **TOL[dtype])
    np.testing.assert_allclose(to_np(x.mean(**kw)), a.mean(axis=axis), **TOL[dtype])
    np.testing.assert_allclose(to_np(x.transpose(0, 2).sum(**kw)),
                               a.transpose(2, 1, 0).sum(axis=axis), **TOL[dtype])
    if dim is not None:
        assert x.sum(dim, keepdim=True).dim() == 3


def test_var_std_norm_any_nonzero():
    a = rand_complex((4, 6), C128, seed=7)
    x = ember.from_numpy(a)
    np.testing.assert_allclose(to_np(x.var(1)), a.var(1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(to_np(x.std()), a.std(ddof=1), rtol=1e-12)
    assert x.var().dtype is ember.float64
    np.testing.assert_allclose(to_np(ember.linalg.vector_norm(x, 3, dim=0)),
                               np.linalg.norm(a, 3, axis=0), rtol=1e-12)
    np.testing.assert_allclose(to_np(x.norm()), np.linalg.norm(a), rtol=1e-12)
    z = ember.tensor([0j, 1j, 0j, 2])
    assert z.any().item() and not z.all().item()
    assert ember.count_nonzero(z).item() == 2
    assert ember.nonzero(z).flatten().tolist() == [1, 3]


@pytest.mark.parametrize("dtype", [C64, C128])
def test_cumsum(dtype):
    a = rand_complex((3, 5), dtype, seed=8)
    for d in (0, 1, -1):
        np.testing.assert_allclose(to_np(ember.from_numpy(a).cumsum(d)), a.cumsum(d), **TOL[dtype])


def test_where_cat_index():
    a = rand_complex(6)
    x = ember.from_numpy(a)
    mask = np.array([True, False] * 3)
    np.testing.assert_array_equal(to_np(ember.where(ember.from_numpy(mask), x, 0)),
                                  np.where(mask, a, 0))
    np.testing.assert_array_equal(to_np(ember.cat([x, x[:2]])), np.concatenate([a, a[:2]]))
    np.testing.assert_array_equal(to_np(x[ember.tensor([4, 0])]), a[[4, 0]])
    np.testing.assert_array_equal(to_np(x[x.real > 0]), a[a.real > 0])
    y = x.clone()
    y[1:3] = 9j
    assert y[1:3].tolist() == [9j, 9j]


@pytest.mark.parametrize("dtype", [C64, C128])
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4,)),
                                    ((5, 4), (4,)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul_against_numpy(dtype, shapes):
    a = rand_complex(shapes[0], dtype, seed=9)
    b = rand_complex(shapes[1], dtype, seed=10)
    np.testing.assert_allclose(to_np(ember.from_numpy(a) @ ember.from_numpy(b)), a @ b,
                               rtol=1e-5 if dtype is C64 else 1e-12)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_lu_family_against_numpy(dtype):
    rtol = 1e-4 if dtype is C64 else 1e-10
    A = rand_complex((2, 4, 4), dtype, seed=30) + 2 * np.eye(4, dtype=NP[dtype])
    B = rand_complex((2, 4, 3), dtype, seed=31)
    a, b = ember.from_numpy(A), ember.from_numpy(B)
    np.testing.assert_allclose(to_np(ember.linalg.inv(a)), np.linalg.inv(A), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(to_np(ember.linalg.det(a)), np.linalg.det(A), rtol=rtol)
    np.testing.assert_allclose(to_np(ember.linalg.solve(a, b)), np.linalg.solve(A, B), rtol=rtol,
                               atol=rtol)
    sign, logabs = ember.linalg.slogdet(a)
    ns, nl = np.linalg.slogdet(A)
    assert logabs.dtype is dtype.to_real()
    np.testing.assert_allclose(to_np(sign), ns, rtol=rtol)
    np.testing.assert_allclose(to_np(logabs), nl, rtol=rtol)
    LU, piv = ember.linalg.lu_factor(a)
    np.testing.assert_allclose(to_np(ember.linalg.lu_solve(LU, piv, b)), np.linalg.solve(A, B),
                               rtol=rtol, atol=rtol)
    np.testing.assert_allclose(  # the adjoint is the conjugate transpose
        to_np(ember.linalg.lu_solve(LU, piv, b, adjoint=True)),
        np.linalg.solve(A.conj().transpose(0, 2, 1), B), rtol=rtol, atol=rtol)
    P, L, U = ember.linalg.lu(a)
    np.testing.assert_allclose(to_np(P @ L @ U), A, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_eig_against_numpy(dtype):
    rng = np.random.default_rng(40)
    A = rng.standard_normal((3, 5, 5))
    if dtype.startswith("complex"):
        A = A + 1j * rng.standard_normal((3, 5, 5))
    A = A.astype(dtype)
    tol = 1e-4 if dtype in ("float32", "complex64") else 1e-11
    w, v = ember.linalg.eig(ember.from_numpy(A))
    assert w.dtype is getattr(ember, dtype).to_complex() and v.dtype is w.dtype
    w, v = to_np(w), to_np(v)
    np.testing.assert_allclose(A @ v, v * w[:, None, :], atol=tol * 10)  # A V = V diag(w)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, rtol=tol)  # unit eigenvectors
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(A)),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(to_np(ember.linalg.eigvals(ember.from_numpy(A))), w, rtol=tol,
                               atol=tol)
    if dtype.startswith("float"):  # a real matrix: real eigenvalues exactly real, pairs conjugate
        r = ember.linalg.eigvals(ember.tensor([[0.0, -1.0], [1.0, 0.0]]))
        assert r.tolist() == [1j, -1j]


def test_eig_errors_and_parity():
    with pytest.raises(RuntimeError, match="linalg.eig: input tensor should not contain infs or NaNs"):
        ember.linalg.eig(ember.tensor([[math.nan, 0.0], [0.0, 1.0]]))
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        ember.linalg.eig(ember.zeros(2, 3))
    assert ember.linalg.eig(ember.zeros(0, 0)).eigenvalues.shape == (0,)
    torch = pytest.importorskip("torch")
    A = np.random.default_rng(41).standard_normal((4, 4))
    e, t = ember.linalg.eig(ember.from_numpy(A)), torch.linalg.eig(torch.from_numpy(A))
    np.testing.assert_allclose(to_np(e.eigenvalues), t.eigenvalues.numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_np(e.eigenvectors), t.eigenvectors.numpy(), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("dtype", [C64, C128])
def test_svd_family_against_numpy(dtype):
    tol = 1e-4 if dtype is C64 else 1e-10
    A = rand_complex((2, 5, 3), dtype, seed=50)
    a = ember.from_numpy(A)
    U, S, Vh = ember.linalg.svd(a, full_matrices=False)
    assert S.dtype is dtype.to_real() and U.dtype is dtype and Vh.shape == (2, 3, 3)
    np.testing.assert_allclose(to_np(U * S.unsqueeze(-2)) @ to_np(Vh), A, atol=tol)
    np.testing.assert_allclose(to_np(ember.linalg.svdvals(a)), np.linalg.svd(A, compute_uv=False),
                               rtol=tol)
    assert ember.linalg.svd(a).U.shape == (2, 5, 5)  # full matrices
    np.testing.assert_allclose(to_np(ember.linalg.pinv(a)), np.linalg.pinv(A), atol=tol * 10)
    assert ember.linalg.matrix_rank(a).tolist() == np.linalg.matrix_rank(A).tolist()
    for ord in ("fro", "nuc", 2, -2, 1, -1, math.inf):
        np.testing.assert_allclose(to_np(ember.linalg.matrix_norm(a, ord)),
                                   np.linalg.norm(A, ord, axis=(-2, -1)), rtol=tol)


def test_linspace_and_prod():
    np.testing.assert_allclose(to_np(ember.linspace(0, 1j, 3)), np.linspace(0, 1j, 3))
    z = ember.linspace(1 + 1j, 2, 4, dtype=C128)
    assert z.dtype is C128
    np.testing.assert_allclose(to_np(z), np.linspace(1 + 1j, 2, 4), rtol=1e-15)
    with pytest.raises(RuntimeError, match="can't be safely cast to passed dtype Float"):
        ember.linspace(0, 1j, 3, dtype=ember.float32)
    a = rand_complex((3, 4), C128, seed=51)
    x = ember.from_numpy(a)
    np.testing.assert_allclose(x.prod().item(), np.prod(a), rtol=1e-12)
    np.testing.assert_allclose(to_np(x.prod(1)), np.prod(a, 1), rtol=1e-12)
    assert x.prod(0, keepdim=True).shape == (1, 4)
    assert ember.tensor([1j, 0]).to(ember.bool).tolist() == [True, False]  # (no warning)


def test_matmul_transposed_operands_and_vdot():
    a = rand_complex((4, 3), C128, seed=11)
    b = rand_complex((5, 4), C128, seed=12)
    ea, eb = ember.from_numpy(a), ember.from_numpy(b)
    np.testing.assert_allclose(to_np(ea.t() @ eb.t()), a.T @ b.T, rtol=1e-12)
    np.testing.assert_allclose(to_np(ember.mm(ea.mH, ea)), a.conj().T @ a, rtol=1e-12)
    v, w = a[:, 0].copy(), a[:, 1].copy()
    assert np.isclose(ember.vdot(ember.from_numpy(v), ember.from_numpy(w)).item(), np.vdot(v, w))
    assert np.isclose(ember.dot(ember.from_numpy(v), ember.from_numpy(w)).item(), np.dot(v, w))


# ---------------------------------------------------------------------------------------------
# random, autograd, properties


def test_randn_and_rand():
    g = ember.Generator().manual_seed(0)
    z = ember.randn(200_000, dtype=C64, generator=g)
    assert z.dtype is C64
    # E|z|^2 = 1 with each part of variance 1/2, as torch's
    assert abs(float((z.abs() ** 2).mean()) - 1) < 0.01
    assert abs(float(z.real.var()) - 0.5) < 0.01 and abs(float(z.imag.var()) - 0.5) < 0.01
    u = ember.rand(1000, dtype=C128)
    assert float(u.real.min()) >= 0 and float(u.imag.max()) < 1


def test_gradients_through_complex_tensors():
    # (every formula is gradchecked in packages/autograd/tests/test_complex_autograd.py)
    pytest.importorskip("ember.autograd")
    z = ember.tensor([1 + 2j, -3j], requires_grad=True)
    (z * z.conj()).real.sum().backward()  # |z|^2: gradient 2 z
    np.testing.assert_allclose(to_np(z.grad), [2 + 4j, -6j], rtol=1e-6)
    x = ember.ones(2, requires_grad=True)
    (x * 1j).exp().imag.sum().backward()  # d sin(x) / dx, the real part of the gradient
    assert x.grad.dtype is ember.float32
    np.testing.assert_allclose(to_np(x.grad), [math.cos(1)] * 2, rtol=1e-6)
    with pytest.raises(NotImplementedError,
                       match="'nan_to_num' for complex tensors is not implemented"):
        ember.nan_to_num(z)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
       dtype=st.sampled_from([C64, C128]), seed=st.integers(0, 2**16))
def test_property_mul_conj_is_abs_squared(shape, dtype, seed):
    a = rand_complex(tuple(shape), dtype, seed=seed)
    x = ember.from_numpy(a)
    got = to_np((x * x.conj()).real)
    np.testing.assert_allclose(got, np.abs(a) ** 2, rtol=1e-5 if dtype is C64 else 1e-12,
                               atol=1e-6)
    assert to_np(x + 0).shape == a.shape


def test_isclose_and_assert_close_see_the_imaginary_part():
    a = ember.tensor([1 + 1j, 2 - 1j])
    b = a + 1e-3j
    np.testing.assert_array_equal(to_np(ember.isclose(a, b)), np.isclose(to_np(a), to_np(b)))
    assert not ember.allclose(a, b) and ember.allclose(a, b, atol=1e-2)
    with pytest.raises(AssertionError, match="Mismatched elements: 2 / 2"):
        ember.testing.assert_close(a, b)
    ember.testing.assert_close(a, a.clone())
    # vecdot conjugates its first argument, as torch's
    x, y = rand_complex((2, 3), C128, seed=20), rand_complex((2, 3), C128, seed=21)
    np.testing.assert_allclose(to_np(ember.linalg.vecdot(ember.from_numpy(x), ember.from_numpy(y))),
                               (x.conj() * y).sum(-1), rtol=1e-12)
