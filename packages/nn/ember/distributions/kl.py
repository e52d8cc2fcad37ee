"""KL divergences KL(p || q) in closed form, dispatched on the pair of distribution types.

``register_kl(TypeP, TypeQ)`` adds a formula; ``kl_divergence(p, q)`` picks the registered pair
whose types are the closest ancestors of ``type(p)`` and ``type(q)`` (by method resolution
order; a tie between incomparable pairs warns and takes the first in a fixed order).
"""

from __future__ import annotations

import math
import warnings

import ember
from ember.distributions import _ops
from ember.distributions.bounded import ContinuousBernoulli
from ember.distributions.continuous import (
    Beta,
    Cauchy,
    Exponential,
    Gamma,
    Gumbel,
    HalfNormal,
    Laplace,
    Normal,
    Uniform,
)
from ember.distributions.discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    Geometric,
    OneHotCategorical,
    Poisson,
)
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.multivariate import (
    Dirichlet,
    LowRankMultivariateNormal,
    MultivariateNormal,
)
from ember.distributions.positive import Pareto
from ember.distributions.transformed_distribution import Independent, TransformedDistribution
from ember.distributions.utils import softplus, sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_REGISTRY: dict = {}
_DISPATCH_CACHE: dict = {}
_EULER_GAMMA = 0.5772156649015329


def register_kl(type_p, type_q):
    """Decorator: ``@register_kl(Normal, Normal) def kl(p, q): ...`` registers a formula for
    KL(p || q) with p, q instances of (subclasses of) the two types."""
    if not isinstance(type_p, type) or not isinstance(type_q, type):
        raise TypeError(f"Expected type_p and type_q to be types, got {type_p} and {type_q}")

    def decorator(fn):
        _REGISTRY[type_p, type_q] = fn
        _DISPATCH_CACHE.clear()
        return fn

    return decorator


def _lookup(type_p, type_q):
    candidates = []
    for (super_p, super_q), fn in _REGISTRY.items():
        if issubclass(type_p, super_p) and issubclass(type_q, super_q):
            rank = (type_p.__mro__.index(super_p), type_q.__mro__.index(super_q))
            candidates.append((rank, super_p.__name__, super_q.__name__, fn))
    if not candidates:
        return None
    candidates.sort(key=lambda c: c[:3])
    best = candidates[0]
    for other in candidates[1:]:
        # incomparable: closer in p but farther in q
        if other[0][0] < best[0][0] or other[0][1] < best[0][1]:
            warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                          "Please register_kl a more specific pair.", RuntimeWarning,
                          stacklevel=3)
            break
    return best[3]


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], one value per batch element; raises
    NotImplementedError for a pair with no registered formula."""
    key = (type(p), type(q))
    if key not in _DISPATCH_CACHE:
        _DISPATCH_CACHE[key] = _lookup(*key)
    fn = _DISPATCH_CACHE[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return fn(p, q)


def _infinite_where(mask, value):
    return ember.where(mask, ember.full_like(value, math.inf), value)


def _zero_where(mask, value):
    return ember.where(mask, ember.zeros_like(value), value)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    mean_term = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + mean_term - 1 - var_ratio.log())


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (var_ratio - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    ones = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    ones = _zero_where(p.probs == 0, _infinite_where(q.probs == 0, ones))
    zeros = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    zeros = _zero_where(p.probs == 1, _infinite_where(q.probs == 1, zeros))
    return ones + zeros


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is "
                                  "not implemented")
    n = p.total_count
    kl = n * (p.probs * (softplus(-q.logits) - softplus(-p.logits))
              + (1 - p.probs) * (softplus(q.logits) - softplus(p.logits)))
    return _infinite_where(p.total_count > q.total_count, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    terms = p.probs * (p.logits - q.logits)
    terms = _infinite_where((q.probs == 0).expand_as(terms), terms)
    terms = _zero_where((p.probs == 0).expand_as(terms), terms)
    return terms.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - ember.log1p(-q.probs) / p.probs - q.logits


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    kl = ((q.high - q.low) / (p.high - p.low)).log()
    return _infinite_where((q.low > p.low) | (q.high < p.high), kl)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a_p, r_p, a_q, r_q = p.concentration, p.rate, q.concentration, q.rate
    return (a_q * (r_p / r_q).log() + _ops.lgamma(a_q) - _ops.lgamma(a_p)
            + (a_p - a_q) * _ops.digamma(a_p) + (r_q - r_p) * (a_p / r_p))


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    a_p, b_p, a_q, b_q = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    log_beta_p = _ops.lgamma(a_p) + _ops.lgamma(b_p) - _ops.lgamma(a_p + b_p)
    log_beta_q = _ops.lgamma(a_q) + _ops.lgamma(b_q) - _ops.lgamma(a_q + b_q)
    return (log_beta_q - log_beta_p + (a_p - a_q) * _ops.digamma(a_p)
            + (b_p - b_q) * _ops.digamma(b_p)
            + (a_q - a_p + b_q - b_p) * _ops.digamma(a_p + b_p))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    a_p, a_q = p.concentration, q.concentration
    total_p = a_p.sum(-1)
    return (_ops.lgamma(total_p) - _ops.lgamma(a_q.sum(-1))
            - (_ops.lgamma(a_p) - _ops.lgamma(a_q)).sum(-1)
            + ((a_p - a_q) * (_ops.digamma(a_p) - _ops.digamma(total_p).unsqueeze(-1))).sum(-1))


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    distance = (p.loc - q.loc).abs()
    return (-scale_ratio.log() + distance / q.scale
            + scale_ratio * (-distance / p.scale).exp() - 1)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    numerator = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (numerator / (4 * p.scale * q.scale)).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return (-ratio.log() + shift + ratio * _EULER_GAMMA
            + (-shift + _ops.lgamma(1 + ratio)).exp() - (1 + _EULER_GAMMA))


def _kl_gaussians(p, q):
    """KL between multivariate normals through their (unbroadcast) Cholesky factors."""
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise ValueError("KL-divergence between two Multivariate Normals with different event "
                         "shapes cannot be computed")
    L_p, L_q = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    n = p.event_shape[0]
    batch = tuple(ember.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
    L_p = L_p.expand(batch + (n, n))
    L_q = L_q.expand(batch + (n, n))
    half_log_det_ratio = (L_q.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                          - L_p.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    trace_term = ember.linalg.solve_triangular(L_q, L_p, upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(batch + (n,)).unsqueeze(-1)
    mahalanobis = ember.linalg.solve_triangular(L_q, diff, upper=False).pow(2).sum((-2, -1))
    return half_log_det_ratio + 0.5 * (trace_term + mahalanobis - n)


for _pair in ((MultivariateNormal, MultivariateNormal),
              (LowRankMultivariateNormal, LowRankMultivariateNormal),
              (LowRankMultivariateNormal, MultivariateNormal),
              (MultivariateNormal, LowRankMultivariateNormal)):
    register_kl(*_pair)(_kl_gaussians)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    # KL is invariant under a common bijection
    if p.transforms != q.transforms or tuple(p.event_shape) != tuple(q.event_shape):
        raise NotImplementedError
    extra = len(p.event_shape) - len(p.base_dist.event_shape)
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra)


# --- pairs of different families -------------------------------------------------------------
# KL(p || q) = -H(p) - E_p[log q(X)]. The cross term needs a few expectations under p, gathered
# per family below; where p puts mass outside q's support the divergence is infinite.

def _support_bounds(p):
    """(lower, upper) of p's support, as Python numbers or tensors."""
    if isinstance(p, Uniform):
        return p.low, p.high
    if isinstance(p, (Beta, ContinuousBernoulli)):
        return 0.0, 1.0
    if isinstance(p, (Exponential, Gamma)):
        return 0.0, math.inf
    if isinstance(p, Pareto):
        return p.scale, math.inf
    return -math.inf, math.inf


def _second_moment_about(p, point):
    """E_p[(X - point)^2] = Var(X) + (E X - point)^2."""
    return p.variance + (p.mean - point).pow(2)


def _expected_log(p):
    """E_p[log X] for p on the positive reals."""
    if isinstance(p, Beta):
        return _ops.digamma(p.concentration1) - _ops.digamma(p.concentration1
                                                             + p.concentration0)
    if isinstance(p, Gamma):
        return _ops.digamma(p.concentration) - p.rate.log()
    if isinstance(p, Exponential):
        return -_EULER_GAMMA - p.rate.log()
    if isinstance(p, Uniform):
        return _uniform_mean_log(p.low, p.high)
    if isinstance(p, Pareto):
        return p.scale.log() + p.alpha.reciprocal()
    raise NotImplementedError


def _xlogx(x):
    return ember.xlogy(x, x)


def _uniform_mean_log(low, high):
    """E[log X] for X uniform on [low, high] with low >= 0 (the antiderivative x log x - x)."""
    return (_xlogx(high) - _xlogx(low)) / (high - low) - 1


def _expected_log_one_minus(p):
    """E_p[log(1 - X)] for p on [0, 1]."""
    if isinstance(p, Beta):
        return _ops.digamma(p.concentration0) - _ops.digamma(p.concentration1
                                                             + p.concentration0)
    if isinstance(p, Uniform):
        return _uniform_mean_log(1 - p.high, 1 - p.low)
    raise NotImplementedError


def _mgf(p, t):
    """E_p[exp(t X)] for t < 0."""
    if isinstance(p, Normal):
        return (p.loc * t + 0.5 * (p.scale * t).pow(2)).exp()
    if isinstance(p, Exponential):
        return p.rate / (p.rate - t)
    if isinstance(p, Gamma):
        return (1 - t / p.rate).pow(-p.concentration)
    if isinstance(p, Uniform):
        return ((t * p.high).exp() - (t * p.low).exp()) / (t * (p.high - p.low))
    raise NotImplementedError


def _cross_entropy(p, q):
    """-E_p[log q(X)] by the family of q."""
    if isinstance(q, Normal):
        return (q.scale.log() + 0.5 * math.log(2 * math.pi)
                + _second_moment_about(p, q.loc) / (2 * q.scale.pow(2)))
    if isinstance(q, Exponential):
        return -q.rate.log() + q.rate * p.mean
    if isinstance(q, Gamma):
        a, r = q.concentration, q.rate
        return -(a * r.log() + (a - 1) * _expected_log(p) - r * p.mean - _ops.lgamma(a))
    if isinstance(q, Beta):
        a, b = q.concentration1, q.concentration0
        log_beta = _ops.lgamma(a) + _ops.lgamma(b) - _ops.lgamma(a + b)
        return -((a - 1) * _expected_log(p) + (b - 1) * _expected_log_one_minus(p) - log_beta)
    if isinstance(q, Gumbel):
        # -log q(x) = log scale + z + exp(-z), z = (x - loc) / scale
        z_mean = (p.mean - q.loc) / q.scale
        return q.scale.log() + z_mean + (q.loc / q.scale).exp() * _mgf(p, -1 / q.scale)
    if isinstance(q, Uniform):
        return (q.high - q.low).log()
    if isinstance(q, ContinuousBernoulli):
        # log q(x) = x (log p - log(1 - p)) + log(1 - p) + log C(p)
        log_p, log_1mp = q.probs.log(), ember.log1p(-q.probs)
        return -(p.mean * (log_p - log_1mp) + log_1mp + q._log_normalizer_of_probs())
    if isinstance(q, Pareto):
        alpha = q.alpha
        return -(alpha.log() + alpha * q.scale.log() - (alpha + 1) * _expected_log(p))
    if isinstance(q, Laplace):
        # E|X - m| for X ~ N(mu, s^2): s sqrt(2/pi) exp(-d^2 / 2 s^2) + d erf(d / (s sqrt 2))
        d = p.loc - q.loc
        mean_abs = (p.scale * math.sqrt(2 / math.pi) * (-d.pow(2) / (2 * p.scale.pow(2))).exp()
                    + d * ember.erf(d / (p.scale * math.sqrt(2))))
        return (2 * q.scale).log() + mean_abs / q.scale
    raise NotImplementedError


def _outside_support(p, q):
    """Where p puts mass outside q's support (a bool tensor or a Python bool)."""
    p_low, p_high = _support_bounds(p)
    q_low, q_high = _support_bounds(q)
    return _less(p_low, q_low) | _less(q_high, p_high)


def _less(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return ember.tensor(a < b)
    return ember.as_tensor(a) < ember.as_tensor(b)


def _kl_by_cross_entropy(p, q):
    outside = _outside_support(p, q)
    if bool(outside.all()):
        shape = tuple(ember.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
        like = p.mean
        return ember.full(shape, math.inf, dtype=like.dtype, device=like.device)
    return _infinite_where(outside, _cross_entropy(p, q) - p.entropy())


for _p_type, _q_types in (
        (Beta, (Exponential, Gamma, Normal, Pareto, Uniform)),
        (Exponential, (Beta, Gamma, Gumbel, Normal, Pareto, Uniform)),
        (Gamma, (Beta, Exponential, Gumbel, Normal, Pareto, Uniform)),
        (Gumbel, (Beta, Exponential, Gamma, Normal, Pareto, Uniform)),
        (Laplace, (Beta, Exponential, Gamma, Normal, Pareto, Uniform)),
        (Normal, (Beta, Exponential, Gamma, Gumbel, Laplace, Pareto, Uniform)),
        (Pareto, (Beta, Exponential, Gamma, Normal, Pareto, Uniform)),
        (Uniform, (Beta, Exponential, Gamma, Gumbel, Normal, Pareto)),
        (ContinuousBernoulli, (ContinuousBernoulli, Exponential, Normal, Pareto, Uniform))):
    for _q_type in _q_types:
        register_kl(_p_type, _q_type)(_kl_by_cross_entropy)
for _p_type in (Beta, Exponential, Gamma, Gumbel, Laplace, Normal, Pareto, Uniform):
    register_kl(_p_type, ContinuousBernoulli)(_kl_by_cross_entropy)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # E_p[log q(X)] = P(X=1) log rate - rate  (log 0! = log 1! = 0)
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_poisson_bounded(p, q):
    # a Poisson puts mass on every count, a (finite) binomial does not
    return ember.full_like(p.rate, math.inf)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_exponential_families(p, q):
    """Two members of one exponential family: the Bregman divergence of the log-normalizer A,
    A(eta_q) - A(eta_p) - <eta_q - eta_p, grad A(eta_p)>, the gradient by autograd."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    eta_p = [n.detach().requires_grad_() for n in p._natural_params]
    eta_q = q._natural_params
    with ember.enable_grad():
        log_norm_p = p._log_normalizer(*eta_p)
        grads = ember.autograd.grad(log_norm_p.sum(), eta_p, create_graph=True)
    result = q._log_normalizer(*eta_q) - log_norm_p
    n_batch = len(ember.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
    for a_p, a_q, g in zip(eta_p, eta_q, grads):
        term = (a_q - a_p) * g
        result = result - sum_rightmost(term, term.dim() - n_batch)
    return result
