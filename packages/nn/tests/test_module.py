"""Module API: registration, traversal, train/eval, state_dict, hooks, repr, conversions."""

from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2)
        self.scale = nn.Parameter(ember.ones(1))
        self.register_buffer("steps", ember.zeros(1))
        self.register_buffer("tmp", ember.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def test_parameter_basics():
    p = nn.Parameter(ember.randn(3))
    assert isinstance(p, nn.Parameter) and isinstance(p, ember.Tensor)
    assert p.requires_grad and p.is_leaf
    assert not isinstance(ember.randn(3), nn.Parameter)
    assert repr(p).startswith("Parameter containing:\ntensor(")
    q = nn.Parameter(ember.randn(2), requires_grad=False)
    assert not q.requires_grad
    assert not isinstance(p * 2, nn.Parameter)
    assert nn.Parameter().numel() == 0
    with pytest.raises(TypeError):
        nn.Parameter([1.0, 2.0])


def test_registration_and_traversal():
    m = Net()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "tmp"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert len(list(m.parameters(recurse=False))) == 1
    assert m.get_submodule("fc1") is m.fc1
    assert m.get_parameter("fc2.bias") is m.fc2.bias
    assert "fc1" in dir(m) and "steps" in dir(m)
    m.fc1 = None
    assert "fc1" in m._modules and m.fc1 is None
    with pytest.raises(TypeError, match="cannot assign"):
        m.scale = ember.ones(1)
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", ember.zeros(1))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = m.nope
    del m.act
    assert "act" not in m._modules
    shared = nn.Linear(2, 2)
    s = nn.Sequential(shared, shared)
    assert len(list(s.parameters())) == 2


def test_assign_before_init_errors():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ember.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_train_eval_requires_grad_zero_grad():
    m = Net()
    assert m.training and m.fc1.training
    m.eval()
    assert not m.training and not m.fc2.training
    m.train()
    assert m.fc2.training
    m(ember.randn(5, 4)).sum().backward()
    assert m.fc1.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert m.fc1.weight.grad.abs().sum().item() == 0
    m.zero_grad()
    assert m.fc1.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_state_dict_round_trip_and_strict():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd.keys()) == ["scale", "steps", "fc1.weight", "fc1.bias", "fc2.weight",
                               "fc2.bias"]
    assert not sd["fc1.weight"].requires_grad
    res = b.load_state_dict(sd)
    assert repr(res) == "<All keys matched successfully>"
    x = ember.randn(3, 4)
    assert ember.equal(a(x), b(x))
    sd2 = OrderedDict(sd)
    del sd2["fc1.bias"]
    sd2["extra"] = ember.zeros(1)
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(sd2)
    msg = str(e.value)
    assert 'Missing key(s) in state_dict: "fc1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra"' in msg
    res = b.load_state_dict(sd2, strict=False)
    assert res.missing_keys == ["fc1.bias"] and res.unexpected_keys == ["extra"]
    sd3 = dict(sd)
    sd3["fc1.weight"] = ember.zeros(2, 2)
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight"):
        b.load_state_dict(sd3)
    assert sd._metadata[""]["version"] == 1


def test_batchnorm_state_dict_and_running_stats():
    bn = nn.BatchNorm1d(3)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    x = ember.randn(16, 3) * 2 + 1
    bn(x)
    assert bn.num_batches_tracked.item() == 1
    xn = x.numpy()
    ember.testing = None

    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * xn.mean(0), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * xn.var(0, ddof=1),
                               rtol=1e-4)
    cum = nn.BatchNorm1d(3, momentum=None)
    x1, x2 = ember.randn(8, 3), ember.randn(8, 3)
    cum(x1)
    cum(x2)
    np.testing.assert_allclose(cum.running_mean.numpy(),
                               (x1.numpy().mean(0) + x2.numpy().mean(0)) / 2, rtol=1e-4,
                               atol=1e-6)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        nn.BatchNorm1d(3)(ember.randn(1, 3))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(ember.randn(2, 3))
    nt = nn.BatchNorm1d(3, track_running_stats=False)
    assert list(nt.state_dict()) == ["weight", "bias"]


def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre"))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 0)
    out = m(ember.ones(1, 2))
    assert calls == ["pre"] and out.abs().sum().item() == 0
    h1.remove()
    h2.remove()
    assert m(ember.ones(1, 2)).abs().sum().item() != 0
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    assert ember.equal(m(ember.ones(1, 2)), m.bias.detach().unsqueeze(0))
    m2 = nn.Linear(2, 2)
    m2.register_forward_pre_hook(lambda mod, a, kw: (a, kw), with_kwargs=True)
    m2.register_forward_hook(lambda mod, a, kw, out: out + 1, with_kwargs=True)
    assert m2(ember.ones(1, 2)).shape == (1, 2)


def test_full_backward_hook():
    m = nn.Linear(3, 2)
    seen = {}

    def hook(mod, grad_input, grad_output):
        seen["gi"], seen["go"] = grad_input, grad_output

    m.register_full_backward_hook(hook)
    x = ember.randn(4, 3, requires_grad=True)
    m(x).sum().backward()
    assert seen["go"][0].shape == (4, 2)
    assert ember.allclose(seen["gi"][0], x.grad)

    m2 = nn.Linear(3, 2)
    m2.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    x2 = ember.randn(4, 3, requires_grad=True)
    m2(x2).sum().backward()
    assert x2.grad.abs().sum().item() == 0


def test_apply_to_double_float():
    m = Net()
    inits = []
    m.apply(lambda mod: inits.append(type(mod).__name__))
    assert inits == ["Linear", "ReLU", "Linear", "Net"]
    m.double()
    assert m.fc1.weight.dtype == ember.float64 and m.steps.dtype == ember.float64
    assert isinstance(m.fc1.weight, nn.Parameter)
    m.to(ember.float32)
    assert m.fc1.weight.dtype == ember.float32
    m.half()
    assert m.fc2.bias.dtype == ember.float16
    m.float()
    with pytest.raises(TypeError, match="floating point"):
        m.to(ember.int64)


def test_to_dtype_keeps_parameter_objects_for_the_optimizer():
    ember.manual_seed(0)
    m = nn.Linear(3, 2)
    w = m.weight
    opt = ember.optim.SGD(m.parameters(), lr=0.5)
    m(ember.randn(4, 3)).sum().backward()
    m.double()
    assert m.weight is w and w.dtype == ember.float64 and w.grad.dtype == ember.float64
    assert isinstance(w, nn.Parameter) and w.requires_grad and w.is_leaf
    before = w.detach().clone()
    opt.zero_grad()
    x = ember.randn(4, 3, dtype=ember.float64)
    m(x).sum().backward()
    opt.step()  # the optimizer, built before .double(), updates the converted weights
    expected = before.numpy() - 0.5 * np.tile(x.sum(0).numpy(), (2, 1))
    np.testing.assert_allclose(m.weight.detach().numpy(), expected, rtol=1e-12)


def test_to_channels_last_converts_4d_parameters_and_trains_the_same():
    def model():
        ember.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                             nn.Linear(4 * 36, 2))

    x = ember.randn(2, 3, 8, 8, generator=ember.Generator().manual_seed(1))
    plain, last = model(), model().to(memory_format=ember.channels_last)
    w = last[0].weight
    assert w.is_contiguous(memory_format=ember.channels_last) and not w.is_contiguous()
    assert isinstance(w, nn.Parameter) and w.requires_grad
    assert last[4].weight.is_contiguous()  # 2-d parameters keep their layout, as torch
    for m, inp in ((plain, x), (last, x.contiguous(memory_format=ember.channels_last))):
        m(inp).square().sum().backward()
    np.testing.assert_allclose(last[0].weight.grad.numpy(), plain[0].weight.grad.numpy(),
                               rtol=1e-5, atol=1e-6)


def test_repr_matches_torch_layout():
    m = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, bias=False), nn.ReLU(inplace=True),
                      nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1)))
    expect = """Sequential(
  (0): Conv2d(1, 4, kernel_size=(3, 3), stride=(2, 2), bias=False)
  (1): ReLU(inplace=True)
  (2): Sequential(
    (0): Linear(in_features=4, out_features=2, bias=True)
    (1): Dropout(p=0.1, inplace=False)
  )
)"""
    assert repr(m) == expect
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()])) == \
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n)"


def test_repr_vs_torch():
    torch = pytest.importorskip("torch")
    pairs = [
        ("Linear", (3, 4)), ("Conv2d", (3, 8, 3)), ("BatchNorm2d", (4,)), ("LayerNorm", (5,)),
        ("GroupNorm", (2, 4)), ("MaxPool2d", (2,)), ("AvgPool2d", (3,)), ("Embedding", (10, 3)),
        ("Dropout", ()), ("GELU", ()), ("LeakyReLU", ()), ("Softmax", (1,)), ("Flatten", ()),
        ("ConvTranspose2d", (3, 2, 3)), ("AdaptiveAvgPool2d", ((1, 1),)), ("PReLU", ()),
        ("Conv1d", (2, 2, 3)), ("InstanceNorm2d", (3,)), ("ELU", ()), ("Hardtanh", ()),
        ("Upsample", ()), ("Identity", ()), ("Bilinear", (2, 3, 4)), ("Softplus", ()),
    ]
    bad = []
    for name, args in pairs:
        kwargs = {"scale_factor": 2} if name == "Upsample" else {}
        e = repr(getattr(nn, name)(*args, **kwargs))
        t = repr(getattr(torch.nn, name)(*args, **kwargs))
        if e != t:
            bad.append((e, t))
    assert not bad


def test_sequential_ops():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    s = nn.Sequential(a, b)
    assert s[0] is a and s[-1] is b and len(s) == 2
    assert isinstance(s[0:1], nn.Sequential) and len(s[0:1]) == 1
    s.append(c)
    assert s[2] is c
    s.insert(0, nn.Identity())
    assert isinstance(s[0], nn.Identity) and s[1] is a
    s.extend([nn.ReLU()])
    assert len(s) == 5
    del s[0]
    assert s[0] is a and list(s._modules) == ["0", "1", "2", "3"]
    with pytest.raises(IndexError):
        s[10]
    od = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert od.first is a
    x = ember.randn(3)
    assert ember.allclose(nn.Sequential(nn.ReLU(), nn.Tanh())(x), x.relu().tanh())


def test_module_list_dict():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    ml.append(nn.ReLU())
    ml.insert(0, nn.Tanh())
    assert isinstance(ml[0], nn.Tanh) and isinstance(ml[-1], nn.ReLU)
    ml += [nn.Sigmoid()]
    assert len(ml) == 6
    md = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    assert list(md.keys()) == ["a", "b"] and "a" in md
    md["c"] = nn.Tanh()
    assert len(md) == 3
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    md.pop("a")
    assert list(md) == ["b", "c"]


def test_parameter_list_dict():
    pl = nn.ParameterList([nn.Parameter(ember.randn(2)), ember.randn(3)])
    assert len(pl) == 2 and isinstance(pl[1], nn.Parameter)
    pl.append(nn.Parameter(ember.randn(1)))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    pd = nn.ParameterDict({"w": nn.Parameter(ember.randn(2, 2))})
    pd["b"] = ember.zeros(2)
    assert isinstance(pd["b"], nn.Parameter)
    assert list(pd.keys()) == ["w", "b"]
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    m = nn.Module()
    m.plist = pl
    assert len(m.state_dict()) == 3


def test_module_without_forward():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


def test_flatten_unflatten():
    x = ember.randn(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Unflatten(1, (2, 6))(nn.Flatten()(x)).shape == (2, 2, 6)


def test_lazy_component_attribute():
    import importlib

    import ember as e

    assert importlib.import_module("ember.nn") is e.nn
    assert e.nn.Linear is nn.Linear


def test_deepcopy_keeps_parameters():
    import copy

    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    c = copy.deepcopy(m)
    assert isinstance(c[0].weight, nn.Parameter) and c[0].weight.requires_grad
    assert ember.equal(c[0].weight, m[0].weight)
    with ember.no_grad():
        c[0].weight.add_(1)
    assert not ember.equal(c[0].weight, m[0].weight)


def test_pickle_and_save_whole_module():
    import io
    import pickle

    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    m(ember.randn(4, 2))
    for restored in (pickle.loads(pickle.dumps(m)), _save_load(m, io)):
        assert isinstance(restored[0].weight, nn.Parameter) and restored[0].weight.requires_grad
        assert ember.equal(restored[0].weight, m[0].weight)
        assert ember.equal(restored[1].running_mean, m[1].running_mean)
        x = ember.randn(3, 2)
        assert ember.allclose(restored.eval()(x), m.eval()(x))
        m.train()


def _save_load(m, io):
    buf = io.BytesIO()
    ember.save(m, buf)
    buf.seek(0)
    return ember.load(buf, weights_only=False)


def test_global_forward_hooks_and_gumbel():
    from ember.nn.modules.module import (
        register_module_forward_hook,
        register_module_forward_pre_hook,
    )

    seen = []
    h1 = register_module_forward_pre_hook(lambda m, a: seen.append(type(m).__name__))
    h2 = register_module_forward_hook(lambda m, a, out: None)
    nn.Sequential(nn.ReLU())(ember.randn(2))
    h1.remove()
    h2.remove()
    nn.ReLU()(ember.randn(2))
    assert seen == ["Sequential", "ReLU"]
    import ember.nn.functional as F

    y = F.gumbel_softmax(ember.randn(5, 4), tau=0.5)
    assert ember.allclose(y.sum(-1), ember.ones(5))
    yh = F.gumbel_softmax(ember.randn(5, 4, requires_grad=True), hard=True)
    assert yh.sum().item() == 5 and set(yh.detach().unique().tolist()) <= {0.0, 1.0}
    yh.sum().backward()


def test_always_call_forward_hook():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    calls = []
    m.register_forward_hook(lambda mod, a, out: calls.append("always"), always_call=True)
    m.register_forward_hook(lambda mod, a, out: calls.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(ember.ones(1))
    assert calls == ["always"]


def test_batchnorm_gradient_accumulation_and_eval_grad():
    from ember.autograd import gradcheck

    bn = nn.BatchNorm1d(3)
    x = ember.randn(4, 3, requires_grad=True)
    (bn(x).pow(2).sum() + bn(x * 2).pow(2).sum()).backward()  # two forwards, one backward
    assert x.grad is not None and bn.weight.grad is not None
    bn2 = nn.BatchNorm2d(3).double()
    bn2(ember.randn(5, 3, 2, 2, dtype=ember.float64))
    bn2.eval()
    xe = ember.randn(2, 3, 2, 2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: bn2(t), (xe,))
    with ember.no_grad():
        ref = bn2(xe)
    assert ember.allclose(bn2(xe), ref)
