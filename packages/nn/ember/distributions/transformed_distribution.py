"""Distributions built from others: TransformedDistribution (a base distribution pushed through
transforms), LogNormal, Independent and MixtureSameFamily."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.continuous import Normal
from ember.distributions.discrete import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.transforms import ComposeTransform, ExpTransform, Transform
from ember.distributions.utils import as_size, sum_rightmost

__all__ = ["Independent", "LogNormal", "MixtureSameFamily", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """The distribution of ``t_n(...t_1(x))`` for ``x`` drawn from ``base_distribution``.

    ``log_prob`` inverts the transforms and subtracts their log-determinants (change of
    variables); ``cdf`` / ``icdf`` exist where every transform is monotone and the base has them.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif isinstance(transforms, list):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        self.transforms = transforms
        chain = ComposeTransform(transforms)
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{chain.domain.event_dim}, but got {base_shape}.")
        shape = chain.forward_shape(base_shape)
        needed_base_shape = chain.inverse_shape(shape)
        if tuple(needed_base_shape) != tuple(base_shape):
            # a transform's parameters broadcast the batch: the base must cover it
            base_batch = needed_base_shape[:len(needed_base_shape) - base_event_dim]
            base_distribution = base_distribution.expand(base_batch)
        # dimensions the first transform couples become event dimensions of the base
        coupled = chain.domain.event_dim - base_event_dim
        if coupled > 0:
            base_distribution = Independent(base_distribution, coupled)
        self.base_dist = base_distribution
        event_dim = chain.codomain.event_dim + max(base_event_dim - chain.domain.event_dim, 0)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        new = type(self).__new__(type(self))
        shape = batch_shape + self._event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch = shape[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch)
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        codomain = self.transforms[-1].codomain
        extra = len(self._event_shape) - codomain.event_dim
        return constraints.independent(codomain, extra) if extra > 0 else codomain

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def sample(self, sample_shape=()):
        with ember.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        total = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            total = total - sum_rightmost(t.log_abs_det_jacobian(x, y),
                                          event_dim - t.domain.event_dim)
            y = x
        base = self.base_dist.log_prob(y)
        return total + sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """``value`` where the transforms increase, 1 - ``value`` where they decrease (their
        sign may be a tensor: an AffineTransform with a tensor scale)."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, (int, float)) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        x = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            x = t(x)
        return x


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ N(loc, scale^2)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(),
                         validate_args=validate_args)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return ember.expm1(s2) * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class Independent(Distribution):
    """``base_distribution`` with its ``reinterpreted_batch_ndims`` rightmost batch dimensions
    made event dimensions: ``log_prob`` sums over them (a diagonal Normal as one multivariate
    event, say)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n_batch = len(base_distribution.batch_shape)
        if reinterpreted_batch_ndims > n_batch:
            raise ValueError("Expected reinterpreted_batch_ndims <= "
                             "len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs {n_batch}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        shape = base_distribution.batch_shape + base_distribution.event_shape
        cut = n_batch - reinterpreted_batch_ndims
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        new = type(self).__new__(type(self))
        moved = self._event_shape[:self.reinterpreted_batch_ndims]
        new.base_dist = self.base_dist.expand(batch_shape + moved)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        if self.reinterpreted_batch_ndims > 0:
            return False
        return self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        inner = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            return constraints.independent(inner, self.reinterpreted_batch_ndims)
        return inner

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_dist!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamily(Distribution):
    """A mixture whose components are the last batch dimension of ``component_distribution``,
    weighted by the Categorical ``mixture_distribution``."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "ember.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of "
                             "ember.distributions.Distribution")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mix_batch = tuple(mixture_distribution.batch_shape)
        comp_batch = tuple(component_distribution.batch_shape[:-1])
        for a, b in zip(reversed(mix_batch), reversed(comp_batch)):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"`mixture_distribution.batch_shape` "
                                 f"({mixture_distribution.batch_shape}) is not compatible with "
                                 f"`component_distribution.batch_shape`({as_size(comp_batch)})")
        k_mix = mixture_distribution.logits.shape[-1]
        k_comp = component_distribution.batch_shape[-1]
        if k_mix != k_comp:
            raise ValueError(f"`mixture_distribution component` ({k_mix}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({k_comp})")
        self._num_component = k_mix
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(comp_batch, component_distribution.event_shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = as_size(batch_shape)
        new = type(self).__new__(type(self))
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    def _weights(self):
        """The mixture probabilities shaped to broadcast against component statistics."""
        probs = self._mixture_distribution.probs
        return probs.reshape(tuple(probs.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        return (self._weights() * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        # law of total variance: E[Var(X | k)] + Var(E[X | k])
        w = self._weights()
        dim = -1 - self._event_ndims
        comp = self._component_distribution
        within = (w * comp.variance).sum(dim)
        between = (w * (comp.mean - self.mean.unsqueeze(dim)).pow(2)).sum(dim)
        return within + between

    def cdf(self, x):
        x = x.unsqueeze(-1 - self._event_ndims)
        return (self._component_distribution.cdf(x) * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        x = x.unsqueeze(-1 - self._event_ndims)
        log_p = self._component_distribution.log_prob(x)
        log_w = ember.log_softmax(self._mixture_distribution.logits, dim=-1)
        return (log_p + log_w).logsumexp(-1)

    def sample(self, sample_shape=()):
        sample_shape = as_size(sample_shape)
        with ember.no_grad():
            outer = tuple(sample_shape + self._batch_shape)
            which = self._mixture_distribution.sample(sample_shape).expand(outer)
            draws = self._component_distribution.sample(sample_shape)  # outer + K + event
            dim = len(outer)
            index = which.reshape(outer + (1,) * (self._event_ndims + 1))
            index = index.expand(outer + (1,) + tuple(self._event_shape))
            return draws.gather(dim, index).squeeze(dim)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n"
                f"  {self._component_distribution!r})")
