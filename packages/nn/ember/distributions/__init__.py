"""Probability distributions with torch.distributions' API: parameterized families with
``sample`` / ``rsample`` (reparameterized, differentiable), ``log_prob``, ``entropy``, moments,
``cdf`` / ``icdf``; ``constraints`` on parameters and values; ``transforms`` and
``TransformedDistribution``; ``kl_divergence`` with ``register_kl``; ``biject_to`` /
``transform_to``.

Samples come from ember's default generator (``ember.manual_seed``). Argument and value
validation is on by default, as in torch (``Distribution.set_default_validate_args(False)``
turns it off).
"""

import sys

from ember.distributions import constraints, transforms
from ember.distributions.bounded import ContinuousBernoulli, VonMises
from ember.distributions.constraint_registry import biject_to, transform_to
from ember.distributions.continuous import (
    Beta,
    Cauchy,
    Chi2,
    Exponential,
    Gamma,
    Gumbel,
    HalfNormal,
    Laplace,
    Normal,
    StudentT,
    Uniform,
)
from ember.distributions.discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    Geometric,
    Multinomial,
    NegativeBinomial,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
    Poisson,
)
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.kl import kl_divergence, register_kl
from ember.distributions.matrix import LKJCholesky, Wishart
from ember.distributions.multivariate import (
    Dirichlet,
    LowRankMultivariateNormal,
    MultivariateNormal,
)
from ember.distributions.positive import (
    FisherSnedecor,
    GeneralizedPareto,
    HalfCauchy,
    InverseGamma,
    Kumaraswamy,
    LogisticNormal,
    Pareto,
    Weibull,
)
from ember.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from ember.distributions.transformed_distribution import (
    Independent,
    LogNormal,
    MixtureSameFamily,
    TransformedDistribution,
)
from ember.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)

__all__ = [
    "LKJCholesky", "Wishart",
    "CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform", "StackTransform",
    "GeneralizedPareto",
    "ContinuousBernoulli", "VonMises",
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical",
    "Cauchy", "Chi2", "ComposeTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical",
    "ExpTransform", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "Geometric",
    "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "IndependentTransform",
    "InverseGamma", "Kumaraswamy", "Laplace", "LogNormal", "LogisticNormal",
    "LogitRelaxedBernoulli", "LowRankMultivariateNormal", "LowerCholeskyTransform",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson",
    "PositiveDefiniteTransform", "PowerTransform", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "Weibull", "biject_to", "constraints",
    "identity_transform", "kl_divergence", "register_kl", "transform_to", "transforms",
]

# `from ember.distributions.normal import Normal`, as with torch's module paths
from ember.distributions import _module_paths  # noqa: E402

_module_paths.install(sys.modules[__name__])
