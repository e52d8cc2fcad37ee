#include "cuda/driver_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>
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
  throw AcceleratorError(str_cat("CUDA error: ", msg, " (", what, ", CUresult ", r, ")"));
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

// ---- the disk cache of compiled kernels ----
// NVRTC takes about 80 ms per kernel: a program whose ops need 40 would start 3 s late on every
// run. Each binary is kept in the cache folder under a hash of everything that decides it (the
// source, the headers, the target architecture); a file that cannot be read back whole is
// compiled again, and one that cannot be written is simply not kept.
constexpr char kCacheMagic[8] = {'E', 'M', 'B', 'E', 'R', 'K', 'C', '1'};

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return (h ^ 0xff) * 1099511628211ull;  // a separator, so that "ab"+"c" != "a"+"bc"
}

// mkdir -p; false when the folder cannot be made.
bool make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') {
      const std::string part = path.substr(0, i);
      if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  return true;
}

std::string read_cached(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[8];
  uint64_t size = 0;
  if (!in.read(magic, 8) || std::memcmp(magic, kCacheMagic, 8) != 0 ||
      !in.read(reinterpret_cast<char*>(&size), 8) || size == 0 || size > (256u << 20))
    return "";
  std::string binary(size, '\0');
  if (!in.read(binary.data(), static_cast<std::streamsize>(size)) || in.peek() != EOF) return "";
  return binary;
}

void write_cached(const std::string& file, const std::string& binary) {
  const size_t slash = file.rfind('/');
  if (slash == std::string::npos || !make_dirs(file.substr(0, slash))) return;
  // Written aside and renamed: a reader never sees half a file, and writers race harmlessly.
  const std::string tmp = str_cat(file, ".", getpid(), ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const uint64_t size = binary.size();
    out.write(kCacheMagic, 8);
    out.write(reinterpret_cast<const char*>(&size), 8);
    out.write(binary.data(), static_cast<std::streamsize>(binary.size()));
    if (!out) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace

std::string kernel_cache_dir() {
  const char* env = std::getenv("EMBER_KERNEL_CACHE");
  if (env && *env) return std::string(env) == "0" ? "" : env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return str_cat(xdg, "/ember/kernels");
  if (const char* home = std::getenv("HOME"); home && *home)
    return str_cat(home, "/.cache/ember/kernels");
  return "";
}

std::string kernel_cache_file(const std::string& source, const std::string& kernel_name,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              int major, int minor) {
  const std::string dir = kernel_cache_dir();
  if (dir.empty()) return "";
  uint64_t h = 1469598103934665603ull;
  h = fnv1a(h, source);
  for (const auto& [name, text] : headers) h = fnv1a(fnv1a(h, name), text);
  h = fnv1a(h, str_cat("sm_", major, minor));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return str_cat(dir, "/", kernel_name, "-", hex, ".bin");
}

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
  const std::string cached = kernel_cache_file(source, kernel_name, headers, major, minor);
  if (!cached.empty()) {
    std::string binary = read_cached(cached);
    if (!binary.empty()) return binary;
  }
  std::string binary = compile_with_nvrtc(source, kernel_name, headers, major, minor);
  if (!cached.empty()) write_cached(cached, binary);
  return binary;
}

std::string compile_with_nvrtc(const std::string& source, const std::string& kernel_name,
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
