"""Autocast with autograd: gradients flow back through the casts to the parameters in their own
dtype, the weight-cast cache, custom_fwd/custom_bwd."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.amp import custom_bwd, custom_fwd

bf16, f32 = ember.bfloat16, ember.float32


def test_gradients_reach_float32_parameters():
    g = ember.Generator().manual_seed(1)
    w = ember.randn(4, 3, generator=g, requires_grad=True)
    x = ember.randn(2, 4, generator=g)
    with ember.autocast("cpu"):
        y = x @ w
        assert y.dtype == bf16
        loss = y.float().sum()
    loss.backward()
    assert w.grad.dtype == f32
    # the same graph written by hand: d(sum(x_bf16 @ w_bf16))/dw, cast back to float32
    wh = w.detach().clone().requires_grad_(True)
    (x.to(bf16) @ wh.to(bf16)).float().sum().backward()
    assert np.array_equal(w.grad.numpy(), wh.grad.numpy())
    # and its value: column sums of x (rounded to bfloat16), for every column of w
    xs = x.to(bf16).float().sum(0).numpy()
    np.testing.assert_allclose(w.grad.numpy(), np.repeat(xs[:, None], 3, 1), rtol=1e-2)


def test_weight_cast_is_cached_within_a_region():
    w = ember.randn(3, 3, requires_grad=True)
    x = ember.randn(3, 3)
    with ember.autocast("cpu"):
        a = x @ w
        b = x @ w
    # one cast node shared: both products' graphs reach w through the same cast
    assert a.grad_fn.next_functions[1][0] is b.grad_fn.next_functions[1][0]
    with ember.autocast("cpu", cache_enabled=False):
        c = x @ w
        d = x @ w
    assert c.grad_fn.next_functions[1][0] is not d.grad_fn.next_functions[1][0]
    from ember.amp import autocast_mode

    assert autocast_mode._state.cache == {}  # cleared when the outermost region exits


def test_backward_outside_the_region_runs_in_the_recorded_dtypes():
    w = ember.randn(4, 4, requires_grad=True)
    with ember.autocast("cpu"):
        y = (ember.randn(4, 4) @ w).sum()
    y.backward()
    assert w.grad.dtype == f32 and bool(ember.isfinite(w.grad).all())


class _Mul(ember.autograd.Function):
    @staticmethod
    @custom_fwd(device_type="cpu", cast_inputs=ember.float32)
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        assert not ember.is_autocast_enabled("cpu")
        return a.mm(b)

    @staticmethod
    @custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        assert not ember.is_autocast_enabled("cpu")  # as forward ran (cast_inputs given)
        return grad.mm(b.t()), a.t().mm(grad)


def test_custom_fwd_casts_inputs_and_runs_without_autocast():
    a = ember.randn(3, 3, dtype=bf16, requires_grad=True)
    b = ember.randn(3, 3, requires_grad=True)
    with ember.autocast("cpu"):
        out = _Mul.apply(a, b)
    assert out.dtype == f32
    out.sum().backward()
    assert a.grad.dtype == bf16 and b.grad.dtype == f32


_SEEN: list = []


class _Plain(ember.autograd.Function):
    @staticmethod
    @custom_fwd(device_type="cpu")
    def forward(ctx, a):
        _SEEN.append(("forward", ember.is_autocast_enabled("cpu")))
        return a.mm(a)

    @staticmethod
    @custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        _SEEN.append(("backward", ember.is_autocast_enabled("cpu"),
                      ember.get_autocast_dtype("cpu")))
        return grad * 2


def test_custom_bwd_runs_under_the_forward_state():
    a = ember.randn(2, 2, requires_grad=True)
    with ember.autocast("cpu"):
        out = _Plain.apply(a)
    assert out.dtype == bf16
    _SEEN.clear()
    with ember.autocast("cpu", dtype=ember.float16):
        out = _Plain.apply(a)
    assert out.dtype == ember.float16
    out.float().sum().backward()  # outside the region: custom_bwd turns it on again
    assert _SEEN == [("forward", True), ("backward", True, ember.float16)]
    assert not ember.is_autocast_enabled("cpu")


def test_custom_fwd_needs_a_device_type():
    with pytest.raises(TypeError):
        custom_fwd(lambda ctx: None)  # device_type is keyword-only and required
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        custom_fwd(device_type=1)


def test_matches_torch_gradients():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    wn, xn = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((4, 5)).astype(
        np.float32)
    w = ember.tensor(wn, requires_grad=True)
    tw = torch.tensor(wn, requires_grad=True)
    with ember.autocast("cpu"):
        y = (ember.tensor(xn) @ w).relu()
    with torch.autocast("cpu"):
        ty = (torch.tensor(xn) @ tw).relu()
    assert np.array_equal(y.detach().float().numpy(), ty.float().detach().numpy())
    y.float().square().sum().backward()
    ty.float().square().sum().backward()
    assert w.grad.dtype == f32 and tw.grad.dtype == torch.float32
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=2e-2, atol=1e-2)


# Ops whose binding hands autograd a bare function (contiguous's copy, copy_, fill_, zero_):
# inside a region they were run without being recorded, so gradients stopped (contiguous,
# copy_) or flowed through values that fill_ had overwritten.
_UNLISTED_RECORDED = {
    "contiguous": (lambda lib, a: (a * 3).t().contiguous(), lambda an: np.full_like(an, 3.0)),
    "copy_": (lambda lib, a: lib.zeros(6, 4).copy_(a.t() * 3), lambda an: np.full_like(an, 3.0)),
    "fill_": (lambda lib, a: (a * 3).fill_(1.0), np.zeros_like),
    "zero_": (lambda lib, a: (a * 3).zero_(), np.zeros_like),
}


@pytest.mark.parametrize("name", sorted(_UNLISTED_RECORDED))
def test_unlisted_ops_are_recorded_inside_a_region(name):
    forward, expected_grad = _UNLISTED_RECORDED[name]
    an = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    a = ember.tensor(an, requires_grad=True)
    with ember.autocast("cpu"):
        out = forward(ember, a)
    assert out.grad_fn is not None and out.dtype == f32  # not listed: not cast
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), expected_grad(an))
    torch = pytest.importorskip("torch")
    ta = torch.tensor(an, requires_grad=True)
    with torch.autocast("cpu"):
        forward(torch, ta).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())


def test_attention_block_gradients_reach_the_input_projection():
    # found by examples/programs/char_gpt.py under autocast: q, k, v of a Linear, split, heads
    # transposed and back with contiguous().view(); the projection had no gradient
    w = ember.randn(24, 8, requires_grad=True)
    x = ember.randn(2, 3, 8)
    with ember.autocast("cpu"):
        q, k, v = (x @ w.t()).split(8, dim=2)
        q, k, v = (t.view(2, 3, 2, 4).transpose(1, 2) for t in (q, k, v))
        y = (q @ k.transpose(-2, -1)).softmax(-1) @ v
        y = y.transpose(1, 2).contiguous().view(2, 3, 8)
    y.float().sum().backward()
    assert w.grad is not None and w.grad.dtype == f32
    assert bool(ember.isfinite(w.grad).all()) and bool((w.grad != 0).any())
