#include "cuda/cudart_backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <stdexcept>

#include "core/errors.h"

namespace ember::cuda {

namespace {

// The subset of the CUDA runtime API ember uses, declared here so that no CUDA header is needed
// to build: cudaError_t is an int enum, streams and events are opaque pointers.
using cudaError_t = int;
constexpr cudaError_t cudaSuccess = 0;
constexpr cudaError_t cudaErrorMemoryAllocation = 2;
constexpr cudaError_t cudaErrorInsufficientDriver = 35;
constexpr cudaError_t cudaErrorNoDevice = 100;
constexpr cudaError_t cudaErrorNotReady = 600;
constexpr unsigned cudaStreamNonBlocking = 0x01;
constexpr unsigned cudaEventDisableTiming = 0x02;
constexpr int cudaMemcpyDefault = 4;  // direction inferred from the addresses (unified addressing)
constexpr unsigned cudaHostAllocDefault = 0;

struct Api {
  void* lib = nullptr;
  cudaError_t (*GetDeviceCount)(int*);
  cudaError_t (*GetDevice)(int*);
  cudaError_t (*SetDevice)(int);
  cudaError_t (*Malloc)(void**, size_t);
  cudaError_t (*Free)(void*);
  cudaError_t (*MemGetInfo)(size_t*, size_t*);
  cudaError_t (*DeviceSynchronize)();
  cudaError_t (*GetLastError)();
  const char* (*GetErrorString)(cudaError_t);
  cudaError_t (*GetDeviceProperties)(void*, int);  // only the leading char name[256] is read
  cudaError_t (*DeviceGetAttribute)(int*, int, int);
  cudaError_t (*StreamCreateWithPriority)(void**, unsigned, int);
  cudaError_t (*StreamDestroy)(void*);
  cudaError_t (*StreamQuery)(void*);
  cudaError_t (*StreamSynchronize)(void*);
  cudaError_t (*StreamWaitEvent)(void*, void*, unsigned);
  cudaError_t (*EventCreateWithFlags)(void**, unsigned);
  cudaError_t (*EventDestroy)(void*);
  cudaError_t (*EventRecord)(void*, void*);
  cudaError_t (*EventQuery)(void*);
  cudaError_t (*EventSynchronize)(void*);
  cudaError_t (*EventElapsedTime)(float*, void*, void*);
  cudaError_t (*MemcpyAsync)(void*, const void*, size_t, int, void*);
  cudaError_t (*MemsetAsync)(void*, int, size_t, void*);
  cudaError_t (*HostAlloc)(void**, size_t, unsigned);
  cudaError_t (*FreeHost)(void*);
  cudaError_t (*RuntimeGetVersion)(int*) = nullptr;  // optional: only for messages
};

template <class F> bool bind(void* lib, F*& fn, const char* name) {
  fn = reinterpret_cast<F*>(dlsym(lib, name));
  return fn != nullptr;
}

std::string cuda_version_str(int v);  // "12.4" from 12040 (below)

class CudartBackend final : public Backend {
 public:
  explicit CudartBackend(const Api& api, int devices) : api_(api), devices_(devices) {}
  const char* name() const override { return "cudart"; }
  std::string runtime_version() override {
    int v = 0;
    if (!api_.RuntimeGetVersion || api_.RuntimeGetVersion(&v) != cudaSuccess || v <= 0) return "";
    return cuda_version_str(v);
  }
  int device_count() override { return devices_; }

  std::string device_name(int device) override {
    check_device(device);
    std::vector<char> props(16384);  // larger than any cudaDeviceProp so far
    check(api_.GetDeviceProperties(props.data(), device), "cudaGetDeviceProperties");
    props[255] = '\0';
    return props.data();
  }
  void device_attributes(int device, int* major, int* minor, int* multiprocessors) override {
    check_device(device);
    // cudaDeviceAttr values: stable since CUDA 5, unlike cudaDeviceProp's layout.
    constexpr int kMultiProcessorCount = 16, kComputeCapabilityMajor = 75,
                  kComputeCapabilityMinor = 76;
    check(api_.DeviceGetAttribute(major, kComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
    check(api_.DeviceGetAttribute(minor, kComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
    check(api_.DeviceGetAttribute(multiprocessors, kMultiProcessorCount, device),
          "cudaDeviceGetAttribute");
  }
  int current_device() override {
    int d = 0;
    check(api_.GetDevice(&d), "cudaGetDevice");
    return d;
  }
  void set_device(int device) override {
    check_device(device);
    check(api_.SetDevice(device), "cudaSetDevice");
  }

  void* raw_malloc(int device, size_t nbytes) override {
    Guard g(*this, device);
    void* p = nullptr;
    cudaError_t err = api_.Malloc(&p, nbytes);
    if (err == cudaErrorMemoryAllocation) {
      api_.GetLastError();  // clear it, so the next call does not report it again
      return nullptr;
    }
    check(err, "cudaMalloc");
    return p;
  }
  void raw_free(int device, void* ptr) override {
    Guard g(*this, device);
    check(api_.Free(ptr), "cudaFree");
  }
  void mem_get_info(int device, size_t* free_bytes, size_t* total_bytes) override {
    Guard g(*this, device);
    check(api_.MemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
  }
  void device_synchronize(int device) override {
    Guard g(*this, device);
    check(api_.DeviceSynchronize(), "cudaDeviceSynchronize");
  }

  StreamHandle stream_create(int device, int priority) override {
    Guard g(*this, device);
    void* s = nullptr;
    check(api_.StreamCreateWithPriority(&s, cudaStreamNonBlocking, priority),
          "cudaStreamCreateWithPriority");
    return reinterpret_cast<StreamHandle>(s);
  }
  void stream_destroy(int device, StreamHandle stream) override {
    Guard g(*this, device);
    if (stream) check(api_.StreamDestroy(as_ptr(stream)), "cudaStreamDestroy");
  }
  bool stream_query(int device, StreamHandle stream) override {
    Guard g(*this, device);
    return ready(api_.StreamQuery(as_ptr(stream)), "cudaStreamQuery");
  }
  void stream_synchronize(int device, StreamHandle stream) override {
    Guard g(*this, device);
    check(api_.StreamSynchronize(as_ptr(stream)), "cudaStreamSynchronize");
  }
  void stream_wait_event(int device, StreamHandle stream, EventHandle event) override {
    Guard g(*this, device);
    check(api_.StreamWaitEvent(as_ptr(stream), event, 0), "cudaStreamWaitEvent");
  }

  EventHandle event_create(int device, bool enable_timing) override {
    Guard g(*this, device);
    void* e = nullptr;
    check(api_.EventCreateWithFlags(&e, enable_timing ? 0u : cudaEventDisableTiming),
          "cudaEventCreateWithFlags");
    return e;
  }
  void event_destroy(int device, EventHandle event) override {
    Guard g(*this, device);
    check(api_.EventDestroy(event), "cudaEventDestroy");
  }
  void event_record(int device, EventHandle event, StreamHandle stream) override {
    Guard g(*this, device);
    check(api_.EventRecord(event, as_ptr(stream)), "cudaEventRecord");
  }
  bool event_query(int device, EventHandle event) override {
    Guard g(*this, device);
    return ready(api_.EventQuery(event), "cudaEventQuery");
  }
  void event_synchronize(int device, EventHandle event) override {
    Guard g(*this, device);
    check(api_.EventSynchronize(event), "cudaEventSynchronize");
  }
  float event_elapsed_ms(int device, EventHandle start, EventHandle end) override {
    Guard g(*this, device);
    float ms = 0;
    check(api_.EventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
    return ms;
  }

  void memcpy_async(int device, void* dst, const void* src, size_t nbytes,
                    StreamHandle stream) override {
    if (!nbytes) return;
    Guard g(*this, device);
    check(api_.MemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, as_ptr(stream)), "cudaMemcpyAsync");
  }
  void memset_async(int device, void* dst, int value, size_t nbytes, StreamHandle stream) override {
    if (!nbytes) return;
    Guard g(*this, device);
    check(api_.MemsetAsync(dst, value, nbytes, as_ptr(stream)), "cudaMemsetAsync");
  }
  void* host_alloc(size_t nbytes) override {
    void* p = nullptr;
    cudaError_t err = api_.HostAlloc(&p, std::max<size_t>(nbytes, 1), cudaHostAllocDefault);
    if (err == cudaErrorMemoryAllocation) {
      api_.GetLastError();
      return nullptr;
    }
    check(err, "cudaHostAlloc");
    return p;
  }
  void host_free(void* ptr) override { check(api_.FreeHost(ptr), "cudaFreeHost"); }

 private:
  // Makes `device` current for one call and restores the previous one (as c10's CUDAGuard).
  struct Guard {
    Guard(CudartBackend& b, int device) : b_(b) {
      b_.check_device(device);
      b_.check(b_.api_.GetDevice(&prev_), "cudaGetDevice");
      if (prev_ != device) b_.check(b_.api_.SetDevice(device), "cudaSetDevice");
      else prev_ = -1;
    }
    ~Guard() {
      if (prev_ >= 0) b_.api_.SetDevice(prev_);
    }
    CudartBackend& b_;
    int prev_ = -1;
  };
  static void* as_ptr(StreamHandle s) { return reinterpret_cast<void*>(s); }
  void check_device(int device) const {
    EMBER_CHECK(device >= 0 && device < devices_, std::runtime_error,
                "CUDA error: invalid device ordinal ", device, " (", devices_, " device",
                devices_ == 1 ? "" : "s", " present)");
  }
  void check(cudaError_t err, const char* call) const {
    if (err == cudaSuccess) return;
    api_.GetLastError();
    throw AcceleratorError(str_cat("CUDA error: ", api_.GetErrorString(err), " (", call,
                                   " returned ", err, ")"));
  }
  bool ready(cudaError_t err, const char* call) const {
    if (err == cudaErrorNotReady) {
      api_.GetLastError();
      return false;
    }
    check(err, call);
    return true;
  }
  Api api_;
  int devices_;
};

bool load_api(void* lib, Api& a) {
  a.lib = lib;
  bool ok = bind(lib, a.GetDeviceCount, "cudaGetDeviceCount") &&
            bind(lib, a.GetDevice, "cudaGetDevice") &&
            bind(lib, a.DeviceGetAttribute, "cudaDeviceGetAttribute") && bind(lib, a.SetDevice, "cudaSetDevice") &&
            bind(lib, a.Malloc, "cudaMalloc") && bind(lib, a.Free, "cudaFree") &&
            bind(lib, a.MemGetInfo, "cudaMemGetInfo") &&
            bind(lib, a.DeviceSynchronize, "cudaDeviceSynchronize") &&
            bind(lib, a.GetLastError, "cudaGetLastError") &&
            bind(lib, a.GetErrorString, "cudaGetErrorString") &&
            bind(lib, a.StreamCreateWithPriority, "cudaStreamCreateWithPriority") &&
            bind(lib, a.StreamDestroy, "cudaStreamDestroy") &&
            bind(lib, a.StreamQuery, "cudaStreamQuery") &&
            bind(lib, a.StreamSynchronize, "cudaStreamSynchronize") &&
            bind(lib, a.StreamWaitEvent, "cudaStreamWaitEvent") &&
            bind(lib, a.EventCreateWithFlags, "cudaEventCreateWithFlags") &&
            bind(lib, a.EventDestroy, "cudaEventDestroy") &&
            bind(lib, a.EventRecord, "cudaEventRecord") &&
            bind(lib, a.EventQuery, "cudaEventQuery") &&
            bind(lib, a.EventSynchronize, "cudaEventSynchronize") &&
            bind(lib, a.EventElapsedTime, "cudaEventElapsedTime") &&
            bind(lib, a.MemcpyAsync, "cudaMemcpyAsync") &&
            bind(lib, a.MemsetAsync, "cudaMemsetAsync") && bind(lib, a.HostAlloc, "cudaHostAlloc") &&
            bind(lib, a.FreeHost, "cudaFreeHost");
  bind(lib, a.RuntimeGetVersion, "cudaRuntimeGetVersion");
  // CUDA 12 renamed the properties call (the struct grew); both begin with char name[256].
  if (ok && !bind(lib, a.GetDeviceProperties, "cudaGetDeviceProperties_v2"))
    ok = bind(lib, a.GetDeviceProperties, "cudaGetDeviceProperties");
  return ok;
}

// CUDA's version number (1000 * major + 10 * minor) as "12.4".
std::string cuda_version_str(int v) { return str_cat(v / 1000, ".", (v % 1000) / 10); }

// Why a CUDA runtime that loaded sees no device, in words a user can act on. On a machine with no
// NVIDIA driver at all the runtime says "CUDA driver version is insufficient for CUDA runtime
// version", which sends people to update a driver they do not have: the driver library is
// looked at first.
std::string no_device_reason(const Api& api, cudaError_t err, const std::string& runtime) {
  const std::string head = str_cat("libcudart loaded (", runtime, ") but ");
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver) {
    const char* e = dlerror();
    return str_cat(head, "no NVIDIA driver is installed (libcuda.so.1 cannot be loaded: ",
                   e ? e : "not found", "): a GPU needs the NVIDIA driver as well as the runtime");
  }
  int (*driver_get_version)(int*) = nullptr;
  int driver_version = 0, runtime_version = 0;
  if (bind(driver, driver_get_version, "cuDriverGetVersion") && driver_get_version(&driver_version))
    driver_version = 0;
  dlclose(driver);
  if (api.RuntimeGetVersion && api.RuntimeGetVersion(&runtime_version) != cudaSuccess)
    runtime_version = 0;
  if (err == cudaErrorInsufficientDriver && driver_version > 0 && runtime_version > driver_version)
    return str_cat(head, "the NVIDIA driver supports CUDA up to ", cuda_version_str(driver_version),
                   ", older than this CUDA ", cuda_version_str(runtime_version),
                   " runtime: update the driver, or use the CUDA ", driver_version / 1000,
                   " wheels (pip install cupy-cuda", driver_version / 1000, "x)");
  if (err == cudaErrorNoDevice || err == cudaSuccess)
    return str_cat(head, "the NVIDIA driver",
                   driver_version > 0 ? " (CUDA " + cuda_version_str(driver_version) + ")" : "",
                   " reports no CUDA GPU");
  return str_cat(head, "it reports no usable device: ", api.GetErrorString(err));
}

}  // namespace

const std::vector<std::string>& default_cudart_names() {
  static const std::vector<std::string> names = {"libcudart.so", "libcudart.so.13",
                                                 "libcudart.so.12", "libcudart.so.11.0"};
  return names;
}

std::unique_ptr<Backend> load_cudart(const std::vector<std::string>& candidates, std::string* why) {
  std::vector<std::string> names = candidates;
  for (const auto& n : default_cudart_names()) names.push_back(n);
  std::string errors;
  for (const auto& n : names) {
    void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      errors += str_cat("\n  ", n, ": ", e ? e : "cannot be loaded");
      continue;
    }
    Api api;
    if (!load_api(lib, api)) {
      errors += str_cat("\n  ", n, ": not a CUDA runtime (a cuda* function is missing)");
      dlclose(lib);
      continue;
    }
    int count = 0;
    cudaError_t err = api.GetDeviceCount(&count);
    if (err != cudaSuccess || count <= 0) {
      if (why) *why = no_device_reason(api, err, n);
      if (err != cudaSuccess) api.GetLastError();
      return nullptr;  // a runtime that loads but sees no device: another one will not either
    }
    return std::make_unique<CudartBackend>(api, count);
  }
  if (why) *why = "libcudart not found:" + errors;
  return nullptr;
}

}  // namespace ember::cuda
