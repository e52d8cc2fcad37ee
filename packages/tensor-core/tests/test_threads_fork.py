"""The intra-op thread pool: set/get_num_threads, results independent of the thread count, and
fork safety (a child forked after the pool ran must be able to run parallel kernels: data-loader
workers and ember.multiprocessing rely on it). No test here can hang the run: children are
waited for with a deadline and killed past it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import ember
from ember.testing.opdb import to_numpy

N = 300_000  # several parallel chunks (the elementwise grain is 32768 elements)


def big(n: int = N, dtype=ember.float32) -> ember.Tensor:
    return ember.arange(n, dtype=dtype)


def test_get_and_set_num_threads():
    n = ember.get_num_threads()
    assert isinstance(n, int) and n >= 1
    for k in (1, 2, 3, 7):
        ember.set_num_threads(k)
        assert ember.get_num_threads() == k
    for bad in (0, -2):
        with pytest.raises((ValueError, RuntimeError), match="positive"):
            ember.set_num_threads(bad)
    assert ember.get_num_threads() == 7  # a refused value changes nothing


def test_num_threads_is_restored_between_tests():
    # conftest restores the count: the previous test's 7 must not leak here
    assert ember.get_num_threads() != 7 or os.cpu_count() == 7


def _run(code: str, env: dict) -> str:
    full_env = {**os.environ, **env}
    out = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_thread_count_from_the_environment():
    code = "import ember; print(ember.get_num_threads())"
    clean = {"EMBER_NUM_THREADS": "", "OMP_NUM_THREADS": ""}
    assert _run(code, {**clean, "EMBER_NUM_THREADS": "3"}) == "3"
    assert _run(code, {**clean, "OMP_NUM_THREADS": "5"}) == "5"
    assert _run(code, {**clean, "EMBER_NUM_THREADS": "2", "OMP_NUM_THREADS": "5"}) == "2"
    assert int(_run(code, {**clean, "EMBER_NUM_THREADS": "junk"})) >= 1


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_results_do_not_depend_on_the_thread_count(threads):
    x = big()
    ref = np.arange(N, dtype=np.float32)
    ember.set_num_threads(threads)
    np.testing.assert_array_equal(to_numpy(x + x), ref + ref)
    np.testing.assert_array_equal(to_numpy(x.double()), ref.astype(np.float64))
    m = x.view(600, 500)
    np.testing.assert_array_equal(to_numpy(m.t().contiguous()), ref.reshape(600, 500).T)
    np.testing.assert_array_equal(to_numpy(m[:, ::2] * 2), ref.reshape(600, 500)[:, ::2] * 2)
    e = ember.exp(x / N)
    np.testing.assert_allclose(to_numpy(e), np.exp(ref.astype(np.float64) / N), rtol=1e-6)
    z = ember.zeros(N)
    z.add_(1)
    assert float(to_numpy(z).sum()) == N


def test_parallel_results_are_identical_across_thread_counts():
    x = ember.linspace(-5, 5, N)
    results = []
    for threads in (1, 2, 4):
        ember.set_num_threads(threads)
        results.append(to_numpy(ember.sigmoid(x) * ember.tanh(x)))
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


def test_ops_from_several_python_threads():
    ember.set_num_threads(2)
    x = big()
    expected = np.arange(N, dtype=np.float32) * 3
    errors: list[BaseException] = []

    def work():
        try:
            for _ in range(5):
                np.testing.assert_array_equal(to_numpy(x * 3), expected)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    assert not errors, errors[0]


# ---------------------------------------------------------------------------------------------
# fork


def _child_work() -> int:
    """In the child: a large parallel add (and a cast and a copy); 0 when the values are right."""
    try:
        a = ember.arange(N, dtype=ember.float32)
        b = a + a
        ok = b[N - 1].item() == 2.0 * (N - 1) and b[12345].item() == 24690.0
        c = b.view(600, 500).t().contiguous().double()
        ok = ok and c[499, 599].item() == 2.0 * (N - 1)
        return 0 if ok else 1
    except BaseException:  # noqa: BLE001 - the child reports through its exit status
        return 2


def _wait(pid: int, timeout: float) -> int:
    """The child's exit status, polling until `timeout`; a child still running then is killed
    and the test fails rather than hangs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"forked child {pid} did not finish in {timeout} s (deadlock after fork?)")


needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@needs_fork
@pytest.mark.parametrize("threads", [2, 4])
def test_fork_after_the_pool_ran(threads):
    ember.set_num_threads(threads)
    x = big()
    assert (x + x)[N - 1].item() == 2.0 * (N - 1)  # the parent's pool is up and has worked
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 3
        try:
            code = _child_work()
        finally:
            os._exit(code)
    assert _wait(pid, timeout=60) == 0
    # the parent's pool still works after the fork
    assert (x * 2)[N - 1].item() == 2.0 * (N - 1)


@needs_fork
def test_fork_repeatedly_and_change_threads_in_the_child():
    ember.set_num_threads(2)
    _ = big() + 1
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                ember.set_num_threads(3)
                code = _child_work()
            finally:
                os._exit(code)
        assert _wait(pid, timeout=60) == 0
        _ = big() * 2  # the parent keeps running parallel kernels between forks


@needs_fork
def test_fork_from_a_child_that_ran_the_pool():
    ember.set_num_threads(2)
    _ = big() + 1
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = _child_work()
            if code == 0:
                grandchild = os.fork()
                if grandchild == 0:
                    os._exit(_child_work())
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    done, status = os.waitpid(grandchild, os.WNOHANG)
                    if done:
                        code = os.waitstatus_to_exitcode(status)
                        break
                    time.sleep(0.01)
                else:
                    os.kill(grandchild, signal.SIGKILL)
                    code = 4
        finally:
            os._exit(code)
    assert _wait(pid, timeout=90) == 0


def _mp_target(queue):
    queue.put(_child_work())


@needs_fork
def test_multiprocessing_fork_context():
    ember.set_num_threads(2)
    _ = big() + 1
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_mp_target, args=(queue,)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
        p.join()
    assert not alive, "a forked worker hung"
    assert [p.exitcode for p in procs] == [0, 0]
    assert sorted(queue.get(timeout=10) for _ in procs) == [0, 0]
