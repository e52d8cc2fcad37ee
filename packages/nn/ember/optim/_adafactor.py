"""Adafactor (torch.optim.Adafactor's single-tensor update): the second moment of a matrix
is kept as a row and a column factor, so its state is O(rows + cols), not O(rows * cols)."""

from __future__ import annotations

import ember

from ._composed import _Composed
from .optimizer import _step_tensor

__all__ = ["Adafactor"]

# torch.finfo(dtype).eps, eps[0]'s default
_MACHINE_EPS = {ember.float64: 2.0 ** -52, ember.float32: 2.0 ** -23, ember.float16: 2.0 ** -10,
                ember.bfloat16: 2.0 ** -7}


class Adafactor(_Composed):
    """Adafactor (Shazeer and Stern, with torch's choices: no first moment, relative step size
    ``min(lr, 1/sqrt(step))``, decoupled ``weight_decay``). State: ``step`` and, for tensors of
    2 or more dims, ``row_var`` / ``col_var``; for vectors ``variance``."""

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps=(None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach=None, maximize: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def _init(self, p, state, group):
        state["step"] = _step_tensor(p, group)
        if p.dim() > 1:
            row_shape, col_shape = list(p.shape), list(p.shape)
            row_shape[-1] = 1
            col_shape[-2] = 1
            state["row_var"] = ember.zeros(row_shape, dtype=p.dtype, device=p.device)
            state["col_var"] = ember.zeros(col_shape, dtype=p.dtype, device=p.device)
        else:
            state["variance"] = ember.zeros_like(p)

    def _update_param(self, p, g, state, group):
        lr, wd = group["lr"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = _MACHINE_EPS[p.dtype]
        state["step"].add_(1)
        step = state["step"].item()
        one_minus_beta2 = step ** group["beta2_decay"]
        rho = min(lr, 1 / (step ** 0.5))
        alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho
        if wd != 0:
            p.mul_(1 - lr * wd)
        if g.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_mean = (g * g).sum(dim=-1, keepdim=True) / g.size(-1)
            row_var.lerp_(row_mean, one_minus_beta2)
            col_mean = (g * g).sum(dim=-2, keepdim=True) / g.size(-2)
            col_var.lerp_(col_mean, one_minus_beta2)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            variance = state["variance"]
            variance.lerp_(g * g, one_minus_beta2)
            var_estimate = variance.clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(g)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * group["d"]))
        p.add_(update, alpha=-alpha / denom)
