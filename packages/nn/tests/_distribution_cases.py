"""The same distributions built in ember or torch (``lib``), for the parity and moment tests.

``variant`` 0 and 1 give two parameter sets of every family, so that KL divergences between
different members are checked, not only KL(p, p) = 0.
"""

from __future__ import annotations


def cases(lib, variant: int = 0, dtype: str = "float64", requires_grad: bool = False):
    """(name, constructor) pairs; parameters of the given dtype."""
    def T(v):
        return lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=requires_grad)

    D = lib.distributions
    tf = D.transforms
    k = 1.0 + 0.35 * variant  # the second parameter set scales every positive parameter
    loc = T([0.3 - variant, -1.2, 2.0 + variant])
    scale = T([0.5 * k, 1.5, 2.2 / k])
    p = T([0.2, 0.55 - 0.2 * variant, 0.9 - 0.3 * variant])
    conc = T([0.4 * k, 1.7, 6.5 / k])
    rate = T([0.8, 2.5 * k, 0.3])
    probs2 = T([[0.1, 0.2, 0.7], [0.4, 0.4, 0.2]] if variant == 0 else [[0.3, 0.3, 0.4], [0.1, 0.6, 0.3]])
    logits2 = T([[0.3, -1.0, 2.0], [0.0, 0.5, -0.5]])
    cov = T([[2.0 * k, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5 * k]])
    return [
        ("Normal", lambda: D.Normal(loc, scale)),
        ("Bernoulli", lambda: D.Bernoulli(probs=p)),
        ("BernoulliLogits", lambda: D.Bernoulli(logits=loc)),
        ("Categorical", lambda: D.Categorical(probs=probs2)),
        ("CategoricalLogits", lambda: D.Categorical(logits=logits2 * k)),
        ("Uniform", lambda: D.Uniform(loc - 0.5 * variant, loc + scale + variant)),
        ("Beta", lambda: D.Beta(conc, rate)),
        ("Gamma", lambda: D.Gamma(conc, rate)),
        ("Dirichlet", lambda: D.Dirichlet(T([[0.5, 1.5, 3.0], [2.0, 2.0, 0.7]]) * k)),
        ("MultivariateNormal", lambda: D.MultivariateNormal(loc, covariance_matrix=cov)),
        ("MultivariateNormalTril",
         lambda: D.MultivariateNormal(loc, scale_tril=lib.linalg.cholesky(cov))),
        ("MultivariateNormalPrec", lambda: D.MultivariateNormal(loc, precision_matrix=cov)),
        ("Independent", lambda: D.Independent(D.Normal(loc, scale), 1)),
        ("Exponential", lambda: D.Exponential(rate)),
        ("Laplace", lambda: D.Laplace(loc, scale)),
        ("Poisson", lambda: D.Poisson(rate * 3)),
        ("PoissonLarge", lambda: D.Poisson(rate * 40)),
        ("Binomial", lambda: D.Binomial(T([5.0, 10.0, 20.0]), probs=p)),
        ("BinomialLarge", lambda: D.Binomial(T([50.0, 300.0, 80.0]), probs=p)),
        ("Multinomial", lambda: D.Multinomial(6, probs=probs2)),
        ("OneHotCategorical", lambda: D.OneHotCategorical(probs=probs2)),
        ("LogNormal", lambda: D.LogNormal(loc, scale * 0.4)),
        ("StudentT", lambda: D.StudentT(conc * 3, loc, scale)),
        ("Cauchy", lambda: D.Cauchy(loc, scale)),
        ("Gumbel", lambda: D.Gumbel(loc, scale)),
        ("Chi2", lambda: D.Chi2(conc * 2)),
        ("HalfNormal", lambda: D.HalfNormal(scale)),
        ("Geometric", lambda: D.Geometric(probs=p)),
        ("RelaxedBernoulli", lambda: D.RelaxedBernoulli(T(0.7), probs=p)),
        ("RelaxedOneHotCategorical", lambda: D.RelaxedOneHotCategorical(T(0.7), probs=probs2)),
        ("MixtureSameFamily", lambda: D.MixtureSameFamily(
            D.Categorical(probs=T([0.3, 0.7])), D.Normal(T([-1.0, 2.0]), T([0.5, 1.0]) * k))),
        ("LowRankMultivariateNormal", lambda: D.LowRankMultivariateNormal(
            loc, T([[1.0, 0.2], [0.3, -0.5], [0.0, 0.4]]) * k, scale)),
        ("HalfCauchy", lambda: D.HalfCauchy(scale)),
        ("Pareto", lambda: D.Pareto(scale, conc + 4)),
        ("Weibull", lambda: D.Weibull(scale, conc + 1)),
        ("Kumaraswamy", lambda: D.Kumaraswamy(conc, rate + 1)),
        ("InverseGamma", lambda: D.InverseGamma(conc + 4.5, rate)),
        ("FisherSnedecor", lambda: D.FisherSnedecor(conc * 3, rate * 10)),
        ("NegativeBinomial", lambda: D.NegativeBinomial(T([3.0, 5.0, 2.5]), probs=p)),
        ("LogisticNormal", lambda: D.LogisticNormal(loc, scale)),
        ("ContinuousBernoulli", lambda: D.ContinuousBernoulli(probs=p)),
        ("ContinuousBernoulliNearHalf", lambda: D.ContinuousBernoulli(probs=T([0.4995, 0.5, 0.5008]))),
        ("VonMises", lambda: D.VonMises(loc, conc)),
        ("GeneralizedPareto", lambda: D.GeneralizedPareto(loc, scale, T([0.1, -0.2, 0.0]))),
        ("Wishart", lambda: D.Wishart(T(5.0 + variant), covariance_matrix=cov)),
        ("WishartTril", lambda: D.Wishart(T([4.0, 6.5]), scale_tril=lib.linalg.cholesky(cov))),
        ("LKJCholesky", lambda: D.LKJCholesky(3, T(1.5 * k))),
        ("LKJCholeskyBatch", lambda: D.LKJCholesky(4, T([0.5, 1.0, 3.0]))),
        ("TransformedDistribution", lambda: D.TransformedDistribution(
            D.Normal(loc, scale), [tf.ExpTransform(), tf.AffineTransform(1.0, 2.0 * k)])),
    ]


def transforms(lib):
    """(name, constructor, input shape) of each transform, for the parity and inverse tests."""
    def T(v):
        return lib.tensor(v, dtype=lib.float64)

    t = lib.distributions.transforms
    return [
        ("Exp", lambda: t.ExpTransform(), (3, 4)),
        ("Affine", lambda: t.AffineTransform(T([1.0, -2.0, 0.5, 3.0]), T([2.0, -0.5, 1.5, 0.3])),
         (3, 4)),
        ("Sigmoid", lambda: t.SigmoidTransform(), (3, 4)),
        ("Tanh", lambda: t.TanhTransform(), (3, 4)),
        ("Softmax", lambda: t.SoftmaxTransform(), (3, 4)),
        ("StickBreaking", lambda: t.StickBreakingTransform(), (3, 4)),
        ("Power", lambda: t.PowerTransform(T(2.5)), (3, 4)),
        ("Abs", lambda: t.AbsTransform(), (3, 4)),
        ("LowerCholesky", lambda: t.LowerCholeskyTransform(), (3, 4, 4)),
        ("Compose", lambda: t.ComposeTransform([t.AffineTransform(0.5, 2.0), t.ExpTransform()]),
         (3, 4)),
        ("Inv", lambda: t.ExpTransform().inv, (3, 4)),
        ("Softplus", lambda: t.SoftplusTransform(), (3, 4)),
        ("Independent", lambda: t.IndependentTransform(t.ExpTransform(), 1), (3, 4)),
        ("Reshape", lambda: t.ReshapeTransform((4,), (2, 2)), (3, 4)),
        ("PositiveDefinite", lambda: t.PositiveDefiniteTransform(), (3, 4, 4)),
        ("CorrCholesky", lambda: t.CorrCholeskyTransform(), (3, 6)),
        ("Cat", lambda: t.CatTransform([t.ExpTransform(), t.AffineTransform(1.0, 2.0)], dim=-1,
                                       lengths=[2, 2]), (3, 4)),
        ("CatBatch", lambda: t.CatTransform([t.ExpTransform(), t.SigmoidTransform()], dim=0,
                                            lengths=[1, 2]), (3, 4)),
        ("Stack", lambda: t.StackTransform([t.ExpTransform(), t.SigmoidTransform(),
                                            t.ExpTransform(), t.TanhTransform()], dim=-1), (3, 4)),
        ("CumulativeDistribution",
         lambda: t.CumulativeDistributionTransform(lib.distributions.Normal(T(0.2), T(1.3))),
         (3, 4)),
    ]


CONSTRAINTS = ["real", "positive", "nonnegative", "unit_interval", "simplex", "lower_cholesky",
               "corr_cholesky", "positive_definite", "real_vector", "greater_than(1.5)",
               "less_than(-0.5)", "interval(-1.0, 2.0)", "half_open_interval(0.0, 3.0)",
               "greater_than_eq(2.0)"]
