"""float16/bfloat16 ops with a number (or 0-d tensor) operand, computed as torch's CPU kernels do:

* mul and div (also `number * x`, `x *= number`, `mul_`, and the rounded divisions floor_divide
  and div(rounding_mode="trunc"/"floor")) take the number at its own float32 value and round the
  result once (torch's original_scalar_value<opmath_t>);
* comparisons convert the number to the tensor's dtype first (`x_half < 0.1` compares with
  half(0.1));
* lerp computes in float32, a number weight at its own value, rounding once;
* `number / x` is `x.reciprocal() * number`, as torch's Tensor.__rtruediv__;
* add/sub with alpha round alpha to the dtype and compute `a + alpha * b` in float32, rounding
  once (torch's vectorised kernel; its scalar loop for the last elements of each thread's part
  rounds in between, so the torch comparison runs torch on one thread and leaves out the tail).

Oracles: NumPy's float32 arithmetic rounded to float16; for bfloat16, float32 arithmetic rounded by
ember's float32 -> bfloat16 conversion (tested bit for bit elsewhere). torch itself where it is
installed. The CUDA ops (simulated devices without a GPU) must give the CPU's bits.
"""

import numpy as np
import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, devices

S = 0.1 + 1 / 3  # not a float16, bfloat16 or float32 value
VALUES = np.concatenate([np.random.default_rng(0).uniform(-2, 2, 3000),
                         [0.0999755859375, 0.1, 0.10003662109375, 0.43359375, -0.0, 3.0]])


def rounded(a32, dtype):
    """float32 values rounded once to dtype, as float32 numbers."""
    if dtype == "float16":
        return np.asarray(a32, np.float32).astype(np.float16).astype(np.float32)
    return ember.from_numpy(np.asarray(a32, np.float32)).to(ember.bfloat16).float().numpy()


def sample(dtype):
    x = ember.from_numpy(VALUES.astype(np.float32)).to(getattr(ember, dtype))
    return x, x.float().numpy()


CASES = {  # op(module, tensor) -> its value from the float32 values f of the tensor
    "mul": (lambda m, x: x * S, lambda f, d: rounded(f * np.float32(S), d)),
    "rmul": (lambda m, x: S * x, lambda f, d: rounded(f * np.float32(S), d)),
    "mul_": (lambda m, x: x.clone().mul_(S), lambda f, d: rounded(f * np.float32(S), d)),
    "imul": (lambda m, x: x.clone().__imul__(S), lambda f, d: rounded(f * np.float32(S), d)),
    "mul_0d": (lambda m, x: x * m.tensor(S, dtype=m.float64),
               lambda f, d: rounded(f * np.float32(S), d)),
    "div": (lambda m, x: x / S, lambda f, d: rounded(f / np.float32(S), d)),
    "div_": (lambda m, x: x.clone().div_(S), lambda f, d: rounded(f / np.float32(S), d)),
    "floor_divide": (lambda m, x: x // S, lambda f, d: rounded(np.floor_divide(f, np.float32(S)), d)),
    "div_floor_": (lambda m, x: x.clone().div_(S, rounding_mode="floor"),
                   lambda f, d: rounded(np.floor_divide(f, np.float32(S)), d)),
    "div_trunc": (lambda m, x: m.div(x, S, rounding_mode="trunc"),
                  lambda f, d: rounded(np.trunc(f / np.float32(S)), d)),
    "rdiv": (lambda m, x: S / x,
             lambda f, d: rounded(rounded(np.float32(1) / f, d) * np.float32(S), d)),
    "lt": (lambda m, x: x < 0.1, lambda f, d: f < rounded(np.float32(0.1), d)),
    "eq": (lambda m, x: x == 0.1, lambda f, d: f == rounded(np.float32(0.1), d)),
    "ge_0d": (lambda m, x: x >= m.tensor(S), lambda f, d: f >= rounded(np.float32(S), d)),
    "add_alpha": (lambda m, x: m.add(x, x.flip(0), alpha=S),
                  lambda f, d: rounded(f + rounded(np.float32(S), d) * f[::-1], d)),
    "sub_alpha_": (lambda m, x: x.clone().sub_(x.flip(0), alpha=S),
                   lambda f, d: rounded(f - rounded(np.float32(S), d) * f[::-1], d)),
    "lerp": (lambda m, x: m.lerp(x, x * 2, S),
             lambda f, d: rounded(_lerp32(f, rounded(f * 2, d), np.float32(S)), d)),
    # an out= of a wider dtype takes the result rounded to the op's dtype (torch's kernel writes
    # that dtype, then casts), not the float32 value it was computed in
    "div_out_float64": (lambda m, x: m.div(x, S, out=_empty(m, x, m.float64)),
                        lambda f, d: rounded(f / np.float32(S), d).astype(np.float64)),
    "mul_0d_out_float32": (lambda m, x: m.mul(x, m.tensor(S), out=_empty(m, x, m.float32)),
                           lambda f, d: rounded(f * np.float32(S), d)),
    "lerp_out_float64": (lambda m, x: m.lerp(x, x * 2, S, out=_empty(m, x, m.float64)),
                         lambda f, d: rounded(_lerp32(f, rounded(f * 2, d), np.float32(S)),
                                              d).astype(np.float64)),
}


def _empty(m, x, dtype):
    return m.empty(0, dtype=dtype, device=x.device)


def _lerp32(s, e, w):
    return np.where(np.abs(w) < 0.5, s + w * (e - s), e - (e - s) * (np.float32(1) - w))


def _bits(t):
    return t.float().numpy() if t.dtype.is_floating_point else t.numpy()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_number_operands_follow_torchs_cpu_rules(case, dtype):
    op, want = CASES[case]
    x, f = sample(dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = want(f, dtype)
    got = op(ember, x)
    wanted_dtype = {np.dtype(bool): ember.bool, np.dtype(np.float64): ember.float64}
    assert got.dtype == wanted_dtype.get(expected.dtype, ember.float32 if "out_float32" in case
                                         else x.dtype)
    np.testing.assert_array_equal(_bits(got), expected)


def test_a_one_element_tensor_is_a_number_for_mul_and_div():
    # torch's kernels take any operand broadcast over every element (a one-element tensor of
    # any rank, not only a 0-d one) as the number: x_bf16 * tensor([257]) multiplies by 257
    # in float32, not by bfloat16's 256; as the first operand it is converted (torch's too).
    # Oracle: float32 arithmetic rounded by ember's float32 -> bfloat16 conversion.
    x = ember.tensor(VALUES * 3, dtype=ember.float32).to(ember.bfloat16)
    x32 = x.float().numpy()
    for other in (ember.tensor([257]), ember.tensor([[257]]), ember.tensor(257)):
        want = ember.tensor(x32 * np.float32(257)).to(ember.bfloat16)
        np.testing.assert_array_equal(_bits((x * other).reshape(-1)), _bits(want))
        want = ember.tensor(x32 / np.float32(257)).to(ember.bfloat16)
        np.testing.assert_array_equal(_bits((x / other).reshape(-1)), _bits(want))
    converted = ember.tensor(x32 * np.float32(256)).to(ember.bfloat16)  # bfloat16(257) = 256
    np.testing.assert_array_equal(_bits(ember.tensor([257]) * x), _bits(converted))
    # a value beyond float16's range: 0 times it is 0, not 0 * inf
    h = ember.tensor([0.0, 1.0], dtype=ember.float16)
    assert (h * ember.tensor([2426500055530810410])).tolist() == [0.0, float("inf")]


def test_the_rule_is_visible_in_a_comparison():
    # 0.1 is 0.0999755859375 in float16: that value is not below it, though it is below 0.1
    x = ember.tensor([0.0999755859375], dtype=ember.float16)
    assert (x < 0.1).tolist() == [False] and (x == 0.1).tolist() == [True]
    # and a product keeps the number's precision: half(0.0999755859375 * 3.3), not * half(3.3)
    assert (x * 3.3).item() == float(np.float16(np.float32(0.0999755859375) * np.float32(3.3)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case, dtype):
    torch = pytest.importorskip("torch")
    op = CASES[case][0]
    x, f = sample(dtype)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # each thread's part has a tail (below)
    try:
        want = op(torch, torch.tensor(f).to(getattr(torch, dtype)))
    finally:
        torch.set_num_threads(threads)
    want = want.float().numpy() if want.is_floating_point() else want.numpy()
    got = _bits(op(ember, x))
    if "alpha" in case:  # torch's scalar loop for the last elements rounds alpha * b in between
        got, want = got[:-64], want[:-64]
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_gives_the_cpus_bits(dtype):
    with devices(64 << 20):
        x, _ = sample(dtype)
        gx = x.cuda()
        for case, (op, _) in sorted(CASES.items()):
            np.testing.assert_array_equal(_bits(op(ember, gx).cpu()), _bits(op(ember, x)),
                                          err_msg=case)
        # add/sub's alpha: folded into `other` by the CPU's mul by a number
        np.testing.assert_array_equal(_bits(ember.add(gx, gx, alpha=S).cpu()),
                                      _bits(ember.add(x, x, alpha=S)))
        del gx


# ---------------------------------------------------------------------------------------------
# conversions from and to float64, and fills (the copy kernels' 16-bit paths)


def _bf16_bits(f32: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even, NaN kept quiet."""
    u = f32.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f32)
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_float64_conversions_round_through_float32(name):
    """float64 -> 16 bits rounds to float32 first, as torch's Half(float(double)): a value just
    above a 16-bit tie rounds to even (the same bits as torch), contiguous or strided, either
    side; widening back is exact."""
    rng = np.random.default_rng(5)
    d = np.concatenate([rng.standard_normal(5000) * 10.0 ** rng.integers(-9, 6, 5000),
                        [np.nan, np.inf, -np.inf, 0.0, -0.0, 65504.0, 65520.0, 1e-8, 3e-8,
                         1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40, 1e300, -1e-300]])
    f32 = d.astype(np.float32)
    with np.errstate(over="ignore"):
        want = f32.astype(np.float16).view(np.uint16) if name == "float16" else _bf16_bits(f32)
    dt = getattr(ember, name)
    got = ember.tensor(d).to(dt).view(ember.int16).numpy().view(np.uint16)
    finite = ~np.isnan(d)
    np.testing.assert_array_equal(got[finite], want[finite])
    assert np.isnan(ember.tensor(d).to(dt).float().numpy()[~finite]).all()
    strided = ember.tensor(d)[::3].to(dt).view(ember.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(strided[finite[::3]], want[::3][finite[::3]])
    into = ember.zeros(2 * len(d), dtype=dt)
    into[::2] = ember.tensor(d)
    np.testing.assert_array_equal(into[::2].view(ember.int16).numpy().view(np.uint16)[finite],
                                  want[finite])
    narrow = ember.tensor(d).to(dt)
    back = narrow.double().numpy()
    np.testing.assert_array_equal(back, narrow.float().numpy().astype(np.float64))
    np.testing.assert_array_equal(narrow[::2].double().numpy(), back[::2])


@pytest.mark.parametrize("name", ["bool", "int8", "int16", "float16", "bfloat16", "float32",
                                  "int64", "complex64", "complex128"])
def test_fills_write_the_value_everywhere(name):
    """Large contiguous fills (parallel chunks of the value's bits), strided and expanded ones."""
    dt = getattr(ember, name)
    value = True if name == "bool" else (1.5 - 2j if dt.is_complex else
                                         -0.0 if dt.is_floating_point else -3)
    n = (1 << 17) + 7
    x = ember.empty(n, dtype=dt).fill_(value)
    want = np.full(n, value, dtype=np.complex128 if dt.is_complex else np.float64)
    got = x.numpy() if name not in ("bfloat16",) else x.float().numpy()
    np.testing.assert_array_equal(got.astype(want.dtype), want)
    if dt.is_floating_point:
        assert np.signbit(got).all()  # -0.0's bits, not 0.0
    y = ember.zeros(3 * n, dtype=dt)
    y[1::3].fill_(value)
    got = y.numpy() if name != "bfloat16" else y.float().numpy()
    np.testing.assert_array_equal(got[1::3].astype(want.dtype), want)
    assert not got[0::3].any() and not got[2::3].any()
    e = ember.zeros(1, dtype=dt).expand(n)
    e.fill_(value)
    assert (e.numpy() if name != "bfloat16" else e.float().numpy()).astype(want.dtype)[0] == value
