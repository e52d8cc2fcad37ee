"""Shared segments go when the last process lets go, also when processes are killed; running
out of descriptors or of shared memory says what to change."""

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import ember
import ember.multiprocessing as mp
from ember.multiprocessing import reductions


def _names(pid):
    return glob.glob(f"/dev/shm/ember_{pid}_*")


def _wait_gone(pid, seconds=10):
    deadline = time.monotonic() + seconds
    while _names(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _names(pid)


# children (module level so that spawn can import them)
def _long_lived_creator(q, acks, report, n):
    mp.set_sharing_strategy("file_system")
    for i in range(n):
        q.put(ember.full((1000,), float(i)))  # the sender drops its tensor at once
        acks.get(timeout=30)
    report.put(_names(os.getpid()))  # checked before this process exits
    acks.get(timeout=30)


def _dropping_receiver(q, acks, n, out):
    total = 0.0
    for _ in range(n):
        t = q.get(timeout=30)
        total += t.sum().item()
        del t
        acks.put(1)
    out.put(total)


def test_long_lived_creator_leaves_no_segment_before_it_exits():
    ctx = mp.get_context("spawn")
    q, acks, report, out = ctx.Queue(), ctx.Queue(), ctx.Queue(), ctx.Queue()
    n = 40
    creator = ctx.Process(target=_long_lived_creator, args=(q, acks, report, n))
    receiver = ctx.Process(target=_dropping_receiver, args=(q, acks, n, out))
    creator.start()
    receiver.start()
    try:
        assert out.get(timeout=40) == 1000.0 * sum(range(n))
        left = report.get(timeout=30)
        assert left == [], left  # every segment went with its receiver, the creator still runs
        assert creator.is_alive()
        acks.put("bye")
    finally:
        for p in (creator, receiver):
            p.join(10)
            if p.is_alive():
                p.kill()
    assert not _wait_gone(creator.pid)


def _killed_producer(q, strategy):
    mp.set_sharing_strategy(strategy)
    keep = [ember.full((1000,), float(i)) for i in range(5)]
    for t in keep:
        q.put(t)
    q.put(os.getpid())
    time.sleep(60)


def _killed_consumer(q, ready):
    got = [q.get(timeout=30) for _ in range(5)]
    ready.put(sum(t.sum().item() for t in got))
    time.sleep(60)


def test_sigkill_of_producer_and_consumers_leaves_no_segment():
    ctx = mp.get_context("spawn")
    q, ready = ctx.Queue(), ctx.Queue()
    prod = ctx.Process(target=_killed_producer, args=(q, "file_system"))
    prod.start()
    got = [q.get(timeout=30) for _ in range(5)]
    pid = q.get(timeout=30)
    # one queue each: on a shared queue one consumer could take more than its five
    forwards = [ctx.Queue() for _ in range(2)]
    consumers = [ctx.Process(target=_killed_consumer, args=(fwd, ready)) for fwd in forwards]
    for c in consumers:
        c.start()
    for fwd in forwards:  # each consumer maps the producer's segments too (the name travels)
        for t in got:
            fwd.put(t)
    assert [ready.get(timeout=30) for _ in consumers] == [10000.0, 10000.0]
    assert len(_names(pid)) == 5
    del got
    for p in (prod, *consumers):
        os.kill(p.pid, signal.SIGKILL)
    for p in (prod, *consumers):
        p.join(10)
    assert not _wait_gone(pid)


def _forked_child_drops(t):
    del t  # a forked child inherits the parent's mapping but holds no count of its own
    import gc

    gc.collect()


def test_forked_child_dropping_an_inherited_storage_does_not_free_it():
    mp.set_sharing_strategy("file_system")
    try:
        t = ember.arange(4.0)
        reductions.reduce_storage(t.untyped_storage())  # move it to a named segment
        s = t.untyped_storage()
        s._shared_decref()  # (the message above was never sent: give its count back)
        assert s._shared_refcount() == 1
        p = mp.get_context("fork").Process(target=_forked_child_drops, args=(t,))
        p.start()
        p.join(30)
        assert p.exitcode == 0
        assert s._shared_refcount() == 1 and os.path.exists("/dev/shm" + s._shared_name())
        name = s._shared_name()
        del t, s
        assert not os.path.exists("/dev/shm" + name)
    finally:
        mp.set_sharing_strategy("file_descriptor")


def test_message_in_flight_keeps_the_segment():
    # The sender drops its tensor before the receiver maps it: the message's count keeps it.
    mp.set_sharing_strategy("file_system")
    try:
        import io
        from multiprocessing.reduction import ForkingPickler

        t = ember.full((8,), 3.0)
        buf = io.BytesIO()
        ForkingPickler(buf).dump(t)
        name = t.untyped_storage()._shared_name()
        del t
        assert os.path.exists("/dev/shm" + name)
        u = ForkingPickler.loads(buf.getvalue())
        assert u.tolist() == [3.0] * 8 and u.untyped_storage()._shared_refcount() == 1
        del u
        assert not os.path.exists("/dev/shm" + name)
    finally:
        mp.set_sharing_strategy("file_descriptor")


def _run(code, **limits):
    pre = "import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    for name, value in limits.items():
        pre += (f"resource.setrlimit(resource.{name}, ({value}, "
                f"resource.getrlimit(resource.{name})[1]))\n")
    r = subprocess.run([sys.executable, "-c", pre + textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=50,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    return r


def test_out_of_file_descriptors_says_what_to_change():
    r = _run("""
        import ember
        keep = []
        try:
            for _ in range(1000):
                keep.append(ember.ones(4).share_memory_())
        except RuntimeError as e:
            print(e)
        else:
            print("no error")
    """, RLIMIT_NOFILE=64)
    assert r.returncode == 0, r.stderr[-2000:]
    msg = r.stdout
    assert "Too many open files" in msg and "ulimit -n" in msg and "'file_system'" in msg, msg


def test_out_of_shared_memory_says_what_to_change():
    # More than /dev/shm holds: tmpfs refuses the reservation at once, without filling anything.
    st = os.statvfs("/dev/shm")
    name = f"/ember_{os.getpid()}_too_big"
    with pytest.raises(RuntimeError) as e:
        ember.UntypedStorage._new_using_filename_cpu(st.f_blocks * st.f_frsize + (1 << 30), name)
    msg = str(e.value)
    assert "No space left on device; out of shared memory (/dev/shm has" in msg, msg
    assert "enlarge /dev/shm" in msg and "--shm-size" in msg, msg
    assert not os.path.exists("/dev/shm" + name)


@pytest.mark.parametrize("strategy", ["file_descriptor", "file_system"])
def test_segment_that_cannot_be_made_leaves_the_tensor_as_it_was(strategy):
    # A file-size limit makes the segment's creation fail (as a full /dev/shm would, for memfd
    # segments too) without filling the machine's shared memory.
    r = _run(f"""
        import glob, os, ember, ember.multiprocessing as mp
        from ember.multiprocessing import reductions
        mp.set_sharing_strategy({strategy!r})
        t = ember.ones(1 << 20)  # 4 MiB
        try:
            reductions.reduce_storage(t.untyped_storage())
        except RuntimeError as e:
            print(e)
        print("left:", glob.glob(f"/dev/shm/ember_{{os.getpid()}}_*"))
        print("still:", t.sum().item(), t.is_shared())
    """, RLIMIT_FSIZE=1 << 20)
    assert r.returncode == 0, r.stderr[-2000:]
    msg = r.stdout
    assert "File too large" in msg and "ulimit -f" in msg, msg
    assert "left: []" in msg and "still: 1048576.0 False" in msg, msg


def test_full_dev_shm_is_an_error_not_a_crash():
    # Less than the whole of /dev/shm but more than is free: fallocate finds out (a write into
    # the segment would otherwise die of SIGBUS). Only where /dev/shm is small.
    free = os.statvfs("/dev/shm")
    free = free.f_bavail * free.f_frsize
    if free > 1 << 30:
        pytest.skip("/dev/shm has more than 1 GiB free: filling it would take the machine's memory")
    r = _run(f"""
        import ember
        try:
            ember.UntypedStorage._new_using_filename_cpu({free} + (64 << 20), "/ember_full_test")
        except RuntimeError as e:
            print(e)
    """)
    assert r.returncode == 0 and "out of shared memory" in r.stdout, r.stdout + r.stderr
    assert not os.path.exists("/dev/shm/ember_full_test")
