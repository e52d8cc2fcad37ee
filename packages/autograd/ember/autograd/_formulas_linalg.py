"""Gradient formulas of ember.linalg's LAPACK primitives (``_linalg_*``, bind_lapack.cpp):
batched matrices with equal batch dims. The formulas written with ``_mH`` (the conjugate
transpose) hold for complex matrices too, in torch's convention (_formulas_complex.py lists
them); the ones written with ``_mt`` are real and get complex values conjugated. Same
conventions as _formulas.py: one ``@grad`` entry per op name as the core hands it to the hook,
written with ember ops so that double backward works. The op names are in
_formulas_tensor.py's ``HOOKED_OPS``.
"""

from __future__ import annotations

import ember
from ember import _C

from ._formulas import grad


def _mt(t):
    return t.transpose(-2, -1)


def _mH(t):
    return _mt(_C.conj_physical(t)) if t.dtype.is_complex else _mt(t)


def _re(t):
    return t.real if t.dtype.is_complex else t


def _eye_like(n, t):
    return ember.eye(n, dtype=t.dtype, device=t.device)


# ---------------------------------------------------------------------------------------------
# linear algebra (bind_lapack.cpp): batched matrices with equal batch dims, real dtypes


def _tri_solve(A, B, upper, unit=False):
    return _C._linalg_solve_triangular(A, B, upper=upper, unitriangular=unit)


def _solve(A, B):
    return _C._linalg_solve_ex(A, B, check_errors=False)[0]


def _inv(A):
    return _C._linalg_inv_ex(A, check_errors=False)[0]


def _diag(v):
    return ember.diag_embed(v)


@grad("_linalg_inv_ex", out=(0,))
def _inv_ex(g, needs, out, A, check_errors=False):
    Ai = _mt(out[0])
    return (-(Ai.matmul(g[0]).matmul(Ai)),)


def _cofactor_svd(A):
    """d det(A) / dA for any square A (singular ones included): det(U) det(V) U diag(product of
    the other singular values) V^T."""
    U, S, Vh = _C._linalg_svd(A, full_matrices=False)
    n = S.shape[-1]
    others = ember.where(_eye_like(n, S) != 0, 1.0, S.unsqueeze(-2).expand(
        tuple(S.shape[:-1]) + (n, n))).prod(-1)
    sign = _C._linalg_det(U.detach()) * _C._linalg_det(Vh.detach())
    return (U * others.unsqueeze(-2)).matmul(Vh) * sign.unsqueeze(-1).unsqueeze(-1)


@grad("_linalg_det", save=(0,), out=True)
def _det(g, needs, out, A):
    n = A.shape[-1]
    if n == 0:
        return (ember.zeros(tuple(A.shape), dtype=g.dtype, device=g.device),)
    # (numerically) singular: |det| below 1e-12 of max|a_ij|^n, compared in logs (no overflow)
    Ad = A.detach()
    amax = Ad.abs().amax(dim=(-2, -1))
    rel = _C._linalg_slogdet(Ad)[1] - amax.log() * n
    singular = bool(((rel < -27.6) | (amax == 0)).any())
    if singular:
        return (g.unsqueeze(-1).unsqueeze(-1) * _cofactor_svd(A),)
    return ((g * out).unsqueeze(-1).unsqueeze(-1) * _mt(_inv(A)),)


@grad("_linalg_slogdet", save=(0,), out=(0,))
def _slogdet(g, needs, out, A):
    # d log det = tr(A^-1 dA); logabsdet is its real part and, for complex A, sign = exp(i Im):
    # gA = c A^-H with c = g_logabsdet - i Im(conj(g_sign) sign)
    c = g[1]
    if A.dtype.is_complex:
        sign = out[0]
        c = c - 1j * (_C.conj_physical(g[0]) * sign).imag if g[0] is not None else c + 0j
    return (c.unsqueeze(-1).unsqueeze(-1) * _mH(_inv(A)),)


@grad("_linalg_solve_ex", save=(0,), out=(0,))
def _solve_ex(g, needs, out, A, B, check_errors=False):
    gB = _solve(_mt(A), g[0])
    return (-gB.matmul(_mt(out[0])) if needs[0] else None, gB if needs[1] else None)


@grad("_linalg_solve_triangular", save=(0,), out=True)
def _solve_triangular(g, needs, out, A, B, upper, unitriangular=False):
    gB = _tri_solve(_mH(A), g, not upper, unitriangular)
    gA = None
    if needs[0]:
        gA = -gB.matmul(_mH(out))
        k = 1 if unitriangular else 0
        gA = gA.triu(k) if upper else gA.tril(-k)
    return (gA, gB if needs[1] else None)


def _cholesky_grad(gL, L):
    """A = L L^H: gA = L^-H phi L^-1 with phi = (T + tril(T, -1)^H) / 2, T = tril(L^H gL)
    (torch's cholesky_backward: Hermitian but for the imaginary part of its diagonal, which
    torch keeps; a real gA is symmetric)."""
    T = _mH(L).matmul(gL).tril()
    phi = (T + _mH(T.tril(-1))) * 0.5
    X = _mH(_tri_solve(_mH(L), _mH(phi), upper=True))  # phi L^-1 = (L^-H phi^H)^H
    return _tri_solve(_mH(L), X, upper=True)  # L^-H phi L^-1


@grad("_linalg_cholesky_ex", out=(0,))
def _cholesky_ex(g, needs, out, A, upper=False, check_errors=False):
    L, gL = out[0], g[0]
    if upper:
        L, gL = _mH(L), _mH(gL)
    return (_cholesky_grad(gL, L),)


@grad("_cholesky_solve", save=(1,), out=True)
def _cholesky_solve(g, needs, out, B, L, upper=False):
    gB = _C._cholesky_solve(g, L, upper=upper)
    gL = None
    if needs[1]:
        c = gB.matmul(_mH(out))
        c = c + _mH(c)
        # the forward reads one triangle of L only: the other gets no gradient
        gL = -(L.matmul(c)).triu() if upper else -(c.matmul(L)).tril()
    return (gB if needs[0] else None, gL)


def _perm_matrix(pivots, n, dtype):  # n: the number of rows of A
    """P with A = P L U from LAPACK's 1-based row interchanges (constant, not differentiable)."""
    import numpy as np

    piv = pivots.cpu().numpy()  # small, and read row by row: on the host also for CUDA pivots
    piv = piv.reshape(-1, pivots.shape[-1]) if pivots.ndim else piv
    mats = []
    for row in piv:
        perm = list(range(n))
        for i, p in enumerate(row):
            p = int(p) - 1
            perm[i], perm[p] = perm[p], perm[i]
        m = np.zeros((n, n))
        m[perm, range(n)] = 1.0  # row perm[j] of A is row j of L U
        mats.append(m)
    out = np.stack(mats).reshape(tuple(pivots.shape[:-1]) + (n, n))
    return ember.tensor(out, dtype=dtype, device=pivots.device)


def _lu_grad(gL, gU, P, L, U):
    """A = P L U with L (m, k) unit lower and U (k, n) upper, k = min(m, n).

    Square: gA = P L^-H phi U^-H, phi = tril(L^H gL, -1) + triu(gU U^H). Wide (m < n, U = [U1 U2]):
    gA = P L^-H [phi U1^-H | gU2] with phi = tril(L^H gL, -1) + triu(gU U^H) - gU2 U2^H. Tall
    (m > n, L = [L1; L2]): gA = P [L1^-H phi U^-H; gL2 U^-H], phi = tril(L^H gL, -1) + triu(gU U^H)
    - L2^H gL2 (torch's linalg_lu_backward)."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if gL is None:
        gL = ember.zeros_like(L)
    if gU is None:
        gU = ember.zeros_like(U)
    phi = _mH(L).matmul(gL).tril(-1) + gU.matmul(_mH(U)).triu()
    if m == n:
        X = _mH(_tri_solve(U, _mH(phi), upper=True))  # phi U^-H
        return P.matmul(_tri_solve(_mH(L), X, upper=True, unit=True))  # L^-H phi U^-H
    if m < n:
        U1, U2, gU2 = U.narrow(-1, 0, k), U.narrow(-1, k, n - k), gU.narrow(-1, k, n - k)
        phi = phi - gU2.matmul(_mH(U2))
        X = _mH(_tri_solve(U1, _mH(phi), upper=True))  # phi U1^-H
        G = ember.cat([X, gU2], -1)
        return P.matmul(_tri_solve(_mH(L), G, upper=True, unit=True))
    L1, L2, gL2 = L.narrow(-2, 0, k), L.narrow(-2, k, m - k), gL.narrow(-2, k, m - k)
    phi = phi - _mH(L2).matmul(gL2)
    X = _mH(_tri_solve(U, _mH(phi), upper=True))  # phi U^-H
    top = _tri_solve(_mH(L1), X, upper=True, unit=True)  # L1^-H phi U^-H
    bottom = _mH(_tri_solve(U, _mH(gL2), upper=True))  # gL2 U^-H
    return P.matmul(ember.cat([top, bottom], -2))


def _unpack_lu(LU):
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    L = LU.tril(-1).narrow(-1, 0, k) + ember.eye(m, k, dtype=LU.dtype, device=LU.device)
    U = LU.triu().narrow(-2, 0, k)
    return L, U


@grad("_linalg_lu_factor_ex", out=(0, 1))
def _lu_factor_ex(g, needs, out, A, pivot=True, check_errors=False):
    LU, piv = out
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    L, U = _unpack_lu(LU)
    gLU = g[0]
    P = _perm_matrix(piv, m, LU.dtype)
    return (_lu_grad(gLU.tril(-1).narrow(-1, 0, k), gLU.triu().narrow(-2, 0, k), P, L, U),)


@grad("_linalg_lu", out=(0, 1, 2))
def _lu(g, needs, out, A, pivot=True):
    P, L, U = out
    return (_lu_grad(g[1], g[2], P.detach(), L, U),)


@grad("_linalg_lu_solve", save=(0, 1), out=True)
def _lu_solve(g, needs, out, LU, pivots, B, adjoint=False):
    gB = _C._linalg_lu_solve(LU, pivots, g, adjoint=not adjoint)
    gLU = None
    if needs[0]:
        gA = -(gB.matmul(_mH(out))) if not adjoint else -(out.matmul(_mH(gB)))
        L, U = _unpack_lu(LU)
        PtgA = _mH(_perm_matrix(pivots, LU.shape[-2], LU.dtype)).matmul(gA)
        gLU = PtgA.matmul(_mH(U)).tril(-1) + _mH(L).matmul(PtgA).triu()
    return (gLU, None, gB if needs[2] else None)


def _qr_tall_grad(gQ, gR, Q, R):
    """m >= n: gA = [gQ + Q copyltu(triu(gR R^H - Q^H gQ))] R^-H (torch's linalg_qr_backward;
    copyltu(X) = X + X^H with the real part of the diagonal halved)."""
    M = gR.matmul(_mH(R)) - _mH(Q).matmul(gQ)
    Mt = M.triu()
    sym = Mt + _mH(Mt) - _diag(_re(Mt.diagonal(0, -2, -1)))
    gA = Q.matmul(sym) + gQ
    return _mH(_tri_solve(R, _mH(gA), upper=True))  # gA R^-H


@grad("_linalg_qr", save=(0,), out=(0, 1))
def _qr(g, needs, out, A, mode="reduced"):
    Q, R = out
    gQ, gR = g
    m, n = A.shape[-2], A.shape[-1]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    if m >= n:
        return (_qr_tall_grad(gQ, gR, Q, R),)
    # wide: A = [X | Y] with X = Q R1 (square) and R2 = Q^H Y
    R1, gR1, gR2 = R.narrow(-1, 0, m), gR.narrow(-1, 0, m), gR.narrow(-1, m, n - m)
    Y = A.narrow(-1, m, n - m)
    gX = _qr_tall_grad(gQ + Y.matmul(_mH(gR2)), gR1, Q, R1)
    return (ember.cat([gX, Q.matmul(gR2)], -1),)


def _skew(X):
    return X - _mH(X)


_PHASE_MSG = {  # torch's words: a complex decomposition's vectors are defined up to a phase
    "svd": "svd_backward: The singular vectors in the complex case are specified up to "
           "multiplication by e^{i phi}. The specified loss function depends on this phase term, "
           "making it ill-defined.",
    "eig": "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
           "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
           "so it is ill-defined.",
}
_PHASE_MSG["eigh"] = _PHASE_MSG["eig"].replace("linalg_eig_", "linalg_eigh_")


def check_phase_invariant(kind, imag_diag, expected=None):
    """torch's check that a loss does not depend on the arbitrary phases of complex singular
    vectors or eigenvectors: Im(diag(V^H gV)) must be 0 (for svd: minus U's), within its lax
    rtol = atol = 1e-2. A gradient there would depend on which phases LAPACK picked."""
    want = _C.zeros_like(imag_diag) if expected is None else expected
    if not ember.allclose(imag_diag, want, rtol=1e-2, atol=1e-2):
        raise RuntimeError(_PHASE_MSG[kind])


@grad("_linalg_svd", save=(0,), out=(0, 1, 2))
def _svd(g, needs, out, A, full_matrices=True, compute_uv=True):
    U, S, Vh = out
    gU, gS, gVh = g
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    if not compute_uv:  # singular values only: the vectors are recomputed
        U, _, Vh = _C._linalg_svd(A, full_matrices=False)
        gU = gVh = None
    elif full_matrices and m != n:
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU, gVh = gU.narrow(-1, 0, k), gVh.narrow(-2, 0, k)
    if gU is not None and not bool((gU != 0).any()):
        gU = None
    if gVh is not None and not bool((gVh != 0).any()):
        gVh = None
    if gU is None and gVh is None:
        return (U.matmul(gS.unsqueeze(-1) * Vh),)
    if A.dtype.is_complex:
        zero = _C.zeros_like(S)
        im_u = _mH(U).matmul(gU).diagonal(0, -2, -1).imag if gU is not None else zero
        im_v = Vh.matmul(_mH(gVh)).diagonal(0, -2, -1).imag if gVh is not None else zero
        check_phase_invariant("svd", im_u, -im_v)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + _eye_like(k, E)
    if gU is not None and gVh is not None:
        ret = (_skew(_mH(U).matmul(gU)) * S.unsqueeze(-2)
               + S.unsqueeze(-1) * _skew(Vh.matmul(_mH(gVh)))) / E
    elif gU is not None:
        ret = _skew(_mH(U).matmul(gU)) / E * S.unsqueeze(-2)
    else:
        ret = S.unsqueeze(-1) * (_skew(Vh.matmul(_mH(gVh))) / E)
    ret = ret + _diag(gS)
    if A.dtype.is_complex and gU is not None:
        # the diagonal of skew(U^H gU) is 2i Im(diag(U^H gU)): its share is i Im(...) / S
        d = _mH(U).matmul(gU).diagonal(0, -2, -1).imag
        ret = ret - _diag(ret.diagonal(0, -2, -1) - gS) + _diag(1j * d / S)
    if m > n and gU is not None:
        gA = U.matmul(ret)
        gUS = gU / S.unsqueeze(-2)
        gA = gA + gUS - U.matmul(_mH(U).matmul(gUS))
        return (gA.matmul(Vh),)
    if m < n and gVh is not None:
        gA = ret.matmul(Vh)
        gVS = gVh / S.unsqueeze(-1)
        gA = gA + gVS - gVS.matmul(_mH(Vh)).matmul(Vh)
        return (U.matmul(gA),)
    return (U.matmul(ret).matmul(Vh),)


@grad("_linalg_eigh", save=(0,), out=(0, 1))
def _eigh(g, needs, out, A, UPLO="L", compute_v=True):
    Lam, V = out
    gL, gV = g
    if not compute_v:
        _, V = _C._linalg_eigh(A, UPLO=UPLO)
        gV = None
    if gV is not None and not bool((gV != 0).any()):
        gV = None
    if gV is None:
        return (V.matmul(gL.unsqueeze(-1) * _mH(V)),)
    n = Lam.shape[-1]
    VgV = _mH(V).matmul(gV)
    if V.dtype.is_complex:
        check_phase_invariant("eigh", VgV.diagonal(0, -2, -1).imag)
    VgV = (VgV - _mH(VgV)) * 0.5
    E = Lam.unsqueeze(-2) - Lam.unsqueeze(-1)
    E = E + _eye_like(n, E)
    ret = VgV / E + _diag(gL)
    return (V.matmul(ret).matmul(_mH(V)),)


@grad("_householder_product", save=(0, 1))
def _householder_product(g, needs, out, A, tau):
    """Q = H_1 ... H_k E (E: the first n columns of I), H_i = I - tau_i v_i v_i^H: rerun as
    Y_k = E, Y_(i-1) = H_i Y_i, and walked back. For Y' = Y - tau v u (u = v^H Y) and G = gY':
    gY = G - conj(tau) v (v^H G), g_tau = -v^H G u^H, g_v = -conj(tau) G u^H - tau Y (G^H v)."""
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    V = A.tril(-1) + ember.eye(m, n, dtype=A.dtype, device=A.device)
    vs = [V.narrow(-1, i, 1) for i in range(k)]
    ts = [tau.narrow(-1, i, 1).unsqueeze(-1) for i in range(k)]
    Ys = [ember.eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape))]
    for i in reversed(range(k)):  # Ys[j]: the input of H_(k - j)
        Ys.append(Ys[-1] - ts[i] * vs[i].matmul(_mH(vs[i]).matmul(Ys[-1])))
    G = g
    gvs, gts = [None] * k, [None] * k
    for i in range(k):
        Y, v, t = Ys[k - 1 - i], vs[i], ts[i]
        u = _mH(v).matmul(Y)
        gts[i] = -(_mH(v).matmul(G).matmul(_mH(u)))
        ct = _C.conj_physical(t) if t.dtype.is_complex else t
        gvs[i] = -(ct * G.matmul(_mH(u))) - t * Y.matmul(_mH(G).matmul(v))
        G = G - ct * v.matmul(_mH(v).matmul(G))
    gA = gtau = None
    if needs[0]:
        gA = ember.cat(gvs + [ember.zeros_like(A.narrow(-1, 0, n - k))], -1).tril(-1) \
            if k > 0 else ember.zeros_like(A)
    if needs[1]:
        gtau = ember.cat([x.squeeze(-1) for x in gts], -1) if k > 0 else ember.zeros_like(tau)
    return (gA, gtau)


@grad("_ormqr", save=(0, 1, 2))
def _ormqr(g, needs, out, A, tau, C, left=True, transpose=False):
    """out = op(Q) C (left) or C op(Q), Q = H_1 ... H_k the full m x m product of A's
    reflectors, op(Q) = Q^H with transpose. C's gradient is the product with op(Q)^H (ormqr
    itself); A's and tau's go through Q's gradient and householder_product's formula, A padded
    with zero columns to m (the columns past its reflectors are I's)."""
    gA = gtau = gC = None
    if needs[2]:
        gC = _C._ormqr(A, tau, g, left=left, transpose=not transpose)
    if needs[0] or needs[1]:
        if left:
            gQ = C.matmul(_mH(g)) if transpose else g.matmul(_mH(C))
        else:
            gQ = _mH(g).matmul(C) if transpose else _mH(C).matmul(g)
        m, n = A.shape[-2], A.shape[-1]
        if n < m:
            pad = ember.zeros(tuple(A.shape[:-1]) + (m - n,), dtype=A.dtype, device=A.device)
            A_full = ember.cat([A, pad], -1)
        else:
            A_full = A.narrow(-1, 0, m)
        gA_full, gtau = _householder_product(gQ, (needs[0], needs[1]), None, A_full, tau)
        if needs[0]:
            gA = gA_full.narrow(-1, 0, n) if n <= m else ember.cat(
                [gA_full, ember.zeros_like(A.narrow(-1, m, n - m))], -1)
    return (gA, gtau, gC)


def _pinv_backward(g, pinvA, A):
    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gh = _mH(pinvA), _mH(g)
    if m <= n:
        K = gh.matmul(pinvA)
        KpinvAh = K.matmul(pinvAh)
        return (-_mH(pinvA.matmul(K)) + KpinvAh - A.matmul(pinvA).matmul(KpinvAh)
                + pinvAh.matmul(pinvA).matmul(gh - K.matmul(A)))
    K = pinvA.matmul(gh)
    pinvAhK = pinvAh.matmul(K)
    return (-_mH(K.matmul(pinvA)) + (gh - A.matmul(K)).matmul(pinvA).matmul(pinvAh) + pinvAhK
            - pinvAhK.matmul(pinvA).matmul(A))


@grad("_linalg_lstsq", save=(0, 1))
def _lstsq(g, needs, out, A, B, rcond=None, driver=None):
    gX = g[0]
    pinvA = ember.linalg.pinv(A)
    gA = _pinv_backward(gX.matmul(_mH(B)), pinvA, A) if needs[0] else None
    gB = _mH(pinvA).matmul(gX) if needs[1] else None
    return (gA, gB)
