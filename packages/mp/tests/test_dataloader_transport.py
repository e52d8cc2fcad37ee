"""ember.utils.data's DataLoader uses ember-mp's transport when both are installed."""

import os

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp

data = pytest.importorskip("ember.utils.data")
from ember.utils.data import _transport  # noqa: E402


def _ours():
    return [n for n in os.listdir("/dev/shm") if n.startswith(f"ember_dl_{os.getpid()}_")]


class Mixed(data.Dataset):
    """Large and small tensors, bfloat16, a transposed view, a NumPy array and a string."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        # a batch of 3 "big", "bf" or "np" items is over 64 KiB: those travel in shared memory
        return {"big": ember.full((100, 100), float(i)), "small": ember.tensor([i]),
                "bf": ember.full((200, 200), float(i), dtype=ember.bfloat16),
                "view": ember.arange(1600.0).view(40, 40).t() + i,
                "np": np.full((150, 150), i, dtype=np.int16), "name": f"n{i}"}


def test_the_seam_is_ember_mp():
    assert _transport.get_transport("ember_dl_x").name == "ember-mp"


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_batches_arrive_as_shared_storages(method):
    loader = data.DataLoader(Mixed(), batch_size=3, num_workers=2, timeout=30,
                             multiprocessing_context=method)
    want = list(data.DataLoader(Mixed(), batch_size=3))
    it = iter(loader)
    got = [next(it), next(it)]
    assert not _ours()  # received segments lose their names at once
    for b, ref in zip(got, want):
        for k in ("big", "small", "view", "np"):
            np.testing.assert_array_equal(b[k].numpy(), ref[k].numpy())
        assert b["bf"].dtype == ember.bfloat16 and ember.equal(b["bf"], ref["bf"])
        assert b["name"] == ref["name"]
        # large tensors come in shared memory (the collated batch itself: no second copy)
        assert b["big"].is_shared() and b["np"].is_shared() and b["bf"].is_shared()
        assert b["big"].untyped_storage().nbytes() == 3 * 100 * 100 * 4
        assert not b["small"].is_shared()  # small tensors ride in the message
    del it
    assert not _ours()
    got[0]["big"].add_(1)  # the batch outlives its iterator
    assert got[0]["big"][0, 0, 0].item() == 1.0


def _add_one(t):
    t.add_(1)


def test_a_received_batch_can_be_sent_on():
    (x,) = [b["big"] for b in data.DataLoader(Mixed(), batch_size=6, num_workers=1, timeout=30)]
    before = x.clone()
    p = mp.get_context("spawn").Process(target=_add_one, args=(x,))
    p.start()
    p.join(30)
    assert p.exitcode == 0
    assert ember.equal(x, before + 1)  # the child wrote into our memory


def test_transport_round_trip_in_one_process():
    t = _transport.get_transport(f"ember_dl_{os.getpid()}_rt")
    t.tag = "0"
    buf = t.out_array((4, 50000), np.float32)  # what default_collate stacks into
    buf[:] = np.arange(200000, dtype=np.float32).reshape(4, 50000)
    batch = ember.from_numpy(buf)
    msg = t.dumps({"x": batch, "x1": batch[1], "copy": ember.ones(30000)})
    del buf, batch
    assert len(_ours()) == 2  # the collated segment and the copied one, held by the message
    out = t.loads(msg)
    assert not _ours()
    assert out["x1"].untyped_storage() == out["x"].untyped_storage()  # one mapping, two views
    np.testing.assert_array_equal(out["x"].numpy(), np.arange(200000).reshape(4, 50000))
    assert out["x1"].storage_offset() == 50000
    assert out["copy"].sum().item() == 30000.0


def test_cleanup_removes_what_was_never_received():
    t = _transport.get_transport(f"ember_dl_{os.getpid()}_cl")
    t.dumps(ember.ones(30000))
    assert len(_ours()) == 1
    t.cleanup()
    assert not _ours()
