"""ember.autograd.functional's argument checks, strict mode and strategies: values against
hand-derived derivatives, and every case side by side with torch.autograd.functional where torch
is installed (the same result, or the same exception class and message)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.functional as EF


def conv(lib, a):
    return lib.tensor(np.asarray(a, dtype=np.float64))


CASES = {
    "jacobian strict, constant output": lambda lib, F: F.jacobian(
        lambda x: lib.ones(2, dtype=x.dtype), conv(lib, [1.0, 2.0]), strict=True),
    "jacobian strict, unused input": lambda lib, F: F.jacobian(
        lambda x, y: x * 2, (conv(lib, [1.0, 2.0]), conv(lib, [1.0])), strict=True),
    "jacobian vectorize": lambda lib, F: F.jacobian(lambda x: x.sin(), conv(lib, [1.0, 2.0]),
                                                    vectorize=True),
    "jacobian forward-mode": lambda lib, F: F.jacobian(
        lambda x, y: (x.sin() * y, y.exp()), (conv(lib, [1.0, 2.0]), conv(lib, [3.0, 4.0])),
        vectorize=True, strategy="forward-mode"),
    "jacobian forward-mode unvectorized": lambda lib, F: F.jacobian(
        lambda x: x.sin(), conv(lib, [1.0, 2.0]), strategy="forward-mode"),
    "jacobian forward-mode create_graph": lambda lib, F: F.jacobian(
        lambda x: x.sin(), conv(lib, [1.0, 2.0]), strategy="forward-mode", create_graph=True),
    "jacobian bad strategy": lambda lib, F: F.jacobian(lambda x: x.sin(), conv(lib, [1.0]),
                                                       strategy="x"),
    "jacobian non-tensor output": lambda lib, F: F.jacobian(lambda x: 3.0, conv(lib, [1.0])),
    "jacobian non-tensor input": lambda lib, F: F.jacobian(lambda x: x, 3.0),
    "jacobian tuple with non-tensor": lambda lib, F: F.jacobian(
        lambda x, y: x, (conv(lib, [1.0]), 3.0)),
    "jvp v None, several elements": lambda lib, F: F.jvp(lambda x: x.sin(),
                                                         conv(lib, [1.0, 2.0])),
    "jvp v None, one element": lambda lib, F: F.jvp(lambda x: x.sin(), conv(lib, [1.0])),
    "jvp strict": lambda lib, F: F.jvp(lambda x: lib.ones(2, dtype=x.dtype),
                                       conv(lib, [1.0, 2.0]), conv(lib, [1.0, 2.0]),
                                       strict=True),
    "jvp tuples": lambda lib, F: F.jvp(
        lambda x, y: (x * y, y.exp()), (conv(lib, [1.0, 2.0]), conv(lib, [3.0, 4.0])),
        (conv(lib, [1.0, 0.0]), conv(lib, [0.0, 1.0]))),
    "vjp v None, several elements": lambda lib, F: F.vjp(lambda x: x.sin(),
                                                         conv(lib, [1.0, 2.0])),
    "vjp v of the wrong size": lambda lib, F: F.vjp(lambda x: x.sin(), conv(lib, [1.0, 2.0]),
                                                    conv(lib, [1.0, 2.0, 3.0])),
    "vjp v tuple of the wrong length": lambda lib, F: F.vjp(
        lambda x: (x.sin(), x), conv(lib, [1.0, 2.0]), (conv(lib, [1.0, 2.0]),)),
    "vjp create_graph": lambda lib, F: F.vjp(
        lambda x: x ** 3, conv(lib, [1.0, 2.0]).requires_grad_(), conv(lib, [1.0, 1.0]),
        create_graph=True)[1].requires_grad,
    "hessian of a vector function": lambda lib, F: F.hessian(lambda x: x.sin(),
                                                             conv(lib, [1.0, 2.0])),
    "hessian forward-mode outer": lambda lib, F: F.hessian(
        lambda x: (x ** 3).sum(), conv(lib, [1.0, 2.0]), vectorize=True,
        outer_jacobian_strategy="forward-mode"),
    "hessian of two inputs": lambda lib, F: F.hessian(
        lambda x, y: (x * y * x).sum(), (conv(lib, [1.0, 2.0]), conv(lib, [3.0, 4.0]))),
    "hvp": lambda lib, F: F.hvp(lambda x: (x ** 3).sum(), conv(lib, [1.0, 2.0]),
                                conv(lib, [1.0, 1.0])),
    "hvp of a tuple output": lambda lib, F: F.hvp(lambda x: (x.sum(), x.sum()),
                                                  conv(lib, [1.0, 2.0]), conv(lib, [1.0, 1.0])),
    "vhp strict, linear function": lambda lib, F: F.vhp(
        lambda x: x.sum(), conv(lib, [1.0, 2.0]), conv(lib, [1.0, 1.0]), strict=True),
}


def _show(r):
    if isinstance(r, (tuple, list)):
        return "(" + ", ".join(_show(x) for x in r) + ")"
    if hasattr(r, "detach"):
        return str((np.round(r.detach().numpy(), 10) + 0.0).tolist())
    return repr(r)


def _run(lib, F, case):
    try:
        return _show(case(lib, F))
    except Exception as e:  # the exception is the result compared
        msg = str(e).replace("torch.Size", "").replace("ember.Size", "")
        return f"{type(e).__name__}: {msg}"


@pytest.mark.parametrize("name", list(CASES))
def test_same_result_or_error_as_torch(name):
    torch = pytest.importorskip("torch")
    import torch.autograd.functional as TF

    assert _run(ember, EF, CASES[name]) == _run(torch, TF, CASES[name])


def test_values_against_hand_derivatives():
    x, y = conv(ember, [1.0, 2.0]), conv(ember, [3.0, 4.0])
    (jxx, jxy), (jyx, jyy) = EF.jacobian(lambda a, b: (a.sin() * b, b.exp()), (x, y),
                                         vectorize=True, strategy="forward-mode")
    np.testing.assert_allclose(jxx.numpy(), np.diag(np.cos([1.0, 2.0]) * [3.0, 4.0]))
    np.testing.assert_allclose(jxy.numpy(), np.diag(np.sin([1.0, 2.0])))
    np.testing.assert_array_equal(jyx.numpy(), np.zeros((2, 2)))
    np.testing.assert_allclose(jyy.numpy(), np.diag(np.exp([3.0, 4.0])))
    H = EF.hessian(lambda a: (a ** 3).sum(), x, vectorize=True,
                   outer_jacobian_strategy="forward-mode")
    np.testing.assert_allclose(H.numpy(), np.diag([6.0, 12.0]))
    out, jv = EF.jvp(lambda a: a.sin(), conv(ember, [0.5]))  # v may be omitted for one element
    np.testing.assert_allclose(jv.numpy(), np.cos([0.5]))


@pytest.mark.parametrize("call, msg", [
    (lambda: EF.vjp(lambda x: x.sin(), conv(ember, [1.0, 2.0])),
     "The vector v can only be None if the user-provided function returns a single Tensor with "
     "a single element."),
    (lambda: EF.jacobian(lambda x: ember.ones(2, dtype=x.dtype), conv(ember, [1.0]),
                         strict=True),
     "Output 0 of the user-provided function does not require gradients."),
    (lambda: EF.hessian(lambda x: x.sin(), conv(ember, [1.0, 2.0])),
     "The Tensor returned by the function given to hessian should contain a single element"),
    (lambda: EF.vhp(lambda x: x.sum(), conv(ember, [1.0]), conv(ember, [1.0]), strict=True),
     "found that the jacobian of the user-provided function with respect to input 0 is "
     "independent of the input"),
])
def test_errors_name_the_problem(call, msg):
    with pytest.raises(RuntimeError) as info:
        call()
    assert msg in str(info.value)
