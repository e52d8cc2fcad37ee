"""F.scaled_dot_product_attention's fused CPU kernel (the core's
_scaled_dot_product_flash_attention_for_cpu): values and logsumexp against a NumPy reference,
gradients by finite differences (float64), the output's memory layout, which calls take it and
which are composed, and its errors."""

import math

import numpy as np
import pytest

import ember
import ember.autograd  # noqa: F401  (gradients)
from ember import _C
from ember.autograd import gradcheck, gradgradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(7)
KERNEL = _C._scaled_dot_product_flash_attention_for_cpu


def reference(q, k, v, causal, scale):
    """softmax(q k^T * scale, masked to torch's tril(ones(L, S))) v, and each row's logsumexp."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if causal:
        live = np.tril(np.ones(s.shape[-2:], dtype=bool))
        s = np.where(live, s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    lse = (m + np.log(e.sum(-1, keepdims=True)))[..., 0]
    return np.matmul(e / e.sum(-1, keepdims=True), v), lse


SHAPES = [  # query, key, value
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3)),
    ((4, 7, 8), (4, 7, 8), (4, 7, 8)),
    ((6, 4), (3, 4), (3, 2)),  # L > S: causal rows past S see every key
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1, 1, 1)),
    ((2, 2, 3, 2, 4), (2, 2, 3, 5, 4), (2, 2, 3, 5, 4)),
    # causal rows in blocks of 32, each block's products over the keys it sees: S > L, S < L
    ((2, 70, 8), (2, 75, 8), (2, 75, 5)),
    ((1, 2, 65, 4), (1, 2, 40, 4), (1, 2, 40, 3)),
]


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "x".join(map(str, s[0])))
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_values_and_logsumexp_match_numpy(shapes, causal, dtype, rtol, scale):
    q, k, v = (RNG.standard_normal(s).astype(dtype) for s in shapes)
    out, lse = KERNEL(*(ember.from_numpy(a) for a in (q, k, v)), 0.0, causal, scale=scale)
    want, want_lse = reference(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                               causal, scale)
    assert out.dtype == lse.dtype == ember.from_numpy(q).dtype
    assert tuple(out.shape) == want.shape and tuple(lse.shape) == want_lse.shape
    np.testing.assert_allclose(out.numpy(), want, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(lse.numpy(), want_lse, rtol=rtol, atol=rtol)
    # the public function gives the same values through the kernel
    got = F.scaled_dot_product_attention(*(ember.from_numpy(a) for a in (q, k, v)),
                                         is_causal=causal, scale=scale)
    np.testing.assert_array_equal(got.numpy(), out.numpy())


def test_strided_heads_are_read_in_place_and_the_output_follows_their_layout():
    """Heads split from one qkv projection (GPT's): the kernel reads them through their row
    stride; the output has the heads side by side in memory, as torch's, so that the usual
    transpose(1, 2).view(B, L, C) needs no copy."""
    B, T, C, H = 3, 6, 8, 2
    x = RNG.standard_normal((B, T, 3 * C)).astype(np.float32)
    qkv = ember.from_numpy(x)
    q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=2))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert y.stride() == (T * C, C // H, C, 1)
    assert y.transpose(1, 2).is_contiguous()
    y.transpose(1, 2).view(B, T, C)  # a view: raises if the layout were (B, H, T, D)
    want, _ = reference(*(a.numpy().astype(np.float64) for a in (q, k, v)), True, None)
    np.testing.assert_allclose(y.numpy(), want, rtol=2e-5, atol=2e-6)
    # contiguous heads give a contiguous output
    yc = F.scaled_dot_product_attention(q.contiguous(), k.contiguous(), v.contiguous())
    assert yc.is_contiguous()


def test_non_unit_last_stride_inputs():
    q, k, v = (RNG.standard_normal((2, 4, 5)) for _ in range(3))
    qt = ember.from_numpy(np.ascontiguousarray(np.swapaxes(q, -1, -2))).transpose(-1, -2)
    assert qt.stride()[-1] != 1
    out, _ = KERNEL(qt, ember.from_numpy(k), ember.from_numpy(v), 0.0, False)
    np.testing.assert_allclose(out.numpy(), reference(q, k, v, False, None)[0], rtol=1e-12)


def test_empty_sizes():
    e = ember.empty
    out, lse = KERNEL(e(2, 0, 4), e(2, 3, 4), e(2, 3, 5), 0.0, True)
    assert tuple(out.shape) == (2, 0, 5) and tuple(lse.shape) == (2, 0)
    # no keys: the weights are empty, the output is zeros (what the composed form gives)
    q = ember.ones(2, 3, 4)
    out, lse = KERNEL(q, e(2, 0, 4), e(2, 0, 5), 0.0, False)
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3, 5)))
    assert np.isneginf(lse.numpy()).all()
    composed = ember.softmax(q.matmul(e(2, 0, 4).transpose(-1, -2)), -1).matmul(e(2, 0, 5))
    np.testing.assert_array_equal(composed.numpy(), out.numpy())


BACKWARD = _C._scaled_dot_product_flash_attention_for_cpu_backward


def reference_grads(g, q, k, v, causal, scale):
    """(dq, dk, dv) of softmax(q k^T * scale [causal]) v for the output gradient g, by the chain
    rule written out in NumPy (float64)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dv = np.matmul(np.swapaxes(p, -1, -2), g)
    dp = np.matmul(g, np.swapaxes(v, -1, -2))
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * scale
    return np.matmul(ds, k), np.matmul(np.swapaxes(ds, -1, -2), q), dv


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "x".join(map(str, s[0])))
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_backward_kernel_matches_numpy(shapes, causal, dtype, rtol):
    q, k, v = (RNG.standard_normal(s).astype(dtype) for s in shapes)
    g = RNG.standard_normal(shapes[0][:-1] + shapes[2][-1:]).astype(dtype)
    eq, ek, ev, eg = (ember.from_numpy(a) for a in (q, k, v, g))
    out, lse = KERNEL(eq, ek, ev, 0.0, causal, scale=0.7)
    got = BACKWARD(eg, eq, ek, ev, out, lse, 0.0, causal, scale=0.7)
    want = reference_grads(*(a.astype(np.float64) for a in (g, q, k, v)), causal, 0.7)
    for name, a, b, src in zip("qkv", got, want, (q, k, v)):
        assert a.dtype == eq.dtype and tuple(a.shape) == src.shape, name
        np.testing.assert_allclose(a.numpy(), b, rtol=rtol, atol=rtol, err_msg=name)


def test_backward_follows_the_inputs_layout():
    """Gradients of heads split from one projection come back in the heads' layout, so that the
    transpose and view of the forward are views again on the way back."""
    B, T, C, H = 2, 5, 8, 2
    x = ember.from_numpy(RNG.standard_normal((B, T, 3 * C)))
    q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in x.split(C, dim=2))
    out, lse = KERNEL(q, k, v, 0.0, True)
    g = ember.from_numpy(RNG.standard_normal((B, H, T, C // H)))
    got = BACKWARD(g, q, k, v, out, lse, 0.0, True)
    want = reference_grads(*(a.numpy() for a in (g, q, k, v)), True, None)
    for a, b in zip(got, want):
        assert a.stride() == (T * C, C // H, C, 1)
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-12, atol=1e-12)
    # through autograd: the leaf's gradient equals the composed form's
    xr = x.clone().requires_grad_()
    q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in xr.split(C, dim=2))
    F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
    want_x = np.concatenate([w.transpose(0, 2, 1, 3).reshape(B, T, C) for w in want], axis=2)
    np.testing.assert_allclose(xr.grad.numpy(), want_x, rtol=1e-12, atol=1e-12)


def test_backward_empty_sizes_give_zeros():
    e = ember.empty
    q, k, v = ember.ones(2, 3, 4), e(2, 0, 4), e(2, 0, 5)
    out, lse = KERNEL(q, k, v, 0.0, False)
    gq, gk, gv = BACKWARD(ember.ones(2, 3, 5), q, k, v, out, lse, 0.0, False)
    np.testing.assert_array_equal(gq.numpy(), np.zeros((2, 3, 4)))
    assert tuple(gk.shape) == (2, 0, 4) and tuple(gv.shape) == (2, 0, 5)


def test_backward_errors():
    f = ember.ones(2, 3, 4)
    out, lse = KERNEL(f, f, f, 0.0, False)
    with pytest.raises(RuntimeError, match="grad_out of size"):
        BACKWARD(ember.ones(2, 3, 5), f, f, f, out, lse, 0.0, False)
    with pytest.raises(RuntimeError, match="logsumexp of size"):
        BACKWARD(f, f, f, f, out, ember.ones(2, 4), 0.0, False)
    with pytest.raises(RuntimeError, match="out of dtype Float"):
        BACKWARD(f, f, f, f, out.double(), lse, 0.0, False)
    with pytest.raises(NotImplementedError, match="attn_mask"):
        BACKWARD(f, f, f, f, out, lse, 0.0, False, attn_mask=ember.ones(3, 3))
    with pytest.raises(NotImplementedError, match="dropout_p"):
        BACKWARD(f, f, f, f, out, lse, 0.1, False)
    with pytest.raises(RuntimeError, match="incompatible sizes"):
        BACKWARD(f, f, ember.ones(2, 3, 5), f, out, lse, 0.0, False)


@pytest.mark.parametrize("causal", [False, True])
def test_gradients_by_finite_differences(causal):
    shapes = ((2, 2, 4, 3), (2, 2, 5, 3), (2, 2, 5, 2))
    q, k, v = (ember.from_numpy(RNG.standard_normal(s)).requires_grad_() for s in shapes)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.8)

    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


def test_gradient_of_one_input():
    q, k, v = (ember.from_numpy(RNG.standard_normal((3, 4, 2))) for _ in range(3))
    k.requires_grad_()
    assert gradcheck(lambda k: F.scaled_dot_product_attention(q, k, v, is_causal=True), (k,))


def test_calls_the_kernel_does_not_take_are_composed():
    q = ember.from_numpy(RNG.standard_normal((2, 3, 4)))
    mask = ember.from_numpy(RNG.standard_normal((3, 3)) > 0)
    mask[:, 0] = True
    got = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    s = np.matmul(q.numpy(), np.swapaxes(q.numpy(), -1, -2)) / 2.0
    s = np.where(mask.numpy(), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(got.numpy(), np.matmul(w / w.sum(-1, keepdims=True), q.numpy()),
                               rtol=1e-12)
    # integer inputs, broadcast leading sizes: the composed path's own behaviour
    qb = ember.from_numpy(RNG.standard_normal((1, 3, 4)))
    kb = ember.from_numpy(RNG.standard_normal((2, 5, 4)))
    assert tuple(F.scaled_dot_product_attention(qb, kb, kb).shape) == (2, 3, 4)


def test_errors():
    f = ember.ones(2, 3, 4)
    with pytest.raises(NotImplementedError, match="attn_mask"):
        KERNEL(f, f, f, 0.0, False, attn_mask=ember.ones(3, 3))
    with pytest.raises(NotImplementedError, match="dropout_p"):
        KERNEL(f, f, f, 0.5, False)
    with pytest.raises(NotImplementedError, match="'Long'"):
        KERNEL(*(ember.ones(2, 3, 4, dtype=ember.int64),) * 3, 0.0, False)
    with pytest.raises(RuntimeError, match="one dtype"):
        KERNEL(f, f.double(), f, 0.0, False)
    with pytest.raises(RuntimeError, match="incompatible sizes"):
        KERNEL(f, ember.ones(2, 3, 5), f, 0.0, False)
    with pytest.raises(RuntimeError, match="same number of dims"):
        KERNEL(f, ember.ones(3, 4), f, 0.0, False)


def test_matches_torch_where_installed():
    torch = pytest.importorskip("torch")
    arrs = [RNG.standard_normal(s).astype(np.float32) for s in ((2, 3, 7, 8), (2, 3, 9, 8),
                                                               (2, 3, 9, 8))]
    for causal in (False, True):
        t = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            *(torch.from_numpy(a) for a in arrs), 0.0, causal)
        e = KERNEL(*(ember.from_numpy(a) for a in arrs), 0.0, causal)
        np.testing.assert_allclose(e[0].numpy(), t[0].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(e[1].numpy(), t[1].numpy(), rtol=1e-5, atol=1e-6)
        g = RNG.standard_normal((2, 3, 7, 8)).astype(np.float32)
        tg = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
            torch.from_numpy(g), *(torch.from_numpy(a) for a in arrs), t[0], t[1], 0.0, causal)
        eg = BACKWARD(ember.from_numpy(g), *(ember.from_numpy(a) for a in arrs), e[0], e[1],
                      0.0, causal)
        for a, b in zip(eg, tg):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_the_backend_switches_choose_the_composed_form():
    from ember.backends import cuda as flags
    from ember.nn.attention import SDPBackend, sdpa_kernel

    B, T, C, H = 2, 5, 8, 2
    qkv = ember.from_numpy(RNG.standard_normal((B, T, 3 * C)).astype(np.float32))
    q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=2))
    fused = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert fused.stride()[1] == C // H  # the kernel's layout
    with sdpa_kernel([SDPBackend.MATH]):
        composed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert composed.is_contiguous()  # the composed form's matmul result
    np.testing.assert_allclose(composed.numpy(), fused.numpy(), rtol=1e-5, atol=1e-6)
    flags.enable_flash_sdp(False)
    try:
        assert F.scaled_dot_product_attention(q, k, v, is_causal=True).is_contiguous()
    finally:
        flags.enable_flash_sdp(True)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        assert F.scaled_dot_product_attention(q, k, v).stride() == fused.stride()
