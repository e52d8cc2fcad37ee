"""ember.nn.init: distributions, gains, fans, errors; the default initialisations draw the same
numbers as torch's for the same seed (when torch is installed)."""

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import init


def test_calculate_gain():
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert init.calculate_gain("conv2d") == 1 and init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("foo")


def test_fans_and_errors():
    w = ember.empty(8, 4, 3, 3)
    assert init._calculate_fan_in_and_fan_out(w) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(ember.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(ember.empty(3, 3), mode="fan_avg")


def test_bounds_and_moments():
    w = ember.empty(400, 300)
    init.kaiming_uniform_(w, a=0, nonlinearity="relu")
    bound = math.sqrt(6.0 / 300)
    assert w.abs().max().item() <= bound
    init.kaiming_normal_(w, mode="fan_out")
    assert abs(w.std().item() - math.sqrt(2.0 / 400)) < 0.002
    init.xavier_normal_(w, gain=2.0)
    assert abs(w.std().item() - 2 * math.sqrt(2.0 / 700)) < 0.003
    init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert w.abs().max().item() <= 0.5
    init.constant_(w, 0.3)
    assert w.min().item() == w.max().item() == pytest.approx(0.3)
    init.zeros_(w)
    assert w.abs().sum().item() == 0
    init.ones_(w)
    assert w.sum().item() == w.numel()


def test_eye_dirac_orthogonal():
    w = ember.empty(3, 5)
    init.eye_(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(3, 5))
    c = ember.empty(4, 2, 3, 3)
    init.dirac_(c)
    x = ember.randn(1, 2, 5, 5)
    y = ember.conv2d(x, c, padding=1)
    np.testing.assert_allclose(y[:, :2].numpy(), x.numpy(), rtol=1e-6)
    assert y[:, 2:].abs().sum().item() == 0
    q = ember.empty(6, 4)
    init.orthogonal_(q)
    np.testing.assert_allclose((q.t() @ q).numpy(), np.eye(4), atol=1e-5)
    q2 = ember.empty(3, 7)
    init.orthogonal_(q2, gain=2.0)
    np.testing.assert_allclose((q2 @ q2.t()).numpy(), 4 * np.eye(3), atol=1e-4)


def test_init_does_not_record_graph():
    p = nn.Parameter(ember.empty(3, 3))
    init.normal_(p)
    assert p.is_leaf and p.grad_fn is None


@pytest.mark.parametrize("ctor", [
    lambda m: m.Linear(7, 5), lambda m: m.Conv2d(3, 4, 3), lambda m: m.Conv1d(2, 3, 5),
    lambda m: m.ConvTranspose2d(3, 2, 3), lambda m: m.Bilinear(3, 4, 2),
    lambda m: m.Embedding(6, 3), lambda m: m.BatchNorm2d(3), lambda m: m.LayerNorm(4),
])
def test_default_init_matches_torch(ctor):
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    torch.manual_seed(0)
    if not np.allclose(ember.empty(5).uniform_().numpy(), torch.empty(5).uniform_().numpy()):
        pytest.skip("ember's generator is not torch-compatible")
    ember.manual_seed(42)
    torch.manual_seed(42)
    em, tm = ctor(nn), ctor(torch.nn)
    tsd = tm.state_dict()
    for k, v in em.state_dict().items():
        np.testing.assert_allclose(v.numpy(), tsd[k].numpy(), rtol=1e-6, atol=1e-7, err_msg=k)


def test_xavier_kaiming_match_torch():
    torch = pytest.importorskip("torch")
    for name, kw in [("xavier_uniform_", {}), ("xavier_normal_", {"gain": 1.5}),
                     ("kaiming_uniform_", {"mode": "fan_out"}),
                     ("kaiming_normal_", {"nonlinearity": "relu"}), ("uniform_", {"a": -2}),
                     ("normal_", {"std": 3.0})]:
        ember.manual_seed(3)
        torch.manual_seed(3)
        e = getattr(init, name)(ember.empty(5, 6), **kw)
        t = getattr(torch.nn.init, name)(torch.empty(5, 6), **kw)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def _truncated_normal_moments(mean, std, a, b):
    """Mean and variance of Normal(mean, std) truncated to [a, b] (closed forms)."""
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    m = (pdf(alpha) - pdf(beta)) / z
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - m * m
    return mean + std * m, std * std * var, lambda x: (cdf((x - mean) / std) - cdf(alpha)) / z


@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 3.0),
                                          (0.0, 0.02, -0.04, 0.04), (1.0, 1.0, 1.5, 4.0),
                                          (0.0, 1.0, -0.1, 0.1), (0.0, 1.0, 2.5, 2.6),
                                          (0.0, 1.0, 1.0, 5.0)])
def test_trunc_normal_distribution(mean, std, a, b):
    """Bounds, moments and the CDF (Kolmogorov-Smirnov) of a large draw."""
    ember.manual_seed(7)
    n = 100_000
    w = init.trunc_normal_(ember.empty(n, dtype=ember.float64), mean, std, a, b)
    x = np.sort(w.numpy())
    assert x[0] >= a and x[-1] <= b
    mu, var, cdf = _truncated_normal_moments(mean, std, a, b)
    assert abs(x.mean() - mu) < 5 * math.sqrt(var / n)
    assert abs(x.var() - var) < 0.02 * var
    f = np.vectorize(cdf)(x)
    ks = max(np.abs(f - np.arange(1, n + 1) / n).max(), np.abs(f - np.arange(n) / n).max())
    assert ks < 1.63 / math.sqrt(n)  # the 1% critical value


def test_trunc_normal_generator_and_warning():
    g1, g2 = ember.Generator().manual_seed(3), ember.Generator().manual_seed(3)
    ember.manual_seed(11)
    before = ember.rand(3)
    ember.manual_seed(11)
    a = init.trunc_normal_(ember.empty(4, 5), generator=g1)
    b = init.trunc_normal_(ember.empty(4, 5), generator=g2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(ember.rand(3).numpy(), before.numpy())  # default one untouched
    with pytest.warns(UserWarning, match="more than 2 std"):
        init.trunc_normal_(ember.empty(3), mean=10.0, std=1.0, a=-1.0, b=1.0)


TRUNC_CASES = [(0, {}), (1, dict(mean=0.5, std=2.0, a=-1.0, b=3.0)),
               (2, dict(std=0.02, a=-0.04, b=0.04)),
               # under 30% of the mass in [a, b]: rejection from the uniform
               (3, dict(a=-0.1, b=0.1)), (4, dict(mean=0.0, std=1.0, a=2.5, b=2.6))]


@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
def test_trunc_normal_matches_torch(dtype):
    """Same seed, same numbers, and the generator left where torch leaves it. float32 normal_
    draws agree with torch's to about 2e-6 (its vectorised Box-Muller), so float32 values agree
    to that where the normal branch is taken (bfloat16 to its rounding of them), and exactly
    where the uniform one is."""
    torch = pytest.importorskip("torch")
    for seed, kw in TRUNC_CASES:
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        e = init.trunc_normal_(ember.empty(300, 200, dtype=getattr(ember, dtype)), **kw)
        t = torch.nn.init.trunc_normal_(torch.empty(300, 200, dtype=getattr(torch, dtype)), **kw)
        e, t = e.float().numpy(), t.float().numpy()
        lo, hi = (ember.tensor(kw.get(k, d), dtype=getattr(ember, dtype)).item()
                  for k, d in (("a", -2.0), ("b", 2.0)))  # the bounds in the tensor's dtype
        assert e.min() >= lo and e.max() <= hi
        if dtype != "float64" and seed < 3:  # bfloat16: the same, rounded (an ulp at times)
            rtol = 0.0 if dtype == "float32" else 2.0**-7
            np.testing.assert_allclose(e, t, rtol=rtol, atol=4e-6 * kw.get("std", 1.0))
        else:
            np.testing.assert_array_equal(e, t, err_msg=str(kw))
        assert ember.rand(1).item() == torch.rand(1).item()  # as many draws as torch's
