"""torch.distributions' per-family module paths (``torch.distributions.normal``, ...), so that
``from ember.distributions.normal import Normal`` works as it does with torch. ember keeps the
families in fewer modules; each path here is a small module object re-exporting the names
torch's module of that path defines, registered in ``sys.modules``."""

from __future__ import annotations

import sys
import types

# torch's module name -> the names it provides (all defined elsewhere in ember.distributions)
MODULE_PATHS = {
    "bernoulli": ["Bernoulli"],
    "beta": ["Beta"],
    "binomial": ["Binomial"],
    "categorical": ["Categorical"],
    "cauchy": ["Cauchy"],
    "chi2": ["Chi2"],
    "dirichlet": ["Dirichlet"],
    "exp_family": ["ExponentialFamily"],
    "exponential": ["Exponential"],
    "gamma": ["Gamma"],
    "geometric": ["Geometric"],
    "gumbel": ["Gumbel"],
    "half_normal": ["HalfNormal"],
    "independent": ["Independent"],
    "laplace": ["Laplace"],
    "log_normal": ["LogNormal"],
    "lowrank_multivariate_normal": ["LowRankMultivariateNormal"],
    "mixture_same_family": ["MixtureSameFamily"],
    "multinomial": ["Multinomial"],
    "multivariate_normal": ["MultivariateNormal"],
    "normal": ["Normal"],
    "one_hot_categorical": ["OneHotCategorical", "OneHotCategoricalStraightThrough"],
    "poisson": ["Poisson"],
    "relaxed_bernoulli": ["LogitRelaxedBernoulli", "RelaxedBernoulli"],
    "relaxed_categorical": ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"],
    "studentT": ["StudentT"],
    "uniform": ["Uniform"],
    "lkj_cholesky": ["LKJCholesky"],
    "wishart": ["Wishart"],
    "generalized_pareto": ["GeneralizedPareto"],
    "continuous_bernoulli": ["ContinuousBernoulli"],
    "von_mises": ["VonMises"],
    "weibull": ["Weibull"],
    "pareto": ["Pareto"],
    "negative_binomial": ["NegativeBinomial"],
    "logistic_normal": ["LogisticNormal"],
    "kumaraswamy": ["Kumaraswamy"],
    "inverse_gamma": ["InverseGamma"],
    "half_cauchy": ["HalfCauchy"],
    "fishersnedecor": ["FisherSnedecor"],
}


def install(package) -> None:
    """Creates the modules as attributes of ``package`` and entries of ``sys.modules``."""
    for short, names in MODULE_PATHS.items():
        full = f"{package.__name__}.{short}"
        module = types.ModuleType(full, f"{', '.join(names)} (torch.distributions.{short}'s "
                                        "path; defined in ember.distributions)")
        for name in names:
            setattr(module, name, getattr(package, name))
        module.__all__ = list(names)
        sys.modules[full] = module
        setattr(package, short, module)
