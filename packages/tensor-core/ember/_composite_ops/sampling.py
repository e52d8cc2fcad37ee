"""In-place samplers composed from uniform_ and normal_ (the generator's stream), and
poisson."""

from __future__ import annotations

import math

from ember import _C
from ember._composite_ops._common import _SHELL_UNSIGNED, _dtype_name


def _check_floating(self, name):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{name} expects a floating point tensor, but got {self.dtype}")


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """median + sigma * tan(pi * (u - 1/2)), u uniform in [0, 1) (torch's transformation)."""
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    _check_floating(self, "cauchy_")
    u = _C.empty(tuple(self.shape), dtype=_C.float64, device=self.device)
    u.uniform_(0.0, 1.0, generator=generator)
    return self.copy_(((u - 0.5) * math.pi).tan() * sigma + median)


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """exp of a normal(mean, std) draw."""
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    if not self.dtype.is_floating_point:  # torch's kernel dispatch: nothing to refuse when empty
        if self.numel() == 0:
            return self
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for "
                                  f"'{_dtype_name(self.dtype)}'")
    z = _C.empty(tuple(self.shape), dtype=_C.float64, device=self.device)
    z.normal_(mean, std, generator=generator)
    return self.copy_(z.exp())


def geometric_(self, p, *, generator=None):
    """The number of Bernoulli(p) trials up to the first success: ceil(log(u) / log(1 - p)) for
    u uniform in (0, 1] (at least 1)."""
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if (self.dtype in (_C.bool, *_SHELL_UNSIGNED) or self.dtype.is_complex) and self.numel():
        raise NotImplementedError(f"\"geometric_cpu\" not implemented for "
                                  f"'{_dtype_name(self.dtype)}'")
    u = _C.empty(tuple(self.shape), dtype=_C.float64, device=self.device)
    u.uniform_(0.0, 1.0, generator=generator)
    u = 1.0 - u  # (0, 1]: log(u) finite
    return self.copy_((u.log() / math.log1p(-p)).ceil().clamp_min(1.0))


def poisson(input, generator=None):
    """Poisson(rate) draws, one per element of `input` (the rates), by inverting the CDF of one
    uniform each: the smallest k with P(X <= k) = Q(k + 1, rate) >= u (the regularised upper
    incomplete gamma function), found by bisection. Exact but for rounding, vectorised over the
    tensor (and so on CUDA too), and reproducible from the generator's uniform stream. The result
    has the rates' dtype; it carries a zero gradient, as torch's."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"poisson_cpu\" not implemented for '{_dtype_name(input.dtype)}'")
    rate = input.detach().to(_C.float64)
    if bool((rate < 0).any()) or bool(rate.isnan().any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    u = _C.empty(tuple(rate.shape), dtype=_C.float64, device=rate.device)
    u.uniform_(0.0, 1.0, generator=generator)
    infinite = rate.isinf()
    rate = _C.where(infinite, _C.zeros_like(rate), rate)  # an infinite rate draws infinity
    lo = _C.full(tuple(rate.shape), -1.0, dtype=_C.float64, device=rate.device)  # CDF(-1) = 0
    hi = (rate + 10.0 * rate.sqrt() + 10.0).ceil()
    while True:  # widen until CDF(hi) >= u everywhere (u within rounding of 1: rarely needed)
        short = _gammaincc(hi + 1.0, rate) < u
        if not bool(short.any()):
            break
        hi = _C.where(short, hi * 2.0 + 1.0, hi)
    while bool(((hi - lo) > 1.0).any()):
        mid = ((lo + hi) * 0.5).floor()
        mid = _C.where(mid <= lo, lo + 1.0, mid)
        reached = _gammaincc(mid + 1.0, rate) >= u
        open_ = (hi - lo) > 1.0
        hi = _C.where(open_ & reached, mid, hi)
        lo = _C.where(open_ & ~reached, mid, lo)
    draw = _C.where(rate == 0, _C.zeros_like(hi), hi)
    draw = _C.where(infinite, _C.full([], math.inf, dtype=_C.float64), draw).to(input.dtype)
    if input.requires_grad and _C.is_grad_enabled():
        # torch's zero gradient: a zero that depends on the rates (inf * 0 is NaN: zeroed too)
        draw = draw + (input * 0.0).nan_to_num(0.0)
    return draw


def _gammaincc(a, x):
    from ember import special

    return special.gammaincc(a, x)
