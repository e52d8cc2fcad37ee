"""The mpi backend under mpiexec: 2 and 4 ranks (4 oversubscribe a 2-core machine), and once
with MPI forced onto TCP (as between machines). The checks themselves are in mpi_checks.py: each
rank compares every collective with a NumPy reference computed from all ranks' inputs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ember
import ember.distributed as dist

pytest.importorskip("mpi4py", reason="the mpi extra (pip install 'ember-mp[mpi]') is not installed")

HERE = Path(__file__).resolve().parent
# MPICH with its TCP network module for every message, even between processes of one machine
# (MPIR_CVAR_NOLOCAL), bound to the loopback interface.
TCP_ENV = {"MPIR_CVAR_NOLOCAL": "1", "MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp",
           "FI_TCP_IFACE": "lo"}


def mpiexec() -> str:
    """The mpiexec of the MPI that mpi4py uses: the MPICH wheel puts it beside python."""
    found = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec (pip install mpich)")
    return found


def run(n: int, what: str, *flags: str, env=None, timeout: float = 60):
    full_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        full_env.pop(var, None)
    return subprocess.run([mpiexec(), *flags, "-n", str(n), sys.executable,
                           str(HERE / "mpi_checks.py"), what], env=full_env, cwd=HERE,
                          capture_output=True, text=True, timeout=timeout)


def assert_ok(proc, n: int, what: str, ranks=None) -> None:
    out = proc.stdout + proc.stderr
    for r in range(n) if ranks is None else ranks:
        assert f"ok {what} rank {r}/{n}:" in out, out[-4000:]


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_match_numpy(n):
    proc = run(n, "collectives")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert_ok(proc, n, "collectives")


def test_collectives_over_tcp():
    proc = run(2, "collectives", env=TCP_ENV)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert_ok(proc, 2, "collectives")


def test_mismatched_ranks_all_raise():
    proc = run(2, "errors")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert_ok(proc, 2, "errors")


def test_a_rank_that_never_comes_times_out():
    # -disable-auto-cleanup: mpiexec lets the other ranks live on when one ends
    proc = run(2, "timeout", "-disable-auto-cleanup")
    assert_ok(proc, 2, "timeout", ranks=[0])


def test_a_rank_that_dies_fails_the_others():
    proc = run(3, "dies", "-disable-auto-cleanup")
    assert_ok(proc, 3, "dies", ranks=[0, 1])


def test_a_rank_that_dies_ends_the_job_under_plain_mpiexec():
    # mpiexec's default: the job ends as soon as one rank fails (no hang, no lost processes)
    proc = run(2, "dies", timeout=30)
    assert proc.returncode != 0


def test_singleton_world_of_one():
    """Without mpiexec, a world of one (MPI's singleton) in a child process."""
    code = ("import ember, ember.distributed as d; d.init_process_group('mpi'); "
            "t = ember.ones(3); d.all_reduce(t, op=d.ReduceOp.MAX); "
            "print(d.get_rank(), d.get_world_size(), d.get_backend(), t.tolist()); "
            "d.destroy_process_group()")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "0 1 mpi [1.0, 1.0, 1.0]"


def test_singletons_cannot_form_a_larger_world():
    code = "import ember.distributed as d; d.init_process_group('mpi', rank=0, world_size=2)"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI", "OMPI", "PMIX"))}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0
    assert "cannot form a world of 2" in proc.stderr and "mpiexec -n 2" in proc.stderr


def test_buffers_are_the_tensors_own_memory():
    """What MPI is handed is the tensor's memory, not a copy (half types as int16 views)."""
    np = pytest.importorskip("numpy")
    from ember.distributed import _mpi

    _mpi.load()
    for dtype in (ember.float32, ember.bfloat16, ember.bool, ember.int64):
        t = ember.zeros(4, 3, dtype=dtype)
        view, _ = _mpi.buffer(t)
        address = np.frombuffer(view, dtype=np.uint8).ctypes.data
        assert address == t.data_ptr(), dtype
    try:
        w = ember.zeros(3, requires_grad=True)
    except ImportError:
        return  # ember-autograd is not installed
    assert np.frombuffer(_mpi.buffer(w)[0], dtype=np.uint8).ctypes.data == w.data_ptr()


def test_mpi_is_available():
    assert dist.is_mpi_available()
