"""ember.special: the names of ``torch.special`` for the functions the core has.

Each name is the core's own function under torch.special's name (``expit`` is ``ember.sigmoid``,
``logit`` is ``ember.logit``, ...), so arguments, ``out=``, dtype promotion and autograd are
those of the core op. torch.special's Bessel, gamma-family, zeta and orthogonal-polynomial
functions (``i0``, ``gammaln``, ``digamma``, ``zeta``, ``ndtri``, ...) are not in the core yet.

>>> import ember
>>> ember.special.expit(ember.tensor([0.0]))
tensor([0.5000])
>>> ember.special.xlogy(ember.tensor([0.0, 2.0]), ember.tensor([0.0, 1.0]))
tensor([0., 0.])
"""

from __future__ import annotations

from ember import _C

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

__all__ = [
    "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "log1p", "log_softmax", "logit",
    "logsumexp", "round", "sinc", "softmax", "xlogy",
]  # fmt: skip
