"""ember.multiprocessing beside torch.multiprocessing: a tensor through a Queue, 1 MiB and 256 MiB.

Each call times a round trip: the parent puts a tensor on a Queue, a child process (started once,
with the fork start method) gets it and answers with a small acknowledgement. Shared tensors
(ember, torch) travel as a descriptor of their shared segment (the first send moved them there,
before timing), so the cost should not depend on the size; the comparison row sends the same bytes
pickled by value (a NumPy array through plain ``multiprocessing``).

- tables: ember's round trip beside torch's and beside pickling by value; ratio = peer / ember;
- scaling: time(256 MiB) / time(1 MiB) for each; ember's target is < 5x (torch: ~1x);
- all_reduce (SUM, float32) between 2 processes: ember.distributed's shm backend beside
  torch.distributed's gloo (both over a tcp:// rendezvous on this machine); one intra-op thread
  per process. Times are taken in rank 0: median over blocks of a fixed number of calls (both
  ranks must make the same calls).

    python benchmarks/bench_mp.py [--quick] [--smoke] [--json PATH] [--no-torch]
"""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402

try:
    import ember.multiprocessing as emp  # noqa: E402
except ImportError:  # pragma: no cover - ember-mp not installed
    emp = None

_SCALING_TARGET = 5.0


def _echo(q_in, q_out):
    while True:
        x = q_in.get()
        if x is None:
            return
        q_out.put(1)


class Echo:
    """A child process that acknowledges every object put on its queue."""

    def __init__(self, ctx, x) -> None:
        self.q_in, self.q_out = ctx.Queue(), ctx.Queue()
        self.proc = ctx.Process(target=_echo, args=(self.q_in, self.q_out), daemon=True)
        self.proc.start()
        self.x = x
        self()  # the first send moves a tensor's storage to shared memory

    def __call__(self) -> None:
        self.q_in.put(self.x)
        self.q_out.get(timeout=60)

    def close(self) -> None:
        self.q_in.put(None)
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()


def _makers(nbytes: int):
    n = nbytes // 4
    makers = {"ember": (emp.get_context("fork"), lambda: ember.ones(n))}
    if H.torch is not None:
        import torch.multiprocessing as tmp

        makers["torch"] = (tmp.get_context("fork"), lambda: H.torch.ones(n))
    makers["pickle"] = (multiprocessing.get_context("fork"), lambda: H.np.ones(n, H.np.float32))
    return makers


def _mib(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):g} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def bench(sizes) -> dict[str, dict[int, float]]:
    times: dict[str, dict[int, float]] = {}
    for nbytes in sizes:
        echoes = {name: Echo(ctx, make()) for name, (ctx, make) in _makers(nbytes).items()}
        try:
            t = H.measure_all(echoes, warmup=2, settle=0.01)
        finally:
            for e in echoes.values():
                e.close()
        for name, s in t.items():
            times.setdefault(name, {})[nbytes] = s
        case = f"Queue round trip, {_mib(nbytes)} float32"
        rows = []
        if "torch" in t:
            rows.append(H.Row(case, t["ember"], "torch.multiprocessing", t["torch"]))
        else:
            rows.append(H.Row(case, t["ember"], "torch.multiprocessing", None, None, "no torch"))
        rows.append(H.Row(case, t["ember"], "pickle by value", t["pickle"]))
        H.report(f"sending {_mib(nbytes)} to another process and back (ratio: peer / ember)", rows)
    return times


def scaling(times, small: int, big: int) -> None:
    print(f"== scaling: time({_mib(big)}) / time({_mib(small)}) "
          f"(target for ember: < {_SCALING_TARGET:g}x)")
    labels = {"ember": "ember (shared)", "torch": "torch (shared)", "pickle": "pickle by value"}
    for name, t in times.items():
        ratio = t[big] / t[small]
        mark = ""
        if name == "ember":
            mark = "  PASS" if ratio < _SCALING_TARGET else "  BELOW"
        print(f"  {labels[name]:<16} {H.fmt_time(t[small]):>9} {H.fmt_time(t[big]):>9} "
              f"{ratio:8.2f}x{mark}")
        H._RESULTS.append({
            "title": "scaling", "case": f"{labels[name]}: {_mib(big)} / {_mib(small)}",
            "ember_s": t[big], "peer_name": f"{_mib(small)}", "peer_s": t[small],
            "target": None, "status": "-", "ratio": ratio,
            "scaling_target": _SCALING_TARGET if name == "ember" else None,
            "note": "ratio = time(big) / time(small): lower is better"})
    print()


def _all_reduce_rank(rank, lib, port, sizes, blocks, out):
    import statistics
    import time

    if lib == "ember":
        import ember as T
        import ember.distributed as dist

        backend = "shm"
    else:
        import torch as T
        import torch.distributed as dist

        backend = "gloo"
    T.set_num_threads(1)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    res = {}
    for nbytes, calls in sizes:
        t = T.ones(nbytes // 4)
        for _ in range(2):
            dist.all_reduce(t)
        per_call = []
        for _ in range(blocks):
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(calls):
                dist.all_reduce(t)
            per_call.append((time.perf_counter() - t0) / calls)
        res[nbytes] = statistics.median(per_call)
    dist.destroy_process_group()
    if rank == 0:
        out.put(res)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_all_reduce() -> None:
    if H.SETTINGS.smoke:
        sizes = [(1 << 10, 2)]
    else:
        sizes = [(1 << 10, 200), (1 << 20, 20), (16 << 20, 4)]
    libs = ["ember"] + (["torch"] if H.torch is not None else [])
    ctx = multiprocessing.get_context("spawn")
    times = {}
    for lib in libs:
        out, port = ctx.Queue(), _free_port()
        ranks = [ctx.Process(target=_all_reduce_rank,
                             args=(r, lib, port, sizes, H.SETTINGS.repeat, out)) for r in range(2)]
        for p in ranks:
            p.start()
        try:
            times[lib] = out.get(timeout=300)
        finally:
            for p in ranks:
                p.join(30)
                if p.is_alive():
                    p.kill()
    rows = []
    for nbytes, _ in sizes:
        case = f"all_reduce SUM, {_mib(nbytes)} float32, 2 processes"
        if "torch" in times:
            rows.append(H.Row(case, times["ember"][nbytes], "torch gloo", times["torch"][nbytes]))
        else:
            rows.append(H.Row(case, times["ember"][nbytes], "torch gloo", None, None, "no torch"))
    H.report("all_reduce between 2 processes (ember shm vs torch gloo; ratio: peer / ember)", rows)


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_mp: ember.multiprocessing vs torch.multiprocessing (Queue round trips)", argv,
            in_process=False)
    if emp is None:
        print("ember-mp is not installed: nothing to compare")
        return 0
    small, big = (1 << 10, 64 << 10) if H.SETTINGS.smoke else (1 << 20, 256 << 20)
    times = bench([small, big])
    scaling(times, small, big)
    try:
        import ember.distributed  # noqa: F401
    except ImportError:  # pragma: no cover
        print("ember.distributed is not there: its rows are left out")
    else:
        bench_all_reduce()
    H.summary()
    H.save_json({"sizes": [small, big]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
