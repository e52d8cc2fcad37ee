"""ember.cuda's Python surface.

Two settings:
- the machine as it is: where no GPU is usable (CI, most machines) availability is False and
  every CUDA-only call raises the no-GPU RuntimeError; tensor factories with device="cuda" too;
- `host_cuda`: ember.cuda over the C++ allocator's host backend (simulated devices), so the
  memory, stream and event functions run end to end on any machine.
GPU runs of the same surface are in test_cuda_gpu.py (skipped without a GPU).
"""

from __future__ import annotations

import pytest

import ember
import ember.cuda as cuda

MiB = 1 << 20
REAL_GPU = cuda.is_available()
no_gpu_only = pytest.mark.skipif(REAL_GPU, reason="this machine has a CUDA GPU")


@pytest.fixture
def host_cuda(monkeypatch):
    """ember.cuda over two simulated devices of 256 MiB each; restored afterwards."""
    monkeypatch.delenv("EMBER_CUDA_ALLOC_CONF", raising=False)

    def install(capacity=256 * MiB, devices=2):
        cuda._use_host_backend(capacity, devices)

    try:
        install()
    except RuntimeError as e:  # a GPU process that has device memory in use (CuPy's state)
        if not REAL_GPU:
            raise
        pytest.skip(f"{e}: on a GPU machine these tests run in a process of their own")
    yield install
    monkeypatch.delenv("EMBER_CUDA_ALLOC_CONF", raising=False)
    for seg in ember._C._cuda_memory_snapshot():  # a failed test must not block the restore
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                cuda.caching_allocator_delete(b["address"])
    cuda._use_host_backend(0)


# ---- no GPU -------------------------------------------------------------------------------------


@no_gpu_only
def test_availability_without_a_gpu():
    assert cuda.is_available() is False
    assert cuda.device_count() == 0
    assert not cuda.is_initialized()
    reason = ember._C._cuda_unavailable_reason()
    assert "libcudart" in reason  # not found, or found without a device: says which


NO_GPU_CALLS = {
    "init": lambda: cuda.init(),
    "current_device": lambda: cuda.current_device(),
    "set_device": lambda: cuda.set_device(0),
    "get_device_name": lambda: cuda.get_device_name(0),
    "synchronize": lambda: cuda.synchronize(),
    "Stream": lambda: cuda.Stream(),
    "current_stream": lambda: cuda.current_stream(),
    "default_stream": lambda: cuda.default_stream(),
    "stream ctx": lambda: cuda.stream(cuda.Stream()).__enter__(),
    "Event.record": lambda: cuda.Event().record(),
    "mem_get_info": lambda: cuda.mem_get_info(),
    "set_per_process_memory_fraction": lambda: cuda.set_per_process_memory_fraction(0.5),
    "reset_peak_memory_stats": lambda: cuda.reset_peak_memory_stats(),
    "reset_accumulated_memory_stats": lambda: cuda.reset_accumulated_memory_stats(),
    "memory_summary": lambda: cuda.memory_summary(),
    "memory_snapshot": lambda: cuda.memory_snapshot(),
    "caching_allocator_alloc": lambda: cuda.caching_allocator_alloc(16),
    "device ctx": lambda: cuda.device(0).__enter__(),
}


@no_gpu_only
@pytest.mark.parametrize("name", list(NO_GPU_CALLS))
def test_cuda_calls_raise_a_clear_error_without_a_gpu(name):
    with pytest.raises(RuntimeError, match=r"ember.cuda: no CUDA GPU is available \(.*libcudart"):
        NO_GPU_CALLS[name]()


@no_gpu_only
def test_memory_queries_answer_zero_without_a_gpu():
    # As torch.cuda before CUDA is initialised: portable code may print these unconditionally.
    assert cuda.memory_allocated() == 0 and cuda.max_memory_allocated() == 0
    assert cuda.memory_reserved() == 0 and cuda.max_memory_reserved() == 0
    assert cuda.memory_stats() == {}
    cuda.empty_cache()  # nothing to do


TENSOR_CALLS = {
    "zeros": lambda: ember.zeros(2, device="cuda"),
    "ones cuda:1": lambda: ember.ones(2, device="cuda:1"),
    "tensor": lambda: ember.tensor([1.0], device=ember.device("cuda", 0)),
    "rand": lambda: ember.rand(3, device="cuda"),
    "Tensor.to": lambda: ember.ones(2).to("cuda"),
    "Tensor.to(device=)": lambda: ember.ones(2).to(device="cuda:0"),
    "Tensor.cuda": lambda: ember.ones(2).cuda(),
    "Generator": lambda: ember.Generator(device="cuda"),
    "tril_indices": lambda: ember.tril_indices(3, 3, device="cuda"),
}


@no_gpu_only
@pytest.mark.parametrize("name", list(TENSOR_CALLS))
def test_cuda_tensors_raise_a_clear_error_without_a_gpu(name):
    with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
        TENSOR_CALLS[name]()


def test_each_device_has_its_own_generator(host_cuda):
    # torch's model: a default generator per device, all seeded by ember.manual_seed; numbers are
    # drawn on the host, so one seed gives the same numbers on every device
    ember.manual_seed(5)
    cpu = ember.randn(6)
    dev0, dev1 = ember.randn(6, device="cuda"), ember.randn(6, device="cuda:1")
    assert cpu.tolist() == dev0.tolist() == dev1.tolist()
    ember.manual_seed(5)
    ember.rand(100, device="cuda")  # draws from cuda:0's stream, not the CPU's
    assert ember.randn(6).tolist() == cpu.tolist()
    gens = cuda.default_generators
    assert len(gens) == 2 and gens[1].device == ember.device("cuda:1")
    assert gens[0] is cuda.default_generators[0]
    cuda.manual_seed(7)  # the current device only
    assert (gens[0].initial_seed(), gens[1].initial_seed()) == (7, 5)
    cuda.manual_seed_all(8)
    assert cuda.initial_seed() == gens[1].initial_seed() == 8
    state = cuda.get_rng_state()
    u = ember.rand(4, device="cuda")
    cuda.set_rng_state(state)
    assert ember.rand(4, device="cuda").tolist() == u.tolist()
    assert [s.tolist() for s in cuda.get_rng_state_all()] == [
        gens[0].get_state().tolist(), gens[1].get_state().tolist()]
    cuda.seed_all()
    assert gens[0].initial_seed() == gens[1].initial_seed()


def test_generators_for_a_device(host_cuda):
    g = ember.Generator(device="cuda:1")
    assert g.device == ember.device("cuda:1") and g.manual_seed(3) is g
    first = ember.rand(5, device="cuda:1", generator=g)
    g.manual_seed(3)
    again = ember.empty(5, device="cuda:1").uniform_(generator=g)
    assert first.tolist() == again.tolist()
    assert ember.rand_like(first, generator=g).device == ember.device("cuda:1")
    # samplers with tensor parameters draw for the parameters' device
    g.manual_seed(4)
    drawn = ember.normal(ember.zeros(5, device="cuda:1"), 2.0, generator=g)
    assert drawn.tolist() == ember.normal(ember.zeros(5), 2.0,
                                          generator=ember.Generator().manual_seed(4)).tolist()
    wrong = [
        (lambda: ember.rand(3, device="cuda", generator=ember.Generator()), "'cuda'", "'cpu'"),
        (lambda: ember.rand(3, generator=g), "'cpu'", "'cuda'"),
        (lambda: ember.ones(3, device="cuda").normal_(generator=ember.Generator()), "'cuda'",
         "'cpu'"),
        (lambda: ember.rand_like(ember.ones(2), generator=g), "'cpu'", "'cuda'"),
        (lambda: ember.bernoulli(ember.full((3,), 0.5), generator=g), "'cpu'", "'cuda'"),
        (lambda: ember.normal(ember.zeros(2, device="cuda"), 1.0, generator=ember.Generator()),
         "'cuda'", "'cpu'"),
        (lambda: ember.multinomial(ember.ones(3, device="cuda"), 1, generator=ember.Generator()),
         "'cuda'", "'cpu'"),
    ]
    for call, expected, found in wrong:
        with pytest.raises(RuntimeError, match=f"Expected a {expected} device type for generator "
                                               f"but found {found}"):
            call()


def test_invalid_device_strings():
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        ember.zeros(1, device="cuda:x")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        ember.zeros(1, device="tpu")
    with pytest.raises(RuntimeError, match="Invalid device, must be cuda device"):
        ember.ones(1).cuda("cpu")


def test_out_of_memory_error_type():
    assert issubclass(cuda.OutOfMemoryError, RuntimeError)
    assert ember.OutOfMemoryError is cuda.OutOfMemoryError


def test_cuda_is_an_attribute_of_ember():
    assert ember.cuda is cuda


# ---- the whole surface over simulated devices ----------------------------------------------------


def test_host_backend_availability(host_cuda):
    assert cuda.is_available() and cuda.device_count() == 2
    assert ember._C._cuda_backend_name() == "host"
    assert "simulated" in cuda.get_device_name(0)
    assert cuda.mem_get_info() == (256 * MiB, 256 * MiB)


def test_memory_functions(host_cuda):
    assert cuda.memory_allocated() == 0
    p = cuda.caching_allocator_alloc(3 * MiB)
    q = cuda.caching_allocator_alloc(1000)
    assert cuda.memory_allocated() == 3 * MiB + 1024
    assert cuda.memory_reserved() == 20 * MiB + 2 * MiB
    assert cuda.mem_get_info() == (256 * MiB - 22 * MiB, 256 * MiB)
    stats = cuda.memory_stats()
    assert list(stats) == sorted(stats)  # torch returns the keys sorted
    assert stats["allocation.all.current"] == 2
    cuda.caching_allocator_delete(p)
    assert cuda.memory_allocated() == 1024
    assert cuda.max_memory_allocated() == 3 * MiB + 1024
    cuda.reset_peak_memory_stats()
    assert cuda.max_memory_allocated() == 1024
    cuda.empty_cache()  # the 20 MiB segment is free, the 2 MiB one holds q
    assert cuda.memory_reserved() == 2 * MiB and cuda.max_memory_reserved() == 22 * MiB
    summary = cuda.memory_summary()
    assert "ember CUDA memory summary, device ID 0" in summary and "Allocated memory" in summary
    (seg,) = cuda.memory_snapshot()
    assert seg["device"] == 0 and seg["blocks"][0]["address"] == q
    cuda.caching_allocator_delete(q)
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        cuda.caching_allocator_delete(q)


def test_devices_have_their_own_allocator(host_cuda):
    p = cuda.caching_allocator_alloc(MiB, device=1)
    assert cuda.memory_allocated(1) == MiB and cuda.memory_allocated(0) == 0
    assert cuda.memory_allocated("cuda:1") == MiB
    assert cuda.memory_allocated(ember.device("cuda", 1)) == MiB
    with cuda.device(1):
        assert cuda.current_device() == 1 and cuda.memory_allocated() == MiB
    assert cuda.current_device() == 0
    cuda.caching_allocator_delete(p)
    with pytest.raises(RuntimeError, match="invalid device ordinal 5"):
        cuda.memory_allocated(5)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        cuda.memory_allocated("cpu")
    cuda.set_device(1)
    assert cuda.current_device() == 1
    cuda.set_device(-1)  # negative: ignored, as in torch
    assert cuda.current_device() == 1
    cuda.set_device(0)


def test_out_of_memory_through_the_memory_fraction(host_cuda):
    cuda.set_per_process_memory_fraction(0.25)  # 64 MiB of 256
    p = cuda.caching_allocator_alloc(40 * MiB)
    with pytest.raises(cuda.OutOfMemoryError) as info:
        cuda.caching_allocator_alloc(30 * MiB)
    msg = str(info.value)
    assert "Tried to allocate 30.00 MiB" in msg and "40.00 MiB is allocated by ember" in msg
    assert "set_per_process_memory_fraction" in msg
    assert cuda.memory_stats()["num_ooms"] == 1
    cuda.caching_allocator_delete(p)
    with pytest.raises(TypeError, match="must be `float`"):
        cuda.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Allowed range: 0~1"):
        cuda.set_per_process_memory_fraction(-0.5)


def test_alloc_conf_is_read_from_the_environment(host_cuda, monkeypatch):
    monkeypatch.setenv("EMBER_CUDA_ALLOC_CONF", "max_split_size_mb:64")
    host_cuda()  # allocators are made again, reading the variable on first use
    assert cuda.memory_stats()["max_split_size"] == 64 * MiB
    monkeypatch.setenv("EMBER_CUDA_ALLOC_CONF", "max_split_size_mb:8")
    host_cuda()
    with pytest.raises(RuntimeError, match="EMBER_CUDA_ALLOC_CONF: max_split_size_mb too small"):
        cuda.memory_stats()


def test_backend_switch_is_refused_while_memory_is_allocated(host_cuda):
    p = cuda.caching_allocator_alloc(10)
    with pytest.raises(RuntimeError, match="while device memory is allocated"):
        host_cuda()
    cuda.caching_allocator_delete(p)


def test_streams(host_cuda):
    assert cuda.current_stream() == cuda.default_stream()
    assert cuda.current_stream().cuda_stream == 0
    s1, s2 = cuda.Stream(), cuda.Stream()
    assert s1 != s2 and s1.cuda_stream != 0 and s1.device == ember.device("cuda:0")
    assert "ember.cuda.Stream device=cuda:0" in repr(s1)
    more = [cuda.Stream() for _ in range(30)]  # 32 in the pool: the next one is s1 again
    assert len({s.cuda_stream for s in [s1, s2, *more]}) == 32
    assert cuda.Stream() == s1
    with cuda.stream(s1):
        assert cuda.current_stream() == s1
        p = cuda.caching_allocator_alloc(100)  # on the current stream
        with cuda.stream(s2):
            assert cuda.current_stream() == s2
        assert cuda.current_stream() == s1
    assert cuda.current_stream().cuda_stream == 0
    with cuda.stream(None):
        assert cuda.current_stream().cuda_stream == 0
    (seg,) = cuda.memory_snapshot()
    assert seg["stream"] == s1.cuda_stream
    cuda.caching_allocator_delete(p)
    s_dev1 = cuda.Stream(device=1)
    with cuda.stream(s_dev1):  # also makes its device current
        assert cuda.current_device() == 1 and cuda.current_stream() == s_dev1
    assert cuda.current_device() == 0


def test_record_stream_refuses_what_is_not_a_stream():
    with pytest.raises(TypeError, match="argument 'stream' must be a Stream, not int"):
        ember.ones(2).record_stream(-2)


def test_events_and_record_stream_semantics(host_cuda):
    s = cuda.Stream()
    e = cuda.Event(enable_timing=True)
    assert e.query()  # never recorded: complete
    e.record(s)
    assert not e.query() and not s.query()  # simulated work stays pending until synchronized
    s.synchronize()
    assert e.query() and s.query()
    start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
    start.record()
    end.record()
    end.synchronize()
    assert end.query() and end.elapsed_time(end) == 0.0 and start.elapsed_time(end) >= 0.0
    no_timing = cuda.Event()
    no_timing.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        no_timing.elapsed_time(end)
    with pytest.raises(RuntimeError, match="must be recorded"):
        cuda.Event(enable_timing=True).elapsed_time(end)
    ev = s.record_event()
    cuda.current_stream().wait_event(ev)
    cuda.current_stream().wait_stream(s)
    cuda.synchronize()
    assert ev.query()
    with pytest.raises(RuntimeError, match="does not match recording stream's device"):
        ev.record(cuda.Stream(device=1))


def test_record_stream_through_the_device_allocator(host_cuda):
    side = cuda.Stream()
    p = cuda.caching_allocator_alloc(MiB)
    ember._C._cuda_record_stream(p, side.cuda_stream, 0)
    cuda.caching_allocator_delete(p)
    assert cuda.memory_stats()["active_bytes.all.current"] == MiB  # pending on `side`
    q = cuda.caching_allocator_alloc(MiB)
    assert q != p
    side.synchronize()
    cuda.caching_allocator_delete(q)
    cuda.caching_allocator_alloc(10)  # processes the completed event
    assert cuda.memory_stats()["active_bytes.all.current"] == 512
