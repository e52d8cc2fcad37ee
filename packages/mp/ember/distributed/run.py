"""``python -m ember.distributed.run``: torchrun's launcher for ember.

Starts ``--nproc-per-node`` copies of a script on this machine, each with torchrun's environment:
RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK (the node's rank), MASTER_ADDR and
MASTER_PORT, so that ``init_process_group()`` (``env://``) finds the others. On several machines,
run it on each with the same ``--nnodes``, ``--master-addr`` and ``--master-port`` and its own
``--node-rank``.

How the workers start (``--launcher``):

- ``mpiexec`` (the default when ember-mp's mpi extra is installed): one MPI job per machine, each
  worker with its own environment (mpiexec's ``-env``), so the mpi backend gets MPI's fast paths
  between the workers of a machine; the jobs of several machines join at init.
- ``processes``: plain child processes, as torchrun starts them (the shm and nccl backends need
  nothing more; the mpi backend then forms only a world of one).

Either way a worker that fails ends the others (torchrun's behaviour): mpiexec does so itself;
with ``processes`` the launcher terminates the rest and exits with the failed worker's code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_mpiexec() -> str | None:
    """The mpiexec beside this Python (the MPICH wheel's, matching mpi4py), else on PATH."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    return shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Start NPROC copies of a training script per machine with torchrun's "
                    "env:// variables (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, ...).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="processes on this machine (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="machines (default 1)")
    p.add_argument("--node-rank", "--node_rank", type=int, default=0,
                   help="this machine's rank in [0, nnodes)")
    p.add_argument("--master-addr", "--master_addr", default="127.0.0.1",
                   help="address of the machine of rank 0 (node rank 0)")
    p.add_argument("--master-port", "--master_port", type=int, default=None,
                   help="a free port there (default: a free port on one machine, 29500 on "
                        "several)")
    p.add_argument("--standalone", action="store_true",
                   help="one machine, a free port on 127.0.0.1 (torchrun's flag)")
    p.add_argument("--launcher", choices=("auto", "mpiexec", "processes"), default="auto",
                   help="how to start the workers (default: mpiexec when mpi4py is installed)")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script as a module, as python -m does")
    p.add_argument("--no-python", "--no_python", action="store_true",
                   help="run the script as a program, not through python")
    p.add_argument("script", help="the training script (or module, or program)")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.nproc_per_node < 1 or args.nnodes < 1:
        p.error("--nproc-per-node and --nnodes must be at least 1")
    if not 0 <= args.node_rank < args.nnodes:
        p.error(f"--node-rank {args.node_rank} is not in [0, {args.nnodes})")
    if args.standalone:
        args.nnodes, args.node_rank, args.master_addr = 1, 0, "127.0.0.1"
    if args.master_port is None:
        args.master_port = _free_port() if args.nnodes == 1 else 29500
    return args


def worker_command(args) -> list[str]:
    if args.no_python:
        return [args.script, *args.script_args]
    if args.module:
        return [sys.executable, "-u", "-m", args.script, *args.script_args]
    return [sys.executable, "-u", args.script, *args.script_args]


def worker_envs(args) -> list[dict[str, str]]:
    n, world = args.nproc_per_node, args.nproc_per_node * args.nnodes
    return [{"RANK": str(args.node_rank * n + local), "LOCAL_RANK": str(local),
             "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(n),
             "GROUP_RANK": str(args.node_rank), "MASTER_ADDR": args.master_addr,
             "MASTER_PORT": str(args.master_port), "OMP_NUM_THREADS":
             os.environ.get("OMP_NUM_THREADS", "1")} for local in range(n)]


def mpiexec_command(mpiexec: str, cmd: list[str], envs: list[dict[str, str]]) -> list[str]:
    """One MPI job, a segment per worker (``-n 1 -env NAME VALUE ... cmd``), ``:``-separated."""
    full = [mpiexec]
    for i, env in enumerate(envs):
        if i:
            full.append(":")
        full += ["-n", "1"]
        for k, v in env.items():
            full += ["-env", k, v]
        full += cmd
    return full


def _run_mpiexec(full: list[str]) -> int:
    proc = subprocess.Popen(full)
    return _wait_forwarding_signals([proc])


def _run_processes(cmd: list[str], envs: list[dict[str, str]]) -> int:
    procs = [subprocess.Popen(cmd, env={**os.environ, **env}) for env in envs]
    return _wait_forwarding_signals(procs, envs)


def _wait_forwarding_signals(procs, envs=None) -> int:
    """Waits for every worker; the first failure ends the others (SIGTERM, then SIGKILL)."""
    def forward(signum, _frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            codes = [p.poll() for p in procs]
            failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                i, code = failed[0]
                if envs is not None:
                    print(f"ember.distributed.run: worker RANK={envs[i]['RANK']} (pid "
                          f"{procs[i].pid}) exited with code {code}; ending the others",
                          file=sys.stderr, flush=True)
                _end(procs)
                return code if code > 0 else 128 - code
            if all(c == 0 for c in codes):
                return 0
            time.sleep(0.05)
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _end(procs, grace: float = 5.0) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main(argv=None) -> int:
    args = parse_args(argv)
    cmd, envs = worker_command(args), worker_envs(args)
    mpiexec = find_mpiexec() if args.launcher in ("auto", "mpiexec") else None
    if args.launcher == "mpiexec" and mpiexec is None:
        print("ember.distributed.run: --launcher mpiexec needs mpi4py and mpiexec: pip install "
              "'ember-mp[mpi]'", file=sys.stderr)
        return 2
    if mpiexec is not None:
        return _run_mpiexec(mpiexec_command(mpiexec, cmd, envs))
    return _run_processes(cmd, envs)


if __name__ == "__main__":
    sys.exit(main())
