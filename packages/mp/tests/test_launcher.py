"""python -m ember.distributed.run: torchrun's environment, through mpiexec or plain processes,
one or several "machines" (launchers on this machine), and a failing worker ending the rest."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ember.distributed import run

HERE = Path(__file__).resolve().parent


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(*args, timeout=90):
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")}
    return subprocess.Popen([sys.executable, "-m", "ember.distributed.run", *args], env=env,
                            cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc, timeout=90):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out + err


def needs_mpi():
    pytest.importorskip("mpi4py", reason="the mpi extra of ember-mp is not installed")
    if run.find_mpiexec() is None:
        pytest.skip("no mpiexec")


def test_environment_and_commands():
    args = run.parse_args(["--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "3",
                           "--master-addr", "10.0.0.1", "train.py", "--lr", "0.1"])
    envs = run.worker_envs(args)
    assert [e["RANK"] for e in envs] == ["3", "4", "5"]
    assert [e["LOCAL_RANK"] for e in envs] == ["0", "1", "2"]
    assert {e["WORLD_SIZE"] for e in envs} == {"6"} and envs[0]["MASTER_PORT"] == "29500"
    assert envs[0]["GROUP_RANK"] == "1" and envs[0]["LOCAL_WORLD_SIZE"] == "3"
    cmd = run.worker_command(args)
    assert cmd[-3:] == ["train.py", "--lr", "0.1"]
    full = run.mpiexec_command("mpiexec", cmd, envs)
    assert full.count(":") == 2 and full.count("-n") == 3
    seg = full[1:full.index(":")]
    assert seg[:2] == ["-n", "1"] and seg[seg.index("RANK") + 1] == "3"
    one = run.parse_args(["--standalone", "--nproc_per_node", "2", "-m", "pkg.train"])
    assert one.master_addr == "127.0.0.1" and one.master_port != 29500
    assert run.worker_command(one)[-2:] == ["-m", "pkg.train"]
    with pytest.raises(SystemExit):
        run.parse_args(["--nnodes", "2", "--node-rank", "2", "x.py"])


def test_processes_shm():
    code, out = finish(launch("--launcher", "processes", "--nproc-per-node", "3",
                              "launch_worker.py", "shm"))
    assert code == 0, out
    for r in range(3):
        assert f"worker {r}/3 local {r} backend shm ok" in out, out


def test_a_failing_worker_ends_the_others():
    code, out = finish(launch("--launcher", "processes", "--nproc-per-node", "2",
                              "launch_worker.py", "shm", "fail"))
    assert code == 7, out
    assert "worker RANK=1" in out and "exited with code 7" in out, out


def test_mpiexec_mpi():
    needs_mpi()
    code, out = finish(launch("--nproc-per-node", "2", "launch_worker.py", "mpi"))
    assert code == 0, out
    for r in range(2):
        assert f"worker {r}/2 local {r} backend mpi ok" in out, out
    code, out = finish(launch("--nproc-per-node", "2", "launch_worker.py", "mpi", "fail"))
    assert code == 7, out


def test_two_machines_join():
    """Two launchers, as on two machines: two MPI jobs that join into one world of 4."""
    needs_mpi()
    port = str(_free_port())
    procs = [launch("--nnodes", "2", "--node-rank", str(n), "--master-port", port,
                    "--nproc-per-node", "2", "launch_worker.py", "mpi") for n in (1, 0)]
    outs = [finish(p) for p in procs]
    text = "".join(o for _, o in outs)
    assert all(c == 0 for c, _ in outs), text
    for r in range(4):
        assert f"worker {r}/4 local {r % 2} backend mpi ok" in text, text
