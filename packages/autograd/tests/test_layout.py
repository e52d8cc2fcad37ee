"""In-place ops on views of any dense base (PyTorch's CopySlices), the regenerated history of
views whose base was modified in place, and the memory layout of matrix-product gradients."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

F64 = ember.float64


# Each case: (function of a tensor-library module, input shapes). The same function runs on ember
# and, where installed, on torch.
def _transposed_parent(lib, a):
    b = a.clone().t()
    v = b[0]
    v.mul_(2)
    return b * b


def _strided_slice(lib, a, y):
    x = a.clone()[:, ::2]
    x.add_(y * y)
    return x._base * 3


def _view_of_transposed_clone(lib, a, y):
    b = a.t().clone()  # clone keeps the strides: a non-contiguous base
    v = b[1]
    v.mul_(y)
    return b.sin()


def _copy_into_columns_of_transposed_clone(lib, a, y):
    b = a.t().clone()
    v = b[:, 1:3]
    v.copy_(y)
    return (b * b).sum(0), v * 1


def _older_view_of_inplace_base(lib, a):
    b = a.clone()
    v = b.t()
    b.mul_(2)
    return v * v


def _permuted_3d_clone(lib, a, y):
    b = a.permute(2, 0, 1).clone()
    b[1, :, 0].add_(y * y)
    return b.exp()


CASES = [
    (_transposed_parent, [(3, 4)]),
    (_strided_slice, [(3, 4), (3, 2)]),
    (_view_of_transposed_clone, [(4, 3), (4,)]),
    (_copy_into_columns_of_transposed_clone, [(3, 4), (4, 2)]),
    (_older_view_of_inplace_base, [(3, 4)]),
    (_permuted_3d_clone, [(2, 3, 4), (2,)]),
]


def _inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("fn,shapes", CASES, ids=[c[0].__name__ for c in CASES])
def test_inplace_on_views_gradcheck(fn, shapes):
    xs = [ember.tensor(a, dtype=F64, requires_grad=True) for a in _inputs(shapes)]
    f = lambda *t: fn(ember, *t)  # noqa: E731
    assert gradcheck(f, xs)
    assert gradgradcheck(f, xs)


@pytest.mark.parametrize("fn,shapes", CASES, ids=[c[0].__name__ for c in CASES])
def test_inplace_on_views_match_torch(fn, shapes):
    torch = pytest.importorskip("torch")
    arrs = _inputs(shapes, seed=1)
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    es = [ember.tensor(a, dtype=F64, requires_grad=True) for a in arrs]

    def loss(outs):
        outs = outs if isinstance(outs, tuple) else (outs,)
        return sum((o * o).sum() for o in outs)

    to, eo = fn(torch, *ts), fn(ember, *es)
    tg = torch.autograd.grad(loss(to), ts, create_graph=True)
    eg = ember.autograd.grad(loss(eo), es, create_graph=True)
    for a, b in zip(tg, eg):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-10)
    tgg = torch.autograd.grad(sum((g * g).sum() for g in tg), ts)
    egg = ember.autograd.grad(sum((g * g).sum() for g in eg), es)
    for a, b in zip(tgg, egg):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-10)


def test_stale_view_gets_an_as_strided_history():
    a = ember.ones(3, 4, requires_grad=True)
    b = a.clone().t()
    b[0].mul_(2)
    assert b.grad_fn.name() == "AsStridedBackward0"
    b.sum().backward()
    expected = np.ones((3, 4))
    expected[:, 0] = 2
    np.testing.assert_array_equal(a.grad.numpy(), expected)


def test_inplace_on_view_of_clone_of_expanded():
    y = ember.ones(2, requires_grad=True)
    b = ember.zeros(1, 3).expand(2, 3).clone()  # clone of an expanded tensor is dense again
    b[:, 0].add_(y)
    b.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])


# ---- layout of matrix-product gradients -----------------------------------------------------


def _w(*shape):
    return ember.randn(*shape, dtype=F64, requires_grad=True)


def test_mm_weight_grad_is_contiguous():
    x, w = ember.randn(4, 3, dtype=F64, requires_grad=True), _w(5, 3)
    (x @ w.t()).sum().backward()
    assert w.grad.is_contiguous() and x.grad.is_contiguous()
    np.testing.assert_allclose(w.grad.numpy(), np.ones((5, 4)) @ x.detach().numpy())


def test_addmm_weight_grad_is_contiguous():
    x, w, b = ember.randn(4, 3, dtype=F64), _w(5, 3), _w(5)
    ember.addmm(b, x, w.t()).sum().backward()
    assert w.grad.is_contiguous()


def test_3d_matmul_weight_grad_is_contiguous():
    x, w = ember.randn(2, 4, 3, dtype=F64, requires_grad=True), _w(5, 3)
    (x @ w.t()).sum().backward()
    assert w.grad.is_contiguous() and x.grad.is_contiguous()
    expected = np.ones((8, 5)).T @ x.detach().numpy().reshape(8, 3)
    np.testing.assert_allclose(w.grad.numpy(), expected)


def test_bmm_grad_of_transposed_batch_is_contiguous():
    a, w = ember.randn(2, 4, 3, dtype=F64), _w(2, 5, 3)
    a.bmm(w.transpose(1, 2)).sum().backward()
    assert w.grad.is_contiguous()


def test_accumulated_grad_obeys_the_layout_contract():
    x = _w(3, 4)
    (x.t() * ember.randn(4, 3, dtype=F64)).sum().backward()
    assert x.grad.is_contiguous()
    p = ember.randn(4, 3, dtype=F64).t().clone().requires_grad_()  # a dense, transposed leaf
    (p.t().contiguous() * 2).sum().backward()
    assert p.grad.stride() == p.stride()


@pytest.mark.parametrize("case", ["mm", "addmm", "matmul3d", "bmm", "mat1_t"])
def test_layout_aware_formulas_gradgradcheck(case):
    x3 = ember.randn(2, 4, 3, dtype=F64, requires_grad=True)
    x = ember.randn(4, 3, dtype=F64, requires_grad=True)
    w, b = _w(5, 3), _w(5)
    wb = _w(2, 5, 3)
    fns = {
        "mm": (lambda x, w: x.mm(w.t()), (x, w)),
        "addmm": (lambda b, x, w: ember.addmm(b, x, w.t(), beta=0.5, alpha=2), (b, x, w)),
        "matmul3d": (lambda x, w: x.matmul(w.t()), (x3, w)),
        "bmm": (lambda x, w: x.bmm(w.transpose(1, 2)), (x3, wb)),
        "mat1_t": (lambda w, x: w.t().mm(x.t()), (_w(3, 4), x)),
    }
    f, args = fns[case]
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


def test_leaf_kept_alive_by_a_view_still_gets_its_grad():
    import gc

    v = ember.ones(3, requires_grad=True)[0:2]  # the leaf's Python object is gone at once
    gc.collect()
    v.sum().backward()
    assert v._base.is_leaf
    np.testing.assert_array_equal(v._base.grad.numpy(), [1.0, 1.0, 0.0])
    (v * 2).sum().backward()
    np.testing.assert_array_equal(v._base.grad.numpy(), [3.0, 3.0, 0.0])


def test_custom_function_view_output_keeps_its_history_after_a_rebase():
    from ember.autograd import Function

    class Head(Function):
        @staticmethod
        def forward(ctx, x):
            return x[0:2]

        @staticmethod
        def backward(ctx, g):
            z = ember.zeros(4)
            z[0:2] = g * 10
            return z

    a = ember.ones(4, requires_grad=True)
    x = a.clone()
    x.mul_(2)
    o = Head.apply(x)
    assert o.grad_fn.name() == "HeadBackward"
    o.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [20.0, 20.0, 0.0, 0.0])


def test_grad_summed_with_create_graph_stays_contiguous():
    x = _w(3, 4)
    c = ember.randn(4, 3, dtype=F64)
    (x.t() * x.t() * c).sum().backward(create_graph=True)
    assert x.grad.is_contiguous()
    x.grad.sum().backward()
    assert x.grad.is_contiguous()
    np.testing.assert_allclose(x.grad.detach().numpy(),
                               2 * (x * c.t()).detach().numpy() + 2 * c.t().numpy())


@pytest.mark.parametrize("expr,strides", [
    (lambda a, b: a + b.t(), (4, 1)),     # the first full-shape dense input decides: contiguous
    (lambda a, b: a.t() + b, (1, 4)),     # ... or transposed
    (lambda a, b: a.t() * b.t(), (1, 4)),
    (lambda a, b: a[:, :1] + b[:1, :], (4, 1)),  # broadcasting: C order
    (lambda a, b: ember.where(a > 0, a, b.t()), (4, 1)),
])
def test_elementwise_result_layout_follows_the_first_dense_input(expr, strides):
    # PyTorch's TensorIterator gives these strides (checked by hand against torch 2.13)
    a, b = ember.randn(4, 4), ember.randn(4, 4)
    assert tuple(expr(a, b).stride()) == strides


def test_contiguous_of_a_tensor_that_requires_grad_is_contiguous():
    x = _w(3, 4)
    y = x.t().contiguous()
    assert y.is_contiguous() and type(y.grad_fn).__name__ == "CloneBackward0"
    (y * ember.arange(12.0, dtype=F64).reshape(4, 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(12.0).reshape(4, 3).T)
