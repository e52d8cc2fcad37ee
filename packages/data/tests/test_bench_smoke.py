"""benchmarks/bench_data.py still runs (--smoke: tiny sizes; nothing here looks at a time)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_data.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not BENCH.is_file(), reason="not run from a checkout with benchmarks/"),
]


@pytest.mark.parametrize("peers", [[], ["--no-torch"]], ids=["all-peers", "no-torch"])
def test_bench_data_smoke(peers, tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", *peers, "--json", str(out)],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = [r["case"] for r in json.loads(out.read_text())["rows"]]
    assert len(cases) == 3 and any("2 workers" in c for c in cases)
