#include "cuda/driver_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "core/errors.h"

namespace ember::cuda {

namespace {

// The subset of the driver API and NVRTC used, declared here so that no CUDA header is needed to
// build (CUresult and nvrtcResult are int enums; handles are opaque pointers).
using CUresult = int;
using nvrtcResult = int;

struct DriverApi {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(int*, int);
  CUresult (*DevicePrimaryCtxRetain)(void**, int);
  CUresult (*CtxGetCurrent)(void**);
  CUresult (*CtxSetCurrent)(void*);
  CUresult (*ModuleLoadData)(void**, const void*);
  CUresult (*ModuleGetFunction)(void**, void*, const char*);
  CUresult (*LaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void*, void**, void**);
  CUresult (*GetErrorString)(CUresult, const char**);
};

struct NvrtcApi {
  nvrtcResult (*CreateProgram)(void**, const char*, const char*, int, const char* const*,
                               const char* const*);
  nvrtcResult (*CompileProgram)(void*, int, const char* const*);
  nvrtcResult (*GetProgramLogSize)(void*, size_t*);
  nvrtcResult (*GetProgramLog)(void*, char*);
  nvrtcResult (*GetCUBINSize)(void*, size_t*);
  nvrtcResult (*GetCUBIN)(void*, char*);
  nvrtcResult (*GetPTXSize)(void*, size_t*);
  nvrtcResult (*GetPTX)(void*, char*);
  nvrtcResult (*DestroyProgram)(void**);
  nvrtcResult (*GetNumSupportedArchs)(int*);
  nvrtcResult (*GetSupportedArchs)(int*);
  const char* (*GetErrorString)(nvrtcResult);
};

template <class F> bool bind(void* lib, F*& fn, const char* name) {
  fn = reinterpret_cast<F*>(dlsym(lib, name));
  return fn != nullptr;
}

struct State {
  std::mutex mu;
  bool probed = false, available = false;
  std::string reason;
  std::vector<std::string> nvrtc_candidates;
  DriverApi driver{};
  NvrtcApi nvrtc{};
  std::vector<void*> contexts;  // each device's primary context, retained once
};

State& state() {
  static State* s = new State;  // leaked: kernels may launch during interpreter teardown
  return *s;
}

bool load_driver(DriverApi& d, std::string* why) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    *why = str_cat("libcuda.so.1 cannot be loaded: ", e ? e : "not found");
    return false;
  }
  bool ok = bind(lib, d.Init, "cuInit") && bind(lib, d.DeviceGet, "cuDeviceGet") &&
            bind(lib, d.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
            bind(lib, d.CtxGetCurrent, "cuCtxGetCurrent") &&
            bind(lib, d.CtxSetCurrent, "cuCtxSetCurrent") &&
            bind(lib, d.ModuleLoadData, "cuModuleLoadData") &&
            bind(lib, d.ModuleGetFunction, "cuModuleGetFunction") &&
            bind(lib, d.LaunchKernel, "cuLaunchKernel") &&
            bind(lib, d.GetErrorString, "cuGetErrorString");
  if (!ok) {
    *why = "libcuda.so.1 lacks a driver API function ember needs";
    return false;
  }
  if (CUresult r = d.Init(0)) {
    *why = str_cat("cuInit failed (CUresult ", r, ")");
    return false;
  }
  return true;
}

// libnvrtc finds its builtins library by soname; the wheels keep it beside libnvrtc without
// putting that folder on the search path, so it is loaded first from there (as CuPy does).
void preload_builtins(const std::string& nvrtc_path) {
  const size_t slash = nvrtc_path.rfind('/');
  if (slash == std::string::npos) return;
  const std::string dir = nvrtc_path.substr(0, slash + 1);
  const size_t so = nvrtc_path.find(".so.", slash);
  if (so == std::string::npos) return;
  const std::string major = nvrtc_path.substr(so + 4);  // "13" of libnvrtc.so.13
  for (const char* stem : {"libnvrtc-builtins.so.", "libnvrtc-builtins.alt.so."}) {
    for (const char* minor : {".0", ".1", ".2", ".3", ".4", ".5", ".6", ".8", ".9", ""}) {
      if (dlopen((dir + stem + major + minor).c_str(), RTLD_NOW | RTLD_GLOBAL)) return;
    }
  }
}

bool load_nvrtc(NvrtcApi& n, const std::vector<std::string>& candidates, std::string* why) {
  std::vector<std::string> names = candidates;
  for (const char* s : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}) names.push_back(s);
  std::string errors;
  for (const auto& name : names) {
    preload_builtins(name);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      errors += str_cat("\n  ", name, ": ", e ? e : "cannot be loaded");
      continue;
    }
    bool ok = bind(lib, n.CreateProgram, "nvrtcCreateProgram") &&
              bind(lib, n.CompileProgram, "nvrtcCompileProgram") &&
              bind(lib, n.GetProgramLogSize, "nvrtcGetProgramLogSize") &&
              bind(lib, n.GetProgramLog, "nvrtcGetProgramLog") &&
              bind(lib, n.GetCUBINSize, "nvrtcGetCUBINSize") &&
              bind(lib, n.GetCUBIN, "nvrtcGetCUBIN") && bind(lib, n.GetPTXSize, "nvrtcGetPTXSize") &&
              bind(lib, n.GetPTX, "nvrtcGetPTX") &&
              bind(lib, n.DestroyProgram, "nvrtcDestroyProgram") &&
              bind(lib, n.GetNumSupportedArchs, "nvrtcGetNumSupportedArchs") &&
              bind(lib, n.GetSupportedArchs, "nvrtcGetSupportedArchs") &&
              bind(lib, n.GetErrorString, "nvrtcGetErrorString");
    if (ok) return true;
    errors += str_cat("\n  ", name, ": not NVRTC (a function is missing)");
  }
  *why = "libnvrtc not found:" + errors;
  return false;
}

// NVRTC alone (compile_kernel needs no driver): loaded on first use.
NvrtcApi& nvrtc_locked(State& s) {
  static bool loaded = false;
  static std::string failure;
  if (!loaded && failure.empty()) {
    if (load_nvrtc(s.nvrtc, s.nvrtc_candidates, &failure)) loaded = true;
  }
  if (!loaded) throw std::runtime_error("ember: cannot compile CUDA kernels: " + failure);
  return s.nvrtc;
}

void check_driver(const DriverApi& d, CUresult r, const char* what) {
  if (r == 0) return;
  const char* msg = nullptr;
  if (d.GetErrorString(r, &msg) != 0 || !msg) msg = "unknown error";
  throw std::runtime_error(str_cat("CUDA error: ", msg, " (", what, ", CUresult ", r, ")"));
}

// Makes `device`'s primary context (the one the runtime, CuPy and torch use) current on this
// thread; one comparison when it already is.
void make_current(State& s, int device) {
  thread_local void* current = nullptr;
  if (device < 0 || device >= static_cast<int>(s.contexts.size()))
    throw std::runtime_error(str_cat("ember: no CUDA device ", device));
  void* ctx = s.contexts[device];
  if (!ctx) {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.contexts[device]) {
      int dev = 0;
      check_driver(s.driver, s.driver.DeviceGet(&dev, device), "cuDeviceGet");
      check_driver(s.driver, s.driver.DevicePrimaryCtxRetain(&s.contexts[device], dev),
                   "cuDevicePrimaryCtxRetain");
    }
    ctx = s.contexts[device];
  }
  if (current == ctx) {
    void* now = nullptr;
    if (s.driver.CtxGetCurrent(&now) == 0 && now == ctx) return;
  }
  check_driver(s.driver, s.driver.CtxSetCurrent(ctx), "cuCtxSetCurrent");
  current = ctx;
}

}  // namespace

void set_nvrtc_candidates(std::vector<std::string> paths) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.nvrtc_candidates = std::move(paths);
}

bool compiled_kernels_available(std::string* why) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.probed) {
    s.probed = true;
    std::string reason;
    if (load_driver(s.driver, &reason)) {
      try {
        nvrtc_locked(s);
        s.available = true;
        s.contexts.assign(64, nullptr);
      } catch (const std::exception& e) {
        reason = e.what();
      }
    }
    s.reason = reason;
  }
  if (why) *why = s.reason;
  return s.available;
}

std::string compile_kernel(const std::string& source, const std::string& kernel_name,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           int major, int minor) {
  State& s = state();
  NvrtcApi* n;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    n = &nvrtc_locked(s);
  }
  std::vector<const char*> names, contents;
  for (const auto& h : headers) names.push_back(h.first.c_str()), contents.push_back(h.second.c_str());
  // The device's own architecture (a CUBIN) where this NVRTC knows it, else PTX for the newest
  // one it knows, which the driver compiles for the device.
  int count = 0, arch = major * 10 + minor, newest = 0;
  bool known = false;
  if (n->GetNumSupportedArchs(&count) == 0 && count > 0) {
    std::vector<int> archs(count);
    if (n->GetSupportedArchs(archs.data()) == 0)
      for (int a : archs) known = known || a == arch, newest = std::max(newest, a);
  }
  const bool cubin = known || newest == 0;
  const std::string arch_flag = cubin ? str_cat("--gpu-architecture=sm_", arch)
                                      : str_cat("--gpu-architecture=compute_", newest);
  const char* options[] = {arch_flag.c_str(), "--std=c++17", "-DNDEBUG"};
  void* prog = nullptr;
  nvrtcResult r = n->CreateProgram(&prog, source.c_str(), (kernel_name + ".cu").c_str(),
                                   static_cast<int>(names.size()), contents.data(), names.data());
  if (r) throw std::runtime_error(str_cat("NVRTC: cannot create a program: ", n->GetErrorString(r)));
  struct Destroy {
    NvrtcApi* n;
    void* p;
    ~Destroy() { n->DestroyProgram(&p); }
  } destroy{n, prog};
  r = n->CompileProgram(prog, 3, options);
  if (r) {
    size_t size = 0;
    n->GetProgramLogSize(prog, &size);
    std::string log(size, '\0');
    if (size) n->GetProgramLog(prog, log.data());
    throw std::runtime_error(str_cat("NVRTC could not compile ", kernel_name, " (",
                                     n->GetErrorString(r), "):\n", log.c_str()));
  }
  size_t size = 0;
  std::string binary;
  if (cubin) {
    n->GetCUBINSize(prog, &size);
    binary.resize(size);
    n->GetCUBIN(prog, binary.data());
  } else {
    n->GetPTXSize(prog, &size);
    binary.resize(size);
    n->GetPTX(prog, binary.data());
  }
  return binary;
}

KernelFunction load_kernel(int device, const std::string& binary, const std::string& name) {
  State& s = state();
  if (!compiled_kernels_available()) throw std::runtime_error("ember: " + s.reason);
  make_current(s, device);
  void* module = nullptr;  // kept for the process's lifetime, as the kernel cache keeps `fn`
  check_driver(s.driver, s.driver.ModuleLoadData(&module, binary.data()), "cuModuleLoadData");
  void* fn = nullptr;
  check_driver(s.driver, s.driver.ModuleGetFunction(&fn, module, name.c_str()),
               "cuModuleGetFunction");
  return fn;
}

void launch_kernel(int device, KernelFunction fn, unsigned grid, unsigned block, void* params,
                   StreamHandle stream) {
  State& s = state();
  make_current(s, device);
  void* args[] = {params};
  check_driver(s.driver,
               s.driver.LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0,
                                     reinterpret_cast<void*>(stream), args, nullptr),
               "cuLaunchKernel");
}

}  // namespace ember::cuda
