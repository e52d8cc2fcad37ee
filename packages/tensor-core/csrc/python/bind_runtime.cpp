// bind_runtime.cpp: threads, the BLAS library location, the CPU kernels' capability, and
// allocator/introspection hooks.
#include "python/pyutils.h"
#include "runtime/blas.h"
#include "runtime/cpu_capability.h"
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
  // torch._C._get_cpu_capability: the instruction set of the kernels in use (fixed at import).
  m.def("_get_cpu_capability", [] { return std::string(cpu_capability_name(cpu_capability())); });
  m.def("_best_cpu_capability",
        [] { return std::string(cpu_capability_name(best_cpu_capability())); });
  m.def("_cpu_capability_note", &cpu_capability_note);
  m.def("_storage_use_count", [](const Tensor& t) { return t->storage.use_count(); });
}

}  // namespace ember::pyb
