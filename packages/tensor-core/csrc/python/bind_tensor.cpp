// bind_tensor.cpp: the Python Tensor type: metadata, views, basic indexing, conversions and
// creation functions. Ops that autograd must see go through `call_autograd` when an input
// requires grad; the function handed to the hook is the module-level `_C` function with
// canonical arguments, so the autograd package runs the very same forward.
#include <pybind11/numpy.h>

#include <cmath>
#include <cstring>

#include "python/pyutils.h"

using namespace pybind11::literals;

namespace ember::pyb {


// ember.Size of `sizes` (torch.Size's counterpart), made as tuple.__new__(Size, ...) does: the
// Python constructor's per-item check is for sizes from users, not the core's ints (`.shape` is
// read on every op of a model's Python code).
py::object size_object(const Shape& sizes) {
  static PyObject* size_type = [] {
    return py::object(core_fn("Size")).release().ptr();  // kept for the process
  }();
  py::tuple items(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) items[i] = py::int_(sizes[i]);
  py::tuple args = py::make_tuple(items);
  PyObject* r = PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(size_type), args.ptr(), nullptr);
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

#define EMBER_AUTOGRAD(cond, name, ...)                                                 \
  if (cond) return redispatch(name, core_fn(name), py::make_tuple(__VA_ARGS__), py::dict())

// ---------------------------------------------------------------------------------------------
// Python data -> tensor

namespace {

struct DataInfo {
  Shape shape;
  int category = -1;  // 0 bool, 1 int, 2 float
  ScalarType tensor_dtype = ScalarType::Undefined;  // when elements are tensors
  // The depth of the elements (numbers, or the innermost dim of tensor elements): the same for
  // all, or the data is ragged ([1, [2]] must raise, not fill a (2, 1) tensor).
  int64_t leaf_depth = -1;
  ScalarType dtype = ScalarType::Undefined;  // given: elements are converted, not inferred
};

// A number or tensor element ending at `depth`: every element must end at the same depth.
void check_leaf_depth(py::handle obj, size_t depth, DataInfo& info) {
  const auto d = static_cast<int64_t>(depth);
  if (info.leaf_depth < 0) info.leaf_depth = d;
  if (info.leaf_depth != d || d < static_cast<int64_t>(info.shape.size()))
    throw py::type_error(str_cat("not a sequence: expected a sequence of length ",
                                 info.shape[std::min(depth, info.shape.size() - 1)], " at dim ",
                                 std::min(depth, info.shape.size() - 1), ", got ",
                                 std::string(py::str(py::type::of(obj).attr("__name__")))));
}

bool is_sequence(py::handle h) {
  return (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()) ||
          (PySequence_Check(h.ptr()) && !PyUnicode_Check(h.ptr()) && !PyBytes_Check(h.ptr()) &&
           !is_tensor(h)));
}

void infer_data(py::handle obj, size_t depth, DataInfo& info) {
  if (is_tensor(obj)) {
    Tensor t = to_tensor(obj);
    for (auto s : t->sizes) {
      if (depth >= info.shape.size()) info.shape.push_back(s);
      else if (info.shape[depth] != s)
        throw ValueError(str_cat("expected sequence of length ", info.shape[depth], " at dim ",
                                 depth, " (got ", s, ")"));
      ++depth;
    }
    check_leaf_depth(obj, depth, info);
    info.tensor_dtype = promote_types(info.tensor_dtype, t->dtype);
    info.category = std::max(info.category, category(t->dtype));
    return;
  }
  if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) {  // (may exceed int64: a uint64)
    info.category = std::max(info.category, 1);
    check_leaf_depth(obj, depth, info);
    return;
  }
  if (is_number(obj)) {
    Scalar s = to_scalar(obj);
    info.category = std::max(info.category, s.is_bool() ? 0 : s.is_int() ? 1 : s.is_complex() ? 3 : 2);
    check_leaf_depth(obj, depth, info);
    return;
  }
  if (!is_sequence(obj) || PyUnicode_Check(obj.ptr()) || PyBytes_Check(obj.ptr())) {
    const std::string type_name = py::str(py::type::of(obj).attr("__name__"));
    if (info.dtype != ScalarType::Undefined)  // (torch's conversion into the given dtype)
      throw py::type_error(is_integral(info.dtype, true)
                               ? str_cat("'", type_name, "' object cannot be interpreted as an integer")
                               : str_cat("must be real number, not ", type_name));
    if (PyUnicode_Check(obj.ptr()) || PyBytes_Check(obj.ptr()))  // (torch's classes)
      throw py::type_error(str_cat("new(): invalid data type '", type_name, "'"));
    throw std::runtime_error(str_cat("Could not infer dtype of ", type_name));
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  int64_t n = static_cast<int64_t>(py::len(seq));
  if (info.leaf_depth >= 0 && static_cast<int64_t>(depth) >= info.leaf_depth)
    throw py::type_error(str_cat(
        "'", std::string(py::str(py::type::of(obj).attr("__name__"))),
        "' object cannot be interpreted as a number: expected a number at dim ", depth,
        " like the elements before it"));
  if (depth >= info.shape.size()) {
    if (depth > info.shape.size())
      throw ValueError(str_cat("expected a number at dim ", depth, " but got a sequence"));
    info.shape.push_back(n);
  } else if (info.shape[depth] != n) {
    throw ValueError(str_cat("expected sequence of length ", info.shape[depth], " at dim ", depth,
                             " (got ", n, ")"));
  }
  for (int64_t i = 0; i < n; ++i) infer_data(seq[i], depth + 1, info);
}

template <typename T> void fill_data(py::handle obj, T*& out) {
  if (is_tensor(obj)) {
    Tensor t = to_tensor(obj);
    if (on_device(t)) t = to_device_copy(t, Device{}, false);  // waits for the device's work
    t = contiguous(to_dtype(t, scalar_type_of<T>()));
    // an empty tensor may have no data pointer (and `out` none either): memcpy of null is UB
    if (t->numel()) std::memcpy(out, t->data(), t->numel() * sizeof(T));
    out += t->numel();
    return;
  }
  if constexpr (std::is_same_v<T, uint64_t>) {  // uint64 holds ints beyond int64's range
    // (torch reads a uint64's Python numbers as unsigned ints: a float or complex is refused)
    if (PyFloat_Check(obj.ptr()) || PyComplex_Check(obj.ptr()))
      throw py::type_error("an integer is required");
    if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
      if (overflow < 0 || (overflow == 0 && v < 0)) {  // torch reads them as unsigned: refused
        PyErr_SetString(PyExc_OverflowError, "can't convert negative int to unsigned");
        throw py::error_already_set();
      }
      if (overflow > 0) {
        const unsigned long long u = PyLong_AsUnsignedLongLong(obj.ptr());
        if (PyErr_Occurred()) {
          PyErr_Clear();
          throw std::runtime_error("value cannot be converted to type uint64_t without overflow");
        }
        *out++ = u;
        return;
      }
    }
  }
  if (is_number(obj)) {
    *out++ = to_scalar(obj).to_checked<T>();
    return;
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  for (auto item : seq) fill_data<T>(item, out);
}

// torch's deprecated `device` argument of pin_memory/is_pinned: its type checked, a warning,
// and whether it names an accelerator (ember.device's own errors for a bad index or string).
bool names_accelerator(const char* op, py::handle device) {
  PyObject* p = device.ptr();
  if (!PyUnicode_Check(p) && !(PyLong_Check(p) && !PyBool_Check(p)) && type_of(device) != "device")
    throw py::type_error(str_cat(op, "(): argument 'device' (position 1) must be ember.device, "
                                 "not ", type_of(device)));
  const std::string warning = str_cat("The argument 'device' of Tensor.", op,
                                      "() is deprecated. Please do not pass this argument.");
  if (PyErr_WarnEx(PyExc_DeprecationWarning, warning.c_str(), 1) < 0) throw py::error_already_set();
  return py::module_::import("ember").attr("device")(device).attr("type").cast<std::string>() !=
         "cpu";
}

}  // namespace

Tensor tensor_from_data(py::handle data, ScalarType dtype) {
  // NumPy arrays and other buffer exporters: zero-copy view, then a converting copy.
  if (!is_tensor(data) && !is_number(data) && py::hasattr(data, "__array_interface__")) {
    // asarray keeps 0-d arrays 0-d; byte-swapped data is brought to native order first.
    // require "CA": C-contiguous and aligned (copies only when the array is neither).
    py::object arr = py::module_::import("numpy").attr("require")(
        py::module_::import("numpy").attr("asarray")(data), py::none(), "CA");
    if (!arr.attr("dtype").attr("isnative").cast<bool>())
      arr = arr.attr("astype")(arr.attr("dtype").attr("newbyteorder")("="));
    Tensor src = core_fn("_from_numpy")(arr).cast<Tensor>();
    return to_dtype(src, dtype == ScalarType::Undefined ? src->dtype : dtype, true);
  }
  // torch's order: a string as the data itself is refused, whatever the dtype; then torch
  // walks the first elements down (its shape), where a non-empty string is a sequence of
  // strings that never ends, before it reads any other element
  if (PyUnicode_Check(data.ptr()) || PyBytes_Check(data.ptr()))
    throw py::type_error(str_cat("new(): invalid data type '",
                                 std::string(py::str(py::type::of(data).attr("__name__"))), "'"));
  py::handle first = data;
  while ((PyList_Check(first.ptr()) || PyTuple_Check(first.ptr())) && py::len(first) > 0)
    first = PySequence_Fast_GET_ITEM(first.ptr(), 0);
  if ((PyUnicode_Check(first.ptr()) || PyBytes_Check(first.ptr())) && py::len(first) > 0)
    throw py::value_error(str_cat("too many dimensions '",
                                  std::string(py::str(py::type::of(first).attr("__name__"))), "'"));
  DataInfo info;
  info.dtype = dtype;
  infer_data(data, 0, info);
  ScalarType dt = dtype;
  if (dt == ScalarType::Undefined) {
    if (info.tensor_dtype != ScalarType::Undefined && category(info.tensor_dtype) >= info.category)
      dt = info.tensor_dtype;
    else
      dt = info.category == 0 ? ScalarType::Bool
           : info.category == 1 ? ScalarType::Int64
           : info.category == 3 ? to_complex_type(get_default_dtype())
                                : get_default_dtype();
  }
  Tensor t = empty(info.shape, dt);
  dispatch_every(dt, "tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t->data_as<T>();
    fill_data<T>(data, p);
  });
  return t;
}

// ---------------------------------------------------------------------------------------------
// Basic indexing: ints, slices (with steps), None, Ellipsis, and bools.

static bool is_basic_index(py::handle h) {
  PyObject* p = h.ptr();
  if (PyBool_Check(p)) return false;  // x[True] adds a dim like a mask: advanced, not x[1]
  return PyLong_Check(p) || PySlice_Check(p) || p == Py_None || p == Py_Ellipsis ||
         (py::hasattr(h, "__index__") && !is_tensor(h) && !PyBool_Check(p));
}

Tensor apply_basic_index(const Tensor& self, py::handle index) {
  std::vector<py::object> items;
  if (PyTuple_Check(index.ptr())) {
    for (auto it : py::reinterpret_borrow<py::tuple>(index)) items.push_back(py::reinterpret_borrow<py::object>(it));
  } else {
    items.push_back(py::reinterpret_borrow<py::object>(index));
  }
  int64_t consumed = 0, ellipses = 0;
  for (auto& it : items) {
    PyObject* p = it.ptr();
    if (PyFloat_Check(p) || PyUnicode_Check(p) || PyBytes_Check(p) || PyComplex_Check(p))
      throw IndexError(str_cat("only integers, slices (`:`), ellipsis (`...`), None and long or "
                               "byte Variables are valid indices (got ",
                               std::string(py::str(py::type::of(it).attr("__name__"))), ")"));
    if (!is_basic_index(it) && !(is_tensor(it) && to_tensor(it)->dim() == 0 &&
                                 is_integral(to_tensor(it)->dtype, false)))
      throw NotImplementedError(
          "ember: advanced indexing (integer tensors, lists or boolean masks) is not supported "
          "yet; use index_select/masked_select or basic indexing");
    if (it.ptr() == Py_Ellipsis) ++ellipses;
    else if (!it.is_none()) ++consumed;
  }
  EMBER_CHECK(ellipses <= 1, IndexError, "an index can only have a single ellipsis ('...')");
  EMBER_CHECK(consumed <= self->dim(), IndexError, "too many indices for tensor of dimension ",
              self->dim());
  Tensor t = make_view(self, self->sizes, self->strides, self->offset);
  int64_t d = 0;
  for (auto& it : items) {
    PyObject* p = it.ptr();
    if (p == Py_Ellipsis) {
      d += self->dim() - consumed;
    } else if (p == Py_None) {
      t = unsqueeze(t, d);
      ++d;
    } else if (PySlice_Check(p)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(p, &start, &stop, &step) < 0) throw py::error_already_set();
      EMBER_CHECK(step > 0, ValueError, "step must be greater than zero");
      int64_t size = t->sizes[d];
      PySlice_AdjustIndices(size, &start, &stop, step);
      t = slice(t, d, start, std::max<int64_t>(start, stop), step);
      ++d;
    } else {
      int64_t i = is_tensor(it) ? to_scalar(it).to_int() : py::int_(it.attr("__index__")()).cast<int64_t>();
      t = select(t, d, i);
    }
  }
  return t;
}

// x[index] = value: the autograd hook sees it as `_setitem(self, index, value)` when self or a
// tensor value requires grad.
static void setitem(const Tensor& self, py::object index, py::object value) {
  if ((self->requires_grad && grad_enabled()) || (is_tensor(value) && needs_grad(to_tensor(value)))) {
    redispatch("_setitem", core_fn("_setitem"), py::make_tuple(self, index, value), py::dict());
    return;
  }
  apply_setitem(self, index, value);
}

// ---------------------------------------------------------------------------------------------
// Conversions to Python

static py::object scalar_to_py(const char* data, ScalarType dt) {
  return dispatch_every(dt, "item", [&](auto tag) -> py::object {
    using T = typename decltype(tag)::type;
    T v;
    std::memcpy(&v, data, sizeof(T));
    if constexpr (is_complex_v<T>)
      return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(v.real(), v.imag()));
    else if constexpr (std::is_same_v<T, bool>) return py::bool_(v);
    else if constexpr (std::is_same_v<T, uint64_t>)
      return py::reinterpret_steal<py::object>(PyLong_FromUnsignedLongLong(v));
    else if constexpr (std::is_integral_v<T>) return py::int_(static_cast<int64_t>(v));
    else return py::float_(static_cast<double>(static_cast<opmath_t<T>>(v)));
  });
}

py::object item(const Tensor& t) {
  if (on_device(t)) return item(to_device_copy(t, Device{}, false));  // waits for the device
  if (t->numel() != 1)
    throw std::runtime_error(str_cat("a Tensor with ", t->numel(),
                                     " elements cannot be converted to Scalar"));
  return scalar_to_py(t->data(), t->dtype);
}

// float(t) / int(t) take one-element tensors only (ValueError, as PyTorch raises).
static const Tensor& one_element(const Tensor& t) {
  if (t->numel() != 1)
    throw ValueError("only one element tensors can be converted to Python scalars");
  return t;
}

static py::object tolist_rec(const Tensor& t, int64_t d, const char* p) {
  if (d == t->dim()) return scalar_to_py(p, t->dtype);
  py::list out(t->sizes[d]);
  int64_t step = t->strides[d] * static_cast<int64_t>(t->element_size());
  for (int64_t i = 0; i < t->sizes[d]; ++i) out[i] = tolist_rec(t, d + 1, p + i * step);
  return std::move(out);
}

// ---------------------------------------------------------------------------------------------

static void set_requires_grad(const Tensor& t, bool value) {
  if (value) {
    if (!is_floating(t->dtype) && !is_complex(t->dtype))
      throw std::runtime_error("only Tensors of floating point and complex dtype can require gradients");
    ensure_autograd_available();
  }
  t->requires_grad = value;
}

static Tensor convert(const Tensor& t, ScalarType dt, bool copy) {
  return to_dtype(t, dt == ScalarType::Undefined ? t->dtype : dt, copy);
}

// x.to(...): to(dtype), to(device), to(device, dtype), to(other), with copy/non_blocking.
static py::object to_dtype_device(const Tensor& self, py::args args, py::kwargs kwargs,
                                   py::object& memory_format);

// memory_format=: applied after the dtype and device step (ember/_memory_format.py)
static py::object to_method(const Tensor& self, py::args args, py::kwargs kwargs) {
  py::object memory_format = py::none();
  py::object out = to_dtype_device(self, args, kwargs, memory_format);
  if (memory_format.is_none()) return out;
  return py::module_::import("ember._memory_format").attr("_to")(out, memory_format);
}

// torch's warning when a conversion keeps only the real part of complex values (not to bool,
// which reads both parts).
static void warn_if_discarding_imag(ScalarType from, ScalarType to) {
  if (is_complex(from) && !is_complex(to) && to != ScalarType::Bool)
    warn("Casting complex values to real discards the imaginary part");
}

// torch's three forms of Tensor.to, checked before any argument is applied (so that a negative
// device index beside an argument of no form is torch's TypeError, not a device error):
// (device=None, dtype=None, non_blocking=False, copy=False), (dtype, non_blocking=False,
// copy=False) and (tensor, non_blocking=False, copy=False), each with keyword memory_format.
enum class ToArg { Device, DType, Tensor, Bool };
struct ToParam { const char* name; ToArg kind; bool none_ok; };

static bool to_arg_matches(ToArg kind, bool none_ok, py::handle v) {
  PyObject* o = v.ptr();
  if (o == Py_None) return none_ok;
  switch (kind) {
    case ToArg::Device:
      return PyUnicode_Check(o) || (PyLong_Check(o) && !PyBool_Check(o)) || type_of(v) == "device";
    case ToArg::DType:
      return py::isinstance<DType>(v) || o == (PyObject*)&PyFloat_Type ||
             o == (PyObject*)&PyLong_Type || o == (PyObject*)&PyBool_Type ||
             o == (PyObject*)&PyComplex_Type;
    case ToArg::Tensor: return is_tensor(v);
    case ToArg::Bool: return PyBool_Check(o) || type_of(v) == "bool_";
  }
  return false;
}

static void check_to_arguments(const py::args& args, const py::kwargs& kwargs) {
  static const std::vector<std::vector<ToParam>> forms = {
      {{"device", ToArg::Device, true}, {"dtype", ToArg::DType, true},
       {"non_blocking", ToArg::Bool, false}, {"copy", ToArg::Bool, false}},
      {{"dtype", ToArg::DType, false}, {"non_blocking", ToArg::Bool, false},
       {"copy", ToArg::Bool, false}},
      {{"tensor", ToArg::Tensor, false}, {"non_blocking", ToArg::Bool, false},
       {"copy", ToArg::Bool, false}}};
  for (const auto& form : forms) {
    bool ok = args.size() <= form.size();
    for (size_t i = 0; ok && i < args.size(); ++i)
      ok = to_arg_matches(form[i].kind, form[i].none_ok, args[i]);
    for (auto kv : kwargs) {
      if (!ok) break;
      const std::string k = py::str(kv.first);
      if (k == "memory_format") continue;
      size_t i = 0;
      while (i < form.size() && k != form[i].name) ++i;
      ok = i < form.size() && i >= args.size() &&
           to_arg_matches(form[i].kind, form[i].none_ok, kv.second);
    }
    if (ok) return;
  }
  std::string got;
  for (py::handle a : args) got += str_cat(got.empty() ? "" : ", ", type_of(a));
  for (auto kv : kwargs)
    got += str_cat(got.empty() ? "" : ", ", py::str(kv.first).cast<std::string>(), "=",
                   type_of(kv.second));
  throw py::type_error(str_cat(
      "to() received an invalid combination of arguments - got (", got, "), but expected one "
      "of:\n * (ember.device device = None, ember.dtype dtype = None, bool non_blocking = False, "
      "bool copy = False, *, ember.memory_format memory_format = None)\n * (ember.dtype dtype, "
      "bool non_blocking = False, bool copy = False, *, ember.memory_format memory_format = "
      "None)\n * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
      "ember.memory_format memory_format = None)"));
}

static py::object to_dtype_device(const Tensor& self, py::args args, py::kwargs kwargs,
                                   py::object& memory_format) {
  check_to_arguments(args, kwargs);
  ScalarType dt = ScalarType::Undefined;
  Device dev = self->device();
  bool copy = false, non_blocking = false;
  // the positional arguments by the form that matched; then non_blocking and copy
  size_t flags = 0;
  if (!args.empty() && is_tensor(args[0])) {
    Tensor o = to_tensor(args[0]);
    dt = o->dtype, dev = o->device(), flags = 1;
  } else if (!args.empty() && to_arg_matches(ToArg::DType, false, args[0])) {
    dt = to_dtype(args[0]), flags = 1;
  } else {
    if (!args.empty() && !args[0].is_none()) dev = to_device(args[0]);
    if (args.size() > 1 && !args[1].is_none()) dt = to_dtype(args[1]);
    flags = 2;
  }
  if (args.size() > flags) non_blocking = PyObject_IsTrue(args[flags].ptr()) == 1;
  if (args.size() > flags + 1) copy = PyObject_IsTrue(args[flags + 1].ptr()) == 1;
  for (auto kv : kwargs) {
    std::string k = py::str(kv.first);
    if (k == "dtype") dt = to_dtype(kv.second);
    else if (k == "device") dev = kv.second.is_none() ? self->device() : to_device(kv.second);
    else if (k == "copy") copy = kv.second.cast<bool>();
    else if (k == "non_blocking") non_blocking = kv.second.cast<bool>();
    else if (k == "memory_format") memory_format = py::reinterpret_borrow<py::object>(kv.second);
    else throw py::type_error("to() got an unexpected keyword argument '" + k + "'");
  }
  if (dt == ScalarType::Undefined) dt = self->dtype;
  warn_if_discarding_imag(self->dtype, dt);
  dev = resolve_device(dev, "Tensor.to('" + dev.str() + "')");
  if (dev != self->device()) {
    EMBER_AUTOGRAD(needs_grad(self), "_to_device", self, py::str(dev.str()),
                   dtype_object(dt), non_blocking);
    // A narrowing conversion runs before the copy (fewer bytes to move), a widening one after.
    Tensor t = self;
    if (itemsize(dt) < t->element_size()) t = convert(t, dt, false);
    t = to_device_copy(t, dev, non_blocking);
    return wrap(convert(t, dt, false));
  }
  if (dt == self->dtype && !copy) return py::cast(self);
  EMBER_AUTOGRAD(needs_grad(self), "_to_dtype", self, dtype_object(dt), copy);
  return wrap(convert(self, dt, copy));
}

void register_tensor(py::module_& m) {
  // x.to(device) as the autograd hook records it (_to_device in the gradient table).
  m.def("_to_device", [](py::object x, py::object device, py::object dtype, bool non_blocking) {
    return x.attr("to")(device, dtype, "non_blocking"_a = non_blocking);
  });
  auto cls = py::class_<TensorImpl, std::shared_ptr<TensorImpl>>(m, "Tensor", py::dynamic_attr(),
                                                                  py::buffer_protocol());
  // Tensor(data): a new tensor over data's storage, detached (torch's legacy constructor given a
  // tensor). It is what lets a Python subclass (nn.Parameter, a user's class) be instantiated:
  // each Python object owns its own TensorImpl, sharing the data.
  cls.def(py::init([](const Tensor& data) { return alias(data); }), py::arg("data"));
  // torch's other legacy forms, in the default dtype: Tensor() (empty), Tensor(2, 3)
  // (uninitialised, of those sizes) and Tensor(sequence) (its values).
  cls.def(py::init([](py::args args) -> Tensor {
    const ScalarType dt = get_default_dtype();
    if (args.empty()) return empty({0}, dt);
    // (ints, NumPy integers, one-element integer tensors: torch's *sizes; after the first, a
    // bool is an int too: Tensor(2, True) is 2 x 1, Tensor(True) no size)
    bool sizes = is_int_list_item(args[0]);
    for (size_t i = 1; i < args.size(); ++i)
      sizes &= is_int_list_item(args[i]) || PyBool_Check(args[i].ptr());
    if (sizes) {
      std::vector<int64_t> shape;
      for (py::handle h : args)
        shape.push_back(PyBool_Check(h.ptr()) ? int64_t{h.ptr() == Py_True} : as_int(h));
      return empty(shape, dt);
    }
    EMBER_CHECK(args.size() == 1 && PySequence_Check(args[0].ptr()), py::type_error,
                "new(): data must be a sequence (got ", py::str(py::type::handle_of(args[0])
                .attr("__name__")).cast<std::string>(), ")");
    return alias(core_fn("tensor")(args[0], "dtype"_a = dtype_object(dt)).cast<Tensor>());
  }));
  cls.def_property_readonly("shape", [](const Tensor& t) { return size_object(t->sizes); })
      .def_property_readonly("dtype", [](const Tensor& t) { return dtype_object(t->dtype); })
      .def_property_readonly("device", [](const Tensor& t) { return device_object(t->device()); })
      .def_property_readonly("ndim", &TensorImpl::dim)
      .def_property_readonly("is_cuda", [](const Tensor& t) { return !t->device().is_cpu(); })
      .def_property_readonly("is_cpu", [](const Tensor& t) { return t->device().is_cpu(); })
      .def_property_readonly("is_sparse", [](const Tensor&) { return false; })
      .def_property_readonly("is_quantized", [](const Tensor&) { return false; })
      .def_property_readonly("is_meta", [](const Tensor&) { return false; })
      .def_property_readonly("layout", [](const Tensor&) { return core_fn("strided"); })
      .def_property_readonly("itemsize", [](const Tensor& t) { return t->element_size(); })
      .def_property_readonly("nbytes", [](const Tensor& t) { return t->numel() * t->element_size(); })
      .def_property_readonly("_version", [](const Tensor& t) { return t->version->value.load(); })
      .def_property_readonly("_base", [](const Tensor& t) -> py::object {
        return t->base ? py::cast(t->base) : py::none();
      })
      .def("_bump_version", [](const Tensor& t) { t->bump_version(); })
      .def("_is_view", [](const Tensor& t) { return static_cast<bool>(t->base); })
      .def("_shares_storage", [](const Tensor& a, const Tensor& b) { return a->storage == b->storage; })
      .def("_storage_nbytes", [](const Tensor& t) { return t->storage->nbytes; })
      .def("dim", &TensorImpl::dim)
      .def("ndimension", &TensorImpl::dim)
      .def("numel", &TensorImpl::numel)
      .def("nelement", &TensorImpl::numel)
      .def("element_size", &TensorImpl::element_size)
      .def("is_contiguous", [](py::object self, py::object memory_format) -> bool {
             if (memory_format.is_none()) return to_tensor(self)->is_contiguous();
             return py::module_::import("ember._memory_format")
                 .attr("_is_contiguous")(self, memory_format).cast<bool>();
           }, py::kw_only(), py::arg("memory_format") = py::none())
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t->dtype); })
      .def("is_complex", [](const Tensor&) { return false; })
      .def("is_signed", [](const Tensor& t) {
        return is_signed_type(t->dtype);
      })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t->device_data()); })
      .def("storage_offset", [](const Tensor& t) { return t->offset; })
      .def("get_device", [](const Tensor& t) { return t->device().is_cpu() ? -1 : int(t->device().index); })
      .def("size", [](const Tensor& t, py::object dim) -> py::object {
        if (dim.is_none()) return size_object(t->sizes);
        if (!is_int_like(dim))
          throw py::type_error(str_cat("size(): argument 'dim' (position 1) must be int, not ",
                                       type_of(dim)));
        return py::int_(t->sizes[wrap_dim(as_int(dim), t->dim(), false)]);
      }, py::arg("dim") = py::none())
      .def("stride", [](const Tensor& t, py::object dim) -> py::object {
        if (dim.is_none()) return py::tuple(py::cast(t->strides));
        if (!is_int_like(dim))  // (a bool or a float is torch's TypeError, not a dim)
          throw py::type_error(str_cat("stride(): argument 'dim' (position 1) must be int, not ",
                                       type_of(dim)));
        return py::int_(t->strides[wrap_dim(as_int(dim), t->dim(), false)]);
      }, py::arg("dim") = py::none())
      .def("__len__", [](const Tensor& t) {
        if (t->dim() == 0) throw py::type_error("len() of a 0-d tensor");
        return t->sizes[0];
      })
      // autograd slots
      .def_property("requires_grad", [](const Tensor& t) { return t->requires_grad; },
                    [](const Tensor& t, bool v) { set_requires_grad(t, v); })
      .def("requires_grad_", [](py::object self, bool v) {
        set_requires_grad(self.cast<Tensor>(), v);
        return self;
      }, py::arg("requires_grad").noconvert() = true)  // a bool, not 0 or a tensor (torch)
      .def_property_readonly("is_leaf", [](py::object self) {
        // A tensor is a leaf unless the autograd package recorded a grad_fn for it.
        py::object fn = py::getattr(self, "grad_fn", py::none());
        return fn.is_none();
      })
      // conversions
      .def("item", &item)
      .def("tolist", [](const Tensor& t) {
        if (on_device(t)) {
          Tensor host = to_device_copy(t, Device{}, false);
          return tolist_rec(host, 0, host->data());
        }
        return tolist_rec(t, 0, t->data());
      })
      .def("__bool__", [](const Tensor& t) {
        if (t->numel() != 1)
          throw std::runtime_error(str_cat("Boolean value of Tensor with ",
                                           t->numel() == 0 ? "no values" : "more than one value",
                                           " is ambiguous"));
        return py::bool_(item(t)).cast<bool>();  // truth of the value (complex: either part)
      })
      // a complex value converts when its imaginary part is 0 (torch's overflow error else)
      .def("__float__", [](const Tensor& t) {
        py::object v = item(one_element(t));  // read through item(): t may be on a device
        return PyComplex_Check(v.ptr()) ? to_scalar(v).to_checked<double>() : v.cast<double>();
      })
      .def("__int__", [](const Tensor& t) {
        py::object v = item(one_element(t));
        if (PyComplex_Check(v.ptr())) {
          PyObject* r = PyLong_FromDouble(to_scalar(v).to_checked<double>());
          if (!r) throw py::error_already_set();
          return py::reinterpret_steal<py::object>(r);
        }
        return py::object(v.attr("__int__")());
      })
      .def("__index__", [](const Tensor& t) {
        if (!is_integral(t->dtype, true) || t->numel() != 1)
          throw py::type_error("only integer tensors of a single element can be converted to an index");
        return item(t).cast<int64_t>();
      })
      .def("__complex__", [](const Tensor& t) { return py::module_::import("builtins").attr("complex")(item(t)); })
      .def("to", &to_method)
      .def("record_stream", [](const Tensor& t, py::object stream) {
        EMBER_CHECK(py::hasattr(stream, "cuda_stream"), py::type_error,
                    "record_stream(): argument 'stream' must be a Stream, not ",
                    Py_TYPE(stream.ptr())->tp_name);
        core_fn("_tensor_record_stream")(t, stream.attr("cuda_stream"));
      })
      .def("pin_memory", [](const Tensor& t, py::handle device) {
        EMBER_CHECK(device.is_none() || names_accelerator("pin_memory", device),
                    std::runtime_error, "CPU device type not an accelerator.");
        return core_fn("_pin_memory")(t);
      }, py::arg("device") = py::none())
      .def("is_pinned", [](const Tensor& t, py::handle device) -> py::object {
        if (!device.is_none() && !names_accelerator("is_pinned", device)) return py::bool_(false);
        return core_fn("_cuda_is_pinned")(t);
      }, py::arg("device") = py::none())
      .def("type", [](py::object self_obj, py::object dtype) -> py::object {
        const Tensor self = self_obj.cast<Tensor>();
        if (dtype.is_none())
          return py::str(std::string("ember.") + type_name(self->dtype) + "Tensor");
        if (py::isinstance<py::str>(dtype)) {  // a type name: "ember.FloatTensor" (torch's too)
          const std::string name = py::str(dtype);
          for (int i = 0; i < kNumScalarTypes; ++i) {
            const ScalarType t = static_cast<ScalarType>(i);
            for (const char* prefix : {"ember.", "torch."}) {
              const std::string tail = str_cat(type_name(t), "Tensor");
              if (name == prefix + tail)
                return self_obj.attr("to")(dtype_object(t));
              if (name == str_cat(prefix, "cuda.", tail))
                return self_obj.attr("to")(dtype_object(t)).attr("cuda")();
            }
          }
          throw py::value_error(str_cat("invalid type: '", name, "'"));
        }
        ScalarType dt = to_dtype(dtype);
        if (dt == self->dtype) return py::cast(self);
        EMBER_AUTOGRAD(needs_grad(self), "_to_dtype", self, dtype_object(dt), false);
        return wrap(convert(self, dt, false));
      }, py::arg("dtype") = py::none())
      .def("cpu", [](py::object self) -> py::object {
        Tensor t = self.cast<Tensor>();
        if (t->device().is_cpu()) return self;
        EMBER_AUTOGRAD(needs_grad(t), "_to_device", t, py::str("cpu"), dtype_object(t->dtype), false);
        return wrap(to_device_copy(t, Device{}, false));
      })
      .def("cuda", [](py::object self, py::object device, bool non_blocking, py::object) -> py::object {
        if (is_tensor(device))  // (an int, a str or a device: torch's parser takes no tensor)
          throw py::type_error("cuda(): argument 'device' (position 1) must be ember.device, "
                               "not Tensor");
        Device d = device.is_none() ? Device{DeviceType::CUDA, -1}
                   : is_int_like(device) ? Device{DeviceType::CUDA, static_cast<int16_t>(as_int(device))}
                                         : to_device(device);
        if (d.is_cpu()) throw std::runtime_error("Invalid device, must be cuda device");
        d = resolve_device(d, "Tensor.cuda()");
        Tensor t = self.cast<Tensor>();
        if (t->device() == d) return self;
        EMBER_AUTOGRAD(needs_grad(t), "_to_device", t, py::str(d.str()), dtype_object(t->dtype),
                       non_blocking);
        return wrap(to_device_copy(t, d, non_blocking));
      }, py::arg("device") = py::none(),
         // (noconvert: a bool, not anything with a truth value; torch's parser refuses an int)
         py::arg("non_blocking").noconvert() = false, py::kw_only(),
         py::arg("memory_format") = py::none())
      .def("__getitem__", [](const Tensor& self, py::object index) -> py::object {
        EMBER_AUTOGRAD(needs_grad(self), "_getitem", self, index);
        return wrap(apply_index(self, index));
      })
      .def("__setitem__", [](const Tensor& self, py::object index, py::object value) {
        setitem(self, index, value);
      })
      // torch's parser: a Python number is copied as a wrapped number; non_blocking is a bool
      .def("copy_", [](py::object self, py::handle srch, py::handle non_blocking) {
        if (!PyBool_Check(non_blocking.ptr()))
          throw py::type_error(str_cat("copy_(): argument 'non_blocking' (position 2) must be "
                                       "bool, not ", type_of(non_blocking)));
        Tensor src;
        if (is_tensor(srch)) {
          src = to_tensor(srch);
        } else if (is_number(srch)) {
          const Scalar v = to_scalar(srch);
          src = wrapped_scalar(v, v.natural_dtype(ScalarType::Float64));
        } else {
          throw py::type_error(str_cat("copy_(): argument 'other' (position 1) must be Tensor, "
                                       "not ", type_of(srch)));
        }
        Tensor t = self.cast<Tensor>();
        warn_if_discarding_imag(src->dtype, t->dtype);
        if (needs_grad(src) || t->requires_grad)
          return redispatch("_copy_", core_fn("_copy_"), py::make_tuple(self, wrap(src)),
                            py::dict());
        copy_(t, src);
        return self;
      }, py::arg("src"), py::arg("non_blocking") = false)
      .def("fill_", [](py::object self, py::object value) {
        Tensor t = self.cast<Tensor>();
        if (is_tensor(value) && to_tensor(value)->dim() != 0)
          throw std::runtime_error(str_cat(
              "fill_ only supports 0-dimension value tensor but got tensor with ",
              to_tensor(value)->dim(), " dimensions."));
        // a 0-d tensor value that requires grad is recorded too (its gradient: the output's sum)
        const bool value_grad = is_tensor(value) && to_tensor(value)->requires_grad;
        if ((t->requires_grad || value_grad) && grad_enabled())
          return redispatch("_fill_", core_fn("_fill_"), py::make_tuple(self, value), py::dict());
        if (is_tensor(value)) {  // torch's fill_ of a tensor value is a copy: a cast, unchecked
          const Tensor v = to_tensor(value);
          warn_if_discarding_imag(v->dtype, t->dtype);
          copy_(t, v);
          return self;
        }
        fill_(t, to_scalar(value));
        return self;
      })
      .def("zero_", [](py::object self) {
        Tensor t = self.cast<Tensor>();
        if (t->requires_grad && grad_enabled())
          return redispatch("_fill_", core_fn("_fill_"), py::make_tuple(self, 0), py::dict());
        fill_(t, Scalar::from_int(0));
        return self;
      });

  // dtype shortcuts: x.float(), x.double(), ...
  struct Shortcut { const char* name; ScalarType dt; };
  static const Shortcut shortcuts[] = {
      {"float", ScalarType::Float32}, {"double", ScalarType::Float64},
      {"half", ScalarType::Float16},  {"bfloat16", ScalarType::BFloat16},
      {"int", ScalarType::Int32},     {"long", ScalarType::Int64},
      {"short", ScalarType::Int16},   {"char", ScalarType::Int8},
      {"byte", ScalarType::UInt8},    {"bool", ScalarType::Bool}};
  for (const auto& sc : shortcuts) {
    ScalarType dt = sc.dt;
    cls.def(sc.name, [dt](const Tensor& self) -> py::object {
      if (self->dtype == dt) return py::cast(self);
      EMBER_AUTOGRAD(needs_grad(self), "_to_dtype", self, dtype_object(dt), false);
      return wrap(convert(self, dt, false));
    });
  }

  // ---- module-level functions with canonical signatures (also the autograd hook's `fn`) ----
  m.def("_to_dtype", [](const Tensor& x, py::handle dt, bool copy) -> py::object {
    EMBER_AUTOGRAD(needs_grad(x), "_to_dtype", x, dt, copy);
    return wrap(convert(x, to_dtype(dt), copy));
  });
  m.def("_view", [](const Tensor& x, const Shape& s) -> py::object {
    EMBER_AUTOGRAD(needs_grad(x), "_view", x, py::cast(s));
    return wrap(view(x, s));
  });
  m.def("_expand", [](const Tensor& x, const Shape& s) -> py::object {
    EMBER_AUTOGRAD(needs_grad(x), "_expand", x, py::cast(s));
    return wrap(expand(x, s));
  });
  m.def("_getitem", [](const Tensor& x, py::object index) -> py::object {
    EMBER_AUTOGRAD(needs_grad(x), "_getitem", x, index);
    return wrap(apply_index(x, index));
  });
  m.def("_copy_", [](py::object dst, const Tensor& src) {
    copy_(dst.cast<Tensor>(), src);
    return dst;
  });
  m.def("_fill_", [](py::object dst, py::object v) {
    fill_(dst.cast<Tensor>(), to_scalar(v));
    return dst;
  });
  m.def("_setitem", &setitem);
  m.def("_index_basic", &apply_basic_index);
  // the views (reshape, view, expand, transpose, squeeze, ...), clone and contiguous are registry
  // rows (bind_shape.cpp); _view and _expand are the functions their hook hand-offs name
  m.def("_contiguous", [](const Tensor& x) { return wrap(contiguous(x)); }, py::arg("input"));
  cls.def_property_readonly("T", [](const Tensor& x) -> py::object {
    Shape dims;
    for (int64_t d = x->dim() - 1; d >= 0; --d) dims.push_back(d);
    EMBER_AUTOGRAD(needs_grad(x), "permute", x, py::cast(dims));
    return wrap(permute(x, dims));
  });
  cls.def_property_readonly("mT", [](const Tensor& x) -> py::object {
    EMBER_CHECK(x->dim() >= 2, std::runtime_error, "tensor.mT is only supported on matrices or batches of matrices. Got ", x->dim(), "-D tensor.");
    EMBER_AUTOGRAD(needs_grad(x), "transpose", x, -2, -1);
    return wrap(transpose(x, -2, -1));
  });
  cls.def("detach_", [](py::object self) {
    Tensor t = self.cast<Tensor>();
    EMBER_CHECK(!t->base, std::runtime_error,
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                "function in ember/optim/optimizer.py as the solution.");
    t->requires_grad = false;
    return self;
  });

  // resize_ / resize_as_ (PyTorch's; never recorded: a tensor that requires grad is refused).
  // The version moves only when the shape does. memory_format: any value restrides (ember has
  // only the contiguous format), leaving it out keeps the strides of an unchanged shape.
  auto resize = [](py::object self, const Shape& shape, py::handle memory_format) {
    Tensor t = self.cast<Tensor>();
    EMBER_CHECK(!t->requires_grad, std::runtime_error, "cannot resize variables that require grad");
    const bool changed = t->sizes != shape;
    resize_(t, shape, !memory_format.is_none());
    if (changed) t->bump_version();
    return self;
  };
  cls.def("resize_", [resize](py::object self, py::args sizes, py::kwargs kw) {
    py::object mf = py::none();
    for (auto item : kw) {
      const std::string k = py::str(item.first);
      EMBER_CHECK(k == "memory_format", py::type_error,
                  "resize_() got an unexpected keyword argument '", k, "'");
      mf = py::reinterpret_borrow<py::object>(item.second);
    }
    EMBER_CHECK(sizes.size() > 0, py::type_error,
                "resize_() missing 1 required positional arguments: \"size\"");
    return resize(self, shape_from_args(sizes, "resize_"), mf);
  });
  auto resize_as = [resize](py::object self, const Tensor& other, py::handle mf) {
    return resize(self, other->sizes, mf);
  };
  cls.def("resize_as_", resize_as, py::arg("the_template"), py::kw_only(),
          py::arg("memory_format") = py::none());
  m.def("resize_as_", resize_as, py::arg("input"), py::arg("the_template"), py::kw_only(),
        py::arg("memory_format") = py::none());

  // ---- creation ----
  register_creation(m);
}

}  // namespace ember::pyb
