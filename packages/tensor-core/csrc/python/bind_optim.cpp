// bind_optim.cpp: the fused optimizer kernels (ops/optim_kernels.h) as private `_C` functions
// that ember.optim calls once per parameter group and step, declared in the op registry
// (python/registry.h). They update in place and are not differentiable (optimizers run under
// no_grad), so they never go to the autograd hook; CUDA tensors go to the device hook
// (ember/cuda/_optim_ops.py: one kernel launch per group, the same arithmetic).
//
// These are ember's kernels, not torch's `_fused_sgd_` / `_fused_adam_` (which take one
// is_first_step flag, a tensor or float lr, grad_scale/found_inf, and AdamW as its own op).
#include "ops/optim_kernels.h"
#include "python/pyutils.h"
#include "python/registry.h"

namespace ember::pyb {
namespace {

// A Tensor[]? argument: None is an empty list (a state the group does not keep).
std::vector<Tensor> opt_tensors(const Args& a, int i) {
  return a.is_none(i) ? std::vector<Tensor>() : a.tensors(i);
}

// One first-step flag per parameter: a list or tuple of bools.
std::vector<bool> flags(const Args& a, int i) {
  py::handle h = a[i];
  std::vector<bool> r;
  bool ok = PyList_Check(h.ptr()) || PyTuple_Check(h.ptr());
  if (ok)
    for (py::handle item : py::reinterpret_borrow<py::sequence>(h)) {
      if (!PyBool_Check(item.ptr())) ok = false;
      r.push_back(item.ptr() == Py_True);
    }
  if (!ok)
    throw py::type_error(str_cat(a.schema().name, "(): argument '", a.schema().params[i].name,
                                 "' must be a list or tuple of bools, not ", type_of(h)));
  return r;
}

}  // namespace

void register_optim(py::module_& m) {
  def_op(m, {.name = "_fused_sgd_",
             .signatures = {"_fused_sgd_(Tensor[] params, Tensor[] grads, Tensor[]? momentum_buffers, "
                            "Any first, *, float lr, float weight_decay, float momentum, "
                            "float dampening, bool nesterov, bool maximize) -> ()"},
             .family = "optim", .variants = kFunction, .cuda = "ember.cuda",
             .doc = "momentum_buffers: None without momentum; first: one bool per parameter "
                    "(its buffer starts from the gradient).",
             .impl = [](const Args& a) {
               const auto p = a.tensors(0), g = a.tensors(1), b = opt_tensors(a, 2);
               const auto first = flags(a, 3);
               const double lr = a.real(4), wd = a.real(5), mom = a.real(6), damp = a.real(7);
               const bool nesterov = a.flag(8), maximize = a.flag(9);
               GilRelease nogil;
               fused_sgd_(p, g, b, first, lr, wd, mom, damp, nesterov, maximize);
               return py::object(py::none());
             }});
  def_op(m, {.name = "_fused_adam_",
             .signatures = {"_fused_adam_(Tensor[] params, Tensor[] grads, Tensor[] exp_avgs, "
                            "Tensor[] exp_avg_sqs, Tensor[]? max_exp_avg_sqs, Tensor[] steps, *, "
                            "float lr, float beta1, float beta2, float eps, float weight_decay, "
                            "bool amsgrad, bool maximize, bool decoupled) -> ()"},
             .family = "optim", .variants = kFunction, .cuda = "ember.cuda",
             .doc = "Adam, or AdamW with decoupled=True; max_exp_avg_sqs: None without amsgrad.",
             .impl = [](const Args& a) {
               const auto p = a.tensors(0), g = a.tensors(1), m1 = a.tensors(2), m2 = a.tensors(3),
                          mx = opt_tensors(a, 4), st = a.tensors(5);
               const double lr = a.real(6), beta1 = a.real(7), beta2 = a.real(8), eps = a.real(9),
                            wd = a.real(10);
               const bool amsgrad = a.flag(11), maximize = a.flag(12), decoupled = a.flag(13);
               GilRelease nogil;
               fused_adam_(p, g, m1, m2, mx, st, lr, beta1, beta2, eps, wd, amsgrad, maximize,
                           decoupled);
               return py::object(py::none());
             }});
}

}  // namespace ember::pyb
