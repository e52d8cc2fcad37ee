"""gradcheck and gradgradcheck (float64) of the compositions (ember/_composite_ops/: addcmul,
addr, cdist, cov, renorm, polygamma, ...), the aliases and torch.special's functions that the
op-table tests do not reach (zeta's second operand, the rules at 0), with torch's gradients
where it is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import special
from ember.autograd import gradcheck, gradgradcheck


def leaf(*shape, seed=0, lo=-2.0, hi=2.0):
    a = np.random.default_rng(seed).uniform(lo, hi, shape)
    return ember.tensor(a.tolist(), dtype=ember.float64, requires_grad=True)


CASES = {
    "addcmul": (lambda a, b, c: ember.addcmul(a, b, c, value=0.7), (leaf(3, 4), leaf(4, seed=1),
                                                                    leaf(3, 1, seed=2))),
    "addcdiv": (lambda a, b, c: ember.addcdiv(a, b, c, value=-1.3),
                (leaf(3, 4), leaf(4, seed=1), leaf(3, 1, seed=2, lo=1.0, hi=3.0))),
    "addcmul_": (lambda a, b, c: (a * 1).addcmul_(b, c, value=2), (leaf(2, 3), leaf(3, seed=1),
                                                                   leaf(2, 3, seed=2))),
    "addr": (lambda m, u, v: ember.addr(m, u, v, beta=0.5, alpha=-2),
             (leaf(3, 4), leaf(3, seed=1), leaf(4, seed=2))),
    "cdist_p2": (lambda a, b: ember.cdist(a, b), (leaf(4, 3), leaf(5, 3, seed=1))),
    "cdist_p1.5": (lambda a, b: ember.cdist(a, b, p=1.5), (leaf(2, 3, 2), leaf(2, 4, 2, seed=1))),
    "renorm": (lambda x: ember.renorm(x, 2, 0, 1.5), (leaf(3, 4),)),
    "cov": (lambda x: ember.cov(x), (leaf(3, 6),)),
    "cov_weights": (lambda x, w: ember.cov(x, aweights=w),
                    (leaf(2, 5), leaf(5, seed=1, lo=0.5, hi=1.5))),
    "corrcoef": (lambda x: ember.corrcoef(x), (leaf(3, 6),)),
    "dist": (lambda a, b: ember.dist(a, b, 3), (leaf(3, 4), leaf(4, seed=1))),
    "logcumsumexp": (lambda x: ember.logcumsumexp(x, 1), (leaf(3, 5),)),
    "aminmax": (lambda x: ember.aminmax(x, dim=0).max * 2 + ember.aminmax(x, dim=0).min,
                (leaf(3, 4),)),
    "polygamma1": (lambda x: ember.polygamma(1, x), (leaf(5, lo=0.2, hi=4.0),)),
    "polygamma3": (lambda x: x.polygamma(3), (leaf(5, lo=0.2, hi=4.0),)),
    "mvlgamma": (lambda x: ember.mvlgamma(x, 3), (leaf(4, lo=1.5, hi=5.0),)),
    "zeta_q": (lambda q: special.zeta(3.0, q), (leaf(4, lo=0.3, hi=5.0),)),
    "zeta_tensor_order": (lambda q: special.zeta(ember.tensor([2.0, 3.5], dtype=ember.float64), q),
                          (leaf(2, lo=0.3, hi=5.0),)),
    "trapezoid": (lambda y, x: ember.trapezoid(y, x), (leaf(3, 5), leaf(5, seed=1))),
    "cumulative_trapezoid": (lambda y: ember.cumulative_trapezoid(y, dx=0.5), (leaf(3, 5),)),
    "float_power": (lambda a, b: ember.float_power(a, b), (leaf(4, lo=0.5, hi=2.0),
                                                           leaf(4, seed=1))),
    "ldexp": (lambda a: ember.ldexp(a, ember.tensor([1, -1, 2])), (leaf(3),)),
    "block_diag": (lambda a, b: ember.block_diag(a, b), (leaf(2, 3), leaf(2, seed=1))),
    "cartesian_prod": (lambda a, b: ember.cartesian_prod(a, b), (leaf(2), leaf(3, seed=1))),
    "vander": (lambda x: ember.vander(x, N=4), (leaf(3),)),
    "clamp_min": (lambda x: ember.clamp_min(x, 0.3), (leaf(6),)),
    "arctan2": (lambda a, b: ember.arctan2(a, b), (leaf(4), leaf(4, seed=1))),
    "divide": (lambda a, b: a.divide(b), (leaf(4), leaf(4, seed=1, lo=1.0, hi=2.0))),
    "spherical_bessel_j0": (lambda x: special.spherical_bessel_j0(x), (leaf(5),)),
    "narrow_copy": (lambda x: ember.narrow_copy(x, 1, 1, 2), (leaf(3, 4),)),
    "lu_unpack": (lambda x: ember.lu_unpack(x, ember.tensor([[3, 3, 3]], dtype=ember.int32)
                                            .reshape(3))[1:], (leaf(3, 3),)),
    "gradient": (lambda x, c: ember.gradient(x, spacing=[c], dim=1, edge_order=2)[0],
                 (leaf(2, 5), ember.tensor([0.0, 0.5, 1.5, 2.0, 3.5], dtype=ember.float64))),
    "angle": (lambda x: ember.angle(x) + x, (leaf(4),)),
    "as_strided_scatter": (lambda x, s: ember.as_strided_scatter(x, s, (2, 2), (3, 1), 1),
                           (leaf(8), leaf(2, 2, seed=1))),
    "index_reduce_prod": (lambda x, s: ember.index_reduce(x, 0, ember.tensor([2, 0, 2]), s, "prod"),
                          (leaf(3, 2), leaf(3, 2, seed=1))),
    "index_reduce_mean": (lambda x, s: ember.index_reduce(x, 1, ember.tensor([1, 1]), s, "mean",
                                                          include_self=False),
                          (leaf(2, 3), leaf(2, 2, seed=1))),
    "index_reduce_amax": (lambda x, s: ember.index_reduce(x, 0, ember.tensor([1, 0]), s, "amax"),
                          (leaf(2, 3), leaf(2, 3, seed=1))),
    "cholesky_inverse": (lambda a: ember.cholesky_inverse(
        ember.linalg.cholesky(a @ a.mT + 3 * ember.eye(3, dtype=ember.float64))), (leaf(3, 3),)),
    "sum_to_size": (lambda x: x.sum_to_size(1, 4), (leaf(3, 4),)),
    "diagonal_scatter": (lambda a, s: ember.diagonal_scatter(a, s, 1), (leaf(3, 4), leaf(3))),
    "select_scatter": (lambda a, s: ember.select_scatter(a, s, 0, 1), (leaf(3, 4), leaf(4))),
    "slice_scatter": (lambda a, s: ember.slice_scatter(a, s, 1, 0, 4, 2), (leaf(3, 4),
                                                                           leaf(3, 2))),
    "put": (lambda a, s: ember.put(a, ember.tensor([0, 5, 5]), s, accumulate=True),
            (leaf(2, 3), leaf(3))),
    "igamma_x": (lambda x: ember.igamma(ember.tensor([0.5, 2.0, 7.5], dtype=ember.float64), x),
                 (leaf(3, lo=0.2, hi=9.0),)),
    "igammac_x": (lambda x: special.gammaincc(ember.tensor([0.5, 2.0, 7.5],
                                                           dtype=ember.float64), x),
                  (leaf(3, lo=0.2, hi=9.0),)),
    "rsub": (lambda a, b: ember.rsub(a, b, alpha=2), (leaf(3), leaf(3, seed=1))),
    "selu": (lambda x: ember.selu(x), (leaf(6),)),
    "celu": (lambda x: ember.celu(x, 0.7), (leaf(6),)),
    "cosine_similarity": (lambda a, b: ember.cosine_similarity(a, b), (leaf(3, 4),
                                                                       leaf(3, 4, seed=1))),
    "pairwise_distance": (lambda a, b: ember.pairwise_distance(a, b), (leaf(3, 4),
                                                                       leaf(3, 4, seed=1))),
    "pdist": (lambda x: ember.pdist(x), (leaf(4, 3),)),
    "frexp_mantissa": (lambda x: ember.frexp(x).mantissa, (leaf(5, lo=0.1, hi=9.0),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, args = CASES[name]
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_zeta_order_has_no_gradient_as_in_torch():
    s = ember.tensor([2.0, 3.0], dtype=ember.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="zeta"):
        special.zeta(s, ember.tensor([1.0, 2.0], dtype=ember.float64)).sum().backward()


def _grads(fn, *values):
    args = [ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in values]
    fn(*args).sum().backward()
    return [a.grad.tolist() for a in args]


def test_bessel_gradients_at_zero():
    # i1'(0) = i1e'(0) = 1/2; i0'(0) = 0; i0e'(0) from the right is -1 (torch: sign(0) = 0 gives 0)
    assert _grads(lambda x: special.i1(x), [0.0]) == [[0.5]]
    assert _grads(lambda x: special.i1e(x), [0.0]) == [[0.5]]
    assert _grads(lambda x: ember.i0(x), [0.0]) == [[0.0]]
    assert _grads(lambda x: special.i0e(x), [0.0]) == [[0.0]]


def test_xlog1py_gradient_rule():
    # d/dx is log1p(y), but 0 where x == 0 and y <= -1 (torch's rule)
    got = _grads(lambda x, y: special.xlog1py(x, y), [0.0, 0.0, 2.0], [-1.0, 1.0, 3.0])
    np.testing.assert_allclose(got[0], [0.0, math.log(2.0), math.log(4.0)], rtol=1e-15)
    np.testing.assert_allclose(got[1][2], 2.0 / 4.0, rtol=1e-15)


GRAD_TORCH = [
    ("digamma", [0.3, 1.7, 4.0, -2.5]), ("lgamma", [0.3, 1.7, -2.5]), ("i0", [-1.0, 0.5, 3.0]),
    ("special.i0e", [-1.0, 0.0, 0.5, 3.0]), ("special.i1", [-1.0, 0.0, 0.5, 3.0]),
    ("special.i1e", [-1.0, 0.0, 0.5, 3.0]), ("special.ndtr", [-3.0, 0.0, 1.2]),
    ("special.ndtri", [0.01, 0.5, 0.9]), ("special.log_ndtr", [-30.0, -1.5, 0.0, 2.0]),
    ("special.erfcx", [-2.0, 0.0, 3.0, 30.0]), ("special.entr", [0.1, 1.0, 3.0]),
]


@pytest.mark.parametrize("name,values", GRAD_TORCH, ids=[c[0] for c in GRAD_TORCH])
def test_gradients_match_torch(name, values):
    torch = pytest.importorskip("torch")

    def resolve(mod):
        obj = mod
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj

    got = _grads(resolve(ember), values)[0]
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    resolve(torch)(x).sum().backward()
    # torch's trigamma (digamma's derivative) is good to ~5e-10; ours is zeta(2, x)
    np.testing.assert_allclose(got, x.grad.tolist(), rtol=1e-8, atol=1e-300)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv", "addr", "cdist_p2", "renorm", "cov",
                                  "logcumsumexp", "polygamma1", "mvlgamma"])
def test_composition_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    fn, args = CASES[name]
    fn(*args).sum().backward()
    targs = [torch.tensor(a.tolist(), dtype=torch.float64, requires_grad=True) for a in args]
    torch_fn = {
        "addcmul": lambda a, b, c: torch.addcmul(a, b, c, value=0.7),
        "addcdiv": lambda a, b, c: torch.addcdiv(a, b, c, value=-1.3),
        "addr": lambda m, u, v: torch.addr(m, u, v, beta=0.5, alpha=-2),
        "cdist_p2": lambda a, b: torch.cdist(a, b),
        "renorm": lambda x: torch.renorm(x, 2, 0, 1.5),
        "cov": lambda x: torch.cov(x),
        "logcumsumexp": lambda x: torch.logcumsumexp(x, 1),
        "polygamma1": lambda x: torch.polygamma(1, x),
        "mvlgamma": lambda x: torch.mvlgamma(x, 3),
    }[name]
    torch_fn(*targs).sum().backward()
    for a, ta in zip(args, targs):
        np.testing.assert_allclose(a.grad.tolist(), ta.grad.tolist(), rtol=1e-6, atol=1e-9)
        a.grad = None


def test_geqrf_says_its_gradient_is_missing():
    a = leaf(4, 3)
    packed = ember.geqrf(a)
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        packed.a.sum().backward()


def test_ldl_factor_and_solve_say_their_gradient_is_missing():
    a = leaf(3, 3)
    sym = a + a.mT + 6 * ember.eye(3, dtype=ember.float64)
    LD, pivots = ember.linalg.ldl_factor(sym)
    with pytest.raises(NotImplementedError, match="'linalg_ldl_factor_ex' is not implemented"):
        LD.sum().backward()
    x = ember.linalg.ldl_solve(LD.detach(), pivots, leaf(3, 2, seed=1))
    with pytest.raises(NotImplementedError, match="'linalg_ldl_solve' is not implemented"):
        x.sum().backward()

