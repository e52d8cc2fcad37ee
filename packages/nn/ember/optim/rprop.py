"""Rprop: resilient backpropagation (torch.optim.Rprop's single-tensor update)."""

from __future__ import annotations

import ember

from ._composed import _Composed
from .optimizer import _check_lr, _step_tensor

__all__ = ["Rprop"]


class Rprop(_Composed):
    """Rprop: each element keeps its own step size, multiplied by ``etas[1]`` while the
    gradient keeps its sign and by ``etas[0]`` when it flips (that element then skips one
    update), clamped to ``step_sizes``. State: ``step``, ``prev`` (the last gradient used) and
    ``step_size``."""

    def __init__(self, params, lr: float = 1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _init(self, p, state, group):
        state["step"] = _step_tensor(p, group)
        state["prev"] = ember.zeros_like(p)
        state["step_size"] = ember.full_like(p, float(group["lr"]))

    def _update_param(self, p, g, state, group):
        state["step"].add_(1)
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        prev, step_size = state["prev"], state["step_size"]
        sign = (g * prev).sign()
        factor = ember.where(sign > 0, ember.full_like(sign, etaplus),
                             ember.where(sign < 0, ember.full_like(sign, etaminus),
                                         ember.ones_like(sign)))
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        # where the sign flipped, this step makes no move and forgets the gradient
        g = ember.where(sign < 0, ember.zeros_like(g), g)
        p.add_(g.sign() * step_size, alpha=-1.0)
        prev.copy_(g)
