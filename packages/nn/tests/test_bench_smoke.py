"""The nn benchmark scripts still run: benchmarks/bench_bn_relu.py in its --smoke mode (tiny
sizes, one timed call) in a fresh interpreter. Nothing here looks at a time."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember
from ember._inductor import cpp

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"

pytestmark = [
    pytest.mark.skipif(not (BENCH / "bench_bn_relu.py").is_file(),
                       reason="not run from a checkout with benchmarks/"),
    pytest.mark.skipif(cpp.compiler() is None, reason="no C++ compiler"),
]


def test_bench_bn_relu_smoke(tmp_path):
    env = dict(os.environ)
    site = str(Path(ember.__file__).parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH")) if p)
    env["EMBER_COMPILE_CACHE_DIR"] = str(tmp_path / "cache")
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_bn_relu.py"), "--smoke",
                           "--no-torch", "--json", str(out)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = {r["case"] for r in json.loads(out.read_text())["rows"]}
    assert {"BN + ReLU: compiled, BN+ReLU fused",
            "conv stage: compiled, BN+ReLU fused"} <= cases, cases
