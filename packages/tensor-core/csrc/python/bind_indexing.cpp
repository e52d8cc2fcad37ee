// bind_indexing.cpp: `x[index]` / `x[index] = value` with PyTorch's index expressions (ints,
// slices, None, `...`, bools, integer lists / tensors / arrays, masks, in any mix), and the
// index ops of ops/indexing.h as functions and Tensor methods (+ in-place `_`, + out=).
//
// An index expression is applied the way PyTorch does it: ints, slices and None become a view
// first; the tensor indices left over then go to `index` / `index_put_` with one entry per dim
// of that view. Differentiable ops hand their call to the autograd hook with canonical
// arguments: positional (input, dim, index, src...) as in the op's signature, options as kwargs.
#include <cstring>

#include "ops/indexing.h"
#include "python/pyutils.h"
#include "python/registry.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {


// True when an in-place op must leave the CPU kernels: to be recorded, or to run on a device.
bool inplace_needs_grad(const Tensor& self, std::initializer_list<Tensor> others = {}) {
  if ((self->requires_grad && grad_enabled()) || on_device(self)) return true;
  for (auto& o : others)
    if (needs_dispatch(o)) return true;
  return false;
}

void warn_byte_mask(const std::vector<Tensor>& indices) {
  if (indices_have_byte_mask(indices))
    warn("indexing with dtype ember.uint8 is now deprecated, please use a dtype ember.bool "
         "instead.");
}

// ---------------------------------------------------------------------------------------------
// index expressions

enum class Kind { Int, Slice, None, Ellipsis, Bool, Tensor };
struct Item {
  Kind kind;
  int64_t i = 0;
  bool b = false;
  py::handle obj;
  Tensor t;
};

[[noreturn]] void bad_index(py::handle h) {
  throw IndexError(str_cat("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                           "Variables are valid indices (got ", type_of(h), ")"));
}

bool is_ndarray(py::handle h) {
  return !is_tensor(h) && !is_number(h) && py::hasattr(h, "__array_interface__");
}

// A list / array used as an index: bool (and uint8 arrays) stay masks, the rest becomes int64
// (int32 arrays are kept), as PyTorch's indexing_tensor_from_data does.
Tensor index_tensor_from_data(py::handle h) {
  if (PyList_Check(h.ptr())) {  // fast path: a flat list of Python ints
    const Py_ssize_t n = PyList_GET_SIZE(h.ptr());
    Tensor t = empty({static_cast<int64_t>(n)}, ScalarType::Int64);
    int64_t* d = t->data_as<int64_t>();
    Py_ssize_t i = 0;
    for (; i < n; ++i) {
      PyObject* e = PyList_GET_ITEM(h.ptr(), i);
      if (!PyLong_CheckExact(e)) break;
      int overflow = 0;
      d[i] = PyLong_AsLongLongAndOverflow(e, &overflow);
      if (overflow) break;
    }
    if (i == n && n > 0) return t;
  }
  Tensor t = tensor_from_data(h, ScalarType::Undefined);
  if (t->dtype == ScalarType::Bool || t->dtype == ScalarType::UInt8 || t->dtype == ScalarType::Int32 ||
      t->dtype == ScalarType::Int64)
    return t;
  return to_dtype(t, ScalarType::Int64);
}

Item to_item(py::handle h) {
  PyObject* p = h.ptr();
  Item it{Kind::Int};
  it.obj = h;
  if (PyBool_Check(p)) return it.kind = Kind::Bool, it.b = p == Py_True, it;
  if (p == Py_None) return it.kind = Kind::None, it;
  if (p == Py_Ellipsis) return it.kind = Kind::Ellipsis, it;
  if (PySlice_Check(p)) return it.kind = Kind::Slice, it;
  if (PyLong_Check(p)) return it.i = py::cast<int64_t>(h), it;
  if (PyFloat_Check(p) || PyUnicode_Check(p) || PyBytes_Check(p) || PyComplex_Check(p)) bad_index(h);
  Tensor t;
  if (is_tensor(h)) t = to_tensor(h);
  else if (is_ndarray(h)) t = index_tensor_from_data(h);
  else if (PyIndex_Check(p)) return it.i = as_int(h), it;
  else if (PySequence_Check(p)) t = index_tensor_from_data(h);
  else bad_index(h);
  if (t->dim() == 0 && t->dtype != ScalarType::Bool && t->dtype != ScalarType::UInt8 &&
      is_integral(t->dtype, false))
    return it.i = to_scalar(py::cast(t)).to_int(), it;
  if (t->dim() == 0 && (t->dtype == ScalarType::Bool || t->dtype == ScalarType::UInt8))
    return it.kind = Kind::Bool, it.b = to_scalar(py::cast(t)).to_bool(), it;
  it.kind = Kind::Tensor;
  it.t = t;
  return it;
}

// PyTorch's legacy rule: a short list holding slices, lists, tensors, None or `...` is a tuple.
bool sequence_is_tuple(py::handle h) {
  PyObject* p = h.ptr();
  if (PyTuple_Check(p)) return true;
  if (!PyList_Check(p)) return false;
  const Py_ssize_t n = PyList_GET_SIZE(p);
  if (n >= 32) return false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* e = PyList_GET_ITEM(p, i);
    if (is_tensor(e) || PySequence_Check(e) || PySlice_Check(e) || e == Py_Ellipsis || e == Py_None)
      return !PyUnicode_Check(e);
  }
  return false;
}

struct Parsed {
  Tensor view;
  std::vector<Tensor> indices;  // empty: basic indexing only
};

Parsed parse_index(const Tensor& self, py::handle index) {
  std::vector<Item> items;
  PyObject* p = index.ptr();
  if (PyTuple_Check(p)) {
    for (auto e : py::reinterpret_borrow<py::tuple>(index)) items.push_back(to_item(e));
  } else if (!is_tensor(index) && sequence_is_tuple(index)) {
    warn("Using a non-tuple sequence for multidimensional indexing is deprecated; use "
         "x[tuple(seq)] instead of x[seq]. In a future release this will be interpreted as a "
         "tensor index, x[ember.tensor(seq)], which will result either in an error or a "
         "different result");
    for (auto e : py::reinterpret_borrow<py::list>(index)) items.push_back(to_item(e));
  } else {
    items.push_back(to_item(index));
  }
  int64_t specified = 0;
  for (auto& it : items) {
    if (it.kind == Kind::Int || it.kind == Kind::Slice) ++specified;
    else if (it.kind == Kind::Tensor)
      specified += (it.t->dtype == ScalarType::Bool || it.t->dtype == ScalarType::UInt8) ? it.t->dim() : 1;
  }
  EMBER_CHECK(specified <= self->dim(), IndexError, "too many indices for tensor of dimension ",
              self->dim());
  Parsed r;
  Tensor t = make_view(self, self->sizes, self->strides, self->offset);
  int64_t dim = 0, covered = 0;  // covered: view dims that r.indices spans (a mask spans k)
  auto record = [&](Tensor ix, int64_t k) {
    for (; covered < dim; ++covered) r.indices.push_back(nullptr);
    r.indices.push_back(std::move(ix));
    covered += k;
  };
  for (auto& it : items) {
    switch (it.kind) {
      case Kind::Int: t = select(t, dim, it.i); break;
      case Kind::Slice: {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(it.obj.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();
        EMBER_CHECK(step > 0, ValueError, "step must be greater than zero");
        EMBER_CHECK(dim < t->dim(), IndexError, "too many indices for tensor of dimension ",
                    self->dim());
        PySlice_AdjustIndices(t->sizes[dim], &start, &stop, step);
        t = slice(t, dim, start, std::max<int64_t>(start, stop), step);
        ++dim;
        break;
      }
      case Kind::Ellipsis: dim += self->dim() - specified; break;
      case Kind::None: t = unsqueeze(t, dim); ++dim; break;
      case Kind::Bool: {
        t = unsqueeze(t, dim);
        Tensor ix = empty({it.b ? 1 : 0}, ScalarType::Int64);
        if (it.b) ix->data_as<int64_t>()[0] = 0;
        record(ix, 1);
        ++dim;
        break;
      }
      case Kind::Tensor:
      {
        const int64_t k = (it.t->dtype == ScalarType::Bool || it.t->dtype == ScalarType::UInt8) ? it.t->dim() : 1;
        record(it.t, k);
        dim += k;
      }
        break;
    }
  }
  r.view = t;
  return r;
}

Tensor value_tensor(const Tensor& self, py::handle value) {
  if (is_tensor(value)) return to_tensor(value);
  if (is_number(value)) return scalar_tensor(to_scalar(value), self->dtype, true);
  return tensor_from_data(value, self->dtype);
}

}  // namespace

// The index tensors as a Python list (None for a dim left whole): the device ops' form.
py::list index_objects(const std::vector<Tensor>& indices) {
  py::list l;
  for (const auto& t : indices) l.append(t ? wrap(t) : py::none());
  return l;
}

bool any_on_device(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& other = nullptr) {
  if (on_device(self) || on_device(other)) return true;
  for (const auto& t : indices)
    if (on_device(t)) return true;
  return false;
}

Tensor apply_index(const Tensor& self, py::handle index) {
  Parsed p = parse_index(self, index);
  if (p.indices.empty()) return p.view;
  warn_byte_mask(p.indices);
  if (any_on_device(p.view, p.indices))
    return call_device("index", py::make_tuple(wrap(p.view), index_objects(p.indices)), py::dict())
        .cast<Tensor>();
  return ember::index(p.view, p.indices);
}

// torch deprecates a fill of an expanded tensor (elements sharing memory) with a warning, and
// fills it; an index_put_ that becomes a masked fill warns as both.
static void warn_expanded_fill(const Tensor& self, bool from_index_put) {
  if (!has_internal_overlap(*self)) return;
  if (from_index_put)
    warn("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
         "performing this operation. This also applies to advanced indexing e.g. "
         "tensor[indices] = tensor");
  warn("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before "
       "performing this operation. This also applies to advanced indexing e.g. "
       "tensor[mask] = scalar");
}

void apply_setitem(const Tensor& self, py::handle index, py::handle value) {
  Parsed p = parse_index(self, index);
  if (p.indices.empty()) {
    const Tensor& target = p.view;
    if (is_tensor(value)) copy_(target, to_tensor(value));
    else if (is_number(value)) fill_(target, to_scalar(value));
    else copy_(target, tensor_from_data(value, self->dtype));
    return;
  }
  warn_byte_mask(p.indices);
  Tensor v = value_tensor(self, value);
  if (any_on_device(p.view, p.indices, v)) {
    call_device("index_put_", py::make_tuple(wrap(p.view), index_objects(p.indices), wrap(v)),
                py::dict("accumulate"_a = false));
    return;
  }
  // x[mask] = scalar: one bool mask matching its dims is a masked_fill_ (no nonzero pass).
  int64_t at = -1, defined = 0;
  for (size_t i = 0; i < p.indices.size(); ++i)
    if (p.indices[i]) ++defined, at = static_cast<int64_t>(i);
  if (defined == 1 && v->dim() == 0 && v->dtype == self->dtype &&
      p.indices[at]->dtype == ScalarType::Bool) {
    const Tensor& mask = p.indices[at];
    const int64_t k = mask->dim(), nd = p.view->dim();
    bool match = at + k <= nd;
    for (int64_t j = 0; match && j < k; ++j) match = mask->sizes[j] == p.view->sizes[at + j];
    if (match) {
      Shape ms = mask->sizes;
      ms.resize(nd - at, 1);
      warn_expanded_fill(p.view, true);
      masked_fill_(p.view, reshape(mask, ms), to_scalar(py::cast(v)));
      return;
    }
  }
  index_put_(p.view, p.indices, v, false);
}

namespace {

// ---------------------------------------------------------------------------------------------
// argument helpers. The *_impl functions below get the arguments of a registered row, checked
// against its schema: tensors are tensors, dims are ints.

// `value` as the registry passed it: a number, or a tensor that must be 0-d.
Scalar fill_value(py::handle v, const char* op) {
  if (is_tensor(v)) {
    Tensor t = to_tensor(v);
    EMBER_CHECK(t->dim() == 0, std::runtime_error, op,
                " only supports a 0-dimensional value tensor, but got tensor with ", t->dim(),
                " dimension(s).");
  }
  return to_scalar(v);
}

std::vector<Tensor> index_list(py::handle h) {  // a tuple/list of tensors (checked by the registry)
  std::vector<Tensor> r;
  for (auto e : py::reinterpret_borrow<py::sequence>(h)) r.push_back(to_tensor(e));
  return r;
}

void check_bool_mask(const Tensor& mask, const std::string& msg) {
  if (mask->dtype != ScalarType::Bool) throw std::runtime_error(msg);
}

py::object self_obj(py::handle h) { return py::reinterpret_borrow<py::object>(h); }

// out= for ops whose out must have the input's dtype.
void check_out_same(const Tensor& out, const Tensor& x, const std::string& msg) {
  if (out && out->dtype != x->dtype) throw std::runtime_error(msg);
}

Tensor broadcast_clone(const Tensor& self, const Tensor& mask) {
  return clone(expand(self, broadcast_shapes(self->sizes, mask->sizes)));
}

// ---- index_put ----

// torch's index_put_ with one value and masks only is a masked_fill_ (its
// canDispatchToMaskedFill): the value's dtype is not checked, a uint8 mask is refused as
// masked_fill_ refuses it. Returns the mask, unsqueezed to self's dims, or null for the
// general path.
Tensor index_put_fill_mask(const Tensor& self, const std::vector<Tensor>& idx) {
  Tensor mask;
  int64_t at = 0;
  for (const auto& i : idx) {
    if ((i->dtype != ScalarType::Bool && i->dtype != ScalarType::UInt8) || mask) return nullptr;
    mask = i;
    for (int64_t j = 0; j < i->dim(); ++j) {
      const int64_t d = wrap_dim(at + j, self->dim(), /*allow_scalar=*/false);
      EMBER_CHECK(i->sizes[j] == self->sizes[d], IndexError, "The shape of the mask ",
                  shape_str(i->sizes), " at index ", j,
                  " does not match the shape of the indexed tensor ", shape_str(self->sizes),
                  " at index ", d);
    }
    at += i->dim();
  }
  if (!mask) return nullptr;
  check_bool_mask(mask, str_cat("masked_fill_ only supports boolean masks, but got mask with dtype ",
                                cpp_type_name(mask->dtype)));
  Shape ms = mask->sizes;
  ms.resize(self->dim(), 1);
  return reshape(mask, ms);
}

py::object index_put_impl(py::handle selfh, py::handle indicesh, py::handle valuesh,
                          bool accumulate, bool inplace) {
  const char* name = inplace ? "index_put_" : "index_put";
  Tensor self = to_tensor(selfh);
  std::vector<Tensor> idx = index_list(indicesh);
  Tensor values = to_tensor(valuesh);
  // torch counts the index tensors (a mask as one) before anything else.
  EMBER_CHECK(static_cast<int64_t>(idx.size()) <= self->dim(), IndexError,
              "too many indices for tensor of dimension ", self->dim(), " (got ", idx.size(), ")");
  const bool index_on_device = any_on_device(nullptr, idx);
  if (inplace ? (inplace_needs_grad(self, {values}) || index_on_device)
              : (needs_dispatch(self) || needs_dispatch(values) || index_on_device))
    return redispatch(name, core_fn(name), py::make_tuple(selfh, indicesh, valuesh),
                         py::dict("accumulate"_a = accumulate));
  warn_byte_mask(idx);
  Tensor mask = !accumulate && values->numel() == 1 ? index_put_fill_mask(self, idx) : nullptr;
  Tensor r = inplace ? self : clone(self);
  if (mask) warn_expanded_fill(r, true), masked_fill_(r, mask, to_scalar(valuesh));
  else index_put_(r, idx, values, accumulate);
  return inplace ? self_obj(selfh) : wrap(r);
}

// ---- scatter family and index_add / index_copy ----

// What the bindings of op(self, dim, index, src, ..., out=) share: the parsed arguments, whether
// the call goes to the hooks (autograd, a device) rather than the CPU kernel, and the tail that
// writes into self (in place), a clone of it, or out=.
struct IndexedWrite {
  const char* name;
  bool inplace;
  Tensor self, index, src;  // src: null for a number `value`
  int64_t dim;

  IndexedWrite(const char* op, bool inplace_, py::handle selfh, py::handle dimh, py::handle indexh)
      : name(op), inplace(inplace_) {
    self = to_tensor(selfh);
    dim = as_int(dimh);
    index = to_tensor(indexh);
  }
  bool hooked() const {
    return inplace ? inplace_needs_grad(self, {src, index})
                   : (needs_dispatch(self) || needs_dispatch(src) || on_device(index));
  }
  py::object redispatch(py::tuple args, py::dict kwargs, py::handle outh) const {
    if (!outh.is_none() && (needs_grad(self) || needs_grad(src))) out_with_grad(name);
    return redispatch_out(name, core_fn(name), args, kwargs, outh);
  }
  // kernel(target) writes into self in place, or into a clone then returned or copied to out=,
  // which must have self's dtype (torch's structured out=): checked after the kernel's own
  // checks, or before them where torch's are later (out_first: index_copy).
  template <typename Kernel>
  py::object run(py::handle selfh, py::handle outh, Kernel kernel, bool out_first = false) const {
    const bool has_out = !inplace && outh && !outh.is_none();
    if (has_out && out_first) check_out_dtype(expect_tensor(outh, name, "out"), self->dtype);
    Tensor target = inplace ? self : clone(self);
    kernel(target);
    if (inplace) return self_obj(selfh);
    if (has_out && !out_first) check_out_dtype(expect_tensor(outh, name, "out"), self->dtype);
    return finish(name, target, outh);
  }
};

py::object scatter_impl(py::handle selfh, py::handle dimh, py::handle indexh, py::handle srch,
                        py::handle valueh, py::handle reduceh, py::handle outh, bool inplace) {
  IndexedWrite w(inplace ? "scatter_" : "scatter", inplace, selfh, dimh, indexh);
  py::handle s = srch.is_none() ? valueh : srch;
  w.src = is_tensor(s) ? to_tensor(s) : nullptr;
  if (w.hooked())
    // reduce= only when given: the call the hook reruns must match one of the four forms
    return w.redispatch(py::make_tuple(selfh, w.dim, indexh, s),
                        reduceh.is_none() ? py::dict() : py::dict("reduce"_a = reduceh), outh);
  IndexReduce red = IndexReduce::None;
  if (!reduceh.is_none()) {
    (void)wrap_dim(w.dim, w.self->dim());  // torch checks dim before the reduce name
    red = parse_index_reduce(py::cast<std::string>(reduceh), true);
    if (w.src)
      warn("The reduce argument of ember.scatter with Tensor src is deprecated and will be "
           "removed in a future release. Use ember.scatter_reduce instead for more reduction "
           "options.");
  }
  Scalar v = w.src ? Scalar() : fill_value(s, w.name);
  return w.run(selfh, outh,
               [&](const Tensor& t) { scatter_(t, w.dim, w.index, w.src, v, red, "scatter"); });
}

py::object scatter_add_impl(py::handle selfh, py::handle dimh, py::handle indexh, py::handle srch,
                            py::handle outh, bool inplace) {
  IndexedWrite w(inplace ? "scatter_add_" : "scatter_add", inplace, selfh, dimh, indexh);
  w.src = to_tensor(srch);
  if (w.hooked()) return w.redispatch(py::make_tuple(selfh, w.dim, indexh, srch), py::dict(), outh);
  return w.run(selfh, outh, [&](const Tensor& t) {
    scatter_(t, w.dim, w.index, w.src, Scalar(), IndexReduce::Sum, "scatter_add");
  });
}

py::object scatter_reduce_impl(py::handle selfh, py::handle dimh, py::handle indexh, py::handle srch,
                               py::handle reduceh, bool include_self, py::handle outh, bool inplace) {
  IndexedWrite w(inplace ? "scatter_reduce_" : "scatter_reduce", inplace, selfh, dimh, indexh);
  w.src = to_tensor(srch);
  const std::string reduce = py::cast<std::string>(reduceh);
  if (w.hooked())
    return w.redispatch(py::make_tuple(selfh, w.dim, indexh, srch, reduce),
                        py::dict("include_self"_a = include_self), outh);
  (void)wrap_dim(w.dim, w.self->dim());  // torch checks dim before the reduce name
  IndexReduce red = parse_index_reduce(reduce, false);
  return w.run(selfh, outh, [&](const Tensor& t) {
    scatter_reduce_(t, w.dim, w.index, w.src, red, include_self);
  });
}

py::object index_add_impl(py::handle selfh, py::handle dimh, py::handle indexh, py::handle srch,
                          py::handle alphah, py::handle outh, bool inplace) {
  IndexedWrite w(inplace ? "index_add_" : "index_add", inplace, selfh, dimh, indexh);
  w.src = to_tensor(srch);
  if (w.hooked())
    return w.redispatch(py::make_tuple(selfh, w.dim, indexh, srch), py::dict("alpha"_a = alphah), outh);
  // torch's alpha.to<scalar_t>(): converted into the dtype, checked (a float alpha of an integer
  // tensor truncates: 1.5 adds the source once; a complex one needs a complex tensor)
  Scalar alpha = to_scalar(alphah);
  check_scalar_fits(alpha, w.self->dtype);
  if (is_integral(w.self->dtype, false) && alpha.is_float())
    alpha = Scalar::from_int(static_cast<int64_t>(alpha.to_double()));
  return w.run(selfh, outh, [&](const Tensor& t) { index_add_(t, w.dim, w.index, w.src, alpha); });
}

py::object index_copy_impl(py::handle selfh, py::handle dimh, py::handle indexh, py::handle srch,
                           py::handle outh, bool inplace) {
  IndexedWrite w(inplace ? "index_copy_" : "index_copy", inplace, selfh, dimh, indexh);
  w.src = to_tensor(srch);
  if (w.hooked()) return w.redispatch(py::make_tuple(selfh, w.dim, indexh, srch), py::dict(), outh);
  return w.run(selfh, outh, [&](const Tensor& t) { index_copy_(t, w.dim, w.index, w.src); },
               /*out_first=*/true);
}

py::object index_fill_impl(py::handle selfh, py::handle dimh, py::handle indexh, py::handle valueh,
                           bool inplace) {
  const char* name = inplace ? "index_fill_" : "index_fill";
  Tensor self = to_tensor(selfh);
  const int64_t dim = as_int(dimh);
  Tensor index = to_tensor(indexh);
  Tensor vt = is_tensor(valueh) ? to_tensor(valueh) : nullptr;
  if (inplace ? inplace_needs_grad(self, {vt, index})
              : (needs_dispatch(self) || needs_dispatch(vt) || on_device(index)))
    return redispatch(name, core_fn(name), py::make_tuple(selfh, dim, indexh, valueh), py::dict());
  Scalar v = fill_value(valueh, "index_fill_");
  Tensor target = inplace ? self : clone(self);
  index_fill_(target, dim, index, v);
  return inplace ? self_obj(selfh) : wrap(target);
}

// ---- masks ----

py::object masked_fill_impl(py::handle selfh, py::handle maskh, py::handle valueh, bool inplace) {
  const char* name = inplace ? "masked_fill_" : "masked_fill";
  Tensor self = to_tensor(selfh);
  Tensor mask = to_tensor(maskh);
  Tensor vt = is_tensor(valueh) ? to_tensor(valueh) : nullptr;
  if (inplace ? inplace_needs_grad(self, {vt, mask})
              : (needs_dispatch(self) || needs_dispatch(vt) || on_device(mask)))
    return redispatch(name, core_fn(name), py::make_tuple(selfh, maskh, valueh), py::dict());
  check_bool_mask(mask, str_cat("masked_fill_ only supports boolean masks, but got mask with dtype ",
                                cpp_type_name(mask->dtype)));
  Scalar v = fill_value(valueh, "masked_fill_");
  Tensor target = inplace ? self : broadcast_clone(self, mask);
  warn_expanded_fill(target, false);
  masked_fill_(target, mask, v);
  return inplace ? self_obj(selfh) : wrap(target);
}

py::object masked_select_impl(py::handle selfh, py::handle maskh, py::handle outh) {
  Tensor self = to_tensor(selfh);
  Tensor mask = to_tensor(maskh);
  if (needs_dispatch(self) || on_device(mask)) {
    if ((!outh.is_none()) && needs_grad(self)) out_with_grad("masked_select");
    return redispatch_out("masked_select", core_fn("masked_select"), py::make_tuple(selfh, maskh),
                         py::dict(), outh);
  }
  check_bool_mask(mask, "masked_select: expected BoolTensor for mask");
  check_out_same(opt_out(outh, "masked_select"), self,
                 "masked_select(): self and result must have the same scalar type");
  return finish("masked_select", masked_select(self, mask), outh);
}

py::object masked_scatter_impl(py::handle selfh, py::handle maskh, py::handle srch, bool inplace) {
  const char* name = inplace ? "masked_scatter_" : "masked_scatter";
  Tensor self = to_tensor(selfh);
  Tensor mask = to_tensor(maskh);
  Tensor src = to_tensor(srch);
  if (inplace ? inplace_needs_grad(self, {src, mask})
              : (needs_dispatch(self) || needs_dispatch(src) || on_device(mask)))
    return redispatch(name, core_fn(name), py::make_tuple(selfh, maskh, srch), py::dict());
  check_bool_mask(mask, str_cat("masked_scatter_ only supports boolean masks, but got mask with dtype ",
                                torch_type_name(mask->dtype)));
  EMBER_CHECK(self->dtype == src->dtype, std::runtime_error,
              "masked_scatter: expected self and source to have same dtypes but got",
              torch_type_name(self->dtype), " and ", torch_type_name(src->dtype));
  Tensor target = inplace ? self : broadcast_clone(self, mask);
  masked_scatter_(target, mask, src);
  return inplace ? self_obj(selfh) : wrap(target);
}

// ---- gathers ----

py::object index_select_impl(py::handle selfh, py::handle dimh, py::handle indexh, py::handle outh) {
  Tensor self = to_tensor(selfh);
  const int64_t dim = as_int(dimh);
  Tensor index = to_tensor(indexh);
  if (needs_dispatch(self) || on_device(index)) {
    if ((!outh.is_none()) && needs_grad(self)) out_with_grad("index_select");
    return redispatch_out("index_select", core_fn("index_select"), py::make_tuple(selfh, dim, indexh),
                         py::dict(), outh);
  }
  // the op's own checks (the index's rank first) before out='s dtype, as torch's order
  Tensor result = index_select(self, dim, index);
  check_out_same(opt_out(outh, "index_select"), self,
                 "index_select(): self and result must have the same scalar type");
  return finish("index_select", result, outh);
}

py::object gather_impl(py::handle selfh, py::handle dimh, py::handle indexh, bool sparse_grad,
                       py::handle outh) {
  Tensor self = to_tensor(selfh);
  const int64_t dim = as_int(dimh);
  Tensor index = to_tensor(indexh);
  if (needs_dispatch(self) || on_device(index)) {
    if ((!outh.is_none()) && needs_grad(self)) out_with_grad("gather");
    return redispatch_out("gather", core_fn("gather"), py::make_tuple(selfh, dim, indexh),
                         py::dict("sparse_grad"_a = sparse_grad), outh);
  }
  Tensor out = opt_out(outh, "gather");
  if (out) check_out_dtype(out, self->dtype);
  return finish("gather", gather(self, dim, index), outh);
}

py::object take_impl(py::handle selfh, py::handle indexh, py::handle outh) {
  Tensor self = to_tensor(selfh);
  Tensor index = to_tensor(indexh);
  if (needs_dispatch(self) || on_device(index)) {
    if ((!outh.is_none()) && needs_grad(self)) out_with_grad("take");
    return redispatch_out("take", core_fn("take"), py::make_tuple(selfh, indexh), py::dict(), outh);
  }
  Tensor out = opt_out(outh, "take");
  if (out && out->dtype != self->dtype)
    throw std::runtime_error(str_cat("take(): self and out expected to have the same dtype, but got "
                                     "self.dtype = ", torch_type_name(self->dtype),
                                     " and out.dtype = ", torch_type_name(out->dtype)));
  if (out) check_inplace_writable(out, "take");  // before out is resized, as torch's take_out
  return finish("take", take(self, index), outh);
}

py::object take_along_dim_impl(py::handle selfh, py::handle indicesh, py::handle dimh, py::handle outh) {
  Tensor self = to_tensor(selfh);
  Tensor indices = to_tensor(indicesh);
  auto dim = parse_opt_dim(dimh, "take_along_dim");
  if (needs_dispatch(self) || on_device(indices)) {
    if ((!outh.is_none()) && needs_grad(self)) out_with_grad("take_along_dim");
    return redispatch_out("take_along_dim", core_fn("take_along_dim"), py::make_tuple(selfh, indicesh),
                         py::dict("dim"_a = opt_dim_obj(dim)), outh);
  }
  Tensor result = take_along_dim(self, indices, dim);
  if (!outh.is_none())  // (torch's gather out=: exactly self's dtype, even for an empty result)
    check_out_dtype(expect_tensor(outh, "take_along_dim", "out"), self->dtype);
  return finish("take_along_dim", result, outh);
}

py::object nonzero_tuple(const Tensor& nz, int64_t ndim) {
  if (ndim == 0) return py::make_tuple(wrap(view(contiguous(narrow(view(nz, {nz->sizes[0], 1}), 1, 0, 1)), {-1})));
  py::tuple r(ndim);
  for (int64_t j = 0; j < ndim; ++j) r[j] = wrap(contiguous(select(nz, 1, j)));
  return std::move(r);
}

py::object nonzero_impl(py::handle selfh, py::handle outh, bool as_tuple) {
  Tensor self = to_tensor(selfh);
  EMBER_CHECK(!as_tuple || outh.is_none(), std::runtime_error,
              "nonzero does not support the out kwarg when as_tuple is True");
  if (on_device(self)) {
    if (!outh.is_none()) refuse_dispatched_out("nonzero", self);
    return call_device("nonzero", py::make_tuple(selfh), py::dict("as_tuple"_a = as_tuple));
  }
  Tensor nz = nonzero(self);
  if (as_tuple) {
    if (self->dim() == 0) {  // a 0-d input is read as 1-d
      Tensor z = empty({nz->sizes[0]}, ScalarType::Int64);
      if (nz->sizes[0]) z->data_as<int64_t>()[0] = 0;
      return py::make_tuple(wrap(z));
    }
    return nonzero_tuple(nz, self->dim());
  }
  Tensor out = opt_out(outh, "nonzero");
  if (out && out->dtype != ScalarType::Int64)
    throw std::runtime_error(str_cat("nonzero: Expected out tensor to have scalar type Long but got "
                                     "scalar type", torch_type_name(out->dtype)));
  return finish("nonzero", nz, outh);
}

}  // namespace

void register_indexing(py::module_& m) {
  const char* I = "indexing";

  // The getitem backward: self[index] += values, duplicates summed. By hand: `index` is any
  // index expression (ints, slices, None, `...`, tensors), which no schema type describes.
  m.def("_index_accumulate_", [](py::object selfh, py::handle index, const Tensor& values) {
    Tensor self = selfh.cast<Tensor>();
    Parsed p = parse_index(self, index);
    Tensor v = to_dtype(values, self->dtype);
    if (any_on_device(p.view, p.indices, v)) {
      call_device("index_put_", py::make_tuple(wrap(p.view), index_objects(p.indices), wrap(v)),
                  py::dict("accumulate"_a = true));
      return selfh;
    }
    if (p.indices.empty()) {
      Tensor r = binary(BinaryOp::add, Operand(p.view), Operand(v));
      copy_(p.view, r);
    } else {
      index_put_(p.view, p.indices, v, true);
    }
    return selfh;
  }, "input"_a, "index"_a, "values"_a);

  // Every row below hands its own calls to the hooks (hand_off = false): the autograd formulas
  // and ember.cuda read (input, dim, index, src/value) by position, dim as an int.
  for (bool inplace : {false, true}) {
    const std::string u = inplace ? "_" : "";
    // in-place forms take no out=; `kw_out` follows other keyword-only parameters
    const std::string out = inplace ? "" : ", *, Tensor? out=None";
    const std::string kw_out = inplace ? "" : ", Tensor? out=None";

    const std::string put = "index_put" + u;
    def_op(m, {.name = put,
               .signatures = {put + "(Tensor input, Tensor[] indices, Tensor values, "
                                    "bool accumulate=False) -> Tensor"},
               .family = I, .hooked = true, .hand_off = false,
               .impl = [inplace](const Args& a) {
                 return index_put_impl(a[0], a[1], a[2], a.flag(3), inplace);
               }});

    // scatter: torch's four forms (src a tensor or value a number; reduce= or not)
    const std::string sc = "scatter" + u;
    def_op(m, {.name = sc,
               .signatures = {sc + "(Tensor input, int dim, Tensor index, Tensor src" + out + ") -> Tensor",
                              sc + "(Tensor input, int dim, Tensor index, Tensor src, *, str reduce" +
                                  kw_out + ") -> Tensor",
                              sc + "(Tensor input, int dim, Tensor index, Scalar value" + out + ") -> Tensor",
                              sc + "(Tensor input, int dim, Tensor index, Scalar value, *, str reduce" +
                                  kw_out + ") -> Tensor"},
               .family = I, .hooked = true, .hand_off = false,
               .impl = [inplace](const Args& a) {
                 const py::handle none = py::none();
                 const bool with_tensor = a.overload() < 2, with_reduce = a.overload() % 2 == 1;
                 const py::handle reduce = with_reduce ? a[4] : none;
                 return scatter_impl(a[0], a[1], a[2], with_tensor ? a[3] : none,
                                     with_tensor ? none : a[3], reduce, a.out(), inplace);
               }});

    const std::string sa = "scatter_add" + u;
    def_op(m, {.name = sa,
               .signatures = {sa + "(Tensor input, int dim, Tensor index, Tensor src" + out + ") -> Tensor"},
               .family = I, .hooked = true, .hand_off = false,
               .impl = [inplace](const Args& a) {
                 return scatter_add_impl(a[0], a[1], a[2], a[3], a.out(), inplace);
               }});

    const std::string sr = "scatter_reduce" + u;
    def_op(m, {.name = sr,
               .signatures = {sr + "(Tensor input, int dim, Tensor index, Tensor src, str reduce, *, "
                                   "bool include_self=True" + kw_out + ") -> Tensor"},
               .family = I, .hooked = true, .hand_off = false,
               .impl = [inplace](const Args& a) {
                 return scatter_reduce_impl(a[0], a[1], a[2], a[3], a[4], a.flag(5), a.out(), inplace);
               }});

    const std::string ia = "index_add" + u;
    def_op(m, {.name = ia,
               .signatures = {ia + "(Tensor input, int dim, Tensor index, Tensor source, *, Scalar alpha=1" +
                                  kw_out + ") -> Tensor"},
               .family = I, .hooked = true, .hand_off = false,
               .impl = [inplace](const Args& a) {
                 return index_add_impl(a[0], a[1], a[2], a[3], a[4], a.out(), inplace);
               }});

    const std::string ic = "index_copy" + u;
    def_op(m, {.name = ic,
               .signatures = {ic + "(Tensor input, int dim, Tensor index, Tensor source" + out + ") -> Tensor"},
               .family = I, .hooked = true, .hand_off = false,
               .impl = [inplace](const Args& a) {
                 return index_copy_impl(a[0], a[1], a[2], a[3], a.out(), inplace);
               }});

    // index_fill / masked_fill: value a number or a tensor (torch's two overloads, the number's
    // first: the common call matches without a failed try; a 0-d tensor is a Scalar too)
    const std::string fi = "index_fill" + u;
    def_op(m, {.name = fi,
               .signatures = {fi + "(Tensor input, int dim, Tensor index, Scalar value) -> Tensor",
                              fi + "(Tensor input, int dim, Tensor index, Tensor value) -> Tensor"},
               .family = I, .hooked = true, .hand_off = false,
               .impl = [inplace](const Args& a) {
                 return index_fill_impl(a[0], a[1], a[2], a[3], inplace);
               }});

    const std::string mf = "masked_fill" + u;
    def_op(m, {.name = mf,
               .signatures = {mf + "(Tensor input, Tensor mask, Scalar value) -> Tensor",
                              mf + "(Tensor input, Tensor mask, Tensor value) -> Tensor"},
               .family = I, .hooked = true, .hand_off = false,
               .impl = [inplace](const Args& a) { return masked_fill_impl(a[0], a[1], a[2], inplace); }});

    const std::string ms = "masked_scatter" + u;
    def_op(m, {.name = ms,
               .signatures = {ms + "(Tensor input, Tensor mask, Tensor source) -> Tensor"},
               .family = I, .hooked = true, .hand_off = false,
               .impl = [inplace](const Args& a) {
                 return masked_scatter_impl(a[0], a[1], a[2], inplace);
               }});
  }

  // gathers
  def_op(m, {.name = "index_select",
             .signatures = {"index_select(Tensor input, int dim, Tensor index, *, "
                            "Tensor? out=None) -> Tensor"},
             .family = I, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) { return index_select_impl(a[0], a[1], a[2], a.out()); }});
  def_op(m, {.name = "gather",
             .signatures = {"gather(Tensor input, int dim, Tensor index, *, bool sparse_grad=False, "
                            "Tensor? out=None) -> Tensor"},
             .family = I, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) { return gather_impl(a[0], a[1], a[2], a.flag(3), a.out()); }});
  def_op(m, {.name = "take",
             .signatures = {"take(Tensor input, Tensor index, *, Tensor? out=None) -> Tensor"},
             .family = I, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) { return take_impl(a[0], a[1], a.out()); }});
  def_op(m, {.name = "take_along_dim",
             .signatures = {"take_along_dim(Tensor input, Tensor indices, int? dim=None, *, "
                            "Tensor? out=None) -> Tensor"},
             .family = I, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) { return take_along_dim_impl(a[0], a[1], a[2], a.out()); }});
  def_op(m, {.name = "masked_select",
             .signatures = {"masked_select(Tensor input, Tensor mask, *, Tensor? out=None) -> Tensor"},
             .family = I, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) { return masked_select_impl(a[0], a[1], a.out()); }});

  // nonzero / argwhere: not differentiable; a CUDA input goes to the device hook (by hand: the
  // device op takes as_tuple, and out= is refused there)
  def_op(m, {.name = "nonzero",
             .signatures = {"nonzero(Tensor input, *, Tensor? out=None, bool as_tuple=False) -> Tensor"},
             .family = I, .hand_off = false,
             .doc = "With as_tuple=True: a tuple of 1-d index tensors, one per dim.",
             .impl = [](const Args& a) { return nonzero_impl(a[0], a.out(), a.flag(2)); }});
  def_op(m, {.name = "argwhere",
             .signatures = {"argwhere(Tensor input) -> Tensor"},
             .family = I, .hand_off = false,
             .impl = [](const Args& a) { return nonzero_impl(a[0], py::none(), false); }});
  // where(condition) == nonzero(condition, as_tuple=True). By hand: an overload added to the
  // where(condition, input, other) that bind_ops.cpp binds.
  m.def("where", [](py::handle cond) {
    expect_tensor(cond, "where", "condition");
    return nonzero_impl(cond, py::none(), true);
  }, "condition"_a);
}

}  // namespace ember::pyb
