"""Python threads and the GIL: long kernels run without it, and the core stays correct when
several Python threads call it at once (the thread pool, the random generator, borrowed memory).

Progress is measured in counts, not times: a pure-Python thread counts loop iterations while the
main thread runs an op several times in a row, and its count per second is compared with its
count per second while the main thread sleeps. The calls are made from C (``map`` over the op, a
builtin), so no Python bytecode runs between them where the GIL could change hands: with the GIL
held (``_C._set_gil_release(False)``, the control) the counting thread gets almost nothing.
"""

from __future__ import annotations

import collections
import functools
import itertools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

import ember

_C = ember._C


class Counter:
    """A pure-Python thread counting loop iterations while it is resumed."""

    def __init__(self) -> None:
        self.count = 0
        self._go = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            self._go.wait()
            while self._go.is_set() and not self._stop:
                self.count += 1

    def rate_while(self, work: Callable[[], object]) -> float:
        """Iterations per second of this thread while the calling thread runs `work()`."""
        self._go.set()
        time.sleep(0.005)  # let the loop start
        c0, t0 = self.count, time.perf_counter()
        work()
        rate = (self.count - c0) / (time.perf_counter() - t0)
        self._go.clear()
        time.sleep(0.005)
        return rate

    def close(self) -> None:
        self._stop = True
        self._go.set()
        self._thread.join(timeout=10)


@pytest.fixture
def counter():
    """A counting thread, and ember on one intra-op thread (so a core is left for it)."""
    ember.set_num_threads(1)
    c = Counter()
    yield c
    c.close()
    _C._set_gil_release(True)


def python_share(counter: Counter, op: Callable, args: tuple, calls: int) -> float:
    """The counting thread's rate while `calls` calls op(*args) run back to back in C, as a share
    of its rate while this thread sleeps."""
    work = functools.partial(collections.deque, map(op, *(itertools.repeat(a, calls) for a in args)),
                             maxlen=0)
    idle = counter.rate_while(lambda: time.sleep(0.2))
    return counter.rate_while(work) / max(idle, 1.0)


def check_releases_the_gil(counter: Counter, op: Callable, *args) -> None:
    if os.environ.get("EMBER_TEST_UNDER_PROFILER") == "1":  # (conftest.py)
        pytest.skip("the profiler's hooks run Python between calls: the GIL changes hands then")
    op(*args)  # warm up (allocator, BLAS loading), then as many calls as fill ~0.3 s
    t0 = time.perf_counter()
    op(*args)
    calls = max(2, round(0.3 / max(time.perf_counter() - t0, 1e-4)))
    released = python_share(counter, op, args, calls)
    _C._set_gil_release(False)
    try:
        held = python_share(counter, op, args, calls)
    finally:
        _C._set_gil_release(True)
    # Held, the counting thread runs only until the first call starts: a few percent. Released,
    # it keeps much of a core (the calls run on one thread; other processes share the cores).
    assert released >= 0.1 and released >= 3 * held, (released, held)


def _data(shape, seed=0, dtype=np.float32):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


# ---------------------------------------------------------------------------------------------
# A Python thread makes progress while another runs a long op


# name -> a maker of (op, *args): a builtin and its arguments, each call taking ~2-300 ms on one
# thread. Made on use: the inputs are large.
LONG_OPS = {
    "matmul": lambda: (ember.matmul, _data((1024, 1024)), _data((1024, 1024), seed=1)),
    "sin": lambda: (ember.sin, _data(1 << 23)),
    "sum": lambda: (ember.Tensor.sum, _data(1 << 24)),
    "conv2d": lambda: (ember.conv2d, _data((1, 32, 256, 256)), _data((32, 32, 3, 3), seed=1)),
    # the sort kernel; ember.sort's named tuple is built by Python code, where the GIL could
    # change hands between calls
    "sort": lambda: (ember.argsort, _data(1 << 21)),
}

MORE_LONG_OPS = {
    "bmm": lambda: (ember.bmm, _data((8, 384, 384)), _data((8, 384, 384), seed=1)),
    "int matmul": lambda: (ember.matmul, *(ember.randint(0, 9, (512, 512)),) * 2),
    "var": lambda: (ember.Tensor.var, _data(1 << 23)),
    "argmax": lambda: (ember.Tensor.argmax, _data(1 << 23)),
    "cumsum": lambda: (ember.Tensor.cumsum, _data(1 << 23), 0),
    "softmax": lambda: (ember.softmax, _data(1 << 23), 0),
    "topk": lambda: (ember.topk, _data(1 << 24), 100),  # long calls: a named tuple between them
    "unique": lambda: (ember.unique, ember.randint(0, 1000, (1 << 21,))),
    "max_pool2d": lambda: (ember.max_pool2d, _data((1, 1, 2048, 2048)), 3, 1, 1),
    "clone": lambda: (ember.Tensor.clone, _data(1 << 23)),
    "contiguous": lambda: (ember.Tensor.contiguous, _data((2048, 2048)).t()),
    "to float64": lambda: (ember.Tensor.to, _data(1 << 23), ember.float64),
    "cat": lambda: (ember.cat, [_data(1 << 23)] * 2),
    "flip": lambda: (ember.Tensor.flip, _data(1 << 23), 0),
    "index_select": lambda: (ember.Tensor.index_select, _data(1 << 23), 0,
                             ember.randint(0, 1 << 23, (1 << 23,))),
    "index_add_": lambda: (ember.Tensor.index_add_, ember.zeros(1 << 23), 0,
                           ember.randint(0, 1 << 23, (1 << 23,)), _data(1 << 23)),
    "randn": lambda: (ember.randn, 1 << 22),
    "uniform_": lambda: (ember.Tensor.uniform_, ember.empty(1 << 23)),
    "randperm": lambda: (ember.randperm, 1 << 21),
}


@pytest.mark.parametrize("name", list(LONG_OPS))
def test_python_thread_runs_during_long_op(counter, name):
    check_releases_the_gil(counter, *LONG_OPS[name]())


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MORE_LONG_OPS))
def test_python_thread_runs_during_more_long_ops(counter, name):
    check_releases_the_gil(counter, *MORE_LONG_OPS[name]())


def test_gil_release_switch():
    assert _C._gil_release_enabled()
    _C._set_gil_release(False)
    try:
        assert not _C._gil_release_enabled()
        assert (ember.ones(100_000) * 2).sum().item() == 200_000  # ops still run
    finally:
        _C._set_gil_release(True)
    assert _C._gil_release_enabled()


# ---------------------------------------------------------------------------------------------
# Several Python threads in the core at once


def _run_threads(target: Callable[[int], None], n: int, timeout: float = 120) -> None:
    """Runs target(i) on n threads; re-raises the first error; fails if one hangs."""
    errors: list[BaseException] = []

    def wrap(i: int) -> None:
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("threads", [1, 2])
def test_two_threads_running_big_ops_get_right_results(threads):
    """Both threads get the pool in turn or run on their own: every result is right."""
    ember.set_num_threads(threads)
    rng = np.random.default_rng(0)
    inputs = [
        (rng.standard_normal((300, 400)).astype(np.float32),
         rng.standard_normal((400, 200)).astype(np.float32),
         rng.standard_normal(1 << 20).astype(np.float32))
        for _ in range(2)
    ]

    def work(i: int) -> None:
        a, b, v = inputs[i]
        ea, eb, ev = ember.from_numpy(a), ember.from_numpy(b), ember.from_numpy(v)
        for _ in range(6):
            np.testing.assert_allclose((ea @ eb).numpy(), a.astype(np.float64) @ b, rtol=1e-4,
                                       atol=1e-3)
            np.testing.assert_allclose(ember.sin(ev).numpy(), np.sin(v), rtol=1e-6, atol=1e-6)
            assert abs(ev.sum().item() - v.astype(np.float64).sum()) < 1e-2
            np.testing.assert_array_equal(ember.sort(ev).values.numpy(), np.sort(v))
            np.testing.assert_array_equal(ev.flip(0).numpy(), v[::-1])

    _run_threads(work, 2)


def test_many_threads_random_ops():
    """Eight threads, random ops of random sizes (below and above the GIL threshold), each result
    checked against NumPy: no race in the pool, the allocator, views or version counters."""
    ember.set_num_threads(2)

    def np_softmax(x):
        e = np.exp(x - x.max())
        return e / e.sum()

    ops = [
        (lambda e: e * 2 + 1, lambda x: x * 2 + 1),
        (lambda e: ember.exp(e), np.exp),
        (lambda e: e.sum(), lambda x: x.sum(dtype=np.float64)),
        (lambda e: e.cumsum(0), lambda x: np.cumsum(x, dtype=np.float64)),
        (lambda e: ember.sort(e).values, np.sort),
        (lambda e: e.flip(0).contiguous(), lambda x: x[::-1]),
        (lambda e: ember.cat([e, e]), lambda x: np.concatenate([x, x])),
        (lambda e: ember.softmax(e, 0), np_softmax),
        (lambda e: e.clone().mul_(3), lambda x: x * 3),
        (lambda e: e.view(-1, 8).t() @ e.view(-1, 8), lambda x: x.reshape(-1, 8).T.astype(
            np.float64) @ x.reshape(-1, 8)),
    ]

    def work(i: int) -> None:
        rng = np.random.default_rng(100 + i)
        for _ in range(25):
            n = 8 * int(rng.choice([1, 50, 20_000, 150_000]))
            x = rng.standard_normal(n).astype(np.float32)
            f, ref = ops[rng.integers(len(ops))]
            got = f(ember.from_numpy(x))
            want = ref(x)
            got = np.asarray(got.numpy(), dtype=np.float64)
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-3 * max(1.0, n ** 0.5 / 30))

    _run_threads(work, 8)


def test_inplace_ops_from_threads_bump_every_version():
    """The version counter is atomic: 4 threads x 200 in-place ops on views of one tensor."""
    x = ember.zeros(4, 100_000)
    v0 = x._version

    def work(i: int) -> None:
        row = x[i]
        for _ in range(200):
            row.add_(1)

    _run_threads(work, 4)
    assert x._version - v0 == 800
    np.testing.assert_array_equal(x.numpy(), np.full((4, 100_000), 200, np.float32))


# ---------------------------------------------------------------------------------------------
# The random generator from several threads


@pytest.mark.parametrize("draw", ["uniform_", "normal_", "random_", "bernoulli_"])
@pytest.mark.parametrize("own_generator", [False, True])
def test_draws_from_two_threads_are_whole_batches_of_the_stream(draw, own_generator):
    """Each draw holds the generator for the whole batch (torch's mutex): two threads drawing at
    once get batches of the stream one thread would draw, in some order, never interleaved."""
    n, per_thread = 100_000, 20  # above the threshold: the draws run without the GIL
    gen = ember.Generator() if own_generator else None

    def seed():
        if gen is None:
            ember.manual_seed(1234)
        else:
            gen.manual_seed(1234)

    kwargs = {} if gen is None else {"generator": gen}

    def one(t):
        getattr(t, draw)(**kwargs)
        return t.numpy().tobytes()

    seed()
    sequential = sorted(one(ember.empty(n)) for _ in range(2 * per_thread))
    seed()
    drawn: list[list[bytes]] = [[], []]

    def work(i: int) -> None:
        for _ in range(per_thread):
            drawn[i].append(one(ember.empty(n)))

    _run_threads(work, 2)
    assert sorted(drawn[0] + drawn[1]) == sequential


def test_concurrent_draws_have_the_right_distribution():
    batches: dict[int, list[np.ndarray]] = {}

    def work(i: int) -> None:
        draw = ember.randn if i % 2 else ember.rand
        batches[i] = [draw(400_000).numpy().astype(np.float64) for _ in range(5)]

    _run_threads(work, 4)
    for i, parts in batches.items():
        x = np.concatenate(parts)
        if i % 2:  # standard normal: 2M draws, standard errors 7e-4 (mean) and 5e-4 (std)
            assert abs(x.mean()) < 0.005 and abs(x.std() - 1) < 0.005
        else:  # uniform in [0, 1)
            assert x.min() >= 0 and x.max() < 1 and abs(x.mean() - 0.5) < 0.005
    # no two batches start alike: no stretch of the stream was handed out twice
    heads = {p[:8].tobytes() for parts in batches.values() for p in parts}
    assert len(heads) == 20


def test_seeding_while_another_thread_draws_does_not_deadlock():
    """One thread draws long batches (generator locked, GIL released); another seeds and reads
    the state (generator locked with the GIL held): both finish."""
    stop = threading.Event()

    def draw(_: int) -> None:
        t = ember.empty(500_000)
        while not stop.is_set():
            t.normal_()
            assert np.isfinite(t.numpy()).all()

    def seed(_: int) -> None:
        try:
            for k in range(2000):
                ember.manual_seed(k)
                ember.get_rng_state()
                ember.rand(10)
        finally:
            stop.set()

    _run_threads(lambda i: (draw if i == 0 else seed)(i), 2, timeout=120)


# ---------------------------------------------------------------------------------------------
# Memory borrowed from Python objects, and interpreter exit


def test_borrowed_numpy_memory_dropped_by_other_threads():
    """Tensors over NumPy arrays (their deleter releases the array, with the GIL) made, used in
    long ops and dropped from several threads; the arrays are freed, values stay right."""
    import gc
    import weakref

    refs: list[weakref.ref] = []
    lock = threading.Lock()

    class Arr(np.ndarray):  # a weak-referenceable ndarray
        pass

    def work(i: int) -> None:
        for k in range(20):
            a = np.full(200_000, float(i + k), np.float32).view(Arr)
            with lock:
                refs.append(weakref.ref(a))
            t = ember.from_numpy(a)
            del a
            s = ember.sin(t).sum().item()
            assert abs(s - 200_000 * np.sin(np.float32(i + k))) < 2.0
            del t

    _run_threads(work, 4)
    gc.collect()
    assert all(r() is None for r in refs)


def test_exit_while_a_daemon_thread_runs_long_ops():
    """A daemon thread still inside a kernel when the interpreter shuts down must not abort the
    process (taking the GIL back then ends the thread by unwinding through noexcept C++ frames;
    ember parks it instead), nor crash it (OpenBLAS frees its buffers in an exit handler while the
    thread still multiplies: ember waits for kernels outside the GIL before those handlers run).
    LAPACK's binding aborted this way before; both failures were intermittent."""
    code = (
        "import threading, time, ember\n"
        "a = ember.randn(700, 700)\n"
        "def loop():\n"
        "    while True:\n"
        "        a @ a\n"
        "        ember.sin(ember.empty(1 << 22))\n"
        "        ember.linalg.inv(a)\n"
        "for _ in range(2):\n"
        "    threading.Thread(target=loop, daemon=True).start()\n"
        "time.sleep(0.3)\n"
        "print('done')\n"
    )
    for _ in range(12):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == "done", out.stderr
