"""gradcheck and gradgradcheck (float64) of every non-elementwise op in the gradient table:
reductions, scans, softmax, matrix products, views, indexing, copies. Every table entry must
appear in CASES (or in the elementwise op-table tests): `test_every_formula_is_tested`."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.autograd._engine import _FORMULAS


def T(*shape, lo=-1.0, hi=1.0, seed=0, noncontig=False):
    rng = np.random.default_rng(seed + len(shape) * 7 + sum(shape))
    if noncontig and len(shape) >= 2:
        a = rng.uniform(lo, hi, size=shape[::-1])
        return ember.tensor(a, dtype=ember.float64).t().requires_grad_() if len(shape) == 2 else \
            ember.tensor(a, dtype=ember.float64).permute(*range(len(shape) - 1, -1, -1)).detach()\
            .requires_grad_()
    a = rng.uniform(lo, hi, size=shape)
    return ember.tensor(a, dtype=ember.float64, requires_grad=True)


def P(*shape, seed=0):  # positive, away from zero
    return T(*shape, lo=0.5, hi=2.0, seed=seed)


def Z(rows):  # given values, exact zeros among them (products' gradients at zeros)
    return ember.tensor(rows, dtype=ember.float64, requires_grad=True)


_ZEROS = [[1.0, 1.5, 0.0, 3.0], [0.0, 2.0, 0.0, 4.0], [2.0, -3.0, 1.0, 0.0], [0.5, 0.0, 0.0, 0.0]]


# name -> list of (function, inputs)
CASES = {
    "sum": [(lambda x: x.sum(), (T(2, 3),)), (lambda x: x.sum(dim=1), (T(2, 3),)),
            (lambda x: x.sum(dim=(0, 2), keepdim=True), (T(2, 3, 2, noncontig=True),))],
    "nansum": [(lambda x: x.nansum(dim=0), (T(3, 2),))],
    "mean": [(lambda x: x.mean(), (T(2, 3),)), (lambda x: x.mean(dim=-1, keepdim=True), (T(2, 3),))],
    "nanmean": [(lambda x: x.nanmean(dim=1), (T(2, 3),))],
    "prod": [(lambda x: x.prod(), (P(2, 3),)), (lambda x: x.prod(dim=1), (T(2, 3),)),
             (lambda x: (x * _ZERO_MASK).prod(dim=1), (T(3, 3),)),
             (lambda x: x.prod(dim=1), (Z(_ZEROS),)), (lambda x: x.prod(dim=0), (Z(_ZEROS),)),
             (lambda x: x.prod(), (Z(_ZEROS[0]),)), (lambda x: x.prod(), (Z(_ZEROS[1]),))],
    "max": [(lambda x: x.max(), (T(2, 3),)), (lambda x: x.max(dim=1).values, (T(2, 3),)),
            (lambda x: x.max(dim=0, keepdim=True)[0], (T(3, 2),))],
    "min": [(lambda x: x.min(), (T(2, 3),)), (lambda x: x.min(dim=1)[0], (T(2, 3),))],
    "amax": [(lambda x: x.amax(dim=1), (T(2, 3),))],
    "amin": [(lambda x: x.amin(dim=(0, 1)), (T(2, 3),))],
    "var": [(lambda x: x.var(), (T(2, 3),)), (lambda x: x.var(dim=1, correction=0), (T(2, 3),))],
    "std": [(lambda x: x.std(dim=0), (T(3, 2),))],
    "var_mean": [(lambda x: ember.var_mean(x, dim=1), (T(2, 3),))],
    "std_mean": [(lambda x: ember.std_mean(x, dim=1), (T(2, 3),))],
    "norm": [(lambda x: x.norm(), (T(2, 3),)), (lambda x: x.norm(p=1, dim=1), (T(2, 3),)),
             (lambda x: x.norm(p=3, dim=0), (T(2, 3),))],
    "cumsum": [(lambda x: x.cumsum(1), (T(2, 3),))],
    "cumprod": [(lambda x: x.cumprod(0), (P(3, 2),)), (lambda x: x.cumprod(1), (Z(_ZEROS),)),
                (lambda x: x.cumprod(0), (Z(_ZEROS),))],
    "softmax": [(lambda x: x.softmax(1), (T(2, 3),))],
    "log_softmax": [(lambda x: x.log_softmax(0), (T(2, 3),))],
    "logsumexp": [(lambda x: x.logsumexp(1), (T(2, 3),))],
    "mm": [(ember.mm, (T(2, 3), T(3, 4, noncontig=True)))],
    "bmm": [(ember.bmm, (T(2, 2, 3), T(2, 3, 2)))],
    "matmul": [(ember.matmul, (T(2, 3), T(3, 2))), (ember.matmul, (T(3), T(3))),
               (ember.matmul, (T(3), T(2, 3, 2))), (ember.matmul, (T(2, 2, 3), T(3))),
               (ember.matmul, (T(2, 1, 2, 3), T(3, 3, 2)))],
    "mv": [(ember.mv, (T(2, 3), T(3)))],
    "dot": [(ember.dot, (T(3), T(3)))],
    "vdot": [(ember.vdot, (T(3), T(3)))],
    "inner": [(ember.inner, (T(2, 3), T(4, 3)))],
    "outer": [(ember.outer, (T(2), T(3)))],
    "ger": [(ember.ger, (T(2), T(3)))],
    "addmm": [(lambda a, b, c: ember.addmm(a, b, c, beta=0.5, alpha=2.0), (T(2, 2), T(2, 3), T(3, 2))),
              (ember.addmm, (T(2), T(2, 3), T(3, 2)))],
    "addmv": [(ember.addmv, (T(2), T(2, 3), T(3)))],
    "baddbmm": [(ember.baddbmm, (T(2, 2, 2), T(2, 2, 3), T(2, 3, 2)))],
    "addbmm": [(ember.addbmm, (T(2, 2), T(3, 2, 3), T(3, 3, 2)))],
    "_to_dtype": [(lambda x: x.to(ember.float32).to(ember.float64), (T(2, 3),))],
    "clone": [(lambda x: x.clone(), (T(2, 3),)), (lambda x: x.contiguous(), (T(2, 3, noncontig=True),))],
    "_expand": [(lambda x: x.expand(2, 3, 2), (T(3, 1),))],
    "_view": [(lambda x: x.view(3, 2), (T(2, 3),))],
    "reshape": [(lambda x: x.reshape(6), (T(2, 3, noncontig=True),))],
    "squeeze": [(lambda x: x.squeeze(), (T(2, 1, 3),)), (lambda x: x.squeeze(1), (T(2, 1, 3),))],
    "unsqueeze": [(lambda x: x.unsqueeze(1), (T(2, 3),))],
    "flatten": [(lambda x: x.flatten(), (T(2, 3),))],
    "unflatten": [(lambda x: x.unflatten(1, (3, 1)), (T(2, 3),))],
    "permute": [(lambda x: x.permute(2, 0, 1), (T(2, 3, 2),))],
    "transpose": [(lambda x: x.transpose(0, 1), (T(2, 3),))],
    "t": [(lambda x: x.t(), (T(2, 3),)), (lambda x: x.T, (T(2, 3),))],
    "narrow": [(lambda x: x.narrow(1, 1, 2), (T(2, 3),))],
    "select": [(lambda x: x.select(0, -1), (T(2, 3),))],
    # one node per call; pieces left unused get zero gradients
    "split_with_sizes": [(lambda x: x.split([1, 2], 1), (T(2, 3),)),
                         (lambda x: x.chunk(2, 0)[1], (T(3, 2),)),
                         (lambda x: ember.split(x, 2, -1)[0], (T(2, 5, noncontig=True),))],
    "unbind": [(lambda x: x.unbind(1), (T(2, 3),)),
               (lambda x: x.unbind(0)[0] * x.unbind(0)[-1], (T(3, 2),))],
    "as_strided": [(lambda x: x.as_strided((2, 2), (1, 2), 1), (T(6),))],
    "_getitem": [(lambda x: x[1], (T(2, 3),)), (lambda x: x[:, ::2], (T(2, 3),)),
                 (lambda x: x[None, ..., 1:], (T(2, 3),))],
    "_setitem": [(lambda x, y: _setitem(x, (0, slice(1, None)), y), (T(2, 3), T(2))),
                 (lambda x, y: _setitem(x, 1, y), (T(2, 3), T(1)))],
    "_copy_": [(lambda x, y: (x * 1).copy_(y) * x, (T(2, 3), T(3)))],
    "_fill_": [(lambda x: (x * 1).fill_(2.0) * x, (T(2, 3),))],
}

# in-place programs (new histories, rebased views): first and second derivatives
INPLACE_CASES = {
    "mul_-on-view": (lambda x, y: _inplace_view(x, y), (T(2, 3), T(3))),
    "exp_-on-slice": (lambda x: _exp_slice(x), (T(3, 2),)),
    "add_-chain": (lambda x, y: (x * 1).add_(y).mul_(y).sigmoid_(), (T(2, 3), T(3))),
    "setitem-then-view": (lambda x, y: _setitem_view(x, y), (T(3, 2), T(2))),
    "lerp_-tensor-weight": (lambda x, e, w: (x * 1).lerp_(e, w) * x, (T(2, 3), T(2, 3), T(3))),
    "lerp_-number-weight": (lambda x, e: (x * 1).lerp_(e, 0.7) * x, (T(2, 3), T(3))),
}


def _inplace_view(x, y):
    c = x * 1.0
    c[0].mul_(y)
    return c * c


def _exp_slice(x):
    c = x * 1.0
    c[1:].exp_()
    return c.sum(0)


def _setitem_view(x, y):
    c = x * 2.0
    c[1] = y * y
    v = c[:, 1]
    v.mul_(3.0)
    return c * x


@pytest.mark.parametrize("name", sorted(INPLACE_CASES))
def test_inplace_programs_gradcheck(name):
    fn, inputs = INPLACE_CASES[name]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


# rows with no, one and two zeros
_ZERO_MASK = ember.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], dtype=ember.float64)


def _setitem(x, index, y):
    z = x * 1.0
    z[index] = y
    return z * z


# float32 round trips lose precision: checked with float32-sized differences
TOLERANCE = {"_to_dtype": dict(eps=1e-3, atol=1e-4, rtol=1e-3)}


def _ids():
    for name, cases in CASES.items():
        for i, (fn, inputs) in enumerate(cases):
            yield pytest.param(fn, inputs, TOLERANCE.get(name, {}), id=f"{name}-{i}")


@pytest.mark.parametrize("fn,inputs,tol", list(_ids()))
def test_gradcheck(fn, inputs, tol):
    assert gradcheck(fn, inputs, **tol)


@pytest.mark.parametrize("fn,inputs,tol", list(_ids()))
def test_gradgradcheck(fn, inputs, tol):
    assert gradgradcheck(fn, inputs, **tol)


# (torch.special's table ops are hooked as _special_<f>: test_gradients_optable.py's _bound)
ELEMENTWISE_TESTED_ELSEWHERE = {
    ("_" if r["name"].startswith("special_") else "") + r["name"] for r in ember._C._op_table()
} | {"where", "clamp", "lerp", "nan_to_num", "round", "logit"}
NO_GRADIENT_TEST = {
    # random samplers: the gradient is zero by definition (checked in test_api.py)
    "uniform_", "normal_", "exponential_", "bernoulli_", "random_", "bernoulli", "normal",
    # device copies: gradchecked over ember.cuda's simulated devices in test_cuda_autograd.py
    "_to_device",
    # no derivative (geqrf: none in torch; ormqr: not yet): they raise at backward
    # (test_gradients_api_ops.py)
    "_geqrf", "_ormqr", "_linalg_ldl_factor_ex", "_linalg_ldl_solve",
    # complex views and conjugation: gradchecked in test_complex_autograd.py
    "conj_physical", "view_as_real", "view_as_complex",
    # complex results without a complex formula: refused at the forward (test_complex_autograd)
    "_linalg_eig",
}


def test_broadcast_gradients_are_reduced():
    a, b = T(3, 1), T(4)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 1), b.detach().numpy().sum()))


def test_in_place_writes_through_an_as_strided_view():
    # as_strided keeps its input's geometry, not its values (torch's AsStridedBackward), so a
    # fill through the view (fill_diagonal_ is one) leaves the graph usable; oracle: the
    # gradient by hand (the filled diagonal gets none, the rest d(2a * w)/da = 2w)
    a = ember.ones(3, 3, dtype=ember.float64, requires_grad=True)
    x = a * 2
    x.fill_diagonal_(5)
    w = ember.arange(9.0, dtype=ember.float64).reshape(3, 3)
    (x * w).sum().backward()
    expected = 2 * w.numpy() * (1 - np.eye(3))
    np.testing.assert_array_equal(a.grad.numpy(), expected)
    # an offset view of a view: the gradient lands at the input's own offset
    b = ember.arange(12.0, dtype=ember.float64, requires_grad=True)
    y = b[1:].as_strided((2, 2), (3, 1), 2)
    (y * y).sum().backward()
    expected = np.zeros(12)
    for i in (2, 3, 5, 6):
        expected[i] = 2 * i
    np.testing.assert_array_equal(b.grad.numpy(), expected)
    assert gradcheck(lambda t: t[1:].as_strided((2, 2), (3, 1), 2),
                     (ember.randn(12, dtype=ember.float64, requires_grad=True),))


def test_mixed_dtype_gradient_is_cast_to_the_input_dtype():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, dtype=ember.float64, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == ember.float32 and b.grad.dtype == ember.float64


# Entries for ops being added to the core: checked as soon as the op exists in ember.
def _idx(*v):
    return ember.tensor(list(v), dtype=ember.int64)


FUTURE = {
    "gather": [(lambda x: x.gather(1, ember.tensor([[0, 0], [2, 1]])), (T(2, 3),))],
    "scatter_add": [(lambda x, s: x.scatter_add(1, ember.tensor([[0, 0], [2, 1]]), s),
                     (T(2, 3), T(2, 2)))],
    "scatter": [(lambda x, s: x.scatter(1, ember.tensor([[0, 1], [2, 1]]), s),
                 (T(2, 3), T(2, 2)))],
    "index_select": [(lambda x: x.index_select(0, _idx(1, 0, 1)), (T(2, 3),))],
    "index_add": [(lambda x, s: x.index_add(0, _idx(1, 0, 1), s), (T(2, 3), T(3, 3)))],
    "masked_fill": [(lambda x: x.masked_fill(x > 0, 2.0), (T(2, 3),))],
}
# the op's Python name where it differs from its table name
FUTURE_ATTR: dict = {}


def _future_ids():
    for name, cases in FUTURE.items():
        for i, (fn, inputs) in enumerate(cases):
            yield pytest.param(name, fn, inputs, id=f"{name}-{i}")


@pytest.mark.parametrize("name,fn,inputs", list(_future_ids()))
def test_gradcheck_new_core_ops(name, fn, inputs):
    if not hasattr(ember, FUTURE_ATTR.get(name, name)) or fn is None:
        pytest.skip(f"ember has no {name} yet")
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_every_formula_is_tested():
    from test_gradients_tensor import CASES as TENSOR_CASES  # shape, sorting, linalg ops

    # the nn kernels' entries are covered by test_gradients_nn_kernels.py
    names = {n for n, e in _FORMULAS.items()
             if not e.inplace and e.vjp.__module__ != "ember.autograd._formulas_nn"}
    untested = sorted(names - set(CASES) - set(FUTURE) - set(TENSOR_CASES)
                      - ELEMENTWISE_TESTED_ELSEWHERE - NO_GRADIENT_TEST)
    assert not untested, f"gradient formulas without a gradcheck case: {untested}"
