"""torch.nn.utils.parametrizations: ``orthogonal``, ``spectral_norm`` and ``weight_norm`` as
parametrizations (see ``parametrize``)."""

from __future__ import annotations

from enum import Enum, auto

import ember
from ember import Tensor

from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_EPS = {ember.float64: 2.0 ** -52, ember.float32: 2.0 ** -23, ember.float16: 2.0 ** -10,
        ember.bfloat16: 2.0 ** -7}


def _eye_like(n, like):
    return ember.eye(n, dtype=like.dtype, device=like.device)


def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    eps = 10.0 * n * _EPS[Q.dtype]
    return bool(((Q.transpose(-2, -1) @ Q) - _eye_like(k, Q)).abs().max() <= eps)


def _make_orthogonal(A):
    """The Q of A's QR decomposition with R's diagonal made positive (torch's geqrf +
    householder_product + sign fix)."""
    Q, R = ember.linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _householder_product(A, tau):
    """``H_1 ... H_k`` (first k columns), ``H_i = I - tau_i v_i v_i^T`` with ``v_i`` = 1 at
    row i and ``A[i+1:, i]`` below (torch.linalg.householder_product), differentiable."""
    n, k = A.size(-2), A.size(-1)
    rows = ember.arange(n, device=A.device).unsqueeze(-1)
    Q = _eye_like(n, A).expand(*A.shape[:-2], n, n)
    for i in range(k):
        below = (rows > i).to(A.dtype).squeeze(-1)
        v = A[..., :, i] * below + (rows.squeeze(-1) == i).to(A.dtype)
        v = v.unsqueeze(-1)
        Q = Q - (Q @ v) @ v.transpose(-2, -1) * tau[..., i].unsqueeze(-1).unsqueeze(-1)
    return Q[..., :k]


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                pad = ember.zeros(n, n - k, dtype=X.dtype, device=X.device)
                X = ember.cat([X, pad.expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.transpose(-2, -1)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = ember.linalg.matrix_exp(A)
            else:
                Id = _eye_like(n, A)
                Q = ember.linalg.solve(Id - A * 0.5, Id + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.transpose(-2, -1)
        return Q

    def right_inverse(self, Q):
        with ember.no_grad():
            if tuple(Q.shape) != tuple(self.shape):
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            if n < k:
                Q = Q.transpose(-2, -1)
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                raise NotImplementedError(
                    "orthogonal: assigning to the householder map with "
                    "use_trivialization=False needs torch.geqrf, which ember lacks")
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = ember.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype,
                                device=Q.device)
                Q = _make_orthogonal(ember.cat([Q, N], dim=-1))
            self.base = Q
            neg_Id = ember.zeros_like(Q_init)
            m = min(neg_Id.size(-2), neg_Id.size(-1))
            neg_Id[..., range(m), range(m)] = -1.0
            return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` to orthogonal (semi-orthogonal) matrices:
    ``matrix_exp`` (default for square), ``cayley`` or ``householder`` (default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


def _norm_except_dim(v, dim):
    """torch.norm_except_dim(v, 2, dim): the 2-norm over every dim but ``dim`` (kept with
    size 1); ``dim == -1`` is torch's code for the norm of the whole tensor."""
    if dim == -1:
        return ember.linalg.vector_norm(v)
    dims = [d for d in range(v.dim()) if d != dim]
    return ember.linalg.vector_norm(v, 2, dim=dims, keepdim=True)


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """``module.<name> = g * v / ||v||`` with ``original0`` = g (the norms over every dim
    but ``dim``) and ``original1`` = v. Old ``<name>_g`` / ``<name>_v`` checkpoints load."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = ember.empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            v = ember.empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with ember.no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.t() @ self._u, dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (weight_mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """``module.<name>`` divided by its largest singular value, estimated by power iteration
    (one step per training forward; buffers ``_u`` and ``_v``)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
