"""Optimizers whose update is composed of ember in-place ops, one parameter at a time
(foreach style: a handful of whole-tensor ops per parameter, no per-element Python):
RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam. Each follows torch.optim's single-tensor
update equations, so the numbers match torch's."""

from __future__ import annotations

import ember

from .optimizer import (
    Optimizer,
    _check_betas,
    _check_eps,
    _check_lr,
    _check_nonneg,
    _step_tensor,
)

__all__ = ["RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]


class _Composed(Optimizer):
    """step(): for each group and parameter with a gradient, ``_init(p, state, group)`` on the
    first visit, then ``_update_param(p, grad, state, group)`` under no_grad."""

    def step(self, closure=None):
        return self._step_groups(closure)

    def _update(self, group, params, grads):
        for p, g in zip(params, grads):
            state = self.state[p]
            if len(state) == 0:
                self._init(p, state, group)
            if group.get("maximize", False):
                g = -g
            self._update_param(p, g, state, group)


class RMSprop(_Composed):
    """RMSprop (torch.optim.RMSprop: centered, momentum, weight_decay)."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        _check_lr(lr)
        _check_eps(eps)
        _check_nonneg("momentum", momentum)
        _check_nonneg("weight_decay", weight_decay)
        _check_nonneg("alpha", alpha)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def _init(self, p, state, group):
        state["step"] = _step_tensor(p, group)
        state["square_avg"] = ember.zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = ember.zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = ember.zeros_like(p)

    def _update_param(self, p, g, state, group):
        state["step"].add_(1)
        alpha, eps, lr = group["alpha"], group["eps"], group["lr"]
        if group["weight_decay"] != 0:
            g = g + p * group["weight_decay"]
        sq = state["square_avg"]
        sq.mul_(alpha).add_(g * g * (1 - alpha))
        if group["centered"]:
            ga = state["grad_avg"]
            ga.add_((g - ga) * (1 - alpha))
            avg = (sq - ga * ga).sqrt_()
        else:
            avg = sq.sqrt()
        avg.add_(eps)
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).add_(g / avg)
            p.add_(buf * (-lr))
        else:
            p.add_(g / avg * (-lr))


class Adagrad(_Composed):
    """Adagrad (torch.optim.Adagrad: lr_decay, initial_accumulator_value, weight_decay)."""

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None):
        _check_lr(lr)
        _check_nonneg("lr_decay", lr_decay)
        _check_nonneg("weight_decay", weight_decay)
        _check_nonneg("initial_accumulator_value", initial_accumulator_value)
        _check_eps(eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        # torch creates Adagrad's state eagerly, so it is in state_dict before the first step
        for group in self.param_groups:
            for p in group["params"]:
                self._init(p, self.state[p], group)

    def _init(self, p, state, group):
        state["step"] = _step_tensor(p, group)
        state["sum"] = ember.full_like(p, group["initial_accumulator_value"])

    def _update_param(self, p, g, state, group):
        state["step"].add_(1)
        step = state["step"].item()
        if group["weight_decay"] != 0:
            g = g + p * group["weight_decay"]
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state["sum"].add_(g * g)
        std = state["sum"].sqrt().add_(group["eps"])
        p.add_(g / std * (-clr))


class Adadelta(_Composed):
    """Adadelta (torch.optim.Adadelta)."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach=None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_eps(eps)
        _check_nonneg("weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable, foreach=foreach,
                                      differentiable=differentiable))

    def _init(self, p, state, group):
        state["step"] = _step_tensor(p, group)
        state["square_avg"] = ember.zeros_like(p)
        state["acc_delta"] = ember.zeros_like(p)

    def _update_param(self, p, g, state, group):
        state["step"].add_(1)
        rho, eps = group["rho"], group["eps"]
        if group["weight_decay"] != 0:
            g = g + p * group["weight_decay"]
        sq, acc = state["square_avg"], state["acc_delta"]
        sq.mul_(rho).add_(g * g * (1 - rho))
        std = (sq + eps).sqrt_()
        delta = (acc + eps).sqrt_()
        delta.div_(std).mul_(g)
        acc.mul_(rho).add_(delta * delta * (1 - rho))
        p.add_(delta * (-group["lr"]))


class Adamax(_Composed):
    """Adamax (torch.optim.Adamax: Adam with the infinity norm)."""

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False):
        _check_lr(lr)
        _check_eps(eps)
        _check_betas(betas)
        _check_nonneg("weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _init(self, p, state, group):
        state["step"] = _step_tensor(p, group)
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_inf"] = ember.zeros_like(p)

    def _update_param(self, p, g, state, group):
        state["step"].add_(1)
        step = state["step"].item()
        beta1, beta2 = group["betas"]
        if group["weight_decay"] != 0:
            g = g + p * group["weight_decay"]
        ea, ei = state["exp_avg"], state["exp_inf"]
        ea.add_((g - ea) * (1 - beta1))
        ei.copy_(ember.maximum(ei.mul_(beta2), g.abs().add_(group["eps"])))
        clr = group["lr"] / (1 - beta1 ** step)
        p.add_(ea / ei * (-clr))


class NAdam(_Composed):
    """NAdam (torch.optim.NAdam: momentum_decay, decoupled_weight_decay)."""

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        _check_lr(lr)
        _check_eps(eps)
        _check_betas(betas)
        _check_nonneg("weight_decay", weight_decay)
        _check_nonneg("momentum_decay", momentum_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))

    def _init(self, p, state, group):
        state["step"] = _step_tensor(p, group)
        state["mu_product"] = _step_tensor(p, group, 1.0)
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)

    def _update_param(self, p, g, state, group):
        state["step"].add_(1)
        step = state["step"].item()
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        bc2 = 1 - beta2 ** step
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                g = g + p * wd
        md = group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
        # mu_product is a float32 tensor in torch's state; its rounding is part of the numbers
        state["mu_product"].mul_(mu)
        mu_prod = state["mu_product"].item()
        ea, eas = state["exp_avg"], state["exp_avg_sq"]
        ea.add_((g - ea) * (1 - beta1))
        eas.mul_(beta2).add_(g * g * (1 - beta2))
        denom = (eas / bc2).sqrt_().add_(group["eps"])
        p.add_(g / denom * (-lr * (1.0 - mu) / (1.0 - mu_prod)))
        p.add_(ea / denom * ((-lr * mu_next) / (1.0 - mu_prod * mu_next)))


class RAdam(_Composed):
    """RAdam (torch.optim.RAdam: rectified Adam, decoupled_weight_decay)."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        _check_lr(lr)
        _check_eps(eps)
        _check_betas(betas)
        _check_nonneg("weight_decay", weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      differentiable=differentiable))

    def _init(self, p, state, group):
        state["step"] = _step_tensor(p, group)
        state["exp_avg"] = ember.zeros_like(p)
        state["exp_avg_sq"] = ember.zeros_like(p)

    def _update_param(self, p, g, state, group):
        state["step"].add_(1)
        step = state["step"].item()
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                g = g + p * wd
        ea, eas = state["exp_avg"], state["exp_avg_sq"]
        ea.add_((g - ea) * (1 - beta1))
        eas.mul_(beta2).add_(g * g * (1 - beta2))
        bc1 = 1 - beta1 ** step
        bc2 = 1 - beta2 ** step
        corrected = ea / bc1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = (bc2 ** 0.5) / eas.sqrt().add_(group["eps"])
            p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
        else:
            p.add_(corrected * lr, alpha=-1.0)


