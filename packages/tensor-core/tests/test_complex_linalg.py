"""ember.linalg on complex64/complex128 matrices (LAPACK's c/z routines): values against NumPy and
SciPy (batched, non-contiguous, empty), and torch's errors where torch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import ember

scipy_linalg = pytest.importorskip("scipy.linalg")

DTYPES = ["complex64", "complex128"]


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def hpd(shape, dtype, seed=0):
    a = rand(shape, dtype, seed)
    n = shape[-1]
    return (a @ a.conj().swapaxes(-1, -2) + n * np.eye(n)).astype(dtype)


def tol(dtype):
    return 2e-4 if dtype == "complex64" else 1e-10


def noncontig(x):
    """The same values as an ember tensor whose last two dims are swapped views (strided)."""
    return ember.tensor(np.ascontiguousarray(x.swapaxes(-1, -2))).mT


def close(t, ref, dtype, scale=10):
    assert t.dtype == getattr(ember, dtype) or t.dtype.is_floating_point
    np.testing.assert_allclose(t.numpy(), ref, rtol=tol(dtype) * scale, atol=tol(dtype) * scale)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(dtype):
    h = hpd((2, 4, 4), dtype)
    L = np.linalg.cholesky(h)
    close(ember.linalg.cholesky(noncontig(h)), L, dtype)
    close(ember.linalg.cholesky(ember.tensor(h), upper=True), L.conj().swapaxes(-1, -2), dtype)
    close(ember.cholesky(ember.tensor(h)), L, dtype)
    Lx, info = ember.linalg.cholesky_ex(ember.tensor(h))
    close(Lx, L, dtype)
    assert info.tolist() == [0, 0]
    assert ember.linalg.cholesky(ember.tensor(h[:, :0, :0])).shape == (2, 0, 0)
    b = rand((2, 4, 3), dtype, 1)
    close(ember.cholesky_solve(ember.tensor(b), ember.tensor(L)), np.linalg.solve(h, b), dtype)
    close(ember.cholesky_solve(ember.tensor(b), ember.tensor(L.conj().swapaxes(-1, -2)),
                               upper=True), np.linalg.solve(h, b), dtype)
    close(ember.cholesky_inverse(ember.tensor(L[0])), np.linalg.inv(h[0]), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_refuses_a_matrix_that_is_not_positive_definite(dtype):
    a = np.eye(3, dtype=dtype)
    a[1, 1] = -1
    with pytest.raises(ember.linalg.LinAlgError, match="leading minor of order 2 is not "
                                                       "positive-definite"):
        ember.linalg.cholesky(ember.tensor(a))
    assert ember.linalg.cholesky_ex(ember.tensor(a)).info.item() == 2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 3), (2, 3, 5), (0, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, shape, mode):
    a = rand(shape, dtype)
    Q, R = ember.linalg.qr(noncontig(a), mode=mode)
    Rn = np.linalg.qr(a, mode=mode if mode != "r" else "r")
    Rn = Rn if mode == "r" else Rn[1]
    # the same R up to the phases of its rows
    close(R.abs(), np.abs(Rn), dtype, 100)
    if mode != "r":
        q = Q.numpy()
        close(Q @ R, a, dtype, 100)
        k = q.shape[-1]
        np.testing.assert_allclose(q.conj().swapaxes(-1, -2) @ q, np.eye(k) + 0 * q[..., :k, :],
                                   atol=tol(dtype) * 100)
    assert np.allclose(np.imag(np.diagonal(R.numpy(), 0, -2, -1)), 0)  # LAPACK's real diagonal


@pytest.mark.parametrize("dtype", DTYPES)
def test_geqrf_householder_product_ormqr(dtype):
    a = rand((2, 5, 3), dtype)
    A, tau = ember.geqrf(ember.tensor(a))
    Q = ember.linalg.householder_product(A, tau)
    R = A.triu()[..., :3, :]
    close(Q @ R, a, dtype, 100)
    c = rand((2, 5, 2), dtype, 1)
    Qf = ember.linalg.householder_product(
        ember.cat([A, ember.zeros(2, 5, 2, dtype=A.dtype)], -1), tau).numpy()
    close(ember.ormqr(A, tau, ember.tensor(c)), Qf @ c, dtype, 100)
    close(ember.ormqr(A, tau, ember.tensor(c), transpose=True), Qf.conj().swapaxes(-1, -2) @ c,
          dtype, 100)  # transpose: the conjugate transpose, as torch
    close(ember.orgqr(A, tau), Q.numpy(), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh(dtype):
    h = hpd((2, 4, 4), dtype)
    w, v = ember.linalg.eigh(noncontig(h))
    assert w.dtype == ember.float32 if dtype == "complex64" else w.dtype == ember.float64
    close(w, np.linalg.eigvalsh(h), dtype, 100)
    close(v @ ember.diag_embed(w.to(v.dtype)) @ v.mH, h, dtype, 100)
    # only the named triangle is read
    hu = np.triu(h) + np.tril(rand((4, 4), dtype, 3), -1)
    close(ember.linalg.eigvalsh(ember.tensor(hu), UPLO="U"), np.linalg.eigvalsh(h, UPLO="U"),
          dtype, 100)
    assert ember.linalg.eigvalsh(ember.tensor(h[:, :0, :0])).shape == (2, 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq(dtype, driver):
    a, b = rand((2, 6, 4), dtype), rand((2, 6, 3), dtype, 1)
    r = ember.linalg.lstsq(noncontig(a), ember.tensor(b), driver=driver)
    for i in range(2):
        x, res, rank, sv = np.linalg.lstsq(a[i], b[i], rcond=None)
        close(r.solution[i], x, dtype, 100)
        if driver != "gelsy":
            close(r.residuals[i], res, dtype, 1000)
        if driver != "gels":
            assert r.rank[i].item() == rank
        if driver in ("gelsd", "gelss"):
            close(r.singular_values[i], sv, dtype, 100)
    real = ember.float32 if dtype == "complex64" else ember.float64
    assert r.residuals.dtype == real and r.singular_values.dtype == real


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_triangular(dtype):
    a, b = (rand((2, 4, 4), dtype) + 4 * np.eye(4)).astype(dtype), rand((2, 4, 3), dtype, 1)
    for upper in (True, False):
        t = np.triu(a) if upper else np.tril(a)
        x = ember.linalg.solve_triangular(noncontig(a), ember.tensor(b), upper=upper)
        close(x, np.stack([scipy_linalg.solve_triangular(t[i], b[i], lower=not upper)
                           for i in range(2)]), dtype, 100)
        bt = b.swapaxes(-1, -2)
        x = ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(bt), upper=upper,
                                          left=False, unitriangular=True)
        tu = t - np.diagonal(t, 0, -2, -1)[..., None] * np.eye(4) + np.eye(4)
        close(x @ ember.tensor(tu.astype(dtype)), bt, dtype, 100)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl(dtype, hermitian):
    a = rand((2, 4, 4), dtype)
    m = hpd((2, 4, 4), dtype) - 3 * np.eye(4) if hermitian else a + a.swapaxes(-1, -2)
    m = ((m + m.conj().swapaxes(-1, -2)) / 2 if hermitian else m).astype(dtype)  # real diagonal
    LD, piv = ember.linalg.ldl_factor(ember.tensor(m), hermitian=hermitian)
    b = rand((2, 4, 2), dtype, 1)
    x = ember.linalg.ldl_solve(LD, piv, ember.tensor(b), hermitian=hermitian)
    close(x, np.linalg.solve(m, b), dtype, 1000)
    # a unit diagonal L with D's blocks: the same as SciPy's for 1 x 1 pivots
    lu, d, _ = scipy_linalg.ldl(m[0], lower=True, hermitian=hermitian)
    if (piv[0] > 0).all():
        close(ember.diagonal(LD[0]), np.diagonal(d), dtype, 1000)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_exp(dtype):
    a = rand((2, 3, 3), dtype)
    close(ember.linalg.matrix_exp(noncontig(a)),
          np.stack([scipy_linalg.expm(a[i]) for i in range(2)]), dtype, 100)
    big = a[0] * 20  # the scaling-and-squaring path
    np.testing.assert_allclose(ember.linalg.matrix_exp(ember.tensor(big)).numpy(),
                               scipy_linalg.expm(big), rtol=tol(dtype) * 1e3)
    assert ember.linalg.matrix_exp(ember.tensor(a[:, :0, :0])).shape == (2, 0, 0)


def test_errors_match_torch():
    torch = pytest.importorskip("torch")
    bad = np.eye(3, dtype=np.complex128)
    bad[2, 2] = -1
    rect = rand((3, 4), "complex128")
    calls = [
        lambda m, x: m.linalg.cholesky(x(bad)),
        lambda m, x: m.linalg.cholesky(x(rect)),
        lambda m, x: m.linalg.eigh(x(rect)),
        lambda m, x: m.linalg.solve_triangular(x(rect[:, :3]), x(rect), upper=True,
                                               left=False),
        lambda m, x: m.linalg.lstsq(x(rect), x(rect[:2])),
        lambda m, x: m.linalg.householder_product(x(rect.T), x(rect[0])),
        lambda m, x: m.linalg.ldl_factor(x(rect), hermitian=True),
        lambda m, x: m.linalg.matrix_exp(x(rect)),
    ]
    for call in calls:
        with pytest.raises(Exception) as te:
            call(torch, torch.tensor)
        with pytest.raises(Exception) as ee:
            call(ember, ember.tensor)
        # (torch's LinAlgError is torch._C._LinAlgError)
        assert type(ee.value).__name__ == type(te.value).__name__.lstrip("_"), (ee.value, te.value)
        assert str(ee.value).split(":")[-1][:40] == str(te.value).split(":")[-1][:40], \
            (ee.value, te.value)
