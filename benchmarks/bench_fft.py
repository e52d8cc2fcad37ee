"""ember.fft's transforms beside torch.fft (CPU) and numpy.fft, on the same data in one process.
Ratios are peer_time / ember_time (> 1: ember is faster); the rows with a target are the
figures ember commits to.

ember computes a complex transform of a power-of-two length (>= 64 points) over the last dim,
or (up to 1024 points) down an inner dim, and an rfft of >= 256 points over the last dim, with
the core's own kernel (ops/cpu/fft.cpp: Stockham FFTs in SIMD lanes), and the others with
pocketfft (single precision for complex64 / float32, on zero-copy views): SciPy's C++
pocketfft when SciPy is installed (the header says which), else NumPy's gufuncs. The rows
measure the per-call overhead at small sizes and the engines against torch's FFT library (MKL
in the x86 wheels, else pocketfft) at large ones. numpy.fft.fft and fft2, with the default norm,
compute complex64 in double precision (its factor is the int 1): its rows are shown for context
only.

    python benchmarks/bench_fft.py [--quick] [--smoke] [--json PATH] [--threads N] [--no-torch]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402
from bench_core import run_case  # noqa: E402

import ember  # noqa: E402
import ember.fft  # noqa: E402


def sizes() -> dict[str, Any]:
    if H.SETTINGS.smoke:
        return {"fft": [64, 256], "rfft": [256], "fft2": [(16, 16)], "batch": (8, 64)}
    return {"fft": [64, 1024, 1 << 14, 1 << 20], "rfft": [1024, 1 << 20],
            "fft2": [(256, 256), (1024, 1024)], "batch": (256, 1024)}


def _n(n: int) -> str:
    return f"{n >> 20}M" if n >= 1 << 20 and n % (1 << 20) == 0 else str(n)


def complex_inputs(shape: tuple[int, ...], seed: int = 0) -> dict[str, Any]:
    """complex64 arrays of one shape holding the same values in ember, NumPy and torch (each in
    memory of its own library)."""
    np, torch = H.np, H.torch
    re, im = H.inputs(shape, seed)["numpy"], H.inputs(shape, seed + 1000)["numpy"]
    ref = (re + 1j * im).astype(np.complex64)
    return {"numpy": ref, "ember": ember.from_numpy(ref).clone(),
            "torch": torch.from_numpy(ref).clone() if torch is not None else None}


def _close_to(ref):
    """run_case's validate: the whole complex result against NumPy's (the harness's own check
    compares real values)."""
    np = H.np
    scale = float(np.abs(ref).max()) or 1.0

    def validate(result) -> str:
        got = result.numpy()
        if got.dtype != np.complex64:
            return f"dtype {got.dtype}, not complex64"
        if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-4, atol=1e-4 * scale):
            return "differs from numpy.fft"
        return ""

    return validate


def _case(rows: list, case: str, fns: dict, ref, targets: dict) -> None:
    # The harness's check compares the real parts with an absolute tolerance: scaled here to the
    # size of the spectrum (its values grow as sqrt(n)).
    atol = 1e-5 * float(H.np.abs(ref).max())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", getattr(H.np, "exceptions", H.np).ComplexWarning)
        rows += run_case(case, fns, targets, requires=("fft.fft",), validate=_close_to(ref),
                         rtol=1e-3, atol=max(atol, 1e-3))


def bench_fft_1d(sz: dict[str, Any]) -> None:
    torch, np = H.torch, H.np
    rows: list[H.Row] = []
    for n in sz["fft"]:
        x = complex_inputs((n,), seed=n)
        _case(rows, f"fft, {_n(n)} complex64" + (" (per-call overhead)" if n <= 64 else ""), {
            "ember": lambda x=x: ember.fft.fft(x["ember"]),
            "torch": (lambda x=x: torch.fft.fft(x["torch"])) if torch else None,
            "numpy": lambda x=x: np.fft.fft(x["numpy"]),
        }, np.fft.fft(x["numpy"].astype(np.complex128)), {"torch": 0.5 if n <= 64 else 0.8})
    for n in sz["rfft"]:
        x = H.inputs((n,), seed=n + 1)
        _case(rows, f"rfft, {_n(n)} float32", {
            "ember": lambda x=x: ember.fft.rfft(x["ember"]),
            "torch": (lambda x=x: torch.fft.rfft(x["torch"])) if torch else None,
            "numpy": lambda x=x: np.fft.rfft(x["numpy"]),
        }, np.fft.rfft(x["numpy"].astype(np.float64)), {"torch": 0.8})
    rows_, cols = sz["batch"]
    x = complex_inputs((rows_, cols), seed=7)
    _case(rows, f"fft along dim -1, {rows_}x{cols} complex64 (batched)", {
        "ember": lambda: ember.fft.fft(x["ember"]),
        "torch": (lambda: torch.fft.fft(x["torch"])) if torch else None,
        "numpy": lambda: np.fft.fft(x["numpy"]),
    }, np.fft.fft(x["numpy"].astype(np.complex128)), {"torch": 0.8})
    r = H.inputs((rows_, cols), seed=8)
    _case(rows, f"rfft along dim -1, {rows_}x{cols} float32 (batched)", {
        "ember": lambda: ember.fft.rfft(r["ember"]),
        "torch": (lambda: torch.fft.rfft(r["torch"])) if torch else None,
        "numpy": lambda: np.fft.rfft(r["numpy"]),
    }, np.fft.rfft(r["numpy"].astype(np.float64)), {"torch": 0.8})
    H.report("1-d transforms", rows)


def bench_fft_2d(sz: dict[str, Any]) -> None:
    torch, np = H.torch, H.np
    rows: list[H.Row] = []
    for shape in sz["fft2"]:
        x = complex_inputs(shape, seed=shape[0])
        _case(rows, f"fft2, {shape[0]}x{shape[1]} complex64", {
            "ember": lambda x=x: ember.fft.fft2(x["ember"]),
            "torch": (lambda x=x: torch.fft.fft2(x["torch"])) if torch else None,
            "numpy": lambda x=x: np.fft.fft2(x["numpy"]),
        }, np.fft.fft2(x["numpy"].astype(np.complex128)), {"torch": 0.8})
    H.report("2-d transforms", rows)


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_fft: ember.fft vs torch.fft (CPU) and numpy.fft", argv)
    engine = "SciPy's pocketfft" if ember.fft._pocketfft() is not None else "NumPy's pocketfft"
    print(f"ember's FFT engines: the core's kernel (power-of-two length: complex >= 64 along "
          f"rows, <= 1024 down columns; rfft >= 256 along rows), {engine} for the rest")
    sz = sizes()
    bench_fft_1d(sz)
    bench_fft_2d(sz)
    H.summary()
    H.save_json({"sizes": {k: [list(v) if isinstance(v, tuple) else v for v in vs]
                           if isinstance(vs, list) else list(vs) for k, vs in sz.items()}})
    load = H.load_average()
    if load is not None:
        print(f"load average (1 min) after the run: {load:.2f}")
    return 0  # benchmarks report; they do not fail on a slow row


if __name__ == "__main__":
    sys.exit(main())
