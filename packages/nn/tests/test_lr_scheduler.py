"""ember.optim.lr_scheduler: closed forms, torch parity over 100 steps, state_dict, warnings."""

import math
import warnings

import pytest

import ember
import ember.autograd  # noqa: F401
from ember import optim
from ember.optim import lr_scheduler as S


def _opt(lib=None, cls="SGD", lrs=(0.1,), **kw):
    if lib is None:
        params = [{"params": [ember.ones(1, requires_grad=True)], "lr": lr} for lr in lrs]
        return getattr(optim, cls)(params, **kw)
    params = [{"params": [lib.ones(1, requires_grad=True)], "lr": lr} for lr in lrs]
    return getattr(lib.optim, cls)(params, **kw)


def _run(sched, opt, steps=100, metric=None):
    lrs = []
    for i in range(steps):
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric(i))
        lrs.append(list(sched.get_last_lr()) if hasattr(sched, "get_last_lr")
                   else [g["lr"] for g in opt.param_groups])
    return lrs


def _close(a, b, tol=1e-12):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x == pytest.approx(y, rel=tol, abs=tol)


CASES = [
    ("StepLR", dict(step_size=7, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[10, 30, 30, 80], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.97)),
    ("CosineAnnealingLR", dict(T_max=30, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", dict(T_0=10, T_mult=2, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts", dict(T_0=7)),
    ("LinearLR", dict(start_factor=0.25, end_factor=0.9, total_iters=20)),
    ("ConstantLR", dict(factor=0.5, total_iters=13)),
    ("PolynomialLR", dict(total_iters=40, power=2.0)),
    ("OneCycleLR", dict(max_lr=[1.0, 0.5], total_steps=101)),
    ("OneCycleLR", dict(max_lr=1.0, epochs=10, steps_per_epoch=11, three_phase=True,
                        anneal_strategy="linear")),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                      enumerate(CASES)])
def test_torch_parity(name, kwargs):
    torch = pytest.importorskip("torch")
    opt, topt = _opt(lrs=(0.1, 0.05), momentum=0.9), _opt(torch, lrs=(0.1, 0.05), momentum=0.9)
    got = _run(getattr(S, name)(opt, **kwargs), opt)
    want = _run(getattr(torch.optim.lr_scheduler, name)(topt, **kwargs), topt)
    for g, w in zip(got, want):
        _close(g, w)
    if name == "OneCycleLR":
        assert [g["momentum"] for g in opt.param_groups] == pytest.approx(
            [g["momentum"] for g in topt.param_groups])


def test_torch_parity_lambda_multiplicative_sequential_chained_plateau():
    torch = pytest.importorskip("torch")

    def build(lib, mod):
        out = []
        o = _opt(lib)
        out.append((mod.LambdaLR(o, lambda e: 0.95 ** e + 0.01 * (e % 3)), o))
        o = _opt(lib)
        out.append((mod.MultiplicativeLR(o, lambda e: 0.98), o))
        o = _opt(lib)
        out.append((mod.SequentialLR(o, [mod.LinearLR(o, 0.1, total_iters=10),
                                         mod.ExponentialLR(o, 0.9),
                                         mod.CosineAnnealingLR(o, T_max=20)],
                                     milestones=[10, 40]), o))
        o = _opt(lib)
        out.append((mod.ChainedScheduler([mod.ConstantLR(o, 0.5, total_iters=4),
                                          mod.ExponentialLR(o, 0.95)]), o))
        return out

    for (s, o), (ts, to) in zip(build(None, S), build(torch, torch.optim.lr_scheduler)):
        _close([x[0] for x in _run(s, o)], [x[0] for x in _run(ts, to)])

    def metric(i):
        return 1.0 / (1 + min(i, 20)) + 0.001 * (i % 4)

    for kw in (dict(patience=3), dict(mode="max", patience=2, threshold_mode="abs",
                                      cooldown=2, factor=0.5, min_lr=0.001)):
        o, to = _opt(), _opt(torch)
        got = _run(S.ReduceLROnPlateau(o, **kw), o, metric=metric)
        want = _run(torch.optim.lr_scheduler.ReduceLROnPlateau(to, **kw), to, metric=metric)
        _close([x[0] for x in got], [x[0] for x in want])


CLOSED = [
    (S.StepLR, dict(step_size=7, gamma=0.5), lambda b, e: b * 0.5 ** (e // 7)),
    (S.MultiStepLR, dict(milestones=[10, 30], gamma=0.3),
     lambda b, e: b * 0.3 ** ((e >= 10) + (e >= 30))),
    (S.ExponentialLR, dict(gamma=0.97), lambda b, e: b * 0.97 ** e),
    (S.CosineAnnealingLR, dict(T_max=30, eta_min=0.001),
     lambda b, e: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * e / 30)) / 2),
    (S.LinearLR, dict(start_factor=0.25, total_iters=20),
     lambda b, e: b * (0.25 + 0.75 * min(e, 20) / 20)),
    (S.ConstantLR, dict(factor=0.5, total_iters=13), lambda b, e: b * (0.5 if e < 13 else 1)),
    (S.PolynomialLR, dict(total_iters=40, power=0.5),
     lambda b, e: b * (1 - min(e, 40) / 40) ** 0.5),
    (S.LambdaLR, dict(lr_lambda=lambda e: 1 / (1 + e)), lambda b, e: b / (1 + e)),
    (S.CosineAnnealingWarmRestarts, dict(T_0=10),
     lambda b, e: b * (1 + math.cos(math.pi * (e % 10) / 10)) / 2),
]


@pytest.mark.parametrize("cls,kwargs,form", CLOSED, ids=[c.__name__ for c, _, _ in CLOSED])
def test_closed_forms(cls, kwargs, form):
    opt = _opt(lrs=(0.1, 0.3))
    sched = cls(opt, **kwargs)
    assert sched.get_last_lr() == pytest.approx([form(0.1, 0), form(0.3, 0)])
    for e, lrs in enumerate(_run(sched, opt, 60), 1):
        assert lrs == pytest.approx([form(0.1, e), form(0.3, e)], rel=1e-9, abs=1e-12)


def test_onecycle_shape():
    opt = _opt(cls="Adam", lr=0.1)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=100)
    assert opt.param_groups[0]["lr"] == pytest.approx(1.0 / 25)
    lrs = [x[0] for x in _run(sched, opt, 99)]
    assert max(lrs) == pytest.approx(1.0, rel=1e-3)
    assert lrs[-1] == pytest.approx(1.0 / 25 / 1e4)
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.95)
    opt.step()
    sched.step()  # step 100: the last one allowed
    with pytest.raises(ValueError, match="Tried to step 101 times"):
        sched.step()


def test_warning_when_scheduler_steps_first():
    opt = _opt()
    sched = S.StepLR(opt, 3)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt = _opt()
    sched = S.StepLR(opt, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()


def test_state_dict_round_trip():
    opt = _opt()
    sched = S.MultiStepLR(opt, [3, 6], gamma=0.5)
    _run(sched, opt, 4)
    sd = sched.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4
    opt2 = _opt()
    opt2.param_groups[0]["initial_lr"] = 0.1
    sched2 = S.MultiStepLR(opt2, [1], gamma=0.1, last_epoch=0)
    sched2.load_state_dict(sd)
    opt2.param_groups[0]["lr"] = opt.param_groups[0]["lr"]
    assert _run(sched2, opt2, 5) == _run(sched, opt, 5)
    lam = S.LambdaLR(_opt(), lambda e: 1.0)
    assert lam.state_dict()["lr_lambdas"] == [None]


def test_errors():
    opt = _opt()
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(_opt(), 3, last_epoch=5)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        S.LambdaLR(opt, [lambda e: 1, lambda e: 1])
    with pytest.raises(ValueError, match="between 0 and 1"):
        S.ConstantLR(opt, factor=2)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Expected positive integer T_0"):
        S.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="total_steps OR"):
        S.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode foo is unknown"):
        S.ReduceLROnPlateau(opt, mode="foo")
    with pytest.raises(ValueError, match="number of milestone"):
        S.SequentialLR(opt, [S.StepLR(opt, 2)], milestones=[3])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        S.ChainedScheduler([S.ReduceLROnPlateau(opt)], optimizer=opt)
    with pytest.raises(ValueError, match="same optimizer"):
        S.ChainedScheduler([S.StepLR(opt, 2), S.StepLR(_opt(), 2)])
    with pytest.raises(ValueError, match="momentum or beta1"):
        S.OneCycleLR(_opt(cls="Adagrad"), max_lr=1.0, total_steps=10)
