"""``ExponentialFamily``: the base for families whose density is
h(x) exp(<eta, T(x)> - A(eta)); their entropy follows from the log-normalizer A by autograd."""

from __future__ import annotations

import ember
from ember.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A subclass defines ``_natural_params`` (a tuple of tensors eta), ``_log_normalizer(*eta)``
    (A) and ``_mean_carrier_measure`` (E[log h(X)]); ``entropy`` is then
    A(eta) - <eta, grad A(eta)> - E[log h(X)], since grad A(eta) = E[T(X)]."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        eta = [p.detach().requires_grad_() for p in self._natural_params]
        with ember.enable_grad():
            log_norm = self._log_normalizer(*eta)
            grads = ember.autograd.grad(log_norm.sum(), eta, create_graph=True)
        result = log_norm - self._mean_carrier_measure
        batch = tuple(self._batch_shape)
        for p, g in zip(eta, grads):
            result = result - (p * g).reshape(batch + (-1,)).sum(-1)
        return result
