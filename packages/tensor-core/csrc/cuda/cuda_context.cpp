#include "cuda/cuda_context.h"

#include <pthread.h>

#include <memory>
#include <mutex>
#include <stdexcept>

#include "core/errors.h"
#include "cuda/cudart_backend.h"
#include "cuda/host_backend.h"

namespace ember::cuda {

namespace {

struct State {
  std::mutex mu;
  bool probed = false;
  std::unique_ptr<Backend> backend;
  std::string reason;
  std::vector<std::string> candidates;
  std::vector<std::unique_ptr<CachingAllocator>> allocators;
  bool in_bad_fork = false;
};

// Leaked on purpose: CUDA state must outlive static destructors and interpreter teardown.
State& state() {
  static State* s = new State;
  return *s;
}

thread_local std::vector<StreamHandle> t_streams;

void probe_locked(State& s) {
  if (s.probed) return;
  s.probed = true;
  s.backend = load_cudart(s.candidates, &s.reason);
}

// A child forked after CUDA was initialised cannot use it (the driver's state is the parent's).
void mark_bad_fork() {
  State& s = state();
  if (s.backend && std::string(s.backend->name()) == "cudart") {
    s.in_bad_fork = true;
    (void)s.backend.release();  // the parent's; never call into it from here
    for (auto& a : s.allocators) (void)a.release();
    s.allocators.clear();
  }
}

[[maybe_unused]] const int g_atfork = pthread_atfork(nullptr, nullptr, mark_bad_fork);

Backend& backend_locked(State& s) {
  if (s.in_bad_fork)
    throw std::runtime_error(
        "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you "
        "must use the 'spawn' start method");
  probe_locked(s);
  if (!s.backend) throw std::runtime_error(no_gpu_error());
  return *s.backend;
}

}  // namespace

void set_runtime_candidates(std::vector<std::string> paths) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  s.candidates = std::move(paths);
}

bool is_available() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (s.in_bad_fork) return true;  // it was, in the parent: calls raise the fork error
  probe_locked(s);
  return s.backend != nullptr;
}

int device_count() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (s.in_bad_fork) return 0;
  probe_locked(s);
  return s.backend ? s.backend->device_count() : 0;
}

std::string runtime_version() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (s.in_bad_fork) return "";
  probe_locked(s);
  return s.backend ? s.backend->runtime_version() : "";
}

std::string unavailable_reason() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  probe_locked(s);
  return s.backend ? "" : s.reason;
}

std::string backend_name() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  probe_locked(s);
  return s.backend ? s.backend->name() : "none";
}

std::string no_gpu_error(const std::string& what) {
  std::string reason;
  {
    State& s = state();
    // Called with the lock held by backend_locked or without it: read without re-locking.
    reason = s.reason;
  }
  return str_cat(what.empty() ? "" : what + ": ", "ember.cuda: no CUDA GPU is available (",
                 reason.empty() ? "libcudart not found / no device" : reason,
                 "). CUDA tensors and ember.cuda's memory, stream and event functions need an "
                 "NVIDIA GPU with its driver and the CUDA runtime; ember.cuda.is_available() "
                 "tells whether they are usable.");
}

Backend& backend() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  return backend_locked(s);
}

int check_device_index(int device) {
  Backend& b = backend();
  if (device < 0) return b.current_device();
  EMBER_CHECK(device < b.device_count(), std::runtime_error, "CUDA error: invalid device ordinal ",
              device, " (", b.device_count(), " device", b.device_count() == 1 ? "" : "s",
              " present)");
  return device;
}

CachingAllocator& allocator(int device) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  Backend& b = backend_locked(s);
  EMBER_CHECK(device >= 0 && device < b.device_count(), std::runtime_error,
              "CUDA error: invalid device ordinal ", device);
  if (s.allocators.size() < size_t(b.device_count())) s.allocators.resize(b.device_count());
  auto& slot = s.allocators[device];
  if (!slot) slot = std::make_unique<CachingAllocator>(&b, device, AllocatorConfig::from_env());
  return *slot;
}

int current_device() { return backend().current_device(); }

void set_device(int device) { backend().set_device(check_device_index(device)); }

StreamHandle current_stream(int device) {
  device = check_device_index(device);
  return size_t(device) < t_streams.size() ? t_streams[device] : 0;
}

void set_current_stream(int device, StreamHandle stream) {
  device = check_device_index(device);
  if (t_streams.size() <= size_t(device)) t_streams.resize(device + 1, 0);
  t_streams[device] = stream;
}

void use_host_backend(size_t capacity, int devices) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  for (auto& a : s.allocators)
    if (a && a->stats().allocation[kAggregate].current > 0)
      throw std::runtime_error("cannot switch the CUDA backend while device memory is allocated");
  s.allocators.clear();
  t_streams.clear();
  if (capacity == 0) {  // back to the CUDA runtime, probed again on next use
    if (s.backend && std::string(s.backend->name()) == "host") s.backend.reset();
    s.probed = false;
    s.reason.clear();
    return;
  }
  if (s.backend && std::string(s.backend->name()) == "cudart") (void)s.backend.release();  // leaked: stays loaded
  s.backend = std::make_unique<HostBackend>(capacity, devices);
  s.probed = true;
  s.reason.clear();
}

}  // namespace ember::cuda
