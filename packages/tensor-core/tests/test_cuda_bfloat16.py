"""bfloat16 tensors on CUDA, against the same calls on bf16 CPU tensors.

NumPy and CuPy have no bfloat16: ember.cuda reads bf16 tensors as raw bits, computes in float32
and rounds once, which is what the CPU kernels do (their opmath type for bf16 is float, and
cast_to rounds to nearest even). Results are compared bit for bit where both sides run the same
correctly rounded float32 operations (conversions, + - * /, sqrt, comparisons, selection, copies);
where the float32 intermediate itself may differ in its last bit (transcendental functions, sums
added in another order, products, softmax, convolution) a bf16 result may round the other way:
those allow one bf16 ulp (2**-8 relative, rtol 2**-7 for the neighbouring binade).
Simulated devices where there is no GPU (see test_cuda_tensors.py)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.cuda import _ops
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices, on_gpu

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")

CUDA0 = ember.device("cuda", 0)
BF16 = ember.bfloat16
ULP = 2.0**-7  # one bf16 ulp, relative, at the bottom of a binade


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


def data(*shape, seed=0, lo=-3.0, hi=3.0, dtype=BF16):
    a = np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)
    return ember.from_numpy(a).to(dtype)


def from_bits(bits):
    """A bf16 CPU tensor holding the given 16-bit patterns."""
    return ember.from_numpy(np.asarray(bits, dtype=np.uint16).view(np.int16)).view(BF16)


def f32_from_bits(bits):
    return ember.from_numpy(np.asarray(bits, dtype=np.uint32).view(np.float32))


def bits(t):
    """The 16-bit patterns of a bf16 tensor (on any device)."""
    return t.cpu().contiguous().view(ember.int16).numpy().view(np.uint16)


def nan_blind_bits(t):
    """bits(t) with every NaN as 0x7FC0: the sign and payload of a NaN that an operation makes
    are the hardware's (x86 gives -NaN 0xFFC0 for 0 * inf, a GPU its canonical 0x7FFF), and
    IEEE 754 leaves them open; torch's CPU and CUDA kernels differ so too."""
    b = bits(t)
    return np.where((b & 0x7FFF) > 0x7F80, np.uint16(0x7FC0), b)


def subnormal(b):
    """Which bf16 bit patterns are subnormal (bf16 shares float32's exponent range)."""
    return ((b & 0x7F80) == 0) & ((b & 0x7F) != 0)


def flushed(b):
    """Subnormal patterns as zeros of their sign: what CuPy's float32 kernels make of them (CuPy
    compiles every kernel with -ftz=true; docs/cuda.md)."""
    return np.where(subnormal(b), b & np.uint16(0x8000), b)


def same(gpu, cpu, rtol=0.0):
    """The device result equals the CPU's: bit for bit, or within rtol for floats."""
    if isinstance(cpu, (tuple, list)):
        assert type(gpu) is type(cpu) and len(gpu) == len(cpu)
        for g, c in zip(gpu, cpu):
            same(g, c, rtol)
        return
    if not isinstance(cpu, ember.Tensor):
        assert gpu == cpu
        return
    assert gpu.device == CUDA0, gpu.device
    assert gpu.dtype == cpu.dtype and tuple(gpu.shape) == tuple(cpu.shape)
    if rtol and cpu.is_floating_point():
        g, c = gpu.cpu().double().numpy(), cpu.double().numpy()
        np.testing.assert_allclose(g, c, rtol=rtol, atol=1e-6)
    elif cpu.dtype == BF16:
        got, want = nan_blind_bits(gpu), nan_blind_bits(cpu)
        if REAL_GPU:  # CuPy's arithmetic may flush a subnormal result; conversions keep it
            got = np.where(got == flushed(want), want, got)
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_array_equal(gpu.cpu().numpy(), cpu.numpy())


def check(fn, *args, rtol=0.0, **kwargs):
    """fn(*args) on the CPU and with every tensor argument on the device: the same result."""
    cpu = fn(*args, **kwargs)
    gpu = fn(*on_gpu(args), **on_gpu(kwargs))
    same(gpu, cpu, rtol)
    return gpu


# ---- creation, fill and conversion ----------------------------------------------------------


def test_factories_and_fill():
    for fn in (ember.ones, ember.zeros, ember.empty):
        t = fn(2, 3, device="cuda", dtype=BF16)
        assert t.device == CUDA0 and t.dtype == BF16 and tuple(t.shape) == (2, 3)
    same(ember.ones(2, 3, device="cuda", dtype=BF16), ember.ones(2, 3, dtype=BF16))
    same(ember.zeros(4, device="cuda", dtype=BF16), ember.zeros(4, dtype=BF16))
    for value in (0.1, -0.0, 1 + 2**-8, 1 + 3 * 2**-8, 257, math.inf, -math.nan, True, 3e38,
                  2**40 + 1):
        same(ember.full((3,), value, device="cuda", dtype=BF16), ember.full((3,), value, dtype=BF16))
    for device in ("cuda", "cpu"):  # beyond bfloat16's largest finite value: torch's error
        with pytest.raises(RuntimeError, match="cannot be converted to type c10::BFloat16"):
            ember.full((3,), 1e39, device=device, dtype=BF16)
    same(ember.arange(0, 300, 7, device="cuda", dtype=BF16), ember.arange(0, 300, 7, dtype=BF16))
    r = ember.rand(1000, device="cuda", dtype=BF16)
    assert r.dtype == BF16 and r.device == CUDA0
    assert 0 <= float(r.min()) and float(r.max()) < 1
    t = data(3, 4).cuda().t()  # fill_ through a strided view
    t.fill_(2.5)
    assert (t.cpu() == 2.5).all()


SPECIAL_F32 = [
    0x3F808000, 0x3F818000, 0xBF808000, 0x3F808001, 0x3F80FFFF,  # ties to even, above a tie
    0x7F7FFFFF, 0x7F7F8000, 0xFF7FFFFF,  # round up to inf
    0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0x7FC12345,  # NaNs: quiet, sign, payload
    0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x00000001, 0x00018000, 0x80FFFFFF,
]  # fmt: skip


def test_rounding_matches_the_cpu_bit_for_bit():
    x = f32_from_bits(SPECIAL_F32)
    same(x.cuda().to(BF16), x.to(BF16))
    assert list(bits(x.cuda().to(BF16))[:3]) == [0x3F80, 0x3F82, 0xBF80]
    assert bits(x.cuda().to(BF16))[5] == 0x7F80 and math.isnan(float(x.cuda().to(BF16)[10]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=64))
def test_narrowing_random_float32_bits(patterns):
    x = f32_from_bits(patterns)
    same(x.cuda().to(BF16), x.to(BF16))
    same(x.cuda().to(BF16).float(), x.to(BF16).float())  # widening is exact, NaNs included


@pytest.mark.parametrize("dtype", [ember.float64, ember.float16, ember.int64, ember.int32,
                                   ember.uint8, ember.bool])
def test_conversions_both_ways(dtype):
    a = ember.from_numpy(np.array([0.0, -1.5, 2.75, 257.0, 1 + 2**-8, 65504, 1e-3, 3.0]))
    if dtype == ember.float64:  # double rounding, as the CPU's copy kernel (through float)
        a = ember.from_numpy(np.array([1 + 2**-8 + 2**-30, 1 + 2**-8, 1e300, -1e-300]))
    x = a.to(dtype)
    check(lambda t: t.to(BF16), x)
    b = x.to(BF16)
    if dtype in (ember.int64, ember.int32, ember.uint8):
        b = b.abs()
    check(lambda t: t.to(dtype), b)
    # big integers round to the nearest bf16 (through float)
    check(lambda t: t.to(BF16), ember.tensor([2**31 - 1, -(2**40) - 1, 16777217]))


def test_method_casts_and_device_to_host_copies():
    x = data(3, 5)
    g = x.cuda()
    check(lambda t: t.float(), x)
    check(lambda t: t.double(), x)
    check(lambda t: t.float().bfloat16(), x)
    check(lambda t: t.half().to(BF16), x)
    same(g.float().to(BF16), x)
    assert g.to("cpu", ember.float32).device.type == "cpu"
    np.testing.assert_array_equal(g.to("cpu", ember.float32).numpy(), x.float().numpy())
    y = data(3, 5, dtype=ember.float32)
    assert bits(y.cuda().to("cpu", BF16)).tolist() == bits(y.to(BF16)).tolist()
    same(y.to("cuda", BF16), y.to(BF16))  # host -> device with a cast
    out = ember.empty(5, 3, device="cuda", dtype=BF16).t()  # into a strided destination
    out.copy_(y.cuda())
    same(out.contiguous(), y.to(BF16))
    host = ember.empty(3, 5, dtype=ember.float64)
    host.copy_(g)
    np.testing.assert_array_equal(host.numpy(), x.double().numpy())


# ---- element-wise ops ---------------------------------------------------------------------------

EXACT_UNARY = ["neg", "abs", "sqrt", "reciprocal", "square", "floor", "ceil", "trunc", "frac",
               "sign", "relu", "isnan", "isinf", "isfinite", "signbit"]
CLOSE_UNARY = ["exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "sigmoid", "atan", "erf",
               "rsqrt"]


def _with_specials(x):
    s = ember.tensor([math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5]).to(BF16)
    return ember.cat([x.flatten(), s])


@pytest.mark.parametrize("name", EXACT_UNARY)
def test_unary_exact(name):
    x = _with_specials(data(40, lo=-5, hi=5))
    check(getattr(ember, name), x)


@pytest.mark.parametrize("name", CLOSE_UNARY)
def test_unary_transcendental(name):
    # float32 library functions may differ in the last bit: a bf16 may round the other way
    x = _with_specials(data(40, lo=0.1, hi=3))
    check(getattr(ember, name), x, rtol=ULP)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "fmax",
                                  "remainder", "fmod", "copysign", "floor_divide", "eq", "lt",
                                  "ge", "ne"])
def test_binary_exact(name):
    a, b = _with_specials(data(30, seed=1)), _with_specials(data(30, seed=2, lo=0.5))
    fn = getattr(ember, name)
    check(fn, a, b)
    check(fn, a.reshape(6, 6), b[:6])  # broadcast
    # the number is rounded to bf16 first, as on the CPU (a 0-d tensor where torch's signature
    # takes no Python number)
    number = ember.tensor if name in ("maximum", "minimum", "fmax") else (lambda v: v)
    check(fn, a, number(0.1))
    check(fn, a, number(257))


def test_binary_transcendental():
    a, b = data(50, seed=3, lo=0.1, hi=3), data(50, seed=4, lo=-2, hi=2)
    for fn in (ember.pow, ember.atan2, ember.hypot, ember.logaddexp, ember.xlogy):
        check(fn, a, b, rtol=ULP)
    check(ember.pow, a, 2)
    check(ember.add, a, b, alpha=3)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2**16 - 1), min_size=2, max_size=48).filter(lambda v: len(v) % 2 == 0))
def test_arithmetic_on_random_bits(patterns):
    if REAL_GPU:  # subnormal operands read as zeros there (flush-to-zero): give both sides zeros
        patterns = flushed(np.asarray(patterns, dtype=np.uint16))
    x = from_bits(patterns)
    a, b = x[: len(patterns) // 2], x[len(patterns) // 2:]
    for fn in (ember.add, ember.sub, ember.mul, ember.div, ember.lt):
        check(fn, a, b)


def test_promotion_with_other_dtypes():
    x = data(4, 5)
    for other in (data(4, 5, dtype=ember.float16), data(4, 5, dtype=ember.float32),
                  data(5, dtype=ember.float64), ember.tensor([1, 2, 300, -7, 4097]),
                  ember.tensor([True, False, True, True, False]),
                  ember.tensor(0.1), ember.tensor(0.1, dtype=ember.float64), ember.tensor(257),
                  data(dtype=ember.float32)):
        for fn in (ember.add, ember.mul, ember.lt, ember.eq):
            check(fn, x, other)
            check(fn, other, x)
    check(ember.add, ember.tensor([1, 2, 257]), ember.tensor(0.5, dtype=BF16))  # 0-d bf16
    check(ember.div, ember.tensor([1, 2, 257]), ember.tensor([3, 3, 3]).to(BF16))
    # a CPU 0-d tensor joins a CUDA op as a number
    gpu = x.cuda() + ember.tensor(0.1)
    same(gpu, x + ember.tensor(0.1))
    with pytest.raises(NotImplementedError) as cpu_error:
        ember.bitwise_and(x, x)
    with pytest.raises(NotImplementedError) as gpu_error:
        ember.bitwise_and(x.cuda(), x.cuda())
    assert str(gpu_error.value) == str(cpu_error.value)


def test_where_clamp_and_friends():
    x, y = data(5, 6, seed=1), data(5, 6, seed=2)
    check(ember.where, x > 0, x, y)
    check(ember.where, x > 0, x, 0.1)
    check(ember.where, x > 0, x, data(6, dtype=ember.float32))
    check(ember.clamp, x, -0.3, 0.7)
    check(ember.clamp, x, min=0.1)
    check(lambda t: t.masked_fill(t < 0, 0.1), x)
    check(lambda t: t.nan_to_num(), _with_specials(x))


# ---- reductions, products, softmax --------------------------------------------------------------


def test_reductions():
    x = data(6, 70, seed=5)
    for fn in (ember.amax, ember.amin, ember.argmax, ember.argmin):
        check(fn, x)
        check(fn, x, dim=1)
    check(lambda t: t.max(dim=0), x)
    check(lambda t: t.min(dim=1, keepdim=True), x)
    check(lambda t: t.max(), x)
    # float32 sums in another order than the CPU's lanes: within one bf16 ulp once rounded
    for fn in (ember.sum, ember.mean, ember.var, ember.std, ember.norm):
        check(fn, x, rtol=ULP)
        check(fn, x, dim=1, rtol=ULP)
    check(ember.logsumexp, x, 1, rtol=ULP)
    check(lambda t: t.sum(dim=0, dtype=ember.float32), x, rtol=1e-6)
    check(ember.var_mean, x, dim=1, rtol=ULP)


def test_products():
    a, b = data(7, 9, seed=6), data(9, 5, seed=7)
    # float32 dot products (the CPU's matmul for bf16 computes in float32 and rounds once), in
    # another order: one bf16 ulp
    check(ember.mm, a, b, rtol=ULP)
    check(ember.matmul, a, b, rtol=ULP)
    check(ember.matmul, a.t(), a, rtol=ULP)  # transposed operand
    check(ember.bmm, data(3, 4, 6, seed=8), data(3, 6, 2, seed=9), rtol=ULP)
    check(ember.mv, a, data(9, seed=1), rtol=ULP)
    check(ember.addmm, data(7, 5, seed=2), a, b, rtol=ULP)
    with pytest.raises(RuntimeError) as cpu_error:
        ember.mm(a, data(9, 5, seed=7, dtype=ember.float32))
    with pytest.raises(RuntimeError) as gpu_error:
        ember.mm(a.cuda(), data(9, 5, seed=7, dtype=ember.float32).cuda())
    assert str(gpu_error.value) == str(cpu_error.value)


def test_softmax():
    x = data(4, 33, seed=10)
    for fn in (ember.softmax, ember.log_softmax):
        check(fn, x, 1, rtol=ULP)
        check(fn, x, 0, rtol=ULP)


def test_conv2d():
    F = pytest.importorskip("ember.nn.functional")
    x, w, b = data(2, 3, 8, 8, seed=11), data(4, 3, 3, 3, seed=12), data(4, seed=13)
    # the CPU's bf16 convolution computes in float32 (im2col + float32 GEMM) and rounds once
    check(F.conv2d, x, w, b, padding=1, rtol=ULP)
    check(F.conv2d, x, w, stride=2, rtol=ULP)
    check(F.max_pool2d, x, 2)
    check(F.relu, x)


# ---- joining, selecting, sorting ----------------------------------------------------------------


def test_cat_index_gather():
    x, y = data(4, 5, seed=1), data(2, 5, seed=2)
    check(ember.cat, [x, y])
    check(ember.cat, [x, y.float()])  # promoted: float32
    check(ember.stack, [x, x])
    idx = ember.tensor([3, 0, 3])
    check(ember.index_select, x, 0, idx)
    check(ember.gather, x, 1, ember.tensor([[0, 4], [1, 1], [2, 0], [4, 4]]))
    check(lambda t, i: t[i], x, idx)
    check(lambda t: t[t > 0], x)
    check(ember.flip, x, [0])
    check(ember.roll, x, 2, 1)
    check(ember.tril, x)


def test_sort_topk():
    x = _with_specials(data(25, seed=3))
    check(ember.sort, x)
    check(lambda t: t.sort(descending=True), x)
    check(ember.argsort, x)
    check(ember.topk, data(30, seed=4), 5)
    check(ember.cumsum, data(10, seed=5), 0, rtol=ULP)
    check(ember.unique, from_bits([0x3F80, 0x4000, 0x3F80, 0xBF80]))


# ---- in place, out=, layouts ----------------------------------------------------------------------


def test_inplace_ops_write_back_and_bump_the_version():
    x = data(4, 6, seed=6)
    g = x.cuda()
    for op in (lambda t: t.add_(1.1), lambda t: t.mul_(0.1), lambda t: t.clamp_(-0.5, 0.5),
               lambda t: t.exp_(), lambda t: t.masked_fill_(t > 1, 0.25)):
        v = g._version
        assert op(g) is g
        assert g._version == v + 1 and g.dtype == BF16
        op(x)
        same(g, x, rtol=0 if op is not None else ULP)
    g2, x2 = g.t(), x.t()  # through a transposed view: the base sees the writes
    g2.sub_(ember.ones(6, 4, dtype=BF16, device="cuda"))
    x2.sub_(ember.ones(6, 4, dtype=BF16))
    same(g, x)
    v = g._version
    g[1] = 7.3
    x[1] = 7.3
    assert g._version > v
    same(g, x)
    f = data(4, 6, dtype=ember.float32)
    gf = f.cuda()
    gf.add_(g)  # a float32 destination with a bf16 operand
    f.add_(x)
    same(gf, f)


def test_out():
    a, b = data(3, 4, seed=1), data(3, 4, seed=2)
    out, gout = ember.empty(3, 4, dtype=BF16), ember.empty(3, 4, dtype=BF16, device="cuda")
    r = ember.add(a.cuda(), b.cuda(), out=gout)
    assert r is gout
    same(gout, ember.add(a, b, out=out))
    f32 = ember.empty(3, 4, device="cuda")
    ember.mul(a.cuda(), b.cuda(), out=f32)  # bf16 result into a float32 out=
    np.testing.assert_array_equal(f32.cpu().numpy(), ember.mul(a, b).float().numpy())
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.add(a.cuda().float(), 1.0, out=gout.to(ember.int32))


def test_empty_and_strided_inputs():
    e = ember.empty(0, 3, dtype=BF16)
    check(ember.add, e, 1.0)
    check(ember.sum, e, rtol=ULP)
    check(lambda t: t.float(), e)
    check(ember.cat, [e, data(2, 3)])
    x = data(5, 7, seed=9)
    check(lambda t: t.t() + 1, x)
    check(lambda t: t.t().contiguous(), x)
    check(lambda t: t[:, ::2].float(), x)
    check(lambda t: t.t().sum(0), x, rtol=ULP)


def test_raw_views_still_refuse_bfloat16():
    g = data(3).cuda()
    with pytest.raises(TypeError, match="bfloat16"):
        _ops.view(g)


def test_autograd():
    pytest.importorskip("ember.autograd")
    x, w = data(4, 5, seed=1), data(5, 3, seed=2)
    grads = []
    for dev in ("cpu", "cuda"):
        a, b = (t.to(dev).detach().requires_grad_() for t in (x, w))
        loss = ember.softmax(a @ b * 0.5, 1).sum() + (a * a).mean()
        loss.backward()
        assert a.grad.dtype == BF16 and a.grad.device.type == dev
        grads.append((a.grad, b.grad))
    for g, c in zip(grads[1], grads[0]):
        np.testing.assert_allclose(g.cpu().double().numpy(), c.double().numpy(),
                                   rtol=4 * ULP, atol=1e-2)
