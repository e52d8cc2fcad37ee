// module.cpp: the `ember._C` extension module: registers each binding group in dependency order.
#include "python/pyutils.h"
#include "python/registry.h"

PYBIND11_MODULE(_C, m) {
  using namespace ember::pyb;
  m.doc() = "ember's C++ tensor core";
  set_core_module(m);
  register_dtypes(m);
  register_tensor(m);
  register_registry(m);  // before the groups that declare their ops in it
  register_ops(m);
  register_reductions(m);
  register_sort(m);
  register_indexing(m);
  register_linalg(m);
  register_shape(m);
  register_lapack(m);
  register_random(m);
  register_interop(m);
  register_runtime(m);
  register_storage(m);
  register_shared(m);
  register_nn_kernels(m);
  register_optim(m);
  register_autograd_support(m);
  register_aliases(m);
  register_cuda(m);
  register_extension_api(m);
}
