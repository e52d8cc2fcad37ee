#!/usr/bin/env bash
# Builds ember on a machine with an NVIDIA GPU and runs its CUDA tests and benchmarks there, within
# a time budget (CI machines have no GPU, so these runs are made by hand).
#
#   tools/gpu_check.sh LOGDIR [SECONDS] [PYTEST_ARGS...]
#
# Needs python3 with NumPy, CuPy, pytest (+ pytest-xdist, pytest-timeout) and scipy-openblas32;
# PyTorch, where installed, is the benchmarks' peer. Writes build.log, bench_*.log/json and
# tests_*.log into LOGDIR and prints a summary last. The benchmarks run first (they are the
# figures); the tests get the time that is left. EMBER_PREBUILT=path/to/_C.so skips the build
# (tools/dev_build.sh). GPU_CHECK_BENCHES="ops" picks the benchmarks (default: alloc ops
# resnet_memory; "" for none); GPU_CHECK_MODELS="resnet50" the models bench_models.py times
# against torch on the GPU (default resnet50; "" for none). Extra arguments replace the default test
# selection (every CUDA test file), e.g. `-k scatter`, and are passed to each package's pytest.
set -uo pipefail
logs="$(mkdir -p "$1" && cd "$1" && pwd)"
budget="${2:-540}"
shift $(($# < 2 ? $# : 2))
start=$SECONDS
root="$(cd "$(dirname "$0")/.." && pwd)"
nvidia-smi -L 2>&1 | tee "$logs/device.log"
# AVX2 by default: native builds crashed on import on some GPU test machines (docs/architecture.md)
export EMBER_CPU_BASELINE="${EMBER_CPU_BASELINE:-x86-64-v3}"
lib="$("$root/tools/dev_build.sh" gpu)" || exit 1
cp "${TMPDIR:-/tmp}/ember-dev-gpu/build.log" "$logs/" 2>/dev/null
echo "built in $((SECONDS - start)) s"
export PYTHONPATH="$lib:$root/packages/autograd:$root/packages/nn:$root/packages/data${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
python3 - <<'EOF' 2>&1 | tee -a "$logs/device.log"
import cupy, numpy, ember, ember.cuda
print("ember.cuda.is_available():", ember.cuda.is_available(), ember._C._cuda_unavailable_reason())
print(ember.cuda.get_device_name(), "| cupy", cupy.__version__, "| numpy", numpy.__version__)
x = ember.arange(10, device="cuda", dtype=ember.float32)
print("smoke:", (x * 2 + 1).sum().item(), "(expect 100.0)")
print("compiled kernels:", ember.cuda._compiled_kernels())
EOF
if ! grep -q "^smoke:" "$logs/device.log"; then
  # A crash on import: where, with a debugger when there is one (cuda-gdb debugs host code too).
  for dbg in cuda-gdb gdb; do
    if command -v "$dbg" >/dev/null; then
      timeout 90 "$dbg" -q -batch -ex run -ex bt --args python3 -c "import numpy, ember" 2>&1 |
        grep -E "^#|signal" | head -25 | tee -a "$logs/device.log"
      break
    fi
  done
fi

if [ $# -eq 0 ]; then
  for b in ${GPU_CHECK_BENCHES-alloc ops resnet_memory}; do
    timeout 150 python3 "$root/benchmarks/bench_cuda_$b.py" --json "$logs/bench_$b.json" \
      >"$logs/bench_$b.log" 2>&1
    echo "bench_cuda_$b exit $?"
  done
  if [ -n "${GPU_CHECK_MODELS-resnet50}" ]; then
    timeout 200 python3 "$root/benchmarks/bench_models.py" --device cuda --quick \
      --models "${GPU_CHECK_MODELS-resnet50}" --json "$logs/bench_models.json" \
      >"$logs/bench_models.log" 2>&1
    echo "bench_models exit $?"
  fi
fi

left=$((budget - (SECONDS - start) - 15))
echo "tests get ${left} s"
# test_cuda.py switches to the simulated devices, which a process can do only while it holds no
# GPU memory: it runs in a process of its own.
declare -A files=(
  [tensor-core]="tests/test_cuda_*.py tests/test_add_alpha.py tests/test_reduced_float_scalars.py
                 tests/test_backends_flags.py"
  [simulated]="tests/test_cuda.py"
  [autograd]="tests/test_cuda*.py"
  [nn]="tests/test_cuda*.py"
)
declare -A dirs=([tensor-core]=tensor-core [simulated]=tensor-core [autograd]=autograd [nn]=nn)
declare -A workers=([tensor-core]=8 [simulated]=0 [autograd]=3 [nn]=3)
suites="tensor-core simulated autograd nn"
for suite in $suites; do
  (cd "$root/packages/${dirs[$suite]}" && timeout "$left" python3 -m pytest -q -p no:cacheprovider \
    -n "${workers[$suite]}" --timeout 240 -rfE --tb=short ${files[$suite]} "$@" \
    >"$logs/tests_$suite.log" 2>&1; echo "$suite pytest exit $?" >>"$logs/tests_$suite.log") &
done
wait

echo "== summary ($((SECONDS - start)) s)"
cat "$logs/device.log"
for b in alloc ops resnet_memory models; do
  [ -f "$logs/bench_$b.log" ] && grep -vE "^\s*$" "$logs/bench_$b.log" | tail -15
done
for suite in $suites; do
  echo "-- $suite"
  grep -E "^(FAILED|ERROR)|passed|failed|skipped in|pytest exit" "$logs/tests_$suite.log" |
    cut -c1-220 | tail -40
done
