"""ember.linalg: linear algebra with torch.linalg's API, batched over leading dimensions.

The factorizations (inv, det, slogdet, solve, cholesky, qr, svd, eigh, lstsq) are C++ primitives
over LAPACK from the OpenBLAS that ember already loads for matrix products (``_C._linalg_*``);
everything here composes them with core ops (so it is differentiable through its parts): vector
right-hand sides, batch broadcasting, ``left=False``, norms, pinv, matrix_rank, matrix_power,
multi_dot, cross, vecdot. float32 and float64 are supported; integer inputs raise like PyTorch.
CUDA tensors work throughout, results on the input's device: the primitives run the CPU kernel on
host copies there (ember/cuda/_linalg_ops.py), so each call synchronises.

>>> import ember
>>> A = ember.tensor([[4.0, 1.0], [1.0, 3.0]])
>>> ember.linalg.solve(A, ember.tensor([1.0, 2.0]))
tensor([0.0909, 0.6364])
>>> ember.linalg.det(A)
tensor(11.)
"""

from __future__ import annotations

import builtins
import collections
import functools
import math
import warnings

from ember import _C
from ember._checks import _is_int_arg, tensor_args
from ember._shape import _broadcast_with_core_message

__all__ = [
    "LinAlgError", "norm", "vector_norm", "matrix_norm", "inv", "inv_ex", "det", "slogdet",
    "solve", "solve_ex", "solve_triangular", "lstsq", "cholesky", "cholesky_ex", "qr", "svd",
    "svdvals", "eig", "eigvals", "eigh", "eigvalsh", "pinv", "matrix_rank", "matrix_power",
    "multi_dot", "cross", "vecdot", "matmul", "diagonal", "lu_factor", "lu_factor_ex", "lu",
    "lu_solve", "cond",
    "tensorinv", "tensorsolve", "vander", "matrix_exp", "householder_product", "ldl_factor",
    "ldl_factor_ex", "ldl_solve",
]

LinAlgError = _C._LinAlgError
LinAlgError.__name__ = LinAlgError.__qualname__ = "LinAlgError"
LinAlgError.__module__ = "ember.linalg"


def _result_type(name, fields):
    return collections.namedtuple(name, fields, module="ember.return_types")


def _tuple_out(result_type):
    """Decorator: out= of an op that returns `result_type` must be a tuple of as many Tensors,
    refused with torch's argument-parser TypeError before anything is computed."""
    name, n = result_type.__name__, len(result_type._fields)

    def decorate(fn):
        @functools.wraps(fn)
        def checked(*args, **kwargs):
            out = kwargs.get("out")
            if out is not None:
                if not isinstance(out, (tuple, list)):
                    raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, "
                                    f"not {type(out).__name__}")
                if len(out) != n:
                    raise TypeError(f"expected tuple of {n} elements but got {len(out)}")
                for i, o in enumerate(out):
                    if not isinstance(o, _C.Tensor):
                        raise TypeError(f"expected Tensor as element {i} in argument 'out', "
                                        f"but got {type(o).__name__}")
            return fn(*args, **kwargs)

        return checked

    return decorate


_InvEx = _result_type("linalg_inv_ex", ("inverse", "info"))
_SolveEx = _result_type("linalg_solve_ex", ("result", "info"))
_CholeskyEx = _result_type("linalg_cholesky_ex", ("L", "info"))
_Slogdet = _result_type("linalg_slogdet", ("sign", "logabsdet"))
_QR = _result_type("linalg_qr", ("Q", "R"))
_SVD = _result_type("linalg_svd", ("U", "S", "Vh"))
_Eigh = _result_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
_Eig = _result_type("linalg_eig", ("eigenvalues", "eigenvectors"))
_Lstsq = _result_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
_LUFactor = _result_type("linalg_lu_factor", ("LU", "pivots"))
_LUFactorEx = _result_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_LU = _result_type("linalg_lu", ("P", "L", "U"))
_LegacySVD = _result_type("svd", ("U", "S", "V"))
_LegacyQR = _result_type("qr", ("Q", "R"))

_EPS = {"float32": 2.0 ** -23, "float64": 2.0 ** -52}


def _check_matrix(A, op: str, arg: str = "A") -> None:
    if not isinstance(A, _C.Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor {arg} must have at least 2 dimensions.")


# Ops whose float16/bfloat16 refusal is torch's NotImplementedError naming its kernel (the
# LAPACK primitives' entries are in csrc/ops/linalg_lapack.cpp); the others raise RuntimeError.
_LOW_PRECISION_KERNEL = {"linalg.svd": "linalg_svd_cpu"}


def _check_float(A, op: str, low_precision: bool = False) -> None:
    """A is a float or complex (or, with `low_precision`, also a float16/bfloat16) tensor, as
    torch's op."""
    if A.dtype.name in ("float16", "bfloat16") and not low_precision:
        if op in _LOW_PRECISION_KERNEL:
            raise NotImplementedError(
                f'"{_LOW_PRECISION_KERNEL[op]}" not implemented for \'{A.dtype._torch_name}\'')
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {A.dtype._torch_name}")
    if not A.dtype.is_floating_point and not A.dtype.is_complex:
        raise RuntimeError(
            f"{op}: Expected a floating point or complex tensor as input. "
            f"Got {A.dtype._torch_name}")


def _check_square(A, op: str) -> None:
    _check_matrix(A, op)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _out(op, result, out):
    if out is None:
        return result
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{op}(): argument 'out' must be tuple of {len(result)} Tensors")
        return type(result)(*(_C._linalg_write_out(op, r, o) for r, o in zip(result, out)))
    return _C._linalg_write_out(op, result, out)


def _expand_batch(t, batch: tuple):
    shape = tuple(batch) + tuple(t.shape[-2:])
    return t if tuple(t.shape) == shape else t.expand(shape)


def _movedim(t, src: int, dst: int):
    nd = t.dim()
    src, dst = src % nd, dst % nd
    order = [d for d in range(nd) if d != src]
    order.insert(dst, src)
    return t if order == list(range(nd)) else t.permute(order)


def _normalize_dim(d: int, nd: int) -> int:
    if not -nd <= d < max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, "
                         f"{max(nd, 1) - 1}], but got {d})")
    return d % nd if nd else 0


# ---- norms ----

def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The vector ord-norm of x over dim (all elements when None): ord is any real, inf or -inf."""
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' must be Number, not str")
    return _C.norm(x, ord, dim, keepdim, dtype=dtype, out=out)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norms: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2 over the two dims `dim`."""
    op = "linalg.matrix_norm"
    _check_matrix(A, op)
    _check_float(A, op, low_precision=True)  # 'nuc' and +-2 go through svdvals, which refuses
    if isinstance(dim, int) or len(dim) != 2:
        got = dim if isinstance(dim, int) else " ".join(str(d) for d in dim)
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {got}")
    nd = A.dim()
    d0, d1 = (_normalize_dim(int(d), nd) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    if dtype is not None:
        A = A.to(dtype)
    if isinstance(ord, str):
        if ord == "fro":
            return vector_norm(A, 2, (d0, d1), keepdim, out=out)
        if ord != "nuc":
            raise RuntimeError(f"{op}: Order {ord} not supported.")
    elif ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    if (ord == "nuc" or ord in (2, -2)) and A.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {A.dtype._torch_name}")
    kept = list(A.shape)
    kept[d0] = kept[d1] = 1
    final = kept if keepdim else [s for i, s in enumerate(A.shape) if i not in (d0, d1)]
    if A.numel() == 0:
        from ember import zeros

        return _out(op, zeros(final, dtype=A.dtype.to_real(), device=A.device), out)
    if ord == "nuc" or ord in (2, -2):
        s = svdvals(_to_last_two(A, d0, d1))
        if ord == "nuc":
            r = s.sum(-1)
        else:
            r = s.amax(-1) if ord == 2 else s.amin(-1)
    else:
        # 1-norm: the largest column sum (sum over d0); inf-norm: the largest row sum (over d1).
        summed, other = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = A.abs().sum(summed, keepdim=True)
        r = sums.amax(other, keepdim=True) if ord > 0 else sums.amin(other, keepdim=True)
    return _out(op, r.reshape(final), out)


def _to_last_two(A, d0: int, d1: int):
    """A with dims d0, d1 moved to the end (in that order)."""
    order = [d for d in range(A.dim()) if d not in (d0, d1)] + [d0, d1]
    return A if order == list(range(A.dim())) else A.permute(order)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """torch.linalg.norm: a vector norm for 1 dim (or a 1-D input), a matrix norm for 2."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype, out=out)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype,
                               out=out)
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                           f"Got {list(dims)}")
    if ord is not None:
        if A.dim() == 1:
            return vector_norm(A, ord, None, keepdim, dtype=dtype, out=out)
        if A.dim() == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.dim()}D.")
    return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)


# ---- inverses, determinants, solvers ----

@tensor_args("A", op="linalg.inv_ex")
@_tuple_out(_InvEx)
def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info): info[b] > 0 when batch element b is singular (no error unless asked)."""
    return _out("linalg.inv_ex", _InvEx(*_C._linalg_inv_ex(A, check_errors=check_errors)), out)


@tensor_args("A", op="linalg.inv")
def inv(A, *, out=None):
    """The inverse of each square matrix of A; LinAlgError when one is singular."""
    return _out("linalg.inv", _C._linalg_inv_ex(A, check_errors=True)[0], out)


@tensor_args("A", op="linalg.det")
def det(A, *, out=None):
    return _out("linalg.det", _C._linalg_det(A), out)


@tensor_args("A", op="linalg.slogdet")
@_tuple_out(_Slogdet)
def slogdet(A, *, out=None):
    """(sign, logabsdet) of each determinant; sign is 0 and logabsdet -inf for singular A."""
    return _out("linalg.slogdet", _Slogdet(*_C._linalg_slogdet(A)), out)


def _solve(A, B, left, check_errors, op="linalg.solve"):
    _check_matrix(A, op)
    if not isinstance(B, _C.Tensor):
        raise TypeError(f"{op}(): argument 'B' must be Tensor, not {type(B).__name__}")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        if B.dim() < 2:
            raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
        X, info = _solve(A.mT, B.mT, True, check_errors, op)
        return X.mT, info
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    B2 = B.unsqueeze(-1) if vector else B
    _check_square(A, op)
    if B2.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 1 dimensions.")
    if A.dtype != B.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype._torch_name} and B of type {B.dtype._torch_name} instead")
    n = A.shape[-1]
    if B2.shape[-2] != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation AX = B "
                           f"({n}x{n} and {B2.shape[-2]}x{B2.shape[-1]})")
    batch = _broadcast_with_core_message(tuple(B2.shape[:-2]), tuple(A.shape[:-2]))
    X, info = _C._linalg_solve_ex(_expand_batch(A, batch), _expand_batch(B2, batch),
                                  check_errors=check_errors)
    return (X.squeeze(-1) if vector else X), info


def solve(A, B, *, left=True, out=None):
    """X with A X = B (X A = B with left=False); B a matrix or vector batch, broadcast with A."""
    return _out("linalg.solve", _solve(A, B, left, True)[0], out)


@_tuple_out(_SolveEx)
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    return _out("linalg.solve_ex", _SolveEx(*_solve(A, B, left, check_errors)), out)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (X A = B with left=False) for triangular A: only its `upper` (or lower)
    triangle is read, its diagonal taken as ones with unitriangular. Batches broadcast."""
    op = "linalg.solve_triangular"
    _check_matrix(A, op)
    _check_matrix(B, op, "B")
    if not left:  # X A = B  <=>  A^T X^T = B^T, and A^T is triangular the other way
        X = solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular)
        return _out(op, X.mT, out)
    batch = _broadcast_with_core_message(tuple(B.shape[:-2]), tuple(A.shape[:-2]))
    X = _C._linalg_solve_triangular(_expand_batch(A, batch), _expand_batch(B, batch),
                                    upper=upper, unitriangular=unitriangular)
    return _out(op, X, out)


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of A X = B: (solution, residuals, rank, singular_values).

    driver: 'gelsy' (default), 'gelsd', 'gelss' (the SVD ones also return singular values), or
    'gels' (A must have full rank). residuals are returned when m > n and A has full rank.
    """
    op = "linalg.lstsq"
    if A.dim() < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if B.dim() < 1:
        raise RuntimeError(f"{op}: other must have at least 1 dimension.")
    vector = B.dim() == A.dim() - 1
    B2 = B.unsqueeze(-1) if vector else B
    if A.dtype != B.dtype:
        raise RuntimeError(f"{op}: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype._torch_name} and other's dtype "
                           f"{B.dtype._torch_name}")
    if B2.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"{op}: input.size(-2) should match other.size(-2)")
    batch = _broadcast_with_core_message(tuple(A.shape[:-2]), tuple(B2.shape[:-2]))
    x, res, rank, sv = _C._linalg_lstsq(_expand_batch(A, batch), _expand_batch(B2, batch),
                                        rcond=None if rcond is None else builtins.float(rcond),
                                        driver="gelsy" if driver is None else driver)
    return _Lstsq(x.squeeze(-1) if vector else x, res, rank, sv)


# ---- factorizations ----

@tensor_args("A", op="linalg.lu_factor")
@_tuple_out(_LUFactor)
def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots): the compact LU factorization with partial pivoting (LAPACK getrf); raises
    when a U[i,i] is zero. pivots are 1-based row swaps, int32."""
    r = _C._linalg_lu_factor_ex(A, pivot=pivot, check_errors=True)
    return _out("linalg.lu_factor", _LUFactor(r[0], r[1]), out)


@tensor_args("A", op="linalg.lu_factor_ex")
@_tuple_out(_LUFactorEx)
def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    return _out("linalg.lu_factor_ex",
                _LUFactorEx(*_C._linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors)),
                out)


@tensor_args("A", op="linalg.lu")
@_tuple_out(_LU)
def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U."""
    return _out("linalg.lu", _LU(*_C._linalg_lu(A, pivot=pivot)), out)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (X A = B with left=False; A^T in place of A with adjoint) from lu_factor."""
    op = "linalg.lu_solve"
    _check_matrix(LU, op, "LU")
    _check_matrix(B, op, "B")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return _out(op, lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT, out)
    batch = _broadcast_with_core_message(tuple(B.shape[:-2]), tuple(LU.shape[:-2]))
    piv = pivots if tuple(pivots.shape[:-1]) == batch else \
        pivots.expand(batch + (pivots.shape[-1],))
    X = _C._linalg_lu_solve(_expand_batch(LU, batch), piv, _expand_batch(B, batch),
                            adjoint=adjoint)
    return _out(op, X, out)


_LDLFactor = _result_type("linalg_ldl_factor", ("LD", "pivots"))
_LDLFactorEx = _result_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))


@tensor_args("A", op="linalg.ldl_factor_ex")
@_tuple_out(_LDLFactorEx)
def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info) with A = L D L^T for a symmetric A (its lower triangle is read):
    LAPACK's Bunch-Kaufman factorization (sytrf), D block diagonal with 1 x 1 and 2 x 2 blocks
    (negative pivots mark the latter). For complex A, hermitian=True gives A = L D L^H (hetrf);
    the default treats A as complex symmetric; the two are the same for real tensors."""
    r = _C._linalg_ldl_factor_ex(A, hermitian=hermitian, check_errors=check_errors)
    return _out("linalg.ldl_factor_ex", _LDLFactorEx(*r), out)


@tensor_args("A", op="linalg.ldl_factor")
@_tuple_out(_LDLFactor)
def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots) as ldl_factor_ex; LinAlgError when D is singular."""
    r = _C._linalg_ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return _out("linalg.ldl_factor", _LDLFactor(r[0], r[1]), out)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from ldl_factor's (LD, pivots); batch dims broadcast."""
    op = "linalg.ldl_solve"
    _check_matrix(LD, op, "LD")
    _check_matrix(B, op, "B")
    batch = _broadcast_with_core_message(tuple(B.shape[:-2]), tuple(LD.shape[:-2]))
    piv = pivots if tuple(pivots.shape[:-1]) == batch else \
        pivots.expand(batch + (pivots.shape[-1],))
    X = _C._linalg_ldl_solve(_expand_batch(LD, batch), piv, _expand_batch(B, batch),
                             hermitian=hermitian)
    return _out(op, X, out)


_Geqrf = _result_type("geqrf", ("a", "tau"))


@tensor_args("A", op="geqrf")
@_tuple_out(_Geqrf)
def _geqrf(A, *, out=None):
    """(a, tau): LAPACK's packed QR (torch.geqrf): R in a's upper triangle, the Householder
    vectors below it; linalg.householder_product(a, tau) gives Q. No gradient (as torch)."""
    return _out("geqrf", _Geqrf(*_C._geqrf(A)), out)


@tensor_args("input", "tau", "other", op="ormqr")
def _ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """Q other (left) or other Q, Q (or Q^T with transpose) the product of geqrf's Householder
    reflectors (torch.ormqr), without forming Q."""
    return _out("ormqr", _C._ormqr(input, tau, other, left=left, transpose=transpose), out)


@tensor_args("A", "tau", op="linalg.householder_product")
def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i the i-th column of
    A below the diagonal (a unit first entry): Q of geqrf's (a, tau). Differentiable in A and
    tau (real and complex)."""
    return _out("linalg.householder_product", _C._householder_product(A, tau), out)


@tensor_args("A", op="linalg.cholesky_ex")
@_tuple_out(_CholeskyEx)
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    return _out("linalg.cholesky_ex",
                _CholeskyEx(*_C._linalg_cholesky_ex(A, upper=upper, check_errors=check_errors)),
                out)


@tensor_args("A", op="linalg.cholesky")
def cholesky(A, *, upper=False, out=None):
    """L with A = L L^T (from A's lower triangle), or U with A = U^T U when upper=True."""
    return _out("linalg.cholesky",
                _C._linalg_cholesky_ex(A, upper=upper, check_errors=True)[0], out)


@tensor_args("A", op="linalg.qr")
@_tuple_out(_QR)
def qr(A, mode="reduced", *, out=None):
    """A = Q R; mode 'reduced' (k = min(m, n) columns of Q), 'complete' (square Q) or 'r'."""
    return _out("linalg.qr", _QR(*_C._linalg_qr(A, mode=mode)), out)


def _check_svd_driver(A, driver) -> None:
    """torch takes `driver` (cuSOLVER's gesvd, gesvdj or gesvda) on CUDA inputs only. ember's CUDA
    SVD runs LAPACK's gesdd on host copies (cuda/_linalg_ops.py), so no driver can be honoured:
    a valid one is refused rather than ignored."""
    if driver is None:
        return
    if not isinstance(driver, str):
        raise TypeError(f"linalg_svd(): argument 'driver' must be str, not {type(driver).__name__}")
    if A.device.type != "cuda":
        raise RuntimeError("ember.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    if driver not in ("gesvd", "gesvdj", "gesvda"):
        raise RuntimeError(f"ember.linalg.svd: unknown svd driver {driver} in svd_cusolver "
                           "computation. Available drivers are gesvd, gesvdj, and gesvda.")
    raise NotImplementedError(f"linalg.svd(driver={driver!r}): ember's CUDA SVD runs LAPACK's "
                              "gesdd on the host, not cuSOLVER; pass driver=None")


@tensor_args("A", op="linalg.svd")
@_tuple_out(_SVD)
def svd(A, full_matrices=True, *, driver=None, out=None):
    """A = U diag(S) Vh with S descending (LAPACK gesdd; `driver`: see _check_svd_driver)."""
    _check_svd_driver(A, driver)
    return _out("linalg.svd", _SVD(*_C._linalg_svd(A, full_matrices=full_matrices)), out)


@tensor_args("A", op="linalg.svdvals")
def svdvals(A, *, driver=None, out=None):
    _check_svd_driver(A, driver)
    return _out("linalg.svdvals",
                _C._linalg_svd(A, full_matrices=False, compute_uv=False)[1], out)


@tensor_args("A", op="linalg.eigh")
@_tuple_out(_Eigh)
def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric A, from its UPLO triangle."""
    return _out("linalg.eigh", _Eigh(*_C._linalg_eigh(A, UPLO=UPLO)), out)


@tensor_args("A", op="linalg.eig")
@_tuple_out(_Eig)
def eig(A, *, out=None):
    """(eigenvalues, eigenvectors) of general square matrices, complex (LAPACK's geev): A V =
    V diag(L), each eigenvector of unit norm with its largest component real."""
    return _out("linalg.eig", _Eig(*_C._linalg_eig(A)), out)


@tensor_args("A", op="linalg.eigvals")
def eigvals(A, *, out=None):
    """The eigenvalues of general square matrices (complex)."""
    return _out("linalg.eigvals", _C._linalg_eig(A, compute_v=False)[0], out)


@tensor_args("A", op="linalg.eigvalsh")
def eigvalsh(A, UPLO="L", *, out=None):
    return _out("linalg.eigvalsh", _C._linalg_eigh(A, UPLO=UPLO, compute_v=False)[0], out)


# ---- composites ----

def _tolerance(S_max, atol, rtol, A):
    """max(atol, rtol * S_max) with PyTorch's defaults (rtol = eps * max(m, n) without atol)."""
    from ember import where

    default_rtol = _EPS.get(A.dtype.name, 2.0 ** -52) * builtins.max(A.shape[-1], A.shape[-2])
    if rtol is None:
        if atol is None:
            rtol = default_rtol
        elif isinstance(atol, _C.Tensor):
            rtol = where(atol > 0, 0.0, default_rtol)
        else:
            rtol = 0.0 if atol > 0 else default_rtol
    tol = S_max * rtol
    if atol is not None:
        from ember import maximum, tensor

        a = atol if isinstance(atol, _C.Tensor) else tensor(builtins.float(atol),
                                                            dtype=A.dtype.to_real())
        if isinstance(atol, _C.Tensor) and a.dim() > 0:
            a = a.unsqueeze(-1)
        tol = maximum(tol, a)
    return tol


def _check_pinv_input(A, op):
    if not isinstance(A, _C.Tensor) or A.dim() < 2 or \
            not (A.dtype.is_floating_point or A.dtype.is_complex) or \
            A.dtype.name in ("float16", "bfloat16"):
        shape = list(A.shape) if isinstance(A, _C.Tensor) else "?"
        tn = A.dtype._torch_name if isinstance(A, _C.Tensor) else type(A).__name__
        raise RuntimeError(f"{op}({tn}{{{shape}}}): expected a tensor with 2 or more dimensions "
                           f"of float, double, cfloat or cdouble types")


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Moore-Penrose pseudo-inverse through the SVD (eigh with hermitian=True); singular values
    at or below max(atol, rtol * largest) count as zero. `rcond` is the legacy name of rtol."""
    from ember import where, zeros

    _check_pinv_input(A, "linalg.pinv")
    if rcond is not None:
        rtol = rcond
    m, n = A.shape[-2], A.shape[-1]
    if m == 0 or n == 0:
        return _out("linalg.pinv", zeros(tuple(A.shape[:-2]) + (n, m), dtype=A.dtype,
                                         device=A.device), out)
    if hermitian:
        L, Q = _C._linalg_eigh(A, UPLO="L")
        absL = L.abs()
        tol = _tolerance(absL.amax(-1, keepdim=True), atol, rtol, A)
        Linv = where(absL > tol, L.reciprocal(), 0.0)
        r = (Q * Linv.unsqueeze(-2)).matmul(Q.mH)
    else:
        U, S, Vh = _C._linalg_svd(A, full_matrices=False)
        tol = _tolerance(S.amax(-1, keepdim=True), atol, rtol, A)
        Sinv = where(S > tol, S.reciprocal(), 0.0)
        r = (Vh.mH * Sinv.unsqueeze(-2)).matmul(U.mH)  # V S^+ U^H
    return _out("linalg.pinv", r, out)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Number of singular values above max(atol, rtol * largest); `tol` is the legacy atol."""
    from ember import zeros

    op = "linalg.matrix_rank"
    _check_matrix(A, op, "input")
    _check_float(A, "linalg.svd")
    if tol is not None:
        atol, rtol = tol, 0.0
    if A.shape[-1] == 0 or A.shape[-2] == 0:
        return _out(op, zeros(tuple(A.shape[:-2]), dtype=_C.int64, device=A.device), out)
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    tol_ = _tolerance(S.amax(-1, keepdim=True), atol, rtol, A)
    return _out(op, (S > tol_).sum(-1), out)


def matrix_power(A, n, *, out=None):
    """A^n by repeated squaring (n < 0: powers of the inverse; n == 0: the identity)."""
    from ember import contiguous_format, eye

    op = "linalg.matrix_power"
    if not _is_int_arg(n):  # torch's parser, before the op's checks
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    n = builtins.int(n)
    _check_square(A, op)
    if out is not None and not _C.can_cast(A.dtype, out.dtype):
        raise RuntimeError(f"matrix_power: Expected result to be safely castable from "
                           f"{A.dtype._torch_name} dtype, but got result with dtype "
                           f"{out.dtype._torch_name}")
    if n in (0, 1):  # torch copies these into out= (casting); other powers write it exactly
        r = A.clone(memory_format=contiguous_format) if n == 1 else \
            eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(tuple(A.shape)).clone()
        return _out(op, r if out is None else r.to(out.dtype), out)
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else result.matmul(base)
        n >>= 1
        if n:
            base = base.matmul(base)
    return _out(op, result, out)


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (the first/last may be vectors), multiplied in the
    order that needs the fewest scalar multiplications."""
    op = "multi_dot()"
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"{op}: expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__module__}.{type(t).__name__}")
    first, last = tensors[0], tensors[-1]
    for i, t in enumerate(tensors):
        d = t.dim()
        if i == 0 and d not in (1, 2):
            raise RuntimeError(f"{op}: the first tensor must be 1D or 2D but got {d}D")
        if i == len(tensors) - 1 and d not in (1, 2):
            raise RuntimeError(f"{op}: the last tensor must be 1D or 2D but got {d}D")
        if 0 < i < len(tensors) - 1 and d != 2:
            raise RuntimeError(f"{op}: tensor {i} must be 2D but got {d}D")
        if t.dtype != first.dtype:
            raise RuntimeError(f"{op}: all tensors must have be the same dtype but tensor 0 is "
                               f"{first.dtype._torch_name} and tensor {i} is {t.dtype._torch_name}")
    mats = list(tensors)
    if first.dim() == 1:
        mats[0] = first.unsqueeze(0)
    if last.dim() == 1:
        mats[-1] = last.unsqueeze(-1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"{op}: tensors {i} and {i + 1} with shapes "
                               f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} "
                               f"cannot be multiplied")
    r = _chain(mats)
    if first.dim() == 1 and last.dim() == 1:
        r = r.reshape(())
    elif first.dim() == 1:
        r = r.squeeze(0)
    elif last.dim() == 1:
        r = r.squeeze(-1)
    return _out("linalg.multi_dot", r, out)


def _chain(mats):
    n = len(mats)
    if n == 2:
        return mats[0].mm(mats[1])
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def build(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return build(i, k).mm(build(k + 1, j))

    return build(0, n - 1)


_LEVI_CIVITA = {}


def _levi_civita(dtype):
    """The 9 x 3 matrix E with (a outer b).reshape(9) @ E = a x b."""
    if dtype not in _LEVI_CIVITA:
        from ember import tensor

        e = [[0] * 3 for _ in range(9)]
        for i, j, k, s in ((0, 1, 2, 1), (1, 2, 0, 1), (2, 0, 1, 1),
                           (0, 2, 1, -1), (2, 1, 0, -1), (1, 0, 2, -1)):
            e[j * 3 + k][i] = s
        _LEVI_CIVITA[dtype] = tensor(e, dtype=dtype)
    return _LEVI_CIVITA[dtype]


@tensor_args("input", "other", op="linalg.cross")
def cross(input, other, *, dim: int = -1, out=None):
    """The cross product of 3-vectors along `dim` (inputs broadcast)."""
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = _broadcast_with_core_message(tuple(input.shape), tuple(other.shape))
    nd = len(shape)
    if nd == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    d = _normalize_dim(dim, nd)
    if input.dim() != nd or other.dim() != nd or input.shape[d] != 3 or other.shape[d] != 3:
        a3 = input.shape[d - nd] if input.dim() >= nd - d else 1
        b3 = other.shape[d - nd] if other.dim() >= nd - d else 1
        if a3 != 3 or b3 != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. "
                               f"Got {a3} and {b3}")
    # torch's kernel: no bool, and no promotion (after the shapes, as there)
    if input.dtype in (_C.bool, _C.uint16, _C.uint32, _C.uint64):  # (and no shell unsigned)
        raise NotImplementedError(f"\"cross\" not implemented for '{input.dtype._torch_name}'")
    if other.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype._torch_name} but found "
                           f"{other.dtype._torch_name}")
    a = _movedim(input.expand(shape), d, -1)
    b = _movedim(other.expand(shape), d, -1)
    outer = a.unsqueeze(-1) * b.unsqueeze(-2)
    e = _levi_civita(outer.dtype)  # cached on the CPU: device memory is not held between calls
    if outer.device.type != "cpu":
        e = e.to(outer.device)
    r = outer.reshape(tuple(outer.shape[:-2]) + (9,)).matmul(e)
    return _out("linalg.cross", _movedim(r, -1, d), out)


def vecdot(x, y, *, dim=-1, out=None):
    """Dot products of vectors along `dim` (inputs broadcast)."""
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {x.dtype._torch_name} and y of type "
                           f"{y.dtype._torch_name} instead")
    return _out("linalg.vecdot", (x.conj() * y).sum(dim), out)  # x conjugated, as torch's


def cond(A, p=None, *, out=None):
    """The condition number of A in the norm p (None or 2: through the singular values)."""
    from ember import where

    if p is None or p in (2, -2):
        _check_matrix(A, "linalg.cond")
        s = svdvals(A)
        r = s.amax(-1) / s.amin(-1) if p != -2 else s.amin(-1) / s.amax(-1)
        return _out("linalg.cond", r, out)
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _check_matrix(A, "linalg.cond")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they "
                           f"are {A.shape[-2]} by {A.shape[-1]} matrices")
    Ainv, info = _C._linalg_inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(Ainv, p)
    return _out("linalg.cond", where(info > 0, math.inf, r), out)


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def tensorinv(A, ind=2, *, out=None):
    """The tensor T with tensordot(T, A, ind) the identity: inv of A as a prod(shape[:ind]) x
    prod(shape[ind:]) matrix, reshaped to shape[ind:] + shape[:ind]."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    lead, rest = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _prod(lead) != _prod(rest):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {_prod(rest)} != {_prod(lead)}")
    r = inv(A.reshape(_prod(lead), _prod(rest))).reshape(rest + lead)
    return _out("linalg.tensorinv", r, out)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) == B; `dims` are A's dims to move last first."""
    if dims is not None:
        nd = A.dim()
        moved = [d % nd for d in dims]
        A = A.permute([d for d in range(nd) if d not in moved] + moved)
    lead, rest = tuple(A.shape[:B.dim()]), tuple(A.shape[B.dim():])
    if _prod(lead) != _prod(rest):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:])"
                           f" == prod(self.shape[:other.ndim]), but got {_prod(rest)} != "
                           f"{_prod(lead)}")
    x = solve(A.reshape(_prod(lead), _prod(rest)), B.reshape(_prod(lead)))
    return _out("linalg.tensorsolve", x.reshape(rest), out)


def vander(x, *, N=None):
    """The Vandermonde matrix of x (..., n): columns x**0, x**1, ..., x**(N-1)."""
    from ember import arange

    n = x.shape[-1] if x.dim() > 0 else 1
    N = n if N is None else N
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    return x.unsqueeze(-1).pow(arange(N, device=x.device))


# Coefficients of the degree-13 Padé approximant of exp (Higham 2005, "The scaling and squaring
# method for the matrix exponential revisited"), and the 1-norm bound below which it is exact to
# double precision without scaling.
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def matrix_exp(A):
    """exp(A) of each square matrix by scaling and squaring with a [13/13] Padé approximant
    (one scaling for the whole batch: the largest that any matrix needs)."""
    from ember import eye

    op = "linalg.matrix_exp"
    _check_square(A, op)
    _check_float(A, op, low_precision=True)
    if A.dtype.name in ("float16", "bfloat16"):  # torch takes them: computed in float32
        return matrix_exp(A.float()).to(A.dtype)
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    norm1 = builtins.float(matrix_norm(A, 1).amax()) if A.dim() > 2 else \
        builtins.float(matrix_norm(A, 1))
    s = builtins.max(0, math.ceil(math.log2(norm1 / _THETA13))) if norm1 > _THETA13 else 0
    X = A * (0.5 ** s) if s else A
    b = _PADE13
    ident = eye(n, dtype=A.dtype, device=A.device)
    X2 = X.matmul(X)
    X4 = X2.matmul(X2)
    X6 = X4.matmul(X2)
    U = X.matmul(X6.matmul(X6 * b[13] + X4 * b[11] + X2 * b[9]) + X6 * b[7] + X4 * b[5]
                 + X2 * b[3] + ident * b[1])
    V = X6.matmul(X6 * b[12] + X4 * b[10] + X2 * b[8]) + X6 * b[6] + X4 * b[4] + X2 * b[2] \
        + ident * b[0]
    R = solve(V - U, V + U)
    for _ in range(s):
        R = R.matmul(R)
    return R


def matmul(input, other, *, out=None):
    return _C.matmul(input, other, out=out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The view of the diagonal `offset` of the matrices in dims dim1, dim2 (moved last)."""
    nd = A.dim()
    d1, d2 = _normalize_dim(dim1, nd), _normalize_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    size, stride = list(A.shape), list(A.stride())
    start = A.storage_offset()
    if offset >= 0:
        n = builtins.max(builtins.min(size[d1], size[d2] - offset), 0)
        start += offset * stride[d2] if n else 0
    else:
        n = builtins.max(builtins.min(size[d1] + offset, size[d2]), 0)
        start -= offset * stride[d1] if n else 0
    keep = [i for i in range(nd) if i not in (d1, d2)]
    return A.as_strided([size[i] for i in keep] + [n],
                        [stride[i] for i in keep] + [stride[d1] + stride[d2]], start)


# ---- legacy top-level forms (ember.det, ember.svd, ...) ----

@tensor_args("A", op="logdet")
def _det(A):
    """torch.det / Tensor.det: linalg.det without its out= (torch's has none)."""
    return det(A)


def _logdet(A):
    _check_square(A, "logdet")  # (torch's order and op name, before slogdet's own checks)
    _check_float(A, "logdet")
    sign, logabs = _C._linalg_slogdet(A)
    return logabs + sign.log()  # sign -1 -> nan, 0 -> -inf, as torch.logdet


def _legacy_norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: the core's vector p-norm, plus the nuclear norm (p='nuc') of matrices."""
    if isinstance(p, str) and p == "nuc" and not isinstance(dim, _C.Tensor):
        # (a tensor dim: the core refuses it as torch's matrix_norm parser does)
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype,
                           out=out)
    return _C.norm(input, p, dim, keepdim, out=out, dtype=dtype)


@tensor_args("A", op="inverse")
def _inverse(A, *, out=None):
    return _out("inverse", _C._linalg_inv_ex(A, check_errors=True)[0], out)


@tensor_args("A", op="pinverse")
def _pinverse(A, rcond: float = 1e-15):
    return pinv(A, rtol=rcond)


@tensor_args("A", op="svd")
@_tuple_out(_LegacySVD)
def _legacy_svd(A, some: bool = True, compute_uv: bool = True, *, out=None):
    """torch.svd: (U, S, V) with V = Vh^T; reduced unless some=False; zeros without compute_uv."""
    from ember import zeros

    _check_matrix(A, "svd", "input")
    if not compute_uv:
        S = svdvals(A)
        m, n = A.shape[-2], A.shape[-1]
        batch = tuple(A.shape[:-2])
        U = zeros(batch + (m, m if not some else builtins.min(m, n)), dtype=A.dtype,
                  device=A.device)
        V = zeros(batch + (n, n if not some else builtins.min(m, n)), dtype=A.dtype,
                  device=A.device)
        return _out("svd", _LegacySVD(U, S, V), out)
    U, S, Vh = _C._linalg_svd(A, full_matrices=not some)
    return _out("svd", _LegacySVD(U, S, Vh.mT), out)


@tensor_args("A", op="qr")
@_tuple_out(_LegacyQR)
def _legacy_qr(A, some: bool = True, *, out=None):
    return _out("qr", _LegacyQR(*_C._linalg_qr(A, mode="reduced" if some else "complete")), out)


@tensor_args("input", "other", op="cross")
def _legacy_cross(input, other, dim: int | None = None, *, out=None):
    if dim is None:  # the first dimension of size 3 (deprecated in torch, with its warning)
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a "
                      "future release.", UserWarning, stacklevel=3)
        shape = _broadcast_with_core_message(tuple(input.shape), tuple(other.shape))
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return cross(input, other, dim=dim, out=out)


@tensor_args("A", op="cholesky")
def _legacy_cholesky(A, upper: bool = False, *, out=None):
    """torch.cholesky (deprecated): out= takes any dtype the input casts to safely, checked
    before the factorization; errors are named "cholesky", not "linalg.cholesky"."""
    if out is not None and not _C.can_cast(A.dtype, out.dtype):
        raise RuntimeError(f"cholesky: Expected result to be safely castable from "
                           f"{A.dtype._torch_name} dtype, but got result with dtype "
                           f"{out.dtype._torch_name}")
    try:
        factor = _C._linalg_cholesky_ex(A, upper=upper, check_errors=True)[0]
    except LinAlgError as e:
        raise LinAlgError(str(e).replace("linalg.cholesky: ", "cholesky: ", 1)) from None
    return _out("cholesky", factor if out is None else factor.to(out.dtype), out)


@tensor_args("B", "L", op="cholesky_solve")
def _cholesky_solve(B, L, upper: bool = False, *, out=None):
    """X with A X = B given A's Cholesky factor L (or U with upper=True); batches broadcast."""
    _check_matrix(B, "cholesky_solve", "b")
    _check_matrix(L, "cholesky_solve", "A")
    batch = _broadcast_with_core_message(tuple(B.shape[:-2]), tuple(L.shape[:-2]))
    r = _C._cholesky_solve(_expand_batch(B, batch), _expand_batch(L, batch), upper=upper)
    return _out("cholesky_solve", r, out)


# Top-level names (ember.<name>) and the Tensor methods with the same meaning.
TOP_LEVEL = {
    "det": _det, "logdet": _logdet, "slogdet": slogdet, "inverse": _inverse,
    "pinverse": _pinverse, "svd": _legacy_svd, "qr": _legacy_qr, "cross": _legacy_cross,
    "cholesky": _legacy_cholesky, "cholesky_solve": _cholesky_solve,
    "matrix_power": matrix_power, "norm": _legacy_norm, "geqrf": _geqrf,
    "orgqr": householder_product, "ormqr": _ormqr,
}


def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    """Tensor.norm: torch's method takes dtype as its fourth positional argument (the function's
    fourth is out=)."""
    return _legacy_norm(self, p, dim, keepdim, dtype=dtype)


def _install(cls) -> None:
    """Installs the Tensor methods (A.det(), A.inverse(), A.svd(), ...)."""
    for name, fn in TOP_LEVEL.items():
        setattr(cls, name, _norm_method if name == "norm" else fn)
