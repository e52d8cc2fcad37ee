"""ember.multiprocessing: tensors travel as views of shared memory."""

import glob
import os
import signal
import time

import pytest

import ember
import ember.multiprocessing as mp

METHODS = ["fork", "spawn"]
STRATEGIES = ["file_descriptor", "file_system"]


@pytest.fixture(params=STRATEGIES)
def strategy(request):
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(old)


def _ours():
    return set(glob.glob(f"/dev/shm/ember_{os.getpid()}_*"))


# children (module level so that spawn can import them)
def _fill(t, v):
    t.fill_(v)


def _echo(q_in, q_out):
    a, b = q_in.get()
    b.add_(1)
    q_out.put((a, b, a.untyped_storage() == b.untyped_storage()))
    q_in.get()  # as in torch: a sender stays alive until its tensors are received


def _pipe_child(conn):
    t = conn.recv()
    t.mul_(2)
    conn.send("done")


def _double(t):
    t.mul_(2)
    return float(t.sum())


def _producer(q, strategy):
    mp.set_sharing_strategy(strategy)
    t = ember.ones(1000)
    q.put(t)
    q.put(os.getpid())
    time.sleep(60)


def _consumer(q):
    q.get()
    time.sleep(60)


def test_share_memory_in_place():
    t = ember.arange(10.0)
    v = t[3:7]
    assert not t.is_shared()
    assert t.share_memory_() is t
    assert t.is_shared() and v.is_shared() and t.untyped_storage().is_shared()
    v.fill_(-1.0)
    assert t.tolist() == [0, 1, 2, -1, -1, -1, -1, 7, 8, 9]
    t.share_memory_()  # idempotent
    assert t.is_shared()


def test_strategies():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(ValueError):
        mp.set_sharing_strategy("nope")
    assert mp.Process is not None and mp.Pool is not None and callable(mp.get_context)


@pytest.mark.parametrize("method", METHODS)
def test_process_args_write_back(method, strategy):
    ctx = mp.get_context(method)
    t = ember.zeros(5, 3)
    if method == "fork":  # fork pickles nothing: as in torch, share before forking
        t.share_memory_()
    p = ctx.Process(target=_fill, args=(t[1], 7.0))
    p.start()
    p.join(30)
    assert p.exitcode == 0
    assert t.sum().item() == 21.0 and t[1].tolist() == [7.0] * 3


@pytest.mark.parametrize("method", METHODS)
def test_queue_views_stay_views(method, strategy):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    base = ember.arange(12.0)
    a, b = base[:6].view(2, 3), base[6:]
    p = ctx.Process(target=_echo, args=(q_in, q_out))
    p.start()
    q_in.put((a, b))
    a2, b2, same = q_out.get(timeout=30)
    q_in.put("bye")
    p.join(30)
    assert same  # one storage in the sender is one storage in the receiver
    assert base[6:].tolist() == [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]  # the child's add_ is seen here
    assert a2.shape == (2, 3) and a2.stride() == (3, 1) and b2.storage_offset() == 6


@pytest.mark.parametrize("method", METHODS)
def test_pipe(method):
    ctx = mp.get_context(method)
    parent, child = ctx.Pipe()
    t = ember.ones(4)
    p = ctx.Process(target=_pipe_child, args=(child,))
    p.start()
    parent.send(t)
    assert parent.recv() == "done"
    p.join(30)
    assert t.tolist() == [2.0] * 4


def test_pool(strategy):
    ts = [ember.ones(3) * i for i in range(4)]  # pool.map pickles its arguments
    with mp.get_context("fork").Pool(2) as pool:
        sums = pool.map(_double, ts)
    assert sums == [0.0, 6.0, 12.0, 18.0]
    assert [t.tolist() for t in ts] == [[2.0 * i] * 3 for i in range(4)]


def test_non_leaf_requires_grad_refused():
    from ember.multiprocessing.reductions import reduce_tensor

    class NonLeaf:  # stands in for `x * 2` when ember-autograd is not installed
        requires_grad, is_leaf = True, False

    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        reduce_tensor(NonLeaf())
    try:
        y = ember.ones(3).requires_grad_() * 2
    except ImportError:
        return
    with pytest.raises(RuntimeError, match="call detach"):
        _reduce(y)
    assert _reduce(y.detach()) is None


def _reduce(t):
    import io
    from multiprocessing.reduction import ForkingPickler

    ForkingPickler(io.BytesIO()).dump(t)


def test_file_system_no_leftovers_after_exit():
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_producer, args=(q, "file_system"))
    p.start()
    t = q.get(timeout=30)
    pid = q.get(timeout=30)
    assert glob.glob(f"/dev/shm/ember_{pid}_*")
    assert t.sum().item() == 1000.0
    p.terminate()
    p.join(30)
    _wait_gone(pid)


def test_file_system_no_leftovers_after_sigkill():
    ctx = mp.get_context("spawn")
    q, q2 = ctx.Queue(), ctx.Queue()
    prod = ctx.Process(target=_producer, args=(q, "file_system"))
    prod.start()
    t = q.get(timeout=30)
    pid = q.get(timeout=30)
    cons = ctx.Process(target=_consumer, args=(q2,))
    cons.start()
    q2.put(t)
    time.sleep(0.5)
    os.kill(prod.pid, signal.SIGKILL)
    os.kill(cons.pid, signal.SIGKILL)
    prod.join(30)
    cons.join(30)
    _wait_gone(pid)
    assert t.sum().item() == 1000.0  # our mapping outlives the name


def _wait_gone(pid):
    for _ in range(100):
        if not glob.glob(f"/dev/shm/ember_{pid}_*"):
            return
        time.sleep(0.1)
    raise AssertionError(glob.glob(f"/dev/shm/ember_{pid}_*"))


@pytest.mark.parametrize("strategy_", STRATEGIES)
def test_received_by_its_own_process_maps_once(strategy_):
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy(strategy_)
    try:
        q = mp.Queue()
        t = ember.arange(4.0)
        q.put(t[1:])
        u = q.get(timeout=10)
        # the same storage, not a second mapping of the segment
        assert u.untyped_storage() == t.untyped_storage() and u.data_ptr() == t.data_ptr() + 4
        if strategy_ == "file_system":
            assert t.untyped_storage()._shared_refcount() == 1  # the message's count is consumed
    finally:
        mp.set_sharing_strategy(old)


def test_file_system_name_lives_while_mapped():
    mp.set_sharing_strategy("file_system")
    try:
        q = mp.Queue()
        t = ember.ones(2)
        q.put(t)
        assert q.get(timeout=10).tolist() == [1.0, 1.0]
        name = t.untyped_storage()._shared_name()
        assert name is not None and _ours() == {"/dev/shm" + name}
        del t
        assert not _ours()  # the last reference let go: the name is gone at once
    finally:
        mp.set_sharing_strategy("file_descriptor")


def test_fd_shared_storage_stays_in_its_segment_under_file_system():
    t = ember.ones(3).share_memory_()
    mp.set_sharing_strategy("file_system")
    try:
        q = mp.Queue()
        q.put(t)
        u = q.get(timeout=10)
        assert t.untyped_storage()._shared_name() is None and u.data_ptr() == t.data_ptr()
    finally:
        mp.set_sharing_strategy("file_descriptor")


class _FakeCuda:
    """Stands in for a CUDA tensor: this build cannot make one."""

    requires_grad, is_leaf = False, True
    device = ember.device("cuda", 0)


def test_cuda_tensors_refuse_with_a_clear_error():
    from ember.multiprocessing.reductions import reduce_storage, reduce_tensor

    with pytest.raises(RuntimeError, match=r"cuda:0 to another process: CUDA IPC is not supported"):
        reduce_tensor(_FakeCuda())
    with pytest.raises(RuntimeError, match=r"tensor\.cpu\(\)"):
        reduce_storage(_FakeCuda())
    try:
        t = ember.ones(2, device="cuda")
    except RuntimeError:
        return  # no CUDA in this build or on this machine
    with pytest.raises(RuntimeError, match="CUDA IPC"):
        _reduce(t)


_FORKSERVER_SCRIPT = '''
import ember, ember.multiprocessing as mp

def child(q, t):
    t.mul_(2)
    q.get().add_(1)

if __name__ == "__main__":
    for strategy in ("file_descriptor", "file_system"):
        mp.set_sharing_strategy(strategy)
        ctx = mp.get_context("forkserver")
        q = ctx.Queue()
        t, u = ember.ones(3), ember.zeros(2)
        p = ctx.Process(target=child, args=(q, t))
        p.start()
        q.put(u)
        p.join(30)
        print(strategy, p.exitcode, t.tolist(), u.tolist())
'''


def test_forkserver(tmp_path):
    # A script of its own: the forkserver process re-imports the main module, which under
    # pytest is pytest itself.
    import subprocess
    import sys

    script = tmp_path / "forkserver_child.py"
    script.write_text(_FORKSERVER_SCRIPT)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=50)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == [
        "file_descriptor 0 [2.0, 2.0, 2.0] [1.0, 1.0]", "file_system 0 [2.0, 2.0, 2.0] [1.0, 1.0]"]
