"""The nccl backend on real GPUs: every collective against the value each rank can compute, and
the all-reduce time of 4 MiB and 64 MiB float32. CI machines have no GPU, so this is run by hand:

    python tools/nccl_check.py                                    # one GPU: a world of one
    python -m ember.distributed.run --launcher processes \\
        --nproc-per-node 2 tools/nccl_check.py                   # two GPUs: rank r on cuda:r

Needs CuPy with NCCL (cupy-cuda12x or cupy-cuda13x, and nvidia-nccl-cu12/-cu13). Prints one
``PASS``/``FAIL`` line per check on rank 0 and exits non-zero when any failed.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import traceback

import numpy as np

import ember
import ember.distributed as dist

failures = []


def check(name: str, fn) -> None:
    try:
        fn()
        ok = True
    except Exception:  # noqa: BLE001 - reported
        ok = False
        failures.append(name)
        if dist.get_rank() == 0:
            traceback.print_exc()
    if dist.get_rank() == 0:
        print(f"{'PASS' if ok else 'FAIL'} {name}", flush=True)


def values(rank: int, n: int = 1000, dtype=np.float32):
    return (np.random.default_rng(rank).uniform(0.5, 1.5, n)).astype(dtype)


def main() -> int:
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    ember.cuda.set_device(local)
    if world == 1 and "MASTER_ADDR" not in os.environ:
        init = f"file://{tempfile.mkdtemp()}/rdv"
        dist.init_process_group("nccl", init_method=init, rank=0, world_size=1)
    else:
        dist.init_process_group("nccl")
    dev = f"cuda:{local}"
    everyone = np.stack([values(r) for r in range(world)])

    def all_reduce():
        for op, ref in (("SUM", everyone.sum(0)), ("AVG", everyone.mean(0)),
                        ("MAX", everyone.max(0)), ("MIN", everyone.min(0))):
            t = ember.from_numpy(values(rank)).to(dev)
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
            np.testing.assert_allclose(t.cpu().numpy(), ref, rtol=1e-5, err_msg=op)
        t = ember.from_numpy(values(rank)).to(dev).half()
        dist.all_reduce(t)
        np.testing.assert_allclose(t.float().cpu().numpy(), everyone.sum(0), rtol=3e-3)
        b = ember.tensor([rank == 0, False], device=dev)
        dist.all_reduce(b)
        assert b.cpu().tolist() == [True, False]

    def broadcast_reduce():
        t = ember.from_numpy(values(rank)).to(dev)
        dist.broadcast(t, src=world - 1)
        np.testing.assert_array_equal(t.cpu().numpy(), values(world - 1))
        t = ember.from_numpy(values(rank)).to(dev)
        dist.reduce(t, dst=0)
        if rank == 0:
            np.testing.assert_allclose(t.cpu().numpy(), everyone.sum(0), rtol=1e-5)

    def gathers():
        out = ember.zeros(world * 1000, device=dev)
        dist.all_gather_into_tensor(out, ember.from_numpy(values(rank)).to(dev))
        np.testing.assert_array_equal(out.cpu().numpy(), everyone.reshape(-1))
        outs = [ember.zeros(1000, device=dev) for _ in range(world)]
        dist.all_gather(outs, ember.from_numpy(values(rank)).to(dev))
        for r in range(world):
            np.testing.assert_array_equal(outs[r].cpu().numpy(), values(r))
        rs = ember.zeros(1000 // world * 1, device=dev) if 1000 % world == 0 else None
        if rs is not None:
            dist.reduce_scatter_tensor(rs, ember.from_numpy(values(rank)).to(dev))
            n = 1000 // world
            np.testing.assert_allclose(rs.cpu().numpy(), everyone.sum(0)[rank * n:(rank + 1) * n],
                                       rtol=1e-5)

    def point_to_point():
        if world == 1:
            return
        t = ember.full((100,), float(rank), device=dev)
        got = ember.zeros(100, device=dev)
        works = [dist.isend(t, (rank + 1) % world), dist.irecv(got, (rank - 1) % world)]
        for w in works:
            w.wait()
        ember.cuda.synchronize()
        assert got.cpu().tolist() == [float((rank - 1) % world)] * 100
        ins = [ember.full((2,), float(10 * rank + j), device=dev) for j in range(world)]
        outs = [ember.zeros(2, device=dev) for _ in range(world)]
        dist.all_to_all(outs, ins)
        ember.cuda.synchronize()
        assert [o.cpu().tolist()[0] for o in outs] == [float(10 * j + rank) for j in range(world)]

    def objects():
        objs = [None] * world
        dist.all_gather_object(objs, {"rank": rank})
        assert objs == [{"rank": r} for r in range(world)]

    def ddp():
        from ember.nn.parallel import DistributedDataParallel as DDP

        ember.manual_seed(rank)
        model = DDP(ember.nn.Linear(8, 4).to(dev))
        x = ember.ones(16, 8, device=dev) * (rank + 1)
        model(x).sum().backward()
        w = model.module.weight.grad.cpu().numpy()
        mean_x = np.mean([r + 1 for r in range(world)])
        np.testing.assert_allclose(w, np.full((4, 8), 16 * mean_x), rtol=1e-5)

    for name, fn in (("all_reduce", all_reduce), ("broadcast/reduce", broadcast_reduce),
                     ("gathers", gathers), ("send/recv, all_to_all", point_to_point),
                     ("object collectives", objects), ("DistributedDataParallel", ddp)):
        check(name, fn)
    bandwidth(dev, world)
    dist.destroy_process_group()
    return 1 if failures else 0


def bandwidth(dev: str, world: int) -> None:
    """Median all-reduce time of 4 and 64 MiB float32 (bus bandwidth as nccl-tests counts it)."""
    rows = []
    for mib in (4, 64):
        n = mib * (1 << 20) // 4
        t = ember.ones(n, device=dev)
        times = []
        for i in range(12):
            ember.cuda.synchronize()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            ember.cuda.synchronize()
            if i >= 2:
                times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        busbw = 2 * (world - 1) / world * n * 4 / med / 1e9 if world > 1 else float("nan")
        rows.append((mib, med, busbw))
    if dist.get_rank() == 0:
        for mib, med, busbw in rows:
            print(f"all_reduce {mib} MiB float32, {world} GPU(s): {med * 1e3:.3f} ms, "
                  f"bus bandwidth {busbw:.1f} GB/s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
