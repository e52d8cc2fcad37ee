"""SparseAdam (torch.optim.SparseAdam): Adam that moves only the entries a step's gradient
touches.

ember has no sparse layout: an ``nn.Embedding(sparse=True)`` gradient is dense, zero outside the
looked-up rows. SparseAdam therefore takes the gradient's support as the slices (along dim 0)
where it has a nonzero entry: exactly the rows torch's sparse gradient lists, except a looked-up
row whose gradient is entirely zero, which torch would still decay and ember leaves alone.
"""

from __future__ import annotations

import math

import ember

from .optimizer import Optimizer, _check_betas

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Masked Adam for gradients that touch a few rows (embeddings). State per parameter:
    ``step`` (a Python int, as torch), ``exp_avg``, ``exp_avg_sq``."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    def step(self, closure=None):
        return self._step_groups(closure)

    def _update(self, group, params, grads):
        beta1, beta2 = group["betas"]
        for p, g in zip(params, grads):
            state = self.state[p]
            if len(state) == 0:
                state["step"] = 0
                state["exp_avg"] = ember.zeros_like(p)
                state["exp_avg_sq"] = ember.zeros_like(p)
            state["step"] += 1
            if group["maximize"]:
                g = -g
            touched = g != 0
            if g.dim() > 1:
                touched = touched.reshape(g.shape[0], -1).any(dim=1)
                touched = touched.reshape([g.shape[0]] + [1] * (g.dim() - 1)).expand_as(g)
            if not bool(touched.any()):
                continue
            mask = touched.to(p.dtype)
            ea, eas = state["exp_avg"], state["exp_avg_sq"]
            ea.add_((g - ea) * (1 - beta1) * mask)
            eas.add_((g * g - eas) * (1 - beta2) * mask)
            step = state["step"]
            step_size = group["lr"] * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            p.add_(ea / eas.sqrt().add_(group["eps"]) * mask, alpha=-step_size)
