"""out= tensors of another shape than the result, as torch's resize_output: the element-wise
functions resize them to the result's shape (with torch's deprecation warning when they held
elements) after checking the dtype; the in-place forms keep torch's shape error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

X = np.array([[-1.5, 0.25, 2.0], [0.5, np.nan, 4.0]], dtype=np.float32)
CASES = {
    "exp": lambda x, out: ember.exp(x, out=out),
    "add": lambda x, out: ember.add(x, 1.5, out=out),
    "add_alpha": lambda x, out: ember.add(x, x, alpha=0.5, out=out),
    "sub_int_alpha": lambda x, out: ember.sub(x.long(), x.long(), alpha=2, out=out.long()),
    "mul_broadcast": lambda x, out: ember.mul(x, x[0], out=out),
    "clamp": lambda x, out: ember.clamp(x, -1.0, 1.0, out=out),
    "lerp": lambda x, out: ember.lerp(x, x * 2, 0.25, out=out),
    "nan_to_num": lambda x, out: ember.nan_to_num(x, 7.0, out=out),
    "logit": lambda x, out: ember.logit(x.abs() / 5, 1e-3, out=out),
}


def values(t):
    return t.numpy()


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("out_shape", [(5,), (1, 3), (2, 3, 1), (0,)])
def test_out_of_another_shape_takes_the_results(name, out_shape):
    fn = CASES[name]
    x = ember.from_numpy(X.copy())
    want = fn(x, ember.empty(2, 3))  # an out of the right shape
    out = ember.full(out_shape, 9.0)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        r = fn(x, out)
    assert tuple(r.shape) == (2, 3)
    np.testing.assert_array_equal(values(r), values(want))
    if name != "sub_int_alpha":  # that case's out is a converted copy
        assert r is out
    resized = [w for w in got if "was resized since it had shape" in str(w.message)]
    assert len(resized) == (0 if 0 in out_shape else 1), [str(w.message) for w in got]


def test_the_dtype_is_checked_before_resizing():
    out = ember.empty(5, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ember.add(ember.ones(3), 0.5, out=out)
    assert tuple(out.shape) == (5,)


def test_in_place_forms_keep_the_shape_error():
    for fn in (lambda t: t.add_(ember.ones(2, 3)), lambda t: t.lerp_(ember.ones(2, 3), 0.5),
               lambda t: ember.add(t, ember.ones(2, 3), out=t)):
        t = ember.ones(3)
        with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                               r"broadcast shape \[2, 3\]"):
            fn(t)


def test_matches_torch(torch):
    torch_cases = {
        "exp": lambda x, out: torch.exp(x, out=out),
        "mul_broadcast": lambda x, out: torch.mul(x, x[0], out=out),
        "clamp": lambda x, out: torch.clamp(x, -1.0, 1.0, out=out),
    }
    for name, shape in (("exp", (5,)), ("mul_broadcast", (2, 3, 1)), ("clamp", (0,))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = CASES[name](ember.from_numpy(X.copy()), ember.full(shape, 9.0))
            want = torch_cases[name](torch.from_numpy(X.copy()), torch.full(shape, 9.0))
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(values(got), want.numpy(), rtol=1e-6)  # exp: its own ulp
