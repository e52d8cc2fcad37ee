"""ember.distributions against oracles that need no torch: closed forms written with the math
module, finite differences, Monte Carlo moments with fixed seeds and generous tolerances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _distribution_cases import CONSTRAINTS, cases
from _distribution_cases import transforms as transform_cases

import ember
import ember.distributions as D
from ember.autograd import gradcheck
from ember.distributions import _ops, constraints, transforms


def T(v, **kw):
    return ember.tensor(v, dtype=ember.float64, **kw)


def close(got, expected, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got.detach().numpy() if isinstance(got, ember.Tensor)
                                          else got), expected, rtol=rtol, atol=atol)


def test_reachable_from_import_ember():
    import subprocess
    import sys

    code = "import ember; print(ember.distributions.Normal.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Normal"


# --- special functions -------------------------------------------------------------------------

POINTS = [1e-4, 0.05, 0.5, 1.0, 1.5, 2.0, 3.7, 7.99, 8.0, 12.5, 100.0, 1e4, -0.5, -1.25, -3.6]


def test_lgamma_matches_math():
    close(_ops._lgamma(T(POINTS)), [math.lgamma(x) for x in POINTS], rtol=1e-13, atol=1e-13)
    close(_ops._lgamma(ember.tensor([0.5, 3.0])), [math.lgamma(0.5), math.log(2.0)], rtol=1e-6)


def test_digamma_is_the_derivative_of_lgamma():
    fd = [(math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)
          for x, h in ((x, 1e-5 * min(1.0, abs(x))) for x in POINTS)]
    close(_ops._digamma(T(POINTS)), fd, rtol=1e-7, atol=1e-6)
    close(_ops._digamma(T([1.0])), [-0.5772156649015329], rtol=1e-14)  # -Euler's constant
    assert math.isinf(float(_ops._digamma(T([0.0])))) and float(_ops._digamma(T([0.0]))) < 0


def test_trigamma_is_the_derivative_of_digamma():
    pos = T([0.05, 0.5, 1.0, 3.7, 12.5, 100.0])
    h = 1e-5
    fd = (_ops._digamma(pos + h) - _ops._digamma(pos - h)) / (2 * h)
    close(_ops._polygamma(1, pos), fd.numpy(), rtol=1e-6)
    close(_ops._polygamma(1, T([1.0])), [math.pi ** 2 / 6], rtol=1e-14)


def test_lgamma_gradient_is_digamma():
    x = T([0.3, 1.7, 9.0], requires_grad=True)
    assert gradcheck(_ops._lgamma, (x,))
    assert gradcheck(_ops._digamma, (x,))


def test_gammainc_closed_forms():
    xs = [0.01, 0.3, 1.0, 2.5, 9.0, 40.0]
    # P(1, x) = 1 - e^-x; P(3, x) = 1 - e^-x (1 + x + x^2/2); P(1/2, x) = erf(sqrt(x))
    close(_ops.special_gammainc(T([1.0] * 6), T(xs)), [1 - math.exp(-x) for x in xs],
          rtol=1e-12, atol=1e-15)
    close(_ops.special_gammainc(T([3.0] * 6), T(xs)),
          [1 - math.exp(-x) * (1 + x + x * x / 2) for x in xs], rtol=1e-11, atol=1e-15)
    close(_ops.special_gammainc(T([0.5] * 6), T(xs)), [math.erf(math.sqrt(x)) for x in xs],
          rtol=1e-12, atol=1e-15)


def test_finfo_fields():
    assert _ops.finfo(ember.float32).eps == 2.0 ** -23
    assert _ops.finfo(ember.float64).tiny == 2.0 ** -1022
    with pytest.raises(TypeError):
        _ops.finfo(ember.int64)


# --- closed forms ----------------------------------------------------------------------------

def test_normal_closed_forms():
    d = D.Normal(T([0.5, -1.0]), T([2.0, 0.3]))
    x = T([1.2, -0.4])
    close(d.log_prob(x), [-((xi - m) ** 2) / (2 * s * s) - math.log(s) - 0.5 * math.log(2 * math.pi)
                          for xi, m, s in zip([1.2, -0.4], [0.5, -1.0], [2.0, 0.3])])
    close(d.entropy(), [0.5 + 0.5 * math.log(2 * math.pi) + math.log(s) for s in (2.0, 0.3)])
    close(d.cdf(x), [0.5 * (1 + math.erf((xi - m) / (s * math.sqrt(2))))
                     for xi, m, s in zip([1.2, -0.4], [0.5, -1.0], [2.0, 0.3])])
    close(d.icdf(d.cdf(x)), [1.2, -0.4], rtol=1e-9)
    close(d.mean, [0.5, -1.0])
    close(d.variance, [4.0, 0.09])


def test_bernoulli_categorical_closed_forms():
    b = D.Bernoulli(probs=T([0.2, 0.7]))
    close(b.log_prob(T([1.0, 0.0])), [math.log(0.2), math.log(0.3)])
    close(b.entropy(), [-(p * math.log(p) + (1 - p) * math.log(1 - p)) for p in (0.2, 0.7)])
    close(b.variance, [0.16, 0.21])
    c = D.Categorical(probs=T([0.1, 0.6, 0.3]))
    close(c.log_prob(ember.tensor([0, 1, 2])), [math.log(0.1), math.log(0.6), math.log(0.3)])
    close(c.entropy(), -sum(p * math.log(p) for p in (0.1, 0.6, 0.3)))
    assert c.enumerate_support().tolist() == [0, 1, 2]
    # unnormalized probs and logits describe the same distribution
    close(D.Categorical(probs=T([1.0, 6.0, 3.0])).probs, [0.1, 0.6, 0.3])
    close(D.Categorical(logits=T([math.log(0.1), math.log(0.6), math.log(0.3)])).probs,
          [0.1, 0.6, 0.3])


def test_gamma_beta_dirichlet_closed_forms():
    a, r, x = 2.5, 1.5, 0.8
    g = D.Gamma(T(a), T(r))
    close(g.log_prob(T(x)), a * math.log(r) + (a - 1) * math.log(x) - r * x - math.lgamma(a))
    digamma_a = float(_ops._digamma(T(a)))
    close(g.entropy(), a - math.log(r) + math.lgamma(a) + (1 - a) * digamma_a)
    close(g.mean, a / r)
    close(g.variance, a / r ** 2)
    close(g.cdf(T(x)), float(_ops.special_gammainc(T(a), T(r * x))))
    c1, c0, y = 2.0, 3.5, 0.3
    b = D.Beta(T(c1), T(c0))
    log_beta = math.lgamma(c1) + math.lgamma(c0) - math.lgamma(c1 + c0)
    close(b.log_prob(T(y)), (c1 - 1) * math.log(y) + (c0 - 1) * math.log(1 - y) - log_beta)
    close(b.mean, c1 / (c1 + c0))
    close(b.variance, c1 * c0 / ((c1 + c0) ** 2 * (c1 + c0 + 1)))
    alpha = [0.5, 1.5, 3.0]
    v = [0.2, 0.3, 0.5]
    d = D.Dirichlet(T(alpha))
    expected = (math.lgamma(sum(alpha)) - sum(math.lgamma(ai) for ai in alpha)
                + sum((ai - 1) * math.log(vi) for ai, vi in zip(alpha, v)))
    close(d.log_prob(T(v)), expected)
    close(d.mean, [ai / 5.0 for ai in alpha])


def test_multivariate_normal_closed_forms():
    loc = [0.5, -1.0]
    cov = [[2.0, 0.6], [0.6, 1.0]]
    x = [1.0, 0.2]
    det = cov[0][0] * cov[1][1] - cov[0][1] ** 2
    inv = [[cov[1][1] / det, -cov[0][1] / det], [-cov[1][0] / det, cov[0][0] / det]]
    dx = [x[0] - loc[0], x[1] - loc[1]]
    maha = sum(dx[i] * inv[i][j] * dx[j] for i in range(2) for j in range(2))
    expected = -0.5 * maha - 0.5 * math.log(det) - math.log(2 * math.pi)
    for kw in [dict(covariance_matrix=T(cov)), dict(precision_matrix=T(inv)),
               dict(scale_tril=ember.linalg.cholesky(T(cov)))]:
        d = D.MultivariateNormal(T(loc), **kw)
        close(d.log_prob(T(x)), expected)
        close(d.entropy(), 1 + math.log(2 * math.pi) + 0.5 * math.log(det))
        close(d.covariance_matrix, cov)
        close(d.variance, [2.0, 1.0])
    low = D.LowRankMultivariateNormal(T(loc), T([[1.0], [0.6]]), T([1.0, 0.64]))
    close(low.covariance_matrix, cov)
    close(low.log_prob(T(x)), expected)


def test_counting_distributions_closed_forms():
    rate, k = 3.5, 4
    close(D.Poisson(T(rate)).log_prob(T(k)), k * math.log(rate) - rate - math.lgamma(k + 1))
    n, p = 10, 0.3
    close(D.Binomial(n, probs=T(p)).log_prob(T(k)),
          math.log(math.comb(n, k)) + k * math.log(p) + (n - k) * math.log(1 - p))
    counts, probs = [2, 1, 3], [0.2, 0.3, 0.5]
    coeff = math.factorial(6) / math.prod(math.factorial(c) for c in counts)
    close(D.Multinomial(6, probs=T(probs)).log_prob(T(counts)),
          math.log(coeff) + sum(c * math.log(q) for c, q in zip(counts, probs)))
    close(D.Geometric(probs=T(p)).log_prob(T(k)), k * math.log(1 - p) + math.log(p))
    close(D.Geometric(probs=T(p)).mean, (1 - p) / p)
    close(D.Binomial(n, probs=T(p)).variance, n * p * (1 - p))


def test_continuous_closed_forms():
    x = 1.3
    close(D.Exponential(T(2.0)).log_prob(T(x)), math.log(2.0) - 2.0 * x)
    close(D.Exponential(T(2.0)).entropy(), 1 - math.log(2.0))
    close(D.Laplace(T(0.5), T(2.0)).log_prob(T(x)), -math.log(4.0) - abs(x - 0.5) / 2.0)
    close(D.Uniform(T(-1.0), T(3.0)).log_prob(T(x)), -math.log(4.0))
    close(D.Uniform(T(-1.0), T(3.0)).entropy(), math.log(4.0))
    close(D.Cauchy(T(0.5), T(2.0)).log_prob(T(x)),
          -math.log(math.pi * 2.0 * (1 + ((x - 0.5) / 2.0) ** 2)))
    z = (x - 0.5) / 2.0
    close(D.Gumbel(T(0.5), T(2.0)).log_prob(T(x)), -math.log(2.0) - z - math.exp(-z))
    close(D.LogNormal(T(0.5), T(2.0)).log_prob(T(x)),
          -((math.log(x) - 0.5) ** 2) / 8.0 - math.log(2.0 * x) - 0.5 * math.log(2 * math.pi))
    close(D.HalfNormal(T(2.0)).log_prob(T(x)),
          math.log(2) - x * x / 8.0 - math.log(2.0) - 0.5 * math.log(2 * math.pi))
    df = 4.5
    close(D.StudentT(T(df), T(0.5), T(2.0)).log_prob(T(x)),
          math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
          - math.log(2.0) - (df + 1) / 2 * math.log1p(z * z / df))
    k = 3.0
    close(D.Chi2(T(k)).log_prob(T(x)), (k / 2 - 1) * math.log(x) - x / 2 - k / 2 * math.log(2)
          - math.lgamma(k / 2))


def test_independent_and_transformed():
    base = D.Normal(T([0.0, 1.0]), T([1.0, 2.0]))
    ind = D.Independent(base, 1)
    assert tuple(ind.batch_shape) == () and tuple(ind.event_shape) == (2,)
    x = T([0.3, -0.2])
    close(ind.log_prob(x), float(base.log_prob(x).sum()))
    # LogNormal is exp of a Normal: the change of variables subtracts log|d exp(x)/dx| = x
    td = D.TransformedDistribution(D.Normal(T(0.5), T(2.0)), [transforms.ExpTransform()])
    close(td.log_prob(T(1.3)), float(D.LogNormal(T(0.5), T(2.0)).log_prob(T(1.3))))


def test_mixture_same_family():
    mix = D.MixtureSameFamily(D.Categorical(probs=T([0.3, 0.7])),
                              D.Normal(T([-1.0, 2.0]), T([0.5, 1.0])))
    x = 0.4
    dens = sum(w * math.exp(-((x - m) ** 2) / (2 * s * s)) / (s * math.sqrt(2 * math.pi))
               for w, m, s in [(0.3, -1.0, 0.5), (0.7, 2.0, 1.0)])
    close(mix.log_prob(T(x)), math.log(dens))
    close(mix.mean, 0.3 * -1.0 + 0.7 * 2.0)


# --- KL divergence -----------------------------------------------------------------------------

def test_kl_normal_closed_form():
    p, q = D.Normal(T(0.5), T(2.0)), D.Normal(T(-1.0), T(0.7))
    close(D.kl_divergence(p, q),
          math.log(0.7 / 2.0) + (4.0 + 1.5 ** 2) / (2 * 0.49) - 0.5)


def test_kl_matches_monte_carlo_for_every_registered_pair():
    first, second = dict(cases(ember, 0)), dict(cases(ember, 1))
    checked = 0
    for a in first:
        for b in second:
            p, q = first[a](), second[b]()
            try:
                kl = D.kl_divergence(p, q)
            except NotImplementedError:
                continue
            if not bool(ember.isfinite(kl).all()):
                continue
            ember.manual_seed(0)
            batch = ember.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
            x = p.expand(batch).sample((40000,))
            diff = (p.log_prob(x) - q.log_prob(x)).detach().numpy()
            if not np.isfinite(diff).all():
                continue
            mc, se = diff.mean(0), diff.std(0) / math.sqrt(diff.shape[0])
            np.testing.assert_allclose(kl.detach().numpy(), mc, atol=6 * se.max() + 1e-3,
                                       err_msg=f"kl({a}, {b})")
            checked += 1
    assert checked >= 40


def test_register_kl():
    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return ember.zeros(p.batch_shape, dtype=p.loc.dtype) + 42.0

    try:
        assert float(D.kl_divergence(MyNormal(T(0.0), T(1.0)), D.Normal(T(0.0), T(2.0)))) == 42.0
        # the most specific registration wins; the base pair keeps its own
        assert float(D.kl_divergence(D.Normal(T(0.0), T(1.0)), D.Normal(T(0.0), T(1.0)))) == 0.0
    finally:
        D.kl._REGISTRY.pop((MyNormal, D.Normal))
        D.kl._DISPATCH_CACHE.clear()
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Normal(T(0.0), T(1.0)), D.Categorical(probs=T([0.5, 0.5])))


# --- sampling ----------------------------------------------------------------------------------

MOMENT_CASES = [name for name, _ in cases(ember) if name not in (
    # heavy tails or no finite moments; their samplers are checked against torch's stream
    "Cauchy", "HalfCauchy", "Pareto", "InverseGamma", "GeneralizedPareto",
    # circular: the mean of the wrapped samples is not loc
    "VonMises")]


@pytest.mark.parametrize("name", MOMENT_CASES)
def test_sample_moments(name):
    d = dict(cases(ember))[name]()
    try:
        mean, var = d.mean.numpy(), d.variance.numpy()
    except NotImplementedError:
        pytest.skip(f"{name} has no closed-form moments")
    ember.manual_seed(0)
    n = 40000
    s = d.sample((n,)).double().numpy()
    finite = np.isfinite(mean) & np.isfinite(var)
    se = np.sqrt(np.where(finite, var, 1.0) / n)
    np.testing.assert_array_less(np.where(finite, np.abs(s.mean(0) - mean), 0),
                                 6 * se + 1e-9)
    ratio = np.where(finite & (var > 0), s.var(0) / np.where(var > 0, var, 1), 1.0)
    np.testing.assert_allclose(ratio, 1.0, atol=0.1)
    support = d.support
    if support.is_discrete or support.event_dim == 0 or name.startswith("Multi"):
        assert bool(support.check(ember.tensor(s[:100])).all())


@pytest.mark.parametrize("alpha", [0.05, 0.4, 1.0, 2.5, 30.0, 2000.0])
def test_gamma_sampler_moments(alpha):
    ember.manual_seed(1)
    n = 50000
    s = _ops.standard_gamma(ember.full((n,), alpha, dtype=ember.float64)).numpy()
    assert (s > 0).all() or alpha < 0.1  # tiny alphas underflow to 0 as torch's before clamping
    assert abs(s.mean() - alpha) < 6 * math.sqrt(alpha / n)
    assert abs(s.var() / alpha - 1) < 0.1


@pytest.mark.parametrize("rate", [0.0, 0.3, 4.0, 9.9, 10.0, 57.0, 3000.0])
def test_poisson_sampler_moments(rate):
    ember.manual_seed(2)
    n = 40000
    s = _ops.poisson(ember.full((n,), rate, dtype=ember.float64)).numpy()
    assert (s == np.floor(s)).all() and (s >= 0).all()
    assert abs(s.mean() - rate) <= 6 * math.sqrt(max(rate, 1e-9) / n)
    if rate > 0:
        assert abs(s.var() / rate - 1) < 0.1


@pytest.mark.parametrize("count,prob", [(0, 0.3), (1, 0.5), (7, 0.2), (30, 0.9), (200, 0.4),
                                        (5000, 0.01), (12, 0.0), (12, 1.0)])
def test_binomial_sampler_moments(count, prob):
    ember.manual_seed(3)
    n = 40000
    s = _ops.binomial(ember.full((n,), float(count), dtype=ember.float64),
                      ember.full((n,), prob, dtype=ember.float64)).numpy()
    assert (s >= 0).all() and (s <= count).all() and (s == np.floor(s)).all()
    var = count * prob * (1 - prob)
    assert abs(s.mean() - count * prob) <= 6 * math.sqrt(var / n) + 1e-12
    if var > 0:
        assert abs(s.var() / var - 1) < 0.1


def test_samplers_return_on_degenerate_parameters():
    """No endless rejection loop on NaN or infinite parameters (torch's samplers do not return
    for poisson(inf) or binomial with NaN)."""
    nan, inf = math.nan, math.inf
    g = _ops.standard_gamma(T([0.0, -1.0, nan, inf, 1e-300]))
    assert g[:3].tolist() == [_ops.finfo(ember.float64).tiny] * 3 and g[3].item() == inf
    assert g[4].item() >= _ops.finfo(ember.float64).tiny
    p = _ops.poisson(T([inf, nan, 0.0]))
    assert p[0].item() == inf and math.isnan(p[1].item()) and p[2].item() == 0.0
    b = _ops.binomial(T([5.0, nan, inf, 3.0, 4.0]), T([nan, 0.5, 0.5, 0.0, 1.0]))
    assert [math.isnan(v) for v in b.tolist()] == [True, True, True, False, False]
    assert b[3:].tolist() == [0.0, 4.0]


@pytest.mark.filterwarnings("ignore:Singular sample")
def test_sample_is_detached_and_rsample_is_not():
    for name, make in cases(ember, requires_grad=True):
        d = make()
        assert not d.sample((2,)).requires_grad, name
        if d.has_rsample:
            assert d.rsample((2,)).requires_grad, name


def test_sampling_is_reproducible_from_the_seed():
    for name, make in cases(ember):
        ember.manual_seed(5)
        a = make().sample((3,))
        ember.manual_seed(5)
        b = make().sample((3,))
        assert bool((a == b).all()), name


# --- rsample gradients -------------------------------------------------------------------------

def _reseeded(fn):
    """fn with the same random draws on every call, so gradcheck sees a smooth function."""
    def wrapped(*args):
        ember.manual_seed(11)
        return fn(*args)
    return wrapped


@pytest.mark.parametrize("make", [
    lambda loc, scale: D.Normal(loc, scale),
    lambda loc, scale: D.Laplace(loc, scale),
    lambda loc, scale: D.Cauchy(loc, scale),
    lambda loc, scale: D.Gumbel(loc, scale),
    lambda loc, scale: D.LogNormal(loc, scale),
    lambda loc, scale: D.Uniform(loc, loc + scale),
    lambda loc, scale: D.HalfNormal(scale),
    lambda loc, scale: D.Exponential(scale),
    lambda loc, scale: D.RelaxedBernoulli(scale, logits=loc),
    lambda loc, scale: D.MultivariateNormal(loc, scale_tril=ember.diag_embed(scale)),
    lambda loc, scale: D.TransformedDistribution(D.Normal(loc, scale),
                                                 [transforms.SigmoidTransform()]),
    lambda loc, scale: D.LowRankMultivariateNormal(loc, ember.stack([loc, scale], -1), scale),
    lambda loc, scale: D.RelaxedOneHotCategorical(scale[0], logits=loc),
    lambda loc, scale: D.Independent(D.Laplace(loc, scale), 1),
    lambda loc, scale: D.HalfCauchy(scale),
    lambda loc, scale: D.Pareto(scale, loc + 2),
    lambda loc, scale: D.Weibull(scale, loc + 2),
    lambda loc, scale: D.Kumaraswamy(scale, loc + 2),
    lambda loc, scale: D.LogisticNormal(loc, scale),
    lambda loc, scale: D.ContinuousBernoulli(logits=loc * scale),
], ids=["Normal", "Laplace", "Cauchy", "Gumbel", "LogNormal", "Uniform", "HalfNormal",
        "Exponential", "RelaxedBernoulli", "MultivariateNormal", "Transformed", "LowRankMVN",
        "RelaxedOneHotCategorical", "Independent", "HalfCauchy", "Pareto", "Weibull",
        "Kumaraswamy", "LogisticNormal", "ContinuousBernoulli"])
def test_rsample_gradcheck(make):
    loc = T([0.3, -0.7, 1.1], requires_grad=True)
    scale = T([0.8, 1.4, 0.6], requires_grad=True)
    assert gradcheck(_reseeded(lambda a, b: make(a, b).rsample((2,))), (loc, scale))


def test_log_prob_and_entropy_gradcheck():
    conc = T([0.7, 2.3], requires_grad=True)
    rate = T([1.3, 0.4], requires_grad=True)
    x = T([0.6, 2.2])
    assert gradcheck(lambda a, b: D.Gamma(a, b).log_prob(x), (conc, rate))
    assert gradcheck(lambda a, b: D.Beta(a, b).entropy(), (conc, rate))
    assert gradcheck(lambda a, b: D.kl_divergence(D.Gamma(a, b), D.Gamma(b, a)), (conc, rate))


def test_gamma_rsample_gradient_is_the_implicit_one():
    """d x / d alpha = -(dP/dalpha) / (dP/dx) at the sample, P the gamma CDF (finite differences
    of the incomplete gamma function, checked above against closed forms)."""
    ember.manual_seed(4)
    alpha = T([0.3, 1.0, 2.5, 8.0, 60.0], requires_grad=True)
    x = D.Gamma(alpha, T(1.0)).rsample()
    x.sum().backward()
    a, xv = alpha.detach(), x.detach()
    h = 1e-6
    dp_da = (_ops.special_gammainc(a + h, xv) - _ops.special_gammainc(a - h, xv)) / (2 * h)
    dp_dx = ember.exp((a - 1) * ember.log(xv) - xv - _ops._lgamma(a))
    close(alpha.grad, (-dp_da / dp_dx).numpy(), rtol=1e-5, atol=1e-9)


def test_gamma_family_rsample_has_gradients():
    conc = T([0.8, 2.0], requires_grad=True)
    for d in [D.Gamma(conc, T(1.5)), D.Beta(conc, T(1.2)), D.Dirichlet(conc),
              D.StudentT(conc), D.Chi2(conc), D.InverseGamma(conc, T(1.5)),
              D.FisherSnedecor(conc, T(3.0))]:
        conc.grad = None
        ember.manual_seed(6)
        d.rsample((50,)).sum().backward()
        assert conc.grad is not None and bool(ember.isfinite(conc.grad).all())


def test_reparameterized_gradient_estimates_the_mean_gradient():
    """The average of d x / d alpha over many Gamma(alpha, 1) samples is d E[x] / d alpha = 1."""
    ember.manual_seed(8)
    alpha = T([0.5, 3.0], requires_grad=True)
    D.Gamma(alpha, T(1.0)).rsample((20000,)).mean(0).sum().backward()
    close(alpha.grad, [1.0, 1.0], atol=0.05)


# --- validation --------------------------------------------------------------------------------

@pytest.mark.parametrize("make,message", [
    (lambda: D.Normal(T(0.0), T(-1.0)), "scale"),
    (lambda: D.Bernoulli(probs=T(1.5)), "probs"),
    (lambda: D.Categorical(probs=T([-0.1, 1.1])), "probs"),
    (lambda: D.Gamma(T(0.0), T(1.0)), "concentration"),
    (lambda: D.Uniform(T(1.0), T(0.0)), "low"),
    (lambda: D.Dirichlet(T([1.0, -1.0])), "concentration"),
    (lambda: D.MultivariateNormal(T([0.0, 0.0]), T([[1.0, 2.0], [2.0, 1.0]])), "covariance"),
    (lambda: D.Poisson(T(-1.0)), "rate"),
])
def test_invalid_parameters_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_validate_args_false_skips_the_checks():
    d = D.Normal(T(0.0), T(-1.0), validate_args=False)
    assert float(d.scale) == -1.0


def test_log_prob_outside_the_support_raises():
    with pytest.raises(ValueError, match="support"):
        D.Exponential(T(1.0)).log_prob(T(-1.0))
    with pytest.raises(ValueError, match="support"):
        D.Bernoulli(probs=T(0.3)).log_prob(T(0.5))


def test_both_probs_and_logits_raise():
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Bernoulli(probs=T(0.3), logits=T(0.1))


def test_set_default_validate_args():
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(T(0.0), T(-1.0))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(T(0.0), T(-1.0))


# --- transforms and constraints ------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n, _, _ in transform_cases(ember)])
def test_transform_inverse_and_jacobian(name):
    make, shape = [(c, s) for n, c, s in transform_cases(ember) if n == name][0]
    t = make()
    ember.manual_seed(9)
    x = ember.randn(shape, dtype=ember.float64) * 0.7
    if name == "PositiveDefinite":
        x = x @ x.mT + ember.eye(shape[-1], dtype=ember.float64)
    if isinstance(t.domain, constraints.greater_than):
        x = ember.exp(x)
    assert bool(t.domain.check(x).all())
    y = t(x)
    if t.bijective:
        close(t.inv(y), x.numpy(), rtol=1e-8, atol=1e-10)
    else:  # a right inverse: t(t.inv(y)) == y
        close(t(t.inv(y)), y.numpy(), rtol=1e-8, atol=1e-10)
    if t.domain.event_dim == 0 and t.codomain.event_dim == 0 and t.bijective:
        # elementwise: log|dy/dx| by central differences
        h = 1e-6
        fd = (t(x + h) - t(x - h)) / (2 * h)
        close(t.log_abs_det_jacobian(x, y), np.log(np.abs(fd.numpy())), rtol=1e-6, atol=1e-6)
    assert bool(t.codomain.check(y).all()) or name in ("Reshape", "Cat", "Stack", "Independent")


def test_stick_breaking_jacobian_against_finite_differences():
    t = transforms.StickBreakingTransform()
    x = T([0.3, -0.5, 1.2])
    y = t(x)
    h = 1e-6
    jac = np.zeros((3, 3))
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        jac[:, j] = ((t(x + T(e.tolist())) - t(x - T(e.tolist()))) / (2 * h)).numpy()[:3]
    close(t.log_abs_det_jacobian(x, y), math.log(abs(np.linalg.det(jac))), rtol=1e-6)


@pytest.mark.parametrize("constraint", CONSTRAINTS)
def test_biject_to_lands_in_the_constraint(constraint):
    c = eval("constraints." + constraint)
    shape = {"lower_cholesky": (2, 3, 3), "positive_definite": (2, 3, 3),
             "corr_cholesky": (2, 6)}.get(constraint, (2, 4))
    ember.manual_seed(10)
    x = ember.randn(shape, dtype=ember.float64)
    for registry in (D.biject_to, D.transform_to):
        try:
            t = registry(c)
        except NotImplementedError:
            continue
        y = t(x)
        assert bool(c.check(y).all()), (constraint, registry)
        if registry is D.biject_to:
            close(t(t.inv(y)), y.numpy(), rtol=1e-8, atol=1e-10)


def test_constraints_check():
    assert constraints.positive.check(T([1.0, -1.0])).tolist() == [True, False]
    assert constraints.simplex.check(T([0.2, 0.8])).item()
    assert not constraints.simplex.check(T([0.3, 0.8])).item()
    assert constraints.interval(0.0, 1.0).check(T([0.0, 1.0, 1.5])).tolist() == [True, True, False]
    assert constraints.integer_interval(0, 3).check(T([0.0, 2.0, 2.5])).tolist() == [True, True,
                                                                                   False]
    assert constraints.positive_definite.check(T([[2.0, 0.5], [0.5, 1.0]])).item()
    assert constraints.is_dependent(D.Uniform.support)
    assert not constraints.is_dependent(D.Normal.support)


# --- the rest of the API -----------------------------------------------------------------------

def test_exponential_family_entropy_from_the_log_normalizer():
    """Exponential(rate) as an exponential family: eta = -rate, A(eta) = -log(-eta), h = 1;
    the generic entropy must give 1 - log(rate)."""
    class MyExponential(D.ExponentialFamily):
        arg_constraints = {}

        def __init__(self, rate):
            self.rate = rate
            super().__init__(rate.shape)

        @property
        def _natural_params(self):
            return (-self.rate,)

        def _log_normalizer(self, eta):
            return -ember.log(-eta)

        @property
        def _mean_carrier_measure(self):
            return 0.0

    rates = [0.3, 1.0, 4.5]
    close(MyExponential(T(rates)).entropy(), [1 - math.log(r) for r in rates])
    assert isinstance(D.Normal(T(0.0), T(1.0)), D.ExponentialFamily)


def test_torch_module_paths_import():
    from ember.distributions.multivariate_normal import MultivariateNormal
    from ember.distributions.normal import Normal
    from ember.distributions.relaxed_categorical import RelaxedOneHotCategorical

    assert Normal is D.Normal and MultivariateNormal is D.MultivariateNormal
    assert RelaxedOneHotCategorical is D.RelaxedOneHotCategorical


def test_shapes_repr_and_expand():
    d = D.Normal(T([[0.0, 1.0, 2.0]]), T(1.5))
    assert tuple(d.batch_shape) == (1, 3) and tuple(d.event_shape) == ()
    assert repr(d) == "Normal(loc: ember.Size([1, 3]), scale: ember.Size([1, 3]))"
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    wide = d.expand((4, 3))
    assert tuple(wide.batch_shape) == (4, 3) and tuple(wide.sample((2,)).shape) == (2, 4, 3)
    close(wide.log_prob(T(0.5)), np.broadcast_to(d.log_prob(T(0.5)).numpy(), (4, 3)))
    mvn = D.MultivariateNormal(T([0.0, 1.0]), T([[2.0, 0.3], [0.3, 1.0]]))
    assert tuple(mvn.expand((5,)).rsample((3,)).shape) == (3, 5, 2)
    ind = D.Independent(D.Normal(ember.zeros(2, 3, dtype=ember.float64), T(1.0)), 1)
    assert tuple(ind.batch_shape) == (2,) and tuple(ind.event_shape) == (3,)
    assert tuple(ind.expand((4, 2)).log_prob(ember.zeros(3, dtype=ember.float64)).shape) == (4, 2)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        D.Independent(D.Normal(T([0.0]), T(1.0)), 2)


def test_precision_and_scale_tril_give_the_same_mvn():
    cov = np.array([[2.0, 0.6, 0.1], [0.6, 1.0, -0.2], [0.1, -0.2, 0.7]])
    x = T([0.3, -0.2, 1.1])
    by_cov = D.MultivariateNormal(ember.zeros(3, dtype=ember.float64), T(cov.tolist()))
    by_prec = D.MultivariateNormal(ember.zeros(3, dtype=ember.float64),
                                   precision_matrix=T(np.linalg.inv(cov).tolist()))
    close(by_prec.log_prob(x), by_cov.log_prob(x).numpy(), rtol=1e-12)
    close(by_prec.scale_tril, np.linalg.cholesky(cov), rtol=1e-12, atol=1e-14)
    close(by_cov.precision_matrix, np.linalg.inv(cov), rtol=1e-12, atol=1e-14)


def test_straight_through_passes_gradients_to_probs():
    probs = T([0.2, 0.5, 0.3], requires_grad=True)
    d = D.OneHotCategoricalStraightThrough(probs=probs)
    ember.manual_seed(0)
    s = d.rsample()
    assert sorted(s.detach().tolist()) == [0.0, 0.0, 1.0]
    (s * T([1.0, 2.0, 3.0])).sum().backward()
    # d/dprobs of (probs / sum(probs)) . w at sum 1: w - (probs . w)
    w = np.array([1.0, 2.0, 3.0])
    close(probs.grad, w - (np.array([0.2, 0.5, 0.3]) @ w))


def test_kl_pairs_across_families_against_quadrature():
    """KL(p || q) = integral of p (log p - log q) by the trapezoidal rule on a fine grid."""
    grid = np.linspace(1e-6, 1 - 1e-6, 400001)
    pairs = [(D.Beta(T(2.0), T(3.0)), D.Uniform(T(0.0), T(1.0))),
             (D.Beta(T(2.0), T(3.0)), D.Normal(T(0.3), T(0.4))),
             (D.Uniform(T(0.1), T(0.7)), D.Beta(T(1.5), T(2.5))),
             (D.Uniform(T(0.1), T(0.7)), D.Gumbel(T(0.2), T(0.5)))]
    for p, q in pairs:
        x = T(grid.tolist())
        lp = p.log_prob(x).numpy() if not isinstance(p, D.Uniform) else \
            D.Uniform(p.low, p.high, validate_args=False).log_prob(x).numpy()
        dens = np.exp(lp)
        with np.errstate(invalid="ignore"):  # 0 * -inf outside p's support, dropped below
            integrand = np.where(dens > 0, dens * (lp - q.log_prob(x).numpy()), 0.0)
        trapezoid = ((integrand[1:] + integrand[:-1]) / 2 * np.diff(grid)).sum()
        close(D.kl_divergence(p, q), trapezoid, rtol=1e-4, atol=1e-6)
    assert math.isinf(float(D.kl_divergence(D.Normal(T(0.0), T(1.0)), D.Gamma(T(2.0), T(1.0)))))


def test_kumaraswamy_mode_is_the_density_maximum():
    a, b = [1.7, 6.5, 2.0], [3.5, 1.3, 2.0]
    d = D.Kumaraswamy(T(a), T(b))
    grid = np.linspace(1e-4, 1 - 1e-4, 200001)
    density = d.log_prob(T(grid.tolist()).unsqueeze(-1)).numpy()
    close(d.mode, grid[density.argmax(0)], atol=1e-4)
    assert math.isnan(float(D.Kumaraswamy(T(0.5), T(2.0)).mode))


def test_von_mises_sampler_and_bessel_ratio():
    """E[cos(X - loc)] = I1(k) / I0(k) = 1 - variance, E[sin(X - loc)] = 0; the Bessel ratio
    against its power series sum_j (k/2)^(2j+n) / (j! (j+n)!)."""
    k = [0.05, 0.9, 3.0, 12.0]

    def bessel(n, x):
        return sum((x / 2) ** (2 * j + n) / (math.factorial(j) * math.factorial(j + n))
                   for j in range(60))

    d = D.VonMises(T([0.5, -2.0, 3.0, 0.0]), T(k))
    close(1 - d.variance, [bessel(1, x) / bessel(0, x) for x in k], rtol=1e-6)
    close(d.log_prob(T(0.0)), [x * math.cos(m) - math.log(2 * math.pi * bessel(0, x))
                              for x, m in zip(k, [0.5, -2.0, 3.0, 0.0])], rtol=1e-6)
    ember.manual_seed(0)
    x = d.sample((40000,))
    assert bool((x >= -math.pi).all()) and bool((x < math.pi).all())
    centred = (x - d.loc).numpy()
    np.testing.assert_allclose(np.cos(centred).mean(0), (1 - d.variance).numpy(), atol=0.015)
    np.testing.assert_allclose(np.sin(centred).mean(0), 0.0, atol=0.015)


def test_generalized_pareto_closed_forms():
    """xi = 0 is the shifted exponential; xi != 0 the survival function (1 + xi z)^(-1/xi)."""
    d = D.GeneralizedPareto(T([1.0, 1.0, 1.0]), T([2.0, 2.0, 2.0]), T([0.0, 0.3, -0.4]))
    x = T([2.5, 2.5, 2.5])
    z = 0.75
    survival = [math.exp(-z), (1 + 0.3 * z) ** (-1 / 0.3), (1 - 0.4 * z) ** (1 / 0.4)]
    close(d.cdf(x), [1 - s for s in survival])
    log_density = [-z - math.log(2), -(1 + 1 / 0.3) * math.log1p(0.3 * z) - math.log(2),
                   -(1 - 1 / 0.4) * math.log1p(-0.4 * z) - math.log(2)]
    close(d.log_prob(x), log_density)
    close(d.icdf(d.cdf(x)), [2.5, 2.5, 2.5], rtol=1e-12)
    close(d.mean, [1 + 2 / (1 - xi) for xi in (0.0, 0.3, -0.4)])
    # above the upper end of the support when xi < 0 (loc - scale / xi = 6)
    assert float(D.GeneralizedPareto(T(1.0), T(2.0), T(-0.4),
                                     validate_args=False).log_prob(T(6.5))) == -math.inf


def test_corr_cholesky_jacobian_against_finite_differences():
    """The map from x (n(n-1)/2 values) to the strict lower triangle of y is square: its
    log|det| by central differences must equal log_abs_det_jacobian; y y^T has a unit diagonal."""
    t = transforms.CorrCholeskyTransform()
    x = T([0.3, -0.8, 0.5, 1.1, -0.2, 0.7])
    y = t(x)
    close((y @ y.mT).diagonal(dim1=-2, dim2=-1), [1.0] * 4, rtol=1e-12)
    rows, cols = np.tril_indices(4, -1)
    h = 1e-6
    jac = np.zeros((6, 6))
    for k in range(6):
        step = np.zeros(6)
        step[k] = h
        up = t(T((x.numpy() + step).tolist())).numpy()[rows, cols]
        down = t(T((x.numpy() - step).tolist())).numpy()[rows, cols]
        jac[:, k] = (up - down) / (2 * h)
    close(t.log_abs_det_jacobian(x, y), np.linalg.slogdet(jac)[1], rtol=1e-6, atol=1e-7)
    close(t.inv(y), x.numpy(), rtol=1e-9)


def test_lkj_samples_have_the_marginal_correlation_law():
    """Under LKJ(eta) in dimension d, each correlation r has (r + 1) / 2 ~ Beta(b, b) with
    b = eta - 1 + d / 2: mean 0, variance 1 / (2 eta + d - 1)."""
    ember.manual_seed(3)
    for eta, d in [(0.5, 3), (1.0, 4), (4.0, 3)]:
        L = D.LKJCholesky(d, T(eta)).sample((20000,))
        assert bool(constraints.corr_cholesky.check(L).all())
        C = (L @ L.mT).numpy()
        r = C[:, np.tril_indices(d, -1)[0], np.tril_indices(d, -1)[1]]
        np.testing.assert_allclose(r.mean(0), 0.0, atol=0.02)
        np.testing.assert_allclose(r.var(0), 1 / (2 * eta + d - 1), rtol=0.05)


def test_low_rank_mvn_agrees_with_the_full_covariance():
    """The capacitance (Woodbury) forms against MultivariateNormal on W W^T + D, with sample
    and batch dimensions broadcast."""
    rng = np.random.default_rng(0)
    W = rng.normal(size=(2, 5, 2))
    diag = rng.uniform(0.5, 2.0, size=(2, 5))
    loc = rng.normal(size=5)
    low = D.LowRankMultivariateNormal(T(loc.tolist()), T(W.tolist()), T(diag.tolist()))
    cov = W @ W.transpose(0, 2, 1) + np.stack([np.diag(d) for d in diag])
    full = D.MultivariateNormal(T(loc.tolist()), T(cov.tolist()))
    x = T(rng.normal(size=(3, 1, 5)).tolist())
    close(low.log_prob(x), full.log_prob(x).numpy(), rtol=1e-11)
    close(low.entropy(), full.entropy().numpy(), rtol=1e-12)
