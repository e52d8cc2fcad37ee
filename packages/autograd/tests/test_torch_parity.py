"""Gradients of random programs against PyTorch's (optional: skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# (name, arity, ember fn, torch fn, domain) of the building blocks
UNARY = [
    ("exp", lambda m, x: m.exp(x * 0.3)), ("tanh", lambda m, x: m.tanh(x)),
    ("sigmoid", lambda m, x: m.sigmoid(x)), ("sin", lambda m, x: m.sin(x)),
    ("log1p_abs", lambda m, x: m.log1p(x.abs())), ("square", lambda m, x: m.square(x)),
    ("relu", lambda m, x: m.relu(x)), ("softmax", lambda m, x: m.softmax(x, -1)),
    ("log_softmax", lambda m, x: m.log_softmax(x, 0)),
    ("cumsum", lambda m, x: m.cumsum(x, -1)), ("t", lambda m, x: x.t()),
    ("transpose", lambda m, x: x.transpose(0, 1) * 2),
    ("sum-keep", lambda m, x: x.sum(1, keepdim=True) * x),
    ("mean", lambda m, x: x.mean(0) + x),
    ("var", lambda m, x: x.var(1, keepdim=True) + x),
    ("max", lambda m, x: x.max(1, keepdim=True)[0] - x),
    ("norm", lambda m, x: x.norm() * x),
    ("clamp", lambda m, x: m.clamp(x, -0.5, 0.7)),
    ("getitem", lambda m, x: x[1:, :2].sum() + x),
    ("pow", lambda m, x: (x.abs() + 0.5) ** 1.7),
]
BINARY = [
    ("add", lambda m, a, b: a + b), ("sub", lambda m, a, b: a - 2 * b),
    ("mul", lambda m, a, b: a * b), ("div", lambda m, a, b: a / (b.abs() + 0.5)),
    ("matmul", lambda m, a, b: a @ b.t()), ("maximum", lambda m, a, b: m.maximum(a, b)),
    ("atan2", lambda m, a, b: m.atan2(a, b)), ("where", lambda m, a, b: m.where(a > b, a, b * 2)),
    ("lerp", lambda m, a, b: m.lerp(a, b, 0.3)), ("hypot", lambda m, a, b: m.hypot(a, b)),
]


def _program(seed):
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(5):
        if rng.random() < 0.5:
            steps.append(("u", UNARY[rng.integers(len(UNARY))][1], None))
        else:
            steps.append(("b", BINARY[rng.integers(len(BINARY))][1], int(rng.integers(3))))
    return steps


def _run(m, steps, leaves):
    vals = list(leaves)
    for kind, fn, k in steps:
        if kind == "u":
            vals.append(fn(m, vals[-1]))
        else:
            vals.append(fn(m, vals[-1], vals[k]))
    return (vals[-1] * vals[-1]).sum()


@pytest.mark.parametrize("seed", range(40))
def test_random_program_gradients_match_torch(seed):
    rng = np.random.default_rng(1000 + seed)
    arrays = [rng.uniform(-1, 1, size=(3, 3)) for _ in range(3)]
    steps = _program(seed)
    e = [ember.tensor(a, dtype=ember.float64, requires_grad=True) for a in arrays]
    t = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    le, lt = _run(ember, steps, e), _run(torch, steps, t)
    np.testing.assert_allclose(float(le), float(lt.detach()), rtol=1e-10)
    ge = ember.autograd.grad(le, e, allow_unused=True, create_graph=True)
    gt = torch.autograd.grad(lt, t, allow_unused=True, create_graph=True)
    for a, b in zip(ge, gt):
        if b is None:
            assert a is None or np.allclose(a.detach().numpy(), 0)
            continue
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-8, atol=1e-10)
    # second order: the gradient of the gradient's sum of squares
    se = sum((g * g).sum() for g in ge if g is not None and g.requires_grad)
    st = sum((g * g).sum() for g in gt if g is not None and g.requires_grad)
    if isinstance(se, int) or isinstance(st, int):
        return
    he = ember.autograd.grad(se, e, allow_unused=True, materialize_grads=True)
    ht = torch.autograd.grad(st, t, allow_unused=True, materialize_grads=True)
    for a, b in zip(he, ht):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-7, atol=1e-9)


def test_inplace_and_views_match_torch():
    def prog(m, a, b):
        x = a.clone()
        x[0] = b[1] * 2
        x[1:].mul_(b[1:])
        v = x[:, 1]
        v.mul_(3)
        x.add_(a)
        x.mul_(b[0])
        w = x[2]
        w.exp_()  # saves its result: nothing may modify x after this
        return (x ** 2).sum()

    arr = np.random.default_rng(3).uniform(-1, 1, size=(2, 3, 3))
    e = [ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in arr]
    t = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in arr]
    prog(ember, *e).backward()
    prog(torch, *t).backward()
    for a, b in zip(e, t):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10)
