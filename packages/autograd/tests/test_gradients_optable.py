"""gradcheck and gradgradcheck (float64) of every differentiable elementwise op, driven by the
core's op table (``ember._C._op_table()``) and op database (``ember.testing.opdb``): a new table op with a
floating result and no gradient entry fails ``test_every_float_table_op_has_a_formula``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import ember
from ember.autograd import (
    _formulas,  # noqa: F401
    gradcheck,
    gradgradcheck,
)
from ember.autograd._engine import _FORMULAS
from ember.testing import opdb  # the core's op database, installed with ember-tensor

FLOAT_KINDS = {"FLOAT", "FLOAT_ONLY", "SAME", "ARITH", "TRUEDIV", "FLOAT2", "FLOAT_ONLY2"}
# Gradient 0 almost everywhere, with jumps: finite differences straddling a jump disagree, and
# the op database samples integer-valued points for some of them.
STEP_OPS = {"floor", "ceil", "trunc", "sign", "round", "floor_divide", "div_trunc"}
# Kinks/jumps where samples may land (ties of maximum, remainder's jumps): checked on inputs
# kept away from them below instead.
KINKED = {"remainder", "fmod", "maximum", "minimum", "fmax", "fmin", "abs", "relu", "copysign",
          "frac"}


# No gradient for the first operand, as in PyTorch (zeta's order): checked in
# test_gradients_api_ops.py with the second operand only.
SECOND_OPERAND_ONLY = {"special_zeta", "igamma", "igammac"}
# No derivative, as in torch: backward raises
# (test_ops_without_a_derivative_in_torch_raise_at_backward).
NO_GRADIENT = {"special_" + n for n in _formulas.ORTHOGONAL_POLYNOMIALS + _formulas.BESSEL_AIRY}


def _float_table_ops():
    return [r["name"] for r in ember._C._op_table() if r["kind"] in FLOAT_KINDS]


def _bound(name):
    """The name a table op is bound and hooked under (torch.special's: _special_<f>)."""
    return "_" + name if name.startswith("special_") else name


def test_every_float_table_op_has_a_formula():
    missing = [n for n in _float_table_ops() if _bound(n) not in _FORMULAS]
    assert not missing, f"ops without a gradient formula: {missing}"


def test_every_float_table_op_has_an_inplace_formula():
    missing = [n for n in _float_table_ops() if _bound(n) + "_" not in _FORMULAS]
    assert not missing, f"in-place ops without a gradient formula: {missing}"


@pytest.mark.parametrize("name", sorted(NO_GRADIENT))
def test_ops_without_a_derivative_in_torch_give_results_without_grad(name):
    # torch: not differentiable, so the result does not require grad and backward through it is
    # "does not require grad"; ops on it that need a gradient elsewhere still work
    x = ember.tensor([0.3, 0.5], dtype=ember.float64, requires_grad=True)
    fn = getattr(ember.special, name[len("special_"):])
    y = fn(x, 3) if name.removeprefix("special_") in _formulas.ORTHOGONAL_POLYNOMIALS else fn(x)
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()
    (y.detach() * x).sum().backward()
    assert x.grad is not None
    # the in-place form on a tensor with history says why it stops
    z = x * 1.0
    getattr(ember._C, "_" + name + "_")(*((z, 3) if y.shape and "polynomial" in name else (z,)))
    with pytest.raises(NotImplementedError, match=f"the derivative for '{name}' is not"):
        z.sum().backward()


def _samples(op, limit=4):
    """Small float64 samples of `op` (broadcast, scalar and non-contiguous ones included)."""
    out = []
    for s in op.sample_inputs("float64"):
        arrays = [a for a in s.args if hasattr(a, "shape")]
        if any(a.size == 0 for a in arrays) or any(a.size > 24 for a in arrays):
            continue
        out.append(s)
    # keep a variety: the first few and the non-contiguous ones
    nonc = [s for s in out if any(lay != "contiguous" for lay in s.layouts)]
    return (out[:limit] + nonc[:2])


def _args(op, sample):
    if isinstance(op, opdb.ParamOpInfo):
        args = op.args_for(sample, "float64")
    else:
        args = sample.tensors(("float64",) * len(sample.args))
    return tuple(a.detach().requires_grad_(True) if isinstance(a, ember.Tensor)
                 and a.dtype == ember.float64 else a for a in args)


def _call(op, sample):
    if op.call is not None:
        return lambda *a: op.call(a, sample.kwargs)
    return op.fn


def _smooth_ops():
    ops = [op for name, op in sorted(opdb.OPS.items())
           if op.kind in FLOAT_KINDS and op.supports("float64") and name not in STEP_OPS
           and name not in KINKED and name not in SECOND_OPERAND_ONLY
           and name not in NO_GRADIENT]
    ops += [op for name, op in opdb.PARAM_OPS.items() if name not in STEP_OPS]
    return ops


@pytest.mark.parametrize("op", _smooth_ops(), ids=lambda op: op.name)
def test_gradcheck_table_op(op):
    n = 0
    for sample in _samples(op):
        fn = _call(op, sample)
        args = _args(op, sample)
        if not any(isinstance(a, ember.Tensor) and a.requires_grad for a in args):
            continue
        try:
            with ember.no_grad():
                fn(*args)
        except (RuntimeError, TypeError, ValueError):
            continue  # a sample of an error path
        assert gradcheck(fn, args), sample
        assert gradgradcheck(fn, args), sample
        n += 1
    assert n > 0


def _close(a, b):
    return np.allclose(a.detach().numpy(), b.detach().numpy(), equal_nan=True)


KINK_CASES = {
    "abs": lambda a: a.abs(),
    "relu": lambda a: a.relu(),
    "frac": lambda a: a.frac(),
    "maximum": lambda a: ember.maximum(a, a.detach() * 0 + 0.05),
    "minimum": lambda a: ember.minimum(a, a.detach() * 0 + 0.05),
    "fmax": lambda a: ember.fmax(a, a.detach() * 0 + 0.05),
    "fmin": lambda a: ember.fmin(a.detach() * 0 + 0.05, a),
    "remainder": lambda a: ember.remainder(a, 2.3),
    "fmod": lambda a: ember.fmod(a, 2.3),
    "copysign": lambda a: ember.copysign(a, -1.0),
}


@pytest.mark.parametrize("name", sorted(KINKED))
def test_gradcheck_kinked_op_away_from_kinks(name):
    x = ember.tensor([[-1.3, 0.7, 2.2], [0.4, -0.45, 1.6]], dtype=ember.float64,
                     requires_grad=True)
    assert gradcheck(KINK_CASES[name], (x,))
    assert gradgradcheck(KINK_CASES[name], (x,))
    y = ember.tensor([[0.6, -1.7, 0.35], [1.9, 0.8, -0.6]], dtype=ember.float64,
                     requires_grad=True)
    if name in ("maximum", "minimum", "fmax", "fmin", "remainder", "fmod", "copysign"):
        f = getattr(ember, name)
        yy = y if name not in ("remainder", "fmod") else (y.abs() + 0.5).detach().requires_grad_()
        assert gradcheck(f, (x, yy))
        assert gradgradcheck(f, (x, yy))


@pytest.mark.parametrize("name", sorted(STEP_OPS - {"floor_divide", "div_trunc"}))
def test_step_ops_have_zero_gradient(name):
    x = ember.tensor([-1.3, 0.7, 2.2], dtype=ember.float64, requires_grad=True)
    getattr(ember, name)(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_integer_results_are_not_differentiable():
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    for r in (x > 0, x == x, x.isnan(), x.argmax(), x.signbit()):
        assert not r.requires_grad and r.grad_fn is None


@pytest.mark.parametrize("name", sorted(n for n in _float_table_ops()
                                        if n not in STEP_OPS and n not in SECOND_OPERAND_ONLY
                                        and n not in NO_GRADIENT))
def test_inplace_variant_matches_out_of_place(name):
    op = opdb.OPS.get(name)
    if op is None or not op.supports("float64"):
        pytest.skip("no opdb entry")
    sample = next(s for s in _samples(op, 8) if all(
        getattr(a, "shape", None) == (3, 4) for a in s.args if hasattr(a, "shape")) or True)
    args = _args(op, sample)
    if not isinstance(args[0], ember.Tensor) or (len(args) > 1 and isinstance(args[1], ember.Tensor)
                                                 and args[1].shape != args[0].shape):
        pytest.skip("in-place needs self of the result's shape")
    ref = [a.detach().clone().requires_grad_() if isinstance(a, ember.Tensor) else a for a in args]
    out = getattr(ember._C, _bound(name))(*ref)
    out.sum().backward()
    leaf = args[0]
    x = leaf * 1.0
    getattr(x, _bound(name) + "_")(*args[1:])
    x.sum().backward()
    assert _close(leaf.grad, ref[0].grad)
    for a, r in itertools.islice(zip(args[1:], ref[1:]), 1):
        if isinstance(a, ember.Tensor):
            assert _close(a.grad, r.grad)


# ---------------------------------------------------------------------------------------------
# where the rules are PyTorch's rather than the derivative's: ties, NaN, clamps, 0


def _grads(fn, *values):
    args = [ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in values]
    fn(*args).sum().backward()
    return [a.grad.tolist() for a in args]


def _torch_grads(torch, name, *values, **kw):
    args = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    getattr(torch, name)(*args, **kw).sum().backward()
    return [a.grad.tolist() for a in args]


NAN = float("nan")
RULE_CASES = {  # name: (inputs, keywords, expected gradients)
    # a tie goes to the first operand; a NaN loses to a number; two NaNs: the first
    "fmax": (([1.0, NAN, 2.0, NAN, 0.5], [1.0, 3.0, NAN, NAN, 0.7]), {},
             [[1.0, 0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0, 1.0]]),
    "fmin": (([1.0, NAN, 2.0, NAN, 0.5], [1.0, 3.0, NAN, NAN, 0.7]), {},
             [[1.0, 0.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 0.0, 0.0]]),
    # d/dx x log y = log y, also at x == 0, but 0 there when y <= 0
    "xlogy": (([0.0, 0.0, 0.0, 2.0], [2.0, 0.0, -1.0, 3.0]), {},
              [[math.log(2.0), 0.0, 0.0, math.log(3.0)], None]),
    # no gradient where the input was clamped to [eps, 1 - eps]
    "logit": (([0.05, 0.3, 0.95],), {"eps": 0.1}, [[0.0, 1.0 / (0.3 * 0.7), 0.0]]),
    "sinc": (([0.0, 0.5],), {}, [[0.0, -4.0 / math.pi]]),
}


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_gradient_rules(name):
    values, kw, want = RULE_CASES[name]
    got = _grads(lambda *a: getattr(ember, name)(*a, **kw), *values)
    for g, w in zip(got, want):
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_gradient_rules_match_torch(name):
    torch = pytest.importorskip("torch")
    values, kw, want = RULE_CASES[name]
    got = _grads(lambda *a: getattr(ember, name)(*a, **kw), *values)
    ref = _torch_grads(torch, name, *values, **kw)
    for g, r, w in zip(got, ref, want):
        if w is not None:
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-15)


def test_sinc_double_backward_at_zero_is_finite():
    x = ember.tensor([0.0, 0.5, -1.5], dtype=ember.float64, requires_grad=True)
    (gx,) = ember.autograd.grad(x.sinc().sum(), x, create_graph=True)
    (ggx,) = ember.autograd.grad(gx.sum(), x)
    assert np.isfinite(ggx.tolist()).all()
    assert gradgradcheck(lambda t: t.sinc(), (x[1:].detach().requires_grad_(),))
