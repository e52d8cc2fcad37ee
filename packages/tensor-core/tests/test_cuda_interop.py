"""CUDA tensors and other libraries: DLPack export/import of device memory (with the stream
handshake), ExternalStream and the device properties. On the simulated devices the exchange is
ember with itself; test_cuda_gpu.py exchanges with CuPy and PyTorch on a GPU."""

from __future__ import annotations

import gc
import re

import numpy as np
import pytest

import ember
from ember import cuda
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")

DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
          ember.float16, ember.float32, ember.float64]


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20, 2):
        yield


def capsule_name(cap) -> str:
    return re.search(r'capsule object "([a-z_]+)"', repr(cap)).group(1)


class Producer:
    """A DLPack producer over an ember tensor that records the stream each export was asked for."""

    def __init__(self, t):
        self.t = t
        self.streams = []

    def __dlpack__(self, stream=None, max_version=None):
        self.streams.append(stream)
        return self.t.__dlpack__(stream=stream, max_version=max_version)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dlpack_round_trip_shares_device_memory(dtype):
    x = ember.arange(12).reshape(3, 4).to(dtype).cuda()
    assert x.__dlpack_device__() == (2, 0)
    for cap in (x.__dlpack__(), x.__dlpack__(max_version=(1, 0))):
        y = ember.from_dlpack(cap)
        assert y.device == x.device and y.dtype == x.dtype and y.shape == x.shape
        assert y.data_ptr() == x.data_ptr()
        np.testing.assert_array_equal(y.cpu().numpy(), x.cpu().numpy())


def test_dlpack_views_keep_offset_and_strides():
    base = ember.arange(24.0).reshape(4, 6).cuda()
    view = base[1:, ::2].t()
    y = ember.from_dlpack(view)
    assert y.shape == view.shape and y.stride() == view.stride()
    assert y.data_ptr() == view.data_ptr()
    np.testing.assert_array_equal(y.cpu().numpy(), view.cpu().numpy())
    y.fill_(-1.0)  # writes land in base
    assert (base[1:, ::2] == -1).all().item()
    y.record_stream(cuda.Stream())  # memory the allocator did not hand out: nothing to hold back


TWO_DEVICES = pytest.mark.skipif(REAL_GPU and cuda.device_count() < 2, reason="needs two GPUs")


@TWO_DEVICES
def test_dlpack_on_the_second_device():
    x = ember.ones(5, device="cuda:1")
    assert x.__dlpack_device__() == (2, 1)
    y = ember.from_dlpack(x)
    assert y.device == ember.device("cuda:1") and y.data_ptr() == x.data_ptr()


def test_imported_memory_lives_until_the_last_user_is_gone():
    gc.collect()
    base = cuda.memory_allocated()
    x = ember.ones(1024, device="cuda")
    cap = x.__dlpack__(max_version=(1, 0))
    del x
    gc.collect()
    assert cuda.memory_allocated() == base + 4096  # the capsule holds the storage
    y = ember.from_dlpack(cap)
    del cap
    gc.collect()
    assert cuda.memory_allocated() == base + 4096 and y.sum().item() == 1024
    del y
    gc.collect()
    assert cuda.memory_allocated() == base
    unused = ember.ones(8, device="cuda").__dlpack__()  # never consumed: freed with the capsule
    del unused
    gc.collect()
    assert cuda.memory_allocated() == base


def test_the_consumer_asks_the_producer_for_its_current_stream():
    p = Producer(ember.ones(3, device="cuda"))
    ember.from_dlpack(p)
    s = cuda.Stream()
    with cuda.stream(s):
        ember.from_dlpack(p)
    assert p.streams == [1, s.cuda_stream]  # DLPack's 1: the legacy default stream


def test_the_producer_orders_its_work_before_the_consumers_stream():
    x = ember.ones(3, device="cuda")
    default, side = cuda.default_stream(), cuda.Stream()
    for stream in (None, -1, 1, default.cuda_stream):  # nothing to order
        cuda.synchronize()
        x.__dlpack__(stream=stream)
        assert default.query()
    cuda.synchronize()
    # On the simulated devices an event stays pending until a synchronize, so the recorded ones
    # show; a GPU completes them at once on idle streams.
    x.__dlpack__(stream=side.cuda_stream)
    assert REAL_GPU or not default.query()  # an event was recorded for the side stream to wait on
    cuda.synchronize()
    with cuda.stream(side):  # the producer's stream is now the side stream: 1 must wait on it
        x.__dlpack__(stream=1)
    assert REAL_GPU or not side.query()
    cuda.synchronize()


def test_dlpack_export_options_and_errors():
    x = ember.arange(4.0, device="cuda")
    c = ember.from_dlpack(x.__dlpack__(max_version=(1, 0), copy=True))
    assert c.data_ptr() != x.data_ptr() and c.device == x.device
    assert c.tolist() == x.tolist()
    same = ember.from_dlpack(x.__dlpack__(max_version=(1, 0), dl_device=(2, 0)))
    assert same.data_ptr() == x.data_ptr()
    with pytest.raises(BufferError, match=r"cannot export a cuda:0 tensor to DLPack device \(1, 0\)"):
        x.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match=r"DLPack device \(2, 1\)"):
        x.__dlpack__(dl_device=(2, 1))
    with pytest.raises(TypeError, match="stream must be"):
        x.__dlpack__(stream="default")
    far = Producer(x)
    far.__dlpack_device__ = lambda: (2, 7)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.from_dlpack(far)
    assert far.streams == []  # refused before asking for the capsule


def test_from_dlpack_device_and_copy():
    x = ember.arange(6.0).cuda()
    host = ember.from_dlpack(x, device="cpu")
    assert host.device == ember.device("cpu") and host.tolist() == x.tolist()
    with pytest.raises(BufferError, match="copy=False forbids moving it to cpu"):
        ember.from_dlpack(x, device="cpu", copy=False)
    last = f"cuda:{cuda.device_count() - 1}"
    up = ember.from_dlpack(ember.arange(3.0), device=last)
    assert up.device == ember.device(last) and up.tolist() == [0.0, 1.0, 2.0]
    assert ember.from_dlpack(x, device="cuda:0").data_ptr() == x.data_ptr()
    assert ember.from_dlpack(x, copy=True).data_ptr() != x.data_ptr()


def test_external_stream_queues_ember_work_on_a_foreign_handle():
    side = cuda.Stream()
    ext = cuda.ExternalStream(side.cuda_stream)
    assert ext == side and ext.device_index == 0
    assert "ExternalStream" in repr(ext)
    with cuda.stream(ext):
        assert cuda.current_stream() == side
        y = ember.ones(4, device="cuda") * 2
    ext.synchronize()
    assert y.tolist() == [2.0] * 4
    assert cuda.ExternalStream(0, device="cuda:1").device == ember.device("cuda:1")


@pytest.mark.skipif(REAL_GPU, reason="the simulated devices' properties")
def test_device_properties_of_the_simulated_devices():
    p = cuda.get_device_properties(1)
    assert (p.major, p.minor, p.multi_processor_count) == (0, 0, 1)
    assert p.total_memory == 256 << 20 and "simulated" in p.name
    assert cuda.get_device_capability() == (0, 0)
    assert repr(p).startswith("_CudaDeviceProperties(name='ember host backend")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        cuda.get_device_properties(2)
