"""The nccl backend without a GPU: NCCL itself is replaced by a stand-in that records its calls
(and, for a world of one, does what NCCL would), over ember.cuda's simulated devices. What is
checked: the unique id's trip through the store, the pointers, counts, NCCL dtypes, ops and
streams handed to NCCL, and the argument errors. tools/nccl_check.py runs the real thing on a
GPU machine."""

from __future__ import annotations

import contextlib
import ctypes
import threading

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.cuda._testing import REAL_GPU, devices
from ember.distributed import _nccl

ITEMSIZE = {0: 1, 1: 1, 2: 4, 4: 8, 6: 2, 7: 4, 8: 8, 9: 2}


class FakeNccl:
    """cupy.cuda.nccl's names; communicators record their calls and act as a world of one."""

    NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_INT64 = 0, 1, 2, 4
    NCCL_FLOAT16, NCCL_FLOAT32, NCCL_FLOAT64, NCCL_BFLOAT16 = 6, 7, 8, 9
    NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4
    available = True

    def __init__(self):
        self.calls = []
        self.comms = []

    def get_unique_id(self):
        return tuple(range(-64, 64))

    def groupStart(self):  # noqa: N802 - CuPy's names
        self.calls.append(("groupStart",))

    def groupEnd(self):  # noqa: N802
        self.calls.append(("groupEnd",))

    def NcclCommunicator(self, ndev, uid, rank):  # noqa: N802
        outer = self

        class Comm:
            def __init__(self):
                self.args = (ndev, uid, rank)
                outer.comms.append(self)

            def __getattr__(self, name):
                def call(*args):
                    outer.calls.append((name, *args))
                    if ndev == 1 and name in ("allReduce", "broadcast", "allGather",
                                              "reduceScatter", "reduce"):
                        send, recv, count, dt = args[:4]
                        if send != recv:
                            ctypes.memmove(recv, send, count * ITEMSIZE[dt])
                return call

            def destroy(self):
                outer.calls.append(("destroy",))

        return Comm()


@pytest.fixture
def fake(monkeypatch):
    if REAL_GPU:
        pytest.skip("a real GPU: tools/nccl_check.py tests the nccl backend there")
    f = FakeNccl()
    monkeypatch.setattr(_nccl, "_nccl", f)
    monkeypatch.setattr(_nccl, "_device", lambda index: contextlib.nullcontext())
    with devices(64 << 20):
        yield f


def test_unique_id_bytes_round_trip():
    uid = tuple(range(-128, 0))
    data = _nccl.uid_to_bytes(uid)
    assert len(data) == 128 and data[0] == 128 and _nccl.uid_from_bytes(data) == uid


def test_unique_id_reaches_every_rank_through_the_store(fake, tmp_path):
    """Two ranks (threads here) share rank 0's id through a FileStore; each makes its
    communicator with it, on the device of its first tensor."""
    made = {}

    def rank(r):
        st = dist.FileStore(str(tmp_path / "store"))
        b = _nccl.NCCLBackend(r, 2, 30.0, lambda data: (st.set("uid", data), data)[1]
                              if data is not None else st.get("uid"))
        b._comm(0)
        made[r] = b

    threads = [threading.Thread(target=rank, args=(r,)) for r in (1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    args = sorted(c.args for c in fake.comms)
    assert args == [(2, tuple(range(-64, 64)), 0), (2, tuple(range(-64, 64)), 1)]
    assert made[0].device_index == 0


def test_world_of_one_calls(fake, tmp_path):
    dist.init_process_group("nccl", init_method=f"file://{tmp_path}/rdv", rank=0, world_size=1)
    try:
        assert dist.get_backend() == "nccl" and not fake.comms  # made on first use, as torch
        t = ember.arange(6.0, device="cuda").reshape(2, 3)
        dist.all_reduce(t)
        (name, send, recv, count, dt, op, stream), = fake.calls
        assert (name, send, recv, count, dt, op) == ("allReduce", t.data_ptr(), t.data_ptr(), 6,
                                                     FakeNccl.NCCL_FLOAT32, FakeNccl.NCCL_SUM)
        assert stream == ember.cuda.current_stream().cuda_stream
        flags = ember.tensor([True, False], device="cuda")
        dist.all_reduce(flags)  # as torch: SUM of bools is MAX on uint8
        assert fake.calls[-1][4:6] == (FakeNccl.NCCL_UINT8, FakeNccl.NCCL_MAX)
        dist.all_reduce(ember.ones(2, dtype=ember.float16, device="cuda"),
                        op=dist.ReduceOp.AVG)
        assert fake.calls[-1][4:6] == (FakeNccl.NCCL_FLOAT16, FakeNccl.NCCL_AVG)
        h = ember.arange(4, dtype=ember.int16, device="cuda")
        dist.broadcast(h, src=0)  # no int16 in NCCL: moved as bytes
        assert fake.calls[-1][0] == "broadcast" and fake.calls[-1][3:5] == (8, FakeNccl.NCCL_UINT8)
        out = ember.zeros(4, 3, device="cuda")
        dist.all_gather_into_tensor(out, ember.ones(4, 3, device="cuda"))
        np.testing.assert_array_equal(out.cpu().numpy(), np.ones((4, 3)))
        objs = [None]
        dist.all_gather_object(objs, {"on": "cuda"})
        assert objs == [{"on": "cuda"}]
        with pytest.raises(ValueError, match="Cannot use ReduceOp.BAND with NCCL"):
            dist.all_reduce(h, op=dist.ReduceOp.BAND)
        with pytest.raises(RuntimeError, match="NCCL cannot reduce int16"):
            dist.all_reduce(h)
        with pytest.raises(ValueError, match="Tensors must be contiguous"):
            dist.all_reduce(t.t())
        with pytest.raises(RuntimeError, match="no backend for cpu tensors"):
            dist.all_reduce(ember.ones(2))
        dist.barrier()
    finally:
        dist.destroy_process_group()
    assert fake.calls[-1] == ("destroy",)
