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

// The edge a gradient for tensor `t` (Python object `obj`, requires grad) flows into: its
// recorded (node, output_nr), else its leaf accumulator's (made by `accumulate(obj)` the first
// time and kept in the slot). ember.autograd's edge_of, for the recording hot path.
py::object edge_of(py::handle obj, const Tensor& t, py::handle accumulate) {
  py::dict slot = meta_dict(t);
  if (PyObject* e = PyDict_GetItemString(slot.ptr(), "_ag_edge"))
    return py::reinterpret_borrow<py::object>(e);
  auto acc = py::reinterpret_borrow<py::object>(PyDict_GetItemString(slot.ptr(), "_accum"));
  if (!acc) {
    acc = accumulate(obj);
    slot["_accum"] = acc;
  }
  return py::make_tuple(acc, 0);
}

// Of a recorded call's arguments: the edge of each tensor requiring grad (None for the other
// arguments), whether each argument's gradient is wanted (a tuple of bools for a list of
// tensors), and any_need: 0 none, 1 some, 2 some and one of them complex. `refresh(t)`, when not
// None, runs first on each such tensor (a view whose base an in-place op rebased). ember.autograd's
// _inputs: it ran on every recorded op, where its attribute reads cost 3.5 us for two tensors.
py::tuple recorded_inputs(const py::tuple& args, py::handle accumulate, py::handle refresh) {
  py::list edges, needs;
  int any_need = 0;
  auto note = [&](const Tensor& t) { any_need = is_complex(t->dtype) ? 2 : std::max(any_need, 1); };
  for (py::handle a : args) {
    if (is_tensor(a)) {
      Tensor t = to_tensor(a);
      if (t->requires_grad) {
        if (!refresh.is_none()) refresh(a);
        edges.append(edge_of(a, t, accumulate));
        needs.append(py::bool_(true));
        note(t);
        continue;
      }
    } else if ((PyList_Check(a.ptr()) || PyTuple_Check(a.ptr())) && py::len(a) > 0) {
      py::sequence seq = py::reinterpret_borrow<py::sequence>(a);
      bool all_tensors = true;
      for (py::handle e : seq) all_tensors = all_tensors && is_tensor(e);
      if (all_tensors) {
        py::tuple wanted(py::len(seq));
        size_t i = 0;
        for (py::handle e : seq) {
          Tensor t = to_tensor(e);
          const bool need = t->requires_grad;
          if (need) {
            if (!refresh.is_none()) refresh(e);
            edges.append(edge_of(e, t, accumulate));
            note(t);
          } else {
            edges.append(py::none());
          }
          wanted[i++] = py::bool_(need);
        }
        needs.append(wanted);
        continue;
      }
    }
    edges.append(py::none());
    needs.append(py::bool_(false));
  }
  return py::make_tuple(edges, needs, any_need);
}

}  // namespace

void register_autograd_support(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(tensor_type()));
  py::object property = py::module_::import("builtins").attr("property");
  py::setattr(cls, "_ag", property(py::cpp_function([](const Tensor& t) { return meta_dict(t); })));
  m.def("_recorded_inputs", &recorded_inputs, py::arg("args"), py::arg("accumulate"),
        py::arg("refresh"));
  m.def("_has_autograd_meta", [](const Tensor& t) { return static_cast<bool>(t->autograd_meta); });
}

}  // namespace ember::pyb
