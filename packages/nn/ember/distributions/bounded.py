"""Families on bounded sets: ContinuousBernoulli on [0, 1] and VonMises on the circle."""

from __future__ import annotations

import math
import numbers

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import (
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    softplus,
)

__all__ = ["ContinuousBernoulli", "VonMises"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli on [0, 1] (Loaiza-Ganem & Cunningham, 2019): density
    C(p) p^x (1 - p)^(1 - x). Near p = 1/2, inside ``lims``, the closed forms cancel, so the
    normalizer and moments use their Taylor series about 1/2 there."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _expand_params = {"probs": 0, "logits": 0}

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        (value,) = broadcast_all(given)
        if probs is not None:
            self.probs = value
        else:
            self.logits = value
        self._lims = lims
        batch = () if isinstance(given, numbers.Number) else tuple(value.shape)
        super().__init__(batch, validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return (self.probs if "probs" in self.__dict__ else self.logits).shape

    def _stable(self):
        """Where the closed forms are used (p outside ``lims``), and p moved out of ``lims``
        elsewhere so that the unused branch stays finite."""
        p = self.probs
        outside = (p <= self._lims[0]) | (p >= self._lims[1])
        return outside, ember.where(outside, p, ember.full_like(p, self._lims[0]))

    def _log_normalizer_of_probs(self):
        outside, p = self._stable()
        # log C(p) = log|log(1-p) - log p| - log|1 - 2p|
        closed = (ember.log((ember.log1p(-p) - ember.log(p)).abs())
                  - ember.where(p <= 0.5, ember.log1p(-2 * p), ember.log(2 * p - 1)))
        x = self.probs - 0.5
        series = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x * x) * x * x
        return ember.where(outside, closed, series)

    @property
    def mean(self):
        outside, p = self._stable()
        closed = p / (2 * p - 1) + 1 / (ember.log1p(-p) - ember.log(p))
        x = self.probs - 0.5
        series = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x * x) * x
        return ember.where(outside, closed, series)

    @property
    def variance(self):
        outside, p = self._stable()
        closed = p * (p - 1) / (1 - 2 * p).pow(2) + 1 / (ember.log1p(-p) - ember.log(p)).pow(2)
        x2 = (self.probs - 0.5).pow(2)
        series = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x2) * x2
        return ember.where(outside, closed, series)

    @property
    def stddev(self):
        return self.variance.sqrt()

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        u = ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return value * logits - softplus(logits) + self._log_normalizer_of_probs()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        outside, p = self._stable()
        closed = (p.pow(value) * (1 - p).pow(1 - value) + p - 1) / (2 * p - 1)
        cdf = ember.where(outside, closed, value)
        return ember.where(value <= 0, ember.zeros_like(cdf),
                           ember.where(value >= 1, ember.ones_like(cdf), cdf))

    def icdf(self, value):
        outside, p = self._stable()
        closed = (ember.log1p(-p + value * (2 * p - 1)) - ember.log1p(-p)) / (
            ember.log(p) - ember.log1p(-p))
        return ember.where(outside, closed, value)

    def entropy(self):
        log_p0, log_p1 = ember.log1p(-self.probs), ember.log(self.probs)
        return (self.mean * (log_p0 - log_p1) - self._log_normalizer_of_probs() - log_p0)


# Abramowitz & Stegun 9.8.1-9.8.4: I_n(x) for x < 3.75 as a polynomial in (x / 3.75)^2 (times x
# for n = 1), and sqrt(x) e^-x I_n(x) for x >= 3.75 as a polynomial in 3.75 / x.
_BESSEL_SMALL = {
    0: (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813),
    1: (0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411),
}
_BESSEL_LARGE = {
    0: (0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537,
        -0.01647633, 0.00392377),
    1: (0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967,
        -0.02895312, 0.01787654, -0.00420059),
}


def _polynomial(y, coeffs):
    acc = ember.full_like(y, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = acc * y + c
    return acc


def _log_bessel_i(x, order: int):
    """log I_order(x) for x >= 0, order 0 or 1."""
    small_x = ember.clamp(x, max=3.75)
    small = _polynomial((small_x / 3.75).pow(2), _BESSEL_SMALL[order]).log()
    if order == 1:
        small = small + small_x.log()
    large_x = ember.clamp(x, min=3.75)
    large = (large_x - 0.5 * large_x.log()
             + _polynomial(3.75 / large_x, _BESSEL_LARGE[order]).log())
    return ember.where(x < 3.75, small, large)


class VonMises(Distribution):
    """The von Mises distribution on the circle, density exp(concentration cos(x - loc)) /
    (2 pi I0(concentration)); values in [-pi, pi)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False
    _expand_params = {"loc": 0, "concentration": 0}

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        scalar = isinstance(loc, numbers.Number) and isinstance(concentration, numbers.Number)
        super().__init__(() if scalar else self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        k = self.concentration
        return 1 - (_log_bessel_i(k, 1) - _log_bessel_i(k, 0)).exp()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * ember.cos(value - self.loc) - math.log(2 * math.pi) - _log_bessel_i(k, 0)

    def sample(self, sample_shape=()):
        """Best & Fisher's (1979) rejection sampler, each round redrawing the rejected
        elements only."""
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            k = self.concentration.expand(shape).reshape(-1).to(ember.float64)
            k = k.clamp(min=1e-300)
            tau = 1 + (1 + 4 * k * k).sqrt()
            rho = 2 * k / (tau + (2 * tau).sqrt())  # (tau - sqrt(2 tau)) / (2k), stably
            r = (1 + rho * rho) / (2 * rho)
            out = ember.zeros(k.shape, dtype=ember.float64)
            pending = ember.arange(k.numel())
            while pending.numel():
                kk, rr = k[pending], r[pending]
                u1, u2, u3 = (ember.rand(tuple(pending.shape), dtype=ember.float64)
                              for _ in range(3))
                z = ember.cos(math.pi * u1)
                f = ((1 + rr * z) / (rr + z)).clamp(min=-1.0, max=1.0)
                c = kk * (rr - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                theta = ember.sign(u3 - 0.5) * ember.acos(f)
                out[pending[accept]] = theta[accept]
                pending = pending[~accept]
            loc = self.loc.expand(shape).reshape(-1).to(ember.float64)
            wrapped = ember.remainder(out + loc + math.pi, 2 * math.pi) - math.pi
            return wrapped.reshape(shape).to(self.loc.dtype)
