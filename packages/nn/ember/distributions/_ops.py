"""Numerical primitives ember.distributions needs beyond ember's ops, written over ember's ops.

The special functions (``lgamma``, ``digamma``, ``polygamma``, the regularized incomplete gamma
function) are compositions of differentiable ember ops, so autograd differentiates them; the
gamma sampler is an ``ember.autograd.Function`` with the implicit reparameterization gradient;
the Poisson and binomial samplers are exact rejection/inversion samplers. Where the core grows one
of these functions (``ember.lgamma``, ``ember.digamma``, ...), that one is used instead.
"""

from __future__ import annotations

import math

import ember
from ember import Tensor
from ember.autograd import Function, once_differentiable

__all__ = ["lgamma", "digamma", "polygamma", "finfo", "mvlgamma", "poisson", "binomial",
           "standard_gamma", "sample_dirichlet", "special_gammainc"]


# ---------------------------------------------------------------------------------------------
# finfo (torch.finfo's fields for ember's floating dtypes)

class finfo:  # noqa: N801  (torch's name)
    """Machine limits of a floating dtype: ``bits``, ``eps``, ``max``, ``min``, ``tiny``,
    ``smallest_normal``, ``resolution`` (torch.finfo's fields)."""

    _TABLE = {
        "float64": (64, 2.220446049250313e-16, 1.7976931348623157e308, 2.2250738585072014e-308,
                    1e-15),
        "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e38, 1.1754943508222875e-38,
                    1e-06),
        "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
        "bfloat16": (16, 0.0078125, 3.3895313892515355e38, 1.1754943508222875e-38, 0.01),
    }

    def __init__(self, dtype=None):
        dtype = ember.get_default_dtype() if dtype is None else dtype
        name = str(dtype).split(".")[-1]
        if name not in self._TABLE:
            raise TypeError(f"finfo(): expected a floating dtype, got {dtype}")
        self.dtype = name
        self.bits, self.eps, self.max, self.tiny, self.resolution = self._TABLE[name]
        self.min = -self.max
        self.smallest_normal = self.tiny

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"eps={self.eps}, smallest_normal={self.tiny}, tiny={self.tiny}, "
                f"dtype={self.dtype})")


# ---------------------------------------------------------------------------------------------
# lgamma, digamma, polygamma: recurrence up to x >= 8, then the asymptotic (Stirling) series;
# reflection below 0.5. Accurate to about 1e-14 in float64; autograd differentiates the
# composition (d lgamma = digamma, d digamma = trigamma up to the same accuracy).

_SHIFT = 8
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Stirling's series for lgamma: sum_k B_2k / (2k (2k-1) y^(2k-1)).
_LGAMMA_SERIES = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)
# Asymptotic series for digamma: -sum_k B_2k / (2k y^2k).
_DIGAMMA_SERIES = (-1 / 12, 1 / 120, -1 / 252, 1 / 240, -1 / 132, 691 / 32760, -1 / 12)


def _as_float_tensor(x):
    if not isinstance(x, Tensor):
        x = ember.tensor(x, dtype=ember.get_default_dtype())
    if not x.dtype.is_floating_point:
        x = x.to(ember.get_default_dtype())
    return x


def _poly_in(inv, coeffs):
    """sum_k coeffs[k] * inv**k by Horner's rule."""
    acc = coeffs[-1] * ember.ones_like(inv)
    for c in reversed(coeffs[:-1]):
        acc = acc * inv + c
    return acc


def _lgamma_positive(x: Tensor) -> Tensor:
    y = x + _SHIFT
    shift_log = ember.log(x)
    for k in range(1, _SHIFT):
        shift_log = shift_log + ember.log(x + k)
    inv = 1.0 / y
    inv2 = inv * inv
    series = inv * _poly_in(inv2, _LGAMMA_SERIES)
    return (y - 0.5) * ember.log(y) - y + _HALF_LOG_2PI + series - shift_log


def _digamma_positive(x: Tensor) -> Tensor:
    y = x + _SHIFT
    shift = 1.0 / x
    for k in range(1, _SHIFT):
        shift = shift + 1.0 / (x + k)
    inv2 = 1.0 / (y * y)
    series = inv2 * _poly_in(inv2, _DIGAMMA_SERIES)
    return ember.log(y) - 0.5 / y + series - shift


def _in_float64(fn):
    """Runs ``fn`` in float64 and returns its result in the input's dtype: the series lose a few
    digits to cancellation, which float32 cannot spare."""
    def wrapper(x):
        x = _as_float_tensor(x)
        if x.dtype == ember.float64:
            return fn(x)
        return fn(x.to(ember.float64)).to(x.dtype)
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@_in_float64
def _lgamma(x) -> Tensor:
    """log|Gamma(x)| (torch.lgamma)."""
    reflect = x < 0.5
    if not bool(reflect.any()):
        return _lgamma_positive(x)
    # The branch not taken gets a harmless argument so that its gradient is finite (and zero).
    pos = _lgamma_positive(ember.where(reflect, 1.0 - x, x))
    sin_pi_x = ember.sin(math.pi * ember.where(reflect, x, ember.full_like(x, 0.5)))
    reflected = math.log(math.pi) - ember.log(ember.abs(sin_pi_x)) - pos
    return ember.where(reflect, reflected, pos)


@_in_float64
def _digamma(x) -> Tensor:
    """The logarithmic derivative of Gamma (torch.digamma); -inf at 0 as torch."""
    reflect = x < 0.5
    if not bool(reflect.any()):
        return _digamma_positive(x)
    pos = _digamma_positive(ember.where(reflect, 1.0 - x, x))
    tan_pi_x = ember.tan(math.pi * ember.where(reflect, x, ember.full_like(x, 0.25)))
    reflected = pos - math.pi / tan_pi_x
    out = ember.where(reflect, reflected, pos)
    # torch: digamma(0) = -inf, digamma(negative integer) = nan.
    out = ember.where(x == 0, ember.full_like(x, -math.inf), out)
    neg_int = (x < 0) & (x == ember.floor(x))
    return ember.where(neg_int, ember.full_like(x, math.nan), out)


def _trigamma_positive(x: Tensor) -> Tensor:
    y = x + _SHIFT
    shift = 1.0 / (x * x)
    for k in range(1, _SHIFT):
        shift = shift + 1.0 / ((x + k) * (x + k))
    inv = 1.0 / y
    inv2 = inv * inv
    # 1/y + 1/(2y^2) + sum_k B_2k / y^(2k+1)
    series = inv + 0.5 * inv2 + inv * inv2 * _poly_in(
        inv2, (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6))
    return series + shift


def _polygamma(n: int, x) -> Tensor:
    """torch.polygamma for n = 0 (digamma) and n = 1 (trigamma, x > 0)."""
    if n == 0:
        return _digamma(x)
    if n == 1:
        return _in_float64(_trigamma_positive)(x)
    raise NotImplementedError(f"polygamma: order {n} is not implemented in ember.distributions")


lgamma = getattr(ember, "lgamma", None) or _lgamma
digamma = getattr(ember, "digamma", None) or _digamma
polygamma = getattr(ember, "polygamma", None) or _polygamma


def mvlgamma(x: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p`` (torch.mvlgamma)."""
    x = _as_float_tensor(x)
    offsets = ember.arange(p, dtype=x.dtype, device=x.device) * -0.5
    return lgamma(x.unsqueeze(-1) + offsets).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


# ---------------------------------------------------------------------------------------------
# The regularized lower incomplete gamma function P(a, x) (torch.special.gammainc): the power
# series where x < a + 1, Legendre's continued fraction (modified Lentz) elsewhere.

_GAMMAINC_ITERS = 500


def special_gammainc(a, x) -> Tensor:
    a, x = ember.broadcast_tensors(_as_float_tensor(a), _as_float_tensor(x))
    x_pos = ember.clamp(x, min=finfo(x.dtype).tiny)
    log_prefix = a * ember.log(x_pos) - x_pos - lgamma(a)
    use_series = x < a + 1
    eps = finfo(x.dtype).eps
    # Series: P = exp(log_prefix) * sum_n x^n / (a (a+1) ... (a+n)).
    term = 1.0 / a
    total = term
    for n in range(1, _GAMMAINC_ITERS):
        term = term * x / (a + n)
        total = total + term
        if not bool(((term.abs() > eps * total.abs()) & use_series).any()):
            break
    series = ember.exp(log_prefix) * total
    # Continued fraction for Q = 1 - P.
    tiny = 1e-300 if x.dtype == ember.float64 else 1e-30
    b = x + 1.0 - a
    c = ember.full_like(x, 1.0 / tiny)
    d = 1.0 / ember.where(b.abs() < tiny, ember.full_like(b, tiny), b)
    h = d
    for i in range(1, _GAMMAINC_ITERS):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = ember.where(d.abs() < tiny, ember.full_like(d, tiny), d)
        c = b + an / c
        c = ember.where(c.abs() < tiny, ember.full_like(c, tiny), c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        if not bool((((delta - 1.0).abs() > eps) & ~use_series).any()):
            break
    upper = ember.exp(log_prefix) * h
    out = ember.where(use_series, series, 1.0 - upper)
    out = ember.where(x <= 0, ember.zeros_like(out), out)
    return ember.where(x == math.inf, ember.ones_like(out), out)


# ---------------------------------------------------------------------------------------------
# Samplers. Each draws from ember's default generator (seeded by ember.manual_seed) and is exact.
# They work on the flattened parameters and, round after round, only on the elements still
# pending: a rejection sampler redraws the rejected ones, an inversion loop advances the ones
# not yet done, so a round costs what is left rather than the whole tensor.

def _uniform(shape, like: Tensor) -> Tensor:
    return ember.rand(tuple(shape), dtype=like.dtype, device=like.device)


def _normal(shape, like: Tensor) -> Tensor:
    return ember.randn(tuple(shape), dtype=like.dtype, device=like.device)


def _by_rejection(propose, *params: Tensor) -> Tensor:
    """Samples of the (equal) shape of ``params``: ``propose(*flat_params)`` returns candidate
    values and which of them are accepted; rejected elements are proposed again."""
    like = params[0]
    flat = [p.reshape(-1) for p in params]
    out = ember.zeros(flat[0].shape, dtype=like.dtype, device=like.device)
    pending = ember.arange(flat[0].numel(), device=like.device)
    while pending.numel() > 0:
        value, accept = propose(*[p[pending] for p in flat])
        out[pending[accept]] = value[accept]
        pending = pending[~accept]
    return out.reshape(like.shape)


def _marsaglia_tsang_proposal(alpha: Tensor):
    """One round of Marsaglia & Tsang (2000) for Gamma(alpha, 1), alpha >= 1."""
    d = alpha - 1.0 / 3.0
    c = 1.0 / ember.sqrt(9.0 * d)
    z = _normal(alpha.shape, alpha)
    u = _uniform(alpha.shape, alpha)
    v = 1.0 + c * z
    positive = v > 0
    v = ember.where(positive, v, ember.ones_like(v))
    v3 = v * v * v
    accept = positive & (ember.log(u) < 0.5 * z * z + d - d * v3 + d * ember.log(v3))
    return d * v3, accept


def _gamma_sample(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) for alpha > 0: alpha < 1 boosted as Gamma(alpha + 1) * U^(1/alpha).
    Draws are clamped at the smallest normal number, as torch's; alpha = inf gives inf, alpha <= 0
    or NaN the smallest normal number, as torch's; the rejection loop never sees them."""
    valid = (alpha > 0) & ember.isfinite(alpha)
    safe = ember.where(valid, alpha, ember.ones_like(alpha))
    small = safe < 1
    out = _by_rejection(_marsaglia_tsang_proposal, ember.where(small, safe + 1.0, safe))
    if bool(small.any()):
        u = _uniform(alpha.shape, alpha)
        log_scale = ember.log(u) / ember.where(small, safe, ember.ones_like(safe))
        out = ember.where(small, out * ember.exp(log_scale), out)
    tiny = finfo(alpha.dtype).tiny
    out = ember.clamp(out, min=tiny)
    if bool(valid.all()):
        return out
    invalid_draw = ember.where(alpha == math.inf, alpha, ember.full_like(alpha, tiny))
    return ember.where(valid, out, invalid_draw)


def _standard_gamma_grad(x: Tensor, alpha: Tensor) -> Tensor:
    """d x / d alpha of a Gamma(alpha, 1) sample x at a fixed CDF value (implicit
    reparameterization): -(dP/dalpha) / (dP/dx), P the regularized lower incomplete gamma.

    dP/dalpha = sum_n t_n (log x - digamma(alpha + n + 1)) with
    t_n = x^(alpha + n) e^-x / Gamma(alpha + n + 1), summed in float64 until the terms vanish;
    above alpha = 500 the Wilson-Hilferty transform's derivative (relative error below 1e-4).
    """
    dtype = x.dtype
    x = x.to(ember.float64)
    alpha = alpha.to(ember.float64)
    x = ember.clamp(x, min=1e-300)
    large = alpha > 500
    a = ember.where(large, ember.ones_like(alpha), alpha)
    xs = ember.where(large, ember.ones_like(x), x)
    log_x = ember.log(xs)
    log_t = a * log_x - xs - lgamma(a + 1.0)
    t = ember.exp(log_t)
    psi = digamma(a + 1.0)
    dp_dalpha = t * (log_x - psi)
    total_t = t
    n_max = int(float(xs.max())) + 10 * int(math.sqrt(float(xs.max())) + 1) + 50
    for n in range(1, n_max):
        t = t * xs / (a + n)
        psi = psi + 1.0 / (a + n)
        dp_dalpha = dp_dalpha + t * (log_x - psi)
        total_t = total_t + t
        if n % 16 == 0 and not bool((t > 1e-17 * total_t).any()):
            break
    dp_dx = ember.exp((a - 1.0) * log_x - xs - lgamma(a))
    series = -dp_dalpha / dp_dx
    if bool(large.any()):
        # x = alpha (1 - 1/(9 alpha) + z / (3 sqrt(alpha)))^3 with z fixed.
        al = ember.where(large, alpha, ember.ones_like(alpha))
        root = ember.pow(x / al, 1.0 / 3.0)
        z = (root - 1.0 + 1.0 / (9.0 * al)) * 3.0 * ember.sqrt(al)
        droot = 1.0 / (9.0 * al * al) - z / (6.0 * al * ember.sqrt(al))
        wh = root ** 3 + 3.0 * al * root * root * droot
        series = ember.where(large, wh, series)
    return series.to(dtype)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        with ember.no_grad():
            x = _gamma_sample(alpha.detach())
        ctx.save_for_backward(x, alpha)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, alpha = ctx.saved_tensors
        return grad * _standard_gamma_grad(x, alpha.detach())


def standard_gamma(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) samples of alpha's shape (torch._standard_gamma), differentiable in alpha
    by implicit reparameterization."""
    if alpha.requires_grad:
        return _StandardGamma.apply(alpha)
    with ember.no_grad():
        return _gamma_sample(alpha)


def sample_dirichlet(concentration: Tensor) -> Tensor:
    """Dirichlet samples (torch._sample_dirichlet): normalized gamma draws, differentiable."""
    gammas = standard_gamma(concentration)
    tiny = finfo(gammas.dtype).tiny
    gammas = ember.clamp(gammas, min=tiny)
    return gammas / gammas.sum(-1, keepdim=True)


def _poisson_small(rate: Tensor) -> Tensor:
    """Knuth's multiplication method (rate < 10): the number of uniforms multiplied before the
    product falls to exp(-rate) or below."""
    flat = rate.reshape(-1)
    out = ember.zeros_like(flat)
    index = ember.arange(flat.numel(), device=rate.device)
    limit = ember.exp(-flat)
    product = ember.ones_like(flat)
    count = ember.zeros_like(flat)
    while index.numel() > 0:
        product = product * _uniform(index.shape, rate)
        done = product <= limit
        out[index[done]] = count[done]
        going = ~done
        index, limit, product, count = index[going], limit[going], product[going], count[going] + 1
    return out.reshape(rate.shape)


def _ptrs_proposal(rate: Tensor):
    """One round of Hormann's PTRS transformed rejection (rate >= 10), as NumPy's and torch's."""
    slam = ember.sqrt(rate)
    log_rate = ember.log(rate)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    u = _uniform(rate.shape, rate) - 0.5
    v = _uniform(rate.shape, rate)
    us = 0.5 - ember.abs(u)
    k = ember.floor((2 * a / us + b) * u + rate + 0.43)
    quick = (us >= 0.07) & (v <= v_r)
    reject = (k < 0) | ((us < 0.013) & (v > us))
    k = ember.clamp(k, min=0.0)
    log_accept = (ember.log(v) + ember.log(inv_alpha) - ember.log(a / (us * us) + b)
                  <= -rate + k * log_rate - lgamma(k + 1.0))
    return k, quick | (~reject & log_accept)


def poisson(rate: Tensor, generator=None) -> Tensor:
    """Poisson(rate) counts of rate's shape and dtype (torch.poisson)."""
    if generator is not None:
        raise NotImplementedError("poisson: a generator other than the default one")
    with ember.no_grad():
        rate = rate.detach()
        if bool((rate < 0).any()):
            raise RuntimeError("poisson: invalid Poisson rate, expected rate to be non-negative")
        # inf and NaN rates give themselves (torch's sampler never returns for inf)
        finite = ember.isfinite(rate)
        rate_safe = ember.where(finite, rate, ember.zeros_like(rate))
        large = rate_safe >= 10
        out = _poisson_small(ember.where(large, ember.zeros_like(rate), rate_safe))
        if bool(large.any()):
            big = _by_rejection(_ptrs_proposal,
                                ember.where(large, rate_safe, ember.full_like(rate, 10.0)))
            out = ember.where(large, big, out)
        return ember.where(finite, out, rate)


def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Binomial(count, prob) successes: ``ember.binomial`` (inversion and BTRS rejection) on the
    two broadcast and brought to one floating dtype, prob's or the default."""
    dtype = prob.dtype if prob.dtype.is_floating_point else ember.get_default_dtype()
    return ember.binomial(count.detach().to(dtype), prob.detach().to(dtype), generator=generator)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """(L L^T)^-1 from its Cholesky factor (torch.cholesky_inverse)."""
    eye = ember.eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(L.shape)
    if upper:
        L = L.mT
    L_inv = ember.linalg.solve_triangular(L, eye, upper=False)
    return L_inv.mT @ L_inv
