// bind_creation.cpp: the factory functions (empty/zeros/ones/full and *_like, empty_strided,
// tensor, as_tensor, arange, linspace, logspace, eye, scalar_tensor), declared in the op registry
// with torch's signatures and factory keywords (dtype, layout, device, pin_memory,
// requires_grad, out=; see factory_keywords in registry.h).
#include <cmath>

#include "kernels/loops.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "python/pyutils.h"
#include "python/registry.h"

namespace ember::pyb {
namespace {


// What a factory does with an out= of another shape: torch's factories resize it to the
// result's (resize_, no warning); its ranges (linspace, logspace, arange) keep an out= with the
// result's number of elements, whatever its shape, and fill it in its own order (arange warns
// when it resizes: the count comes from a division that may round).
enum class OutShape { Resize, KeepCount, KeepCountWarn };

// The result of a factory: `t` moved to the device asked for (it may have been built on the
// CPU), pinned, written into out= or marked as requiring grad.
// An uninitialised tensor laid out in a memory format that fixes the strides (FactoryKeywords:
// "contiguous_format", "channels_last" for 4-d sizes, "channels_last_3d" for 5-d: C innermost).
Tensor empty_in_format(const Shape& sizes, ScalarType dtype, Device device,
                       const std::string& format) {
  if (format == "contiguous_format") return empty(sizes, dtype, device);
  const bool is_3d = format == "channels_last_3d";
  const size_t rank = is_3d ? 5 : 4;
  EMBER_CHECK(sizes.size() == rank, std::runtime_error, "required rank ", rank,
              " tensor to use ", format, " format");
  Shape strides(rank);
  int64_t stride = 1;
  strides[1] = 1;  // C innermost, then the spatial dims from the last, then N
  stride *= sizes[1];
  for (size_t d = rank - 1; d >= 2; --d) {
    strides[d] = stride;
    stride *= sizes[d];
  }
  strides[0] = stride;
  return empty_strided(sizes, strides, dtype, device);
}

py::object finish_factory(Tensor t, const FactoryKeywords& f, OutShape rule = OutShape::Resize) {
  if (f.device_given && t->device() != f.device) t = to_device_copy(t, f.device, false);
  if (!f.out.is_none()) {
    Tensor o = to_tensor(f.out);
    const bool keep = rule != OutShape::Resize && o->numel() == t->numel();
    if (o->sizes != t->sizes && !keep) {
      if (rule == OutShape::KeepCountWarn)
        warn(str_cat("The number of elements in the out tensor of shape ", shape_str(o->sizes),
                     " is ", o->numel(), " which does not match the computed number of elements ",
                     t->numel(), ". Note that this may occur as a result of rounding error. The "
                     "out tensor will be resized to a tensor of shape (", t->numel(), ",)."));
      resize_output(o, t->sizes);
    }
    copy_(o, o->sizes == t->sizes ? t : reshape(t, o->sizes));
    py::object r = py::reinterpret_borrow<py::object>(f.out);
    if (f.requires_grad) r.attr("requires_grad_")(true);  // on out, as torch's (ints refuse)
    return r;
  }
  t->version->value.store(0);  // a new tensor starts at version 0 (filling it is no user write)
  py::object r = py::cast(t);
  if (f.pin_memory) r = core_fn("_pin_memory")(r);  // needs CUDA, as torch's
  if (f.requires_grad) r.attr("requires_grad_")(true);
  return r;
}

ScalarType or_default(ScalarType dt) { return dt == ScalarType::Undefined ? get_default_dtype() : dt; }

Tensor filled(const Shape& shape, ScalarType dt, const Scalar* value, Device device = Device{}) {
  Tensor t = empty(shape, dt, device);
  if (value) fill_(t, *value);
  return t;
}

// kernel: torch's name for the kernel, in the refusal of a dtype it has none for (bool, the
// wide unsigned types).
template <typename Fill> Tensor make_range(int64_t n, ScalarType dt, Fill fill, const char* kernel) {
  Tensor t = empty({n}, dt);
  dispatch_numeric(dt, kernel, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t->data_as<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = cast_to<T>(fill(i));
  });
  return t;
}

// linspace / logspace: PyTorch fills the second half backwards from `end` for symmetry (one
// step: `start`); `f` maps each point (logspace: base**point).
// (torch fills one step or none without its kernel, so any dtype takes those.)
template <typename F> Tensor spaced_range(double start, double end, int64_t steps, ScalarType dt,
                                         F f, const char* kernel) {
  EMBER_CHECK(steps >= 0, std::runtime_error, "number of steps must be non-negative");
  if (steps <= 1) {
    Tensor t = empty({steps}, dt);
    if (steps == 1) fill_(t, Scalar::from_double(f(start)));
    return t;
  }
  const double step = (end - start) / double(steps - 1);
  const int64_t half = steps / 2;
  return make_range(steps, dt, [=](int64_t i) {
    return f(i < half ? start + step * double(i) : end - step * double(steps - i - 1));
  }, kernel);
}
// start and end must fit the dtype, as torch's kernels convert them (when there are steps).
void check_ends_fit(const Args& a, ScalarType dt) {
  if (a.integer(2) <= 0) return;
  check_scalar_fits(a.scalar(0), dt);
  check_scalar_fits(a.scalar(1), dt);
}

template <typename F> Tensor spaced(const Args& a, ScalarType dt, F f, const char* kernel) {
  check_ends_fit(a, dt);
  return spaced_range(a.real(0), a.real(1), a.integer(2), dt, f, kernel);
}

// linspace with a complex end point or dtype: the real and imaginary parts spaced on their own.
Tensor complex_linspace(const Scalar& start, const Scalar& end, int64_t steps, ScalarType dt) {
  const ScalarType real = to_real_type(dt);
  auto id = [](double p) { return p; };
  Tensor re = spaced_range(start.to_double(), end.to_double(), steps, real, id, "linspace_cpu");
  Tensor im = spaced_range(start.is_complex() ? start.imag : 0.0,
                           end.is_complex() ? end.imag : 0.0, steps, real, id, "linspace_cpu");
  Tensor out = empty({steps}, dt);
  const Tensor parts = view_as_real(out);
  copy_(select(parts, -1, 0), re);
  copy_(select(parts, -1, 1), im);
  return out;
}

}  // namespace

void register_creation(py::module_& m) {
  // For the Python-level ops: torch's checked conversion of a number into a kernel's dtype.
  m.def("_check_scalar_fits", [](py::handle value, py::handle dtype) {
    check_scalar_fits(to_scalar(value), to_dtype(dtype));
  });
  const char* C = "creation";
  const std::string factory = kFactoryParams;

  // empty / zeros / ones: the size as zeros(2, 3), zeros((2, 3)) or zeros(size=(2, 3))
  struct Filled { const char* name; int value; };  // value -1: left uninitialised
  for (const Filled& row : {Filled{"empty", -1}, Filled{"zeros", 0}, Filled{"ones", 1}}) {
    const std::string name = row.name;
    const int value = row.value;
    def_op(m, {.name = name,
               .signatures = {name + "(int[] size, *, " +
                              (value < 0 ? "Any? memory_format=None, " : "") +
                              "Tensor? out=None, " + factory + ") -> Tensor"},
               .family = C, .variants = kFunction, .hand_off = false,
               .impl = [name, value](const Args& a) {
                 const FactoryKeywords f = factory_keywords(a, name.c_str());
                 if (!f.memory_format.empty())  // (only empty takes one)
                   return finish_factory(empty_in_format(a.ints(0), or_default(f.dtype),
                                                         f.device, f.memory_format), f);
                 const Scalar v = Scalar::from_int(value);
                 return finish_factory(
                     filled(a.ints(0), or_default(f.dtype), value < 0 ? nullptr : &v, f.device), f);
               }});
  }
  def_op(m, {.name = "full",
             .signatures = {"full(int[] size, Scalar fill_value, *, Tensor? out=None, " + factory +
                            ") -> Tensor"},
             .family = C, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               const FactoryKeywords f = factory_keywords(a, "full");
               const Scalar v = a.scalar(1);
               // PyTorch infers the dtype from the fill value.
               const ScalarType dt =
                   f.dtype != ScalarType::Undefined ? f.dtype : v.natural_dtype(get_default_dtype());
               return finish_factory(filled(a.ints(0), dt, &v, f.device), f);
             }});
  def_op(m, {.name = "empty_strided",
             .signatures = {"empty_strided(int[] size, int[] stride, *, " + factory + ") -> Tensor"},
             .family = C, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               const FactoryKeywords f = factory_keywords(a, "empty_strided");
               return finish_factory(empty_strided(a.ints(0), a.ints(1), or_default(f.dtype), f.device), f);
             }});

  // *_like: input's shape, dtype and device unless dtype= / device= say otherwise
  struct Like { const char* name; int value; };  // value -1: empty, 2: fill_value
  for (const Like& row : {Like{"empty_like", -1}, Like{"zeros_like", 0}, Like{"ones_like", 1},
                          Like{"full_like", 2}}) {
    const std::string name = row.name;
    const int value = row.value;
    def_op(m, {.name = name,
               .signatures = {name + "(Tensor input, " + (value == 2 ? "Scalar fill_value, " : "") +
                              "*, Any? memory_format=None, " + factory + ") -> Tensor"},
               .family = C, .variants = kFunction, .hand_off = false,
               .impl = [name, value](const Args& a) {
                 const FactoryKeywords f = factory_keywords(a, name.c_str());
                 const Tensor x = a.tensor(0);
                 const ScalarType dt = f.dtype == ScalarType::Undefined ? x->dtype : f.dtype;
                 const Device device = f.device_given ? f.device : x->device();
                 Tensor t = !f.memory_format.empty() ? empty_in_format(x->sizes, dt, device,
                                                                       f.memory_format)
                            : device != x->device()  ? empty(x->sizes, dt, device)
                                                     : empty_like(x, dt);  // (preserve_format)
                 if (value == 0 || value == 1) fill_(t, Scalar::from_int(value));
                 if (value == 2) fill_(t, a.scalar(1));
                 return finish_factory(t, f);
               }});
  }

  def_op(m, {.name = "tensor",
             .signatures = {"tensor(Any data, *, ScalarType? dtype=None, Device? device=None, "
                            "bool requires_grad=False, bool pin_memory=False) -> Tensor"},
             .family = C, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               FactoryKeywords f = factory_keywords(a, "tensor", /*check_pin=*/false);
               if (is_tensor(a[0])) {  // a copy, on the source's device unless device= says otherwise
                 warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach()."
                      "clone() or sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "ember.tensor(sourceTensor).");
                 if (!f.device_given) f.device = a.tensor(0)->device(), f.device_given = true;
               }
               // torch's order: the dtype inferred (its errors), the pinned allocation (its
               // error), then the elements read (a ragged list, a bad element, an overflow)
               Tensor t;
               try {
                 t = tensor_from_data(a[0], f.dtype);
               } catch (const std::exception& e) {
                 const std::string what = e.what();
                 if (!(what.rfind("new(): invalid data type", 0) == 0 ||
                       what.rfind("too many dimensions", 0) == 0 ||
                       (f.dtype == ScalarType::Undefined &&
                        what.rfind("Could not infer dtype", 0) == 0)))
                   check_pin_memory(f);
                 throw;
               }
               check_pin_memory(f);
               return finish_factory(t, f);
             }});
  // as_tensor: no copy when it can share (a tensor of the dtype and device, a NumPy array)
  def_op(m, {.name = "as_tensor",
             .signatures = {"as_tensor(Any data, *, ScalarType? dtype=None, Device? device=None) -> Tensor"},
             .family = C, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) -> py::object {
               const FactoryKeywords f = factory_keywords(a, "as_tensor");
               py::handle data = a[0];
               if (is_tensor(data)) {
                 py::object t = py::reinterpret_borrow<py::object>(data);
                 py::dict to;
                 if (f.dtype != ScalarType::Undefined) to["dtype"] = dtype_object(f.dtype);
                 if (f.device_given) to["device"] = py::str(f.device.str());
                 return to.empty() ? t : t.attr("to")(**to);
               }
               if (py::hasattr(data, "__array_interface__") && !is_number(data)) {
                 py::object np_arr = py::reinterpret_borrow<py::object>(data);
                 try {
                   Tensor shared = py::module_::import("ember").attr("from_numpy")(np_arr).cast<Tensor>();
                   if (f.dtype == ScalarType::Undefined || f.dtype == shared->dtype) return wrap(shared);
                   return wrap(to_dtype(shared, f.dtype));
                 } catch (py::error_already_set&) {
                   // non-writeable / unsupported arrays fall through to a copy
                 }
               }
               return wrap(tensor_from_data(data, f.dtype));
             }});

  // arange: torch's three forms (end; start, end; start, end, step)
  def_op(m, {.name = "arange",
             .signatures = {"arange(Scalar end, *, Tensor? out=None, " + factory + ") -> Tensor",
                            "arange(Scalar start, Scalar end, *, " + factory + ") -> Tensor",
                            "arange(Scalar start, Scalar end, Scalar step=1, *, Tensor? out=None, " +
                                factory + ") -> Tensor"},
             .family = C, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               const FactoryKeywords f = factory_keywords(a, "arange");
               const bool only_end = a.overload() == 0;
               const Scalar s0 = only_end ? Scalar::from_int(0) : a.scalar(0);
               const Scalar s1 = a.scalar(only_end ? 0 : 1);
               const Scalar st = a.overload() == 2 ? a.scalar(2) : Scalar::from_int(1);
               for (const Scalar& s : {s0, s1, st})  // (a complex number counts as a float)
                 EMBER_CHECK(!s.is_complex() || s.imag == 0.0, std::runtime_error,
                             "value cannot be converted to type double without overflow");
               const bool any_float = s0.is_float() || s1.is_float() || st.is_float() ||
                                      s0.is_complex() || s1.is_complex() || st.is_complex();
               const ScalarType dt = f.dtype != ScalarType::Undefined ? f.dtype
                                     : any_float ? get_default_dtype() : ScalarType::Int64;
               if (is_reduced_float(dt))  // torch's accumulate type for them: float32, checked
                 for (const Scalar& s : {s0, s1, st}) check_scalar_fits(s, ScalarType::Float32);
               if (dt == ScalarType::Int64 && any_float) {
                 // torch's int64 arange truncates its bounds and step to int64 first and counts
                 // in integers: arange(0, 5, 1.5, dtype=int64) steps by 1 (five elements), a
                 // step below 1 is a zero step (its ValueError)
                 const int64_t xs = s0.to_checked<int64_t>(), xe = s1.to_checked<int64_t>(),
                               xd = st.to_checked<int64_t>();
                 if (xd == 0) throw ValueError("step must be nonzero");
                 EMBER_CHECK((xd > 0 && xe >= xs) || (xd < 0 && xe <= xs), std::runtime_error,
                             "upper bound and lower bound inconsistent with step sign");
                 const int64_t sign = xd > 0 ? 1 : -1;
                 const int64_t n = (xe - xs + xd - sign) / xd;
                 Tensor t = make_range(n, dt, [=](int64_t i) { return xs + i * xd; },
                                       "arange_cpu");
                 return finish_factory(t, f, OutShape::KeepCountWarn);
               }
               const double lo = s0.to_double(), hi = s1.to_double(), d = st.to_double();
               EMBER_CHECK(d != 0, std::runtime_error, "step must be nonzero");
               EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), std::runtime_error,
                           "unsupported range: ", lo, " -> ", hi);
               EMBER_CHECK((d > 0 && hi >= lo) || (d < 0 && hi <= lo), std::runtime_error,
                           "upper bound and lower bound inconsistent with step sign");
               const int64_t n = static_cast<int64_t>(std::ceil((hi - lo) / d));
               Tensor t;
               if (is_integral(dt, false)) {
                 // int8-int32, uint8: the count from the numbers as given, the values from
                 // them truncated to int64 (torch's accumulate type): arange(0, 5, 1.5,
                 // dtype=int8) is 0, 1, 2, 3, as NumPy's; a step below 1 repeats the start
                 const int64_t ia = s0.to_checked<int64_t>(), id = st.to_checked<int64_t>();
                 t = make_range(n, dt, [=](int64_t i) { return ia + i * id; }, "arange_cpu");
               } else {
                 t = make_range(n, dt, [=](int64_t i) { return lo + static_cast<double>(i) * d; },
                                "arange_cpu");
               }
               return finish_factory(t, f, OutShape::KeepCountWarn);
             }});

  // start and end: numbers or 0-d tensors (torch's Tensor overloads refuse others by rank)
  auto check_zero_dim_ends = [](const Args& a, const char* name) {
    std::string got;
    for (int i : {0, 1}) {
      if (!is_tensor(a[i]) || to_tensor(a[i])->dim() == 0) continue;
      got += str_cat(got.empty() ? "" : " and ", i ? "end" : "start", " with ",
                     to_tensor(a[i])->dim(), " dimension(s)");
    }
    EMBER_CHECK(got.empty(), std::runtime_error, name,
                " only supports 0-dimensional start and end tensors, but got ", got, ".");
  };
  def_op(m, {.name = "linspace",
             .signatures = {"linspace(Tensor|Scalar start, Tensor|Scalar end, int steps, *, "
                            "Tensor? out=None, " + factory + ") -> Tensor"},
             .family = C, .variants = kFunction, .hand_off = false,
             .impl = [check_zero_dim_ends](const Args& a) {
               check_zero_dim_ends(a, "linspace");
               const FactoryKeywords f = factory_keywords(a, "linspace");
               const Scalar s0 = a.scalar(0), s1 = a.scalar(1);
               if (s0.is_complex() || s1.is_complex() || is_complex(f.dtype)) {
                 const ScalarType dt = f.dtype != ScalarType::Undefined
                                           ? f.dtype : to_complex_type(get_default_dtype());
                 EMBER_CHECK(is_complex(dt), std::runtime_error, "torch.linspace(): inferred dtype ",
                             cpp_type_name(to_complex_type(get_default_dtype())),
                             " can't be safely cast to passed dtype ", type_name(dt));
                 check_ends_fit(a, dt);
                 return finish_factory(complex_linspace(s0, s1, a.integer(2), dt), f,
                                       OutShape::KeepCount);
               }
               return finish_factory(
                   spaced(a, or_default(f.dtype), [](double p) { return p; }, "linspace_cpu"), f,
                   OutShape::KeepCount);
             }});
  def_op(m, {.name = "logspace",
             .signatures = {"logspace(Tensor|Scalar start, Tensor|Scalar end, int steps, "
                            "float base=10.0, *, Tensor? out=None, " + factory + ") -> Tensor"},
             .family = C, .variants = kFunction, .hand_off = false,
             .impl = [check_zero_dim_ends](const Args& a) {
               check_zero_dim_ends(a, "logspace");
               const FactoryKeywords f = factory_keywords(a, "logspace");
               const double base = a.real(3);
               const ScalarType dt = or_default(f.dtype);
               if (is_complex(dt)) {  // base ** the complex linspace, in that dtype
                 check_ends_fit(a, dt);
                 const Tensor points = complex_linspace(a.scalar(0), a.scalar(1), a.integer(2), dt);
                 return finish_factory(
                     binary(BinaryOp::pow, Operand(Scalar::from_double(base)), Operand(points)), f,
                     OutShape::KeepCount);
               }
               return finish_factory(
                   spaced(a, dt, [base](double p) { return std::pow(base, p); },
                          "logspace_cpu"),
                   f, OutShape::KeepCount);
             }});

  def_op(m, {.name = "eye",
             .signatures = {"eye(SymInt n, *, Tensor? out=None, " + factory + ") -> Tensor",
                            "eye(SymInt n, SymInt m, *, Tensor? out=None, " + factory + ") -> Tensor"},
             .family = C, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               const FactoryKeywords f = factory_keywords(a, "eye");
               const int64_t n = a.integer(0), mm = a.overload() == 1 ? a.integer(1) : n;
               EMBER_CHECK(n >= 0, std::runtime_error, "n must be greater or equal to 0, got ", n);
               EMBER_CHECK(mm >= 0, std::runtime_error, "m must be greater or equal to 0, got ", mm);
               const ScalarType dt = or_default(f.dtype);
               if (is_wide_unsigned(dt))  // (torch's eye has no kernel for them, even for n = 0)
                 throw NotImplementedError(str_cat("\"eye\" not implemented for '", type_name(dt), "'"));
               const Scalar zero = Scalar::from_int(0);
               Tensor t = filled({n, mm}, dt, &zero, f.device);
               const int64_t k = std::min(n, mm);
               if (k > 0) fill_(as_strided(t, {k}, {mm + 1}, 0), Scalar::from_int(1));
               return finish_factory(t, f);
             }});
  def_op(m, {.name = "scalar_tensor",
             .signatures = {"scalar_tensor(Scalar s, *, " + factory + ") -> Tensor"},
             .family = C, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               const FactoryKeywords f = factory_keywords(a, "scalar_tensor");
               const Scalar s = a.scalar(0);
               const ScalarType dt = or_default(f.dtype);
               return finish_factory(scalar_tensor(s, dt, !converts_unchecked(s, dt)), f);
             }});
}

}  // namespace ember::pyb
