"""Univariate continuous families whose parameters are elementwise: Normal, Uniform, Laplace,
Cauchy, Exponential, Gamma, Chi2, Beta, StudentT, Gumbel, HalfNormal.

Each family's batch shape is the broadcast shape of its parameters; sampling draws standard
variates from ember's default generator and maps them through the parameters, so ``rsample`` is
differentiable in them.
"""

from __future__ import annotations

import math
import numbers

import ember
from ember import Tensor
from ember.distributions import _ops, constraints
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import broadcast_all, dirichlet_mode

__all__ = ["Beta", "Cauchy", "Chi2", "Exponential", "Gamma", "Gumbel", "HalfNormal", "Laplace",
           "Normal", "StudentT", "Uniform"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_EULER_GAMMA = 0.5772156649015329


def _standard_normal(shape, like: Tensor) -> Tensor:
    return ember.randn(tuple(shape), dtype=like.dtype, device=like.device)


def _standard_uniform(shape, like: Tensor) -> Tensor:
    return ember.rand(tuple(shape), dtype=like.dtype, device=like.device)


class _ElementwiseFamily(Distribution):
    """A family whose parameters (named in ``_param_names``) broadcast to the batch shape and
    whose events are scalars."""

    _param_names: tuple[str, ...] = ()

    def __init__(self, *params, validate_args=None):
        values = broadcast_all(*params)
        for name, value in zip(self._param_names, values):
            setattr(self, name, value)
        scalar_params = all(isinstance(p, numbers.Number) for p in params)
        batch_shape = () if scalar_params else values[0].shape
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def _expand_params(self):
        return dict.fromkeys(self._param_names, 0)

    def _check_value(self, value) -> None:
        if self._validate_args:
            self._validate_sample(value)


class Normal(_ElementwiseFamily, ExponentialFamily):
    """The normal distribution N(loc, scale^2)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _param_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(loc, scale, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)


    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.loc + _standard_normal(shape, self.loc) * self.scale

    def log_prob(self, value):
        self._check_value(value)
        z = (value - self.loc) / self.scale
        return -0.5 * z * z - ember.log(self.scale) - _LOG_SQRT_2PI

    def cdf(self, value):
        self._check_value(value)
        return 0.5 * (1 + ember.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value):
        return self.loc + self.scale * ember.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + ember.log(self.scale)


class Uniform(_ElementwiseFamily):
    """The uniform distribution on the half-open interval [low, high)."""

    has_rsample = True
    _param_names = ("low", "high")

    def __init__(self, low, high, validate_args=None):
        super().__init__(low, high, validate_args=validate_args)

    @property
    def arg_constraints(self):
        # each bound is constrained by the other
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / math.sqrt(12)

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.low + _standard_uniform(shape, self.low) * (self.high - self.low)

    def log_prob(self, value):
        self._check_value(value)
        inside = (self.low <= value) & (self.high > value)
        return ember.log(inside.to(self.low.dtype)) - ember.log(self.high - self.low)

    def cdf(self, value):
        self._check_value(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return self.low + value * (self.high - self.low)

    def entropy(self):
        return ember.log(self.high - self.low)


class Laplace(_ElementwiseFamily):
    """The Laplace (double exponential) distribution with location ``loc`` and scale ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _param_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(loc, scale, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = ember.finfo(self.loc.dtype).eps
        # u uniform on (-1, 1), kept off -1 so that log1p(-|u|) is finite
        u = _standard_uniform(shape, self.loc) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * ember.sign(u) * ember.log1p(-u.abs())

    def log_prob(self, value):
        self._check_value(value)
        return -ember.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        self._check_value(value)
        d = value - self.loc
        return 0.5 - 0.5 * ember.sign(d) * ember.expm1(-d.abs() / self.scale)

    def icdf(self, value):
        centred = value - 0.5
        return self.loc - self.scale * ember.sign(centred) * ember.log1p(-2 * centred.abs())

    def entropy(self):
        return 1 + ember.log(2 * self.scale)


class Cauchy(_ElementwiseFamily):
    """The Cauchy (Lorentz) distribution: median ``loc``, half width at half maximum ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _param_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(loc, scale, validate_args=validate_args)

    @property
    def mean(self):
        return ember.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return ember.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = _standard_uniform(shape, self.loc)
        return self.loc + self.scale * ember.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        self._check_value(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - ember.log(self.scale) - ember.log1p(z * z)

    def cdf(self, value):
        self._check_value(value)
        return ember.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return self.loc + self.scale * ember.tan(math.pi * (value - 0.5))

    def entropy(self):
        return math.log(4 * math.pi) + ember.log(self.scale)


class Exponential(_ElementwiseFamily, ExponentialFamily):
    """The exponential distribution with rate ``rate`` (mean 1 / rate)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _param_names = ("rate",)

    def __init__(self, rate, validate_args=None):
        super().__init__(rate, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return ember.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = _standard_uniform(shape, self.rate)
        return -ember.log1p(-u) / self.rate

    def log_prob(self, value):
        self._check_value(value)
        return ember.log(self.rate) - self.rate * value

    def cdf(self, value):
        self._check_value(value)
        return 1 - ember.exp(-self.rate * value)

    def icdf(self, value):
        return -ember.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - ember.log(self.rate)


class Gamma(_ElementwiseFamily, ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _param_names = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=None):
        super().__init__(concentration, rate, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        draws = _ops.standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # the division can underflow to 0, outside the support's interior: keep the smallest
        # positive normal number, with the gradient of the unclamped value
        tiny = ember.finfo(draws.dtype).tiny
        return draws + (draws.detach().clamp(min=tiny) - draws.detach())

    def log_prob(self, value):
        self._check_value(value)
        a, r = self.concentration, self.rate
        return ember.xlogy(a, r) + ember.xlogy(a - 1, value) - r * value - _ops.lgamma(a)

    def cdf(self, value):
        self._check_value(value)
        return _ops.special_gammainc(self.concentration, self.rate * value)

    def entropy(self):
        a = self.concentration
        return a - ember.log(self.rate) + _ops.lgamma(a) + (1.0 - a) * _ops.digamma(a)


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, ember.full_like(df, 0.5), validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1] with concentrations ``concentration1`` (alpha) and
    ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _expand_params = {"concentration1": 0, "concentration0": 0}

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        scalar = isinstance(concentration1, numbers.Number) and isinstance(concentration0,
                                                                          numbers.Number)
        super().__init__(() if scalar else self.concentration1.shape,
                         validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        pair = ember.stack([self.concentration1, self.concentration0], -1)
        return dirichlet_mode(pair).select(-1, 0)

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        pair = ember.stack([self.concentration1.expand(shape),
                            self.concentration0.expand(shape)], -1)
        return _ops.sample_dirichlet(pair).select(-1, 0)

    def _log_beta_function(self):
        a, b = self.concentration1, self.concentration0
        return _ops.lgamma(a) + _ops.lgamma(b) - _ops.lgamma(a + b)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (ember.xlogy(a - 1, value) + ember.xlogy(b - 1, 1 - value)
                - self._log_beta_function())

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        return (self._log_beta_function() - (a - 1) * _ops.digamma(a)
                - (b - 1) * _ops.digamma(b) + (a + b - 2) * _ops.digamma(a + b))


class StudentT(_ElementwiseFamily):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale
    ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _param_names = ("df", "loc", "scale")

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        super().__init__(df, loc, scale, validate_args=validate_args)

    @property
    def mean(self):
        return ember.where(self.df > 1, self.loc, ember.full_like(self.loc, math.nan))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        heavy = ember.where(df > 1, ember.full_like(df, math.inf), ember.full_like(df, math.nan))
        return ember.where(df > 2, finite, heavy)

    def rsample(self, sample_shape=()):
        # loc + scale * X / sqrt(V / df), X standard normal, V chi-squared with df
        shape = tuple(self._extended_shape(sample_shape))
        x = _standard_normal(shape, self.df)
        v = _ops.standard_gamma(0.5 * self.df.expand(shape)) * 2
        return self.loc + self.scale * x * ember.rsqrt(v / self.df)

    def log_prob(self, value):
        self._check_value(value)
        df = self.df
        z = (value - self.loc) / self.scale
        log_norm = (ember.log(self.scale) + 0.5 * ember.log(df) + 0.5 * math.log(math.pi)
                    + _ops.lgamma(0.5 * df) - _ops.lgamma(0.5 * (df + 1)))
        return -0.5 * (df + 1) * ember.log1p(z * z / df) - log_norm

    def entropy(self):
        df = self.df
        log_beta = _ops.lgamma(0.5 * df) + math.lgamma(0.5) - _ops.lgamma(0.5 * (df + 1))
        return (ember.log(self.scale)
                + 0.5 * (df + 1) * (_ops.digamma(0.5 * (df + 1)) - _ops.digamma(0.5 * df))
                + 0.5 * ember.log(df) + log_beta)


class Gumbel(_ElementwiseFamily):
    """The Gumbel (type-I extreme value) distribution with location ``loc`` and scale
    ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _param_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(loc, scale, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        info = ember.finfo(self.loc.dtype)
        u = _standard_uniform(shape, self.loc).clamp(min=info.tiny, max=1 - info.eps)
        return self.loc - self.scale * ember.log(-ember.log(u))

    def log_prob(self, value):
        self._check_value(value)
        z = (self.loc - value) / self.scale
        return z - ember.exp(z) - ember.log(self.scale)

    def cdf(self, value):
        self._check_value(value)
        return ember.exp(-ember.exp((self.loc - value) / self.scale))

    def icdf(self, value):
        return self.loc - self.scale * ember.log(-ember.log(value))

    def entropy(self):
        return ember.log(self.scale) + (1 + _EULER_GAMMA)


class HalfNormal(_ElementwiseFamily):
    """|X| for X ~ N(0, scale^2)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _param_names = ("scale",)

    def __init__(self, scale, validate_args=None):
        super().__init__(scale, validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return (_standard_normal(shape, self.scale) * self.scale).abs()

    def log_prob(self, value):
        self._check_value(value)
        z = value / self.scale
        density = math.log(2) - 0.5 * z * z - ember.log(self.scale) - _LOG_SQRT_2PI
        return ember.where(value >= 0, density, ember.full_like(density, -math.inf))

    def cdf(self, value):
        self._check_value(value)
        return ember.erf(value / (self.scale * math.sqrt(2)))

    def icdf(self, value):
        return self.scale * ember.erfinv(value) * math.sqrt(2)

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + ember.log(self.scale) - math.log(2)
