"""The CUDA elementwise ops' own path (csrc/cuda/device_elementwise.cpp): kernels generated from
the op table (the CPU kernels' formulas), compiled by NVRTC, launched from C++ with no Python on
the way. What needs no GPU is checked here: the generated source (and NVRTC's verdict on it where
NVRTC is installed), the launch parameters against an independent address computation, and that
the simulated devices take the same path (the CPU kernels over host memory) with the CPU's
results and errors. The launches themselves run in the CUDA test files on a GPU."""

from __future__ import annotations

import os
import random
import struct

import numpy as np
import pytest

import ember
from ember import _C
from ember.cuda._testing import REAL_GPU, devices

SRC = os.path.join(os.path.dirname(__file__), "..", "csrc")
INTS = [ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64]
FLOATS = [ember.float32, ember.float64]


def dtype_pairs(kind):
    """(compute, output) dtypes that ops/elementwise.cpp's rules give an op of this kind."""
    if kind in ("FLOAT", "FLOAT_ONLY", "TRUEDIV", "FLOAT2", "FLOAT_ONLY2"):
        return [(d, d) for d in FLOATS]
    if kind in ("SAME", "ARITH"):
        return [(d, d) for d in INTS + FLOATS]
    if kind in ("PRED", "CMP", "LOGICAL"):
        return [(d, ember.bool) for d in [ember.bool, *INTS, *FLOATS]]
    if kind in ("INTEGRAL", "BITWISE"):
        return [(d, d) for d in [ember.bool, *INTS]]
    assert kind == "SHIFT", kind
    return [(d, d) for d in INTS]


OPS = _C._op_table()


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(64 << 20, count=2):
        yield


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch):
    """Compiled kernels go to a fresh cache folder per test, not the user's."""
    folder = tmp_path / "kernels"
    monkeypatch.setenv("EMBER_KERNEL_CACHE", str(folder))
    return folder


# ---- the generated source ----------------------------------------------------------------------


@pytest.mark.parametrize("row", OPS, ids=[r["name"] for r in OPS])
def test_source_applies_the_table_formula(row):
    compute, out = dtype_pairs(row["kind"])[0]
    family = "unary" if row["arity"] == 1 else "binary"
    for flat, by_value in [(True, 0), (False, 0), (True, 1), (False, 2)]:
        if by_value >= 1 << row["arity"]:
            continue
        name, src = _C._cuda_kernel_source(row["name"], compute, out, flat, by_value)
        assert name.startswith(f"ember_{family}_{row['name']}_{compute.name}_{out.name}")
        assert f'extern "C" __global__ void {name}(' in src
        # the formula is the table's own (the functor made from op_table.h's row), not a copy
        assert f"ember::{family}_{row['name']}::apply(" in src
        assert '#include "ops/op_table.h"' in src and '#include "kernels/math.h"' in src
        loads_from_params = src.count("from_bits<In>(p.values[")
        assert loads_from_params == bin(by_value).count("1")
        assert ("rem % p.sizes[d]" in src) == (not flat)


def test_embedded_headers_are_the_cpu_kernels_headers():
    headers = _C._cuda_kernel_headers()
    assert set(headers) == {"kernels/math.h", "kernels/special_math.h", "ops/op_table.h"}
    if not os.path.isdir(SRC):
        pytest.skip("no source tree beside the tests")
    for name, text in headers.items():
        with open(os.path.join(SRC, name)) as f:
            assert f.read() == text, f"{name} changed since the core was built"


def test_source_refuses_dtypes_without_kernels():
    with pytest.raises(ValueError, match="float16"):
        _C._cuda_kernel_source("add", ember.float16, ember.float16)
    with pytest.raises(ValueError, match="not an op of the elementwise table"):
        _C._cuda_kernel_source("matmul", ember.float32, ember.float32)


def nvrtc_or_skip():
    try:
        _C._cuda_compile_kernel_source("neg", ember.float32, ember.float32)
    except RuntimeError as e:
        if "cannot compile CUDA kernels" in str(e):
            pytest.skip("NVRTC is not installed (pip install nvidia-cuda-nvrtc)")
        raise


@pytest.mark.parametrize("row", OPS, ids=[r["name"] for r in OPS])
def test_nvrtc_compiles_every_op(row):
    """Every op compiles for every dtype pair its rules allow (the first pair in strided and
    by-value form too). Needs NVRTC only, no GPU."""
    nvrtc_or_skip()
    pairs = dtype_pairs(row["kind"])
    for i, (compute, out) in enumerate(pairs):
        size = _C._cuda_compile_kernel_source(row["name"], compute, out, True, 0, 9, 0)
        assert size > 0
        if i == 0:
            assert _C._cuda_compile_kernel_source(row["name"], compute, out, False, 1, 8, 0) > 0


def test_nvrtc_errors_carry_the_log(monkeypatch):
    nvrtc_or_skip()
    # a dtype pair the rules never produce: bitwise_and over floats does not compile
    with pytest.raises(RuntimeError, match="NVRTC could not compile ember_binary_bitwise_and"):
        _C._cuda_compile_kernel_source("bitwise_and", ember.float32, ember.float32)


# ---- the disk cache of compiled kernels ---------------------------------------------------------


def cache_entry(payload: bytes) -> bytes:
    return b"EMBERKC1" + struct.pack("<Q", len(payload)) + payload


def test_a_cached_kernel_is_read_back_without_compiling(kernel_cache):
    path = _C._cuda_kernel_cache_file("add", ember.float32, ember.float32, True, 0, 9, 0)
    assert path.startswith(str(kernel_cache)) and "ember_binary_add_float32_float32_flat" in path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    payload = b"\x7fELF-stand-in"
    with open(path, "wb") as f:
        f.write(cache_entry(payload))
    # NVRTC is not needed (nor used) for a kernel in the cache
    size = _C._cuda_compile_kernel_source("add", ember.float32, ember.float32, True, 0, 9, 0)
    assert size == len(payload)


def test_cache_files_are_named_by_everything_that_decides_the_binary():
    def file(*key):
        return _C._cuda_kernel_cache_file(*key)

    base = file("add", ember.float32, ember.float32, True, 0, 9, 0)
    assert base == file("add", ember.float32, ember.float32, True, 0, 9, 0)
    others = {file("add", ember.float64, ember.float64, True, 0, 9, 0),
              file("add", ember.float32, ember.float32, False, 0, 9, 0),
              file("add", ember.float32, ember.float32, True, 1, 9, 0),
              file("add", ember.float32, ember.float32, True, 0, 8, 0),
              file("sub", ember.float32, ember.float32, True, 0, 9, 0)}
    assert base not in others and len(others) == 5


@pytest.mark.parametrize("content", [b"", b"garbage", cache_entry(b"abc")[:-1],
                                     cache_entry(b"abc") + b"trailing"])
def test_a_damaged_cache_file_is_not_used(content):
    path = _C._cuda_kernel_cache_file("mul", ember.float32, ember.float32, True, 0, 9, 0)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)
    try:
        size = _C._cuda_compile_kernel_source("mul", ember.float32, ember.float32, True, 0, 9, 0)
    except RuntimeError as e:  # no NVRTC here: compiling was tried, so the file was refused
        assert "cannot compile CUDA kernels" in str(e)
        return
    assert size > 100  # compiled again, and the file replaced by a whole one
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"EMBERKC1" and struct.unpack("<Q", data[8:16])[0] == size


def test_compiled_kernels_are_kept(kernel_cache):
    nvrtc_or_skip()
    size = _C._cuda_compile_kernel_source("exp", ember.float64, ember.float64, False, 0, 9, 0)
    path = _C._cuda_kernel_cache_file("exp", ember.float64, ember.float64, False, 0, 9, 0)
    with open(path, "rb") as f:
        assert len(f.read()) == 16 + size
    assert not [p for p in os.listdir(os.path.dirname(path)) if p.endswith(".tmp")]


def test_cache_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("EMBER_KERNEL_CACHE", "0")
    assert _C._cuda_kernel_cache_file("add", ember.float32, ember.float32, True, 0, 9, 0) == ""


# ---- the launch parameters ---------------------------------------------------------------------


def element_addresses(t, shape):
    """Every element's address of tensor t broadcast to `shape` (numpy, from t's own strides)."""
    nd = len(shape)
    sizes = [1] * (nd - t.dim()) + list(t.shape)
    strides = [0] * (nd - t.dim()) + [s * t.element_size() for s in t.stride()]
    addr = np.full(shape, t.data_ptr(), dtype=np.int64)
    for d in range(nd):
        if sizes[d] == 1:
            continue
        idx = np.arange(shape[d], dtype=np.int64).reshape([-1 if e == d else 1 for e in range(nd)])
        addr = addr + idx * strides[d]
    return addr


def kernel_addresses(plan, arity):
    """The (out, inputs...) addresses the generated kernel visits, by its own index arithmetic."""
    out = []
    for i in range(plan["numel"]):
        offsets = [0] * (arity + 1)
        rem = i
        for d, size in enumerate(plan["sizes"]):
            c = rem % size
            rem //= size
            for k in range(arity + 1):
                offsets[k] += c * plan["strides"][k][d]
        out.append(tuple(plan["data"][k] + offsets[k] if plan["data"][k] else None
                         for k in range(arity + 1)))
    return sorted(out, key=lambda t: t[0])


def random_operand(rng, shape, dtype):
    """A CUDA tensor of `shape` (possibly broadcast from fewer dims or size-1 dims, transposed,
    or a strided slice)."""
    kind = rng.choice(["plain", "transposed", "sliced", "broadcast"])
    if kind == "broadcast" and shape:
        shape = [1 if rng.random() < 0.5 else s for s in shape][rng.randrange(len(shape) + 1):]
        return ember.zeros(tuple(shape), dtype=dtype, device="cuda")
    if kind == "transposed" and len(shape) >= 2:
        return ember.zeros(tuple(reversed(shape)), dtype=dtype, device="cuda").permute(
            *reversed(range(len(shape))))
    if kind == "sliced" and shape:
        big = ember.zeros(*shape[:-1], shape[-1] * 2, dtype=dtype, device="cuda")
        return big[..., ::2]
    return ember.zeros(tuple(shape), dtype=dtype, device="cuda")


@pytest.mark.parametrize("seed", range(40))
def test_parameters_visit_every_element_once_with_its_operands(seed):
    rng = random.Random(seed)
    shape = [rng.randint(1, 4) for _ in range(rng.randint(0, 5))]
    dtype = rng.choice([ember.float32, ember.float64, ember.int8, ember.int64])
    a = random_operand(rng, shape, dtype)
    b = random_operand(rng, shape, dtype)
    plan = _C._cuda_elementwise_plan("add", [a, b], dtype)
    out = plan["out"]
    full = list(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    assert list(out.shape) == full and out.device == a.device
    expected = sorted(
        zip(*(element_addresses(t, full).ravel().tolist() for t in (out, a, b))),
        key=lambda t: t[0])
    assert kernel_addresses(plan, 2) == [tuple(e) for e in expected]
    assert plan["kernel"].endswith("_flat") == (len(plan["sizes"]) == 1)


def test_contiguous_operands_make_one_flat_loop():
    a = ember.zeros(3, 4, 5, device="cuda")
    plan = _C._cuda_elementwise_plan("mul", [a, a], ember.float32)
    assert plan["sizes"] == [60] and plan["strides"] == [[4], [4], [4]]
    assert plan["kernel"] == "ember_binary_mul_float32_float32_flat"


@pytest.mark.parametrize("dtype,value", [(ember.float32, 2.5), (ember.float64, -1e300),
                                         (ember.int64, -(2**40)), (ember.int8, -3),
                                         (ember.bool, True)])
def test_cpu_scalars_travel_by_value(dtype, value):
    x = ember.zeros(4, dtype=dtype, device="cuda")
    s = ember.tensor(value, dtype=dtype)  # CPU 0-d
    plan = _C._cuda_elementwise_plan("eq", [s, x], ember.bool)
    assert plan["kernel"].endswith("_v1")
    assert plan["data"][1] == 0  # no device address for it
    fmt = {ember.float32: "<f", ember.float64: "<d", ember.int64: "<q", ember.int8: "<b",
           ember.bool: "<?"}[dtype]
    raw = struct.pack(fmt, value)
    assert plan["values"][0] == int.from_bytes(raw.ljust(8, b"\0"), "little")


def test_mixed_devices_are_refused_with_torchs_message():
    if REAL_GPU:
        pytest.skip("two simulated devices")
    a = ember.zeros(3, device="cuda:0")
    b = ember.zeros(3, device="cuda:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found "
                       "at least two devices, cuda:0 and cuda:1"):
        _C._cuda_elementwise_plan("add", [a, b], ember.float32)
    with pytest.raises(RuntimeError, match="same device"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        a + ember.zeros(3)  # a CPU tensor that is not 0-d


# ---- the path itself, over the simulated devices -----------------------------------------------


@pytest.fixture
def device_hook_calls():
    """The names of the calls that reach ember.cuda's Python path (the device hook)."""
    import ember.cuda._ops  # noqa: F401  (registers the hook)

    calls = []
    hook = _C._get_device_hook()

    def spy(name, args, kwargs):
        calls.append(name)
        return hook(name, args, kwargs)

    _C._set_device_hook(spy)
    yield calls
    _C._set_device_hook(hook)


def test_elementwise_ops_take_no_python_path(device_hook_calls):
    status = _C._cuda_native_elementwise()
    if not status["available"]:
        pytest.skip(f"the compiled-kernel path is off here: {status['reason']}")
    x = ember.arange(12.0).reshape(3, 4).cuda()
    y = ember.arange(4.0).cuda()
    before = list(device_hook_calls)
    results = [x + y, x * 2, 2 - x, x / 3, ember.exp(x),
               x.sqrt(), x > y, ember.maximum(x, y), -x, x.abs(), x == ember.tensor(4.0)]
    x.mul_(2).add_(y)
    assert device_hook_calls == before, device_hook_calls
    assert all(r.device == x.device for r in results)


BINARY = [r for r in OPS if r["arity"] == 2]
UNARY = [r for r in OPS if r["arity"] == 1]


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == ember.bool:
        return ember.tensor(rng.random(shape) < 0.5)
    if dtype.is_floating_point:
        v = rng.uniform(-4, 4, shape)
        v.flat[:3] = [np.nan, np.inf, -0.0][: v.size]
        return ember.tensor(v, dtype=dtype)
    return ember.tensor(rng.integers(-5, 6, shape) if dtype != ember.uint8
                        else rng.integers(0, 9, shape), dtype=dtype)


@pytest.mark.parametrize("row", UNARY + BINARY, ids=[r["name"] for r in UNARY + BINARY])
def test_results_and_errors_are_the_cpus(row):
    """Each table op on (simulated) CUDA tensors, broadcast and transposed, against the same op
    on the CPU: equal values (NaN where NaN) and dtypes, or the same exception."""
    fn = getattr(ember, row["name"], None) or getattr(ember.Tensor, row["name"], None)
    if fn is None:
        pytest.skip(f"{row['name']} is internal")
    for dtype in [ember.bool, ember.int8, ember.int64, ember.float32, ember.float64]:
        if row["arity"] == 1:
            cpu_args = [sample(dtype, (3, 4), 1).t()]
        else:
            cpu_args = [sample(dtype, (4, 3), 2), sample(dtype, (3,), 3)]
        try:
            expected = fn(*cpu_args)
        except Exception as e:  # the CPU's refusal is the device's too
            with pytest.raises(type(e)):
                fn(*[t.cuda() for t in cpu_args])
            continue
        got = fn(*[t.cuda() for t in cpu_args])
        assert got.device.type == "cuda" and got.dtype == expected.dtype
        if REAL_GPU and expected.dtype.is_floating_point:
            # CUDA's libm rounds exp, sin, lgamma, ... a few ulps apart from the CPU's, as torch's
            tol = 1e-5 if expected.dtype == ember.float32 else 1e-13
            np.testing.assert_allclose(got.cpu().numpy(), expected.numpy(), rtol=tol, atol=tol,
                                       equal_nan=True)
        else:
            np.testing.assert_array_equal(got.cpu().numpy(), expected.numpy())


def test_scalars_and_in_place_forms():
    x = sample(ember.float32, (5,), 4)
    for make in (lambda t: t + 1.5, lambda t: 3 * t, lambda t: t ** 2, lambda t: 1 / t,
                 lambda t: t.clone().sub_(0.25), lambda t: t < 0.5):
        np.testing.assert_array_equal(make(x.cuda()).cpu().numpy(), make(x).numpy())
    i = ember.arange(-3, 4, dtype=ember.int32)
    for make in (lambda t: t + 1, lambda t: t * True, lambda t: t.clone().mul_(3),
                 lambda t: t & 6, lambda t: t << 2):
        np.testing.assert_array_equal(make(i.cuda()).cpu().numpy(), make(i).numpy())
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        i.cuda().add_(0.5)


def test_out_argument_on_the_device():
    a, b = ember.rand(4, 3).cuda(), ember.rand(3).cuda()
    out = ember.empty(4, 3, device="cuda")
    r = ember.add(a, b, out=out)
    assert r is out
    np.testing.assert_array_equal(out.cpu().numpy(), (a.cpu() + b.cpu()).numpy())
    wide = ember.empty(4, 3, dtype=ember.float64, device="cuda")
    ember.mul(a, b, out=wide)
    # computed in float32, then written as float64 (torch's out= rule)
    np.testing.assert_array_equal(wide.cpu().numpy(), (a.cpu() * b.cpu()).double().numpy())
