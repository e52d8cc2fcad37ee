"""Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_)."""

from __future__ import annotations

import math
import warnings

import ember

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _grads(parameters):
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None):
    """Scale the gradients of ``parameters`` in place so that their total norm (the
    ``norm_type``-norm of all gradients concatenated; ``inf`` for the largest magnitude) is at
    most ``max_norm``. Returns the total norm before clipping, as a 0-d tensor.

    ``foreach`` is accepted for torch compatibility: the per-gradient norms are core
    reductions either way.
    """
    grads = _grads(parameters)
    max_norm = float(max_norm)
    if len(grads) == 0:
        return ember.tensor(0.0)  # no gradient, no device: torch's CPU zero
    # as torch: the total norm on the first gradient's device, the scale back on each one's
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite)
    _scale(grads, max_norm, total_norm)
    return total_norm


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None):
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`ember.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`ember.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp the gradients of ``parameters`` in place to ``[-clip_value, clip_value]``."""
    clip_value = float(clip_value)
    with ember.no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None):
    """The ``norm_type``-norm of ``tensors`` (a tensor or an iterable of them) concatenated,
    as a 0-d tensor on the first tensor's device (torch.nn.utils.get_total_norm)."""
    tensors = [tensors] if isinstance(tensors, ember.Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return ember.tensor(0.0)
    first_device = tensors[0].device
    with ember.no_grad():
        norms = [ember.linalg.vector_norm(t, norm_type).to(device=first_device)
                 for t in tensors]
        if len({n.dtype for n in norms}) > 1:
            norms = [n.to(dtype=ember.float64) for n in norms]
        total_norm = ember.linalg.vector_norm(ember.stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))``,
    ``total_norm`` given (e.g. from get_total_norm over several parameter sets)."""
    _scale(_grads(parameters), max_norm, total_norm)


def _scale(grads, max_norm, total_norm) -> None:
    """Each gradient times min(1, max_norm / (total_norm + 1e-6)), in place."""
    if len(grads) == 0:
        return
    with ember.no_grad():
        clip_coef = ember.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(clip_coef.to(device=g.device, dtype=g.dtype))

