"""add/sub with alpha, as torch's kernel: `a + alpha * b` in one pass, fused into one rounding
where the CPU kernels in use have FMA (ember._C._FUSED_MULTIPLY_ADD: the AVX2 and AVX-512 copies,
not the x86-64-v2 default one, and every aarch64 build; torch's vec::fmadd), computed in the
inputs' common dtype. Oracle: exact rational arithmetic (fractions), rounded once to the dtype;
torch where it is installed.
"""

from fractions import Fraction

import numpy as np
import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, devices

FUSED = ember._C._FUSED_MULTIPLY_ADD
EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}  # spacing at 1
S = 0.1 + 1 / 3  # not a float32 value
RNG = np.random.default_rng(7)


def oracle(a, alpha, b, dtype):
    """a + alpha * b elementwise (alpha already in the dtype), rounded once (FMA) or after the
    product and after the sum, as NumPy arrays of `dtype`."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype), np.asarray(b, dtype))
    w = dtype(alpha)
    if not FUSED:
        return (a + w * b).astype(dtype)
    # float(Fraction) divides two ints, which CPython rounds correctly: one rounding to float64,
    # then float64 -> float32 is exact whenever the float64 value is one (not so in general,
    # so float32 goes through its own correctly rounded conversion below)
    out = np.empty(a.shape, dtype)
    for i, (x, y) in enumerate(zip(a.ravel().tolist(), b.ravel().tolist())):
        exact = Fraction(x) + Fraction(float(w)) * Fraction(y)
        out.flat[i] = _round(exact, dtype)
    return out


def _round(q: Fraction, dtype):
    """q rounded to nearest-even in `dtype` (float32 or float64), once."""
    if dtype is np.float64:
        return float(q)
    d = np.float32(float(q))  # may be off: float64 first, then float32
    # pick the float32 neighbour nearest to q (ties to even mantissa)
    cands = [np.nextafter(d, np.float32(-np.inf)), d, np.nextafter(d, np.float32(np.inf))]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(c.view(np.uint32)) & 1))
    return best


def values(n, dtype):
    return RNG.standard_normal(n).astype(dtype) * dtype(3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("alpha", [S, -0.7, 3, 1e-3])
def test_add_and_sub_round_once(dtype, alpha):
    a, b = values(257, dtype), values(257, dtype)
    ea, eb = ember.from_numpy(a), ember.from_numpy(b)
    np.testing.assert_array_equal(ember.add(ea, eb, alpha=alpha).numpy(), oracle(a, alpha, b, dtype))
    np.testing.assert_array_equal(ember.sub(ea, eb, alpha=alpha).numpy(),
                                  oracle(a, -dtype(alpha), b, dtype))
    np.testing.assert_array_equal(ea.add(0.3, alpha=alpha).numpy(),
                                  oracle(a, alpha, dtype(0.3), dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_in_place_out_broadcast_and_strided(dtype):
    a, b = values(6 * 5, dtype).reshape(6, 5), values(5, dtype)
    want = oracle(a, S, b, dtype)
    x = ember.from_numpy(a.copy())
    assert x.add_(ember.from_numpy(b), alpha=S) is x
    np.testing.assert_array_equal(x.numpy(), want)
    out = ember.empty(6, 5, dtype=getattr(ember, np.dtype(dtype).name))
    assert ember.add(ember.from_numpy(a), ember.from_numpy(b), alpha=S, out=out) is out
    np.testing.assert_array_equal(out.numpy(), want)
    # transposed operands take the strided loop
    t = ember.from_numpy(a).t()
    np.testing.assert_array_equal(ember.sub(t, t.flip(0), alpha=S).numpy(),
                                  oracle(a.T, -dtype(S), a.T[::-1], dtype))
    # a float64 out of a float32 op receives the float32 result
    if dtype is np.float32:
        out64 = ember.empty(6, 5, dtype=ember.float64)
        ember.add(ember.from_numpy(a), ember.from_numpy(b), alpha=S, out=out64)
        np.testing.assert_array_equal(out64.numpy(), want.astype(np.float64))


def test_alpha_multiplies_other_in_the_common_dtype():
    """add(float32, float16, alpha) computes in float32 (it once rounded `alpha * other` to
    float16); an integer `other` of a float input takes a float alpha; integers refuse one."""
    x = values(300, np.float32)
    h = x[::-1].astype(np.float16)
    got = ember.add(ember.from_numpy(x), ember.from_numpy(h), alpha=S)
    assert got.dtype == ember.float32
    np.testing.assert_array_equal(got.numpy(), oracle(x, S, h.astype(np.float32), np.float32))
    assert ember.add(ember.ones(2), ember.tensor([1, 2]), alpha=0.5).tolist() == [1.5, 2.0]
    with pytest.raises(RuntimeError, match="For integral input tensors"):
        ember.add(ember.tensor([1, 2]), ember.tensor([1, 2]), alpha=0.5)
    # integers wrap as torch's int64 arithmetic does
    big = ember.tensor([2**62], dtype=ember.int64)
    assert ember.add(big, big, alpha=3).tolist() == [(2**62 + 3 * 2**62 + 2**63) % 2**64 - 2**63]


def test_alpha_checks_come_before_the_unit_shortcut():
    """torch's alpha_check: a float alpha needs a floating result, a bool one a bool result, even
    where alpha is 1 and nothing would be multiplied."""
    ints = ember.tensor([1, 2])
    for alpha in (1.0, 0.5):
        with pytest.raises(RuntimeError, match="For integral input tensors"):
            ember.add(ints, ints, alpha=alpha)
        with pytest.raises(RuntimeError, match="For integral input tensors"):
            ints.clone().sub_(1, alpha=alpha)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        ember.add(ember.ones(2), ember.ones(2), alpha=True)
    bools = ember.tensor([True, False])
    assert ember.add(bools, bools, alpha=True).tolist() == [True, False]
    assert ember.add(bools, True, alpha=3).tolist() == [True, True]  # a bool number stays bool
    assert ember.add(bools, True, alpha=0).dtype == ember.bool
    assert ember.add(ember.ones(2), ints, alpha=1.0).tolist() == [2.0, 3.0]
    # a number input: the fused pass too, at float32 (as torch)
    want = oracle(np.float32([2.5, 2.5]), S, np.float32([1, 2]), np.float32)
    np.testing.assert_array_equal(ember.add(2.5, ember.tensor([1.0, 2.0]), alpha=S).numpy(), want)


def test_errors_match_the_plain_ops():
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        ember.sub(ember.ones(2), ember.tensor([True, False]), alpha=2)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        ember.tensor([1, 2]).add_(ember.ones(2), alpha=2)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        ember.add(ember.ones(2), ember.ones(3), alpha=2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    if FUSED != (torch.backends.cpu.get_cpu_capability() != "DEFAULT"):
        pytest.skip("torch's kernels run at another CPU capability (set ATEN_CPU_CAPABILITY as "
                    "EMBER_CPU_CAPABILITY): one rounds a + alpha * b once, the other twice")
    a, b = values(4099, getattr(np, dtype)), values(4099, getattr(np, dtype))
    for alpha in (S, -0.7, 3):
        for name in ("add", "sub"):
            want = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b), alpha=alpha)
            got = getattr(ember, name)(ember.from_numpy(a), ember.from_numpy(b), alpha=alpha)
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"{name} {alpha}")


@pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "uint8", "bool"])
def test_cuda_gives_the_cpus_values(dtype):
    """CUDA computes a + alpha * b as the CPU does: float32 fused (exact on CuPy's fma; the host
    backend rounds through float64), float16/bfloat16 in float32, integers wrapping, bools
    staying bool. float64 on the host backend rounds twice, so it is compared to a tolerance."""
    d = getattr(ember, dtype)
    with devices(16 << 20):
        a = ember.from_numpy(values(1000, np.float64) * 20).to(d)
        b = ember.from_numpy(values(1000, np.float64) * 20).to(d)
        alphas = (S, -3.3, 3) if d.is_floating_point else (3, -2, 0)
        for alpha in alphas:
            for fn in (ember.add, ember.sub) if d != ember.bool else (ember.add,):
                want = fn(a, b, alpha=alpha)
                got = fn(a.cuda(), b.cuda(), alpha=alpha).cpu()
                assert got.dtype == want.dtype
                if FUSED or not d.is_floating_point:
                    assert ember.equal(got, want)
                else:  # the CPU rounds twice here, CUDA once: an ulp of alpha * b apart at most
                    eps = EPS[dtype] * (1 + np.abs(alpha) * np.abs(b.double().numpy()))
                    diff = np.abs(got.double().numpy() - want.double().numpy())
                    assert (diff <= eps * (1 + np.abs(want.double().numpy()))).all()
        a64, b64 = a.double(), b.double()
        got = ember.add(a64.cuda(), b64.cuda(), alpha=S).cpu()
        np.testing.assert_allclose(got.numpy(), ember.add(a64, b64, alpha=S).numpy(),
                                   rtol=1e-15, atol=1e-12)  # cancellation: absolute
