"""gradcheck and gradgradcheck (float64) of the core's tensor-API ops (_formulas_tensor.py,
_formulas_linalg.py): shape ops, sorting and order statistics, the LAPACK primitives of ember.linalg; gradients against
PyTorch's; and a check that every op the core routes through the autograd hook has a formula."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.autograd._engine import _FORMULAS
from ember.autograd._formulas_tensor import HOOKED_OPS, NN_KERNEL_OPS, NOT_DIFFERENTIABLE_OPS

F64 = ember.float64
pytestmark = pytest.mark.filterwarnings("ignore:The reduce argument:UserWarning")


def T(*shape, lo=-1.0, hi=1.0, seed=0, noncontig=False):
    """Random float64 leaf; noncontig: the same values through a transposed layout."""
    rng = np.random.default_rng(seed * 31 + len(shape) * 7 + sum(shape))
    a = rng.uniform(lo, hi, size=shape)
    if noncontig and len(shape) >= 2:
        t = ember.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=F64).transpose(-1, -2)
        return t.detach().requires_grad_()
    return ember.tensor(a, dtype=F64, requires_grad=True)


def _eye(n):
    return ember.eye(n, dtype=F64)


def _spd(x):  # a symmetric positive definite matrix from any square x
    return x @ x.mT + _eye(x.shape[-1])


def _svd_invariants(A, full=False):
    # gauge-invariant functions of U, S, Vh: the singular vectors are defined up to sign
    U, S, Vh = ember.linalg.svd(A, full_matrices=full)
    k = S.shape[-1]
    U, Vh = U[..., :k], Vh[..., :k, :]
    return S, U @ Vh, U * U, Vh * Vh


def _eigh_invariants(A):
    L, V = ember.linalg.eigh(A + A.mT)
    return L, V * V, (V * L.unsqueeze(-2)) @ V.mT


def _diagonal_view_inplace(x, y):
    c = x * 1.0
    d = c.diagonal()  # a view: the in-place op rebases c's history
    d.mul_(y)
    return c * c


def _tril_view_inplace(x):
    c = x * 2.0
    c[1:].tril_()
    return c.exp()


def _sing(x):  # a singular 3x3 matrix (third row = first + second)
    return ember.cat([x, (x[0] + x[1]).unsqueeze(0)], 0)


ridx = ember.tensor([2, 0, 1], dtype=ember.int64)
_M = ember.tensor([[True, False, True], [False, True, True]])  # broadcasts over (3,) too


def _i(*v):
    return ember.tensor(v[0] if len(v) == 1 else list(v), dtype=ember.int64)


def _setitem(x, index, v):
    z = x * 1.0
    z[index] = v
    return z * z

# name (as the core hands it to the hook) -> list of (function, inputs)
CASES = {
    "cat": [(lambda a, b: ember.cat([a, b], 1), (T(2, 3), T(2, 2))),
            (lambda a, b, c: ember.cat((a, b, c), -1), (T(2, 3), T(2, 1, noncontig=True), T(2, 2))),
            (lambda a, b: ember.cat([a, b * 0 + 1], 0), (T(1, 3), T(2, 3))),
            (lambda a: ember.cat([a]), (T(3),)),
            (lambda a, b: ember.hstack([a, b]), (T(2, 3), T(2, 1)))],
    # one node for all inputs; an input that needs no gradient gets none
    "stack": [(lambda a, b: ember.stack([a, b], 1), (T(2, 3), T(2, 3))),
              (lambda a, b: ember.stack([a, b * 2, a], -1), (T(3, 2, noncontig=True), T(3, 2))),
              (lambda a: ember.stack([a, ember.ones(2, 3, dtype=ember.float64)]), (T(2, 3),))],
    "flip": [(lambda x: x.flip((0, 1)), (T(2, 3),)), (lambda x: x.flip(-1), (T(3, 2, noncontig=True),))],
    "roll": [(lambda x: x.roll(1, 1), (T(2, 3),)), (lambda x: x.roll(4), (T(2, 3, noncontig=True),)),
             (lambda x: x.roll((1, -1), (0, 1)), (T(3, 3),))],
    "tril": [(lambda x: x.tril(), (T(3, 3),)), (lambda x: x.tril(-1), (T(2, 3, 4, noncontig=True),))],
    "triu": [(lambda x: x.triu(1), (T(3, 4),))],
    "tril_": [(lambda x: (x * 1).tril_(1), (T(3, 3),)), (_tril_view_inplace, (T(3, 3),))],
    "triu_": [(lambda x: (x * 1).triu_(), (T(3, 2),))],
    "constant_pad_nd": [(lambda x: ember.constant_pad_nd(x, (1, 2)), (T(2, 3),)),
                        (lambda x: ember.constant_pad_nd(x, (1, -1, -1, 2), 0.5), (T(3, 3),)),
                        (lambda x: ember.constant_pad_nd(x, (0, 1, 0, 0, 1, 1)), (T(2, 2, 2),))],
    "repeat_interleave": [(lambda x: x.repeat_interleave(2, dim=1), (T(2, 3),)),
                          (lambda x: x.repeat_interleave(3), (T(2, 2, noncontig=True),)),
                          (lambda x: x.repeat_interleave(ridx, dim=0), (T(3, 2),))],
    "diagonal": [(lambda x: x.diagonal(), (T(3, 3),)), (lambda x: x.diagonal(1, 0, 1), (T(3, 4),)),
                 (lambda x: x.diagonal(-1, -1, 0), (T(2, 3, 4, noncontig=True),)),
                 (_diagonal_view_inplace, (T(3, 3), T(3)))],
    "diag_embed": [(lambda x: ember.diag_embed(x), (T(2, 3),)),
                   (lambda x: ember.diag_embed(x, -1, 0, 2), (T(2, 3),))],
    "unfold": [(lambda x: x.unfold(1, 3, 1), (T(2, 5),)), (lambda x: x.unfold(0, 2, 3), (T(7, 2),)),
               (lambda x: x.unfold(-1, 2, 2), (T(2, 3, 4, noncontig=True),))],
    # sorting: random uniform inputs have no ties
    "sort": [(lambda x: x.sort(1).values, (T(2, 4),)),
             (lambda x: x.sort(0, descending=True)[0], (T(3, 2, noncontig=True),)),
             (lambda x: x.sort(stable=True).values, (T(5),))],
    "topk": [(lambda x: x.topk(2, 1).values, (T(2, 4),)),
             (lambda x: x.topk(2, 0, largest=False, sorted=False).values, (T(4, 3),))],
    "kthvalue": [(lambda x: x.kthvalue(2, 1).values, (T(2, 4),)),
                 (lambda x: x.kthvalue(1, 0, keepdim=True).values, (T(3, 2, noncontig=True),))],
    "median": [(lambda x: x.median(), (T(2, 3),)), (lambda x: x.median(), (T(4),)),
               (lambda x: x.median(1).values, (T(2, 3),)),
               (lambda x: x.median(0, keepdim=True).values, (T(4, 2, noncontig=True),))],
    "nanmedian": [(lambda x: x.nanmedian(), (T(2, 3),)), (lambda x: x.nanmedian(-1)[0], (T(2, 3),))],
    "mode": [(lambda x: x.mode(1).values, (T(2, 3),))],
    "cummax": [(lambda x: x.cummax(1).values, (T(2, 4),)), (lambda x: x.cummax(0)[0], (T(5),))],
    "cummin": [(lambda x: x.cummin(0).values, (T(4, 2, noncontig=True),))],
    "quantile": [(lambda x: ember.quantile(x, 0.3), (T(7),)),
                 (lambda x: ember.quantile(x, 0.3, dim=1), (T(2, 5),)),
                 (lambda x: ember.quantile(x, ember.tensor([0.25, 0.8], dtype=F64), dim=0,
                                           keepdim=True), (T(5, 2, noncontig=True),))]
    + [(lambda x, i=i: ember.quantile(x, 0.35, dim=-1, interpolation=i), (T(2, 6),))
       for i in ("lower", "higher", "midpoint", "nearest")],
    "nanquantile": [(lambda x: ember.nanquantile(x, 0.4, dim=0), (T(5, 2),)),
                    (lambda x: ember.nanquantile(x, ember.tensor([0.1, 0.9], dtype=F64)), (T(2, 3),))],
    # indexing (repeated indices included: their gradients add up)
    "index_select": [(lambda x: x.index_select(0, _i(1, 0, 1)), (T(2, 3),)),
                     (lambda x: x.index_select(-1, _i(2, 2)), (T(2, 3, noncontig=True),))],
    "gather": [(lambda x: x.gather(1, _i([0, 0], [2, 1])), (T(2, 3),)),
               (lambda x: x.gather(0, _i([1, 1, 0])), (T(3),))],
    "take": [(lambda x: x.take(_i([0, -1], [5, 0])), (T(2, 3),))],
    "take_along_dim": [(lambda x: ember.take_along_dim(x, _i([[0, 2, 2]]), 1), (T(2, 3),)),
                       (lambda x: ember.take_along_dim(x, _i(4, 4, 1)), (T(2, 3),)),
                       (lambda x: ember.take_along_dim(x, _i([[0], [1]]), 1), (T(1, 3),)),
                       (lambda x: ember.take_along_dim(x, ember.tensor(-1), 0), (T(),))],
    "scatter": [(lambda x, s: x.scatter(1, _i([0, 1], [2, 1]), s), (T(2, 3), T(2, 2))),
                (lambda x: x.scatter(0, _i([[1, 0, 1]]), 0.5), (T(2, 3),)),
                (lambda x, s: x.scatter(1, _i([0, 0], [1, 1]), s, reduce="add"), (T(2, 3), T(2, 2)))],
    "scatter_": [(lambda x, s: (x * 1).scatter_(1, _i([2], [0]), s), (T(2, 3), T(2, 2)))],
    "scatter_add": [(lambda x, s: x.scatter_add(1, _i([0, 0], [2, 1]), s), (T(2, 3), T(2, 2)))],
    "scatter_add_": [(lambda x, s: (x * 1).scatter_add_(0, _i([1, 1, 0]), s), (T(3), T(3)))],
    "scatter_reduce": [(lambda x, s, r=r, i=i: x.scatter_reduce(1, _i([0, 0, 2], [1, 2, 1]), s, r,
                                                                 include_self=i),
                        (T(2, 3), T(2, 3, seed=4)))
                       for r in ("sum", "mean", "amax", "amin", "prod") for i in (True, False)],
    "scatter_reduce_": [(lambda x, s: (x * 1).scatter_reduce_(0, _i(0, 0, 1), s, "mean"),
                         (T(3), T(3)))],
    "index_add": [(lambda x, s: x.index_add(0, _i(1, 0, 1), s), (T(2, 3), T(3, 3))),
                  (lambda x, s: x.index_add(1, _i(2, 2), s, alpha=-0.5), (T(2, 3), T(2, 2)))],
    "index_add_": [(lambda x, s: (x * 1).index_add_(0, _i(1, 1), s), (T(2, 3), T(2, 3)))],
    "index_copy": [(lambda x, s: x.index_copy(1, _i(2, 0), s), (T(2, 3), T(2, 2)))],
    "index_copy_": [(lambda x, s: (x * 1).index_copy_(0, _i([1]), s), (T(2, 3), T(1, 3)))],
    "index_fill": [(lambda x: x.index_fill(1, _i(0, 2), 1.5), (T(2, 3),)),
                   (lambda x, v: x.index_fill(0, _i([1]), v), (T(2, 3), T()))],
    "index_fill_": [(lambda x: (x * 1).index_fill_(1, _i([1]), -1.0), (T(2, 3),))],
    "index_put": [(lambda x, v: x.index_put((_i(0, 1, 0),), v, accumulate=True), (T(2, 3), T(3, 3))),
                  (lambda x, v: x.index_put((_i(1, 0), _i(2, 0)), v), (T(2, 3), T(2)))],
    "index_put_": [(lambda x, v: (x * 1).index_put_((_i([1]),), v), (T(2, 3), T(3)))],
    "masked_fill": [(lambda x: x.masked_fill(_M, 2.0), (T(2, 3),)),
                    (lambda x, v: x.masked_fill(_M, v), (T(3), T()))],
    "masked_fill_": [(lambda x: (x * 1).masked_fill_(_M, 0.0), (T(2, 3),))],
    "masked_select": [(lambda x: x.masked_select(_M), (T(2, 3),)),
                      (lambda x: x.masked_select(_M), (T(3),))],
    "masked_scatter": [(lambda x, s: x.masked_scatter(_M, s), (T(2, 3), T(5)))],
    "masked_scatter_": [(lambda x, s: (x * 1).masked_scatter_(_M, s), (T(2, 3), T(2, 2)))],
    "_getitem": [(lambda x: x[_i(1, 1, 0)], (T(2, 3),)), (lambda x: x[:, [0, 2, 0]], (T(2, 3),)),
                 (lambda x: x[_M], (T(2, 3),)), (lambda x: x[_i(0, 1), 1:, _i(1, 1)], (T(2, 3, 2),))],
    "_setitem": [(lambda x, v: _setitem(x, (_i(1, 0),), v), (T(2, 3), T(3))),
                 (lambda x, v: _setitem(x, _M, v), (T(2, 3), T())),
                 (lambda x, v: _setitem(x, (slice(None), [2, 0]), v), (T(2, 3), T(2, 2)))],
    # linear algebra
    "_linalg_inv_ex": [(lambda a: ember.linalg.inv(a + 3 * _eye(3)), (T(3, 3),)),
                       (lambda a: ember.linalg.inv_ex(a + 3 * _eye(2)).inverse, (T(2, 2, 2, noncontig=True),))],
    "_linalg_det": [(ember.linalg.det, (T(3, 3),)), (ember.linalg.det, (T(2, 2, 2),)),
                    (ember.linalg.det, (T(1, 1),))],
    "_linalg_slogdet": [(lambda a: ember.linalg.slogdet(a).logabsdet, (T(3, 3),)),
                        (lambda a: ember.linalg.slogdet(a)[1], (T(2, 2, 2, noncontig=True),))],
    "_linalg_solve_ex": [(ember.linalg.solve, (T(3, 3), T(3, 2))),
                         (ember.linalg.solve, (T(3, 3), T(2, 3, 2))),  # batch broadcast
                         (ember.linalg.solve, (T(3, 3, noncontig=True), T(3))),
                         (lambda a, b: ember.linalg.solve(a, b, left=False), (T(2, 2), T(3, 2)))],
    "_linalg_solve_triangular": [
        (lambda a, b: ember.linalg.solve_triangular(a + 3 * _eye(3), b, upper=True), (T(3, 3), T(3, 2))),
        (lambda a, b: ember.linalg.solve_triangular(a + 3 * _eye(3), b, upper=False,
                                                    unitriangular=True), (T(3, 3), T(3, 2))),
        (lambda a, b: ember.linalg.solve_triangular(a + 3 * _eye(2), b, upper=False, left=False),
         (T(2, 2), T(3, 2)))],
    "_linalg_cholesky_ex": [(lambda x: ember.linalg.cholesky(_spd(x)), (T(3, 3),)),
                            (lambda x: ember.linalg.cholesky(_spd(x), upper=True), (T(2, 2, 2),))],
    "_cholesky_solve": [(lambda b, x: ember.cholesky_solve(b, ember.linalg.cholesky(_spd(x))),
                         (T(3, 2), T(3, 3))),
                        (lambda b, m: ember.cholesky_solve(b, m.tril() + 2 * _eye(3)), (T(3, 2), T(3, 3))),
                        (lambda b, m: ember.cholesky_solve(b, m.triu() + 2 * _eye(3), upper=True),
                         (T(3, 1), T(3, 3)))],
    "_linalg_lu_factor_ex": [(lambda a: ember.linalg.lu_factor(a).LU, (T(3, 3),)),
                             (lambda a: ember.linalg.lu_factor(a)[0], (T(2, 3, 3),)),
                             (lambda a: ember.linalg.lu_factor(a).LU, (T(2, 3),)),
                             (lambda a: ember.linalg.lu_factor(a).LU, (T(4, 2),))],
    "_linalg_lu": [(lambda a: ember.linalg.lu(a)[1:], (T(3, 3),)),
                   (lambda a: ember.linalg.lu(a)[1:], (T(2, 4),)),
                   (lambda a: ember.linalg.lu(a)[1:], (T(2, 4, 2, noncontig=True),))],
    "_linalg_lu_solve": [(lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b),
                          (T(3, 3), T(3, 2))),
                         (lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b,
                                                             adjoint=True), (T(3, 3), T(3, 2))),
                         (lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b,
                                                             left=False), (T(2, 2), T(3, 2)))],
    "_linalg_qr": [(ember.linalg.qr, (T(4, 3),)), (ember.linalg.qr, (T(3, 3, noncontig=True),)),
                   (lambda a: ember.linalg.qr(a, mode="complete"), (T(2, 2, 2),)),
                   (ember.linalg.qr, (T(2, 4),)), (ember.linalg.qr, (T(2, 3, 5, noncontig=True),))],
    "_linalg_svd": [(_svd_invariants, (T(4, 3),)), (_svd_invariants, (T(3, 4),)),
                    (_svd_invariants, (T(2, 3, 3, noncontig=True),)),
                    (lambda a: _svd_invariants(a, True), (T(4, 2),)),
                    (ember.linalg.svdvals, (T(3, 4),))],
    "_linalg_eigh": [(_eigh_invariants, (T(3, 3),)), (_eigh_invariants, (T(2, 2, 2),)),
                     (lambda a: ember.linalg.eigvalsh(a + a.mT), (T(3, 3),))],
    "_linalg_lstsq": [(lambda a, b: ember.linalg.lstsq(a, b).solution, (T(4, 3), T(4, 2))),
                      (lambda a, b: ember.linalg.lstsq(a, b, driver="gelsd")[0], (T(3, 3), T(3)))],
    "_householder_product": [(ember.linalg.householder_product, (T(4, 3), T(2))),
                             (ember.linalg.householder_product, (T(2, 3, 3, noncontig=True),
                                                                 T(2, 3))),
                             (lambda a: ember.orgqr(a, a[:2, 0]), (T(5, 2),))],
    # Q C, Q^T C, C Q, C Q^T of the full Q of A's reflectors (fewer reflectors than rows, a
    # batch, A square)
    "_ormqr": [(ember.ormqr, (T(5, 3), T(3), T(5, 2))),
               (lambda a, t, c: ember.ormqr(a, t, c, transpose=True), (T(2, 4, 2), T(2, 2),
                                                                       T(2, 4, 3))),
               (lambda a, t, c: ember.ormqr(a, t, c, left=False), (T(3, 3), T(3), T(2, 3))),
               (lambda a, t, c: ember.ormqr(a, t, c, left=False, transpose=True),
                (T(4, 2), T(2), T(3, 4)))],
}

# det at singular matrices: first derivatives only (as torch's tests)
GRADCHECK_ONLY = {
    "det-singular": (lambda x: ember.linalg.det(_sing(x)), (T(2, 3),)),
    "det-rank1": (lambda u, v: ember.linalg.det(u.unsqueeze(-1) * v.unsqueeze(-2)), (T(3), T(3))),
}


def _ids():
    for name, cases in CASES.items():
        for i, (fn, inputs) in enumerate(cases):
            yield pytest.param(fn, inputs, id=f"{name}-{i}")


@pytest.mark.parametrize("fn,inputs", list(_ids()))
def test_gradcheck(fn, inputs):
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("fn,inputs", list(_ids()))
def test_gradgradcheck(fn, inputs):
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("name", sorted(GRADCHECK_ONLY))
def test_gradcheck_singular(name):
    fn, inputs = GRADCHECK_ONLY[name]
    assert gradcheck(fn, inputs)


def test_det_gradient_of_a_singular_matrix_is_its_cofactor_matrix():
    a = ember.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=F64, requires_grad=True)
    ember.linalg.det(a).backward()
    np.testing.assert_allclose(a.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)


def test_median_splits_the_gradient_between_ties_like_torch():
    x = ember.tensor([1.0, 2.0, 2.0, 3.0, 2.0], requires_grad=True)
    x.median().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 1 / 3, 1 / 3, 0, 1 / 3], rtol=1e-6)
    x = ember.tensor([[1.0, 2.0, 2.0, 3.0]], requires_grad=True)
    v, i = x.median(1)
    v.sum().backward()
    expect = np.zeros(4)
    expect[int(i[0])] = 1.0
    np.testing.assert_allclose(x.grad.numpy()[0], expect)


def test_nanmedian_and_quantile_gradients_skip_nans():
    x = ember.tensor([1.0, float("nan"), 2.0, 3.0], dtype=F64, requires_grad=True)
    x.nanmedian().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 0, 1, 0])
    x = ember.tensor([1.0, float("nan"), 2.0, 4.0], dtype=F64, requires_grad=True)
    ember.nanquantile(x, 0.25).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0, 0.5, 0])


def test_diagonal_and_unfold_are_views_with_history():
    x = T(3, 3)
    c = x * 1.0
    d = c.diagonal()
    assert d._base is not None and d.grad_fn.name() == "DiagonalBackward0"
    u = c.unfold(0, 2, 1)
    assert u.grad_fn.name() == "UnfoldBackward0"


def test_sort_indices_are_not_differentiable():
    v, i = T(3).sort()
    assert v.requires_grad and not i.requires_grad


def test_linalg_info_outputs_are_not_differentiable():
    r = ember.linalg.inv_ex(T(2, 2) + 2 * _eye(2))
    assert r.inverse.requires_grad and not r.info.requires_grad


def test_qr_complete_of_tall_matrices_is_not_differentiable():
    q, r = ember.linalg.qr(T(3, 2), mode="complete")
    with pytest.raises(RuntimeError, match="not differentiable"):
        (q.sum() + r.sum()).backward()


# ---------------------------------------------------------------------------------------------
# every op routed through the hook has a formula

_CSRC = os.path.join(os.path.dirname(__file__), "..", "..", "tensor-core", "csrc", "python")
# the names the table's ops are hooked under (torch.special's: _special_<f>)
_TABLE = {("_" if r["name"].startswith("special_") else "") + r["name"]
          for r in ember._C._op_table()}
_ELEMENTWISE = _TABLE | {n + "_" for n in _TABLE}
# elementwise ops with float results (the others, comparisons and bitwise ops, record nothing)
_FLOAT_KINDS = {"FLOAT", "FLOAT_ONLY", "SAME", "ARITH", "TRUEDIV", "FLOAT2", "FLOAT_ONLY2"}
_FLOAT_TABLE = {("_" if r["name"].startswith("special_") else "") + r["name"]
                for r in ember._C._op_table() if r["kind"] in _FLOAT_KINDS}


def _csrc_hook_names():
    """The op names the core's bindings hand to the hook: literal call_autograd("name"/
    hook("name") calls, and names picked by `name = cond ? "a" : "b"`."""
    names = set()
    for f in sorted(os.listdir(_CSRC)):
        if not f.endswith(".cpp"):
            continue
        src = open(os.path.join(_CSRC, f)).read()
        if "call_autograd" not in src:
            continue
        names |= set(re.findall(r'(?:call_autograd|\bhook)\("([A-Za-z0-9_]+)"', src))
        names |= {n for pair in re.findall(r'name = \w+ \? "(\w+)" : "(\w+)"', src) for n in pair}
    return names


def test_every_hooked_op_has_a_formula():
    missing = sorted(n for n in HOOKED_OPS | _FLOAT_TABLE if n not in _FORMULAS)
    assert not missing, f"ops routed through the autograd hook without a formula: {missing}"


@pytest.mark.skipif(not os.path.isdir(_CSRC), reason="no source tree")
def test_the_hooked_op_list_matches_the_core_sources():
    unknown = sorted(_csrc_hook_names() - HOOKED_OPS - NN_KERNEL_OPS - NOT_DIFFERENTIABLE_OPS
                     - _ELEMENTWISE)
    assert not unknown, (f"the core routes {unknown} through the autograd hook: add formulas and "
                         "the names to HOOKED_OPS in _formulas_tensor.py")


# The norms' backward kernels are only called from their forward's vjp; under create_graph that
# vjp is composed of core ops instead, so the kernels themselves need no formula.
_NN_KERNELS_WITHOUT_FORMULA = {"native_batch_norm_backward", "native_layer_norm_backward"}

# Registered ops that the autograd hook records under another op's name (their rows say so)
_RECORDED_AS_ANOTHER_OP = {
    **{f"conv{k}d": "convolution" for k in (1, 2, 3)},
    **{f"conv_transpose{k}d": "convolution" for k in (1, 2, 3)},
    **{f"max_pool{k}d": f"max_pool{k}d_with_indices" for k in (1, 2, 3)},
    **{f"_adaptive_avg_pool{k}d_backward": f"adaptive_avg_pool{k}d_backward" for k in (1, 2, 3)},
    "nll_loss_nd": "nll_loss", "nll_loss2d": "nll_loss",
    "embedding_backward": "embedding_dense_backward",
    # div(rounding_mode="trunc") is the private _C._div_trunc, recorded as the table's div_trunc
    "_div_trunc": "div_trunc", "_div_trunc_": "div_trunc",
    # views and aliases, recorded under the names the formulas read
    "view": "_view", "view_as": "_view", "expand": "_expand", "expand_as": "_expand",
    "reshape_as": "reshape", "contiguous": "clone", "concat": "cat", "concatenate": "cat",
    "_unfold": "unfold", "__matmul__": "matmul", "__rmatmul__": "matmul",
    # the in-place samplers' function forms, which the hook reruns, recorded as the methods
    **{f"_{n}_": f"{n}_" for n in ("bernoulli", "exponential", "normal", "random", "uniform")},
}


def test_every_hooked_registry_row_has_a_formula():
    rows = {r["name"]: r for r in ember._C._ops()}
    missing = sorted(n for n, r in rows.items() if r["hooked"] and n not in _FORMULAS
                     and n not in _NN_KERNELS_WITHOUT_FORMULA
                     and _RECORDED_AS_ANOTHER_OP.get(n) not in _FORMULAS)
    assert not missing, f"registered ops routed through the autograd hook without a formula: {missing}"
    assert all(rows[n]["hooked"] for n in _RECORDED_AS_ANOTHER_OP)


def test_nn_kernel_ops_have_formulas():
    # the formulas live in _formulas_nn.py and are checked by test_gradients_nn_kernels.py
    missing = sorted(n for n in NN_KERNEL_OPS - _NN_KERNELS_WITHOUT_FORMULA if n not in _FORMULAS)
    assert not missing, f"nn kernels routed through the hook without a formula: {missing}"


def test_every_tensor_formula_has_a_case():
    from ember.autograd import _formulas_linalg, _formulas_tensor

    modules = {_formulas_tensor.__name__, _formulas_linalg.__name__}
    mine = {n for n, e in _FORMULAS.items() if e.vjp.__module__ in modules}
    inplace_covered = {n for n in mine if n.endswith("_") and n[:-1] in CASES}
    assert not sorted(mine - set(CASES) - inplace_covered), \
        "formulas of _formulas_tensor.py or _formulas_linalg.py without a case"


# ---------------------------------------------------------------------------------------------
# gradients against PyTorch's


def _sym(m, a):
    return a + a.mT


PARITY = [  # (name, fn(m, *inputs), input shapes)
    ("cat", lambda m, a, b: m.cat([a, b * 2], 1), [(2, 3), (2, 2)]),
    ("flip", lambda m, x: x.flip((0,)) * x, [(3, 2)]),
    ("roll", lambda m, x: x.roll(2) * x, [(2, 3)]),
    ("tril", lambda m, x: x.tril(-1) + x.triu(1) * 2, [(3, 4)]),
    ("pad", lambda m, x: m.constant_pad_nd(x, (1, -1, 2, 0), 0.5), [(2, 3)]),
    ("repeat_interleave", lambda m, x: x.repeat_interleave(m.tensor([1, 0, 2]), dim=1), [(2, 3)]),
    ("diagonal", lambda m, x: x.diagonal(1, -2, -1), [(2, 3, 4)]),
    ("diag_embed", lambda m, x: m.diag_embed(x, 1), [(2, 3)]),
    ("unfold", lambda m, x: x.unfold(1, 3, 2), [(2, 7)]),
    ("sort", lambda m, x: x.sort(1, descending=True)[0] * m.arange(4.0, dtype=x.dtype), [(3, 4)]),
    ("topk", lambda m, x: x.topk(2, 0)[0], [(4, 3)]),
    ("kthvalue", lambda m, x: x.kthvalue(2, 1)[0], [(3, 4)]),
    ("median", lambda m, x: x.median() + x.median(0)[0].sum(), [(3, 4)]),
    ("nanmedian", lambda m, x: x.nanmedian(1, keepdim=True)[0] * x, [(3, 4)]),
    ("mode", lambda m, x: x.mode(1)[0], [(3, 4)]),
    ("cummax", lambda m, x: x.cummax(1)[0] + x.cummin(0)[0], [(3, 4)]),
    ("quantile", lambda m, x: m.quantile(x, m.tensor([0.2, 0.7], dtype=x.dtype), dim=1), [(3, 6)]),
    ("quantile-nearest", lambda m, x: m.quantile(x, 0.35, interpolation="midpoint"), [(7,)]),
    ("nanquantile", lambda m, x: m.nanquantile(x, 0.6, dim=0), [(5, 2)]),
    ("getitem", lambda m, x: x[m.tensor([1, 1, 0])] * 2 + x[:, [0, 0]].sum(), [(2, 3)]),
    ("index_select", lambda m, x: x.index_select(1, m.tensor([2, 2, 0])), [(2, 3)]),
    ("gather", lambda m, x: x.gather(0, m.tensor([[1, 0, 1], [1, 1, 0]])), [(2, 3)]),
    ("take_along_dim", lambda m, x: m.take_along_dim(x, m.tensor([[0], [2]]), 1), [(2, 3)]),
    ("scatter", lambda m, x, s: x.scatter(1, m.tensor([[0, 2]]), s), [(2, 3), (1, 2)]),
    ("scatter_add", lambda m, x, s: x.scatter_add(1, m.tensor([[0, 0]]), s), [(2, 3), (1, 2)]),
    ("scatter_reduce", lambda m, x, s: x.scatter_reduce(
        1, m.tensor([[0, 0, 2]]), s, "amax", include_self=False), [(2, 3), (1, 3)]),
    ("scatter_reduce-prod", lambda m, x, s: x.scatter_reduce(
        1, m.tensor([[0, 0, 2]]), s, "prod"), [(2, 3), (1, 3)]),
    ("index_add", lambda m, x, s: x.index_add(0, m.tensor([1, 1]), s, alpha=2), [(2, 3), (2, 3)]),
    ("index_copy", lambda m, x, s: x.index_copy(1, m.tensor([2, 0]), s), [(2, 3), (2, 2)]),
    ("index_put", lambda m, x, v: x.index_put((m.tensor([0, 0]),), v, accumulate=True),
     [(2, 3), (2, 3)]),
    ("masked_select", lambda m, x: x.masked_select(x > 0), [(2, 3)]),
    ("masked_scatter", lambda m, x, s: x.masked_scatter(x > 0, s), [(2, 3), (7,)]),
    ("take", lambda m, x: x.take(m.tensor([[0, 5], [5, -1]])), [(2, 3)]),
    ("inv", lambda m, a: m.linalg.inv(a + 3 * m.eye(3, dtype=a.dtype)), [(2, 3, 3)]),
    ("det", lambda m, a: m.linalg.det(a), [(2, 3, 3)]),
    ("slogdet", lambda m, a: m.linalg.slogdet(a)[1], [(3, 3)]),
    ("solve", lambda m, a, b: m.linalg.solve(a, b), [(3, 3), (2, 3, 2)]),
    ("solve_triangular", lambda m, a, b: m.linalg.solve_triangular(
        a + 3 * m.eye(3, dtype=a.dtype), b, upper=True), [(3, 3), (3, 2)]),
    ("cholesky", lambda m, a: m.linalg.cholesky(a @ a.mT + m.eye(3, dtype=a.dtype)), [(3, 3)]),
    ("cholesky_solve", lambda m, b, a: m.cholesky_solve(
        b, m.linalg.cholesky(a @ a.mT + m.eye(3, dtype=a.dtype))), [(3, 2), (3, 3)]),
    ("lu_factor", lambda m, a: m.linalg.lu_factor(a)[0], [(3, 3)]),
    ("lu", lambda m, a: m.linalg.lu(a)[1] + m.linalg.lu(a)[2], [(3, 3)]),
    ("lu-wide", lambda m, a: m.linalg.lu(a)[1:], [(2, 4)]),
    ("lu-tall", lambda m, a: m.linalg.lu(a)[1:], [(4, 2)]),
    ("lu_factor-tall", lambda m, a: m.linalg.lu_factor(a)[0], [(4, 3)]),
    ("lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), [(3, 3), (3, 2)]),
    ("qr", lambda m, a: (lambda q, r: (q * q, r * r))(*m.linalg.qr(a)), [(4, 3)]),
    ("qr-wide", lambda m, a: m.linalg.qr(a), [(2, 4)]),
    ("svd", lambda m, a: (lambda u, s, v: (s, u @ v))(*m.linalg.svd(a, full_matrices=False)),
     [(4, 3)]),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), [(3, 5)]),
    ("eigh", lambda m, a: (lambda w, v: (w, v * v))(*m.linalg.eigh(_sym(m, a))), [(3, 3)]),
    ("lstsq", lambda m, a, b: m.linalg.lstsq(a, b)[0], [(4, 3), (4, 2)]),
]


@pytest.mark.parametrize("name,fn,shapes", PARITY, ids=[p[0] for p in PARITY])
def test_gradients_match_torch(name, fn, shapes):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(len(name))
    arrays = [rng.uniform(-1, 1, size=s) for s in shapes]
    xe = [ember.tensor(a, dtype=F64, requires_grad=True) for a in arrays]
    xt = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    oe, ot = fn(ember, *xe), fn(torch, *xt)
    oe = oe if isinstance(oe, tuple) else (oe,)
    ot = ot if isinstance(ot, tuple) else (ot,)
    ws = [rng.uniform(-1, 1, size=tuple(o.shape)) for o in ot]
    sum(((o * ember.tensor(w, dtype=F64)).sum() for o, w in zip(oe, ws)),
        ember.zeros((), dtype=F64)).backward()
    sum(((o * torch.tensor(w, dtype=torch.float64)).sum() for o, w in zip(ot, ws)),
        torch.zeros((), dtype=torch.float64)).backward()
    for a, b in zip(xe, xt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-9)


# random shapes (hypothesis): gradients of shape and sorting ops against PyTorch's
try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

RANDOM_SHAPE_OPS = [
    ("flip", lambda m, x, d: x.flip((d,))),
    ("roll", lambda m, x, d: x.roll(d + 1, d)),
    ("cat", lambda m, x, d: m.cat([x, x * 2, x[..., :1]], -1)),
    ("pad", lambda m, x, d: m.constant_pad_nd(x, (1, -min(1, x.shape[-1]), d, 0))),
    ("repeat_interleave", lambda m, x, d: x.repeat_interleave(d + 1, dim=d)),
    ("diagonal", lambda m, x, d: x.diagonal(d - 1, 0, -1)),
    ("unfold", lambda m, x, d: x.unfold(-1, min(2, x.shape[-1]), d + 1)),
    ("sort", lambda m, x, d: x.sort(d, descending=d == 1)[0]),
    ("cummax", lambda m, x, d: x.cummax(d)[0]),
    ("median", lambda m, x, d: x.median(d)[0]),
]

if given is not None:
    @settings(max_examples=25, deadline=None)
    @given(shape=st.lists(st.integers(1, 4), min_size=2, max_size=3),
           op=st.sampled_from(RANDOM_SHAPE_OPS), d=st.integers(0, 1), seed=st.integers(0, 99))
    def test_random_shapes_match_torch(shape, op, d, seed):
        torch = pytest.importorskip("torch")
        rng = np.random.default_rng(seed)
        a = rng.permutation(int(np.prod(shape))).reshape(shape) / 7.0  # distinct values
        xe = ember.tensor(a, dtype=F64, requires_grad=True)
        xt = torch.tensor(a, dtype=torch.float64, requires_grad=True)
        oe, ot = op[1](ember, xe, d), op[1](torch, xt, d)
        w = rng.uniform(-1, 1, size=tuple(ot.shape))
        (oe * ember.tensor(w, dtype=F64)).sum().backward()
        (ot * torch.tensor(w, dtype=torch.float64)).sum().backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-12)
