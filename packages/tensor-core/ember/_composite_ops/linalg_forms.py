"""torch's top-level forms of linear-algebra functions (cholesky_inverse, lu_unpack,
matrix_exp, the norms) and the randomized low-rank factorizations (Halko, Martinsson and
Tropp, 2009)."""

from __future__ import annotations

import math

from ember import _C
from ember._checks import _is_int_arg
from ember._composite_ops._common import (
    _dim_list,
    _dtype_name,
    _finish,
    _finish_exact,
    _is_tensor,
    _min,
)


def cholesky_inverse(input, upper=False, *, out=None):
    """The inverse of A = L L^H (or U^H U) from its Cholesky factor, batched as torch."""
    if input.dim() < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError("cholesky_inverse: A must be batches of square matrices, but they are "
                           f"{input.shape[-2] if input.dim() >= 2 else 1} by "
                           f"{input.shape[-1] if input.dim() else 1} matrices")
    if input.dtype not in (_C.float32, _C.float64, _C.complex64, _C.complex128):
        raise NotImplementedError(f"\"cholesky_inverse_out_cpu\" not implemented for "
                                  f"'{_dtype_name(input.dtype)}'")
    if out is not None and not _C.can_cast(input.dtype, out.dtype):  # (before the factor's)
        raise RuntimeError(f"cholesky_inverse: Expected result to be safely castable from "
                           f"{_dtype_name(input.dtype)} dtype, but got result with dtype "
                           f"{_dtype_name(out.dtype)}")
    n = input.shape[-1]
    from ember import linalg  # (linalg imports this module)

    # a zero on the factor's diagonal: torch's LinAlgError (the solves would give inf and NaN)
    zero = (input.diagonal(0, -2, -1) == 0).reshape(-1, n) if input.numel() else None
    if zero is not None and bool(zero.any()):
        first = int(zero.any(1).to(_C.int64).argmax())
        where = f"(Batch element {first}): " if input.dim() > 2 else ""
        element = int(zero[first].to(_C.int64).argmax()) + 1
        raise linalg.LinAlgError(
            f"cholesky_inverse: {where}The diagonal element {element} is zero, the inversion "
            "could not be completed because the input matrix is singular.")
    eye = _C.eye(n, dtype=input.dtype, device=input.device).expand(tuple(input.shape))

    return _finish(linalg._cholesky_solve(eye, input, upper), out)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) with A = P L U from linalg.lu_factor's packed (LU, pivots): L unit lower
    (m x k), U upper (k x n), P the permutation of LAPACK's row interchanges (pivots 1-based)."""
    if LU_data.dim() < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = _min(m, n)
    batch = tuple(LU_data.shape[:-2])
    if unpack_pivots:  # (torch reads nothing of the pivots otherwise)
        if LU_pivots.dtype != _C.int32:
            raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                               "of torch.int32 dtype. Note: this function does not check if the "
                               "pivots are sensible and may segfault if they are not. Got "
                               f"{LU_pivots.dtype}")
        if tuple(LU_pivots.shape) != batch + (k,):
            raise RuntimeError(f"torch.lu_unpack: LU_pivots of size {list(LU_pivots.shape)} do "
                               f"not match LU_data of size {list(LU_data.shape)}")
    empty = _C.empty([0], dtype=LU_data.dtype, device=LU_data.device)
    L = U = P = empty
    if unpack_data:
        eye = _C.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        L = LU_data.narrow(-1, 0, k).tril(-1) + eye
        U = LU_data.narrow(-2, 0, k).triu()
    if unpack_pivots:
        # A's rows were swapped in order (row i with row pivots[i] - 1): P is the transposed
        # permutation of those swaps, so that A = P L U
        flat = LU_pivots.reshape(math.prod(batch), k).cpu().tolist()  # (k may be 0: no -1)
        rows = []
        for piv in flat:
            perm = list(range(m))
            for i, p in enumerate(piv):
                perm[i], perm[p - 1] = perm[p - 1], perm[i]
            rows.append(perm)
        index = _C.tensor(rows, dtype=_C.int64).reshape(batch + (m,))
        eye_m = _C.eye(m, dtype=LU_data.dtype)
        P = eye_m[index].mT.to(LU_data.device)
    return P, L, U


def matrix_exp(input):
    from ember import linalg

    return linalg.matrix_exp(input)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    from ember import linalg

    dims = tuple(_dim_list(dim))
    if len(dims) > 2:  # (torch's: a matrix norm's dims, before they are wrapped)
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           "instead.")
    return _finish_exact(linalg.vector_norm(input, 2, dim=dims or None, keepdim=keepdim), out)


def nuclear_norm_row(input, *args, out=None):
    """The registry's two forms: (input, keepdim) and (input, dim, keepdim)."""
    if len(args) == 2:
        return nuclear_norm(input, args[0], args[1], out=out)
    return nuclear_norm(input, None, args[0] if args else False, out=out)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    from ember import linalg

    if dim is None:
        result = linalg.matrix_norm(input, "nuc", keepdim=keepdim)
    else:
        dims = _dim_list(dim)
        dims = tuple(dims * 2 if len(dims) == 1 else dims)  # int[2]: one int stands for two
        result = linalg.matrix_norm(input, "nuc", dim=dims, keepdim=keepdim)
    if out is not None and out.dtype != result.dtype:
        raise RuntimeError(f"linalg.matrix_norm expected out tensor dtype "
                           f"{result.dtype._torch_name} but got: {out.dtype._torch_name}")
    return _finish(result, out)


def _range_basis(A, q, niter, M):
    """An orthonormal basis (m x q) of the dominant column space of A - M, by randomized subspace
    iteration (a Gaussian sketch, then `niter` power steps with re-orthonormalization)."""
    from ember import linalg

    def times(X):  # (A - M) X
        return A @ X if M is None else A @ X - M @ X

    def times_t(X):  # (A - M)^H X
        return A.mH @ X if M is None else A.mH @ X - M.mH @ X

    sketch = _C.randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = linalg.qr(times(sketch)).Q
    for _ in range(niter):
        Q = linalg.qr(times_t(Q)).Q
        Q = linalg.qr(times(Q)).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    from ember import linalg

    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"svd_lowrank: expected a floating point tensor, got {A.dtype}")
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    wide = m < n
    if wide:  # work on the tall conjugate transpose: A^H = U S V^H gives A = V S U^H
        A = A.mH
        M = None if M is None else M.mH
    Q = _range_basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if wide else (U, S, V)


def _check_matrix_arg(A, op):
    if not _is_tensor(A):
        raise TypeError(f"{op}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{op}(): A must have at least 2 dimensions, but got {A.dim()}")


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ~= U diag(S) V^H of rank q, by a randomized SVD (the sketch is
    drawn from the default generator, as torch's)."""
    _check_matrix_arg(A, "svd_lowrank")
    # (torch checks neither q nor niter here: a q beyond min(m, n) gives min(m, n) columns, the
    # sketch's randn refuses a q that is no int or is negative; pca_lowrank checks both)
    q = 6 if q is None else q
    # (torch's sketch, randn(n, q), refuses it before anything else; its size takes a
    # one-element integer tensor too)
    if _is_tensor(q) and q.numel() == 1 and not (q.dtype.is_floating_point or q.dtype.is_complex
                                                  or q.dtype == _C.bool):
        q = int(q.item())
    q = int(q) if isinstance(q, bool) else q  # (a bool is an int to torch's randn size)
    if not _is_int_arg(q):
        raise TypeError(f"svd_lowrank(): argument 'q' must be int, not {type(q).__name__}")
    return _svd_lowrank(A, q, 2 if niter is None else niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V), the principal directions of A's rows (centered when `center`), by
    svd_lowrank: A's covariance ~= V diag(S^2 / (m - 1)) V^T."""
    _check_matrix_arg(A, "pca_lowrank")
    m, n = A.shape[-2], A.shape[-1]
    q = _min(6, m, n) if q is None else q
    if not 0 <= q <= _min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={_min(m, n)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    mean = A.mean(-2, keepdim=True)
    return _svd_lowrank(A, q, niter, mean)
