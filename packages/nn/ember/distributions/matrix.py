"""Families over matrices: LKJCholesky (Cholesky factors of correlation matrices) and Wishart
(positive-definite matrices)."""

from __future__ import annotations

import math
import numbers

import ember
from ember.distributions import _ops, constraints
from ember.distributions.continuous import Beta
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import lazy_property

__all__ = ["LKJCholesky", "Wishart"]


class LKJCholesky(Distribution):
    """The LKJ distribution (Lewandowski, Kurowicka & Joe, 2009) over ``dim`` x ``dim``
    correlation matrices, density proportional to det(C)^(concentration - 1), expressed on the
    Cholesky factor L of C: density prod_{k=2..d} L_kk^(d - k + 2 concentration - 2)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky
    _expand_params = {"concentration": 0}

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        if isinstance(concentration, numbers.Number):
            concentration = ember.tensor(float(concentration))
        self.concentration = concentration
        super().__init__(tuple(concentration.shape), (dim, dim), validate_args=validate_args)

    def sample(self, sample_shape=()):
        """The onion method (Lewandowski et al., 2009, section 3.2) in Cholesky form: row k
        (from 0) is sqrt(y_k) times a uniform direction in its first k coordinates, and
        sqrt(1 - y_k) on the diagonal."""
        d = self.dim
        shape = tuple(sample_shape) + tuple(self._batch_shape)
        conc = self.concentration
        with ember.no_grad():
            # row k: squared radius ~ Beta(k/2, concentration + (d - 2)/2 - (k - 1)/2); row 0
            # has no entries below the diagonal (its radius is drawn but multiplies zeros)
            k = ember.arange(d, dtype=conc.dtype)
            first = ember.where(k == 0, ember.full_like(k, 0.5), 0.5 * k)
            second = (conc + 0.5 * (d - 2)).unsqueeze(-1) - 0.5 * (k - 1)
            radii = Beta(first, second, validate_args=False).sample(
                tuple(sample_shape)).unsqueeze(-1)
            directions = ember.randn(shape + (d, d), dtype=conc.dtype).tril(-1)
            norms = directions.norm(dim=-1, keepdim=True)
            norms = ember.where(norms == 0, ember.ones_like(norms), norms)  # the first row
            w = radii.sqrt() * (directions / norms)
            tiny = ember.finfo(conc.dtype).tiny
            diagonal = (1 - (w * w).sum(-1)).clamp(min=tiny).sqrt()
            return w + ember.diag_embed(diagonal)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        d = self.dim
        log_diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:].log()
        k = ember.arange(2, d + 1, dtype=log_diag.dtype)
        powers = 2 * (self.concentration.unsqueeze(-1) - 1) + d - k
        unnormalized = (powers * log_diag).sum(-1)
        return unnormalized - self._log_normalizer()

    def _log_normalizer(self):
        # log of the integral of prod L_kk^(...) over the Cholesky factors: with
        # a = concentration + (d - 1) / 2, (d - 1)/2 log pi + mvlgamma(a - 1/2, d - 1)
        # - (d - 1) lgamma(a)
        dm1 = self.dim - 1
        a = self.concentration + 0.5 * dm1
        return (0.5 * dm1 * math.log(math.pi) + _ops.mvlgamma(a - 0.5, dm1)
                - dm1 * _ops.lgamma(a))


class Wishart(ExponentialFamily):
    """The Wishart distribution over p x p positive-definite matrices with ``df`` degrees of
    freedom (df > p - 1) and scale matrix given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``: the law of sum_k x_k x_k^T for df independent
    N(0, covariance) vectors x_k (when df is an integer)."""

    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky,
                       "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True
    _expand_params = {"df": 0, "covariance_matrix": 2, "precision_matrix": 2, "scale_tril": 2}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, matrix = given[0]
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        p = matrix.shape[-1]
        if isinstance(df, numbers.Number):
            batch = tuple(matrix.shape[:-2])
            df = ember.tensor(float(df), dtype=matrix.dtype).expand(batch)
        else:
            batch = tuple(ember.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape)))
            df = df.expand(batch)
        self.df = df
        setattr(self, name, matrix.expand(batch + (p, p)))
        self.arg_constraints = dict(type(self).arg_constraints)
        self.arg_constraints["df"] = constraints.greater_than(p - 1)
        super().__init__(batch, (p, p), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(matrix)
        else:
            from ember.distributions.multivariate import _precision_to_scale_tril
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape
                                                           + self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(tuple(self._batch_shape + self._event_shape))

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = ember.eye(L.shape[-1], dtype=L.dtype).expand(tuple(L.shape))
        L_inv = ember.linalg.solve_triangular(L, eye, upper=False)
        return (L_inv.mT @ L_inv).expand(tuple(self._batch_shape + self._event_shape))

    def _df_matrix(self):
        return self.df.reshape(tuple(self.df.shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        p = self._event_shape[-1]
        factor = self.df - p - 1
        # df <= p + 1: the density has no interior maximum
        factor = ember.where(factor > 0, factor, ember.full_like(factor, math.nan))
        return factor.reshape(tuple(self.df.shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        cov = self.covariance_matrix
        diag = cov.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (cov.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def rsample(self, sample_shape=()):
        """Bartlett's decomposition: L A A^T L^T with A lower triangular, A_ii^2 ~
        chi-squared(df - i) (i from 0) and standard normal entries below the diagonal."""
        p = self._event_shape[-1]
        shape = tuple(sample_shape) + tuple(self._batch_shape)
        df = self.df.expand(shape)
        i = ember.arange(p, dtype=df.dtype)
        chi2 = 2 * _ops.standard_gamma(0.5 * (df.unsqueeze(-1) - i))
        below = ember.randn(shape + (p, p), dtype=df.dtype).tril(-1)
        A = below + ember.diag_embed(chi2.sqrt())
        LA = self._unbroadcasted_scale_tril @ A
        return LA @ LA.mT

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._event_shape[-1]
        nu = self.df
        L = self._unbroadcasted_scale_tril
        log_det_cov = 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        log_det_x = 2 * ember.linalg.cholesky(value).diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = (self.precision_matrix * value).sum((-2, -1))  # tr(Sigma^-1 X)
        return (0.5 * (nu - p - 1) * log_det_x - 0.5 * trace
                - 0.5 * nu * (p * math.log(2) + log_det_cov) - _ops.mvlgamma(0.5 * nu, p))

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -0.5 * self.precision_matrix, 0.5 * (self.df - p - 1)

    def _log_normalizer(self, x, y):
        # with nu = 2 y + p + 1 and Sigma^-1 = -2 x:
        # A = nu/2 (log det Sigma + p log 2) + mvlgamma(nu/2, p)
        p = self._event_shape[-1]
        half_nu = y + 0.5 * (p + 1)
        log_det_precision = 2 * ember.linalg.cholesky(-2 * x).diagonal(
            dim1=-2, dim2=-1).log().sum(-1)
        return half_nu * (p * math.log(2) - log_det_precision) + _ops.mvlgamma(half_nu, p)

    def entropy(self):
        p = self._event_shape[-1]
        nu = self.df
        L = self._unbroadcasted_scale_tril
        log_det_cov = 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        # E[log det X] = sum_i digamma((nu - i) / 2) + p log 2 + log det Sigma
        i = ember.arange(p, dtype=nu.dtype)
        expected_log_det = (_ops.digamma(0.5 * (nu.unsqueeze(-1) - i)).sum(-1)
                            + p * math.log(2) + log_det_cov)
        log_norm = 0.5 * nu * (p * math.log(2) + log_det_cov) + _ops.mvlgamma(0.5 * nu, p)
        return log_norm - 0.5 * (nu - p - 1) * expected_log_det + 0.5 * nu * p
