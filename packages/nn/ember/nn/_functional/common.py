"""Helpers the functional modules share: reductions, argument tuples, torch-style messages."""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------
# helpers


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _ntuple(x, n):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,) * n


def _size(shape):
    return "torch.Size([" + ", ".join(str(int(s)) for s in shape) + "])"
