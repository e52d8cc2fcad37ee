"""ember.fft's transforms against numpy.fft as the oracle, and against torch.fft where PyTorch is
installed (values, dtypes, shapes and error messages).

numpy.fft has no hfft2 / hfftn / ihfft2 / ihfftn: their oracle is the identity torch and NumPy
document, hfftn(x) = irfftn(conj(x)) and ihfftn(x) = conj(rfftn(x)), with the norm's direction
swapped.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import ember
import ember.fft as F

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # the property tests are skipped
    given = None

C64, C128 = ember.complex64, ember.complex128
NP_DTYPE = {ember.float32: np.float32, ember.float64: np.float64, C64: np.complex64,
            C128: np.complex128}
SINGLE = {np.dtype(np.float32), np.dtype(np.complex64)}
NORMS = [None, "backward", "ortho", "forward"]
SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2", "ihfft2",
       "hfftn", "ihfftn"]
REAL_INPUT = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}  # complex input raises
REAL_OUTPUT = {"irfft", "hfft", "irfft2", "hfft2", "irfftn", "hfftn"}


# ---- the engines ----
# SciPy's pocketfft where SciPy is installed, NumPy's otherwise (ember/fft.py): every test runs
# on each engine present.

ENGINES = ["numpy"] + (["scipy"] if F._pocketfft() is not None else [])


@pytest.fixture(autouse=True, params=ENGINES)
def engine(request):
    saved = list(F._POCKETFFT)
    F._POCKETFFT[:] = [None] if request.param == "numpy" else saved
    try:
        yield request.param
    finally:
        F._POCKETFFT[:] = saved


# ---- the oracle ----

def oracle(name, a, n_or_s, dim, norm):
    """numpy.fft's result for ember.fft.<name>(a, n_or_s, dim, norm) (dim: an int for the 1-d
    transforms, a sequence for the others, already made explicit)."""
    if name in ONE_D:
        if name == "hfft":
            return np.fft.hfft(a, n_or_s, dim, norm)
        if name == "ihfft":
            return np.fft.ihfft(a, n_or_s, dim, norm)
        return getattr(np.fft, name)(a, n_or_s, dim, norm)
    base = name[:-1] + "n" if name.endswith("2") else name
    if base == "hfftn":
        return np.fft.irfftn(np.conj(a), n_or_s, dim, SWAP[norm])
    if base == "ihfftn":
        return np.conj(np.fft.rfftn(a, n_or_s, dim, SWAP[norm]))
    return getattr(np.fft, base)(a, n_or_s, dim, norm)


def random(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def assert_close(got, want):
    """got: an ember tensor; want: NumPy's result, in the precision it should have."""
    want = np.asarray(want)
    g = got.numpy()
    assert g.dtype == want.dtype, (g.dtype, want.dtype)
    assert g.shape == want.shape, (g.shape, want.shape)
    tol = 1e-6 if want.dtype in SINGLE else 1e-12
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(g, want, rtol=tol, atol=tol * scale)


def expected_dtype(name, input_dtype):
    real = {np.float32: np.float32, np.float64: np.float64, np.complex64: np.float32,
            np.complex128: np.float64}[np.dtype(input_dtype).type]
    if name in REAL_OUTPUT:
        return np.dtype(real)
    return np.dtype(np.complex64 if real is np.float32 else np.complex128)


def c2r_default(name, m):
    """A valid n for a c2r transform of an input of m points (the default needs m >= 2)."""
    return None if m >= 2 else 1


# ---- 1-d transforms ----

def valid_dtypes(names):
    """(name, dtype) pairs, without the complex inputs that the real-input transforms refuse."""
    return [(name, dtype) for name in names
            for dtype in (np.float32, np.float64, np.complex64, np.complex128)
            if not (name in REAL_INPUT and np.dtype(dtype).kind == "c")]


@pytest.mark.parametrize("name,dtype", valid_dtypes(ONE_D))
@pytest.mark.parametrize("size", [1, 2, 5, 8, 17, 64, 100])
@pytest.mark.parametrize("norm", NORMS)
def test_1d_against_numpy(name, size, dtype, norm):
    a = random((size,), dtype, seed=size)
    n = c2r_default(name, size) if name in REAL_OUTPUT else None
    got = getattr(F, name)(ember.from_numpy(a), n, norm=norm)
    want = oracle(name, a, n, -1, norm)
    assert got.numpy().dtype == expected_dtype(name, dtype)
    assert_close(got, want.astype(expected_dtype(name, dtype)))


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 16, 33])
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_1d_n_pads_and_truncates(name, n, dim):
    dtype = np.float64 if name in REAL_INPUT else np.complex128
    a = random((6, 10), dtype, seed=n)
    got = getattr(F, name)(ember.from_numpy(a), n=n, dim=dim, norm="ortho")
    assert_close(got, oracle(name, a, n, dim, "ortho"))


@pytest.mark.parametrize("name", ONE_D)
def test_1d_3d_input_each_dim(name):
    dtype = np.float32 if name in REAL_INPUT else np.complex64
    a = random((3, 4, 5), dtype)
    for dim in range(-3, 3):
        n = 7 if name in REAL_OUTPUT else None
        assert_close(getattr(F, name)(ember.from_numpy(a), n, dim), oracle(name, a, n, dim, None))


# ---- n-d transforms ----

def explicit(name, shape, s, dim):
    """torch's defaults made explicit for NumPy: (s, axes)."""
    nd = len(shape)
    if dim is None:
        if name.endswith("2"):
            dim = (-2, -1)
        elif s is None:
            dim = tuple(range(nd))
        else:
            dim = tuple(range(nd - len(s), nd))
    dim = tuple(d % nd for d in dim)
    if s is not None:
        s = tuple(shape[d] if v == -1 else v for v, d in zip(s, dim))
    return s, dim


ND_CASES = [
    ((4, 6), None, None),
    ((5, 7), None, None),
    ((1, 1), (1, 1), None),
    ((3, 5, 7), None, None),
    ((3, 5, 7), None, (0, 2)),
    ((3, 5, 7), None, (-1, 0)),  # dims in any order
    ((3, 5, 7), (4, 9), None),  # s alone: the last len(s) dims
    ((3, 5, 7), (2, 3), (0, -2)),  # truncation
    ((3, 5, 7), (6, 12, 17), None),  # padding, a prime
    ((2, 3, 4, 5), None, (1, 3)),
    ((2, 3, 4, 5), (3, 8), (2, 0)),
]


def nd_cases():
    """(name, shape, s, dim): every n-d transform on ND_CASES, where the case applies to it."""
    cases = []
    for name, (shape, s, dim) in itertools.product(N_D, ND_CASES):
        two_d = name.endswith("2")
        if two_d and ((s is not None and dim is None and len(s) != 2)
                      or (dim is not None and len(dim) != 2)):
            continue  # fft2 and co. transform two dims
        last = (dim or (-2, -1) if two_d else dim or (-1,))[-1]
        if name in REAL_OUTPUT and s is None and shape[last] < 2:
            continue  # the default output size 2 * (m - 1) would be 0
        cases.append((name, shape, s, dim))
    return cases


@pytest.mark.parametrize("name,shape,s,dim", nd_cases())
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_nd_against_numpy(name, shape, s, dim, dtype):
    if name in REAL_INPUT and np.dtype(dtype).kind == "c":
        dtype = np.float64
    a = random(shape, dtype, seed=len(shape))
    es, edim = explicit(name, shape, s, dim)
    for norm in NORMS:
        kw = {} if dim is None else {"dim": dim}
        got = getattr(F, name)(ember.from_numpy(a), s, norm=norm, **kw)
        assert_close(got, oracle(name, a, es, edim, norm).astype(expected_dtype(name, dtype)))


def test_c2r_minus_one_in_s_is_the_default_size():
    a = random((4, 5), np.complex128)
    for name in ("irfftn", "hfftn"):
        got = getattr(F, name)(ember.from_numpy(a), s=(-1, -1))
        assert got.shape == (4, 8)
        assert_close(got, getattr(F, name)(ember.from_numpy(a)).numpy())
        got = getattr(F, name)(ember.from_numpy(a), s=(6, -1), dim=(0, 1))
        assert_close(got, oracle(name, a, (6, 8), (0, 1), None))


def test_fftn_over_no_dims_is_a_complex_copy():
    a = random((3, 4), np.float32)
    x = ember.from_numpy(a)
    for name in ("fftn", "ifftn", "fft2", "ifft2"):
        r = getattr(F, name)(x, dim=(), norm="forward")
        assert r.dtype == C64
        np.testing.assert_array_equal(r.numpy(), a.astype(np.complex64))
    c = ember.from_numpy(random((3,), np.complex128))
    r = F.fftn(c, dim=())
    np.testing.assert_array_equal(r.numpy(), c.numpy())
    r.numpy()[0] = 99  # a copy, not the input
    assert c.numpy()[0] != 99
    z = F.fftn(ember.tensor(2.0))  # a 0-d input: nothing to transform
    assert z.shape == () and z.dtype == C64 and z.item() == 2


# ---- dtypes ----

@pytest.mark.parametrize("dtype", [ember.int64, ember.int32, ember.uint8, ember.bool])
def test_integer_and_bool_inputs_are_promoted_to_the_default_float(dtype, default_dtype):
    x = ember.tensor([1, 0, 1, 1, 0]).to(dtype)
    a = np.array([1, 0, 1, 1, 0], np.float32)
    assert_close(F.fft(x), np.fft.fft(a))
    assert_close(F.rfft(x), np.fft.rfft(a))
    assert_close(F.ihfft(x), np.fft.ihfft(a))
    assert_close(F.irfft(x), np.fft.irfft(a))
    assert_close(F.hfftn(x), np.fft.hfft(a))
    default_dtype(ember.float64)
    assert F.fft(x).dtype == C128 and F.irfft(x).dtype == ember.float64
    assert_close(F.rfftn(x), np.fft.rfftn(a.astype(np.float64)))


def test_single_precision_is_computed_in_single_precision():
    # complex64 in, complex64 out, and not by way of complex128: the result rounds differently
    # from the double transform cast down. (numpy.fft.fft itself, with norm="backward", takes
    # complex64 through its complex128 loop; with "ortho" its factor is a float32 and the loop
    # is the complex64 one, which ember uses for every norm.)
    a = random((4096,), np.complex64, seed=3)
    double = np.fft.fft(a.astype(np.complex128))
    got = F.fft(ember.from_numpy(a)).numpy()
    assert got.dtype == np.complex64
    assert not np.array_equal(got, double.astype(np.complex64))
    np.testing.assert_allclose(got, double, rtol=0, atol=1e-6 * np.abs(double).max())
    # (the core's power-of-two kernel: its own roundings, within float32's of the exact DFT)
    ortho = np.fft.fft(a.astype(np.complex128), norm="ortho")
    np.testing.assert_allclose(F.fft(ember.from_numpy(a), norm="ortho").numpy(), ortho, rtol=0,
                               atol=1e-6 * np.abs(ortho).max())
    r = random((4096,), np.float32, seed=4)
    got = F.rfft(ember.from_numpy(r)).numpy()
    assert got.dtype == np.complex64
    assert not np.array_equal(got, np.fft.rfft(r.astype(np.float64)).astype(np.complex64))
    assert F.irfft(ember.from_numpy(got)).dtype == ember.float32


@pytest.mark.parametrize("dtype,torch_name", [(ember.float16, "Half"),
                                              (ember.bfloat16, "BFloat16")])
def test_half_precision_raises_as_torch_cpu(dtype, torch_name):
    x = ember.ones(4, 8).to(dtype)
    for name in ONE_D + N_D:
        with pytest.raises(RuntimeError, match=f"Unsupported dtype {torch_name}"):
            getattr(F, name)(x)


# ---- layouts ----

def test_non_contiguous_inputs():
    base = random((8, 12), np.complex64, seed=7)
    x = ember.from_numpy(base)
    views = {
        "transposed": (x.t(), base.T),
        "rows": (x[::2], base[::2]),
        "columns": (x[:, 1::3], base[:, 1::3]),
        "offset": (x[3:, 5:], base[3:, 5:]),
        "expanded": (x[:1].expand(4, 12), np.broadcast_to(base[:1], (4, 12))),
    }
    for label, (t, a) in views.items():
        assert not t.is_contiguous() or label == "offset"
        for dim in (0, 1):
            assert_close(F.fft(t, dim=dim), np.fft.fft(a, axis=dim))
            assert_close(F.irfft(t, n=9, dim=dim), np.fft.irfft(a, 9, dim))
            assert_close(F.hfft(t, dim=dim), np.fft.hfft(a, axis=dim))
        assert_close(F.fftn(t), np.fft.fftn(a))
        assert_close(F.irfftn(t, s=(5, 6)), np.fft.irfftn(a, (5, 6), (0, 1)))
        assert_close(F.rfft(ember.view_as_real(t)[..., 0], dim=0), np.fft.rfft(a.real, axis=0))
        assert_close(F.ihfft2(ember.view_as_real(t)[..., 1]),
                     oracle("ihfft2", a.imag, None, (0, 1), None))
    # the input is left as it was
    np.testing.assert_array_equal(x.numpy(), base)


def test_results_are_contiguous_and_own_their_memory():
    a = random((4, 6), np.complex64)
    x = ember.from_numpy(a)
    for name in ("fft", "fftn", "hfft", "irfftn"):
        r = getattr(F, name)(x.t())
        assert r.is_contiguous()
        assert not np.shares_memory(r.numpy(), a)


# ---- out= ----

def test_out_of_the_right_shape_and_dtype_is_written_in_place():
    a = random((3, 8), np.float32)
    x = ember.from_numpy(a)
    for name, shape, dtype, want in [
        ("fft", (3, 8), C64, np.fft.fft(a)),
        ("rfft", (3, 5), C64, np.fft.rfft(a)),
        ("ihfft", (3, 5), C64, np.fft.ihfft(a)),
        ("fftn", (3, 8), C64, np.fft.fftn(a)),
        ("ifft2", (3, 8), C64, np.fft.ifft2(a)),
        ("rfftn", (3, 5), C64, np.fft.rfftn(a)),
        ("irfft", (3, 14), ember.float32, np.fft.irfft(a)),
        ("hfftn", (3, 14), ember.float32, oracle("hfftn", a, None, (0, 1), None)),
        ("ihfftn", (3, 5), C64, oracle("ihfftn", a, None, (0, 1), None)),
    ]:
        out = ember.empty(shape, dtype=dtype)
        ptr = out.data_ptr()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no resize warning
            r = getattr(F, name)(x, out=out)
        assert r is out and out.data_ptr() == ptr, name
        assert_close(out, want.astype(out.numpy().dtype))


def test_out_is_resized_and_cast_as_torch():
    a = random((8,), np.complex64)
    x = ember.from_numpy(a)
    out = ember.empty(0, dtype=C128)  # empty: resized without a warning, cast up
    assert F.fft(x, out=out) is out
    assert out.dtype == C128 and out.shape == (8,)
    np.testing.assert_allclose(out.numpy(), np.fft.fft(a), rtol=1e-6, atol=1e-6)
    out = ember.empty(3, dtype=C64)
    with pytest.warns(UserWarning, match="was resized"):
        F.ifft(x, out=out)
    assert_close(out, np.fft.ifft(a))
    out = ember.empty(0, dtype=ember.float64)
    F.irfft(x, 10, out=out)
    np.testing.assert_allclose(out.numpy(), np.fft.irfft(a, 10), rtol=1e-6, atol=1e-6)
    # out= the input itself: NumPy reads an overlapping input through a copy
    for fn, want in [(F.fft, np.fft.fft(a)), (F.fftn, np.fft.fftn(a)), (F.ifft, np.fft.ifft(a))]:
        y = ember.from_numpy(a.copy())
        assert fn(y, out=y) is y
        assert_close(y, want)
    # a non-contiguous out of the right shape is written through its strides
    big = ember.zeros(8, 2, dtype=C64)
    col = big[:, 1]
    assert F.fft(x, out=col) is col
    assert_close(col, np.fft.fft(a))
    assert (big[:, 0].numpy() == 0).all()


@pytest.mark.parametrize("name,out_dtype,message", [
    ("fft", ember.float32, "fft expects a complex output tensor, but got Float"),
    ("rfft", ember.float64, "rfft expects a complex output tensor, but got Double"),
    ("irfft", C64, "irfft expects a floating point output tensor, but got ComplexFloat"),
    ("hfft", ember.int64, "hfft expects a floating point output tensor, but got Long"),
    ("ihfft", C128, "Found dtype ComplexDouble but expected ComplexFloat"),
    ("ifft", C128, "Found dtype ComplexDouble but expected ComplexFloat"),  # real input
    ("fft2", ember.float32, "fftn expects a complex output tensor, but got Float"),
    ("rfftn", ember.float32, "rfftn expects a complex output tensor, but got Float"),
    ("irfft2", C64, "irfftn expects a floating point output tensor, but got ComplexFloat"),
    ("hfftn", C128, "hfftn expects a floating point output tensor, but got ComplexDouble"),
    ("ihfft2", ember.float32, "ihfftn expects a complex output tensor, but got Float"),
])
def test_out_dtype_errors(name, out_dtype, message):
    x = ember.ones(4, 6)
    with pytest.raises(RuntimeError, match=message):
        getattr(F, name)(x, out=ember.empty(0, dtype=out_dtype))


# ---- errors ----

@pytest.mark.parametrize("call,exc,message", [
    (lambda x: F.fft(x, norm="bad"), RuntimeError, 'Invalid normalization mode: "bad"'),
    (lambda x: F.ifftn(x, norm="Ortho"), RuntimeError, 'Invalid normalization mode: "Ortho"'),
    (lambda x: F.fft(x, n=0), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x: F.rfft(x, n=-3), RuntimeError, r"Invalid number of data points \(-3\) specified"),
    (lambda x: F.irfft(x[:, :1]), RuntimeError, r"Invalid number of data points \(0\)"),
    (lambda x: F.fftn(x, s=(0, 3)), RuntimeError, r"Invalid number of data points \(0\)"),
    (lambda x: F.fftn(x, s=(-2, 3)), RuntimeError, r"Invalid number of data points \(-2\)"),
    (lambda x: F.fft(x, dim=2), IndexError,
     r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda x: F.hfft(x, dim=-3), IndexError, r"range of \[-2, 1\], but got -3\)"),
    (lambda x: F.fftn(x, dim=(0, 5)), IndexError, r"range of \[-2, 1\], but got 5\)"),
    (lambda x: F.fft(ember.tensor(1.0)), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    (lambda x: F.fftn(x, s=(3,), dim=(0, 1)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda x: F.fft2(x, s=(3,)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda x: F.fftn(x, s=(1, 2, 3)), RuntimeError,
     "Got shape with 3 values but input tensor only has 2 dimensions."),
    (lambda x: F.fftn(x, dim=(0, -2)), RuntimeError, "FFT dims must be unique"),
    (lambda x: F.rfftn(x, dim=()), RuntimeError, "rfftn must transform at least one axis"),
    (lambda x: F.irfft2(x, dim=()), RuntimeError, "irfftn must transform at least one axis"),
    (lambda x: F.hfftn(x, dim=()), RuntimeError, "hfftn must transform at least one axis"),
    (lambda x: F.ihfftn(x, dim=()), RuntimeError, "ihfftn must transform at least one axis"),
    (lambda x: F.rfft(x.to(C64)), RuntimeError,
     "rfft expects a real input tensor, but got ComplexFloat"),
    (lambda x: F.ihfft(x.to(C128)), RuntimeError,
     "ihfft expects a real input tensor, but got ComplexDouble"),
    (lambda x: F.rfft2(x.to(C64)), RuntimeError,
     "rfftn expects a real-valued input tensor, but got ComplexFloat"),
    (lambda x: F.ihfftn(x.to(C64)), RuntimeError,
     "Only supports floating-point dtypes, but found: ComplexFloat"),
    (lambda x: F.fft([1.0, 2.0]), TypeError,
     r"fft_fft\(\): argument 'input' \(position 1\) must be Tensor, not list"),
    (lambda x: F.fft(x, n=2.0), TypeError, r"fft_fft\(\): argument 'n' must be int, not float"),
    (lambda x: F.fft(x, n=True), TypeError, r"fft_fft\(\): argument 'n' must be int, not bool"),
    (lambda x: F.fft(x, dim=None), TypeError,
     r"fft_fft\(\): argument 'dim' must be int, not NoneType"),
    (lambda x: F.fft(x, dim=(0,)), TypeError,
     r"fft_fft\(\): argument 'dim' must be int, not tuple"),
    (lambda x: F.fft(x, norm=1), TypeError, r"fft_fft\(\): argument 'norm' must be str, not int"),
    (lambda x: F.fftn(x, s=(None,)), TypeError,
     r"fft_fftn\(\): argument 's' must be tuple of ints, not tuple"),
    (lambda x: F.rfft2(x, dim="ab"), TypeError,
     r"fft_rfft2\(\): argument 'dim' must be tuple of ints, not str"),
])
def test_errors(call, exc, message):
    x = ember.ones(4, 6)
    with pytest.raises(exc, match=message):
        call(x)


def test_the_checks_come_in_torchs_order():
    x = ember.ones(4, 6)
    with pytest.raises(RuntimeError, match="data points"):  # n before norm
        F.fft(x, n=0, norm="bad")
    with pytest.raises(IndexError):  # dim before n
        F.fft(x, n=0, dim=3)
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):  # 1-d: the dtype first
        F.fft(x.to(ember.float16), dim=3)
    with pytest.raises(IndexError):  # n-d: the dims first
        F.fftn(x.to(ember.float16), dim=(3,))
    with pytest.raises(RuntimeError, match="real input"):  # rfft: the input before out=
        F.rfft(x.to(C64), out=ember.empty(0))


def test_int_like_arguments():
    a = random((4, 6), np.complex128)
    x = ember.from_numpy(a)
    assert_close(F.fft(x, n=np.int64(8), dim=np.int32(0)), np.fft.fft(a, 8, 0))
    assert_close(F.fftn(x, s=3, dim=1), np.fft.fftn(a, (3,), (1,)))  # an int for a sequence
    assert_close(F.ifftn(x, s=ember.Size([5, 4])), np.fft.ifftn(a, (5, 4), (0, 1)))


def test_an_input_requiring_grad_gives_the_same_values_and_refuses_out():
    # (the gradients themselves are gradchecked in packages/autograd/tests/test_complex_autograd.py)
    pytest.importorskip("ember.autograd")
    x = ember.from_numpy(random((2, 4), np.float32)).requires_grad_()
    half = F.rfft(x.detach()).requires_grad_()  # a one-sided spectrum for the c2r transforms
    for name in ONE_D + N_D:
        fn = getattr(F, name)
        src = half if name.startswith(("irfft", "hfft")) else x
        got = fn(src)
        with ember.no_grad():
            expected = fn(src)
        assert got.requires_grad and got.grad_fn is not None
        np.testing.assert_array_equal(got.detach().numpy(), expected.numpy())
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            fn(src, out=expected.clone())
    with ember.no_grad():  # nothing is recorded
        assert F.rfft(x).grad_fn is None


def test_empty_batches():
    x = ember.ones(0, 8)
    assert F.fft(x).shape == (0, 8)
    assert F.rfft(x).shape == (0, 5)
    assert F.irfft(x).shape == (0, 14)
    assert F.fft(ember.ones(2, 0), dim=0).shape == (2, 0)
    assert_close(F.fft(ember.ones(0), n=4), np.zeros(4, np.complex64))


def test_namespace():
    public = {"fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
              "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn",
              "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"}
    assert set(F.__all__) == public and len(F.__all__) == len(public)
    for name in public:
        assert callable(getattr(F, name)) and getattr(ember.fft, name) is getattr(F, name)
    assert not hasattr(F, "no_such_transform")


def test_the_public_numpy_fft_path(monkeypatch):
    """NumPy without numpy.fft's gufuncs (1.x): the public numpy.fft functions, same results."""
    a = random((5, 6), np.complex64, seed=9)
    r = random((5, 6), np.float64, seed=10)
    want = {name: getattr(F, name)(ember.from_numpy(r if name in REAL_INPUT else a), norm="ortho")
            for name in ONE_D + N_D}
    monkeypatch.setattr(F, "_pfu", None)
    for name in ONE_D + N_D:
        got = getattr(F, name)(ember.from_numpy(r if name in REAL_INPUT else a), norm="ortho")
        assert_close(got, want[name].numpy())
    out = ember.empty(5, 6, dtype=C64)
    assert F.fft2(ember.from_numpy(a), out=out) is out
    assert_close(out, np.fft.fft2(a))


# ---- against torch ----

TORCH_DTYPES = ["float32", "complex128", "int64", "float16"]


def _run(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return type(e).__name__, str(e)
    return "ok", str(r.dtype).split(".")[-1], tuple(r.shape)


@pytest.mark.parametrize("name", ONE_D + N_D)
def test_errors_and_result_types_match_torch(torch, name):
    def make(lib, shape, dtype):
        a = (np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) % 5) + 1
        if lib == "torch":
            return torch.from_numpy(a).to(getattr(torch, dtype))
        return ember.from_numpy(a).to(getattr(ember, dtype))

    one_d_kwargs = [{}, {"n": 0}, {"n": -1}, {"n": 5}, {"dim": 1}, {"dim": -2}, {"dim": 5},
                    {"norm": "bad"}, {"n": 0, "norm": "bad"}, {"dim": 3, "n": 0},
                    {"dim": 3, "norm": "bad"}, {"n": 1, "norm": "forward"}]
    n_d_kwargs = [{}, {"s": (3,)}, {"s": (0, 3)}, {"s": (-1, 3)}, {"s": (-2, 3)},
                  {"s": (2, 3, 4, 5)}, {"dim": (0, 0)}, {"dim": (0, -2)}, {"dim": ()},
                  {"dim": (5,)}, {"s": (3,), "dim": (0, 1)}, {"norm": "bad"},
                  {"s": (0,), "norm": "bad"}, {"dim": (-1,)}, {"s": (4,), "dim": (0,)},
                  {"dim": 0}, {"s": 3}, {"s": (1, 1)}, {"s": (3, -1)}]
    shapes = [(), (1,), (6,), (4, 6), (3, 4, 5)]
    outs = [None, "float32", "float64", "complex64", "complex128", "int64"]
    mismatches, kinds = [], set()
    for shape, dtype, kwargs, out in itertools.product(
            shapes, TORCH_DTYPES, one_d_kwargs if name in ONE_D else n_d_kwargs, outs):
        if out is not None and (kwargs or shape not in [(6,), (4, 6)]):
            continue
        if name == "ihfftn" and shape == (6,) and out is not None:
            continue  # torch 2.13: ihfftn over one dim leaves out= unwritten (see fft.py)

        def call(lib, mod, shape=shape, dtype=dtype, kwargs=kwargs, out=out):
            kw = dict(kwargs)
            if out is not None:
                kw["out"] = mod.empty(0, dtype=getattr(mod, out))
            return getattr(mod.fft, name)(make(lib, shape, dtype), **kw)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = _run(lambda: call("torch", torch))
            e = _run(lambda: call("ember", ember))
        kinds.add(t[0])
        if t != e:
            mismatches.append((shape, dtype, kwargs, out, t, e))
    assert not mismatches, "\n".join(map(str, mismatches[:20]))
    assert {"ok", "RuntimeError", "IndexError"} <= kinds


def test_argument_type_errors_match_torch(torch):
    x, t = ember.ones(4, 6), torch.ones(4, 6)
    cases = [("fft", {"n": 2.0}), ("fft", {"n": True}), ("fft", {"dim": None}),
             ("ifft", {"dim": (0,)}), ("rfft", {"norm": 1}), ("fftn", {"s": (None,)}),
             ("fft2", {"s": 4}), ("ihfftn", {"s": 4.5}), ("rfft2", {"dim": None}),
             ("fftn", {"dim": None}), ("hfft2", {"s": None})]
    for name, kw in cases:
        ours = _run(lambda name=name, kw=kw: getattr(F, name)(x, **kw))
        assert ours == _run(lambda name=name, kw=kw: getattr(torch.fft, name)(t, **kw)), (name, kw)
    assert _run(lambda: F.hfft([1.0])) == _run(lambda: torch.fft.hfft([1.0]))


@pytest.mark.parametrize("name", ONE_D + N_D)
def test_values_match_torch(torch, name):
    """Also on inputs that are not Hermitian (the c2r transforms drop the imaginary parts that a
    real output cannot have, as torch's do)."""
    for shape, dtype in itertools.product([(5,), (16,), (17,), (3, 4), (2, 3, 5), (4, 1)],
                                          [np.float32, np.float64, np.complex64, np.complex128]):
        if name in REAL_INPUT and np.dtype(dtype).kind == "c":
            continue
        if name in REAL_OUTPUT and shape[-1] < 2:
            continue
        if name[-1] == "2" and len(shape) < 2:
            continue
        a = random(shape, dtype, seed=sum(shape))
        for norm in NORMS:
            e = getattr(F, name)(ember.from_numpy(a), norm=norm).numpy()
            t = getattr(torch.fft, name)(torch.from_numpy(a.copy()), norm=norm)
            t = t.resolve_conj().numpy()
            assert e.dtype == t.dtype and e.shape == t.shape, (shape, dtype, norm)
            tol = 1e-6 if e.dtype in SINGLE else 1e-12
            np.testing.assert_allclose(e, t, rtol=tol, atol=tol * max(1, np.abs(t).max()))


# ---- properties ----

needs_hypothesis = pytest.mark.skipif(given is None, reason="hypothesis is not installed")

if given is not None:
    shapes_and_dims = st.lists(st.integers(1, 9), min_size=1, max_size=3).flatmap(
        lambda shape: st.tuples(st.just(tuple(shape)),
                                st.integers(-len(shape), len(shape) - 1),
                                st.sampled_from([np.complex64, np.complex128]),
                                st.sampled_from(NORMS),
                                st.integers(0, 2**31 - 1)))
else:  # placeholders: the tests below are skipped
    def given(*a, **k):
        return lambda f: f

    def settings(*a, **k):
        return lambda f: f

    shapes_and_dims = None


@needs_hypothesis
@settings(max_examples=60, deadline=None)
@given(shapes_and_dims)
def test_ifft_inverts_fft(case):
    shape, dim, dtype, norm, seed = case
    a = random(shape, dtype, seed)
    x = ember.from_numpy(a)
    back = F.ifft(F.fft(x, dim=dim, norm=norm), dim=dim, norm=norm).numpy()
    tol = 1e-5 if dtype is np.complex64 else 1e-12
    np.testing.assert_allclose(back, a, rtol=tol, atol=tol)
    back = F.ifftn(F.fftn(x, norm=norm), norm=norm).numpy()
    np.testing.assert_allclose(back, a, rtol=tol, atol=tol)


@needs_hypothesis
@settings(max_examples=60, deadline=None)
@given(shapes_and_dims)
def test_irfft_inverts_rfft(case):
    shape, dim, dtype, norm, seed = case
    real = np.float32 if dtype is np.complex64 else np.float64
    a = random(shape, real, seed)
    x = ember.from_numpy(a)
    n = shape[dim]
    back = F.irfft(F.rfft(x, dim=dim, norm=norm), n, dim=dim, norm=norm).numpy()
    tol = 1e-5 if real is np.float32 else 1e-12
    assert back.dtype == real
    np.testing.assert_allclose(back, a, rtol=tol, atol=tol)
    back = F.irfftn(F.rfftn(x, norm=norm), shape, norm=norm).numpy()
    np.testing.assert_allclose(back, a, rtol=tol, atol=tol)
    back = F.hfft(F.ihfft(x, dim=dim, norm=norm), n, dim=dim, norm=norm).numpy()
    np.testing.assert_allclose(back, a, rtol=tol, atol=tol)
