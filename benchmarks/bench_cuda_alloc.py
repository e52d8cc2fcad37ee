"""The CUDA caching allocator: steady-state alloc+free of 1 KiB .. 64 MiB blocks.

- Host backend (every machine): the allocator's bookkeeping over host memory, against plain
  aligned_alloc/free of the same sizes. Both loops run in C++ (`_bench_alloc_free`), so the
  allocator's own cost is timed, not Python's. This is the caching speed-up one can see without
  a GPU; glibc's malloc is itself a caching allocator for small sizes, so the gap shows at the
  sizes it hands to mmap.
- GPU (when one is usable): ember's allocator from Python (`ember.cuda.caching_allocator_alloc`/
  `_delete`) against torch's same calls (target >= 0.9 of torch's rate), and ember's allocator in
  a C++ loop against raw cudaMalloc/cudaFree in the same loop (target >= 10x). Without a GPU these
  rows print n/a with the reason.

    python benchmarks/bench_cuda_alloc.py [--quick] [--smoke] [--json PATH] [--no-torch]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402
import ember.cuda  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20


def size_name(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n // KiB} KiB"


def sizes() -> list[int]:
    if H.SETTINGS.smoke:
        return [KiB, 64 * MiB]
    return [KiB, 64 * KiB, MiB, 16 * MiB, 64 * MiB]


def bench_host(loop: int) -> None:
    alloc = ember._C._cuda_host_allocator_testing(capacity=1 << 30)
    rows = []
    for n in sizes():
        times = H.measure_all({
            "ember": lambda n=n: alloc._bench_alloc_free(n, loop, False),
            "raw": lambda n=n: alloc._bench_alloc_free(n, loop, True),
        })
        rows.append(H.Row(f"alloc+free {size_name(n)}, host backend (C++ loop)",
                          times["ember"] / loop, "aligned_alloc/free", times["raw"] / loop))
    H.report("CUDA caching allocator over host memory vs plain aligned_alloc/free", rows)


def gpu_reason() -> str | None:
    """Why the GPU rows cannot run, or None when they can."""
    if not ember.cuda.is_available():
        return "no CUDA GPU (" + ember._C._cuda_unavailable_reason().split(":")[0] + ")"
    if ember._C._cuda_backend_name() != "cudart":
        return "ember.cuda runs over the host backend"
    return None


def bench_gpu(loop: int) -> None:
    reason = gpu_reason()
    torch = H.torch
    torch_gpu = torch is not None and torch.cuda.is_available()
    rows = []
    for n in sizes():
        case = f"alloc+free {size_name(n)}"
        if reason:
            rows.append(H.Row(case + ", from Python", None, "torch.cuda", None, 0.9, reason))
            rows.append(H.Row(case + ", C++ loop", None, "cudaMalloc/cudaFree", None, 10.0, reason))
            continue
        fns = {"ember": lambda n=n, c=ember.cuda: c.caching_allocator_delete(
            c.caching_allocator_alloc(n))}
        if torch_gpu:
            fns["torch"] = lambda n=n, c=torch.cuda: c.caching_allocator_delete(
                c.caching_allocator_alloc(n))
        times = H.measure_all(fns)
        rows.append(H.Row(case + ", from Python", times["ember"], "torch.cuda", times.get("torch"),
                          0.9, "" if torch_gpu else "torch with CUDA not installed"))
        raw_loop = max(1, loop // 100)  # cudaMalloc/cudaFree are slow: fewer pairs per call
        times = H.measure_all({
            "ember": lambda n=n: ember._C._cuda_bench_alloc_free(n, loop, False, -1),
            "raw": lambda n=n, k=raw_loop: ember._C._cuda_bench_alloc_free(n, k, True, -1),
        })
        rows.append(H.Row(case + ", C++ loop", times["ember"] / loop, "cudaMalloc/cudaFree",
                          times["raw"] / raw_loop, 10.0))
    H.report("CUDA caching allocator on the GPU", rows)


def main(argv: list[str] | None = None) -> int:
    H.setup(__doc__.splitlines()[0], argv)
    loop = 10 if H.SETTINGS.smoke else 1000
    bench_host(loop)
    bench_gpu(loop)
    H.summary()
    H.save_json()
    return 0


if __name__ == "__main__":
    sys.exit(main())
