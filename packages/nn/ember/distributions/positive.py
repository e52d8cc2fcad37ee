"""Heavy-tailed and bounded continuous families, most defined as transformations of simpler
ones (the textbook constructions): HalfCauchy = |Cauchy|, Pareto = scale * exp(Exponential),
Weibull = scale * Exponential(1)^(1/k), InverseGamma = 1 / Gamma, Kumaraswamy =
(1 - U^(1/b))^(1/a), LogisticNormal = stick-breaking(Normal); FisherSnedecor, a ratio of scaled
chi-squared variables; GeneralizedPareto through its quantile function."""

from __future__ import annotations

import math

import ember
from ember.distributions import _ops, constraints
from ember.distributions.continuous import Cauchy, Exponential, Gamma, Normal, Uniform
from ember.distributions.distribution import Distribution
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ExpTransform,
    PowerTransform,
    StickBreakingTransform,
)
from ember.distributions.utils import broadcast_all

__all__ = ["FisherSnedecor", "GeneralizedPareto", "HalfCauchy", "InverseGamma", "Kumaraswamy",
           "LogisticNormal", "Pareto", "Weibull"]

_EULER_GAMMA = 0.5772156649015329


def _where_else(mask, value, fill):
    return ember.where(mask, value, ember.full_like(value, fill))


class HalfCauchy(TransformedDistribution):
    """|X| for X ~ Cauchy(0, scale)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(),
                         validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return ember.full(tuple(self._batch_shape), math.inf, dtype=self.scale.dtype)

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    @property
    def variance(self):
        return self.base_dist.variance

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = ember.as_tensor(value, dtype=self.scale.dtype)
        density = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, density, ember.full_like(density, -math.inf))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class Pareto(TransformedDistribution):
    """Density alpha scale^alpha / x^(alpha+1) for x >= scale: scale * exp(E), E ~
    Exponential(alpha)."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(0, self.scale)],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.alpha = self.alpha.expand(tuple(batch_shape))
        new.transforms = [ExpTransform(), AffineTransform(0, new.scale)]
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(TransformedDistribution):
    """scale * E^(1/concentration), E ~ Exponential(1)."""

    arg_constraints = {"scale": constraints.positive,
                       "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        super().__init__(Exponential(ember.ones_like(self.scale), validate_args=validate_args),
                         [PowerTransform(self.concentration_reciprocal),
                          AffineTransform(0, self.scale)], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        shape = tuple(batch_shape)
        new.scale = self.scale.expand(shape)
        new.concentration = self.concentration.expand(shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        new.transforms = [PowerTransform(new.concentration_reciprocal),
                          AffineTransform(0, new.scale)]
        return new

    @property
    def mean(self):
        return self.scale * ember.exp(_ops.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k).pow(self.concentration_reciprocal)

    @property
    def variance(self):
        first = ember.exp(_ops.lgamma(1 + self.concentration_reciprocal))
        second = ember.exp(_ops.lgamma(1 + 2 * self.concentration_reciprocal))
        return self.scale.pow(2) * (second - first.pow(2))

    def entropy(self):
        return (_EULER_GAMMA * (1 - self.concentration_reciprocal)
                + (self.scale * self.concentration_reciprocal).log() + 1)


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -ember.ones_like(base.rate)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        a = self.concentration
        return _where_else(a > 1, self.rate / (a - 1), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        return _where_else(a > 2, self.rate.pow(2) / ((a - 1).pow(2) * (a - 2)), math.inf)

    def entropy(self):
        a = self.concentration
        return a + self.rate.log() + _ops.lgamma(a) - (1 + a) * _ops.digamma(a)


class Kumaraswamy(TransformedDistribution):
    """Density a b x^(a-1) (1 - x^a)^(b-1) on (0, 1), a = concentration1, b = concentration0:
    (1 - U^(1/b))^(1/a) for U uniform."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(ember.zeros_like(self.concentration0),
                       ember.ones_like(self.concentration0), validate_args=validate_args)
        super().__init__(base, [PowerTransform(self.concentration0.reciprocal()),
                                AffineTransform(1.0, -1.0),
                                PowerTransform(self.concentration1.reciprocal())],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        shape = tuple(batch_shape)
        new.concentration1 = self.concentration1.expand(shape)
        new.concentration0 = self.concentration0.expand(shape)
        new.transforms = [PowerTransform(new.concentration0.reciprocal()),
                          AffineTransform(1.0, -1.0),
                          PowerTransform(new.concentration1.reciprocal())]
        return new

    def _raw_moment(self, n):
        """E[X^n] = b B(1 + n/a, b)."""
        a, b = self.concentration1, self.concentration0
        return ember.exp(b.log() + _ops.lgamma(1 + n / a) + _ops.lgamma(b)
                         - _ops.lgamma(1 + n / a + b))

    @property
    def mean(self):
        return self._raw_moment(1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        mode = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return _where_else((a >= 1) & (b >= 1), mode, math.nan)

    @property
    def variance(self):
        return self._raw_moment(2) - self._raw_moment(1).pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = _ops.digamma(b + 1) + _EULER_GAMMA
        return (1 - 1 / b) + (1 - 1 / a) * harmonic_b - (a * b).log()


class LogisticNormal(TransformedDistribution):
    """A point of the simplex: the stick-breaking transform of a Normal(loc, scale) vector
    (event size one more than loc's last dimension)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale


class FisherSnedecor(Distribution):
    """The F distribution: (X1 / df1) / (X2 / df2) for independent chi-squared X1, X2."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True
    _expand_params = {"df1": 0, "df2": 0}

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        scalar = not isinstance(df1, ember.Tensor) and not isinstance(df2, ember.Tensor)
        super().__init__(() if scalar else self.df1.shape, validate_args=validate_args)

    @property
    def mean(self):
        d2 = self.df2
        return _where_else(d2 > 2, d2 / (d2 - 2), math.nan)

    @property
    def mode(self):
        d1, d2 = self.df1, self.df2
        return _where_else(d1 > 2, (d1 - 2) / d1 * d2 / (d2 + 2), math.nan)

    @property
    def variance(self):
        d1, d2 = self.df1, self.df2
        v = 2 * d2.pow(2) * (d1 + d2 - 2) / (d1 * (d2 - 2).pow(2) * (d2 - 4))
        return _where_else(d2 > 4, v, math.nan)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        # Chi2(d) / d = Gamma(d / 2, 1) * 2 / d
        x1 = _ops.standard_gamma(0.5 * self.df1.expand(shape)) / (0.5 * self.df1)
        x2 = _ops.standard_gamma(0.5 * self.df2.expand(shape)) / (0.5 * self.df2)
        tiny = ember.finfo(x2.dtype).tiny
        x2 = x2 + (x2.detach().clamp(min=tiny) - x2.detach())
        ratio = x1 / x2
        return ratio + (ratio.detach().clamp(min=tiny) - ratio.detach())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        h1, h2 = 0.5 * self.df1, 0.5 * self.df2
        ratio = self.df1 / self.df2
        log_norm = _ops.lgamma(h1 + h2) - _ops.lgamma(h1) - _ops.lgamma(h2)
        return (log_norm + h1 * ratio.log() + (h1 - 1) * ember.log(value)
                - (h1 + h2) * ember.log1p(ratio * value))


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution: location ``loc``, scale ``scale``, shape
    ``concentration`` (xi). With z = (x - loc) / scale, the survival function is
    (1 + xi z)^(-1/xi) (exp(-z) at xi = 0), on z >= 0 (and z <= -1/xi when xi < 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True
    _expand_params = {"loc": 0, "scale": 0, "concentration": 0}

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(not isinstance(v, ember.Tensor) for v in (loc, scale, concentration))
        super().__init__(() if scalar else self.loc.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        xi = self.concentration
        upper = ember.where(xi < 0, self.loc - self.scale / xi, ember.full_like(xi, math.inf))
        return constraints.interval(self.loc, upper)

    def _xi_or_one(self):
        """xi with its zeros replaced by 1, for the branches that divide by it."""
        xi = self.concentration
        return ember.where(xi == 0, ember.ones_like(xi), xi)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        xi = self.concentration
        safe = self._xi_or_one()
        general = -(1 + 1 / safe) * ember.log1p(safe * z)
        log_density = ember.where(xi == 0, -z, general) - self.scale.log()
        inside = (z >= 0) & ((xi >= 0) | (z <= -1 / safe))
        return ember.where(inside, log_density, ember.full_like(log_density, -math.inf))

    def log_survival_function(self, value):
        z = (value - self.loc) / self.scale
        xi = self.concentration
        safe = self._xi_or_one()
        return ember.where(xi == 0, -z, -ember.log1p(safe * z) / safe)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.expm1(self.log_survival_function(value))

    def icdf(self, value):
        xi = self.concentration
        safe = self._xi_or_one()
        log_tail = ember.log1p(-value)
        z = ember.where(xi == 0, -log_tail, ember.expm1(-safe * log_tail) / safe)
        return self.loc + self.scale * z

    @property
    def mean(self):
        xi = self.concentration
        return _where_else(xi < 1, self.loc + self.scale / (1 - xi), math.inf)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        xi = self.concentration
        v = self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi))
        return _where_else(xi < 0.5, v, math.inf)

    def entropy(self):
        return self.scale.log() + self.concentration + 1
