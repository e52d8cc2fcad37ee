"""What autograd keeps: ember beside PyTorch (CPU) on a large MLP chain, each library in its own
child process (RSS is per process), the children interleaved (ember, torch, ember, ...) and the
medians kept.

Two chains of ``depth`` blocks of width ``width`` on a batch of ``batch`` rows, then a linear
classifier and cross-entropy, built from one definition over ``ember.nn`` or ``torch.nn``:
  - ``relu``: Linear + ReLU;
  - ``norm-gelu-dropout``: Linear + LayerNorm + GELU + Dropout(0.1).
Per chain and library:
  - saved by the forward: the bytes of the distinct storages the graph keeps for backward,
    parameters and inputs left out, counted through ``saved_tensors_hooks`` (a pack hook that
    keeps the tensor itself, so nothing changes but the count). Exact in both libraries.
  - after forward / after backward: RSS above the warm baseline (one training step done, the
    gradients set to None, ``gc.collect()`` and ``malloc_trim(0)`` before each reading) with the
    loss still referenced. After backward, what is left is the loss and the gradients: the
    target is ember within 10% of torch (ratio torch/ember >= 0.91).
  - training loop, steady state: SGD with momentum, 2 warm-up steps, then the peak RSS
    (VmHWM, reset through /proc/self/clear_refs) of 4 steps, above the RSS the process had
    before its first step (libraries imported, model, optimizer and data built): target not
    above torch's (ratio >= 1). The absolute peak RSS (which also holds each library's own
    code and buffers: torch's are about 200 MiB larger) is shown for context.
  - the median time of a steady-state step, for context.
Ratios are torch / ember: above 1, ember holds less (or is faster).

    python benchmarks/bench_autograd_memory.py [--quick] [--smoke] [--json PATH] [--threads N]
        [--no-torch]

Linux only (/proc/self/statm, /proc/self/clear_refs, glibc's malloc_trim); elsewhere the rows
print n/a.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The harness imports torch when it is installed: only the parent loads it, so that an ember
# child's RSS holds ember alone.
H = None

CHAINS = ("relu", "norm-gelu-dropout")
WARMUP_STEPS, STEADY_STEPS = 2, 4


# ---- the child: one library, one chain ----

def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _settled_rss(libc) -> int:
    """RSS once garbage is collected and malloc has handed its free pages back."""
    gc.collect()
    if libc is not None:
        libc.malloc_trim(0)
    return _rss()


def build(m, chain: str, depth: int, width: int, classes: int):
    """The model, from the library module `m` (ember or torch): one definition for both."""
    nn = m.nn
    layers = []
    for _ in range(depth):
        layers.append(nn.Linear(width, width))
        if chain == "relu":
            layers.append(nn.ReLU())
        else:
            layers += [nn.LayerNorm(width), nn.GELU(), nn.Dropout(0.1)]
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def _storage(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def child(lib: str, chain: str, depth: int, width: int, batch: int, classes: int,
          threads: int) -> dict:
    if lib == "torch":
        import torch as m
    else:
        import ember as m
        import ember.nn  # noqa: F401
        import ember.optim  # noqa: F401
    m.set_num_threads(threads)
    F = m.nn.functional
    libc = _libc()
    m.manual_seed(0)
    model = build(m, chain, depth, width, classes)
    opt = m.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = m.randn(batch, width)
    y = m.randint(0, classes, (batch,))
    params = list(model.parameters())

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    res = {}
    before_training = _settled_rss(libc)

    # saved by the forward: distinct storages the pack hook sees, parameters and inputs left out
    known = {_storage(p) for p in params} | {_storage(x), _storage(y)}
    seen = {}

    def pack(t):
        k = _storage(t)
        if k not in known:
            seen[k] = k[1]
        return t

    with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = F.cross_entropy(model(x), y)
    res["saved"] = sum(seen.values())
    del loss
    seen.clear()

    step()  # warm: lazy initialisation, the optimizer's state, malloc's arenas
    opt.zero_grad(set_to_none=True)
    base = _settled_rss(libc)
    loss = F.cross_entropy(model(x), y)
    res["after_forward"] = _settled_rss(libc) - base
    loss.backward()
    res["after_backward"] = _settled_rss(libc) - base
    del loss
    opt.zero_grad(set_to_none=True)

    for _ in range(WARMUP_STEPS - 1):
        step()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    times = []
    for _ in range(STEADY_STEPS):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    peak = _status_bytes("VmHWM")
    res["loop_peak_growth"] = peak - before_training
    res["loop_peak_rss"] = peak
    res["step_s"] = statistics.median(times)
    return res


# ---- the parent ----

def _run_child(lib: str, chain: str, sizes: dict, threads: int) -> dict:
    env = dict(os.environ)
    if lib == "torch" and threads > 1:
        env["OMP_WAIT_POLICY"] = "PASSIVE"  # its idle OpenMP workers would spin on our cores
    cmd = [sys.executable, __file__, "--_child", lib, chain, str(sizes["depth"]),
           str(sizes["width"]), str(sizes["batch"]), str(sizes["classes"]), str(threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, env=env)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"{lib} child failed: {tail[0]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


METRICS = [  # key, row label, target (torch/ember), unit
    ("saved", "saved by the forward (distinct storages)", None, "B"),
    ("after_forward", "RSS after forward (above warm baseline)", None, "B"),
    ("after_backward", "RSS after backward, loss referenced", 0.909, "B"),  # within 10%
    ("loop_peak_growth", "training loop: steady-state peak RSS above start", 1.0, "B"),
    ("loop_peak_rss", "training loop: steady-state peak RSS (absolute)", None, "B"),
    ("step_s", "training step time (median)", None, "s"),
]


def bench_chain(chain: str, sizes: dict, repeat: int, threads: int) -> list[H.Row]:
    libs = ["ember"] + (["torch"] if H.torch is not None else [])
    runs: dict[str, list[dict]] = {lib: [] for lib in libs}
    label = f"{chain} x{sizes['depth']}, {sizes['batch']}x{sizes['width']}"
    try:
        for _ in range(repeat):
            for lib in libs:  # interleaved: a drift of the machine falls on both alike
                runs[lib].append(_run_child(lib, chain, sizes, threads))
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return [H.Row(f"{label}: {name}", None, "torch", None, target, str(exc)[:100], unit)
                for _, name, target, unit in METRICS]
    med = {lib: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for lib, rs in runs.items()}
    rows = []
    for key, name, target, unit in METRICS:
        rows.append(H.Row(f"{label}: {name}", med["ember"][key], "torch",
                          med["torch"][key] if "torch" in med else None, target,
                          "" if "torch" in med else "torch not installed", unit))
    return rows


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--_child"]:
        lib, chain = argv[1], argv[2]
        depth, width, batch, classes, threads = (int(a) for a in argv[3:8])
        print(json.dumps(child(lib, chain, depth, width, batch, classes, threads)))
        return 0
    global H
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _harness

    H = _harness
    s = H.setup("bench_autograd_memory: what autograd keeps, ember vs PyTorch (CPU), one child "
                "process per library and run", argv, in_process=False)
    print(f"threads: {s.threads} for each library in its child"
          + (" (torch with OMP_WAIT_POLICY=PASSIVE)" if s.threads > 1 else ""))
    if s.smoke:
        sizes = dict(depth=2, width=64, batch=32, classes=10)
    else:
        sizes = dict(depth=8, width=1024, batch=4096, classes=1000)
    repeat = 1 if s.smoke or s.quick else 3
    print(f"children per library and chain: {repeat} (medians)\n")
    if not (os.path.exists("/proc/self/clear_refs") and os.path.exists("/proc/self/statm")):
        H.report("autograd memory", [H.Row("MLP chains", None, "torch", None, None,
                                           "needs Linux's /proc/self/statm and clear_refs")])
    else:
        for chain in CHAINS:
            H.report(f"MLP chain: {chain}", bench_chain(chain, sizes, repeat, s.threads))
    H.summary()
    H.save_json({"sizes": sizes, "repeat": repeat})
    return 0


if __name__ == "__main__":
    sys.exit(main())
