"""ember.multiprocessing: sending a tensor through a Queue costs the same for 1 MiB and 256 MiB.

Each row times a round trip: the parent puts a tensor on a Queue, a child process gets it and
answers with a small acknowledgement. Shared tensors (ember, torch) travel as a descriptor of
their shared segment; the comparison row sends the same bytes pickled by value (a NumPy array
through plain ``multiprocessing``). Ratio = time(256 MiB) / time(1 MiB); the target is < 5x.

    python benchmarks/bench_mp.py [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time

import numpy as np

import ember
import ember.multiprocessing as emp


def _echo(q_in, q_out):
    while True:
        x = q_in.get()
        if x is None:
            return
        q_out.put(1)


def round_trip(ctx, make, reps):
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_echo, args=(q_in, q_out))
    p.start()
    x = make()
    q_in.put(x)  # the first send moves the storage to shared memory
    q_out.get()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        q_in.put(x)
        q_out.get()
        times.append(time.perf_counter() - t0)
    q_in.put(None)
    p.join()
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    reps = 5 if args.quick else 20
    small, big = 1 << 20, 256 << 20
    rows = []
    ctx = emp.get_context("fork")
    rows.append(("ember (shared)", round_trip(ctx, lambda: ember.ones(small // 4), reps),
                 round_trip(ctx, lambda: ember.ones(big // 4), reps)))
    try:
        import torch
        import torch.multiprocessing as tmp

        tctx = tmp.get_context("fork")
        rows.append(("torch (shared)", round_trip(tctx, lambda: torch.ones(small // 4), reps),
                     round_trip(tctx, lambda: torch.ones(big // 4), reps)))
    except ImportError:
        print("torch not installed: its row is left out")
    pctx = multiprocessing.get_context("fork")
    preps = max(2, reps // 4)
    rows.append(("pickle by value",
                 round_trip(pctx, lambda: np.ones(small // 4, np.float32), preps),
                 round_trip(pctx, lambda: np.ones(big // 4, np.float32), preps)))
    print(f"{'case':<18}{'1 MiB (ms)':>12}{'256 MiB (ms)':>14}{'ratio':>9}")
    ok = True
    for name, t1, t2 in rows:
        ratio = t2 / t1
        flag = ""
        if name.startswith("ember"):
            ok = ratio < 5
            flag = "  PASS (< 5x)" if ok else "  BELOW (>= 5x)"
        print(f"{name:<18}{t1 * 1e3:>12.3f}{t2 * 1e3:>14.3f}{ratio:>8.2f}x{flag}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
