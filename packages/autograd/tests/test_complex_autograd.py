"""Gradients through complex tensors: every formula the complex table lists is gradchecked
(finite differences over the real and imaginary parts, float64), values are compared with torch
where it is installed, and an op without a checked formula is refused."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.fft as F
from ember.autograd import _formulas_complex as table
from ember.autograd import gradcheck, gradgradcheck

C128 = ember.complex128


def cplx(*shape, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale
    return ember.tensor(a, dtype=C128).requires_grad_()


def real(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape)).requires_grad_()


# One call per listed op (the hook's name -> a function of two complex tensors a, b of shape
# (3, 4) and a real one x), away from branch cuts and zeros.
CALLS = {
    "_expand": lambda a, b, x: a[:, :1].expand(3, 4),
    "_getitem": lambda a, b, x: a[1:, ::2],
    "_to_dtype": lambda a, b, x: x.to(C128) * b,
    "_view": lambda a, b, x: a.view(4, 3),
    "cat": lambda a, b, x: ember.cat([a, b], 1),
    "clone": lambda a, b, x: a.clone(),
    "constant_pad_nd": lambda a, b, x: ember.constant_pad_nd(a, [1, 2]),
    "diag_embed": lambda a, b, x: ember.diag_embed(a),
    "diagonal": lambda a, b, x: a.diagonal(),
    "flatten": lambda a, b, x: a.flatten(),
    "flip": lambda a, b, x: a.flip(0),
    "narrow": lambda a, b, x: a.narrow(1, 1, 2),
    "neg": lambda a, b, x: -a,
    "neg_": lambda a, b, x: (a * 1).neg_(),
    "permute": lambda a, b, x: a.permute(1, 0),
    "reshape": lambda a, b, x: a.reshape(12),
    "roll": lambda a, b, x: a.roll(1, 1),
    "select": lambda a, b, x: a.select(0, 1),
    "split_with_sizes": lambda a, b, x: a.split_with_sizes([1, 3], 1)[1],
    "squeeze": lambda a, b, x: a[:1].squeeze(0),
    "stack": lambda a, b, x: ember.stack([a, b]),
    "sum": lambda a, b, x: a.sum(1),
    "mean": lambda a, b, x: a.mean(0),
    "t": lambda a, b, x: a.t(),
    "transpose": lambda a, b, x: a.transpose(0, 1),
    "tril": lambda a, b, x: a.tril(),
    "tril_": lambda a, b, x: (a * 1).tril_(),
    "triu": lambda a, b, x: a.triu(1),
    "triu_": lambda a, b, x: (a * 1).triu_(),
    "unbind": lambda a, b, x: a.unbind(0)[2],
    "unflatten": lambda a, b, x: a.unflatten(1, (2, 2)),
    "unsqueeze": lambda a, b, x: a.unsqueeze(1),
    "cumsum": lambda a, b, x: a.cumsum(1),
    "where": lambda a, b, x: ember.where(x > 0, a, b),
    "masked_fill": lambda a, b, x: a.masked_fill(x > 0, 2j),
    "masked_fill_": lambda a, b, x: (a * 1).masked_fill_(x > 0, 2j),
    "add": lambda a, b, x: ember.add(a, b, alpha=2 - 1j),
    "add_": lambda a, b, x: (a * 1).add_(b),
    "sub": lambda a, b, x: a - b * 0.5,
    "sub_": lambda a, b, x: (a * 1).sub_(b, alpha=1j),
    "mul": lambda a, b, x: a * b,
    "mul_": lambda a, b, x: (a * 1).mul_(b),
    "div": lambda a, b, x: a / b,
    "div_": lambda a, b, x: (a * 1).div_(b),
    "matmul": lambda a, b, x: a @ b.t(),
    "mm": lambda a, b, x: ember.mm(a, b.t()),
    "bmm": lambda a, b, x: ember.bmm(a[None], b.t()[None]),
    "mv": lambda a, b, x: ember.mv(a, b[0]),
    "dot": lambda a, b, x: ember.dot(a[0], b[0]),
    "outer": lambda a, b, x: ember.outer(a[0], b[1]),
    "inner": lambda a, b, x: ember.inner(a, b),
    "ger": lambda a, b, x: ember.ger(a[0], b[1]),
    "addmm": lambda a, b, x: ember.addmm(a[:, :3], a, b.t()[:, :3]),
    "addmm_": lambda a, b, x: (a[:, :3] * 1).addmm_(a, b.t()[:, :3]),
    "addmv": lambda a, b, x: ember.addmv(a[:, 0], a, b[0]),
    "addmv_": lambda a, b, x: (a[:, 0] * 1).addmv_(a, b[0]),
    "baddbmm": lambda a, b, x: ember.baddbmm(a[None, :, :3], a[None], b.t()[None, :, :3]),
    "baddbmm_": lambda a, b, x: (a[None, :, :3] * 1).baddbmm_(a[None], b.t()[None, :, :3]),
    "addbmm": lambda a, b, x: ember.addbmm(a[:, :3], a[None], b.t()[None, :, :3]),
    "addbmm_": lambda a, b, x: (a[:, :3] * 1).addbmm_(a[None], b.t()[None, :, :3]),
    "pow": lambda a, b, x: a ** b * 0.1 + a ** (2 - 1j),
    "pow_": lambda a, b, x: (a * 1).pow_(b),
    "abs": lambda a, b, x: a.abs(),
    "angle": lambda a, b, x: a.angle(),
    "vdot": lambda a, b, x: ember.vdot(a[0], b[0]),
    "conj_physical": lambda a, b, x: ember.conj_physical(a) * b,
    "view_as_real": lambda a, b, x: ember.view_as_real(a),
    "view_as_complex": lambda a, b, x: ember.view_as_complex(ember.view_as_real(a) * 2),
    "acosh": lambda a, b, x: (a * 0.5).acosh(),
    "acosh_": lambda a, b, x: (a * 0.5).acosh_(),
    "_setitem": lambda a, b, x: _setitem(a * 1, b),
    "_copy_": lambda a, b, x: (a * 1)[:2].copy_(b[1:]) * 1,
    "_fill_": lambda a, b, x: (a * 1).fill_(b[0, 0]),
    "_linalg_inv_ex": lambda a, b, x: ember.linalg.inv(_square(a)),
    "_linalg_det": lambda a, b, x: ember.linalg.det(_square(a)),
    "_linalg_solve_ex": lambda a, b, x: ember.linalg.solve(_square(a), b[:, :2]),
    "cumsum_": lambda a, b, x: (a * 1).cumsum_(1),
    "as_strided": lambda a, b, x: a.as_strided((2, 3), (1, 2), 1),
    "gather": lambda a, b, x: a.gather(1, IDX),
    "index_select": lambda a, b, x: a.index_select(1, ember.tensor([3, 0, 3])),
    "take": lambda a, b, x: a.take(ember.tensor([1, 5, 1])),
    "take_along_dim": lambda a, b, x: ember.take_along_dim(a[:2], IDX, 1),
    "index_copy": lambda a, b, x: a.index_copy(1, ember.tensor([2, 0]), b[:, :2]),
    "index_copy_": lambda a, b, x: (a * 1).index_copy_(1, ember.tensor([2, 0]), b[:, :2]),
    "index_fill": lambda a, b, x: a.index_fill(1, ember.tensor([1]), b[0, 0]),
    "index_fill_": lambda a, b, x: (a * 1).index_fill_(1, ember.tensor([1]), 2j),
    "index_put": lambda a, b, x: a.index_put((ember.tensor([0, 0]),), b[:2], accumulate=True),
    "index_put_": lambda a, b, x: (a * 1).index_put_((ember.tensor([2, 0]),), b[:2]),
    "masked_select": lambda a, b, x: a.masked_select(x > 0),
    "masked_scatter": lambda a, b, x: a.masked_scatter(x > 0, b),
    "masked_scatter_": lambda a, b, x: (a * 1).masked_scatter_(x > 0, b),
    "scatter": lambda a, b, x: a.scatter(1, ember.tensor([[3, 1], [0, 2]]), b),
    "scatter_": lambda a, b, x: (a * 1).scatter_(1, IDX, b, reduce="add"),
    "scatter_add": lambda a, b, x: a.scatter_add(1, IDX, b),
    "scatter_add_": lambda a, b, x: (a * 1).scatter_add_(1, IDX, b),
    "repeat_interleave": lambda a, b, x: a.repeat_interleave(2, 1),
    "unfold": lambda a, b, x: a.unfold(1, 2, 1),
    "var": lambda a, b, x: a.var(1),
    "std": lambda a, b, x: a.std(),
    "var_mean": lambda a, b, x: ember.var_mean(a, 0, correction=0)[0] * b[0]
    + ember.var_mean(a, 0)[1],
    "std_mean": lambda a, b, x: ember.std_mean(a, 1)[0] * b[:, 0] + ember.std_mean(a, 1)[1],
    "norm": lambda a, b, x: ember.norm(a) + ember.norm(a, 1, dim=0).sum() * b
    + ember.linalg.vector_norm(a, 3, dim=1, keepdim=True) + ember.linalg.vector_norm(a, -1.5)
    + ember.linalg.vector_norm(a, float("inf"), dim=0) + ember.linalg.norm(a)
    + ember.linalg.matrix_norm(a) + ember.dist(a, b) + ember.dist(a, b, 3),
    "prod": lambda a, b, x: a.prod(1) * a.prod(),
    "cumprod": lambda a, b, x: a.cumprod(1),
    "cumprod_": lambda a, b, x: (a * 1).cumprod_(0),
    "logsumexp": lambda a, b, x: ember.logsumexp(a, 1) + ember.logsumexp(a, (0, 1)),
    "logaddexp": lambda a, b, x: ember.logaddexp(a, b) + ember.logaddexp(a, x),
    "logaddexp_": lambda a, b, x: (a * 1).logaddexp_(b),
    "exp2": lambda a, b, x: ember.exp2(a),
    "exp2_": lambda a, b, x: (a * 1).exp2_(),
    "sinc": lambda a, b, x: ember.sinc(a),
    "sinc_": lambda a, b, x: (a * 1).sinc_(),
    "lerp": lambda a, b, x: ember.lerp(a, b, 0.3 - 0.6j) + ember.lerp(a, b, b * 0.2),
    "lerp_": lambda a, b, x: (a * 1).lerp_(b, 0.75),
    "scatter_reduce": lambda a, b, x: a.scatter_reduce(1, IDX, b, "prod")
    + a.scatter_reduce(1, IDX, b, "mean", include_self=False) + a.scatter_reduce(1, IDX, b, "sum"),
    "scatter_reduce_": lambda a, b, x: (a * 1).scatter_reduce_(1, IDX, b, "prod",
                                                               include_self=False),
    "index_add": lambda a, b, x: a.index_add(1, ember.tensor([0, 0, 3]), b[:, :3], alpha=2 - 1j),
    "index_add_": lambda a, b, x: (a * 1).index_add_(0, ember.tensor([1, 1]), b[:2]),
    # the decompositions: losses that do not depend on the eigen/singular vectors' phases
    "_linalg_slogdet": lambda a, b, x: ember.linalg.slogdet(_square(a))[1],
    "_linalg_solve_triangular": lambda a, b, x: ember.linalg.solve_triangular(
        _square(a).triu(), b[:, :2], upper=True),
    "_linalg_cholesky_ex": lambda a, b, x: ember.linalg.cholesky(_hpd(a)),
    "_cholesky_solve": lambda a, b, x: ember.cholesky_solve(b[:, :2], _square(a).tril()),
    "_linalg_qr": lambda a, b, x: ember.linalg.qr(a.mT),
    "_linalg_svd": lambda a, b, x: ember.linalg.svd(a, full_matrices=False)[0].abs() ** 2,
    "_linalg_eig": lambda a, b, x: ember.linalg.eig(_square(a))[1].abs() ** 2,
    "_linalg_eigh": lambda a, b, x: ember.linalg.eigh(_hpd(a))[1].abs() ** 2,
    "_linalg_lstsq": lambda a, b, x: ember.linalg.lstsq(a.mT, b.mT).solution,
    "_householder_product": lambda a, b, x: ember.linalg.householder_product(a.mT, b[0, :2]),
    "_ormqr": lambda a, b, x: ember.ormqr(a.mT, b[0, :3], b.mT, transpose=True),
    "_linalg_lu_factor_ex": lambda a, b, x: ember.linalg.lu_factor(a).LU,
    "_linalg_lu": lambda a, b, x: ember.linalg.lu(a.mT)[1:],
    "_linalg_lu_solve": lambda a, b, x: ember.linalg.lu_solve(
        *ember.linalg.lu_factor(_square(a)), b[:, :2], adjoint=True),
}
IDX = ember.tensor([[0, 1, 0, 3], [2, 2, 2, 2]])  # with duplicates


def _hpd(a):  # a Hermitian positive-definite 3 x 3 matrix
    return a.matmul(a.mH) + 3 * ember.eye(3, dtype=a.dtype)


def _square(a):  # a well-conditioned 3 x 3 matrix
    return a[:, :3] + 3 * ember.eye(3, dtype=a.dtype)


def _setitem(t, v):
    t[1:, ::2] = v[:2, :2]
    return t
for _fn in ("exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
            "square", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan",
            "asinh", "atanh", "sigmoid"):
    CALLS[_fn] = (lambda f: lambda a, b, x: getattr(a * 0.5, f)())(_fn)
    CALLS[_fn + "_"] = (lambda f: lambda a, b, x: getattr(a * 0.5, f + "_")())(_fn)


def test_every_listed_op_has_a_call():
    listed = set(table.AS_REAL) | set(table.CONJUGATED) | set(table.AS_WRITTEN) | set(
        table.HERMITIAN) | {
        "abs", "angle", "vdot", "conj_physical", "view_as_real", "view_as_complex", "pow", "pow_",
        "acosh", "acosh_", "_linalg_eig"}
    assert listed == set(CALLS), (listed ^ set(CALLS))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_gradcheck(name):
    a, b, x = cplx(3, 4, seed=1), cplx(3, 4, seed=2), real(3, 4, seed=3)
    fn = CALLS[name]
    assert gradcheck(lambda p, q: fn(p, q, x), (a, b))


@pytest.mark.parametrize("name", ["mul", "div", "exp", "abs", "matmul", "pow", "sigmoid",
                                  "angle", "vdot", "prod", "cumprod", "var", "std", "norm",
                                  "logsumexp", "logaddexp", "lerp", "scatter_reduce", "index_add"])
def test_gradgradcheck(name):
    a, b, x = cplx(2, 4, seed=4), cplx(3, 4, seed=5)[:2].detach().requires_grad_(), \
        real(2, 4, seed=6)
    fn = CALLS[name]
    if name in ("matmul",):
        assert gradgradcheck(lambda p, q: fn(p, q, x), (a, b))
    else:
        assert gradgradcheck(lambda p, q: fn(p, q, x), (a, b))


def test_real_and_complex_inputs_together():
    x, z = real(4, seed=7), cplx(4, seed=8)
    assert gradcheck(lambda p, q: (p * q).exp() + ember.complex(p, p * 2), (x, z))
    assert gradcheck(lambda p, q: ember.polar(p.abs() + 0.5, p) * q, (x, z))
    # a real leaf gets a real gradient: the real part of the complex one
    loss = (x * 1j + z).abs().sum()
    loss.backward()
    assert x.grad.dtype is ember.float64 and z.grad.dtype is C128


def test_leaf_gradients_accumulate():
    z = cplx(3, seed=9)
    (z * z.conj()).real.sum().backward()
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 4 * z.detach().numpy(), rtol=1e-12)


def test_a_complex_scalar_output_needs_an_explicit_gradient():
    z = cplx(3, seed=10)
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        (z * 2).sum().backward()
    (z * 2).sum().backward(ember.tensor(1 + 0j, dtype=C128))
    np.testing.assert_allclose(z.grad.numpy(), np.full(3, 2 + 0j))


def test_ops_without_a_checked_formula_are_refused():
    z = cplx(3, seed=11)
    for fn, name in ((lambda t: ember.nan_to_num(t), "nan_to_num"),):
        with pytest.raises(NotImplementedError, match=f"'{name}' for complex tensors is not"):
            fn(z)
    x = real(3, seed=12)
    with pytest.raises(NotImplementedError, match="'nan_to_num' for complex tensors"):
        ember.nan_to_num(x * 1j)
    with ember.no_grad():  # outside autograd the op runs
        assert ember.nan_to_num(z).dtype is C128


def _hpd_of(X):
    n = X.shape[-1]
    return X.matmul(X.mH) + n * ember.eye(n, dtype=X.dtype)


def _eye3(t):
    return 3 * ember.eye(3, dtype=t.dtype)


# linalg gradients for complex matrices (batched, both triangles, wide and tall): the losses are
# invariant under the phases LAPACK picks for eigen/singular vectors, as torch's tests use
LINALG_CASES = {
    "slogdet": (lambda A: ember.linalg.slogdet(A)[1], [(2, 3, 3)]),
    "slogdet sign": (lambda A: ember.linalg.slogdet(A)[0], [(3, 3)]),
    "svdvals": (lambda A: ember.linalg.svdvals(A), [(2, 4, 3)]),
    "svd U S Vh": (lambda A: (lambda U, S, Vh: U @ ember.diag_embed(S + 0j) @ Vh)(
        *ember.linalg.svd(A, full_matrices=False)), [(3, 4)]),
    "svd U Vh": (lambda A: (lambda U, S, Vh: U @ Vh)(*ember.linalg.svd(A)), [(3, 3)]),
    "svd |U|^2 tall": (lambda A: ember.linalg.svd(A, full_matrices=False)[0].abs() ** 2,
                       [(4, 3)]),
    "eigvals": (lambda A: ember.linalg.eigvals(A), [(2, 3, 3)]),
    "eig V L V^-1": (lambda A: (lambda L, V: V @ ember.diag_embed(L) @ ember.linalg.inv(V))(
        *ember.linalg.eig(A)), [(3, 3)]),
    "eigh eigenvalues": (lambda X: ember.linalg.eigh(_hpd_of(X))[0], [(2, 3, 3)]),
    "eigvalsh upper": (lambda X: ember.linalg.eigvalsh(_hpd_of(X), UPLO="U"), [(3, 3)]),
    "eigh V L V^H": (lambda X: (lambda L, V: V @ ember.diag_embed(L + 0j) @ V.mH)(
        *ember.linalg.eigh(_hpd_of(X))), [(3, 3)]),
    "cholesky": (lambda X: ember.linalg.cholesky(_hpd_of(X)), [(2, 3, 3)]),
    "cholesky upper": (lambda X: ember.linalg.cholesky(_hpd_of(X), upper=True), [(3, 3)]),
    "qr tall": (lambda A: ember.linalg.qr(A), [(2, 4, 3)]),
    "qr wide": (lambda A: ember.linalg.qr(A), [(2, 4)]),
    "qr complete square": (lambda A: ember.linalg.qr(A, mode="complete"), [(3, 3)]),
    "solve_triangular": (lambda A, B: ember.linalg.solve_triangular(
        A.triu() + _eye3(A), B, upper=True), [(2, 3, 3), (2, 3, 2)]),
    "solve_triangular right unit": (lambda A, B: ember.linalg.solve_triangular(
        A.tril(), B, upper=False, left=False, unitriangular=True), [(3, 3), (2, 3)]),
    "cholesky_solve": (lambda B, L: ember.cholesky_solve(B, L.tril() + _eye3(L)),
                       [(3, 2), (3, 3)]),
    "cholesky_solve upper": (lambda B, U: ember.cholesky_solve(B, U.triu() + _eye3(U),
                                                                upper=True), [(3, 2), (3, 3)]),
    "lstsq": (lambda A, B: ember.linalg.lstsq(A, B).solution, [(4, 3), (4, 2)]),
    "matrix_exp": (lambda A: ember.linalg.matrix_exp(A), [(2, 3, 3)]),
    "householder_product": (lambda A, t: ember.linalg.householder_product(A, t),
                            [(2, 4, 3), (2, 3)]),
    "lu_factor": (lambda A: ember.linalg.lu_factor(A).LU, [(2, 3, 3)]),
    "lu wide": (lambda A: ember.linalg.lu(A)[1:], [(2, 4)]),
    "lu tall": (lambda A: ember.linalg.lu(A)[1:], [(4, 2)]),
    "lu_solve": (lambda A, B: ember.linalg.lu_solve(*ember.linalg.lu_factor(A), B),
                 [(3, 3), (3, 2)]),
    "lu_solve right adjoint": (lambda A, B: ember.linalg.lu_solve(
        *ember.linalg.lu_factor(A), B, left=False, adjoint=True), [(3, 3), (2, 3)]),
}


@pytest.mark.parametrize("name", sorted(LINALG_CASES))
def test_linalg_gradcheck(name):
    fn, shapes = LINALG_CASES[name]
    ins = [cplx(*s, seed=20 + i) for i, s in enumerate(shapes)]
    assert gradcheck(fn, ins)
    assert gradgradcheck(fn, ins)


ROTATION = ember.tensor([[0.0, -3, 0, 0], [3, 0, 0, 0], [0, 0, 0, -5], [0, 0, 5, 0]],
                        dtype=ember.float64)  # complex eigenvalues for a real matrix
PHASE_CASES = {  # decomposition of a complex matrix -> its vectors, torch's message
    "svd U": (lambda A: ember.linalg.svd(A)[0], "svd_backward"),
    "svd Vh": (lambda A: ember.linalg.svd(A)[2], "svd_backward"),
    "eig": (lambda A: ember.linalg.eig(A)[1], "linalg_eig_backward"),
    "eig of a real matrix": (lambda A: ember.linalg.eig(A.real + ROTATION)[1],
                             "linalg_eig_backward"),
    "eigh": (lambda A: ember.linalg.eigh(A + A.mH)[1], "linalg_eigh_backward"),
}


@pytest.mark.parametrize("name", sorted(PHASE_CASES))
def test_a_loss_that_depends_on_the_vectors_phases_is_refused(name):
    """Complex singular vectors and eigenvectors are defined up to a phase per vector: a loss
    that reads the phase (a vector entry's imaginary part) has no well-defined gradient, and
    backward raises torch's error; a loss of |V|^2 does not depend on it and gradchecks."""
    vectors, who = PHASE_CASES[name]
    A = cplx(4, 4, seed=40)
    with pytest.raises(RuntimeError, match=f"{who}: The .*vectors in the complex case are "
                                           r"specified up to multiplication by e\^\{i phi\}"):
        vectors(A)[..., 1, 0].imag.backward()
    assert gradcheck(lambda A: vectors(A).abs() ** 2, (A,))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradient_of_a_hermitian_leaf_is_torchs(upper):
    """cholesky reads one triangle, so the gradient's part off the Hermitian matrices is a
    convention: torch's keeps the imaginary part of its diagonal (its cholesky_backward), and
    so does ember's. Along Hermitian directions every convention agrees (gradcheck above)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(32)
    a = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + 4 * np.eye(4)
    w = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    grads = []
    for fw in (ember, torch):
        A = fw.tensor(h).requires_grad_()
        (fw.linalg.cholesky(A, upper=upper) * fw.tensor(w)).sum().real.backward()
        grads.append(A.grad.numpy())
    assert np.abs(np.diagonal(grads[1], 0, -2, -1).imag).max() > 1e-3  # the part in question
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


def test_eigvals_of_a_real_matrix_get_a_real_gradient():
    x = real(3, 3, seed=30)
    assert gradcheck(lambda A: ember.linalg.eigvals(A), (x,))
    ember.linalg.eigvals(x).abs().sum().backward()
    assert x.grad.dtype is ember.float64


@pytest.mark.parametrize("name", ["svdvals", "eigvals", "slogdet", "cholesky", "qr", "eigh",
                                  "lstsq", "householder_product", "lu", "ormqr"])
def test_linalg_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(31)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    h = a @ a.conj().T + 3 * np.eye(3)
    b = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    losses = {  # (input, loss of (module, tensor))
        "svdvals": (a, lambda m, t: m.linalg.svdvals(t).sum()),
        "eigvals": (a, lambda m, t: m.linalg.eigvals(t).abs().sum()),
        "slogdet": (a, lambda m, t: m.linalg.slogdet(t)[1] + m.linalg.slogdet(t)[0].real),
        "cholesky": (h, lambda m, t: m.linalg.cholesky(t).abs().sum()),
        "qr": (a, lambda m, t: m.linalg.qr(t)[1].abs().sum()),
        "eigh": (h, lambda m, t: (m.linalg.eigh(t)[1].abs() ** 2 * m.linalg.eigh(t)[0]).sum()),
        "lstsq": (a, lambda m, t: m.linalg.lstsq(t, m.tensor(b)).solution.abs().sum()),
        "householder_product": (a, lambda m, t: m.linalg.householder_product(
            t, t[0, :2] * 0.5).abs().sum()),
        "lu": (a, lambda m, t: sum(x.abs().sum() for x in m.linalg.lu(t)[1:])),
        "ormqr": (a, lambda m, t: m.ormqr(t, t[0] * 0.5, t.mT * 2, left=False,
                                          transpose=True).abs().sum()),
    }
    x, loss = losses[name]
    pe, pt = ember.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    loss(ember, pe).backward()
    loss(torch, pt).backward()
    ge, gt = pe.grad.numpy(), pt.grad.resolve_conj().numpy()
    if name in ("cholesky", "eigh"):  # only the Hermitian part acts on a Hermitian input
        ge, gt = ge + ge.conj().T, gt + gt.conj().T
    np.testing.assert_allclose(ge, gt, rtol=1e-8, atol=1e-10)


FFT_CASES = {
    "fft": (lambda t: F.fft(t), "c"), "fft n ortho": (lambda t: F.fft(t, 8, norm="ortho"), "c"),
    "ifft cut": (lambda t: F.ifft(t, 3), "c"), "fft of real": (lambda t: F.fft(t, norm="forward"), "r"),
    "rfft": (lambda t: F.rfft(t), "r"), "rfft padded": (lambda t: F.rfft(t, 9), "r"),
    "rfft cut": (lambda t: F.rfft(t, 4), "r"), "irfft": (lambda t: F.irfft(t), "c"),
    "irfft odd ortho": (lambda t: F.irfft(t, 7, norm="ortho"), "c"), "hfft": (lambda t: F.hfft(t), "c"),
    "ihfft": (lambda t: F.ihfft(t), "r"), "fft2": (lambda t: F.fft2(t.reshape(2, 3)), "c"),
    "ifftn dims": (lambda t: F.ifftn(t.reshape(2, 3), dim=(0,), norm="forward"), "c"),
    "rfftn s": (lambda t: F.rfftn(t.reshape(2, 3), s=(3, 4)), "r"),
    "irfftn": (lambda t: F.irfftn(t.reshape(2, 3)), "c"), "hfftn": (lambda t: F.hfftn(t.reshape(2, 3)), "c"),
    "ihfft2": (lambda t: F.ihfft2(t.reshape(2, 3)), "r"),
}


@pytest.mark.parametrize("case", sorted(FFT_CASES))
def test_fft_gradcheck(case):
    fn, kind = FFT_CASES[case]
    t = cplx(6, seed=13) if kind == "c" else real(6, seed=13)
    assert gradcheck(fn, (t,))


@pytest.mark.parametrize("case", ["fft", "rfft", "irfft", "hfftn"])
def test_fft_gradgradcheck(case):
    fn, kind = FFT_CASES[case]
    t = cplx(6, seed=14) if kind == "c" else real(6, seed=14)
    assert gradgradcheck(lambda u: fn(u) * (u.sum() if kind == "c" else 1), (t,))


def test_values_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(15)
    a = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    b = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    losses = [
        lambda m, p, q: (p * q.conj()).exp().abs().sum(),
        lambda m, p, q: (p @ q.mT).angle().sum(),
        lambda m, p, q: m.fft.irfft(p, 7).pow(2).sum() + m.fft.fft2(q).real.sum(),
        lambda m, p, q: (m.view_as_real(p.sqrt() / q) ** 3).sum(),
        lambda m, p, q: m.fft.rfft(p.real).abs().sum() + m.vdot(p[0], q[1]).imag,
    ]
    for loss in losses:
        pe, qe = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
        pt, qt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        loss(ember, pe, qe).backward()
        loss(torch, pt, qt).backward()
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.resolve_conj().numpy(), rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(qe.grad.numpy(), qt.grad.resolve_conj().numpy(), rtol=1e-10,
                                   atol=1e-12)


def test_a_complex_parameter_trains():
    # least squares for a complex weight: w -> the solution of A w = y
    rng = np.random.default_rng(16)
    A = ember.tensor(rng.standard_normal((8, 2)) + 1j * rng.standard_normal((8, 2)))
    w_true = ember.tensor([1 - 2j, 0.5j], dtype=C128)
    y = A @ w_true
    w = ember.zeros(2, dtype=C128, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.02) if hasattr(ember, "optim") else None
    for _ in range(300):
        loss = ((A @ w - y).abs() ** 2).sum()
        if opt is not None:
            opt.zero_grad()
            loss.backward()
            opt.step()
        else:
            (g,) = ember.autograd.grad(loss, [w])
            with ember.no_grad():
                w -= 0.02 * g
    np.testing.assert_allclose(w.detach().numpy(), w_true.numpy(), atol=1e-6)
