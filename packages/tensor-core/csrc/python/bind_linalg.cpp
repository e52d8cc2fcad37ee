// bind_linalg.cpp: the matrix products (ops/linalg.h) as registry rows (python/registry.h): the
// functions `ember.mm(input, mat2, *, out=None)` & co., the Tensor methods, the in-place forms
// (addmm_, ...) and, bound by hand, the `@` operator. The registry hands a call with an input that
// requires grad (or on a device) to the hooks: the tensors by position, beta/alpha by keyword.
#include "ops/fft.h"
#include "ops/linalg.h"
#include "python/pyutils.h"
#include "python/registry.h"

namespace ember::pyb {
namespace {


using ProductFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&);
using AddFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, Scalar, Scalar, const Tensor&);
using AddInplaceFn = void (*)(const Tensor&, const Tensor&, const Tensor&, Scalar, Scalar);

// Two-operand products: name, core function, name of the second argument (torch's).
struct Product {
  const char* name;
  ProductFn fn;
  const char* arg2;
};
const Product kProducts[] = {
    {"mm", &mm, "mat2"},         {"bmm", &bmm, "mat2"},       {"matmul", &matmul, "other"},
    {"mv", &mv, "vec"},          {"dot", &dot, "tensor"},     {"vdot", &vdot, "other"},
    {"inner", &inner, "other"},  {"outer", &outer, "vec2"},   {"ger", &outer, "vec2"},
};

// The CPU product, written into out= when given.
py::object run_product(const Product& p, const Tensor& a, const Tensor& b, py::handle outh) {
  Tensor out = opt_out(outh, p.name);
  if (!out) return wrap(p.fn(a, b, nullptr));
  check_out_no_grad(out, p.name);
  // outer and inner with a 0-d operand are torch's mul_out: an overlapping out refused, then
  // out resized with torch's warning (here: the core resizes it silently)
  const bool mul_out = p.fn == &outer ? a->dim() == 1 && b->dim() == 1
                       : p.fn == &inner && (a->dim() == 0 || b->dim() == 0);
  if (mul_out) {
    check_inplace_writable(out, p.name);
    resize_out(out, p.fn == &outer ? Shape{a->sizes[0], b->sizes[0]}
                                   : broadcast_shapes(a->sizes, b->sizes));
  }
  p.fn(a, b, out);
  return py::reinterpret_borrow<py::object>(outh);
}

// beta * input + alpha * product.
struct AddProduct {
  const char* name;
  AddFn fn;
  AddInplaceFn inplace;
  const char* arg1;
  const char* arg2;
};
const AddProduct kAddProducts[] = {
    {"addmm", &addmm, &addmm_, "mat1", "mat2"},
    {"addmv", &addmv, &addmv_, "mat", "vec"},
    {"baddbmm", &baddbmm, &baddbmm_, "batch1", "batch2"},
    {"addbmm", &addbmm, &addbmm_, "batch1", "batch2"},
};

// `a @ b`: the product, or NotImplemented for a non-tensor operand (Python then tries the other
// side); the hooks get it as matmul. PyTorch defines no in-place @=: Python falls back to a = a @ b.
py::object matmul_operator(py::handle a, py::handle b) {
  if (!is_tensor(a) || !is_tensor(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  Tensor ta = to_tensor(a), tb = to_tensor(b);
  if (needs_dispatch(ta) || needs_dispatch(tb))
    return redispatch("matmul", core_fn("matmul"),
                      py::make_tuple(a, b), py::dict());
  return wrap(matmul(ta, tb, nullptr));
}

}  // namespace

void register_linalg(py::module_& m) {
  for (const Product& p : kProducts) {
    const Product* pp = &p;
    def_op(m, {.name = p.name,
               .signatures = {str_cat(p.name, "(Tensor input, Tensor ", p.arg2,
                                      ", *, Tensor? out=None) -> Tensor")},
               .family = "linalg", .hooked = true,
               .impl = [pp](const Args& a) {
                 return run_product(*pp, a.tensor(0), a.tensor(1), a.out());
               }});
  }

  for (const AddProduct& p : kAddProducts) {
    const AddProduct* pp = &p;
    const std::string params = str_cat("(Tensor input, Tensor ", p.arg1, ", Tensor ", p.arg2,
                                       ", *, Scalar beta=1, Scalar alpha=1");
    def_op(m, {.name = p.name,
               .signatures = {p.name + params + ", Tensor? out=None) -> Tensor"},
               .family = "linalg", .hooked = true,
               .impl = [pp](const Args& a) {
                 Tensor out = opt_out(a.out(), pp->name);
                 check_out_no_grad(out, pp->name);
                 Tensor r = pp->fn(a.tensor(0), a.tensor(1), a.tensor(2), a.scalar(3), a.scalar(4),
                                   out);
                 return out ? py::reinterpret_borrow<py::object>(a.out()) : wrap(r);
               }});
    // ember.addmm_ too (torch has only the method): the autograd hook calls it by that name
    const std::string iname = std::string(p.name) + "_";
    def_op(m, {.name = iname,
               .signatures = {iname + params + ") -> Tensor"},
               .family = "linalg", .hooked = true,
               .impl = [pp](const Args& a) {
                 pp->inplace(a.tensor(0), a.tensor(1), a.tensor(2), a.scalar(3), a.scalar(4));
                 return py::reinterpret_borrow<py::object>(a[0]);
               }});
  }

  auto cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(tensor_type()));
  py::setattr(cls, "__matmul__", py::cpp_function(&matmul_operator, py::name("__matmul__"),
                                                  py::is_method(cls), py::is_operator()));
  py::setattr(cls, "__rmatmul__",
              py::cpp_function([](py::handle self, py::handle other) {
                return matmul_operator(other, self);
              }, py::name("__rmatmul__"), py::is_method(cls), py::is_operator()));
  for (const char* name : {"__matmul__", "__rmatmul__"})
    def_op(m, {.name = name, .signatures = {str_cat(name, "(Tensor input, Tensor other) -> Tensor")},
               .family = "linalg", .variants = kMethod, .hooked = true,
               .binding = "manual: bind_linalg.cpp: an operator, NotImplemented for a non-tensor"});

  // ---- FFT (ops/fft.h): ember.fft's kernel for complex transforms of power-of-two lengths ----
  def_op(m, {.name = "_fft_c2c",
             .signatures = {"_fft_c2c(Tensor self, int[] dim, int normalization, bool forward) "
                            "-> Tensor"},
             .family = "linalg", .variants = kFunction, .cuda = "none",
             .doc = "Power-of-two lengths only (NotImplementedError otherwise); normalization 0: "
                    "none, 1: 1/sqrt(n), 2: 1/n. Not differentiable here: ember.fft records its "
                    "own gradient.",
             .impl = [](const Args& a) {
               return wrap(fft_c2c_pow2(a.tensor(0), a.ints(1), a.integer(2), a.flag(3)));
             }});
  def_op(m, {.name = "_fft_r2c",
             .signatures = {"_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) "
                            "-> Tensor"},
             .family = "linalg", .variants = kFunction, .cuda = "none",
             .doc = "One-sided, the last dim, power-of-two lengths >= 2 only "
                    "(NotImplementedError otherwise); normalization as _fft_c2c's. Not "
                    "differentiable here: ember.fft records its own gradient.",
             .impl = [](const Args& a) {
               return wrap(fft_r2c_pow2(a.tensor(0), a.ints(1), a.integer(2), a.flag(3)));
             }});
  def_op(m, {.name = "_fft_c2r",
             .signatures = {"_fft_c2r(Tensor self, int[] dim, int normalization, "
                            "SymInt last_dim_size) -> Tensor"},
             .family = "linalg", .variants = kFunction, .cuda = "none",
             .doc = "The last dim, power-of-two last_dim_size >= 2 only (NotImplementedError "
                    "otherwise), last_dim_size / 2 + 1 points in; normalization as _fft_c2c's "
                    "inverse. Not differentiable here: ember.fft records its own gradient.",
             .impl = [](const Args& a) {
               return wrap(fft_c2r_pow2(a.tensor(0), a.ints(1), a.integer(2), a.integer(3)));
             }});
}

}  // namespace ember::pyb
