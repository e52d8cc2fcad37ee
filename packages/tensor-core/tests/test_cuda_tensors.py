"""CUDA tensors on ember.cuda's simulated devices.

Over the host backend, device memory is host memory and ``ember.cuda._ops`` runs its kernels with
NumPy in place of CuPy; everything else is the code a GPU runs: storages from the caching
allocator, the core's device hook, the dtype rules taken from the CPU ops, copies through the
backend's memcpy, the CPU kernels' refusal of device memory. Results are checked against the same
op on the CPU (itself checked against NumPy elsewhere) and against NumPy.
"""

import math

import numpy as np
import pytest

import ember
from ember import cuda
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices

# On a machine with a GPU the same tests run on it, through CuPy.
pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")
MiB = 1 << 20
two_devices = pytest.mark.skipif(REAL_GPU and cuda.device_count() < 2, reason="needs two GPUs")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 * MiB, 2):
        yield


def host(t):
    return t.cpu().numpy()


# ---- placement and copies ----------------------------------------------------------------------


@pytest.mark.skipif(REAL_GPU, reason="exact block accounting on the simulated device")
def test_tensors_live_in_the_caching_allocator_and_are_freed_with_their_last_reference():
    assert cuda.memory_allocated() == 0
    x = ember.ones(1000, device="cuda")  # 4000 bytes -> one 4096-byte block
    assert x.is_cuda and x.device == ember.device("cuda", 0)
    assert cuda.memory_allocated() == 4096
    v = x[10:20]  # a view shares the storage
    del x
    assert cuda.memory_allocated() == 4096
    del v
    assert cuda.memory_allocated() == 0 and cuda.memory_reserved() == 2 * MiB


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool", "float16"])
def test_round_trip_keeps_values_and_dtype(dtype):
    a = (np.arange(24).reshape(2, 3, 4) % 7).astype(dtype)
    t = ember.from_numpy(a)
    g = t.cuda()
    assert g.dtype == t.dtype and tuple(g.shape) == a.shape
    np.testing.assert_array_equal(host(g), a)


@two_devices
def test_non_contiguous_and_converting_copies():
    a = np.arange(30, dtype=np.float64).reshape(5, 6)
    t = ember.from_numpy(a)
    g = t.t().to("cuda:1")  # a transposed source keeps its (dense) layout
    assert g.device.index == 1
    np.testing.assert_array_equal(host(g), a.T)
    np.testing.assert_array_equal(host(g[:, ::2]), a.T[:, ::2])  # a strided view of device data
    f = g.to(ember.float32)
    assert f.dtype == ember.float32 and f.is_cuda
    np.testing.assert_array_equal(host(f), a.T.astype(np.float32))
    h = ember.zeros(6, 5, dtype=ember.int32)
    h.copy_(g)  # device -> host, converting
    np.testing.assert_array_equal(h.numpy(), a.T.astype(np.int32))
    d = ember.zeros(6, 5, device="cuda")
    d[1:3].copy_(ember.tensor([1.0, 2, 3, 4, 5]))  # host -> device, broadcasting
    np.testing.assert_array_equal(host(d)[1:3], [[1, 2, 3, 4, 5]] * 2)
    assert g.to("cuda:0").device.index == 0  # between devices
    np.testing.assert_array_equal(host(g.to("cuda:0")), a.T)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16"])
def test_copies_between_overlapping_views_of_one_storage_match_the_cpu(dtype):
    # equal-layout contiguous views at different addresses: one memcpy on CuPy, unless copied first
    for shape, dst, src in [((10,), (slice(1, None),), (slice(None, -1),)),
                            ((10,), (slice(None, -1),), (slice(1, None),)),
                            ((4, 3), (slice(1, None),), (slice(None, -1),)),
                            ((4, 3), (slice(None), 0), (slice(None), 1))]:
        cpu = ember.arange(float(np.prod(shape))).reshape(shape).to(getattr(ember, dtype))
        gpu = cpu.cuda()
        cpu[dst].copy_(cpu[src])
        gpu[dst].copy_(gpu[src])
        assert ember.equal(gpu.cpu(), cpu)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "bfloat16"])
def test_negative_zero_fills_keep_their_sign(dtype):
    """CuPy's fill writes any value == 0 with a memset; -0.0 must keep its sign bit, as on the
    CPU: full, fill_, masked and indexed fills, scatter of a number."""
    dt = getattr(ember, dtype)
    x = ember.ones(5, dtype=dt)
    mask, idx = ember.tensor([True, False, True, False, False]), ember.tensor([1, 3])
    cases = [
        lambda d: ember.full((5,), -0.0, dtype=dt, device=d),
        lambda d: x.to(d, copy=True).fill_(-0.0),
        lambda d: x.to(d).masked_fill(mask.to(d), -0.0),
        lambda d: x.to(d, copy=True).masked_fill_(mask.to(d), -0.0),
        lambda d: x.to(d).index_fill(0, idx.to(d), -0.0),
        lambda d: x.to(d).scatter(0, idx.to(d), -0.0),
        lambda d: x.to(d) * -0.0,  # a number operand
    ]
    for make in cases:
        want = make("cpu").float().numpy()
        got = make("cuda").cpu().float().numpy()
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(got, want)


def test_out_of_range_number_operands_wrap_as_on_the_cpu():
    """A number beyond an integer tensor's range is cast as the CPU casts it (int8 + 300 adds
    44), where NumPy 2's asarray(300, int8) would raise."""
    x = ember.tensor([1, -5, 100], dtype=ember.int8)
    mask = ember.tensor([True, False, True])
    for fn in (lambda t: t + 300, lambda t: t * 1000, lambda t: t.masked_fill(mask.to(t.device), -3)):
        np.testing.assert_array_equal(host(fn(x.cuda())), fn(x).numpy())
    # A fill value the dtype cannot hold is refused on both devices, as torch's fills do.
    for t in (x, x.cuda()):
        for fill in (lambda t: t.masked_fill(mask.to(t.device), 300),
                     lambda t: t.index_fill(0, ember.tensor([0], device=t.device), -300.5),
                     lambda t: t.scatter(0, ember.tensor([0], device=t.device), 1e9)):
            with pytest.raises(RuntimeError, match="cannot be converted to type int8_t without overflow"):
                fill(t)


def test_factories_on_the_device():
    assert host(ember.zeros(2, 3, device="cuda")).tolist() == [[0.0] * 3] * 2
    np.testing.assert_array_equal(host(ember.full((2,), 7, device="cuda")), [7, 7])
    np.testing.assert_array_equal(host(ember.arange(5, device="cuda")), np.arange(5))
    np.testing.assert_array_equal(host(ember.eye(3, device="cuda")), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(host(ember.tensor([[1, 2]], device="cuda")), [[1, 2]])
    x = ember.ones(3, device="cuda")
    assert ember.zeros_like(x).is_cuda and not ember.zeros_like(x, device="cpu").is_cuda
    np.testing.assert_array_equal(host(ember.full_like(x, 2.5)), [2.5] * 3)
    np.testing.assert_array_equal(host(ember.tril_indices(3, 3, device="cuda")),
                                  np.stack(np.tril_indices(3)))


def test_random_numbers_match_the_cpu_for_the_same_seed():
    ember.manual_seed(5)
    cpu = ember.randn(4, 5)
    ember.manual_seed(5)
    dev = ember.randn(4, 5, device="cuda")
    np.testing.assert_array_equal(host(dev), cpu.numpy())
    ember.manual_seed(6)
    u = ember.empty(1000, device="cuda").uniform_(2, 3)
    assert u.is_cuda and 2 <= host(u).min() and host(u).max() < 3
    m = ember.empty(1000, device="cuda").bernoulli_(0.25)
    assert set(np.unique(host(m))) <= {0.0, 1.0}


def test_python_values_repr_and_numpy():
    g = ember.tensor([[1.5, 2.0]], device="cuda")
    assert g.tolist() == [[1.5, 2.0]] and g[0, 1].item() == 2.0 and float(g.sum()) == 3.5
    assert repr(g) == "tensor([[1.5000, 2.0000]], device='cuda:0')"
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        g.numpy()


def test_pinned_memory_and_non_blocking_copies():
    t = ember.arange(8, dtype=ember.float32)
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and p.pin_memory() is p
    g = p.to("cuda", non_blocking=True)
    cuda.synchronize()
    np.testing.assert_array_equal(host(g), np.arange(8))
    back = ember.empty(8).pin_memory()
    back.copy_(g)
    np.testing.assert_array_equal(back.numpy(), np.arange(8))
    with pytest.raises(RuntimeError, match="cannot pin 'cuda:0' memory"):
        g.pin_memory()


def test_cuda_array_interface_describes_the_device_bytes():
    g = ember.zeros(4, 3, device="cuda")
    iface = g.t().__cuda_array_interface__
    assert iface["shape"] == (3, 4) and iface["typestr"] == "<f4"
    assert iface["strides"] == (4, 12) and iface["data"][0] == g.data_ptr()
    with pytest.raises(AttributeError):
        _ = ember.zeros(2).__cuda_array_interface__


# ---- ops: the element-wise table against the CPU ------------------------------------------------

UNARY = [r["name"] for r in ember._C._op_table() if r["arity"] == 1]
BINARY = [r["name"] for r in ember._C._op_table() if r["arity"] == 2]


def _sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("float"):
        return rng.uniform(-0.9, 0.9, shape).astype(dtype)
    return rng.integers(1, 6, shape).astype(dtype)


def _call(name, *args):
    fn = getattr(ember, name, None) or getattr(ember._C, "_" + name)
    return fn(*args)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_unary_ops_match_the_cpu(name, dtype):
    x = ember.from_numpy(_sample(dtype, (3, 4), 1))
    try:
        expected = _call(name, x)
    except (RuntimeError, TypeError, NotImplementedError) as e:
        with pytest.raises(type(e), match=str(e)[:40].replace("(", r"\(").replace("[", r"\[")):
            _call(name, x.cuda())
        return
    got = _call(name, x.cuda())
    assert got.is_cuda and got.dtype == expected.dtype
    np.testing.assert_allclose(host(got).astype(np.float64), expected.numpy().astype(np.float64),
                               rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("int64", "float32"),
                                    ("int32", "int64"), ("bool", "bool")])
def test_binary_ops_match_the_cpu_with_broadcasting(name, dtypes):
    a = ember.from_numpy(_sample(dtypes[0], (3, 1), 2))
    b = ember.from_numpy(_sample(dtypes[1], (4,), 3))
    try:
        expected = _call(name, a, b)
    except (RuntimeError, TypeError, NotImplementedError) as e:
        with pytest.raises(type(e)):
            _call(name, a.cuda(), b.cuda())
        return
    got = _call(name, a.cuda(), b.cuda())
    assert got.dtype == expected.dtype and tuple(got.shape) == (3, 4)
    np.testing.assert_allclose(host(got).astype(np.float64), expected.numpy().astype(np.float64),
                               rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_remainder_gives_the_cpus_signed_zeros_and_infinities(dtype):
    """The CPU's remainder is fmod plus the divisor where the signs differ (torch's): a zero keeps
    the dividend's sign, where NumPy's and CuPy's take the divisor's."""
    inf, nan = math.inf, math.nan
    a = ember.tensor([4.0, -4.0, 4.0, -4.0, 5.5, -5.5, 0.0, -0.0, -1.0, 1.0, 3.0, nan],
                     dtype=getattr(ember, dtype))
    b = ember.tensor([-2.0, 2.0, 2.0, -2.0, -2.0, 2.0, -3.0, 3.0, inf, -inf, 0.0, 1.0],
                     dtype=a.dtype)
    for got, want in ((ember.remainder(a.cuda(), b.cuda()), ember.remainder(a, b)),
                      (a.cuda() % -2.0, a % -2.0), (a.cuda().remainder_(3), a.clone().remainder_(3))):
        bits = {"float32": np.uint32, "float64": np.uint64, "float16": np.uint16}[dtype]
        g, w = host(got), want.numpy()
        keep = ~np.isnan(w)  # a made NaN's sign and payload are the hardware's (x86: -NaN)
        np.testing.assert_array_equal(np.isnan(g), ~keep)
        np.testing.assert_array_equal(g[keep].view(bits), w[keep].view(bits))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_pow_with_negative_tensor_exponents_is_the_cpus(dtype):
    """1, +-1 or 0 as the CPU kernel (NumPy's power refuses negative integer exponents), and
    overflow wraps as the CPU's."""
    d = getattr(ember, dtype)
    a = ember.tensor([2, 1, -1, 0, -1, 3, 2, 0, 3, 5], dtype=d)
    b = ember.tensor([-1, -3, -3, -2, -4, 2, 0, 0, 7, 9], dtype=d)
    assert host(ember.pow(a.cuda(), b.cuda())).tolist() == ember.pow(a, b).tolist()
    assert host(a.cuda() ** b.cuda()[:1]).tolist() == (a ** b[:1]).tolist()  # broadcast


def test_scalars_alpha_in_place_and_out():
    a = ember.tensor([1, 2, 3], device="cuda")
    assert (a + 1.5).dtype == ember.float32 and host(a + 1.5).tolist() == [2.5, 3.5, 4.5]
    assert host(ember.add(a, a, alpha=3)).tolist() == [4, 8, 12]
    assert host(2 ** a).tolist() == [2, 4, 8]
    a += 1
    assert host(a).tolist() == [2, 3, 4]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        a.mul_(0.5)
    out = ember.empty(3, device="cuda")
    ember.mul(a, 2, out=out)
    assert host(out).tolist() == [4.0, 6.0, 8.0]
    s = ember.tensor(2.0)  # a 0-d CPU tensor joins a CUDA op as a number
    assert host(a * s).tolist() == [4.0, 6.0, 8.0]


def test_reductions_match_numpy():
    a = np.random.default_rng(0).standard_normal((3, 4, 5))
    g = ember.from_numpy(a).cuda()
    np.testing.assert_allclose(host(g.sum()), a.sum())
    np.testing.assert_allclose(host(g.sum(dim=(0, 2), keepdim=True)), a.sum((0, 2), keepdims=True))
    np.testing.assert_allclose(host(g.mean(1)), a.mean(1))
    np.testing.assert_allclose(host(g.var(2)), a.var(2, ddof=1))
    np.testing.assert_allclose(host(g.std(2, correction=0)), a.std(2))
    np.testing.assert_allclose(host(g.amax(0)), a.max(0))
    np.testing.assert_allclose(host(ember.logsumexp(g, 1)), np.log(np.exp(a).sum(1)))
    np.testing.assert_allclose(host(g.norm()), np.sqrt((a ** 2).sum()))
    values, indices = g.max(dim=1)
    np.testing.assert_array_equal(host(values), a.max(1))
    np.testing.assert_array_equal(host(indices), a.argmax(1))
    assert indices.dtype == ember.int64
    np.testing.assert_array_equal(host(g.argmin()), a.argmin())
    assert host(g.max()).item() == a.max()
    assert host((g > 0).any()).item() and not host((g > 10).all()).item()


def test_products_softmax_where_clamp_cat():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    ga, gb = ember.from_numpy(a).cuda(), ember.from_numpy(b).cuda()
    np.testing.assert_allclose(host(ga @ gb), a @ b)
    np.testing.assert_allclose(host(ember.addmm(gb[0], ga, gb, beta=2, alpha=0.5)),
                               2 * b[0] + 0.5 * (a @ b))
    np.testing.assert_allclose(host(ember.bmm(ga[None], gb[None])), (a @ b)[None])
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(host(ga.softmax(1)), e / e.sum(1, keepdims=True))
    np.testing.assert_allclose(host(ga.log_softmax(1)), np.log(e / e.sum(1, keepdims=True)))
    np.testing.assert_allclose(host(ember.where(ga > 0, ga, 0.0)), np.where(a > 0, a, 0))
    np.testing.assert_allclose(host(ga.clamp(-0.5, 0.5)), a.clip(-0.5, 0.5))
    np.testing.assert_allclose(host(ember.cat([ga, ga], 1)), np.concatenate([a, a], 1))
    np.testing.assert_allclose(host(ember.stack([ga, ga])), np.stack([a, a]))


@pytest.mark.parametrize("fn", [
    lambda a, b: a.mm(b), lambda a, b: a @ b, lambda a, b: a.mv(b[0]),
    lambda a, b: ember.bmm(a[None], b[None]), lambda a, b: a[0].dot(b[0]),
    lambda a, b: ember.matmul(a[None], b[:, None]),
])
def test_product_size_errors_are_the_cpus(fn):
    a, b = ember.ones(2, 3), ember.ones(4, 5)
    with pytest.raises(RuntimeError) as cpu:
        fn(a, b)
    with pytest.raises(RuntimeError) as gpu:
        fn(a.cuda(), b.cuda())
    assert str(gpu.value) == str(cpu.value)


def test_in_place_ops_bump_the_version_counter():
    # autograd refuses a backward through a saved tensor modified since: it reads this counter
    x, y = ember.ones(4, device="cuda"), ember.ones(4, device="cuda")
    i = ember.tensor([1], device="cuda")
    for op in (lambda: x.add_(y), lambda: x.exp_(), lambda: x.clamp_(0, 1), lambda: x.mul_(2),
               lambda: x.index_fill_(0, i, 2.0), lambda: x.masked_fill_(x > 0, 1.0),
               lambda: x.scatter_(0, i, 3.0), lambda: x.copy_(y), lambda: x.zero_()):
        before = x._version
        op()
        assert x._version > before


def test_remembered_dtype_rules_keep_value_dependent_errors():
    # the dtype rules of a call are remembered per (op, dtypes, ranks, other arguments): a second
    # call must still raise where the values make the CPU raise, and scalar types still count
    n = ember.arange(3, device="cuda")
    for _ in range(2):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            n ** -1
        assert (n * 2).dtype == ember.int64 and (n * 2.0).dtype == ember.float32
        assert (n * True).dtype == ember.int64 and (n > 1).dtype == ember.bool
        assert host(n ** 2).tolist() == [0, 1, 4]


# ---- errors --------------------------------------------------------------------------------------


@two_devices
def test_mixing_devices_raises_torchs_error():
    g, c = ember.ones(3, device="cuda"), ember.ones(3)
    msg = "Expected all tensors to be on the same device, but found at least two devices"
    for bad in (lambda: g + c, lambda: c * g, lambda: ember.ones(3, device="cuda:1") + g,
                lambda: ember.mm(g[None], c[:, None]), lambda: ember.add(g, g, out=c)):
        with pytest.raises(RuntimeError, match=msg):
            bad()


def test_ops_without_a_cuda_implementation_say_so():
    # every op the core hands to the device hook has an entry now (linear algebra included, see
    # test_cuda_linalg.py): the hook's refusal is seen by calling it with a name it lacks
    from ember.cuda._dispatch import dispatch

    g = ember.ones(3, device="cuda")
    with pytest.raises(NotImplementedError, match="'no_such_op' has no CUDA implementation yet "
                       r"\(its tensors are on cuda:0\)"):
        dispatch("no_such_op", (g,), {})


@pytest.mark.skipif(REAL_GPU, reason="switches the simulated backend")
def test_backend_switch_is_refused_while_tensors_are_alive():
    g = ember.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match="while device memory is allocated"):
        cuda._use_host_backend(0)
    del g


# ---- shape ops that move elements; argmax with dim -----------------------------------------------


@pytest.mark.parametrize("op", [
    lambda t: t.tril(), lambda t: t.tril(1), lambda t: ember.triu(t, -1),
    lambda t: ember.flip(t, [0, 2]), lambda t: ember.flip(t, [-1]),
    lambda t: ember._C.constant_pad_nd(t, [1, 2], 0.5),
    lambda t: ember._C.constant_pad_nd(t, [1, -2, 0, 1, 2, 0], 0),
    lambda t: t.argmax(1), lambda t: t.argmin(-1, keepdim=True), lambda t: t.argmax(),
    lambda t: t.argmax(keepdim=True),
])
def test_element_moving_shape_ops_match_the_cpu(op):
    x = ember.from_numpy(np.random.default_rng(0).permutation(60).reshape(3, 4, 5).astype("f4"))
    cpu, gpu = op(x), op(x.cuda())
    assert gpu.is_cuda and gpu.dtype == cpu.dtype
    np.testing.assert_array_equal(host(gpu), cpu.numpy())


@pytest.mark.parametrize("op", [
    lambda t: ember.tril(t[0, 0]), lambda t: ember.flip(t, [0, 0]),
    lambda t: ember._C.constant_pad_nd(t, [1], 0), lambda t: ember._C.constant_pad_nd(t, [-6, 0], 0),
    lambda t: ember._C.constant_pad_nd(t, [0, 0] * 4, 0),
])
def test_element_moving_shape_op_errors_are_the_cpus(op):
    x = ember.zeros(3, 4, 5)
    with pytest.raises(Exception) as cpu:
        op(x)
    with pytest.raises(type(cpu.value)) as gpu:
        op(x.cuda())
    assert str(gpu.value) == str(cpu.value)
