"""examples/train_digits.py (the README's first command) runs end to end in --quick mode."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "train_digits.py"


@pytest.mark.skipif(not EXAMPLE.is_file(), reason="runs from a checkout of the repository only")
def test_train_digits_quick(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("ember.utils.data")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test accuracy" in proc.stdout
    assert (tmp_path / "digits.pt").is_file()
    assert "reloaded model's test accuracy" in proc.stdout


DDP_EXAMPLE = EXAMPLE.parent / "train_digits_ddp.py"


@pytest.mark.skipif(not DDP_EXAMPLE.is_file(), reason="runs from a checkout of the repository only")
@pytest.mark.parametrize("how", ["mpiexec", "launcher-shm"])
def test_train_digits_ddp_quick(tmp_path, how):
    """The data-parallel example on 2 processes, under mpiexec and under the launcher."""
    pytest.importorskip("sklearn")
    pytest.importorskip("ember.utils.data")
    pytest.importorskip("ember.distributed")
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    args = [str(DDP_EXAMPLE), "--quick", "--out", str(tmp_path)]
    if how == "mpiexec":
        pytest.importorskip("mpi4py")
        from ember.distributed import run

        mpiexec = run.find_mpiexec()
        if mpiexec is None:
            pytest.skip("no mpiexec")
        cmd = [mpiexec, "-n", "2", sys.executable, *args]
    else:
        cmd = [sys.executable, "-m", "ember.distributed.run", "--launcher", "processes",
               "--nproc-per-node", "2", *args, "--backend", "shm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "after 1 epoch(s) on 2 process(es)" in proc.stdout, proc.stdout
    assert (tmp_path / "digits.pt").is_file()
