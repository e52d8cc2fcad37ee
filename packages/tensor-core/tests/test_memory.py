"""Storage lifetime: memory is returned the moment the last reference goes, views and foreign
owners (NumPy arrays, DLPack producers, NumPy views of tensors) keep storages alive exactly as
long as they need them, and the interop paths do not leak.

Resident set sizes come from /proc/self/statm (Linux); the RSS tests are skipped elsewhere and
marked slow.
"""

import gc
import os
import sys
import weakref

import numpy as np
import pytest

import ember

MiB = 1 << 20
GiB = 1 << 30

HAVE_STATM = os.path.exists("/proc/self/statm")
needs_statm = pytest.mark.skipif(not HAVE_STATM, reason="needs /proc/self/statm (Linux)")
# RSS measurements are meaningless under a sanitizer (freed memory is quarantined) and the
# sanitizer session deselects slow tests: the RSS tests are marked slow.


def rss():
    """Resident set size of this process, in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def available_memory():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def collect():
    for _ in range(2):
        gc.collect()


# ---------------------------------------------------------------------------------------------
# Freed at once


@pytest.mark.slow
@needs_statm
def test_large_tensor_memory_returned_at_once():
    if available_memory() < 3 * GiB:
        pytest.skip("needs about 3 GiB of free memory")
    collect()
    before = rss()
    t = ember.ones(GiB // 4, dtype=ember.float32)  # 1 GiB, every page touched
    during = rss()
    assert during - before > 0.9 * GiB
    del t  # no gc.collect(): reference counting alone must free it
    after = rss()
    assert after - before < 64 * MiB, f"{(after - before) / MiB:.0f} MiB still resident"


@pytest.mark.slow
@needs_statm
def test_numpy_view_holds_memory_until_released():
    if available_memory() < 2 * GiB:
        pytest.skip("needs about 2 GiB of free memory")
    collect()
    before = rss()
    t = ember.ones(256 * MiB // 4, dtype=ember.float32)
    n = t.numpy()
    del t
    assert rss() - before > 200 * MiB  # the array still owns the storage
    assert n[-1] == 1.0
    del n
    assert rss() - before < 32 * MiB


# ---------------------------------------------------------------------------------------------
# Kept alive as long as needed


def test_views_keep_storage_alive():
    t = ember.arange(100, dtype=ember.float64)
    count = ember._C._storage_use_count(t)
    v = t[10:20]
    w = v.reshape(2, 5).t()
    assert ember._C._storage_use_count(t) == count + 2
    del t
    collect()
    assert v.tolist() == [float(i) for i in range(10, 20)]
    assert w.tolist() == [[10.0, 15.0], [11.0, 16.0], [12.0, 17.0], [13.0, 18.0], [14.0, 19.0]]
    v.fill_(1.0)
    assert sum(w.reshape(10).tolist()) == 10.0


def test_from_numpy_keeps_array_alive():
    arr = np.arange(1000, dtype=np.float32)
    ref = weakref.ref(arr)
    t = ember.from_numpy(arr)
    del arr
    collect()
    assert ref() is not None
    assert t.tolist() == list(range(1000))
    del t
    collect()
    assert ref() is None


def test_from_numpy_owner_released_by_last_view():
    arr = np.arange(12.0).reshape(3, 4)
    ref = weakref.ref(arr)
    v = ember.from_numpy(arr)[1].unsqueeze(0)
    del arr
    collect()
    assert v.tolist() == [[4.0, 5.0, 6.0, 7.0]]
    del v
    collect()
    assert ref() is None


def test_numpy_keeps_storage_alive():
    t = ember.arange(50, dtype=ember.int64)
    n = t.numpy()
    del t
    collect()
    assert n.tolist() == list(range(50))
    n += 1  # writable, valid memory
    assert n[0] == 1 and n[-1] == 50


def test_numpy_of_foreign_storage_keeps_chain_alive():
    arr = np.arange(6.0)
    ref = weakref.ref(arr)
    n = ember.from_numpy(arr).numpy()  # ndarray -> capsule -> storage -> original ndarray
    del arr
    collect()
    assert ref() is not None
    assert n.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    del n
    collect()
    assert ref() is None


def test_dlpack_consumer_keeps_producer_alive():
    arr = np.arange(8, dtype=np.int32)
    ref = weakref.ref(arr)
    u = ember.from_dlpack(arr)
    del arr
    collect()
    assert ref() is not None and u.tolist() == list(range(8))
    del u
    collect()
    assert ref() is None

    t = ember.arange(8, dtype=ember.int32)
    n = np.from_dlpack(t)
    del t
    collect()
    assert n.tolist() == list(range(8))


def test_memoryview_keeps_storage_alive():
    t = ember.arange(16, dtype=ember.uint8)
    m = memoryview(t)
    del t
    collect()
    assert m.tolist() == list(range(16))
    m.release()


# ---------------------------------------------------------------------------------------------
# No leaks


def _round_trips(src):
    t = ember.from_numpy(src)
    n = t.numpy()
    u = ember.from_dlpack(n)
    v = ember.from_dlpack(ember.from_dlpack(u.__dlpack__(max_version=(1, 0))))
    w = np.from_dlpack(v)
    x = ember.from_dlpack(u.__dlpack__())  # legacy capsule
    u.__dlpack__()  # an unconsumed capsule, freed by its destructor
    m = memoryview(x)
    y = np.asarray(m)
    z = ember.tensor(src[::2])  # a copy through from_numpy
    r = ember.as_tensor(src)
    return float(w[1]) + float(y[2]) + z[0].item() + r[3].item()


@pytest.mark.slow
@needs_statm
def test_round_trips_do_not_leak():
    src = np.arange(MiB // 8, dtype=np.float64)  # 1 MiB: a leaked copy or storage would show
    refs = sys.getrefcount(src)
    for _ in range(20):  # warm up allocator pools and caches
        _round_trips(src)
    collect()
    before = rss()
    for _ in range(200):
        assert _round_trips(src) == 1.0 + 2.0 + 0.0 + 3.0
    collect()
    grown = rss() - before
    assert grown < 32 * MiB, f"RSS grew by {grown / MiB:.1f} MiB over 200 round trips"
    assert sys.getrefcount(src) == refs  # every owner reference was released


def test_round_trips_release_every_reference():
    for np_dtype in [np.bool_, np.uint8, np.int16, np.int64, np.float16, np.float32]:
        src = np.zeros(64, dtype=np_dtype)
        ref = weakref.ref(src)
        for _ in range(10):
            _round_trips(src)
        del src
        collect()
        assert ref() is None, np_dtype


def test_storage_use_count_returns_to_baseline():
    t = ember.ones(32)
    base = ember._C._storage_use_count(t)
    for _ in range(200):
        n = t.numpy()
        m = memoryview(t)
        c = t.__dlpack__(max_version=(1, 0))
        u = ember.from_dlpack(t)
        del n, m, c, u
    collect()
    assert ember._C._storage_use_count(t) == base


# ---------------------------------------------------------------------------------------------
# ember.cpu's byte counters (what the CPU allocator holds, without RSS's noise)


def test_cpu_memory_allocated_counts_storages():
    collect()
    base = ember.cpu.memory_allocated()
    a = ember.empty(1000, dtype=ember.float64)
    assert ember.cpu.memory_allocated() - base == 1000 * 8
    b = ember.ones(3, 5, dtype=ember.int16)
    assert ember.cpu.memory_allocated() - base == 1000 * 8 + 15 * 2
    v = a[10:20].view(2, 5)  # a view allocates nothing
    assert ember.cpu.memory_allocated() - base == 1000 * 8 + 15 * 2
    del a
    assert ember.cpu.memory_allocated() - base == 1000 * 8 + 15 * 2  # the view holds it
    del v, b
    assert ember.cpu.memory_allocated() == base


def test_cpu_memory_allocated_ignores_foreign_memory():
    arr = np.ones(4096, dtype=np.float32)
    base = ember.cpu.memory_allocated()
    t = ember.from_numpy(arr)
    assert ember.cpu.memory_allocated() == base  # NumPy owns it
    c = t.clone()
    assert ember.cpu.memory_allocated() - base == 4096 * 4
    del t, c


def test_cpu_max_memory_allocated_and_reset():
    collect()
    base = ember.cpu.memory_allocated()
    ember.cpu.reset_peak_memory_stats()
    assert ember.cpu.max_memory_allocated() == base
    t = ember.empty(1 << 20, dtype=ember.uint8)
    del t
    assert ember.cpu.max_memory_allocated() - base == 1 << 20
    assert ember.cpu.memory_allocated() == base
    ember.cpu.reset_peak_memory_stats()
    assert ember.cpu.max_memory_allocated() == base


def test_cpu_memory_allocated_follows_resize():
    base = ember.cpu.memory_allocated()
    t = ember.empty(10, dtype=ember.float32)
    t.resize_(1000)
    assert ember.cpu.memory_allocated() - base == 1000 * 4
    del t
    assert ember.cpu.memory_allocated() == base


# ---------------------------------------------------------------------------------------------
# The CPU allocator's cache of medium blocks (128 KiB to 32 MiB; core/allocator.cpp)

KiB = 1 << 10
cache_stats = ember._C._cpu_cache_stats
needs_cache = pytest.mark.skipif(not cache_stats()["enabled"],
                                 reason="the block cache is off (EMBER_CPU_CACHE=0 or a "
                                        "sanitizer build)")


def _storage_address(t):
    return t.data_ptr()


@needs_cache
def test_a_freed_medium_block_serves_the_next_request_of_its_class():
    collect()
    ember.cpu.empty_cache()
    a = ember.empty(300 * KiB, dtype=ember.uint8)
    address = _storage_address(a)
    before = cache_stats()
    del a
    assert cache_stats()["cached_bytes"] >= 300 * KiB  # kept, not freed
    b = ember.empty(290 * KiB, dtype=ember.uint8)  # same class (1/8-octave steps)
    after = cache_stats()
    assert _storage_address(b) == address
    assert after["hits"] == before["hits"] + 1 and after["cached_bytes"] == 0
    b[:] = 7  # the whole requested size is usable
    assert int(b.sum()) == 7 * 290 * KiB
    del b


@needs_cache
def test_a_larger_cached_block_up_to_an_octave_serves_a_smaller_request():
    collect()
    ember.cpu.empty_cache()
    a = ember.empty(1000 * KiB, dtype=ember.uint8)
    address = _storage_address(a)
    del a
    b = ember.empty(600 * KiB, dtype=ember.uint8)
    assert _storage_address(b) == address
    del b
    # back in its own (larger) class: a request of the original size gets it again
    c = ember.empty(1000 * KiB, dtype=ember.uint8)
    assert _storage_address(c) == address
    del c


@needs_cache
def test_small_and_large_blocks_are_not_cached():
    collect()
    ember.cpu.empty_cache()
    base = cache_stats()
    a = ember.empty(64 * KiB, dtype=ember.uint8)  # malloc's small bins
    b = ember.empty(40 * MiB, dtype=ember.uint8)  # huge pages, returned at once
    del a, b
    s = cache_stats()
    assert s["cached_bytes"] == 0 and (s["hits"], s["misses"]) == (base["hits"], base["misses"])


@needs_cache
def test_counters_and_empty_cache():
    collect()
    ember.cpu.empty_cache()
    base = ember.cpu.memory_allocated()
    a = ember.empty(200 * KiB, dtype=ember.uint8)
    assert ember.cpu.memory_allocated() - base == 200 * KiB  # requested bytes, as before
    del a
    assert ember.cpu.memory_allocated() == base
    assert ember.cpu.memory_reserved() - ember.cpu.memory_allocated() >= 200 * KiB
    ember.cpu.empty_cache()
    assert cache_stats()["cached_bytes"] == 0
    assert ember.cpu.memory_reserved() == ember.cpu.memory_allocated()


@needs_cache
def test_the_cache_is_bounded():
    """Freed blocks beyond the cap go back to malloc (the least recently used classes first)."""
    collect()
    ember.cpu.empty_cache()
    cap = cache_stats()["cap_bytes"]
    blocks = [ember.empty(30 * MiB, dtype=ember.uint8) for _ in range(cap // (30 * MiB) + 3)]
    del blocks
    assert 0 < cache_stats()["cached_bytes"] <= cap
    ember.cpu.empty_cache()


@needs_cache
def test_a_loop_reuses_its_blocks():
    """An inference loop's activations come from the cache after the first iteration."""
    collect()
    ember.cpu.empty_cache()
    x = ember.randn(64, 1024)
    w = ember.randn(1024, 1024)

    def step():
        return ((x @ w).relu() @ w).tanh().sum()

    step()
    before = cache_stats()
    for _ in range(5):
        step()
    after = cache_stats()
    assert after["misses"] == before["misses"]
    assert after["hits"] > before["hits"]


def test_cache_can_be_turned_off_and_a_forked_child_allocates():
    import subprocess
    code = ("import ember, os\n"
            "assert not ember._C._cpu_cache_stats()['enabled']\n"
            "a = ember.empty(1 << 20); del a\n"
            "assert ember._C._cpu_cache_stats()['cached_bytes'] == 0\n")
    env = dict(os.environ, EMBER_CPU_CACHE="0")
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    code = "import ember; print(ember._C._cpu_cache_stats()['cap_bytes'])"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env=dict(os.environ, EMBER_CPU_CACHE="8")).stdout
    assert int(out) == 8 * MiB
    if not hasattr(os, "fork"):
        return
    # the cache's lock is taken around fork (pthread_atfork): a child allocates and frees
    code = ("import ember, os, threading\n"
            "stop = False\n"
            "def churn():\n"
            "    while not stop:\n"
            "        a = ember.empty(1 << 18); del a\n"
            "t = threading.Thread(target=churn); t.start()\n"
            "for _ in range(20):\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        a = ember.ones(1 << 18); del a; os._exit(0)\n"
            "    assert os.waitpid(pid, 0)[1] == 0\n"
            "stop = True; t.join()\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
