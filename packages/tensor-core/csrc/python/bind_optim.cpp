// bind_optim.cpp: the fused optimizer kernels (ops/optim_kernels.h) as private `_C` functions
// that ember.optim calls once per parameter group and step. They update in place and are not
// differentiable (optimizers run under no_grad), so they never go through the autograd hook.
#include "ops/optim_kernels.h"
#include "python/pyutils.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {

// A list of tensors; None entries stay null when `allow_none` (unused state buffers).
std::vector<Tensor> tensor_list(py::handle h, const char* op, const char* arg,
                                bool allow_none = false) {
  std::vector<Tensor> out;
  if (h.is_none()) return out;
  if (!py::isinstance<py::sequence>(h))
    throw py::type_error(str_cat(op, "(): argument '", arg, "' must be a list of tensors"));
  for (auto item : py::reinterpret_borrow<py::sequence>(h)) {
    if (allow_none && item.is_none()) out.push_back(nullptr);
    else out.push_back(expect_tensor(item, op, arg));
  }
  return out;
}

}  // namespace

void register_optim(py::module_& m) {
  m.def(
      "_fused_sgd_",
      [](py::handle params, py::handle grads, py::handle bufs, std::vector<bool> first, double lr,
         double weight_decay, double momentum, double dampening, bool nesterov, bool maximize) {
        const char* op = "_fused_sgd_";
        auto p = tensor_list(params, op, "params");
        auto g = tensor_list(grads, op, "grads");
        auto b = tensor_list(bufs, op, "momentum_buffers", true);
        GilRelease nogil;
        fused_sgd_(p, g, b, first, lr, weight_decay, momentum, dampening, nesterov, maximize);
      },
      "params"_a, "grads"_a, "momentum_buffers"_a, "first"_a, py::kw_only(), "lr"_a,
      "weight_decay"_a, "momentum"_a, "dampening"_a, "nesterov"_a, "maximize"_a);
  m.def(
      "_fused_adam_",
      [](py::handle params, py::handle grads, py::handle exp_avgs, py::handle exp_avg_sqs,
         py::handle max_exp_avg_sqs, py::handle steps, double lr, double beta1, double beta2,
         double eps, double weight_decay, bool amsgrad, bool maximize, bool decoupled) {
        const char* op = "_fused_adam_";
        auto p = tensor_list(params, op, "params");
        auto g = tensor_list(grads, op, "grads");
        auto m1 = tensor_list(exp_avgs, op, "exp_avgs");
        auto m2 = tensor_list(exp_avg_sqs, op, "exp_avg_sqs");
        auto mx = tensor_list(max_exp_avg_sqs, op, "max_exp_avg_sqs", true);
        auto st = tensor_list(steps, op, "steps");
        GilRelease nogil;
        fused_adam_(p, g, m1, m2, mx, st, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize,
                    decoupled);
      },
      "params"_a, "grads"_a, "exp_avgs"_a, "exp_avg_sqs"_a, "max_exp_avg_sqs"_a, "steps"_a,
      py::kw_only(), "lr"_a, "beta1"_a, "beta2"_a, "eps"_a, "weight_decay"_a, "amsgrad"_a,
      "maximize"_a, "decoupled"_a);
}

}  // namespace ember::pyb
