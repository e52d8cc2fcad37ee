"""benchmarks/bench_autograd.py and bench_autograd_memory.py still run (--smoke: tiny sizes; no
time or byte count is looked at)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_autograd.py"
MEMORY_SCRIPT = SCRIPT.with_name("bench_autograd_memory.py")


def _env():
    env = dict(os.environ)
    paths = [str(Path(ember.__file__).parent.parent), str(Path(__file__).resolve().parents[1])]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    return env


@pytest.mark.slow
@pytest.mark.skipif(not SCRIPT.is_file(), reason="not run from a checkout with benchmarks/")
def test_bench_autograd_smoke(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--no-torch"], env=_env(),
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for case in ("relu().sum().backward()", "(a@a).tanh()", "MLP 4x64"):
        assert case in proc.stdout


@pytest.mark.slow
@pytest.mark.skipif(not MEMORY_SCRIPT.is_file(), reason="not run from a checkout with benchmarks/")
def test_bench_autograd_memory_smoke(tmp_path):
    pytest.importorskip("ember.nn", reason="the memory benchmark builds its models with ember.nn")
    proc = subprocess.run([sys.executable, str(MEMORY_SCRIPT), "--smoke", "--no-torch"],
                          env=_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for chain in ("relu x2", "norm-gelu-dropout x2"):
        assert f"{chain}, 32x64: RSS after backward, loss referenced" in proc.stdout
