"""nn.utils additions (parametrize, parametrizations, the hook forms of weight/spectral norm,
fusion, stateless.functional_call, get_total_norm, clip_grads_with_norm_, skip_init) and the
deprecated nn.init names: hand-computed values, and torch's values where torch is installed."""

import warnings

import numpy as np
import pytest

import ember
import ember.autograd  # noqa: F401
from ember import nn
from ember.nn.utils import parametrizations as P
from ember.nn.utils import parametrize

RNG = np.random.default_rng(0)


def _t(a):
    return ember.tensor(np.asarray(a, dtype=np.float64))


def _linear(fan_in, fan_out, torch=None, cls="Linear"):
    """An ember layer (float64), and torch's with the same weights when torch is given."""
    e = getattr(nn, cls)(fan_in, fan_out).double()
    if torch is None:
        return e
    t = getattr(torch.nn, cls)(fan_in, fan_out).double()
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, e


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A):
        return A.triu()


# ---- parametrize ----
def test_register_and_remove_parametrization():
    m = _linear(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    W = m.weight.detach().numpy()
    np.testing.assert_array_equal(W, W.T)
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    # the gradient reaches the original through the parametrization
    m(ember.ones(1, 3, dtype=ember.float64)).sum().backward()
    np.testing.assert_array_equal(m.parametrizations.weight.original.grad.numpy(),
                                  [[1, 2, 2], [0, 1, 2], [0, 0, 1]])
    # assignment goes through right_inverse
    S = RNG.standard_normal((3, 3))
    S = S + S.T
    m.weight = _t(S)
    np.testing.assert_allclose(m.weight.detach().numpy(), S)
    with parametrize.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    original = m.parametrizations.weight.original
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and type(m.weight) is nn.Parameter
    assert m.weight is original  # the optimizer's tensor stays the parameter
    np.testing.assert_allclose(m.weight.detach().numpy(), S)
    with pytest.raises(ValueError, match="does not have a parametrization"):
        parametrize.remove_parametrizations(m, "weight")


def test_parametrization_checks():
    class Shrink(nn.Module):
        def forward(self, X):
            return X[:1]

    m = _linear(3, 3)
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(m, "weight", Shrink())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        parametrize.register_parametrization(m, "nothing", Symmetric())


def test_chained_parametrizations():
    class Double(nn.Module):
        def forward(self, X):
            return X * 2

    m = _linear(2, 2)
    w = m.weight.detach().numpy().copy()
    parametrize.register_parametrization(m, "weight", Symmetric(), unsafe=True)
    parametrize.register_parametrization(m, "weight", Double())
    want = 2 * (np.triu(w) + np.triu(w, 1).T)
    np.testing.assert_allclose(m.weight.detach().numpy(), want)
    assert len(m.parametrizations.weight) == 2


# ---- parametrizations ----
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_by_hand(dim):
    m = _linear(4, 3)
    W = m.weight.detach().numpy().copy()
    P.weight_norm(m, dim=dim)
    g = m.parametrizations.weight.original0.detach().numpy()
    if dim is None:
        np.testing.assert_allclose(g, np.linalg.norm(W))
    else:
        np.testing.assert_allclose(g, np.linalg.norm(W, axis=1 - dim, keepdims=True))
    np.testing.assert_allclose(m.weight.detach().numpy(), W, rtol=1e-12)
    with ember.no_grad():
        m.parametrizations.weight.original0.mul_(2.0)
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * W, rtol=1e-12)


def test_spectral_norm_parametrization_by_hand():
    m = _linear(5, 4)
    W = m.weight.detach().numpy().copy()
    P.spectral_norm(m, n_power_iterations=30)
    m.train()
    for _ in range(3):
        out = m.weight.detach().numpy()
    np.testing.assert_allclose(out, W / np.linalg.svd(W, compute_uv=False)[0], rtol=1e-8)
    assert sorted(m.parametrizations.weight[0]._buffers) == ["_u", "_v"]


@pytest.mark.parametrize("shape,orth_map", [((4, 4), "matrix_exp"), ((4, 4), "cayley"),
                                            ((5, 3), "householder"), ((3, 5), None),
                                            ((5, 3), "cayley")])
def test_orthogonal_is_orthogonal(shape, orth_map):
    m = _linear(shape[1], shape[0])
    P.orthogonal(m, orthogonal_map=orth_map)
    W = m.weight.detach().numpy()
    gram = W.T @ W if shape[0] >= shape[1] else W @ W.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)
    # (torch's householder map multiplies by int(diagonal): moving the original off -1 zeroes
    # columns, so only the exponential maps are checked away from the initial point)
    if m.parametrizations.weight[0].orthogonal_map.name != "householder":
        with ember.no_grad():
            m.parametrizations.weight.original.add_(_t(RNG.standard_normal(shape) * 0.1))
        W = m.weight.detach().numpy()
        gram = W.T @ W if shape[0] >= shape[1] else W @ W.T
        np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-12)
    # assigning an orthogonal matrix gives it back
    Q = np.linalg.qr(RNG.standard_normal((max(shape), min(shape))))[0]
    Q = Q if shape[0] >= shape[1] else Q.T
    m.weight = _t(Q)
    np.testing.assert_allclose(m.weight.detach().numpy(), Q, atol=1e-12)


@pytest.mark.parametrize("name,kwargs", [("weight_norm", {}), ("weight_norm", {"dim": None}),
                                         ("spectral_norm", {}),
                                         ("orthogonal", {"orthogonal_map": "matrix_exp"}),
                                         ("orthogonal", {"orthogonal_map": "cayley"})])
def test_parametrizations_match_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    t, e = _linear(4, 4, torch)
    getattr(torch.nn.utils.parametrizations, name)(t, **kwargs)
    getattr(P, name)(e, **kwargs)
    assert list(t.state_dict()) == list(e.state_dict())
    tp, ep = t.parametrizations.weight, e.parametrizations.weight
    for k, v in tp[0].state_dict().items():  # the random state (spectral _u/_v, orth base)
        ep[0].state_dict()[k].copy_(ember.tensor(v.numpy()))
    for k, v in tp.named_parameters():
        with ember.no_grad():
            dict(ep.named_parameters())[k].copy_(ember.tensor(v.detach().numpy()))
    x = RNG.standard_normal((3, 4))
    for _ in range(2):
        yt, ye = t(torch.tensor(x)), e(_t(x))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    yt.sum().backward()
    ye.sum().backward()
    for (name, pt), (_, pe) in zip(tp.named_parameters(), ep.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


# ---- hook forms ----
def test_weight_norm_hook_by_hand_and_remove():
    m = _linear(4, 3)
    W = m.weight.detach().numpy().copy()
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(m.weight_g.detach().numpy(),
                               np.linalg.norm(W, axis=1, keepdims=True))
    with ember.no_grad():
        m.weight_g.mul_(3.0)
    x = RNG.standard_normal((2, 4))
    np.testing.assert_allclose(m(_t(x)).detach().numpy(),
                               x @ (3 * W).T + m.bias.detach().numpy(), rtol=1e-12)
    nn.utils.remove_weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.detach().numpy(), 3 * W, rtol=1e-12)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(m)


def test_spectral_norm_hook_by_hand_and_remove():
    m = _linear(6, 4)
    W = m.weight.detach().numpy().copy()
    nn.utils.spectral_norm(m, n_power_iterations=50)
    assert sorted(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    m(_t(np.ones((1, 6))))
    sigma = np.linalg.svd(W, compute_uv=False)[0]
    np.testing.assert_allclose(m.weight.detach().numpy(), W / sigma, rtol=1e-8)
    nn.utils.remove_spectral_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.detach().numpy(), W / sigma, rtol=1e-8)


@pytest.mark.parametrize("name", ["weight_norm", "spectral_norm"])
def test_hook_forms_match_torch(name):
    torch = pytest.importorskip("torch")
    t, e = _linear(5, 3, torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(torch.nn.utils, name)(t)
        getattr(nn.utils, name)(e)
    for k, v in t.state_dict().items():
        e.state_dict()[k].copy_(ember.tensor(v.numpy()))
    assert list(t.state_dict()) == list(e.state_dict())
    for _ in range(3):
        x = RNG.standard_normal((2, 5))
        yt, ye = t(torch.tensor(x)), e(_t(x))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-10)
    yt.sum().backward()
    ye.sum().backward()
    for (name, pt), (_, pe) in zip(t.named_parameters(), e.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-9, atol=1e-14,
                                   err_msg=name)


# ---- fusion, functional_call, norms, init ----
def _trained_bn(bn, make_input):
    bn.train()
    bn(make_input())
    bn.eval()
    with ember.no_grad():
        bn.weight.copy_(_t(RNG.standard_normal(bn.num_features)))
        bn.bias.copy_(_t(RNG.standard_normal(bn.num_features)))
    return bn


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn(transpose):
    conv = (nn.ConvTranspose2d(2, 3, 3) if transpose else nn.Conv2d(2, 3, 3)).double().eval()
    bn = _trained_bn(nn.BatchNorm2d(3).double(),
                     lambda: conv(ember.randn(4, 2, 5, 5, dtype=ember.float64)))
    fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    x = ember.randn(2, 2, 5, 5, dtype=ember.float64)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(),
                               atol=1e-12)
    assert type(fused.weight) is nn.Parameter and fused is not conv
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nn.utils.fuse_conv_bn_eval(conv.train(), bn)


def test_fuse_linear_bn():
    lin = nn.Linear(3, 4).double().eval()
    bn = _trained_bn(nn.BatchNorm1d(4).double(),
                     lambda: lin(ember.randn(8, 3, dtype=ember.float64)))
    fused = nn.utils.fuse_linear_bn_eval(lin, bn)
    x = ember.randn(5, 3, dtype=ember.float64)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(lin(x)).detach().numpy(),
                               atol=1e-12)


def test_stateless_functional_call():
    lin = nn.Linear(3, 2)
    before = lin.weight.detach().numpy().copy()
    w = ember.zeros(2, 3, requires_grad=True)
    out = nn.utils.stateless.functional_call(lin, {"weight": w}, (ember.ones(1, 3),))
    np.testing.assert_allclose(out.detach().numpy()[0], lin.bias.detach().numpy())
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(lin.weight.detach().numpy(), before)
    seq = nn.Sequential(nn.Linear(2, 2))
    out = nn.utils.stateless.functional_call(
        seq, {"0.weight": ember.eye(2), "0.bias": ember.zeros(2)}, ember.tensor([[1.0, 2.0]]))
    np.testing.assert_array_equal(out.detach().numpy(), [[1.0, 2.0]])
    with pytest.raises(RuntimeError, match="Missing key"):
        nn.utils.stateless.functional_call(seq, {"0.weight": ember.eye(2)}, ember.ones(1, 2),
                                           strict=True)


def test_get_total_norm_and_clip_grads_with_norm():
    a, b = ember.ones(3, requires_grad=True), ember.ones(1, requires_grad=True)
    a.grad, b.grad = ember.full((3,), 3.0), ember.full((1,), 4.0)
    total = nn.utils.get_total_norm([a.grad, b.grad])
    np.testing.assert_allclose(total.item(), np.sqrt(27 + 16))
    np.testing.assert_allclose(nn.utils.get_total_norm([a.grad, b.grad], 1).item(), 13.0)
    nn.utils.clip_grads_with_norm_([a, b], 1.0, total)
    np.testing.assert_allclose(a.grad.numpy(), 3.0 / (np.sqrt(43) + 1e-6), rtol=1e-6)
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.get_total_norm([ember.tensor([float("inf")])], error_if_nonfinite=True)


def test_skip_init_and_memory_format():
    m = nn.utils.skip_init(nn.Linear, 2, 3)
    assert isinstance(m, nn.Linear) and tuple(m.weight.shape) == (3, 2)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)
    assert nn.utils.convert_conv2d_weight_memory_format(m, None) is m


def test_deprecated_init_names_warn():
    t = ember.empty(3, 3)
    for name in ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
                 "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]:
        args = {"constant": (0.5,), "sparse": (0.5,)}.get(name, ())
        target = ember.empty(2, 2, 3) if name == "dirac" else t
        with pytest.warns(FutureWarning, match=f"nn.init.{name}` is now deprecated"):
            getattr(nn.init, name)(target, *args)
    nn.init.eye_(t)
    np.testing.assert_array_equal(t.numpy(), np.eye(3))
