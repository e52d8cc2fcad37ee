"""ember's CPU kernels at each instruction-set level this machine runs: DEFAULT (x86-64-v2), AVX2,
AVX512 (csrc/ops/cpu/, chosen at import; EMBER_CPU_CAPABILITY forces a lower one).

Each level runs in its own process (the level is fixed when ember loads); the processes take turns
(DEFAULT, AVX2, AVX512, DEFAULT, ...) and each case keeps its median over the rounds. Times are
CPU seconds of one thread (time.process_time), so other work on the machine adds little noise.
The last column is DEFAULT's time over the widest level's (> 1: the wide copy is faster). Rows
marked "(control)" run code that is not dispatched: their ratio shows the noise.

    python3 benchmarks/bench_cpu_dispatch.py [--quick] [--json PATH]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as H  # noqa: E402

import ember  # noqa: E402

LEVELS = ["DEFAULT", "AVX2", "AVX512"]


def cases(smoke: bool) -> dict:
    import numpy as np

    rng = np.random.default_rng(0)
    k, big, side = (1 << 10, 1 << 12, 32) if smoke else (1 << 16, 1 << 24, 1024)

    def f32(*shape):
        return ember.from_numpy(rng.standard_normal(shape).astype(np.float32))

    a, b, c = f32(k), f32(k), ember.empty(k)
    x, y, z = f32(big), f32(big), ember.empty(big)
    m, rows = f32(side, side), f32(256, 1000)
    d = ember.from_numpy(rng.standard_normal(k))
    img = f32(8, 16, 64, 64) if not smoke else f32(1, 2, 8, 8)
    return {
        f"exp, {k} float32 (in cache)": lambda: ember.exp(a, out=c),
        f"tanh, {k} float32": lambda: ember.tanh(a, out=c),
        f"sigmoid, {k} float32": lambda: ember.sigmoid(a, out=c),
        f"sin, {k} float32 (libm: control)": lambda: ember.sin(a, out=c),
        f"exp, {k} float64": lambda: ember.exp(d),
        f"add, {k} float32": lambda: ember.add(a, b, out=c),
        f"add alpha, {k} float32": lambda: ember.add(a, b, alpha=0.3, out=c),
        f"mul, {big} float32 (memory-bound)": lambda: ember.mul(x, y, out=z),
        f"sum, {k} float32": lambda: a.sum(),
        f"sum, {big} float32": lambda: x.sum(),
        f"sum(dim=1), {side}x{side}": lambda: m.sum(dim=1),
        f"sum(dim=0), {side}x{side}": lambda: m.sum(dim=0),
        f"norm, {k} float32": lambda: ember.linalg.vector_norm(a),
        f"var(dim=1), {side}x{side}": lambda: m.var(dim=1),
        "softmax(dim=1), 256x1000": lambda: ember.softmax(rows, 1),
        "log_softmax(dim=1), 256x1000": lambda: ember.log_softmax(rows, 1),
        f"softmax(dim=0), {side}x{side}": lambda: ember.softmax(m, 0),
        f"amax(dim=1), {side}x{side} (control)": lambda: m.amax(dim=1),
        "max_pool2d 2x2, 8x16x64x64 (control)": lambda: ember.max_pool2d(img, 2),
    }


def child(min_time: float, repeat: int, smoke: bool) -> None:
    ember.set_num_threads(1)
    out = {"capability": ember.backends.cpu.get_cpu_capability(), "times": {}}
    for name, fn in cases(smoke).items():
        fn()
        n = 1
        while True:  # calls per block: a block lasts at least min_time of CPU time
            t0 = time.process_time()
            for _ in range(n):
                fn()
            if time.process_time() - t0 >= min_time or min_time == 0:
                break
            n *= 2
        blocks = []
        for _ in range(repeat):
            t0 = time.process_time()
            for _ in range(n):
                fn()
            blocks.append((time.process_time() - t0) / n)
        out["times"][name] = statistics.median(blocks)
    print(json.dumps(out))


def main() -> int:
    if "--child" in sys.argv:
        _, min_time, repeat, smoke = sys.argv[sys.argv.index("--child"):][:4]
        child(float(min_time), int(repeat), smoke == "1")
        return 0
    s = H.setup(__doc__.splitlines()[0], in_process=False)
    best = ember._C._best_cpu_capability()
    levels = LEVELS[: LEVELS.index(best) + 1]
    rounds = 1 if s.smoke else 3
    times: dict[str, dict[str, list[float]]] = {}
    for _ in range(rounds):
        for level in levels:
            env = dict(os.environ, EMBER_CPU_CAPABILITY=level.lower())
            r = subprocess.run(
                [sys.executable, __file__, "--child", str(s.min_time / 2), str(s.repeat),
                 "1" if s.smoke else "0"],
                env=env, capture_output=True, text=True, check=True,
            )
            got = json.loads(r.stdout)
            assert got["capability"] == level, got["capability"]
            for name, t in got["times"].items():
                times.setdefault(name, {}).setdefault(level, []).append(t)
    print(f"levels: {', '.join(levels)}; {rounds} rounds; CPU time of one thread per call")
    last = "DEFAULT/" + levels[-1]
    head = f"{'case':44s}" + "".join(f"{lv:>12s}" for lv in levels) + f"{last:>16s}"
    print(head)
    print("-" * len(head))
    rows = []
    for name, per in times.items():
        med = {lv: statistics.median(per[lv]) for lv in levels}
        ratio = med["DEFAULT"] / med[levels[-1]]
        print(f"{name:44s}" + "".join(f"{med[lv] * 1e6:10.1f}us" for lv in levels)
              + f"{ratio:15.2f}x")
        rows.append({"case": name, **{f"{lv}_s": med[lv] for lv in levels}, "ratio": ratio})
    load = H.load_average()
    if load is not None:
        print(f"load average (1 min) after the run: {load:.2f}")
    if s.json_path:
        with open(s.json_path, "w") as f:
            json.dump({"script": "bench_cpu_dispatch.py", "machine": H.machine(),
                       "versions": H.versions(), "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
