// bind_optim.cpp: the fused optimizer kernels (ops/optim_kernels.h) as private `_C` functions
// that ember.optim calls once per parameter group and step, declared in the op registry
// (python/registry.h). They update in place and are not differentiable (optimizers run under
// no_grad), so they never go to the autograd hook; CUDA tensors go to the device hook
// (ember/cuda/_optim_ops.py: one kernel launch per group, the same arithmetic).
//
// These are ember's kernels, not torch's `_fused_sgd_` / `_fused_adam_` (which take one
// is_first_step flag, a tensor or float lr, grad_scale/found_inf, and AdamW as its own op).
#include <algorithm>

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

// The CUDA form's address table, one row per parameter: the addresses of `columns` (a null
// list gives 0), then the element count and `last` (0 when empty). The kernels read gradients
// densely: a strided one (autograd may leave a Linear weight's gradient transposed) is copied
// into `dense`, which the caller keeps until the launch is queued.
py::bytes address_table(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                        const std::vector<const std::vector<Tensor>*>& columns,
                        const std::vector<bool>& last, std::vector<Tensor>& dense) {
  dense.clear();
  for (const Tensor& g : grads) dense.push_back(contiguous(g));  // g itself when dense already
  const size_t width = 2 + columns.size() + 1 + (last.empty() ? 0 : 1);
  std::vector<int64_t> table(params.size() * width, 0);
  for (size_t i = 0; i < params.size(); ++i) {
    int64_t* row = table.data() + i * width;
    size_t c = 0;
    row[c++] = reinterpret_cast<int64_t>(params[i]->device_data());
    row[c++] = reinterpret_cast<int64_t>(dense[i]->device_data());
    for (const auto* col : columns)
      row[c++] = col->empty() ? 0 : reinterpret_cast<int64_t>((*col)[i]->device_data());
    row[c++] = params[i]->numel();
    if (!last.empty()) row[c++] = last[i] ? 1 : 0;
  }
  return py::bytes(reinterpret_cast<const char*>(table.data()), table.size() * sizeof(int64_t));
}

// The call's arguments from `from` on, by name: what the device hook gets beside the lists.
py::dict keywords_from(const Args& a, int from) {
  py::dict kw;
  const auto& params = a.schema().params;
  for (int i = from; i < static_cast<int>(params.size()); ++i) kw[py::str(params[i].name)] = a[i];
  return kw;
}

int64_t max_numel(const std::vector<Tensor>& ts) {
  int64_t n = 0;
  for (const Tensor& t : ts) n = std::max(n, t->numel());
  return n;
}

void bump(std::initializer_list<const std::vector<Tensor>*> lists) {
  for (const auto* ts : lists)
    for (const Tensor& t : *ts) t->bump_version();
}

}  // namespace

// CUDA tensors: the same checks here, then the device hook launches one kernel per call with
// the address table built here (the step's Python work per parameter was most of its host time).
void register_optim(py::module_& m) {
  def_op(m, {.name = "_fused_sgd_",
             .signatures = {"_fused_sgd_(Tensor[] params, Tensor[] grads, Tensor[]? momentum_buffers, "
                            "Any first, *, float lr, float weight_decay, float momentum, "
                            "float dampening, bool nesterov, bool maximize) -> ()"},
             .family = "optim", .variants = kFunction, .hand_off = false,
             .doc = "momentum_buffers: None without momentum; first: one bool per parameter "
                    "(its buffer starts from the gradient).",
             .impl = [](const Args& a) {
               const auto p = a.tensors(0), g = a.tensors(1), b = opt_tensors(a, 2);
               const auto first = flags(a, 3);
               const double lr = a.real(4), wd = a.real(5), mom = a.real(6), damp = a.real(7);
               const bool nesterov = a.flag(8), maximize = a.flag(9);
               check_fused_sgd(p, g, b, first, mom);
               if (!p.empty() && !p[0]->device().is_cpu()) {
                 const std::vector<Tensor> none;
                 const bool use_mom = mom != 0.0;
                 py::dict kw = keywords_from(a, 3);  // first, lr, ..., maximize
                 std::vector<Tensor> dense;
                 kw["table"] = address_table(p, g, {use_mom ? &b : &none},
                                             use_mom ? first : std::vector<bool>(p.size(), false),
                                             dense);
                 kw["max_numel"] = max_numel(p);
                 call_device("_fused_sgd_", py::make_tuple(a[0], a[1], a[2]), kw);
                 bump({&p});
                 if (use_mom) bump({&b});
                 return py::object(py::none());
               }
               GilRelease nogil;
               fused_sgd_(p, g, b, first, lr, wd, mom, damp, nesterov, maximize);
               return py::object(py::none());
             }});
  def_op(m, {.name = "_fused_adam_",
             .signatures = {"_fused_adam_(Tensor[] params, Tensor[] grads, Tensor[] exp_avgs, "
                            "Tensor[] exp_avg_sqs, Tensor[]? max_exp_avg_sqs, Tensor[] steps, *, "
                            "float lr, float beta1, float beta2, float eps, float weight_decay, "
                            "bool amsgrad, bool maximize, bool decoupled) -> ()"},
             .family = "optim", .variants = kFunction, .hand_off = false,
             .doc = "Adam, or AdamW with decoupled=True; max_exp_avg_sqs: None without amsgrad.",
             .impl = [](const Args& a) {
               const auto p = a.tensors(0), g = a.tensors(1), m1 = a.tensors(2), m2 = a.tensors(3),
                          mx = opt_tensors(a, 4), st = a.tensors(5);
               const double lr = a.real(6), beta1 = a.real(7), beta2 = a.real(8), eps = a.real(9),
                            wd = a.real(10);
               const bool amsgrad = a.flag(11), maximize = a.flag(12), decoupled = a.flag(13);
               if (!p.empty() && !p[0]->device().is_cpu()) {
                 check_fused_adam(p, g, m1, m2, mx, st, amsgrad);
                 const std::vector<Tensor> none;
                 const std::vector<double> scalars = adam_step_scalars(st, lr, beta1, beta2);
                 py::dict kw = keywords_from(a, 6);  // lr, ..., decoupled
                 std::vector<Tensor> dense;
                 kw["table"] = address_table(p, g, {&m1, &m2, amsgrad ? &mx : &none}, {}, dense);
                 kw["scalars"] = py::bytes(reinterpret_cast<const char*>(scalars.data()),
                                           scalars.size() * sizeof(double));
                 kw["max_numel"] = max_numel(p);
                 call_device("_fused_adam_", py::make_tuple(a[0], a[1], a[2], a[3], a[4]), kw);
                 bump({&p, &m1, &m2});
                 if (amsgrad) bump({&mx});
                 return py::object(py::none());
               }
               GilRelease nogil;
               fused_adam_(p, g, m1, m2, mx, st, lr, beta1, beta2, eps, wd, amsgrad, maximize,
                           decoupled);
               return py::object(py::none());
             }});
}

}  // namespace ember::pyb
