// bind_autograd.cpp: the per-tensor slot the autograd package keeps its state in.
//
// pybind11 hands out the same Python object for a TensorImpl only while that object is alive: a
// view's `_base`, or a tensor whose Python wrapper was dropped and is later re-wrapped, comes back
// as a fresh object with an empty __dict__. Autograd state (the grad_fn edge, .grad, the leaf's
// accumulator) must follow the TensorImpl instead, so it lives in a Python dict owned by
// TensorImpl::autograd_meta and reached through `Tensor._ag`. The core never reads it.
#include "python/pyutils.h"

namespace ember::pyb {
namespace {

struct PyAutogradMeta final : AutogradMeta {
  PyObject* dict = nullptr;
  ~PyAutogradMeta() override {
    // Usually destroyed with the GIL held (the last reference is a Python object's); take it when
    // not, and leak the dict rather than touch a finalizing interpreter.
    if (!dict || !Py_IsInitialized() || _Py_IsFinalizing()) return;
    py::gil_scoped_acquire gil;
    Py_DECREF(dict);
  }
};

py::dict meta_dict(const Tensor& t) {
  // The core never sets autograd_meta itself, so it is either null or ours.
  auto* m = static_cast<PyAutogradMeta*>(t->autograd_meta.get());
  if (!m) {
    auto meta = std::make_shared<PyAutogradMeta>();
    meta->dict = PyDict_New();
    if (!meta->dict) throw py::error_already_set();
    m = meta.get();
    t->autograd_meta = std::move(meta);
  }
  return py::reinterpret_borrow<py::dict>(m->dict);
}

}  // namespace

void register_autograd_support(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(tensor_type()));
  py::object property = py::module_::import("builtins").attr("property");
  py::setattr(cls, "_ag", property(py::cpp_function([](const Tensor& t) { return meta_dict(t); })));
  m.def("_has_autograd_meta", [](const Tensor& t) { return static_cast<bool>(t->autograd_meta); });
}

}  // namespace ember::pyb
