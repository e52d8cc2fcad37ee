"""benchmarks/bench_mp.py still runs (--smoke: tiny sizes; nothing here looks at a time)."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_mp.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not BENCH.is_file(), reason="not run from a checkout with benchmarks/"),
]


@pytest.fixture(autouse=True)
def _alarm():
    """Overrides conftest's 60 s: the script starts several interpreters that import torch."""

    def boom(*_):
        raise TimeoutError("test timed out")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(180)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("peers", [[], ["--no-torch"]], ids=["all-peers", "no-torch"])
def test_bench_mp_smoke(peers, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", *peers, "--json", str(out)],
        capture_output=True, text=True, timeout=170, env=env, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert sum(r["title"] == "scaling" for r in rows) >= 2  # ember and pickle, torch if there
    assert any(r["peer_name"] == "pickle by value" for r in rows)
    assert "scaling:" in proc.stdout and "ember (shared)" in proc.stdout
    assert any(r["case"].startswith("all_reduce SUM") for r in rows)


BENCH_DIST = BENCH.parent / "bench_distributed.py"


def test_bench_distributed_smoke(tmp_path):
    pytest.importorskip("mpi4py", reason="the mpi extra of ember-mp is not installed")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH_DIST), "--smoke", "--json", str(out)],
        capture_output=True, text=True, timeout=170, env=env, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert any("ember mpi" in r["case"] for r in rows)
    try:
        import ember.nn  # noqa: F401
    except ImportError:
        return  # ember-mp tested alone: no DDP rows
    assert any(r["case"].startswith("DDP step") for r in rows)
