#include "cuda/device_elementwise.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/errors.h"
#include "cuda/cuda_context.h"
#include "cuda/driver_api.h"
#include "kernels/iterator.h"
#include "ops/cpu_kernels.h"

namespace ember::cuda {

namespace {

constexpr unsigned kBlock = 256;

struct DeviceInfo {
  int major = 0, minor = 0, multiprocessors = 1;
};

struct Cache {
  std::mutex mu;
  std::unordered_map<uint64_t, KernelFunction> kernels[64];  // per device
  DeviceInfo info[64];
  bool have_info[64] = {};
  int compiled = 0;
};

Cache& cache() {
  static Cache* c = new Cache;  // leaked, as the modules its kernels live in
  return *c;
}

// Called on every op: the backend's name as a C string, no std::string made (after
// is_available(), backend() does not throw).
bool on_host_backend() { return std::strcmp(backend().name(), "host") == 0; }

// EMBER_CUDA_COMPILED_KERNELS=0 (or set_native_elementwise(false)) sends the ops back to
// ember.cuda's CuPy path: a way around a problem in this path, and the benchmarks' baseline.
std::atomic<bool>& enabled() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("EMBER_CUDA_COMPILED_KERNELS");
    return !(v && std::string(v) == "0");
  }()};
  return on;
}

// The kernel of `key` on `device`: compiled and loaded on first use (a few tens of ms), then one
// hash lookup.
KernelFunction kernel_for(int device, const ElementwiseKernelKey& key, DeviceInfo* info) {
  Cache& c = cache();
  const uint64_t packed = key.packed();
  std::unique_lock<std::mutex> lock(c.mu);
  if (!c.have_info[device]) {
    DeviceInfo& d = c.info[device];
    backend().device_attributes(device, &d.major, &d.minor, &d.multiprocessors);
    c.have_info[device] = true;
  }
  *info = c.info[device];
  auto found = c.kernels[device].find(packed);
  if (found != c.kernels[device].end()) return found->second;
  lock.unlock();  // compiling takes long: other threads' launches go on
  const std::string name = kernel_name(key);
  const std::string binary =
      compile_kernel(kernel_source(key), name, kernel_headers(), info->major, info->minor);
  KernelFunction fn = load_kernel(device, binary, name);
  lock.lock();
  c.kernels[device].emplace(packed, fn);
  ++c.compiled;
  return fn;
}

}  // namespace

void set_native_elementwise(bool on) { enabled() = on; }

bool native_elementwise_available(std::string* why) {
  if (!enabled()) {
    if (why) *why = "turned off (EMBER_CUDA_COMPILED_KERNELS=0 or ember.cuda._set_compiled_kernels)";
    return false;
  }
  if (!is_available()) {
    if (why) *why = unavailable_reason();
    return false;
  }
  if (on_host_backend()) return true;
  return compiled_kernels_available(why);
}

ElementwiseKernelKey kernel_key(KernelFamily family, int op, const ElementwiseIter& it,
                                ScalarType compute) {
  ElementwiseKernelKey key;
  key.family = family;
  key.op = op;
  key.input = compute;
  key.output = it.output()->dtype;
  key.flat = it.ndim() == 1;
  key.by_value = static_cast<uint8_t>(it.host_inputs());
  return key;
}

ElementwiseParams pack_params(const ElementwiseIter& it, const ElementwiseKernelKey& key) {
  const int nd = it.ndim(), arity = key.arity();
  EMBER_CHECK(nd <= kKernelMaxDims, std::runtime_error, "ember: an elementwise op over ", nd,
              " non-contiguous dims on CUDA (at most ", kKernelMaxDims, ")");
  EMBER_CHECK(it.ntensors() == arity + 1, std::logic_error, "operand count");
  ElementwiseParams p;
  std::memset(&p, 0, sizeof p);
  p.numel = it.numel();
  p.ndim = nd;
  for (int d = 0; d < nd; ++d) p.sizes[d] = it.shape()[d];
  for (int k = 0; k <= arity; ++k) {
    for (int d = 0; d < nd; ++d) p.strides[k][d] = it.strides(k)[d];
    p.data[k] = reinterpret_cast<uint64_t>(it.data(k));
  }
  for (int k = 0; k < arity; ++k)
    if (key.by_value & (1u << k)) {  // a CPU 0-d tensor: its value travels in the parameters
      std::memcpy(&p.values[k], it.data(k + 1), itemsize(key.input));
      p.data[k + 1] = 0;
    }
  return p;
}

void run_elementwise(KernelFamily family, int op, const ElementwiseIter& it, ScalarType compute) {
  if (it.numel() == 0) return;
  if (on_host_backend()) {  // simulated devices: device memory is host memory
    ElementwiseIter host = it;
    host.allow_host_access();
    if (family == KernelFamily::Unary)
      cpu_kernels().unary(static_cast<UnaryOp>(op), host, compute);
    else
      cpu_kernels().binary(static_cast<BinaryOp>(op), host, compute);
    return;
  }
  const ElementwiseKernelKey key = kernel_key(family, op, it, compute);
  const ElementwiseParams params = pack_params(it, key);
  const int device = it.device().index;
  DeviceInfo info;
  KernelFunction fn = kernel_for(device, key, &info);
  const int64_t blocks = (it.numel() + kBlock - 1) / kBlock;
  const int64_t most = int64_t(info.multiprocessors) * 16;  // the kernels loop over the rest
  const unsigned grid = static_cast<unsigned>(blocks < most ? blocks : most);
  launch_kernel(device, fn, grid, kBlock, const_cast<ElementwiseParams*>(&params),
                current_stream(device));
}

int compiled_kernel_count() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.compiled;
}

}  // namespace ember::cuda
