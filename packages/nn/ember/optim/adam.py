"""Adam and AdamW: one fused core kernel per group and step (ember._C._fused_adam_)."""

from __future__ import annotations

import math

import ember
from ember import _C

from .optimizer import (
    Optimizer,
    _check_betas,
    _check_eps,
    _check_lr,
    _check_nonneg,
    _fusable,
    _step_tensor,
)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (torch.optim.Adam's update, incl. amsgrad and maximize); weight_decay is L2 added
    to the gradient. State per parameter: ``step`` (0-d float32), ``exp_avg``, ``exp_avg_sq``
    and ``max_exp_avg_sq`` (amsgrad)."""

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused=None, decoupled_weight_decay: bool = False):
        _check_lr(lr)
        _check_eps(eps)
        _check_betas(betas)
        _check_nonneg("weight_decay", weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay or self._decoupled)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._step_groups(closure)

    def _update(self, group, params, grads):
        amsgrad = group["amsgrad"]
        for p in params:
            st = self.state[p]
            if len(st) == 0:
                st["step"] = _step_tensor(p, group)
                st["exp_avg"] = ember.zeros_like(p)
                st["exp_avg_sq"] = ember.zeros_like(p)
                if amsgrad:
                    st["max_exp_avg_sq"] = ember.zeros_like(p)
        states = [self.state[p] for p in params]
        m1 = [s["exp_avg"] for s in states]
        m2 = [s["exp_avg_sq"] for s in states]
        mx = [s["max_exp_avg_sq"] for s in states] if amsgrad else None
        steps = [s["step"] for s in states]
        beta1, beta2 = group["betas"]
        decoupled = group.get("decoupled_weight_decay", self._decoupled)
        # the fused kernels read the step counters on the host (a capturable group keeps them
        # on the device: the composed update below)
        if group["fused"] is not False and _fusable(params, grads, m1, m2, mx or []) and \
                all(s.get_device() < 0 for s in steps):
            _C._fused_adam_(params, grads, m1, m2, mx, steps, lr=group["lr"], beta1=beta1,
                            beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                            amsgrad=amsgrad, maximize=group["maximize"], decoupled=decoupled)
            return
        for i, (p, g) in enumerate(zip(params, grads)):
            steps[i].add_(1)
            step = steps[i].item()
            d = -g if group["maximize"] else g
            wd = group["weight_decay"]
            if wd != 0:
                if decoupled:
                    p.mul_(1 - group["lr"] * wd)
                else:
                    d = d + p * wd
            m1[i].add_((d - m1[i]) * (1 - beta1))
            m2[i].mul_(beta2).add_(d * d * (1 - beta2))
            bc1 = 1 - beta1 ** step
            bc2_sqrt = math.sqrt(1 - beta2 ** step)
            v = m2[i]
            if amsgrad:
                mx[i].copy_(ember.maximum(mx[i], v))
                v = mx[i]
            denom = (v.sqrt() / bc2_sqrt).add_(group["eps"])
            p.add_(m1[i] / denom * (-group["lr"] / bc1))


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the update)."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach=None, capturable: bool = False, differentiable: bool = False,
                 fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused)
