"""Continuous relaxations of discrete variables (the Concrete / Gumbel-softmax distributions):
RelaxedBernoulli, RelaxedOneHotCategorical and their log-space bases LogitRelaxedBernoulli and
ExpRelaxedCategorical. Their samples are reparameterized, so gradients reach the
probabilities."""

from __future__ import annotations

import math
import numbers

import ember
from ember.distributions import constraints
from ember.distributions.discrete import Categorical, _CategoricalParams
from ember.distributions.distribution import Distribution
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import ExpTransform, SigmoidTransform
from ember.distributions.utils import (
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    softplus,
)

__all__ = ["ExpRelaxedCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli",
           "RelaxedOneHotCategorical"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli sample: (logits + logistic noise) / temperature."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True
    _expand_params = {"probs": 0, "logits": 0}

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self.temperature = temperature
        given = probs if probs is not None else logits
        (value,) = broadcast_all(given)
        setattr(self, "probs" if probs is not None else "logits", value)
        batch = () if isinstance(given, numbers.Number) else tuple(value.shape)
        super().__init__(batch, validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return (self.probs if "probs" in self.__dict__ else self.logits).shape

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        logits = self.logits.expand(shape)
        u = clamp_probs(ember.rand(shape, dtype=logits.dtype, device=logits.device))
        return (logits + u.log() - ember.log1p(-u)) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature
        shifted = logits - value * t
        log_t = math.log(t) if isinstance(t, numbers.Number) else ember.log(t)
        return log_t + shifted - 2 * softplus(shifted)


class RelaxedBernoulli(TransformedDistribution):
    """A value in (0, 1) that approaches a Bernoulli(``probs``) sample as ``temperature``
    goes to 0: the sigmoid of a LogitRelaxedBernoulli."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class ExpRelaxedCategorical(_CategoricalParams, Distribution):
    """The log of a RelaxedOneHotCategorical sample: log-softmax((logits + Gumbel noise) /
    temperature)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        param = self._categorical.param_shape
        super().__init__(tuple(param[:-1]), tuple(param[-1:]), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self))
        new._categorical = self._categorical.expand(batch_shape)
        new.temperature = self.temperature
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        u = clamp_probs(ember.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbel = -(-u.log()).log()
        scores = (self.logits + gumbel) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self._event_shape[0]
        t = self.temperature
        logits, value = broadcast_all(self.logits, value)
        # density of the log of a Concrete sample (Maddison et al., 2017)
        log_t = ember.log(t) if isinstance(t, ember.Tensor) else math.log(t)
        log_scale = math.lgamma(k) + (k - 1) * log_t
        score = logits - value * t
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A point of the simplex that approaches a OneHotCategorical(``probs``) sample as
    ``temperature`` goes to 0 (the Gumbel-softmax): exp of an ExpRelaxedCategorical."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


