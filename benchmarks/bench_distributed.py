"""ember.distributed beside torch.distributed's gloo backend, on the processes of one machine.

- all_reduce (SUM) of 4 MiB and 64 MiB float32 on 2 and 4 ranks: ember's mpi backend (mpi4py and
  the MPICH wheel) and its shm backend beside torch's gloo. Ratio = gloo time / ember time (> 1:
  ember faster). The shm row against mpi is the test that keeps the shm backend (it must beat MPI's
  own shared-memory path).
- DistributedDataParallel training step on 2 ranks, the same MLP (784-2048-2048-10, 5.8M
  parameters, batch 64 per rank, SGD) in ember (DDP over mpi, and over shm) and torch (DDP over
  gloo): zero_grad, forward, loss, backward (with the gradient all-reduce), step.

Every rank of one ``mpiexec -n N`` job joins all the groups being compared and the timed blocks
alternate between them (ember, peer, ember, ...), so a drift of the machine falls on each alike;
the time of a block is rank 0's, each block starting after a barrier. The script starts the jobs
itself (``--worker`` is the per-rank part):

    python benchmarks/bench_distributed.py [--quick] [--smoke] [--json PATH] [--no-torch]
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402

MODEL = (784, 2048, 2048, 10)
BATCH = 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the per-rank part ------------------------------------------------------------------------

def _comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def _median_blocks(fns: dict, calls: int, blocks: int, barrier) -> dict:
    """Interleaved blocks of `calls` calls of each function; median seconds per call."""
    times = {k: [] for k in fns}
    for fn in fns.values():  # warm up: the first calls allocate and connect
        fn()
        fn()
    for _ in range(blocks):
        for name, fn in fns.items():
            barrier()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - t0) / calls)
    return {k: statistics.median(v) for k, v in times.items()}


def _torch_group(rank: int, world: int, port: int):
    import torch.distributed as tdist

    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                             world_size=world)
    return tdist


def worker_all_reduce(sizes_mib, blocks, with_torch, shm_port, torch_port) -> dict:
    import ember.distributed as dist
    from ember.distributed import _shm, _store

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    shm_store = _store.TCPStore("127.0.0.1", shm_port, world, rank == 0, 60)
    shm = _shm.create_world(rank, world, shm_store, 60.0)
    tdist = _torch_group(rank, world, torch_port) if with_torch else None
    barrier = _comm().Barrier
    out = {}
    for mib in sizes_mib:
        n = int(mib * (1 << 20)) // 4
        e_mpi, e_shm = ember.ones(n), ember.ones(n)
        fns = {"ember mpi": lambda t=e_mpi: dist.all_reduce(t),
               "ember shm": lambda t=e_shm: shm.allreduce(t, dist.ReduceOp.SUM).wait()}
        if tdist is not None:
            import torch

            t_gloo = torch.ones(n)
            fns["torch gloo"] = lambda t=t_gloo: tdist.all_reduce(t)
        calls = 20 if mib <= 4 else 3
        out[str(mib)] = _median_blocks(fns, calls if blocks > 1 else 1, blocks, barrier)
        # keep the values small: all_reduce(SUM) of ones grows by `world` each call
        for t in (e_mpi, e_shm):
            t.fill_(1.0)
    shm.close()
    shm_store.close()
    if tdist is not None:
        tdist.destroy_process_group()
    dist.destroy_process_group()
    return out


def _ember_mlp(dims):
    import ember.nn as nn

    layers = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _torch_mlp(dims):
    import torch.nn as nn

    layers = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def worker_ddp(backend: str, dims, batch, blocks, with_torch, master_port, torch_port) -> dict:
    import numpy as np

    import ember.distributed as dist
    import ember.nn as enn
    from ember.nn.parallel import DistributedDataParallel as EDDP

    comm = _comm()
    rank, world = comm.rank, comm.size
    if backend == "shm":
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(master_port))
    dist.init_process_group(backend)
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((batch, dims[0])).astype(np.float32)
    y = rng.integers(0, dims[-1], batch)
    e_model = EDDP(_ember_mlp(dims))
    e_opt = ember.optim.SGD(e_model.parameters(), lr=0.01)
    e_loss = enn.CrossEntropyLoss()
    ex, ey = ember.from_numpy(x), ember.from_numpy(y)

    def ember_step():
        e_opt.zero_grad()
        e_loss(e_model(ex), ey).backward()
        e_opt.step()

    fns = {f"ember DDP ({backend})": ember_step}
    tdist = None
    if with_torch:
        import torch

        tdist = _torch_group(rank, world, torch_port)
        t_model = torch.nn.parallel.DistributedDataParallel(_torch_mlp(dims))
        t_opt = torch.optim.SGD(t_model.parameters(), lr=0.01)
        t_loss = torch.nn.CrossEntropyLoss()
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)

        def torch_step():
            t_opt.zero_grad()
            t_loss(t_model(tx), ty).backward()
            t_opt.step()

        fns["torch DDP (gloo)"] = torch_step
    out = _median_blocks(fns, 3 if blocks > 1 else 1, blocks, comm.Barrier)
    if tdist is not None:
        tdist.destroy_process_group()
    dist.destroy_process_group()
    return out


def worker(argv) -> None:
    spec = json.loads(argv[0])
    ember.set_num_threads(spec["threads"])
    if spec["torch"]:
        import torch

        torch.set_num_threads(spec["threads"])
    if spec["what"] == "all_reduce":
        res = worker_all_reduce(spec["sizes"], spec["blocks"], spec["torch"], spec["port1"],
                                spec["port2"])
    else:
        res = worker_ddp(spec["backend"], spec["dims"], spec["batch"], spec["blocks"],
                         spec["torch"], spec["port1"], spec["port2"])
    if _comm().rank == 0:
        print("RESULT " + json.dumps(res), flush=True)


# -- the driver -------------------------------------------------------------------------------

def _job(n: int, spec: dict, env_extra=None) -> dict | None:
    from ember.distributed import run

    mpiexec = run.find_mpiexec()
    spec = {**spec, "port1": _free_port(), "port2": _free_port()}
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(env_extra or {})
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.run([mpiexec, "-n", str(n), sys.executable, __file__, "--worker",
                           json.dumps(spec)], capture_output=True, text=True, env=env,
                          timeout=900)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    print(f"the {spec['what']} job on {n} ranks failed:\n{proc.stdout[-3000:]}"
          f"{proc.stderr[-3000:]}", file=sys.stderr)
    return None


def main(argv=None) -> int:
    H.setup("bench_distributed: ember.distributed (mpi, shm) vs torch.distributed (gloo)", argv,
            in_process=False)
    from ember.distributed import run

    if run.find_mpiexec() is None:
        print("mpi4py or mpiexec missing (pip install 'ember-mp[mpi]'): nothing to run")
        return 0
    smoke = H.SETTINGS.smoke
    blocks = H.SETTINGS.repeat if not smoke else 1
    with_torch = H.torch is not None
    sizes = [0.01] if smoke else [4, 64]
    for world in (2, 4):
        res = _job(world, {"what": "all_reduce", "sizes": sizes, "blocks": blocks,
                           "threads": 1, "torch": with_torch})
        if res is None:
            return 1
        rows = []
        for mib in sizes:
            r = res[str(mib)]
            nbytes = int(mib * (1 << 20))
            case = f"all_reduce {mib:g} MiB float32, {world} ranks"
            gb_s = {k: nbytes / v / 1e9 for k, v in r.items()}
            note = ", ".join(f"{k} {g:.2f} GB/s" for k, g in gb_s.items())
            for lib in ("ember mpi", "ember shm"):
                rows.append(H.Row(f"{case}: {lib}", r[lib], "torch gloo", r.get("torch gloo"),
                                  note="" if with_torch else "no torch"))
            rows.append(H.Row(f"{case}: ember shm", r["ember shm"], "ember mpi", r["ember mpi"],
                              note="shm vs MPI's shared memory"))
            print(f"  {case}: {note}")
        H.report(f"all_reduce on {world} ranks (1 thread each; ratio: peer / ember)", rows)
    dims, batch = ((16, 32, 32, 4), 8) if smoke else (MODEL, BATCH)
    try:
        import ember.nn  # noqa: F401
    except ImportError:
        print("ember-nn is not installed: no DistributedDataParallel rows")
        threads_list = ()
    else:
        threads_list = (1, 2)
    for threads in threads_list:
        rows = []
        for backend in ("mpi", "shm"):
            res = _job(2, {"what": "ddp", "backend": backend, "dims": dims, "batch": batch,
                           "blocks": blocks, "threads": threads, "torch": with_torch},
                       {"OMP_WAIT_POLICY": "PASSIVE"})
            if res is None:
                return 1
            mine = res[f"ember DDP ({backend})"]
            rows.append(H.Row(f"DDP step, MLP {'-'.join(map(str, dims))}, batch {batch}/rank, "
                              f"2 ranks, ember over {backend}", mine, "torch DDP gloo",
                              res.get("torch DDP (gloo)"),
                              note="" if with_torch else "no torch"))
            if smoke:
                break
        H.report(f"DistributedDataParallel step, {threads} thread(s) per rank (ratio: torch / "
                 "ember)", rows)
        if smoke:
            break
    H.summary()
    H.save_json({"model": dims, "batch_per_rank": batch})
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2:])
    else:
        sys.exit(main())
