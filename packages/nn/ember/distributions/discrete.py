"""Discrete families: Bernoulli, Categorical, OneHotCategorical(StraightThrough), Geometric,
Poisson, Binomial, Multinomial.

Families given by ``probs`` or ``logits`` (exactly one) store the one given and derive the other
on first use (``lazy_property``); validation checks only the one given.
"""

from __future__ import annotations

import math
import numbers

import ember
from ember.distributions import _ops, constraints
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    softplus,
)

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial",
           "NegativeBinomial", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson"]


def _exactly_one(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _batch_of(value, given) -> tuple:
    return () if isinstance(given, numbers.Number) else tuple(value.shape)


def _check(dist, value) -> None:
    if dist._validate_args:
        dist._validate_sample(value)


class _CategoricalParams:
    """``probs`` / ``logits`` / ``param_shape`` of a family built over ``self._categorical``."""

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape


class _BinaryParams:
    """``probs`` / ``logits`` of independent binary events (logits are log-odds)."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return (self.probs if "probs" in self.__dict__ else self.logits).shape


class Bernoulli(_BinaryParams, ExponentialFamily):
    """1 with probability ``probs`` (or sigmoid(``logits``)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _expand_params = {"probs": 0, "logits": 0}

    def __init__(self, probs=None, logits=None, validate_args=None):
        _exactly_one(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            batch = _batch_of(self.probs, probs)
        else:
            (self.logits,) = broadcast_all(logits)
            batch = _batch_of(self.logits, logits)
        super().__init__(batch, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return ember.where(self.probs == 0.5, ember.full_like(mode, math.nan), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        _check(self, value)
        logits, value = ember.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        # log sigmoid(l) at 1, log sigmoid(-l) at 0
        return value * logits - softplus(logits)

    def entropy(self):
        return softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand=True):
        like = self.probs if "probs" in self.__dict__ else self.logits
        values = ember.arange(2, dtype=like.dtype, device=like.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Categorical(Distribution):
    """One of ``K`` categories, indices 0..K-1, with probabilities ``probs`` (normalized over the
    last dimension) or ``logits`` (unnormalized log-probabilities)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}
    has_enumerate_support = True
    _expand_params = {"probs": 1, "logits": 1}

    def __init__(self, probs=None, logits=None, validate_args=None):
        _exactly_one(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            param = self.logits
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape[:-1]), validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return (self.probs if "probs" in self.__dict__ else self.logits).shape

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return ember.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return ember.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        n = math.prod(sample_shape)
        with ember.no_grad():
            table = self.probs.reshape(-1, self._num_events)
            draws = ember.multinomial(table, n, replacement=True)  # (batch, n)
            return draws.T.reshape(sample_shape + tuple(self._batch_shape))

    def log_prob(self, value):
        _check(self, value)
        index = value.long().unsqueeze(-1)
        index, log_p = ember.broadcast_tensors(index, self.logits)
        return log_p.gather(-1, index[..., :1]).squeeze(-1)

    def entropy(self):
        # -inf logits (zero probabilities) contribute 0, not nan
        floor = ember.finfo(self.logits.dtype).min
        return -(self.probs * self.logits.clamp(min=floor)).sum(-1)

    def enumerate_support(self, expand=True):
        values = ember.arange(self._num_events, device=self.probs.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class OneHotCategorical(_CategoricalParams, Distribution):
    """A Categorical outcome written as a one-hot vector of length ``K``."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        param = self._categorical.param_shape
        super().__init__(tuple(param[:-1]), tuple(param[-1:]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self))
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        index = self.probs.argmax(-1)
        return ember.nn.functional.one_hot(index, self._event_shape[-1]).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        index = self._categorical.sample(sample_shape)
        return ember.nn.functional.one_hot(index, self._event_shape[-1]).to(self.probs.dtype)

    def log_prob(self, value):
        _check(self, value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        k = self._event_shape[0]
        values = ember.eye(k, dtype=self.probs.dtype, device=self.probs.device)
        values = values.reshape((k,) + (1,) * len(self._batch_shape) + (k,))
        if expand:
            values = values.expand((k,) + tuple(self._batch_shape) + (k,))
        return values

    def __repr__(self):
        c = self._categorical
        name = "probs" if "probs" in c.__dict__ else "logits"
        value = c.__dict__[name]
        return (f"{type(self).__name__}({name}: "
                f"{value.item() if value.numel() == 1 else value.shape})")


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through to ``probs``."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        hard = self.sample(sample_shape)
        return hard + (self.probs - self.probs.detach())


class Geometric(_BinaryParams, Distribution):
    """The number of failures before the first success of Bernoulli(``probs``) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _expand_params = {"probs": 0, "logits": 0}

    def __init__(self, probs=None, logits=None, validate_args=None):
        _exactly_one(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            batch = _batch_of(self.probs, probs)
        else:
            (self.logits,) = broadcast_all(logits)
            batch = _batch_of(self.logits, logits)
        super().__init__(batch, validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(
                f"Expected parameter probs ({type(self.probs).__name__} of shape "
                f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but found "
                f"invalid values:\n{self.probs.reshape(-1)[~(self.probs > 0).reshape(-1)]}")

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            tiny = ember.finfo(self.probs.dtype).tiny
            u = ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u * (1 - tiny) + tiny
            return (ember.log(u) / ember.log1p(-self.probs)).floor()

    def log_prob(self, value):
        _check(self, value)
        value, probs = broadcast_all(value, self.probs)
        failures = ember.where(value == 0, ember.zeros_like(value),
                               value * ember.log1p(-probs))
        return failures + ember.log(probs)

    def entropy(self):
        p = self.probs
        return (softplus(self.logits) - p * self.logits) / p


class Poisson(ExponentialFamily):
    """Counts with mean ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _expand_params = {"rate": 0}

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(_batch_of(self.rate, rate), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            return _ops.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        _check(self, value)
        rate, value = broadcast_all(self.rate, value)
        return ember.xlogy(value, rate) - rate - _ops.lgamma(value + 1)


class Binomial(_BinaryParams, Distribution):
    """Successes in ``total_count`` Bernoulli(``probs``) trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True
    _expand_params = {"total_count": 0, "probs": 0, "logits": 0}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _exactly_one(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            param, given = self.probs, probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
            param, given = self.logits, logits
        super().__init__(_batch_of(param, given), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            return _ops.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        _check(self, value)
        n, logits = self.total_count, self.logits
        log_choose = _ops.lgamma(n + 1) - _ops.lgamma(value + 1) - _ops.lgamma(n - value + 1)
        return log_choose + value * logits - n * softplus(logits)

    def _homogeneous_count(self, what: str) -> int:
        n = int(self.total_count.max())
        if not bool((self.total_count == n).all()):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return n

    def entropy(self):
        self._homogeneous_count("entropy")
        log_pmf = self.log_prob(self.enumerate_support(expand=False))
        return -(ember.exp(log_pmf) * log_pmf).sum(0)

    def enumerate_support(self, expand=True):
        n = self._homogeneous_count("enumerate_support")
        values = ember.arange(1 + n, dtype=self.total_count.dtype, device=self.total_count.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Multinomial(_CategoricalParams, Distribution):
    """Counts of ``total_count`` draws from a Categorical over the last dimension of ``probs``
    (or ``logits``)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, numbers.Number):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        param = self._categorical.param_shape
        super().__init__(tuple(param[:-1]), tuple(param[-1:]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self))
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(self.total_count, probs=new._categorical.probs,
                                 validate_args=False)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        k = self._event_shape[0]
        # (total_count, *sample_shape, *batch) category indices, counted per category
        index = self._categorical.sample((self.total_count,) + sample_shape)
        counts = ember.nn.functional.one_hot(index, k).sum(0)
        return counts.to(self.probs.dtype)

    def log_prob(self, value):
        _check(self, value)
        logits, value = ember.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        # a category of probability 0 drawn 0 times contributes 0 (not 0 * -inf)
        log_powers = ember.where(value == 0, ember.zeros_like(value), logits * value).sum(-1)
        return (_ops.lgamma(value.sum(-1) + 1) - _ops.lgamma(value + 1).sum(-1) + log_powers)

    def entropy(self):
        # H = -log n! + n H(categorical) + sum_i E[log x_i!], x_i ~ Binomial(n, p_i)
        n = self.total_count
        counts = ember.arange(1, n + 1, dtype=self.probs.dtype, device=self.probs.device)
        counts = counts.reshape((-1,) + (1,) * (len(self._batch_shape) + 1))
        binomial_p = ember.exp(self._binomial.log_prob(counts))
        expected_log_fact = (binomial_p * _ops.lgamma(counts + 1)).sum(0).sum(-1)
        return n * self._categorical.entropy() - math.lgamma(n + 1) + expected_log_fact


class NegativeBinomial(_BinaryParams, Distribution):
    """The number of successes before ``total_count`` failures in Bernoulli trials of success
    probability ``probs``."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer
    _expand_params = {"total_count": 0, "probs": 0, "logits": 0}

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _exactly_one(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            param, given = self.probs, probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
            param, given = self.logits, logits
        super().__init__(_batch_of(param, given), validate_args=validate_args)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    def sample(self, sample_shape=()):
        # a Poisson whose rate is Gamma(total_count, rate (1 - p) / p) distributed
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            rate = _ops.standard_gamma(self.total_count.expand(shape)) * self.logits.exp()
            return _ops.poisson(rate)

    def log_prob(self, value):
        _check(self, value)
        r, logits = self.total_count, self.logits
        log_unnormalized = -r * softplus(logits) + value * (logits - softplus(logits))
        log_norm = _ops.lgamma(r + value) - _ops.lgamma(1.0 + value) - _ops.lgamma(r)
        # zero failures wanted and zero successes seen: probability 1
        log_norm = ember.where(r + value == 0, ember.zeros_like(log_norm), log_norm)
        return log_unnormalized + log_norm
