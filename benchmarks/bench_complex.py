"""Complex tensors (complex64) beside PyTorch (CPU) and NumPy, on the same data in one process:
elementwise arithmetic and math, a reduction, the parts as views, and matmul through OpenBLAS's
cgemm. Ratios are peer_time / ember_time (> 1: ember is faster).

    python benchmarks/bench_complex.py [--quick] [--smoke] [--json PATH] [--threads N]
                                       [--no-torch]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402
from bench_core import run_case  # noqa: E402

import ember  # noqa: E402


def sizes() -> dict[str, Any]:
    if H.SETTINGS.smoke:
        return {"n": 1 << 10, "mm": 32}
    return {"n": 1 << 20, "mm": 512}


def complex_inputs(shape: tuple[int, ...], seed: int) -> dict[str, Any]:
    """complex64 arrays of one shape with the same values in ember, NumPy and torch (each a copy
    in its own library's memory)."""
    re, im = H.inputs(shape, seed), H.inputs(shape, seed + 1000)
    out: dict[str, Any] = {"numpy": re["numpy"] + 1j * im["numpy"]}
    out["ember"] = ember.from_numpy(out["numpy"]).clone()
    if H.torch is not None:
        out["torch"] = H.torch.from_numpy(out["numpy"]).clone()
    return out


def case(title: str, fn, x: dict[str, Any], y: dict[str, Any] | None = None, **kw) -> list:
    """One row per peer of fn(library_module, x[, y]) for ember, torch and numpy."""
    torch, np = H.torch, H.np

    def bind(lib, name):
        args = (x[name],) if y is None else (x[name], y[name])
        return lambda: fn(lib, *args)

    return run_case(title, {"ember": bind(ember, "ember"),
                            "torch": bind(torch, "torch") if torch else None,
                            "numpy": bind(np, "numpy")}, {}, **kw)


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_complex: complex64 tensors vs PyTorch (CPU) and NumPy", argv)
    sz = sizes()
    n, m = sz["n"], sz["mm"]
    a, b = complex_inputs((n,), 1), complex_inputs((n,), 2)
    rows = []
    rows += case(f"a * b, {n} complex64", lambda lib, p, q: p * q, a, b)
    rows += case(f"a / b, {n} complex64", lambda lib, p, q: p / q, a, b)
    rows += case(f"a + 2j, {n} complex64", lambda lib, p: p + 2j, a)
    rows += case(f"exp(a), {n} complex64", lambda lib, p: lib.exp(p), a, rtol=1e-4)
    rows += case(f"abs(a), {n} complex64", lambda lib, p: lib.abs(p), a)
    rows += case(f"sqrt(a), {n} complex64", lambda lib, p: lib.sqrt(p), a, rtol=1e-4)
    rows += case(f"a.sum(), {n} complex64", lambda lib, p: p.sum(), a, rtol=1e-3, atol=1e-1)
    rows += case(f"a.real * 2 (a view), {n} complex64", lambda lib, p: p.real * 2, a)
    H.report("complex elementwise and reductions", rows)
    x, y = complex_inputs((m, m), 3), complex_inputs((m, m), 4)
    mm = case(f"a @ b, {m}x{m} complex64", lambda lib, p, q: p @ q, x, y, settle=0.2,
              rtol=1e-3, atol=1e-3 * m)
    H.report("complex matmul", mm)
    H.summary()
    H.save_json({"sizes": sz})
    return 0  # benchmarks report; they do not fail on a slow row


if __name__ == "__main__":
    sys.exit(main())
