"""Behaviour real PyTorch programs rely on that ember.nn got wrong or lacked: in-place
leaky_relu under backward, binary_cross_entropy's gradient at predictions of exactly 0 or 1,
hardtanh's gradient at its bounds, a whole Module saved and loaded with weights_only inside
serialization.safe_globals, LSTM.flatten_parameters and the gradient of Tensor.repeat. Each is
checked against an oracle that needs no torch (hand-computed values, finite differences), and
against torch where it is installed."""

from __future__ import annotations

import io
import math
import pickle

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


X = [[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]]
W = [[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]]


def _leaky(a, slope):
    return np.where(a > 0, a, a * slope)


# ---- leaky_relu(inplace=True) under backward ----

def test_in_place_leaky_relu_backward_matches_the_hand_computed_gradient():
    # loss = sum(leaky(x @ w)^2): d/dx = (2 * leaky(h) * leaky'(h)) @ w.T
    x = ember.tensor(X, dtype=ember.float64, requires_grad=True)
    w = ember.tensor(W, dtype=ember.float64, requires_grad=True)
    h = x @ w
    out = F.leaky_relu(h, 0.2, inplace=True)
    assert out is h
    (h * h).sum().backward()
    hn = np.array(X) @ np.array(W)
    dh = 2 * _leaky(hn, 0.2) * np.where(hn > 0, 1.0, 0.2)
    np.testing.assert_allclose(x.grad.numpy(), dh @ np.array(W).T, rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), np.array(X).T @ dh, rtol=1e-12)


@pytest.mark.parametrize("form", ["functional", "module", "underscore"])
def test_in_place_leaky_relu_passes_gradcheck(form):
    def f(x, w):
        h = x @ w
        if form == "functional":
            F.leaky_relu(h, 0.1, inplace=True)
        elif form == "module":
            nn.LeakyReLU(0.1, inplace=True)(h)
        else:
            F.leaky_relu_(h, 0.1)
        return h * h

    x = ember.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.5]], dtype=ember.float64,
                     requires_grad=True)
    w = ember.tensor(W, dtype=ember.float64, requires_grad=True)
    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))


def _dcgan_discriminator(lib):
    m = lib.nn
    return m.Sequential(
        m.Conv2d(3, 4, 4, 2, 1, bias=False), m.LeakyReLU(0.2, inplace=True),
        m.Conv2d(4, 8, 4, 2, 1, bias=False), m.BatchNorm2d(8), m.LeakyReLU(0.2, inplace=True),
        m.Conv2d(8, 1, 4, 1, 0, bias=False), m.Sigmoid())


@pytest.mark.parametrize("case", ["linear", "view", "transpose", "twice_linear",
                                  "discriminator"])
def test_in_place_leaky_relu_matches_torch(torch, case):
    def run(lib):
        lib.manual_seed(0)
        f = lib.nn.functional
        x = lib.tensor(np.linspace(-2, 2, 6).reshape(2, 3), requires_grad=True)
        w = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
        if case == "linear":
            h = x @ w
            f.leaky_relu(h, 0.1, inplace=True)
            loss = (h * h).sum()
        elif case == "view":  # in place on a view of a non-leaf
            h = x @ w
            f.leaky_relu(h[:, :2], 0.1, inplace=True)
            loss = (h * h).sum()
        elif case == "transpose":
            h = (x @ w).t()
            f.leaky_relu(h, 0.1, inplace=True)
            loss = (h ** 2).sum()
        elif case == "twice_linear":  # the in-place result feeds another product
            h = f.leaky_relu(x @ w, 0.1, inplace=True)
            loss = (h @ w.t()).pow(2).sum()
        else:  # DCGAN's discriminator: LeakyReLU(0.2, inplace=True) after conv and batch norm
            d = _dcgan_discriminator(lib)
            with lib.no_grad():
                for i, p in enumerate(d.parameters()):
                    p.copy_(lib.tensor(np.cos(np.arange(p.numel()) + i).reshape(p.shape) * 0.2))
            img = lib.tensor(np.sin(np.arange(2 * 3 * 16 * 16)).reshape(2, 3, 16, 16),
                             requires_grad=True)
            loss = f.binary_cross_entropy(d(img).view(-1), lib.ones(2, dtype=lib.float64))
            loss.backward()
            return [img.grad.numpy()] + [p.grad.numpy() for p in d.parameters()]
        loss.backward()
        return [x.grad.numpy(), w.grad.numpy()]

    d_ember = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    torch_dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        for a, b in zip(run(ember), run(torch), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    finally:
        ember.set_default_dtype(d_ember)
        torch.set_default_dtype(torch_dtype)


# ---- binary_cross_entropy at predictions of exactly 0 and 1 ----

EPS32 = float(np.float32(1e-12))  # torch's EPSILON, a float rounded to float32


def _bce_oracle(p, t):
    """torch's formulas: the loss clamps each log at -100; the gradient is
    (p - t) / max(p (1 - p), EPSILON)."""
    def clog(v):
        return max(math.log(v), -100.0) if v > 0 else -100.0

    loss = -(t * clog(p) + (1 - t) * clog(1 - p))
    grad = (p - t) / max(p * (1 - p), EPS32)
    return loss, grad


BCE_POINTS = [(0.0, 0.0), (0.0, 1.0), (1.0, 1.0), (1.0, 0.0), (0.0, 0.3), (1.0, 0.3),
              (0.5, 1.0), (1e-30, 1.0), (0.25, 0.0)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bce_gradient_is_finite_at_0_and_1_as_torchs_formula(dtype):
    dt = getattr(ember, dtype)
    p = ember.tensor([a for a, _ in BCE_POINTS], dtype=dt, requires_grad=True)
    t = ember.tensor([b for _, b in BCE_POINTS], dtype=dt)
    loss = F.binary_cross_entropy(p, t, reduction="none")
    loss.sum().backward()
    want = [_bce_oracle(a, b) for a, b in BCE_POINTS]
    assert np.isfinite(p.grad.numpy()).all()
    rtol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(loss.detach().numpy(), [w[0] for w in want], rtol=rtol,
                               atol=1e-6)
    np.testing.assert_allclose(p.grad.numpy(), [w[1] for w in want], rtol=rtol)


def test_bce_gradient_with_weight_and_mean_reduction():
    p = ember.tensor([0.0, 1.0, 0.3], dtype=ember.float64, requires_grad=True)
    t = ember.tensor([1.0, 1.0, 0.2], dtype=ember.float64)
    w = ember.tensor([2.0, 3.0, 4.0], dtype=ember.float64)
    nn.BCELoss(weight=w)(p, t).backward()
    want = [wi * _bce_oracle(a, b)[1] / 3 for wi, (a, b) in zip([2, 3, 4], [(0, 1), (1, 1),
                                                                              (0.3, 0.2)])]
    np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-12)


def test_bce_gradients_inside_0_1_pass_gradcheck_for_input_and_target():
    p = ember.tensor([0.1, 0.45, 0.9], dtype=ember.float64, requires_grad=True)
    t = ember.tensor([0.0, 0.7, 1.0], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b), (p, t))
    assert gradgradcheck(lambda a, b: F.binary_cross_entropy(a, b, reduction="sum"), (p, t))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bce_matches_torch_at_0_and_1(torch, dtype):
    pv = [a for a, _ in BCE_POINTS]
    tv = [b for _, b in BCE_POINTS]
    p = ember.tensor(pv, dtype=getattr(ember, dtype), requires_grad=True)
    q = torch.tensor(pv, dtype=getattr(torch, dtype), requires_grad=True)
    t_e, t_t = ember.tensor(tv, dtype=p.dtype), torch.tensor(tv, dtype=q.dtype)
    for reduction in ("mean", "sum"):
        p.grad = q.grad = None
        le = F.binary_cross_entropy(p, t_e, reduction=reduction)
        lt = torch.nn.functional.binary_cross_entropy(q, t_t, reduction=reduction)
        le.backward()
        lt.backward()
        np.testing.assert_allclose(le.item(), lt.item(), rtol=1e-6)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


# ---- hardtanh / relu6 at their bounds ----

def test_hardtanh_gradient_is_zero_at_the_bounds_and_one_for_nan():
    x = ember.tensor([-2.0, -1.0, 0.0, 1.0, 2.0, float("nan")], requires_grad=True)
    y = F.hardtanh(x)
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy()[:5], [-1, -1, 0, 1, 1])
    assert math.isnan(y[5].item())
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 1, 0, 0, 1])
    x.grad = None
    F.relu6(x * 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0, 1, 1, 1])


def test_hardtanh_matches_torch_at_the_bounds(torch):
    vals = [-2.0, -1.0, -0.5, 0.0, 1.0, 6.0, 7.0, float("nan")]
    for fn, kwargs in (("hardtanh", {}), ("relu6", {}), ("hardtanh", {"inplace": True})):
        x, t = ember.tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
        getattr(F, fn)(x * 1, **kwargs).sum().backward()
        getattr(torch.nn.functional, fn)(t * 1, **kwargs).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("name,args", [("threshold_", (0.5, -1.0)), ("hardtanh_", ()),
                                       ("leaky_relu_", (0.2,)), ("elu_", ()), ("selu_", ()),
                                       ("celu_", (0.5,)), ("rrelu_", ())])
def test_in_place_functional_forms(name, args):
    vals = [-2.0, -0.3, 0.0, 0.7, 3.0]
    x = ember.tensor(vals)
    out = getattr(F, name)(x, *args)
    assert out is x
    np.testing.assert_allclose(x.numpy(), getattr(F, name[:-1])(ember.tensor(vals), *args).numpy())


# ---- a whole Module through ember.save / ember.load(weights_only=True) ----

def _model():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.BatchNorm1d(4), nn.Linear(4, 2))
    m[3].bias.requires_grad_(False)
    return m


CLASSES = [nn.Sequential, nn.Linear, nn.ReLU, nn.BatchNorm1d]


@pytest.mark.parametrize("protocol", [2, 4])
def test_whole_module_loads_with_weights_only_inside_safe_globals(protocol):
    m = _model()
    buf = io.BytesIO()
    ember.save(m, buf, pickle_protocol=protocol)
    buf.seek(0)
    with ember.serialization.safe_globals(CLASSES):
        loaded = ember.load(buf, weights_only=True)
    assert type(loaded) is nn.Sequential
    for (name, p), (name2, q) in zip(m.named_parameters(), loaded.named_parameters(),
                                     strict=True):
        assert name == name2
        assert isinstance(q, nn.Parameter)
        assert q.requires_grad == p.requires_grad
        np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())
    for (_, b), (_, c) in zip(m.named_buffers(), loaded.named_buffers(), strict=True):
        np.testing.assert_array_equal(b.numpy(), c.numpy())
    x = ember.randn(5, 3)
    m.eval()
    loaded.eval()
    np.testing.assert_array_equal(m(x).detach().numpy(), loaded(x).detach().numpy())
    # trainable as loaded: gradients reach the parameters that require them
    loaded.train()
    loaded(x).sum().backward()
    assert loaded[0].weight.grad is not None and loaded[3].bias.grad is None


def test_multihead_attention_pickles_with_the_safe_globals_torch_programs_list(torch):
    # pytorch/examples' word_language_model lists torch's module paths, among them
    # nn.modules.linear.NonDynamicallyQuantizableLinear (MultiheadAttention's out_proj)
    m = nn.MultiheadAttention(4, 2)
    allowed = [getattr(getattr(ember.nn.modules, t.__module__.rsplit(".", 1)[1]), t.__name__)
               for t in (torch.nn.MultiheadAttention, torch.nn.Linear, torch.nn.Dropout,
                         torch.nn.modules.linear.NonDynamicallyQuantizableLinear)]
    buf = io.BytesIO()
    ember.save(m, buf)
    buf.seek(0)
    with ember.serialization.safe_globals(allowed):
        loaded = ember.load(buf, weights_only=True)
    assert type(loaded.out_proj) is ember.nn.modules.linear.NonDynamicallyQuantizableLinear


def test_whole_module_outside_safe_globals_names_the_class_to_allow():
    buf = io.BytesIO()
    ember.save(_model(), buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Sequential") as info:
        ember.load(buf, weights_only=True)
    assert "_PackedParam" not in str(info.value)


def test_whole_module_pickle_and_deepcopy_keep_parameters():
    import copy

    m = _model()
    for other in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert all(isinstance(p, nn.Parameter) for p in other.parameters())
        assert [p.requires_grad for p in other.parameters()] == \
            [p.requires_grad for p in m.parameters()]
        assert "_parameters_requires_grad" not in other.__dict__


def test_a_module_pickled_by_the_earlier_form_still_loads():
    from ember.nn.modules.module import _PackedParam

    m = nn.Linear(2, 2)
    state = m.__dict__.copy()
    state["_parameters"] = {k: _PackedParam(p.detach(), False) for k, p in
                            m._parameters.items()}
    fresh = nn.Linear.__new__(nn.Linear)
    fresh.__setstate__(state)
    assert isinstance(fresh.weight, nn.Parameter) and not fresh.weight.requires_grad


def test_torch_loads_a_whole_module_the_same_way(torch, tmp_path):
    # the reference behaviour: torch's whole-module save loads under safe_globals too
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    path = tmp_path / "m.pt"
    torch.save(tm, path)
    with torch.serialization.safe_globals([torch.nn.Sequential, torch.nn.Linear,
                                           torch.nn.ReLU, set]):
        loaded = torch.load(path, weights_only=True)
    assert isinstance(loaded[0].weight, torch.nn.Parameter)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    ember.save(m, tmp_path / "e.pt")
    with ember.serialization.safe_globals([nn.Sequential, nn.Linear, nn.ReLU, set]):
        ours = ember.load(tmp_path / "e.pt", weights_only=True)
    assert isinstance(ours[0].weight, nn.Parameter)


# ---- LSTM.flatten_parameters ----

@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_flatten_parameters_is_a_no_op_that_keeps_the_module_working(cls):
    m = cls(3, 4, num_layers=2, bidirectional=True)
    before = [p.detach().numpy().copy() for p in m.parameters()]
    x = ember.randn(5, 2, 3)
    out1 = m(x)[0].detach().numpy()
    assert m.flatten_parameters() is None
    out2 = m(x)[0].detach().numpy()
    np.testing.assert_array_equal(out1, out2)
    for b, p in zip(before, m.parameters(), strict=True):
        np.testing.assert_array_equal(b, p.detach().numpy())
    assert [n for n in m._flat_weights_names] == [n for n, _ in m.named_parameters()]
    assert all(a is b for a, b in zip(m._flat_weights, m.parameters(), strict=True))


def test_flatten_parameters_exists_where_torch_has_it(torch):
    for name in ("LSTM", "GRU", "RNN"):
        assert callable(getattr(torch.nn, name).flatten_parameters)
        assert callable(getattr(nn, name).flatten_parameters)


# ---- Tensor.repeat: a copy, with repeat's gradient ----

def test_repeat_gradient_sums_the_copies():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    r = x.repeat(3, 2)
    r.mul_(2)  # in place on the result: a view would have refused (several elements at one place)
    (r * ember.arange(12.0, dtype=ember.float64).reshape(3, 4)).sum().backward()
    # element j of x appears at columns j and j + 2 of each row, each times 2
    cols = 2 * np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(x.grad.numpy(), [cols[:, [0, 2]].sum(), cols[:, [1, 3]].sum()])
    assert gradcheck(lambda t: t.repeat(2, 1, 3), (ember.randn(2, 2, dtype=ember.float64,
                                                               requires_grad=True),))
