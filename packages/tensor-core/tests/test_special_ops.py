"""erfinv, sinc, deg2rad/rad2deg, logaddexp/logaddexp2, xlogy, fmax/fmin, logit and the
ember.special namespace, beyond the generic op-database tests of test_ops_elementwise.py:
accuracy against independent references (opdb's erfinv by Newton on math.erf/erfc, NumPy, the
math module, hand values), PyTorch's rules at NaN, infinities and zeros, the scalar forms, and
PyTorch itself where installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.testing.opdb import erfinv_reference, make_tensor, to_numpy

NAN, INF = float("nan"), float("inf")


def _same(got: ember.Tensor, want, dtype=None) -> None:
    """Equal values (NaN where NaN, the sign of zeros and infinities included)."""
    if dtype is not None:
        assert got.dtype == dtype
    g, w = np.asarray(got.tolist(), dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert g.shape == w.shape
    assert np.array_equal(np.isnan(g), np.isnan(w)), (g, w)
    ok = ~np.isnan(w)
    np.testing.assert_array_equal(g[ok], w[ok])
    np.testing.assert_array_equal(np.signbit(g[ok]), np.signbit(w[ok]))


# ---------------------------------------------------------------------------------------------
# erfinv


def test_erfinv_special_values():
    x = ember.tensor([0.0, -0.0, 1.0, -1.0, 1.0000001, -1.5, INF, -INF, NAN], dtype=ember.float64)
    _same(ember.erfinv(x), [0.0, -0.0, INF, -INF, NAN, NAN, NAN, NAN, NAN], ember.float64)
    _same(ember.erfinv(x.float()), [0.0, -0.0, INF, -INF, NAN, NAN, NAN, NAN, NAN])
    assert ember.erfinv(ember.tensor([0, 1, -1])).tolist() == [0.0, INF, -INF]  # int -> float32


def _erfinv_samples() -> np.ndarray:
    rng = np.random.default_rng(0)
    tails = 1.0 - np.logspace(-15, -1, 400)
    return np.concatenate([rng.uniform(-1, 1, 20000), tails, -tails, np.logspace(-300, -1, 300),
                           np.linspace(0.69, 0.71, 201)])  # both sides of the 0.7 switch


def test_erfinv_float64_accuracy():
    """Within 2 ulps of the reference (itself within an ulp: Newton on math.erf/erfc), the
    tails near +-1 included; there, where a tiny change of y moves x far, the backward error
    (erfc of the result against the exact 1 - |y|) is also within an ulp of y."""
    y = _erfinv_samples()
    got = ember.erfinv(ember.from_numpy(y)).numpy()
    want = erfinv_reference(y)
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 2, ulps.max()
    assert np.median(ulps) == 0
    tails = np.abs(y) > 0.9
    a = np.abs(y[tails])
    back = np.abs(np.vectorize(math.erfc)(np.abs(got[tails])) - (1.0 - a)) / np.spacing(a)
    assert back.max() <= 1, back.max()


def test_erfinv_float64_is_correctly_rounded_but_at_near_ties():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    y = _erfinv_samples()[::7]
    got = ember.erfinv(ember.from_numpy(y)).numpy()
    exact = np.array([float(mpmath.erfinv(mpmath.mpf(float(v)))) for v in y])
    ulps = np.abs(got - exact) / np.spacing(np.abs(exact))
    assert ulps.max() <= 1 and (ulps == 0).mean() > 0.999


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_erfinv_reduced_precision_is_the_rounded_double(dtype):
    """float32 is computed in double and rounded once: within an ulp of the correctly rounded
    value everywhere (tails included), and equal to it nearly always; the half types are the
    float32 result rounded."""
    y32 = _erfinv_samples().astype(np.float32)
    x = make_tensor(y32.astype(np.float64), dtype)
    got = to_numpy(ember.erfinv(x)).astype(np.float64)
    exact = erfinv_reference(to_numpy(x).astype(np.float64))
    if dtype == "float32":
        want = exact.astype(np.float32).astype(np.float64)
        finite = np.isfinite(want)
        ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]).astype(np.float32))
        assert ulps.max() <= 1 and (ulps == 0).mean() > 0.999
    else:
        via32 = ember.erfinv(x.float()).to(getattr(ember, dtype))
        _same(ember.erfinv(x), to_numpy(via32))


def test_erfinv_inverts_erf():
    x = ember.linspace(-5.0, 5.0, 1001, dtype=ember.float64)
    np.testing.assert_allclose(ember.erf(ember.erfinv(ember.erf(x))).numpy(), ember.erf(x).numpy(),
                               rtol=0, atol=2e-16)
    y = ember.linspace(-0.999, 0.999, 999, dtype=ember.float64)
    np.testing.assert_allclose(ember.erf(y.erfinv()).numpy(), y.numpy(), rtol=4e-16, atol=1e-300)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_erfinv_matches_torch(dtype):
    """torch's values are correctly rounded: ember's equal them but at near-ties (an ulp)."""
    torch = pytest.importorskip("torch")
    y = _erfinv_samples().astype(dtype)
    got = ember.erfinv(ember.from_numpy(y)).numpy()
    want = torch.erfinv(torch.from_numpy(y)).numpy()
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
    assert ulps.max() <= 1 and (ulps == 0).mean() > 0.999


# ---------------------------------------------------------------------------------------------
# sinc, deg2rad, rad2deg


def test_sinc_values():
    x = ember.tensor([0.0, -0.0, 0.5, -1.5, 1.0, 2.0, 1e-20, INF, -INF, NAN], dtype=ember.float64)
    got = ember.sinc(x).numpy()
    assert got[0] == got[1] == 1.0 and got[6] == 1.0
    np.testing.assert_allclose(got[2:4], [2 / math.pi, -2 / (3 * math.pi)], rtol=1e-15)
    assert abs(got[4]) < 1e-16 and abs(got[5]) < 1e-16
    assert np.isnan(got[7:]).all()
    np.testing.assert_allclose(got[:7], np.sinc(x.numpy()[:7]), rtol=1e-15, atol=1e-16)
    assert ember.sinc(ember.tensor([0, 1])).dtype == ember.float32


def test_angle_conversions():
    deg = ember.tensor([0.0, 90.0, 180.0, -270.0, 1e300, INF, NAN], dtype=ember.float64)
    _same(ember.deg2rad(deg), [math.radians(v) for v in deg.tolist()], ember.float64)
    rad = ember.tensor([0.0, math.pi, -math.pi / 2, 1e300, -INF], dtype=ember.float64)
    _same(ember.rad2deg(rad), [math.degrees(v) for v in rad.tolist()], ember.float64)
    assert ember.deg2rad(ember.tensor([180])).dtype == ember.float32  # integers promote
    assert ember.deg2rad(ember.tensor([180])).item() == pytest.approx(math.pi, rel=1e-7)
    x = ember.tensor([30.0, 45.0])
    assert x.deg2rad_() is x and x.rad2deg().tolist() == pytest.approx([30.0, 45.0], rel=1e-6)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        ember.tensor([1, 2]).rad2deg_()


# ---------------------------------------------------------------------------------------------
# logaddexp, logaddexp2


@pytest.mark.parametrize("name,ref", [("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2)])
def test_logaddexp_extremes(name, ref):
    a = [INF, -INF, INF, -INF, 1.0, NAN, 1000.0, -1000.0, 0.0, 800.0]
    b = [INF, -INF, -INF, 1.0, NAN, NAN, 1000.0, -1000.0, -0.0, -800.0]
    f = getattr(ember, name)
    got = f(ember.tensor(a, dtype=ember.float64), ember.tensor(b, dtype=ember.float64))
    with np.errstate(invalid="ignore"):
        want = ref(np.array(a), np.array(b))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-15)
    assert got.numpy()[:2].tolist() == [INF, -INF]  # equal infinities are not NaN
    # no overflow in float32 either, and 0-d tensors on either side (torch's signature takes
    # no Python number here)
    assert f(ember.tensor([100.0]), ember.tensor(100.0)).item() == pytest.approx(
        100 + math.log(2) if name == "logaddexp" else 101)
    assert f(ember.tensor(-1.0), ember.tensor([-1.0])).dtype == ember.float32
    with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'other' \\(position 2\\) must be "
                                        "Tensor, not float"):
        f(ember.tensor([100.0]), 100.0)
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Long\''):
        f(ember.tensor([1, 2]), ember.tensor([3, 4]))


# ---------------------------------------------------------------------------------------------
# xlogy


def test_xlogy_rules():
    """x * log(y), 0 where x == 0 -- unless y is NaN, which gives NaN (PyTorch's rule)."""
    x = ember.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 2.0, NAN, -0.0, 3.0], dtype=ember.float64)
    y = ember.tensor([NAN, 0.0, -1.0, INF, 0.0, -1.0, 1.0, 5.0, math.e], dtype=ember.float64)
    _same(ember.xlogy(x, y), [NAN, 0.0, 0.0, 0.0, -INF, NAN, NAN, 0.0, 3.0], ember.float64)


def test_xlogy_forms_and_promotion():
    y = ember.tensor([1.0, 2.0, 4.0])
    want = [0.0, 2 * math.log(2.0), 2 * math.log(4.0)]
    assert ember.xlogy(2, y).tolist() == pytest.approx(want)  # Python number as `input`
    assert ember.xlogy(2.0, y).tolist() == pytest.approx(want)
    assert ember.xlogy(y, 2).tolist() == pytest.approx([math.log(2.0) * v for v in (1, 2, 4)])
    assert ember.xlogy(0.0, ember.tensor([NAN, 2.0])).tolist()[1] == 0.0
    assert ember.special.xlogy is ember.xlogy
    i = ember.tensor([0, 1, 2])
    assert ember.xlogy(i, i).dtype == ember.float32  # integers promote to the default float
    assert ember.xlogy(i.double(), i).dtype == ember.float64
    z = ember.tensor([1.0, 3.0])
    assert z.xlogy_(ember.tensor([math.e, 1.0])) is z and z.tolist() == pytest.approx([1.0, 0.0])
    out = ember.empty(3)
    assert ember.xlogy(y, y, out=out) is out
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        i.xlogy_(2)


def test_xlogy_matches_torch():
    torch = pytest.importorskip("torch")
    v = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, INF, -INF, NAN]
    a, b = np.meshgrid(v, v, indexing="ij")
    got = ember.xlogy(ember.from_numpy(a), ember.from_numpy(b)).numpy()
    want = torch.xlogy(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    np.testing.assert_array_equal(got, want)  # NaN at the same places, same values


# ---------------------------------------------------------------------------------------------
# fmax, fmin


def test_fmax_fmin_ignore_nan():
    a = [1.0, NAN, NAN, -INF, 2.0, -0.5]
    b = [NAN, 3.0, NAN, 1.0, INF, -0.25]
    ta, tb = ember.tensor(a), ember.tensor(b)
    np.testing.assert_array_equal(ember.fmax(ta, tb).numpy(), np.fmax(a, b).astype(np.float32))
    np.testing.assert_array_equal(ember.fmin(ta, tb).numpy(), np.fmin(a, b).astype(np.float32))
    assert ember.maximum(ta, tb).isnan().tolist() == [True, True, True, False, False, False]
    assert ember.fmax(ember.tensor([1, 5], dtype=ember.int8), ember.tensor(3)).dtype == ember.int8
    assert ember.fmax(ember.tensor([1, 5], dtype=ember.int8), ember.tensor(3)).tolist() == [3, 5]
    assert ember.fmax(ember.tensor([1, 5]), ember.tensor([2.5])).dtype == ember.float32
    t, f = ember.tensor([True, False, False]), ember.tensor([True, True, False])
    assert ember.fmax(t, f).tolist() == [True, True, False]  # bool: or / and, as PyTorch
    assert ember.fmin(t, f).tolist() == [True, False, False]


# ---------------------------------------------------------------------------------------------
# logit


def test_logit_eps_rules():
    """PyTorch's values: no eps leaves NaN outside [0, 1]; eps clamps first (lower bound tested
    first, so eps > 0.5 gives the bounds crossed); a negative eps is no eps."""
    x = ember.tensor([0.0, 1.0, 0.5, 1e-8, -0.5, 1.5, NAN, 0.3], dtype=ember.float64)
    lg = lambda v: math.log(v / (1 - v))  # noqa: E731
    _same(ember.logit(x), [-INF, INF, 0.0, lg(1e-8), NAN, NAN, NAN, lg(0.3)])
    _same(ember.logit(x, -0.5), ember.logit(x).tolist())
    _same(ember.logit(x, 0.0), [-INF, INF, 0.0, lg(1e-8), -INF, INF, NAN, lg(0.3)])
    e = 1e-6
    _same(ember.logit(x, e), [lg(e), lg(1 - e), 0.0, lg(e), lg(e), lg(1 - e), NAN, lg(0.3)])
    _same(ember.logit(x, 0.6), [lg(0.6), lg(0.4), lg(0.6), lg(0.6), lg(0.6), lg(0.4), NAN,
                                lg(0.6)])


def test_logit_forms():
    x = ember.tensor([0.2, 0.5, 0.9])
    want = [math.log(v / (1 - v)) for v in (0.2, 0.5, 0.9)]
    assert x.logit().tolist() == pytest.approx(want, rel=1e-6)
    assert ember.special.logit(x, eps=0.25).tolist() == pytest.approx(
        [math.log(1 / 3), 0.0, math.log(3)], rel=1e-6)
    out = ember.empty(3)
    assert ember.logit(x, out=out) is out and out.tolist() == pytest.approx(want, rel=1e-6)
    y = x.clone()
    assert y.logit_() is y and y.tolist() == pytest.approx(want, rel=1e-6)
    y = x.clone()
    assert ember.logit_(y, 0.25) is y and y._version == 1
    i = ember.tensor([0, 1])
    assert ember.logit(i).tolist() == [-INF, INF] and ember.logit(i).dtype == ember.float32
    assert ember.logit(i, eps=0.25).tolist() == pytest.approx([-math.log(3), math.log(3)])
    h = ember.logit(x.half(), 1e-3)
    assert h.dtype == ember.float16
    np.testing.assert_allclose(h.float().numpy(), want, rtol=2e-3)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        i.logit_()
    with pytest.raises(TypeError):
        ember.logit(0.5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64"])
def test_logit_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    v = [0.0, 1.0, 0.5, 1e-3, -0.5, 1.5, 0.3, 0.999] if dtype != "int64" else [0, 1, 2, -1]
    for eps in (None, 1e-6, 0.0, 0.1, 0.6, -1.0):
        got = ember.logit(ember.tensor(v, dtype=getattr(ember, dtype)), eps)
        want = torch.logit(torch.tensor(v, dtype=getattr(torch, dtype)), eps)
        assert got.dtype.name == str(want.dtype).split(".")[-1]
        rtol = {"float16": 2e-3, "bfloat16": 1.6e-2}.get(dtype, 1e-6)
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=rtol,
                                   err_msg=f"eps={eps}")


# ---------------------------------------------------------------------------------------------
# ember.special


def test_special_namespace():
    import ember.special as special

    assert special is ember.special
    aliases = {"expit": "sigmoid", "erf": "erf", "erfc": "erfc", "erfinv": "erfinv",
               "exp2": "exp2", "expm1": "expm1", "log1p": "log1p", "logit": "logit",
               "logsumexp": "logsumexp", "log_softmax": "log_softmax", "softmax": "softmax",
               "round": "round", "sinc": "sinc", "xlogy": "xlogy", "digamma": "digamma",
               "psi": "digamma", "gammaln": "lgamma", "polygamma": "polygamma",
               "multigammaln": "mvlgamma", "i0": "i0", "gammainc": "igamma",
               "gammaincc": "igammac", "modified_bessel_i0": "i0"}
    # torch.special-only table ops, bound as _C._special_<f> (every one of the op table's
    # special_<f> rows); spherical_bessel_j0 is Python
    private = [r["name"][len("special_"):] for r in ember._C._op_table()
               if r["name"].startswith("special_")]
    assert {"i0e", "zeta", "chebyshev_polynomial_t", "legendre_polynomial_p",
            "bessel_j0", "airy_ai"} <= set(private)
    assert sorted(special.__all__) == sorted([*aliases, *private, "spherical_bessel_j0",
                                              "modified_bessel_i1"])
    for name, core in aliases.items():
        assert getattr(special, name) is getattr(ember, core), name
    for name in private:
        assert getattr(special, name) is getattr(ember._C, "_special_" + name), name
    x = ember.tensor([[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_allclose(special.expit(x).numpy(), 1 / (1 + np.exp(-x.numpy())), rtol=1e-6)
    assert special.logsumexp(x, 1).tolist() == pytest.approx(
        [math.log(1 + math.e), math.log(math.exp(2) + math.exp(3))], rel=1e-6)


def test_special_names_match_torch():
    torch = pytest.importorskip("torch")
    for name in ember.special.__all__:
        assert hasattr(torch.special, name), name
