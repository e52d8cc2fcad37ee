"""Transforms: differentiable maps y = t(x) with their inverse and log |det dy/dx|, used by
``TransformedDistribution`` and ``biject_to`` / ``transform_to``.

A transform has a ``domain`` and ``codomain`` (constraints; their ``event_dim`` says how many
rightmost dimensions one application couples), ``bijective``, ``sign`` (of the derivative, for
monotone scalar maps), ``inv`` (the inverse, a transform itself) and
``log_abs_det_jacobian(x, y)``, reduced over the domain's event dimensions. With
``cache_size=1`` a transform remembers its last (x, y) pair, so that ``t.inv(t(x))`` returns
``x`` itself (and its gradient graph) rather than a recomputed value.
"""

from __future__ import annotations

import math
import numbers
import weakref

import ember
from ember import Tensor
from ember.distributions import constraints
from ember.distributions.utils import softplus, sum_rightmost

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform", "StackTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
    "SoftplusTransform", "StickBreakingTransform", "TanhTransform", "Transform",
    "identity_transform",
]


class Transform:
    """Base class. A subclass defines ``_call(x)``, ``_inverse(y)`` and, where the map is
    bijective, ``log_abs_det_jacobian(x, y)``; plus ``domain``, ``codomain``, ``bijective``."""

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size: int = 0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = (None, None)
        self._inv = None

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        cached_x, cached_y = self._cached_x_y
        if x is cached_x:
            return cached_y
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        cached_x, cached_y = self._cached_x_y
        if y is cached_y:
            return cached_x
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform: calls its ``_inv_call``, negates its log-determinant."""

    def __init__(self, transform: Transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def inv(self):
        return self._inv

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    def with_cache(self, cache_size=1):
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def __repr__(self):
        return f"_InverseTransform({self._inv!r})"


class ComposeTransform(Transform):
    """``parts`` applied in order (the first to the input)."""

    def __init__(self, parts, cache_size: int = 0):
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        # the event dimensions one input element needs so that every part sees whole events
        dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            dim = max(dim + part.domain.event_dim - part.codomain.event_dim,
                      part.domain.event_dim)
        first = self.parts[0].domain
        return _with_event_dim(first, dim)

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        dim = self.parts[0].domain.event_dim
        for part in self.parts:
            dim = max(dim + part.codomain.event_dim - part.domain.event_dim,
                      part.codomain.event_dim)
        return _with_event_dim(self.parts[-1].codomain, dim)

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ember.zeros_like(x)
        event_dim = self.domain.event_dim
        total = 0
        for part in self.parts[:-1]:
            x_next = part(x)
            total = total + sum_rightmost(part.log_abs_det_jacobian(x, x_next),
                                          event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
            x = x_next
        last = self.parts[-1]
        return total + sum_rightmost(last.log_abs_det_jacobian(x, y),
                                     event_dim - last.domain.event_dim)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


def _with_event_dim(constraint, event_dim: int):
    extra = event_dim - constraint.event_dim
    return constraints.independent(constraint, extra) if extra > 0 else constraint


class IndependentTransform(Transform):
    """``base_transform`` with its ``reinterpreted_batch_ndims`` rightmost batch dimensions
    treated as event dimensions (its log-determinant summed over them)."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return (f"{type(self).__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dimensions to ``out_shape`` (same number of
    elements); the log-determinant is 0."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0):
        self.in_shape = ember.Size(list(in_shape))
        self.out_shape = ember.Size(list(out_shape))
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return ember.zeros(batch, dtype=x.dtype, device=x.device)

    def _swap(self, shape, have, want, what):
        if len(shape) < len(have) or tuple(shape[len(shape) - len(have):]) != tuple(have):
            raise ValueError(f"Shape mismatch: expected {what} {have} but got {shape}")
        return ember.Size(list(shape[:len(shape) - len(have)]) + list(want))

    def forward_shape(self, shape):
        return self._swap(shape, self.in_shape, self.out_shape, "input shape ending in")

    def inverse_shape(self, shape):
        return self._swap(shape, self.out_shape, self.in_shape, "output shape ending in")


class ExpTransform(Transform):
    """y = exp(x)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = _as_tensors(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return ember.broadcast_shapes(tuple(shape), tuple(self.exponent.shape))

    def inverse_shape(self, shape):
        return ember.broadcast_shapes(tuple(shape), tuple(self.exponent.shape))


def _as_tensors(*values):
    return [v if isinstance(v, Tensor) else ember.tensor(v) for v in values]


class SigmoidTransform(Transform):
    """y = 1 / (1 + exp(-x)), kept inside (0, 1) in floating point."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        info = ember.finfo(x.dtype)
        return ember.sigmoid(x).clamp(min=info.tiny, max=1.0 - info.eps)

    def _inverse(self, y):
        info = ember.finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - ember.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        # log(sigmoid(x) * sigmoid(-x))
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """y = tanh(x)."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return ember.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) written without cancellation
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class SoftplusTransform(Transform):
    """y = log(1 + exp(x))."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return softplus(x)

    def _inverse(self, y):
        return y + ember.log(-ember.expm1(-y))

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x)


class AbsTransform(Transform):
    """y = |x| (not injective: the inverse returns the non-negative preimage)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale * x, over ``event_dim`` rightmost dimensions taken together."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for mine, theirs in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(mine, numbers.Number) and isinstance(theirs, numbers.Number):
                if mine != theirs:
                    return False
            elif not bool((ember.as_tensor(mine) == ember.as_tensor(theirs)).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, numbers.Real):
            per_element = ember.full_like(x, math.log(abs(self.scale)))
        else:
            per_element = self.scale.abs().log()
        if self._event_dim:
            per_element = sum_rightmost(per_element, self._event_dim)
            shape = tuple(x.shape[:x.dim() - self._event_dim])
        else:
            shape = tuple(x.shape)
        return per_element.expand(shape)

    def forward_shape(self, shape):
        return ember.broadcast_shapes(tuple(shape), tuple(getattr(self.loc, "shape", ())),
                                      tuple(getattr(self.scale, "shape", ())))

    inverse_shape = forward_shape


class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex by exp and normalization (not injective: the inverse
    is the log)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        shifted = (x - x.max(-1, keepdim=True)[0]).exp()
        return shifted / shifted.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()


class StickBreakingTransform(Transform):
    """R^(K-1) to the K-simplex, bijectively: the i-th coordinate takes the fraction
    sigmoid(x_i - log(K-1-i)) of what the earlier ones left, the last takes the remainder.
    The offset makes x = 0 map to the simplex's centre."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    @staticmethod
    def _log_offsets(k_minus_1: int, like: Tensor) -> Tensor:
        # log(K-1), log(K-2), ..., log(1)
        return ember.arange(k_minus_1, 0, -1, dtype=like.dtype, device=like.device).log()

    def _call(self, x):
        fractions = ember.sigmoid(x - self._log_offsets(x.shape[-1], x))
        left = ember.cumprod(1 - fractions, dim=-1)
        ones = ember.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)
        return ember.cat([fractions, ones], -1) * ember.cat([ones, left], -1)

    def _inverse(self, y):
        head = y[..., :-1]
        left = (1 - head.cumsum(-1)).clamp(min=ember.finfo(y.dtype).tiny)
        # fraction_i = y_i / (what was left before i) = y_i / (y_i + left_i)
        return head.log() - left.log() + self._log_offsets(head.shape[-1], y)

    def log_abs_det_jacobian(self, x, y):
        shifted = x - self._log_offsets(x.shape[-1], x)
        # dy_i/dx_i = y_i * (1 - fraction_i); the Jacobian is triangular
        return (-shifted - softplus(-shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return ember.Size(list(shape[:-1]) + [shape[-1] + 1])

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return ember.Size(list(shape[:-1]) + [shape[-1] - 1])


class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular ones with a positive diagonal: keeps the strict lower
    triangle and exponentiates the diagonal."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive-definite ones: L L^T of the LowerCholeskyTransform of x."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        L = LowerCholeskyTransform()(x)
        return L @ L.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


def _strict_lower_positions(n: int) -> list[int]:
    """Flat positions i * n + j of the strict lower triangle of an n x n matrix, row by row."""
    return [i * n + j for i in range(n) for j in range(i)]


def _vector_to_strict_lower(vec: Tensor, n: int) -> Tensor:
    """(..., n(n-1)/2) -> (..., n, n) with the entries below the diagonal row by row, zeros
    elsewhere; a gather, so differentiable."""
    source = [0] * (n * n)
    for k, pos in enumerate(_strict_lower_positions(n)):
        source[pos] = k + 1  # 0 picks the zero prepended below
    padded = ember.cat([ember.zeros(tuple(vec.shape[:-1]) + (1,), dtype=vec.dtype,
                                    device=vec.device), vec], -1)
    index = ember.tensor(source, device=vec.device)
    return padded[..., index].reshape(tuple(vec.shape[:-1]) + (n, n))


def _strict_lower_to_vector(mat: Tensor, offset: int = -1) -> Tensor:
    """The entries of ``mat`` with j <= i + offset (offset <= -1), row by row."""
    n = mat.shape[-1]
    positions = [i * n + j for i in range(n) for j in range(n) if j <= i + offset]
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat[..., ember.tensor(positions, device=mat.device)]


class CorrCholeskyTransform(Transform):
    """Unconstrained vectors of length n(n-1)/2 to Cholesky factors of n x n correlation
    matrices: tanh gives partial correlations z in (-1, 1), placed below the diagonal row by row;
    each row is then built by stick-breaking, y_ij = z_ij sqrt(1 - sum_{k<j} y_ik^2), with the
    diagonal taking what is left, so every row has unit norm."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other):
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    @staticmethod
    def _size(m: int) -> int:
        n = round((0.25 + 2 * m) ** 0.5 + 0.5)
        if n * (n - 1) // 2 != m:
            raise ValueError("The size of last dimension is not a triangular number: "
                             f"{m} is not n(n-1)/2 for an integer n")
        return n

    def _call(self, x):
        n = self._size(x.shape[-1])
        z = _vector_to_strict_lower(ember.tanh(x), n)
        eye = ember.eye(n, dtype=x.dtype, device=x.device)
        # what each row has left after its first j entries: prod_{k<j} sqrt(1 - z_ik^2)
        left = (1 - z * z).sqrt().cumprod(-1)
        ones = ember.ones(tuple(left.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)
        left_before = ember.cat([ones, left[..., :-1]], -1)
        return (z + eye) * left_before

    def _inverse(self, y):
        left_before = 1 - (y * y).cumsum(-1)
        ones = ember.ones(tuple(y.shape[:-1]) + (1,), dtype=y.dtype, device=y.device)
        left_before = ember.cat([ones, left_before[..., :-1]], -1)
        z = _strict_lower_to_vector(y) / _strict_lower_to_vector(left_before).sqrt()
        eps = ember.finfo(y.dtype).eps
        return ember.atanh(z.clamp(min=-1 + eps, max=1 - eps))

    def log_abs_det_jacobian(self, x, y):
        # dy_ij / dz_ij = sqrt(1 - sum_{k<j} y_ik^2) (the Jacobian is triangular), and
        # dz/dx = 1 - tanh(x)^2
        left_after = 1 - (y * y).cumsum(-1)
        stick = 0.5 * _strict_lower_to_vector(left_after, offset=-2).log().sum(-1)
        tanh_part = (2.0 * (math.log(2.0) - x - softplus(-2.0 * x))).sum(-1)
        return stick + tanh_part

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = self._size(shape[-1])
        return ember.Size(list(shape[:-1]) + [n, n])

    def inverse_shape(self, shape):
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ValueError("A matrix shape expected")
        n = shape[-1]
        return ember.Size(list(shape[:-2]) + [n * (n - 1) // 2])


class CatTransform(Transform):
    """``tseq[i]`` applied to the i-th consecutive slice along ``dim`` (of ``lengths[i]``
    elements; 1 each by default), the results concatenated."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) if cache_size else t for t in tseq]
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: lengths must have one entry per transform")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _check(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise ValueError(f"CatTransform: dim {self.dim} out of range for a "
                             f"{value.dim()}-dimensional input")
        if value.shape[self.dim] != self.length:
            raise ValueError(f"CatTransform: dimension {self.dim} has size "
                             f"{value.shape[self.dim]}, the lengths add up to {self.length}")

    def _pieces(self, value):
        start = 0
        for t, length in zip(self.transforms, self.lengths):
            yield t, value.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        self._check(x)
        return ember.cat([t(piece) for t, piece in self._pieces(x)], self.dim)

    def _inverse(self, y):
        self._check(y)
        return ember.cat([t.inv(piece) for t, piece in self._pieces(y)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x)
        terms = []
        for (t, xs), (_, ys) in zip(self._pieces(x), self._pieces(y)):
            terms.append(sum_rightmost(t.log_abs_det_jacobian(xs, ys),
                                       self.event_dim - t.event_dim))
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        if dim + self.event_dim < 0:  # a batch dimension: the pieces' terms side by side
            return ember.cat(terms, dim + self.event_dim)
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total


class StackTransform(Transform):
    """``tseq[i]`` applied to index i along ``dim``, the results stacked there."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) if cache_size else t for t in tseq]
        self.dim = dim

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _check(self, value):
        if value.shape[self.dim] != len(self.transforms):
            raise ValueError(f"StackTransform: dimension {self.dim} has size "
                             f"{value.shape[self.dim]}, expected {len(self.transforms)}")

    def _call(self, x):
        self._check(x)
        return ember.stack([t(x.select(self.dim, i)) for i, t in enumerate(self.transforms)],
                           self.dim)

    def _inverse(self, y):
        self._check(y)
        return ember.stack([t.inv(y.select(self.dim, i))
                            for i, t in enumerate(self.transforms)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x)
        return ember.stack([t.log_abs_det_jacobian(x.select(self.dim, i), y.select(self.dim, i))
                            for i, t in enumerate(self.transforms)], self.dim)


class CumulativeDistributionTransform(Transform):
    """x to ``distribution.cdf(x)``: onto the unit interval, with the density as the
    Jacobian."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)
