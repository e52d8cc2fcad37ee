"""How long a user's C++ op takes to become callable: ``load_inline`` of a small op, the first
time (compile and link) and again from the build cache, in ember and in torch.

Every load runs in a fresh interpreter, as a training script or a DataLoader worker would meet
it, and the child times the ``load_inline`` call alone (not the interpreter's start or the
import of the library). A first build compiles a source no earlier run has seen, into an empty
cache folder; a cached load finds the build that an earlier process left. Targets (absolute, on
the machine the figures are quoted for): first build under 10 s, cached load under 0.2 s. Both
libraries compile one file with the system compiler at their defaults (ember -O2, torch -O3
through ninja); torch's build includes its much larger headers.

    python benchmarks/bench_cpp_extension.py [--quick] [--smoke] [--json PATH] [--no-torch]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as H  # noqa: E402

FIRST_TARGET_S = 10.0
CACHED_TARGET_S = 0.2

# The same op in both libraries: out = x + alpha * y, float32, contiguous.
EMBER_SOURCE = r"""
ember::Tensor scale_add(ember::Tensor x, ember::Tensor y, double alpha) {
  EMBER_CHECK(x.sizes() == y.sizes(), "scale_add: shapes differ: ", x.sizes(), " ", y.sizes());
  ember::Tensor xc = x.contiguous(), yc = y.contiguous(), out = ember::empty_like(xc);
  const float *a = xc.data_ptr<float>(), *b = yc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  ember::parallel_for(0, out.numel(), 16384, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) o[i] = a[i] + static_cast<float>(alpha) * b[i];
  });
  return out;
}
"""

TORCH_SOURCE = r"""
torch::Tensor scale_add(torch::Tensor x, torch::Tensor y, double alpha) {
  TORCH_CHECK(x.sizes() == y.sizes(), "scale_add: shapes differ: ", x.sizes(), " ", y.sizes());
  auto xc = x.contiguous(), yc = y.contiguous();
  auto out = torch::empty_like(xc);
  const float *a = xc.data_ptr<float>(), *b = yc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, out.numel(), 16384, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) o[i] = a[i] + static_cast<float>(alpha) * b[i];
  });
  return out;
}
"""

CHILD = r"""
import json, os, sys, time
lib, folder, name, source = sys.argv[1], sys.argv[2], sys.argv[3], sys.stdin.read()
if lib == "ember":
    import ember as L
    from ember.utils import cpp_extension
    os.environ["EMBER_EXTENSIONS_DIR"] = folder
    kwargs = {}
else:
    import torch as L
    from torch.utils import cpp_extension
    kwargs = {"build_directory": folder}
t0 = time.perf_counter()
m = cpp_extension.load_inline(name, source, functions=["scale_add"], **kwargs)
seconds = time.perf_counter() - t0
x, y = L.ones(5), L.ones(5)
assert m.scale_add(x, y, 2.0).tolist() == [3.0] * 5
print(json.dumps({"seconds": seconds}))
"""


def load_in_child(lib: str, folder: str, name: str, source: str) -> float:
    """Seconds of one load_inline call in a fresh interpreter."""
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    r = subprocess.run([sys.executable, "-c", CHILD, lib, folder, name], input=source,
                       capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"{lib} load_inline failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])["seconds"]


def measure(lib: str, source: str, first_runs: int, cached_runs: int,
            scratch: str) -> tuple[list, list]:
    """First builds (each of a source no run has compiled, in its own empty folder under
    `scratch`), then cached loads of the last one."""
    first, cached = [], []
    for i in range(first_runs):
        folder = tempfile.mkdtemp(prefix=f"{lib}-", dir=scratch)
        # a comment that differs per run and per process: no cache (ccache's included) has it
        unique = f"// run {i} {os.getpid()} {time.time_ns()}\n{source}"
        first.append(load_in_child(lib, folder, "bench_scale_add", unique))
    for _ in range(cached_runs):
        cached.append(load_in_child(lib, folder, "bench_scale_add", unique))
    return first, cached


def main(argv: list[str] | None = None) -> int:
    s = H.setup("bench_cpp_extension: load_inline, first build and cached", argv,
                in_process=False)
    first_runs, cached_runs = (1, 1) if s.smoke else (2, 5) if s.quick else (3, 9)
    libs = [("ember", EMBER_SOURCE)]
    if H.torch is not None:
        libs.append(("torch", TORCH_SOURCE))
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-cpp-extension-") as scratch:
        for lib, source in libs:
            # torch's first build takes tens of seconds: once is enough to place it
            runs = 1 if lib == "torch" else first_runs
            results[lib] = measure(lib, source, runs, cached_runs, scratch)

    print(f"load_inline of a small op in a fresh interpreter; medians of {first_runs} first "
          f"builds (torch: 1) and {cached_runs} cached loads")
    print(f"{'case':<28}{'ember':>10}{'torch':>10}{'target':>10}  status")
    summary = {}
    for k, (label, target) in enumerate((("first build (compile+link)", FIRST_TARGET_S),
                                         ("cached load", CACHED_TARGET_S))):
        ember_s = statistics.median(results["ember"][k])
        torch_s = statistics.median(results["torch"][k]) if "torch" in results else None
        status = "PASS" if ember_s < target else "BELOW"
        torch_text = H.fmt_time(torch_s) if torch_s is not None else "-"
        print(f"{label:<28}{H.fmt_time(ember_s):>10}{torch_text:>10}"
              f"{'< ' + H.fmt_time(target):>10}  {status}")
        summary[label] = {"ember_s": ember_s, "torch_s": torch_s, "target_s": target,
                          "status": status, "ember_runs": results["ember"][k]}
    print(f"load average after: {H.load_average()}")
    if s.smoke:
        print("(smoke run: the timings mean nothing)")
    H.save_json({"load_inline": summary})
    return 0


if __name__ == "__main__":
    sys.exit(main())
