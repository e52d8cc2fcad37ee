"""Families over vectors: MultivariateNormal, LowRankMultivariateNormal, Dirichlet."""

from __future__ import annotations

import math

import ember
from ember import Tensor
from ember.distributions import _ops, constraints
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import dirichlet_mode, lazy_property

__all__ = ["Dirichlet", "LowRankMultivariateNormal", "MultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)


def _lower_solve(L: Tensor, rhs: Tensor) -> Tensor:
    """L^-1 rhs for lower-triangular L, batches broadcast."""
    return ember.linalg.solve_triangular(L, rhs, upper=False)


def _mahalanobis_sq(L: Tensor, diff: Tensor) -> Tensor:
    """|L^-1 diff|^2 over the last dimension, with L of shape (..., n, n) and diff (..., n)
    broadcast against each other."""
    batch = ember.broadcast_shapes(tuple(L.shape[:-2]), tuple(diff.shape[:-1]))
    n = diff.shape[-1]
    L = L.expand(tuple(batch) + (n, n))
    diff = diff.expand(tuple(batch) + (n,))
    return _lower_solve(L, diff.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def _half_log_det(L: Tensor) -> Tensor:
    """log sqrt(det(L L^T)) of a Cholesky factor."""
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of precision^-1 without forming the inverse: with J the
    reversal permutation, chol(J P J) = Lf gives P = U U^T for the upper-triangular U = J Lf J,
    so P^-1 = U^-T U^-1 and U^-T is the lower factor wanted."""
    n = precision.shape[-1]
    Lf = ember.linalg.cholesky(precision.flip(-2).flip(-1))
    U_T = Lf.flip(-2).flip(-1).mT  # lower triangular
    eye = ember.eye(n, dtype=precision.dtype, device=precision.device)
    return _lower_solve(U_T, eye.expand(tuple(U_T.shape)))


class MultivariateNormal(Distribution):
    """The multivariate normal N(loc, Sigma), Sigma given by exactly one of
    ``covariance_matrix``, ``precision_matrix`` or its lower Cholesky factor ``scale_tril``."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _expand_params = {"loc": 1, "covariance_matrix": 2, "precision_matrix": 2,
                      "scale_tril": 2}

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, matrix = given[0]
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        batch = ember.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        setattr(self, name, matrix.expand(tuple(batch) + (n, n)))
        self.loc = loc.expand(tuple(batch) + (n,))
        super().__init__(batch, (n,), validate_args=validate_args)  # validates the matrix
        # the factor without the batch broadcast, for the solves
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    @lazy_property
    def scale_tril(self):
        L = self._unbroadcasted_scale_tril
        return L.expand(tuple(self._batch_shape + self._event_shape + self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(tuple(self._batch_shape + self._event_shape
                                       + self._event_shape))

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = ember.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(tuple(L.shape))
        L_inv = _lower_solve(L, eye)
        return (L_inv.mT @ L_inv).expand(tuple(self._batch_shape + self._event_shape
                                               + self._event_shape))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + _mahalanobis_sq(L, value - self.loc)) - _half_log_det(L)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + _LOG_2PI) + _half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(tuple(self._batch_shape)) if len(self._batch_shape) else h


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal whose covariance is ``cov_factor @ cov_factor.mT +
    diag(cov_diag)`` (a rank-m factor plus a positive diagonal)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True
    _expand_params = {"loc": 1, "cov_factor": 2, "cov_diag": 1, "covariance_matrix": 2,
                      "scale_tril": 2, "precision_matrix": 2}

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if tuple(cov_diag.shape[-1:]) != (n,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {loc.shape[-1:]}")
        batch = tuple(ember.broadcast_shapes(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]),
                                             tuple(cov_diag.shape[:-1])))
        m = cov_factor.shape[-1]
        self.loc = loc.expand(batch + (n,))
        self.cov_factor = cov_factor.expand(batch + (n, m))
        self.cov_diag = cov_diag.expand(batch + (n,))
        super().__init__(batch, (n,), validate_args=validate_args)

    @property
    def _unbroadcasted_scale_tril(self):
        return ember.linalg.cholesky(self.covariance_matrix)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self.cov_factor.pow(2).sum(-1) + self.cov_diag

    @lazy_property
    def covariance_matrix(self):
        W = self.cov_factor
        return W @ W.mT + ember.diag_embed(self.cov_diag)

    @lazy_property
    def scale_tril(self):
        return ember.linalg.cholesky(self.covariance_matrix)

    @lazy_property
    def precision_matrix(self):
        return ember.linalg.inv(self.covariance_matrix)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        rank = self.cov_factor.shape[-1]
        eps_factor = ember.randn(shape[:-1] + (rank,), dtype=self.loc.dtype,
                                 device=self.loc.device)
        eps_diag = ember.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + (self.cov_factor @ eps_factor.unsqueeze(-1)).squeeze(-1)
                + self.cov_diag.sqrt() * eps_diag)

    def _capacitance_tril(self):
        """Cholesky factor of the m x m capacitance matrix I + W^T D^-1 W: with it, the
        determinant lemma and the Woodbury identity give log det and solves of the n x n
        covariance W W^T + D at O(n m^2) instead of O(n^3)."""
        W_over_D = self.cov_factor / self.cov_diag.unsqueeze(-1)
        m = self.cov_factor.shape[-1]
        eye = ember.eye(m, dtype=self.loc.dtype, device=self.loc.device)
        return ember.linalg.cholesky(eye + self.cov_factor.mT @ W_over_D)

    def _half_log_det_covariance(self, capacitance_tril):
        # det(W W^T + D) = det(I + W^T D^-1 W) det(D)
        return _half_log_det(capacitance_tril) + 0.5 * self.cov_diag.log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self._event_shape[0]
        diff = value - self.loc
        K = self._capacitance_tril()
        # x^T (W W^T + D)^-1 x = x^T D^-1 x - |K^-1 W^T D^-1 x|^2
        diff_over_D = diff / self.cov_diag
        projected = (self.cov_factor.mT @ diff_over_D.unsqueeze(-1)).squeeze(-1)
        correction = _mahalanobis_sq(K, projected)
        mahalanobis = (diff * diff_over_D).sum(-1) - correction
        return -0.5 * (n * _LOG_2PI + mahalanobis) - self._half_log_det_covariance(K)

    def entropy(self):
        n = self._event_shape[0]
        return 0.5 * n * (1.0 + _LOG_2PI) + self._half_log_det_covariance(
            self._capacitance_tril())


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex with concentrations ``concentration`` (last
    dimension: the categories)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _expand_params = {"concentration": 1}

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(tuple(concentration.shape[:-1]), tuple(concentration.shape[-1:]),
                         validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        return dirichlet_mode(self.concentration)

    @property
    def variance(self):
        c = self.concentration
        total = c.sum(-1, keepdim=True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return _ops.sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (ember.xlogy(c - 1.0, value).sum(-1) + _ops.lgamma(c.sum(-1))
                - _ops.lgamma(c).sum(-1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        total = c.sum(-1)
        return (_ops.lgamma(c).sum(-1) - _ops.lgamma(total) - (k - total) * _ops.digamma(total)
                - ((c - 1.0) * _ops.digamma(c)).sum(-1))
