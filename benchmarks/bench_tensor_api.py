"""The tensor API beyond elementwise ops (indexing, joining, sorting, einsum) beside PyTorch (CPU)
and NumPy, on the same data in one process. Ratios are peer_time / ember_time (> 1: ember is
faster); the rows with a target are the figures ember commits to.

    python benchmarks/bench_tensor_api.py [--quick] [--smoke] [--json PATH] [--threads N]
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
        return {"rows": 1 << 12, "table": (1 << 10, 16), "sort": 1 << 12, "cat": (100, 64),
                "einsum": (4, 16, 16)}
    return {"rows": 1 << 20, "table": (1 << 16, 16), "sort": 1 << 20, "cat": (100, 1 << 14),
            "einsum": (64, 256, 256)}


def bench_indexing(sz: dict[str, Any]) -> None:
    """Advanced-indexing gather: table[idx] with 1M random row indices."""
    torch, np = H.torch, H.np
    n_rows, width = sz["table"]
    table = H.inputs((n_rows, width), seed=10)
    idx_np = np.random.default_rng(11).integers(0, n_rows, size=sz["rows"])
    idx = {"ember": ember.from_numpy(idx_np), "torch": torch.from_numpy(idx_np) if torch else None,
           "numpy": idx_np}
    rows = run_case(
        f"x[idx], {sz['rows']} rows of {n_rows}x{width} float32",
        {
            "ember": lambda: table["ember"][idx["ember"]],
            "torch": (lambda: table["torch"][idx["torch"]]) if torch else None,
            "numpy": lambda: table["numpy"][idx["numpy"]],
        },
        {"torch": 0.8},
    )
    H.report("advanced indexing", rows)


def bench_sort(sz: dict[str, Any]) -> None:
    torch = H.torch
    n = sz["sort"]
    v = H.inputs((n,), seed=12)
    rows = run_case(
        f"sort(x), {n} float32",
        {
            "ember": lambda: ember.sort(v["ember"]).values,
            "torch": (lambda: torch.sort(v["torch"]).values) if torch else None,
            "numpy": lambda: H.np.sort(v["numpy"]),
        },
        {"torch": 0.8},
        requires=("sort",),
    )
    H.report("sorting", rows)


def bench_cat(sz: dict[str, Any]) -> None:
    torch, np = H.torch, H.np
    count, length = sz["cat"]
    parts = [H.inputs((length,), seed=100 + i) for i in range(count)]
    rows = run_case(
        f"cat of {count} tensors of {length} float32",
        {
            "ember": lambda: ember.cat([p["ember"] for p in parts]),
            "torch": (lambda: torch.cat([p["torch"] for p in parts])) if torch else None,
            "numpy": lambda: np.concatenate([p["numpy"] for p in parts]),
        },
        {"torch": 0.8},
        requires=("cat",),
    )
    H.report("joining", rows)


def bench_einsum(sz: dict[str, Any]) -> None:
    torch, np = H.torch, H.np
    b, i, j = sz["einsum"]
    x, y = H.inputs((b, i, j), seed=13), H.inputs((b, j, j), seed=14)
    rows = run_case(
        f"einsum('bij,bjk->bik'), {b}x{i}x{j} float32",
        {
            "ember": lambda: ember.einsum("bij,bjk->bik", x["ember"], y["ember"]),
            "torch": (
                (lambda: torch.einsum("bij,bjk->bik", x["torch"], y["torch"])) if torch else None
            ),
            "numpy": lambda: np.matmul(x["numpy"], y["numpy"]),
        },
        {"torch": 0.8},
        requires=("einsum",),
        settle=0.2,  # BLAS calls: let the previous library's OpenBLAS workers stop spinning
        rtol=1e-3,
        atol=1e-3 * j,
    )
    H.report("einsum", rows)


def main(argv: list[str] | None = None) -> int:
    H.setup("bench_tensor_api: indexing, sorting, joining, einsum vs PyTorch (CPU) and NumPy", argv)
    sz = sizes()
    bench_indexing(sz)
    bench_sort(sz)
    bench_cat(sz)
    bench_einsum(sz)
    H.summary()
    H.save_json({"sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in sz.items()}})
    return 0  # benchmarks report; they do not fail on a slow row


if __name__ == "__main__":
    sys.exit(main())
