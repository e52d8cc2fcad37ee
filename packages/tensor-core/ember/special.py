"""ember.special: the names of ``torch.special``.

Each name is the core's own function under torch.special's name (``expit`` is ``ember.sigmoid``,
``gammaln`` is ``ember.lgamma``, ``i0e`` is the table op ``_C._special_i0e``, ...), so arguments,
``out=``, dtype promotion and autograd are those of the core op. The orthogonal polynomials
(``chebyshev_polynomial_t``, ``hermite_polynomial_h``, ``legendre_polynomial_p``, ...), the
Bessel functions of the first and second kind (``bessel_j0``, ``bessel_y1``, ...),
``modified_bessel_k0``/``k1`` with their scaled forms and ``airy_ai`` are table ops too: every
function of torch.special is here.

>>> import ember
>>> ember.special.expit(ember.tensor([0.0]))
tensor([0.5000])
>>> ember.special.xlogy(ember.tensor([0.0, 2.0]), ember.tensor([0.0, 1.0]))
tensor([0., 0.])
"""

from __future__ import annotations

from ember import _C

digamma = _C.digamma
psi = _C.digamma
gammaln = _C.lgamma
gammainc = _C.igamma
gammaincc = _C.igammac
polygamma = _C.polygamma
multigammaln = _C.mvlgamma
i0 = _C.i0
modified_bessel_i0 = _C.i0  # torch's modified_bessel_i0 and i0 are the same function
modified_bessel_i1 = _C._special_i1
i0e = _C._special_i0e
i1 = _C._special_i1
i1e = _C._special_i1e
ndtr = _C._special_ndtr
ndtri = _C._special_ndtri
log_ndtr = _C._special_log_ndtr
erfcx = _C._special_erfcx
entr = _C._special_entr
xlog1py = _C._special_xlog1py
zeta = _C._special_zeta
erf = _C.erf
erfc = _C.erfc
erfinv = _C.erfinv
exp2 = _C.exp2
expit = _C.sigmoid
expm1 = _C.expm1
log1p = _C.log1p
log_softmax = _C.log_softmax
logit = _C.logit
logsumexp = _C.logsumexp
round = _C.round  # noqa: A001 - torch.special's name
sinc = _C.sinc
softmax = _C.softmax
xlogy = _C.xlogy
# The orthogonal polynomials P_n(x), f(input, n): table ops (kernels/special_math.h), n truncated
# to an integer as torch's; no gradient, as in torch.
chebyshev_polynomial_t = _C._special_chebyshev_polynomial_t
chebyshev_polynomial_u = _C._special_chebyshev_polynomial_u
chebyshev_polynomial_v = _C._special_chebyshev_polynomial_v
chebyshev_polynomial_w = _C._special_chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = _C._special_shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = _C._special_shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = _C._special_shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = _C._special_shifted_chebyshev_polynomial_w
hermite_polynomial_h = _C._special_hermite_polynomial_h
hermite_polynomial_he = _C._special_hermite_polynomial_he
laguerre_polynomial_l = _C._special_laguerre_polynomial_l
legendre_polynomial_p = _C._special_legendre_polynomial_p
# Bessel functions of the first and second kind, K0/K1 and their scaled forms e^x K(x), and
# Airy Ai: table ops (kernels/special_math.h) with torch's edge values (NaN at +-inf for J, Y and
# Ai; NaN below 0 and -inf/inf at 0 for Y and K); no gradient, as in torch.
bessel_j0 = _C._special_bessel_j0
bessel_j1 = _C._special_bessel_j1
bessel_y0 = _C._special_bessel_y0
bessel_y1 = _C._special_bessel_y1
modified_bessel_k0 = _C._special_modified_bessel_k0
modified_bessel_k1 = _C._special_modified_bessel_k1
scaled_modified_bessel_k0 = _C._special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _C._special_scaled_modified_bessel_k1
airy_ai = _C._special_airy_ai


def spherical_bessel_j0(input, *, out=None):
    """sin(x) / x, 1 at 0 (torch.special.spherical_bessel_j0)."""
    zero = input == 0
    x = _C.where(zero, 1.0, input)
    r = _C.where(zero, 1.0, x.sin() / x)
    if out is None:
        return r
    return out.copy_(r)

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
    "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln",
    "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
    "modified_bessel_i0", "modified_bessel_i1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]  # fmt: skip
