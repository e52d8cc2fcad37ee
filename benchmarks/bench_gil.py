"""The GIL: does a long ember op let other Python threads run? ember beside PyTorch.

1. A pure-Python thread counts loop iterations while the main thread runs one long op after
   another (a 2048^2 float32 matmul, sin of 16M float32, sum of 64M float32) for a fixed time.
   Its rate during the ops, as a share of its rate while the main thread sleeps, is the share of
   its speed the op leaves it: about 1.0 when the op runs without the GIL and a core is free,
   about 0.0 when the op holds the GIL. Target: >= 0.5 for ember's matmul with one intra-op
   thread (a pool using both cores of a 2-core machine competes with the Python thread for CPU,
   whichever library it is). "ember, GIL held" is ember with `_C._set_gil_release(False)`: how
   it behaved before its kernels released the GIL. The op's own time beside the counting thread
   is shown too: after each op the main thread waits for the GIL, which a busy Python thread hands
   over at its switch interval (sys.getswitchinterval(), 5 ms). The sum streams memory in a few
   milliseconds, so that wait weighs on it.
2. Two threads each run the same ops at once: their wall time over one thread's doing its share
   alone. 1.0: the two overlap perfectly (one intra-op thread each on two cores); 2.0: they run
   one after the other (the GIL held, or every core already busy with one op).

    python benchmarks/bench_gil.py [--threads N] [--quick] [--smoke] [--json PATH] [--no-torch]

Report both --threads 1 and --threads 2 (with OMP_WAIT_POLICY=PASSIVE for torch), and say which.
"""

from __future__ import annotations

import contextlib
import functools
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402

_TARGET = 0.5  # share of a pure-Python thread's speed left by ember's matmul (one intra-op thread)
HELD = "ember, GIL held"


class Counter:
    """A pure-Python thread counting loop iterations while it is not paused."""

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

    def resume(self) -> None:
        self._go.set()

    def pause(self) -> None:
        self._go.clear()
        time.sleep(0.01)  # let the loop see it (the main thread sleeping gives it the GIL)

    def close(self) -> None:
        self._stop = True
        self._go.set()
        self._thread.join()


def _run_for(fn: Callable[[], object], seconds: float) -> tuple[int, float]:
    """Calls fn until `seconds` passed; returns (calls, elapsed)."""
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return n, elapsed


def python_share(
    counter: Counter, fn: Callable[[], object], seconds: float
) -> tuple[float, float, float]:
    """(share of the counting thread's idle rate left while fn runs, fn's time alone, fn's time
    beside the counting thread)."""
    counter.pause()
    calls, elapsed = _run_for(fn, seconds)
    alone = elapsed / calls
    counter.resume()
    c0, t0 = counter.count, time.perf_counter()
    time.sleep(seconds)
    idle_rate = (counter.count - c0) / (time.perf_counter() - t0)
    c0 = counter.count
    calls, elapsed = _run_for(fn, seconds)
    busy_rate = (counter.count - c0) / elapsed
    counter.pause()
    return busy_rate / max(idle_rate, 1.0), alone, elapsed / calls


def process_share(counter: Counter, seconds: float) -> float:
    """The counting thread's share of its idle rate while another *process* keeps a core busy:
    the most any op on one thread can leave it on this machine now (no GIL involved)."""
    counter.resume()
    c0, t0 = counter.count, time.perf_counter()
    time.sleep(seconds)
    idle_rate = (counter.count - c0) / (time.perf_counter() - t0)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.1)
        c0, t0 = counter.count, time.perf_counter()
        time.sleep(seconds)
        rate = (counter.count - c0) / (time.perf_counter() - t0)
    finally:
        busy.kill()
        busy.wait()
    counter.pause()
    return rate / max(idle_rate, 1.0)


def two_thread_ratio(fn: Callable[[], object], calls: int) -> float:
    """Wall time of two threads making `calls` calls each at once, over one thread's `calls`."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    one = time.perf_counter() - t0
    barrier = threading.Barrier(3)

    def worker() -> None:
        barrier.wait()
        for _ in range(calls):
            fn()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return (time.perf_counter() - t0) / one


def cases() -> dict[str, dict[str, Callable[[], object]]]:
    torch = H.torch
    smoke = H.SETTINGS.smoke
    k, n_sin, n_sum = (64, 4096, 4096) if smoke else (2048, 1 << 24, 1 << 26)
    a, b = H.inputs((k, k), seed=1), H.inputs((k, k), seed=2)
    x, y = H.inputs((n_sin,), seed=3), H.inputs((n_sum,), seed=4)
    ops = {
        f"matmul {k}x{k} float32": (lambda lib: lib.mm, lambda v: (a[v], b[v])),
        f"sin {_m(n_sin)} float32": (lambda lib: lib.sin, lambda v: (x[v],)),
        f"sum {_m(n_sum)} float32": (lambda lib: lib.sum, lambda v: (y[v],)),
    }
    out: dict[str, dict[str, Callable[[], object]]] = {}
    for case, (op, args) in ops.items():
        fn = op(ember)
        out[case] = {"ember": functools.partial(fn, *args("ember"))}
        out[case][HELD] = out[case]["ember"]
        if torch is not None:
            out[case]["torch"] = functools.partial(op(torch), *args("torch"))
    return out


def _m(n: int) -> str:
    return f"{n >> 20}M" if n >= 1 << 20 else str(n)


@contextlib.contextmanager
def variant(lib: str):
    """ember with its kernels keeping the GIL for the HELD column."""
    if lib == HELD:
        ember._C._set_gil_release(False)
    try:
        yield
    finally:
        ember._C._set_gil_release(True)


def main(argv: list[str] | None = None) -> int:
    s = H.setup("bench_gil: other Python threads during long ops, ember vs PyTorch (CPU)", argv)
    seconds = 0.02 if s.smoke else 0.3 if s.quick else 1.0
    rounds = 1 if s.smoke else 3 if s.quick else 5
    print(f"switch interval: {sys.getswitchinterval() * 1e3:g} ms; {rounds} rounds of "
          f"{seconds:g} s per figure, libraries interleaved, medians\n")
    libs = ["ember", HELD] + (["torch"] if H.torch is not None else [])
    table = cases()
    counter = Counter()
    share: dict[tuple[str, str], list[float]] = {}
    alone: dict[tuple[str, str], list[float]] = {}
    beside: dict[tuple[str, str], list[float]] = {}
    scaling: dict[tuple[str, str], list[float]] = {}
    ceiling: list[float] = []
    try:
        for fns in table.values():  # warm up: pools, OpenBLAS, allocators
            for fn in fns.values():
                fn()
        for _ in range(rounds):
            ceiling.append(process_share(counter, seconds))
            for case, fns in table.items():
                for lib in libs:
                    with variant(lib):
                        f, t_alone, t_beside = python_share(counter, fns[lib], seconds)
                    share.setdefault((case, lib), []).append(f)
                    alone.setdefault((case, lib), []).append(t_alone)
                    beside.setdefault((case, lib), []).append(t_beside)
        for _ in range(rounds):
            for case, fns in table.items():
                for lib in libs:
                    calls = max(1, round(seconds / statistics.median(alone[case, lib])))
                    with variant(lib):
                        ratio = two_thread_ratio(fns[lib], calls)
                    scaling.setdefault((case, lib), []).append(ratio)
    finally:
        counter.close()

    med = {key: statistics.median(v) for key, v in share.items()}
    threads = ember.get_num_threads()
    print(f"== a pure-Python thread's speed during the op, as a share of its idle speed "
          f"({threads} intra-op thread{'s' if threads > 1 else ''})")
    head = ("case", *libs, "target", "", "op alone / beside the thread: " + ", ".join(libs))
    lines = []
    for case in table:
        target = _TARGET if case.startswith("matmul") and threads == 1 else None
        ok = "" if target is None else ("PASS" if med[case, "ember"] >= target else "BELOW")
        times = ", ".join(
            f"{H.fmt_time(statistics.median(alone[case, lib]))} / "
            f"{H.fmt_time(statistics.median(beside[case, lib]))}"
            for lib in libs
        )
        lines.append((case, *(f"{med[case, lib]:.2f}" for lib in libs),
                      f">= {target:g}" if target else "", ok, times))
    _print_table(head, lines)
    print(f"reference: beside a separate busy process (no GIL involved) the same thread keeps "
          f"{statistics.median(ceiling):.2f} of its speed on this machine now: the most a "
          f"one-thread op can leave it\n")

    print(f"== two threads running the op at once: wall time / one thread's "
          f"(1.0: they overlap, 2.0: they take turns; {threads} intra-op "
          f"thread{'s' if threads > 1 else ''} each)")
    lines = [(case, *(f"{statistics.median(scaling[case, lib]):.2f}x" for lib in libs))
             for case in table]
    _print_table(("case", *libs), lines)
    print(f"load average (1 min) after the run: {H.load_average():.2f}")
    if s.smoke:
        print("(smoke run: tiny sizes, the figures mean nothing)")
    H.save_json({
        "python_share": {f"{c} / {lib}": v for (c, lib), v in med.items()},
        "python_share_beside_a_busy_process": statistics.median(ceiling),
        "two_threads": {f"{c} / {lib}": statistics.median(v) for (c, lib), v in scaling.items()},
        "op_alone_s": {f"{c} / {lib}": statistics.median(v) for (c, lib), v in alone.items()},
        "op_beside_python_s": {f"{c} / {lib}": statistics.median(v)
                               for (c, lib), v in beside.items()},
    })
    return 0  # benchmarks report; they do not fail on a slow row


def _print_table(head: tuple[str, ...], lines: list[tuple[str, ...]]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *lines)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    for ln in lines:
        print("  ".join(str(c).ljust(w) for c, w in zip(ln, widths)).rstrip())
    print()


if __name__ == "__main__":
    sys.exit(main())
