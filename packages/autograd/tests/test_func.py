"""ember.func: each transform against an oracle that needs no torch (hand-derived derivatives,
central finite differences in float64, a Python loop for vmap), and against torch.func where torch
is installed (values and the error messages of wrong calls)."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
import pytest

import ember
import ember.func
from ember.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stack_module_state,
    vjp,
    vmap,
)

F64 = ember.float64


def t64(a):
    return ember.tensor(np.asarray(a, dtype=np.float64))


def npy(t):
    return t.detach().numpy()


def fd_jacobian(f, x: np.ndarray, eps=1e-6) -> np.ndarray:
    """Central differences of f (numpy in, numpy out): out.shape + x.shape."""
    y0 = np.asarray(f(x))
    jac = np.zeros(y0.shape + x.shape)
    flat = x.reshape(-1)
    for j in range(flat.size):
        d = np.zeros_like(flat)
        d[j] = eps
        up = np.asarray(f((flat + d).reshape(x.shape)))
        dn = np.asarray(f((flat - d).reshape(x.shape)))
        jac[(...,) + np.unravel_index(j, x.shape)] = (up - dn) / (2 * eps)
    return jac


def nonlinear(x):  # R^n -> R^n, the same formula on ember and numpy tensors
    return (x.sin() * x.exp()) if isinstance(x, ember.Tensor) else np.sin(x) * np.exp(x)


# ---------------------------------------------------------------------------------------------
# grad


def test_grad_matches_hand_derivative():
    x = t64([0.3, -1.2, 2.0])
    g = grad(lambda a: (a.sin() * a).sum())(x)
    xn = npy(x)
    np.testing.assert_allclose(npy(g), np.sin(xn) + xn * np.cos(xn), rtol=1e-12)
    assert not g.requires_grad


def test_grad_argnums_tuple_negative_and_kwargs():
    x, y = t64([1.0, 2.0]), t64([3.0, -1.0])

    def f(a, b, scale=1.0):
        return (a * a * b).sum() * scale

    gx, gy = grad(f, argnums=(0, 1))(x, y, scale=2.0)
    np.testing.assert_allclose(npy(gx), 2 * 2 * npy(x) * npy(y))
    np.testing.assert_allclose(npy(gy), 2 * npy(x) ** 2)
    np.testing.assert_allclose(npy(grad(f, argnums=-1)(x, y)), npy(x) ** 2)


def test_grad_of_pytree_argument_keeps_structure():
    params = {"w": t64([[1.0, 2.0], [3.0, 4.0]]), "b": t64([0.5, -0.5])}
    x = t64([1.0, -1.0])

    def loss(p, x):
        return ((p["w"] @ x + p["b"]) ** 2).sum()

    g = grad(loss)(params, x)
    assert set(g) == {"w", "b"}
    r = npy(params["w"]) @ npy(x) + npy(params["b"])
    np.testing.assert_allclose(npy(g["b"]), 2 * r)
    np.testing.assert_allclose(npy(g["w"]), 2 * np.outer(r, npy(x)))


def test_grad_and_value_has_aux():
    x = t64([1.0, 2.0, 3.0])
    g, (value, aux) = grad_and_value(lambda a: ((a ** 3).sum(), {"n": a.sum()}), has_aux=True)(x)
    np.testing.assert_allclose(npy(g), 3 * npy(x) ** 2)
    assert value.item() == pytest.approx(36.0)
    assert aux["n"].item() == pytest.approx(6.0) and not aux["n"].requires_grad
    g2, aux2 = grad(lambda a: ((a ** 2).sum(), 7), has_aux=True)(x)
    np.testing.assert_allclose(npy(g2), 2 * npy(x))
    assert aux2 == 7


def test_grad_of_unused_input_is_zero():
    x = t64([1.0, 2.0])
    np.testing.assert_array_equal(npy(grad(lambda a, b: b.sum())(x, x)), [0.0, 0.0])


def test_nested_grad_is_the_second_derivative():
    for v in (0.3, -1.1, 2.5):
        x = ember.tensor(v, dtype=F64)
        d2 = grad(grad(lambda a: a.sin() * a))(x)
        assert d2.item() == pytest.approx(2 * math.cos(v) - v * math.sin(v), rel=1e-12)
        d3 = grad(grad(grad(lambda a: a ** 4)))(x)
        assert d3.item() == pytest.approx(24 * v, rel=1e-12)


def test_grad_through_closure_stays_differentiable():
    """As torch.func: a gradient that depends on a closed-over tensor requiring grad can be
    differentiated again with ordinary autograd; without one, it is a plain tensor."""
    w = t64([2.0, 3.0]).requires_grad_()
    x = t64([1.0, 4.0])
    g = grad(lambda a: (a * a * w).sum())(x)  # 2 a w
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(npy(w.grad), 2 * npy(x))
    assert not grad(lambda a: (a * a).sum())(x).requires_grad


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x: grad(lambda a: a)(x), RuntimeError,
     "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with 1 "
     "dims. Maybe you wanted to use the vjp or jacrev APIs instead?"),
    (lambda x: grad(lambda a: a.sum(), has_aux=True)(x), RuntimeError,
     "grad_and_value(f)(*args): output of function f should be a tuple: (output, aux) if "
     "has_aux is True"),
    (lambda x: grad(lambda a: a.sum(), argnums=1)(x), RuntimeError,
     "Got argnum=1, but only 1 positional inputs"),
    (lambda x: grad(lambda a: a.sum(), argnums=1.0)(x), RuntimeError,
     "argnums must be int or Tuple[int, ...], got: <class 'float'>"),
    (lambda x: grad(lambda a: a.sum(), argnums=())(x), RuntimeError, "argnums must be non-empty"),
    (lambda x: grad(lambda a: a)(1.0), ValueError,
     "Thing passed to transform API must be Tensor, got <class 'float'>"),
    (lambda x: grad(lambda a: 1.0)(x), RuntimeError,
     "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got <class 'float'>"),
    (lambda x: jacrev(lambda a: 1.0)(x), RuntimeError,
     "vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported type "
     "<class 'float'>"),
])
def test_wrong_calls_raise_torchs_errors(call, exc, msg):
    with pytest.raises(exc) as info:
        call(t64([1.0, 2.0]))
    assert str(info.value) == msg


# ---------------------------------------------------------------------------------------------
# vjp, jvp, linearize, Jacobians


def test_vjp_and_jvp_against_finite_differences():
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(4)
    J = fd_jacobian(nonlinear, xn)
    x = t64(xn)
    u, v = rng.standard_normal(4), rng.standard_normal(4)
    out, vjp_fn = vjp(nonlinear, x)
    np.testing.assert_allclose(npy(out), nonlinear(xn))
    (g,) = vjp_fn(t64(u))
    np.testing.assert_allclose(npy(g), u @ J, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(npy(vjp_fn(t64(u))[0]), npy(g))  # callable again
    out2, jv = jvp(nonlinear, (x,), (t64(v),))
    np.testing.assert_allclose(npy(jv), J @ v, rtol=1e-7, atol=1e-8)
    out3, jvp_fn = linearize(nonlinear, x)
    np.testing.assert_allclose(npy(jvp_fn(t64(v))), J @ v, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(npy(jvp_fn(t64(u))), J @ u, rtol=1e-7, atol=1e-8)


def test_jvp_of_linear_and_identity_functions():
    x, v = t64([1.0, 2.0]), t64([0.5, -3.0])
    np.testing.assert_allclose(npy(jvp(lambda a: a, (x,), (v,))[1]), npy(v))
    np.testing.assert_allclose(npy(jvp(lambda a: 3 * a, (x,), (v,))[1]), 3 * npy(v))
    np.testing.assert_array_equal(npy(jvp(lambda a: ember.ones(2, dtype=F64), (x,), (v,))[1]),
                                  [0.0, 0.0])


def test_jvp_through_a_non_differentiable_backward_is_refused():
    from ember.autograd import Function, once_differentiable

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = t64([1.0, 2.0])
    np.testing.assert_allclose(npy(grad(lambda a: Square.apply(a).sum())(x)), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="not differentiable"):
        jvp(Square.apply, (x,), (t64([1.0, 1.0]),))
    # differentiating its gradient again raises torch's error, in a plain backward
    xr = x.clone().requires_grad_()
    (g,) = ember.autograd.grad(Square.apply(xr), xr, ember.ones(2, dtype=F64).requires_grad_(),
                               create_graph=True)
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked"):
        g.sum().backward()
    # a backward that is constant (round's zero gradient) is fine: its jvp is zero
    np.testing.assert_array_equal(npy(jvp(lambda a: a.round(), (x,), (x,))[1]), [0.0, 0.0])


def test_jvp_rejects_mismatched_structure():
    x = t64([1.0])
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(ember.sin, x, (x,))
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(ember.sin, (x,), (x, x))


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_jacobians_against_finite_differences(jac):
    rng = np.random.default_rng(1)
    an, bn = rng.standard_normal((2, 3)), rng.standard_normal(3)

    def f_np(a, b):
        return np.tanh(a @ b) * a.sum()

    def f(a, b):
        return (a @ b).tanh() * a.sum()

    ja, jb = jac(f, argnums=(0, 1))(t64(an), t64(bn))
    assert tuple(ja.shape) == (2, 2, 3) and tuple(jb.shape) == (2, 3)
    np.testing.assert_allclose(npy(ja), fd_jacobian(lambda a: f_np(a, bn), an), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(npy(jb), fd_jacobian(lambda b: f_np(an, b), bn), rtol=1e-6,
                               atol=1e-8)
    assert tuple(jac(f)(t64(an), t64(bn)).shape) == (2, 2, 3)


@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_jacobian_of_pytree_output_with_aux(jac):
    x = t64([1.0, 2.0])
    out, aux = jac(lambda a: ({"sq": a * a, "sum": a.sum()}, a.detach() + 1), has_aux=True)(x)
    np.testing.assert_allclose(npy(out["sq"]), np.diag(2 * npy(x)))
    np.testing.assert_allclose(npy(out["sum"]), [1.0, 1.0])
    np.testing.assert_allclose(npy(aux), npy(x) + 1)


def test_jacfwd_refuses_random_ops_by_default():
    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="called random operation while in randomness error"):
        jacfwd(lambda a: a + ember.rand(2, dtype=F64))(x)
    np.testing.assert_array_equal(
        npy(jacfwd(lambda a: a + ember.rand(2, dtype=F64), randomness="same")(x)), np.eye(2))


def test_hessian_against_hand_formula():
    rng = np.random.default_rng(2)
    an = rng.standard_normal((3, 3))
    A = an @ an.T
    xn = rng.standard_normal(3)

    def f(x):  # x^T A x / 2 + sum(x^3)
        return (x @ t64(A) @ x) / 2 + (x ** 3).sum()

    H = hessian(f)(t64(xn))
    np.testing.assert_allclose(npy(H), A + np.diag(6 * xn), rtol=1e-12)
    Hf = jacfwd(jacrev(f))(t64(xn))  # forward over reverse, as torch's hessian
    np.testing.assert_allclose(npy(Hf), npy(H), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# vmap


def test_vmap_equals_a_loop_over_elements():
    rng = np.random.default_rng(3)
    x, w = t64(rng.standard_normal((5, 3))), t64(rng.standard_normal(3))
    out = vmap(lambda a, b: (a * b).sum().tanh(), in_dims=(0, None))(x, w)
    loop = np.tanh(npy(x) @ npy(w))
    np.testing.assert_allclose(npy(out), loop)
    # in_dims counted from the end, out_dims elsewhere
    out = vmap(lambda a: a * 2, in_dims=-1, out_dims=1)(x)
    np.testing.assert_allclose(npy(out), npy(x).T.T * 2)
    assert tuple(out.shape) == (5, 3)


def test_vmap_nested_pytrees_and_nesting():
    rng = np.random.default_rng(4)
    a = t64(rng.standard_normal((2, 3, 4)))
    d = {"u": t64(rng.standard_normal((4, 2))), "k": t64(rng.standard_normal(4))}

    def f(x, dd):
        return {"p": x * dd["k"], "q": (dd["u"].sum(),)}

    out = vmap(f, in_dims=(2, {"u": None, "k": 0}), out_dims={"p": 0, "q": (None,)})(a, d)
    assert out["q"][0].item() == pytest.approx(npy(d["u"]).sum())
    assert tuple(out["p"].shape) == (4, 2, 3)
    np.testing.assert_allclose(npy(out["p"]), np.moveaxis(npy(a), 2, 0) * npy(d["k"])[:, None,
                                                                                       None])
    # nested vmap: an outer product
    x, y = t64([1.0, 2.0, 3.0]), t64([4.0, 5.0])
    np.testing.assert_allclose(npy(vmap(vmap(ember.mul, (None, 0)), (0, None))(x, y)),
                               np.outer(npy(x), npy(y)))


def test_vmap_unbatched_outputs():
    x = t64([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    y, c = vmap(lambda a: (a, ember.ones(2, dtype=F64)), out_dims=(0, None))(x)
    assert tuple(c.shape) == (2,)
    y, n = vmap(lambda a: (a, 3), out_dims=(0, None))(x)
    assert n == 3
    # an unbatched output under out_dims=0 is expanded, as torch does
    assert tuple(vmap(lambda a: ember.ones(2, dtype=F64))(x).shape) == (3, 2)


def test_vmap_of_grad_gives_per_sample_gradients():
    rng = np.random.default_rng(5)
    w = t64(rng.standard_normal(3))
    xs, ys = t64(rng.standard_normal((6, 3))), t64(rng.standard_normal(6))

    def loss(w, x, y):
        return ((x @ w).tanh() - y) ** 2

    per = vmap(grad(loss), in_dims=(None, 0, 0))(w, xs, ys)
    for i in range(6):
        np.testing.assert_allclose(npy(per[i]), npy(grad(loss)(w, xs[i], ys[i])))
    # and by hand for one sample
    xn, yn, wn = npy(xs[2]), npy(ys[2]), npy(w)
    t = np.tanh(xn @ wn)
    np.testing.assert_allclose(npy(per[2]), 2 * (t - yn) * (1 - t * t) * xn, rtol=1e-12)


def test_autograd_flows_through_vmap():
    x = t64([[1.0, 2.0], [3.0, 4.0]]).requires_grad_()
    vmap(lambda a: (a ** 2).sum())(x).sum().backward()
    np.testing.assert_allclose(npy(x.grad), 2 * npy(x))


def test_vmap_randomness():
    x = ember.zeros(4, 3, dtype=F64)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error"):
        vmap(lambda a: a + ember.randn(3, dtype=F64))(x)
    same = vmap(lambda a: a + ember.randn(3, dtype=F64), randomness="same")(x)
    assert all(np.array_equal(npy(same[0]), npy(same[i])) for i in range(4))
    diff = vmap(lambda a: a + ember.randn(3, dtype=F64), randomness="different")(x)
    assert not np.array_equal(npy(diff[0]), npy(diff[1]))
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(ember.sin, randomness="bad")


X23 = np.arange(6.0).reshape(2, 3)
VMAP_ERRORS = [
    ("in_dim out of range", lambda lib, x: lib.func.vmap(lib.sin, in_dims=2)(x), ValueError),
    ("in_dim -3", lambda lib, x: lib.func.vmap(lib.sin, in_dims=-3)(x), ValueError),
    ("in_dims structure", lambda lib, x: lib.func.vmap(lib.add, in_dims=(0,))(x, x), ValueError),
    ("in_dims type", lambda lib, x: lib.func.vmap(lib.sin, in_dims="a")(x), ValueError),
    ("in_dim float", lambda lib, x: lib.func.vmap(lib.sin, in_dims=(0.5,))(x), ValueError),
    ("no inputs", lambda lib, x: lib.func.vmap(lambda: x)(), ValueError),
    ("none batched", lambda lib, x: lib.func.vmap(lib.add, in_dims=(None, None))(x, x),
     ValueError),
    ("sizes", lambda lib, x: lib.func.vmap(lib.add)(x, lib.ones(3, 3, dtype=x.dtype)),
     ValueError),
    ("non-tensor in_dim", lambda lib, x: lib.func.vmap(lambda a, b: a * b, in_dims=(0, 0))(x, 2.0),
     ValueError),
    ("out_dims None batched", lambda lib, x: lib.func.vmap(lib.sin, out_dims=None)(x), ValueError),
    ("non-tensor output", lambda lib, x: lib.func.vmap(lambda a: 3)(x), ValueError),
    ("out_dims structure", lambda lib, x: lib.func.vmap(lib.sin, out_dims=(0, 1))(x), ValueError),
    ("out_dims type", lambda lib, x: lib.func.vmap(lib.sin, out_dims="a")(x), ValueError),
    ("chunk_size", lambda lib, x: lib.func.vmap(lib.sin, chunk_size=0)(x), ValueError),
    ("randomness error", lambda lib, x: lib.func.vmap(lambda a: lib.rand_like(a))(x),
     RuntimeError),
]


@pytest.mark.parametrize("name,call,exc", VMAP_ERRORS, ids=[c[0] for c in VMAP_ERRORS])
def test_vmap_errors(name, call, exc):
    with pytest.raises(exc, match="vmap"):
        call(ember, t64(X23))


@pytest.mark.parametrize("name,call,exc", VMAP_ERRORS, ids=[c[0] for c in VMAP_ERRORS])
def test_vmap_error_messages_match_torch(name, call, exc):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.func")

    with pytest.raises(exc) as want:
        call(torch, torch.tensor(X23))
    with pytest.raises(exc) as got:
        call(ember, t64(X23))
    if name in ("in_dims structure", "out_dims structure"):  # torch's TreeSpec repr differs
        assert str(got.value).split(" has structure")[0] == str(want.value).split(
            " has structure")[0]
    else:
        assert str(got.value) == str(want.value)


# ---------------------------------------------------------------------------------------------
# functional_call, stack_module_state


@pytest.fixture()
def nn():
    return pytest.importorskip("ember.nn")


def _tied_model(nn):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.register_buffer("shift", ember.ones(2))
            self.tied = self.lin.weight

        def forward(self, x):
            return self.lin(x) + self.shift

    return M()


def test_functional_call_swaps_and_restores(nn):
    m = _tied_model(nn)
    w0 = m.lin.weight
    x = ember.tensor([1.0, 2.0])
    w = ember.tensor([[1.0, 0.0], [0.0, 2.0]])
    out = functional_call(m, {"lin.weight": w, "shift": ember.zeros(2)}, (x,))
    np.testing.assert_allclose(out.detach().numpy(), w.numpy() @ x.numpy() +
                               m.lin.bias.detach().numpy(), rtol=1e-6)
    assert m.lin.weight is w0 and m.tied is w0 and m.shift.sum().item() == 2.0
    # gradients w.r.t. the given tensors, through grad
    g = grad(lambda p: functional_call(m, p, x).sum())({"lin.weight": w})
    np.testing.assert_allclose(g["lin.weight"].numpy(), np.tile(x.numpy(), (2, 1)))


def test_functional_call_ties_strict_and_dict_errors(nn):
    m = _tied_model(nn)
    x = ember.ones(2)
    with pytest.raises(ValueError, match=r"got multiple values for keys \['lin.weight', 'tied'\]"):
        functional_call(m, {"lin.weight": ember.zeros(2, 2), "tied": ember.ones(2, 2)}, (x,))
    with pytest.raises(RuntimeError) as info:
        functional_call(m, {"lin.weight": ember.zeros(2, 2), "zz": ember.ones(1)}, (x,),
                        strict=True)
    assert str(info.value) == ("Error(s) in reparametrizing for M:\n\tUnexpected key(s): 'zz'.\n"
                               "\tMissing key(s): 'lin.bias', 'shift'.")
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(m, ({"shift": x}, {"shift": x}), (x,))
    out = functional_call(m, ({"lin.weight": ember.zeros(2, 2)}, {"shift": ember.zeros(2)}),
                          args=(), kwargs={"x": x})
    np.testing.assert_allclose(out.detach().numpy(), m.lin.bias.detach().numpy())


def test_stack_module_state_and_ensemble_vmap(nn):
    ember.manual_seed(0)
    models = [nn.Linear(3, 2) for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert tuple(params["weight"].shape) == (4, 2, 3)
    assert params["weight"].requires_grad and params["weight"].grad_fn is None
    x = ember.randn(5, 3)
    base = models[0]
    out = vmap(lambda p, b, xx: functional_call(base, (p, b), (xx,)), in_dims=(0, 0, None))(
        params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        stack_module_state([])
    models[1].eval()
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        stack_module_state(models)


# ---------------------------------------------------------------------------------------------
# against torch.func


def test_transforms_match_torch():
    torch = pytest.importorskip("torch")
    import torch.func as tf

    rng = np.random.default_rng(7)
    xn, wn = rng.standard_normal((4, 3)), rng.standard_normal(3)

    def f(lib):
        return lambda x, w: ((x @ w).sin() * x.sum(-1)).sum()

    def both(tr, *args, **kw):
        e = tr(ember.func)(f(ember), **kw)(*[t64(a) for a in args])
        t = tr(tf)(f(torch), **kw)(*[torch.tensor(a) for a in args])
        return e, t

    for tr, kw in [(lambda m: m.grad, {"argnums": (0, 1)}), (lambda m: m.jacrev, {}),
                   (lambda m: m.jacfwd, {"argnums": 1}), (lambda m: m.hessian, {"argnums": 1})]:
        e, t = both(tr, xn, wn, **kw)
        e, t = (e, t) if isinstance(e, tuple) else ((e,), (t,))
        for a, b in zip(e, t):
            np.testing.assert_allclose(npy(a), b.numpy(), rtol=1e-10, atol=1e-12)
    per_e = vmap(grad(lambda w, x: (x @ w).tanh()), in_dims=(None, 0))(t64(wn), t64(xn))
    per_t = tf.vmap(tf.grad(lambda w, x: (x @ w).tanh()), in_dims=(None, 0))(
        torch.tensor(wn), torch.tensor(xn))
    np.testing.assert_allclose(npy(per_e), per_t.numpy(), rtol=1e-12)


def test_stack_of_one_tensor_differentiates_twice():
    """jacfwd over jacrev stacks a single row: unbind's gradient (stack's double backward) then
    gets one bare gradient, not a tuple."""
    from ember.autograd import gradgradcheck

    x = t64([0.3, -0.7, 1.1]).requires_grad_()
    assert gradgradcheck(lambda y: ember.stack([y.sin()]), (x,))
    assert gradgradcheck(lambda y: ember.stack([y.sin(), y * y], 1), (x,))


def test_torch_vmap_alias_and_extras(nn):
    from ember.func import debug_unwrap, functionalize, replace_all_batch_norm_modules_

    assert ember.vmap is vmap
    x = t64([1.0, 2.0])
    assert debug_unwrap(x) is x
    np.testing.assert_array_equal(npy(functionalize(lambda a: a.clone().mul_(2))(x)), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="received invalid argument for remove=x"):
        functionalize(ember.sin, remove="x")
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    assert replace_all_batch_norm_modules_(model) is model
    bn = model[1]
    assert bn.running_mean is None and bn.running_var is None and not bn.track_running_stats
    # each element normalised with its own batch statistics: mean 0 over its rows
    xs = ember.randn(5, 6, 3)
    out = vmap(lambda xx: functional_call(model, dict(model.named_parameters()), (xx,)))(xs)
    np.testing.assert_allclose(out.detach().numpy().mean(axis=1), np.zeros((5, 4)), atol=1e-5)


# ---------------------------------------------------------------------------------------------
# nesting, pytrees and options side by side with torch.func (the same structure and values)

P = namedtuple("P", "a b")
_rng = np.random.default_rng(0)
A, B, C = _rng.standard_normal(3), _rng.standard_normal((2, 3)), _rng.standard_normal(3)
D = _rng.standard_normal((2, 2, 2))


def _show(r):
    """A printable form of a result: the container types, shapes and rounded values."""
    if isinstance(r, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in r.items()) + "}"
    if isinstance(r, P):
        return "P(" + ", ".join(_show(x) for x in r) + ")"
    if isinstance(r, (tuple, list)):
        return type(r).__name__ + "(" + ", ".join(_show(x) for x in r) + ")"
    if hasattr(r, "detach"):
        return f"T{tuple(r.shape)}" + str((np.round(r.detach().numpy(), 6) + 0.0).tolist())
    return repr(r)


def _vjp_applied(lib, out, fn, *aux):
    return (out, fn(lib.ones_like(out)), *aux)


PARITY = {
    "jacrev dict out argnums tuple": lambda lib, F: F.jacrev(
        lambda x, y: {"s": (y @ x).sin(), "t": x.sum() * y}, argnums=(0, 1))(
        cv(lib, A), cv(lib, B)),
    "jacfwd dict out argnums tuple": lambda lib, F: F.jacfwd(
        lambda x, y: {"s": (y @ x).sin(), "t": x.sum() * y}, argnums=(0, 1))(
        cv(lib, A), cv(lib, B)),
    "hessian argnums tuple": lambda lib, F: F.hessian(
        lambda x, y: (x * y * x).sum(), argnums=(0, 1))(cv(lib, A), cv(lib, C)),
    "vjp has_aux": lambda lib, F: _vjp_applied(
        lib, *F.vjp(lambda x: (x.exp(), x.sum()), cv(lib, A), has_aux=True)),
    "vjp pytree primals": lambda lib, F: (lambda o, fn: (o, fn(
        (lib.ones(3, dtype=lib.float64), lib.ones((), dtype=lib.float64)))))(*F.vjp(
            lambda d, y: (d["u"] * y, d["v"].sum()), {"u": cv(lib, A), "v": cv(lib, B)},
            cv(lib, C))),
    "jvp has_aux": lambda lib, F: F.jvp(lambda x: (x.exp(), x.sum()), (cv(lib, A),),
                                        (cv(lib, C),), has_aux=True),
    "jvp two primals": lambda lib, F: F.jvp(lambda x, y: y @ x, (cv(lib, A), cv(lib, B)),
                                            (cv(lib, C), cv(lib, B))),
    "linearize": lambda lib, F: (lambda o, fn: (o, fn(cv(lib, C))))(
        *F.linearize(lambda x: x.sin() * x, cv(lib, A))),
    "grad namedtuple": lambda lib, F: F.grad(lambda p: (p.a * p.b).sum())(
        P(cv(lib, A), cv(lib, C))),
    "grad kwargs": lambda lib, F: F.grad(lambda x, scale=1.0: (x * x).sum() * scale)(
        cv(lib, A), scale=3.0),
    "grad_and_value aux": lambda lib, F: F.grad_and_value(
        lambda x: ((x ** 2).sum(), {"m": x.mean()}), has_aux=True)(cv(lib, A)),
    "vmap list arg nested in_dims": lambda lib, F: F.vmap(
        lambda pair: pair[0] * pair[1], in_dims=([0, None],))([cv(lib, B), cv(lib, C)]),
    "vmap tuple out int out_dims": lambda lib, F: F.vmap(
        lambda x: (x, x.sum()), out_dims=1)(cv(lib, B).t()),
    "vmap kwargs not batched": lambda lib, F: F.vmap(lambda x, s=None: x * s)(
        cv(lib, B), s=cv(lib, C)),
    "vmap negative out_dims": lambda lib, F: F.vmap(lambda x: x.outer(x), out_dims=-1)(
        cv(lib, B)),
    "vmap of jacrev": lambda lib, F: F.vmap(F.jacrev(lambda x: x.sin() * x.sum()))(cv(lib, B)),
    "vmap in_dims dict prefix": lambda lib, F: F.vmap(
        lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": 1},))(
        {"a": cv(lib, B), "b": cv(lib, B).t()}),
    "vmap nested 3": lambda lib, F: F.vmap(F.vmap(F.vmap(lambda a: a * 2)))(cv(lib, D)),
    "vmap grad argnums": lambda lib, F: F.vmap(
        F.grad(lambda w, x: (w * x).sin().sum(), argnums=(0, 1)), in_dims=(None, 0))(
        cv(lib, C), cv(lib, B)),
    "jacrev of grad": lambda lib, F: F.jacrev(F.grad(lambda x: (x.sin() * x).sum()))(
        cv(lib, A)),
    "grad of vmap": lambda lib, F: F.grad(
        lambda w: F.vmap(lambda x: (x * w).tanh().sum())(cv(lib, B)).sum())(cv(lib, C)),
    "jacrev chunk": lambda lib, F: F.jacrev(lambda x: x.sin(), chunk_size=1)(cv(lib, A)),
    "vmap 0-d output": lambda lib, F: F.vmap(lambda x: x.sum())(cv(lib, B)),
    "grad int output": lambda lib, F: F.grad(lambda x: x.sum().long())(cv(lib, A)),
}

def cv(lib, a):
    return lib.tensor(a)


@pytest.mark.parametrize("name", list(PARITY))
def test_structure_and_values_match_torch(name):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch.func")
    assert _outcome(PARITY[name], ember, ember.func) == _outcome(PARITY[name], torch, torch.func)


def _outcome(case, lib, F):
    try:
        return _show(case(lib, F))
    except Exception as e:  # the same exception is the same outcome
        return f"{type(e).__name__}: {e}"
