// bind_runtime.cpp: threads, the BLAS library location, and allocator/introspection hooks.
#include "core/allocator.h"
#include "python/pyutils.h"
#include "runtime/blas.h"
#include "runtime/parallel.h"

namespace ember::pyb {

void register_runtime(py::module_& m) {
  m.def("set_num_threads", [](int n) {
    if (n < 1) throw std::runtime_error("set_num_threads expects a positive integer");
    set_num_threads(n);
    blas::set_num_threads(n);  // GEMM runs on OpenBLAS's own threads: keep both pools in step
  }, py::arg("num"));
  m.def("get_num_threads", &get_num_threads);
  m.def("_set_blas_library", &blas::set_library_path);
  m.def("_blas_available", &blas::available);
  m.def("_blas_load_error", &blas::load_error);
  m.def("_cpu_memory_allocated", &cpu_live_bytes);
  m.def("_cpu_max_memory_allocated", &cpu_peak_bytes);
  m.def("_cpu_reset_peak_memory_stats", &cpu_reset_peak_bytes);
  m.def("_storage_use_count", [](const Tensor& t) { return t->storage.use_count(); });
}

}  // namespace ember::pyb
