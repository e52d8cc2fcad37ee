"""_softmax_backward_data / _log_softmax_backward_data against NumPy, over dims and dtypes."""

import numpy as np
import pytest

import ember

C = ember._C


def _softmax(x, d):
    e = np.exp(x - x.max(axis=d, keepdims=True))
    return e / e.sum(axis=d, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("log", [False, True])
def test_against_numpy(dim, log):
    rng = np.random.default_rng(dim % 3 + 10 * log)
    x = rng.standard_normal((3, 4, 5))
    g = rng.standard_normal((3, 4, 5))
    y = np.log(_softmax(x, dim)) if log else _softmax(x, dim)
    if log:
        ref = g - np.exp(y) * g.sum(axis=dim, keepdims=True)
        got = C._log_softmax_backward_data(ember.tensor(g), ember.tensor(y), dim, ember.float64)
    else:
        ref = y * (g - (g * y).sum(axis=dim, keepdims=True))
        got = C._softmax_backward_data(ember.tensor(g), ember.tensor(y), dim, ember.float64)
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-12)


def test_dtypes_layouts_and_errors():
    rng = np.random.default_rng(0)
    y = np.log(_softmax(rng.standard_normal((6, 5)), 0)).astype(np.float32)
    g = rng.standard_normal((5, 6)).astype(np.float32)
    gt = ember.tensor(g).t()  # non-contiguous grad
    got = C._log_softmax_backward_data(gt, ember.tensor(y), 0, ember.float32)
    np.testing.assert_allclose(got.numpy(), g.T - np.exp(y) * g.T.sum(0, keepdims=True), rtol=1e-5,
                               atol=1e-6)
    half = C._log_softmax_backward_data(gt.to(ember.bfloat16), ember.tensor(y).to(ember.bfloat16),
                                        0, ember.bfloat16)
    assert half.dtype == ember.bfloat16
    assert C._softmax_backward_data(ember.zeros(0, 3), ember.zeros(0, 3), 1, None).shape == (0, 3)
    with pytest.raises(RuntimeError, match="of one size"):
        C._softmax_backward_data(ember.zeros(2, 3), ember.zeros(3, 2), 1, None)
    with pytest.raises(RuntimeError, match="one dtype"):
        C._softmax_backward_data(ember.zeros(2, 3), ember.zeros(2, 3).double(), 1, None)
    with pytest.raises(IndexError):
        C._softmax_backward_data(ember.zeros(2, 3), ember.zeros(2, 3), 2, None)
