"""torch.lobpcg: a few extreme eigenpairs of a symmetric (generalized) eigenproblem
``A X = B X diag(E)`` by Knyazev's locally optimal block preconditioned conjugate gradient.

Each step does a Rayleigh-Ritz projection on the span of the current vectors X, their
(preconditioned) residuals W and the previous step's search directions P. The basis [X, W, P]
is B-orthonormalised by SVQB (a symmetric eigendecomposition of its Gram matrix that drops the
directions it cannot resolve), the stable orthonormalisation of torch's ``method="ortho"``; so
``method="basic"`` and ``"ortho"`` run the same, robust iteration here. Written with ember's ops:
it runs on the tensors' device and in their dtype.
"""

from __future__ import annotations

from ember import _C, _shape


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The ``k`` largest (``largest=True``, the default) or smallest eigenvalues of A (with B:
    of the pencil (A, B)) and their B-orthonormal eigenvectors, as ``(E, X)``: E of shape
    (*, k), X of (*, m, k). ``n`` vectors are iterated (default: k, or X's columns); ``iK``
    is a preconditioner (an approximate inverse of A); iteration stops when every wanted
    residual is below ``tol`` relative to the problem's scale, or after ``niter`` steps
    (default 1000)."""
    if tracker is not None or ortho_iparams or ortho_fparams or ortho_bparams:
        raise NotImplementedError("ember.lobpcg: tracker and the ortho_*params are not "
                                  "supported (the orthonormalisation has no parameters)")
    if method not in (None, "basic", "ortho"):
        raise ValueError(f"lobpcg: method must be 'basic' or 'ortho', got {method!r}")
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must be a square matrix or a batch of them, got shape "
                         f"{list(A.shape)}")
    if not (A.dtype.is_floating_point and A.dtype in (_C.float32, _C.float64)):
        raise ValueError(f"lobpcg: A must be float32 or float64, got {A.dtype}")
    m = A.shape[-1]
    if X is not None:
        n = X.shape[-1] if n is None else n
        k = X.shape[-1] if k is None else k
    else:
        k = 1 if k is None else k
        n = k if n is None else n
    if isinstance(n, bool):  # (torch's bool k or n reaches its zeros((m, n)) of the guesses)
        raise TypeError("zeros(): argument 'size' (position 1) must be tuple of ints, but found "
                        "element of type bool at pos 0")
    if k > n:
        raise ValueError(f"lobpcg: k (={k}) must not exceed n (={n})")
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={n})")
    largest = True if largest is None else bool(largest)
    niter = 1000 if niter is None else niter
    eps = 1.1920928955078125e-07 if A.dtype == _C.float32 else 2.220446049250313e-16
    tol = eps ** 0.5 if tol is None else tol
    if A.dim() > 2:  # each matrix of the batch on its own
        pairs = [lobpcg(A[i], k, None if B is None else B[i], None if X is None else X[i], n,
                        None if iK is None else iK[i], niter, tol, largest)
                 for i in range(A.shape[0])]
        return _shape.stack([e for e, _ in pairs]), _shape.stack([v for _, v in pairs])
    if X is None:
        X = _C.randn((m, n), dtype=A.dtype, device=A.device)
    elif X.shape[-1] != n:  # more vectors than X brings: random ones added
        X = _C.cat([X, _C.randn((m, n - X.shape[-1]), dtype=A.dtype, device=A.device)], 1)
    X = X.to(A.dtype)
    return _iterate(A, B, X, k, iK, niter, tol, largest, eps)


def _linalg():
    from ember import linalg  # (imported on first use: ember.linalg imports ember)

    return linalg


def _apply(M, V):
    return V if M is None else M @ V


def _svqb(S, B, eps):
    """S's columns made B-orthonormal (S^T B S = I), dropping directions whose part of the
    Gram matrix is below eps relative to its largest."""
    BS = _apply(B, S)
    G = S.mT @ BS
    G = (G + G.mT) * 0.5
    d = G.diagonal().clamp_min(0).sqrt()
    d = _C.where(d > 0, 1.0 / d, _C.zeros_like(d))
    w, V = _linalg().eigh(d[:, None] * G * d[None, :])
    keep = w > eps * w.abs().max().clamp_min(1e-300)
    V, w = V[:, keep], w[keep]
    T = d[:, None] * V / w.sqrt()[None, :]
    return S @ T, BS @ T


def _ritz(S, AS, n, largest):
    """The n extreme Ritz pairs of A on the B-orthonormal basis S (AS = A S)."""
    G = S.mT @ AS
    w, V = _linalg().eigh((G + G.mT) * 0.5)  # ascending
    if largest:
        w, V = w.flip(0), V.flip(1)
    return w[:n], V[:, :n]


def _iterate(A, B, X, k, iK, niter, tol, largest, eps):
    n = X.shape[-1]
    X, BX = _svqb(X, B, eps)
    AX = A @ X
    E, C = _ritz(X, AX, n, largest)
    X, AX, BX = X @ C, AX @ C, BX @ C
    P = None
    norm_A = _linalg().matrix_norm(A, 2)
    norm_B = 1.0 if B is None else _linalg().matrix_norm(B, 2)
    for _ in range(niter):
        R = AX - BX * E[None, :]
        scale = (norm_A + E.abs() * norm_B) * _linalg().vector_norm(X, dim=0)
        if bool((_linalg().vector_norm(R, dim=0)[:k] <= tol * scale[:k]).all()):
            break
        W = _apply(iK, R)
        basis = [X, W] if P is None else [X, W, P]
        S, _ = _svqb(_C.cat(basis, 1), B, eps)
        if S.shape[1] <= n:  # nothing left to search: X spans what the basis can resolve
            break
        AS = A @ S
        E, C = _ritz(S, AS, n, largest)
        X_new = S @ C
        # the new search directions: the step's part outside the old X (its W and P part)
        P = X_new - X @ (X.mT @ _apply(B, X_new))
        X, AX = X_new, AS @ C
        BX = _apply(B, X)
    return E[:k], X[:, :k]
