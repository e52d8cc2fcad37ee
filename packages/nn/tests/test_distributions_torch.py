"""ember.distributions against torch.distributions with the same parameters (float64): every
property, log_prob/cdf/icdf at torch's samples, entropy, enumerate_support, KL divergences between
all pairs torch registers, transforms and biject_to/transform_to. Skipped without torch."""

from __future__ import annotations

import numpy as np
import pytest
from _distribution_cases import CONSTRAINTS, cases, transforms

import ember
import ember.distributions  # noqa: F401

torch = pytest.importorskip("torch")

# torch's Wishart sampler warns on every draw (its singularity check is inverted)
pytestmark = pytest.mark.filterwarnings("ignore:Singular sample detected")

NAMES = [name for name, _ in cases(ember)]


def as_ember(t):
    return ember.tensor(t.detach().numpy())


def as_numpy(x):
    return np.asarray(x.detach().numpy())


def outcome(fn):
    """fn()'s value, None where not implemented, or the exception it raised."""
    try:
        return fn()
    except NotImplementedError:
        return None
    except Exception as e:  # noqa: BLE001  (compared by class with torch's)
        return e


def assert_same(expected, got, what):
    if isinstance(expected, Exception) or isinstance(got, Exception):
        assert type(expected) is type(got), f"{what}: torch {expected!r}, ember {got!r}"
        return
    assert (expected is None) == (got is None), f"{what}: implemented in only one of them"
    if expected is None:
        return
    a, b = as_numpy(expected), as_numpy(got)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=what)


# torch's Kumaraswamy.mode is NaN wherever concentration0 > 1 (it takes log1p(-concentration0));
# ember's is the density's maximum, checked against a grid in test_distributions.py. torch's
# GeneralizedPareto.log_prob/cdf raise "Double did not match Float" on float64 parameters (they
# are compared in float32 in test_generalized_pareto_float32_matches_torch).
TORCH_DIFFERS = {("Kumaraswamy", "mode"), ("GeneralizedPareto", "log_prob"),
                 ("GeneralizedPareto", "cdf"), ("GeneralizedPareto", "expand.log_prob")}


@pytest.mark.parametrize("name", NAMES)
def test_matches_torch(name):
    torch.manual_seed(0)
    td = dict(cases(torch))[name]()
    ed = dict(cases(ember))[name]()
    assert tuple(ed.batch_shape) == tuple(td.batch_shape)
    assert tuple(ed.event_shape) == tuple(td.event_shape)
    assert ed.has_rsample == td.has_rsample
    assert ed.has_enumerate_support == td.has_enumerate_support
    x = td.sample((5,))
    q = torch.rand(td.batch_shape, dtype=torch.float64)
    for what, t_fn, e_fn in [
        ("mean", lambda: td.mean, lambda: ed.mean),
        ("variance", lambda: td.variance, lambda: ed.variance),
        ("stddev", lambda: td.stddev, lambda: ed.stddev),
        ("mode", lambda: td.mode, lambda: ed.mode),
        ("entropy", td.entropy, ed.entropy),
        ("log_prob", lambda: td.log_prob(x), lambda: ed.log_prob(as_ember(x))),
        ("cdf", lambda: td.cdf(x), lambda: ed.cdf(as_ember(x))),
        ("icdf", lambda: td.icdf(q), lambda: ed.icdf(as_ember(q))),
        ("enumerate_support", td.enumerate_support, ed.enumerate_support),
        ("perplexity", td.perplexity, ed.perplexity),
    ]:
        if (name, what) in TORCH_DIFFERS:
            continue
        assert_same(outcome(t_fn), outcome(e_fn), f"{name}.{what}")
    if (name, "expand.log_prob") in TORCH_DIFFERS:
        return
    # expand keeps every value, broadcast over the new batch dimensions
    big = (2,) + tuple(td.batch_shape)
    assert_same(outcome(lambda: td.expand(big).log_prob(x[:2].unsqueeze(1).expand(
        (2,) + big + tuple(td.event_shape)) if x.dim() else x)),
                outcome(lambda: ed.expand(big).log_prob(as_ember(x[:2].unsqueeze(1).expand(
                    (2,) + big + tuple(td.event_shape)) if x.dim() else x))),
                f"{name}.expand.log_prob")


@pytest.mark.parametrize("name", NAMES)
def test_sample_shapes_match_torch(name):
    td = dict(cases(torch))[name]()
    ed = dict(cases(ember))[name]()
    for shape in [(), (3,), (2, 1)]:
        s = ed.sample(shape)
        assert tuple(s.shape) == tuple(td.sample(shape).shape)
        assert s.dtype == getattr(ember, str(td.sample(shape).dtype).split(".")[-1])
        if td.has_rsample:
            assert tuple(ed.rsample(shape).shape) == tuple(s.shape)


@pytest.mark.parametrize("name", NAMES)
def test_float32_matches_torch(name):
    """float32 parameters: the same dtypes as torch's everywhere, values to float32 accuracy."""
    torch.manual_seed(0)
    td = dict(cases(torch, dtype="float32"))[name]()
    ed = dict(cases(ember, dtype="float32"))[name]()
    x = td.sample((4,))
    assert str(ed.sample((2,)).dtype) == str(td.sample((2,)).dtype).replace("torch", "ember")
    if td.has_rsample:
        assert ed.rsample((2,)).dtype == ember.float32
    for what, t_fn, e_fn in [
        ("log_prob", lambda: td.log_prob(x), lambda: ed.log_prob(as_ember(x))),
        ("entropy", td.entropy, ed.entropy),
        ("mean", lambda: td.mean, lambda: ed.mean),
    ]:
        expected, got = outcome(t_fn), outcome(e_fn)
        if expected is None or isinstance(expected, Exception):
            assert type(got) is type(expected)
            continue
        assert str(got.dtype) == str(expected.dtype).replace("torch", "ember"), what
        np.testing.assert_allclose(as_numpy(got), as_numpy(expected), rtol=2e-4, atol=1e-5,
                                   equal_nan=True, err_msg=f"{name}.{what}")


# Distributions whose sampler draws the same stream of uniform/normal numbers as torch's: ember's
# CPU generator gives torch's numbers for the same seed, so these give torch's samples.
SAME_STREAM = ["Normal", "Bernoulli", "Uniform", "MultivariateNormal", "Independent",
               "Exponential", "Laplace", "LogNormal", "Cauchy", "Gumbel", "HalfNormal",
               "Geometric", "RelaxedBernoulli", "LowRankMultivariateNormal",
               "TransformedDistribution"]


@pytest.mark.parametrize("name", SAME_STREAM)
def test_samples_equal_torch_with_the_same_seed(name):
    torch.manual_seed(7)
    expected = dict(cases(torch))[name]().sample((50,))
    ember.manual_seed(7)
    got = dict(cases(ember))[name]().sample((50,))
    np.testing.assert_allclose(as_numpy(got), as_numpy(expected), rtol=1e-10, atol=1e-12)


def test_every_kl_pair_matches_torch():
    t0, t1 = dict(cases(torch, 0)), dict(cases(torch, 1))
    e0, e1 = dict(cases(ember, 0)), dict(cases(ember, 1))
    compared = 0
    for a in NAMES:
        for b in NAMES:
            if {a, b} & {"WishartTril"}:
                continue  # batched: test_batched_wishart_kl_matches_torch_per_element
            expected = outcome(lambda a=a, b=b: torch.distributions.kl_divergence(t0[a](), t1[b]()))
            got = outcome(lambda a=a, b=b: ember.distributions.kl_divergence(e0[a](), e1[b]()))
            assert_same(expected, got, f"kl({a}, {b})")
            compared += expected is not None and not isinstance(expected, Exception)
    assert compared >= 40
    # every pair ember registers is one torch registers (the rest are listed in the docs)
    assert set(map(lambda k: (k[0].__name__, k[1].__name__),
                   ember.distributions.kl._REGISTRY)) <= set(
        map(lambda k: (k[0].__name__, k[1].__name__), torch.distributions.kl._KL_REGISTRY))


def _transform_input(lib, name, shape):
    torch.manual_seed(1)
    x = torch.randn(*shape, dtype=torch.float64) * 0.7
    if name == "PositiveDefinite":
        x = x @ x.mT + torch.eye(shape[-1], dtype=torch.float64)
    if name == "CorrCholesky":
        x = x * 0.7
    return x


@pytest.mark.parametrize("name", [n for n, _, _ in transforms(ember)])
def test_transform_matches_torch(name):
    tt, shape = [(c, s) for n, c, s in transforms(torch) if n == name][0]
    et = [c for n, c, _ in transforms(ember) if n == name][0]
    tt, et = tt(), et()
    x = _transform_input(torch, name, shape)
    ty, ey = tt(x), et(as_ember(x))
    assert_same(ty, ey, f"{name}()")
    assert_same(tt.inv(ty), et.inv(ey), f"{name}.inv")
    assert_same(outcome(lambda: tt.log_abs_det_jacobian(x, ty)),
                outcome(lambda: et.log_abs_det_jacobian(as_ember(x), ey)), f"{name}.ladj")
    assert tuple(et.forward_shape(tuple(x.shape))) == tuple(tt.forward_shape(x.shape))
    assert tuple(et.inverse_shape(tuple(ty.shape))) == tuple(tt.inverse_shape(ty.shape))
    assert et.bijective == tt.bijective
    assert et.domain.event_dim == tt.domain.event_dim
    assert et.codomain.event_dim == tt.codomain.event_dim


@pytest.mark.parametrize("constraint", CONSTRAINTS)
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry_matches_torch(constraint, registry):
    tc = eval("torch.distributions.constraints." + constraint)
    ec = eval("ember.distributions.constraints." + constraint)
    t_tf = outcome(lambda: getattr(torch.distributions, registry)(tc))
    e_tf = outcome(lambda: getattr(ember.distributions, registry)(ec))
    assert (t_tf is None) == (e_tf is None)
    if t_tf is None:
        return
    torch.manual_seed(2)
    shape = {"lower_cholesky": (2, 3, 3), "positive_definite": (2, 3, 3),
             "corr_cholesky": (2, 6)}.get(constraint, (2, 4))
    x = torch.randn(*shape, dtype=torch.float64)
    ty, ey = t_tf(x), e_tf(as_ember(x))
    assert_same(ty, ey, f"{registry}({constraint})")
    assert bool(ec.check(ey).all())
    assert_same(outcome(lambda: t_tf.log_abs_det_jacobian(x, ty)),
                outcome(lambda: e_tf.log_abs_det_jacobian(as_ember(x), ey)),
                f"{registry}({constraint}).ladj")


def test_standard_gamma_grad_matches_torch():
    from ember.distributions import _ops

    torch.manual_seed(3)
    for a in [0.05, 0.7, 1.0, 3.5, 40.0, 400.0]:
        alpha = torch.full((200,), a, dtype=torch.float64)
        x = torch._standard_gamma(alpha)
        expected = torch._standard_gamma_grad(alpha, x)
        got = _ops._standard_gamma_grad(as_ember(x), as_ember(alpha))
        # torch's is itself an approximation (series / saddle point), good to about 1e-4
        np.testing.assert_allclose(as_numpy(got), as_numpy(expected), rtol=2e-3, atol=1e-8)


def test_special_functions_match_torch():
    from ember.distributions import _ops

    x = torch.tensor([1e-3, 0.1, 0.5, 0.99, 1.0, 1.5, 2.0, 3.3, 7.9, 8.1, 25.0, 1e3, 1e6, -0.3,
                      -2.5, -7.25], dtype=torch.float64)
    np.testing.assert_allclose(as_numpy(_ops._lgamma(as_ember(x))), as_numpy(torch.lgamma(x)),
                               rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(as_numpy(_ops._digamma(as_ember(x))), as_numpy(torch.digamma(x)),
                               rtol=1e-11, atol=1e-12)
    pos = x[x > 0]
    np.testing.assert_allclose(as_numpy(_ops._polygamma(1, as_ember(pos))),
                               as_numpy(torch.polygamma(1, pos)), rtol=1e-8)  # torch's: ~5e-10
    a = torch.tensor([0.3, 1.0, 2.5, 10.0, 150.0, 0.9], dtype=torch.float64)
    for xs in [0.01, 0.8, 2.5, 11.0, 160.0, 300.0]:
        v = torch.full_like(a, xs)
        np.testing.assert_allclose(
            as_numpy(_ops.special_gammainc(as_ember(a), as_ember(v))),
            as_numpy(torch.special.gammainc(a, v)), rtol=1e-9, atol=1e-14)  # torch: ~1e-10 at large a


@pytest.mark.parametrize("build", [
    lambda lib: lib.distributions.Normal(lib.tensor(0.0), lib.tensor(-1.0)),
    lambda lib: lib.distributions.Bernoulli(probs=lib.tensor([0.2, 1.5])),
    lambda lib: lib.distributions.Categorical(probs=lib.tensor([-0.1, 1.1])),
    lambda lib: lib.distributions.Gamma(lib.tensor(0.0), lib.tensor(1.0)),
    lambda lib: lib.distributions.Bernoulli(probs=lib.tensor(0.3), logits=lib.tensor(0.1)),
    lambda lib: lib.distributions.Exponential(lib.tensor(1.0)).log_prob(lib.tensor(-1.0)),
    lambda lib: lib.distributions.Normal(lib.tensor([0.0, 1.0]), 1.0).log_prob(lib.ones(3)),
])
def test_validation_errors_match_torch(build):
    with pytest.raises(Exception) as expected:
        build(torch)
    with pytest.raises(Exception) as got:
        build(ember)
    assert type(got.value) is type(expected.value)
    assert str(got.value).replace("ember", "torch") == str(expected.value)


def test_generalized_pareto_float32_matches_torch():
    args = ([0.3, -1.2, 2.0, 0.0], [0.5, 1.5, 2.2, 1.0], [0.1, -0.2, 0.0, 0.4])
    td = torch.distributions.GeneralizedPareto(*(torch.tensor(a) for a in args))
    ed = ember.distributions.GeneralizedPareto(*(ember.tensor(a) for a in args))
    torch.manual_seed(0)
    x = td.sample((6,))
    q = torch.rand(4)
    for what, expected, got in [
        ("log_prob", td.log_prob(x), ed.log_prob(as_ember(x))),
        ("cdf", td.cdf(x), ed.cdf(as_ember(x))),
        ("icdf", td.icdf(q), ed.icdf(as_ember(q))),
    ]:
        np.testing.assert_allclose(as_numpy(got), as_numpy(expected), rtol=2e-5, atol=1e-6,
                                   err_msg=what)


def test_batched_wishart_kl_matches_torch_per_element():
    """torch's exponential-family KL sums the natural-parameter terms over the batch dimensions
    too (negative values for a batch of Wisharts); each element alone it gets right."""
    tp, tq = dict(cases(torch, 0))["Wishart"](), dict(cases(torch, 1))["WishartTril"]()
    ep, eq = dict(cases(ember, 0))["Wishart"](), dict(cases(ember, 1))["WishartTril"]()
    got = as_numpy(ember.distributions.kl_divergence(ep, eq))
    for i in range(2):
        q_i = torch.distributions.Wishart(tq.df[i], scale_tril=tq.scale_tril[i])
        expected = float(torch.distributions.kl_divergence(tp, q_i).detach())
        np.testing.assert_allclose(got[i], expected, rtol=1e-9)
