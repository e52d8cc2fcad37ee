"""ember.Stream / ember.Event (torch.Stream, torch.Event): the CPU's, with torch's attributes and
errors, and the CUDA ones they hand out (ember.cuda's classes, registered as the generic ones),
on ember.cuda's simulated device where there is no GPU."""

import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, devices


def test_the_cpu_stream_and_event():
    s = ember.Stream(device="cpu")
    assert (s.device_type, s.device_index, s.stream_id) == (0, -1, 0)
    assert s.device == ember.device("cpu") and s.query() and s.synchronize() is None
    assert repr(s) == "ember.Stream device_type=cpu, device_index=-1, stream_id=0"
    assert s == ember.Stream("cpu") and hash(s) == hash(ember.Stream("cpu"))
    with s as entered:
        assert entered is s
    e = ember.Event(device="cpu")
    assert e.device == ember.device("cpu") and e.query() and e.synchronize() is None
    s.wait_event(e)  # nothing to wait for: the host ran everything before
    for call in (e.record, s.record_event, lambda: s.wait_stream(ember.Stream("cpu")),
                 lambda: e.elapsed_time(e)):
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events"):
            call()


def test_like_torchs_where_installed():
    torch = pytest.importorskip("torch")
    if torch.accelerator.is_available():
        pytest.skip("torch sees an accelerator: its default stream is not the CPU's")
    t, e = torch.Stream(), ember.Stream(device="cpu")
    assert (t.device_type, t.device_index, t.stream_id) == (e.device_type, e.device_index,
                                                            e.stream_id)
    assert repr(t).replace("torch", "ember") == repr(e)
    assert repr(torch.Event()).replace("torch", "ember") == repr(ember.Event(device="cpu"))


def _cuda_streams_and_events():
    s = ember.Stream("cuda", priority=-1)
    assert type(s) is ember.cuda.Stream and isinstance(s, ember.Stream)
    assert isinstance(ember.cuda.Stream(), ember.Stream)
    assert s.device_type == 1 and s.stream_id == s.cuda_stream and s.priority == -1
    assert s.device == ember.device("cuda", 0)
    with s:  # torch.Stream's context manager: the block's work goes on it
        assert ember.cuda.current_stream() == s
        y = ember.ones(3, device="cuda") * 2
    assert ember.cuda.current_stream() != s
    e = ember.Event("cuda:0", enable_timing=True)
    assert type(e) is ember.cuda.Event and isinstance(e, ember.Event)
    assert e.device == ember.device("cuda", 0)
    e.record(s)
    e.synchronize()
    assert e.query() and e.event_id != 0
    assert y.sum().item() == 6.0


@pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")
def test_a_cuda_device_hands_out_ember_cuda_streams_and_events():
    with devices(64 << 20):
        _cuda_streams_and_events()  # its tensors are freed before the devices switch back
