// bind_runtime.cpp: threads, the GIL hooks, the BLAS library location, the CPU kernels'
// capability, and allocator/introspection hooks.
#include <chrono>
#include <thread>

#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

#include "core/allocator.h"
#include "kernels/vector_libm.h"
#include "python/pyutils.h"
#include "runtime/blas.h"
#include "runtime/onednn.h"
#include "runtime/cpu_capability.h"
#include "runtime/gil.h"
#include "runtime/parallel.h"

namespace ember::pyb {
namespace {

unsigned long g_main_thread = 0;  // the thread that finalizes the interpreter

// runtime/gil.h's hooks. Only a thread that holds the GIL gives it up: pool workers, and threads
// already inside a scope, get nullptr (before Python 3.12 the "current" thread state is the GIL
// holder's whichever thread asks, so it is compared with this thread's own).
void* release_gil() {
  PyThreadState* mine = PyGILState_GetThisThreadState();
  if (!mine || py::detail::get_thread_state_unchecked() != mine) return nullptr;
  return PyEval_SaveThread();
}

[[noreturn]] void park_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void restore_gil(void* state) {
  // A daemon thread that finishes a kernel while the interpreter shuts down would be ended
  // inside PyEval_RestoreThread by pthread_exit, whose unwinding through the core's noexcept
  // frames aborts the process: park it instead (the process is exiting; Python 3.14 does the same).
  if (interpreter_finalizing() && PyThread_get_thread_ident() != g_main_thread) park_forever();
#if defined(__GLIBCXX__)
  try {
    PyEval_RestoreThread(static_cast<PyThreadState*>(state));
  } catch (abi::__forced_unwind&) {
    // Finalizing began between the check above and taking the GIL: the same, one step later.
    // The thread never leaves this handler, so the unwind need not be rethrown.
    park_forever();
  }
#else
  PyEval_RestoreThread(static_cast<PyThreadState*>(state));
#endif
}

// Runs at the end of interpreter shutdown, before the process's exit handlers (see
// wait_for_kernels_outside_gil). Kernels finish in seconds; the bound only keeps a runaway one
// from holding up the exit forever.
void wait_for_kernels_at_exit() { wait_for_kernels_outside_gil(60.0); }

}  // namespace

void register_runtime(py::module_& m) {
  g_main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  set_gil_hooks({&release_gil, &restore_gil});
  Py_AtExit(&wait_for_kernels_at_exit);
  // Whether long kernels release the GIL (tests and benchmarks compare with it held).
  m.def("_set_gil_release", &set_gil_release_enabled, py::arg("enabled"));
  m.def("_gil_release_enabled", &gil_release_enabled);
  // ember.compile's fused kernels: `void fn(void** data, int64_t nthreads)` at address `fn`, called
  // on the inputs (made contiguous) and on new tensors of `out_shapes` (returned), in that order.
  // In the core because the Python around a call (ctypes' marshalling, the allocations) cost 10 us,
  // more than a small kernel runs. The kernel is trusted to read and write within the tensors it
  // was generated for; the GIL is released while it runs when `long_work` (the core's grain).
  m.def("_run_kernel", [](uintptr_t fn, const std::vector<Tensor>& inputs,
                          const std::vector<Shape>& out_shapes, py::handle dtype, int64_t nthreads,
                          bool long_work) {
    EMBER_CHECK(fn != 0, std::runtime_error, "_run_kernel: null function");
    const ScalarType dt = to_dtype(dtype);
    EMBER_CHECK(dt != ScalarType::Undefined, std::runtime_error, "_run_kernel: no dtype given");
    std::vector<Tensor> outs;
    outs.reserve(out_shapes.size());
    std::vector<void*> data;
    data.reserve(inputs.size() + out_shapes.size());
    std::vector<Tensor> kept;  // contiguous copies, alive until the kernel returns
    for (const Tensor& t : inputs) {
      EMBER_CHECK(t->device().is_cpu(), std::runtime_error, "_run_kernel: a CPU kernel got a ",
                  t->device().str(), " tensor");
      if (t->is_contiguous()) {
        data.push_back(t->device_data());
      } else {
        kept.push_back(contiguous(t));
        data.push_back(kept.back()->device_data());
      }
    }
    for (const Shape& s : out_shapes) {
      outs.push_back(empty(s, dt));
      data.push_back(outs.back()->device_data());
    }
    {
      GilRelease unlocked(long_work);
      reinterpret_cast<void (*)(void**, int64_t)>(fn)(data.data(), nthreads);
    }
    return outs;
  }, py::arg("fn"), py::arg("inputs"), py::arg("out_shapes"), py::arg("dtype"),
     py::arg("nthreads"), py::arg("long_work"));
  // ember.compile's guards, read on every call of a compiled function: a tensor's signature
  // ("tensor", shape, dtype, is_cuda, requires_grad), and the requires_grad flags of a model's
  // parameters (2 us and 0.2 us each through the attributes).
  m.def("_guard_signature", [](const Tensor& t) {
    return py::make_tuple("tensor", py::tuple(py::cast(t->sizes)), dtype_object(t->dtype),
                          !t->device().is_cpu(), t->requires_grad);
  });
  m.def("_requires_grad_flags", [](const std::vector<Tensor>& tensors) {
    py::tuple flags(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) flags[i] = py::bool_(tensors[i]->requires_grad);
    return flags;
  });
  m.def("set_num_threads", [](int n) {
    if (n < 1) throw std::runtime_error("set_num_threads expects a positive integer");
    set_num_threads(n);
    blas::set_num_threads(n);  // GEMM runs on OpenBLAS's own threads: keep both pools in step
  }, py::arg("num"));
  m.def("get_num_threads", &get_num_threads);
  m.def("set_flush_denormal", &set_flush_denormal, py::arg("mode"));
  m.def("_set_blas_library", &blas::set_library_path);
  m.def("_blas_available", &blas::available);
  // oneDNN, the optional convolution library (runtime/onednn.h): paths set at import, loaded lazily.
  m.def("_set_onednn_library", &onednn::set_library_paths, py::arg("paths"));
  m.def("_onednn_available", &onednn::available);
  m.def("_onednn_load_error", &onednn::load_error);
  m.def("_onednn_version", &onednn::version);
  m.def("_set_onednn_enabled", &onednn::set_enabled, py::arg("enabled"));
  m.def("_onednn_enabled", &onednn::enabled);
  m.def("_onednn_calls", &onednn::calls);
  m.def("_blas_load_error", &blas::load_error);
  // The kernel set OpenBLAS runs ("Haswell", "SkylakeX", ...): benchmarks print it, and the tests
  // check the AVX-512 choice on AMD CPUs (runtime/blas.cpp).
  m.def("_blas_core_name", []() -> std::string {
    using corename_fn = char* (*)();
    auto fn = reinterpret_cast<corename_fn>(blas::symbol("openblas_get_corename"));
    return fn ? std::string(fn()) : std::string();
  });
  m.def("_cpu_memory_allocated", &cpu_live_bytes);
  m.def("_cpu_max_memory_allocated", &cpu_peak_bytes);
  m.def("_cpu_reset_peak_memory_stats", &cpu_reset_peak_bytes);
  m.def("_cpu_empty_cache", &cpu_empty_cache);
  m.def("_cpu_cache_stats", [] {
    const CpuCacheStats s = cpu_cache_stats();
    py::dict d;
    d["cached_bytes"] = s.cached_bytes;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["enabled"] = s.enabled;
    d["cap_bytes"] = s.cap_bytes;
    return d;
  });
  // torch._C._get_cpu_capability: the instruction set of the kernels in use (fixed at import).
  m.def("_get_cpu_capability", [] { return std::string(cpu_capability_name(cpu_capability())); });
  m.def("_best_cpu_capability",
        [] { return std::string(cpu_capability_name(best_cpu_capability())); });
  m.def("_cpu_capability_note", &cpu_capability_note);
  // Whether the unary kernels call glibc's vector math library (kernels/vector_libm.h).
  m.def("_has_vector_libm", [] { return EMBER_VECTOR_LIBM_ACTIVE == 1; });
  m.def("_storage_use_count", [](const Tensor& t) { return t->storage.use_count(); });
}

}  // namespace ember::pyb
