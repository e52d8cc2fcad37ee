"""ASGD: averaged stochastic gradient descent (torch.optim.ASGD's single-tensor update)."""

from __future__ import annotations

import ember

from ._composed import _Composed
from .optimizer import _check_lr, _check_nonneg, _step_tensor

__all__ = ["ASGD"]


class ASGD(_Composed):
    """Averaged SGD (Polyak and Juditsky). State per parameter: ``step``, ``eta`` (the current
    step size), ``mu`` (the averaging coefficient), all 0-d float32 as in torch, and ``ax``,
    the running average of the parameter."""

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0.0, foreach=None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        _check_lr(lr)
        _check_nonneg("weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _init(self, p, state, group):
        state["step"] = _step_tensor(p, group)
        state["eta"] = _step_tensor(p, group, float(group["lr"]))
        state["mu"] = _step_tensor(p, group, 1.0)
        state["ax"] = ember.zeros_like(p)

    def _update_param(self, p, g, state, group):
        state["step"].add_(1)
        step = state["step"].item()
        lr, lambd = group["lr"], group["lambd"]
        if group["weight_decay"] != 0:
            g = g + p * group["weight_decay"]
        eta = state["eta"].item()
        p.mul_(1 - lambd * eta)
        p.add_(g, alpha=-eta)
        mu = state["mu"].item()
        ax = state["ax"]
        if mu != 1:
            ax.add_((p - ax) * mu)
        else:
            ax.copy_(p)
        # eta and mu are float32 tensors in torch's state; their rounding is part of the numbers
        state["eta"].fill_(lr / ((1 + lambd * lr * step) ** group["alpha"]))
        state["mu"].fill_(1 / max(1, step - group["t0"]))
