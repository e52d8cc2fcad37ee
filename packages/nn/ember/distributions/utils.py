"""Helpers shared by the distributions, under torch.distributions.utils' public names."""

from __future__ import annotations

import functools
import numbers

import ember
from ember import Tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


def broadcast_all(*values):
    """The arguments as tensors of one broadcast shape. Python numbers become tensors of the
    floating dtype of the tensor arguments (the default dtype when there are none)."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or "
                         "ember.Tensor.")
    tensors = [v for v in values if isinstance(v, Tensor)]
    if len(tensors) == len(values):
        return ember.broadcast_tensors(*values)
    like = tensors[0] if tensors else None
    dtype = like.dtype if like is not None else ember.get_default_dtype()
    device = like.device if like is not None else None
    as_tensors = [v if isinstance(v, Tensor) else ember.tensor(v, dtype=dtype, device=device)
                  for v in values]
    return ember.broadcast_tensors(*as_tensors)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept one machine epsilon away from 0 and 1, so that their logs are finite."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds (``is_binary``) or log-probabilities of (clamped) probabilities."""
    p = clamp_probs(probs)
    if is_binary:
        return ember.log(p) - ember.log1p(-p)
    return ember.log(p)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from log-odds (``is_binary``: the sigmoid) or from unnormalized
    log-probabilities over the last dimension (the softmax)."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


class lazy_property:  # noqa: N801  (torch's name)
    """A property computed on first access and then stored on the instance (so that a
    distribution given ``probs`` computes ``logits`` only when something asks for them).
    Computed with gradients enabled: the stored value stays connected to the parameters."""

    def __init__(self, compute):
        self.compute = compute
        functools.update_wrapper(self, compute)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with ember.enable_grad():
            value = self.compute(instance)
        instance.__dict__[self.compute.__name__] = value
        return value


def softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)) without overflow."""
    return ember.clamp(x, min=0) + ember.log1p(ember.exp(-ember.abs(x)))


def sum_rightmost(value: Tensor, dims: int) -> Tensor:
    """``value`` summed over its last ``dims`` dimensions."""
    if dims == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dims]) + (-1,)).sum(-1)


def as_size(shape) -> ember.Size:
    if isinstance(shape, int):
        return ember.Size([shape])
    return ember.Size(list(shape))


def dirichlet_mode(concentration: Tensor) -> Tensor:
    """The mode of a Dirichlet: (c - 1) normalized, with concentrations below 1 counted as 1;
    where every concentration is below 1 the density peaks at a vertex: the one of the largest
    (first on ties of the clamped values, as torch)."""
    k = concentration.shape[-1]
    interior = (concentration - 1).clamp(min=0)
    interior = interior / interior.sum(-1, keepdim=True)
    vertex = ember.nn.functional.one_hot(interior.argmax(-1), k).to(concentration.dtype)
    at_vertex = (concentration < 1).all(-1, keepdim=True)
    return ember.where(at_vertex, vertex, interior)
