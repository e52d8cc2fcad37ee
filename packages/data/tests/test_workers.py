"""DataLoader with worker processes: order, seeding, prefetch, persistence, failures, cleanup.

Every test arms an alarm (and most use the loader's own timeout) so that none can hang.
"""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

SHM = "/dev/shm"


def shm_files(pid=None):
    if not os.path.isdir(SHM):
        return []
    head = f"ember_dl_{os.getpid() if pid is None else pid}_"
    return [n for n in os.listdir(SHM) if n.startswith(head)]


class Images(Dataset):
    """A (3, 8, 8) float32 image per item, made with NumPy; large enough to use shared memory."""

    def __init__(self, n=24, side=64):
        self.n, self.side = n, side

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.full((3, self.side, self.side), i, np.float32), i


class Info(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "wid": info.id, "nw": info.num_workers, "seed": info.seed,
                "pid": os.getpid(), "np": float(np.random.rand()), "py": random.random(),
                "em": float(ember.rand(1).item())}


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        return i


class Killed(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(30 if i == 2 else 0)
        return i


class Sharded(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def test_order_and_values(alarm):
    alarm(60)
    ds = Images(24)
    got = list(DataLoader(ds, batch_size=5, num_workers=2, timeout=20))
    want = list(DataLoader(ds, batch_size=5))
    assert len(got) == len(want) == 5
    for (gx, gy), (wx, wy) in zip(got, want):
        assert gx.shape == wx.shape and gy.tolist() == wy.tolist()
        np.testing.assert_array_equal(gx.numpy(), wx.numpy())
    assert not shm_files()


def test_workers_exit_after_a_clean_epoch(alarm):
    alarm(60)
    it = iter(DataLoader(Images(8, 4), batch_size=4, num_workers=2, timeout=20))
    assert len(list(it)) == 2
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(w.is_alive() for w in it._workers):
        time.sleep(0.05)
    assert not any(w.is_alive() for w in it._workers)


def test_in_order_false_yields_everything(alarm):
    alarm(60)
    got = DataLoader(Images(20, 4), batch_size=3, num_workers=2, in_order=False, timeout=20)
    ys = sorted(v for _, y in got for v in y.tolist())
    assert ys == list(range(20))


def test_prefetch_bound(alarm):
    alarm(60)
    dl = DataLoader(Images(40, 4), batch_size=2, num_workers=2, prefetch_factor=3, timeout=20)
    it = iter(dl)
    assert it._tasks_outstanding == 6
    for _ in it:
        assert it._tasks_outstanding <= 6
        assert it._send_idx - it._num_yielded <= 7


def test_worker_info_and_seeding(alarm):
    alarm(60)
    g = ember.Generator()
    g.manual_seed(123)
    rows = [r for b in DataLoader(Info(), batch_size=2, num_workers=2, generator=g, timeout=20)
            for r in [b]]
    wids = {w for b in rows for w in b["wid"].tolist()}
    assert wids == {0, 1} and all(n == 2 for b in rows for n in b["nw"].tolist())
    assert get_worker_info() is None
    by_worker = {}
    for b in rows:
        for k in range(2):
            by_worker.setdefault(b["wid"][k].item(), []).append(
                (b["seed"][k].item(), b["np"][k].item(), b["py"][k].item(), b["em"][k].item()))
    (s0, *_), (s1, *_) = by_worker[0][0], by_worker[1][0]
    assert s1 == s0 + 1
    # No two workers draw the same NumPy, Python or ember stream.
    for col in (1, 2, 3):
        assert {r[col] for r in by_worker[0]}.isdisjoint({r[col] for r in by_worker[1]})
    # Reproducible from the loader's generator.
    g.manual_seed(123)
    again = list(DataLoader(Info(), batch_size=2, num_workers=2, generator=g, timeout=20))
    assert [b["np"].tolist() for b in again] == [b["np"].tolist() for b in rows]
    assert [b["em"].tolist() for b in again] == [b["em"].tolist() for b in rows]


def test_worker_seeds_match_torch(alarm):
    torch = pytest.importorskip("torch")
    from torch.utils.data._utils.worker import _generate_state as torch_state

    from ember.utils.data._worker import _generate_state

    for base, wid in [(0, 0), (12345678901234, 1), (2**63 - 1, 3)]:
        assert _generate_state(base, wid) == torch_state(base, wid)
    assert torch is not None


def _init(wid):
    np.random.seed(1000 + wid)


def test_worker_init_fn(alarm):
    alarm(60)
    a = list(DataLoader(Info(), batch_size=2, num_workers=2, worker_init_fn=_init, timeout=20))
    b = list(DataLoader(Info(), batch_size=2, num_workers=2, worker_init_fn=_init, timeout=20))
    assert [x["np"].tolist() for x in a] == [x["np"].tolist() for x in b]
    np.random.seed(1000)
    assert a[0]["np"][0].item() == pytest.approx(float(np.random.rand()))


def test_iterable_dataset_replicas(alarm):
    alarm(60)
    dl = DataLoader(Sharded(11), batch_size=2, num_workers=2, timeout=20)
    vals = sorted(v for b in dl for v in b.tolist())
    assert vals == list(range(11))
    dl = DataLoader(Sharded(11), batch_size=None, num_workers=2, timeout=20)
    assert sorted(int(v) for v in dl) == list(range(11))


def test_persistent_workers(alarm):
    alarm(60)
    dl = DataLoader(Info(), batch_size=4, num_workers=2, persistent_workers=True, timeout=20)
    pids1 = {p for b in dl for p in b["pid"].tolist()}
    it = dl._iterator
    pids2 = {p for b in dl for p in b["pid"].tolist()}
    assert pids1 == pids2 and dl._iterator is it and len(pids1) == 2
    # Break early, then a full epoch: the leftovers of the first are dropped.
    for _ in dl:
        break
    assert sum(len(b["i"]) for b in dl) == 8
    dl2 = DataLoader(Sharded(6), batch_size=2, num_workers=2, persistent_workers=True, timeout=20)
    assert sorted(v for b in dl2 for v in b.tolist()) == list(range(6))
    assert sorted(v for b in dl2 for v in b.tolist()) == list(range(6))
    workers = it._workers
    del dl, it
    import gc

    gc.collect()
    for w in workers:
        w.join(5)
        assert not w.is_alive()


def test_exception_in_worker(alarm):
    alarm(60)
    dl = DataLoader(Failing(), batch_size=2, num_workers=2, timeout=20)
    with pytest.raises(ValueError) as info:
        list(dl)
    msg = str(info.value)
    assert "bad sample 5" in msg and "DataLoader worker process" in msg
    assert "Traceback" in msg and "__getitem__" in msg
    # As torch: the iterator goes on after the error.
    it = iter(DataLoader(Failing(), batch_size=2, num_workers=2, timeout=20))
    got = []
    while True:
        try:
            got.append(next(it).tolist())
        except ValueError:
            got.append("err")
        except StopIteration:
            break
    assert got == [[0, 1], [2, 3], "err", [6, 7]]


def test_key_error_in_worker(alarm):
    alarm(60)

    with pytest.raises(KeyError, match="missing"):
        list(DataLoader(KeyErr(), num_workers=2, timeout=20))


class KeyErr(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return {}["missing"]


def test_killed_worker_is_reported(alarm):
    alarm(60)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) is killed by signal: SIGKILL"):
        list(DataLoader(Killed(), batch_size=1, num_workers=2))
    assert time.monotonic() - t0 < 10
    assert not shm_files()


def test_timeout(alarm):
    alarm(60)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 1 seconds"):
        list(DataLoader(Slow(), batch_size=1, num_workers=2, timeout=1))
    assert time.monotonic() - t0 < 10


def test_persistent_loader_recovers_after_a_timeout(alarm):
    alarm(60)
    dl = DataLoader(Slow(), batch_size=1, num_workers=2, timeout=1, persistent_workers=True)
    with pytest.raises(RuntimeError, match="timed out"):
        list(dl)
    it = iter(dl)
    assert next(it).tolist() == [0]  # fresh workers


def test_early_break_cleans_up(alarm):
    alarm(60)
    it = iter(DataLoader(Images(40), batch_size=4, num_workers=2, timeout=20))
    next(it)
    workers = it._workers
    del it
    for w in workers:
        w.join(5)
        assert not w.is_alive()
    assert not shm_files()


def test_spawn_context(alarm):
    alarm(120)
    dl = DataLoader(Images(6, 4), batch_size=3, num_workers=2, multiprocessing_context="spawn",
                    timeout=60)
    ys = [y.tolist() for _, y in dl]
    assert ys == [[0, 1, 2], [3, 4, 5]]


SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    import numpy as np
    from ember.utils.data import DataLoader, Dataset

    class Big(Dataset):
        def __len__(self):
            return 1000
        def __getitem__(self, i):
            return np.zeros((3, 64, 64), np.float32)

    it = iter(DataLoader(Big(), batch_size=8, num_workers=2, timeout=30))
    next(it)
    time.sleep(0.5)  # let the workers fill their prefetch slots
    print(" ".join(str(w.pid) for w in it._workers), flush=True)
    mode = sys.argv[1]
    if mode == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    elif mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(0)
""")


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie (reparented, not yet reaped) counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("mode", ["exit", "interrupt", "kill"])
def test_main_process_exit_leaves_nothing(alarm, mode):
    alarm(90)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    p = subprocess.Popen([sys.executable, "-c", SCRIPT, mode], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    out, err = p.communicate(timeout=60)
    pids = [int(x) for x in out.split()]
    assert len(pids) == 2, err
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(_gone(pid) for pid in pids):
        time.sleep(0.1)
    assert all(_gone(pid) for pid in pids)
    while time.monotonic() < deadline and shm_files(p.pid):
        time.sleep(0.1)
    assert not shm_files(p.pid)


class Mixed(Dataset):
    """Tensors large and small, bfloat16, strings and a large non-tensor payload."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return {"big": ember.full((64, 64), float(i)), "small": ember.tensor([i]),
                "bf": ember.full((2,), float(i), dtype=ember.bfloat16), "name": f"n{i}",
                "blob": "x" * 300_000, "view": ember.full((40, 40), float(i)).t()}


@pytest.mark.parametrize("transport", ["shm", "pickle"])
def test_transports_carry_every_kind_of_value(alarm, monkeypatch, transport):
    alarm(60)
    from ember.utils.data import _transport

    if transport == "pickle":
        monkeypatch.setattr(_transport, "_mp_factory", _transport.PickleTransport)
    batches = list(DataLoader(Mixed(), batch_size=3, num_workers=2, timeout=20))
    want = list(DataLoader(Mixed(), batch_size=3))
    for got, ref in zip(batches, want):
        for k in ("big", "small", "view"):
            np.testing.assert_array_equal(got[k].numpy(), ref[k].numpy())
        assert got["bf"].dtype == ember.bfloat16
        assert got["bf"].float().tolist() == ref["bf"].float().tolist()
        assert got["name"] == ref["name"] and len(got["blob"][0]) == 300_000
    assert not shm_files()


def test_mp_transport_seam(alarm, monkeypatch):
    alarm(60)
    from ember.utils.data import _transport

    made = []

    def factory(prefix):
        t = _transport.PickleTransport(prefix)
        made.append(t)
        return t

    monkeypatch.setattr(_transport, "_mp_factory", factory)
    ys = [y.tolist() for _, y in DataLoader(Images(4, 4), batch_size=2, num_workers=2, timeout=20)]
    assert ys == [[0, 1], [2, 3]] and len(made) == 1 and made[0].prefix.startswith("ember_dl_")


def test_batches_arrive_in_shared_memory_and_names_go_at_once(alarm):
    alarm(60)
    if not os.path.isdir(SHM):
        pytest.skip("no /dev/shm")
    it = iter(DataLoader(Images(64), batch_size=4, num_workers=2, prefetch_factor=2, timeout=20))
    x, _ = next(it)
    # Received batches are unlinked at once; only batches in flight may have a name.
    assert len(shm_files()) <= 4
    x2, _ = next(it)
    np.testing.assert_array_equal(x2.numpy()[:, 0, 0, 0], [4, 5, 6, 7])
    del it
    assert not shm_files()
    x += 1  # the batch outlives its iterator: the mapping keeps the memory
    assert x.numpy()[0, 0, 0, 0] == 1.0


class Unpicklable(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        class LocalError(Exception):
            pass

        raise LocalError("local failure")


def test_exception_whose_type_cannot_travel(alarm):
    alarm(60)
    with pytest.raises(RuntimeError, match="local failure"):
        list(DataLoader(Unpicklable(), num_workers=2, timeout=20))


class Lambdas(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return lambda: i


def test_unpicklable_batch_is_reported(alarm):
    alarm(60)
    with pytest.raises(Exception, match="DataLoader worker process"):
        list(DataLoader(Lambdas(), num_workers=2, collate_fn=lambda b: b, timeout=20))


def _raise_in_init(wid):
    raise OSError(f"init failed in {wid}")


def test_worker_init_fn_error(alarm):
    alarm(60)
    with pytest.raises(OSError, match="init failed in"):
        list(DataLoader(Images(4, 4), num_workers=2, worker_init_fn=_raise_in_init, timeout=20))


def test_pin_memory_with_workers_warns(alarm):
    alarm(60)
    with pytest.warns(UserWarning, match="no accelerator is found"):
        got = list(DataLoader(Images(4, 4), batch_size=2, num_workers=2, pin_memory=True,
                              timeout=20))
    assert len(got) == 2


class Draws(Dataset):
    def __init__(self, lib):
        self.lib = lib

    def __len__(self):
        return 8

    def __getitem__(self, i):
        rand = self.lib.rand
        return (float(rand(1).item()), float(np.random.rand()), random.random())


def test_worker_random_streams_match_torch(alarm):
    torch = pytest.importorskip("torch")
    alarm(120)
    g, tg = ember.Generator(), torch.Generator()
    g.manual_seed(11)
    tg.manual_seed(11)
    ours = list(DataLoader(Draws(ember), batch_size=2, num_workers=2, generator=g, timeout=30))
    theirs = list(torch.utils.data.DataLoader(Draws(torch), batch_size=2, num_workers=2,
                                              generator=tg, timeout=30))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose([x.tolist() for x in a], [x.tolist() for x in b], rtol=1e-6)


def test_len_warning_for_iterable_dataset(alarm):
    alarm(60)

    class Liar(IterableDataset):
        def __iter__(self):
            return iter(range(6))

        def __len__(self):
            return 2

    dl = DataLoader(Liar(), batch_size=None)
    assert len(dl) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        list(dl)


def _collate_twice(batch):
    from ember.utils.data import default_collate

    default_collate(batch)  # allocated in shared memory, then dropped
    return default_collate(batch)


def test_dropped_shared_memory_is_removed_at_once(alarm):
    alarm(60)
    if not os.path.isdir(SHM):
        pytest.skip("no /dev/shm")
    dl = DataLoader(Images(16), batch_size=4, num_workers=2, collate_fn=_collate_twice,
                    persistent_workers=True, timeout=20)
    shapes = [tuple(x.shape) for x, _ in dl]
    assert not shm_files()  # the workers still live: nothing waits for their shutdown
    assert shapes == [(4, 3, 64, 64)] * 4
