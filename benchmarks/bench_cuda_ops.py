"""CUDA tensors against PyTorch CUDA: element-wise bandwidth and large matrix products.

- add of 256M float32 (three 1 GiB streams): bytes moved per second, target >= 0.9 of torch's;
- 8192 x 8192 float32 matmul, target >= 0.9 of torch's rate;
- small ops (100 ops on 16 floats, then one synchronise): what one op costs on the way to the GPU,
  target: within 1.5x of torch's time (ratio >= 0.67). The elementwise ops run the core's
  run-time compiled kernels, launched from C++; each small case is timed on ember.cuda's CuPy
  path too (EMBER_CUDA_COMPILED_KERNELS=0), the way every op went before, for comparison.

Each case runs ember and torch alternately in one process and synchronises the device around
every timed block. Without a GPU (and CuPy) the rows print n/a with the reason; ``--smoke`` runs
the cases on ember.cuda's simulated devices at tiny sizes, to keep the script itself working.

    python benchmarks/bench_cuda_ops.py [--quick] [--smoke] [--json PATH] [--no-torch]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402
import ember.cuda  # noqa: E402


def gpu_reason() -> str | None:
    if not ember.cuda.is_available():
        return "no CUDA GPU (" + ember._C._cuda_unavailable_reason().split(":")[0] + ")"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "CuPy not installed (pip install cupy-cuda12x)"
    return None


def on_cupy_path(fn):
    """fn run with the elementwise ops on ember.cuda's CuPy path (the core's kernels off)."""

    def run():
        ember._C._cuda_set_compiled_kernels(False)
        try:
            fn()
        finally:
            ember._C._cuda_set_compiled_kernels(True)

    return run


def synced(fn, *sync):
    def run():
        fn()
        for s in sync:
            s()

    return run


def main(argv: list[str] | None = None) -> int:
    H.setup(__doc__.splitlines()[0], argv)
    smoke = H.SETTINGS.smoke
    reason = None if smoke else gpu_reason()
    if smoke:
        ember.cuda._use_host_backend(256 << 20)
    torch = H.torch
    torch_gpu = torch is not None and not smoke and torch.cuda.is_available()
    n_add = 1 << 10 if smoke else 1 << 28
    n_mm = 64 if smoke else 8192
    rows = []
    if reason:
        rows.append(H.Row(f"add, {n_add} float32", None, "torch cuda", None, 0.9, reason))
        rows.append(H.Row(f"matmul {n_mm}^2 float32", None, "torch cuda", None, 0.9, reason))
        rows.append(H.Row("100 x add of 16 float32", None, "torch cuda", None, 1 / 1.5, reason))
    else:
        a, b = ember.rand(n_add, device="cuda"), ember.rand(n_add, device="cuda")
        x, y = ember.rand(n_mm, n_mm, device="cuda"), ember.rand(n_mm, n_mm, device="cuda")
        sync = ember.cuda.synchronize
        fns_add = {"ember": synced(lambda: a + b, sync)}
        fns_mm = {"ember": synced(lambda: x @ y, sync)}
        if torch_gpu:
            ta, tb = torch.rand(n_add, device="cuda"), torch.rand(n_add, device="cuda")
            tx, ty = torch.rand(n_mm, n_mm, device="cuda"), torch.rand(n_mm, n_mm, device="cuda")
            fns_add["torch"] = synced(lambda: ta + tb, torch.cuda.synchronize)
            fns_mm["torch"] = synced(lambda: tx @ ty, torch.cuda.synchronize)
        note = "" if torch_gpu else "torch with CUDA not installed"
        t = H.measure_all(fns_add)
        rows.append(H.Row(f"add, {n_add} float32 ({3 * 4 * n_add / t['ember'] / 1e9:.0f} GB/s)",
                          t["ember"], "torch cuda", t.get("torch"), 0.9, note))
        t = H.measure_all(fns_mm)
        tflops = 2 * n_mm ** 3 / t["ember"] / 1e12
        rows.append(H.Row(f"matmul {n_mm}^2 float32 ({tflops:.1f} TFLOP/s)",
                          t["ember"], "torch cuda", t.get("torch"), 0.9, note))
        u, v = ember.rand(16, device="cuda"), ember.rand(16, device="cuda")
        if torch_gpu:
            tu, tv = torch.rand(16, device="cuda"), torch.rand(16, device="cuda")
        small = {
            "add": lambda p, q: p + q,
            "mul by a number": lambda p, q: p * 2.0,
            "exp": lambda p, q: p.exp(),
            "ge": lambda p, q: p >= q,
            "in-place add_": lambda p, q: p.add_(q),
        }
        for label, op in small.items():
            fns = {"ember": synced(lambda op=op: [op(u, v) for _ in range(100)], sync),
                   "cupy path": synced(on_cupy_path(lambda op=op: [op(u, v) for _ in range(100)]),
                                       sync)}
            if torch_gpu:
                fns["torch"] = synced(lambda op=op: [op(tu, tv) for _ in range(100)],
                                      torch.cuda.synchronize)
            t = H.measure_all(fns)
            case = f"100 x {label} of 16 float32 ({t['ember'] / 100 * 1e6:.1f} us per op)"
            rows.append(H.Row(case, t["ember"], "torch cuda", t.get("torch"), 1 / 1.5, note))
            rows.append(H.Row(case, t["ember"], "ember's CuPy path", t["cupy path"], None))
        del a, b, x, y, u, v
    H.report("CUDA tensors: ember vs torch", rows)
    H.summary()
    H.save_json()
    if smoke:
        import gc

        gc.collect()
        ember.cuda._use_host_backend(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
