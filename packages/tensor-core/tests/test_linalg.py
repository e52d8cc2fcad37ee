"""ember.linalg, einsum and tensordot against NumPy: float32/float64, batches (incl. empty ones),
non-contiguous inputs, reconstruction checks where factors are not unique (qr, svd, eigh,
cholesky), PyTorch's error messages, and PyTorch parity where torch is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import linalg as LA

RNG = np.random.default_rng(7)
DTYPES = ["float32", "float64"]
TOL = {"float32": 2e-4, "float64": 1e-10}


def E(a) -> ember.Tensor:
    return ember.from_numpy(np.array(a, order="C"))


def N(t) -> np.ndarray:
    return t.numpy()


def rand(*shape, dtype="float64") -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def well_conditioned(*shape, dtype="float64") -> np.ndarray:
    n = shape[-1]
    return (rand(*shape) + 2 * n ** 0.5 * np.eye(n)).astype(dtype)


def spd(*shape, dtype="float64") -> np.ndarray:
    """A symmetric positive-definite batch of shape (*shape, n), n = shape[-1]."""
    a = rand(*shape, shape[-1])
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def close(got, want, dtype, scale=1.0):
    np.testing.assert_allclose(N(got) if isinstance(got, ember.Tensor) else got, want,
                               rtol=TOL[dtype] * scale, atol=TOL[dtype] * scale)


def noncontig(a: np.ndarray) -> ember.Tensor:
    """A transposed (non-contiguous) ember view holding the values of `a`."""
    t = E(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
    return t.transpose(-1, -2)


BATCHES = [(), (3,), (2, 2), (0,)]


# ---- inv / det / slogdet ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", [1, 4, 0])
def test_inv_det_slogdet(dtype, batch, n):
    a = well_conditioned(*batch, n, n, dtype=dtype)
    A = E(a)
    close(LA.inv(A), np.linalg.inv(a) if a.size else a, dtype)
    close(LA.det(A), np.linalg.det(a), dtype, 10)
    sign, logabs = LA.slogdet(A)
    s, la = np.linalg.slogdet(a)
    close(sign, s, dtype)
    close(logabs, la, dtype)
    assert LA.inv(A).dtype == A.dtype and tuple(LA.det(A).shape) == batch
    inv, info = LA.inv_ex(A)
    assert info.dtype == ember.int32 and tuple(info.shape) == batch and not N(info).any()


def test_inv_noncontiguous_and_strides():
    a = well_conditioned(2, 5, 5)
    A = noncontig(a)
    close(LA.inv(A), np.linalg.inv(a), "float64")
    close(ember.inverse(A), np.linalg.inv(a), "float64")
    close(A.inverse(), np.linalg.inv(a), "float64")
    assert LA.inv(E(a[0])).stride() == (1, 5)  # column-major, as PyTorch


def test_inv_does_not_modify_input():
    a = well_conditioned(4, 4)
    A = E(a.copy())
    LA.inv(A)
    LA.det(A)
    LA.svd(A)
    np.testing.assert_array_equal(N(A), a)


def test_singular_errors():
    s = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
    with pytest.raises(LA.LinAlgError, match=r"^linalg.inv: The diagonal element 3 is zero, the "
                       r"inversion could not be completed because the input matrix is singular"):
        LA.inv(E(s))
    with pytest.raises(RuntimeError, match=r"linalg.inv: \(Batch element 1\): The diagonal "):
        LA.inv(E(np.stack([np.eye(3), s])))
    inv, info = LA.inv_ex(E(np.stack([np.eye(3), s])))
    assert N(info).tolist() == [0, 3]
    with pytest.raises(LA.LinAlgError, match="The solver failed because the input matrix is "
                       "singular"):
        LA.solve(E(s), E(np.ones(3)))
    assert N(LA.det(E(s))) == 0
    sign, logabs = LA.slogdet(E(s))
    assert N(sign) == 0 and N(logabs) == -np.inf
    assert issubclass(LA.LinAlgError, RuntimeError)


@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.eigh, LA.eigvalsh,
                                LA.matrix_power])
def test_square_errors(fn):
    args = (2,) if fn is LA.matrix_power else ()
    name = "eigh" if fn is LA.eigvalsh else fn.__name__
    with pytest.raises(RuntimeError, match=rf"linalg.{name}: A must be batches of square matrices, "
                       r"but they are 2 by 3 matrices"):
        fn(E(rand(2, 3)), *args)
    with pytest.raises(RuntimeError, match=rf"linalg.{name}: The input tensor A must have at least "
                       r"2 dimensions."):
        fn(E(rand(3)), *args)


@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.qr, LA.svd,
                                LA.svdvals, LA.eigh])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_integer_inputs_raise(fn, dtype):
    A = ember.ones(3, 3, dtype=getattr(ember, dtype))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input"):
        fn(A)


def test_low_precision_raises():
    with pytest.raises(RuntimeError, match="linalg.inv: Low precision dtypes not supported. Got Half"):
        LA.inv(ember.ones(3, 3, dtype=ember.float16))


# ---- solve ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ashape,bshape", [
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3)), ((2, 3, 3), (3,)),
    ((2, 3, 3), (3, 4)), ((2, 1, 3, 3), (4, 3, 2)), ((0, 3, 3), (0, 3, 1)), ((4, 4), (4, 0)),
])
def test_solve(dtype, ashape, bshape):
    a = well_conditioned(*ashape, dtype=dtype)
    b = rand(*bshape, dtype=dtype)
    X = LA.solve(E(a), E(b))
    vector = len(bshape) == 1 or (len(bshape) == len(ashape) - 1 and bshape == ashape[:-1])
    bb = b[..., None] if vector else b
    want = np.linalg.solve(a, bb) if a.size and bb.size else np.zeros(
        np.broadcast_shapes(a.shape[:-2], bb.shape[:-2]) + bb.shape[-2:], dtype)
    if vector:
        want = want[..., 0]
    assert tuple(X.shape) == want.shape
    close(X, want, dtype, 10)


def test_solve_left_false_and_noncontig():
    a, b = well_conditioned(2, 3, 3), rand(2, 4, 3)
    X = LA.solve(noncontig(a), E(b), left=False)
    close(X, b @ np.linalg.inv(a), "float64")
    res, info = LA.solve_ex(E(a), E(b[..., :3, :]))
    close(res, np.linalg.solve(a, b[..., :3, :]), "float64")
    assert not N(info).any()


def test_solve_errors():
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B "
                       r"\(3x3 and 4x1\)"):
        LA.solve(E(np.eye(3)), E(rand(4)))
    with pytest.raises(RuntimeError, match=r"\(3x3 and 4x2\)"):
        LA.solve(E(np.eye(3)), E(rand(4, 2)))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype, but found A of "
                       "type Double and B of type Float instead"):
        LA.solve(E(np.eye(3)), E(rand(3, 2, dtype="float32")))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                       r"tensor b \(2\) at non-singleton dimension 0"):
        LA.solve(E(np.broadcast_to(np.eye(3), (2, 3, 3))), E(rand(3, 3, 2)))
    with pytest.raises(RuntimeError, match="square"):
        LA.solve(E(rand(2, 3)), E(rand(2)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular(dtype, upper, left, unit):
    a = well_conditioned(2, 4, 4, dtype=dtype)
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        idx = np.arange(4)
        tri[..., idx, idx] = 1.0
    b = rand(2, 4, 3, dtype=dtype) if left else rand(2, 3, 4, dtype=dtype)
    X = LA.solve_triangular(noncontig(a) if not unit else E(a), E(b), upper=upper, left=left,
                            unitriangular=unit)
    want = np.linalg.solve(tri, b) if left else b @ np.linalg.inv(tri)
    close(X, want, dtype, 100)


def test_solve_triangular_errors_and_broadcast():
    a = np.triu(well_conditioned(3, 3))
    close(LA.solve_triangular(E(a), E(rand(2, 3, 2)), upper=True).shape, (2, 3, 2), "float64")
    with pytest.raises(RuntimeError, match="The input tensor B must have at least 2 dimensions"):
        LA.solve_triangular(E(a), E(rand(3)), upper=True)
    with pytest.raises(RuntimeError, match=r"\(3x3 and 4x2\)"):
        LA.solve_triangular(E(a), E(rand(4, 2)), upper=True)
    with pytest.raises(TypeError):
        LA.solve_triangular(E(a), E(rand(3, 2)))
    z = a.copy()
    z[1, 1] = 0
    assert not np.isfinite(N(LA.solve_triangular(E(z), E(rand(3, 2)), upper=True))).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5), (0, 3, 3), (2, 0)])
def test_lu(dtype, shape):
    a = rand(*shape, dtype=dtype)
    P, L, U = LA.lu(E(a))
    m, n = shape[-2:]
    k = min(m, n)
    assert tuple(L.shape) == shape[:-2] + (m, k) and tuple(U.shape) == shape[:-2] + (k, n)
    close(N(P) @ N(L) @ N(U), a, dtype, 10)
    assert np.allclose(np.triu(N(L), 1), 0) and np.allclose(np.tril(N(U), -1), 0)
    LU, piv = LA.lu_factor(noncontig(a))
    assert piv.dtype == ember.int32 and tuple(piv.shape) == shape[:-2] + (k,)
    lu_ = N(LU)
    close(np.tril(lu_, -1)[..., :, :k] + np.eye(m, k), N(L), dtype)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(left, adjoint):
    a = well_conditioned(2, 4, 4)
    b = rand(2, 4, 3) if left else rand(2, 3, 4)
    LU, piv = LA.lu_factor(E(a))
    X = LA.lu_solve(LU, piv, E(b), left=left, adjoint=adjoint)
    op = np.swapaxes(a, -1, -2) if adjoint else a
    want = np.linalg.solve(op, b) if left else b @ np.linalg.inv(op)
    close(X, want, "float64", 100)
    if left:  # B's batch broadcasts against LU's
        assert tuple(LA.lu_solve(LU, piv, E(b[0]), adjoint=adjoint).shape) == (2, 4, 3)


def test_lu_errors():
    s = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
    with pytest.raises(LA.LinAlgError, match=r"^linalg.lu_factor: U\[3,3\] is zero and using it on "
                       "lu_solve would result in a division by zero"):
        LA.lu_factor(E(s))
    LU, piv, info = LA.lu_factor_ex(E(s))
    assert int(info) == 3
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        LA.lu_factor(E(s), pivot=False)
    with pytest.raises(RuntimeError, match="The input tensor B must have at least 2 dimensions"):
        LA.lu_solve(LU, piv, E(rand(3)))
    with pytest.raises(RuntimeError, match="pivots must lie in"):
        LA.lu_solve(LU, ember.zeros(3, dtype=ember.int32), E(rand(3, 1)))


# ---- cholesky ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_cholesky(dtype, batch):
    a = spd(*batch, 4, dtype=dtype)
    L = LA.cholesky(E(a))
    low = N(L)
    assert np.allclose(np.triu(low, 1), 0)
    close(low @ np.swapaxes(low, -1, -2), a, dtype, 10)
    if a.size:
        close(L, np.linalg.cholesky(a), dtype, 10)
    U = LA.cholesky(E(a), upper=True)
    u = N(U)
    assert np.allclose(np.tril(u, -1), 0)
    close(np.swapaxes(u, -1, -2) @ u, a, dtype, 10)
    L2, info = LA.cholesky_ex(E(a))
    close(L2, low, dtype)
    assert tuple(info.shape) == batch


def test_cholesky_reads_lower_triangle_and_noncontig():
    a = spd(3)
    junk = a.copy()
    junk[np.triu_indices(3, 1)] = 99.0
    close(LA.cholesky(E(junk)), np.linalg.cholesky(a), "float64")
    close(LA.cholesky(noncontig(a)), np.linalg.cholesky(a), "float64")
    close(ember.cholesky(E(a)), np.linalg.cholesky(a), "float64")


def test_cholesky_not_pd():
    a = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
    msg = (r"^linalg.cholesky: The factorization could not be completed because the input is not "
           r"positive-definite \(the leading minor of order 2 is not positive-definite\).$")
    with pytest.raises(LA.LinAlgError, match=msg):
        LA.cholesky(E(a))
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): .*order 1 is not"):
        LA.cholesky(E(np.stack([np.eye(3), -np.eye(3)])))
    L, info = LA.cholesky_ex(E(a))
    assert int(info) == 2


def test_cholesky_solve():
    a, b = spd(2, 4), rand(2, 4, 3)
    L = LA.cholesky(E(a))
    close(ember.cholesky_solve(E(b), L), np.linalg.solve(a, b), "float64")
    close(ember.cholesky_solve(E(b), L.mT, upper=True), np.linalg.solve(a, b), "float64")
    close(ember.cholesky_solve(E(b[0]), L), np.linalg.solve(a, b[0]), "float64")  # broadcast


# ---- qr / svd / eigh ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (0, 3, 2), (3, 0), (0, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, shape, mode):
    a = rand(*shape, dtype=dtype)
    Q, R = LA.qr(E(a), mode=mode)
    m, n = shape[-2:]
    k = min(m, n)
    r = N(R)
    assert r.shape == shape[:-2] + ((m if mode == "complete" else k), n)
    assert np.allclose(np.tril(r, -1), 0)
    if mode == "r":
        assert tuple(Q.shape) == (0,)
        if a.size:
            close(np.abs(r), np.abs(np.linalg.qr(a, mode="r")), dtype, 10)
        return
    q = N(Q)
    assert q.shape == shape[:-2] + (m, m if mode == "complete" else k)
    close(q @ r, a, dtype, 10)
    close(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] +
                                                       (q.shape[-1],) * 2), dtype, 10)


def test_qr_errors_and_legacy():
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'bad' but expected one "
                       r"of 'reduced' \(default\), 'r', or 'complete'"):
        LA.qr(E(rand(2, 3)), mode="bad")
    a = rand(5, 3)
    Q, R = ember.qr(E(a))
    close(N(Q) @ N(R), a, "float64")
    Q, R = ember.qr(E(a), some=False)
    assert tuple(Q.shape) == (5, 5)
    Q, R = E(a).qr()
    close(N(Q) @ N(R), a, "float64")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (0, 3, 3), (3, 0), (0, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(dtype, shape, full):
    a = rand(*shape, dtype=dtype)
    U, S, Vh = LA.svd(E(a), full_matrices=full)
    m, n = shape[-2:]
    k = min(m, n)
    assert tuple(S.shape) == shape[:-2] + (k,)
    assert tuple(U.shape) == shape[:-2] + (m, m if full else k)
    assert tuple(Vh.shape) == shape[:-2] + (n if full else k, n)
    if a.size:
        close(S, np.linalg.svd(a, compute_uv=False), dtype, 10)
    u, s, vh = N(U), N(S), N(Vh)
    close((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, 10)
    close(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] +
                                                       (u.shape[-1],) * 2), dtype, 10)
    close(LA.svdvals(E(a)), s, dtype)


def test_svd_noncontig_and_legacy():
    a = rand(3, 6, 4)
    close(LA.svdvals(noncontig(a)), np.linalg.svd(a, compute_uv=False), "float64")
    U, S, V = ember.svd(E(a))
    assert tuple(U.shape) == (3, 6, 4) and tuple(V.shape) == (3, 4, 4)
    close(N(U) * N(S)[..., None, :] @ np.swapaxes(N(V), -1, -2), a, "float64")
    U, S, V = ember.svd(E(a), some=False)
    assert tuple(U.shape) == (3, 6, 6)
    U, S, V = E(a).svd(compute_uv=False)
    assert not N(U).any() and not N(V).any()


def test_svd_driver_is_refused_not_ignored():
    # torch's driver= picks a cuSOLVER routine: refused for CPU input, TypeError for a non-str
    A = E(rand(3, 3))
    for fn in (LA.svd, LA.svdvals):
        with pytest.raises(RuntimeError, match="`driver=` is only supported on CUDA inputs"):
            fn(A, driver="gesvd")
        with pytest.raises(TypeError, match="argument 'driver' must be str, not int"):
            fn(A, driver=3)
        fn(A, driver=None)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="`driver=` is only supported on CUDA inputs"):
        torch.linalg.svd(torch.eye(3), driver="gesvd")


def test_svd_nonfinite():
    a = rand(3, 3)
    a[1, 1] = np.nan
    with pytest.raises(LA.LinAlgError, match="linalg.svd: The algorithm failed to converge"):
        LA.svd(E(a))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, batch, uplo):
    a = spd(*batch, 5, dtype=dtype) - 3 * np.eye(5, dtype=dtype)
    junk = a.copy()
    idx = np.triu_indices(5, 1) if uplo == "L" else np.tril_indices(5, -1)
    junk[..., idx[0], idx[1]] = 42.0  # only the UPLO triangle is read
    w, V = LA.eigh(E(junk), UPLO=uplo)
    close(w, np.linalg.eigvalsh(a) if a.size else np.zeros(batch + (5,)), dtype, 100)
    v = N(V)
    close((v * N(w)[..., None, :]) @ np.swapaxes(v, -1, -2), a, dtype, 100)
    close(LA.eigvalsh(E(junk), UPLO=uplo), N(w), dtype, 10)


def test_eigh_errors():
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(E(np.eye(3)), UPLO="X")


# ---- lstsq ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(6, 3), (3, 6), (4, 4)])
def test_lstsq(dtype, driver, shape):
    m, n = shape
    if driver == "gels" and m < n:
        shape = (n, m)
        m, n = shape
    a = rand(2, m, n, dtype=dtype)
    b = rand(2, m, 2, dtype=dtype)
    res = LA.lstsq(E(a), E(b), driver=driver)
    want = np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[0] for i in range(2)])
    close(res.solution, want, dtype, 100)
    drv = driver or "gelsy"
    if drv == "gels":
        assert tuple(res.rank.shape) == (0,)
    else:
        assert N(res.rank).tolist() == [min(m, n)] * 2
    if drv in ("gelsd", "gelss"):
        close(res.singular_values, np.linalg.svd(a, compute_uv=False), dtype, 10)
    else:
        assert tuple(res.singular_values.shape) == (0,)
    if m > n and drv != "gelsy":
        close(res.residuals, ((a @ want - b) ** 2).sum(-2), dtype, 100)
    else:
        assert tuple(res.residuals.shape) == (0,)


def test_lstsq_vector_broadcast_and_errors():
    a, b = rand(5, 3), rand(5)
    close(LA.lstsq(E(a), E(b)).solution, np.linalg.lstsq(a, b, rcond=None)[0], "float64")
    A = E(np.broadcast_to(a, (2, 5, 3)).copy())
    assert tuple(LA.lstsq(A, E(rand(1, 5, 2))).solution.shape) == (2, 3, 2)
    assert tuple(LA.lstsq(A, E(rand(2, 5))).solution.shape) == (2, 3)  # a vector batch
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of "
                       r"\(gels, gelsy, gelsd, gelss\)"):
        LA.lstsq(E(a), E(b), driver="foo")
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-2\)"):
        LA.lstsq(E(a), E(rand(3, 2)))
    with pytest.raises(RuntimeError, match="Expected input and other to have the same dtype"):
        LA.lstsq(E(a), E(rand(5, 2, dtype="float32")))
    with pytest.raises(RuntimeError, match="input must have at least 2 dimensions"):
        LA.lstsq(E(rand(3)), E(rand(3)))


def test_lstsq_rank_deficient():
    a = rand(6, 2) @ rand(2, 4)
    b = rand(6, 1)
    res = LA.lstsq(E(a), E(b), driver="gelsd")
    assert int(res.rank) == 2
    close(res.solution, np.linalg.lstsq(a, b, rcond=None)[0], "float64", 1e4)


# ---- norms ----

VECTOR_ORDS = [2, 1, 0, 3.5, -1, -2.5, math.inf, -math.inf]
MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norm(dtype, ord):
    a = rand(3, 4, dtype=dtype)
    close(LA.vector_norm(E(a), ord), np.linalg.norm(a.ravel(), ord), dtype, 10)
    close(LA.vector_norm(E(a), ord, dim=1), np.linalg.norm(a, ord, axis=1), dtype, 10)
    close(LA.vector_norm(E(a), ord, dim=-2, keepdim=True),
          np.linalg.norm(a, ord, axis=0, keepdims=True), dtype, 10)
    close(LA.vector_norm(noncontig(a), ord, dim=(0, 1)), np.linalg.norm(a.ravel(), ord), dtype, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm(dtype, ord):
    a = rand(2, 3, 4, dtype=dtype)
    want = np.linalg.norm(a, ord, axis=(-2, -1))
    close(LA.matrix_norm(E(a), ord), want, dtype, 10)
    close(LA.matrix_norm(E(a), ord, keepdim=True), want[:, None, None], dtype, 10)
    close(LA.matrix_norm(E(a), ord, dim=(0, 2)), np.linalg.norm(a, ord, axis=(0, 2)), dtype, 10)
    close(LA.matrix_norm(E(a), ord, dim=(2, 0)), np.linalg.norm(a, ord, axis=(2, 0)), dtype, 10)
    close(LA.norm(E(a[0]), ord), np.linalg.norm(a[0], ord), dtype, 10)
    close(LA.norm(E(a), ord, dim=(1, 2)), want, dtype, 10)


def test_norm_forms_and_errors():
    a = rand(2, 3, 4)
    close(LA.norm(E(a)), np.linalg.norm(a.ravel()), "float64")
    close(LA.norm(E(a), dim=1), np.linalg.norm(a, axis=1), "float64")
    close(LA.norm(E(a), 1, dim=(1,)), np.linalg.norm(a, 1, axis=1), "float64")
    close(LA.norm(E(a), dtype=ember.float64), np.linalg.norm(a.ravel()), "float64")
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be "
                       "1D or 2D. Got 3D."):
        LA.norm(E(a), 2)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        LA.matrix_norm(E(a), 3)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order abc not supported."):
        LA.matrix_norm(E(a), "abc")
    with pytest.raises(RuntimeError, match=r"linalg.matrix_norm: dims must be different. Got \(0, 0\)"):
        LA.matrix_norm(E(a), dim=(0, 0))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: dim must be a 2-tuple. Got 0"):
        LA.matrix_norm(E(a), dim=0)
    with pytest.raises(RuntimeError, match="matrix_norm: The input tensor A must have at least 2"):
        LA.matrix_norm(E(rand(3)))
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point"):
        LA.vector_norm(ember.ones(3, dtype=ember.int64))
    with pytest.raises(TypeError, match="argument 'ord' must be Number, not str"):
        LA.vector_norm(E(a), "fro")
    assert N(LA.matrix_norm(E(rand(0, 3)), 2)) == 0


# ---- composites ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 2, 3)])
def test_pinv(dtype, shape):
    a = rand(*shape, dtype=dtype)
    want = np.linalg.pinv(a) if a.size else np.zeros(shape[:-2] + shape[-2:][::-1])
    close(LA.pinv(E(a)), want, dtype, 100)
    close(ember.pinverse(E(a)), want, dtype, 100)
    if shape[-1] == shape[-2]:
        h = a + np.swapaxes(a, -1, -2)
        close(LA.pinv(E(h), hermitian=True), np.linalg.pinv(h, hermitian=True), dtype, 100)


def test_pinv_and_rank_tolerances():
    a = np.diag([10.0, 1.0, 1e-3, 0.0])
    close(LA.pinv(E(a), atol=1e-2), np.diag([0.1, 1.0, 0.0, 0.0]), "float64")
    close(LA.pinv(E(a), rtol=1e-5), np.diag([0.1, 1.0, 1e3, 0.0]), "float64")
    assert int(LA.matrix_rank(E(a))) == 3
    assert int(LA.matrix_rank(E(a), atol=0.5)) == 2
    assert int(LA.matrix_rank(E(a), rtol=0.5)) == 1
    assert int(LA.matrix_rank(E(a), hermitian=True)) == 3
    r = LA.matrix_rank(E(np.stack([a, np.eye(4)])))
    assert r.dtype == ember.int64 and N(r).tolist() == [3, 4]
    with pytest.raises(RuntimeError, match="expected a tensor with 2 or more dimensions of float"):
        LA.pinv(E(rand(3)))
    with pytest.raises(RuntimeError, match="matrix_rank: The input tensor input must have at least"):
        LA.matrix_rank(E(rand(3)))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -3])
def test_matrix_power(n):
    a = well_conditioned(2, 3, 3) / 3
    close(LA.matrix_power(E(a), n), np.linalg.matrix_power(a, n), "float64", 100)
    close(E(a).matrix_power(n), np.linalg.matrix_power(a, n), "float64", 100)


def test_matrix_power_int():
    a = RNG.integers(-3, 4, (3, 3))
    np.testing.assert_array_equal(N(LA.matrix_power(E(a), 3)), np.linalg.matrix_power(a, 3))
    np.testing.assert_array_equal(N(LA.matrix_power(E(a), 0)), np.eye(3, dtype=a.dtype))
    with pytest.raises(RuntimeError, match="linalg.inv: Expected a floating point"):
        LA.matrix_power(E(a), -1)


@pytest.mark.parametrize("shapes", [[(2, 3), (3, 4)], [(3,), (3, 4), (4, 5), (5,)],
                                    [(10, 2), (2, 30), (30, 3), (3, 7)], [(4, 5), (5,)],
                                    [(4,), (4, 2)]])
def test_multi_dot(shapes):
    ms = [rand(*s) for s in shapes]
    close(LA.multi_dot([E(m) for m in ms]), np.linalg.multi_dot(ms), "float64")


def test_multi_dot_errors():
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): expected at least 2 tensors but got 1"):
        LA.multi_dot([E(rand(2, 3))])
    with pytest.raises(RuntimeError, match=r"tensors 0 and 1 with shapes \[2, 3\] and \[2, 3\] "
                       "cannot be multiplied"):
        LA.multi_dot([E(rand(2, 3)), E(rand(2, 3))])
    with pytest.raises(RuntimeError, match="the first tensor must be 1D or 2D but got 3D"):
        LA.multi_dot([E(rand(3, 2, 2)), E(rand(2, 3))])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_cross(dtype):
    a = (rand(4, 3) * 5).astype(dtype)
    b = (rand(4, 3) * 5).astype(dtype)
    close(LA.cross(E(a), E(b)), np.cross(a, b), "float32")
    close(LA.cross(E(a.T.copy()), E(b.T.copy()), dim=0), np.cross(a.T, b.T, axis=0), "float32")
    close(LA.cross(E(a), E(b[:1])), np.cross(a, b[:1]), "float32")
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        close(ember.cross(E(a), E(b)), np.cross(a, b), "float32")  # the first dim of size 3
    close(E(a).cross(E(b), dim=1), np.cross(a, b), "float32")


def test_cross_errors():
    # no bool, no promotion: both operands of one dtype, as torch's kernel (after the shapes)
    with pytest.raises(NotImplementedError, match="\"cross\" not implemented for 'Bool'"):
        E(rand(2, 3)).bool().cross(E(rand(2, 3)).to(ember.int16), dim=1)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found ComplexDouble"):
        LA.cross(E(rand(3)).float(), E(rand(3)).to(ember.complex128))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Short"):
        LA.cross(E(rand(3)), E(rand(3)).to(ember.int16))
    with pytest.raises(RuntimeError, match="must have length 3"):
        LA.cross(E(rand(4)).bool(), E(rand(4)))
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length 3. "
                       "Got 4 and 4"):
        LA.cross(E(rand(2, 4)), E(rand(2, 4)))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match"):
        LA.cross(E(rand(2, 3)), E(rand(4, 3)))
    with pytest.raises(RuntimeError, match="inputs must have the same number of dimensions"):
        LA.cross(E(rand(2, 3)), E(rand(3)))


def test_vecdot_matmul_diagonal():
    a, b = rand(2, 3, 4), rand(3, 4)
    close(LA.vecdot(E(a), E(b)), (a * b).sum(-1), "float64")
    close(LA.vecdot(E(a), E(a), dim=1), (a * a).sum(1), "float64")
    with pytest.raises(RuntimeError, match="linalg.vecdot: Expected x and y to have the same dtype"):
        LA.vecdot(E(a), E(b.astype(np.float32)))
    close(LA.matmul(E(a), E(b.T.copy())), a @ b.T, "float64")
    for off in (-2, -1, 0, 1, 3, 7):
        close(LA.diagonal(E(a), offset=off), np.diagonal(a, off, -2, -1), "float64")
    close(LA.diagonal(E(a), dim1=0, dim2=2), np.diagonal(a, 0, 0, 2), "float64")


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf])
def test_cond(p):
    a = well_conditioned(2, 4, 4)
    close(LA.cond(E(a), p), np.linalg.cond(a, p), "float64", 1e3)
    if p in (None, 2, -2):
        b = rand(3, 5)
        close(LA.cond(E(b), p), np.linalg.cond(b, p), "float64", 1e3)


def test_cond_errors_and_singular():
    assert N(LA.cond(E(np.zeros((3, 3))), "fro")) == np.inf
    with pytest.raises(RuntimeError, match="linalg.cond got an invalid norm type: 3"):
        LA.cond(E(rand(3, 3)), 3)
    with pytest.raises(RuntimeError, match=r"linalg.cond\(ord=fro\): A must be batches of square"):
        LA.cond(E(rand(3, 4)), "fro")


def test_tensorinv_tensorsolve():
    a = rand(4, 6, 8, 3)
    close(LA.tensorinv(E(a), ind=2), np.linalg.tensorinv(a, ind=2), "float64", 1e3)
    with pytest.raises(RuntimeError, match="but got 12 != 2"):
        LA.tensorinv(E(rand(2, 3, 4)), ind=1)
    with pytest.raises(RuntimeError, match="strictly positive integer for 'ind'"):
        LA.tensorinv(E(rand(2, 3, 6)), ind=0)
    a, b = rand(2, 3, 6), rand(2, 3)
    close(LA.tensorsolve(E(a), E(b)), np.linalg.tensorsolve(a, b), "float64", 1e3)
    a = rand(6, 2, 3)
    close(LA.tensorsolve(E(a), E(b), dims=(0,)), np.linalg.tensorsolve(a, b, axes=(0,)),
          "float64", 1e3)


def test_vander():
    x = np.array([1, 2, 3])
    np.testing.assert_array_equal(N(LA.vander(E(x))), np.vander(x, increasing=True))
    xf = rand(2, 4)
    close(LA.vander(E(xf), N=3), np.stack([np.vander(r, 3, increasing=True) for r in xf]),
          "float64")
    with pytest.raises(RuntimeError, match="N must be greater than 1."):
        LA.vander(E(np.array([1.0, 2.0])), N=1)


@pytest.mark.parametrize("scale", [0.1, 1.0, 30.0])
def test_matrix_exp(scale):
    a = rand(3, 4, 4) * scale / 4
    sym = a + np.swapaxes(a, -1, -2)  # exp of a symmetric matrix through its eigendecomposition
    w, q = np.linalg.eigh(sym)
    want = (q * np.exp(w)[..., None, :]) @ np.swapaxes(q, -1, -2)
    np.testing.assert_allclose(N(LA.matrix_exp(E(sym))), want, rtol=1e-9, atol=1e-9)
    if scale <= 1:  # exp(A) exp(-A) = I also for non-symmetric A (ill-conditioned for big A)
        close(N(LA.matrix_exp(E(a))) @ N(LA.matrix_exp(E(-a))), np.broadcast_to(np.eye(4), a.shape),
              "float64", 1e4)
    d = np.diag([1.0, 2.0, -1.0])
    close(LA.matrix_exp(E(d)), np.diag(np.exp([1.0, 2.0, -1.0])), "float64")
    close(LA.matrix_exp(E(np.zeros((0, 2, 2)))), np.zeros((0, 2, 2)), "float64")


def test_top_level_aliases_and_methods():
    a = well_conditioned(2, 3, 3)
    close(ember.det(E(a)), np.linalg.det(a), "float64")
    close(E(a).det(), np.linalg.det(a), "float64")
    s, la = np.linalg.slogdet(a)
    close(ember.logdet(E(a)), np.where(s > 0, la, np.nan), "float64")
    close(ember.slogdet(E(a))[1], la, "float64")
    assert type(ember.slogdet(E(a))).__name__ == "linalg_slogdet"
    assert LA.svd(E(a))._fields == ("U", "S", "Vh")
    assert LA.lstsq(E(a), E(a))._fields == ("solution", "residuals", "rank", "singular_values")


def test_legacy_norm():
    a = rand(3, 4)
    close(ember.norm(E(a), p="nuc"), np.linalg.norm(a, "nuc"), "float64")
    close(E(a).norm(p="nuc"), np.linalg.norm(a, "nuc"), "float64")
    close(ember.norm(E(a)), np.linalg.norm(a), "float64")
    close(ember.norm(E(a), 1, dim=1), np.linalg.norm(a, 1, axis=1), "float64")
    close(E(a).norm(dim=0, keepdim=True), np.linalg.norm(a, axis=0, keepdims=True), "float64")


def test_einsum_sublist_form():
    a, b = rand(3, 4), rand(5, 4)
    close(ember.einsum(E(a), [0, 1], E(b), [2, 1], [0, 2]), a @ b.T, "float64")
    close(ember.einsum(E(a), [0, Ellipsis], [Ellipsis]), a.sum(0), "float64")
    close(ember.einsum(E(a), [51, 30]), a.T, "float64")
    with pytest.raises(ValueError, match=r"not within the valid range \[0, 52\)"):
        ember.einsum(E(a), [0, 60])


def test_out_arguments():
    a = well_conditioned(3, 3)
    out = ember.empty(0, dtype=ember.float64)
    r = LA.inv(E(a), out=out)
    assert r is out and tuple(out.shape) == (3, 3)
    close(out, np.linalg.inv(a), "float64")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double"):
        LA.inv(E(a), out=ember.empty(0, dtype=ember.float32))
    Q, R = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.float64)
    LA.qr(E(a), out=(Q, R))
    close(N(Q) @ N(R), a, "float64")


def test_import_is_cheap():
    import subprocess
    import sys

    code = "import ember, sys; ember.linalg.inv; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- einsum ----

def _random_equation(rng, n_ops):
    letters = list("abcdefg")
    sizes = {c: int(rng.integers(1, 4)) for c in letters}
    terms = []
    for _ in range(n_ops):
        k = int(rng.integers(0, 4))
        terms.append("".join(rng.choice(letters[:5], size=k)))
    counts = {}
    for t in terms:
        for c in t:
            counts[c] = counts.get(c, 0) + 1
    used = sorted(counts)
    if rng.random() < 0.5:
        eq = ",".join(terms)
    else:
        out = [c for c in used if rng.random() < 0.5]
        rng.shuffle(out)
        eq = ",".join(terms) + "->" + "".join(out)
    ops = [rng.standard_normal([sizes[c] for c in t]) for t in terms]
    return eq, ops


@pytest.mark.parametrize("seed", range(60))
def test_einsum_random(seed):
    rng = np.random.default_rng(seed)
    eq, ops = _random_equation(rng, 1 + seed % 3)
    got = ember.einsum(eq, *[E(o) for o in ops])
    want = np.einsum(eq, *ops)
    np.testing.assert_allclose(N(got), want, rtol=1e-10, atol=1e-10, err_msg=eq)


@pytest.mark.parametrize("eq,shapes", [
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->ji", [(2, 3)]),
    ("...ij->...ji", [(2, 3, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("i...,i...->...", [(3, 2, 2), (3, 2, 2)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("ij,ij->ij", [(2, 1), (2, 3)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
    ("a b, b c -> a c", [(2, 3), (3, 2)]),
    ("Ab,bA->A", [(2, 3), (3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("", [()]),
    ("->", [()]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
    ("ij->", [(0, 3)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
])
def test_einsum_cases(eq, shapes):
    ops = [rand(*s) for s in shapes]
    got = ember.einsum(eq, *[E(o) for o in ops])
    close(got, np.einsum(eq.replace(" ", ""), *ops), "float64")
    got_list = ember.einsum(eq, [E(o) for o in ops])
    close(got_list, np.einsum(eq.replace(" ", ""), *ops), "float64")


def test_einsum_noncontig_int_and_float32():
    a, b = rand(4, 3), rand(5, 4)
    close(ember.einsum("ji,kj->ik", noncontig(a), noncontig(b)), np.einsum("ji,kj->ik", a, b),
          "float64")
    ai = RNG.integers(-3, 4, (3, 4))
    np.testing.assert_array_equal(N(ember.einsum("ij,jk->ik", E(ai), E(ai.T.copy()))), ai @ ai.T)
    f = rand(2, 3, 4, dtype="float32")
    got = ember.einsum("bij->bj", E(f))
    assert got.dtype == ember.float32
    close(got, f.sum(1), "float32")


def test_einsum_is_one_bmm_on_views():
    a, b = E(rand(3, 4, 5)), E(rand(3, 5, 2))
    r = ember.einsum("bij,bjk->bik", a, b)
    assert r.is_contiguous() and tuple(r.shape) == (3, 4, 2)


@pytest.mark.parametrize("eq,shapes,msg", [
    ("ij,jk", [(2, 3), (4, 3)], "subscript j has size 4 for operand 1 which does not broadcast "
                                "with previously seen size 3"),
    ("ij,jk->ik", [(2, 3)], "fewer operands were provided than specified in the equation"),
    ("ij", [(2, 3), (2, 3)], "more operands were provided than specified in the equation"),
    ("ij->ik", [(2, 3)], "output subscript k does not appear in the equation for any input "
                         "operand"),
    ("ij->ii", [(2, 3)], "output subscript i appears more than once in the output"),
    ("ij", [(2, 3, 4)], r"the number of subscripts in the equation \(2\) does not match the number "
                        r"of dimensions \(3\) for operand 0 and no ellipsis was given"),
    ("i1", [(2, 3)], "invalid subscript given at index 1 in the equation string, subscripts must "
                     r"be in \[a-zA-Z\]"),
    ("ii", [(2, 3)], "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("i.j", [(2, 3)], "found '.' for operand 0 that is not part of any ellipsis"),
    ("ij->j->i", [(2, 3)], "invalid subscript given at index 5 in the equation string"),
    ("i...j...", [(2, 3)], "found '.' for operand 0 for which an ellipsis was already found"),
    ("ijk...", [(2, 3)], r"the number of subscripts in the equation \(3\) is more than the number "
                         r"of dimensions \(2\) for operand 0"),
])
def test_einsum_errors(eq, shapes, msg):
    with pytest.raises(RuntimeError, match=r"^einsum\(\): " + msg):
        ember.einsum(eq, *[E(rand(*s)) for s in shapes])


# ---- tensordot ----

@pytest.mark.parametrize("sa,sb,dims", [
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4, 5), 0),
    ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((3, 4, 5), (4, 3), ([0, 1], [1, 0])),
    ((2, 3), (3, 2), ([0], [1])), ((2, 3, 4), (4, 2), ((2, 0), (0, 1))),
])
def test_tensordot(sa, sb, dims):
    a, b = rand(*sa), rand(*sb)
    close(ember.tensordot(E(a), E(b), dims=dims), np.tensordot(a, b, axes=dims), "float64")


def test_tensordot_errors():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has size "
                       "3 in dim -1 and second has size 4 in dim 0"):
        ember.tensordot(E(rand(2, 3)), E(rand(4, 5)), dims=1)
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0, but got dims=-1"):
        ember.tensordot(E(rand(2, 3)), E(rand(4, 5)), dims=-1)
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        ember.tensordot(E(rand(2, 3)), E(rand(4, 5)), dims=([0], [0, 1]))
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        ember.tensordot(E(rand(2, 3)), E(rand(3, 5, dtype="float32")), dims=1)


# ---- PyTorch parity (messages and values) ----

def test_torch_parity(torch):
    tl = torch.linalg
    cases = [
        (lambda m, x: m.linalg.inv(x(np.zeros((2, 3))))),
        (lambda m, x: m.linalg.inv(x(np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])))),
        (lambda m, x: m.linalg.cholesky(x(-np.eye(3)))),
        (lambda m, x: m.linalg.solve(x(np.eye(3)), x(np.ones(4)))),
        (lambda m, x: m.linalg.matrix_norm(x(np.ones((2, 3))), ord=3)),
        (lambda m, x: m.linalg.qr(x(np.ones((2, 3))), mode="bad")),
        (lambda m, x: m.einsum("ij->ik", x(np.ones((2, 3))))),
        (lambda m, x: m.einsum("ij,jk", x(np.ones((2, 3))), x(np.ones((4, 3))))),
    ]
    for case in cases:
        msgs = []
        for mod, conv in ((torch, torch.from_numpy), (ember, E)):
            with pytest.raises(RuntimeError) as info:
                case(mod, conv)
            msgs.append(str(info.value).replace("torch.", ""))
        assert msgs[0] == msgs[1]
    a = well_conditioned(2, 4, 4)
    for name in ("inv", "det", "matrix_rank", "pinv", "svdvals", "eigvalsh", "matrix_norm"):
        np.testing.assert_allclose(N(getattr(LA, name)(E(a))),
                                   getattr(tl, name)(torch.from_numpy(a)).numpy(), rtol=1e-8,
                                   atol=1e-10)
    assert LA.inv(E(a)).stride() == tl.inv(torch.from_numpy(a)).stride()
    x = rand(3, 5)
    for eq in ("ij->", "ij->j", "ij,kj->ik", "ij->ji"):
        n = eq.count(",") + 1
        np.testing.assert_allclose(N(ember.einsum(eq, [E(x)] * n)),
                                   torch.einsum(eq, *[torch.from_numpy(x)] * n).numpy(), rtol=1e-12)


def test_hypothesis_einsum_matmul_shapes():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=40, deadline=None)
    @hyp.given(st.integers(0, 3), st.integers(0, 4), st.integers(0, 4), st.integers(0, 4))
    def check(b, i, j, k):
        x, y = rand(b, i, j), rand(b, j, k)
        close(ember.einsum("bij,bjk->bik", E(x), E(y)), np.einsum("bij,bjk->bik", x, y), "float64")

    check()



# ---- the autograd hook sees each LAPACK primitive with canonical arguments ----

def test_primitives_call_the_autograd_hook(recording_hook):
    A = E(spd(2, 3)).requires_grad_(True)
    B = E(rand(2, 3, 2))
    expected = [
        (lambda: LA.inv(A), ("_linalg_inv_ex", 1, {"check_errors": True})),
        (lambda: LA.inv_ex(A), ("_linalg_inv_ex", 1, {"check_errors": False})),
        (lambda: LA.det(A), ("_linalg_det", 1, {})),
        (lambda: LA.slogdet(A), ("_linalg_slogdet", 1, {})),
        (lambda: LA.solve(A, B), ("_linalg_solve_ex", 2, {"check_errors": True})),
        (lambda: LA.solve_triangular(A, B, upper=True),
         ("_linalg_solve_triangular", 2, {"upper": True, "unitriangular": False})),
        (lambda: LA.lu_factor(A), ("_linalg_lu_factor_ex", 1, {"pivot": True,
                                                                 "check_errors": True})),
        (lambda: LA.lu(A), ("_linalg_lu", 1, {"pivot": True})),
        (lambda: LA.lu_solve(*LA.lu_factor(A.detach()), B.requires_grad_(True)),
         ("_linalg_lu_solve", 3, {"adjoint": False})),
        (lambda: LA.cholesky(A, upper=True),
         ("_linalg_cholesky_ex", 1, {"upper": True, "check_errors": True})),
        (lambda: LA.qr(A, mode="complete"), ("_linalg_qr", 1, {"mode": "complete"})),
        (lambda: LA.svd(A, full_matrices=False),
         ("_linalg_svd", 1, {"full_matrices": False, "compute_uv": True})),
        (lambda: LA.svdvals(A), ("_linalg_svd", 1, {"full_matrices": False, "compute_uv": False})),
        (lambda: LA.eigh(A, UPLO="U"), ("_linalg_eigh", 1, {"UPLO": "U", "compute_v": True})),
        (lambda: LA.eigvalsh(A), ("_linalg_eigh", 1, {"UPLO": "L", "compute_v": False})),
        (lambda: LA.lstsq(A, B, driver="gelsd"),
         ("_linalg_lstsq", 2, {"rcond": None, "driver": "gelsd"})),
        (lambda: ember.cholesky_solve(B, A), ("_cholesky_solve", 2, {"upper": False})),
    ]
    for fn, want in expected:
        fn()
        assert want in recording_hook, want
    n = len(recording_hook)
    with ember.no_grad():
        LA.inv(A)
    assert len(recording_hook) == n


def test_concurrent_calls_from_threads():
    """LAPACK runs without the GIL: calls from several Python threads at once stay correct."""
    import threading

    a = well_conditioned(8, 40, 40)
    want_inv, want_s = np.linalg.inv(a), np.linalg.svd(a, compute_uv=False)
    errors = []

    def work():
        try:
            for _ in range(5):
                close(LA.inv(E(a)), want_inv, "float64", 100)
                close(LA.svdvals(E(a)), want_s, "float64", 100)
                close(ember.einsum("bij,bjk->bik", E(a), E(a)), a @ a, "float64", 100)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
