"""ember.cuda on a real GPU (the CUDA runtime backend). Skipped, with the reason, where no GPU is
usable; test_cuda.py and test_cuda_allocator.py cover the same bookkeeping on every machine."""

from __future__ import annotations

import pytest

import ember
import ember.cuda as cuda

MiB = 1 << 20

pytestmark = pytest.mark.skipif(
    not cuda.is_available(),
    reason=f"no CUDA GPU: {ember._C._cuda_unavailable_reason() or 'not available'}",
)


@pytest.fixture(autouse=True)
def _clean_allocator():
    cuda.synchronize()
    cuda.empty_cache()
    yield
    cuda.set_per_process_memory_fraction(1.0)
    cuda.synchronize()
    cuda.empty_cache()


def test_runtime_backend():
    assert ember._C._cuda_backend_name() == "cudart"
    assert cuda.device_count() >= 1
    assert isinstance(cuda.get_device_name(), str) and cuda.get_device_name()
    free, total = cuda.mem_get_info()
    assert 0 < free <= total


def test_allocations_are_cached_and_counted():
    base = cuda.memory_allocated()
    p = cuda.caching_allocator_alloc(3 * MiB)
    assert cuda.memory_allocated() == base + 3 * MiB
    assert cuda.memory_reserved() >= 20 * MiB
    cuda.caching_allocator_delete(p)
    before = cuda.memory_stats()["num_device_alloc"]
    q = cuda.caching_allocator_alloc(2 * MiB)
    assert q == p  # reused without cudaMalloc
    assert cuda.memory_stats()["num_device_alloc"] == before
    cuda.caching_allocator_delete(q)


def test_streams_and_events_time_work():
    s = cuda.Stream()
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    with cuda.stream(s):
        start.record()
        end.record()
    end.synchronize()
    assert end.query() and s.query()
    assert start.elapsed_time(end) >= 0.0


def test_out_of_memory_under_a_memory_fraction():
    total = cuda.mem_get_info()[1]
    cuda.set_per_process_memory_fraction(0.01)
    with pytest.raises(cuda.OutOfMemoryError, match="CUDA out of memory. Tried to allocate"):
        cuda.caching_allocator_alloc(int(total * 0.02))
    assert cuda.memory_stats()["num_ooms"] >= 1


def test_cupy_allocations_go_through_ember():
    cupy = pytest.importorskip("cupy")
    from ember.cuda import _cupy

    _cupy.route_cupy_allocations()
    try:
        before = cuda.memory_allocated()
        n = 1 << 19
        x = cupy.arange(n, dtype=cupy.int64)  # 4 MiB
        assert cuda.memory_allocated() >= before + 4 * MiB
        assert int(x.sum()) == n * (n - 1) // 2
        del x
        assert cuda.memory_allocated() == before
    finally:
        _cupy.restore_cupy_allocator()


def test_memory_stats_keys_match_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    torch.empty(1, device="cuda")
    theirs = set(torch.cuda.memory_stats())
    ours = set(cuda.memory_stats())
    assert ours - theirs <= {"num_device_alloc", "num_device_free"}


def test_device_properties_of_a_real_gpu():
    p = cuda.get_device_properties()
    assert p.name == cuda.get_device_name() and p.major >= 3 and p.multi_processor_count >= 1
    assert p.total_memory == cuda.mem_get_info()[1]
    assert cuda.get_device_capability() == (p.major, p.minor)


def test_dlpack_with_cupy_shares_device_memory():
    cupy = pytest.importorskip("cupy")
    x = ember.arange(10.0, device="cuda")
    c = cupy.from_dlpack(x)
    assert c.data.ptr == x.data_ptr() and c.tolist() == x.tolist()
    c *= 2  # on CuPy's stream; from_dlpack below orders it before ember's
    back = ember.from_dlpack(c)
    assert back.data_ptr() == x.data_ptr() and back.tolist() == [2.0 * i for i in range(10)]
    side = cupy.cuda.Stream(non_blocking=True)  # kept alive: ember only borrows its handle
    s = cuda.ExternalStream(side.ptr)
    with cuda.stream(s):
        y = ember.from_dlpack(cupy.ones((3, 4), dtype=cupy.float16))
        assert y.device.type == "cuda" and y.dtype == ember.float16 and y.sum().item() == 12.0


def test_dlpack_with_torch_cuda_tensors():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = ember.arange(6.0, device="cuda").reshape(2, 3)
    t = torch.from_dlpack(x)
    assert t.is_cuda and t.data_ptr() == x.data_ptr() and t.tolist() == x.tolist()
    u = ember.from_dlpack(torch.arange(4, device="cuda"))
    assert u.device.type == "cuda" and u.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_vectorised_binary_kernels_match_the_cpu(dtype):
    """add/sub/mul (and add/sub with alpha) of contiguous same-shape operands take the 16-byte
    kernels of ember.cuda._vector_kernels: every size around the vector width and the block, the
    integers wrapping, misaligned views falling back, all as the CPU computes."""
    import numpy as np

    from ember.cuda import _vector_kernels

    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(5)
    kind = np.dtype(dtype).kind
    for n in (0, 1, 3, 4, 5, 17, 255, 256, 1023, 1024, 1025, 4099, 100_003):
        if kind == "f":
            a, b = rng.standard_normal(n), rng.standard_normal(n)
        else:
            info = np.iinfo(dtype)  # extremes, so that sums and products wrap
            a, b = rng.integers(info.min, info.max, n), rng.integers(info.min, info.max, n)
        x = ember.from_numpy(a.astype(dtype))
        y = ember.from_numpy(b.astype(dtype))
        for op in (ember.add, ember.sub, ember.mul):
            got = op(x.cuda(), y.cuda())
            assert got.cpu().numpy().tobytes() == op(x, y).numpy().tobytes(), (op, n)
        if kind == "f":  # fused: one rounding, as the CPU's add_alpha
            got = ember.sub(x.cuda(), y.cuda(), alpha=0.3)
            np.testing.assert_array_equal(got.cpu().numpy(), ember.sub(x, y, alpha=0.3).numpy())
        if n > 4:  # a view one element in: not 16-byte aligned, so CuPy's own kernel
            got = ember.add(x.cuda()[1:], y.cuda()[1:])
            np.testing.assert_array_equal(got.cpu().numpy(), ember.add(x[1:], y[1:]).numpy())
    xa = cupy.arange(8, dtype=dtype)
    assert _vector_kernels.binary("add", xa, xa, cupy.empty_like(xa))
    assert not _vector_kernels.binary("add", xa[1:], xa[1:], cupy.empty_like(xa[1:]))
    assert not _vector_kernels.binary("add", xa, xa[:1], cupy.empty_like(xa))  # broadcasting
    assert not _vector_kernels.binary("add", xa, xa.astype("float16"), cupy.empty_like(xa))
