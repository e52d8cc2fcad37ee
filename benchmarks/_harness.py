"""The small harness shared by the bench_*.py scripts.

- ``measure(fn)`` / ``measure_all({name: fn})``: median seconds per call. The number of calls per
  timed block is found by autoranging (as ``timeit`` does) until a block lasts ``min_time``; then
  ``repeat`` blocks are timed with the garbage collector off and the median per-call time is kept.
  ``measure_all`` interleaves the blocks of its functions (ember, peer, ember, peer, ...) so that a
  slow drift of the machine (frequency, other load) falls on every library alike.
- ``report(title, rows)``: a table of one row per (case, ember time, peer, peer time, target), with
  the ratio ``peer_time / ember_time`` (> 1 means ember is faster) and PASS / BELOW against the
  target when the row has one.
- ``setup(description)``: the command line every script shares (``--quick``, ``--smoke``,
  ``--json PATH``, ``--threads N``, ``--no-torch``), the thread settings (ember and torch get the
  same count; NumPy is left as it is) and a header naming the machine and the versions.
- ``save_json()``: writes every row reported so far to the ``--json`` path, if one was given.

torch and numpy are optional peers: a missing one is noted and its rows are left out.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

# --------------------------------------------------------------------------------------------------
# The libraries under comparison
import ember  # noqa: E402  (the benchmarks need ember itself; the peers are optional)

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy is one of ember's dependencies
    np = None

try:
    import torch
except ImportError:
    torch = None


@dataclass
class Settings:
    quick: bool = False
    smoke: bool = False
    min_time: float = 0.2  # seconds per timed block
    repeat: int = 7  # timed blocks per function; the median is kept
    threads: int = 1
    json_path: str | None = None
    peers: list[str] = field(default_factory=list)


SETTINGS = Settings()
_RESULTS: list[dict[str, Any]] = []


def setup(description: str, argv: list[str] | None = None, in_process: bool = True) -> Settings:
    """Parses the shared command line, sets the thread counts and prints the header.

    in_process=False: the script times other processes, so the thread and timing lines are left
    out of the header."""
    global torch
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="fewer and shorter timed blocks")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes and one timed call: only checks that every row runs (no useful timings)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results to PATH as JSON")
    parser.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="intra-op threads for ember and torch (default: os.cpu_count())",
    )
    parser.add_argument(
        "--no-torch", action="store_true", help="leave PyTorch out even when it is installed"
    )
    args = parser.parse_args(argv)
    if args.no_torch:
        torch = None  # scripts read the peers as _harness.torch / _harness.np, after setup()

    s = SETTINGS
    s.quick, s.smoke, s.json_path, s.threads = args.quick, args.smoke, args.json, args.threads
    if args.smoke:
        s.min_time, s.repeat = 0.0, 1
    elif args.quick:
        s.min_time, s.repeat = 0.05, 3
    s.peers = [name for name, mod in (("torch", torch), ("numpy", np)) if mod is not None]

    ember.set_num_threads(s.threads)
    if torch is not None:
        torch.set_num_threads(s.threads)

    print(description)
    print(f"machine: {machine()}")
    print(f"versions: {versions()}")
    load = load_average()
    if load is not None:
        busy = load > 0.5 * (os.cpu_count() or 1)
        print(
            f"load average (1 min) before the run: {load:.2f}"
            + ("  -- other work is running: expect noisy timings" if busy else "")
        )
    if in_process:
        print(
            f"threads: ember={ember.get_num_threads()}"
            + (f", torch={torch.get_num_threads()}" if torch is not None else "")
            + ", numpy=default"
        )
        mode = "smoke" if s.smoke else "quick" if s.quick else "full"
        print(f"timing: median of {s.repeat} blocks of >= {s.min_time:g} s each ({mode})")
    if torch is None:
        print("note: PyTorch is not installed (or --no-torch): comparing against NumPy only")
    print()
    return s


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, {platform.system()} {platform.release()}"


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def versions() -> str:
    parts = [f"python {platform.python_version()}", f"ember {getattr(ember, '__version__', '?')}"]
    core = getattr(ember._C, "_blas_core_name", None)
    if core is not None:
        # OPENBLAS_CORETYPE, when set, overrides OpenBLAS's choice (an AVX2 kernel set on an
        # AVX-512 CPU halves GEMM speed): the header says which kernels ran.
        forced = os.environ.get("OPENBLAS_CORETYPE")
        note = f" (OPENBLAS_CORETYPE={forced})" if forced else ""
        parts.append(f"OpenBLAS kernels {core()}{note}")
    if getattr(ember._C, "_onednn_available", None) is not None:
        # oneDNN runs float32 convolutions when installed (and enabled): say whether it did.
        dnnl = (f"oneDNN {ember._C._onednn_version().split()[0]}" if ember._C._onednn_available()
                else "no oneDNN")
        parts.append(dnnl if ember._C._onednn_enabled() else f"{dnnl} (disabled)")
    if torch is not None:
        parts.append(f"torch {torch.__version__}")
    if np is not None:
        parts.append(f"numpy {np.__version__}")
    return ", ".join(parts)


# --------------------------------------------------------------------------------------------------
# Timing


def _time_block(fn: Callable[[], Any], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - t0


def _autorange(fn: Callable[[], Any], min_time: float) -> int:
    """Calls per block so that a block lasts at least min_time (1, 2, 5, 10, 20, 50, ...)."""
    number = 1
    while True:
        for k in (1, 2, 5):
            n = number * k
            if _time_block(fn, n) >= min_time:
                return n
        number *= 10


def measure_all(
    fns: dict[str, Callable[[], Any]],
    *,
    min_time: float | None = None,
    repeat: int | None = None,
    warmup: int = 2,
    settle: float = 0.005,
) -> dict[str, float]:
    """Median seconds per call of each function, timed in interleaved blocks.

    Before each block the harness sleeps `settle` seconds (untimed), so that the worker threads
    of the library timed just before stop spinning and leave the cores to this one. Raise it for
    BLAS calls: OpenBLAS workers spin for up to ~0.1 s after a call (its THREAD_TIMEOUT).
    """
    min_time = SETTINGS.min_time if min_time is None else min_time
    repeat = SETTINGS.repeat if repeat is None else repeat
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for fn in fns.values():  # warm caches, the allocator and the thread pools
            for _ in range(warmup if not SETTINGS.smoke else 1):
                fn()
        numbers = {
            name: _autorange(fn, min_time) if min_time > 0 else 1 for name, fn in fns.items()
        }
        times: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(repeat):
            for name, fn in fns.items():
                if len(fns) > 1 and not SETTINGS.smoke:
                    # Let the previous library's idle worker threads stop spinning, so they do
                    # not take CPU from this one (it matters on small machines).
                    time.sleep(settle)
                times[name].append(_time_block(fn, numbers[name]) / numbers[name])
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: statistics.median(t) for name, t in times.items()}


def measure(fn: Callable[[], Any], *, min_time: float | None = None, repeat: int | None = None):
    """Median seconds per call of fn (autoranged blocks, warmup, GC disabled)."""
    return measure_all({"fn": fn}, min_time=min_time, repeat=repeat)["fn"]


# --------------------------------------------------------------------------------------------------
# Reporting


@dataclass
class Row:
    """One line of a table: ember against one peer on one case.

    ``ember_s`` is None when ember cannot run the case yet; ``note`` then says why.
    ``target`` is the least acceptable ratio peer_s / ember_s, or None for a row shown for context.
    """

    case: str
    ember_s: float | None
    peer_name: str
    peer_s: float | None
    target: float | None = None
    note: str = ""
    unit: str = "s"  # "s": times; "B": bytes (a memory figure; the ratio reads the same way)

    @property
    def ratio(self) -> float | None:
        if self.ember_s is None or self.peer_s is None or self.ember_s <= 0:
            return None
        return self.peer_s / self.ember_s

    @property
    def status(self) -> str:
        if self.ember_s is None or self.peer_s is None:
            return "n/a"
        if self.target is None:
            return "-"
        return "PASS" if self.ratio >= self.target else "BELOW"


def fmt_time(seconds: float | None) -> str:
    if seconds is None or math.isnan(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_bytes(n: float | None) -> str:
    if n is None or math.isnan(n):
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def fmt_value(v: float | None, unit: str) -> str:
    return fmt_bytes(v) if unit == "B" else fmt_time(v)


def report(title: str, rows: list[Row | tuple]) -> list[Row]:
    """Prints one table; rows are Row or tuples (case, ember_s, peer_name, peer_s[, target])."""
    rows = [r if isinstance(r, Row) else Row(*r) for r in rows]
    header = ("case", "ember", "peer", "peer time", "peer/ember", "target", "")
    lines = []
    for r in rows:
        if r.ember_s is None or r.peer_s is None:
            lines.append((r.case, fmt_value(r.ember_s, r.unit), r.peer_name,
                          fmt_value(r.peer_s, r.unit), f"n/a: {r.note}", "", ""))
            continue
        target = f">= {r.target:g}" if r.target is not None else ""
        mark = "" if r.target is None else r.status
        if r.note:
            mark = f"{mark} ({r.note})".strip()
        lines.append(
            (
                r.case,
                fmt_value(r.ember_s, r.unit),
                r.peer_name,
                fmt_value(r.peer_s, r.unit),
                f"{r.ratio:.2f}x",
                target,
                mark,
            )
        )
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    # The n/a note may be long: let it run over instead of widening its column.
    widths[4] = max([len(header[4])] + [len(ln[4]) for ln in lines if not ln[4].startswith("n/a")])
    print(f"== {title}")
    sep = "  "
    print(sep.join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    for ln in lines:
        cells = [
            str(c).ljust(w) if i != 0 else str(c).ljust(w)
            for i, (c, w) in enumerate(zip(ln, widths))
        ]
        cells[1] = str(ln[1]).rjust(widths[1])
        cells[3] = str(ln[3]).rjust(widths[3])
        print(sep.join(cells).rstrip())
    print()
    for r in rows:
        d = asdict(r)
        d.update(title=title, ratio=r.ratio, status=r.status)
        _RESULTS.append(d)
    return rows


def summary() -> int:
    """Prints the rows below target; returns how many there are."""
    below = [r for r in _RESULTS if r["status"] == "BELOW"]
    na = [r for r in _RESULTS if r["status"] == "n/a"]
    checked = [r for r in _RESULTS if r["status"] in ("PASS", "BELOW")]
    print(f"summary: {len(checked) - len(below)}/{len(checked)} rows with a target meet it", end="")
    print(f", {len(na)} n/a" if na else "")
    for r in below:
        print(
            f"  BELOW  {r['title']}: {r['case']} vs {r['peer_name']}: "
            f"{r['ratio']:.2f}x < {r['target']:g}"
        )
    if SETTINGS.smoke:
        print("(smoke run: tiny sizes, the timings mean nothing)")
    return len(below)


def save_json(extra: dict[str, Any] | None = None) -> None:
    if not SETTINGS.json_path:
        return
    doc = {
        "script": os.path.basename(sys.argv[0]),
        "machine": machine(),
        "versions": versions(),
        "threads": SETTINGS.threads,
        "load_average_after": load_average(),
        "mode": "smoke" if SETTINGS.smoke else "quick" if SETTINGS.quick else "full",
        "rows": _RESULTS,
    }
    if extra:
        doc.update(extra)
    with open(SETTINGS.json_path, "w") as f:
        json.dump(doc, f, indent=2)
    print(f"results written to {SETTINGS.json_path}")


# --------------------------------------------------------------------------------------------------
# Inputs: the same values in every library


def has(obj: Any, *names: str) -> bool:
    """True if ember (or obj) has every one of the dotted attribute names."""
    for name in names:
        cur = obj
        for part in name.split("."):
            if not hasattr(cur, part):
                return False
            cur = getattr(cur, part)
    return True


def inputs(shape: tuple[int, ...], seed: int = 0) -> dict[str, Any]:
    """float32 arrays of one shape, holding the same values in ember, NumPy and torch.

    The values are sin(0.7 i + seed) over the flat index i (in [-1, 1], no denormals, no RNG), so
    ember can make them itself while ``ember.from_numpy`` is not there. Each library gets a copy in
    memory from its own allocator (as its users' tensors would be), not a view of NumPy's.
    """
    n = math.prod(shape)
    out: dict[str, Any] = {}
    ref = None
    if np is not None:
        ref = np.sin(np.arange(n, dtype=np.float64) * 0.7 + seed).astype(np.float32).reshape(shape)
        out["numpy"] = ref
    if torch is not None:
        out["torch"] = (
            torch.from_numpy(ref).clone()
            if ref is not None
            else torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + seed).float().reshape(shape)
        )
    if ref is not None and hasattr(ember, "from_numpy"):
        out["ember"] = ember.from_numpy(ref).clone()
    else:
        e = ember.arange(n, dtype=ember.float64)
        out["ember"] = ember.sin(e * 0.7 + seed).to(ember.float32).reshape(shape)
    return out


def to_numpy(t: Any):
    """An ember or torch tensor as a NumPy array, or None when that would be slow or impossible."""
    if np is None:
        return None
    if isinstance(t, (np.ndarray, np.generic, int, float)):
        return np.asarray(t)
    if torch is not None and isinstance(t, torch.Tensor):
        return t.numpy()
    if hasattr(t, "numpy"):
        try:
            return t.numpy()
        except Exception:  # noqa: BLE001 - interop may be partial while it is written
            pass
    if t.numel() <= 1 << 16:
        return np.asarray(t.tolist(), dtype=np.float64)
    return None


def check_close(case: str, results: dict[str, Any], rtol: float = 1e-3, atol: float = 1e-3) -> str:
    """Compares ember's result with the peers' once, before timing: a benchmark of a wrong result
    means nothing. Returns "" or a warning (also printed)."""
    ref_name = next((k for k in ("numpy", "torch") if k in results), None)
    if ref_name is None or "ember" not in results or np is None:
        return ""
    try:
        got, want = to_numpy(results["ember"]), to_numpy(results[ref_name])
    except Exception as e:  # noqa: BLE001 - a check that cannot run must not stop the timing
        print(f"note: {case}: results not compared ({type(e).__name__}: {e})")
        return ""
    if got is None or want is None:
        return ""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        msg = f"warning: {case}: ember's result differs from {ref_name}'s"
        print(msg)
        return msg
    return ""
