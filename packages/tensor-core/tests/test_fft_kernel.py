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
]


@pytest.mark.parametrize("shape,dim", FAST_CASES, ids=[f"{s}-{d}" for s, d in FAST_CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_usual_call_agrees_with_the_general_path_and_numpy(shape, dim, dtype):
    """fft/ifft/rfft with n, norm and out left to their defaults take a shorter path (straight
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
        for name, x, a in (("fft", xz, z), ("ifft", xz, z), ("rfft", xr, re)):
            f = getattr(ember.fft, name)
            got = f(x, dim=dim)
            general = f(x, None, dim, "backward")  # norm named: the general path
            want = getattr(np.fft, name)(a.astype(np.complex128 if name != "rfft" else
                                                  np.float64), axis=dim)
            assert got.dtype == general.dtype == ember.from_numpy(z).dtype
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
