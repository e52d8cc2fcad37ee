"""benchmarks/bench_autograd.py still runs (--smoke: tiny sizes; no time is looked at)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_autograd.py"


@pytest.mark.slow
@pytest.mark.skipif(not SCRIPT.is_file(), reason="not run from a checkout with benchmarks/")
def test_bench_autograd_smoke(tmp_path):
    env = dict(os.environ)
    paths = [str(Path(ember.__file__).parent.parent), str(Path(__file__).resolve().parents[1])]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--no-torch"], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for case in ("relu().sum().backward()", "(a@a).tanh()", "MLP 4x64"):
        assert case in proc.stdout
