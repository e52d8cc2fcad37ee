"""ember.binomial (torch.binomial): draws against the exact binomial pmf, the edge values and
errors torch gives, and the generator."""

import math

import numpy as np
import pytest

import ember


def pmf(n, p):
    return np.array([math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)])


# both samplers: inversion (n * min(p, 1-p) < 10) and BTRS rejection, and p > 0.5 (flipped)
@pytest.mark.parametrize("n,p", [(10, 0.5), (7, 0.05), (40, 0.2), (200, 0.3), (60, 0.85),
                                 (1000, 0.97)])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_draws_follow_the_binomial_pmf(n, p, dtype):
    draws = 40000
    g = ember.Generator().manual_seed(n)
    s = ember.binomial(ember.full((draws,), float(n), dtype=dtype),
                       ember.full((draws,), p, dtype=dtype), generator=g)
    assert s.dtype == dtype and s.shape == (draws,)
    k = s.numpy().astype(np.int64)
    assert np.array_equal(k, s.numpy()) and k.min() >= 0 and k.max() <= n
    # chi-square over the cells with an expected count of at least 20 (the rest pooled)
    expected = pmf(n, p) * draws
    observed = np.bincount(k, minlength=n + 1).astype(np.float64)
    big = expected >= 20
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    chi2 = (((obs - exp) ** 2)[keep] / exp[keep]).sum()
    dof = keep.sum() - 1
    assert chi2 < dof + 6 * math.sqrt(2 * dof), (chi2, dof)  # ~6 sigma: a real bias fails


def test_edge_values_as_torch():
    count = ember.tensor([5.0, 5.0, -1.0, 0.0, 5.0, math.inf, 5.0])
    prob = ember.tensor([0.0, 1.0, 0.5, 0.5, 1.5, 0.5, math.nan])
    out = ember.binomial(count, prob)
    assert out[:5].tolist() == [0.0, 5.0, 0.0, 0.0, 5.0]
    assert math.isnan(out[5].item()) and math.isnan(out[6].item())


def test_broadcasts_and_keeps_dtype():
    out = ember.binomial(ember.tensor([10.0]), ember.tensor([0.5, 0.1, 0.9]))
    assert out.shape == (3,) and out.dtype == ember.float32
    out = ember.binomial(ember.ones(2, 3, dtype=ember.float64) * 4,
                         ember.full((2, 3), 0.3, dtype=ember.float64))
    assert out.shape == (2, 3) and out.dtype == ember.float64


def test_errors_as_torch():
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for "
                                         "count, got: Long"):
        ember.binomial(ember.tensor([10]), ember.tensor([0.5]))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        ember.binomial(ember.tensor([10.0]), ember.tensor([0.5], dtype=ember.float64))
    with pytest.raises(NotImplementedError, match="\"binomial_cpu\" not implemented for 'Half'"):
        ember.binomial(ember.tensor([10.0], dtype=ember.float16),
                       ember.tensor([0.5], dtype=ember.float16))
    with pytest.raises(TypeError):
        ember.binomial(ember.tensor([10.0]), 0.5)


def test_generator_reproduces_and_global_seed_too():
    def draw(**kw):
        return ember.binomial(ember.full((64,), 30.0), ember.full((64,), 0.4), **kw)

    a = draw(generator=ember.Generator().manual_seed(3))
    b = draw(generator=ember.Generator().manual_seed(3))
    c = draw(generator=ember.Generator().manual_seed(4))
    assert ember.equal(a, b) and not ember.equal(a, c)
    ember.manual_seed(9)
    d = draw()
    ember.manual_seed(9)
    assert ember.equal(d, draw())
