// bind_reductions.cpp: Python bindings of the reductions, scans and softmax (ops/reduce.h): the
// functions `ember.<op>(input, ...)` and the methods `Tensor.<op>(...)`, with PyTorch's argument
// forms (dim as None / int / tuple, legacy `unbiased`, max(input, other), ...), out= handling
// (PyTorch's resize_output and dtype rules) and the autograd hook: when the input requires grad,
// the call goes to `redispatch(name, _C.<name>, (input,), canonical kwargs)`.
#include <cmath>
#include <map>
#include <string>

#include "ops/reduce.h"
#include "python/pyutils.h"
#include "python/registry.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {


// ---- sum / nansum / mean / nanmean / prod ----

enum class SumOp { Sum, NanSum, Mean, NanMean };

// ---- max / min ----

py::object minmax_call(bool is_max, py::handle xh, py::handle dimh, py::handle keepdimh,
                       py::handle outh, py::handle otherh) {
  const char* name = is_max ? "max" : "min";
  Tensor x = expect_tensor(xh, name, "input");
  // max(input, other): the elementwise maximum (a 0-d integer tensor with keepdim is a dim)
  if (is_tensor(dimh) && (keepdimh.is_none() || !is_int_like(dimh)))
    otherh = dimh, dimh = py::none();
  if (otherh && !otherh.is_none()) {
    if (!keepdimh.is_none() || !dimh.is_none())
      throw py::type_error(str_cat(name, "(): keepdim and dim cannot be combined with other"));
    return core_fn(is_max ? "maximum" : "minimum")(xh, otherh, "out"_a = outh);
  }
  if (dimh.is_none()) {
    if (!keepdimh.is_none())
      throw py::type_error(str_cat(name, "() received an invalid combination of arguments: "
                                         "keepdim requires dim"));
    if (needs_dispatch(x)) {
      if ((!outh.is_none()) && needs_grad(x)) out_with_grad(name);
      return redispatch_out(name, core_fn(name), py::make_tuple(xh), py::dict(), outh);
    }
    return finish(name, is_max ? max_all(x) : min_all(x), outh);
  }
  const int64_t dim = parse_dim(dimh, name);
  const bool keepdim = keepdimh.is_none() ? false : keepdimh.cast<bool>();
  if (needs_dispatch(x))
    return redispatch_pair_out(name, core_fn(name), py::make_tuple(xh),
                               py::dict("dim"_a = dim, "keepdim"_a = keepdim), outh);
  auto [values, indices] = is_max ? max_dim(x, dim, keepdim) : min_dim(x, dim, keepdim);
  if (!outh.is_none()) {
    if (!py::isinstance<py::sequence>(outh) || py::len(outh) != 2)
      throw py::type_error(str_cat(name, "(): argument 'out' must be tuple of Tensors"));
    py::sequence outs = py::reinterpret_borrow<py::sequence>(outh);
    Tensor ov = expect_tensor(outs[0], name, "out"), oi = expect_tensor(outs[1], name, "out");
    check_out_dtype(ov, x->dtype);
    check_out_dtype(oi, ScalarType::Int64);
    write_out(name, values, ov);
    write_out(name, indices, oi);
    return return_type(name)(outs[0], outs[1]);
  }
  return return_type(name)(wrap(values), wrap(indices));
}

py::object amax_call(bool is_max, py::handle xh, py::handle dimh, bool keepdim, py::handle outh) {
  const char* name = is_max ? "amax" : "amin";
  Tensor x = expect_tensor(xh, name, "input");
  OptDims dims = parse_dims(dimh, name);
  if (needs_dispatch(x)) {
    if ((!outh.is_none()) && needs_grad(x)) out_with_grad(name);
    return redispatch_out(name, core_fn(name), py::make_tuple(xh),
                         py::dict("dim"_a = dims ? dims_obj(dims) : py::tuple(), "keepdim"_a = keepdim), outh);
  }
  Tensor out = opt_out(outh, name);
  if (out)
    EMBER_CHECK(out->dtype == x->dtype, std::runtime_error,
                "Expected the dtype for input and out to match, but got ",
                torch_type_name(x->dtype), " for input's dtype and ", torch_type_name(out->dtype),
                " for out's dtype.");
  return finish(name, is_max ? amax(x, dims, keepdim) : amin(x, dims, keepdim), outh);
}

py::object argmax_call(bool is_max, py::handle xh, py::handle dimh, bool keepdim, py::handle outh) {
  const char* name = is_max ? "argmax" : "argmin";
  Tensor x = expect_tensor(xh, name, "input");
  auto dim = parse_opt_dim(dimh, name);
  Tensor out = opt_out(outh, name);
  if (on_device(x)) {
    if (out) check_out_dtype(out, ScalarType::Int64);
    return redispatch_out(name, core_fn(name), py::make_tuple(xh),
                          py::dict("dim"_a = opt_dim_obj(dim), "keepdim"_a = keepdim), outh);
  }
  Tensor r = is_max ? argmax(x, dim, keepdim) : argmin(x, dim, keepdim);
  if (out) check_out_dtype(out, ScalarType::Int64);  // (torch's dim and size checks come first)
  return finish(name, r, outh);
}

// ---- var / std ----

py::object var_call(const char* name, bool take_sqrt, bool with_mean, py::handle xh, py::handle dimh,
                    py::handle unbiasedh, bool keepdim, py::handle correctionh, py::handle outh) {
  Tensor x = expect_tensor(xh, name, "input");
  if (PyBool_Check(dimh.ptr())) {  // the legacy form var(input, unbiased)
    if (!unbiasedh.is_none())
      throw py::type_error(str_cat(name, "() received an invalid combination of arguments"));
    unbiasedh = dimh;
    dimh = py::none();
  }
  if (!unbiasedh.is_none() && !correctionh.is_none())
    throw py::type_error(str_cat(name, "() received an invalid combination of arguments: "
                                       "'unbiased' and 'correction' cannot both be given"));
  py::object corr = py::int_(1);
  if (!unbiasedh.is_none()) corr = py::int_(unbiasedh.cast<bool>() ? 1 : 0);
  else if (!correctionh.is_none()) corr = py::reinterpret_borrow<py::object>(correctionh);
  const double c = to_scalar(corr).to_double();
  OptDims dims = parse_dims(dimh, name);
  // Warned once: by a call that runs here or on a device, not by one the autograd hook runs again.
  if (is_floating(x->dtype) && !needs_grad(x)) {
    auto mask = reduction_mask(x, dims);
    if (static_cast<double>(reduced_numel(x, mask)) - c <= 0)
      warn(str_cat(take_sqrt ? "std" : "var", "(): degrees of freedom is <= 0. Correction should be "
                   "strictly less than the reduction factor (input numel divided by output numel)."));
  }
  if (needs_dispatch(x)) {
    if ((!outh.is_none()) && needs_grad(x)) out_with_grad(name);
    // var_mean/std_mean return a pair and take no out= (ignored, as on the CPU)
    return redispatch_out(name, core_fn(name), py::make_tuple(xh),
                          py::dict("dim"_a = dims_obj(dims), "correction"_a = corr, "keepdim"_a = keepdim),
                          with_mean ? py::handle(py::none()) : outh);
  }
  if (with_mean) {
    auto [v, m] = var_mean(x, dims, c, keepdim, take_sqrt);
    return py::make_tuple(wrap(v), wrap(m));
  }
  if (!outh.is_none() && is_floating(x->dtype)) {
    // torch's var.out computes in out's floating dtype (bfloat16 values into a float64 out= are
    // a float64 variance, not a bfloat16 one)
    const ScalarType odt = to_tensor(outh)->dtype;
    if (is_floating(odt) && odt != x->dtype) x = to_dtype(x, odt);
  }
  return finish(name, var(x, dims, c, keepdim, take_sqrt), outh);
}

// ---- norm ----

double parse_norm_order(py::handle ph, const OptDims& dims) {
  if (ph.is_none()) return 2.0;
  if (py::isinstance<py::str>(ph)) {
    std::string s = py::str(ph);
    if (s == "fro") {
      if (dims && dims->size() > 2) {
        std::string got;
        for (size_t i = 0; i < dims->size(); ++i) got += (i ? " " : "") + std::to_string((*dims)[i]);
        throw std::runtime_error("linalg.matrix_norm: dim must be a 2-tuple. Got " + got);
      }
      return 2.0;
    }
    if (s == "nuc") throw NotImplementedError("norm(): the nuclear norm ('nuc') is not supported");
    throw std::runtime_error("linalg.matrix_norm: Order " + s + " not supported.");
  }
  if (!is_number(ph) && !(is_tensor(ph) && to_tensor(ph)->dim() == 0))  // (a 0-d tensor is one)
    throw py::type_error(str_cat("norm(): argument 'p' must be Number or str, not ", type_of(ph)));
  const Scalar p = to_scalar(ph);
  EMBER_CHECK(!p.is_complex(), std::runtime_error,
              "linalg.vector_norm: Expected a non-complex scalar as the order of norm.");
  return p.to_double();
}

py::object norm_call(py::handle xh, py::handle ph, py::handle dimh, bool keepdim, py::handle outh,
                     py::handle dtypeh) {
  Tensor x = expect_tensor(xh, "norm", "input");
  // torch sends a string order other than "fro" to linalg_matrix_norm, whose parser refuses a
  // tensor as its tuple of dims (norm's own takes a one-element tensor as an int)
  if (py::isinstance<py::str>(ph) && std::string(py::str(ph)) != "fro" && is_tensor(dimh))
    throw py::type_error(str_cat(
        "linalg_matrix_norm() received an invalid combination of arguments - got (Tensor, str, "
        "Tensor, bool, dtype=", dtypeh.is_none() ? "NoneType" : "torch.dtype", "), but expected "
        "one of:\n * (Tensor input, Number ord, tuple of ints dim = {-2,-1}, bool keepdim = "
        "False, *, torch.dtype dtype = None, Tensor out = None)\n * (Tensor input, str ord = "
        "\"fro\", tuple of ints dim = {-2,-1}, bool keepdim = False, *, torch.dtype dtype = None, "
        "Tensor out = None)"));
  OptDims dims = parse_dims(dimh, "norm");
  const double p = parse_norm_order(ph, dims);
  ScalarType dt = to_dtype(dtypeh);
  if (needs_dispatch(x)) {
    if ((!outh.is_none()) && needs_grad(x)) out_with_grad("norm");
    return redispatch_out("norm", core_fn("norm"), py::make_tuple(xh),
                         py::dict("p"_a = p, "dim"_a = dims_obj(dims), "keepdim"_a = keepdim,
                                  "dtype"_a = dtype_object(dt)), outh);
  }
  Tensor r = norm(x, p, dims, keepdim, dt);
  if (!outh.is_none()) {  // torch's norm writes its result's dtype only
    const Tensor o = expect_tensor(outh, "norm", "out");
    EMBER_CHECK(o->dtype == r->dtype, std::runtime_error, "Expected out tensor to have dtype ",
                cpp_type_name(r->dtype), ", but got ", cpp_type_name(o->dtype), " instead");
  }
  return finish("norm", r, outh);
}

// ---- scans ----

py::object scan_inplace(bool is_prod, py::handle selfh, py::handle dimh, py::handle dtypeh) {
  const char* name = is_prod ? "cumprod_" : "cumsum_";
  Tensor x = expect_tensor(selfh, name, "self");
  const int64_t dim = parse_dim(dimh, name);
  (void)wrap_dim(dim, x->dim());  // torch wraps dim before its other checks
  ScalarType dt = to_dtype(dtypeh);
  if (x->requires_grad && grad_enabled())
    return redispatch(name, core_fn(name), py::make_tuple(selfh),
                         py::dict("dim"_a = dim, "dtype"_a = dtype_object(dt)));
  EMBER_CHECK(dt == ScalarType::Undefined || dt == x->dtype, std::runtime_error,
              "Bad in-place call: input tensor dtype ", cpp_type_name(x->dtype),
              " and output tensor dtype ", cpp_type_name(dt), " should match");
  check_inplace_writable(x, name);
  Tensor r;
  if (on_device(x))  // the device computes the scan; copy_ writes it back on the device
    r = to_tensor(call_device(is_prod ? "cumprod" : "cumsum", py::make_tuple(selfh),
                              py::dict("dim"_a = dim, "dtype"_a = dtype_object(x->dtype))));
  else
    r = is_prod ? cumprod(x, dim, x->dtype) : cumsum(x, dim, x->dtype);
  copy_(x, r);
  return py::reinterpret_borrow<py::object>(selfh);
}

// torch's sum / mean / prod with a real dtype (given, or out='s) for a complex input: the input
// is cast first, its imaginary part dropped with torch's warning (as x.to(dtype) does).
Tensor complex_input_as(const Tensor& x, ScalarType dt) {
  if (!is_complex(x->dtype) || dt == ScalarType::Undefined || is_complex(dt)) return x;
  warn("Casting complex values to real discards the imaginary part");
  return to_dtype(x, dt);
}

// torch's sum/mean/prod have two forms: (input, *, dtype) over every element, and (input, dim,
// keepdim=False, *, dtype, out) where dim must be given: keepdim or out= without dim matches
// neither (mean's first form takes out= too).
void refuse_keepdim_without_dim(const Args& a, const char* name, bool out_without_dim = false) {
  if (a.given(1) || (!a.given(2) && (out_without_dim || a.out().is_none()))) return;
  throw TypeError(str_cat(name, "() received an invalid combination of arguments - got ",
                          a.given(2) ? "keepdim" : "out", " without dim, but expected one of: (Tensor "
                          "input, *, torch.dtype dtype = None) or (Tensor input, tuple of ints dim, "
                          "bool keepdim = False, *, torch.dtype dtype = None, Tensor out = None)"));
}

}  // namespace

void register_reductions(py::module_& m) {
  const char* R = "reduction";

  // sum / nansum / mean / nanmean
  static const char* sum_names[] = {"sum", "nansum", "mean", "nanmean"};
  for (int i = 0; i < 4; ++i) {
    const SumOp op = static_cast<SumOp>(i);
    const char* name = sum_names[i];
    def_op(m, {.name = name,
               .signatures = {str_cat(name, "(Tensor input, int[1]? dim=None, bool keepdim=False, "
                                            "*, ScalarType? dtype=None, Tensor? out=None) -> Tensor")},
               .family = R, .hooked = true,
               .check = [op, name](const Args& a) {
                 if (op == SumOp::Sum || op == SumOp::Mean)
                   refuse_keepdim_without_dim(a, name, op == SumOp::Mean);
               },
               .impl = [op, name](const Args& a) {
                 Tensor x = a.tensor(0), out = opt_out(a.out(), name);
                 ScalarType dt = a.dtype(3);
                 if (out && dt != ScalarType::Undefined) {  // both given: they must agree
                   if (op == SumOp::NanSum || op == SumOp::NanMean)
                     EMBER_CHECK(out->dtype == dt, std::runtime_error,
                                 "nansum: provided dtype must match dtype of result. Got ",
                                 torch_type_name(out->dtype), " and ", torch_type_name(dt), ".");
                   else
                     check_out_dtype(out, dt);
                 }
                 // (without dim, torch's overload is mean.dtype_out: an out= (with or without
                 // dtype=) takes what the input casts into, so complex into a real out and float
                 // into an integer one are refused; with a dim, mean.out computes in out's dtype)
                 if (op == SumOp::Mean && out && !a.given(1))
                   EMBER_CHECK(can_cast(x->dtype, out->dtype), std::runtime_error,
                               "mean.dtype_out(): input types can't be cast to the desired "
                               "output type ", torch_type_name(out->dtype));
                 // (mean.out into an integer out: torch's sum into it, then a float division)
                 if (op == SumOp::Mean && out && dt == ScalarType::Undefined && a.given(1) &&
                     (is_floating(x->dtype) || is_complex(x->dtype)) &&
                     !(is_floating(out->dtype) || is_complex(out->dtype)))
                   throw std::runtime_error(str_cat("result type Float can't be cast to the "
                                                    "desired output type ",
                                                    torch_type_name(out->dtype)));
                 // (an integer input's mean needs a dtype= even with out=, as torch's)
                 if (op == SumOp::Mean) check_mean_dtype(x->dtype, dt);
                 // (torch's nansum of a floating input into an integer out= without dtype=
                 // reaches its floating kernel with the integer type: refused)
                 if (op == SumOp::NanSum && out && dt == ScalarType::Undefined &&
                     is_floating(x->dtype) && is_integral(out->dtype, true))
                   throw NotImplementedError(str_cat("\"nansum_cpu\" not implemented for '",
                                                     type_name(out->dtype), "'"));
                 if (out && dt == ScalarType::Undefined && op != SumOp::NanMean) dt = out->dtype;
                 const OptDims dims = a.opt_ints(1);
                 const bool keepdim = a.flag(2);
                 if (op == SumOp::Sum || op == SumOp::Mean) x = complex_input_as(x, dt);
                 Tensor r = op == SumOp::Sum      ? sum(x, dims, keepdim, dt)
                            : op == SumOp::NanSum ? nansum(x, dims, keepdim, dt)
                            : op == SumOp::Mean   ? mean(x, dims, keepdim, dt)
                                                  : nanmean(x, dims, keepdim, dt);
                 return finish(name, r, a.out());
               }});
  }
  // torch's two forms: of every element (no out=), or along one dim (an int, not None)
  def_op(m, {.name = "prod",
             .signatures = {"prod(Tensor input, *, ScalarType? dtype=None) -> Tensor",
                            "prod(Tensor input, int dim, bool keepdim=False, *, "
                            "ScalarType? dtype=None, Tensor? out=None) -> Tensor"},
             .family = R, .hooked = true,
             .impl = [](const Args& a) {
               if (a.overload() == 0)
                 return wrap(prod(complex_input_as(a.tensor(0), a.dtype(1)), std::nullopt, false,
                                  a.dtype(1)));
               Tensor out = opt_out(a.out(), "prod");
               ScalarType dt = a.dtype(3);
               if (out && dt != ScalarType::Undefined) check_out_dtype(out, dt);
               if (out && dt == ScalarType::Undefined) dt = out->dtype;
               return finish("prod", prod(complex_input_as(a.tensor(0), dt), a.integer(1), a.flag(2), dt),
                             a.out());
             }});

  // max / min: of all elements, along a dim (values and indices), or elementwise with another
  for (bool is_max : {true, false}) {
    const std::string name = is_max ? "max" : "min";
    def_op(m, {.name = name,
               // (a tensor is `other` before it is a dim: x.max(torch.tensor(1)) is elementwise)
               .signatures = {name + "(Tensor input, *, Tensor? out=None) -> Tensor",
                              name + "(Tensor input, Tensor other, *, Tensor? out=None) -> Tensor",
                              name + "(Tensor input, int dim, bool keepdim=False, *, "
                                     "Tensor[]? out=None) -> (Tensor values, Tensor indices)"},
               .family = R, .hooked = true, .hand_off = false,
               .doc = "The second form is the elementwise maximum (minimum), as torch's.",
               .impl = [is_max](const Args& a) {
                 const py::handle none = py::none();
                 switch (a.overload()) {
                   case 0: return minmax_call(is_max, a[0], none, none, a.out(), none);
                   case 1: return minmax_call(is_max, a[0], none, none, a.out(), a[1]);
                   default: return minmax_call(is_max, a[0], a[1], a[2], a.out(), none);
                 }
               }});
    const std::string aname = is_max ? "amax" : "amin";
    def_op(m, {.name = aname,
               // (dim=None is every dim, as torch's parser takes it)
               .signatures = {aname + "(Tensor input, int[1]? dim=[], bool keepdim=False, *, "
                                      "Tensor? out=None) -> Tensor"},
               .family = R, .hooked = true,
               .impl = [is_max](const Args& a) {
                 return amax_call(is_max, a[0], a[1], a.flag(2), a.out());
               }});
    const std::string argname = is_max ? "argmax" : "argmin";
    def_op(m, {.name = argname,
               .signatures = {argname + "(Tensor input, int? dim=None, bool keepdim=False, *, "
                                        "Tensor? out=None) -> Tensor"},
               .family = R,
               .impl = [is_max](const Args& a) {
                 return argmax_call(is_max, a[0], a[1], a.flag(2), a.out());
               }});
  }
  m.def("_return_type", [](const std::string& name) { return return_type(name); }, "name"_a);

  // var / std / var_mean / std_mean: the legacy form var(input, unbiased) first
  struct VarForm { const char* name; bool sqrt, with_mean; };
  static const VarForm var_forms[] = {{"var", false, false}, {"std", true, false},
                                      {"var_mean", false, true}, {"std_mean", true, true}};
  for (const auto& f : var_forms) {
    const VarForm form = f;
    const std::string name = form.name;
    const std::string returns = form.with_mean ? "(Tensor, Tensor)" : "Tensor";
    def_op(m, {.name = name,
               // torch's three forms: `unbiased` alone, or after a dim given (even None), or
               // `correction` (keyword) with dim optional; a mix of them is its TypeError
               .signatures = {name + "(Tensor input, bool unbiased) -> " + returns,
                              name + "(Tensor input, int[1]? dim, bool unbiased=True, "
                                     "bool keepdim=False" +
                                  (form.with_mean ? "" : ", *, Tensor? out=None") + ") -> " + returns,
                              name + "(Tensor input, int[1]? dim=None, *, Scalar? correction=None, "
                                     "bool keepdim=False" +
                                  (form.with_mean ? "" : ", Tensor? out=None") + ") -> " + returns},
               .family = R, .variants = form.with_mean ? kFunction : kFunction | kMethod,
               .hooked = true, .hand_off = false,
               .impl = [form](const Args& a) {
                 const py::handle none = py::none();
                 if (a.overload() == 0)
                   return var_call(form.name, form.sqrt, form.with_mean, a[0], none, a[1], false,
                                   none, none);
                 if (a.overload() == 1)
                   return var_call(form.name, form.sqrt, form.with_mean, a[0], a[1], a[2],
                                   a.flag(3), none, form.with_mean ? none : a.out());
                 return var_call(form.name, form.sqrt, form.with_mean, a[0], a[1], none, a.flag(3),
                                 a[2], form.with_mean ? none : a.out());
               }});
  }

  // norm: p a number or 'fro'; torch's function takes out= and dtype= by position too
  def_op(m, {.name = "norm",
             .signatures = {"norm(Tensor input, Any p='fro', int[1]? dim=None, bool keepdim=False, "
                            "Tensor? out=None, ScalarType? dtype=None) -> Tensor"},
             .family = R, .variants = kFunction, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) { return norm_call(a[0], a[1], a[2], a.flag(3), a[4], a[5]); }});
  def_op(m, {.name = "norm",
             .signatures = {"norm(Tensor input, Any p='fro', int[1]? dim=None, bool keepdim=False, "
                            "ScalarType? dtype=None) -> Tensor"},
             .family = R, .variants = kMethod, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) {
               return norm_call(a[0], a[1], a[2], a.flag(3), py::none(), a[4]);
             }});

  def_op(m, {.name = "logsumexp",
             .signatures = {"logsumexp(Tensor input, int[1] dim, bool keepdim=False, *, "
                            "Tensor? out=None) -> Tensor"},
             .family = R, .hooked = true,
             .impl = [](const Args& a) {
               return finish("logsumexp", logsumexp(a.tensor(0), a.opt_ints(1), a.flag(2)), a.out());
             }});

  // all / any: bool results (uint8 for uint8 input); not differentiable
  for (bool is_all : {true, false}) {
    const std::string name = is_all ? "all" : "any";
    def_op(m, {.name = name,
               // (one dim, or a list of them: torch's int[]? takes no one-element tensor)
               .signatures = {name + "(Tensor input, int dim, bool keepdim=False, *, "
                                     "Tensor? out=None) -> Tensor",
                              name + "(Tensor input, int[]? dim=None, bool keepdim=False, *, "
                                     "Tensor? out=None) -> Tensor"},
               .family = R,
               .impl = [is_all, name](const Args& a) {
                 Tensor x = a.tensor(0), out = opt_out(a.out(), name.c_str());
                 if (out) {
                   // (a uint8 out for any input, as torch's)
                   EMBER_CHECK(out->dtype == ScalarType::UInt8 || out->dtype == ScalarType::Bool,
                               std::runtime_error,
                               name, " only supports bool tensor for result, got: ",
                               torch_type_name(out->dtype));
                 }
                 const OptDims dims = a.opt_ints(1);
                 Tensor r = is_all ? all(x, dims, a.flag(2)) : any(x, dims, a.flag(2));
                 if (!out) return wrap(r);
                 // (either out dtype takes either result: a uint8 input's uint8 into bool too)
                 check_out_no_grad(out, name.c_str());
                 resize_out(out, r->sizes);
                 copy_(out, r);
                 return py::reinterpret_borrow<py::object>(a.out());
               }});
  }
  def_op(m, {.name = "count_nonzero",
             // torch's two forms: dims as a list (or var-args), or one dim (or None)
             .signatures = {"count_nonzero(Tensor input, int[] dim) -> Tensor",
                            "count_nonzero(Tensor input, int? dim=None) -> Tensor"},
             .family = R,
             .impl = [](const Args& a) { return wrap(count_nonzero(a.tensor(0), a.opt_ints(1))); }});

  // cumsum / cumprod (+ in-place)
  for (bool is_prod : {false, true}) {
    const std::string name = is_prod ? "cumprod" : "cumsum";
    def_op(m, {.name = name,
               .signatures = {name + "(Tensor input, int dim, *, ScalarType? dtype=None, "
                                     "Tensor? out=None) -> Tensor"},
               // hand_off: the hooks get out's dtype as dtype, since the scan accumulates in it
               .family = "scan", .hooked = true, .hand_off = false,
               .impl = [is_prod, name](const Args& a) {
                 const char* n = name.c_str();
                 Tensor x = a.tensor(0), out = opt_out(a.out(), n);
                 ScalarType dt = a.dtype(2);
                 if (out && dt != ScalarType::Undefined) check_out_dtype(out, dt);
                 if (out && dt == ScalarType::Undefined) dt = out->dtype;
                 const int64_t dim = a.integer(1);
                 if (needs_dispatch(x)) {
                   if (out && needs_grad(x)) out_with_grad(n);
                   return redispatch_out(n, core_fn(n), py::make_tuple(a[0]),
                                         py::dict("dim"_a = dim, "dtype"_a = dtype_object(dt)), a.out());
                 }
                 return finish(n, is_prod ? cumprod(x, dim, dt) : cumsum(x, dim, dt), a.out());
               }});
    def_op(m, {.name = name + "_",
               .signatures = {name + "_(Tensor input, int dim, *, ScalarType? dtype=None) -> Tensor"},
               .family = "scan", .hooked = true, .hand_off = false,
               .impl = [is_prod](const Args& a) { return scan_inplace(is_prod, a[0], a[1], a[2]); }});
  }

  // softmax / log_softmax
  for (bool is_log : {false, true}) {
    const std::string name = is_log ? "log_softmax" : "softmax";
    def_op(m, {.name = name,
               .signatures = {name + "(Tensor input, int dim, ScalarType? dtype=None, *, "
                                     "Tensor? out=None) -> Tensor"},
               .family = "softmax", .hooked = true,
               .impl = [is_log, name](const Args& a) {
                 Tensor x = a.tensor(0);
                 const int64_t dim = a.integer(1);
                 Tensor r = is_log ? log_softmax(x, dim, a.dtype(2)) : softmax(x, dim, a.dtype(2));
                 if (!a.is_none(3)) check_out_dtype(to_tensor(a.out()), r->dtype);  // (exact)
                 return finish(name.c_str(), r, a.out());
               }});
  }
  // their backward kernels; not differentiable (double backward uses the composed formula)
  for (bool is_log : {false, true}) {
    const std::string kernel = is_log ? "_log_softmax_backward_data" : "_softmax_backward_data";
    def_op(m, {.name = kernel,
               .signatures = {kernel + "(Tensor grad_output, Tensor output, int dim, "
                                       "ScalarType? input_dtype=None) -> Tensor"},
               .family = "softmax", .variants = kFunction, .hand_off = false,
               .impl = [is_log, kernel](const Args& a) {
                 const char* k = kernel.c_str();
                 Tensor go = a.tensor(0), out = a.tensor(1);
                 check_not_differentiated(k, {go, out});
                 if (on_device(go) || on_device(out))
                   return call_device(k, py::make_tuple(a[0], a[1]),
                                      py::dict("dim"_a = a.integer(2), "input_dtype"_a = a[3]));
                 return wrap(softmax_backward_data(go, out, a.integer(2), a.dtype(3), is_log));
               }});
  }
}

}  // namespace ember::pyb
