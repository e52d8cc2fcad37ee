"""Runs a check script on two ranks under mpiexec, for the tests of ember.distributed's users."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def run_two_ranks(script: str) -> str:
    """`script` (beside this file) under `mpiexec -n 2`; its output, after checking it exited 0.
    Skips where mpi4py or mpiexec is missing."""
    pytest.importorskip("mpi4py", reason="the mpi extra of ember-mp is not installed")
    mpiexec = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or \
        shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec")
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, str(HERE / script)],
                          env=env, cwd=HERE, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    return out
