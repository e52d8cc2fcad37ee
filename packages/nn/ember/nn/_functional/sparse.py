"""embedding (core kernel), embedding_bag and one_hot."""

from __future__ import annotations

import ember

# ---------------------------------------------------------------------------------------------
# embedding

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.shape[0] + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return ember.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    with ember.no_grad():
        ones = ember.ones(tuple(input.shape) + (1,), dtype=weight.dtype, device=weight.device)
        used = ember.embedding_dense_backward(ones, input, weight.shape[0], -1, False) > 0
        norms = weight.norm(norm_type, 1, keepdim=True)
        scale = ember.where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight.mul_(scale)
    return weight


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on GitHub.")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences.")
        bags = [input[i] for i in range(input.shape[0])]
        psw = [per_sample_weights[i] for i in range(input.shape[0])] \
            if per_sample_weights is not None else None
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        offs = [int(o) for o in offsets.tolist()]
        if offs and offs[0] != 0:
            raise ValueError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                             "has to start from position 0. However, got "
                             f"{offs[0]}")
        ends = offs[1:] + ([] if include_last_offset else [input.shape[0]])
        if include_last_offset:
            offs = offs[:-1]
        bags = [input[s:e] for s, e in zip(offs, ends)]
        psw = [per_sample_weights[s:e] for s, e in zip(offs, ends)] \
            if per_sample_weights is not None else None
    else:
        raise ValueError("input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    pidx = -1 if padding_idx is None else padding_idx % weight.shape[0]
    if mode != "max" and bags:
        return _embedding_bag_reduce(input, weight, bags, psw, pidx, mode)
    rows = []
    for i, b in enumerate(bags):
        e = ember.embedding(weight, b, pidx)
        if psw is not None:
            e = e * psw[i].unsqueeze(-1)
        n = b.numel() if pidx < 0 else int((b != pidx).sum())
        if n == 0:
            rows.append(ember.zeros(weight.shape[1], dtype=weight.dtype, device=weight.device))
        elif mode == "sum":
            rows.append(e.sum(0))
        elif mode == "mean":
            rows.append(e.sum(0) / n)
        else:
            rows.append(e.max(0)[0])
    if not rows:
        return ember.zeros(0, weight.shape[1], dtype=weight.dtype, device=weight.device)
    return ember.stack(rows)


def _embedding_bag_reduce(input, weight, bags, psw, pidx, mode):
    """sum/mean bags without a per-bag loop: one lookup, then a segment sum written as the
    embedding backward kernel (a scatter-add of rows by bag id), which is differentiable."""
    flat = input.reshape(-1)
    seg = ember.tensor([i for i, b in enumerate(bags) for _ in range(b.numel())],
                       dtype=ember.int64, device=input.device)
    e = ember.embedding(weight, flat)
    keep = None
    if pidx >= 0:
        keep = (flat != pidx).to(weight.dtype).unsqueeze(-1)
        e = e * keep
    if psw is not None:
        e = e * ember.cat([w.reshape(-1) for w in psw]).unsqueeze(-1)
    out = ember.embedding_dense_backward(e, seg, len(bags), -1, False)
    if mode == "mean":
        ones = keep if keep is not None else ember.ones(flat.numel(), 1, dtype=weight.dtype,
                                                        device=weight.device)
        counts = ember.embedding_dense_backward(ones, seg, len(bags), -1, False)
        out = out / counts.clamp(min=1)
    return out


def one_hot(tensor, num_classes=-1):
    if tensor.dtype != ember.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel() > 0:
        if int(tensor.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(tensor.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = ember.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(ember.int64)
