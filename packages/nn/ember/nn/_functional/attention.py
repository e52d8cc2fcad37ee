"""scaled_dot_product_attention: the core's fused CPU kernel where it applies, else composed
(matmul, mask, softmax, dropout, matmul)."""

from __future__ import annotations

import math

import ember
from ember import _C
from ember.backends import cuda as _sdp_flags

from ..attention import SDPBackend
from ..attention import _enabled as _backends
from .dropout import dropout

# ---------------------------------------------------------------------------------------------
# attention

def _fused_cpu_kernel_applies(query, key, value, attn_mask, dropout_p, enable_gqa):
    """Whether the core's one-pass kernel computes this call (ATen's
    _scaled_dot_product_flash_attention_for_cpu): float CPU tensors of one dtype, the same
    leading sizes, no mask tensor, no dropout, and the flash backend allowed (torch's switches:
    ``sdpa_kernel([SDPBackend.MATH])`` or ``ember.backends.cuda.enable_flash_sdp(False)`` ask
    for the composed math form). Anything else is composed below."""
    if attn_mask is not None or dropout_p != 0.0 or enable_gqa:
        return False
    if not _sdp_flags.flash_sdp_enabled() or SDPBackend.FLASH_ATTENTION not in _backends[-1]:
        return False
    if query.dtype not in (ember.float32, ember.float64):
        return False
    if key.dtype != query.dtype or value.dtype != query.dtype:
        return False
    if not (query.device.type == key.device.type == value.device.type == "cpu"):
        return False
    nd = query.dim()
    if nd < 2 or key.dim() != nd or value.dim() != nd:
        return False
    return (query.shape[:-2] == key.shape[:-2] == value.shape[:-2]
            and query.shape[-1] == key.shape[-1] and key.shape[-2] == value.shape[-2])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    if _fused_cpu_kernel_applies(query, key, value, attn_mask, dropout_p, enable_gqa):
        return _C._scaled_dot_product_flash_attention_for_cpu(
            query, key, value, 0.0, is_causal, scale=scale)[0]
    lq, lk = query.shape[-2], key.shape[-2]
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * s
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        causal = ember.ones(lq, lk, dtype=ember.bool, device=query.device).tril()
        scores = ember.where(causal, scores, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == ember.bool:
            scores = ember.where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    w = ember.softmax(scores, -1)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True)
    return w.matmul(value)


# ---------------------------------------------------------------------------------------------
# multi-head attention (nn.MultiheadAttention's computation)

def _additive_mask(mask, dtype):
    """A float mask to add to the scores: boolean True = masked (-inf)."""
    if mask is None:
        return None
    if mask.dtype == ember.bool:
        return ember.where(mask, float("-inf"), 0.0).to(dtype)
    return mask.to(dtype)


def _pad_last(mask):
    if mask is None:
        return None
    zeros = ember.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype, device=mask.device)
    return ember.cat([mask, zeros], dim=-1)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """torch.nn.functional.multi_head_attention_forward: inputs ``(L, N, E)`` (or unbatched
    ``(L, E)``), returns ``(output, weights)`` (weights None unless ``need_weights``)."""
    from .linear import linear

    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    lq, n, e = query.shape
    lk = key.shape[0]
    h = num_heads
    if e != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {e}")
    hd = e // h
    if hd * h != e:
        raise AssertionError(f"embed_dim {e} not divisible by num_heads {h}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if use_separate_proj_weight:
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        wq, wk, wv = in_proj_weight.chunk(3, 0)
    bq = bk = bv = None
    if in_proj_bias is not None:
        bq, bk, bv = in_proj_bias.chunk(3, 0)
    q = linear(query, wq, bq)
    k = linear(key, wk, bk)
    v = linear(value, wv, bv)
    attn_mask = _additive_mask(attn_mask, q.dtype)
    key_padding_mask = _additive_mask(key_padding_mask, q.dtype)
    if attn_mask is not None and attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (lq, lk):
            raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, "
                               f"but should be {(lq, lk)}.")
    elif attn_mask is not None and attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (n * h, lq, lk):
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, "
                               f"but should be {(n * h, lq, lk)}.")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = ember.cat([k, bias_k.expand(1, n, e)])
        v = ember.cat([v, bias_v.expand(1, n, e)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
        lk += 1
    # (L, N, E) -> (N * H, L, hd)
    q = q.reshape(lq, n * h, hd).transpose(0, 1)
    k = k.reshape(lk, n * h, hd).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(lk, n * h, hd).transpose(0, 1) if static_v is None else static_v
    lk = k.shape[1]
    if add_zero_attn:
        z = ember.zeros(n * h, 1, hd, dtype=k.dtype, device=k.device)
        k, v = ember.cat([k, z], 1), ember.cat([v, z], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
        lk += 1
    mask = None
    if attn_mask is not None:
        mask = attn_mask.reshape(n, h, lq, lk) if attn_mask.dim() == 3 else attn_mask
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(n, 1, 1, lk)
        mask = kpm if mask is None else mask + kpm
    q, k, v = (t.reshape(n, h, -1, hd) for t in (q, k, v))
    scores = q.matmul(k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
    if mask is not None:
        scores = scores + mask
    w = ember.softmax(scores, -1)
    if dropout_p > 0.0 and training:
        w = dropout(w, dropout_p, True)
    out = w.matmul(v)  # (N, H, Lq, hd)
    out = out.permute(2, 0, 1, 3).reshape(lq, n, e)
    out = linear(out, out_proj_weight, out_proj_bias)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = w.mean(1) if average_attn_weights else w
    if not batched:
        weights = weights.squeeze(0)
    return out, weights
