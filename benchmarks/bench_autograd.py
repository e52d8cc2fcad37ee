"""ember.autograd beside PyTorch (CPU): forward + backward, in one process run, as ratios.

  1. per-op overhead: ``(x * w + 1.0).relu().sum().backward()`` on 4-element tensors (what a
     Python engine costs: hook -> node -> reverse sweep);
  2. ``(a @ a).tanh().sum().backward()`` at 512x512 (compute-bound);
  3. peak memory of forward + backward of a 50-layer 1024-wide MLP (matmul + relu, batch 64):
     each library runs in its own subprocess; the peak RSS (VmHWM, reset through
     /proc/self/clear_refs) above the RSS before the forward pass, for a first step (the weights'
     .grad are created by it: 200 MiB of the figure in both libraries). The ratio is torch/ember, so
     >= 1/1.2 means ember needs at most 1.2x PyTorch's memory.

    python benchmarks/bench_autograd.py [--quick] [--smoke] [--json PATH] [--threads N] [--no-torch]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

import ember  # noqa: E402


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:100]


def bench_small() -> list[H.Row]:
    torch = H.torch
    x = ember.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    w = ember.tensor([0.5, -1.0, 2.0, 1.0], requires_grad=True)

    def e():
        (x * w + 1.0).relu().sum().backward()

    fns = {"ember": e}
    if torch is not None:
        tx = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        tw = torch.tensor([0.5, -1.0, 2.0, 1.0], requires_grad=True)

        def t():
            (tx * tw + 1.0).relu().sum().backward()

        fns["torch"] = t
    try:
        e()
    except Exception as exc:  # noqa: BLE001
        return [H.Row("(x*w+1).relu().sum().backward(), 4 x float32", None, "torch", None, 0.67,
                      _reason(exc))]
    times = H.measure_all(fns)
    return [H.Row("(x*w+1).relu().sum().backward(), 4 x float32", times["ember"], "torch",
                  times.get("torch"), 0.67, "" if torch is not None else "torch not installed")]


def bench_matmul(side: int) -> list[H.Row]:
    torch = H.torch
    a_np = H.inputs((side, side), seed=7)
    a = (a_np["ember"] * (1.0 / side ** 0.5)).requires_grad_(True)

    def e():
        (a @ a).tanh().sum().backward()

    fns = {"ember": e}
    if torch is not None:
        ta = (a_np["torch"] * (1.0 / side ** 0.5)).requires_grad_(True)

        def t():
            (ta @ ta).tanh().sum().backward()

        fns["torch"] = t
    e()
    times = H.measure_all(fns, settle=0.2)
    if torch is not None:
        a.grad = None
        ta.grad = None
        e()
        t()
        err = H.check_close("matmul backward", {"ember": a.grad, "torch": ta.grad.numpy()},
                            rtol=1e-3, atol=1e-3 * side)
        if err:
            return [H.Row(f"(a@a).tanh().sum().backward(), {side}x{side}", None, "torch", None,
                          0.9, err)]
    return [H.Row(f"(a@a).tanh().sum().backward(), {side}x{side} float32", times["ember"],
                  "torch", times.get("torch"), 0.9, "" if torch is not None else
                  "torch not installed")]


# ---- peak memory, in a subprocess per library ----

def _rss_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def _mlp_peak(lib: str, layers: int, width: int, batch: int) -> dict:
    """Runs in the child: returns the peak RSS growth (bytes) of one forward + backward."""
    if lib == "torch":
        import torch as m

        m.manual_seed(0)
        ws = [(m.randn(width, width) / width ** 0.5).requires_grad_() for _ in range(layers)]
        x = m.randn(batch, width)
    else:
        m = ember
        ws = [(m.randn(width, width) / width ** 0.5).requires_grad_() for _ in range(layers)]
        x = m.randn(batch, width)

    def step(ws, x):
        h = x
        for w in ws:
            h = (h @ w).relu()
        h.sum().backward()

    # Warm the libraries (BLAS buffers, thread pools, autograd machinery) on a small net, so
    # that the measured step counts the step's own memory: activations, saved tensors, grads.
    small = [(m.randn(64, 64) / 8.0).requires_grad_() for _ in range(3)]
    step(small, m.randn(8, 64))
    del small
    import gc

    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = _rss_kb("VmRSS")
    step(ws, x)
    peak = _rss_kb("VmHWM")
    return {"peak_bytes": (peak - before) * 1024}


def bench_memory(layers: int, width: int, batch: int) -> list[H.Row]:
    if not os.path.exists("/proc/self/clear_refs"):
        return [H.Row("MLP fwd+bwd peak memory", None, "torch", None, 1 / 1.2,
                      "needs Linux's /proc/self/clear_refs")]
    res = {}
    for lib in ["ember"] + (["torch"] if H.torch is not None else []):
        proc = subprocess.run(
            [sys.executable, __file__, "--_mem-child", lib, str(layers), str(width), str(batch)],
            capture_output=True, text=True, timeout=600, env=dict(os.environ))
        if proc.returncode != 0:
            return [H.Row("MLP fwd+bwd peak memory", None, "torch", None, 1 / 1.2,
                          f"{lib} child failed: {proc.stderr.strip().splitlines()[-1:]}")]
        res[lib] = json.loads(proc.stdout.strip().splitlines()[-1])["peak_bytes"]
    mb = {k: v / 2 ** 20 for k, v in res.items()}
    print(f"peak RSS growth, forward + backward, {layers} x {width} MLP, batch {batch}: "
          + ", ".join(f"{k} {v:.1f} MiB" for k, v in mb.items()))
    # Report bytes as "seconds" so that the harness's ratio is torch/ember.
    return [H.Row(f"MLP {layers}x{width} batch {batch}: peak MiB (shown as s)", mb["ember"],
                  "torch", mb.get("torch"), 1 / 1.2,
                  "memory, not time: ratio = torch MiB / ember MiB")]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--_mem-child"]:
        lib, layers, width, batch = argv[1], int(argv[2]), int(argv[3]), int(argv[4])
        print(json.dumps(_mlp_peak(lib, layers, width, batch)))
        return 0
    s = H.setup("bench_autograd: ember.autograd vs PyTorch (CPU), forward + backward", argv)
    side = 64 if s.smoke else 512
    layers, width, batch = (4, 64, 8) if s.smoke else (50, 1024, 64)
    H.report("per-op overhead (small tensors)", bench_small())
    H.report("matrix product + tanh, forward + backward", bench_matmul(side))
    H.report("peak memory (RSS high-water growth, own process each)",
             bench_memory(layers, width, batch))
    H.summary()
    H.save_json({"sizes": {"side": side, "mlp": [layers, width, batch]}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
