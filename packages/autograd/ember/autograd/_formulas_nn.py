"""Gradient entries of the core's fused nn kernels (convolution, pooling, nll_loss, batch/layer
norm, embedding), registered in the same table as ``_formulas``.

Each forward's vjp calls the core's backward kernel; each backward kernel that is linear in its
``grad_output`` (pooling, nll_loss, embedding) gets the forward applied to the incoming gradient
as its own vjp, so double backward works. Convolution's backward has the full double-backward
formulas. Batch and layer norm use their backward kernels in plain backward; under
``create_graph`` (grad mode on inside the vjp) they use the same formula written with core ops,
which is differentiable again.
"""

from __future__ import annotations

import math
import struct

import ember
from ember import _C

from ._engine import MULTI_OUTPUT_SAVE
from ._formulas import grad

# multi-output ops that save their indices (output 1) for backward
MULTI_OUTPUT_SAVE.update({f"max_pool{k}d_with_indices": 1 for k in (1, 2, 3)})
MULTI_OUTPUT_SAVE.update({f"adaptive_max_pool{k}d": 1 for k in (1, 2, 3)})


def _first(g):
    return g[0] if isinstance(g, (tuple, list)) else g


# ---------------------------------------------------------------------------------------------
# convolution

@grad("convolution", save=(0, 1))
def _convolution(g, needs, out, x, w, b, *, stride, padding, dilation, transposed,
                 output_padding, groups):
    has_b = len(needs) > 2 and needs[2]
    bias_sizes = list(b.shape) if b is not None else None
    gi, gw, gb = ember.convolution_backward(
        g, x, w, bias_sizes=bias_sizes, stride=stride, padding=padding, dilation=dilation,
        transposed=transposed, output_padding=output_padding, groups=groups,
        output_mask=[bool(needs[0]), bool(needs[1]), bool(has_b)])
    return (gi, gw, gb if has_b else None)


@grad("convolution_backward", save=(0, 1, 2))
def _convolution_backward(gg, needs, out, go, x, w, *, bias_sizes, stride, padding, dilation,
                          transposed, output_padding, groups, output_mask):
    ggi, ggw, ggb = (tuple(gg) + (None, None, None))[:3]
    kw = dict(stride=stride, padding=padding, dilation=dilation, transposed=transposed,
              output_padding=output_padding, groups=groups)
    bkw = dict(kw, bias_sizes=None)
    d_go = d_x = d_w = None
    if needs[0]:
        parts = []
        if ggi is not None:
            parts.append(ember.convolution(ggi, w, None, **kw))
        if ggw is not None:
            parts.append(ember.convolution(x, ggw, None, **kw))
        if ggb is not None:
            parts.append(ggb.reshape((1, -1) + (1,) * (go.dim() - 2)).expand(*go.shape))
        d_go = sum(parts[1:], parts[0]) if parts else None
    if needs[2] and ggi is not None:
        d_w = ember.convolution_backward(go, ggi, w, output_mask=[False, True, False], **bkw)[1]
    if needs[1] and ggw is not None:
        d_x = ember.convolution_backward(go, x, ggw, output_mask=[True, False, False], **bkw)[0]
    return (d_go, d_x, d_w)


# ---------------------------------------------------------------------------------------------
# pooling

def _gather_back(ggi, idx, k):
    """The transpose of scattering by flat spatial `idx`: picks ggi's values at idx."""
    # NOTE: a gather written as an embedding lookup over the flattened planes (one row each)
    src = ggi.flatten(ggi.dim() - k)
    ind = idx.flatten(idx.dim() - k)
    plane = src.shape[-1]
    offs = ember.arange(0, ind.numel() // max(ind.shape[-1], 1) * plane, plane,
                        dtype=ind.dtype, device=ind.device).reshape(tuple(ind.shape[:-1]) + (1,))
    rows = ember.embedding(src.reshape(-1, 1), ind + offs)
    return rows.reshape(tuple(idx.shape))


for _k in (1, 2, 3):
    def _make(k):
        bwd = f"max_pool{k}d_with_indices_backward"
        afwd, abwd = f"avg_pool{k}d", f"avg_pool{k}d_backward"
        amax, amaxb = f"adaptive_max_pool{k}d", f"adaptive_max_pool{k}d_backward"
        aavg, aavgb = f"adaptive_avg_pool{k}d", f"adaptive_avg_pool{k}d_backward"

        @grad(f"max_pool{k}d_with_indices", save=(0,), out=True)
        def _max(g, needs, idx, x, **kw):
            return (getattr(ember, bwd)(_first(g), x, indices=idx, **kw),)

        @grad(bwd, save=())
        def _max_b(gg, needs, out, go, x, *, indices, **kw):
            return (_gather_back(gg, indices, k), None)

        @grad(afwd, save=(0,))
        def _avg(g, needs, out, x, **kw):
            return (getattr(ember, abwd)(g, x, **kw),)

        @grad(abwd, save=())
        def _avg_b(gg, needs, out, go, x, **kw):
            return (getattr(ember, afwd)(gg, **kw), None)

        @grad(amax, save=(0,), out=True)
        def _amax(g, needs, idx, x, *, output_size):
            return (getattr(ember, amaxb)(_first(g), x, indices=idx),)

        @grad(amaxb, save=())
        def _amax_b(gg, needs, out, go, x, *, indices):
            return (_gather_back(gg, indices, k), None)

        @grad(aavg, save=(0,))
        def _aavg(g, needs, out, x, *, output_size):
            return (getattr(ember, aavgb)(g, x),)

        @grad(aavgb, save=())
        def _aavg_b(gg, needs, out, go, x):
            return (getattr(ember, aavg)(gg, list(go.shape[-k:])), None)


    _make(_k)


# ---------------------------------------------------------------------------------------------
# nll_loss, embedding

@grad("nll_loss", save=(0, 1, 2))
def _nll_loss(g, needs, out, x, target, weight, *, reduction, ignore_index):
    return (ember.nll_loss_backward(g, x, target, weight, reduction=reduction,
                                    ignore_index=ignore_index), None, None)


@grad("nll_loss_backward", save=(2, 3))
def _nll_loss_backward(gg, needs, out, go, x, target, weight, *, reduction, ignore_index,
                       total_weight):
    return (ember.nll_loss(gg, target, weight, reduction=reduction, ignore_index=ignore_index),
            None, None, None)


@grad("embedding", save=(1,))
def _embedding(g, needs, out, w, indices, *, padding_idx, scale_grad_by_freq, sparse):
    return (ember.embedding_dense_backward(g, indices, num_weights=w.shape[0],
                                           padding_idx=padding_idx,
                                           scale_grad_by_freq=scale_grad_by_freq), None)


@grad("embedding_dense_backward", save=(1,))
def _embedding_dense_backward(gg, needs, out, go, indices, *, num_weights, padding_idx,
                              scale_grad_by_freq):
    return (ember.embedding(gg, indices), None)


# ---------------------------------------------------------------------------------------------
# binary_cross_entropy, unreduced and unweighted (F.binary_cross_entropy applies both), recorded
# as one node as torch's BinaryCrossEntropyBackward0: the forward clamps each log at -100 and
# the gradient divides by max(x (1 - x), 1e-12), so inputs of exactly 0 or 1 get torch's finite
# gradients where the composition's log'(0) = inf times the clamp's 0 gave NaN.

# torch's EPSILON in binary_cross_entropy_backward: the float 1e-12, rounded to float32 whatever
# the tensor's dtype
_BCE_EPSILON = struct.unpack("f", struct.pack("f", 1e-12))[0]


@grad("binary_cross_entropy", save=(0, 1))
def _binary_cross_entropy(g, needs, out, x, target):
    gx = g * (x - target) / (x * (1 - x)).clamp(min=_BCE_EPSILON) if needs[0] else None
    # torch's binary_cross_entropy_target_backward: the logs unclamped
    gt = g * ((-x).log1p() - x.log()) if len(needs) > 1 and needs[1] else None
    return (gx, gt)


@grad("linear", save=(0, 1))
def _linear(g, needs, out, x, w, b):
    # y = x w^T + b over x's last dim: dx = g w, dw = g^T x (rows of every leading index), db
    # the sum of g's rows; core ops, so double backward works
    o, i = w.shape[0], w.shape[-1]
    gx = g.matmul(w) if needs[0] else None
    gw = gb = None
    if needs[1]:
        gw = g.reshape(-1, o).t().matmul(x.reshape(-1, i))
    if b is not None and len(needs) > 2 and needs[2]:
        gb = g.reshape(-1, o).sum(0)
    return (gx, gw, gb)


@grad("binary_cross_entropy_with_logits", save=(0, 1, 2))
def _bce_with_logits(g, needs, out, x, target, pos_weight):
    # the unreduced loss (1 - t) x + lw softplus(-x), lw = (pos_weight - 1) t + 1 (torch's
    # binary_cross_entropy_with_logits_backward and _target_backward)
    s = x.sigmoid()
    if pos_weight is None:
        gx = g * (s - target) if needs[0] else None
        gt = g * -x if needs[1] else None
        return (gx, gt, None)
    lw = (pos_weight - 1) * target + 1
    gx = g * (s * lw - pos_weight * target) if needs[0] else None
    softplus_neg = (-x).clamp(min=0) + (-x.abs()).exp().log1p()
    gt = g * ((pos_weight - 1) * softplus_neg - x) if needs[1] else None
    gp = None
    if len(needs) > 2 and needs[2]:
        gp = (g * target * softplus_neg).sum_to_size(pos_weight.shape)
    return (gx, gt, gp)


# ---------------------------------------------------------------------------------------------
# activations composed in ember.nn.functional but recorded as one node (saving only the input,
# as torch's GeluBackward0 / SiluBackward0); written with core ops, so double backward works

# their names (elementwise: forward AD applies the formula to the tangent)
ACTIVATIONS = ("gelu", "silu", "elu", "celu", "softplus", "mish", "hardsigmoid", "hardswish")

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_BETA = math.sqrt(2.0 / math.pi)
_TANH_KAPPA = 0.044715


@grad("gelu", save=(0,))
def _gelu(g, needs, out, x, approximate="none"):
    if not ember.is_grad_enabled() and not x.is_cuda:
        # plain backward on the CPU: the core's one-pass kernel
        return (ember._C.gelu_backward(g, x, approximate=approximate), None)
    if approximate == "none" and not ember.is_grad_enabled():
        # plain backward: the same formula in place, two temporaries instead of ten
        d = (x * _SQRT_HALF).erf_().add_(1.0).mul_(0.5)  # cdf
        d.add_((x * x).mul_(-0.5).exp_().mul_(_INV_SQRT_2PI).mul_(x))  # + x * pdf
        return (d.mul_(g), None)
    if approximate == "tanh":  # torch's GeluBackward (tanh): d/dx of x/2 (1 + tanh(inner))
        x_sq = x * x
        t = ((x + x_sq * x * _TANH_KAPPA) * _TANH_BETA).tanh()
        right = (1 - t * t) * ((x_sq * (3 * _TANH_KAPPA) + 1) * _TANH_BETA) * (x * 0.5)
        return (g * ((t + 1) * 0.5 + right), None)
    cdf = ((x * _SQRT_HALF).erf() + 1) * 0.5
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return (g * (cdf + x * pdf), None)


@grad("silu", save=(0,))
def _silu(g, needs, out, x):
    if not ember.is_grad_enabled():  # plain backward: in place, two temporaries
        s = x.sigmoid()
        return ((1.0 - s).mul_(x).add_(1.0).mul_(s).mul_(g),)
    s = x.sigmoid()
    return (g * s * (1 + x * (1 - s)),)


@grad("elu", "celu", save=(0,))
def _elu(g, needs, out, x, alpha, scale, input_scale):
    # torch's elu_backward; exp of the clamped input, so the unselected side stays finite
    neg = (x.clamp(max=0) * input_scale).exp() * (alpha * scale * input_scale)
    return (ember.where(x > 0, g * scale, g * neg), None, None, None)


def _softplus_of(x):
    """log(1 + exp(x)) without overflow."""
    return x.clamp(min=0) + (-x.abs()).exp().log1p()


@grad("softplus", save=(0,))
def _softplus(g, needs, out, x, beta, threshold):
    z = x * beta
    return (ember.where(z > threshold, g, g * z.sigmoid()), None, None)


@grad("mish", save=(0,))
def _mish(g, needs, out, x):
    t = _softplus_of(x).tanh()
    return (g * (t + x * x.sigmoid() * (1 - t * t)),)


@grad("hardsigmoid", save=(0,))
def _hardsigmoid(g, needs, out, x):
    return (ember.where((x > -3.0) & (x < 3.0), g / 6.0, 0.0),)


@grad("hardswish", save=(0,))
def _hardswish(g, needs, out, x):
    return (ember.where(x <= -3.0, 0.0, ember.where(x < 3.0, g * (x / 3.0 + 0.5), g)),)


# ---------------------------------------------------------------------------------------------
# batch norm, layer norm

def _bn_shape(x):
    return (1, -1) + (1,) * (x.dim() - 2)


# NOTE: the running statistics are not saved: a training-mode forward updates them in place, so
# a saved copy would fail the version check as soon as the module runs again before backward
# (gradient accumulation). Training mode needs only the batch statistics (recomputed here);
# eval mode needs the running ones, so ember.nn.functional.batch_norm composes eval mode from core
# ops when a gradient is wanted.
# torch's HardtanhBackward0 reads the result: it is strictly inside (min_val, max_val) exactly
# where the input is, so the in-place form (ReLU6(inplace=True)) needs no copy of its input.
@grad("hardtanh", out=True, inplace_too=True)
def _hardtanh(g, needs, out, x, *, min_val=-1.0, max_val=1.0):
    return (_C.hardtanh_backward(g, out, min_val, max_val),)


# The backward kernels are linear in grad_output with a mask that does not move: their own
# gradient is the same kernel (double backward), and none flows to `self`.
@grad("hardtanh_backward", save=(1,))
def _hardtanh_backward(g, needs, out, grad_output, x, *, min_val, max_val):
    return (_C.hardtanh_backward(g, x, min_val, max_val), None)


@grad("threshold_backward", save=(1,))
def _threshold_backward(g, needs, out, grad_output, x, *, threshold):
    return (_C.threshold_backward(g, x, threshold), None)


@grad("native_batch_norm", save=(0, 1, 2), out=(1, 2), diff_outputs=(0,))
def _native_batch_norm(g, needs, out, x, w, b, rm, rv, *, training, momentum, eps):
    if not training:
        raise RuntimeError("native_batch_norm: backward of eval mode (running statistics) is not "
                           "recorded; use ember.nn.functional.batch_norm, which composes it")
    g = _first(g)
    dims = (0,) + tuple(range(2, x.dim()))
    shp = _bn_shape(x)
    has_w, has_b = w is not None and needs[1], b is not None and needs[2]
    if not ember.is_grad_enabled():
        # the forward's saved statistics: recomputing them cost two more passes over x
        mean, invstd = out
        gi, gw, gb = ember.native_batch_norm_backward(
            g, x, w, None, None, mean, invstd, train=True, eps=eps,
            output_mask=[bool(needs[0]), bool(has_w), bool(has_b)])
        return (gi, gw if has_w else None, gb if has_b else None, None, None)
    # create_graph: the same formula in core ops, the statistics recomputed so that their own
    # dependence on x is differentiated too
    mean = x.mean(dims)
    invstd = (x.var(dims, correction=0) + eps).rsqrt()
    xhat = (x - mean.reshape(shp)) * invstd.reshape(shp)
    gw = (g * xhat).sum(dims) if has_w else None
    gb = g.sum(dims) if has_b else None
    gi = None
    if needs[0]:
        scale = invstd if w is None else invstd * w
        n = x.numel() // x.shape[1]
        gsum = g.sum(dims).reshape(shp)
        gxh = (g * xhat).sum(dims).reshape(shp)
        gi = (g - gsum / n - xhat * gxh / n) * scale.reshape(shp)
    return (gi, gw, gb, None, None)


@grad("_scaled_dot_product_flash_attention_for_cpu", save="all", out=(0, 1),
      diff_outputs=(0,))
def _sdpa_flash_cpu(g, needs, out, q, k, v, *, dropout_p, is_causal, attn_mask, scale):
    # the weights recomputed from the saved logsumexp (the forward kept no L x S matrix):
    # p = exp(q k^T * scale - lse); then dv = p^T g, ds = p * (g v^T - rowsum(g * o)) * scale,
    # dq = ds k, dk = ds^T q (the core's backward kernel; written out below for create_graph)
    g = _first(g)
    if not ember.is_grad_enabled():  # the core's kernel: one pass per (batch, head) matrix
        o, lse = out
        grads = ember._C._scaled_dot_product_flash_attention_for_cpu_backward(
            g, q, k, v, o, lse, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)
        return tuple(gr if need else None for gr, need in zip(grads, needs))
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q.matmul(k.transpose(-2, -1)) * s
    if is_causal:
        live = ember.ones(q.shape[-2], k.shape[-2], dtype=ember.bool, device=q.device).tril()
        scores = ember.where(live, scores, float("-inf"))
    # create_graph: the weights and the output recomputed by differentiable ops, so that the
    # gradient's own dependence on q, k, v is recorded
    p = ember.softmax(scores, -1)
    o = p.matmul(v)
    gv = p.transpose(-2, -1).matmul(g) if needs[2] else None
    gq = gk = None
    if needs[0] or needs[1]:
        dp = g.matmul(v.transpose(-2, -1))
        ds = p * (dp - (g * o).sum(-1, keepdim=True)) * s
        gq = ds.matmul(k) if needs[0] else None
        gk = ds.transpose(-2, -1).matmul(q) if needs[1] else None
    return (gq, gk, gv)


@grad("native_layer_norm", save="all", out=(1, 2), diff_outputs=(0,))
def _native_layer_norm(g, needs, out, x, normalized_shape, w, b, *, eps):
    g = _first(g)
    k = len(normalized_shape)
    dims = tuple(range(x.dim() - k, x.dim()))
    has_w, has_b = w is not None and needs[2], b is not None and needs[3]
    if not ember.is_grad_enabled():
        # the forward's saved statistics: recomputing them cost two more passes over x
        mean, rstd = out
        gi, gw, gb = ember.native_layer_norm_backward(
            g, x, list(normalized_shape), mean, rstd, w, b,
            output_mask=[bool(needs[0]), bool(has_w), bool(has_b)])
        return (gi, None, gw if has_w else None, gb if has_b else None)
    mean = x.mean(dims, keepdim=True)
    rstd = (x.var(dims, correction=0, keepdim=True) + eps).rsqrt()
    lead = tuple(range(x.dim() - k))
    xhat = (x - mean) * rstd
    gw = (g * xhat).sum(lead) if has_w else None
    gb = g.sum(lead) if has_b else None
    gi = None
    if needs[0]:
        gx = g if w is None else g * w
        n = 1
        for s in normalized_shape:
            n *= s
        gi = (gx - gx.mean(dims, keepdim=True)
              - xhat * (gx * xhat).mean(dims, keepdim=True)) * rstd
    return (gi, None, gw, gb)


# ---------------------------------------------------------------------------------------------
# fused recurrent cells: the backward kernel in plain backward; under create_graph the same
# gradients written with core ops (from the saved gate inputs), which are differentiable again.

def _gate_sum(ig, hg, ib, hb):
    s = ig + hg
    return s if ib is None else s + ib + hb


@grad("_thnn_fused_lstm_cell", save="all", out=(1, 2))
def _fused_lstm_cell(g, needs, out, ig, hg, cx, ib=None, hb=None):
    ghy, gcy = g[0], g[1]
    has_b = ib is not None and (needs[3] or needs[4])
    if not ember.is_grad_enabled():
        cy, ws = out
        gates, gcx, gb = ember._C._thnn_fused_lstm_cell_backward_impl(ghy, gcy, cx, cy, ws, has_b)
    else:
        i, f, c, o = _gate_sum(ig, hg, ib, hb).chunk(4, 1)
        i, f, c, o = i.sigmoid(), f.sigmoid(), c.tanh(), o.sigmoid()
        tc = (f * cx + i * c).tanh()
        dc = gcy + ghy * o * (1 - tc * tc)
        gates = ember.cat([dc * c * i * (1 - i), dc * cx * f * (1 - f), dc * i * (1 - c * c),
                           ghy * tc * o * (1 - o)], 1)
        gcx = dc * f
        gb = gates.sum(0) if has_b else None
    return (gates, gates, gcx, gb, gb)


@grad("_thnn_fused_gru_cell", save="all", out=(1,))
def _fused_gru_cell(g, needs, out, ig, hg, hx, ib=None, hb=None):
    ghy = g[0]
    has_b = ib is not None and (needs[3] or needs[4])
    if not ember.is_grad_enabled():
        gi, gh, ghx, gib, ghb = ember._C._thnn_fused_gru_cell_backward(ghy, out[0], has_b)
    else:
        ir, iz, i_n = (ig if ib is None else ig + ib).chunk(3, 1)
        hr, hz, hn = (hg if hb is None else hg + hb).chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (i_n + r * hn).tanh()
        dn = ghy * (1 - z) * (1 - n * n)
        dz = ghy * (hx - n) * z * (1 - z)
        dr = dn * hn * r * (1 - r)
        gi, gh = ember.cat([dr, dz, dn], 1), ember.cat([dr, dz, dn * r], 1)
        ghx = ghy * z
        gib, ghb = (gi.sum(0), gh.sum(0)) if has_b else (None, None)
    return (gi, gh, ghx, gib, ghb)


# ---------------------------------------------------------------------------------------------
# a whole LSTM/GRU layer (ember.nn's LSTM/GRU on the CPU): the backward kernel runs the steps in
# reverse and computes each weight's gradient as one product; under create_graph the layer is
# recomputed step by step from the fused cells (differentiable again) and differentiated.

@grad("_rnn_layer", save="all", out=(0, 3))
def _rnn_layer(g, needs, out, x, w_ih, w_hh, b_ih, b_hh, hx, cx, *, mode, reverse):
    lstm = mode == "LSTM"
    g_out, g_hy, g_cy = g[0], g[1], g[2] if lstm else None
    if not ember.is_grad_enabled():
        output, ws = out
        has_b = b_ih is not None and (needs[3] or needs[4])
        grads = ember._C._rnn_layer_backward(g_out, g_hy, g_cy, x, w_ih, w_hh, hx, cx, output, ws,
                                             mode, reverse, has_b, bool(needs[0]),
                                             any(needs[1:5]))
        return tuple(gr if need else None for gr, need in zip(grads, needs))
    inputs = (x, w_ih, w_hh, b_ih, b_hh, hx, cx)
    with ember.enable_grad():
        outs = _rnn_layer_steps(x, w_ih, w_hh, b_ih, b_hh, hx, cx, lstm, reverse)
    pairs = [(o, gr) for o, gr in zip(outs, (g_out, g_hy, g_cy))
             if o is not None and gr is not None]
    wrt = [i for i, t in enumerate(inputs) if t is not None and needs[i]]
    res = ember.autograd.grad([o for o, _ in pairs], [inputs[i] for i in wrt],
                              [gr for _, gr in pairs], create_graph=True, allow_unused=True)
    grads = [None] * len(inputs)
    for i, r in zip(wrt, res):
        grads[i] = r if r is not None else ember.zeros_like(inputs[i])
    return tuple(grads)


def _rnn_layer_steps(x, w_ih, w_hh, b_ih, b_hh, hx, cx, lstm, reverse):
    """_rnn_layer's (output, hy, cy) from the fused cells, one recorded step at a time (output is
    None for an empty sequence)."""
    n_steps = x.shape[0]
    xg = x.matmul(w_ih.t())
    h, c = hx, cx
    ys = [None] * n_steps
    for t in (range(n_steps - 1, -1, -1) if reverse else range(n_steps)):
        hg = h.matmul(w_hh.t())
        if lstm:
            h, c, _ = ember._C._thnn_fused_lstm_cell(xg[t], hg, c, b_ih, b_hh)
        else:
            h = ember._C._thnn_fused_gru_cell(xg[t], hg, h, b_ih, b_hh)[0]
        ys[t] = h
    return (ember.stack(ys) if n_steps else None), h, (c if lstm else None)
