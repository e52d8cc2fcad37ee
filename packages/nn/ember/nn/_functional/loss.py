"""Losses: nll_loss on the core kernel, cross_entropy as log_softmax + nll_loss, the others
composed (ctc_loss is the alpha recursion in log space)."""

from __future__ import annotations

import math

import ember
from ember._shape import _one_node

from .activation import logsigmoid, softplus
from .common import _check_reduction, _reduce, _size
from .distance import cosine_similarity, pairwise_distance
from .sparse import one_hot

# ---------------------------------------------------------------------------------------------
# losses

def _check_same_size(input, target, name):
    if tuple(target.shape) != tuple(input.shape):
        import warnings

        warnings.warn(f"Using a target size ({_size(target.shape)}) that is different to the "
                      f"input size ({_size(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_same_size(input, target, "l1")
    return _reduce((input - target).abs(), reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size(input, target, "mse")
    for t in (input, target):  # torch's kernel is real-only (d * d is not |d|^2 for complex d)
        if t.dtype.is_complex:
            raise NotImplementedError(f"\"mse_cpu\" not implemented for '{t.dtype._torch_name}'")
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size(input, target, "smooth_l1")
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    return _reduce(ember.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_same_size(input, target, "huber")
    d = (input - target).abs()
    loss = ember.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    _check_reduction(reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() >= 2 and target.dim() >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    return ember.nll_loss(input, target, weight, reduction, ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    cdim = 0 if input.dim() == 1 else 1
    c = input.shape[cdim]
    lsm = ember.log_softmax(input, cdim)
    wshape = (c,) + (1,) * (input.dim() - cdim - 1)
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError("Expected target size " + _size(input.shape) + ", got " +
                               _size(target.shape))
        t = target if label_smoothing == 0 else target * (1 - label_smoothing) + \
            label_smoothing / c
        prod = lsm * t
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        loss = -prod.sum(cdim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // c if input.numel() else 1) \
                if input.dim() > 1 else loss.sum()
        return _reduce(loss, reduction)
    if target.dtype.is_floating_point is False and target.dtype == ember.bool:
        raise RuntimeError("expected scalar type Long but found Bool")
    nll = ember.nll_loss(lsm, target, weight, reduction, ignore_index)
    if label_smoothing == 0.0:
        return nll
    keep = (target != ignore_index)
    prod = lsm if weight is None else lsm * weight.reshape(wshape)
    smooth = -prod.sum(cdim) * keep.to(lsm.dtype)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        if weight is None:
            ret = smooth.sum() / keep.sum().to(lsm.dtype)
        else:
            safe_t = ember.where(keep, target, 0)
            wt = ember.embedding(weight.reshape(-1, 1), safe_t).squeeze(-1) * keep.to(lsm.dtype)
            ret = smooth.sum() / wt.sum()
    return nll * (1 - label_smoothing) + ret * (label_smoothing / c)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_size(target.shape)}) that is different to the "
                         f"input size ({_size(input.shape)}) is deprecated. Please ensure they "
                         "have the same size.")
    if input.numel() and (bool((input < 0).any()) or bool((input > 1).any())):
        raise RuntimeError("all elements of input should be between 0 and 1")
    requires_grad = input.requires_grad or isinstance(target, ember.Tensor) and target.requires_grad
    loss = _one_node("binary_cross_entropy", _binary_cross_entropy_values, requires_grad, input,
                     target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _binary_cross_entropy_values(input, target):
    # torch clamps each log at -100, so that a prediction of exactly 0 or 1 costs 100, not inf;
    # the gradient (ember.autograd's table) is torch's finite one there
    return -(target * input.log().clamp(min=-100) + (1 - target) *
             (1 - input).log().clamp(min=-100))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_size(target.shape)}) must be the same as input size "
                         f"({_size(input.shape)})")
    requires_grad = (input.requires_grad
                     or isinstance(target, ember.Tensor) and target.requires_grad
                     or isinstance(pos_weight, ember.Tensor) and pos_weight.requires_grad)
    # one graph node (its formula in ember.autograd's table), as torch's
    # BinaryCrossEntropyWithLogitsBackward0: composed, the loss recorded 14 nodes, which cost
    # NCF's training step more than its three linear layers' forward
    loss = _one_node("binary_cross_entropy_with_logits", _bce_with_logits_values, requires_grad,
                     input, target, pos_weight)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _bce_with_logits_values(input, target, pos_weight):
    # (1 - t) x + lw softplus(-x), lw = (pos_weight - 1) t + 1; softplus(-x) = max(-x, 0) +
    # log1p(exp(-|x|)), finite for every x. Without pos_weight: max(x, 0) - x t + log1p(...).
    # (in place only on input's own temporaries: target or pos_weight may promote the result)
    tail = input.abs().neg_().exp_().log1p_()
    if pos_weight is None:
        return tail.add_(input.clamp(min=0)) - input * target
    lw = (pos_weight - 1) * target + 1
    return tail.add_((-input).clamp_(min=0)) * lw + (1 - target) * input


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        tlog = ember.where(target > 0, target * ember.where(target > 0, target, 1.0).log(), 0.0)
        loss = tlog - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    _check_reduction(reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        st = target * ember.where(target > 1, target, 1.0).log() - target + \
            (target * (2 * math.pi)).clamp(min=1e-30).log() * 0.5
        loss = loss + ember.where(target > 1, st, 0.0)
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    _check_reduction(reduction)
    if input1.dim() not in (1, 2):
        raise RuntimeError(f"cosine_embedding_loss: Expected 1D or 2D input, got {input1.dim()}D")
    cos = cosine_similarity(input1, input2, dim=input1.dim() - 1, eps=1e-12)
    loss = ember.where(target == 1, 1 - cos, ember.where(target == -1, (cos - margin).clamp(
        min=0), 0.0))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    _check_reduction(reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {_size(input1.shape)}, input2: {_size(input2.shape)}, "
            f"target: {_size(target.shape)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    _check_reduction(reduction)
    loss = ember.where(target == 1, input, 0.0) + \
        ember.where(target == -1, (margin - input).clamp(min=0), 0.0)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(softplus(-target * input), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    _check_reduction(reduction)
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and "
            f"negative {negative.dim()}D inputs")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_pn = pairwise_distance(positive, negative, p, eps)
        d_an = ember.minimum(d_an, d_pn)
    return _reduce((d_ap - d_an + margin).clamp(min=0), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    _check_reduction(reduction)
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    v = var.clamp(min=eps)
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    _check_reduction(reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    t = target.reshape(-1)
    c = x.shape[1]
    onehot = one_hot(t, c).to(x.dtype)
    x_y = (x * onehot).sum(1, keepdim=True)
    z = (margin - x_y + x).clamp(min=0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * ember.embedding(weight.reshape(-1, 1), t).reshape(-1, 1)
    loss = (z * (1 - onehot)).sum(1) / c
    if input.dim() == 1:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


_CTC_NEG = -1e30  # a finite "log 0": logsumexp and its gradient stay finite on dead paths


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist Temporal Classification loss: the forward (alpha) recursion in log space,
    vectorised over the batch and the extended label sequence, looped over time; differentiable
    through its parts."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    t_max, n, c = lp.shape
    in_lens = [int(v) for v in (input_lengths.tolist() if isinstance(input_lengths, ember.Tensor)
                                else input_lengths)]
    tg_lens = [int(v) for v in (target_lengths.tolist() if isinstance(target_lengths,
                                                                      ember.Tensor)
                                else target_lengths)]
    if unbatched:
        in_lens, tg_lens = in_lens[:1], tg_lens[:1]
    tg = targets.tolist()
    if unbatched and targets.dim() == 1 and len(tg) >= tg_lens[0] and not isinstance(tg[0], list):
        seqs = [tg[:tg_lens[0]]]
    elif targets.dim() == 2:
        seqs = [tg[i][:tg_lens[i]] for i in range(n)]
    else:  # concatenated 1-D targets
        seqs, pos = [], 0
        for ln in tg_lens:
            seqs.append(tg[pos:pos + ln])
            pos += ln
    for ln in in_lens:
        if ln > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got "
                               f"value {ln} (while checking arguments for ctc_loss_cpu)")
    for s in seqs:
        for v in s:
            if v < 0 or v >= c:
                raise IndexError(f"Target {v} is out of bounds.")
    lmax = 2 * max((len(s) for s in seqs), default=0) + 1
    ext = [[blank] * lmax for _ in range(n)]
    skip = [[False] * lmax for _ in range(n)]
    for i, s in enumerate(seqs):
        for j, v in enumerate(s):
            ext[i][2 * j + 1] = v
            if j > 0 and v != s[j - 1]:
                skip[i][2 * j + 1] = True
    dev = lp.device
    ext_t = ember.tensor(ext, device=dev)
    onehot = one_hot(ext_t, c).to(lp.dtype)  # (N, L', C)
    lp_ext = ember.einsum("tnc,nlc->tnl", lp, onehot)  # log_probs at the extended labels
    skip_t = ember.tensor(skip, device=dev)
    neg1 = ember.full((n, 1), _CTC_NEG, dtype=lp.dtype, device=dev)
    neg2 = ember.full((n, 2), _CTC_NEG, dtype=lp.dtype, device=dev)
    start = ember.full((n, lmax), _CTC_NEG, dtype=lp.dtype, device=dev)
    init_mask = ember.tensor([[j < 2 for j in range(lmax)]] * n, device=dev)
    alpha = ember.where(init_mask, lp_ext[0], start)
    lens_t = ember.tensor(in_lens, device=dev).reshape(n, 1)
    final = alpha
    for t in range(1, t_max):
        a1 = ember.cat([neg1, alpha[:, :-1]], 1)
        a2 = ember.cat([neg2, alpha[:, :-2]], 1) if lmax > 2 else ember.full(
            (n, lmax), _CTC_NEG, dtype=lp.dtype, device=dev)
        a2 = ember.where(skip_t, a2, _CTC_NEG)
        alpha = ember.logsumexp(ember.stack([alpha, a1, a2]), 0) + lp_ext[t]
        final = ember.where(lens_t == t + 1, alpha, final)
    ends = [[j in (2 * len(s), 2 * len(s) - 1) for j in range(lmax)] for s in seqs]
    nll = -ember.logsumexp(ember.where(ember.tensor(ends, device=dev), final, _CTC_NEG), 1)
    nll = ember.where(nll > 1e29, float("inf"), nll)
    if zero_infinity:
        nll = ember.where(nll == float("inf"), 0.0, nll)
    if unbatched:
        nll = nll.squeeze(0)
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    denom = ember.tensor([max(v, 1) for v in tg_lens], dtype=lp.dtype, device=dev)
    return (nll / (denom if not unbatched else denom[0])).mean()


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_an = ember.minimum(d_an, dist(positive, negative))
    return _reduce((d_ap - d_an + margin).clamp(min=0), reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_reduction(reduction)
    x = input if input.dim() == 2 else input.unsqueeze(0)
    c = x.shape[-1]
    rows = target.reshape(-1, c).tolist()
    is_t = []
    for r in rows:
        mark = [False] * c
        for v in r:
            if v < 0:
                break
            if v >= c:
                raise RuntimeError(f"multilabel_margin_loss: target index {v} is out of bounds")
            mark[v] = True
        is_t.append(mark)
    is_t = ember.tensor(is_t, device=x.device)
    pair = (is_t.unsqueeze(2) & ~is_t.unsqueeze(1)).to(x.dtype)  # [n, j target, i other]
    margins = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0) * pair
    loss = margins.sum((1, 2)) / c
    if input.dim() < 2:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` with torch's
    checks; ``linear_weight`` is ``(num_classes, *out_features, in_features)``. ember runs
    torch's reference path whatever ``options`` says (no chunking)."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.dim()}")
    num_batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not num_batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*num_batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = ignore_index if ignore_index is not None else -100
    from .linear import linear

    rows = math.prod(out_features) * num_classes
    logits = linear(
        input, linear_weight.reshape(rows, in_features),
        None if linear_bias is None else linear_bias.reshape(rows))
    return cross_entropy(logits.reshape(logits_shape), target, weight=weight,
                         reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)
