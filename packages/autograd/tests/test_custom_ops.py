"""ember.library custom ops under autograd: recorded through the core's hook like built-ins, with
the backward given to register_autograd (torch's contract), checked by finite differences.

One op is compiled at test time (forward and backward in C++, <ember/extension.h>); the tests
that need it skip where no C++ compiler or Python headers are installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import library
from ember.autograd import gradcheck, gradgradcheck
from ember.utils import cpp_extension

_NO_BUILD = cpp_extension._build_unavailable_reason()
needs_compiler = pytest.mark.skipif(_NO_BUILD is not None, reason=str(_NO_BUILD))

# y = tanh(alpha * x); dx = g * alpha * (1 - y^2), from the saved output
TANH_SCALE = r"""
#include <cmath>

ember::Tensor tanh_scale(ember::Tensor x, double alpha) {
  x = x.contiguous();
  ember::Tensor y = ember::empty_like(x);
  EMBER_DISPATCH_FLOATING_TYPES(x.dtype(), "tanh_scale", [&] {
    const scalar_t* a = x.data_ptr<scalar_t>();
    scalar_t* o = y.data_ptr<scalar_t>();
    for (int64_t i = 0; i < y.numel(); ++i) o[i] = std::tanh(static_cast<scalar_t>(alpha) * a[i]);
  });
  return y;
}

ember::Tensor tanh_scale_backward(ember::Tensor grad, ember::Tensor y, double alpha) {
  EMBER_CHECK(grad.sizes() == y.sizes(), "tanh_scale_backward: grad has shape ", grad.sizes(),
              " but the output has shape ", y.sizes());
  grad = grad.contiguous(), y = y.contiguous();
  ember::Tensor dx = ember::empty_like(y);
  EMBER_DISPATCH_FLOATING_TYPES(y.dtype(), "tanh_scale_backward", [&] {
    const scalar_t *g = grad.data_ptr<scalar_t>(), *o = y.data_ptr<scalar_t>();
    scalar_t* d = dx.data_ptr<scalar_t>();
    for (int64_t i = 0; i < dx.numel(); ++i)
      d[i] = g[i] * static_cast<scalar_t>(alpha) * (1 - o[i] * o[i]);
  });
  return dx;
}
"""


@pytest.fixture(scope="session")
def tanh_scale_op(tmp_path_factory):
    ext = cpp_extension.load_inline(
        "ember_autograd_test_ext", TANH_SCALE, functions=["tanh_scale", "tanh_scale_backward"],
        build_directory=str(tmp_path_factory.mktemp("ember_extensions")))

    @library.custom_op("autograd_test::tanh_scale", mutates_args=())
    def tanh_scale(x: ember.Tensor, alpha: float = 1.0) -> ember.Tensor:
        return ext.tanh_scale(x, alpha)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.alpha = inputs[1]

    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return ext.tanh_scale_backward(grad, y, ctx.alpha), None

    tanh_scale.register_autograd(backward, setup_context=setup_context)
    return tanh_scale


@needs_compiler
def test_compiled_op_gradient_matches_finite_differences(tanh_scale_op):
    x = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: tanh_scale_op(t, 0.7), (x,))


@needs_compiler
def test_compiled_op_gradient_matches_the_composed_ops(tanh_scale_op):
    x = ember.randn(6, dtype=ember.float64, requires_grad=True)
    y = tanh_scale_op(x, alpha=1.5)
    assert y.grad_fn.name() == "GeneratedBackwardFor_autograd_test_tanh_scale_defaultBackward"
    (y * ember.arange(6.0, dtype=ember.float64)).sum().backward()
    x2 = x.detach().requires_grad_()
    (ember.tanh(1.5 * x2) * ember.arange(6.0, dtype=ember.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.detach().numpy(), np.tanh(1.5 * x.detach().numpy()),
                               rtol=1e-12)


@needs_compiler
def test_a_shape_error_in_the_compiled_backward_is_readable(tanh_scale_op):
    """A backward that hands the kernel a wrong shape gets the kernel's own message."""
    op = library.get_op("autograd_test::tanh_scale")
    good = op._backward
    op.register_autograd(lambda ctx, g: good(ctx, g[:-1]), setup_context=op._setup_context)
    try:
        x = ember.randn(3, dtype=ember.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"tanh_scale_backward: grad has shape \[2\] but "
                                               r"the output has shape \[3\]"):
            tanh_scale_op(x).sum().backward()
    finally:
        op.register_autograd(good, setup_context=op._setup_context)


def _python_op(name, backward=None, setup_context=None):
    """A custom op in ember ops: x * exp(y)."""
    op = library.custom_op(name, lambda x, y: x * ember.exp(y), mutates_args=(),
                           schema="(Tensor x, Tensor y) -> Tensor")
    if backward is not None:
        op.register_autograd(backward, setup_context=setup_context)
    return op


def _save_inputs(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _mul_exp_backward(ctx, grad):
    x, y = ctx.saved_tensors
    return grad * ember.exp(y), grad * x * ember.exp(y)


def test_backward_in_ember_ops_supports_double_backward():
    op = _python_op("autograd_test::mul_exp", _mul_exp_backward, _save_inputs)
    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    y = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(op, (x, y))
    assert gradgradcheck(op, (x, y))


def test_without_a_registered_backward_backward_raises_torchs_error():
    op = _python_op("autograd_test::no_grad_rule")
    x = ember.randn(2, requires_grad=True)
    out = op(x, ember.zeros(2))
    assert out.requires_grad  # recorded, so that backward cannot silently skip it
    with pytest.raises(RuntimeError, match=r"Trying to backward through "
                                           r"autograd_test\.no_grad_rule\.default but no autograd "
                                           r"formula was registered\. Please use "
                                           r"register_autograd to add one\."):
        out.sum().backward()


def test_a_wrong_number_of_gradients_is_an_error():
    op = _python_op("autograd_test::one_grad", lambda ctx, g: g, _save_inputs)
    x = ember.randn(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        op(x, ember.zeros(2)).sum().backward()


def test_not_recorded_without_grad():
    op = _python_op("autograd_test::plain", _mul_exp_backward, _save_inputs)
    x = ember.randn(2, requires_grad=True)
    with ember.no_grad():
        assert op(x, x).grad_fn is None
    assert op(ember.ones(2), ember.zeros(2)).requires_grad is False


def test_keyword_only_inputs_reach_setup_context():
    seen = {}

    def setup_context(ctx, inputs, output):
        seen["inputs"] = len(inputs)
        ctx.k = ctx.keyword_only_inputs["k"]

    op = library.custom_op("autograd_test::times_k", lambda x, *, k=2.0: x * k,
                           mutates_args=(), schema="(Tensor x, *, float k=2.0) -> Tensor")
    op.register_autograd(lambda ctx, g: g * ctx.k, setup_context=setup_context)
    x = ember.ones(3, requires_grad=True)
    op(x, k=5.0).sum().backward()
    assert seen["inputs"] == 1 and x.grad.tolist() == [5.0, 5.0, 5.0]


def test_mutating_ops_refuse_autograd():
    op = library.custom_op("autograd_test::fill_one_", lambda x: x.fill_(1), mutates_args=("x",),
                           schema="(Tensor(a0!) x) -> ()")
    with pytest.raises(RuntimeError, match="no autograd support"):
        op.register_autograd(lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="no autograd support"):
        op(ember.zeros(2, requires_grad=True))


def test_the_profiler_sees_the_op_by_name():
    op = _python_op("autograd_test::profiled", _mul_exp_backward, _save_inputs)
    x = ember.randn(3, requires_grad=True)
    with ember.autograd.profiler.profile() as prof:
        op(x, x)
    assert {a.key: a.count for a in prof.key_averages()}["autograd_test::profiled"] == 1
