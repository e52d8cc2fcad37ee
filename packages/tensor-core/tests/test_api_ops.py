"""The aliases (arccos, subtract, fix, ...), the compositions of ember/_composite_ops/ (new_*,
addcmul/addcdiv/addr, aminmax, cdist, cov, renorm, ...) and torch.special's functions: values
against NumPy or hand-computed formulas, errors with torch's classes, and against torch where it
is installed. The table's special functions (lgamma, digamma, i0, special.i0e, ...) are also in
the op database (ember.testing.opdb) and its generic tests."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import ember
from ember import special

F64 = ember.float64


def t(values, dtype=F64):
    return ember.tensor(values, dtype=dtype)


def close(got, want, rtol=1e-12, atol=1e-14):
    np.testing.assert_allclose(np.asarray(got.tolist() if isinstance(got, ember.Tensor) else got,
                                          dtype=np.float64),
                               np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol)


def rand(*shape, seed=0, lo=-2.0, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


# ---- aliases ----

ALIASES = {
    "absolute": "abs", "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arccosh": "acosh",
    "arcsinh": "asinh", "arctanh": "atanh", "negative": "neg", "fix": "trunc", "sgn": "sign",
}
BINARY_ALIASES = {
    "arctan2": "atan2", "subtract": "sub", "multiply": "mul", "divide": "div",
    "true_divide": "div", "greater": "gt", "greater_equal": "ge", "less": "lt",
    "less_equal": "le", "not_equal": "ne",
}


def _domain_input(canonical):
    if canonical == "acosh":
        return t([1.5, 2.0, 3.25])
    return t([-0.5, 0.25, 0.75])


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_unary_alias_is_its_op(alias):
    canonical = ALIASES[alias]
    x = _domain_input(canonical)
    want = getattr(ember, canonical)(x).tolist()
    assert getattr(ember, alias)(x).tolist() == want
    assert getattr(x, alias)().tolist() == want
    y = x.clone()
    assert getattr(y, alias + "_")() is y and y.tolist() == want
    out = ember.empty(3, dtype=F64)
    assert getattr(ember, alias)(x, out=out) is out and out.tolist() == want
    with pytest.raises(TypeError, match=rf"{alias}\(\): argument 'input'"):
        getattr(ember, alias)([1.0])


@pytest.mark.parametrize("alias", sorted(BINARY_ALIASES))
def test_binary_alias_is_its_op(alias):
    canonical = BINARY_ALIASES[alias]
    a, b = t([1.5, -2.0, 3.0]), t([0.5, -2.0, 4.0])
    want = getattr(ember, canonical)(a, b).tolist()
    assert getattr(ember, alias)(a, b).tolist() == want
    assert getattr(a, alias)(b).tolist() == want
    if canonical in ("gt", "ge", "lt", "le", "ne"):
        return  # in place they write 0/1 into a float tensor: checked below
    c = a.clone()
    getattr(c, alias + "_")(b)
    assert c.tolist() == want


def test_alias_keywords_are_the_ops():
    a, b = t([7.0, -7.0]), t([2.0, 2.0])
    assert ember.subtract(a, b, alpha=2).tolist() == [3.0, -11.0]
    assert ember.divide(a, b, rounding_mode="floor").tolist() == [3.0, -4.0]
    assert a.greater_(0).tolist() == [1.0, 0.0]
    with pytest.raises(TypeError, match="true_divide"):
        ember.true_divide(a, b, rounding_mode="floor")


def test_alias_gradients_are_their_ops():
    x = t([0.2, -0.4]).requires_grad_()
    ember.arccos(x).sum().backward()
    close(x.grad, [-1 / math.sqrt(1 - 0.04), -1 / math.sqrt(1 - 0.16)])


# ---- the table's special functions: points the op database does not sample ----

def test_digamma_poles_and_negative_arguments():
    got = ember.digamma(t([0.0, -0.0, -1.0, -2.5, 1.0, 0.5])).tolist()
    assert got[0] == -math.inf and got[1] == math.inf and math.isnan(got[2])
    euler = 0.57721566490153286061
    # digamma(-2.5) = digamma(3.5) (reflection: pi / tan(pi x) = 0 at x = -2.5)
    close(got[3:], [-euler - 2 * math.log(2) + 2 + 2 / 3 + 2 / 5, -euler,
                    -euler - 2 * math.log(2)], rtol=1e-13)


def test_lgamma_values():
    x = [0.5, 1.0, 3.0, -0.5, 100.0]
    close(ember.lgamma(t(x)), [math.lgamma(v) for v in x])
    assert ember.lgamma(t([0.0, -1.0])).tolist() == [math.inf, math.inf]


def test_bessel_i_large_arguments_and_symmetry():
    x = t([-30.0, 30.0, 700.0])
    # e^-x I0(x) ~ (1 + 1/(8x) + 9/(128x^2) + 225/(3072 x^3)) / sqrt(2 pi x)
    v = 700.0
    approx = (1 + 1 / (8 * v) + 9 / (128 * v**2) + 225 / (3072 * v**3)) / math.sqrt(2 * math.pi * v)
    close(special.i0e(x)[2], approx, rtol=1e-10)
    assert special.i1(x)[0].item() == -special.i1(x)[1].item()
    assert special.i0e(x)[0].item() == special.i0e(x)[1].item()
    assert math.isinf(ember.i0(t([800.0])).item())
    assert special.i1(t([0.0])).item() == 0.0


def test_normal_distribution_functions_in_the_tails():
    # log Phi(-40): the asymptotic series -x^2/2 - log(-x sqrt(2 pi)) + log(1 - 1/x^2 + 3/x^4)
    x = -40.0
    want = -x * x / 2 - math.log(-x * math.sqrt(2 * math.pi)) + math.log1p(-1 / x**2 + 3 / x**4
                                                                          - 15 / x**6)
    close(special.log_ndtr(t([x])), [want], rtol=1e-12)
    p = t([1e-300, 1e-20, 0.5, 1 - 2**-30])
    back = special.ndtr(special.ndtri(p))
    close(back, p.tolist(), rtol=1e-13)
    assert special.ndtri(t([0.0, 1.0])).tolist() == [-math.inf, math.inf]
    assert all(math.isnan(v) for v in special.ndtri(t([-0.1, 1.1])).tolist())
    # erfcx's asymptotic branch: 1 / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4))
    v = 1e4
    close(special.erfcx(t([v])), [(1 - 1 / (2 * v * v) + 3 / (4 * v**4)) / (v * math.sqrt(math.pi))],
          rtol=1e-14)
    assert special.erfcx(t([math.inf])).item() == 0.0


def test_entr_xlog1py_zeta_values():
    assert special.entr(t([-1.0, 0.0, 0.5])).tolist() == [-math.inf, 0.0, -0.5 * math.log(0.5)]
    close(special.xlog1py(t([0.0, 2.0]), t([-1.0, 1.0])), [0.0, 2 * math.log(2)])
    assert math.isnan(special.xlog1py(t([0.0]), t([math.nan])).item())
    close(special.zeta(t([2.0, 4.0]), t([1.0, 1.0])), [math.pi**2 / 6, math.pi**4 / 90],
          rtol=1e-14)
    close(special.zeta(2.0, t([2.0])), [math.pi**2 / 6 - 1], rtol=1e-14)
    assert special.zeta(t([1.0]), t([2.0])).item() == math.inf
    assert math.isnan(special.zeta(t([0.5]), t([2.0])).item())


def test_polygamma_and_mvlgamma():
    apery = 1.2020569031595942854
    close(ember.polygamma(1, t([1.0, 0.5])), [math.pi**2 / 6, math.pi**2 / 2], rtol=1e-13)
    close(ember.polygamma(2, t([1.0])), [-2 * apery], rtol=1e-13)
    close(t([1.0]).polygamma(3), [math.pi**4 / 15], rtol=1e-13)
    close(ember.polygamma(0, t([1.0])), ember.digamma(t([1.0])).tolist())
    y = t([2.0])
    y.polygamma_(1)
    close(y, [math.pi**2 / 6 - 1], rtol=1e-13)
    with pytest.raises(RuntimeError, match="negative n"):
        ember.polygamma(-1, t([1.0]))
    x = [2.5, 4.0]
    want = [sum(math.lgamma(v - i / 2) for i in range(3)) + 3 * 2 / 4 * math.log(math.pi)
            for v in x]
    close(ember.mvlgamma(t(x), 3), want, rtol=1e-13)
    close(special.multigammaln(t(x), 3), want, rtol=1e-13)
    assert ember.mvlgamma(t([0.5]), 3).item() == math.inf  # lgamma(0): torch checks no domain
    with pytest.raises(RuntimeError, match="greater than or equal to 1"):
        ember.mvlgamma(t([0.5]), 0)


def test_special_names():
    assert special.gammaln is ember.lgamma and special.psi is ember.digamma
    close(special.spherical_bessel_j0(t([0.0, 2.0])), [1.0, math.sin(2.0) / 2.0])
    assert special.i0 is ember.i0


# ---- new_* ----

def test_new_factories_take_self_dtype_and_device():
    x = ember.ones(2, dtype=ember.int32)
    z = x.new_zeros(2, 3)
    assert z.shape == (2, 3) and z.dtype == ember.int32 and z.sum().item() == 0
    assert x.new_zeros((4,)).shape == (4,)
    o = x.new_ones([2], dtype=F64, requires_grad=True)
    assert o.dtype == F64 and o.requires_grad and o.tolist() == [1.0, 1.0]
    f = x.new_full((2, 2), 7)
    assert f.dtype == ember.int32 and f.tolist() == [[7, 7], [7, 7]]
    e = x.new_empty(3, 1)
    assert e.shape == (3, 1) and e.dtype == ember.int32
    s = x.new_empty_strided((2, 3), (1, 2))
    assert s.shape == (2, 3) and s.stride() == (1, 2)
    n = x.new_tensor([1.7, 2.2])
    assert n.dtype == ember.int32 and n.tolist() == [1, 2]
    src = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="copy construct"):
        c = src.new_tensor(src)
    assert not c.requires_grad and c.tolist() == [1.0, 2.0]
    c[0] = 5.0
    assert src[0].item() == 1.0  # a copy
    assert x.type_as(ember.zeros(1)).dtype == ember.float32
    with pytest.raises(TypeError, match="new_zeros"):
        x.new_zeros("a")


# ---- pointwise compositions ----

def test_addcmul_addcdiv():
    a, b, c = rand(3, 4), rand(3, 1, seed=1), rand(4, seed=2) + 3
    ta, tb, tc = t(a.tolist()), t(b.tolist()), t(c.tolist())
    close(ember.addcmul(ta, tb, tc, value=0.5), a + 0.5 * b * c)
    close(ta.addcdiv(tb, tc, value=-2), a - 2 * b / c)
    y = ta.clone()
    assert y.addcmul_(tb, tc) is y
    close(y, a + b * c)
    y = ta.clone()
    y.addcdiv_(tb, tc, value=3)
    close(y, a + 3 * b / c)
    out = ember.empty(3, 4, dtype=F64)
    assert ember.addcmul(ta, tb, tc, out=out) is out
    close(out, a + b * c)
    i = ember.tensor([1, 2])
    assert ember.addcmul(i, i, i, value=2).tolist() == [3, 10]
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        ember.addcdiv(i, i, i)
    with pytest.raises(TypeError, match="addcmul"):
        ember.addcmul(ta, tb, 1.0)


def test_addr():
    m, v1, v2 = rand(3, 4), rand(3, seed=1), rand(4, seed=2)
    tm, t1, t2 = t(m.tolist()), t(v1.tolist()), t(v2.tolist())
    close(ember.addr(tm, t1, t2, beta=0.5, alpha=2), 0.5 * m + 2 * np.outer(v1, v2))
    close(ember.addr(t(m[0].tolist()), t1, t2), m[0] + np.outer(v1, v2))  # input broadcasts
    nan = ember.full((3, 4), math.nan, dtype=F64)
    close(ember.addr(nan, t1, t2, beta=0), np.outer(v1, v2))  # beta=0 ignores input's NaN
    y = tm.clone()
    y.addr_(t1, t2, alpha=-1)
    close(y, m - np.outer(v1, v2))
    with pytest.raises(RuntimeError, match="Expected 1-D argument vec1"):
        ember.addr(tm, tm, t2)


def test_clamp_min_max_float_power_ldexp_heaviside():
    x = t([-2.0, 0.5, 3.0])
    assert ember.clamp_min(x, 0.0).tolist() == [0.0, 0.5, 3.0]
    assert x.clamp_max(1.0).tolist() == [-2.0, 0.5, 1.0]
    y = x.clone()
    y.clamp_min_(t([0.0, 1.0, 0.0]))
    assert y.tolist() == [0.0, 1.0, 3.0]
    p = ember.float_power(ember.tensor([2, 3]), 2)
    assert p.dtype == F64 and p.tolist() == [4.0, 9.0]
    assert ember.float_power(2, t([0.5])).tolist() == [2**0.5]
    with pytest.raises(RuntimeError, match="float_power_"):
        ember.ones(2).float_power_(2)
    close(ember.ldexp(t([1.5, -3.0]), ember.tensor([3, -1])), np.ldexp([1.5, -3.0], [3, -1]))
    v = t([-1.0, 0.0, 2.0])
    close(ember.heaviside(v, t([0.5, 0.5, 0.5])), np.heaviside([-1.0, 0.0, 2.0], 0.5))
    with pytest.raises(RuntimeError, match="different dtypes"):
        ember.heaviside(v, ember.ones(3))
    inf = t([math.inf, -math.inf, 1.0])
    assert ember.isposinf(inf).tolist() == [True, False, False]
    assert inf.isneginf().tolist() == [False, True, False]
    assert ember.isneginf(ember.tensor([1])).tolist() == [False]
    assert ember.positive(x) is x
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor"):  # torch's
        ember.positive(ember.tensor([True]))


def test_adjoint_mh():
    m = ember.arange(6.0).reshape(2, 3)
    assert ember.adjoint(m).tolist() == m.t().tolist() == m.mH.tolist() == m.H.tolist()
    with pytest.raises(RuntimeError, match="adjoint"):
        ember.adjoint(ember.ones(3))
    with pytest.raises(RuntimeError, match="mH"):
        _ = ember.ones(3).mH


# ---- reductions and scans ----

def test_aminmax():
    a = rand(3, 4)
    r = ember.aminmax(t(a.tolist()))
    assert r.min.item() == a.min() and r.max.item() == a.max()
    lo, hi = t(a.tolist()).aminmax(dim=1, keepdim=True)
    close(lo, a.min(1, keepdims=True))
    close(hi, a.max(1, keepdims=True))
    with pytest.raises(RuntimeError):
        ember.aminmax(ember.empty(0))


def test_logcumsumexp_dist_renorm():
    a = rand(4, 5) * 10
    close(ember.logcumsumexp(t(a.tolist()), 1), np.logaddexp.accumulate(a, axis=1))
    tails = t([-1000.0, 0.0, -1000.0])
    close(tails.logcumsumexp(0), [-1000.0, 0.0, 0.0])  # no underflow of the prefix
    b = rand(4, 5, seed=3)
    close(ember.dist(t(a.tolist()), t(b.tolist()), 3), np.sum(np.abs(a - b) ** 3) ** (1 / 3))
    m = rand(3, 4) * 3
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    want = np.where(norms > 2.0, m * 2.0 / (norms + 1e-7), m)
    close(ember.renorm(t(m.tolist()), 2, 0, 2.0), want)
    y = t(m.tolist())
    y.renorm_(2, 0, 2.0)
    close(y, want)
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        ember.renorm(y, 0, 0, 1.0)
    with pytest.raises(IndexError):
        ember.renorm(y, 2, 3, 1.0)


def test_cov_corrcoef():
    a = rand(3, 6)
    close(ember.cov(t(a.tolist())), np.cov(a))
    close(t(a.tolist()).cov(correction=0), np.cov(a, ddof=0))
    fw = np.array([1, 2, 1, 3, 1, 1])
    aw = rand(6, seed=4, lo=0.1, hi=1.0)
    close(ember.cov(t(a.tolist()), fweights=ember.tensor(fw.tolist()), aweights=t(aw.tolist())),
          np.cov(a, fweights=fw, aweights=aw))
    close(ember.cov(t(a[0].tolist())), np.cov(a[0]))
    close(ember.corrcoef(t(a.tolist())), np.corrcoef(a))
    with pytest.raises(RuntimeError, match="integral dtype"):
        ember.cov(t(a.tolist()), fweights=t(fw.tolist()))


def test_trapezoid_vander_combinations():
    y, x = rand(3, 5), np.sort(rand(5, seed=2))
    close(ember.trapezoid(t(y.tolist())), np.trapezoid(y, axis=-1))
    close(ember.trapezoid(t(y.tolist()), t(x.tolist())), np.trapezoid(y, x, axis=-1))
    close(ember.trapz(t(y.tolist()), dx=0.5, dim=0), np.trapezoid(y, dx=0.5, axis=0))
    cum = ember.cumulative_trapezoid(t(y.tolist()), t(x.tolist()))
    close(cum, [[np.trapezoid(r[: k + 1], x[: k + 1]) for k in range(1, 5)] for r in y])
    v = [2.0, 3.0, -1.0]
    close(ember.vander(t(v)), np.vander(v))
    close(ember.vander(t(v), N=4, increasing=True), np.vander(v, 4, increasing=True))
    assert ember.vander(ember.tensor([2, 3])).dtype == ember.int64
    c = ember.combinations(ember.tensor([5, 6, 7, 8]), 3)
    assert c.tolist() == [list(p) for p in itertools.combinations([5, 6, 7, 8], 3)]
    cw = ember.combinations(ember.tensor([1, 2]), with_replacement=True)
    assert cw.tolist() == [[1, 1], [1, 2], [2, 2]]


def test_isin():
    e, s = np.array([[1, 5, 3], [7, 2, 2]]), np.array([2, 3, 9])
    got = ember.isin(ember.tensor(e.tolist()), ember.tensor(s.tolist()))
    assert got.tolist() == np.isin(e, s).tolist()
    got = ember.isin(ember.tensor(e.tolist()), ember.tensor(s.tolist()), invert=True)
    assert got.tolist() == np.isin(e, s, invert=True).tolist()
    assert ember.isin(3, ember.tensor([1, 3])).tolist() is True
    assert ember.isin(ember.tensor([1.0]), ember.tensor([])).tolist() == [False]


def test_cdist():
    a, b = rand(2, 4, 3), rand(2, 5, 3, seed=1)
    for p in (1.0, 2.0, 3.5, math.inf):
        want = np.linalg.norm(a[:, :, None, :] - b[:, None, :, :], ord=p, axis=-1)
        close(ember.cdist(t(a.tolist()), t(b.tolist()), p=p), want, rtol=1e-12)
    with pytest.raises(RuntimeError, match="same number of columns"):
        ember.cdist(ember.ones(2, 3), ember.ones(2, 4))
    with pytest.raises(RuntimeError, match="floating-point"):
        ember.cdist(ember.ones(2, 3, dtype=ember.int64), ember.ones(2, 3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.cdist(ember.ones(2, 3), ember.ones(2, 3), p=-1)


def test_cartesian_prod_block_diag():
    a, b = ember.tensor([1, 2]), ember.tensor([3, 4, 5])
    assert ember.cartesian_prod(a, b).tolist() == [list(p) for p in itertools.product([1, 2],
                                                                                     [3, 4, 5])]
    assert ember.cartesian_prod(a) is a
    m = ember.block_diag(ember.tensor([[1, 2]]), ember.tensor(3), ember.tensor([[4], [5]]))
    assert m.tolist() == [[1, 2, 0, 0], [0, 0, 3, 0], [0, 0, 0, 4], [0, 0, 0, 5]]
    assert ember.block_diag(ember.ones(1, 1), ember.tensor([2])).dtype == ember.float32
    with pytest.raises(RuntimeError, match="2 or fewer dimensions"):
        ember.block_diag(ember.ones(1, 1, 1))
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0"):
        ember.block_diag(ember.ones(2), 0)  # torch's TypeError (found by the op fuzzer)


def test_unravel_index_and_small_predicates():
    idx = [0, 5, 11, 7]
    got = ember.unravel_index(ember.tensor(idx), (3, 4))
    want = np.unravel_index(idx, (3, 4))
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
    x = ember.ones(2, 3)
    assert ember.is_same_size(x, ember.zeros(2, 3)) and not x.is_same_size(ember.zeros(3))
    assert ember.tensor([2.0]).is_nonzero() and not ember.is_nonzero(ember.tensor([0]))
    with pytest.raises(RuntimeError, match="more than one value"):
        x.is_nonzero()
    assert ember.numel(x) == 6 and ember.is_tensor(x) and not ember.is_tensor([1])
    assert ember.is_floating_point(x) and ember.is_signed(x)
    s = ember.arange(6.0).reshape(2, 3)
    assert s.sum_to_size(1, 3).tolist() == [[3.0, 5.0, 7.0]]
    assert s.sum_to_size((2, 1)).tolist() == [[3.0], [12.0]]
    with pytest.raises(RuntimeError, match="not expandable"):
        s.sum_to_size(2)


def test_fill_diagonal():
    for shape, wrap in (((3, 3), False), ((5, 2), False), ((7, 3), True), ((2, 4), False)):
        a = np.zeros(shape)
        np.fill_diagonal(a, 4.0, wrap=wrap)
        x = ember.zeros(*shape, dtype=F64)
        assert x.fill_diagonal_(4.0, wrap=wrap) is x
        assert x.tolist() == a.tolist(), (shape, wrap)
    c = ember.zeros(2, 2, 2)
    c.fill_diagonal_(1)
    assert c.sum().item() == 2 and c[1, 1, 1].item() == 1
    with pytest.raises(RuntimeError, match="equal length"):
        ember.zeros(2, 3, 2).fill_diagonal_(1)


# ---- against torch ----

def _pair(torch, v, dtype="float64"):
    return ember.tensor(v, dtype=getattr(ember, dtype)), torch.tensor(v, dtype=getattr(torch, dtype))


SPECIAL_POINTS = [-7.5, -3.3, -1.0, -0.5, 0.0, 1e-3, 0.5, 1.0, 2.5, 9.0, 15.0, 35.0, 120.0]


@pytest.mark.parametrize("name", ["i0e", "i1", "i1e", "ndtr", "log_ndtr", "erfcx", "entr",
                                  "digamma", "gammaln", "i0", "spherical_bessel_j0"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_special_matches_torch(name, dtype):
    torch = pytest.importorskip("torch")
    # torch's ndtr loses digits below -5 (1 + erf cancels): the tails are checked above
    points = [v for v in SPECIAL_POINTS if name != "ndtr" or v > -5]
    e, tt = _pair(torch, points, dtype)
    got, want = getattr(special, name)(e), getattr(torch.special, name)(tt)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    # float32: ember computes in double and rounds once; torch's float kernels lose digits in
    # the tails (ndtr(-7.5) is 0 there, log_ndtr(9) off by 4e-6)
    rtol, atol = (1e-12, 1e-300) if dtype == "float64" else (1e-5, 1e-12)
    np.testing.assert_allclose(np.array(got.tolist()), want.numpy(), rtol=rtol, atol=atol)


def test_ndtri_zeta_xlog1py_polygamma_match_torch():
    torch = pytest.importorskip("torch")
    e, tt = _pair(torch, [1e-200, 1e-9, 0.02, 0.5, 0.77, 0.999999])
    np.testing.assert_allclose(special.ndtri(e).tolist(), torch.special.ndtri(tt).numpy(),
                               rtol=1e-12)
    s, ts = _pair(torch, [1.5, 2.0, 3.0, 7.0])
    q, tq = _pair(torch, [0.3, 1.0, -2.5, 10.0])
    np.testing.assert_allclose(special.zeta(s, q).tolist(), torch.special.zeta(ts, tq).numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(special.xlog1py(s, q).tolist(),
                               torch.special.xlog1py(ts, tq).numpy(), rtol=1e-13)
    for n in (1, 2, 3):  # torch's trigamma is good to ~5e-10 (exact values: above)
        np.testing.assert_allclose(ember.polygamma(n, s).tolist(),
                                   torch.polygamma(n, ts).numpy(), rtol=1e-9)
    np.testing.assert_allclose(ember.mvlgamma(s + 2, 3).tolist(),
                               torch.mvlgamma(ts + 2, 3).numpy(), rtol=1e-13)


def test_zeta_special_values_match_torch():
    torch = pytest.importorskip("torch")
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.0, 1e-30, 1e30, -1e30, math.inf, -math.inf, math.nan]
    a, b = np.meshgrid(v, v, indexing="ij")
    got = special.zeta(t(a.tolist()), t(b.tolist())).tolist()
    want = torch.special.zeta(torch.tensor(a), torch.tensor(b)).tolist()
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _both(torch, fn_name, *arrays, method=False, **kw):
    e_args = [ember.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]
    t_args = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]
    if method:
        return (getattr(e_args[0], fn_name)(*e_args[1:], **kw),
                getattr(t_args[0], fn_name)(*t_args[1:], **kw))
    return getattr(ember, fn_name)(*e_args, **kw), getattr(torch, fn_name)(*t_args, **kw)


TORCH_CASES = [
    ("addcmul", (rand(3, 4), rand(4), rand(3, 1)), {"value": 0.3}),
    ("addcdiv", (rand(3, 4), rand(4), rand(3, 1) + 3), {"value": -1.5}),
    ("addr", (rand(3, 4), rand(3), rand(4)), {"beta": 2.0, "alpha": 0.5}),
    ("cdist", (rand(5, 3), rand(4, 3)), {"p": 1.5}),
    ("renorm", (rand(3, 4) * 4, 1, 1, 2.0), {}),
    ("cov", (rand(2, 7),), {"correction": 2}),
    ("corrcoef", (rand(3, 7),), {}),
    ("dist", (rand(3, 4), rand(4)), {"p": 0.5}),
    ("logcumsumexp", (rand(3, 4), 0), {}),
    ("float_power", (rand(3) + 3, rand(3)), {}),
    ("ldexp", (rand(3), np.array([1, -2, 3])), {}),
    ("vander", (rand(4),), {"N": 3}),
    ("trapezoid", (rand(3, 4),), {"dx": 0.3}),
    ("cumulative_trapezoid", (rand(3, 4), np.sort(rand(4))), {}),
    ("block_diag", (rand(2, 3), rand(1, 2)), {}),
    ("cartesian_prod", (rand(2), rand(3)), {}),
    ("clamp_min", (rand(5), 0.1), {}),
    ("arctan2", (rand(5), rand(5, seed=1)), {}),
    ("true_divide", (rand(5), rand(5, seed=1) + 3), {}),
    ("fix", (rand(5) * 5,), {}),
]


@pytest.mark.parametrize("case", TORCH_CASES, ids=lambda c: c[0])
def test_compositions_match_torch(case):
    torch = pytest.importorskip("torch")
    name, arrays, kw = case
    got, want = _both(torch, name, *arrays, **kw)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(np.array(got.tolist()), want.numpy(), rtol=1e-10, atol=1e-12)


ERROR_CASES = [
    ("addr", (np.ones((2, 2)), np.ones((2, 2)), np.ones(2))),
    ("cdist", (np.ones((2, 3)), np.ones((2, 4)))),
    ("renorm", (np.ones((2, 2)), -1, 0, 1.0)),
    ("aminmax", (np.ones(0),)),
    ("mvlgamma", (np.full(2, 0.5), 0)),
    ("polygamma", (-1, np.ones(2))),
    ("heaviside", (np.ones(2), np.ones(2, dtype=np.float32))),
    ("block_diag", (np.ones((1, 1, 1)),)),
    ("vander", (np.ones((2, 2)),)),
    ("combinations", (np.ones((2, 2)),)),
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c[0])
def test_errors_are_torchs(case):
    torch = pytest.importorskip("torch")
    name, arrays = case
    with pytest.raises(Exception) as want:
        getattr(torch, name)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                               for a in arrays])
    with pytest.raises(want.type):
        getattr(ember, name)(*[ember.tensor(a) if isinstance(a, np.ndarray) else a
                               for a in arrays])


# ---- gcd/lcm, frexp, put, the scatters, the window functions ----

def test_gcd_lcm():
    a, b = [0, -12, 7, 35, 0], [0, 18, -21, 14, 5]
    assert ember.gcd(ember.tensor(a), ember.tensor(b)).tolist() == np.gcd(a, b).tolist()
    assert ember.lcm(ember.tensor(a), ember.tensor(b)).tolist() == np.lcm(a, b).tolist()
    x = ember.tensor(a)
    x.gcd_(ember.tensor(b))
    assert x.tolist() == np.gcd(a, b).tolist()
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        ember.gcd(ember.ones(2), ember.ones(2))


def test_frexp():
    v = [0.0, 1.0, 3.0, -0.3, 1e-310, 6.5e300]
    m, e = ember.frexp(t(v))
    wm, we = np.frexp(v)
    assert m.tolist() == wm.tolist() and e.tolist() == we.tolist() and e.dtype == ember.int32
    m, e = ember.frexp(t([math.inf, math.nan]))
    assert m[0].item() == math.inf and math.isnan(m[1].item()) and e.tolist() == [0, 0]
    with pytest.raises(RuntimeError, match="floating-point"):
        ember.frexp(ember.tensor([1]))


def test_put():
    x = ember.zeros(2, 3)
    assert x.put_(ember.tensor([1, -1]), ember.tensor([9.0, 8.0])) is x
    assert x.tolist() == [[0.0, 9.0, 0.0], [0.0, 0.0, 8.0]]
    y = ember.put(x, ember.tensor([1, 1]), ember.tensor([1.0, 2.0]), accumulate=True)
    assert y[0, 1].item() == 12.0 and x[0, 1].item() == 9.0
    xt = ember.zeros(3, 2).t()  # not contiguous: indices count in row-major order of its shape
    xt.put_(ember.tensor([4]), ember.tensor([5.0]))
    assert xt[1, 1].item() == 5.0
    with pytest.raises(IndexError):
        x.put_(ember.tensor([6]), ember.tensor([1.0]))


def test_scatters():
    base = np.zeros((3, 4))
    d = base.copy()
    d[np.arange(3), np.arange(1, 4)] = [1.0, 2.0, 3.0]
    got = ember.diagonal_scatter(t(base.tolist()), t([1.0, 2.0, 3.0]), 1)
    assert got.tolist() == d.tolist()
    s = base.copy()
    s[:, 2] = 7.0
    assert ember.select_scatter(t(base.tolist()), t([7.0] * 3), 1, 2).tolist() == s.tolist()
    sl = base.copy()
    sl[:, 1::2] = 5.0
    got = ember.slice_scatter(t(base.tolist()), ember.full((3, 2), 5.0, dtype=F64), 1, 1, None, 2)
    assert got.tolist() == sl.tolist()
    with pytest.raises(RuntimeError, match="size equal to the slice"):
        ember.select_scatter(t(base.tolist()), t([1.0]), 1, 2)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, periodic):
    n = 7
    m = n + 1 if periodic else n
    k = np.arange(n)
    want = {
        "hann_window": 0.5 - 0.5 * np.cos(2 * np.pi * k / (m - 1)),
        "hamming_window": 0.54 - 0.46 * np.cos(2 * np.pi * k / (m - 1)),
        "blackman_window": 0.42 - 0.5 * np.cos(2 * np.pi * k / (m - 1))
        + 0.08 * np.cos(4 * np.pi * k / (m - 1)),
        "bartlett_window": 1 - np.abs(2 * k / (m - 1) - 1),
        "kaiser_window": np.kaiser(m, 12.0)[:n],
    }[name]
    got = getattr(ember, name)(n, periodic, dtype=F64)
    close(got, want, rtol=1e-12, atol=1e-15)
    assert getattr(ember, name)(1).tolist() == [1.0] and getattr(ember, name)(0).shape == (0,)
    assert getattr(ember, name)(4).dtype == ember.float32


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
def test_long_windows_are_computed_block_by_block(name, monkeypatch):
    """Windows longer than a block (2**18 values: a 16-bit window of 2**31 needs no 16 GiB of
    float64) give the values of one pass, in float64 and rounded to the dtype."""
    from ember._composite_ops import creation

    n = 2503
    whole = {dt: getattr(ember, name)(n, False, dtype=dt) for dt in (F64, ember.float16)}
    monkeypatch.setattr(creation, "_WINDOW_BLOCK", 1000)  # three blocks, the last one short
    for dt, want in whole.items():
        got = getattr(ember, name)(n, False, dtype=dt)
        assert got.dtype == dt and got.shape == (n,)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    k = np.arange(n)
    if name == "hann_window":
        close(whole[F64], 0.5 - 0.5 * np.cos(2 * np.pi * k / (n - 1)), rtol=1e-12, atol=1e-15)


def test_small_names():
    x = ember.ones(2, 3).t()
    assert ember.ravel(x).shape == (6,) and x.ravel().is_contiguous()
    assert ember.resolve_neg(x) is x and not x.is_neg() and not ember.is_inference(x)


BATCH2_TORCH = [
    ("gcd", (np.array([12, -8, 0]), np.array([18, 12, 5])), {}),
    ("lcm", (np.array([12, -8, 0]), np.array([18, 12, 5])), {}),
    ("hann_window", (9,), {"dtype": "float64"}),
    ("hamming_window", (9, False), {"dtype": "float64"}),
    ("blackman_window", (9,), {"dtype": "float64"}),
    ("bartlett_window", (9,), {"dtype": "float64"}),
    ("kaiser_window", (9, True, 5.0), {"dtype": "float64"}),
    ("diagonal_scatter", (np.zeros((3, 3)), np.ones(2), -1), {}),
    ("slice_scatter", (np.zeros((4, 3)), np.ones((2, 3)), 0, 1, 3), {}),
    ("ravel", (np.ones((2, 3)),), {}),
]


@pytest.mark.parametrize("case", BATCH2_TORCH, ids=lambda c: c[0])
def test_batch2_matches_torch(case):
    torch = pytest.importorskip("torch")
    name, arrays, kw = case
    ekw = {k: getattr(ember, v) if k == "dtype" else v for k, v in kw.items()}
    tkw = {k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()}
    got = getattr(ember, name)(*[ember.tensor(a) if isinstance(a, np.ndarray) else a
                                 for a in arrays], **ekw)
    want = getattr(torch, name)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                                  for a in arrays], **tkw)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(np.array(got.tolist()), want.numpy(), rtol=1e-12, atol=1e-15)


# ---- the incomplete gamma functions ----

def _q_integer_shape(a: int, x: float) -> float:
    """Q(a, x) for a whole a: e^-x sum_{k<a} x^k / k!."""
    return math.exp(-x) * math.fsum(x**k / math.factorial(k) for k in range(a))


def test_igamma_igammac_values():
    x = [0.5, 3.0, 9.5, 20.0, 60.0]  # both of the kernel's branches (x < a + 1 and beyond)
    for a in (1, 4, 10, 30):
        q = [_q_integer_shape(a, v) for v in x]
        close(ember.igammac(t([float(a)] * 5), t(x)), q, rtol=1e-12, atol=1e-300)
        close(ember.igamma(t([float(a)] * 5), t(x)), [1 - v for v in q], rtol=1e-12,
              atol=1e-15)
    close(special.gammaincc(t([0.5]), t([2.0])), [math.erfc(math.sqrt(2.0))], rtol=1e-13)
    assert special.gammainc is ember.igamma and special.gammaincc is ember.igammac
    y = t([2.0])
    y.igamma_(t([1.0]))
    close(y, [1 - 2 * math.exp(-1)], rtol=1e-13)
    with pytest.raises(RuntimeError):
        ember.igamma(ember.tensor([1]), ember.tensor([1]))  # integers, as torch refuses


def test_igamma_tiny_shape():
    # Q(a, x) ~ a E1(x) as a -> 0, E1(x) = -gamma - log x - sum_k (-x)^k / (k k!)
    for x in (0.2, 0.5, 1.0):
        e1 = -0.57721566490153286061 - math.log(x) - math.fsum(
            (-x) ** k / (k * math.factorial(k)) for k in range(1, 40))
        close(ember.igammac(t([1e-30]), t([x])), [1e-30 * e1], rtol=1e-12, atol=0)
        close(ember.igamma(t([1e-30]), t([x])), [1.0], rtol=1e-15)


def test_igamma_matches_torch_at_the_edges():
    """Zeros, negatives, infinities and NaN (torch's edge rules); the regular values are
    checked above against exact ones (torch's are good to ~1e-9 only, at P(30, 30))."""
    torch = pytest.importorskip("torch")
    edges = [0.0, -0.0, -1.0, math.inf, -math.inf, math.nan]
    v = edges + [0.5, 2.5, 30.0]
    a, b = np.meshgrid(v, v, indexing="ij")
    keep = np.isin(a, edges) | np.isin(b, edges) | np.isnan(a) | np.isnan(b)
    for name in ("igamma", "igammac"):
        got = np.array(getattr(ember, name)(t(a.tolist()), t(b.tolist())).tolist())
        want = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
        np.testing.assert_allclose(got[keep], want[keep], rtol=1e-12, atol=1e-300, err_msg=name)


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]


def test_orthogonal_polynomials_by_hand():
    """Closed values: T_n(cos t) = cos(n t) at large n, U_n(1) = n + 1, V_n(-1) = (-1)^n (2n+1),
    W_n(1) = 2n + 1, P_n(-1) = (-1)^n, L_n(0) = 1, H_3(x) = 8x^3 - 12x, He_3(x) = x^3 - 3x; a
    negative degree gives 0, a fractional one is truncated, a huge one that would need a
    recurrence gives NaN (no loop of 1e30 steps per element)."""
    sp = ember.special
    x = t([0.3], dtype=ember.float64)
    assert sp.chebyshev_polynomial_t(x, 40).item() == pytest.approx(math.cos(40 * math.acos(0.3)),
                                                                     rel=1e-12)
    assert sp.chebyshev_polynomial_u(t([1.0]), 7).item() == 8
    assert sp.chebyshev_polynomial_v(t([-1.0]), 3).item() == -7
    assert sp.chebyshev_polynomial_w(t([1.0]), 4).item() == 9
    assert sp.legendre_polynomial_p(t([-1.0]), 5).item() == -1
    assert sp.laguerre_polynomial_l(t([0.0]), 1e30).item() == 1
    assert sp.hermite_polynomial_h(x, 3).item() == pytest.approx(8 * 0.3**3 - 12 * 0.3, rel=1e-14)
    assert sp.hermite_polynomial_he(x, 3.7).item() == pytest.approx(0.3**3 - 0.9, rel=1e-14)
    assert sp.hermite_polynomial_he(x, -2).item() == 0
    assert math.isnan(sp.legendre_polynomial_p(x, 1e30).item())
    assert math.isnan(sp.hermite_polynomial_h(t([math.nan]), 2).item())
    y = sp.chebyshev_polynomial_t(ember.arange(3), 2)  # integers promote to the float default
    assert y.dtype == ember.float32 and y.tolist() == [-1.0, 1.0, 7.0]
    out = ember.empty(1, dtype=ember.float64)
    assert sp.legendre_polynomial_p(x, 2, out=out) is out


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials_match_torch(name):
    """Inside and outside [-1, 1], at +-1, 0 and NaN, degrees -1 to 30 (both the recurrences and
    the trigonometric forms)."""
    torch = pytest.importorskip("torch")
    xs = [-1.7, -1.0, -0.6, -0.1, 0.0, 0.25, 0.5, 0.99, 1.0, 1.3]
    ns = [-1, 0, 1, 2, 3, 8, 9, 12, 30]
    a, b = np.meshgrid(xs, ns, indexing="ij")
    fn = getattr(ember.special, name)
    got = np.array(fn(t(a.tolist()), t(b.tolist())).tolist())
    want = getattr(torch.special, name)(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
    # NaN x: 0 for n < 0 and 1 for n = 0, as torch's; NaN from degree 1 on (torch 2.13 returns
    # an uninitialised value for Legendre and Laguerre there).
    at_nan = fn(t([math.nan] * 4), t([-1.0, 0.0, 1.0, 5.0])).tolist()
    assert at_nan[:2] == [0.0, 1.0] and all(math.isnan(v) for v in at_nan[2:])


BESSEL_AIRY = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
               "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
               "airy_ai"]


def _bessel_airy_points(name):
    """Both sides of each switch between methods (J, Y: 20; K: 1; Ai: -10 and 2), around the
    first zeros, tiny and huge arguments, and negative ones where the function is defined."""
    rng = np.random.default_rng(11)
    switch = {"bessel": [20.0], "modified": [1.0], "scaled": [1.0], "airy": [-10.0, 2.0]}
    pts = [v + d for v in switch[name.split("_")[0]]
           for d in (-1e-9, -1e-12, 0.0, 1e-12, 1e-9, -0.3, 0.3)]
    pts += list(rng.uniform(0, 40, 160)) + list(10 ** rng.uniform(-300, 300, 40))
    pts += [2.404825557695773, 3.8317059702075125, 0.8935769662791675, 2.197141326031017]
    if name == "airy_ai":
        pts = [v for v in pts if v < 105] + list(rng.uniform(-40, 0, 160))
        pts += list(-(10 ** rng.uniform(1, 12, 40))) + [-2.338107410459767, -4.087949444130971]
    elif name.startswith("bessel_j"):
        pts += [-v for v in pts]
    return pts


def _envelope(name, x):
    """The size of the function around x: errors below 1e-15 of it count as absolute ones (the
    oscillating functions near their zeros)."""
    ax = abs(x)
    if name.startswith("bessel_"):
        return min(1.0, math.sqrt(2 / (math.pi * ax))) if ax > 0 else 1.0
    if name == "airy_ai" and x < 0:
        return min(1.0, ax**-0.25 / math.sqrt(math.pi))
    return 0.0  # K and Ai for x >= 0 have no zeros: relative error only


@pytest.mark.parametrize("name", BESSEL_AIRY)
def test_bessel_airy_match_mpmath(name):
    """Against mpmath at 30 digits: within 1e-13 relative, or 1e-15 of the function's envelope
    near the zeros of J, Y and Ai."""
    mpmath = pytest.importorskip("mpmath")
    ref = {"bessel_j0": lambda x: mpmath.besselj(0, x), "bessel_j1": lambda x: mpmath.besselj(1, x),
           "bessel_y0": lambda x: mpmath.bessely(0, x), "bessel_y1": lambda x: mpmath.bessely(1, x),
           "modified_bessel_k0": lambda x: mpmath.besselk(0, x),
           "modified_bessel_k1": lambda x: mpmath.besselk(1, x),
           "scaled_modified_bessel_k0": lambda x: mpmath.exp(x) * mpmath.besselk(0, x),
           "scaled_modified_bessel_k1": lambda x: mpmath.exp(x) * mpmath.besselk(1, x),
           "airy_ai": mpmath.airyai}[name]
    pts = _bessel_airy_points(name)
    got = getattr(special, name)(t(pts)).tolist()
    with mpmath.workdps(30):
        for x, g in zip(pts, got):
            w = float(ref(mpmath.mpf(x)))
            tol = 1e-13 * abs(w) + 1e-15 * _envelope(name, x) + 1e-320
            assert abs(g - w) <= tol, (name, x, g, w)


@pytest.mark.parametrize("name", BESSEL_AIRY)
def test_bessel_airy_match_torch(name):
    """torch's edge values (0, -0, +-inf, NaN) exactly, and its values (NaN below 0 for Y and
    K) over [-40, 40] to 1e-6: torch 2.13's J0, Y0 and Ai lose up to 3e-7 between 2.5 and 13
    (against mpmath), where ember's are checked to 1e-13 above."""
    torch = pytest.importorskip("torch")
    edges = [0.0, -0.0, math.inf, -math.inf, math.nan]
    rng = np.random.default_rng(5)
    grid = list(rng.uniform(-40, 40, 200)) + [-1.0, -2.5, 1e-300, 1.0, 2.0, 5.0, 8.0, 20.0, 25.0]
    e, tt = _pair(torch, edges + grid)
    got, want = getattr(special, name)(e), getattr(torch.special, name)(tt)
    assert got.dtype == ember.float64
    g, w = np.array(got.tolist()), want.numpy()
    n = len(edges)
    np.testing.assert_array_equal(g[:n], w[:n], err_msg=name)  # NaN equal to NaN, signs of 0
    signed = ~np.isnan(w[:n])
    assert np.array_equal(np.signbit(g[:n][signed]), np.signbit(w[:n][signed])), name
    np.testing.assert_allclose(g[n:], w[n:], rtol=1e-6, atol=1e-6, err_msg=name)
    e32, t32 = _pair(torch, grid, "float32")
    g32, w32 = getattr(special, name)(e32), getattr(torch.special, name)(t32)
    assert g32.dtype == ember.float32
    # float32: ember computes in double and rounds once; torch in float (2e-6 off near Ai's zeros)
    np.testing.assert_allclose(np.array(g32.tolist()), w32.numpy(), rtol=1e-5, atol=1e-5,
                               err_msg=name)


def test_bessel_airy_by_hand():
    """J0(0) = 1, J1 odd with -0 at -0, Y0(0) = -inf, K0(0) = inf, e^x K scaled; the smallest
    subnormal, where torch's K0 is inf and K1 NaN (ln(x/2) of 0): K0(x) = -ln(x/2) - gamma to
    the last digit there, K1 = 1/x overflows; Ai(0) = 1/(3^(2/3) Gamma(2/3)); Ai below -2^40,
    whose phase the kernel does not resolve, is NaN; integers promote to the default float."""
    sp = special
    assert sp.bessel_j0(t([0.0])).item() == 1
    j1 = sp.bessel_j1(t([-0.0, 0.5, -0.5])).tolist()
    assert math.copysign(1, j1[0]) == -1 and j1[1] == -j1[2]
    assert sp.bessel_j0(t([-3.0])).item() == sp.bessel_j0(t([3.0])).item()
    assert sp.bessel_y0(t([0.0])).item() == -math.inf
    assert sp.modified_bessel_k0(t([0.0])).item() == math.inf
    tiny = 5e-324
    assert sp.modified_bessel_k0(t([tiny])).item() == pytest.approx(
        -math.log(tiny) + math.log(2) - 0.5772156649015329, rel=1e-15)
    assert sp.modified_bessel_k1(t([tiny])).item() == math.inf
    x = t([3.0, 40.0])
    np.testing.assert_allclose(np.array(sp.scaled_modified_bessel_k1(x).tolist()),
                               np.array(sp.modified_bessel_k1(x).tolist()) * np.exp([3.0, 40.0]),
                               rtol=1e-14)
    assert sp.airy_ai(t([0.0])).item() == pytest.approx(
        1 / (3 ** (2 / 3) * math.gamma(2 / 3)), rel=1e-15)
    assert math.isnan(sp.airy_ai(t([-(2.0**41)])).item())
    assert sp.airy_ai(t([200.0])).item() == 0
    y = sp.bessel_j0(ember.arange(3))
    assert y.dtype == ember.float32
    out = ember.empty(2, dtype=ember.float64)
    assert sp.airy_ai(t([1.0, -1.0]), out=out) is out


# ---- in-place views, fill, zero_, detach_ ----

def test_inplace_views():
    x = ember.arange(6.0).reshape(2, 3)
    want = x.t().tolist()
    assert x.transpose_(0, 1) is x and x.shape == (3, 2) and x.tolist() == want
    x.t_()
    assert x.shape == (2, 3)
    x.swapaxes_(0, 1)
    assert x.shape == (3, 2)
    x.swapdims_(1, 0)
    y = x.unsqueeze_(1)
    assert y is x and x.shape == (2, 1, 3)
    x.squeeze_()
    assert x.shape == (2, 3)
    x.unsqueeze_(0).squeeze_(0)
    assert x.shape == (2, 3)
    x.as_strided_((3,), (2,))
    assert x.tolist() == [0.0, 2.0, 4.0]
    leaf = ember.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        leaf.t_()


def test_fill_zero_detach_functions():
    x = ember.ones(2, 2)
    assert ember.fill(x, 3.0).tolist() == [[3.0, 3.0], [3.0, 3.0]] and x[0, 0].item() == 1.0
    assert ember.fill(x, ember.tensor(2.0)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert ember.zero_(x) is x and x.sum().item() == 0
    y = ember.ones(2, requires_grad=True) * 2
    assert ember.detach_(y) is y and not y.requires_grad


# ---- torch's top-level forms of nn and linalg functions ----

def test_nn_forms_against_formulas():
    a = rand(4, 3)
    x = t(a.tolist())
    close(ember.rsub(x, 2.0, alpha=3), 2.0 - 3 * a)
    close(ember.hardshrink(x, 0.7), np.where(np.abs(a) > 0.7, a, 0.0))
    close(x.hardshrink(), np.where(np.abs(a) > 0.5, a, 0.0))
    alpha, scale = 1.6732632423543772848, 1.0507009873554804934
    close(ember.selu(x), scale * np.where(a > 0, a, alpha * np.expm1(a)), rtol=1e-13)
    close(ember.celu(x, 0.5), np.where(a > 0, a, 0.5 * np.expm1(a / 0.5)), rtol=1e-13)
    close(ember.threshold(x, 0.1, -3.0), np.where(a > 0.1, a, -3.0))
    y = x.clone()
    assert ember.threshold_(y, 0.1, -3.0) is y
    close(y, np.where(a > 0.1, a, -3.0))
    b = rand(4, 3, seed=1)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    close(ember.cosine_similarity(x, t(b.tolist())), cos, rtol=1e-13)
    close(ember.pairwise_distance(x, t(b.tolist())), np.linalg.norm(a - b + 1e-6, axis=1),
          rtol=1e-13)
    pd = [np.linalg.norm(a[i] - a[j]) for i in range(4) for j in range(i + 1, 4)]
    close(ember.pdist(x), pd, rtol=1e-13)
    close(ember.frobenius_norm(x, (0, 1)), np.linalg.norm(a), rtol=1e-13)
    close(ember.nuclear_norm(x), np.linalg.norm(a, "nuc"), rtol=1e-12)
    assert ember.get_device(x) == -1
    z = ember.zeros(2)
    assert ember.fill_(z, 4.0) is z and z.tolist() == [4.0, 4.0]
    r = t([1.26, -0.35])
    ember.round_(r, decimals=1)
    close(r, [1.3, -0.4])
    assert special.modified_bessel_i0 is ember.i0


NN_FORMS_TORCH = [
    ("rsub", (rand(3, 4), rand(4)), {"alpha": 0.5}),
    ("hardshrink", (rand(6), 0.3), {}),
    ("selu", (rand(6),), {}),
    ("celu", (rand(6), 2.0), {}),
    ("threshold", (rand(6), 0.2, 9.0), {}),
    ("cosine_similarity", (rand(3, 5), rand(3, 5, seed=1)), {"dim": 0}),
    ("pairwise_distance", (rand(3, 5), rand(3, 5, seed=1)), {"p": 1.0, "keepdim": True}),
    ("pdist", (rand(5, 3),), {"p": 3.0}),
    ("matrix_exp", (rand(2, 3, 3),), {}),
    ("nuclear_norm", (rand(2, 3, 4), (1, 2)), {}),
]


@pytest.mark.parametrize("case", NN_FORMS_TORCH, ids=lambda c: c[0])
def test_nn_forms_match_torch(case):
    torch = pytest.importorskip("torch")
    name, arrays, kw = case
    got = getattr(ember, name)(*[ember.tensor(a) if isinstance(a, np.ndarray) else a
                                 for a in arrays], **kw)
    want = getattr(torch, name)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                                  for a in arrays], **kw)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(np.array(got.tolist()), want.numpy(), rtol=1e-10, atol=1e-12)


def test_cdist_gradient_at_zero_distance_is_torchs():
    x = ember.tensor([[0.0, 1.0], [2.0, 3.0]], dtype=F64, requires_grad=True)
    ember.cdist(x, x.detach()).sum().backward()
    assert not any(math.isnan(v) for row in x.grad.tolist() for v in row)
    torch = pytest.importorskip("torch")
    tx = torch.tensor([[0.0, 1.0], [2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    torch.cdist(tx, tx.detach()).sum().backward()
    close(x.grad, tx.grad.tolist(), rtol=1e-12)


def test_complex_functions_on_real_tensors_are_torchs():
    x = ember.tensor([1.0, -2.0, float("nan")])
    for same in (ember.conj(x), x.conj(), ember.resolve_conj(x), x.resolve_conj(), ember.real(x),
                 x.real):
        assert same is x
    for t in (x, ember.arange(3), ember.tensor([True])):
        r = ember.isreal(t)
        assert r.dtype == ember.bool and r.shape == t.shape and bool(r.all())
        assert not ember.is_complex(t) and not ember.is_conj(t) and not t.is_complex()
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        _ = x.imag
    torch = pytest.importorskip("torch")
    tx = torch.tensor([1.0, -2.0, float("nan")])
    assert torch.conj(tx) is tx and torch.real(tx) is tx and bool(torch.isreal(tx).all())
