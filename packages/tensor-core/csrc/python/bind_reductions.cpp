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

using namespace pybind11::literals;

namespace ember::pyb {
namespace {

py::module_* g_m = nullptr;
py::object core_fn(const char* name) { return g_m->attr(name); }

// ---- sum / nansum / mean / nanmean / prod ----

enum class SumOp { Sum, NanSum, Mean, NanMean };

py::object sum_like(SumOp which, py::handle xh, py::handle dimh, bool keepdim, py::handle dtypeh,
                    py::handle outh) {
  static const char* names[] = {"sum", "nansum", "mean", "nanmean"};
  const char* name = names[static_cast<int>(which)];
  Tensor x = expect_tensor(xh, name, "input");
  OptDims dims = parse_dims(dimh, name);
  ScalarType dt = to_dtype(dtypeh);
  Tensor out = opt_out(outh, name);
  if (needs_dispatch(x)) {
    if ((out) && needs_grad(x)) out_with_grad(name);
    return redispatch_out(name, core_fn(name), py::make_tuple(xh),
                         py::dict("dim"_a = dims_obj(dims), "keepdim"_a = keepdim,
                                  "dtype"_a = dtype_object(dt)), outh);
  }
  if (out && dt == ScalarType::Undefined && which != SumOp::NanMean) dt = out->dtype;
  Tensor r;
  switch (which) {
    case SumOp::Sum: r = sum(x, dims, keepdim, dt); break;
    case SumOp::NanSum: r = nansum(x, dims, keepdim, dt); break;
    case SumOp::Mean: r = mean(x, dims, keepdim, dt); break;
    case SumOp::NanMean: r = nanmean(x, dims, keepdim, dt); break;
  }
  return finish(name, r, outh);
}

py::object prod_call(py::handle xh, py::handle dimh, bool keepdim, py::handle dtypeh, py::handle outh) {
  Tensor x = expect_tensor(xh, "prod", "input");
  std::optional<int64_t> dim = parse_opt_dim(dimh, "prod");
  ScalarType dt = to_dtype(dtypeh);
  Tensor out = opt_out(outh, "prod");
  if (needs_dispatch(x)) {
    if ((out) && needs_grad(x)) out_with_grad("prod");
    return redispatch_out("prod", core_fn("prod"), py::make_tuple(xh),
                         py::dict("dim"_a = opt_dim_obj(dim), "keepdim"_a = keepdim,
                                  "dtype"_a = dtype_object(dt)), outh);
  }
  if (out && dt == ScalarType::Undefined) dt = out->dtype;
  return finish("prod", prod(x, dim, keepdim, dt), outh);
}

// ---- max / min ----

py::object minmax_call(bool is_max, py::handle xh, py::handle dimh, py::handle keepdimh,
                       py::handle outh, py::handle otherh) {
  const char* name = is_max ? "max" : "min";
  Tensor x = expect_tensor(xh, name, "input");
  // max(input, other): the elementwise maximum.
  if (is_tensor(dimh)) otherh = dimh, dimh = py::none();
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
  if (out) check_out_dtype(out, ScalarType::Int64);
  if (on_device(x))
    return redispatch_out(name, core_fn(name), py::make_tuple(xh),
                          py::dict("dim"_a = opt_dim_obj(dim), "keepdim"_a = keepdim), outh);
  return finish(name, is_max ? argmax(x, dim, keepdim) : argmin(x, dim, keepdim), outh);
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
  if (!is_number(ph))
    throw py::type_error(str_cat("norm(): argument 'p' must be Number or str, not ", type_of(ph)));
  return to_scalar(ph).to_double();
}

py::object norm_call(py::handle xh, py::handle ph, py::handle dimh, bool keepdim, py::handle outh,
                     py::handle dtypeh) {
  Tensor x = expect_tensor(xh, "norm", "input");
  OptDims dims = parse_dims(dimh, "norm");
  const double p = parse_norm_order(ph, dims);
  ScalarType dt = to_dtype(dtypeh);
  if (needs_dispatch(x)) {
    if ((!outh.is_none()) && needs_grad(x)) out_with_grad("norm");
    return redispatch_out("norm", core_fn("norm"), py::make_tuple(xh),
                         py::dict("p"_a = p, "dim"_a = dims_obj(dims), "keepdim"_a = keepdim,
                                  "dtype"_a = dtype_object(dt)), outh);
  }
  return finish("norm", norm(x, p, dims, keepdim, dt), outh);
}

// ---- scans ----

py::object scan_call(bool is_prod, py::handle xh, py::handle dimh, py::handle dtypeh, py::handle outh) {
  const char* name = is_prod ? "cumprod" : "cumsum";
  Tensor x = expect_tensor(xh, name, "input");
  const int64_t dim = parse_dim(dimh, name);
  ScalarType dt = to_dtype(dtypeh);
  Tensor out = opt_out(outh, name);
  if (out && dt == ScalarType::Undefined) dt = out->dtype;  // accumulates in out's dtype
  if (needs_dispatch(x)) {
    if (out && needs_grad(x)) out_with_grad(name);
    return redispatch_out(name, core_fn(name), py::make_tuple(xh),
                         py::dict("dim"_a = dim, "dtype"_a = dtype_object(dt)), outh);
  }
  return finish(name, is_prod ? cumprod(x, dim, dt) : cumsum(x, dim, dt), outh);
}

py::object scan_inplace(bool is_prod, py::handle selfh, py::handle dimh, py::handle dtypeh) {
  const char* name = is_prod ? "cumprod_" : "cumsum_";
  Tensor x = expect_tensor(selfh, name, "self");
  const int64_t dim = parse_dim(dimh, name);
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

// ---- softmax ----

py::object softmax_call(bool is_log, py::handle xh, py::handle dimh, py::handle dtypeh) {
  const char* name = is_log ? "log_softmax" : "softmax";
  Tensor x = expect_tensor(xh, name, "input");
  const int64_t dim = parse_dim(dimh, name);
  ScalarType dt = to_dtype(dtypeh);
  if (needs_dispatch(x))
    return redispatch(name, core_fn(name), py::make_tuple(xh),
                         py::dict("dim"_a = dim, "dtype"_a = dtype_object(dt)));
  return wrap(is_log ? log_softmax(x, dim, dt) : softmax(x, dim, dt));
}

}  // namespace

void register_reductions(py::module_& m) {
  g_m = new py::module_(m);  // leaked: outlives interpreter teardown
  auto cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(tensor_type()));
  auto defm = [&](const char* name, py::cpp_function f) { py::setattr(cls, name, f); };
  const auto none = py::none();

  // sum / nansum / mean / nanmean
  static const char* sum_names[] = {"sum", "nansum", "mean", "nanmean"};
  for (int i = 0; i < 4; ++i) {
    const SumOp op = static_cast<SumOp>(i);
    m.def(sum_names[i], [op](py::handle x, py::handle dim, bool keepdim, py::handle dtype, py::handle out) {
      return sum_like(op, x, dim, keepdim, dtype, out);
    }, "input"_a, "dim"_a = none, "keepdim"_a = false, py::kw_only(), "dtype"_a = none, "out"_a = none);
    defm(sum_names[i], py::cpp_function([op](py::handle self, py::handle dim, bool keepdim, py::handle dtype) {
      return sum_like(op, self, dim, keepdim, dtype, py::none());
    }, py::is_method(cls), "dim"_a = none, "keepdim"_a = false, py::kw_only(), "dtype"_a = none));
  }
  m.def("prod", &prod_call, "input"_a, "dim"_a = none, "keepdim"_a = false, py::kw_only(),
        "dtype"_a = none, "out"_a = none);
  defm("prod", py::cpp_function([](py::handle self, py::handle dim, bool keepdim, py::handle dtype) {
    return prod_call(self, dim, keepdim, dtype, py::none());
  }, py::is_method(cls), "dim"_a = none, "keepdim"_a = false, py::kw_only(), "dtype"_a = none));

  // max / min (three forms), amax / amin, argmax / argmin
  for (bool is_max : {true, false}) {
    const char* name = is_max ? "max" : "min";
    m.def(name, [is_max](py::handle x, py::handle dim, py::handle keepdim, py::handle out, py::handle other) {
      return minmax_call(is_max, x, dim, keepdim, out, other);
    }, "input"_a, "dim"_a = none, "keepdim"_a = none, py::kw_only(), "out"_a = none, "other"_a = none);
    defm(name, py::cpp_function([is_max](py::handle self, py::handle dim, py::handle keepdim, py::handle other) {
      return minmax_call(is_max, self, dim, keepdim, py::none(), other);
    }, py::is_method(cls), "dim"_a = none, "keepdim"_a = none, py::kw_only(), "other"_a = none));

    const char* aname = is_max ? "amax" : "amin";
    m.def(aname, [is_max](py::handle x, py::handle dim, bool keepdim, py::handle out) {
      return amax_call(is_max, x, dim, keepdim, out);
    }, "input"_a, "dim"_a = py::tuple(), "keepdim"_a = false, py::kw_only(), "out"_a = none);
    defm(aname, py::cpp_function([is_max](py::handle self, py::handle dim, bool keepdim) {
      return amax_call(is_max, self, dim, keepdim, py::none());
    }, py::is_method(cls), "dim"_a = py::tuple(), "keepdim"_a = false));

    const char* argname = is_max ? "argmax" : "argmin";
    m.def(argname, [is_max](py::handle x, py::handle dim, bool keepdim, py::handle out) {
      return argmax_call(is_max, x, dim, keepdim, out);
    }, "input"_a, "dim"_a = none, "keepdim"_a = false, py::kw_only(), "out"_a = none);
    defm(argname, py::cpp_function([is_max](py::handle self, py::handle dim, bool keepdim) {
      return argmax_call(is_max, self, dim, keepdim, py::none());
    }, py::is_method(cls), "dim"_a = none, "keepdim"_a = false));
  }
  m.def("_return_type", [](const std::string& name) { return return_type(name); }, "name"_a);

  // var / std / var_mean / std_mean
  struct VarForm { const char* name; bool sqrt, with_mean, method; };
  static const VarForm var_forms[] = {{"var", false, false, true}, {"std", true, false, true},
                                      {"var_mean", false, true, false}, {"std_mean", true, true, false}};
  for (const auto& f : var_forms) {
    const VarForm form = f;
    m.def(form.name, [form](py::handle x, py::handle dim, py::handle unbiased, bool keepdim,
                            py::handle correction, py::handle out) {
      return var_call(form.name, form.sqrt, form.with_mean, x, dim, unbiased, keepdim, correction, out);
    }, "input"_a, "dim"_a = none, "unbiased"_a = none, "keepdim"_a = false, py::kw_only(),
       "correction"_a = none, "out"_a = none);
    if (form.method)
      defm(form.name, py::cpp_function([form](py::handle self, py::handle dim, py::handle unbiased,
                                              bool keepdim, py::handle correction) {
        return var_call(form.name, form.sqrt, false, self, dim, unbiased, keepdim, correction, py::none());
      }, py::is_method(cls), "dim"_a = none, "unbiased"_a = none, "keepdim"_a = false, py::kw_only(),
         "correction"_a = none));
  }

  // norm
  m.def("norm", &norm_call, "input"_a, "p"_a = "fro", "dim"_a = none, "keepdim"_a = false,
        "out"_a = none, "dtype"_a = none);
  defm("norm", py::cpp_function([](py::handle self, py::handle p, py::handle dim, bool keepdim, py::handle dtype) {
    return norm_call(self, p, dim, keepdim, py::none(), dtype);
  }, py::is_method(cls), "p"_a = "fro", "dim"_a = none, "keepdim"_a = false, "dtype"_a = none));

  // logsumexp
  auto lse = [](py::handle xh, py::handle dimh, bool keepdim, py::handle outh) -> py::object {
    Tensor x = expect_tensor(xh, "logsumexp", "input");
    OptDims dims = parse_dims(dimh, "logsumexp");
    if (needs_dispatch(x)) {
      if ((!outh.is_none()) && needs_grad(x)) out_with_grad("logsumexp");
      return redispatch_out("logsumexp", core_fn("logsumexp"), py::make_tuple(xh),
                           py::dict("dim"_a = dims_obj(dims), "keepdim"_a = keepdim), outh);
    }
    return finish("logsumexp", logsumexp(x, dims, keepdim), outh);
  };
  m.def("logsumexp", lse, "input"_a, "dim"_a, "keepdim"_a = false, py::kw_only(), "out"_a = none);
  defm("logsumexp", py::cpp_function([lse](py::handle self, py::handle dim, bool keepdim) {
    return lse(self, dim, keepdim, py::none());
  }, py::is_method(cls), "dim"_a, "keepdim"_a = false));

  // all / any
  for (bool is_all : {true, false}) {
    const char* name = is_all ? "all" : "any";
    auto fn = [is_all, name](py::handle xh, py::handle dimh, bool keepdim, py::handle outh) -> py::object {
      Tensor x = expect_tensor(xh, name, "input");
      OptDims dims = parse_dims(dimh, name);
      Tensor out = opt_out(outh, name);
      if (out) {
        const ScalarType want = x->dtype == ScalarType::UInt8 ? ScalarType::UInt8 : ScalarType::Bool;
        EMBER_CHECK(out->dtype == want || out->dtype == ScalarType::Bool, std::runtime_error, name,
                    " only supports bool tensor for result, got: ", torch_type_name(out->dtype));
      }
      if (on_device(x))
        return redispatch_out(name, core_fn(name), py::make_tuple(xh),
                              py::dict("dim"_a = dims_obj(dims), "keepdim"_a = keepdim), outh);
      return finish(name, is_all ? all(x, dims, keepdim) : any(x, dims, keepdim), outh);
    };
    m.def(name, fn, "input"_a, "dim"_a = none, "keepdim"_a = false, py::kw_only(), "out"_a = none);
    defm(name, py::cpp_function([fn](py::handle self, py::handle dim, bool keepdim) {
      return fn(self, dim, keepdim, py::none());
    }, py::is_method(cls), "dim"_a = none, "keepdim"_a = false));
  }

  // count_nonzero
  auto cnz = [](py::handle xh, py::handle dimh) {
    Tensor x = expect_tensor(xh, "count_nonzero", "input");
    OptDims dims = parse_dims(dimh, "count_nonzero");
    if (on_device(x))  // not differentiable: straight to the device
      return call_device("count_nonzero", py::make_tuple(xh), py::dict("dim"_a = dims_obj(dims)));
    return wrap(count_nonzero(x, dims));
  };
  m.def("count_nonzero", cnz, "input"_a, "dim"_a = none);
  defm("count_nonzero", py::cpp_function([cnz](py::handle self, py::handle dim) { return cnz(self, dim); },
                                         py::is_method(cls), "dim"_a = none));

  // cumsum / cumprod (+ in-place)
  for (bool is_prod : {false, true}) {
    const char* name = is_prod ? "cumprod" : "cumsum";
    const char* iname = is_prod ? "cumprod_" : "cumsum_";
    m.def(name, [is_prod](py::handle x, py::handle dim, py::handle dtype, py::handle out) {
      return scan_call(is_prod, x, dim, dtype, out);
    }, "input"_a, "dim"_a, py::kw_only(), "dtype"_a = none, "out"_a = none);
    defm(name, py::cpp_function([is_prod](py::handle self, py::handle dim, py::handle dtype) {
      return scan_call(is_prod, self, dim, dtype, py::none());
    }, py::is_method(cls), "dim"_a, py::kw_only(), "dtype"_a = none));
    m.def(iname, [is_prod](py::handle self, py::handle dim, py::handle dtype) {
      return scan_inplace(is_prod, self, dim, dtype);
    }, "input"_a, "dim"_a, py::kw_only(), "dtype"_a = none);
    defm(iname, py::cpp_function([is_prod](py::handle self, py::handle dim, py::handle dtype) {
      return scan_inplace(is_prod, self, dim, dtype);
    }, py::is_method(cls), "dim"_a, py::kw_only(), "dtype"_a = none));
  }

  // softmax / log_softmax
  for (bool is_log : {false, true}) {
    const char* name = is_log ? "log_softmax" : "softmax";
    m.def(name, [is_log](py::handle x, py::handle dim, py::handle dtype) {
      return softmax_call(is_log, x, dim, dtype);
    }, "input"_a, "dim"_a, "dtype"_a = none);
    defm(name, py::cpp_function([is_log](py::handle self, py::handle dim, py::handle dtype) {
      return softmax_call(is_log, self, dim, dtype);
    }, py::is_method(cls), "dim"_a, "dtype"_a = none));
  }
  // their backward kernels; not differentiable (double backward uses the composed formula)
  for (bool is_log : {false, true}) {
    const char* kernel = is_log ? "_log_softmax_backward_data" : "_softmax_backward_data";
    m.def(kernel, [is_log, kernel](py::handle goh, py::handle outh, int64_t dim, py::handle dtypeh) {
      Tensor go = expect_tensor(goh, kernel, "grad_output"), out = expect_tensor(outh, kernel, "output");
      check_not_differentiated(kernel, {go, out});
      if (on_device(go) || on_device(out))
        return call_device(kernel, py::make_tuple(goh, outh), py::dict("dim"_a = dim, "input_dtype"_a = dtypeh));
      return wrap(softmax_backward_data(go, out, dim, to_dtype(dtypeh), is_log));
    }, "grad_output"_a, "output"_a, "dim"_a, "input_dtype"_a = none);
  }
}

}  // namespace ember::pyb
