"""THE gradient table: op name (as the core hands it to the autograd hook) -> vector-Jacobian
product, written with ember ops so that every formula is itself differentiable (double backward).

An entry is ``vjp(grad, needs, result, *args, **kwargs) -> one gradient (or None) per positional
argument``. ``args`` are the op's canonical arguments: a tensor the entry asked to save is the
tensor itself, one it did not is a ``_Meta`` (shape, dtype); ``result`` is the (first) output when
the entry saves it. The engine then sums broadcast gradients back to each input's shape and casts
them to its dtype, so formulas stay one line each. Adding an op is one ``@grad(...)`` entry; an
op that reaches the hook without one fails at backward with "derivative for <op> is not
implemented". In-place variants (``<op>_``) reuse the out-of-place entry.
"""

from __future__ import annotations

import math

import ember
from ember import _C

from ._engine import _FORMULAS, _sum_to


class Entry:
    __slots__ = ("vjp", "save_inputs", "save_output", "inplace", "name", "save_if",
                 "diff_outputs")

    def __init__(self, name, vjp, save_inputs=(), save_output=False, inplace=False,
                 save_if=None, diff_outputs=None):
        self.name = name
        # positions of the outputs that carry a gradient (torch's output_differentiability);
        # None: all. The others get no zero-filled gradient when only some outputs have one.
        self.diff_outputs = diff_outputs
        self.vjp = vjp
        self.save_inputs = save_inputs  # True (all tensor args) or a tuple of positions
        self.save_output = save_output
        self.inplace = inplace
        # {position: positions of the gradients that read it}: a saved argument listed here is
        # kept only when one of those gradients is wanted; the formula must not read it otherwise
        # (it gets the argument's _Meta). None: every saved argument is kept.
        self.save_if = save_if


def grad(*names, save=(), out=False, inplace_too=False, save_if=None, diff_outputs=None,
         table=None):
    """Registers a vjp for `names`; ``inplace_too`` also registers ``<name>_``. ``save``: the
    positions of the tensor arguments the formula reads ("all": every one); ``save_if`` and
    ``diff_outputs``: see Entry; ``out``: the formula reads the result (a tuple of output
    numbers: those outputs). ``table``: the table to fill (_FORMULAS by default; the complex
    one for formulas of complex values)."""
    save_inputs = True if save == "all" else tuple(save)
    target = _FORMULAS if table is None else table

    def deco(fn):
        for n in names:
            target[n] = Entry(n, fn, save_inputs, out, save_if=save_if,
                              diff_outputs=diff_outputs)
            if inplace_too:
                target[n + "_"] = Entry(n + "_", fn, save_inputs, out, inplace=True,
                                        save_if=save_if)
        return fn

    return deco


def inplace(name, vjp, save=(), out=False):
    _FORMULAS[name] = Entry(name, vjp, True if save == "all" else tuple(save), out, inplace=True)


# save_if for a product of two operands: each is read only by the other's gradient
CROSS = {0: (1,), 1: (0,)}
# addmm-style (input, m1, m2): m1 is read by m2's gradient and m2 by m1's
CROSS_12 = {1: (2,), 2: (1,)}


def _zeros(g):
    return ember.zeros_like(g)


def _is_t(x):
    return isinstance(x, _C.Tensor)


# ---------------------------------------------------------------------------------------------
# unary (op_table.h)

LN2, LN10 = math.log(2.0), math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

_UNARY_X = {  # d/dx written in x (saved input)
    "log": lambda g, x: g / x,
    "log2": lambda g, x: g / (x * LN2),
    "log10": lambda g, x: g / (x * LN10),
    "log1p": lambda g, x: g / (x + 1),
    "sin": lambda g, x: g * x.cos(),
    "cos": lambda g, x: -(g * x.sin()),
    "asin": lambda g, x: g * (1 - x * x).rsqrt(),
    "acos": lambda g, x: -(g * (1 - x * x).rsqrt()),
    "atan": lambda g, x: g / (x * x + 1),
    "sinh": lambda g, x: g * x.cosh(),
    "cosh": lambda g, x: g * x.sinh(),
    "asinh": lambda g, x: g * (x * x + 1).rsqrt(),
    "acosh": lambda g, x: g * (x * x - 1).rsqrt(),
    "atanh": lambda g, x: g / (1 - x * x),
    "erf": lambda g, x: g * (-(x * x)).exp() * TWO_OVER_SQRT_PI,
    "erfc": lambda g, x: -(g * (-(x * x)).exp() * TWO_OVER_SQRT_PI),
    "abs": lambda g, x: g * x.sign(),
    "square": lambda g, x: g * x * 2,
}
_UNARY_OUT = {  # d/dx written in the result
    "exp": lambda g, y: g * y,
    "exp2": lambda g, y: g * y * LN2,
    "expm1": lambda g, y: g * (y + 1),
    "sqrt": lambda g, y: g / (y * 2),
    "rsqrt": lambda g, y: g * y * y * y * -0.5,
    "tan": lambda g, y: g * (y * y + 1),
    "tanh": lambda g, y: g * (1 - y * y),
    "sigmoid": lambda g, y: g * y * (1 - y),
    "reciprocal": lambda g, y: -(g * y * y),
    "relu": lambda g, y: _C.threshold_backward(g, y, 0),  # one pass, no bool temporary
}
_UNARY_NONE = {  # gradient independent of the values
    "neg": lambda g: -g,
    "frac": lambda g: g,
    "sign": _zeros,
    "angle": _zeros,  # of a real input (complex tensors are not in ember yet)
    "floor": _zeros,
    "ceil": _zeros,
    "trunc": _zeros,
}


def _unary_x(f):
    return lambda g, needs, out, x: (f(g, x),)


def _unary_out(f):
    return lambda g, needs, out, x: (f(g, out),)


def _unary_none(f):
    return lambda g, needs, out, x: (f(g),)


for _n, _f in _UNARY_X.items():
    grad(_n, save=(0,), inplace_too=True)(_unary_x(_f))
for _n, _f in _UNARY_OUT.items():
    grad(_n, out=True, inplace_too=True)(_unary_out(_f))
for _n, _f in _UNARY_NONE.items():
    grad(_n, inplace_too=True)(_unary_none(_f))


@grad("round", inplace_too=True)
def _round(g, needs, out, x, decimals=0):
    return (_zeros(g),)


@grad("nan_to_num", save=(0,), inplace_too=True)
def _nan_to_num(g, needs, out, x, nan=0.0, posinf=None, neginf=None):
    return (ember.where(x.isfinite(), g, 0.0),)

# ---------------------------------------------------------------------------------------------
# binary (op_table.h); either operand may be a Python number


@grad("add", inplace_too=True)
def _add(g, needs, out, a, b, alpha=None):
    return (g, g if alpha is None or alpha == 1 else g * alpha)


@grad("sub", inplace_too=True)
def _sub(g, needs, out, a, b, alpha=None):
    return (g, -g if alpha is None or alpha == 1 else g * (-alpha))


@grad("mul", save="all", inplace_too=True, save_if=CROSS)
def _mul(g, needs, out, a, b):
    return (g * b if needs[0] else None, g * a if needs[1] else None)


@grad("div", save="all", inplace_too=True, save_if={0: (1,)})
def _div(g, needs, out, a, b):
    return (g / b if needs[0] else None, -(g * a) / (b * b) if needs[1] else None)


@grad("floor_divide", "div_trunc", inplace_too=True)
def _int_div(g, needs, out, a, b):
    return (_zeros(g), _zeros(g))


@grad("remainder", save="all", inplace_too=True)
def _remainder(g, needs, out, a, b):
    return (g, -(g * (a / b).floor()) if needs[1] else None)


@grad("fmod", save="all", inplace_too=True)
def _fmod(g, needs, out, a, b):
    return (g, -(g * (a / b).trunc()) if needs[1] else None)


@grad("pow", save="all", inplace_too=True)
def _pow(g, needs, out, a, b):
    ga = gb = None
    if needs[0]:
        if _is_t(b):
            ga = ember.where(b == 0, 0.0, g * b * a ** (b - 1))
        else:
            ga = _zeros(g) if b == 0 else g * b * a ** (b - 1)
    if needs[1]:
        if _is_t(a):
            gb = ember.where((a == 0) & (b >= 0), 0.0, g * a ** b * a.log())
        else:
            gb = g * a ** b * math.log(a) if a > 0 else _zeros(g)
    return (ga, gb)


def _minmax(is_max):
    def vjp(g, needs, out, a, b):
        if not _is_t(b) or not _is_t(a):
            t, s = (a, b) if _is_t(a) else (b, a)
            keep = (t > s) if is_max else (t < s)
            half = ember.where(t == s, g * 0.5, 0.0)
            gt = ember.where(keep, g, 0.0) + half
            return (gt, None) if _is_t(a) else (None, gt)
        keep_a = (a > b) if is_max else (a < b)
        tie = a == b
        half = ember.where(tie, g * 0.5, 0.0)
        return (ember.where(keep_a, g, 0.0) + half if needs[0] else None,
                ember.where(keep_a | tie, 0.0, g) + half if needs[1] else None)

    return vjp


grad("maximum", save="all", inplace_too=True)(_minmax(True))
grad("minimum", save="all", inplace_too=True)(_minmax(False))


@grad("atan2", save="all", inplace_too=True)
def _atan2(g, needs, out, y, x):
    r = g / (x * x + y * y)
    return (r * x if needs[0] else None, -(r * y) if needs[1] else None)


@grad("hypot", save="all", out=True, inplace_too=True)
def _hypot(g, needs, out, a, b):
    return (g * a / out if needs[0] else None, g * b / out if needs[1] else None)


@grad("copysign", save=(0,), out=True, inplace_too=True)
def _copysign(g, needs, out, a, b):
    return (ember.where(a == 0, 0.0, g * (out / a)) if needs[0] else None, _zeros(g))


# ---------------------------------------------------------------------------------------------
# ternary / parametrised


@grad("where", save=(0,))
def _where(g, needs, out, cond, a, b):
    return (None, ember.where(cond, g, 0.0) if needs[1] else None,
            ember.where(cond, 0.0, g) if needs[2] else None)


def _clamp(g, needs, out, x, lo=None, hi=None):
    ok = None
    if lo is not None:
        ok = x >= lo
    if hi is not None:
        ok = (x <= hi) if ok is None else ok & (x <= hi)
    gx = g if ok is None else ember.where(ok, g, 0.0)
    glo = ember.where(x < lo, g, 0.0) if len(needs) > 1 and needs[1] else None
    ghi = ember.where(x > hi, g, 0.0) if len(needs) > 2 and needs[2] else None
    return (gx, glo, ghi)


grad("clamp", save="all", inplace_too=True)(_clamp)


@grad("lerp", save="all", inplace_too=True, save_if={0: (2,), 1: (2,), 2: (0, 1)})
def _lerp(g, needs, out, s, e, w):
    return (g * (1 - w) if needs[0] else None, g * w if needs[1] else None,
            g * (e - s) if needs[2] else None)


# ---------------------------------------------------------------------------------------------
# reductions


def _norm_dims(dim, ndim):
    if dim is None or dim == () or dim == []:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted(d % ndim if ndim else 0 for d in dim))


def _expand_back(g, shape, dim, keepdim):
    """A reduced gradient broadcast back over the input's shape."""
    shape = tuple(shape)
    if not keepdim and len(shape) > 0:
        for d in _norm_dims(dim, len(shape)):
            g = g.unsqueeze(d)
    return g.expand(shape)


def _count(shape, dim):
    n = 1
    for d in _norm_dims(dim, len(shape)):
        n *= shape[d] if shape else 1
    return n


@grad("sum")
def _sum(g, needs, out, x, dim=None, keepdim=False, dtype=None):
    return (_expand_back(g, x.shape, dim, keepdim),)


@grad("nansum", save=(0,))
def _nansum(g, needs, out, x, dim=None, keepdim=False, dtype=None):
    return (ember.where(x.isnan(), 0.0, _expand_back(g, x.shape, dim, keepdim)),)


@grad("mean")
def _mean(g, needs, out, x, dim=None, keepdim=False, dtype=None):
    return (_expand_back(g, x.shape, dim, keepdim) / max(_count(x.shape, dim), 1),)


@grad("nanmean", save=(0,))
def _nanmean(g, needs, out, x, dim=None, keepdim=False, dtype=None):
    ok = ~x.isnan()
    n = ok.sum(dim=_norm_dims(dim, x.ndim), keepdim=True).to(g.dtype)
    return (ember.where(ok, _expand_back(g, x.shape, dim, keepdim) / n, 0.0),)


@grad("prod", save=(0,), out=True)
def _prod(g, needs, out, x, dim=None, keepdim=False, dtype=None):
    # prod / x where the slice has no zero; where it has exactly one, that entry's gradient is
    # the product of the others (and the rest get 0); with two or more, everything gets 0.
    if x.ndim == 0:
        return (g,)
    ge = _expand_back(g, x.shape, dim, keepdim)
    oe = _expand_back(out, x.shape, dim, keepdim)
    zero = x == 0
    if ember.is_grad_enabled() and bool(zero.any()):
        # create_graph: the product of the others as exclusive cumulative products from both
        # ends (torch's prod_safe_zeros_backward), which the graph differentiates through
        # zeros too; the selects below would leave a zero's second derivatives out
        if dim is None:
            return ((ge.reshape(-1) * _product_of_others(x.reshape(-1), 0)).reshape(x.shape),)
        return (ge * _product_of_others(x, dim),)
    safe = ember.where(zero, 1.0, x)
    if dim is None:
        nz, others = zero.sum(), safe.prod()
    else:
        nz, others = zero.sum(dim=dim, keepdim=True), safe.prod(dim=dim, keepdim=True)
    one_zero = ember.where(zero, ge * others, 0.0)
    return (ember.where(nz == 0, ge * oe / safe, ember.where(nz == 1, one_zero, 0.0)),)


def _exclusive_cumprod(x, dim):
    """x_0 ... x_(i-1) along dim for every i (1 for the first): differentiable, no division."""
    n = x.shape[dim]
    ones = ember.ones_like(x.narrow(dim, 0, 1))
    return ember.cat([ones, x.narrow(dim, 0, n - 1)], dim).cumprod(dim) if n > 1 else ones


def _product_of_others(x, dim):
    """prod over dim of x without each entry itself, for every entry: (x_0 ... x_(i-1)) times
    (x_(i+1) ... x_(n-1)), no division."""
    return _exclusive_cumprod(x, dim) * _exclusive_cumprod(x.flip(dim), dim).flip(dim)


def _even(g, x, out, dim, keepdim):
    """Gradient of a max/min-like reduction, split evenly between tied extremes (as torch)."""
    oe = _expand_back(out, x.shape, dim, keepdim)
    mask = (x == oe).to(g.dtype)
    n = mask.sum(dim=_norm_dims(dim, x.ndim), keepdim=True) if x.ndim else mask
    return _expand_back(g, x.shape, dim, keepdim) * mask / n


def _max_like(g, needs, out, x, dim=None, keepdim=False):
    if isinstance(g, tuple):  # max(dim) -> (values, indices): route to the chosen index
        g = g[0]
        ar = ember.arange(x.shape[dim] if x.ndim else 1, device=x.device)
        d = dim % max(x.ndim, 1)
        ar = ar.reshape([-1] + [1] * (x.ndim - d - 1)) if x.ndim else ar.reshape(())
        idx = out if keepdim or x.ndim == 0 else out.unsqueeze(d)
        return (ember.where(ar == idx, _expand_back(g, x.shape, dim, keepdim), 0.0),)
    return (_even(g, x, out, dim, keepdim),)


def _max_vjp(g, needs, out, x, dim=None, keepdim=False):
    return _max_like(g, needs, out, x, dim, keepdim)


grad("max", "min", save=(0,), out=True)(_max_vjp)


@grad("amax", "amin", save=(0,), out=True)
def _amax(g, needs, out, x, dim=(), keepdim=False):
    return (_even(g, x, out, dim, keepdim),)


def _var_grad(g, x, dim, correction, keepdim):
    n = _count(x.shape, dim)
    dims = _norm_dims(dim, x.ndim)
    mu = x.mean(dim=dims, keepdim=True) if x.ndim else x
    return _expand_back(g, x.shape, dim, keepdim) * (x - mu) * (2.0 / max(n - correction, 0))


@grad("var", save=(0,))
def _var(g, needs, out, x, dim=None, correction=1, keepdim=False):
    return (_var_grad(g, x, dim, correction, keepdim),)


@grad("std", save=(0,), out=True)
def _std(g, needs, out, x, dim=None, correction=1, keepdim=False):
    return (_var_grad(g / (out * 2), x, dim, correction, keepdim),)


@grad("var_mean", save=(0,))
def _var_mean(g, needs, out, x, dim=None, correction=1, keepdim=False):
    gv, gm = g
    n = _count(x.shape, dim)
    return (_var_grad(gv, x, dim, correction, keepdim)
            + _expand_back(gm, x.shape, dim, keepdim) / n,)


@grad("std_mean", save=(0,), out=True)
def _std_mean(g, needs, out, x, dim=None, correction=1, keepdim=False):
    gs, gm = g
    n = _count(x.shape, dim)
    return (_var_grad(gs / (out * 2), x, dim, correction, keepdim)
            + _expand_back(gm, x.shape, dim, keepdim) / n,)


@grad("norm", save=(0,), out=True)
def _norm(g, needs, out, x, p="fro", dim=None, keepdim=False, dtype=None):
    # a norm of |x|: sgn (x / |x|) is the gradient of |x| for complex x too
    ge = _expand_back(g, x.shape, dim, keepdim)
    oe = _expand_back(out, x.shape, dim, keepdim)
    if p in ("fro", 2, 2.0):
        return (ember.where(oe == 0, 0.0, ge * x / oe),)
    if p in (1, 1.0):
        return (ge * x.sgn(),)
    if p == 0:
        return (_zeros(ge),)
    if p in (math.inf, -math.inf, "inf", "-inf"):
        return (_even(g, x.abs(), out, dim, keepdim) * x.sgn(),)
    a = x.abs()
    return (ember.where(oe == 0, 0.0, ge * x.sgn() * a ** (p - 1) / oe ** (p - 1)),)


def _rev_cumsum(g, dim):
    return g.sum(dim=dim, keepdim=True) - g.cumsum(dim) + g


@grad("cumsum", inplace_too=True)
def _cumsum(g, needs, out, x, dim, dtype=None):
    return (_rev_cumsum(g, dim) if x.ndim else g,)


@grad("cumprod", save=(0,), out=True, inplace_too=True)
def _cumprod(g, needs, out, x, dim, dtype=None):
    # dx_i = sum over k >= i of g_k * prod(x_j, j <= k, j != i): out_k / x_i where x has no zero
    # before i (torch's cumprod_backward, as its three cases)
    if x.ndim == 0 or x.shape[dim] == 1:
        return (g,)
    zero = x == 0
    if not bool(zero.any()):
        return (_rev_cumsum(g * out, dim) / x,)
    if ember.is_grad_enabled():  # create_graph: a form the graph differentiates through zeros
        return (_cumprod_grad_differentiable(g, x, dim),)
    seen = zero.cumsum(dim)  # zeros up to and including each entry
    before = seen == 0  # before the slice's first zero: out_k / x_i
    first = zero & (seen == 1)  # the first zero: (the product before it) times
    ones = ember.ones_like(x)  #   sum over k >= z of g_k * prod(x_j, z < j <= k)
    x_before = ember.where(before, x, ones)
    prefix = x_before.prod(dim, keepdim=True)
    after = ember.where(seen >= 1, ember.where(first, ones, x), ones).cumprod(dim)
    inner = ember.where(seen >= 1, g * after, 0.0).sum(dim, keepdim=True)
    part_before = _rev_cumsum(g * out, dim) / x_before
    return (ember.where(before, part_before, ember.where(first, prefix * inner, 0.0)),)


def _cumprod_grad_differentiable(g, x, dim):
    """cumprod's input gradient as (prod of x before i) * S_i, S_i = sum over k >= i of g_k *
    prod(x_j, i < j <= k), with S from the cumulative products of an (i, k) matrix per slice:
    no division, so its own derivatives hold at zeros (O(n^2), as torch's double backward)."""
    xm, gm = x.movedim(dim, -1), g.movedim(dim, -1)
    n = xm.shape[-1]
    idx = ember.arange(n, device=x.device)
    later = idx.unsqueeze(0) > idx.unsqueeze(1)  # [i, j]: j > i
    runs = ember.where(later, xm.unsqueeze(-2), ember.ones_like(xm).unsqueeze(-2)).cumprod(-1)
    upper = idx.unsqueeze(0) >= idx.unsqueeze(1)  # [i, k]: k >= i
    S = ember.where(upper, runs * gm.unsqueeze(-2), 0.0).sum(-1)
    return (_exclusive_cumprod(xm, -1) * S).movedim(-1, dim)


# Plain backward runs the core's one-pass kernels; under create_graph the composed formulas.
@grad("softmax", out=True)
def _softmax(g, needs, out, x, dim, dtype=None):
    if not _C.is_grad_enabled():
        return (_C._softmax_backward_data(g.to(out.dtype), out, dim, x.dtype),)
    return (out * (g - (g * out).sum(dim=dim, keepdim=True)),)


@grad("log_softmax", out=True)
def _log_softmax(g, needs, out, x, dim, dtype=None):
    if not _C.is_grad_enabled():
        return (_C._log_softmax_backward_data(g.to(out.dtype), out, dim, x.dtype),)
    return (g - out.exp() * g.sum(dim=dim, keepdim=True),)


@grad("logsumexp", save=(0,), out=True)
def _logsumexp(g, needs, out, x, dim, keepdim=False):
    return (_expand_back(g, x.shape, dim, keepdim)
            * (x - _expand_back(out, x.shape, dim, keepdim)).exp(),)


# ---------------------------------------------------------------------------------------------
# matrix products (ops/linalg.h)


def _col_major(t):
    """True when the last two dims of `t` (a tensor or a _Meta with strides) are laid out as a
    transposed contiguous matrix (a Linear weight's ``w.t()``): PyTorch's test in
    mm_mat1_backward / mm_mat2_backward."""
    s = t.stride()
    return len(s) >= 2 and s[-2] == 1 and s[-1] == t.shape[-2] and t.shape[-1] != 1


def _mt(t):
    return t.transpose(-1, -2)


def _mat1_grad(g, m1, m2):
    """g @ m2^T, produced in m1's layout (PyTorch's mm_mat1_backward)."""
    return _mt(m2.matmul(_mt(g))) if _col_major(m1) else g.matmul(_mt(m2))


def _mat2_grad(g, m1, m2):
    """m1^T @ g, produced in m2's layout (PyTorch's mm_mat2_backward): for ``x @ w.t()`` the
    gradient of ``w.t()`` comes out column-major, so ``w.grad`` is contiguous."""
    return _mt(_mt(g).matmul(m1)) if _col_major(m2) else _mt(m1).matmul(g)


@grad("mm", save="all", save_if=CROSS)
def _mm(g, needs, out, a, b):
    return (_mat1_grad(g, a, b) if needs[0] else None, _mat2_grad(g, a, b) if needs[1] else None)


@grad("bmm", save="all", save_if=CROSS)
def _bmm(g, needs, out, a, b):
    return (_mat1_grad(g, a, b) if needs[0] else None, _mat2_grad(g, a, b) if needs[1] else None)


@grad("matmul", save="all", save_if=CROSS)
def _matmul(g, needs, out, a, b):
    # a (b) is a _Meta with strides when only b's (a's) gradient is wanted: its values are not read
    if a.ndim == 1 and b.ndim == 1:
        return (g * b if needs[0] else None, g * a if needs[1] else None)
    if a.ndim >= 3 and b.ndim == 2:  # folded into one mm, as PyTorch's matmul does
        k = a.shape[-1]
        g2 = g.reshape(-1, b.shape[-1])
        ga = gb = None
        if needs[0]:
            ga = (_mat1_grad(g2, a.reshape(-1, k), b) if _is_t(a) else g2.matmul(_mt(b)))
            ga = ga.reshape(a.shape)
        if needs[1]:
            gb = _mat2_grad(g2, a.reshape(-1, k), b)
        return (ga, gb)
    # a 1-d operand takes part as a matrix with a dim of 1 (a _Meta of one is laid out by rows)
    a1 = a.unsqueeze(0) if a.ndim == 1 and _is_t(a) else a
    b1 = b.unsqueeze(-1) if b.ndim == 1 and _is_t(b) else b
    g1 = g
    if a.ndim == 1:
        g1 = g1.unsqueeze(-2)
    if b.ndim == 1:
        g1 = g1.unsqueeze(-1)
    ga = gb = None
    if needs[0]:
        ga = _mat1_grad(g1, a1, b1)
        if a.ndim == 1:
            ga = ga.squeeze(-2)
        ga = _sum_to(ga, a.shape)
    if needs[1]:
        gb = _mat2_grad(g1, a1, b1)
        if b.ndim == 1:
            gb = gb.squeeze(-1)
        gb = _sum_to(gb, b.shape)
    return (ga, gb)


@grad("mv", save="all", save_if=CROSS)
def _mv(g, needs, out, a, v):
    return (ember.outer(g, v) if needs[0] else None, a.t().mv(g) if needs[1] else None)


@grad("dot", "vdot", save="all", save_if=CROSS)
def _dot(g, needs, out, a, b):
    return (g * b if needs[0] else None, g * a if needs[1] else None)


@grad("inner", save="all", save_if=CROSS)
def _inner(g, needs, out, a, b):
    if a.ndim == 0 or b.ndim == 0:
        return _mul(g, needs, out, a, b)
    k = a.shape[-1]
    g2 = g.reshape(_numel(a.shape[:-1]), _numel(b.shape[:-1]))
    return (g2.mm(b.reshape(-1, k)).reshape(a.shape) if needs[0] else None,
            g2.t().mm(a.reshape(-1, k)).reshape(b.shape) if needs[1] else None)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


@grad("outer", "ger", save="all", save_if=CROSS)
def _outer(g, needs, out, u, v):
    return (g.mv(v) if needs[0] else None, g.t().mv(u) if needs[1] else None)


def _scaled(g, s):
    return g if s == 1 else (_zeros(g) if s == 0 else g * s)


@grad("addmm", save=(1, 2), inplace_too=True, save_if=CROSS_12)
def _addmm(g, needs, out, inp, m1, m2, beta=1, alpha=1):
    return (_scaled(g, beta) if needs[0] else None,
            _scaled(_mat1_grad(g, m1, m2), alpha) if needs[1] else None,
            _scaled(_mat2_grad(g, m1, m2), alpha) if needs[2] else None)


@grad("addmv", save=(1, 2), inplace_too=True, save_if=CROSS_12)
def _addmv(g, needs, out, inp, mat, vec, beta=1, alpha=1):
    return (_scaled(g, beta) if needs[0] else None,
            _scaled(ember.outer(g, vec), alpha) if needs[1] else None,
            _scaled(mat.t().mv(g), alpha) if needs[2] else None)


@grad("baddbmm", save=(1, 2), inplace_too=True, save_if=CROSS_12)
def _baddbmm(g, needs, out, inp, b1, b2, beta=1, alpha=1):
    return (_scaled(g, beta) if needs[0] else None,
            _scaled(_mat1_grad(g, b1, b2), alpha) if needs[1] else None,
            _scaled(_mat2_grad(g, b1, b2), alpha) if needs[2] else None)


@grad("addbmm", save=(1, 2), inplace_too=True, save_if=CROSS_12)
def _addbmm(g, needs, out, inp, b1, b2, beta=1, alpha=1):
    ge = g.unsqueeze(0).expand((b1.shape[0],) + tuple(g.shape))
    return (_scaled(g, beta) if needs[0] else None,
            _scaled(ge.bmm(b2.transpose(1, 2)), alpha) if needs[1] else None,
            _scaled(b1.transpose(1, 2).bmm(ge), alpha) if needs[2] else None)


# ---------------------------------------------------------------------------------------------
# views, copies, indexing (bind_tensor.cpp)


@grad("_to_dtype", "clone", "_expand")
def _identity(g, needs, out, x, *rest):
    return (g,)  # the engine casts to x's dtype / sums over expanded dims


@grad("_to_device")
def _to_device_back(g, needs, out, x, device, dtype, non_blocking):
    return (g.to(x.device, x.dtype),)  # the gradient goes back where the input lives


@grad("_view", "reshape", "squeeze", "unsqueeze", "flatten", "unflatten")
def _reshape_back(g, needs, out, x, *rest):
    return (g.reshape(x.shape),)


@grad("permute")
def _permute(g, needs, out, x, dims):
    nd = len(dims)
    inv = [0] * nd
    for i, d in enumerate(dims):
        inv[d % nd] = i
    return (g.permute(inv),)


@grad("transpose")
def _transpose(g, needs, out, x, d0, d1):
    return (g.transpose(d0, d1),)


@grad("t")
def _t(g, needs, out, x):
    return (g.t(),)


def _embed(g, shape, index):
    """A zero tensor of `shape` with `g` written at `index` (differentiable in g)."""
    z = ember.zeros(tuple(shape), dtype=g.dtype, device=g.device)
    z[index] = g
    return z


def _is_advanced(index):
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, (_C.Tensor, list, bool)) for i in items)


@grad("_getitem", save=(1,))  # index tensors are kept
def _getitem(g, needs, out, x, index):
    if _is_advanced(index):  # repeated indices: the gradients of their copies add up
        n = 1
        for s in x.shape:
            n *= s
        pos = ember.arange(n, device=g.device).reshape(tuple(x.shape))[index].reshape(-1)
        z = ember.zeros(n, dtype=g.dtype, device=g.device).index_add(0, pos, g.reshape(-1))
        return (z.reshape(tuple(x.shape)), None)
    return (_embed(g, x.shape, index), None)


@grad("narrow")
def _narrow(g, needs, out, x, dim, start, length):
    d = dim % x.ndim
    start = start % x.shape[d] if start < 0 else start
    return (_embed(g, x.shape, (slice(None),) * d + (slice(start, start + length),)),)


@grad("select")
def _select(g, needs, out, x, dim, index):
    d = dim % x.ndim
    return (_embed(g, x.shape, (slice(None),) * d + (index,)),)


# The splitting ops (ember._shape routes them through the hook as one node): the pieces'
# gradients, zeros where a piece got none, are joined back in one pass.
@grad("split_with_sizes")
def _split_with_sizes(g, needs, out, x, split_sizes, dim):
    return (ember.cat(list(g), dim),)


@grad("unbind")
def _unbind(g, needs, out, x, dim):
    # one output (a dim of size 1): the node hands its gradient over bare, not in a tuple
    gs = [g] if isinstance(g, _C.Tensor) else list(g)
    like = next(p for p in gs if p is not None)  # all pieces share one shape
    return (ember.stack([ember.zeros_like(like) if p is None else p for p in gs], dim),)


# x's geometry only (save_if with no users: a _StridedMeta), not its values, so that writing
# through the view in place (fill_diagonal_'s fill_) leaves the graph usable, as torch's
@grad("as_strided", save_if={0: ()})
def _as_strided(g, needs, out, x, size, stride, offset=None):
    base = x.storage_offset()
    off = base if offset is None else offset
    z = ember.zeros(x.numel(), dtype=g.dtype, device=g.device)
    z.as_strided(size, stride, off - base).copy_(g)
    return (z.reshape(x.shape),)


def _setitem_vjp(g, needs, out, x, index, value):
    gx = None
    if needs[0]:
        gx = g.clone()
        gx[index] = 0.0
    return (gx, None, g[index] if len(needs) > 2 and needs[2] else None)


inplace("_setitem", _setitem_vjp, save=(1,))
inplace("_copy_", lambda g, needs, out, dst, src: (_zeros(g), g))
# a tensor value (0-d) gets the sum of the output's gradient; the inputs are not saved, so
# whether it is one comes from `needs`
inplace("_fill_", lambda g, needs, out, dst, v: (
    _zeros(g), g.sum() if len(needs) > 1 and needs[1] else None))

# random: sampled values do not depend on the parameters' values (torch gives zeros)
for _n in ("uniform_", "normal_", "exponential_", "bernoulli_", "random_"):
    inplace(_n, lambda g, needs, out, x, *rest, **kw: tuple(
        _zeros(g) if i == 0 else None for i in range(1 + len(rest))))


@grad("bernoulli", "normal")
def _random_zero(g, needs, out, *args, generator=None):
    return tuple(_zeros(g) if n else None for n in needs)




# ---------------------------------------------------------------------------------------------
# erfinv, sinc, deg2rad/rad2deg, logaddexp/logaddexp2, xlogy, fmax/fmin (op_table.h) and logit
# (the core's shape, sorting, indexing and linear-algebra ops are in _formulas_tensor.py)


@grad("erfinv", out=True, inplace_too=True)
def _erfinv(g, needs, out, x):
    return (g * (out * out).exp() * (math.sqrt(math.pi) / 2),)


@grad("deg2rad", inplace_too=True)
def _deg2rad(g, needs, out, x):
    return (g * (math.pi / 180.0),)


@grad("rad2deg", inplace_too=True)
def _rad2deg(g, needs, out, x):
    return (g * (180.0 / math.pi),)


@grad("logaddexp", save="all", out=True, inplace_too=True)
def _logaddexp(g, needs, out, a, b):
    return (g * (a - out).exp() if needs[0] else None, g * (b - out).exp() if needs[1] else None)


@grad("logaddexp2", save="all", out=True, inplace_too=True)
def _logaddexp2(g, needs, out, a, b):
    return (g * (a - out).exp2() if needs[0] else None,
            g * (b - out).exp2() if needs[1] else None)


@grad("xlogy", save="all", inplace_too=True)
def _xlogy(g, needs, out, x, y):
    # torch's: d/dx = log(y) (as xlogy(g, y): 0 where g is), 0 where x == 0 and y <= 0
    gx = gy = None
    if needs[0]:
        gx = ember.where((x == 0) & (y <= 0), 0.0, ember.xlogy(g, y))
    if needs[1]:
        gy = g * x / y
    return (gx, gy)


def _fminmax(is_max):
    """fmax/fmin, torch's rule: a tie goes to the first operand, a NaN loses to a number."""
    def vjp(g, needs, out, a, b):
        first = (a >= b) if is_max else (a <= b)
        first = first | (b.isnan() if _is_t(b) else math.isnan(b))
        return (ember.where(first, g, 0.0) if needs[0] else None,
                ember.where(first, 0.0, g) if needs[1] else None)

    return vjp


grad("fmax", save="all", inplace_too=True)(_fminmax(True))
grad("fmin", save="all", inplace_too=True)(_fminmax(False))


@grad("logit", save=(0,), inplace_too=True)
def _logit(g, needs, out, x, eps=None):
    r = g / (x * (1 - x))
    if eps is not None and eps >= 0:  # no gradient where the input was clamped
        r = ember.where((x < eps) | (x > 1 - eps), 0.0, r)
    return (r,)


@grad("sinc", save=(0,), inplace_too=True)
def _sinc(g, needs, out, x):
    # (cos(pi x) - sinc(x)) / x, 0 at 0: evaluated at 1 where x == 0 so that no branch holds
    # 0/0, whose NaN would reach double backward through where's unselected side
    zero = x == 0
    xs = ember.where(zero, 1.0, x)
    d = ((xs * math.pi).cos() - xs.sinc()) / xs
    return (ember.where(zero, 0.0, d) * g,)


# ---------------------------------------------------------------------------------------------
# lgamma, digamma, i0 and torch.special's table ops (op_table.h: bound as _C._special_<f>)

_SQRT_2PI = math.sqrt(2 * math.pi)


@grad("lgamma", save=(0,), inplace_too=True)
def _lgamma(g, needs, out, x):
    return (g * x.digamma(),)


@grad("digamma", save=(0,), inplace_too=True)
def _digamma(g, needs, out, x):
    return (g * _C._special_zeta(2.0, x),)  # polygamma(1, x)


@grad("i0", save=(0,), inplace_too=True)
def _i0(g, needs, out, x):
    return (g * _C._special_i1(x),)


@grad("_special_i0e", save=(0,), out=True, inplace_too=True)
def _i0e(g, needs, out, x):
    return (g * (_C._special_i1e(x) - x.sign() * out),)


@grad("_special_i1", save=(0,), out=True, inplace_too=True)
def _i1(g, needs, out, x):
    # i0(x) - i1(x) / x, 1/2 at 0: evaluated at 1 there so that no branch holds 0/0
    zero = x == 0
    xs = ember.where(zero, 1.0, x)
    return (g * ember.where(zero, 0.5, xs.i0() - _C._special_i1(xs) / xs),)


@grad("_special_i1e", save=(0,), out=True, inplace_too=True)
def _i1e(g, needs, out, x):
    zero = x == 0
    xs = ember.where(zero, 1.0, x)
    d = _C._special_i0e(xs) - _C._special_i1e(xs) * (xs.sign() + xs.reciprocal())
    return (g * ember.where(zero, 0.5, d),)


@grad("_special_ndtr", save=(0,), inplace_too=True)
def _ndtr(g, needs, out, x):
    return (g * (x * x * -0.5).exp() / _SQRT_2PI,)


@grad("_special_ndtri", out=True, inplace_too=True)
def _ndtri(g, needs, out, x):
    return (g * (out * out * 0.5).exp() * _SQRT_2PI,)


@grad("_special_log_ndtr", save=(0,), out=True, inplace_too=True)
def _log_ndtr(g, needs, out, x):
    return (g * (-(out + x * x * 0.5)).exp() / _SQRT_2PI,)


@grad("_special_erfcx", save=(0,), out=True, inplace_too=True)
def _erfcx(g, needs, out, x):
    return (g * (2 * x * out - 2 / math.sqrt(math.pi)),)


@grad("_special_entr", save=(0,), inplace_too=True)
def _entr(g, needs, out, x):
    return (g * -(1 + x.log()),)


@grad("_special_xlog1py", save="all", inplace_too=True)
def _xlog1py(g, needs, out, x, y):
    # torch's: d/dx = log1p(y), 0 where x == 0 and y <= -1; d/dy = x / (1 + y)
    gx = gy = None
    if needs[0]:
        gx = ember.where((x == 0) & (y <= -1), 0.0, _C._special_xlog1py(g, y))
    if needs[1]:
        gy = g * x / (1 + y)
    return (gx, gy)


@grad("_special_zeta", save="all", inplace_too=True)
def _zeta(g, needs, out, s, q):
    if needs[0]:  # as torch, which has no formula for the order either
        raise NotImplementedError("the derivative of special.zeta for 'self' (the order) is not "
                                  "implemented")
    return (None, g * -s * _C._special_zeta(s + 1, q))


def _igamma_vjp(sign):
    def vjp(g, needs, out, a, x):
        if needs[0]:  # as torch, which has no formula for the shape parameter either
            raise NotImplementedError("the derivative of igamma/igammac for 'input' (the shape "
                                      "parameter a) is not implemented")
        # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) = -d/dx Q(a, x)
        density = ((a - 1) * x.log() - x - ember.lgamma(a)).exp()
        return (None, g * density * sign)

    return vjp


grad("igamma", save="all", inplace_too=True)(_igamma_vjp(1.0))
grad("igammac", save="all", inplace_too=True)(_igamma_vjp(-1.0))


# torch.special's orthogonal polynomials, its Bessel functions J, Y, K (and the scaled K) and Airy
# Ai are not differentiable in torch: their results do not require grad (backward through them
# is torch's "does not require grad" error).
ORTHOGONAL_POLYNOMIALS = tuple(
    f"{prefix}{family}_polynomial_{kind}"
    for prefix, family, kind in [("", "chebyshev", k) for k in "tuvw"]
    + [("shifted_", "chebyshev", k) for k in "tuvw"]
    + [("", "hermite", "h"), ("", "hermite", "he"), ("", "laguerre", "l"), ("", "legendre", "p")])
BESSEL_AIRY = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
               "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
               "airy_ai")


def _not_implemented(name):
    def vjp(g, needs, out, *inputs, **options):
        raise NotImplementedError(f"the derivative for '{name}' is not implemented.")

    return vjp


for _n in ORTHOGONAL_POLYNOMIALS + BESSEL_AIRY:
    grad("_special_" + _n, diff_outputs=())(_not_implemented("special_" + _n))
    inplace("_special_" + _n + "_", _not_implemented("special_" + _n))

# geqrf and the LDL factorization have no derivative in torch
grad("_geqrf")(_not_implemented("geqrf"))
grad("_linalg_ldl_factor_ex")(_not_implemented("linalg_ldl_factor_ex"))
grad("_linalg_ldl_solve")(_not_implemented("linalg_ldl_solve"))
# linalg.eig: its results are complex, so a recorded call is refused at the forward
# (_formulas_complex.py has no entry); this entry only names the op
grad("_linalg_eig")(_not_implemented("linalg_eig"))

