"""ember.linalg (and its top-level forms: ember.det, ember.inverse, ...) on CUDA tensors against
the same calls on the CPU: values, dtypes, the device of every result, namedtuple types, batches
and broadcasting, out=, and errors message for message. The LAPACK primitives run the CPU kernel
on host copies, so their results are the CPU's bit for bit; composites (norms, pinv, ...) also
run device ops and agree to rounding. Also ember.tensor/as_tensor of CUDA tensors.
Simulated devices where there is no GPU (see test_cuda_tensors.py)."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember import cuda
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, assert_matches_cpu, devices, on_gpu
from ember.cuda._testing import assert_same_error as same_error

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")
two_devices = pytest.mark.skipif(REAL_GPU and cuda.device_count() < 2, reason="needs two GPUs")

CUDA0 = ember.device("cuda", 0)
LA = ember.linalg
MIXED = "Expected all tensors to be on the same device, but found at least two devices"


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20, 2):
        yield


def data(*shape, dtype="float64", seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def spd(*shape, dtype="float64", seed=0):
    """Symmetric positive-definite matrices."""
    a = data(*shape, dtype=dtype, seed=seed)
    return a.matmul(a.mT) + ember.eye(shape[-1], dtype=a.dtype)


def same(gpu, cpu, exact=True):
    assert_matches_cpu(gpu, cpu, None if exact else {"float32": 1e-4, "float64": 1e-10})


def check(fn, *args, exact=True, **kwargs):
    """fn on CUDA copies of the arguments gives what it gives on the CPU."""
    same(fn(*on_gpu(args), **on_gpu(kwargs)), fn(*args, **kwargs), exact)


SQUARE = [(3, 3), (2, 4, 4), (2, 1, 3, 3)]


# ---- the LAPACK primitives: the CPU's results exactly ----

@pytest.mark.parametrize("shape", SQUARE)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_factorizations_of_square_matrices(shape, dtype):
    A, S = data(*shape, dtype=dtype), spd(*shape, dtype=dtype)
    for fn in (LA.inv, LA.inv_ex, LA.det, LA.slogdet, LA.lu_factor, LA.lu_factor_ex, LA.lu,
               LA.qr, LA.svd, LA.svdvals, ember.det, ember.slogdet, ember.inverse, ember.svd,
               ember.qr, ember.logdet):
        check(fn, A)
    for fn in (LA.cholesky, LA.cholesky_ex, LA.eigh, LA.eigvalsh, ember.cholesky):
        check(fn, S)
    check(LA.cholesky, S, upper=True)
    check(LA.eigh, S, UPLO="U")
    check(LA.lu, A, pivot=True)
    check(LA.qr, A, mode="complete")
    check(LA.qr, A, mode="r")
    check(ember.geqrf, A)
    check(ember.ormqr, *ember.geqrf(A), A, transpose=True)
    check(LA.ldl_factor_ex, S)
    LD, pivots = LA.ldl_factor(S)
    check(LA.ldl_solve, LD, pivots, A)
    packed, tau = ember.geqrf(A)
    check(LA.householder_product, packed, tau)
    check(LA.svd, A, full_matrices=False)
    check(ember.svd, A, some=False)
    check(ember.svd, A, compute_uv=False)


@pytest.mark.parametrize("shape", [(4, 2), (2, 3, 5)])
def test_factorizations_of_rectangular_matrices(shape):
    A = data(*shape)
    for fn in (LA.qr, LA.svd, LA.svdvals, LA.lu, LA.lu_factor, LA.pinv, LA.matrix_rank):
        check(fn, A, exact=fn in (LA.qr, LA.svd, LA.svdvals, LA.lu, LA.lu_factor))
    check(LA.qr, A, mode="complete")


def test_solvers_batched_and_broadcast():
    A, B, v = data(2, 1, 3, 3), data(4, 3, 2, seed=1), data(3, seed=2)
    for fn in (LA.solve, LA.solve_ex):
        check(fn, A, B)
        check(fn, A, v)
        check(fn, A, B.mT, left=False)
    check(LA.solve_ex, A, B, check_errors=True)
    check(LA.solve_triangular, A.triu(), B, upper=True)
    check(LA.solve_triangular, A.tril(), B, upper=False, unitriangular=True)
    check(LA.solve_triangular, A.triu(), B.mT, upper=True, left=False)
    LU, piv = LA.lu_factor(A)
    check(LA.lu_solve, LU, piv, B)
    check(LA.lu_solve, LU, piv, B, adjoint=True)
    check(LA.lu_solve, LU, piv, B.mT, left=False)
    S = spd(2, 1, 3, 3)
    check(ember.cholesky_solve, B, LA.cholesky(S))
    check(ember.cholesky_solve, B, LA.cholesky(S, upper=True), upper=True)
    for driver in (None, "gels", "gelsy", "gelsd", "gelss"):
        check(LA.lstsq, data(2, 5, 3), data(2, 5, 2, seed=1), driver=driver)
    check(LA.lstsq, data(5, 3), data(5, seed=1))
    check(LA.tensorsolve, data(2, 3, 6), data(2, 3, seed=1))


def test_results_keep_namedtuple_types():
    A = ember.eye(3, dtype=ember.float64, device="cuda") * 2
    r = LA.slogdet(A)
    assert type(r).__name__ == "linalg_slogdet" and r.sign.device == CUDA0
    assert type(LA.lu_factor_ex(A)).__name__ == "linalg_lu_factor_ex"
    assert LA.lu_factor(A).pivots.dtype == ember.int32
    assert LA.inv_ex(A).info.device == CUDA0


def test_empty_and_zero_size_batches():
    for shape in [(0, 3, 3), (2, 0, 0)]:
        A = ember.zeros(shape, dtype=ember.float64)
        for fn in (LA.inv, LA.det, LA.slogdet, LA.cholesky_ex, LA.qr, LA.svd, LA.eigh,
                   LA.matrix_norm, LA.pinv):
            check(fn, A)


# ---- the composites: on the input's device, the CPU's values to rounding ----

@pytest.mark.parametrize("shape", SQUARE)
def test_composites(shape):
    A, S = data(*shape), spd(*shape)
    for fn in (LA.norm, LA.matrix_norm, LA.pinv, LA.matrix_rank, LA.cond, LA.matrix_exp,
               LA.vector_norm, ember.pinverse, LA.svdvals):
        check(fn, A, exact=False)
    for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        check(LA.matrix_norm, A, ord, exact=False)
        if ord not in ("nuc",):
            check(LA.cond, A, ord, exact=False)
    check(LA.norm, A, 2, (-2, -1), exact=False)
    check(ember.norm, A, "nuc", exact=False)
    check(LA.pinv, S, hermitian=True, exact=False)
    check(LA.pinv, A, atol=0.5, exact=False)
    check(LA.pinv, A, rtol=ember.tensor(0.3, dtype=ember.float64), exact=False)
    check(LA.matrix_rank, A, atol=0.5, rtol=0.1, exact=False)
    check(LA.matrix_rank, S, hermitian=True, exact=False)
    for n in (-2, 0, 3):
        check(LA.matrix_power, A, n, exact=False)
    check(LA.matrix_exp, A * 10, exact=False)  # scaled and squared


def test_composites_of_vectors_and_products():
    v, M = data(3), data(3, 4, seed=1)
    check(LA.multi_dot, [v, M, data(4, 2, seed=2), data(2, seed=3)], exact=False)
    check(LA.multi_dot, [M.mT, M, M.mT], exact=False)
    check(LA.vander, v, exact=False)  # powers: a GPU multiplies in another order
    check(LA.vander, data(2, 3), N=4, exact=False)
    check(LA.cross, data(2, 3), data(2, 3, seed=1), exact=False)
    check(ember.cross, data(3, 2), data(3, 2, seed=1), exact=False)
    check(LA.vecdot, M, M, exact=False)
    check(LA.diagonal, M, offset=1)
    check(LA.tensorinv, spd(6, 6).reshape(6, 2, 3), ind=1, exact=False)
    check(LA.cond, ember.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=ember.float64), 1, exact=False)


# ---- errors, message for message ----

def test_numerical_errors_match_the_cpu():
    singular = ember.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=ember.float64)
    batch = ember.stack([ember.eye(2, dtype=ember.float64), singular])
    not_pd = ember.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=ember.float64)
    rhs = ember.ones(2, 1, dtype=ember.float64)
    for fn in (LA.inv, ember.inverse, LA.lu_factor):
        same_error(fn, batch)
    same_error(LA.tensorinv, singular, 1)
    same_error(LA.solve, singular, rhs)
    same_error(LA.matrix_power, batch, -1)
    for fn in (LA.cholesky, ember.cholesky):
        same_error(fn, not_pd)
    same_error(LA.cholesky_ex, not_pd, check_errors=True)
    same_error(LA.inv_ex, batch, check_errors=True)
    same_error(LA.solve_ex, batch, rhs, check_errors=True)
    # the *_ex forms report through `info` instead, on the device
    check(LA.inv_ex, batch)
    check(LA.cholesky_ex, not_pd)
    check(LA.lu_factor_ex, ember.zeros(2, 2, dtype=ember.float64))


def test_argument_errors_match_the_cpu():
    ints, rect = ember.ones(2, 2, dtype=ember.int64), data(2, 3)
    half = ember.ones(2, 2, dtype=ember.float16)
    for fn in (LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.qr, LA.svd, LA.eigh, LA.pinv,
               LA.matrix_rank, LA.matrix_norm, LA.matrix_exp, LA.lu_factor, LA.cond, LA.norm,
               ember.logdet, ember.inverse):
        same_error(fn, ints)
    for fn in (LA.inv, LA.det, LA.cholesky, LA.eigh, LA.matrix_exp, LA.matrix_power, LA.lu_solve):
        args = (rect, 2) if fn is LA.matrix_power else \
            (rect, ember.ones(2, dtype=ember.int32), rect) if fn is LA.lu_solve else (rect,)
        same_error(fn, *args)
    same_error(LA.inv, half)
    same_error(LA.solve, data(3, 3), data(3, 3, dtype="float32"))
    same_error(LA.solve, data(3, 3), data(2, 1))
    same_error(LA.solve, data(2, 3, 3), data(4, 3, 1))
    same_error(LA.lstsq, data(3, 3), data(2, 1))
    same_error(LA.qr, data(2, 2), mode="bogus")
    same_error(LA.eigh, spd(2, 2), UPLO="X")
    same_error(LA.lstsq, data(3, 3), data(3, 1), driver="bogus")
    same_error(LA.multi_dot, [data(2, 3), data(2, 3)])


@two_devices
def test_mixed_devices_raise_torchs_error():
    g, c = ember.eye(3, dtype=ember.float64, device="cuda"), ember.eye(3, dtype=ember.float64)
    LU, piv = LA.lu_factor(c)
    LUg, pivg = LA.lu_factor(g)
    for bad in (lambda: LA.solve(g, c), lambda: LA.solve(c, g), lambda: LA.lstsq(g, c),
                lambda: LA.solve_triangular(g, c, upper=True), lambda: ember.cholesky_solve(c, g),
                lambda: LA.lu_solve(LUg, piv, g), lambda: LA.lu_solve(LU, pivg, c),
                lambda: LA.lu_solve(LUg, pivg, g.cuda(1)), lambda: LA.multi_dot([g, c]),
                lambda: LA.solve(g, g.cuda(1)), lambda: LA.cross(g, c)):
        with pytest.raises(RuntimeError, match=MIXED):
            bad()


@two_devices
def test_out():
    A = data(2, 3, 3)
    for device in ("cuda", "cuda:1"):
        Ag = A.to(device)
        out = ember.empty(0, dtype=ember.float64, device=device)
        r = LA.inv(Ag, out=out)
        assert r is out and out.device == Ag.device
        np.testing.assert_array_equal(out.cpu().numpy(), LA.inv(A).numpy())
    Ag = A.cuda()
    outs = (ember.empty(0, dtype=ember.float64, device="cuda"),
            ember.empty(0, dtype=ember.float64, device="cuda"))
    r = LA.slogdet(Ag, out=outs)
    assert type(r).__name__ == "linalg_slogdet" and r[0] is outs[0]
    same(tuple(outs), tuple(LA.slogdet(A)))
    out = ember.empty(0, dtype=ember.float64, device="cuda")
    assert LA.matrix_norm(Ag, out=out) is out
    # out= on another device than the result: the mixed-device error, both ways
    for a, o in ((Ag, ember.empty(0, dtype=ember.float64)),
                 (A, ember.empty(0, dtype=ember.float64, device="cuda")),
                 (Ag, ember.empty(0, dtype=ember.float64, device="cuda:1"))):
        with pytest.raises(RuntimeError, match=MIXED):
            LA.inv(a, out=o)
    # the dtype rule is the CPU's
    same_error(LA.inv, A, out=ember.empty(0, dtype=ember.float32))


def test_runs_on_the_inputs_device():
    A = spd(2, 3, 3).cuda(1) if not REAL_GPU or cuda.device_count() > 1 else spd(2, 3, 3).cuda()
    for fn in (LA.inv, LA.cholesky, LA.pinv, LA.matrix_exp, LA.eigvalsh):
        assert fn(A).device == A.device
    for t in LA.svd(A) + LA.lu(A) + LA.lstsq(A, A):
        assert t.device == A.device


# ---- ember.tensor / ember.as_tensor of CUDA tensors ----

COPY_WARNING = "To copy construct from a tensor, it is recommended to use sourceTensor.detach"


def test_tensor_of_a_cuda_tensor_copies_on_its_device():
    g = ember.arange(6.0, device="cuda").reshape(2, 3)
    with pytest.warns(UserWarning, match=COPY_WARNING):
        t = ember.tensor(g)
    assert t.device == CUDA0 and t.dtype == ember.float32
    t.add_(1)  # a copy: the source is not written
    np.testing.assert_array_equal(g.cpu().numpy(), np.arange(6.0).reshape(2, 3))
    with pytest.warns(UserWarning, match=COPY_WARNING):
        t = ember.tensor(g, dtype=ember.int64, requires_grad=False)
    assert t.device == CUDA0 and t.dtype == ember.int64
    with pytest.warns(UserWarning, match=COPY_WARNING):
        t = ember.tensor(g, device="cpu", dtype=ember.float64)
    assert t.device.type == "cpu" and t.dtype == ember.float64
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3))
    with pytest.warns(UserWarning, match=COPY_WARNING):  # the CPU warns too, as torch does
        ember.tensor(ember.ones(2))


def test_tensor_of_cuda_tensors_with_requires_grad():
    pytest.importorskip("ember.autograd")  # requires_grad needs it
    g = ember.arange(3.0, device="cuda").requires_grad_()
    with pytest.warns(UserWarning, match=COPY_WARNING):
        t = ember.tensor(g, requires_grad=True)
    assert t.device == CUDA0 and t.requires_grad and t.is_leaf  # detached from g's graph
    t = ember.tensor([g[0], g[1]], device="cuda", requires_grad=True)
    assert t.device == CUDA0 and t.requires_grad and t.is_leaf
    t = ember.tensor([g[0]])
    assert not t.requires_grad


@two_devices
def test_tensor_of_a_cuda_tensor_to_another_device():
    g = ember.arange(4, device="cuda")
    with pytest.warns(UserWarning, match=COPY_WARNING):
        t = ember.tensor(g[1:], device="cuda:1")
    assert t.device == ember.device("cuda", 1)
    assert t.cpu().tolist() == [1, 2, 3]


def test_tensor_of_a_list_of_cuda_tensors():
    g = ember.tensor([1.5, 2.5], device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no copy-construct warning for a list, as in torch
        t = ember.tensor([g[0], g[1]])
    # built on the host like any list, as torch does: CPU unless device= says otherwise
    assert t.device.type == "cpu" and t.tolist() == [1.5, 2.5]
    t = ember.tensor([[g[0], 3], [g[1], 4]], device="cuda", dtype=ember.float64)
    assert t.device == CUDA0 and t.dtype == ember.float64
    assert t.cpu().tolist() == [[1.5, 3.0], [2.5, 4.0]]
    assert ember.tensor([g, g], device="cuda").cpu().tolist() == [[1.5, 2.5]] * 2


def test_as_tensor_of_a_cuda_tensor():
    g = ember.arange(3.0, device="cuda")
    assert ember.as_tensor(g) is g
    assert ember.as_tensor(g, device="cuda") is g
    assert ember.as_tensor(g, dtype=ember.float32) is g
    t = ember.as_tensor(g, dtype=ember.float64)
    assert t.device == CUDA0 and t.dtype == ember.float64
    c = ember.as_tensor(g, device="cpu")
    assert c.device.type == "cpu" and c.tolist() == [0.0, 1.0, 2.0]
    t = ember.as_tensor(c, device="cuda")
    assert t.device == CUDA0 and t.cpu().tolist() == [0.0, 1.0, 2.0]
    t = ember.as_tensor([g[0], g[2]])
    assert t.device.type == "cpu" and t.tolist() == [0.0, 2.0]


def test_every_public_function_runs_on_the_device():
    """One call of each name in ember.linalg.__all__ and of each top-level form (functions and
    Tensor methods): every tensor in the result is on the input's device."""
    A, S, v = data(2, 3, 3).cuda(), spd(2, 3, 3).cuda(), data(3).cuda()
    calls = {
        "norm": lambda: LA.norm(A), "vector_norm": lambda: LA.vector_norm(v, 3),
        "matrix_norm": lambda: LA.matrix_norm(A, 2), "inv": lambda: LA.inv(A),
        "inv_ex": lambda: LA.inv_ex(A), "det": lambda: LA.det(A), "slogdet": lambda: LA.slogdet(A),
        "solve": lambda: LA.solve(A, v), "solve_ex": lambda: LA.solve_ex(A, A),
        "solve_triangular": lambda: LA.solve_triangular(S, A, upper=False),
        "lstsq": lambda: LA.lstsq(A, A, driver="gelsd"), "cholesky": lambda: LA.cholesky(S),
        "cholesky_ex": lambda: LA.cholesky_ex(S), "qr": lambda: LA.qr(A), "svd": lambda: LA.svd(A),
        "svdvals": lambda: LA.svdvals(A), "eigh": lambda: LA.eigh(S),
        "eig": lambda: LA.eig(A), "eigvals": lambda: LA.eigvals(A),
        "eigvalsh": lambda: LA.eigvalsh(S), "pinv": lambda: LA.pinv(A),
        "matrix_rank": lambda: LA.matrix_rank(A), "matrix_power": lambda: LA.matrix_power(A, -1),
        "multi_dot": lambda: LA.multi_dot([v, A[0], v]), "cross": lambda: LA.cross(A, A),
        "vecdot": lambda: LA.vecdot(A, A), "matmul": lambda: LA.matmul(A, v),
        "diagonal": lambda: LA.diagonal(A), "lu_factor": lambda: LA.lu_factor(A),
        "lu_factor_ex": lambda: LA.lu_factor_ex(A), "lu": lambda: LA.lu(A),
        "lu_solve": lambda: LA.lu_solve(*LA.lu_factor(A), A), "cond": lambda: LA.cond(A, "fro"),
        "tensorinv": lambda: LA.tensorinv(S[0].reshape(3, 3, 1), 1),
        "tensorsolve": lambda: LA.tensorsolve(A[0], v), "vander": lambda: LA.vander(v),
        "matrix_exp": lambda: LA.matrix_exp(A),
        "householder_product": lambda: LA.householder_product(*ember.geqrf(A)),
        "ldl_factor": lambda: LA.ldl_factor(S), "ldl_factor_ex": lambda: LA.ldl_factor_ex(S),
        "ldl_solve": lambda: LA.ldl_solve(*LA.ldl_factor(S), A),
    }
    assert set(calls) == set(LA.__all__) - {"LinAlgError"}
    top = {"det": (A,), "logdet": (S,), "slogdet": (A,), "inverse": (A,), "pinverse": (A,),
           "svd": (A,), "qr": (A,), "cross": (A, A), "cholesky": (S,), "cholesky_solve": (A, S),
           "matrix_power": (A, 2), "norm": (A, "nuc"), "geqrf": (A,),
           "orgqr": tuple(ember.geqrf(A)), "ormqr": tuple(ember.geqrf(A)) + (A,)}
    assert set(top) == set(LA.TOP_LEVEL)
    for name, args in top.items():
        calls["ember." + name] = lambda name=name, args=args: getattr(ember, name)(*args)
        calls["Tensor." + name] = lambda name=name, args=args: getattr(args[0], name)(*args[1:])
    for name, call in calls.items():
        r = call()
        for t in r if isinstance(r, tuple) else (r,):
            assert t.device == CUDA0, name


def test_svd_driver_is_refused_rather_than_ignored():
    """torch takes driver= on CUDA only (cuSOLVER's); ember's CUDA SVD is LAPACK on the host."""
    A = ember.randn(4, 3)
    with pytest.raises(RuntimeError, match="only supported on CUDA inputs"):
        ember.linalg.svd(A, driver="gesvd")
    with pytest.raises(RuntimeError, match="only supported on CUDA inputs"):
        ember.linalg.svdvals(A, driver="gesvdj")
    G = A.to(CUDA0)
    for driver in ("gesvd", "gesvdj", "gesvda"):
        with pytest.raises(NotImplementedError, match="gesdd on the host"):
            ember.linalg.svd(G, driver=driver)
    with pytest.raises(RuntimeError, match="unknown svd driver bogus"):
        ember.linalg.svdvals(G, driver="bogus")
    U, S, Vh = ember.linalg.svd(G, full_matrices=False, driver=None)
    np.testing.assert_allclose((U * S.unsqueeze(-2) @ Vh).cpu().numpy(), A.numpy(), atol=1e-5)
