"""SGD: one fused core kernel per group and step (ember._C._fused_sgd_)."""

from __future__ import annotations

import ember
from ember import _C

from .optimizer import Optimizer, _fusable, required

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum (torch.optim.SGD's update):

    ``g = grad (+ weight_decay * p); buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` on
    the first step); ``g = g + momentum * buf`` if nesterov else ``buf``; ``p -= lr * g``.
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None):
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._step_groups(closure)

    def _update(self, group, params, grads):
        momentum = group["momentum"]
        bufs = [self.state[p].get("momentum_buffer") for p in params]
        first = [b is None for b in bufs]
        if momentum != 0:
            bufs = [ember.empty_like(p) if b is None else b for p, b in zip(params, bufs)]
        use_fused = group["fused"] is not False and _fusable(params, grads,
                                                             bufs if momentum else [])
        if use_fused:
            _C._fused_sgd_(params, grads, bufs if momentum else None, first, lr=group["lr"],
                           weight_decay=group["weight_decay"], momentum=momentum,
                           dampening=group["dampening"], nesterov=group["nesterov"],
                           maximize=group["maximize"])
        else:
            _sgd_foreach(params, grads, bufs, first, group)
        for p, b in zip(params, bufs):
            self.state[p]["momentum_buffer"] = b if momentum != 0 else None


def _sgd_foreach(params, grads, bufs, first, group):
    """The same update composed of ember in-place ops (dtypes/devices the kernel does not take)."""
    lr, wd, mom = group["lr"], group["weight_decay"], group["momentum"]
    damp, nesterov = group["dampening"], group["nesterov"]
    for i, (p, g) in enumerate(zip(params, grads)):
        d = -g if group["maximize"] else g
        if wd != 0:
            d = d + p * wd
        if mom != 0:
            buf = bufs[i]
            if first[i]:
                buf.copy_(d)
            else:
                buf.mul_(mom).add_(d * (1 - damp))
            d = d + buf * mom if nesterov else buf
        p.add_(d * (-lr))
