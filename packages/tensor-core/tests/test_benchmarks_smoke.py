"""The benchmark scripts still run: benchmarks/bench_*.py in their --smoke mode (tiny sizes, one
timed call), each in a fresh interpreter, with and without PyTorch as a peer.

Benchmarks are not tests: nothing here looks at a time, only that every row is printed.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"

pytestmark = [
    pytest.mark.slow,  # fresh interpreters that may import torch; not for the sanitizer build
    pytest.mark.skipif(
        not (BENCH / "bench_core.py").is_file(), reason="not run from a checkout with benchmarks/"
    ),
]

CORE_CASES = [
    "a + b, 4 x float32 (per-op overhead)",
    "add(a, b, out=c)",
    "a * b + a",
    "x.sum()",
    "x.sum(dim=1)",
    "softmax(x, dim=1)",
    "x.t().contiguous()",
    "mm, 16x16 @ 16x16 float32",
    "mm, 64x64 @ 64x64 float32",
]


def run_script(name, *args, tmp_path):
    env = dict(os.environ)
    # Benchmark the ember this test sees, wherever it was imported from.
    site = str(Path(ember.__file__).parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH")) if p)
    out_json = tmp_path / f"{name}.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / name), *args, "--json", str(out_json)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, f"{name} {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout, json.loads(out_json.read_text())


@pytest.mark.parametrize("peers", [[], ["--no-torch"]], ids=["all-peers", "no-torch"])
def test_bench_core_smoke(peers, tmp_path):
    stdout, doc = run_script("bench_core.py", "--quick", "--smoke", *peers, tmp_path=tmp_path)
    for case in CORE_CASES:
        assert case in stdout, f"row {case!r} missing from:\n{stdout}"
    assert "summary:" in stdout
    assert doc["mode"] == "smoke"
    cases = {row["case"] for row in doc["rows"]}
    assert all(any(row.startswith(c) for row in cases) for c in CORE_CASES)
    names = {row["peer_name"] for row in doc["rows"]}
    if peers:
        assert "torch" not in names
        assert "NumPy only" in stdout
    for row in doc["rows"]:
        assert row["status"] in ("PASS", "BELOW", "-", "n/a")
        if row["status"] != "n/a":
            assert row["ember_s"] > 0 and row["peer_s"] > 0


@pytest.mark.parametrize("peers", [[], ["--no-torch"]], ids=["all-peers", "no-torch"])
def test_bench_gil_smoke(peers, tmp_path):
    stdout, doc = run_script("bench_gil.py", "--smoke", *peers, tmp_path=tmp_path)
    assert "share of its idle speed" in stdout and "two threads running the op" in stdout
    assert doc["mode"] == "smoke"
    keys = doc["python_share"]
    assert any(k.endswith("/ ember") for k in keys) and any(k.endswith("GIL held") for k in keys)
    has_torch = importlib.util.find_spec("torch") is not None
    assert any(k.endswith("/ torch") for k in keys) == (has_torch and not peers)
    assert all(v >= 0 for v in doc["two_threads"].values())


def test_bench_import_smoke(tmp_path):
    stdout, doc = run_script("bench_import.py", "--smoke", "--no-torch", tmp_path=tmp_path)
    assert "import, whole process" in stdout
    assert "installed size of the ember package folder" in stdout
    assert doc["package_size_bytes"] > 0


@pytest.mark.parametrize("peers", [[], ["--no-torch"]], ids=["all-peers", "no-torch"])
def test_bench_serialization_smoke(peers, tmp_path):
    stdout, doc = run_script("bench_serialization.py", "--smoke", *peers, tmp_path=tmp_path)
    assert "save + load" in stdout and "summary:" in stdout
    assert doc["mode"] == "smoke"


def test_bench_nn_kernels_smoke(tmp_path):
    pytest.importorskip("torch")
    stdout, doc = run_script("bench_nn_kernels.py", "--quick", "--smoke", tmp_path=tmp_path)
    for case in ("conv2d forward", "convolution_backward", "max_pool2d 2x2", "nll_loss(log_softmax"):
        assert case in stdout, f"row {case!r} missing from:\n{stdout}"
    assert all(row["status"] != "n/a" for row in doc["rows"])


def test_bench_cuda_alloc_smoke(tmp_path):
    stdout, doc = run_script("bench_cuda_alloc.py", "--smoke", "--no-torch", tmp_path=tmp_path)
    assert "host backend (C++ loop)" in stdout and "summary:" in stdout
    host = [row for row in doc["rows"] if "host backend" in row["case"]]
    assert host and all(row["ember_s"] > 0 and row["peer_s"] > 0 for row in host)
    gpu = [row for row in doc["rows"] if "host backend" not in row["case"]]
    if not ember.cuda.is_available():  # GPU rows say why they did not run
        assert gpu and all(row["status"] == "n/a" and row["note"] for row in gpu)


def test_bench_cuda_ops_smoke(tmp_path):
    # --smoke runs the CUDA cases on the simulated devices, so ember's path is timed end to end
    stdout, doc = run_script("bench_cuda_ops.py", "--smoke", "--no-torch", tmp_path=tmp_path)
    assert "add, 1024 float32" in stdout and "matmul 64^2" in stdout
    assert all(row["ember_s"] > 0 for row in doc["rows"])


@pytest.mark.parametrize("peers", [[], ["--no-torch"]], ids=["all-peers", "no-torch"])
def test_bench_amp_smoke(peers, tmp_path):
    stdout, doc = run_script("bench_amp.py", "--smoke", *peers, tmp_path=tmp_path)
    for case in ("a + b, 2x2 float32, autocast off", "a @ b, 2x2 float32, autocast on"):
        assert case in stdout, f"row {case!r} missing from:\n{stdout}"
    assert doc["mode"] == "smoke"
    assert all(row["ember_s"] > 0 for row in doc["rows"])


def test_bench_cpp_extension_smoke(tmp_path):
    from ember.utils import cpp_extension

    try:
        cpp_extension._compiler()
    except RuntimeError as e:
        pytest.skip(str(e))
    stdout, doc = run_script("bench_cpp_extension.py", "--smoke", "--no-torch", tmp_path=tmp_path)
    assert "first build (compile+link)" in stdout and "cached load" in stdout
    rows = doc["load_inline"]
    assert all(row["ember_s"] > 0 and row["torch_s"] is None for row in rows.values())


@pytest.mark.parametrize("peers", [[], ["--no-torch"]], ids=["all-peers", "no-torch"])
def test_bench_complex_smoke(peers, tmp_path):
    stdout, doc = run_script("bench_complex.py", "--smoke", *peers, tmp_path=tmp_path)
    for case in ("a * b", "exp(a)", "a.sum()", "a @ b"):
        assert case in stdout, f"row {case!r} missing from:\n{stdout}"
    assert all(row["status"] != "n/a" for row in doc["rows"])


@pytest.mark.parametrize("peers", [[], ["--no-torch"]], ids=["all-peers", "no-torch"])
def test_bench_fft_smoke(peers, tmp_path):
    stdout, doc = run_script("bench_fft.py", "--smoke", *peers, tmp_path=tmp_path)
    for case in ("fft", "rfft", "fft2"):
        assert case in stdout, f"row {case!r} missing from:\n{stdout}"
    assert all(row["status"] != "n/a" for row in doc["rows"])
