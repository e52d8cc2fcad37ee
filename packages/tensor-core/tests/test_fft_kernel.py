"""The core's FFT kernel for power-of-two lengths (ops/fft.cpp, ops/cpu/fft.cpp; ATen's
_fft_c2c) against NumPy's FFT in double precision: every layout it takes (rows as vectors, rows
in blocks of lanes, columns, the six-step form of a long row), both directions, the three normalisations,
both precisions, and its refusals."""

import numpy as np
import pytest

import ember
import ember.fft

C = ember._C
RNG = np.random.default_rng(11)

NUMPY_NORM = {(True, 0): "backward", (True, 1): "ortho", (True, 2): "forward",
              (False, 0): "forward", (False, 1): "ortho", (False, 2): "backward"}

CASES = [  # shape, dims: the layouts
    ((1,), [0]), ((2,), [0]), ((4,), [0]), ((8,), [0]), ((64,), [0]),  # a few lanes of rows
    ((3, 128), [1]), ((17, 32), [1]), ((40, 64), [-1]),  # rows: partial and whole blocks
    ((256,), [0]), ((512,), [0]), ((2048,), [0]), ((1 << 15,), [0]),  # six-step, n1 = n2 or not
    ((2, 1024), [1]), ((5, 256), [1]), ((3, 4096), [-1]), ((1 << 16,), [0]),  # vector rows
    ((7, 64), [1]), ((2, 16), [1]),  # vector rows of a narrower copy's lanes, or lane rows
    ((1 << 17,), [0]), ((2, 1 << 20), [1]),  # vector rows, long
    ((1 << 21,), [0]),  # six-step over lanes
    ((64, 5), [0]), ((16, 40), [0]), ((3, 32, 17), [1]),  # columns, partial lanes
    ((32, 64), [0, 1]), ((8, 4, 16), [2, 0]),  # several dims in turn
]


@pytest.mark.parametrize("shape,dims", CASES, ids=[f"{s}-{d}" for s, d in CASES])
@pytest.mark.parametrize("dtype,tol", [(np.complex64, 2e-6), (np.complex128, 1e-13)])
def test_matches_numpy(shape, dims, dtype, tol):
    a = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    for forward in (True, False):
        for norm in (0, 1, 2):
            got = C._fft_c2c(ember.from_numpy(a), dims, norm, forward).numpy()
            want = (np.fft.fftn if forward else np.fft.ifftn)(
                a.astype(np.complex128), axes=dims, norm=NUMPY_NORM[forward, norm])
            assert got.dtype == dtype and got.shape == want.shape
            scale = max(np.abs(want).max(), 1e-300)
            assert np.abs(got - want).max() / scale <= tol, (forward, norm)


def test_non_contiguous_input_and_a_new_result():
    a = (RNG.standard_normal((512, 6)) + 1j * RNG.standard_normal((512, 6))).astype(np.complex64)
    x = ember.from_numpy(a).t()  # the transformed dim has stride 6
    got = C._fft_c2c(x, [1], 0, True)
    np.testing.assert_allclose(got.numpy(), np.fft.fft(a.T.astype(np.complex128)), rtol=0,
                               atol=2e-6 * np.abs(got.numpy()).max())
    assert got.is_contiguous()
    np.testing.assert_array_equal(x.numpy(), a.T)  # the input is untouched


def test_an_impulse_and_a_constant():
    n = 4096
    x = np.zeros(n, np.complex128)
    x[0] = 1
    np.testing.assert_allclose(C._fft_c2c(ember.from_numpy(x), [0], 0, True).numpy(),
                               np.ones(n), atol=1e-15)
    np.testing.assert_allclose(C._fft_c2c(ember.from_numpy(np.ones(n, np.complex128)), [0], 2,
                                          True).numpy()[:3], [1, 0, 0], atol=1e-15)


def test_ember_fft_routes_rows_to_the_kernel_and_agrees_with_pocketfft():
    # ember.fft.fft of rows of 1024 points runs the kernel, of 48 points pocketfft: both agree
    # with NumPy to float32 rounding, and gradients flow through the kernel
    for rows, n in ((3, 1024), (32, 1024), (32, 48)):
        a = (RNG.standard_normal((rows, n)) + 1j * RNG.standard_normal((rows, n)))
        x = ember.from_numpy(a.astype(np.complex64))
        want = np.fft.fft(a.astype(np.complex64).astype(np.complex128))
        np.testing.assert_allclose(ember.fft.fft(x).numpy(), want, rtol=0,
                                   atol=2e-6 * np.abs(want).max())
    gradcheck = pytest.importorskip("ember.autograd").gradcheck  # (ember-autograd's)
    xg = ember.randn(2, 256, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: ember.fft.ifft(ember.fft.fft(t) * 2, norm="ortho").real, (xg,))


def test_refusals():
    with pytest.raises(NotImplementedError, match="power-of-two"):
        C._fft_c2c(ember.ones(12, dtype=ember.complex64), [0], 0, True)
    with pytest.raises(RuntimeError, match="complex64 or complex128"):
        C._fft_c2c(ember.ones(16), [0], 0, True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        C._fft_c2c(ember.ones(16, dtype=ember.complex64), [1], 0, True)
    with pytest.raises(RuntimeError, match="unique"):
        C._fft_c2c(ember.ones(4, 4, dtype=ember.complex64), [0, -2], 0, True)
    with pytest.raises(ValueError, match="normalization"):
        C._fft_c2c(ember.ones(4, dtype=ember.complex64), [0], 3, True)
    e = C._fft_c2c(ember.ones(0, 4, dtype=ember.complex64), [1], 0, True)
    assert tuple(e.shape) == (0, 4)


COLUMN_PLANS = [  # shape, s, dim of an n-d call: kernel columns mixed with pocketfft steps
    ((64, 64), None, (-2, -1)), ((16, 256, 16), None, (0, 1, 2)), ((128, 8), None, (0,)),
    ((2048, 16), None, (0,)),  # longer columns than the kernel takes: pocketfft
    ((32, 4), None, (0, 1)),  # fewer columns than it takes
    ((48, 16), (64, 16), (0, 1)), ((80, 32), (64, 20), (0, 1)),  # padded, cut to a power of two
    ((8, 12, 16), None, (1, 0)), ((4, 32, 16), (-1, 16), (2, 1)),
]


@pytest.mark.parametrize("shape,s,dim", COLUMN_PLANS, ids=[f"{p[0]}-{p[1]}-{p[2]}"
                                                          for p in COLUMN_PLANS])
@pytest.mark.parametrize("name", ["fftn", "ifftn"])
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_column_steps_run_in_the_kernel_and_agree_with_numpy(shape, s, dim, name, norm):
    """A power-of-two transform down an inner dim (at least 8 columns after it, at most 1024
    points) runs in the kernel, before the plan's pocketfft steps; the input is left as it was
    (a cut is a view of it), out= receives the last step, and float32 stays float32."""
    a = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)
    kept = a.copy()
    x = ember.from_numpy(a)
    f = getattr(ember.fft, name)
    got = f(x, s, dim, norm)
    want = getattr(np.fft, name)(a.astype(np.complex128), s, dim, norm)
    assert got.dtype == ember.complex64 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=2e-6 * np.abs(want).max())
    np.testing.assert_array_equal(a, kept)
    out = ember.empty(want.shape, dtype=ember.complex64)
    assert f(x, s, dim, norm, out=out) is out
    np.testing.assert_array_equal(out.numpy(), got.numpy())


def test_the_kernel_takes_power_of_two_rows_and_contiguous_columns_only():
    takes = ember.fft._core_kernel_takes
    col = ember.zeros(64, 16, dtype=ember.complex64)
    assert takes(col, "fft", 0, 64) and takes(col, "ifft", 0, 64)
    assert not takes(col, "rfft", 0, 64)
    assert not takes(col.t(), "fft", 0, 16)  # a strided column: pocketfft reads it in place
    # rows (the last dim) of 64 points or more, strided ones too (the kernel copies them)
    assert takes(col.t(), "fft", 1, 64) and takes(ember.zeros(300, 64, dtype=ember.complex64),
                                                   "ifft", 1, 64)
    assert not takes(ember.zeros(300, 32, dtype=ember.complex64), "fft", 1, 32)
    assert not takes(ember.zeros(48, 16, dtype=ember.complex64), "fft", 0, 48)
    assert not takes(ember.zeros(4096, 16, dtype=ember.complex64), "fft", 0, 4096)
    assert not takes(ember.zeros(64, 4, dtype=ember.complex64), "fft", 0, 64)
    # a single-dim call down a column runs the kernel and gives NumPy's values
    a = (RNG.standard_normal((256, 24)) + 1j * RNG.standard_normal((256, 24))).astype(np.complex64)
    want = np.fft.fft(a.astype(np.complex128), axis=0)
    got = ember.fft.fft(ember.from_numpy(a), dim=0).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max())


FAST_CASES = [  # shape, dim: pocketfft's rows and columns, the kernel's rows, odd lengths
    ((64,), -1), ((5, 7), 0), ((3, 9), 1), ((2, 3, 16), -2), ((1024,), 0), ((3, 512), -1),
    ((20, 256), -1), ((4, 1, 6), 1), ((0, 8), 1),
    ((2, 257), -1), ((129,), 0),  # irfft's 512 and 256 points: the kernel
]


@pytest.mark.parametrize("shape,dim", FAST_CASES, ids=[f"{s}-{d}" for s, d in FAST_CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_usual_call_agrees_with_the_general_path_and_numpy(shape, dim, dtype):
    """fft/ifft/rfft/irfft with n, norm and out left to their defaults take a shorter path (straight
    to pocketfft or the kernel); naming a default argument takes the general one. Both give
    NumPy's values, in the input's precision, on contiguous and strided inputs."""
    cdt = np.complex64 if dtype == np.float32 else np.complex128
    tol = 2e-6 if dtype == np.float32 else 1e-13
    re = RNG.standard_normal(shape).astype(dtype)
    z = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(cdt)
    for strided in (False, True):
        xr, xz = ember.from_numpy(re), ember.from_numpy(z)
        if strided:  # the same values through a transposed copy
            xr = ember.from_numpy(np.ascontiguousarray(re.T)).T
            xz = ember.from_numpy(np.ascontiguousarray(z.T)).T
        for name, x, a in (("fft", xz, z), ("ifft", xz, z), ("rfft", xr, re), ("irfft", xz, z)):
            if name == "irfft" and shape[dim] < 2:
                continue  # (no points to make: the general path's error)
            f = getattr(ember.fft, name)
            got = f(x, dim=dim)
            general = f(x, None, dim, "backward")  # norm named: the general path
            want = getattr(np.fft, name)(a.astype(np.complex128 if name != "rfft" else
                                                  np.float64), axis=dim)
            assert got.dtype == general.dtype == (ember.from_numpy(re) if name == "irfft"
                                                  else ember.from_numpy(z)).dtype
            atol = tol * max(1.0, np.abs(want).max(initial=0.0))
            assert tuple(got.shape) == want.shape
            np.testing.assert_allclose(got.numpy(), general.numpy(), rtol=0, atol=atol)
            np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=atol)


def test_the_usual_call_keeps_the_general_paths_errors_and_gradients():
    with pytest.raises(IndexError):
        ember.fft.fft(ember.zeros((), dtype=ember.complex64))
    with pytest.raises(IndexError):
        ember.fft.fft(ember.zeros(4, dtype=ember.complex64), dim=1)
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        ember.fft.fft(ember.zeros(0, dtype=ember.complex64))
    with pytest.raises(RuntimeError, match="expects a real input"):
        ember.fft.rfft(ember.zeros(4, dtype=ember.complex64))
    with pytest.raises(TypeError):
        ember.fft.fft([1.0, 2.0])
    # a real input to fft, an integer one: the general path's promotion
    np.testing.assert_allclose(ember.fft.fft(ember.arange(4)).numpy(), np.fft.fft(np.arange(4)),
                               atol=1e-6)
    ember_autograd = pytest.importorskip("ember.autograd")
    x = ember.randn(8, dtype=ember.complex128, requires_grad=True)
    y = ember.fft.fft(x)
    assert y.grad_fn is not None
    assert ember_autograd.gradcheck(lambda t: ember.fft.fft(t).abs(), (x,))


# ---- real input: _fft_r2c (an n/2-point complex FFT of the pairs of points, then the split) ----

REAL_CASES = [(2,), (4,), (8,), (16,), (64,), (3, 256), (5, 1024), (2, 3, 512), (1 << 16,),
              (0, 256)]


@pytest.mark.parametrize("shape", REAL_CASES, ids=[str(s) for s in REAL_CASES])
@pytest.mark.parametrize("dtype,tol", [(np.float32, 2e-6), (np.float64, 1e-13)])
def test_real_input_matches_numpy(shape, dtype, tol):
    a = RNG.standard_normal(shape).astype(dtype)
    for norm, numpy_norm in ((0, "backward"), (1, "ortho"), (2, "forward")):
        got = C._fft_r2c(ember.from_numpy(a), [-1], norm, True).numpy()
        want = np.fft.rfft(a.astype(np.float64), axis=-1, norm=numpy_norm)
        assert got.dtype == (np.complex64 if dtype == np.float32 else np.complex128)
        assert got.shape == want.shape
        if want.size:
            assert np.abs(got - want).max() / np.abs(want).max() <= tol, norm


def test_real_input_strided_and_special_signals():
    a = RNG.standard_normal((512, 6))
    x = ember.from_numpy(a).t()  # the transformed dim has stride 6
    np.testing.assert_allclose(C._fft_r2c(x, [1], 0, True).numpy(), np.fft.rfft(a.T), rtol=0,
                               atol=1e-12 * np.abs(np.fft.rfft(a.T)).max())
    np.testing.assert_array_equal(x.numpy(), a.T)  # the input is untouched
    n = 1024
    impulse = np.zeros(n)
    impulse[1] = 1  # X_k = w_n^k
    np.testing.assert_allclose(C._fft_r2c(ember.from_numpy(impulse), [0], 0, True).numpy(),
                               np.exp(-2j * np.pi * np.arange(n // 2 + 1) / n), atol=1e-15)
    alternating = np.cos(np.pi * np.arange(n))  # all of it at the Nyquist frequency
    want = np.zeros(n // 2 + 1, complex)
    want[-1] = n
    np.testing.assert_allclose(C._fft_r2c(ember.from_numpy(alternating), [0], 0, True).numpy(),
                               want, atol=1e-12)


def test_real_input_refusals():
    with pytest.raises(NotImplementedError, match="power-of-two"):
        C._fft_r2c(ember.ones(12), [0], 0, True)
    with pytest.raises(NotImplementedError, match="power-of-two"):
        C._fft_r2c(ember.ones(1), [0], 0, True)
    with pytest.raises(NotImplementedError, match="last dim"):
        C._fft_r2c(ember.ones(8, 4), [0], 0, True)
    with pytest.raises(NotImplementedError, match="one dim"):
        C._fft_r2c(ember.ones(8, 4), [0, 1], 0, True)
    with pytest.raises(NotImplementedError, match="one-sided"):
        C._fft_r2c(ember.ones(8), [0], 0, False)
    with pytest.raises(RuntimeError, match="float32 or float64"):
        C._fft_r2c(ember.ones(8, dtype=ember.complex64), [0], 0, True)
    with pytest.raises(RuntimeError, match="float32 or float64"):
        C._fft_r2c(ember.ones(8, dtype=ember.int64), [0], 0, True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        C._fft_r2c(ember.ones(8), [1], 0, True)
    with pytest.raises(ValueError, match="normalization"):
        C._fft_r2c(ember.ones(8), [0], 3, True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ember_fft_real_transforms_through_the_kernel_agree_with_numpy(dtype):
    takes = ember.fft._core_kernel_takes
    assert takes(ember.zeros(3, 256), "rfft", 1, 256)
    assert not takes(ember.zeros(3, 128), "rfft", 1, 128)  # short rows: pocketfft
    assert not takes(ember.zeros(256, 3), "rfft", 0, 256)  # not the last dim
    assert not takes(ember.zeros(3, 256, dtype=ember.int64), "rfft", 1, 256)
    tol = 2e-6 if dtype == np.float32 else 1e-12
    a = RNG.standard_normal((4, 16, 512)).astype(dtype)
    x = ember.from_numpy(a)
    ref = a.astype(np.float64)

    def close(got, want):
        assert np.abs(got.numpy() - want).max() <= tol * np.abs(want).max()

    close(ember.fft.rfft(x), np.fft.rfft(ref))  # the usual call
    close(ember.fft.rfft(x, norm="ortho"), np.fft.rfft(ref, norm="ortho"))  # the general path
    close(ember.fft.rfft(x, n=1024), np.fft.rfft(ref, n=1024))  # padded
    close(ember.fft.rfft2(x), np.fft.rfft2(ref))  # then a column step
    close(ember.fft.rfftn(x, s=(8, 256)), np.fft.rfftn(ref, s=(8, 256), axes=(1, 2)))  # cut
    out = ember.empty(0, dtype=ember.complex64 if dtype == np.float32 else ember.complex128)
    assert ember.fft.rfft(x, out=out) is out
    close(out, np.fft.rfft(ref))
    gradcheck = pytest.importorskip("ember.autograd").gradcheck  # (ember-autograd's)
    xg = ember.randn(2, 256, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: ember.fft.rfft(t, norm="forward").abs(), (xg,))


# ---- the inverse: _fft_c2r (the join of the one-sided spectrum, then an n/2-point inverse) ----

@pytest.mark.parametrize("shape", REAL_CASES, ids=[str(s) for s in REAL_CASES])
@pytest.mark.parametrize("dtype,tol", [(np.complex64, 3e-6), (np.complex128, 1e-13)])
def test_real_output_matches_numpy(shape, dtype, tol):
    n = shape[-1]
    half = (*shape[:-1], n // 2 + 1)
    # imaginary parts in the first and the last value too: both are ignored, as NumPy does
    x = (RNG.standard_normal(half) + 1j * RNG.standard_normal(half)).astype(dtype)
    for norm, numpy_norm in ((0, "forward"), (1, "ortho"), (2, "backward")):
        got = C._fft_c2r(ember.from_numpy(x), [-1], norm, n).numpy()
        want = np.fft.irfft(x.astype(np.complex128), n=n, axis=-1, norm=numpy_norm)
        assert got.dtype == (np.float32 if dtype == np.complex64 else np.float64)
        assert got.shape == want.shape
        if want.size:
            assert np.abs(got - want).max() / np.abs(want).max() <= tol, norm


def test_real_output_round_trip_and_refusals():
    a = RNG.standard_normal((3, 2048))
    spectrum = C._fft_r2c(ember.from_numpy(a), [1], 0, True)
    np.testing.assert_allclose(C._fft_c2r(spectrum.t().contiguous().t(), [1], 2, 2048).numpy(),
                               a, rtol=0, atol=1e-14)  # (a strided input too)
    x = ember.ones(5, dtype=ember.complex64)
    with pytest.raises(NotImplementedError, match="power-of-two"):
        C._fft_c2r(x, [0], 0, 9)
    with pytest.raises(RuntimeError, match="expected 3 points"):
        C._fft_c2r(x, [0], 0, 4)
    with pytest.raises(NotImplementedError, match="last dim"):
        C._fft_c2r(ember.ones(5, 3, dtype=ember.complex64), [0], 0, 8)
    with pytest.raises(RuntimeError, match="complex64 or complex128"):
        C._fft_c2r(ember.ones(5), [0], 0, 8)
    with pytest.raises(ValueError, match="normalization"):
        C._fft_c2r(x, [0], 5, 8)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_ember_fft_inverse_real_transforms_through_the_kernel_agree_with_numpy(dtype):
    tol = 3e-6 if dtype == np.complex64 else 1e-12
    shape = (4, 16, 257)
    a = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    x = ember.from_numpy(a)
    ref = a.astype(np.complex128)

    def close(got, want):
        assert np.abs(got.numpy() - want).max() <= tol * np.abs(want).max()

    close(ember.fft.irfft(x), np.fft.irfft(ref))  # 512 points: the kernel
    close(ember.fft.irfft(x, norm="forward"), np.fft.irfft(ref, norm="forward"))
    close(ember.fft.irfft(x, n=1024), np.fft.irfft(ref, n=1024))  # padded
    close(ember.fft.irfft(x, n=300), np.fft.irfft(ref, n=300))  # not a power of two: pocketfft
    close(ember.fft.irfft2(x), np.fft.irfft2(ref))  # after a column step
    close(ember.fft.hfft(x), np.fft.hfft(ref))  # conj, then the kernel
    real = RNG.standard_normal((3, 512))
    np.testing.assert_allclose(ember.fft.irfft(ember.fft.rfft(ember.from_numpy(real))).numpy(),
                               real, rtol=0, atol=1e-13)
    out = ember.empty(0, dtype=ember.float32 if dtype == np.complex64 else ember.float64)
    assert ember.fft.irfft(x, out=out) is out
    close(out, np.fft.irfft(ref))
    gradcheck = pytest.importorskip("ember.autograd").gradcheck  # (ember-autograd's)
    xg = ember.randn(2, 129, dtype=ember.complex128, requires_grad=True)
    assert gradcheck(lambda t: ember.fft.irfft(t, n=256), (xg,))


def test_a_long_row_split_over_threads_agrees_with_whole_rows():
    # vector rows of >= 2^14 points fewer than the threads split each row's steps over them
    a = (RNG.standard_normal((2, 1 << 15)) + 1j * RNG.standard_normal((2, 1 << 15)))
    want = np.fft.ifft(a, axis=-1)
    before = ember.get_num_threads()
    try:
        for threads in (1, 2, 3):
            ember.set_num_threads(threads)
            for rows in (1, 2):
                got = C._fft_c2c(ember.from_numpy(a[:rows]), [1], 2, False).numpy()
                np.testing.assert_allclose(got, want[:rows], rtol=0, atol=1e-15)
    finally:
        ember.set_num_threads(before)
