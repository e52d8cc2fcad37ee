"""ember.signal.windows: torch.signal.windows' window functions, as torch computes them (sample
positions from ``linspace``, then the window's formula), with its checks and errors.

``sym=True`` gives the symmetric window (filter design); ``sym=False`` the periodic one
(spectral analysis: the symmetric window of M + 1 points without its last).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import ember

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype, layout) -> None:
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _positions(start, step, M: int, dtype, device, end=None):
    """M sample positions from `start` by `step` (torch's linspace, so the same rounding)."""
    end = start + (M - 1) * step if end is None else end
    return ember.linspace(start, end, M, dtype=dtype, device=device)


def _finish(w, requires_grad: bool):
    return w.requires_grad_(True) if requires_grad else w


def _empty(M: int, dtype, device, requires_grad: bool):
    return ember.empty(0, dtype=dtype, device=device, requires_grad=requires_grad) if M == 0 \
        else ember.ones(1, dtype=dtype, device=device, requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=ember.strided, device=None, requires_grad: bool = False):
    """exp(-|n - center| / tau)."""
    dtype = dtype or ember.get_default_dtype()
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _empty(0, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _positions(-center / tau, 1 / tau, M, dtype, device)
    return _finish(ember.exp(-ember.abs(k)), requires_grad)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
           requires_grad: bool = False):
    """sin(pi (n + 1/2) / M) (the sine window)."""
    dtype = dtype or ember.get_default_dtype()
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return _empty(0, dtype, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return _finish(ember.sin(_positions(0.5 * step, step, M, dtype, device)), requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=ember.strided,
             device=None, requires_grad: bool = False):
    """exp(-(n - (M-1)/2)^2 / (2 std^2))."""
    dtype = dtype or ember.get_default_dtype()
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _empty(0, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    step = 1 / (std * math.sqrt(2))
    k = _positions(start * step, step, M, dtype, device)
    return _finish(ember.exp(-(k * k)), requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=ember.strided,
           device=None, requires_grad: bool = False):
    """I0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / I0(beta)."""
    dtype = dtype or ember.get_default_dtype()
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _empty(M, dtype, device, requires_grad)
    b = ember.tensor(beta, dtype=dtype, device=device)  # in the window's dtype: no NaN at the end
    step = 2.0 * b / (M if not sym else M - 1)
    end = ember.minimum(b, -b + (M - 1) * step)
    k = ember.linspace(-b.item(), end.item(), M, dtype=dtype, device=device)
    return _finish(ember.i0(ember.sqrt(b * b - k * k)) / ember.i0(b), requires_grad)


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=ember.strided,
                   device=None, requires_grad: bool = False):
    """sum_i (-1)^i a_i cos(2 pi i n / (M-1)): the cosine-sum windows (Hann, Hamming,
    Blackman, Nuttall)."""
    dtype = dtype or ember.get_default_dtype()
    _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _empty(M, dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = _positions(0, step, M, dtype, device)
    coeffs = ember.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device)
    i = ember.arange(len(a), dtype=dtype, device=device)
    return _finish((coeffs.unsqueeze(-1) * ember.cos(i.unsqueeze(-1) * k)).sum(0), requires_grad)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None,
                    layout=ember.strided, device=None, requires_grad: bool = False):
    """alpha - (1 - alpha) cos(2 pi n / (M-1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
            requires_grad: bool = False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
         requires_grad: bool = False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
             requires_grad: bool = False):
    dtype = dtype or ember.get_default_dtype()
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
            requires_grad: bool = False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=ember.strided, device=None,
             requires_grad: bool = False):
    """1 - |2n/(M-1) - 1| (the triangular window with zero ends)."""
    dtype = dtype or ember.get_default_dtype()
    _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _empty(M, dtype, device, requires_grad)
    step = 2 / (M if not sym else M - 1)
    return _finish(1 - ember.abs(_positions(-1, step, M, dtype, device)), requires_grad)
