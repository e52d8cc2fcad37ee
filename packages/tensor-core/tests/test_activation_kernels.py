"""The vectorised float32 erf (kernels/vexp.h) against libm's erf (math.erf, in double), and the
fused GELU kernels (ops/activation.cpp: gelu, gelu_backward) against NumPy, math.erf and
math.erfc."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(23)
C = ember._C
_erf = np.vectorize(math.erf)


def _ulps(got, ref):
    """|got - ref| in units of float32's spacing at ref."""
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / spacing


def test_erf_float32_within_a_few_ulp_of_libm():
    # both branches, the switch between them at 0.921875, the tails where erf rounds to +-1,
    # and tiny (subnormal) arguments
    grid = np.concatenate([np.linspace(-7, 7, 200_001), np.linspace(0.9, 0.95, 20_001),
                           np.geomspace(1e-44, 8, 50_001), -np.geomspace(1e-44, 8, 50_001),
                           RNG.standard_normal(50_000) * 2]).astype(np.float32)
    ref = _erf(grid.astype(np.float64))
    got = ember.tensor(grid).erf().numpy()
    assert got.dtype == np.float32
    assert _ulps(got, ref).max() <= 3


def test_erf_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.9, 1e30, -1e30], dtype=np.float32)
    got = ember.tensor(x).erf().numpy()
    np.testing.assert_array_equal(got[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(got[1]) and not np.signbit(got[0])
    assert np.isnan(got[4])
    np.testing.assert_array_equal(got[5:], np.array([_erf(3.9), 1.0, -1.0], dtype=np.float32))


def test_erf_float64_is_libm():
    """float64 erf is libm's (within the 4 ulps of glibc's vector erf, which the contiguous
    loop calls where the build has it), not float32's approximation."""
    x = np.concatenate([np.linspace(-6, 6, 1001), [0.0, -0.0, np.inf, -np.inf]])
    got, want = ember.tensor(x).erf().numpy(), _erf(x)
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np.float64).eps, atol=0)
    np.testing.assert_array_equal(np.signbit(got[-4:]), [False, True, False, True])


def _gelu_ref(x, approximate):
    if approximate == "none":
        return x * 0.5 * (1 + _erf(x / math.sqrt(2)))
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _gelu_grad_ref(x, approximate):
    if approximate == "none":
        return 0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    k = math.sqrt(2 / math.pi)
    t = np.tanh(k * (x + 0.044715 * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-14), (np.float32, 2e-6)])
def test_gelu_kernels_match_the_formulas(approximate, dtype, tol):
    # 100_003 elements: several parallel chunks and a tail; a transposed (strided) input
    x = (RNG.standard_normal((317, 316)) * 4).astype(dtype)
    x.flat[:6] = [0.0, -0.0, 12.0, -12.0, 40.0, -40.0]
    xt = ember.tensor(x).t()
    y = C.gelu(xt, approximate=approximate)
    assert y.dtype == xt.dtype and y.shape == xt.shape
    ref = _gelu_ref(x.T.astype(np.float64), approximate)
    np.testing.assert_allclose(y.numpy(), ref, rtol=tol, atol=tol)
    g = RNG.standard_normal(x.T.shape).astype(dtype)
    gi = C.gelu_backward(ember.tensor(g), xt, approximate=approximate)
    ref_g = g * _gelu_grad_ref(x.T.astype(np.float64), approximate)
    np.testing.assert_allclose(gi.numpy(), ref_g, rtol=tol * 4, atol=tol * 4)


def test_gelu_float32_keeps_relative_accuracy_in_the_negative_tail():
    # The float kernel takes Phi(x) from erfc for x < 0 instead of 1 + erf(x/sqrt2), which
    # cancels (torch's GELU is 0 below x = -5.9): a few ulp everywhere up to |x| = 13, where Phi
    # would turn denormal and is flushed to 0. Oracle: math.erfc in double.
    x = np.concatenate([np.linspace(-13, 13, 40_001), RNG.standard_normal(20_000) * 3,
                        [0.0, 1e-30, -1e-30, 0.921875]]).astype(np.float32)
    xd = x.astype(np.float64)
    cdf = 0.5 * np.vectorize(math.erfc)(-xd / math.sqrt(2))
    pdf = np.exp(-0.5 * xd * xd) / math.sqrt(2 * math.pi)
    forward = C.gelu(ember.tensor(x)).numpy()
    assert _ulps(forward, xd * cdf).max() <= 8
    grad = C.gelu_backward(ember.ones(x.shape), ember.tensor(x)).numpy()
    # (relative to the terms' size: near the derivative's root, -0.7518, cdf + x pdf cancels)
    scale = np.abs(cdf) + np.abs(xd * pdf)
    assert (np.abs(grad.astype(np.float64) - (cdf + xd * pdf)) / scale).max() <= 1e-6
    beyond = C.gelu(ember.tensor([-13.5, -100.0, -1e30, 13.5, 1e30], dtype=ember.float32))
    np.testing.assert_array_equal(beyond.numpy(), np.float32([-0.0, -0.0, -0.0, 13.5, 1e30]))
    assert np.signbit(beyond.numpy()[:3]).all()  # (the product of a negative x and Phi = +0)
    special = C.gelu(ember.tensor([np.inf, -np.inf, np.nan], dtype=ember.float32)).numpy()
    assert special[0] == np.inf and np.isnan(special[1]) and np.isnan(special[2])


def test_gelu_reduced_floats_round_once():
    x = RNG.standard_normal(1000).astype(np.float32) * 3
    for dt in (ember.float16, ember.bfloat16):
        xe = ember.tensor(x).to(dt)
        ref = C.gelu(xe.float()).to(dt)
        got = C.gelu(xe)
        assert got.dtype == dt
        np.testing.assert_array_equal(got.float().numpy(), ref.float().numpy())


def test_gelu_errors():
    x = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        C.gelu(x, approximate="erf")
    with pytest.raises(NotImplementedError, match="\"GeluKernelImpl\" not implemented for 'Long'"):
        C.gelu(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"gelu_backward: expected grad_output of size \[2\]"):
        C.gelu_backward(ember.ones(3), x)


def test_gelu_matches_torch():
    torch = pytest.importorskip("torch")
    x = (RNG.standard_normal(4096) * 5).astype(np.float32)
    for approximate in ("none", "tanh"):
        want = torch.nn.functional.gelu(torch.from_numpy(x), approximate=approximate).numpy()
        got = C.gelu(ember.tensor(x), approximate=approximate).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
