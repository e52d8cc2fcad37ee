"""Gradient formulas of the core's tensor-API ops: shape ops (cat, flip, roll, tril/triu,
constant_pad_nd, repeat_interleave, diagonal, diag_embed, unfold), sorting and order statistics
(sort, topk, kthvalue, median, mode, cummax/cummin, quantile) and indexing; the LAPACK
primitives of ember.linalg are in _formulas_linalg.py. Same conventions as _formulas.py: one
``@grad`` entry per op name as the core hands it to the hook, written with ember ops so that
double backward works.

``HOOKED_OPS`` lists every op name the core routes through the hook; the tests check that each
has an entry (and, when the source tree is present, that the list matches the core's
``call_autograd("...")`` calls).
"""

from __future__ import annotations

import ember
from ember import _C

from ._engine import _Meta
from ._formulas import grad

# ---------------------------------------------------------------------------------------------
# helpers


def _scatter_last(gv, idx, n):
    """out[..., i] = sum_k gv[..., k] * (idx[..., k] == i), out of shape (..., n)."""
    return ember.zeros(tuple(gv.shape[:-1]) + (n,), dtype=gv.dtype,
                       device=gv.device).scatter_add(-1, idx, gv)


def _scatter_dim(gv, idx, dim, shape):
    """A zero tensor of `shape` with gv added at positions idx along dim (gv, idx alike)."""
    if len(shape) == 0:
        return gv.reshape(())
    return ember.zeros(tuple(shape), dtype=gv.dtype, device=gv.device).scatter_add(dim, idx, gv)


def _keep(t, dim, ndim, keepdim):
    return t if keepdim or ndim == 0 else t.unsqueeze(dim)


# ---------------------------------------------------------------------------------------------
# shape ops


@grad("stack")
def _stack(g, needs, out, tensors, dim=0):
    """One gradient per input: the slices of g along the new dim (torch's stack backward)."""
    pieces = g.unbind(dim)
    return ([(p if p.dtype == t.dtype else p.to(t.dtype)) if need else None
             for p, t, need in zip(pieces, tensors, needs[0])],)


@grad("cat")
def _cat(g, needs, out, tensors, dim=0):
    d = dim % g.ndim
    grads, off = [], 0
    for t, need in zip(tensors, needs[0]):
        if len(t.shape) == 1 and t.shape[0] == 0 and g.ndim > 1:  # torch skips empty 1-d inputs
            grads.append(None)
            continue
        n = t.shape[d]
        gi = g.narrow(d, off, n) if need else None
        if gi is not None and gi.dtype != t.dtype:
            gi = gi.to(t.dtype)
        grads.append(gi)
        off += n
    return (grads,)


@grad("flip")
def _flip(g, needs, out, x, dims):
    return (g.flip(dims),)


@grad("roll")
def _roll(g, needs, out, x, shifts, dims=()):
    r = g.roll(tuple(-s for s in shifts), tuple(dims))
    return (r.reshape(x.shape) if not dims else r,)


@grad("tril", inplace_too=True)
def _tril(g, needs, out, x, diagonal=0):
    return (g.tril(diagonal),)


@grad("triu", inplace_too=True)
def _triu(g, needs, out, x, diagonal=0):
    return (g.triu(diagonal),)


@grad("constant_pad_nd")
def _constant_pad_nd(g, needs, out, x, pad, value=0):
    return (_C.constant_pad_nd(g, tuple(-p for p in pad), 0),)


@grad("repeat_interleave")
def _repeat_interleave(g, needs, out, x, repeats, dim=None, output_size=None):
    shape = tuple(x.shape)
    if dim is None:
        g, d, n = g.reshape(-1), 0, max(1, _numel(shape))
    else:
        d = dim % max(len(shape), 1)
        n = shape[d] if shape else 1
    if isinstance(repeats, _C.Tensor) and repeats.numel() == 1:
        repeats = int(repeats.reshape(()).item())
    if isinstance(repeats, _C.Tensor):
        seg = ember.repeat_interleave(ember.arange(n, device=g.device),
                                      repeats)  # input position of each output
        gs = tuple(g.shape) if g.ndim else (1,)
        r = ember.zeros(gs[:d] + (n,) + gs[d + 1:], dtype=g.dtype,
                        device=g.device).index_add(d, seg, g.reshape(gs))
    else:
        gs = tuple(g.shape) if g.ndim else (1,)
        r = g.reshape(gs[:d] + (n, repeats) + gs[d + 1:]).sum(dim=d + 1)
    return (r.reshape(shape),)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


@grad("diagonal")
def _diagonal(g, needs, out, x, offset=0, dim1=0, dim2=1):
    z = ember.zeros(tuple(x.shape), dtype=g.dtype, device=g.device)
    z.diagonal(offset, dim1, dim2).copy_(g)  # recorded: the copy is differentiable in g
    return (z,)


@grad("diag_embed")
def _diag_embed(g, needs, out, x, offset=0, dim1=-2, dim2=-1):
    return (g.diagonal(offset, dim1, dim2),)


@grad("unfold")
def _unfold(g, needs, out, x, dimension, size, step):
    shape = tuple(x.shape)
    if not shape:
        return (g.reshape(()),)
    d = dimension % len(shape)
    n = shape[d]
    # window w, element k reads x[w * step + k] along d: add every window back at its positions
    pos = ember.arange(n, device=g.device).unfold(0, size, step).reshape(-1)
    gm = ember.movedim(g, d, -2)  # (..., windows, size)
    gm = gm.reshape(tuple(gm.shape[:-2]) + (pos.numel(),))
    z = ember.zeros(tuple(gm.shape[:-1]) + (n,), dtype=g.dtype, device=g.device).index_add(-1,
                                                                                           pos, gm)
    return (ember.movedim(z, -1, d),)


# ---------------------------------------------------------------------------------------------
# sorting and order statistics: the gradient goes to the selected elements


@grad("sort", out=(1,))
def _sort(g, needs, out, x, dim=-1, descending=False, stable=False):
    return (_scatter_dim(g[0], out[0], dim, tuple(x.shape)),)


@grad("topk", out=(1,))
def _topk(g, needs, out, x, k, dim=-1, largest=True, sorted=True):
    return (_scatter_dim(g[0], out[0], dim, tuple(x.shape)),)


def _select_back(g, needs, out, x, dim, keepdim):
    nd = len(x.shape)
    return (_scatter_dim(_keep(g[0], dim, nd, keepdim), _keep(out[0], dim, nd, keepdim), dim,
                         tuple(x.shape)),)


@grad("kthvalue", out=(1,))
def _kthvalue(g, needs, out, x, k, dim=-1, keepdim=False):
    return _select_back(g, needs, out, x, dim, keepdim)


@grad("mode", out=(1,))
def _mode(g, needs, out, x, dim=-1, keepdim=False):
    return _select_back(g, needs, out, x, dim, keepdim)


@grad("median", "nanmedian", save=(0,), out=(0, 1))
def _median(g, needs, out, x, dim=None, keepdim=False):
    if dim is None:  # value only: split evenly between the elements equal to it (as torch)
        v = out[0]
        m = ((x == v) | (x.isnan() & v.isnan())).to(g.dtype)
        return (m * (g / m.sum()),)
    return _select_back(g, needs, (out[1],), x, dim, keepdim)


@grad("cummax", "cummin", out=(1,))
def _cumextreme(g, needs, out, x, dim):
    return (_scatter_dim(g[0], out[0], dim, tuple(x.shape)),)


def _quantile_vjp(ignore_nan):
    """Sends the gradient to the order statistics the result interpolates between, with the
    interpolation weights (torch computes quantile as sort + lerp)."""

    def vjp(g, needs, out, x, q, dim=None, keepdim=False, interpolation="linear"):
        shape = tuple(x.shape)
        if dim is None or not shape:
            xm, d = x.reshape(-1), 0
        else:
            d = dim % len(shape)
            xm = ember.movedim(x, d, -1)  # (..., n)
        n = xm.shape[-1]
        vals, idx = xm.detach().sort(dim=-1, stable=True)
        nan = vals.isnan()
        qt = q if isinstance(q, _C.Tensor) else ember.tensor(float(q), dtype=ember.float64)
        qv = qt.detach().to(g.dtype).reshape(-1)  # (m,)
        G = g.unsqueeze(-1) if qt.ndim == 0 else ember.movedim(g, 0, -1)
        if dim is None or not shape:
            G = G.reshape(-1)
        elif keepdim:
            G = G.squeeze(d)
        if ignore_nan:
            nv = (~nan).sum(-1, keepdim=True).to(g.dtype)
            ranks = (qv * (nv - 1)).clamp(min=0)
        else:
            ranks = qv * (n - 1) + ember.zeros(tuple(vals.shape[:-1]) + (1,), dtype=g.dtype,
                                               device=g.device)
            ranks = ember.where(nan.any(-1, keepdim=True), float(n - 1), ranks)
        lo, hi = ranks.floor(), ranks.ceil()
        if interpolation == "linear":
            w = ranks - lo
        elif interpolation == "lower":
            hi, w = lo, ember.zeros_like(ranks)
        elif interpolation == "higher":
            lo, w = hi, ember.zeros_like(ranks)
        elif interpolation == "midpoint":
            w = ember.where(hi == lo, 0.0, ember.full_like(ranks, 0.5))
        else:  # nearest
            lo = hi = ranks.round()
            w = ember.zeros_like(ranks)
        G = G.expand(tuple(ranks.shape))
        lo, hi = lo.to(ember.int64), hi.to(ember.int64)
        ws = _scatter_last(G * (1 - w), lo, n) + _scatter_last(G * w, hi, n)  # sorted positions
        gx = _scatter_last(ws, idx, n)  # back to the input's positions
        if dim is None or not shape:
            return (gx.reshape(shape),)
        return (ember.movedim(gx, -1, d),)

    return vjp


grad("quantile", save=(0,))(_quantile_vjp(False))
grad("nanquantile", save=(0,))(_quantile_vjp(True))


# ---------------------------------------------------------------------------------------------
# indexing (bind_indexing.cpp); index tensors are never differentiable


def _is_t(x):  # a tensor argument, saved (Tensor) or not (_Meta: shape and dtype)
    return isinstance(x, (_C.Tensor, _Meta))


def _needs(needs, i):
    return len(needs) > i and bool(needs[i])


@grad("index_select", save=(2,))
def _index_select(g, needs, out, x, dim, index):
    if len(x.shape) == 0:
        return (g.sum(), None, None)
    z = ember.zeros(tuple(x.shape), dtype=g.dtype, device=g.device)
    return (z.index_add(dim, index.reshape(-1), g), None, None)


@grad("gather", save=(2,))
def _gather(g, needs, out, x, dim, index, sparse_grad=False):
    return (_scatter_dim(g, index, dim, tuple(x.shape)), None, None)


@grad("take", save=(1,))
def _take(g, needs, out, x, index):
    n = _numel(tuple(x.shape))
    idx = index.reshape(-1)
    idx = ember.where(idx < 0, idx + n, idx)
    z = ember.zeros(n, dtype=g.dtype, device=g.device).index_add(0, idx, g.reshape(-1))
    return (z.reshape(tuple(x.shape)), None)


@grad("take_along_dim", save=(1,))
def _take_along_dim(g, needs, out, x, indices, dim=None):
    if dim is None:
        return _take(g, needs, out, x, indices)
    nd = len(x.shape)
    if nd == 0:  # both 0-d (the forward checked): the one element was taken
        return (g, None)
    d = dim % nd
    xs, js = list(x.shape), list(indices.shape)
    xs[d] = js[d] = 1
    b = list(ember.broadcast_shapes(tuple(xs), tuple(js)))
    bx, bi = list(b), list(b)
    bx[d], bi[d] = x.shape[d], indices.shape[d]
    z = ember.zeros(tuple(bx), dtype=g.dtype, device=g.device)
    idx = ember.where(indices < 0, indices + x.shape[d], indices)  # scatter_add refuses negatives
    z = z.scatter_add(d, idx.expand(tuple(bi)), g)
    return (z, None)  # the engine sums a broadcast input's gradient back to its shape


@grad("scatter", save=(2,), inplace_too=True)
def _scatter(g, needs, out, x, dim, index, src, reduce=None):
    if reduce is not None and reduce != "add":
        raise RuntimeError(f"derivative for scatter with reduce='{reduce}' is not implemented")
    if reduce == "add":
        return (g, None, None, _pad_to(g.gather(dim, index), src) if _needs(needs, 3) else None)
    gx = g.scatter(dim, index, 0.0) if needs[0] else None
    gs = None
    if _is_t(src) and _needs(needs, 3):
        gs = g.gather(dim, index)
        gs = gs.sum() if src.ndim == 0 else _pad_to(gs, src)
    return (gx, None, None, gs)


@grad("scatter_add", save=(2,), inplace_too=True)
def _scatter_add(g, needs, out, x, dim, index, src):
    return (g, None, None, _pad_to(g.gather(dim, index), src) if needs[3] else None)


def _pad_to(gs, src):
    """src may be larger than index along any dim: the elements it did not use get zeros."""
    pad = []
    for have, want in zip(reversed(tuple(gs.shape)), reversed(tuple(src.shape))):
        pad += [0, want - have]
    return _C.constant_pad_nd(gs, tuple(pad), 0) if any(pad) else gs


@grad("scatter_reduce", save="all", out=True, inplace_too=True)
def _scatter_reduce(g, needs, out, x, dim, index, src, reduce, include_self=True):
    """torch's scatter_reduce_backward: sum, mean, prod, amax, amin."""
    full = src  # src may be larger than index: only its leading corner takes part
    if src.ndim and tuple(src.shape) != tuple(index.shape):
        src = src[tuple(slice(0, n) for n in index.shape)]
    if reduce == "sum":
        gx, gs = g, g.gather(dim, index)
    elif reduce == "mean":
        N = ember.ones_like(g) if include_self else ember.zeros_like(g)
        N = N.scatter_add(dim, index, ember.ones_like(src))
        N = ember.where(N == 0, 1.0, N)
        gx = g / N
        gs = g.gather(dim, index) / N.gather(dim, index)
    elif reduce == "prod":
        masked_x = ember.where(x == 0, 1.0, x)
        masked_res = masked_x.scatter_reduce(dim, index, src, reduce, include_self=include_self)
        gx = g * masked_res / masked_x
        src_zero = src == 0
        nz = ember.zeros_like(x).scatter_add(dim, index, src_zero.to(x.dtype)).gather(dim, index)
        single = src_zero & (nz == 1)
        masked_src = ember.where(single, 1.0, src)
        masked_src_res = x.scatter_reduce(dim, index, masked_src, reduce,
                                          include_self=include_self)
        gs = ember.where(single, (g * masked_src_res).gather(dim, index),
                         (g * out).gather(dim, index) / ember.where(src_zero, 1.0, src))
    elif reduce in ("amax", "amin"):
        value = out.gather(dim, index)
        x_is = (x == out).to(g.dtype)
        s_is = (src == value).to(g.dtype)
        n = x_is.scatter_add(dim, index, s_is)
        gd = g / n
        gx = x_is * gd
        gs = s_is * gd.gather(dim, index)
    else:
        raise RuntimeError(f"derivative for scatter_reduce with reduce='{reduce}' is not "
                           "implemented")
    if not include_self:
        gx = gx.scatter(dim, index, 0.0)
    return (gx if needs[0] else None, None, None, _pad_to(gs, full) if needs[3] else None)


@grad("index_add", save=(2,), inplace_too=True)
def _index_add(g, needs, out, x, dim, index, source, alpha=1):
    gs = None
    if needs[3]:
        gs = g.index_select(dim, index) if g.ndim else g
        gs = gs if alpha == 1 else gs * alpha
    return (g, None, None, gs)


@grad("index_copy", save=(2,), inplace_too=True)
def _index_copy(g, needs, out, x, dim, index, source):
    gx = g.index_fill(dim, index, 0.0) if needs[0] else None
    gs = g.index_select(dim, index) if needs[3] else None
    return (gx, None, None, gs)


@grad("index_fill", save=(2,), inplace_too=True)
def _index_fill(g, needs, out, x, dim, index, value):
    gx = g.index_fill(dim, index, 0.0) if needs[0] else None
    gv = None
    if _is_t(value) and _needs(needs, 3):
        gv = g.index_select(dim, index).sum()
    return (gx, None, None, gv)


def _full_index(indices):
    return tuple(slice(None) if i is None else i for i in indices)


@grad("index_put", save=(1,), inplace_too=True)
def _index_put(g, needs, out, x, indices, values, accumulate=False):
    idx = _full_index(indices)
    gx = None
    if needs[0]:
        if accumulate:
            gx = g
        else:
            gx = g.clone()
            gx[idx] = 0.0
    return (gx, None, g[idx] if _needs(needs, 2) else None)


@grad("masked_fill", save=(1,), inplace_too=True)
def _masked_fill(g, needs, out, x, mask, value):
    gv = None
    if _is_t(value) and _needs(needs, 2):
        gv = ember.where(mask, g, 0.0).sum()
    return (ember.where(mask, 0.0, g) if needs[0] else None, None, gv)


@grad("masked_select", save=(1,))
def _masked_select(g, needs, out, x, mask):
    shape = ember.broadcast_shapes(tuple(x.shape), tuple(mask.shape))
    z = ember.zeros(tuple(shape), dtype=g.dtype, device=g.device)
    return (z.masked_scatter(mask, g), None)


@grad("masked_scatter", save=(1,), inplace_too=True)
def _masked_scatter(g, needs, out, x, mask, source):
    gx = ember.where(mask, 0.0, g) if needs[0] else None
    gs = None
    if needs[2]:
        sel = g.masked_select(mask)
        n = _numel(tuple(source.shape))
        if n > sel.numel():
            sel = ember.cat([sel, ember.zeros(n - sel.numel(), dtype=g.dtype, device=g.device)])
        gs = sel.reshape(tuple(source.shape))
    return (gx, None, gs)


# ---------------------------------------------------------------------------------------------
# every op name the core hands to the hook (checked against csrc by the tests)

HOOKED_OPS = frozenset({
    # composites in ember/_shape.py recorded as one node
    "split_with_sizes", "unbind", "stack",
    # elementwise (op_table.h, in-place variants included) are checked from _C._op_table()
    "_copy_", "_fill_", "_setitem", "_getitem", "_to_dtype", "_expand", "_view", "as_strided",
    "clone", "reshape", "squeeze", "unsqueeze", "flatten", "unflatten", "permute", "transpose",
    "t", "narrow", "select", "where", "clamp", "clamp_", "lerp", "lerp_", "nan_to_num",
    "nan_to_num_",
    "round", "round_", "logit", "logit_", "bernoulli", "normal", "uniform_", "normal_",
    "exponential_", "bernoulli_", "random_",
    "sum", "nansum", "mean", "nanmean", "prod", "max", "min", "amax", "amin", "var", "std",
    "var_mean", "std_mean", "norm", "cumsum", "cumprod", "softmax", "log_softmax", "logsumexp",
    "mm", "bmm", "matmul", "mv", "dot", "vdot", "inner", "outer", "addmm", "addmv", "baddbmm",
    "addbmm",
    "cumsum_", "cumprod_",
    # indexing
    "index_select", "gather", "take", "take_along_dim", "scatter", "scatter_", "scatter_add",
    "scatter_add_", "scatter_reduce", "scatter_reduce_", "index_add", "index_add_",
    "index_copy", "index_copy_", "index_fill", "index_fill_", "index_put", "index_put_",
    "masked_fill", "masked_fill_", "masked_select", "masked_scatter", "masked_scatter_",
    # shape ops
    "cat", "flip", "roll", "tril", "triu", "tril_", "triu_", "constant_pad_nd",
    "repeat_interleave", "diagonal", "diag_embed", "unfold",
    # sorting
    "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin", "quantile",
    "nanquantile",
    # LAPACK primitives
    "_linalg_inv_ex", "_linalg_det", "_linalg_slogdet", "_linalg_solve_ex",
    "_linalg_solve_triangular", "_linalg_cholesky_ex", "_cholesky_solve",
    "_linalg_lu_factor_ex", "_linalg_lu", "_linalg_lu_solve", "_linalg_qr", "_linalg_svd",
    "_linalg_eigh", "_linalg_lstsq",
})

# hooked ops with integer or bool results (nothing is recorded) or, like torch's, no derivative
NOT_DIFFERENTIABLE_OPS = frozenset({"all", "any", "argmax", "argmin", "unique",
                                    "unique_consecutive"})

# hooked nn kernels: their formulas are in _formulas_nn.py (tested by test_gradients_nn_kernels.py)
NN_KERNEL_OPS = frozenset({
    "convolution", "convolution_backward", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "max_pool1d_with_indices_backward",
    "max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward", "avg_pool1d",
    "avg_pool2d", "avg_pool3d", "avg_pool1d_backward", "avg_pool2d_backward",
    "avg_pool3d_backward", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d_backward", "adaptive_max_pool2d_backward",
    "adaptive_max_pool3d_backward", "adaptive_avg_pool1d_backward",
    "adaptive_avg_pool2d_backward", "adaptive_avg_pool3d_backward", "nll_loss",
    "nll_loss_backward", "native_batch_norm", "native_batch_norm_backward", "native_layer_norm",
    "native_layer_norm_backward", "embedding", "embedding_dense_backward",
    "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "_scaled_dot_product_flash_attention_for_cpu",
})
