"""Autocast through ember.nn (functional and modules) against torch's dtypes, and GradScaler:
scaling, unscaling, step skipping on inf/NaN, growth and backoff, state_dict."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

bf16, f32 = ember.bfloat16, ember.float32


def _t(*shape, seed=0, dtype=f32):
    return ember.randn(*shape, generator=ember.Generator().manual_seed(seed)).to(dtype)


CALLS = [
    ("linear", lambda F, t: F.linear(t["x"], t["w"], t["b"])),
    ("linear 3d", lambda F, t: F.linear(t["x"][None], t["w"], t["b"])),
    ("linear no bias", lambda F, t: F.linear(t["x"], t["w"])),
    ("conv2d", lambda F, t: F.conv2d(t["img"], t["k"], padding=1)),
    ("mse_loss", lambda F, t: F.mse_loss(t["x"], t["y"])),
    ("l1_loss", lambda F, t: F.l1_loss(t["x"], t["y"])),
    ("smooth_l1_loss", lambda F, t: F.smooth_l1_loss(t["x"], t["y"])),
    ("cross_entropy", lambda F, t: F.cross_entropy(t["x"], t["target"])),
    ("nll_loss", lambda F, t: F.nll_loss(t["x"], t["target"])),
    ("kl_div", lambda F, t: F.kl_div(t["x"], t["p"], reduction="batchmean")),
    ("binary_cross_entropy", lambda F, t: F.binary_cross_entropy(t["p"], t["p"])),
    ("bce_with_logits", lambda F, t: F.binary_cross_entropy_with_logits(t["x"], t["p"])),
    ("softmax (CPU: not listed)", lambda F, t: F.softmax(t["x"], 1)),
    ("layer_norm (CPU: not listed)", lambda F, t: F.layer_norm(t["x"], (4,))),
    ("relu", lambda F, t: F.relu(t["x"])),
]


def _inputs(dtype):
    return {"x": _t(3, 4, seed=1, dtype=dtype), "y": _t(3, 4, seed=2, dtype=dtype),
            "w": _t(5, 4, seed=3, dtype=dtype), "b": _t(5, seed=4, dtype=dtype),
            "img": _t(1, 2, 6, 6, seed=5, dtype=dtype), "k": _t(3, 2, 3, 3, seed=6, dtype=dtype),
            "p": _t(3, 4, seed=7).sigmoid().to(dtype), "target": ember.tensor([0, 3, 1])}


@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
@pytest.mark.parametrize("dtype", [f32, bf16], ids=["float32 in", "bfloat16 in"])
def test_functional_dtypes_match_torch(name, call, dtype):
    torch = pytest.importorskip("torch")
    ours = _inputs(dtype)
    def to_torch(v):
        if not v.dtype.is_floating_point:
            return torch.from_numpy(v.numpy())
        return torch.from_numpy(v.float().numpy()).to(
            torch.bfloat16 if v.dtype == bf16 else torch.float32)

    theirs = {k: to_torch(v) for k, v in ours.items()}
    with ember.autocast("cpu"):
        got = call(F, ours)
    with torch.autocast("cpu"):
        want = call(torch.nn.functional, theirs)
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    # the values too, to the lower precision's tolerance
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=2e-2, atol=2e-2)


def test_linear_is_the_hand_cast():
    t = _inputs(f32)
    with ember.autocast("cpu"):
        got = F.linear(t["x"], t["w"], t["b"])
    want = F.linear(t["x"].to(bf16), t["w"].to(bf16), t["b"].to(bf16))
    assert got.dtype == bf16 and np.array_equal(got.float().numpy(), want.float().numpy())


def test_losses_run_in_float32_as_a_whole():
    x, y = _t(3, 4, seed=1, dtype=bf16), _t(3, 4, seed=2, dtype=bf16)
    with ember.autocast("cpu"):
        got = F.mse_loss(x, y)
    assert got.dtype == f32
    d = x.float().numpy() - y.float().numpy()
    assert math.isclose(got.item(), float((d * d).mean()), rel_tol=1e-6)


def test_module_training_step_under_autocast():
    g = ember.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    for p in model.parameters():
        with ember.no_grad():
            p.copy_(ember.randn(*p.shape, generator=g) * 0.5)
    x, target = ember.randn(6, 4, generator=g), ember.tensor([0, 1, 0, 1, 1, 0])
    with ember.autocast("cpu"):
        out = model(x)
        loss = nn.CrossEntropyLoss()(out, target)
    assert out.dtype == bf16 and loss.dtype == f32
    loss.backward()
    for p in model.parameters():
        assert p.grad is not None and p.grad.dtype == f32


def test_wrapped_functions_keep_their_names_and_cost_a_flag_check():
    assert F.linear.__name__ == "linear" and F.mse_loss.__name__ == "mse_loss"
    assert hasattr(F.linear, "__wrapped_for_autocast__")
    assert not hasattr(F.relu, "__wrapped_for_autocast__")


# ---- GradScaler ----

def _sgd_setup(grad_values):
    p = nn.Parameter(ember.zeros(len(grad_values)))
    opt = ember.optim.SGD([p], lr=1.0)
    return p, opt


def _set_grad(p, values):
    p.grad = ember.tensor(values, dtype=f32)


def test_scale_unscale_and_step():
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0)
    p, opt = _sgd_setup([0.0, 0.0])
    loss = (p * ember.tensor([1.0, 2.0])).sum() + 1.0
    scaled = scaler.scale(loss)
    assert scaled.item() == 8.0
    scaled.backward()
    assert p.grad.tolist() == [8.0, 16.0]
    scaler.unscale_(opt)
    assert p.grad.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    assert scaler.step(opt) is None  # SGD.step's result
    assert p.detach().tolist() == [-1.0, -2.0]
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last"):
        scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 8.0 and scaler._get_growth_tracker() == 1


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_step_is_skipped_and_scale_backs_off_on_non_finite_gradients(bad):
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0, backoff_factor=0.25)
    p, opt = _sgd_setup([0.0, 0.0])
    scaler.scale(p.sum()).backward()
    _set_grad(p, [1.0, bad])
    scaler.step(opt)
    assert p.detach().tolist() == [0.0, 0.0]  # not stepped
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler._get_growth_tracker() == 0


def test_scale_grows_after_growth_interval_clean_steps():
    scaler = ember.amp.GradScaler("cpu", init_scale=2.0, growth_factor=3.0, growth_interval=3)
    p, opt = _sgd_setup([0.0])
    scales = []
    for _ in range(7):
        opt.zero_grad()
        scaler.scale(p.sum()).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == [2.0, 2.0, 6.0, 6.0, 6.0, 18.0, 18.0]


def test_update_with_new_scale_and_state_dict_round_trip():
    scaler = ember.amp.GradScaler("cpu", init_scale=16.0, growth_interval=5)
    p, opt = _sgd_setup([0.0])
    scaler.scale(p.sum()).backward()
    scaler.step(opt)
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0
    scaler.update(new_scale=ember.tensor([4.0]))
    assert scaler.get_scale() == 4.0
    with pytest.raises(AssertionError, match="new_scale should be a float"):
        scaler.update(new_scale=ember.tensor([4.0], dtype=ember.float64))
    sd = scaler.state_dict()
    assert sd == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                  "growth_interval": 5, "_growth_tracker": 0}
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.state_dict() == sd
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        other.load_state_dict({})


def test_state_dict_matches_torch():
    torch = pytest.importorskip("torch")
    ours = ember.amp.GradScaler("cpu", init_scale=32.0, growth_interval=2)
    theirs = torch.amp.GradScaler("cpu", init_scale=32.0, growth_interval=2)
    p, opt = _sgd_setup([0.0, 0.0])
    tp = torch.nn.Parameter(torch.zeros(2))
    topt = torch.optim.SGD([tp], lr=1.0)
    for grads in ([1.0, 2.0], [1.0, math.inf], [3.0, 4.0], [0.5, 0.5], [math.nan, 0.0]):
        for s, param, o, mod in ((ours, p, opt, ember), (theirs, tp, topt, torch)):
            o.zero_grad()
            s.scale(param.sum()).backward()
            param.grad = mod.tensor(grads) * s.get_scale()
            s.step(o)
            s.update()
        assert ours.state_dict() == theirs.state_dict()
        assert p.detach().tolist() == tp.detach().tolist()


def test_disabled_scaler_passes_through():
    scaler = ember.amp.GradScaler("cpu", enabled=False)
    p, opt = _sgd_setup([0.0])
    loss = p.sum() + 3.0
    assert scaler.scale(loss) is loss
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    loss.backward()
    scaler.step(opt)
    scaler.update()
    assert p.detach().tolist() == [-1.0]


def test_fp16_gradients_are_refused():
    scaler = ember.amp.GradScaler("cpu")
    p = nn.Parameter(ember.zeros(2, dtype=ember.float16))
    opt = ember.optim.SGD([p], lr=1.0)
    scaler.scale(ember.ones(1))
    p.grad = ember.ones(2, dtype=ember.float16)
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(opt)


def test_errors_before_scale_and_closure():
    scaler = ember.amp.GradScaler("cpu")
    p, opt = _sgd_setup([0.0])
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        scaler.step(opt)
    scaler.scale(p.sum())
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0.0)


@pytest.mark.skipif(ember.cuda.is_available(), reason="a GPU is usable here")
def test_cuda_scaler_without_a_gpu_warns_and_is_disabled():
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        scaler = ember.amp.GradScaler()
    assert not scaler.is_enabled()
    with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
        with pytest.warns(UserWarning):
            legacy = ember.cuda.amp.GradScaler()
    assert isinstance(legacy, ember.amp.GradScaler) and not legacy.is_enabled()
