#include "python/pyutils.h"
#include "python/registry.h"

#include <cmath>
#include <string>
#include <unordered_set>

using namespace pybind11::literals;

namespace ember::pyb {

// Leaked on purpose: these must outlive interpreter teardown.
static py::module_* g_core_module = nullptr;

void set_core_module(py::module_& m) { g_core_module = new py::module_(m); }
py::object core_fn(const char* name) { return g_core_module->attr(name); }

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

static py::object* g_dtype_objects = new py::object[kNumScalarTypes];

py::object device_object(const Device& d) {
  if (d.is_cpu()) {
    static py::object* cpu = new py::object(core_fn("_make_device")("cpu"));  // (never freed)
    return *cpu;
  }
  return core_fn("_make_device")(d.str());
}

py::object dtype_object(ScalarType t) {
  if (t == ScalarType::Undefined) return py::none();
  return g_dtype_objects[static_cast<int>(t)];
}

ScalarType to_dtype(py::handle h) {
  if (!h || h.is_none()) return ScalarType::Undefined;
  if (py::isinstance<DType>(h)) return h.cast<DType&>().type;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return ScalarType::Float64;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return ScalarType::Int64;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return ScalarType::Bool;
  // NumPy dtypes and scalar types: match by name (not a tensor, whose dtype torch never reads
  // where a dtype is asked for).
  if (!is_tensor(h) && (py::hasattr(h, "dtype") || py::hasattr(h, "kind"))) {
    // a scalar type (np.float32) is a class whose `dtype` is a descriptor: ask NumPy
    py::object np_dtype = PyType_Check(h.ptr()) ? py::module_::import("numpy").attr("dtype")(h)
                          : py::hasattr(h, "kind") ? py::reinterpret_borrow<py::object>(h)
                                                   : h.attr("dtype");
    std::string name = py::str(np_dtype.attr("name"));
    for (int i = 0; i < kNumScalarTypes; ++i)
      if (name == dtype_name(static_cast<ScalarType>(i))) return static_cast<ScalarType>(i);
  }
  throw py::type_error("expected an ember dtype (e.g. ember.float32), got " +
                       std::string(py::str(py::type::of(h).attr("__name__"))));
}

static PyTypeObject* g_tensor_type = nullptr;
PyTypeObject* tensor_type() {
  if (!g_tensor_type)
    g_tensor_type = reinterpret_cast<PyTypeObject*>(py::type::of<TensorImpl>().ptr());
  return g_tensor_type;
}

Tensor expect_tensor(py::handle h, const char* op, const char* arg) {
  if (is_tensor(h)) return to_tensor(h);
  throw py::type_error(str_cat(op, "(): argument '", arg, "' must be Tensor, not ",
                               std::string(py::str(py::type::of(h).attr("__name__")))));
}

bool is_number(py::handle h) {
  PyObject* p = h.ptr();
  if (PyBool_Check(p) || PyLong_Check(p) || PyFloat_Check(p) || PyComplex_Check(p)) return true;
  if (is_tensor(h)) return false;
  // NumPy scalars (np.float32(1), np.int64(2), np.bool_(True)).
  return py::hasattr(h, "dtype") && py::hasattr(h, "item") && !py::hasattr(h, "__len__");
}

Scalar to_scalar(py::handle h) {
  PyObject* p = h.ptr();
  if (PyBool_Check(p)) return Scalar::from_bool(p == Py_True);
  if (PyLong_Check(p)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow > 0) {  // uint64's upper half: a value only a uint64 tensor takes
      const unsigned long long u = PyLong_AsUnsignedLongLong(p);
      if (!PyErr_Occurred()) return Scalar::from_uint64(u);
      PyErr_Clear();
    }
    if (overflow) {
      // torch's class and text for a number beyond int64
      PyErr_SetString(PyExc_OverflowError, overflow > 0 ? "int too big to convert"
                                                        : "int too small to convert");
      throw py::error_already_set();
    }
    return Scalar::from_int(v);
  }
  if (PyFloat_Check(p)) return Scalar::from_double(PyFloat_AS_DOUBLE(p));
  if (PyComplex_Check(p))
    return Scalar::from_complex(PyComplex_RealAsDouble(p), PyComplex_ImagAsDouble(p));
  if (is_tensor(h)) {
    Tensor t = to_tensor(h);
    EMBER_CHECK(t->numel() == 1, std::runtime_error, "a Tensor with ", t->numel(),
                " elements cannot be converted to Scalar");
    if (!t->device().is_cpu()) t = to_device_copy(t, Device{}, false);  // (never read it here)
    return dispatch_every(t->dtype, "item", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T v = *t->data_as<T>();
      if constexpr (is_complex_v<T>) return Scalar::from_complex(v.real(), v.imag());
      else if constexpr (std::is_same_v<T, bool>) return Scalar::from_bool(v);
      else if constexpr (std::is_integral_v<T>) return Scalar::from_int(v);
      else return Scalar::from_double(static_cast<double>(v));
    });
  }
  if (py::hasattr(h, "item")) return to_scalar(h.attr("item")());
  throw py::type_error(str_cat("expected a number, got ",
                               std::string(py::str(py::type::of(h).attr("__name__")))));
}

Operand to_operand(py::handle h, const char* op, const char* arg) {
  if (is_tensor(h)) return Operand(to_tensor(h));
  if (is_number(h)) return Operand(to_scalar(h));
  throw py::type_error(str_cat(op, "(): argument '", arg, "' must be Tensor or Number, not ",
                               std::string(py::str(py::type::of(h).attr("__name__")))));
}

static int64_t to_int_strict(py::handle h, const char* what) {
  if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) return h.cast<int64_t>();
  if (is_tensor(h)) {
    Tensor t = to_tensor(h);
    if (t->numel() == 1 && is_integral(t->dtype, false)) return to_scalar(h).to_int();
    throw py::type_error(str_cat(what, " must be a sequence of ints, but got a Tensor of ",
                                 t->numel(), " elements of dtype ", dtype_name(t->dtype)));
  }
  if (py::hasattr(h, "__index__")) return py::int_(h.attr("__index__")()).cast<int64_t>();
  throw py::type_error(str_cat(what, " must be a sequence of ints, but got an element of type ",
                               std::string(py::str(py::type::of(h).attr("__name__")))));
}

Shape to_shape(py::handle h) {
  Shape s;
  // one int: a Python int or an integer-like scalar (np.int64(3))
  if (PyLong_Check(h.ptr()) || (PyIndex_Check(h.ptr()) && !is_tensor(h) &&
                                !py::isinstance<py::sequence>(h))) {
    s.push_back(to_int_strict(h, "size"));
    return s;
  }
  if (!py::isinstance<py::sequence>(h) || py::isinstance<py::str>(h))
    throw py::type_error(str_cat("size must be a tuple of ints, not ",
                                 std::string(py::str(py::type::of(h).attr("__name__")))));
  for (auto item : py::reinterpret_borrow<py::sequence>(h)) s.push_back(to_int_strict(item, "size"));
  return s;
}

Shape shape_from_args(const py::args& args, const char* op) {
  // torch's size argument: ints (separate or as a sequence); a tensor only of one integer
  if (args.size() == 1 && is_tensor(args[0])) {
    if (is_int_list_item(args[0])) return {as_int(args[0])};
    throw py::type_error(str_cat(op, "(): argument 'size' (position 1) must be tuple of ints, "
                                     "not Tensor"));
  }
  if (args.size() > 1 && PyBool_Check(args[0].ptr()))  // (a bool starts no var-args sizes)
    throw py::type_error(str_cat(op, "() takes 1 positional argument but ", args.size(),
                                 " were given"));
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return to_shape(args[0]);
  Shape s;
  for (auto a : args) s.push_back(to_int_strict(a, op));
  return s;
}

std::vector<int64_t> to_dims(py::handle h) {
  std::vector<int64_t> d;
  if (!h || h.is_none()) return d;
  if (PyLong_Check(h.ptr())) {
    d.push_back(h.cast<int64_t>());
    return d;
  }
  for (auto item : py::reinterpret_borrow<py::sequence>(h)) d.push_back(to_int_strict(item, "dim"));
  return d;
}

Device to_device(py::handle h) {
  if (!h || h.is_none()) return Device{};
  std::string s;
  if (py::isinstance<py::str>(h)) {
    s = h.cast<std::string>();
  } else if (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    const long long index = PyLong_AsLongLong(h.ptr());
    if (index == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (index < 0) throw std::runtime_error("Device index must not be negative");
    s = "cuda:" + std::to_string(index);
  } else if (py::hasattr(h, "type") && py::hasattr(h, "index") && !is_tensor(h)) {
    s = py::str(h);  // ember.device objects print as their spec
  } else {
    throw py::type_error(str_cat("expected a device (torch.device, str or int), not ",
                                 std::string(py::str(py::type::of(h).attr("__name__")))));
  }
  if (s == "cpu") return Device{};
  if (s.rfind("cuda", 0) == 0) {
    Device d;
    d.type = DeviceType::CUDA;
    if (s.size() > 4) {
      std::string idx = s.size() > 5 && s[4] == ':' ? s.substr(5) : "";
      bool ok = !idx.empty() && idx.size() <= 4 &&
                idx.find_first_not_of("0123456789") == std::string::npos;
      if (!ok) throw std::runtime_error("Invalid device string: '" + s + "'");
      d.index = static_cast<int16_t>(std::stoi(idx));
    }
    return d;
  }
  throw std::runtime_error("Expected one of cpu, cuda device type at start of device string: " + s);
}

// ---- grad mode and the autograd hook ----
static thread_local bool t_grad_enabled = true;
bool grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool on) { t_grad_enabled = on; }

static py::object& hook_slot() {
  static py::object* hook = new py::object(py::none());  // leaked: outlives interpreter teardown
  return *hook;
}
py::object autograd_hook() { return hook_slot(); }

void ensure_autograd_available() {
  if (!hook_slot().is_none()) return;
  try {
    py::module_::import("ember.autograd");
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ImportError)) throw;
  }
  if (hook_slot().is_none())
    throw py::import_error(
        "requires_grad=True needs automatic differentiation, which is provided by the "
        "ember-autograd distribution. From ember's source tree: pip install ./packages/autograd "
        "(from a package index that has it: pip install ember-autograd)");
}

py::object call_autograd(const char* name, py::handle fn, py::tuple args, py::dict kwargs) {
  py::object hook = hook_slot();
  if (hook.is_none()) ensure_autograd_available(), hook = hook_slot();
  return hook(name, fn, args, kwargs);
}

static py::object& device_hook_slot() {
  static py::object* hook = new py::object(py::none());  // leaked, as the autograd hook
  return *hook;
}

namespace {
// What the tensors among a call's arguments (one level into lists and tuples) ask for: recording
// (requires_grad) and the device. One pass, without calling into Python.
struct ArgScan {
  bool grad = false, device = false;
  ArgScan() = default;
  ArgScan(py::tuple args, py::dict kwargs) {
    for (py::handle a : args) add(a);
    for (auto kv : kwargs) add(kv.second);
  }
  // Whether the call is one for the autograd hook (grad mode on) or the device hook.
  bool needs_hook() const { return (grad && grad_enabled()) || device; }
  void add(py::handle a) {
    if (is_tensor(a)) return add_tensor(a);
    if (PyList_Check(a.ptr()) || PyTuple_Check(a.ptr()))
      for (py::handle b : a)
        if (is_tensor(b)) add_tensor(b);
  }
  void add_tensor(py::handle h) {
    const TensorImpl& t = *to_tensor(h);
    grad = grad || t.requires_grad;
    device = device || !t.device().is_cpu();
  }
};
}  // namespace

py::object call_device(const char* name, py::tuple args, py::dict kwargs) {
  py::object hook = device_hook_slot();
  if (hook.is_none()) {
    py::module_::import("ember.cuda");  // registers the hook
    hook = device_hook_slot();
    if (hook.is_none()) throw std::runtime_error("ember: ember.cuda's device hook is not loaded");
  }
  return hook(name, args, kwargs);
}

// ---- autocast ----
std::atomic<int> g_autocast_threads{0};
static thread_local bool t_autocast_on = false;        // set by ember.amp for this thread
static thread_local bool t_autocast_excluded = false;  // an autocast'ed call is running
bool autocast_thread_active() { return t_autocast_on && !t_autocast_excluded; }

static void set_autocast_on(bool on) {
  if (on == t_autocast_on) return;
  t_autocast_on = on;
  g_autocast_threads.fetch_add(on ? 1 : -1, std::memory_order_relaxed);
}

static py::object& autocast_hook_slot() {
  static py::object* hook = new py::object(py::none());  // leaked, as the autograd hook
  return *hook;
}
static std::unordered_set<std::string>& autocast_names() {
  static auto* names = new std::unordered_set<std::string>();
  return *names;
}
bool autocast_listed(const char* name) { return autocast_names().count(name) != 0; }

namespace {
// Autocast applies once per call: the cast arguments go to `fn` (and through it to the autograd
// or device hook) with autocast off, as torch's Autocast dispatch key excludes itself.
struct AutocastExcluded {
  bool saved = t_autocast_excluded;
  AutocastExcluded() { t_autocast_excluded = true; }
  ~AutocastExcluded() { t_autocast_excluded = saved; }
};
}  // namespace

static py::object call_autocast(const char* name, py::handle fn, py::tuple args, py::dict kwargs) {
  AutocastExcluded guard;
  if (autocast_listed(name) && !autocast_hook_slot().is_none()) {
    py::object r = autocast_hook_slot()(name, args, kwargs);
    if (!r.is_none()) {
      py::tuple pair = r;
      args = pair[0];
      kwargs = pair[1];
    }
  }
  // On to the autograd or device hook as without autocast (redispatch, autocast now excluded):
  // `fn` is not always the op's binding, which would route the call again, but may be the bare
  // function the autograd hook runs (contiguous's `_contiguous`, copy_'s `_copy_`, fill_'s
  // `_fill_`); called directly it went unrecorded. A call with nothing to record and no device
  // tensor runs `fn` here, so that autocast needs no autograd package.
  if (!ArgScan(args, kwargs).needs_hook()) return fn(*args, **kwargs);
  return redispatch(name, fn, std::move(args), std::move(kwargs));
}

// ---- the profiler ----
std::atomic<bool> g_profiling{false};
static thread_local bool t_profiling_excluded = false;  // a profiled call is running
bool profiling_thread_excluded() { return t_profiling_excluded; }

static py::object& profiler_hooks_slot() {  // (enter, exit) from ember.autograd.profiler, or None
  static py::object* hooks = new py::object(py::none());  // leaked, as the autograd hook
  return *hooks;
}

namespace {
struct ProfilingExcluded {
  bool saved = t_profiling_excluded;
  ProfilingExcluded() { t_profiling_excluded = true; }
  ~ProfilingExcluded() { t_profiling_excluded = saved; }
};
}  // namespace

py::object call_profiled(const char* name, py::handle args, const std::function<py::object()>& body) {
  ProfilingExcluded guard;
  if (profiler_hooks_slot().is_none()) return body();
  const py::tuple hooks = profiler_hooks_slot();
  const py::str op_name(name);
  const py::object start = hooks[0](op_name);
  py::object r;
  try {
    r = body();
  } catch (...) {
    try {  // close the event; the op's own error is the one that propagates
      hooks[1](op_name, start, args);
    } catch (py::error_already_set&) {
    }
    throw;
  }
  hooks[1](op_name, start, args);
  return r;
}

py::object redispatch(const char* name, py::handle fn, py::tuple args, py::dict kwargs) {
  if (profiling_active())
    return call_profiled(name, args, [&] { return redispatch(name, fn, args, kwargs); });
  if (autocast_active()) return call_autocast(name, fn, std::move(args), std::move(kwargs));
  const ArgScan scan(args, kwargs);
  const bool record = scan.grad && grad_enabled();
  if (scan.device && !record) return call_device(name, std::move(args), std::move(kwargs));
  // Nothing to record and no device: the call is here only to be timed (profiling is off inside
  // it, so `fn`, often the op's binding, now runs the kernel).
  if (!record) return fn(*args, **kwargs);
  return call_autograd(name, fn, std::move(args), std::move(kwargs));
}

// The calls with out= that `fn` gets back with out= given, to run with the CPU path's own out=
// checks and writes: inside an autocast region (not cast: torch registers no out= variant for
// autocast), and a call sent here only to be timed by the profiler (nothing to record, no device
// tensor; the dispatched path would write the result into out= afterwards, by other rules).
static bool out_goes_to_fn(py::tuple args, py::dict kwargs) {
  return autocast_active() || (profiling_thread_excluded() && !ArgScan(args, kwargs).needs_hook());
}
static py::object call_with_out(py::handle fn, py::tuple args, py::dict kwargs, py::handle outh) {
  AutocastExcluded guard;
  kwargs["out"] = outh;
  return fn(*args, **kwargs);
}

py::object redispatch_out(const char* name, py::handle fn, py::tuple args, py::dict kwargs,
                          py::handle outh) {
  const bool has_out = outh && !outh.is_none();
  if (has_out && profiling_active())
    return call_profiled(name, args, [&] { return redispatch_out(name, fn, args, kwargs, outh); });
  if (has_out && out_goes_to_fn(args, kwargs))
    return call_with_out(fn, std::move(args), std::move(kwargs), outh);
  return finish_dispatched(name, redispatch(name, fn, std::move(args), std::move(kwargs)), outh);
}

py::object finish_dispatched(const char* name, py::object r, py::handle outh) {
  if (!outh || outh.is_none()) return r;
  Tensor result = expect_tensor(r, name, "result"), out = expect_tensor(outh, name, "out");
  check_out_device(name, result, out);
  write_out(name, result, out);
  return py::reinterpret_borrow<py::object>(outh);
}

py::object redispatch_pair_out(const char* name, py::handle fn, py::tuple args, py::dict kwargs,
                               py::handle outh) {
  const bool has_out = outh && !outh.is_none();
  if (has_out && profiling_active())
    return call_profiled(name, args,
                         [&] { return redispatch_pair_out(name, fn, args, kwargs, outh); });
  if (has_out && out_goes_to_fn(args, kwargs))
    return call_with_out(fn, std::move(args), std::move(kwargs), outh);
  if (has_out) {
    ArgScan scan;
    for (py::handle a : args) scan.add(a);
    if (scan.grad && grad_enabled()) out_with_grad(name);
    if (!py::isinstance<py::sequence>(outh) || py::len(outh) != 2)
      throw py::type_error(str_cat(name, "(): argument 'out' must be tuple of Tensors"));
  }
  py::object r = redispatch(name, fn, std::move(args), std::move(kwargs));
  if (!has_out) return r;
  py::sequence outs = py::reinterpret_borrow<py::sequence>(outh), rs = r;
  for (int i = 0; i < 2; ++i) {
    Tensor res = expect_tensor(rs[i], name, "result"), out = expect_tensor(outs[i], name, "out");
    check_out_device(name, res, out);
    check_out_dtype(out, res->dtype);
  }
  for (int i = 0; i < 2; ++i) write_out(name, to_tensor(rs[i]), to_tensor(outs[i]));
  return return_type(name)(outs[0], outs[1]);
}

void check_out_no_grad(const Tensor& out, const char* op) {
  if (out && out->requires_grad && grad_enabled())
    throw std::runtime_error(str_cat(op, "(): functions with out=... arguments don't support "
                                         "automatic differentiation, but one of the arguments "
                                         "requires grad."));
}

void check_not_differentiated(const char* op, std::initializer_list<Tensor> inputs) {
  for (const auto& t : inputs)
    if (needs_grad(t))
      throw std::runtime_error(str_cat(op, ": this backward kernel is not differentiable; call it "
                                           "under ember.no_grad() (double backward differentiates "
                                           "the composed formula instead)"));
}

int buffer_error_from_current_exception() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_BufferError, e.what());
  }
  return -1;
}

// ---- shared argument parsing and out= handling (declared in pyutils.h) ----

std::string type_of(py::handle h) { return py::str(py::type::of(h).attr("__name__")); }

// ---- argument parsing ----

bool is_int_like(py::handle h) {
  PyObject* p = h.ptr();
  if (PyBool_Check(p)) return false;
  if (PyLong_Check(p)) return true;
  if (is_tensor(h)) {
    Tensor t = to_tensor(h);
    return t->dim() == 0 && is_integral(t->dtype, false);
  }
  return PyIndex_Check(p) && !PySequence_Check(p);  // NumPy integers
}

bool is_int_list_item(py::handle h) {
  if (is_int_like(h)) return true;
  if (!is_tensor(h)) return false;
  Tensor t = to_tensor(h);
  return t->numel() == 1 && is_integral(t->dtype, true);  // (bool too, as torch's parser)
}

void check_float_arg_type(py::handle h, const char* op, const char* name, int position) {
  if (!is_number(h) && !(is_tensor(h) && to_tensor(h)->dim() == 0))
    throw py::type_error(str_cat(op, "(): argument '", name, "' (position ", position,
                                 ") must be float, not ", type_of(h)));
}

double real_value(py::handle h) {
  const Scalar s = to_scalar(h);
  EMBER_CHECK(!s.is_complex() || s.imag == 0.0, std::runtime_error,
              "value cannot be converted to type double without overflow");
  return s.to_double();
}

double float_arg(py::handle h, const char* op, const char* name, int position) {
  check_float_arg_type(h, op, name, position);
  return real_value(h);
}

int64_t as_int(py::handle h) {
  if (is_tensor(h)) return to_scalar(h).to_int();
  PyObject* i = PyNumber_Index(h.ptr());  // TypeError for a float: raise it, not a null cast
  if (!i) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(i).cast<int64_t>();
}

// dim: None, an int, or a sequence of ints.
OptDims parse_dims(py::handle h, const char* op) {
  if (!h || h.is_none()) return std::nullopt;
  if (is_int_list_item(h)) return std::vector<int64_t>{as_int(h)};  // (torch's int[1] dims)
  if (py::isinstance<py::sequence>(h) && !py::isinstance<py::str>(h) && !is_tensor(h)) {
    std::vector<int64_t> dims;
    size_t pos = 0;
    for (auto item : py::reinterpret_borrow<py::sequence>(h)) {
      if (!is_int_list_item(item))
        throw py::type_error(str_cat(op, "(): argument 'dim' must be tuple of ints, but found "
                                         "element of type ", type_of(item), " at pos ", pos));
      dims.push_back(as_int(item));
      ++pos;
    }
    return dims;
  }
  throw py::type_error(str_cat(op, "(): argument 'dim' must be tuple of ints, not ", type_of(h)));
}

int64_t parse_dim(py::handle h, const char* op) {
  if (is_int_like(h)) return as_int(h);
  throw py::type_error(str_cat(op, "(): argument 'dim' must be int, not ", type_of(h)));
}

std::optional<int64_t> parse_opt_dim(py::handle h, const char* op) {
  if (!h || h.is_none()) return std::nullopt;
  return parse_dim(h, op);
}

py::object dims_obj(const OptDims& d) {
  if (!d) return py::none();
  py::tuple t(d->size());
  for (size_t i = 0; i < d->size(); ++i) t[i] = py::int_((*d)[i]);
  return t;
}
py::object opt_dim_obj(const std::optional<int64_t>& d) { return d ? py::object(py::int_(*d)) : py::none(); }

Tensor opt_out(py::handle h, const char* op) {
  return (!h || h.is_none()) ? nullptr : expect_tensor(h, op, "out");
}

// ---- out= ----

void warn(const std::string& msg) {
  if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) < 0) throw py::error_already_set();
}

// PyTorch's resize_output as seen from Python: an out= tensor of another shape takes the result's
// shape, with PyTorch's deprecation warning unless it was empty.
void resize_out(const Tensor& out, const Shape& shape) {
  if (out->sizes == shape) return;
  if (out->numel() != 0)
    warn(str_cat("An output with one or more elements was resized since it had shape ",
                 shape_str(out->sizes), ", which does not match the required output shape ",
                 shape_str(shape), ". This behavior is deprecated, and in a future PyTorch release "
                 "outputs will not be resized unless they have zero elements. You can explicitly "
                 "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0)."));
  resize_output(out, shape);
}

void write_out(const char* op, const Tensor& result, const Tensor& out) {
  check_out_no_grad(out, op);
  EMBER_CHECK(can_cast(result->dtype, out->dtype), std::runtime_error, "result type ",
              torch_type_name(result->dtype), " can't be cast to the desired output type ",
              torch_type_name(out->dtype));
  resize_out(out, result->sizes);
  copy_(out, result);
}

void check_out_dtype(const Tensor& out, ScalarType expected) {
  EMBER_CHECK(out->dtype == expected, std::runtime_error, "Expected out tensor to have dtype ",
              cpp_type_name(expected), ", but got ", cpp_type_name(out->dtype), " instead");
}

void check_out_device(const char* op, const Tensor& result, const Tensor& out) {
  EMBER_CHECK(result->device() == out->device(), std::runtime_error,
              "Expected all tensors to be on the same device, but found at least two devices, ",
              result->device().str(), " and ", out->device().str(), "! (", op, ", out=)");
}

py::object finish(const char* op, const Tensor& result, py::handle outh) {
  if (!outh || outh.is_none()) return wrap(result);
  write_out(op, result, expect_tensor(outh, op, "out"));
  return py::reinterpret_borrow<py::object>(outh);
}

[[noreturn]] void refuse_dispatched_out(const char* op, const Tensor& x) {
  if (needs_grad(x)) out_with_grad(op);
  throw std::runtime_error(str_cat(op, "(): out= is not supported for ", x->device().str(),
                                   " tensors yet"));
}

[[noreturn]] void out_with_grad(const char* op) {
  throw std::runtime_error(str_cat(op, "(): functions with out=... arguments don't support "
                                       "automatic differentiation, but one of the arguments "
                                       "requires grad."));
}

// ---- the (values, indices) result type of max/min(dim) ----

py::object return_type(const std::string& name) {
  static auto* types = new std::map<std::string, py::object>();  // leaked: outlives teardown
  auto it = types->find(name);
  if (it != types->end()) return it->second;
  py::object nt = py::module_::import("collections").attr("namedtuple")(
      name, py::make_tuple("values", "indices"), "module"_a = "ember.return_types");
  (*types)[name] = nt;
  return nt;
}

void register_dtypes(py::module_& m) {
  // The core's exception types (core/errors.h) become the Python exceptions they name; anything
  // else falls through to pybind11's own translation (std::runtime_error -> RuntimeError, ...).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const OutOfMemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const OverflowError& e) {
      PyErr_SetString(PyExc_OverflowError, e.what());
    } catch (const py::cast_error& e) {  // an argument of the wrong Python type, as torch's
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });
  py::class_<DType>(m, "dtype")
      .def_property_readonly("is_floating_point", [](const DType& d) { return is_floating(d.type); })
      .def_property_readonly("is_signed", [](const DType& d) {
        return is_signed_type(d.type);
      })
      .def_property_readonly("is_complex", [](const DType& d) { return is_complex(d.type); })
      .def_property_readonly("itemsize", [](const DType& d) { return itemsize(d.type); })
      .def_property_readonly("name", [](const DType& d) { return dtype_name(d.type); })
      // the names in torch's messages ("Float", "c10::BFloat16"): Python code's errors use these
      .def_property_readonly("_torch_name", [](const DType& d) { return torch_type_name(d.type); })
      .def_property_readonly("_cpp_name", [](const DType& d) { return cpp_type_name(d.type); })
      // complex64 <-> float32, complex128 <-> float64 (torch's dtype.to_real / to_complex)
      .def("to_real", [](const DType& d) { return dtype_object(to_real_type(d.type)); })
      .def("to_complex", [](const DType& d) {
        // float16's is complex32, which ember does not have
        EMBER_CHECK(d.type == ScalarType::Float32 || d.type == ScalarType::Float64 ||
                        is_complex(d.type),
                    std::runtime_error, "Unknown Complex ScalarType for ", type_name(d.type));
        return dtype_object(to_complex_type(d.type));
      })
      .def("__repr__", [](const DType& d) { return std::string("ember.") + dtype_name(d.type); })
      // A dtype pickles as a reference to the module global of its name (ember._C.float32), so
      // unpickling returns the one object per dtype (as torch.float32 pickles).
      .def("__reduce__", [](const DType& d) { return std::string(dtype_name(d.type)); });
  for (int i = 0; i < kNumScalarTypes; ++i) {
    auto t = static_cast<ScalarType>(i);
    g_dtype_objects[i] = py::cast(DType{t}, py::return_value_policy::move);
    m.attr(dtype_name(t)) = g_dtype_objects[i];
  }
  m.def("_set_autograd_hook", [](py::object hook) { hook_slot() = std::move(hook); });
  m.def("_get_autograd_hook", []() { return hook_slot(); });
  m.def("_set_device_hook", [](py::object hook) { device_hook_slot() = std::move(hook); });
  m.def("_get_device_hook", []() { return device_hook_slot(); });
  // ember.amp: hook(name, args, kwargs) -> None or the cast (args, kwargs); the names it lists.
  m.def("_set_autocast_hook", [](py::object hook, std::vector<std::string> names) {
    autocast_hook_slot() = std::move(hook);
    autocast_names() = std::unordered_set<std::string>(names.begin(), names.end());
  });
  m.def("_set_default_device", [](py::object d) {
    set_default_factory_device(d.is_none() ? std::nullopt : std::optional<Device>(to_device(d)));
  });
  m.def("_get_default_device", []() -> py::object {
    const std::optional<Device> d = default_factory_device();
    return d ? device_object(*d) : py::none();
  });
  m.def("_set_autocast_active", &set_autocast_on);
  // ember.autograd.profiler: enter(name) -> start, exit(name, start, args), and the switch that
  // sends every op through them while a profile is open.
  m.def("_set_profiler_hooks", [](py::object enter, py::object exit) {
    profiler_hooks_slot() = enter.is_none() ? py::object(py::none()) : py::make_tuple(enter, exit);
  });
  m.def("_get_profiler_hooks", []() { return profiler_hooks_slot(); });
  m.def("_set_profiling", [](bool on) { g_profiling.store(on, std::memory_order_relaxed); });
  // True while a profile is open and no profiled call is running on this thread.
  m.def("_is_profiling", &profiling_active);
  // A Python-level op (an ember.library custom op) timed as one event: fn(*args, **kwargs).
  m.def("_profiled", [](const char* name, py::object fn, py::object args, py::dict kwargs) {
    const py::tuple positional(args);
    return call_profiled(name, positional, [&] { return fn(*positional, **kwargs); });
  });
  m.def("_is_autocast_active", &autocast_thread_active);
  // Python code that casts a whole composite function (ember.amp's wrappers) runs its parts with
  // autocast off, as the core does for one op; returns the previous setting to restore.
  m.def("_autocast_exclude", [](bool on) {
    const bool prev = t_autocast_excluded;
    t_autocast_excluded = on;
    return prev;
  });
  m.def("is_grad_enabled", &grad_enabled);
  m.def("_set_grad_enabled", &set_grad_enabled);
  m.def("get_default_dtype", []() { return dtype_object(get_default_dtype()); });
  m.def("_get_default_complex_dtype", []() {
    return dtype_object(to_complex_type(get_default_dtype()));
  });
  m.def("set_default_dtype", [](py::handle d) { set_default_dtype(to_dtype(d)); });
  m.def("promote_types", [](py::handle a, py::handle b) {
    return dtype_object(promote_types(to_dtype(a), to_dtype(b)));
  });
  m.def("can_cast", [](py::handle from, py::handle to) { return can_cast(to_dtype(from), to_dtype(to)); });
  m.def("result_type", [](py::handle a, py::handle b) {
    return dtype_object(result_type({to_operand(a, "result_type", "tensor1"),
                                     to_operand(b, "result_type", "tensor2")}));
  });
  // The common dtype of any number of operands (torch's TensorIterator rule: 0-d tensors and
  // numbers count only where their category is higher), for the compositions of ember's ops.
  m.def("_result_type", [](py::args operands) {
    std::vector<Operand> ops;
    for (py::handle h : operands) ops.push_back(to_operand(h, "result_type", "operand"));
    return dtype_object(result_type(ops));
  });
}

}  // namespace ember::pyb
