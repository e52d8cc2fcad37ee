"""ember.optim's optimizers: hand-written NumPy update equations, torch parity (when torch is
installed), the fused kernels against the composed path, and the Optimizer base's contract."""

import math
import warnings

import numpy as np
import pytest

import ember
import ember.autograd  # noqa: F401
from ember import optim

SHAPES = [(3, 4), (5,), (), (0, 2), (70000,)]  # the last one spans several parallel chunks


def _grads(seed, shapes, steps, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(steps)]


def _init(seed, shapes, dtype=np.float32):
    rng = np.random.default_rng(seed + 1000)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def run_ember(cls, kwargs, init, grads, dtype=ember.float32, groups=None):
    params = [ember.tensor(a, dtype=dtype, requires_grad=True) for a in init]
    opt = cls(params if groups is None else groups(params), **kwargs)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = ember.tensor(g, dtype=dtype)
        opt.step()
    return [p.detach().numpy() for p in params], opt


def run_torch(cls_name, kwargs, init, grads, dtype="float32"):
    torch = pytest.importorskip("torch")
    params = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in init]
    opt = getattr(torch.optim, cls_name)(params, **kwargs)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = torch.tensor(g, dtype=getattr(torch, dtype))
        opt.step()
    return [p.detach().numpy() for p in params]


# ---- NumPy references (torch.optim's documented update equations) ----

def np_sgd(init, grads, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
           maximize=False):
    ps = [a.astype(np.float64) for a in init]
    bufs = [None] * len(ps)
    for step in grads:
        for i, g in enumerate(step):
            g = -g.astype(np.float64) if maximize else g.astype(np.float64)
            g = g + weight_decay * ps[i]
            if momentum:
                bufs[i] = g.copy() if bufs[i] is None else momentum * bufs[i] + (1 - dampening) * g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            ps[i] = ps[i] - lr * g
    return ps


def np_adam(init, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
            amsgrad=False, maximize=False, decoupled=False):
    b1, b2 = betas
    ps = [a.astype(np.float64) for a in init]
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    vmax = [np.zeros_like(p) for p in ps]
    for t, step in enumerate(grads, 1):
        for i, g in enumerate(step):
            g = -g.astype(np.float64) if maximize else g.astype(np.float64)
            if decoupled:
                ps[i] = ps[i] * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * ps[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            vhat = v[i]
            if amsgrad:
                vmax[i] = np.maximum(vmax[i], v[i])
                vhat = vmax[i]
            denom = np.sqrt(vhat) / math.sqrt(1 - b2 ** t) + eps
            ps[i] = ps[i] - lr / (1 - b1 ** t) * m[i] / denom
    return ps


def np_rmsprop(init, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
               centered=False):
    ps = [a.astype(np.float64) for a in init]
    sq = [np.zeros_like(p) for p in ps]
    ga = [np.zeros_like(p) for p in ps]
    buf = [np.zeros_like(p) for p in ps]
    for step in grads:
        for i, g in enumerate(step):
            g = g.astype(np.float64) + weight_decay * ps[i]
            sq[i] = alpha * sq[i] + (1 - alpha) * g * g
            if centered:
                ga[i] = alpha * ga[i] + (1 - alpha) * g
                avg = np.sqrt(sq[i] - ga[i] ** 2) + eps
            else:
                avg = np.sqrt(sq[i]) + eps
            if momentum:
                buf[i] = momentum * buf[i] + g / avg
                ps[i] = ps[i] - lr * buf[i]
            else:
                ps[i] = ps[i] - lr * g / avg
    return ps


def np_adagrad(init, grads, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
               initial_accumulator_value=0.0, eps=1e-10):
    ps = [a.astype(np.float64) for a in init]
    s = [np.full_like(p, initial_accumulator_value) for p in ps]
    for t, step in enumerate(grads, 1):
        for i, g in enumerate(step):
            g = g.astype(np.float64) + weight_decay * ps[i]
            s[i] = s[i] + g * g
            ps[i] = ps[i] - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s[i]) + eps)
    return ps


def np_adadelta(init, grads, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0):
    ps = [a.astype(np.float64) for a in init]
    sq = [np.zeros_like(p) for p in ps]
    acc = [np.zeros_like(p) for p in ps]
    for step in grads:
        for i, g in enumerate(step):
            g = g.astype(np.float64) + weight_decay * ps[i]
            sq[i] = rho * sq[i] + (1 - rho) * g * g
            delta = np.sqrt(acc[i] + eps) / np.sqrt(sq[i] + eps) * g
            acc[i] = rho * acc[i] + (1 - rho) * delta * delta
            ps[i] = ps[i] - lr * delta
    return ps


def np_adamax(init, grads, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    b1, b2 = betas
    ps = [a.astype(np.float64) for a in init]
    m = [np.zeros_like(p) for p in ps]
    u = [np.zeros_like(p) for p in ps]
    for t, step in enumerate(grads, 1):
        for i, g in enumerate(step):
            g = g.astype(np.float64) + weight_decay * ps[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            u[i] = np.maximum(b2 * u[i], np.abs(g) + eps)
            ps[i] = ps[i] - lr / (1 - b1 ** t) * m[i] / u[i]
    return ps


NUMPY_CASES = [
    (optim.SGD, np_sgd, dict(lr=0.1)),
    (optim.SGD, np_sgd, dict(lr=0.05, momentum=0.9)),
    (optim.SGD, np_sgd, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    (optim.SGD, np_sgd, dict(lr=0.05, momentum=0.8, nesterov=True, maximize=True)),
    (optim.Adam, np_adam, dict(lr=0.01)),
    (optim.Adam, np_adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (optim.Adam, np_adam, dict(lr=0.01, betas=(0.8, 0.9), maximize=True)),
    (optim.RMSprop, np_rmsprop, dict(lr=0.01)),
    (optim.RMSprop, np_rmsprop, dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    (optim.Adagrad, np_adagrad, dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)),
    (optim.Adadelta, np_adadelta, dict(lr=0.5, weight_decay=0.01)),
    (optim.Adamax, np_adamax, dict(lr=0.01, weight_decay=0.01)),
]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("cls,ref,kwargs", NUMPY_CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(NUMPY_CASES)])
def test_against_numpy(cls, ref, kwargs, dtype):
    npdt = np.float32 if dtype == ember.float32 else np.float64
    init, grads = _init(0, SHAPES, npdt), _grads(0, SHAPES, 6, npdt)
    got, _ = run_ember(cls, kwargs, init, grads, dtype)
    want = ref(init, grads, **kwargs)
    tol = 2e-5 if dtype == ember.float32 else 1e-10
    for g, w in zip(got, want):
        assert g.dtype == npdt
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_adamw_against_numpy():
    init, grads = _init(1, SHAPES), _grads(1, SHAPES, 5)
    got, _ = run_ember(optim.AdamW, dict(lr=0.01, weight_decay=0.1), init, grads)
    want = np_adam(init, grads, lr=0.01, weight_decay=0.1, decoupled=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


TORCH_CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.05, amsgrad=True, maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.01, maximize=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.2)),
    ("Adadelta", dict(lr=1.0, rho=0.8, weight_decay=0.01, maximize=True)),
    ("Adamax", dict(lr=0.01, weight_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True, momentum_decay=0.01)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.01, decoupled_weight_decay=True)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", TORCH_CASES,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(TORCH_CASES)])
def test_torch_parity(name, kwargs, dtype):
    npdt = getattr(np, dtype)
    shapes = [(3, 4), (7,), ()]
    init, grads = _init(2, shapes, npdt), _grads(2, shapes, 10, npdt)
    want = run_torch(name, kwargs, init, grads, dtype)
    got, _ = run_ember(getattr(optim, name), kwargs, init, grads, getattr(ember, dtype))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cls,kwargs", [(optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
                                        (optim.Adam, dict(lr=0.1, amsgrad=True)),
                                        (optim.AdamW, dict(lr=0.1))])
def test_fused_matches_composed(cls, kwargs):
    init, grads = _init(3, SHAPES), _grads(3, SHAPES, 4)
    fused, _ = run_ember(cls, kwargs, init, grads)
    composed, _ = run_ember(cls, dict(kwargs, fused=False), init, grads)
    for a, b in zip(fused, composed):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_non_contiguous_param_takes_composed_path():
    base = ember.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    p = base.t().detach().requires_grad_(True)
    assert not p.is_contiguous()
    want = np_adam([base.t().numpy().copy()], [[np.ones((4, 3), np.float32)]], lr=0.1)[0]
    opt = optim.Adam([p], lr=0.1)
    p.grad = ember.ones(4, 3)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6)


def test_step_bumps_version_and_skips_params_without_grad():
    a = ember.ones(3, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    for cls in (optim.SGD, optim.Adam, optim.RMSprop):
        opt = cls([a, b], lr=0.1)
        a.grad = ember.ones(3)
        b.grad = None
        va, vb = a._version, b._version
        opt.step()
        assert a._version > va and b._version == vb
        assert b not in opt.state


def test_updates_run_without_recording_a_graph():
    p = ember.ones(3, requires_grad=True)
    p.grad = ember.ones(3)
    optim.SGD([p], lr=0.1, momentum=0.9).step()
    assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_closure_runs_with_grad_and_returns_loss():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx(5.0)
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6], rtol=1e-6)


# ---- the Optimizer base ----

def test_param_groups_and_defaults():
    a, b = ember.ones(2, requires_grad=True), ember.ones(3, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["params"] == [b]
    assert opt.param_groups[0]["momentum"] == 0.9
    assert "Parameter Group 1" in repr(opt)


def test_add_param_group_errors():
    a = ember.ones(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([a])
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {ember.ones(1, requires_grad=True)}})
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        opt.add_param_group({"params": [1.0]})
    with pytest.raises(ValueError, match="non-leaf"):
        opt.add_param_group({"params": [a * 2]})
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        b = ember.ones(1, requires_grad=True)
        optim.SGD([b, b], lr=0.1)
    assert any("duplicate parameters" in str(x.message) for x in w)


def test_required_parameter():
    from ember.optim.optimizer import Optimizer, required

    class Opt(Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, dict(lr=lr))

        def step(self, closure=None):
            pass

    with pytest.raises(ValueError, match="didn't specify a value of required optimization "
                                         "parameter lr"):
        Opt([ember.ones(1, requires_grad=True)])


@pytest.mark.parametrize("cls,kw,msg", [
    (optim.SGD, dict(lr=-1), "Invalid learning rate: -1"),
    (optim.SGD, dict(momentum=-0.1), "Invalid momentum value"),
    (optim.SGD, dict(nesterov=True), "Nesterov momentum requires"),
    (optim.Adam, dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
    (optim.Adam, dict(betas=(0.9, -1)), "Invalid beta parameter at index 1"),
    (optim.AdamW, dict(eps=-1), "Invalid epsilon value"),
    (optim.RMSprop, dict(alpha=-1), "Invalid alpha value"),
    (optim.Adagrad, dict(lr_decay=-1), "Invalid lr_decay value"),
    (optim.Adadelta, dict(rho=2), "Invalid rho value"),
    (optim.NAdam, dict(momentum_decay=-1), "Invalid momentum_decay value"),
    (optim.RAdam, dict(weight_decay=-1), "Invalid weight_decay value"),
])
def test_hyperparameter_checks(cls, kw, msg):
    with pytest.raises(ValueError, match=msg):
        cls([ember.ones(1, requires_grad=True)], **kw)


def test_zero_grad():
    p = ember.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = ember.ones(3)
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.numpy().tolist() == [0, 0, 0]
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("cls,kwargs", [(optim.SGD, dict(lr=0.1, momentum=0.9)),
                                        (optim.Adam, dict(lr=0.1, amsgrad=True)),
                                        (optim.NAdam, dict(lr=0.1)),
                                        (optim.Adagrad, dict(lr=0.1))])
def test_state_dict_round_trip(cls, kwargs):
    init, grads = _init(4, [(3,), (2, 2)]), _grads(4, [(3,), (2, 2)], 6)
    full, _ = run_ember(cls, kwargs, init, grads)
    half, opt = run_ember(cls, kwargs, init, grads[:3])
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1]
    assert sd["param_groups"][0]["params"] == [0, 1]
    params = [ember.tensor(a, requires_grad=True) for a in half]
    opt2 = cls(params, **kwargs)
    opt2.load_state_dict(sd)
    for step in grads[3:]:
        for p, g in zip(params, step):
            p.grad = ember.tensor(g)
        opt2.step()
    for a, b in zip(full, params):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-6)


def test_state_dict_torch_format():
    torch = pytest.importorskip("torch")
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(3, requires_grad=True)
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}])
    a.grad, b.grad = ember.ones(2), ember.ones(3)
    opt.step()
    ta = torch.ones(2, requires_grad=True)
    tb = torch.ones(3, requires_grad=True)
    topt = torch.optim.Adam([{"params": [ta]}, {"params": [tb], "lr": 0.5}])
    ta.grad, tb.grad = torch.ones(2), torch.ones(3)
    topt.step()
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["state"].keys() == tsd["state"].keys()
    assert sd["state"][1].keys() == tsd["state"][1].keys()
    assert [g["params"] for g in sd["param_groups"]] == [g["params"] for g in tsd["param_groups"]]
    common = set(tsd["param_groups"][0]) & set(sd["param_groups"][0])
    assert {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"} <= common


def test_load_state_dict_errors():
    a = ember.ones(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1)
    sd = opt.state_dict()
    opt2 = optim.SGD([{"params": [ember.ones(1, requires_grad=True)]},
                      {"params": [ember.ones(1, requires_grad=True)]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt2.load_state_dict(sd)
    opt3 = optim.SGD([ember.ones(1, requires_grad=True), ember.ones(1, requires_grad=True)],
                     lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt3.load_state_dict(sd)


def test_step_hooks():
    p = ember.ones(1, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", o is opt)))
    g = optim.register_optimizer_step_pre_hook(lambda o, a, k: calls.append(("global", True)))
    p.grad = ember.ones(1)
    opt.step()
    assert calls == [("global", True), ("pre", True), ("post", True)]
    h1.remove()
    h2.remove()
    g.remove()
    opt.step()
    assert len(calls) == 3


def test_lbfgs_rosenbrock():
    def rosen(x):
        return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2

    for ls in (None, "strong_wolfe"):
        x = ember.tensor([-1.5, 2.0], dtype=ember.float64, requires_grad=True)
        opt = optim.LBFGS([x], lr=1 if ls else 0.1, max_iter=200, history_size=10,
                          line_search_fn=ls)

        def closure(opt=opt, x=x):
            opt.zero_grad()
            loss = rosen(x)
            loss.backward()
            return loss

        for _ in range(5 if ls else 40):
            opt.step(closure)
        if ls:
            np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-4)
        else:
            assert rosen(x).item() < rosen(ember.tensor([-1.5, 2.0])).item()


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_lbfgs_torch_parity(ls):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    A = rng.standard_normal((6, 4))
    y = rng.standard_normal(6)

    def fit(lib, x, opt_cls):
        A_, y_ = lib.tensor(A), lib.tensor(y)
        opt = opt_cls([x], lr=0.5, max_iter=7, history_size=3, line_search_fn=ls)

        def closure():
            opt.zero_grad()
            r = A_ @ x - y_
            loss = (r * r).sum() + (x ** 4).sum() * 0.1
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        return x.detach().numpy()

    got = fit(ember, ember.zeros(4, dtype=ember.float64, requires_grad=True), optim.LBFGS)
    want = fit(torch, torch.zeros(4, dtype=torch.float64, requires_grad=True), torch.optim.LBFGS)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_fused_kernel_errors():
    from ember import _C
    p = ember.ones(3)
    with pytest.raises(ValueError, match="expected 1 grads"):
        _C._fused_sgd_([p], [], None, [True], lr=0.1, weight_decay=0, momentum=0,
                       dampening=0, nesterov=False, maximize=False)
    with pytest.raises(TypeError, match="dtype"):
        _C._fused_sgd_([p], [ember.ones(3, dtype=ember.float64)], None, [True], lr=0.1,
                       weight_decay=0, momentum=0, dampening=0, nesterov=False, maximize=False)
    with pytest.raises(ValueError, match="shape"):
        _C._fused_adam_([p], [ember.ones(4)], [ember.ones(3)], [ember.ones(3)], None,
                        [ember.tensor(0.0)], lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8,
                        weight_decay=0, amsgrad=False, maximize=False, decoupled=False)
    with pytest.raises(TypeError, match="float32 or float64"):
        _C._fused_sgd_([ember.ones(3, dtype=ember.int64)], [ember.ones(3, dtype=ember.int64)],
                       None, [True], lr=0.1, weight_decay=0, momentum=0, dampening=0,
                       nesterov=False, maximize=False)


@pytest.mark.parametrize("cls,ref,kwargs", [
    (optim.SGD, np_sgd, dict(lr=0.05, momentum=0.9, weight_decay=0.01)),
    (optim.Adam, np_adam, dict(lr=0.01, amsgrad=True)),
])
def test_fused_many_tensors_across_chunks(cls, ref, kwargs):
    # 23 tensors of odd sizes: the parallel chunks start and end inside tensors
    shapes = [(4999 + 37 * i,) for i in range(23)]
    init, grads = _init(6, shapes), _grads(6, shapes, 3)
    got, _ = run_ember(cls, kwargs, init, grads)
    for g, w in zip(got, ref(init, grads, **kwargs)):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def test_mixed_dtypes_in_one_group():
    init = [np.ones(3, np.float32), np.ones(2, np.float64)]
    params = [ember.tensor(init[0], requires_grad=True),
              ember.tensor(init[1], dtype=ember.float64, requires_grad=True)]
    opt = optim.Adam(params, lr=0.1)
    params[0].grad = ember.ones(3)
    params[1].grad = ember.ones(2, dtype=ember.float64)
    opt.step()
    for p, a in zip(params, init):
        want = np_adam([a], [[np.ones_like(a)]], lr=0.1)[0]
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6)


def test_user_defined_optimizer():
    class SignSGD(optim.Optimizer):
        def __init__(self, params, lr=0.01):
            super().__init__(params, dict(lr=lr))

        def step(self, closure=None):
            with ember.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            self.state[p]["n"] = self.state[p].get("n", 0) + 1
                            p.sub_(p.grad.sign() * group["lr"])

    p = ember.tensor([1.0, -1.0], requires_grad=True)
    opt = SignSGD([p], lr=0.5)
    seen = []
    opt.register_step_post_hook(lambda o, a, k: seen.append(True))
    p.grad = ember.tensor([3.0, -0.1])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.5, -0.5])
    assert seen == [True] and opt.state_dict()["state"] == {0: {"n": 1}}
    sched = optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == 0.25


def test_reachable_from_ember():
    import importlib
    e = importlib.import_module("ember")
    assert e.optim.Adam is optim.Adam


@pytest.mark.parametrize("cls,name", [(optim.SGD, "_fused_sgd_"), (optim.Adam, "_fused_adam_")])
def test_non_contiguous_grad_still_fused(cls, name, monkeypatch):
    from ember import _C
    calls = []
    real = getattr(_C, name)
    monkeypatch.setattr(_C, name, lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    p = ember.ones(3, 4, requires_grad=True)
    g = np.arange(12, dtype=np.float32).reshape(4, 3)
    p.grad = ember.tensor(g).t()
    assert not p.grad.is_contiguous()
    cls([p], lr=0.1).step()
    assert calls == [1]
    want = (np_sgd if cls is optim.SGD else np_adam)([np.ones((3, 4), np.float32)],
                                                     [[g.T.copy()]], lr=0.1)[0]
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6, atol=1e-7)


def test_checkpoint_with_ember_save(tmp_path):
    p = ember.ones(3, requires_grad=True)
    opt = optim.AdamW([p], lr=0.1)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2)
    p.grad = ember.ones(3)
    opt.step()
    sched.step()
    ember.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "ck.pt")
    ck = ember.load(tmp_path / "ck.pt")
    q = ember.tensor(p.detach().numpy(), requires_grad=True)
    opt2 = optim.AdamW([q], lr=0.5)
    sched2 = optim.lr_scheduler.StepLR(opt2, step_size=5)
    opt2.load_state_dict(ck["opt"])
    sched2.load_state_dict(ck["sched"])
    for o, t in ((opt, p), (opt2, q)):
        t.grad = ember.full((3,), 0.5)
        o.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert opt2.param_groups[0]["lr"] == 0.1 and sched2.step_size == 2


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

if given is not None:
    _shape = st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple)

    @settings(max_examples=25, deadline=None)
    @given(shapes=st.lists(_shape, min_size=1, max_size=4), momentum=st.sampled_from([0, 0.5]),
           nesterov=st.booleans(), wd=st.sampled_from([0.0, 0.1]), seed=st.integers(0, 99))
    def test_fused_sgd_hypothesis(shapes, momentum, nesterov, wd, seed):
        kw = dict(lr=0.1, momentum=momentum, nesterov=nesterov and momentum > 0,
                  weight_decay=wd)
        init, grads = _init(seed, shapes, np.float64), _grads(seed, shapes, 3, np.float64)
        got, _ = run_ember(optim.SGD, kw, init, grads, ember.float64)
        for g, w in zip(got, np_sgd(init, grads, **kw)):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)

    @settings(max_examples=25, deadline=None)
    @given(shapes=st.lists(_shape, min_size=1, max_size=4), amsgrad=st.booleans(),
           decoupled=st.booleans(), maximize=st.booleans(), seed=st.integers(0, 99))
    def test_fused_adam_hypothesis(shapes, amsgrad, decoupled, maximize, seed):
        kw = dict(lr=0.05, weight_decay=0.1, amsgrad=amsgrad, maximize=maximize)
        init, grads = _init(seed, shapes, np.float64), _grads(seed, shapes, 3, np.float64)
        cls = optim.AdamW if decoupled else optim.Adam
        got, _ = run_ember(cls, kw, init, grads, ember.float64)
        for g, w in zip(got, np_adam(init, grads, decoupled=decoupled, **kw)):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_fused_adam_checks_everything_before_writing():
    from ember import _C
    ps = [ember.ones(2), ember.ones(2)]
    steps = [ember.tensor(0.0), ember.ones(3)]  # the second step tensor is invalid
    with pytest.raises(ValueError, match=r"steps\[1\]"):
        _C._fused_adam_(ps, [ember.ones(2)] * 2, [ember.zeros(2), ember.zeros(2)],
                        [ember.zeros(2), ember.zeros(2)], None, steps, lr=0.1, beta1=0.9,
                        beta2=0.99, eps=1e-8, weight_decay=0, amsgrad=False, maximize=False,
                        decoupled=False)
    assert steps[0].item() == 0.0 and ps[0].numpy().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("cls,ref,kwargs", [
    (optim.SGD, np_sgd, dict(lr=0.05, momentum=0.9, nesterov=True)),
    (optim.Adam, np_adam, dict(lr=0.01, weight_decay=0.1)),
])
def test_fused_strided_gradients(cls, ref, kwargs):
    # permuted and step-sliced gradients, large enough to span several gather blocks and chunks
    rng = np.random.default_rng(7)
    shapes = [(30, 40, 50), (5, 7), (9000,)]
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    params = [ember.tensor(a, requires_grad=True) for a in init]
    opt = cls(params, **kwargs)
    steps = []
    for _ in range(3):
        gs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        steps.append(gs)
        params[0].grad = ember.tensor(np.ascontiguousarray(gs[0].transpose(2, 0, 1))).permute(
            1, 2, 0)
        params[1].grad = ember.tensor(gs[1].T.copy()).t()
        params[2].grad = ember.tensor(np.repeat(gs[2], 2))[::2]
        assert not any(p.grad.is_contiguous() for p in params)
        opt.step()
    for p, w in zip(params, ref(init, steps, **kwargs)):
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=2e-5, atol=2e-5)
