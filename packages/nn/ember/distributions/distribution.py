"""The ``Distribution`` base class: shapes, argument and value validation, sampling, expand."""

from __future__ import annotations

import warnings

import ember
from ember import Tensor
from ember.distributions import constraints
from ember.distributions.utils import as_size, lazy_property

__all__ = ["Distribution"]


class Distribution:
    """A batch of probability distributions of one family.

    Shapes: a sample has shape ``sample_shape + batch_shape + event_shape``; ``log_prob`` reduces
    the event dimensions. ``arg_constraints`` maps each parameter name to its constraint and
    ``support`` is the constraint the values satisfy; with validation on (the default, as
    torch's, see ``set_default_validate_args``) both are checked and a violation raises
    ``ValueError``.

    A subclass lists in ``_expand_params`` the tensor attributes that carry the batch (with the
    number of trailing non-batch dimensions each has), so that ``expand`` works without being
    written per family.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    _expand_params: dict[str, int] = {}

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turns argument and value validation on or off for distributions created later
        without an explicit ``validate_args``."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = as_size(batch_shape)
        self._event_shape = as_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()
        super().__init__()

    def _check_parameters(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{type(self)} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
        for name, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            # a lazily derived parameter (logits from probs) is not computed just to check it
            if name not in self.__dict__ and isinstance(getattr(type(self), name, None),
                                                        lazy_property):
                continue
            value = getattr(self, name)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {name} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                    f"{constraint!r}, but found invalid values:\n{value}")

    # --- shapes --------------------------------------------------------------------------------

    @property
    def batch_shape(self) -> ember.Size:
        return self._batch_shape

    @property
    def event_shape(self) -> ember.Size:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> ember.Size:
        return as_size(sample_shape) + self._batch_shape + self._event_shape

    def expand(self, batch_shape, _instance=None):
        """A distribution of the same family whose parameters are broadcast (as views) to
        ``batch_shape``; it validates nothing again."""
        batch_shape = as_size(batch_shape)
        new = self._get_checked_instance(type(self), _instance)
        for name, value in self.__dict__.items():
            if name in self._expand_params:
                trailing = self._expand_params[name]
                value = value.expand(batch_shape + value.shape[value.dim() - trailing:])
            new.__dict__.setdefault(name, value)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return cls.__new__(type(self)) if _instance is None else _instance

    # --- what a family defines -----------------------------------------------------------------

    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """A sample (no gradient) of shape ``sample_shape + batch_shape + event_shape``."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """A reparameterized sample: differentiable in the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning,
                      stacklevel=2)
        return self.sample(ember.Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return ember.exp(self.entropy())

    # --- validation of values ------------------------------------------------------------------

    def _validate_sample(self, value) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape = tuple(value.shape)
        event = tuple(self._event_shape)
        if event and (len(shape) < len(event) or shape[len(shape) - len(event):] != event):
            raise ValueError("The right-most size of value must match event_shape: "
                             f"{value.shape} vs {self._event_shape}.")
        expected = self._batch_shape + self._event_shape
        for got, want in zip(reversed(shape), reversed(tuple(expected))):
            if got != 1 and want != 1 and got != want:
                raise ValueError("Value is not broadcastable with batch_shape+event_shape: "
                                 f"{value.shape} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{type(self)} does not define `support` to enable sample validation. "
                          "Please initialize the distribution with `validate_args=False` to "
                          "turn off validation.", stacklevel=3)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)})"
                f" to be within the support ({support!r}) of the distribution {self!r}, but "
                f"found invalid values:\n{value}")

    def __repr__(self):
        try:
            names = [n for n in self.arg_constraints if n in self.__dict__]
        except NotImplementedError:
            names = []
        shown = []
        for name in names:
            value = self.__dict__[name]
            shown.append(f"{name}: {value.item() if value.numel() == 1 else value.shape}")
        return f"{type(self).__name__}({', '.join(shown)})"
