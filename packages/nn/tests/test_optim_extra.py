"""ASGD, Rprop, Adafactor, SparseAdam, CyclicLR and swa_utils: hand-computed updates (no torch
needed) and torch parity of the parameters after several steps / of the lr sequences."""

import math
import warnings

import numpy as np
import pytest

import ember
import ember.autograd  # noqa: F401
from ember import nn, optim
from ember.optim import lr_scheduler, swa_utils

SHAPES = [(4, 3), (5,), (2, 3, 4)]


def _data(seed, steps=6, dtype=np.float64):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]
    return init, grads


def _run(lib, cls, kwargs, init, grads):
    params = [lib.tensor(a.copy(), requires_grad=True) for a in init]
    opt = cls(params, **kwargs)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = lib.tensor(g.copy())
        opt.step()
    return [p.detach().numpy() for p in params], opt


CASES = [
    ("ASGD", {}), ("ASGD", dict(lr=0.1, t0=2, lambd=1e-2, weight_decay=0.1)),
    ("ASGD", dict(maximize=True, alpha=0.5)),
    ("Rprop", {}), ("Rprop", dict(lr=0.05, etas=(0.3, 1.5))),
    ("Rprop", dict(maximize=True, step_sizes=(1e-3, 0.1))),
    ("Adafactor", {}), ("Adafactor", dict(lr=0.1, weight_decay=0.1, eps=(1e-6, 1e-3), d=1.5)),
    ("Adafactor", dict(maximize=True, beta2_decay=-0.5)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kwargs", CASES)
def test_matches_torch(name, kwargs, dtype):
    torch = pytest.importorskip("torch")
    init, grads = _data(0, dtype=np.dtype(dtype))
    want, _ = _run(torch, getattr(torch.optim, name), kwargs, init, grads)
    got, _ = _run(ember, getattr(optim, name), kwargs, init, grads)
    tol = 1e-12 if dtype == "float64" else 1e-6
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["ASGD", "Rprop", "Adafactor"])
def test_state_dict_keys_match_torch(name):
    torch = pytest.importorskip("torch")
    init, grads = _data(1, steps=2)
    _, t_opt = _run(torch, getattr(torch.optim, name), {}, init, grads)
    _, e_opt = _run(ember, getattr(optim, name), {}, init, grads)
    t_sd, e_sd = t_opt.state_dict(), e_opt.state_dict()
    assert sorted(t_sd["param_groups"][0]) == sorted(e_sd["param_groups"][0])
    for i in t_sd["state"]:
        assert sorted(t_sd["state"][i]) == sorted(e_sd["state"][i])


def test_asgd_by_hand():
    lr, lambd, alpha, t0 = 0.1, 0.01, 0.75, 1.0
    p0, g1, g2 = np.array([1.0, -2.0]), np.array([0.5, 0.25]), np.array([-1.0, 2.0])
    got, opt = _run(ember, optim.ASGD, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0),
                    [p0], [[g1], [g2]])
    p1 = p0 * (1 - lambd * lr) - lr * g1
    eta2 = lr / (1 + lambd * lr * 1) ** alpha
    p2 = p1 * (1 - lambd * eta2) - eta2 * g2
    np.testing.assert_allclose(got[0], p2, rtol=1e-6)  # eta is a float32 state tensor
    # mu stays 1 while step - t0 <= 1, so ax is the parameter itself
    state = next(iter(opt.state.values()))
    np.testing.assert_allclose(state["ax"].numpy(), p2, rtol=1e-6)
    assert state["mu"].item() == 1.0


def test_rprop_by_hand():
    lr, (eminus, eplus) = 0.1, (0.5, 1.2)
    grads = [[np.array([1.0, 1.0])], [np.array([2.0, -1.0])], [np.array([3.0, 4.0])]]
    got, _ = _run(ember, optim.Rprop, dict(lr=lr), [np.zeros(2)], grads)
    # element 0 keeps its sign: steps lr, lr*1.2, lr*1.44; element 1 flips at step 2 (no move,
    # gradient forgotten), so step 3 sees a zero product and keeps the halved step size
    want = [-(lr + lr * eplus + lr * eplus ** 2), -lr + 0.0 - lr * eminus]
    np.testing.assert_allclose(got[0], want, rtol=1e-6)


def test_adafactor_by_hand():
    # step 1: the second moment is g*g itself (1 - beta2 = 1 ** -0.8), so a vector moves by
    # alpha * sign(g) with alpha = max(eps2, rms(p)) * min(lr, 1)
    p0, g = np.array([3.0, -4.0]), np.array([0.5, -2.0])
    got, _ = _run(ember, optim.Adafactor, dict(lr=0.01), [p0], [[g]])
    rms = math.sqrt((9 + 16) / 2)
    np.testing.assert_allclose(got[0], p0 - 0.01 * rms * np.sign(g), rtol=1e-12)
    # a matrix: the factored estimate row_var @ col_var / mean(row_var) is exact for rank 1
    p0 = np.ones((2, 2))
    g = np.outer([1.0, 2.0], [3.0, 4.0])
    got, opt = _run(ember, optim.Adafactor, dict(lr=0.01), [p0], [[g]])
    np.testing.assert_allclose(got[0], p0 - 0.01 * 1.0 * np.sign(g), rtol=1e-12)
    state = next(iter(opt.state.values()))
    assert tuple(state["row_var"].shape) == (2, 1) and tuple(state["col_var"].shape) == (1, 2)


def test_sparse_adam_moves_only_touched_rows():
    emb = nn.Embedding(5, 3)
    before = emb.weight.detach().numpy().copy()
    opt = optim.SparseAdam(emb.parameters(), lr=0.1)
    emb(ember.tensor([1, 3, 3])).sum().backward()
    opt.step()
    after = emb.weight.detach().numpy()
    np.testing.assert_array_equal(after[[0, 2, 4]], before[[0, 2, 4]])
    # first step: ea = 0.1 g, eas = 0.001 g^2, step_size = lr sqrt(0.001) / 0.1
    g = np.array([1.0, 2.0])[:, None] * np.ones((2, 3))
    step = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)
    want = before[[1, 3]] - step * (0.1 * g) / (np.sqrt(0.001 * g * g) + 1e-8)
    np.testing.assert_allclose(after[[1, 3]], want, rtol=1e-5)


def test_sparse_adam_matches_torch_sparse_embedding():
    torch = pytest.importorskip("torch")
    w = np.arange(20.0).reshape(5, 4) / 10

    def run(lib, nn_mod, opt_cls, **emb_kw):
        emb = nn_mod.Embedding(5, 4, **emb_kw)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(w))
        opt = opt_cls(emb.parameters(), lr=0.1, betas=(0.8, 0.99))
        for idx in ([0, 2], [2, 3, 3], [1], [0, 4]):
            opt.zero_grad()
            (emb(lib.tensor(idx)) ** 2).sum().backward()
            opt.step()
        return emb.weight.detach().double().numpy()

    want = run(torch, torch.nn, torch.optim.SparseAdam, sparse=True)
    got = run(ember, nn, optim.SparseAdam)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_argument_errors_as_torch():
    p = [ember.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid eta values"):
        optim.Rprop(p, etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.ASGD(p, lr=-1)
    with pytest.raises(ValueError, match="beta2_decay should be <= 0"):
        optim.Adafactor(p, beta2_decay=0.5)
    with pytest.raises(ValueError, match="Clipping threshold d should be >= 1"):
        optim.Adafactor(p, d=0.5)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SparseAdam(p, lr=0.0)


# ---- schedulers ----
def _lr_sequence(lib, make, steps=20, opt="SGD"):
    params = [lib.zeros(2, requires_grad=True)]
    if opt == "SGD":
        o = lib.optim.SGD(params, lr=0.1, momentum=0.9)
    else:
        o = lib.optim.Adam(params, lr=0.1)
    sched = make(lib, o)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(steps):
            o.step()
            sched.step()
            g = o.param_groups[0]
            out.append((g["lr"], g["momentum"] if "momentum" in g else g["betas"][0]))
    return out


SCHEDULES = [
    ("SGD", lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=4)),
    ("SGD", lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3,
                                                       step_size_down=5, mode="triangular2")),
    ("Adam", lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3,
                                                        mode="exp_range", gamma=0.9)),
    ("SGD", lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, scale_fn=lambda x: 0.5 ** x, scale_mode="iterations",
        cycle_momentum=False)),
    ("SGD", lambda L, o: L.optim.swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=5)),
    ("SGD", lambda L, o: L.optim.swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=3,
                                                 anneal_strategy="linear")),
]


@pytest.mark.parametrize("opt,make", SCHEDULES)
def test_schedules_match_torch(opt, make):
    torch = pytest.importorskip("torch")
    want = _lr_sequence(torch, make, opt=opt)
    got = _lr_sequence(ember, make, opt=opt)
    np.testing.assert_allclose(np.array(got, dtype=float), np.array(want, dtype=float),
                               rtol=1e-12, atol=1e-15)


def test_cyclic_lr_by_hand():
    seq = _lr_sequence(ember, lambda L, o: lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=4),
                       steps=8)
    frac = [0.25, 0.5, 0.75, 1.0, 0.75, 0.5, 0.25, 0.0]
    np.testing.assert_allclose([lr for lr, _ in seq], [0.01 + 0.09 * f for f in frac])
    np.testing.assert_allclose([m for _, m in seq], [0.9 - 0.1 * f for f in frac])


def test_cyclic_lr_needs_momentum():
    o = optim.Adagrad([ember.zeros(1, requires_grad=True)])
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        lr_scheduler.CyclicLR(o, 0.01, 0.1)
    with pytest.raises(ValueError, match="mode is invalid"):
        lr_scheduler.CyclicLR(o, 0.01, 0.1, mode="zigzag", cycle_momentum=False)


def test_swalr_linear_by_hand():
    seq = _lr_sequence(ember, lambda L, o: swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=4,
                                                           anneal_strategy="linear"), steps=6)
    # lr moves linearly from 0.1 to 0.05 in 4 steps, then stays
    np.testing.assert_allclose([lr for lr, _ in seq], [0.0875, 0.075, 0.0625, 0.05, 0.05, 0.05])


def test_averaged_model_swa_and_ema():
    model = nn.Linear(3, 2)
    swa = swa_utils.AveragedModel(model)
    ema = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.5))
    seen = []
    for k in range(4):
        with ember.no_grad():
            model.weight.fill_(float(k))
        seen.append(float(k))
        swa.update_parameters(model)
        ema.update_parameters(model)
    np.testing.assert_allclose(swa.module.weight.detach().numpy(), np.mean(seen))
    want = seen[0]
    for v in seen[1:]:
        want = 0.5 * want + 0.5 * v
    np.testing.assert_allclose(ema.module.weight.detach().numpy(), want)
    assert swa.n_averaged.item() == 4
    assert "n_averaged" in swa.state_dict()
    x = ember.ones(1, 3)
    np.testing.assert_allclose(swa(x).detach().numpy(), swa.module(x).detach().numpy())


def test_update_bn_recomputes_running_stats():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    with ember.no_grad():
        model[0].weight.copy_(ember.eye(2))
        model[0].bias.zero_()
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((8, 2)) * 3 + 1 for _ in range(3)]
    loader = [(ember.tensor(b, dtype=ember.float32), ember.zeros(8)) for b in batches]
    model.eval()
    swa_utils.update_bn(loader, model)
    assert not model.training
    assert model[1].momentum == 0.1
    # momentum=None: the running mean is the plain mean of the batch means
    want = np.mean([b.mean(0) for b in batches], axis=0)
    np.testing.assert_allclose(model[1].running_mean.numpy(), want, rtol=1e-5)


def test_torch_module_paths():
    from ember.optim.adamw import AdamW
    from ember.optim.asgd import ASGD
    from ember.optim.lr_scheduler import CyclicLR, LRScheduler, OneCycleLR  # noqa: F401
    from ember.optim.optimizer import Optimizer
    from ember.optim.sparse_adam import SparseAdam  # noqa: F401
    assert AdamW is optim.AdamW and ASGD is optim.ASGD and Optimizer is optim.Optimizer


def _newton_schulz_reference(g, steps=5, coefficients=(3.4445, -4.7750, 2.0315)):
    """float64 NumPy Newton-Schulz (no bfloat16 rounding) of torch's Muon."""
    a, b, c = coefficients
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / max(np.linalg.norm(x), 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def test_muon_by_hand():
    rng = np.random.default_rng(3)
    p0, g = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    got, opt = _run(ember, optim.Muon, dict(lr=0.1, weight_decay=0.1), [p0.astype(np.float32)],
                    [[g.astype(np.float32)]])
    # step 1: buf = 0.05 g; nesterov update = lerp(g, buf, 0.95) = g * (0.05 + 0.95 * 0.05)
    update = _newton_schulz_reference(g * (0.05 + 0.95 * 0.05))
    want = p0 * (1 - 0.1 * 0.1) - 0.1 * math.sqrt(max(1, 3 / 5)) * update
    np.testing.assert_allclose(got[0], want, atol=0.1 * 0.05)  # bfloat16 iterations
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([ember.zeros(3, requires_grad=True)])


@pytest.mark.parametrize("kwargs", [dict(lr=0.02),
                                    dict(lr=0.02, nesterov=False,
                                         adjust_lr_fn="match_rms_adamw")])
def test_muon_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    init = [rng.standard_normal((4, 6)).astype(np.float32),
            rng.standard_normal((5, 3)).astype(np.float32)]
    grads = [[rng.standard_normal(a.shape).astype(np.float32) for a in init]
             for _ in range(4)]
    want, _ = _run(torch, torch.optim.Muon, kwargs, init, grads)
    got, _ = _run(ember, optim.Muon, kwargs, init, grads)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_swap_in_optimizer_params_and_state():
    live = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([live], lr=0.1, momentum=0.9)
    live.grad = ember.tensor([1.0, 1.0])
    opt.step()
    saved = opt.state_dict()
    other = ember.tensor([10.0, 20.0], requires_grad=True)
    other.grad = ember.tensor([1.0, -1.0])
    swapped_state = {"state": {0: {"momentum_buffer": ember.tensor([2.0, 2.0])}},
                     "param_groups": [dict(saved["param_groups"][0], lr=1.0)]}
    with optim.swap_in_optimizer_params_and_state(opt, {"w": other}, swapped_state):
        opt.step()
        assert opt.param_groups[0]["params"][0] is other
    # other moved by lr=1.0 * (0.9 * buf + grad); the swapped-in buffer was updated in place
    np.testing.assert_allclose(other.detach().numpy(), [10.0 - 2.8, 20.0 - 0.8], rtol=1e-6)
    np.testing.assert_allclose(swapped_state["state"][0]["momentum_buffer"].numpy(),
                               [2.8, 0.8], rtol=1e-6)
    assert opt.param_groups[0]["params"][0] is live and opt.param_groups[0]["lr"] == 0.1
    np.testing.assert_allclose(opt.state[live]["momentum_buffer"].numpy(), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        with optim.swap_in_optimizer_params_and_state(optim.SGD([other], lr=0.1), {}, saved):
            pass


def test_optimizer_state_dict_hooks():
    p = ember.ones(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: dict(sd, extra=1))
    sd = opt.state_dict()
    assert calls == ["pre"] and sd["extra"] == 1

    def rename_lr(o, sd):
        sd = dict(sd)
        sd["param_groups"] = [dict(g, lr=0.5) for g in sd["param_groups"]]
        return sd

    opt.register_load_state_dict_pre_hook(rename_lr)
    h = opt.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
    opt.register_load_state_dict_post_hook(lambda o: calls.append("first"), prepend=True)
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.5 and calls == ["pre", "first", "loaded"]
    h.remove()
    opt.load_state_dict(sd)
    assert calls == ["pre", "first", "loaded", "first"]
