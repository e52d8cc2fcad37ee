// bind_sort.cpp: the sorting and searching ops (ops/sort.h) as registry rows (python/registry.h):
// functions `ember.<op>(...)` and methods `Tensor.<op>(...)` with PyTorch's signatures, (values,
// indices) named tuples, out= (a tensor or a (values, indices) pair). Every row hands off to the
// hooks itself (hand_off = false), with the arguments in the form the autograd formulas and
// ember/cuda read: `redispatch(name, _C.<name>, (input,), canonical kwargs)` for the
// differentiable ones; the ops with no gradient (argsort, unique, searchsorted, histc, ...) hand a
// call with a CUDA tensor straight to the device hook.
#include <string>
#include <tuple>

#include "ops/elementwise.h"
#include "ops/sort.h"
#include "python/pyutils.h"
#include "python/registry.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {


// A (values, indices) result as ember.return_types.<name>, written into out=(v, i) if given
// (which must then be on the result's device when `same_device`).
py::object pair_result(const char* name, const std::pair<Tensor, Tensor>& r, py::handle outh,
                       bool same_device = false) {
  if (outh && !outh.is_none()) {
    if (!py::isinstance<py::sequence>(outh) || py::len(outh) != 2)
      throw py::type_error(str_cat(name, "(): argument 'out' must be tuple of Tensors"));
    py::sequence outs = py::reinterpret_borrow<py::sequence>(outh);
    Tensor ov = expect_tensor(outs[0], name, "out"), oi = expect_tensor(outs[1], name, "out");
    check_out_dtype(ov, r.first->dtype);
    check_out_dtype(oi, ScalarType::Int64);
    for (const Tensor& o : {ov, oi})
      EMBER_CHECK(!same_device || o->device() == r.first->device(), std::runtime_error,
                  "Expected all tensors to be on the same device, but found at least two devices, ",
                  r.first->device().str(), " and ", o->device().str(), "! (", name, ", out=)");
    write_out(name, r.first, ov);
    write_out(name, r.second, oi);
    return return_type(name)(outs[0], outs[1]);
  }
  return return_type(name)(wrap(r.first), wrap(r.second));
}

// A (values, indices) op that leaves the CPU kernels: recorded (no out= then) or run on the
// device, its result written into out=(v, i) when given.
py::object dispatch_pair(const char* name, py::handle xh, const Tensor& x, py::dict kwargs,
                         py::handle outh) {
  const bool has_out = outh && !outh.is_none();
  if (has_out && needs_grad(x)) out_with_grad(name);
  py::object r = redispatch(name, core_fn(name), py::make_tuple(xh), std::move(kwargs));
  if (!has_out) return r;
  py::sequence rs = py::reinterpret_borrow<py::sequence>(r);
  return pair_result(name, {to_tensor(rs[0]), to_tensor(rs[1])}, outh, true);
}

bool opt_bool(py::handle h) { return h && !h.is_none() && h.cast<bool>(); }

// ---- sort / argsort ----

py::object sort_call(py::handle xh, py::handle dimh, bool descending, py::handle stableh, py::handle outh) {
  Tensor x = expect_tensor(xh, "sort", "input");
  const int64_t dim = parse_dim(dimh, "sort");
  const bool stable = opt_bool(stableh);
  if (needs_dispatch(x))
    return dispatch_pair("sort", xh, x, py::dict("dim"_a = dim, "descending"_a = descending, "stable"_a = stable),
                         outh);
  return pair_result("sort", sort(x, dim, descending, stable), outh);
}

py::object argsort_call(py::handle xh, py::handle dimh, bool descending, py::handle stableh) {
  Tensor x = expect_tensor(xh, "argsort", "input");
  const int64_t dim = parse_dim(dimh, "argsort");
  const bool stable = opt_bool(stableh);
  if (on_device(x))
    return call_device("argsort", py::make_tuple(xh),
                       py::dict("dim"_a = dim, "descending"_a = descending, "stable"_a = stable));
  return wrap(sort(x, dim, descending, stable).second);
}

// ---- topk / kthvalue / median / mode / cummax ----

py::object topk_call(py::handle xh, int64_t k, py::handle dimh, bool largest, bool sorted, py::handle outh) {
  Tensor x = expect_tensor(xh, "topk", "input");
  const int64_t dim = parse_dim(dimh, "topk");
  if (needs_dispatch(x))
    return dispatch_pair("topk", xh, x,
                         py::dict("k"_a = k, "dim"_a = dim, "largest"_a = largest, "sorted"_a = sorted), outh);
  return pair_result("topk", topk(x, k, dim, largest, sorted), outh);
}

py::object kthvalue_call(py::handle xh, int64_t k, py::handle dimh, bool keepdim, py::handle outh) {
  Tensor x = expect_tensor(xh, "kthvalue", "input");
  const int64_t dim = parse_dim(dimh, "kthvalue");
  if (needs_dispatch(x))
    return dispatch_pair("kthvalue", xh, x, py::dict("k"_a = k, "dim"_a = dim, "keepdim"_a = keepdim), outh);
  return pair_result("kthvalue", kthvalue(x, k, dim, keepdim), outh);
}

py::object median_call(bool ignore_nan, py::handle xh, py::handle dimh, bool keepdim, py::handle outh) {
  const char* name = ignore_nan ? "nanmedian" : "median";
  Tensor x = expect_tensor(xh, name, "input");
  const bool has_out = outh && !outh.is_none();
  if (dimh.is_none()) {
    if (needs_dispatch(x)) {
      if (has_out && needs_grad(x)) out_with_grad(name);
      return redispatch_out(name, core_fn(name), py::make_tuple(xh), py::dict(), outh);
    }
    return finish(name, median_all(x, ignore_nan), outh);
  }
  const int64_t dim = parse_dim(dimh, name);
  if (needs_dispatch(x)) return dispatch_pair(name, xh, x, py::dict("dim"_a = dim, "keepdim"_a = keepdim), outh);
  return pair_result(name, median_dim(x, dim, keepdim, ignore_nan), outh);
}

py::object mode_call(py::handle xh, py::handle dimh, bool keepdim, py::handle outh) {
  Tensor x = expect_tensor(xh, "mode", "input");
  const int64_t dim = parse_dim(dimh, "mode");
  if (needs_dispatch(x)) return dispatch_pair("mode", xh, x, py::dict("dim"_a = dim, "keepdim"_a = keepdim), outh);
  if (!outh.is_none() && py::isinstance<py::sequence>(outh) && py::len(outh) == 2) {
    // torch's mode checks out's dtypes before the dim
    py::sequence outs = py::reinterpret_borrow<py::sequence>(outh);
    const char* what[] = {"values", "indices"};
    for (int k = 0; k < 2; ++k) {
      if (!is_tensor(outs[k])) continue;  // (pair_result's TypeError)
      const ScalarType want = k == 0 ? x->dtype : ScalarType::Int64, got = to_tensor(outs[k])->dtype;
      EMBER_CHECK(got == want, std::runtime_error, "expected scalar type '", torch_type_name(want),
                  "' but got '", torch_type_name(got), "' for ", what[k], " output");
    }
  }
  return pair_result("mode", mode(x, dim, keepdim), outh);
}

py::object cumext_call(bool is_max, py::handle xh, py::handle dimh, py::handle outh) {
  const char* name = is_max ? "cummax" : "cummin";
  Tensor x = expect_tensor(xh, name, "input");
  if (!outh.is_none() && (py::isinstance<py::list>(outh) || py::isinstance<py::tuple>(outh)) &&
      py::len(outh) != 2)  // torch's parser: out= is a pair
    throw py::type_error(str_cat("expected tuple of 2 elements but got ", py::len(outh)));
  const int64_t dim = parse_dim(dimh, name);
  if (needs_dispatch(x)) return dispatch_pair(name, xh, x, py::dict("dim"_a = dim), outh);
  if (x->numel() == 0)  // torch returns before it looks at dim (or the dtype)
    return pair_result(name, {empty(x->sizes, x->dtype), empty(x->sizes, ScalarType::Int64)}, outh);
  return pair_result(name, cumextreme(x, dim, is_max), outh);
}

// ---- unique ----

py::object unique_call(bool consecutive, py::handle xh, bool return_inverse, bool return_counts, py::handle dimh) {
  const char* name = consecutive ? "unique_consecutive" : "unique";
  Tensor x = expect_tensor(xh, name, "input");
  const auto dim = parse_opt_dim(dimh, name);
  if (on_device(x))  // a tensor, or a tuple as below
    return call_device(name, py::make_tuple(xh),
                       py::dict("return_inverse"_a = return_inverse, "return_counts"_a = return_counts,
                                "dim"_a = opt_dim_obj(dim)));
  UniqueResult r = unique(x, dim, consecutive);
  if (!return_inverse && !return_counts) return wrap(r.values);
  py::list out;
  out.append(wrap(r.values));
  if (return_inverse) out.append(wrap(r.inverse));
  if (return_counts) out.append(wrap(r.counts));
  return py::tuple(out);
}

// ---- searchsorted / bucketize ----

// A Python number as a 0-d tensor (int64 / float64 / bool).
Tensor value_tensor(py::handle h, const char* op, const char* arg) {
  if (is_tensor(h)) return to_tensor(h);
  if (!is_number(h))
    throw py::type_error(str_cat(op, "(): argument '", arg, "' must be Tensor or Number, not ", type_of(h)));
  Scalar s = to_scalar(h);
  const ScalarType t = s.is_float() ? ScalarType::Float64 : s.is_bool() ? ScalarType::Bool : ScalarType::Int64;
  return scalar_tensor(s, t);
}

// torch compares boundaries and values of different dtypes in their common dtype, a Python
// number as a wrapped one: 1e300 among float32 boundaries is inf, -1 among uint8 ones is 255.
void to_common_dtype(Tensor& boundaries, Tensor& values, py::handle value_arg) {
  if (boundaries->dtype == values->dtype) return;
  const ScalarType common = result_type(
      {Operand(boundaries), is_tensor(value_arg) ? Operand(values) : Operand(to_scalar(value_arg))});
  boundaries = to_dtype(boundaries, common);
  values = to_dtype(values, common);
}

py::object searchsorted_call(py::handle seqh, py::handle vh, bool out_int32, bool right, py::handle sideh,
                             py::handle outh, py::handle sorterh) {
  Tensor seq = expect_tensor(seqh, "searchsorted", "sorted_sequence");
  Tensor v = value_tensor(vh, "searchsorted", "input");
  if (!sideh.is_none()) {
    const std::string side = py::str(sideh);
    EMBER_CHECK(side == "left" || side == "right", std::runtime_error,
                "torch.searchsorted(): side can only be 'left' or 'right' but got ", side);
    EMBER_CHECK(!(right && side == "left"), std::runtime_error,
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True");
    right = side == "right";
  }
  Tensor sorter = (sorterh && !sorterh.is_none()) ? expect_tensor(sorterh, "searchsorted", "sorter") : nullptr;
  Tensor out = opt_out(outh, "searchsorted");
  if (out) check_out_dtype(out, out_int32 ? ScalarType::Int32 : ScalarType::Int64);
  if (any_on_device({seq, v, sorter}))
    return finish_dispatched("searchsorted",
                             call_device("searchsorted", py::make_tuple(seqh, wrap(v)),
                                         py::dict("out_int32"_a = out_int32, "right"_a = right,
                                                  "sorter"_a = sorter ? py::object(wrap(sorter)) : py::none())),
                             outh);
  to_common_dtype(seq, v, vh);
  return finish("searchsorted", searchsorted(seq, v, out_int32, right, sorter), outh);
}

py::object bucketize_call(py::handle xh, py::handle bh, bool out_int32, bool right, py::handle outh) {
  Tensor x = value_tensor(xh, "bucketize", "input");
  Tensor b = expect_tensor(bh, "bucketize", "boundaries");
  EMBER_CHECK(b->dim() == 1, std::runtime_error, "boundaries tensor must be 1 dimension, but got dim(",
              b->dim(), ")");
  Tensor out = opt_out(outh, "bucketize");
  if (out) check_out_dtype(out, out_int32 ? ScalarType::Int32 : ScalarType::Int64);
  if (any_on_device({x, b}))
    return finish_dispatched("bucketize",
                             call_device("bucketize", py::make_tuple(wrap(x), bh),
                                         py::dict("out_int32"_a = out_int32, "right"_a = right)),
                             outh);
  to_common_dtype(b, x, xh);
  return finish("bucketize", searchsorted(b, x, out_int32, right, nullptr, "bucketize"), outh);
}

// ---- histc / histogram / bincount ----

py::object histc_call(py::handle xh, int64_t bins, py::handle minh, py::handle maxh, py::handle outh) {
  Tensor x = expect_tensor(xh, "histc", "input");
  const double lo = to_scalar(minh).to_double(), hi = to_scalar(maxh).to_double();
  if (on_device(x))
    return finish_dispatched("histc", call_device("histc", py::make_tuple(xh),
                                                  py::dict("bins"_a = bins, "min"_a = lo, "max"_a = hi)),
                             outh);
  const Tensor out = outh.is_none() ? nullptr : expect_tensor(outh, "histc", "out");
  return finish("histc", histc(x, bins, lo, hi, out ? std::optional(out->dtype) : std::nullopt),
                outh);
}

py::object histogram_type() {
  static py::object* t = new py::object(py::module_::import("collections").attr("namedtuple")(
      "histogram", py::make_tuple("hist", "bin_edges"), "module"_a = "ember.return_types"));
  return *t;
}

py::object histogram_call(py::handle xh, py::handle binsh, py::handle rangeh, py::handle weighth,
                          bool density, py::handle outh) {
  Tensor x = expect_tensor(xh, "histogram", "input");
  Tensor edges;
  int64_t bins = 0;
  if (is_tensor(binsh)) edges = to_tensor(binsh);
  else if (is_int_like(binsh)) bins = as_int(binsh);
  else throw py::type_error(str_cat("histogram(): argument 'bins' must be int or Tensor, not ", type_of(binsh)));
  // range: a tuple of floats, and only beside an int bins (torch's overloads); its length is
  // checked in the op, in torch's order.
  std::optional<std::vector<double>> range;
  if (!rangeh.is_none()) {
    bool ok = !edges && (py::isinstance<py::list>(rangeh) || py::isinstance<py::tuple>(rangeh));
    if (ok) {
      range.emplace();
      for (auto v : py::reinterpret_borrow<py::sequence>(rangeh)) {
        ok = ok && !is_tensor(v) && is_number(v);
        if (ok) range->push_back(to_scalar(v).to_double());
      }
    }
    if (!ok)
      throw py::type_error(str_cat("histogram() received an invalid combination of arguments - "
                                   "got range=", type_of(rangeh), " with bins=", type_of(binsh),
                                   ", but expected one of: (Tensor input, Tensor bins, *, Tensor "
                                   "weight = None, bool density = False), (Tensor input, int bins = "
                                   "100, *, tuple of floats range = None, Tensor weight = None, bool "
                                   "density = False)"));
  }
  Tensor w = weighth.is_none() ? nullptr : expect_tensor(weighth, "histogram", "weight");
  Tensor oh, oe;
  if (!outh.is_none()) {
    if (!py::isinstance<py::sequence>(outh) || py::len(outh) != 2)
      throw py::type_error("histogram(): argument 'out' must be tuple of Tensors");
    py::sequence outs = py::reinterpret_borrow<py::sequence>(outh);
    oh = expect_tensor(outs[0], "histogram", "out"), oe = expect_tensor(outs[1], "histogram", "out");
  }
  Tensor hist, e;
  const bool dispatched = any_on_device({x, edges, w});
  if (dispatched) {
    py::sequence r = call_device("histogram", py::make_tuple(xh),
                                 py::dict("bins"_a = binsh, "range"_a = range ? py::object(py::cast(*range)) : py::none(),
                                          "weight"_a = weighth, "density"_a = density));
    hist = to_tensor(r[0]), e = to_tensor(r[1]);
  } else {
    std::tie(hist, e) = histogram(x, bins, range, edges, w, density,
                                  oh ? std::optional(oh->dtype) : std::nullopt,
                                  oe ? std::optional(oe->dtype) : std::nullopt);
  }
  if (oh) {
    py::sequence outs = py::reinterpret_borrow<py::sequence>(outh);
    for (const Tensor& o : {oh, oe})
      EMBER_CHECK(!dispatched || o->device() == hist->device(), std::runtime_error,
                  "Expected all tensors to be on the same device, but found at least two devices, ",
                  hist->device().str(), " and ", o->device().str(), "! (histogram, out=)");
    write_out("histogram", hist, oh);
    write_out("histogram", e, oe);
    return histogram_type()(outs[0], outs[1]);
  }
  return histogram_type()(wrap(hist), wrap(e));
}

py::object bincount_call(py::handle xh, py::handle wh, int64_t minlength) {
  Tensor x = expect_tensor(xh, "bincount", "input");
  Tensor w = wh.is_none() ? nullptr : expect_tensor(wh, "bincount", "weights");
  if (any_on_device({x, w}))
    return call_device("bincount", py::make_tuple(xh), py::dict("weights"_a = wh, "minlength"_a = minlength));
  return wrap(bincount(x, w, minlength));
}

// ---- quantile ----

py::object quantile_call(bool ignore_nan, py::handle xh, py::handle qh, py::handle dimh, bool keepdim,
                         const std::string& interpolation, py::handle outh) {
  const char* name = ignore_nan ? "nanquantile" : "quantile";
  Tensor x = expect_tensor(xh, name, "input");
  QuantileInterp interp;
  if (interpolation == "linear") interp = QuantileInterp::Linear;
  else if (interpolation == "lower") interp = QuantileInterp::Lower;
  else if (interpolation == "higher") interp = QuantileInterp::Higher;
  else if (interpolation == "midpoint") interp = QuantileInterp::Midpoint;
  else if (interpolation == "nearest") interp = QuantileInterp::Nearest;
  else
    throw std::runtime_error(str_cat(name, "() interpolation must be one of linear, lower, higher, midpoint "
                                           "or nearest, but got ", interpolation));
  Tensor q;
  if (is_tensor(qh)) {
    q = to_tensor(qh);
  } else {
    if (!is_number(qh))
      throw py::type_error(str_cat(name, "(): argument 'q' must be float or Tensor, not ", type_of(qh)));
    const double qv = to_scalar(qh).to_double();
    EMBER_CHECK(qv >= 0 && qv <= 1, std::runtime_error, name, "() q must be in the range [0, 1] but got ", qv);
    q = scalar_tensor(Scalar::from_double(qv), x->dtype == ScalarType::Float32 ? ScalarType::Float32 : ScalarType::Float64);
    if (is_floating(x->dtype)) q = to_dtype(q, x->dtype);
  }
  auto dim = parse_opt_dim(dimh, name);
  if (needs_dispatch(x)) {
    if ((!outh.is_none()) && needs_grad(x)) out_with_grad(name);
    return redispatch_out(name, core_fn(name), py::make_tuple(xh),
                         py::dict("q"_a = qh, "dim"_a = opt_dim_obj(dim), "keepdim"_a = keepdim,
                                  "interpolation"_a = interpolation), outh);
  }
  Tensor result = quantile(x, q, dim, keepdim, interp, ignore_nan);
  if (!outh.is_none())  // (torch's: out= is not cast into; checked after the core's checks)
    EMBER_CHECK(expect_tensor(outh, name, "out")->dtype == x->dtype, std::runtime_error, name,
                "() out tensor must be same dtype as the input tensor");
  return finish(name, result, outh);
}

}  // namespace

void register_sort(py::module_& m) {
  const char* S = "sort";
  const char* pair = "(Tensor values, Tensor indices)";

  // sort / argsort: torch's `stable` form makes dim and descending keyword-only (second: the
  // common form first, as a call pays for each form it fails)
  def_op(m, {.name = "sort",
             .signatures = {str_cat("sort(Tensor input, int dim=-1, bool descending=False, *, "
                                    "Tensor[]? out=None) -> ", pair),
                            str_cat("sort(Tensor input, *, bool? stable, int dim=-1, bool descending=False, "
                                    "Tensor[]? out=None) -> ", pair)},
             .family = S, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) {
               if (a.overload() == 0) return sort_call(a[0], a[1], a.flag(2), py::none(), a.out());
               return sort_call(a[0], a[2], a.flag(3), a[1], a.out());
             }});
  def_op(m, {.name = "argsort",
             .signatures = {"argsort(Tensor input, int dim=-1, bool descending=False) -> Tensor",
                            "argsort(Tensor input, *, bool stable, int dim=-1, bool descending=False) -> Tensor"},
             .family = S, .hand_off = false,
             .impl = [](const Args& a) {
               if (a.overload() == 0) return argsort_call(a[0], a[1], a.flag(2), py::none());
               return argsort_call(a[0], a[2], a.flag(3), a[1]);
             }});

  def_op(m, {.name = "topk",
             .signatures = {str_cat("topk(Tensor input, SymInt k, int dim=-1, bool largest=True, bool sorted=True, "
                                    "*, Tensor[]? out=None) -> ", pair)},
             .family = S, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) {
               return topk_call(a[0], a.integer(1), a[2], a.flag(3), a.flag(4), a.out());
             }});
  def_op(m, {.name = "kthvalue",
             .signatures = {str_cat("kthvalue(Tensor input, SymInt k, int dim=-1, bool keepdim=False, *, "
                                    "Tensor[]? out=None) -> ", pair)},
             .family = S, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) {
               return kthvalue_call(a[0], a.integer(1), a[2], a.flag(3), a.out());
             }});

  // median / nanmedian: of all elements (no out=, as torch's), or along a dim
  for (bool ignore_nan : {false, true}) {
    const std::string name = ignore_nan ? "nanmedian" : "median";
    def_op(m, {.name = name,
               .signatures = {name + "(Tensor input) -> Tensor",
                              str_cat(name, "(Tensor input, int dim, bool keepdim=False, *, "
                                            "Tensor[]? out=None) -> ", pair)},
               .family = S, .hooked = true, .hand_off = false,
               .impl = [ignore_nan](const Args& a) {
                 if (a.overload() == 0) return median_call(ignore_nan, a[0], py::none(), false, py::none());
                 return median_call(ignore_nan, a[0], a[1], a.flag(2), a.out());
               }});
  }

  def_op(m, {.name = "mode",
             .signatures = {str_cat("mode(Tensor input, int dim=-1, bool keepdim=False, *, "
                                    "Tensor[]? out=None) -> ", pair)},
             .family = S, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) { return mode_call(a[0], a[1], a.flag(2), a.out()); }});

  for (bool is_max : {true, false}) {
    const std::string name = is_max ? "cummax" : "cummin";
    def_op(m, {.name = name,
               .signatures = {str_cat(name, "(Tensor input, int dim, *, Tensor[]? out=None) -> ", pair)},
               .family = S, .hooked = true, .hand_off = false,
               .impl = [is_max](const Args& a) { return cumext_call(is_max, a[0], a[1], a.out()); }});
  }

  // unique: `sorted` is accepted and the result always sorted, as PyTorch's CPU kernel
  def_op(m, {.name = "unique",
             .signatures = {"unique(Tensor input, bool sorted=True, bool return_inverse=False, "
                            "bool return_counts=False, int? dim=None) -> Tensor | tuple"},
             .family = S, .hand_off = false,
             .impl = [](const Args& a) { return unique_call(false, a[0], a.flag(2), a.flag(3), a[4]); }});
  def_op(m, {.name = "unique_consecutive",
             .signatures = {"unique_consecutive(Tensor input, bool return_inverse=False, "
                            "bool return_counts=False, int? dim=None) -> Tensor | tuple"},
             .family = S, .hand_off = false,
             .impl = [](const Args& a) { return unique_call(true, a[0], a.flag(1), a.flag(2), a[3]); }});

  // searchsorted / bucketize: the values a tensor or a number (torch's `self` overloads)
  const std::string search_kw = "*, bool out_int32=False, bool right=False, str? side=None, "
                                "Tensor? sorter=None, Tensor? out=None) -> Tensor";
  def_op(m, {.name = "searchsorted",
             .signatures = {"searchsorted(Tensor sorted_sequence, Tensor input, " + search_kw,
                            "searchsorted(Tensor sorted_sequence, Scalar self, " + search_kw},
             .family = S, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               return searchsorted_call(a[0], a[1], a.flag(2), a.flag(3), a[4], a.out(), a[5]);
             }});
  def_op(m, {.name = "bucketize",
             .signatures = {"bucketize(Tensor input, Tensor boundaries, *, bool out_int32=False, "
                            "bool right=False, Tensor? out=None) -> Tensor",
                            "bucketize(Scalar self, Tensor boundaries, *, bool out_int32=False, "
                            "bool right=False) -> Tensor"},
             .family = S, .variants = kFunction, .hand_off = false,
             .impl = [](const Args& a) {
               return bucketize_call(a[0], a[1], a.flag(2), a.flag(3), a.out());
             }});

  def_op(m, {.name = "histc",
             .signatures = {"histc(Tensor input, int bins=100, Scalar min=0, Scalar max=0, *, "
                            "Tensor? out=None) -> Tensor"},
             .family = S, .hand_off = false,
             .impl = [](const Args& a) { return histc_call(a[0], a.integer(1), a[2], a[3], a.out()); }});
  // histogram: `range` (a pair of floats) is checked by histogram_call
  const std::string hist_kw = "Tensor? weight=None, bool density=False, Tensor[]? out=None) -> "
                              "(Tensor hist, Tensor bin_edges)";
  def_op(m, {.name = "histogram",
             .signatures = {"histogram(Tensor input, Tensor bins, *, " + hist_kw,
                            "histogram(Tensor input, int bins=100, *, Any? range=None, " + hist_kw},
             .family = S, .hand_off = false,
             .impl = [](const Args& a) {
               if (a.overload() == 0) return histogram_call(a[0], a[1], py::none(), a[2], a.flag(3), a.out());
               return histogram_call(a[0], a[1], a[2], a[3], a.flag(4), a.out());
             }});
  def_op(m, {.name = "bincount",
             .signatures = {"bincount(Tensor input, Tensor? weights=None, SymInt minlength=0) -> Tensor"},
             .family = S, .hand_off = false,
             .impl = [](const Args& a) { return bincount_call(a[0], a[1], a.integer(2)); }});

  // quantile / nanquantile: q a tensor or a float
  for (bool ignore_nan : {false, true}) {
    const std::string name = ignore_nan ? "nanquantile" : "quantile";
    const std::string rest = " q, int? dim=None, bool keepdim=False, *, str interpolation='linear', "
                             "Tensor? out=None) -> Tensor";
    def_op(m, {.name = name,
               .signatures = {name + "(Tensor input, Tensor" + rest, name + "(Tensor input, float" + rest},
               .family = S, .hooked = true, .hand_off = false,
               .impl = [ignore_nan](const Args& a) {
                 return quantile_call(ignore_nan, a[0], a[1], a[2], a.flag(3), a.str(4), a.out());
               }});
  }
}

}  // namespace ember::pyb
