"""Gradients through complex tensors, with PyTorch's convention: a tensor's gradient is the
conjugate Wirtinger derivative 2 dL/dconj(z) of a real loss L, so that for z = x + iy it is
dL/dx + i dL/dy, and a step against it descends (``z -= lr * z.grad``).

For a function that is holomorphic with real Taylor coefficients (exp, log, sin, products,
matmul, ...) the vector-Jacobian product is ``grad * conj(f'(z))``, and conj(f'(z)) = f'(conj(z)):
so the real formula of _formulas.py holds when it is handed the conjugates of the saved values
(``CONJUGATED``: one wrapper, no second copy of those formulas). Linear maps with real
coefficients (views, sums, copies, casts) keep their real formula unchanged (``AS_REAL``), and
so do the real reductions var, std and norm, whose formulas already read as the complex ones
(``AS_WRITTEN``). The linear-algebra formulas written with conjugate transposes serve both
(``HERMITIAN``). The rest are written here (abs, angle, vdot, conj, view_as_real/view_as_complex,
linalg.eig). An op in none of these is refused for complex tensors (_engine.complex_entry)
rather than recorded with a derivative nobody checked; tests/test_complex_autograd.py gradchecks
every one listed.
"""

from __future__ import annotations

from ember import _C

# the real tables this one reads: every module that fills _FORMULAS
from . import _formulas_linalg, _formulas_nn, _formulas_tensor  # noqa: F401
from ._engine import _COMPLEX_FORMULAS, _FORMULAS
from ._formulas import Entry, grad

Tensor = _C.Tensor

# linear in their tensor inputs with real coefficients, or moving elements only
AS_REAL = (
    "_expand", "_getitem", "_to_dtype", "_view", "cat", "clone", "constant_pad_nd", "diag_embed",
    "diagonal", "flatten", "flip", "narrow", "neg", "neg_", "permute", "reshape", "roll",
    "select", "split_with_sizes", "squeeze", "stack", "sum", "mean", "t", "transpose", "tril",
    "tril_", "triu", "triu_", "unbind", "unflatten", "unsqueeze", "cumsum", "where",
    "masked_fill", "masked_fill_", "_setitem", "_copy_", "_fill_", "cumsum_", "as_strided",
    "gather", "index_select", "take", "take_along_dim", "index_copy", "index_copy_",
    "index_fill", "index_fill_", "index_put", "index_put_", "masked_select", "masked_scatter",
    "masked_scatter_", "scatter", "scatter_", "scatter_add", "scatter_add_", "repeat_interleave",
    "unfold",
)
# real functions of |z| or of |z - mean|^2 whose real formula, read with complex values, is
# already torch's (x / |x| is sgn(x); var's 2 (x - mean) / (n - c) is dL/dx + i dL/dy)
AS_WRITTEN = ("var", "std", "var_mean", "std_mean", "norm")
# holomorphic with real coefficients: the real formula over conjugated values
CONJUGATED = (
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "matmul", "mm", "bmm", "mv",
    "dot", "outer", "inner", "ger", "addmm", "addmm_", "addmv", "addmv_", "baddbmm", "baddbmm_",
    "addbmm", "addbmm_", "exp", "exp_", "expm1", "expm1_", "log", "log_", "log2", "log2_",
    "log10", "log10_", "log1p", "log1p_", "sqrt", "sqrt_", "rsqrt", "rsqrt_", "reciprocal",
    "reciprocal_", "square", "square_", "sin", "sin_", "cos", "cos_", "tan",
    "tan_", "sinh", "sinh_", "cosh", "cosh_", "tanh", "tanh_", "asin", "asin_", "acos", "acos_",
    "atan", "atan_", "asinh", "asinh_", "atanh", "atanh_", "sigmoid", "sigmoid_",
    "_linalg_inv_ex", "_linalg_det", "_linalg_solve_ex",
    "prod", "cumprod", "cumprod_", "logsumexp", "logaddexp", "logaddexp_", "exp2", "exp2_",
    "sinc", "sinc_", "lerp", "lerp_", "scatter_reduce", "scatter_reduce_", "index_add",
    "index_add_",
)
# written with conjugate transposes (_formulas_linalg.py's _mH): the same formula for both
HERMITIAN = (
    "_linalg_slogdet", "_linalg_solve_triangular", "_linalg_cholesky_ex", "_cholesky_solve",
    "_linalg_qr", "_linalg_svd", "_linalg_eigh", "_linalg_lstsq", "_householder_product",
    "_linalg_lu_factor_ex", "_linalg_lu", "_linalg_lu_solve", "_ormqr",
)


def _conj(v):
    if isinstance(v, Tensor):
        return _C.conj_physical(v) if v.dtype.is_complex else v
    if isinstance(v, tuple):  # the outputs of a multi-output op
        return tuple(_conj(x) for x in v)
    return v.conjugate() if isinstance(v, complex) else v


def _conjugated(entry):
    real_vjp = entry.vjp

    def vjp(g, needs, out, *args, **kwargs):
        return real_vjp(g, needs, _conj(out), *[_conj(a) for a in args],
                        **{k: _conj(v) for k, v in kwargs.items()})

    return Entry(entry.name, vjp, entry.save_inputs, entry.save_output, entry.inplace,
                 entry.save_if, entry.diff_outputs)


def _complex_grad(*names, **options):
    """Registers a formula for complex values only (the real one stays in _FORMULAS)."""
    return grad(*names, table=_COMPLEX_FORMULAS, **options)


@_complex_grad("abs", save=(0,))
def _abs(g, needs, out, z):
    return (g * _C.sgn(z),)  # |z|' = z / |z| (0 at 0), as torch's sgn


@_complex_grad("angle", save=(0,))
def _angle(g, needs, out, z):
    # d angle = (x dy - y dx) / |z|^2: the gradient i z / |z|^2 (0 at 0)
    if not z.dtype.is_complex:
        return (g * 0,)
    r2 = z.abs() ** 2
    return (_C.where(r2 == 0, 0, g * z * 1j / _C.where(r2 == 0, 1, r2)),)


@_complex_grad("pow", save="all", inplace_too=True)
def _pow(g, needs, out, a, b):
    # the real formula over conjugates, with the exponent's gradient at a == 0 taken as 0 where
    # Re(b) >= 0 (torch's rule; the real formula's b >= 0 has no order for complex b)
    ca, cb = _conj(a), _conj(b)
    ga = gb = None
    if needs[0]:
        if isinstance(b, Tensor):
            ga = _C.where(cb == 0, 0.0, g * cb * ca ** (cb - 1))
        else:
            ga = g * 0 if cb == 0 else g * cb * ca ** (cb - 1)
    if needs[1]:
        if isinstance(a, Tensor):
            real_b = cb.real if isinstance(cb, Tensor) and cb.dtype.is_complex else cb
            gb = _C.where((ca == 0) & (real_b >= 0), 0.0, g * ca ** cb * _C.log(ca))
        else:
            gb = g * ca ** cb * _C.log(_C.tensor(ca, dtype=g.dtype)) if ca != 0 else g * 0
    return (ga, gb)


@_complex_grad("acosh", save=(0,), inplace_too=True)
def _acosh(g, needs, out, z):
    # 1 / (sqrt(z - 1) sqrt(z + 1)): the principal branch's derivative (the real formula's
    # 1 / sqrt(z^2 - 1) is the other branch on half of the plane)
    return (g / _conj(_C.sqrt(z - 1) * _C.sqrt(z + 1)),)


@_complex_grad("vdot", save="all")
def _vdot(g, needs, out, a, b):
    # sum(conj(a) * b): holomorphic in b, anti-holomorphic in a
    return (_C.conj_physical(g) * b if needs[0] else None, g * a if needs[1] else None)


@_complex_grad("conj_physical")
def _conj_physical(g, needs, out, z):
    return (_C.conj_physical(g),)


@_complex_grad("view_as_real")
def _view_as_real(g, needs, out, z):
    return (_C.view_as_complex(g.contiguous()),)


@_complex_grad("view_as_complex")
def _view_as_complex(g, needs, out, x):
    return (_C.view_as_real(g),)


@_complex_grad("_linalg_eig", save=(0,), out=(0, 1))
def _eig(g, needs, out, A, compute_v=True):
    # torch's linalg_eig_backward: gA = V^-H (diag(gL) + P / conj(E)) V^H, E_ij = L_j - L_i and
    # P = V^H gV - V^H V diag(Re(diag(V^H gV))) (the part that the eigenvectors' normalisation
    # leaves free); real for a real A
    L, V = out
    gL, gV = g
    if not compute_v:
        L, V = _C._linalg_eig(A)
        gV = None
    Vh = _C.conj_physical(V).transpose(-2, -1)
    ret = _C.diag_embed(gL) if gL is not None else _C.zeros_like(V)
    if gV is not None and bool((gV != 0).any()):
        VhgV = Vh.matmul(gV)
        _formulas_linalg.check_phase_invariant("eig", VhgV.diagonal(0, -2, -1).imag)
        VhgV = VhgV - Vh.matmul(V * VhgV.diagonal(0, -2, -1).real.unsqueeze(-2))
        Lc = _C.conj_physical(L)
        E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
        E = E + _C.eye(E.shape[-1], dtype=E.dtype, device=E.device)
        P = VhgV / E
        ret = ret + P - _C.diag_embed(P.diagonal(0, -2, -1))
    gA = _C._linalg_solve_ex(Vh, ret.matmul(Vh), check_errors=False)[0]
    return (gA if A.dtype.is_complex else gA.real,)


for _name in AS_REAL + AS_WRITTEN:
    _COMPLEX_FORMULAS[_name] = _FORMULAS[_name]
for _name in CONJUGATED:
    _COMPLEX_FORMULAS[_name] = _conjugated(_FORMULAS[_name])
for _name in HERMITIAN:
    _COMPLEX_FORMULAS[_name] = _FORMULAS[_name]
# the views' own real formulas: the same as the complex ones (they are linear)
for _name in ("conj_physical", "view_as_real", "view_as_complex"):
    _FORMULAS.setdefault(_name, _COMPLEX_FORMULAS[_name])
