"""How fast `import ember` is, against `import torch` and `import numpy`, and how big ember is.

Each import runs in a fresh interpreter (`python -c "import X"`), several times, interleaved
between the libraries; the median wall time of the whole process is kept. A bare `python -c pass`
is timed the same way, so the table also shows the import alone (process time minus startup).
The ratio is torch_time / ember_time: ember should start at least 3x faster than torch.

The size is the sum of the file sizes under the folder of the installed `ember` package (found
through ember.__file__); NumPy and OpenBLAS are separate distributions and are not counted.

    python benchmarks/bench_import.py [--quick] [--smoke] [--json PATH] [--no-torch]
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402

IMPORT_TARGET = 3.0  # torch_time / ember_time
SIZE_TARGET_MB = 10.0


def time_process(code: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def import_times(modules: list[str], runs: int) -> dict[str, float]:
    """Median wall seconds of `python -c "import M"` for each module ("" is a bare interpreter)."""
    codes = {m: (f"import {m}" if m else "pass") for m in modules}
    for code in codes.values():  # once, untimed: fills the page cache, writes __pycache__
        time_process(code)
    times: dict[str, list[float]] = {m: [] for m in modules}
    for _ in range(runs):
        for m, code in codes.items():
            times[m].append(time_process(code))
    return {m: statistics.median(t) for m, t in times.items()}


def package_size(folder: Path) -> tuple[int, list[tuple[int, str]]]:
    """Total bytes of the files under folder (links followed), and the biggest files."""
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if "openblas" not in d.lower() and d != "numpy"]
        for name in names:
            path = Path(root) / name
            try:
                files.append((path.stat().st_size, str(path.relative_to(folder))))
            except OSError:  # a dangling link
                continue
    return sum(s for s, _ in files), sorted(files, reverse=True)[:3]


def main(argv: list[str] | None = None) -> int:
    s = H.setup(
        "bench_import: `import ember` vs `import torch` / `import numpy`", argv, in_process=False
    )
    runs = 1 if s.smoke else 5 if s.quick else 11
    peers = [m for m in ("torch", "numpy") if importlib.util.find_spec(m) is not None]
    if H.torch is None and "torch" in peers:
        peers.remove("torch")  # --no-torch
    t = import_times(["", "ember", *peers], runs)
    print(
        f"fresh interpreters: median of {runs} runs each; bare `python -c pass`: "
        f"{H.fmt_time(t[''])}"
    )
    print()

    rows = [
        H.Row("import, whole process", t["ember"], p, t[p], IMPORT_TARGET if p == "torch" else None)
        for p in peers
    ]
    net = {m: max(t[m] - t[""], 1e-6) for m in ("ember", *peers)}
    rows += [H.Row("import alone (minus startup)", net["ember"], p, net[p]) for p in peers]
    if not peers:
        print("note: neither torch nor numpy is installed: nothing to compare the import with")
    H.report("import time (fresh process)", rows)

    # Not resolved: in a development layout the package's .py files may be links to the sources.
    folder = Path(os.path.abspath(ember.__file__)).parent
    total, biggest = package_size(folder)
    mb = total / 1e6
    mark = "PASS" if mb < SIZE_TARGET_MB else "BELOW"
    print("== installed size of the ember package folder")
    print(f"{mb:.2f} MB in {folder.name}/  (target < {SIZE_TARGET_MB:g} MB)  {mark}")
    for size, name in biggest:
        print(f"  {size / 1e6:8.2f} MB  {name}")
    print()

    H.summary()
    H.save_json(
        {
            "interpreter_startup_s": t[""],
            "package_size_bytes": total,
            "package_size_target_mb": SIZE_TARGET_MB,
            "package_size_status": mark,
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
