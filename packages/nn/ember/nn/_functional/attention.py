"""scaled_dot_product_attention, composed: matmul, mask, softmax, dropout, matmul."""

from __future__ import annotations

import math

import ember

from .dropout import dropout

# ---------------------------------------------------------------------------------------------
# attention

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
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
