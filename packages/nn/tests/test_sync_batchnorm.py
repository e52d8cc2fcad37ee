"""SyncBatchNorm on 2 ranks under mpiexec (sync_bn_checks.py): the whole batch's statistics and
gradients, as one process's BatchNorm over the whole batch."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ember.distributed", reason="ember-mp is not installed")

HERE = Path(__file__).resolve().parent


def test_two_ranks_under_mpiexec():
    pytest.importorskip("mpi4py", reason="the mpi extra of ember-mp is not installed")
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec")
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, str(HERE / "sync_bn_checks.py")],
                          env=env, cwd=HERE, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "ok syncbn rank 0/2" in out and "ok syncbn rank 1/2" in out, out[-4000:]
