// bind_ops.cpp: Python bindings generated from the op table (op_table.h): for every
// elementwise op, the function `ember.<op>(..., out=None)`, the method `Tensor.<op>()`, the
// in-place `Tensor.<op>_()` and `ember.<op>_`, plus Python's operators.
#include <cstring>
#include <set>
#include <tuple>

#include "cuda/device_elementwise.h"
#include "python/pyutils.h"
#include "python/registry.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {



// Whether an out= tensor has another shape than the broadcast inputs and is not one of them.
// The in-place forms (lerp_, nan_to_num_) pass self as out and keep torch's in-place shape error.
bool out_needs_resize(const Tensor& out, std::initializer_list<const Operand*> inputs) {
  if (!out) return false;
  Shape shape;
  for (const Operand* in : inputs) {
    if (!in || in->is_scalar) continue;
    if (in->t == out) return false;
    shape = broadcast_shapes(shape, in->t->sizes);
  }
  return out->sizes != shape;
}

// A function's result under torch's out= rules: compute(out) writes into `out`, or makes a new
// tensor without one. An out of another shape (out_needs_resize) gets a new result through
// write_out, which checks the dtype first and then resizes out as torch's resize_output (with its
// warning when it held elements): a rare, deprecated use, so the extra copy is fine.
template <typename Compute>
py::object with_out(const char* name, py::handle outh, const Tensor& out,
                    std::initializer_list<const Operand*> inputs, Compute&& compute) {
  if (out_needs_resize(out, inputs)) {
    check_inplace_writable(out, name);  // torch's overlap check comes before the resize
    write_out(name, compute(Tensor()), out);
    return py::reinterpret_borrow<py::object>(outh);
  }
  Tensor r = compute(out);
  return out ? py::reinterpret_borrow<py::object>(outh) : wrap(std::move(r));
}

// The name a table op is bound under: torch.special-only ops (special_<f> in op_table.h) are the
// private _special_<f>, which ember.special names <f>; the others their own.
std::string bound_name(const char* table_name) {
  return std::strncmp(table_name, "special_", 8) == 0 ? std::string("_") + table_name
                                                      : std::string(table_name);
}

bool any_grad(const Operand& a, const Operand& b) {
  return (!a.is_scalar && needs_grad(a.t)) || (!b.is_scalar && needs_grad(b.t));
}
bool any_dispatch(const Operand& a, const Operand& b) {
  return (!a.is_scalar && needs_dispatch(a.t)) || (!b.is_scalar && needs_dispatch(b.t));
}

// CUDA operands that the core's own kernels take (cuda/device_elementwise.h) instead of
// ember.cuda's CuPy path: one CUDA device (CPU 0-d tensors and numbers may join), nothing to
// record, dtypes the generated kernels cover, and a GPU whose driver and NVRTC load (or the
// simulated devices). The op's functions then run as on the CPU: same dtype rules and errors.
template <typename ComputeDtype>
bool native_on_device(std::initializer_list<const Operand*> inputs, const Tensor& out,
                      ComputeDtype&& compute_dtype) {
  Device device{DeviceType::CPU, -1};
  for (const Operand* in : inputs) {
    if (in->is_scalar) continue;
    const Tensor& t = in->t;
    if (needs_grad(t) || t->dim() > cuda::kKernelMaxDims) return false;
    if (t->device().is_cpu()) {
      if (t->dim() != 0) return false;  // ember.cuda's path raises torch's device error
      continue;
    }
    if (!device.is_cpu() && t->device() != device) return false;
    device = t->device();
  }
  if (device.is_cpu()) return false;
  if (out && (out->device() != device || needs_grad(out))) return false;
  return cuda::native_elementwise_dtype(compute_dtype()) && cuda::native_elementwise_available();
}

// The dtype an op computes in on this path: ops/elementwise.cpp's rules, except integer division,
// whose zero check reads the divisor on the host (left to ember.cuda's path: Undefined).
ScalarType binary_compute(BinaryOp op, const Operand& a, const Operand& b) {
  const ScalarType common = result_type({a, b});
  if (is_integer_division(op) && is_integral(common, true)) return ScalarType::Undefined;
  return binary_dtypes(op, b, common).compute;
}
bool unit_alpha(py::handle alpha) {
  return !alpha || alpha.is_none() || (!PyBool_Check(alpha.ptr()) && to_scalar(alpha).to_double() == 1.0);
}

// sign and square of a bool tensor are another op in disguise (a copy; square in int64), which
// unary() does on any device: no kernel of their own to dispatch to.
static bool bool_in_disguise(UnaryOp op, const Tensor& x) {
  return x->dtype == ScalarType::Bool && (op == UnaryOp::sign || op == UnaryOp::square);
}

py::object unary_call(UnaryOp op, py::handle xh, py::handle outh) {
  const std::string bound = bound_name(unary_info(op).name);
  const char* name = bound.c_str();
  Tensor x = expect_tensor(xh, name, "input");
  Tensor out = opt_out(outh, name);
  const Operand in(x);
  if (needs_dispatch(x) && !bool_in_disguise(op, x) && !native_on_device({&in}, out, [&] { return unary_dtypes(op, x->dtype).compute; })) {
    if (out) check_out_no_grad(x, name);
    return redispatch_out(name, core_fn(name), py::make_tuple(xh), py::dict(), outh);
  }
  if (out) check_out_no_grad(out, name);
  if (out) check_unary_out(op, x, out);  // also when with_out resizes out
  return with_out(name, outh, out, {&in}, [&](const Tensor& o) { return unary(op, x, o); });
}

py::object unary_inplace(UnaryOp op, py::handle selfh) {
  const std::string bound = bound_name(unary_info(op).name);
  const char* name = bound.c_str();
  Tensor x = expect_tensor(selfh, name, "self");
  const Operand in(x);
  if ((x->requires_grad && grad_enabled()) ||
      (on_device(x) && !bool_in_disguise(op, x) &&
       !native_on_device({&in}, x, [&] { return unary_dtypes(op, x->dtype).compute; }))) {
    std::string n = std::string(name) + "_";
    return redispatch(n.c_str(), core_fn(n.c_str()), py::make_tuple(selfh), py::dict());
  }
  unary(op, x, x);
  return py::reinterpret_borrow<py::object>(selfh);
}

// torch's alpha_check, before any shortcut for alpha == 1.
void check_alpha(ScalarType common, const Scalar& alpha) {
  EMBER_CHECK(!alpha.is_bool() || common == ScalarType::Bool, std::runtime_error,
              "Boolean alpha only supported for Boolean results.");
  EMBER_CHECK(!alpha.is_float() || is_floating(common) || is_complex(common), std::runtime_error,
              "For integral input tensors, argument alpha must not be a floating point number.");
  EMBER_CHECK(!alpha.is_complex() || is_complex(common), std::runtime_error,
              "For non-complex input tensors, argument alpha must not be a complex number.");
  check_scalar_fits(alpha, common);
}

// add/sub's alpha on integral and bool dtypes (floating ones take add_alpha): folded into `other`
// (other * alpha) in the op's common dtype, exact in integer arithmetic.
Operand scale_alpha(const Operand& input, const Operand& other, py::handle alpha) {
  if (!alpha || alpha.is_none()) return other;
  Scalar a = to_scalar(alpha);
  if (!a.is_complex() && a.to_double() == 1.0) return other;
  const ScalarType common = result_type({input, other});
  if (is_complex(common))  // other * alpha in complex arithmetic (an unsigned other converted
    return Operand(binary(BinaryOp::mul,  // first: uint64 * -1 wrapped)
                          Operand(other.is_scalar ? wrapped_scalar(other.s, common)
                                                  : to_dtype(other.t, common)),
                          Operand(a)));
  if (common == ScalarType::Bool) a = Scalar::from_bool(a.to_double() != 0);  // stays bool
  if (other.is_scalar)
    return Operand(common == ScalarType::Bool ? Scalar::from_bool(other.s.to_int() && a.to_int())
                                              : Scalar::from_int(other.s.to_int() * a.to_int()));
  return Operand(binary(BinaryOp::mul,
                        Operand(other.t->dtype == common ? other.t : to_dtype(other.t, common)),
                        Operand(a)));
}

// add/sub with a non-unit alpha on floating dtypes: torch's fused kernel (add_alpha), or null
// where alpha folds into `other` (scale_alpha).
Tensor fused_alpha(BinaryOp op, const Operand& a, const Operand& b, py::handle alpha,
                   const Tensor& out) {
  if (!alpha || alpha.is_none()) return nullptr;
  Scalar s = to_scalar(alpha);
  check_alpha(result_type({a, b}), s);
  if (s.is_complex() || s.to_double() == 1.0) return nullptr;
  return add_alpha(op, a, b, s, out);
}

BinaryOp div_op(py::handle rounding_mode) {
  if (!rounding_mode || rounding_mode.is_none()) return BinaryOp::div;
  std::string mode = py::str(rounding_mode);
  if (mode == "trunc") return BinaryOp::div_trunc;
  if (mode == "floor") return BinaryOp::floor_divide;
  throw std::runtime_error("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + mode + "'");
}

py::object binary_call(BinaryOp op, py::handle ah, py::handle bh, py::handle outh,
                       py::handle alpha = py::handle(), const char* public_name = nullptr) {
  const std::string bound = bound_name(binary_info(op).name);
  const char* name = public_name ? public_name : bound.c_str();
  Operand a = to_operand(ah, name, "input"), b = to_operand(bh, name, "other");
  if (a.is_scalar && b.is_scalar) {
    // torch's parser takes two numbers for its arithmetic ops (allow_numbers_as_tensors): the
    // first becomes a 0-d tensor of its default dtype.
    static const std::set<std::string> numbers_as_tensors = {
        "add", "sub", "mul", "div", "true_divide", "floor_divide", "multiply", "subtract",
        "divide", "div_trunc"};  // (div_trunc: div with rounding_mode="trunc")
    EMBER_CHECK(numbers_as_tensors.count(name), py::type_error, name,
                "(): expected at least one Tensor argument");
    const Scalar& s = a.s;
    a = Operand(scalar_tensor(s, s.is_bool()      ? ScalarType::Bool
                                 : s.is_int()     ? ScalarType::Int64
                                 : s.is_complex() ? to_complex_type(get_default_dtype())
                                                  : get_default_dtype()));
  }
  Tensor out = opt_out(outh, name);
  if (any_dispatch(a, b) &&
      !(unit_alpha(alpha) && native_on_device({&a, &b}, out, [&] { return binary_compute(op, a, b); }))) {
    py::dict kw;
    if (alpha && !alpha.is_none()) kw["alpha"] = alpha;
    const char* fn = op == BinaryOp::div_trunc ? "_div_trunc" : name;
    if (out && !any_grad(a, b))
      return redispatch_out(name, core_fn(fn), py::make_tuple(ah, bh), kw, outh);
    if (out) throw std::runtime_error(str_cat(name, "(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad."));
    // div(rounding_mode="trunc") is the private _C._div_trunc
    return redispatch(name, core_fn(fn), py::make_tuple(ah, bh), kw);
  }
  if (out) check_out_no_grad(out, name);
  return with_out(name, outh, out, {&a, &b}, [&](const Tensor& o) {
    if (Tensor r = fused_alpha(op, a, b, alpha, o)) return r;
    return binary(op, a, scale_alpha(a, b, alpha), o);
  });
}

py::object binary_inplace_call(BinaryOp op, py::handle selfh, py::handle bh,
                               py::handle alpha = py::handle(), const char* public_name = nullptr) {
  const std::string bound = bound_name(binary_info(op).name);
  const char* name = public_name ? public_name : bound.c_str();
  Tensor self = expect_tensor(selfh, name, "self");
  Operand b = to_operand(bh, name, "other");
  const Operand a(self);
  if (((self->requires_grad || (!b.is_scalar && b.t->requires_grad)) && grad_enabled()) ||
      ((on_device(self) || (!b.is_scalar && on_device(b.t))) &&
       !(unit_alpha(alpha) && native_on_device({&a, &b}, self, [&] { return binary_compute(op, a, b); })))) {
    std::string n = std::string(name) + "_";
    py::dict kw;
    if (alpha && !alpha.is_none()) kw["alpha"] = alpha;
    const std::string fn = op == BinaryOp::div_trunc ? "_div_trunc_" : n;
    return redispatch(n.c_str(), core_fn(fn.c_str()), py::make_tuple(selfh, bh), kw);
  }
  if (!fused_alpha(op, Operand(self), b, alpha, self))
    binary(op, Operand(self), scale_alpha(Operand(self), b, alpha), self);
  return py::reinterpret_borrow<py::object>(selfh);
}

// Operators return NotImplemented for foreign operands so Python can try the other side.
bool foreign(py::handle h) { return !is_tensor(h) && !is_number(h); }
py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

}  // namespace

void register_ops(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(tensor_type()));
  auto defm = [&](const char* name, py::cpp_function f) { py::setattr(cls, name, f); };

  // ---- the table: one registry row per function and in-place form ----
  // Differentiable where the result can be floating (not predicates, logical or bitwise ops).
  auto differentiable = [](OpKind k) {
    return k != OpKind::PRED && k != OpKind::INTEGRAL && k != OpKind::CMP &&
           k != OpKind::LOGICAL && k != OpKind::BITWISE && k != OpKind::SHIFT;
  };
  const char* E = "elementwise";
  // torch's predicates have no in-place form (a bool result), and isnan/isinf/isfinite/relu no
  // out=.
  static const std::set<std::string> no_inplace = {"isnan", "isinf", "isfinite", "signbit"};
  static const std::set<std::string> no_out = {"isnan", "isinf", "isfinite", "relu"};
  for (int i = 0; i < num_unary_ops(); ++i) {
    auto op = static_cast<UnaryOp>(i);
    const std::string name = bound_name(unary_info(op).name);
    const bool grad = differentiable(unary_info(op).kind);
    const bool out = !no_out.count(name);
    def_op(m, {.name = name,
               .signatures = {name + (out ? "(Tensor input, *, Tensor? out=None) -> Tensor"
                                          : "(Tensor input) -> Tensor")},
               .family = E, .hooked = grad, .hand_off = false,
               .impl = [op, out](const Args& a) {
                 return unary_call(op, a[0], out ? a.out() : py::handle(Py_None));
               }});
    if (no_inplace.count(name)) continue;
    def_op(m, {.name = name + "_", .signatures = {name + "_(Tensor input) -> Tensor"},
               .family = E, .hooked = grad, .hand_off = false,
               .impl = [op](const Args& a) { return unary_inplace(op, a[0]); }});
  }
  // conj_physical: the conjugate written out (a copy for real tensors, as torch's)
  def_op(m, {.name = "conj_physical",
             .signatures = {"conj_physical(Tensor input, *, Tensor? out=None) -> Tensor"},
             .family = E, .hooked = true,
             .impl = [](const Args& a) {
               const Tensor x = a.tensor(0);
               if (!a.out().is_none()) {  // torch's structured op: out of the input's dtype only
                 // (and its iterator's overlap check of out, before any resize)
                 const Tensor out = expect_tensor(a.out(), "conj_physical", "out");
                 check_inplace_writable(out, "conj_physical");
                 const ScalarType got = out->dtype;
                 EMBER_CHECK(got == x->dtype, std::runtime_error, "Found dtype ", type_name(got),
                             " but expected ", type_name(x->dtype));
               }
               return finish("conj_physical", conj_physical(x), a.out());
             }});
  // add/sub take alpha; div takes rounding_mode (div_trunc is div(rounding_mode='trunc'), and
  // _div_trunc its private form for the hooks). Whether a + alpha * b rounds once (add_alpha):
  m.attr("_FUSED_MULTIPLY_ADD") = fused_multiply_add();
  for (int i = 0; i < num_binary_ops(); ++i) {
    auto op = static_cast<BinaryOp>(i);
    std::string name = bound_name(binary_info(op).name);
    if (op == BinaryOp::div_trunc) name = "_div_trunc";
    const bool grad = differentiable(binary_info(op).kind);
    const bool alpha = op == BinaryOp::add || op == BinaryOp::sub;
    if (op == BinaryOp::div) {
      def_op(m, {.name = "div",
                 .signatures = {"div(Tensor|Scalar input, Tensor|Scalar other, *, "
                                "str? rounding_mode=None, Tensor? out=None) -> Tensor"},
                 .family = E, .hooked = true, .hand_off = false,
                 .impl = [](const Args& a) {
                   return binary_call(div_op(a[2]), a[0], a[1], a.out(), py::handle(),
                                      a.is_none(2) ? "div" : nullptr);
                 }});
      def_op(m, {.name = "div_",
                 .signatures = {"div_(Tensor input, Tensor|Scalar other, *, "
                                "str? rounding_mode=None) -> Tensor"},
                 .family = E, .hooked = true, .hand_off = false,
                 .impl = [](const Args& a) {
                   return binary_inplace_call(div_op(a[2]), a[0], a[1], py::handle(),
                                              a.is_none(2) ? "div" : nullptr);
                 }});
      continue;
    }
    const std::string extra = alpha ? ", *, Scalar alpha=1" : "";
    // torch's signatures. A Python number as the first operand: add/sub/mul/floor_divide read
    // it as their Tensor `input` (torch's parser converts numbers there for those ops); the ops
    // with a Scalar-self overload take it as `self` (remainder(2, x), x ** y's pow(2, x); keyword
    // self=, out= only where torch's overload has one); the others refuse it. A number as
    // `other` except for the ops whose schema takes a Tensor there.
    static const std::set<std::string> numbers_as_tensors = {"add", "sub", "mul", "floor_divide"};
    static const std::set<std::string> scalar_self = {
        "remainder", "pow", "xlogy", "_special_xlog1py", "_special_zeta", "bitwise_and",
        "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"};
    static const std::set<std::string> scalar_self_without_out = {
        "remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
        "bitwise_right_shift"};
    static const std::set<std::string> tensor_other = {
        "maximum", "minimum", "atan2", "hypot", "logaddexp", "logaddexp2", "fmax", "fmin",
        "logical_and", "logical_or", "logical_xor", "igamma", "igammac"};
    const std::string input_type = numbers_as_tensors.count(name) ? "Tensor|Scalar" : "Tensor";
    const std::string other_type = tensor_other.count(name) ? "Tensor" : "Tensor|Scalar";
    // torch's keyword for the second operand: pow(x, exponent=2)
    const std::string other_name = op == BinaryOp::pow ? " exponent" : " other";
    std::vector<std::string> signatures = {
        name + "(" + input_type + " input, " + other_type + other_name +
        (alpha ? extra + ", Tensor? out=None" : ", *, Tensor? out=None") + ") -> Tensor"};
    if (scalar_self.count(name))
      signatures.push_back(name + "(Scalar self, Tensor" + other_name +
                           (scalar_self_without_out.count(name) ? "" : ", *, Tensor? out=None") +
                           ") -> Tensor");
    std::vector<std::string> inplace_signatures = {
        name + "_(Tensor input, " + other_type + other_name + extra + ") -> Tensor"};
    if (alpha) {
      // torch's other overloads of add/sub, in its order: the deprecated add(input, alpha,
      // other) of old programs (x.add_(-lr, grad); any third positional argument is read so,
      // with torch's warning), then alpha by position after a number other, which only the
      // aliases (subtract, subtract_) reach: they take no deprecated overload.
      signatures.push_back(name + "(Tensor input, Scalar alpha, Tensor|Scalar other, *, "
                                  "Tensor? out=None) -> Tensor");
      signatures.push_back(name + "(Tensor input, Scalar other, Scalar alpha) -> Tensor");
      inplace_signatures.push_back(name + "_(Tensor input, Scalar alpha, Tensor|Scalar other) "
                                          "-> Tensor");
      inplace_signatures.push_back(name + "_(Tensor input, Scalar other, Scalar alpha) -> Tensor");
    }
    // (other, alpha) of the overload that matched: alpha null where the call gave none
    auto operands = [](const Args& a, const std::string& op_name) {
      if (a.overload() == 1) {
        warn(str_cat("This overload of ", op_name, " is deprecated:\n\t", op_name,
                     "(Tensor input, Number alpha, Tensor other)\nConsider using one of the "
                     "following signatures instead:\n\t", op_name,
                     "(Tensor input, Tensor other, *, Number alpha = 1)"));
        return std::pair<py::handle, py::handle>(a[2], a[1]);
      }
      return std::pair<py::handle, py::handle>(a[1], a.given(2) ? a[2] : py::handle());
    };
    const unsigned deprecated = alpha ? 1u << 1 : 0u;  // the (input, alpha, other) form
    def_op(m, {.name = name,
               .signatures = signatures,
               .family = E,
               .hooked = grad, .hand_off = false,
               .deprecated = deprecated,
               .impl = [op, alpha, name, operands](const Args& a) {
                 if (!alpha) return binary_call(op, a[0], a[1], a.out());
                 auto [other, alpha_value] = operands(a, name);
                 return binary_call(op, a[0], other, a.out(), alpha_value);
               }});
    def_op(m, {.name = name + "_",
               .signatures = inplace_signatures,
               .family = E,
               .hooked = grad, .hand_off = false,
               .deprecated = deprecated,
               .impl = [op, alpha, name, operands](const Args& a) {
                 if (!alpha) return binary_inplace_call(op, a[0], a[1]);
                 auto [other, alpha_value] = operands(a, name + "_");
                 return binary_inplace_call(op, a[0], other, alpha_value);
               }});
  }

  // ---- operators ----
  struct BinOperator { const char* name; const char* rname; const char* iname; BinaryOp op; };
  static const BinOperator ops[] = {
      {"__add__", "__radd__", "__iadd__", BinaryOp::add},
      {"__sub__", "__rsub__", "__isub__", BinaryOp::sub},
      {"__mul__", "__rmul__", "__imul__", BinaryOp::mul},
      {"__truediv__", "__rtruediv__", "__itruediv__", BinaryOp::div},
      {"__floordiv__", "__rfloordiv__", "__ifloordiv__", BinaryOp::floor_divide},
      {"__mod__", "__rmod__", "__imod__", BinaryOp::remainder},
      {"__pow__", "__rpow__", "__ipow__", BinaryOp::pow},
      {"__and__", "__rand__", "__iand__", BinaryOp::bitwise_and},
      {"__or__", "__ror__", "__ior__", BinaryOp::bitwise_or},
      {"__xor__", "__rxor__", "__ixor__", BinaryOp::bitwise_xor},
      {"__lshift__", "__rlshift__", "__ilshift__", BinaryOp::bitwise_left_shift},
      {"__rshift__", "__rrshift__", "__irshift__", BinaryOp::bitwise_right_shift},
      {"__eq__", nullptr, nullptr, BinaryOp::eq},
      {"__ne__", nullptr, nullptr, BinaryOp::ne},
      {"__lt__", nullptr, nullptr, BinaryOp::lt},
      {"__le__", nullptr, nullptr, BinaryOp::le},
      {"__gt__", nullptr, nullptr, BinaryOp::gt},
      {"__ge__", nullptr, nullptr, BinaryOp::ge},
  };
  for (const auto& o : ops) {
    BinaryOp op = o.op;
    defm(o.name, py::cpp_function([op](py::handle self, py::handle other) -> py::object {
      if (foreign(other)) return not_implemented();
      return binary_call(op, self, other, py::none());
    }, py::is_method(cls), py::is_operator()));
    if (o.rname)
      defm(o.rname, py::cpp_function([op](py::handle self, py::handle other) -> py::object {
        if (foreign(other)) return not_implemented();
        // torch's reflected forms: other * self is self.mul(other), other / self is
        // self.reciprocal() * other (a number keeps its float32 value with float16 tensors)
        if (op == BinaryOp::mul) return binary_call(op, self, other, py::none());
        if (op == BinaryOp::div)
          return binary_call(BinaryOp::mul, unary_call(UnaryOp::reciprocal, self, py::none()),
                             other, py::none());
        return binary_call(op, other, self, py::none());
      }, py::is_method(cls), py::is_operator()));
    if (o.iname)
      defm(o.iname, py::cpp_function([op](py::handle self, py::handle other) -> py::object {
        if (foreign(other)) return not_implemented();
        return binary_inplace_call(op, self, other);
      }, py::is_method(cls), py::is_operator()));
  }
  defm("__neg__", py::cpp_function([](py::handle self) { return unary_call(UnaryOp::neg, self, py::none()); }, py::is_method(cls)));
  defm("__abs__", py::cpp_function([](py::handle self) { return unary_call(UnaryOp::abs, self, py::none()); }, py::is_method(cls)));
  defm("__pos__", py::cpp_function([](py::handle self) { return py::reinterpret_borrow<py::object>(self); }, py::is_method(cls)));
  defm("__invert__", py::cpp_function([](py::handle self) {
    Tensor t = to_tensor(self);
    EMBER_CHECK(!is_floating(t->dtype), py::type_error, "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
    return unary_call(UnaryOp::bitwise_not, self, py::none());
  }, py::is_method(cls)));
  defm("__hash__", py::cpp_function([](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); }, py::is_method(cls)));

  // ---- ternary / parametrised ----
  m.def("where", [](py::handle cond, py::handle a, py::handle b, py::handle outh) -> py::object {
    Tensor c = expect_tensor(cond, "where", "condition");
    Operand oa = to_operand(a, "where", "input"), ob = to_operand(b, "where", "other");
    // only torch's (Tensor, Tensor, Tensor) overload has out=: a number there is its TypeError
    if (!outh.is_none())
      for (auto [arg, name, pos] : {std::tuple(a, "input", 2), std::tuple(b, "other", 3)})
        if (!is_tensor(arg))
          throw py::type_error(str_cat("where(): argument '", name, "' (position ", pos,
                                       ") must be Tensor, not ", type_of(arg)));
    Tensor out = opt_out(outh, "where");
    if (needs_dispatch(c) || any_dispatch(oa, ob)) {
      if (out && any_grad(oa, ob) && grad_enabled()) out_with_grad("where");
      return redispatch_out("where", core_fn("where"), py::make_tuple(cond, a, b), py::dict(),
                            outh);
    }
    Tensor r = where(c, oa, ob);
    if (!out) return wrap(std::move(r));
    EMBER_CHECK(out->dtype == r->dtype, std::runtime_error, "Expected out type to be ",
                torch_type_name(r->dtype), " but got ", torch_type_name(out->dtype));
    write_out("where", r, out);  // resized to the result, as torch's out=
    return py::reinterpret_borrow<py::object>(outh);
  }, py::arg("condition"), py::arg("input"), py::arg("other"), py::kw_only(),
     py::arg("out") = py::none());
  defm("where", py::cpp_function([](py::handle self, py::handle cond, py::handle other) {
    return core_fn("where")(cond, self, other);
  }, py::is_method(cls), py::arg("condition"), py::arg("other")));

  // torch's overloads take both bounds as tensors or both as numbers (a 0-d tensor is a number
  // too); a tensor beside a number is a TypeError.
  auto check_bound_kinds = [](const char* op, py::handle x, py::handle lo, py::handle hi) {
    auto dims = [](py::handle b) { return is_tensor(b) && to_tensor(b)->dim() > 0; };
    auto number = [](py::handle b) { return !b.is_none() && !is_tensor(b); };
    if ((dims(lo) && number(hi)) || (number(lo) && dims(hi)))
      throw py::type_error(str_cat(op, "() received an invalid combination of arguments - got (",
                                   type_of(x), ", ", type_of(lo), ", ", type_of(hi),
                                   "), but expected one of: (Tensor input, Tensor? min = None, "
                                   "Tensor? max = None), (Tensor input, Number? min = None, "
                                   "Number? max = None)"));
  };
  // torch's Number overload is the one that matches a number beside a 0-d tensor (not
  // requiring grad): the tensor is read as a number (clamp(int32, 3, tensor(2)) stays int32)
  auto number_overload = [](py::handle lo, py::handle hi) {
    auto number = [](py::handle b) { return !b.is_none() && !is_tensor(b); };
    auto plain_0d = [](py::handle b) {
      return is_tensor(b) && to_tensor(b)->dim() == 0 && !to_tensor(b)->requires_grad;
    };
    py::object l = py::reinterpret_borrow<py::object>(lo), h = py::reinterpret_borrow<py::object>(hi);
    if (number(lo) && plain_0d(hi)) h = h.attr("item")();
    else if (plain_0d(lo) && number(hi)) l = l.attr("item")();
    return std::make_pair(l, h);
  };
  auto clamp_fn = [check_bound_kinds, number_overload](py::handle x, py::handle lo_in,
                                                       py::handle hi_in, py::handle out) -> py::object {
    Tensor t = expect_tensor(x, "clamp", "input");
    check_bound_kinds("clamp", x, lo_in, hi_in);
    const auto [lo_obj, hi_obj] = number_overload(lo_in, hi_in);
    py::handle lo = lo_obj, hi = hi_obj;
    if (needs_dispatch(t) || (is_tensor(lo) && needs_dispatch(to_tensor(lo))) ||
        (is_tensor(hi) && needs_dispatch(to_tensor(hi))))
      return redispatch_out("clamp", core_fn("clamp"), py::make_tuple(x, lo, hi), py::dict(), out);
    std::unique_ptr<Operand> l, h;
    if (!lo.is_none()) l = std::make_unique<Operand>(to_operand(lo, "clamp", "min"));
    if (!hi.is_none()) h = std::make_unique<Operand>(to_operand(hi, "clamp", "max"));
    const Operand in(t);
    Tensor o = opt_out(out, "clamp");
    EMBER_CHECK(!lo.is_none() || !hi.is_none(), std::runtime_error,  // (torch's first check)
                "torch.clamp: At least one of 'min' or 'max' must not be None");
    if (o && !is_tensor(lo) && !is_tensor(hi)) {  // torch's clamp(Scalar...).out: exact dtype
      EMBER_CHECK(!is_complex(t->dtype), NotImplementedError,  // (its first check)
                  "clamp is not supported for complex types");
      std::vector<Operand> ops{in};
      if (l) ops.push_back(*l);
      if (h) ops.push_back(*h);
      const ScalarType want = result_type(ops);
      EMBER_CHECK(o->dtype == want, std::runtime_error, "Found dtype ",
                  torch_type_name(o->dtype), " but expected ", torch_type_name(want));
    }
    return with_out("clamp", out, o, {&in, l.get(), h.get()},
                    [&](const Tensor& o) { return clamp(t, l.get(), h.get(), o); });
  };
  m.def("clamp", clamp_fn, py::arg("input"), py::arg("min") = py::none(), py::arg("max") = py::none(),
        py::kw_only(), py::arg("out") = py::none());
  m.attr("clip") = m.attr("clamp");
  defm("clamp", py::cpp_function([clamp_fn](py::handle self, py::handle lo, py::handle hi) {
    return clamp_fn(self, lo, hi, py::none());
  }, py::is_method(cls), py::arg("min") = py::none(), py::arg("max") = py::none()));
  py::setattr(cls, "clip", cls.attr("clamp"));
  auto clamp_inplace = py::cpp_function([check_bound_kinds, number_overload](
                                            py::handle self, py::handle lo_in,
                                            py::handle hi_in) -> py::object {
    Tensor t = to_tensor(self);
    check_bound_kinds("clamp_", self, lo_in, hi_in);
    const auto [lo_obj, hi_obj] = number_overload(lo_in, hi_in);
    py::handle lo = lo_obj, hi = hi_obj;
    if ((t->requires_grad && grad_enabled()) || on_device(t))
      return redispatch("clamp_", core_fn("clamp_"), py::make_tuple(self, lo, hi), py::dict());
    std::unique_ptr<Operand> l, h;
    if (!lo.is_none()) l = std::make_unique<Operand>(to_operand(lo, "clamp", "min"));
    if (!hi.is_none()) h = std::make_unique<Operand>(to_operand(hi, "clamp", "max"));
    clamp(t, l.get(), h.get(), t);
    return py::reinterpret_borrow<py::object>(self);
  }, py::is_method(cls), py::arg("min") = py::none(), py::arg("max") = py::none());
  py::setattr(cls, "clamp_", clamp_inplace);
  py::setattr(cls, "clip_", clamp_inplace);
  m.def("clamp_", [](py::handle self, py::handle lo, py::handle hi) {
    expect_tensor(self, "clamp_", "input");  // TypeError for a non-tensor, as torch's parser
    return py::reinterpret_borrow<py::object>(py::type::handle_of(self)).attr("clamp_")(self, lo, hi);
  }, py::arg("input"), py::arg("min") = py::none(), py::arg("max") = py::none());
  m.attr("clip_") = m.attr("clamp_");

  m.def("lerp", [](py::handle s, py::handle e, py::handle w, py::handle out) -> py::object {
    Tensor ts = expect_tensor(s, "lerp", "input"), te = expect_tensor(e, "lerp", "end");
    Operand ow = to_operand(w, "lerp", "weight");
    const bool grad = needs_grad(ts) || needs_grad(te) || (!ow.is_scalar && needs_grad(ow.t));
    if (grad || on_device(ts) || on_device(te) || (!ow.is_scalar && on_device(ow.t))) {
      if (grad && !out.is_none()) out_with_grad("lerp");
      return redispatch_out("lerp", core_fn("lerp"), py::make_tuple(s, e, w), py::dict(), out);
    }
    const Operand start(ts), end(te);
    return with_out("lerp", out, opt_out(out, "lerp"), {&start, &end, &ow},
                    [&](const Tensor& o) { return lerp(ts, te, ow, o); });
  }, py::arg("input"), py::arg("end"), py::arg("weight"), py::kw_only(), py::arg("out") = py::none());
  defm("lerp", py::cpp_function([](py::handle self, py::handle e, py::handle w) {
    return core_fn("lerp")(self, e, w);
  }, py::is_method(cls), py::arg("end"), py::arg("weight")));
  defm("lerp_", py::cpp_function([](py::handle self, py::handle e, py::handle w) -> py::object {
    const bool grad = needs_grad(to_tensor(self)) || (is_tensor(e) && needs_grad(to_tensor(e))) ||
                      (is_tensor(w) && needs_grad(to_tensor(w)));
    if (grad)  // recorded; the hook runs this again with grad mode off
      return redispatch("lerp_", core_fn("Tensor").attr("lerp_"), py::make_tuple(self, e, w),
                        py::dict());
    return core_fn("lerp")(self, e, w, "out"_a = self);
  }, py::is_method(cls), py::arg("end"), py::arg("weight")));

  m.def("nan_to_num", [](py::handle x, py::handle nan_arg, py::object posinf, py::object neginf,
                          py::handle out) -> py::object {
    Tensor t = expect_tensor(x, "nan_to_num", "input");
    const auto args = {std::tuple{nan_arg.ptr(), "nan", 2}, {posinf.ptr(), "posinf", 3},
                       {neginf.ptr(), "neginf", 4}};
    for (auto [h, name, pos] : args)  // (every type before any conversion, as torch's parser)
      if (h != Py_None) check_float_arg_type(h, "nan_to_num", name, pos);
    for (auto [h, name, pos] : args)
      if (h != Py_None) (void)float_arg(h, "nan_to_num", name, pos);
    const double nan = nan_arg.is_none() ? 0.0 : float_arg(nan_arg, "nan_to_num", "nan", 2);
    if (needs_dispatch(t)) {
      if (needs_grad(t) && !out.is_none()) out_with_grad("nan_to_num");
      return redispatch_out("nan_to_num", core_fn("nan_to_num"),
                            py::make_tuple(x, nan, posinf, neginf), py::dict(), out);
    }
    double p = posinf.is_none() ? 0 : posinf.cast<double>(), n = neginf.is_none() ? 0 : neginf.cast<double>();
    const double* pp = posinf.is_none() ? nullptr : &p;
    const double* np = neginf.is_none() ? nullptr : &n;
    const Operand in(t);
    if (!out.is_none()) {
      const ScalarType got = expect_tensor(out, "nan_to_num", "out")->dtype;
      EMBER_CHECK(got == t->dtype, std::runtime_error, "nan_to_num: dtype of out: ", type_name(got),
                  " should be same as input: ", type_name(t->dtype));
    }
    return with_out("nan_to_num", out, opt_out(out, "nan_to_num"), {&in},
                    [&](const Tensor& o) { return nan_to_num(t, nan, pp, np, o); });
  }, py::arg("input"), py::arg("nan") = 0.0, py::arg("posinf") = py::none(), py::arg("neginf") = py::none(),
     py::kw_only(), py::arg("out") = py::none());
  defm("nan_to_num", py::cpp_function([](py::handle self, py::object nan, py::object posinf,
                                         py::object neginf) {
    return core_fn("nan_to_num")(self, nan, posinf, neginf);
  }, py::is_method(cls), py::arg("nan") = 0.0, py::arg("posinf") = py::none(), py::arg("neginf") = py::none()));
  auto nan_to_num_inplace = [](py::handle self, py::object nan, py::object posinf,
                               py::object neginf) {
    if (to_tensor(self)->requires_grad && grad_enabled())  // the hook runs this again, grad off
      return redispatch("nan_to_num_", core_fn("nan_to_num_"),
                           py::make_tuple(self, nan, posinf, neginf), py::dict());
    return core_fn("nan_to_num")(self, nan, posinf, neginf, "out"_a = self);
  };
  m.def("nan_to_num_", nan_to_num_inplace, py::arg("input"), py::arg("nan") = 0.0,
        py::arg("posinf") = py::none(), py::arg("neginf") = py::none());
  defm("nan_to_num_",
       py::cpp_function(nan_to_num_inplace, py::is_method(cls), py::arg("nan") = 0.0,
                        py::arg("posinf") = py::none(), py::arg("neginf") = py::none()));

  // logit(input, eps=None): the hook gets (input, eps); in place, `logit_`.
  m.def("logit", [](py::handle x, py::object eps, py::handle out) -> py::object {
    Tensor t = expect_tensor(x, "logit", "input");
    if (needs_dispatch(t)) {
      if (needs_grad(t) && !out.is_none()) out_with_grad("logit");
      return redispatch_out("logit", core_fn("logit"), py::make_tuple(x, eps), py::dict(), out);
    }
    const double e = eps.is_none() ? -1.0 : float_arg(eps, "logit", "eps", 2);
    const Operand in(t);
    return with_out("logit", out, opt_out(out, "logit"), {&in},
                    [&](const Tensor& o) { return logit(t, eps.is_none() ? nullptr : &e, o); });
  }, py::arg("input"), py::arg("eps") = py::none(), py::kw_only(), py::arg("out") = py::none());
  defm("logit", py::cpp_function([](py::handle self, py::object eps) {
    return core_fn("logit")(self, eps);
  }, py::is_method(cls), py::arg("eps") = py::none()));
  auto logit_inplace = [](py::handle self, py::object eps) -> py::object {
    Tensor t = expect_tensor(self, "logit_", "self");
    if (needs_dispatch(t))  // the autograd hook runs this again, grad off
      return redispatch("logit_", core_fn("logit_"), py::make_tuple(self, eps), py::dict());
    const double e = eps.is_none() ? -1.0 : float_arg(eps, "logit_", "eps", 2);
    logit(t, eps.is_none() ? nullptr : &e, t);
    return py::reinterpret_borrow<py::object>(self);
  };
  m.def("logit_", logit_inplace, py::arg("input"), py::arg("eps") = py::none());
  defm("logit_", py::cpp_function(logit_inplace, py::is_method(cls), py::arg("eps") = py::none()));

  // round(x) and round(x, decimals=d) are torch's two overloads: only the first takes integer
  // tensors (a copy), the second has no integer kernel, even for d == 0.
  auto round_decimals_arg = [](py::handle dh, const Tensor& t) -> int64_t {
    if (dh.is_none()) return 0;
    const int64_t d = as_int(dh);
    EMBER_CHECK(is_floating(t->dtype) || is_complex(t->dtype), NotImplementedError, "\"",
                d == 0 ? "round_vml_cpu" : "round_cpu", "\" not implemented for '",
                type_name(t->dtype), "'");
    return d;
  };
  m.def("round", [round_decimals_arg](py::handle x, py::handle dh, py::handle out) -> py::object {
    Tensor t = expect_tensor(x, "round", "input");
    const int64_t decimals = round_decimals_arg(dh, t);
    if (needs_dispatch(t)) {
      if (needs_grad(t) && !out.is_none()) out_with_grad("round");
      return redispatch_out("round", core_fn("round"), py::make_tuple(x),
                            dh.is_none() ? py::dict() : py::dict("decimals"_a = dh), out);
    }
    const Operand in(t);
    const Tensor o = opt_out(out, "round");
    EMBER_CHECK(!o || o->dtype == t->dtype, std::runtime_error, "Found dtype ",
                torch_type_name(o->dtype), " but expected ", torch_type_name(t->dtype));
    return with_out("round", out, o, {&in},
                    [&](const Tensor& o) { return round_decimals(t, decimals, o); });
  }, py::arg("input"), py::kw_only(), py::arg("decimals") = py::none(), py::arg("out") = py::none());
  defm("round", py::cpp_function([](py::handle self, py::handle decimals) {
    return core_fn("round")(self, "decimals"_a = decimals);
  }, py::is_method(cls), py::kw_only(), py::arg("decimals") = py::none()));
  defm("round_", py::cpp_function([round_decimals_arg](py::handle self,
                                                       py::handle dh) -> py::object {
    Tensor t = to_tensor(self);
    if (!dh.is_none()) check_inplace_writable(t, "round_");  // before the kernel's dtype
    const int64_t decimals = round_decimals_arg(dh, t);
    if (needs_dispatch(t))  // the autograd hook runs this method again, grad off
      return redispatch("round_", py::type::handle_of(self).attr("round_"), py::make_tuple(self),
                           dh.is_none() ? py::dict() : py::dict("decimals"_a = dh));
    round_decimals(t, decimals, t);
    return py::reinterpret_borrow<py::object>(self);
  }, py::is_method(cls), py::kw_only(), py::arg("decimals") = py::none()));

  // op table for docs and the op-database tests
  m.def("_op_table", []() {
    py::list rows;
    // "complex": the result of complex inputs ("complex", "real", "bool"), None where the op
    // refuses them (EMBER_COMPLEX_*_OPS)
    auto complex_name = [](ComplexResult r) -> py::object {
      switch (r) {
        case ComplexResult::Complex: return py::str("complex");
        case ComplexResult::Real: return py::str("real");
        case ComplexResult::Bool: return py::str("bool");
        default: return py::none();
      }
    };
    for (int i = 0; i < num_unary_ops(); ++i) {
      auto& e = unary_info(static_cast<UnaryOp>(i));
      rows.append(py::dict("name"_a = e.name, "arity"_a = 1, "kind"_a = e.kind_name,
                           "complex"_a = complex_name(complex_unary_result(static_cast<UnaryOp>(i)))));
    }
    for (int i = 0; i < num_binary_ops(); ++i) {
      auto& e = binary_info(static_cast<BinaryOp>(i));
      rows.append(py::dict("name"_a = e.name, "arity"_a = 2, "kind"_a = e.kind_name,
                           "complex"_a = complex_name(complex_binary_result(static_cast<BinaryOp>(i)))));
    }
    return rows;
  });
}

}  // namespace ember::pyb
