"""The nn modules and functions added for torch's API: lazy modules, SyncBatchNorm (one
process), AdaptiveLogSoftmaxWithLoss, CrossMapLRN2d, fractional max pooling, the small ones,
torch's module paths, global module hooks, and nn.Parameter as a Tensor subclass. Each is
checked against hand-computed values and, where torch is installed, against torch."""

import copy
import importlib
import math
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.autograd  # noqa: F401
from ember import nn
from ember.nn import functional as F

RNG = np.random.default_rng(0)


def _t(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


# ---- nn.Parameter and Tensor subclasses ----
def test_parameter_is_a_tensor_subclass():
    data = ember.ones(2)
    p = nn.Parameter(data)
    assert type(p) is nn.Parameter and isinstance(p, ember.Tensor)
    assert p.requires_grad and p.is_leaf
    assert p._shares_storage(data)
    assert repr(p) == "Parameter containing:\n" + repr(ember.ones(2, requires_grad=True))
    q = nn.Parameter(data, requires_grad=False)
    assert type(q) is nn.Parameter and not q.requires_grad
    assert type(p * 2) is ember.Tensor and type(p.detach()) is ember.Tensor
    assert not isinstance(p * 2, nn.Parameter)
    assert type(nn.Parameter()) is nn.Parameter and nn.Parameter().numel() == 0
    with pytest.raises(TypeError):
        nn.Parameter([1.0, 2.0])


def test_parameter_copy_pickle_and_modules():
    lin = nn.Linear(2, 3)
    assert type(lin.weight) is nn.Parameter
    lin.double()
    assert type(lin.weight) is nn.Parameter and lin.weight.dtype == ember.float64
    c = copy.deepcopy(lin.weight)
    assert type(c) is nn.Parameter and c.requires_grad and not c._shares_storage(lin.weight)
    r = pickle.loads(pickle.dumps(lin.weight))
    assert type(r) is nn.Parameter and r.requires_grad
    np.testing.assert_array_equal(r.detach().numpy(), lin.weight.detach().numpy())
    lin.weight.sum().backward()
    np.testing.assert_array_equal(lin.weight.grad.numpy(), np.ones((3, 2)))


def test_user_tensor_subclass():
    class MyTensor(ember.Tensor):
        pass

    base = ember.arange(3.0)
    m = MyTensor(base)
    assert type(m) is MyTensor and m._shares_storage(base) and not m.requires_grad
    assert type(m.add_(1)) is MyTensor  # in-place ops return self
    np.testing.assert_array_equal(base.numpy(), [1.0, 2.0, 3.0])
    # results of other ops are plain tensors (ember has no __torch_function__ dispatch)
    assert type(m + 1) is ember.Tensor


# ---- lazy modules ----
def test_lazy_linear_materializes_and_becomes_linear():
    m = nn.LazyLinear(3)
    assert isinstance(m.weight, nn.UninitializedParameter) and m.has_uninitialized_params()
    y = m(ember.ones(4, 5))
    assert type(m) is nn.Linear and type(m.weight) is nn.Parameter
    assert tuple(m.weight.shape) == (3, 5) and tuple(y.shape) == (4, 3) and m.in_features == 5
    bound = 1 / math.sqrt(5)  # kaiming_uniform(a=sqrt(5)) of fan_in 5
    assert np.abs(m.weight.detach().numpy()).max() <= bound


@pytest.mark.parametrize("cls,shape,want_weight", [
    ("LazyConv1d", (2, 3, 8), (4, 3, 3)), ("LazyConv2d", (2, 3, 8, 8), (4, 3, 3, 3)),
    ("LazyConv3d", (3, 5, 5, 5), (4, 3, 3, 3, 3)),  # unbatched: channels are dim 0
    ("LazyConvTranspose2d", (2, 3, 5, 5), (3, 4, 3, 3)),
])
def test_lazy_conv(cls, shape, want_weight):
    m = getattr(nn, cls)(4, 3)
    m(ember.randn(*shape))
    assert type(m).__name__ == cls[4:] and tuple(m.weight.shape) == want_weight
    assert tuple(m.bias.shape) == (4,)


@pytest.mark.parametrize("cls,shape", [("LazyBatchNorm1d", (4, 3)),
                                       ("LazyBatchNorm2d", (4, 3, 2, 2)),
                                       ("LazyInstanceNorm1d", (2, 3, 5))])
def test_lazy_norm(cls, shape):
    m = getattr(nn, cls)()
    x = ember.randn(*shape)
    y = m(x)
    eager = getattr(nn, cls[4:])(3, affine=True, track_running_stats=True)
    eager.train()
    np.testing.assert_allclose(y.detach().numpy(), eager(x).detach().numpy(), atol=1e-6)
    assert type(m.running_mean) is ember.Tensor and type(m.weight) is nn.Parameter
    np.testing.assert_allclose(m.running_mean.numpy(), eager.running_mean.numpy(), atol=1e-6)


def test_lazy_load_state_dict_materializes():
    src = nn.Sequential(nn.Linear(4, 2), nn.BatchNorm1d(2))
    dst = nn.Sequential(nn.LazyLinear(2), nn.LazyBatchNorm1d())
    dst.load_state_dict(src.state_dict())
    assert type(dst[0]) is nn.Linear and type(dst[1]) is nn.BatchNorm1d
    np.testing.assert_array_equal(dst[0].weight.detach().numpy(),
                                  src[0].weight.detach().numpy())
    x = ember.randn(3, 4)
    np.testing.assert_allclose(dst(x).detach().numpy(), src(x).detach().numpy())


def test_lazy_optimizer_after_first_forward():
    m = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(1))
    m(ember.ones(2, 7))
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    m(ember.ones(2, 7)).sum().backward()
    opt.step()
    assert [tuple(p.shape) for p in m.parameters()] == [(3, 7), (3,), (1, 3), (1,)]


# ---- SyncBatchNorm ----
def test_sync_batchnorm_is_batchnorm_in_one_process():
    x = ember.randn(4, 3, 5)
    bn, sbn = nn.BatchNorm1d(3), nn.SyncBatchNorm(3)
    np.testing.assert_allclose(sbn(x).detach().numpy(), bn(x).detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(sbn.running_var.numpy(), bn.running_var.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        sbn(ember.ones(3))


def test_convert_sync_batchnorm_shares_state():
    model = nn.Sequential(nn.Conv2d(1, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(2)))
    bn_weight = model[1].weight
    running = model[1].running_mean
    out = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(out[1]) is nn.SyncBatchNorm and type(out[2][0]) is nn.SyncBatchNorm
    assert out[1].weight is bn_weight and out[1].running_mean is running
    assert type(out[0]) is nn.Conv2d


# ---- AdaptiveLogSoftmaxWithLoss ----
def test_adaptive_log_softmax_by_hand():
    m = nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2, 4], div_value=2.0).double()
    x = _t(RNG.standard_normal((5, 4)))
    log_prob = m.log_prob(x)
    # a distribution over the 6 classes per row
    np.testing.assert_allclose(log_prob.exp().sum(1).detach().numpy(), np.ones(5), rtol=1e-12)
    target = ember.tensor([0, 3, 5, 1, 4])
    out = m(x, target)
    want = log_prob.detach().numpy()[np.arange(5), target.numpy()]
    np.testing.assert_allclose(out.output.detach().numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(out.loss.item(), -want.mean(), rtol=1e-12)
    np.testing.assert_array_equal(m.predict(x).numpy(), log_prob.detach().numpy().argmax(1))
    with pytest.raises(RuntimeError, match="Target values should be in"):
        m(x, ember.tensor([0, 1, 2, 3, 6]))
    with pytest.raises(ValueError, match="cutoffs should be a sequence"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 6, [4, 2])


def test_adaptive_log_softmax_matches_torch():
    torch = pytest.importorskip("torch")
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0).double()
    e = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0).double()
    e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = RNG.standard_normal((6, 8))
    target = [0, 4, 9, 2, 7, 5]
    to, eo = t(torch.tensor(x), torch.tensor(target)), e(_t(x), ember.tensor(target))
    np.testing.assert_allclose(eo.output.detach().numpy(), to.output.detach().numpy(),
                               rtol=1e-12)
    to.loss.backward()
    eo.loss.backward()
    for pt, pe in zip(t.parameters(), e.parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-10, atol=1e-14)


# ---- CrossMapLRN2d ----
def test_cross_map_lrn2d_by_hand():
    x = RNG.standard_normal((1, 5, 2, 2))
    y = nn.CrossMapLRN2d(3, alpha=0.3, beta=0.5, k=2.0)(_t(x)).numpy()
    sq = x * x
    for c in range(5):
        # torch's windows: c-1..c+1, and channel 0 always
        idx = sorted({0} | {j for j in range(c - 1, c + 2) if 0 <= j < 5})
        scale = 2.0 + 0.3 / 3 * sq[0, idx].sum(0)
        np.testing.assert_allclose(y[0, c], x[0, c] * scale ** -0.5, rtol=1e-12)
    with pytest.raises(ValueError, match="Expected input to be 4D"):
        nn.CrossMapLRN2d(3)(ember.ones(2, 3, 4))


@pytest.mark.parametrize("channels,size", [(1, 3), (3, 2), (6, 3), (6, 4), (9, 5)])
def test_cross_map_lrn2d_matches_torch(channels, size):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, channels, 3, 3))
    g = RNG.standard_normal(x.shape)
    tx, ex = torch.tensor(x, requires_grad=True), _t(x, requires_grad=True)
    ty = torch.nn.CrossMapLRN2d(size, alpha=0.1, beta=0.8, k=2)(tx)
    ey = nn.CrossMapLRN2d(size, alpha=0.1, beta=0.8, k=2)(ex)
    ty.backward(torch.tensor(g))
    ey.backward(_t(g))
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-14)


# ---- fractional max pooling ----
def test_fractional_max_pool2d_by_hand():
    x = _t(np.arange(25.0).reshape(1, 1, 5, 5))
    samples = ember.tensor([[[0.0, 0.0]]], dtype=ember.float64)
    # sample 0: starts int(i * alpha) with alpha = (5 - 2) / (3 - 1) = 1.5 -> 0, 1, then 3
    y, idx = F.fractional_max_pool2d(x, 2, output_size=3, return_indices=True,
                                     _random_samples=samples)
    starts = [0, 1, 3]
    want = np.array([[(r + 1) * 5 + c + 1 for c in starts] for r in starts], dtype=float)
    np.testing.assert_array_equal(y.numpy()[0, 0], want)
    np.testing.assert_array_equal(idx.numpy()[0, 0], want.astype(np.int64))
    m = nn.FractionalMaxPool2d(2, output_ratio=0.5)
    assert tuple(m(ember.randn(2, 3, 8, 8)).shape) == (2, 3, 4, 4)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fractional_max_pool_matches_torch(k, dtype):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3) + (9,) * k)
    s = RNG.random((2, 3, k))
    tx = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    ex = ember.tensor(x, dtype=getattr(ember, dtype), requires_grad=True)
    ts, es = torch.tensor(s, dtype=getattr(torch, dtype)), ember.tensor(s, dtype=getattr(ember,
                                                                                         dtype))
    fn = f"fractional_max_pool{k}d"
    tv, ti = getattr(torch.nn.functional, fn)(tx, 3, output_size=(4,) * k, return_indices=True,
                                              _random_samples=ts)
    ev, ei = getattr(F, fn)(ex, 3, output_size=(4,) * k, return_indices=True,
                            _random_samples=es)
    np.testing.assert_array_equal(ev.detach().numpy(), tv.detach().numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    tv.sum().backward()
    ev.sum().backward()
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


# ---- the small ones ----
def test_feature_alpha_dropout_drops_whole_channels():
    ember.manual_seed(0)
    x = ember.ones(8, 16, 5)
    y = F.feature_alpha_dropout(x, 0.5, training=True).numpy()
    assert np.all(y.std(axis=2) == 0)  # one value per (sample, channel)
    p, alpha_p = 0.5, -1.6732632423543772 * 1.0507009873554805
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    kept, dropped = a + b, alpha_p * a + b
    values = np.unique(y)
    assert all(min(abs(v - kept), abs(v - dropped)) < 1e-5 for v in values) and len(values) == 2
    assert nn.FeatureAlphaDropout(0.5).eval()(x) is x


def test_upsampling_modules_and_functions():
    x = _t(np.arange(4.0).reshape(1, 1, 2, 2))
    near = nn.UpsamplingNearest2d(scale_factor=2)(x).numpy()[0, 0]
    np.testing.assert_array_equal(near, np.kron(np.arange(4.0).reshape(2, 2), np.ones((2, 2))))
    bil = nn.UpsamplingBilinear2d(size=3)(x).numpy()[0, 0]
    # align_corners=True: corners kept, midpoints averaged
    np.testing.assert_allclose(bil, [[0, 0.5, 1], [1, 1.5, 2], [2, 2.5, 3]])
    np.testing.assert_allclose(F.upsample_bilinear(x, size=3).numpy()[0, 0], bil)


def test_lp_pool3d_pdist_linear_cross_entropy_by_hand():
    x = RNG.random((1, 1, 2, 2, 2)) + 0.1
    np.testing.assert_allclose(F.lp_pool3d(_t(x), 2, 2).numpy().ravel(),
                               [np.sqrt((x ** 2).sum())], rtol=1e-12)
    np.testing.assert_allclose(nn.LPPool3d(2, 2)(_t(x)).numpy().ravel(),
                               [np.sqrt((x ** 2).sum())], rtol=1e-12)
    pts = RNG.standard_normal((4, 3))
    want = [np.linalg.norm(pts[i] - pts[j]) for i in range(4) for j in range(i + 1, 4)]
    np.testing.assert_allclose(F.pdist(_t(pts)).numpy(), want, rtol=1e-12)
    inp, w = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4))
    target = ember.tensor([0, 4, 2])
    np.testing.assert_allclose(
        F.linear_cross_entropy(_t(inp), _t(w), target).item(),
        F.cross_entropy(_t(inp @ w.T), target).item(), rtol=1e-12)
    loss = nn.LinearCrossEntropyLoss(4, 5)
    with ember.no_grad():
        loss.linear.weight.copy_(_t(w).float())
    np.testing.assert_allclose(loss(_t(inp).float(), target).item(),
                               F.cross_entropy(_t(inp @ w.T), target).item(), rtol=1e-5)


@pytest.mark.parametrize("name,args", [
    ("elu_", ()), ("celu_", ()), ("selu_", ()), ("leaky_relu_", (0.2,)),
    ("hardtanh_", (-0.5, 0.5)), ("threshold_", (0.1, -3.0)),
])
def test_inplace_function_forms(name, args):
    x = RNG.standard_normal(6)
    t = _t(x)
    out = getattr(F, name)(t, *args)
    assert out is t
    np.testing.assert_allclose(t.numpy(), getattr(F, name[:-1])(_t(x), *args).numpy())


def test_with_indices_forms():
    x = ember.randn(1, 2, 6, 6)
    v, i = F.max_pool2d_with_indices(x, 2)
    v2, i2 = F.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(v.numpy(), v2.numpy())
    np.testing.assert_array_equal(i.numpy(), i2.numpy())
    v, i = F.adaptive_max_pool2d_with_indices(x, 3)
    np.testing.assert_array_equal(v.numpy(), F.adaptive_max_pool2d(x, 3).numpy())


def test_container_nllloss2d_dataparallel():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = nn.Container(a=nn.Linear(1, 1))
    assert "deprecated" in str(w[0].message) and isinstance(c.a, nn.Linear)
    x = ember.randn(2, 3, 4, 4).log_softmax(1)
    t = ember.randint(0, 3, (2, 4, 4))
    assert nn.NLLLoss2d()(x, t).item() == nn.NLLLoss()(x, t).item()
    model = nn.Linear(3, 2)
    dp = nn.DataParallel(model)
    x = ember.randn(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), model(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]


# ---- torch's module paths ----
TORCH_PATHS = {
    "activation": ["RReLU", "MultiheadAttention", "ReLU"],
    "adaptive": ["AdaptiveLogSoftmaxWithLoss"],
    "batchnorm": ["BatchNorm2d", "LazyBatchNorm1d", "SyncBatchNorm", "_BatchNorm", "_NormBase"],
    "channelshuffle": ["ChannelShuffle"], "container": ["Container", "Sequential"],
    "conv": ["Conv2d", "LazyConv2d", "LazyConvTranspose3d"],
    "distance": ["CosineSimilarity", "PairwiseDistance"],
    "dropout": ["FeatureAlphaDropout"], "fold": ["Fold", "Unfold"],
    "instancenorm": ["InstanceNorm2d", "LazyInstanceNorm3d"], "lazy": ["LazyModuleMixin"],
    "linear": ["LazyLinear", "Identity"],
    "linear_cross_entropy_options": ["LinearCrossEntropyOptions"],
    "loss": ["NLLLoss2d", "LinearCrossEntropyLoss", "MultiLabelMarginLoss"],
    "module": ["Module", "register_module_full_backward_hook"],
    "normalization": ["CrossMapLRN2d", "LayerNorm"],
    "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "pooling": ["LPPool3d", "FractionalMaxPool3d", "MaxPool2d"],
    "upsampling": ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"],
    "utils": ["_pair", "_single", "_triple", "consume_prefix_in_state_dict_if_present"],
}


@pytest.mark.parametrize("module", sorted(TORCH_PATHS))
def test_torch_module_paths(module):
    mod = importlib.import_module(f"ember.nn.modules.{module}")
    for name in TORCH_PATHS[module]:
        obj = getattr(mod, name)
        if not name.startswith("_") and hasattr(nn, name):
            assert obj is getattr(nn, name)
    assert getattr(ember.nn.modules, module) is mod


def test_modules_utils_helpers():
    from ember.nn.modules.utils import _pair, consume_prefix_in_state_dict_if_present

    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2)
    sd = nn.DataParallel(nn.Linear(2, 2)).state_dict()
    consume_prefix_in_state_dict_if_present(sd, "module.")
    nn.Linear(2, 2).load_state_dict(sd)


def test_global_module_hooks():
    from ember.nn.modules import module as module_mod

    calls = []
    handles = [
        module_mod.register_module_full_backward_hook(
            lambda m, gi, go: calls.append(("bw", type(m).__name__))),
        module_mod.register_module_parameter_registration_hook(
            lambda m, name, p: calls.append(("param", name))),
        module_mod.register_module_module_registration_hook(
            lambda m, name, sub: calls.append(("module", name))),
        module_mod.register_module_buffer_registration_hook(
            lambda m, name, b: calls.append(("buffer", name))),
    ]
    try:
        seq = nn.Sequential(nn.Linear(2, 1))
        seq.register_buffer("scale", ember.ones(1))
        seq(ember.ones(1, 2, requires_grad=True)).sum().backward()
    finally:
        for h in handles:
            h.remove()
    assert ("param", "weight") in calls and ("param", "bias") in calls
    assert ("module", "0") in calls and ("buffer", "scale") in calls
    assert ("bw", "Linear") in calls and ("bw", "Sequential") in calls
    n = len(calls)
    nn.Linear(1, 1)(ember.ones(1, 1, requires_grad=True)).sum().backward()
    assert len(calls) == n  # removed


def test_new_names_match_torch_signatures():
    torch = pytest.importorskip("torch")
    import inspect

    for name in ["LazyLinear", "LazyConv2d", "LazyConvTranspose1d", "LazyBatchNorm2d",
                 "LazyInstanceNorm1d", "SyncBatchNorm", "AdaptiveLogSoftmaxWithLoss",
                 "CrossMapLRN2d", "FractionalMaxPool2d", "FeatureAlphaDropout", "LPPool3d",
                 "UpsamplingBilinear2d", "LinearCrossEntropyLoss", "DataParallel"]:
        tp = inspect.signature(getattr(torch.nn, name)).parameters
        ep = inspect.signature(getattr(nn, name)).parameters
        assert list(tp) == list(ep), name


def test_nn_grad_conv_gradients():
    x = ember.randn(2, 4, 7, 7, dtype=ember.float64, requires_grad=True)
    w = ember.randn(6, 2, 3, 3, dtype=ember.float64, requires_grad=True)
    out = F.conv2d(x, w, stride=2, padding=1, groups=2)
    go = ember.randn(*out.shape, dtype=ember.float64)
    out.backward(go)
    gi = nn.grad.conv2d_input(x.shape, w, go, stride=2, padding=1, groups=2)
    gw = nn.grad.conv2d_weight(x, w.shape, go, stride=2, padding=1, groups=2)
    np.testing.assert_allclose(gi.numpy(), x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), w.grad.numpy(), rtol=1e-12)


def test_attention_factory_kwargs_common_types_hardtanh():
    from ember.nn.attention import SDPBackend, sdpa_kernel
    from ember.nn.common_types import _size_2_t  # noqa: F401

    q = ember.randn(1, 2, 3, 4)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        out = F.scaled_dot_product_attention(q, q, q)
    np.testing.assert_allclose(out.numpy(), F.scaled_dot_product_attention(q, q, q).numpy())
    with pytest.raises(ValueError, match="SDPBackend"):
        with sdpa_kernel("math"):
            pass
    assert nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": ember.float64}}) == \
        {"device": "cpu", "dtype": ember.float64}
    with pytest.raises(TypeError, match="unexpected kwargs"):
        nn.factory_kwargs({"bias": True})
    with pytest.warns(FutureWarning, match="min_value"):
        h = nn.Hardtanh(min_value=-2.0)
    assert h.min_val == -2.0


# ---- Module methods torch programs call ----
class _WithExtra(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.counter = 0

    def get_extra_state(self):
        return {"counter": self.counter}

    def set_extra_state(self, state):
        self.counter = state["counter"]


def test_extra_state_round_trip():
    a = _WithExtra()
    a.counter = 7
    sd = a.state_dict()
    assert sd["_extra_state"] == {"counter": 7}
    b = _WithExtra()
    b.load_state_dict(sd)
    assert b.counter == 7
    del sd["_extra_state"]
    with pytest.raises(RuntimeError, match='Missing key.*"_extra_state"'):
        b.load_state_dict(sd)
    with pytest.raises(RuntimeError, match='Unexpected key.*"0._extra_state"'):
        nn.Sequential(nn.Linear(2, 2)).load_state_dict(
            {"0.weight": ember.zeros(2, 2), "0.bias": ember.zeros(2), "0._extra_state": 1})


def test_state_dict_hooks_and_load_post_hook():
    m = nn.Linear(2, 2)
    seen = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: seen.append(("pre", prefix)))
    m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: seen.append(("post", len(sd))))
    m.state_dict()
    assert seen == [("pre", ""), ("post", 2)]

    def forgive(module, incompatible):
        incompatible.missing_keys.clear()

    m.register_load_state_dict_post_hook(forgive)
    result = m.load_state_dict({"weight": ember.zeros(2, 2)}, strict=False)
    assert result.missing_keys == []
    m.register_state_dict_post_hook(lambda *a: 1)
    with pytest.raises(RuntimeError, match="must return None"):
        m.state_dict()


def test_set_submodule_to_empty_compile():
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU()))
    model.set_submodule("1.0", nn.Tanh())
    assert isinstance(model[1][0], nn.Tanh)
    with pytest.raises(AttributeError, match="has no attribute `extra`"):
        model.set_submodule("1.extra", nn.ReLU(), strict=True)
    model.set_submodule("1.extra", nn.ReLU())
    assert isinstance(model[1].extra, nn.ReLU)
    weight = model[0].weight
    model.to_empty(device="cpu")
    assert model[0].weight is weight and tuple(weight.shape) == (3, 2)
    assert model.compile() is None
    assert tuple(model(ember.ones(1, 2)).shape) == (1, 3)


def test_conv_tbc_by_hand_and_native_channel_shuffle():
    x = RNG.standard_normal((6, 2, 3))
    w = RNG.standard_normal((2, 3, 4))
    b = RNG.standard_normal(4)
    got = F.conv_tbc(_t(x), _t(w), _t(b), 1).numpy()
    xp = np.pad(x, ((1, 1), (0, 0), (0, 0)))
    want = np.stack([sum(xp[t + k] @ w[k] for k in range(2)) + b for t in range(7)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    y = _t(np.arange(6.0).reshape(1, 6, 1))
    np.testing.assert_array_equal(F.native_channel_shuffle(y, 2).numpy().ravel(),
                                  [0, 3, 1, 4, 2, 5])


def test_multi_head_attention_forward_matches_module_and_torch():
    e, h, lq, lk, n = 8, 2, 3, 4, 2
    m = nn.MultiheadAttention(e, h, add_bias_kv=True, add_zero_attn=True).double()
    q, k, v = (_t(RNG.standard_normal(s)) for s in ((lq, n, e), (lk, n, e), (lk, n, e)))
    kpm = ember.tensor([[False, False, True, False], [False, True, False, False]])
    args = (q, k, v, e, h, m.in_proj_weight, m.in_proj_bias, m.bias_k, m.bias_v, True, 0.0,
            m.out_proj.weight, m.out_proj.bias)
    out, w = F.multi_head_attention_forward(*args, training=False, key_padding_mask=kpm)
    mo, mw = m.eval()(q, k, v, key_padding_mask=kpm)
    np.testing.assert_allclose(out.detach().numpy(), mo.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), mw.detach().numpy(), rtol=1e-12)
    # the weights are a distribution over the keys, the padded one getting none
    np.testing.assert_allclose(w.detach().numpy().sum(-1), 1.0, rtol=1e-12)
    assert np.all(w.detach().numpy()[0, :, 2] == 0)
    torch = pytest.importorskip("torch")
    t_args = [torch.tensor(a.detach().numpy()) if isinstance(a, ember.Tensor) else a
              for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to, tw = torch.nn.functional.multi_head_attention_forward(
            *t_args, training=False, key_padding_mask=torch.tensor(kpm.numpy()))
    np.testing.assert_allclose(out.detach().numpy(), to.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(w.detach().numpy(), tw.numpy(), rtol=1e-10, atol=1e-14)


# torch's refusals of the floating-only activation kernels (messages as torch 2.13's CPU ones)
_FLOAT_ONLY = [
    ("elu", lambda x: F.elu(x), "elu_cpu"), ("elu_", lambda x: F.elu_(x), "elu_cpu"),
    ("selu", lambda x: F.selu(x), "elu_cpu"), ("celu", lambda x: F.celu(x), "elu_cpu"),
    ("ember.selu", lambda x: ember.selu(x), "elu_cpu"),
    ("ember.celu_", lambda x: ember.celu_(x), "elu_cpu"),
    ("hardshrink", lambda x: F.hardshrink(x), "hardshrink_cpu"),
    ("Tensor.hardshrink", lambda x: x.hardshrink(), "hardshrink_cpu"),
    ("softshrink", lambda x: F.softshrink(x), "softshrink_check"),
    ("leaky_relu", lambda x: F.leaky_relu(x), "leaky_relu_cpu"),
]


@pytest.mark.parametrize("name,fn,kernel", _FLOAT_ONLY, ids=[c[0] for c in _FLOAT_ONLY])
@pytest.mark.parametrize("dtype,torch_name", [("int8", "Char"), ("int64", "Long"),
                                              ("bool", "Bool"), ("complex64", "ComplexFloat")])
def test_floating_only_activations_refuse_other_dtypes(name, fn, kernel, dtype, torch_name):
    x = ember.ones(3, dtype=getattr(ember, dtype))
    with pytest.raises(NotImplementedError, match=f"^\"{kernel}\" not implemented for "
                                                  f"'{torch_name}'$"):
        fn(x)
    assert fn(ember.ones(3, dtype=ember.float16)).dtype == ember.float16  # floats are served


def test_threshold_keeps_nan_and_refuses_bool_and_complex():
    x = ember.tensor([1.0, math.nan, 0.2, 0.5])
    for fn in (F.threshold, ember.threshold):  # torch: x <= threshold ? value : x
        out = fn(x, 0.5, 9.0)
        assert out[0] == 1.0 and math.isnan(out[1]) and out[2] == 9.0 and out[3] == 9.0
    y = ember.tensor([1.0, 0.1])
    ember.threshold_(y, 0.5, 7.0)
    assert y.tolist() == [1.0, 7.0]
    assert F.threshold(ember.tensor([1, 5]), 2, 0).tolist() == [0, 5]  # integers are served
    for dtype, torch_name in (("bool", "Bool"), ("complex64", "ComplexFloat")):
        with pytest.raises(NotImplementedError,
                           match=f"\"threshold_cpu\" not implemented for '{torch_name}'"):
            ember.threshold(ember.ones(2, dtype=getattr(ember, dtype)), 0.5, 0.0)
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        ember.relu(ember.ones(2, dtype=ember.bool))


@pytest.mark.parametrize("alpha", [math.nan, math.inf, -math.inf, 0.5, -2.0])
def test_elu_family_gives_x_at_zero_whatever_alpha(alpha):
    # torch's kernel takes the linear side at x == 0 (its sign kept): alpha * expm1(0) would
    # be NaN for an infinite or NaN alpha
    x = ember.tensor([0.0, -0.0, -1.0, 2.0])
    for name, f in (("elu", lambda t: F.elu(t, alpha)), ("celu", lambda t: F.celu(t, alpha))):
        y = f(x).tolist()
        assert y[:2] == [0.0, 0.0] and math.copysign(1, y[1]) == -1, name
        assert y[3] == 2.0
        want = alpha * math.expm1(-1.0 / (alpha if name == "celu" else 1.0))
        assert (math.isnan(y[2]) and math.isnan(want)) or y[2] == pytest.approx(want), name
