// bind_shape.cpp: Python bindings of the joining and reshaping primitives (ops/shape_ops.h):
// cat/concat/concatenate, flip, roll, tril/triu (+ in-place, out=), constant_pad_nd,
// repeat_interleave, diagonal, diag_embed, Tensor.unfold, tril_indices/triu_indices.
// Differentiable ops hand the call to the autograd hook with canonical arguments when an input
// requires grad; the composites over them (stack, split, movedim, ...) are in ember/_shape.py.
#include <string>

#include "ops/shape_ops.h"
#include "python/pyutils.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {

py::module_* g_m = nullptr;
py::object core_fn(const char* name) { return g_m->attr(name); }

// A tuple/list of tensors, with PyTorch's TypeErrors.
std::vector<Tensor> to_tensor_list(py::handle h, const char* op) {
  if (is_tensor(h) || !(PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())))
    throw py::type_error(str_cat(op, "(): argument 'tensors' (position 1) must be tuple of Tensors, not ",
                                 type_of(h)));
  std::vector<Tensor> out;
  size_t i = 0;
  for (auto item : py::reinterpret_borrow<py::sequence>(h)) {
    if (!is_tensor(item))
      throw py::type_error(str_cat("expected Tensor as element ", i, " in argument 0, but got ",
                                   type_of(item)));
    out.push_back(to_tensor(item));
    ++i;
  }
  return out;
}

// An int or a sequence of ints ("int or tuple of ints" arguments: dims, shifts, pad).
std::vector<int64_t> int_list(py::handle h, const char* op, const char* arg) {
  if (is_int_like(h)) return {as_int(h)};
  if (py::isinstance<py::sequence>(h) && !py::isinstance<py::str>(h) && !is_tensor(h)) {
    std::vector<int64_t> v;
    size_t pos = 0;
    for (auto item : py::reinterpret_borrow<py::sequence>(h)) {
      if (!is_int_like(item))
        throw py::type_error(str_cat(op, "(): argument '", arg, "' must be tuple of ints, but found "
                                     "element of type ", type_of(item), " at pos ", pos));
      v.push_back(as_int(item));
      ++pos;
    }
    return v;
  }
  throw py::type_error(str_cat(op, "(): argument '", arg, "' must be tuple of ints, not ", type_of(h)));
}

py::tuple tuple_of(const std::vector<int64_t>& v) { return py::tuple(py::cast(v)); }

py::object cat_call(const char* name, py::handle tensorsh, py::handle dimh, py::handle outh) {
  std::vector<Tensor> ts = to_tensor_list(tensorsh, name);
  const int64_t dim = parse_dim(dimh, name);
  bool grad = false;
  for (auto& t : ts) grad = grad || needs_dispatch(t);
  Tensor out = opt_out(outh, name);
  if (grad) {
    bool recorded = false;
    for (auto& t : ts) recorded = recorded || needs_grad(t);
    if (out && recorded) out_with_grad(name);
    return redispatch_out("cat", core_fn("cat"), py::make_tuple(py::tuple(py::cast(ts))),
                          py::dict("dim"_a = dim), outh);
  }
  if (!out) return wrap(cat(ts, dim));
  check_out_no_grad(out, name);
  for (auto& t : ts)
    if (t->storage == out->storage && t->numel() > 0 && out->numel() > 0)
      throw std::runtime_error(
          "unsupported operation: some elements of the input tensor and the written-to tensor "
          "refer to a single memory location. Please clone() the tensor before performing the "
          "operation.");
  ScalarType dt;
  Shape shape = cat_shape(ts, dim, &dt);
  EMBER_CHECK(can_cast(dt, out->dtype), TypeError,
              "torch.cat(): input types can't be cast to the desired output type ",
              torch_type_name(out->dtype));
  resize_out(out, shape);  // PyTorch's warning when a non-empty out changes shape
  cat(ts, dim, out);
  return py::reinterpret_borrow<py::object>(outh);
}

// Dims given as x.flip(0, 1), x.flip((0, 1)) or flip(x, dims=...).
std::vector<int64_t> varargs_dims(const py::args& args, py::kwargs kw, const char* op, const char* key) {
  if (kw && kw.contains(key)) {
    EMBER_CHECK(args.size() == 0, py::type_error, op, "() got multiple values for argument '", key, "'");
    return int_list(kw[key], op, key);
  }
  if (args.size() == 1) return int_list(args[0], op, key);
  return int_list(args, op, key);
}

py::object flip_call(py::handle xh, const std::vector<int64_t>& dims) {
  Tensor x = expect_tensor(xh, "flip", "input");
  if (needs_dispatch(x))
    return redispatch("flip", core_fn("flip"), py::make_tuple(xh), py::dict("dims"_a = tuple_of(dims)));
  return wrap(flip(x, dims));
}

py::object roll_call(py::handle xh, py::handle shiftsh, py::handle dimsh) {
  Tensor x = expect_tensor(xh, "roll", "input");
  std::vector<int64_t> shifts = int_list(shiftsh, "roll", "shifts");
  std::vector<int64_t> dims = dimsh.is_none() ? std::vector<int64_t>{} : int_list(dimsh, "roll", "dims");
  if (needs_dispatch(x))
    return redispatch("roll", core_fn("roll"), py::make_tuple(xh),
                         py::dict("shifts"_a = tuple_of(shifts), "dims"_a = tuple_of(dims)));
  return wrap(roll(x, shifts, dims));
}

py::object tri_call(bool upper, py::handle xh, int64_t k, py::handle outh) {
  const char* name = upper ? "triu" : "tril";
  Tensor x = expect_tensor(xh, name, "input");
  Tensor out = opt_out(outh, name);
  if (needs_dispatch(x)) {
    if ((out) && needs_grad(x)) out_with_grad(name);
    return redispatch_out(name, core_fn(name), py::make_tuple(xh), py::dict("diagonal"_a = k), outh);
  }
  if (out) check_out_dtype(out, x->dtype);
  return finish(name, tril_triu(x, k, upper, false), outh);
}

py::object tri_inplace(bool upper, py::handle selfh, int64_t k) {
  const char* name = upper ? "triu_" : "tril_";
  Tensor x = expect_tensor(selfh, name, "self");
  if (needs_dispatch(x))
    return redispatch(name, core_fn(name), py::make_tuple(selfh), py::dict("diagonal"_a = k));
  tril_triu(x, k, upper, true);
  return py::reinterpret_borrow<py::object>(selfh);
}

py::object pad_call(py::handle xh, py::handle padh, py::handle valueh) {
  Tensor x = expect_tensor(xh, "constant_pad_nd", "input");
  std::vector<int64_t> pad = int_list(padh, "constant_pad_nd", "pad");
  Scalar v = valueh.is_none() ? Scalar::from_int(0) : to_scalar(valueh);
  if (needs_dispatch(x))
    return redispatch("constant_pad_nd", core_fn("constant_pad_nd"), py::make_tuple(xh),
                         py::dict("pad"_a = tuple_of(pad),
                                  "value"_a = valueh.is_none() ? py::int_(0) : py::reinterpret_borrow<py::object>(valueh)));
  return wrap(constant_pad_nd(x, pad, v));
}

py::object repeat_interleave_call(py::handle xh, py::handle repeatsh, py::handle dimh, py::handle osh) {
  const int64_t output_size = osh.is_none() ? -1 : as_int(osh);
  Tensor x = expect_tensor(xh, "repeat_interleave", "input");
  if (repeatsh.is_none()) {  // one-argument form: x holds the counts
    if (on_device(x))
      return call_device("repeat_interleave", py::make_tuple(xh),
                         py::dict("repeats"_a = py::none(), "dim"_a = py::none(), "output_size"_a = osh));
    return wrap(repeat_interleave_counts(x, output_size));
  }
  std::optional<int64_t> dim = parse_opt_dim(dimh, "repeat_interleave");
  if (needs_dispatch(x) || (is_tensor(repeatsh) && on_device(to_tensor(repeatsh))))
    return redispatch("repeat_interleave", core_fn("repeat_interleave"), py::make_tuple(xh),
                         py::dict("repeats"_a = repeatsh, "dim"_a = opt_dim_obj(dim),
                                  "output_size"_a = osh));
  if (is_tensor(repeatsh)) return wrap(repeat_interleave(x, to_tensor(repeatsh), 0, dim, output_size));
  if (!is_int_like(repeatsh))
    throw py::type_error(str_cat("repeat_interleave(): argument 'repeats' must be Tensor or int, not ",
                                 type_of(repeatsh)));
  return wrap(repeat_interleave(x, nullptr, as_int(repeatsh), dim, output_size));
}

py::object diagonal_call(py::handle xh, int64_t offset, int64_t d1, int64_t d2) {
  Tensor x = expect_tensor(xh, "diagonal", "input");
  if (needs_grad(x))  // a view: no device work
    return redispatch("diagonal", core_fn("diagonal"), py::make_tuple(xh),
                         py::dict("offset"_a = offset, "dim1"_a = d1, "dim2"_a = d2));
  return wrap(diagonal(x, offset, d1, d2));
}

py::object diag_embed_call(py::handle xh, int64_t offset, int64_t d1, int64_t d2) {
  Tensor x = expect_tensor(xh, "diag_embed", "input");
  if (needs_dispatch(x))
    return redispatch("diag_embed", core_fn("diag_embed"), py::make_tuple(xh),
                         py::dict("offset"_a = offset, "dim1"_a = d1, "dim2"_a = d2));
  return wrap(diag_embed(x, offset, d1, d2));
}

py::object unfold_call(py::handle xh, int64_t dimension, int64_t size, int64_t step) {
  Tensor x = expect_tensor(xh, "unfold", "input");
  if (needs_grad(x))  // a view: no device work
    return redispatch("unfold", core_fn("_unfold"), py::make_tuple(xh),
                         py::dict("dimension"_a = dimension, "size"_a = size, "step"_a = step));
  return wrap(unfold(x, dimension, size, step));
}

py::object tri_indices_call(bool upper, int64_t row, int64_t col, int64_t offset, py::handle dtypeh,
                            py::handle deviceh) {
  ScalarType dt = dtypeh.is_none() ? ScalarType::Int64 : to_dtype(dtypeh);
  Device dev = to_device(deviceh);
  dev = resolve_device(dev, str_cat(upper ? "triu_indices" : "tril_indices", "(): device '",
                                    dev.str(), "'"));
  return wrap(to_device_copy(tri_indices(row, col, offset, upper, dt), dev, false));
}

}  // namespace

void register_shape(py::module_& m) {
  g_m = new py::module_(m);
  py::object cls = m.attr("Tensor");
  auto method = [&](const char* name, py::cpp_function f) { py::setattr(cls, name, f); };
  auto as_method = [&](const char* name, auto fn, auto... extra) {
    method(name, py::cpp_function(fn, py::name(name), py::is_method(cls), py::sibling(py::getattr(cls, name, py::none())), extra...));
  };

  // ---- cat ----
  for (const char* name : {"cat", "concat"})
    m.def(name, [name](py::handle ts, py::handle dim, py::handle out) {
      return cat_call(name, ts, dim, out);
    }, py::arg("tensors"), py::arg("dim") = 0, py::kw_only(), py::arg("out") = py::none());
  for (const char* name : {"cat", "concat"})  // torch also takes the NumPy spelling `axis`
    m.def(name, [name](py::handle ts, py::handle axis, py::handle out) {
      return cat_call(name, ts, axis, out);
    }, py::arg("tensors"), py::kw_only(), py::arg("axis"), py::arg("out") = py::none());
  m.def("concatenate", [](py::handle ts, py::handle axis, py::handle out) {
    return cat_call("concatenate", ts, axis, out);
  }, py::arg("tensors"), py::arg("axis") = 0, py::arg("out") = py::none());

  // ---- flip / roll ----
  m.def("flip", [](py::handle x, py::handle dims) {
    return flip_call(x, int_list(dims, "flip", "dims"));
  }, py::arg("input"), py::arg("dims"));
  as_method("flip", [](py::handle self, py::args args, py::kwargs kw) {
    return flip_call(self, varargs_dims(args, kw, "flip", "dims"));
  });
  m.def("roll", &roll_call, py::arg("input"), py::arg("shifts"), py::arg("dims") = py::none());
  as_method("roll", [](py::handle self, py::handle s, py::handle d) { return roll_call(self, s, d); },
            py::arg("shifts"), py::arg("dims") = py::none());

  // ---- tril / triu ----
  for (bool upper : {false, true}) {
    const char* name = upper ? "triu" : "tril";
    const char* iname = upper ? "triu_" : "tril_";
    m.def(name, [upper](py::handle x, int64_t k, py::handle out) { return tri_call(upper, x, k, out); },
          py::arg("input"), py::arg("diagonal") = 0, py::kw_only(), py::arg("out") = py::none());
    as_method(name, [upper](py::handle x, int64_t k) { return tri_call(upper, x, k, py::none()); },
              py::arg("diagonal") = 0);
    m.def(iname, [upper](py::handle x, int64_t k) { return tri_inplace(upper, x, k); },
          py::arg("input"), py::arg("diagonal") = 0);
    as_method(iname, [upper](py::handle x, int64_t k) { return tri_inplace(upper, x, k); },
              py::arg("diagonal") = 0);
    m.def(upper ? "triu_indices" : "tril_indices",
          [upper](int64_t row, int64_t col, int64_t offset, py::handle dtype, py::handle device,
                  py::handle) { return tri_indices_call(upper, row, col, offset, dtype, device); },
          py::arg("row"), py::arg("col"), py::arg("offset") = 0, py::kw_only(),
          py::arg("dtype") = py::none(), py::arg("device") = py::none(), py::arg("layout") = py::none());
  }

  // ---- padding, repeat_interleave ----
  m.def("constant_pad_nd", &pad_call, py::arg("input"), py::arg("pad"), py::arg("value") = 0);
  m.def("repeat_interleave", &repeat_interleave_call, py::arg("input"), py::arg("repeats") = py::none(),
        py::arg("dim") = py::none(), py::kw_only(), py::arg("output_size") = py::none());
  as_method("repeat_interleave", [](py::handle self, py::handle r, py::handle d, py::handle os) {
    if (r.is_none())
      throw py::type_error("repeat_interleave(): missing required argument 'repeats'");
    return repeat_interleave_call(self, r, d, os);
  }, py::arg("repeats"), py::arg("dim") = py::none(), py::kw_only(), py::arg("output_size") = py::none());

  // ---- diagonal views ----
  m.def("diagonal", &diagonal_call, py::arg("input"), py::arg("offset") = 0, py::arg("dim1") = 0,
        py::arg("dim2") = 1);
  as_method("diagonal", [](py::handle x, int64_t o, int64_t a, int64_t b) { return diagonal_call(x, o, a, b); },
            py::arg("offset") = 0, py::arg("dim1") = 0, py::arg("dim2") = 1);
  m.def("diag_embed", &diag_embed_call, py::arg("input"), py::arg("offset") = 0, py::arg("dim1") = -2,
        py::arg("dim2") = -1);
  as_method("diag_embed", [](py::handle x, int64_t o, int64_t a, int64_t b) { return diag_embed_call(x, o, a, b); },
            py::arg("offset") = 0, py::arg("dim1") = -2, py::arg("dim2") = -1);
  m.def("_unfold", &unfold_call, py::arg("input"), py::arg("dimension"), py::arg("size"), py::arg("step"));
  as_method("unfold", [](py::handle x, int64_t d, int64_t s, int64_t st) { return unfold_call(x, d, s, st); },
            py::arg("dimension"), py::arg("size"), py::arg("step"));
}

}  // namespace ember::pyb
