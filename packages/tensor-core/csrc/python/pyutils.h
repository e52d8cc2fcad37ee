// pyutils.h: the binding layer's shared helpers: Python <-> core conversions (dtypes, numbers,
// shapes, dims) and the one narrow hook through which an autograd package takes over an op call.
#pragma once

#include <atomic>
#include <functional>
#include <initializer_list>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/tensor.h"
#include "ops/elementwise.h"
#include "runtime/gil.h"

// A Tensor parameter of a binding never takes None: pybind11's holder caster passes None as a
// null Tensor (a segfault on its first use: x.resize_as_(None), ember.to_dlpack(None)); with
// this caster None matches no such overload, a TypeError. Optional tensors are
// std::optional<Tensor> or py::handle parameters.
namespace pybind11::detail {
template <>
struct type_caster<ember::Tensor>
    : copyable_holder_caster<ember::TensorImpl, ember::Tensor> {
  bool load(handle src, bool convert) {
    if (src.is_none()) return false;
    return copyable_holder_caster<ember::TensorImpl, ember::Tensor>::load(src, convert);
  }
};
}  // namespace pybind11::detail

namespace py = pybind11;

namespace ember::pyb {

// ---- the module ----
// Keeps `m` (the `_C` module) for core_fn; module.cpp calls it before any group registers.
void set_core_module(py::module_& m);
// The `_C` module's attribute `name`: its bound function, so a call from C++ goes through the
// same hooks (autograd, devices) as a call from Python.
py::object core_fn(const char* name);
bool interpreter_finalizing();  // true while the interpreter shuts down (leak, do not release)

// ---- dtypes: one Python object per ScalarType (ember.float32, ...) ----
struct DType {
  ScalarType type;
};
py::object dtype_object(ScalarType t);
// ember.device object of d (ember._make_device's, the CPU's kept: Tensor.device is read on every
// recorded op)
py::object device_object(const Device& d);
// Accepts an ember dtype, a Python type (bool/int/float), a NumPy dtype or None (-> Undefined).
ScalarType to_dtype(py::handle h);

// ---- tensors ----
PyTypeObject* tensor_type();
inline bool is_tensor(py::handle h) { return h && PyObject_TypeCheck(h.ptr(), tensor_type()); }
inline Tensor to_tensor(py::handle h) { return h.cast<Tensor>(); }
// `h` as a tensor, raising TypeError naming the op/argument otherwise.
Tensor expect_tensor(py::handle h, const char* op, const char* arg);

// ---- numbers ----
bool is_number(py::handle h);  // bool/int/float, NumPy scalars, 0-d things with __index__/__float__
Scalar to_scalar(py::handle h);
Operand to_operand(py::handle h, const char* op, const char* arg);

// ---- shapes and dims ----
// A shape given as varargs (x.view(2, 3)) or one sequence (x.view((2, 3))).
Shape shape_from_args(const py::args& args, const char* op);
Shape to_shape(py::handle h);
// An int, or a tuple/list of ints (None -> empty with all=true).
std::vector<int64_t> to_dims(py::handle h);
Device to_device(py::handle h);
// `device` with its index resolved (cuda -> cuda:<current>); raises the no-GPU error for a CUDA
// device where none is usable, and torch's error for an invalid ordinal.
Device resolve_device(const Device& device, const std::string& what);
// `t` on `device` (itself when it is there already): a copy, asynchronous when allowed.
Tensor to_device_copy(const Tensor& t, const Device& device, bool non_blocking);

// ---- the autograd hook ----
// Grad mode lives in the core (thread-local) so that no_grad works without ember-autograd.
bool grad_enabled();
void set_grad_enabled(bool on);
// The registered hook (None when no autograd package is loaded).
py::object autograd_hook();
// True when this call must be recorded: grad mode on and an input requires grad.
inline bool needs_grad(const Tensor& t) { return t && t->requires_grad && grad_enabled(); }
// Hands the call to the autograd package: hook(name, fn, args, kwargs). `fn` is the core
// function to run the forward with (the hook calls it with grad mode off).
py::object call_autograd(const char* name, py::handle fn, py::tuple args, py::dict kwargs);
// Raised when requires_grad=True is asked for and no autograd package can be imported.
void ensure_autograd_available();

// ---- the device hook ----
// Ops on CUDA tensors run in ember.cuda (CuPy kernels over ember's device storages), reached the
// way the autograd package is: the binding hands the call over as hook(name, args, kwargs).
inline bool on_device(const Tensor& t) { return t && !t->device().is_cpu(); }
// ---- autocast (ember.amp) ----
// ember.amp keeps autocast's state (per device, thread-local) in Python and tells the core, per
// thread, whether a region is active. Threads with it on are counted process-wide, so that with
// autocast off every op pays one load of a global (`autocast_active()` is false at once).
extern std::atomic<int> g_autocast_threads;
bool autocast_thread_active();  // this thread's flag, false while an autocast'ed call runs
inline bool autocast_active() {
  return g_autocast_threads.load(std::memory_order_relaxed) != 0 && autocast_thread_active();
}
// True when ember.amp lists the op (lower precision, float32 or promote): only these reach the
// autocast hook; the others run as usual inside an autocast region.
bool autocast_listed(const char* name);

// ---- the profiler (ember.autograd.profiler) ----
// While a profile is open every op is timed, with or without autograd: the bindings send their
// calls to `redispatch` (and the registry's ops to its timed path), which brackets the call with
// the profiler's enter/exit hooks; inside the call, profiling is off for this thread so that the
// call's own redispatches (the autograd hook running the op again) are not timed twice. One load
// of a global when no profile is open.
extern std::atomic<bool> g_profiling;
bool profiling_thread_excluded();
inline bool profiling_active() {
  return g_profiling.load(std::memory_order_relaxed) && !profiling_thread_excluded();
}
// Runs body() as one profiled op called `name` (`args`: its arguments, for record_shapes).
py::object call_profiled(const char* name, py::handle args, const std::function<py::object()>& body);

// True when a call must leave the CPU kernels: to be recorded, to run on a device, to be cast by
// autocast (which only ever casts floating-point tensors), or to be timed by the profiler.
inline bool needs_dispatch(const Tensor& t) {
  return needs_grad(t) || on_device(t) || (autocast_active() && t && is_floating(t->dtype)) ||
         profiling_active();
}
// The router behind every op binding: inside an autocast region a listed op's tensors are cast
// by ember.amp's hook first and `fn` runs on them with autocast off for that call; a call that
// must be recorded goes to the autograd hook (which runs `fn` again with grad mode off), any
// other call with a CUDA tensor among its arguments goes to the device hook.
py::object redispatch(const char* name, py::handle fn, py::tuple args, py::dict kwargs);
py::object call_device(const char* name, py::tuple args, py::dict kwargs);
// redispatch, then the result goes into `outh` when one is given (a device call with out=; a
// recorded call refuses out= before it gets here) and `outh` is returned.
py::object redispatch_out(const char* name, py::handle fn, py::tuple args, py::dict kwargs,
                          py::handle outh);
// The same for an op with a (values, indices) result (max/min(dim), sort, ...): `outh` is a pair
// (values of the result's dtype, int64 indices); returns ember.return_types.<name>(*outh).
py::object redispatch_pair_out(const char* name, py::handle fn, py::tuple args, py::dict kwargs,
                               py::handle outh);
// The tail of redispatch_out: `r` (a device call's tensor result), or `r` written into `outh`
// (which must be on r's device) and `outh`.
py::object finish_dispatched(const char* name, py::object r, py::handle outh);
// For ops with no gradient that call their CPU kernel directly: true when a tensor is on a device.
inline bool any_on_device(std::initializer_list<Tensor> ts) {
  for (const auto& t : ts)
    if (on_device(t)) return true;
  return false;
}

// out= / in-place on a tensor that requires grad is refused like PyTorch does.
void check_out_no_grad(const Tensor& out, const char* op);
// A backward kernel whose formula uses it only in plain backward (double backward differentiates
// the composed formula) refuses inputs that would need a graph.
void check_not_differentiated(const char* op, std::initializer_list<Tensor> inputs);
// For a bf_getbuffer slot, inside `catch (...)`: sets the Python error of the exception being
// handled (BufferError for plain C++ ones) and returns -1.
int buffer_error_from_current_exception();

// ---- argument parsing shared by the bindings ----
std::string type_of(py::handle h);  // the Python type name of h, for messages
// An int (not bool), a NumPy integer, or a 0-d integral tensor.
bool is_int_like(py::handle h);
// What torch's parser takes as an element of an int list (or as the single int that stands for
// one): the same, or a one-element integer or bool tensor of any shape (x.sum(torch.tensor([1]))).
bool is_int_list_item(py::handle h);
// torch's `float` parameter: a Python or NumPy number (a bool too) or a 0-d tensor, else its
// TypeError naming op, parameter and position; a complex value with an imaginary part is its
// RuntimeError.
double float_arg(py::handle h, const char* op, const char* name, int position);
// A number's (or a one-element tensor's) value as a double, converted as torch's checked
// conversion: a complex value with an imaginary part is its RuntimeError.
double real_value(py::handle h);
// float_arg's type check alone: torch's parser checks every argument's type before it converts one.
void check_float_arg_type(py::handle h, const char* op, const char* name, int position);
int64_t as_int(py::handle h);
// dim as None (-> nullopt) / int / sequence of ints, with PyTorch's TypeErrors.
OptDims parse_dims(py::handle h, const char* op);
int64_t parse_dim(py::handle h, const char* op);
std::optional<int64_t> parse_opt_dim(py::handle h, const char* op);
py::object dims_obj(const OptDims& d);
py::object opt_dim_obj(const std::optional<int64_t>& d);

// ---- out= ----
Tensor opt_out(py::handle h, const char* op);  // None -> null tensor
void warn(const std::string& msg);               // a UserWarning (raises if warnings are errors)
// PyTorch's resize_output (with its deprecation warning when a non-empty out changes shape).
void resize_out(const Tensor& out, const Shape& shape);
// Checks grad/dtype rules, resizes `out` and copies `result` into it.
void write_out(const char* op, const Tensor& result, const Tensor& out);
// Raises unless out has exactly `expected` dtype (for index outputs and the like).
void check_out_dtype(const Tensor& out, ScalarType expected);
// Raises PyTorch's mixed-device error unless `out` is on `result`'s device.
void check_out_device(const char* op, const Tensor& result, const Tensor& out);
// Returns `result`, or writes it into the tensor `outh` and returns that.
py::object finish(const char* op, const Tensor& result, py::handle outh);
[[noreturn]] void out_with_grad(const char* op);
// out= on a call that leaves the CPU kernels and has no out= path there: the autograd error when
// `x` needs grad, else "not supported on CUDA yet".
[[noreturn]] void refuse_dispatched_out(const char* op, const Tensor& x);
// The named tuple type ember.return_types.<name>(values, indices) of max/sort/topk/...
py::object return_type(const std::string& name);

// Wraps an ember Tensor result for Python (identity for now; a seam for subclasses).
inline py::object wrap(Tensor t) { return py::cast(std::move(t)); }

Tensor tensor_from_data(py::handle data, ScalarType dtype);
Tensor apply_basic_index(const Tensor& self, py::handle index);
// x[index] and x[index] = value with PyTorch's full index expressions (bind_indexing.cpp).
Tensor apply_index(const Tensor& self, py::handle index);
void apply_setitem(const Tensor& self, py::handle index, py::handle value);
py::object item(const Tensor& t);

void register_dtypes(py::module_& m);
void register_creation(py::module_& m);
void register_tensor(py::module_& m);
void register_ops(py::module_& m);
void register_reductions(py::module_& m);
void register_sort(py::module_& m);
void register_linalg(py::module_& m);
void register_shape(py::module_& m);
void register_lapack(py::module_& m);
void register_random(py::module_& m);
void register_interop(py::module_& m);
void register_runtime(py::module_& m);
void register_storage(py::module_& m);
void register_shared(py::module_& m);
void register_nn_kernels(py::module_& m);
void register_optim(py::module_& m);
void register_autograd_support(py::module_& m);  // Tensor._ag: the autograd package's slot
void register_indexing(py::module_& m);
void register_aliases(py::module_& m);  // after every group: the aliases' canonical rows
void register_cuda(py::module_& m);  // ember.cuda's _cuda_* functions, OutOfMemoryError
void register_extension_api(py::module_& m);  // _extension_api: the C table of user extensions

}  // namespace ember::pyb
