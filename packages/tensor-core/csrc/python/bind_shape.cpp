// bind_shape.cpp: the joining and reshaping primitives (ops/shape_ops.h) as registry rows
// (python/registry.h): cat/concat/concatenate, flip, roll, tril/triu (+ in-place, out=),
// constant_pad_nd, repeat_interleave, diagonal, diag_embed, Tensor.unfold,
// tril_indices/triu_indices. Differentiable ops hand the call to the autograd hook with canonical
// arguments when an input requires grad; the composites over them (stack, split, movedim, ...)
// are in ember/_shape.py.
#include <string>

#include "ops/shape_ops.h"
#include "python/pyutils.h"
#include "python/registry.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {


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
  if (is_int_list_item(h)) return {as_int(h)};
  if (py::isinstance<py::sequence>(h) && !py::isinstance<py::str>(h) && !is_tensor(h)) {
    std::vector<int64_t> v;
    size_t pos = 0;
    for (auto item : py::reinterpret_borrow<py::sequence>(h)) {
      if (!is_int_list_item(item))
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
  Shape shape = cat_shape(ts, dim, &dt, nullptr, out->dtype);
  resize_out(out, shape);  // PyTorch's warning when a non-empty out changes shape
  cat(ts, dim, out);
  return py::reinterpret_borrow<py::object>(outh);
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

py::object repeat_interleave_call(py::handle xh, py::handle repeatsh, py::handle dimh, py::handle osh) {
  const std::optional<int64_t> output_size =
      osh.is_none() ? std::nullopt : std::optional<int64_t>(as_int(osh));
  Tensor x = expect_tensor(xh, "repeat_interleave", "input");
  if (repeatsh.is_none()) {  // one-argument form: x holds the counts
    if (on_device(x))
      return call_device("repeat_interleave", py::make_tuple(xh),
                         py::dict("repeats"_a = py::none(), "dim"_a = py::none(), "output_size"_a = osh));
    return wrap(repeat_interleave_counts(x, output_size));
  }
  std::optional<int64_t> dim = parse_opt_dim(dimh, "repeat_interleave");
  const bool repeats_tensor = is_tensor(repeatsh);
  EMBER_CHECK(!repeats_tensor || to_tensor(repeatsh)->dim() <= 1, std::runtime_error,
              "repeats must be 0-dim or 1-dim tensor");
  if (dim && x->dim() == 0)  // (torch's messages for its two forms)
    throw IndexError(repeats_tensor
                         ? str_cat("Dimension specified as ", *dim, " but tensor has no dimensions")
                         : std::string("Dimension out of range (expected to be in range of "
                                       "[-1, 0], but got 1)"));
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
  Device dev = deviceh.is_none() ? default_factory_device().value_or(Device{}) : to_device(deviceh);
  dev = resolve_device(dev, str_cat(upper ? "triu_indices" : "tril_indices", "(): device '",
                                    dev.str(), "'"));
  return wrap(to_device_copy(tri_indices(row, col, offset, upper, dt), dev, false));
}

}  // namespace

// The views (core/view ops): metadata only, so they run on every device (cuda = "view") and go
// to the autograd hook with every argument by position, as its formulas read them.
void register_views(py::module_& m) {
  // the core's check of a written-to tensor (no element shared with another, as in an expanded
  // view), for the in-place ops written in Python
  m.def("_check_inplace_writable",
        [](const Tensor& t, const std::string& op) { check_inplace_writable(t, op.c_str()); });
  const char* V = "view";
  auto view_row = [&](const std::string& name, std::vector<std::string> signatures,
                      std::function<py::object(const Args&)> impl, unsigned variants = kFunction | kMethod) {
    def_op(m, {.name = name, .signatures = std::move(signatures), .family = V,
               .variants = variants, .hooked = true, .hook_positional = Args::kMaxParams, .cuda = "view",
               .impl = std::move(impl)});
  };
  // reshape / permute: the methods also take the sizes as var-args, x.reshape(2, 3)
  view_row("reshape", {"reshape(Tensor input, int[] shape) -> Tensor"},
           [](const Args& a) { return wrap(reshape(a.tensor(0), a.ints(1))); });
  view_row("permute", {"permute(Tensor input, int[] dims) -> Tensor"},
           [](const Args& a) { return wrap(permute(a.tensor(0), a.ints(1))); });
  // transpose; swapaxes and swapdims are the same function (the hook sees transpose)
  view_row("transpose", {"transpose(Tensor input, int dim0, int dim1) -> Tensor"},
           [](const Args& a) { return wrap(transpose(a.tensor(0), a.integer(1), a.integer(2))); });
  py::object cls = m.attr("Tensor");
  for (const char* alias : {"swapaxes", "swapdims"}) {
    m.attr(alias) = m.attr("transpose");
    cls.attr(alias) = cls.attr("transpose");
  }
  view_row("t", {"t(Tensor input) -> Tensor"}, [](const Args& a) { return wrap(t_(a.tensor(0))); });
  // complex <-> (real, imaginary) pairs: views of the same memory (torch.view_as_real/complex)
  view_row("view_as_real", {"view_as_real(Tensor input) -> Tensor"},
           [](const Args& a) { return wrap(view_as_real(a.tensor(0))); }, kFunction);
  view_row("view_as_complex", {"view_as_complex(Tensor input) -> Tensor"},
           [](const Args& a) { return wrap(view_as_complex(a.tensor(0))); }, kFunction);
  view_row("squeeze",
           {"squeeze(Tensor input) -> Tensor", "squeeze(Tensor input, int dim) -> Tensor",
            "squeeze(Tensor input, int[] dim) -> Tensor"},
           [](const Args& a) {
             if (a.overload() == 0) return wrap(squeeze(a.tensor(0)));
             return wrap(squeeze_dims(a.tensor(0), a.ints(1)));
           });
  view_row("unsqueeze", {"unsqueeze(Tensor input, int dim) -> Tensor"},
           [](const Args& a) { return wrap(unsqueeze(a.tensor(0), a.integer(1))); });
  view_row("flatten", {"flatten(Tensor input, int start_dim=0, int end_dim=-1) -> Tensor"},
           [](const Args& a) { return wrap(flatten(a.tensor(0), a.integer(1), a.integer(2))); });
  view_row("unflatten", {"unflatten(Tensor input, int dim, int[] sizes) -> Tensor"},
           [](const Args& a) { return wrap(unflatten(a.tensor(0), a.integer(1), a.ints(2))); });
  view_row("narrow", {"narrow(Tensor input, int dim, Tensor start, SymInt length) -> Tensor",
                      "narrow(Tensor input, int dim, SymInt start, SymInt length) -> Tensor"},
           [](const Args& a) {
             int64_t start = 0;
             if (a.overload() == 0) {  // torch's Tensor start: a 0-d integer tensor only
               const Tensor s = a.tensor(2);
               EMBER_CHECK(s->dim() == 0 && is_integral(s->dtype, false), std::runtime_error,
                           "start must be an 0-dim integral Tensor.");
               start = to_scalar(a[2]).to_int();
             } else {
               start = a.integer(2);
             }
             return wrap(narrow(a.tensor(0), a.integer(1), start, a.integer(3)));
           });
  view_row("select", {"select(Tensor input, int dim, SymInt index) -> Tensor"},
           [](const Args& a) { return wrap(select(a.tensor(0), a.integer(1), a.integer(2))); });
  // as_strided: hand_off = false, the hook gets storage_offset=None as the input's offset
  def_op(m, {.name = "as_strided",
             .signatures = {"as_strided(Tensor input, int[] size, int[] stride, SymInt? storage_offset=None) -> Tensor"},
             .family = V, .hooked = true, .cuda = "view", .hand_off = false,
             .impl = [](const Args& a) {
               Tensor x = a.tensor(0);
               const Shape size = a.ints(1), stride = a.ints(2);
               const int64_t offset = a.is_none(3) ? x->offset : a.integer(3);
               if (needs_grad(x))
                 return redispatch("as_strided", core_fn("as_strided"),
                                   py::make_tuple(a[0], py::cast(size), py::cast(stride), offset),
                                   py::dict());
               return wrap(as_strided(x, size, stride, offset));
             }});
  // The methods whose hook hand-off names another function: view -> _view, expand -> _expand,
  // reshape_as -> reshape, contiguous -> clone (run as _contiguous). hand_off = false.
  auto method_row = [&](const std::string& name, std::vector<std::string> signatures,
                        std::function<py::object(const Args&)> impl) {
    def_op(m, {.name = name, .signatures = std::move(signatures), .family = V,
               .variants = kMethod, .hooked = true, .cuda = "view", .hand_off = false,
               .impl = std::move(impl)});
  };
  // x's bytes as dtype dt, torch's rules: between sizes, the last dim (stride 1) is split or
  // merged and every other stride and the offset rescaled, which must divide evenly.
  auto view_dtype = [](const Tensor& x, ScalarType dt) {
    const int64_t from = x->element_size(), to = itemsize(dt);
    Shape sizes = x->sizes, strides = x->strides;
    int64_t offset = x->offset;
    if (from != to) {
      const std::string what = str_cat(" to view ", type_name(x->dtype), " as ", type_name(dt),
                                       " (different element sizes)");
      EMBER_CHECK(x->dim() > 0, std::runtime_error, "self.dim() cannot be 0", what);
      EMBER_CHECK(x->strides.back() == 1, std::runtime_error, "self.stride(-1) must be 1", what,
                  ", but got ", x->strides.back());
      const int64_t last = x->dim() - 1;
      if (from > to) {  // each element becomes from / to of the new type
        const int64_t r = from / to;
        for (int64_t d = 0; d < last; ++d) strides[d] *= r;
        sizes[last] *= r;
        offset *= r;
      } else {
        const int64_t r = to / from;
        EMBER_CHECK(sizes[last] % r == 0, std::runtime_error, "self.size(-1) must be divisible by ",
                    r, what, ", but got ", sizes[last]);
        EMBER_CHECK(offset % r == 0, std::runtime_error, "self.storage_offset() must be divisible by ",
                    r, what, ", but got ", offset);
        for (int64_t d = 0; d < last; ++d) {
          EMBER_CHECK(strides[d] % r == 0, std::runtime_error, "self.stride(", d,
                      ") must be divisible by ", r, what, ", but got ", strides[d]);
          strides[d] /= r;
        }
        sizes[last] /= r;
        offset /= r;
      }
    }
    Tensor v = make_view(x, sizes, strides, offset);
    v->dtype = dt;
    return v;
  };
  auto to_hook = [](const char* name, const char* fn, const Args& a, const Shape& shape) {
    return redispatch(name, core_fn(fn), py::make_tuple(a[0], py::cast(shape)), py::dict());
  };
  // view(dtype): the same bytes read as another dtype (not recorded)
  method_row("view", {"view(Tensor input, int[] size) -> Tensor",
                      "view(Tensor input, ScalarType dtype) -> Tensor"},
             [to_hook, view_dtype](const Args& a) {
               Tensor x = a.tensor(0);
               if (a.overload() == 1) return wrap(view_dtype(x, a.dtype(1)));
               const Shape s = a.ints(1);
               if (needs_grad(x)) return to_hook("_view", "_view", a, s);
               return wrap(view(x, s));
             });
  method_row("view_as", {"view_as(Tensor input, Tensor other) -> Tensor"}, [to_hook](const Args& a) {
    Tensor x = a.tensor(0);
    const Shape s = a.tensor(1)->sizes;
    if (needs_grad(x)) return to_hook("_view", "_view", a, s);
    return wrap(view(x, s));
  });
  method_row("reshape_as", {"reshape_as(Tensor input, Tensor other) -> Tensor"},
             [to_hook](const Args& a) {
               Tensor x = a.tensor(0);
               const Shape s = a.tensor(1)->sizes;
               if (needs_grad(x)) return to_hook("reshape", "reshape", a, s);
               return wrap(reshape(x, s));
             });
  // expand: torch's `implicit` is accepted and has no effect (as in torch's eager mode)
  method_row("expand", {"expand(Tensor input, int[] size, *, bool implicit=False) -> Tensor"},
             [to_hook](const Args& a) {
               Tensor x = a.tensor(0);
               const Shape s = a.ints(1);
               if (needs_grad(x)) return to_hook("_expand", "_expand", a, s);
               return wrap(expand(x, s));
             });
  method_row("expand_as", {"expand_as(Tensor input, Tensor other) -> Tensor"},
             [to_hook](const Args& a) {
               Tensor x = a.tensor(0);
               const Shape s = a.tensor(1)->sizes;
               if (needs_grad(x)) return to_hook("_expand", "_expand", a, s);
               return wrap(expand(x, s));
             });
  // contiguous: recorded as a clone (same gradient), but run as a contiguous copy: the core's
  // clone keeps a dense input's strides, so it would hand back the same non-contiguous layout
  method_row("contiguous", {"contiguous(Tensor input, *, Any? memory_format=None) -> Tensor"},
             [](const Args& a) {
               if (a.given(1) && a.is_none(1))  // torch's memory_format is no optional
                 throw py::type_error("contiguous(): argument 'memory_format' must be "
                                      "ember.memory_format, not NoneType");
               if (!a.is_none(1))  // a memory format: ember/_memory_format.py
                 return py::module_::import("ember._memory_format").attr("_contiguous")(a[0], a[1]);
               Tensor x = a.tensor(0);
               if (x->is_contiguous()) return py::reinterpret_borrow<py::object>(a[0]);
               if (needs_grad(x))
                 return redispatch("clone", core_fn("_contiguous"), py::make_tuple(a[0]), py::dict());
               return wrap(contiguous(x));
             });
  def_op(m, {.name = "detach", .signatures = {"detach(Tensor input) -> Tensor"}, .family = V,
             .cuda = "view", .impl = [](const Args& a) { return wrap(alias(a.tensor(0))); }});
  // clone: hand_off = false, the hook gets the input alone (a memory format is applied first,
  // by ember/_memory_format.py, through ops the hook records)
  def_op(m, {.name = "clone",
             .signatures = {"clone(Tensor input, *, Any? memory_format=None) -> Tensor"},
             .family = V, .hooked = true, .cuda = "view", .hand_off = false,
             .impl = [](const Args& a) {
               if (!a.is_none(1))  // a memory format: ember/_memory_format.py
                 return py::module_::import("ember._memory_format").attr("_clone")(a[0], a[1]);
               Tensor x = a.tensor(0);
               if (needs_grad(x))
                 return redispatch("clone", core_fn("clone"), py::make_tuple(a[0]), py::dict());
               return wrap(clone(x));
             }});
}

void register_shape(py::module_& m) {
  register_views(m);
  const char* S = "shape";

  // cat / concat / concatenate (functions only); torch's NumPy spelling `axis` is the registry's
  // alias of dim. hand_off = false: the hook gets the tensors as a tuple.
  for (const std::string name : {"cat", "concat", "concatenate"})
    def_op(m, {.name = name,
               .signatures = {name + "(Tensor[] tensors, int dim=0, *, Tensor? out=None) -> Tensor"},
               .family = S, .variants = kFunction, .hooked = true, .hand_off = false,
               .impl = [name](const Args& a) { return cat_call(name.c_str(), a[0], a[1], a.out()); }});

  // flip: the method also takes the dims as var-args, x.flip(0, 1) (the registry's int-list rule)
  def_op(m, {.name = "flip", .signatures = {"flip(Tensor input, int[] dims) -> Tensor"},
             .family = S, .hooked = true,
             .impl = [](const Args& a) { return wrap(flip(a.tensor(0), a.ints(1))); }});
  // roll: dims=None is accepted, as torch's; hand_off = false: the hook gets dims=() then
  def_op(m, {.name = "roll",
             .signatures = {"roll(Tensor input, int[1] shifts, int[1]? dims=[]) -> Tensor"},
             .family = S, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) { return roll_call(a[0], a[1], a[2]); }});

  for (bool upper : {false, true}) {
    const std::string name = upper ? "triu" : "tril";
    def_op(m, {.name = name,
               .signatures = {name + "(Tensor input, SymInt diagonal=0, *, Tensor? out=None) -> Tensor"},
               .family = S, .hooked = true,
               .impl = [upper, name](const Args& a) {
                 Tensor x = a.tensor(0), out = opt_out(a.out(), name.c_str());
                 if (out) check_out_dtype(out, x->dtype);
                 return finish(name.c_str(), tril_triu(x, a.integer(1), upper, false), a.out());
               }});
    // ember.tril_ too (torch has only the method): the hook calls it by that name
    def_op(m, {.name = name + "_", .signatures = {name + "_(Tensor input, SymInt diagonal=0) -> Tensor"},
               .family = S, .hooked = true,
               .impl = [upper](const Args& a) {
                 tril_triu(a.tensor(0), a.integer(1), upper, true);
                 return py::reinterpret_borrow<py::object>(a[0]);
               }});
    const std::string iname = upper ? "triu_indices" : "tril_indices";
    // layout: checked as torch checks it (ember.layout); ember has only strided tensors
    def_op(m, {.name = iname,
               .signatures = {iname + "(int row, int col, int offset=0, *, ScalarType? dtype=None, "
                                      "Device? device=None, Layout? layout=None) -> Tensor"},
               .family = S, .variants = kFunction,
               .impl = [upper](const Args& a) {
                 return tri_indices_call(upper, a.integer(0), a.integer(1), a.integer(2), a[3], a[4]);
               }});
  }

  def_op(m, {.name = "constant_pad_nd",
             .signatures = {"constant_pad_nd(Tensor input, int[] pad, Scalar value=0) -> Tensor"},
             .family = S, .variants = kFunction, .hooked = true,
             .impl = [](const Args& a) {
               return wrap(constant_pad_nd(a.tensor(0), a.ints(1), a.scalar(2)));
             }});

  // repeat_interleave: repeats a tensor or an int; the function's one-argument form takes the
  // counts (the method has none). hand_off = false: repeats=None goes to the device as given.
  const std::string rest = " repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor";
  const std::string by_tensor = "repeat_interleave(Tensor input, Tensor" + rest;
  const std::string by_int = "repeat_interleave(Tensor input, SymInt" + rest;
  auto repeat_impl = [](const Args& a) {
    if (a.schema().params.size() == 2)  // repeat_interleave(repeats, *, output_size)
      return repeat_interleave_call(a[0], py::none(), py::none(), a[1]);
    return repeat_interleave_call(a[0], a[1], a[2], a[3]);
  };
  def_op(m, {.name = "repeat_interleave",
             .signatures = {by_tensor,
                            "repeat_interleave(Tensor repeats, *, SymInt? output_size=None) -> Tensor",
                            by_int},
             .family = S, .variants = kFunction, .hooked = true, .hand_off = false,
             .impl = repeat_impl});
  def_op(m, {.name = "repeat_interleave", .signatures = {by_tensor, by_int},
             .family = S, .variants = kMethod, .hooked = true, .hand_off = false,
             .impl = repeat_impl});

  // diagonal, unfold: views, so no device work; hand_off = false: the hook only for grad
  def_op(m, {.name = "diagonal",
             .signatures = {"diagonal(Tensor input, int offset=0, int dim1=0, int dim2=1) -> Tensor"},
             .family = S, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) {
               return diagonal_call(a[0], a.integer(1), a.integer(2), a.integer(3));
             }});
  def_op(m, {.name = "diag_embed",
             .signatures = {"diag_embed(Tensor input, int offset=0, int dim1=-2, int dim2=-1) -> Tensor"},
             .family = S, .hooked = true,
             .impl = [](const Args& a) {
               return wrap(diag_embed(a.tensor(0), a.integer(1), a.integer(2), a.integer(3)));
             }});
  // Tensor.unfold; the function is _unfold (torch.unfold does not exist), which the hook runs
  for (const std::string name : {"unfold", "_unfold"})
    def_op(m, {.name = name,
               .signatures = {name + "(Tensor input, int dimension, int size, int step) -> Tensor"},
               .family = S, .variants = name == "unfold" ? kMethod : kFunction, .hooked = true,
               .hand_off = false,
               .impl = [](const Args& a) {
                 return unfold_call(a[0], a.integer(1), a.integer(2), a.integer(3));
               }});
}

}  // namespace ember::pyb
