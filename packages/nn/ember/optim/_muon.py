"""Muon (torch.optim.Muon): SGD-momentum whose update of each 2-D parameter is orthogonalised
by a few Newton-Schulz iterations, run in bfloat16 as torch runs them."""

from __future__ import annotations

import math

import ember

from .optimizer import Optimizer

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """The nearest semi-orthogonal matrix to ``grad`` (U V^T of its SVD), approximately: a
    quintic Newton-Schulz iteration on the bfloat16 matrix scaled to norm 1."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.to(ember.bfloat16)
    tall = grad.size(0) > grad.size(1)
    if tall:
        x = x.t()
    x = x / x.norm().clamp(min=eps)
    bf16, f32 = ember.bfloat16, ember.float32
    for _ in range(ns_steps):
        # torch's bfloat16 addmm accumulates in float32 and rounds once: so does this
        gram = (x.to(f32) @ x.to(f32).t()).to(bf16).to(f32)
        gram_update = (gram * b + (gram @ gram) * c).to(bf16).to(f32)
        x = (x.to(f32) * a + gram_update @ x.to(f32)).to(bf16)
    return x.t() if tall else x


def _adjust_lr(lr, adjust_lr_fn, param_shape):
    A, B = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(A, B))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon for 2-D parameters (matrices of Linear layers); use another optimizer for the
    rest (biases, embeddings, norms), as torch's documentation advises."""

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps: float = EPS,
                 ns_steps: int = DEFAULT_NS_STEPS, adjust_lr_fn: str | None = None):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients,
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure=None):
        return self._step_groups(closure)

    def _update(self, group, params, grads):
        lr, momentum = group["lr"], group["momentum"]
        for p, g in zip(params, grads):
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = ember.zeros_like(g)
            buf = state["momentum_buffer"]
            buf.lerp_(g, 1 - momentum)
            update = g.lerp(buf, momentum) if group["nesterov"] else buf
            update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                 group["ns_steps"], group["eps"])
            p.mul_(1 - lr * group["weight_decay"])
            p.add_(update.to(p.dtype), alpha=-_adjust_lr(lr, group["adjust_lr_fn"], p.shape))
