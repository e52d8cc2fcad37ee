// bind_linalg.cpp: Python bindings of the matrix products (ops/linalg.h): the functions
// `ember.mm(input, mat2, *, out=None)` & co., the Tensor methods, the in-place forms (addmm_, ...)
// and the `@` operator. A call with an input that requires grad goes to the autograd hook with the
// module-level function and canonical arguments.
#include "ops/linalg.h"
#include "python/pyutils.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {

py::module_* g_m = nullptr;

using ProductFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&);
using AddFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, Scalar, Scalar, const Tensor&);
using AddInplaceFn = void (*)(const Tensor&, const Tensor&, const Tensor&, Scalar, Scalar);

Tensor opt_out(py::handle out, const char* op) {
  return out.is_none() ? nullptr : expect_tensor(out, op, "out");
}

[[noreturn]] void out_grad_error(const char* name) {
  throw std::runtime_error(str_cat(name, "(): functions with out=... arguments don't support "
                                         "automatic differentiation, but one of the arguments "
                                         "requires grad."));
}

// Two-operand products: name, core function, name of the second argument.
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

py::object product_call(const Product& p, py::handle ah, py::handle bh, py::handle outh) {
  Tensor a = expect_tensor(ah, p.name, "input"), b = expect_tensor(bh, p.name, p.arg2);
  Tensor out = opt_out(outh, p.name);
  if (needs_dispatch(a) || needs_dispatch(b)) {
    if (out && (needs_grad(a) || needs_grad(b))) out_grad_error(p.name);
    return redispatch_out(p.name, g_m->attr(p.name), py::make_tuple(ah, bh), py::dict(), outh);
  }
  if (out) {
    check_out_no_grad(out, p.name);
    p.fn(a, b, out);
    return py::reinterpret_borrow<py::object>(outh);
  }
  return wrap(p.fn(a, b, nullptr));
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

py::dict scale_kwargs(py::handle beta, py::handle alpha) {
  return py::dict("beta"_a = beta, "alpha"_a = alpha);
}

py::object add_call(const AddProduct& p, py::handle ih, py::handle m1h, py::handle m2h,
                    py::handle beta, py::handle alpha, py::handle outh) {
  Tensor in = expect_tensor(ih, p.name, "input"), m1 = expect_tensor(m1h, p.name, p.arg1),
         m2 = expect_tensor(m2h, p.name, p.arg2);
  Tensor out = opt_out(outh, p.name);
  if (needs_dispatch(in) || needs_dispatch(m1) || needs_dispatch(m2)) {
    if (out && (needs_grad(in) || needs_grad(m1) || needs_grad(m2))) out_grad_error(p.name);
    return redispatch_out(p.name, g_m->attr(p.name), py::make_tuple(ih, m1h, m2h),
                          scale_kwargs(beta, alpha), outh);
  }
  Scalar b = to_scalar(beta), a = to_scalar(alpha);
  if (out) {
    check_out_no_grad(out, p.name);
    p.fn(in, m1, m2, b, a, out);
    return py::reinterpret_borrow<py::object>(outh);
  }
  return wrap(p.fn(in, m1, m2, b, a, nullptr));
}

py::object add_inplace_call(const AddProduct& p, py::handle selfh, py::handle m1h, py::handle m2h,
                            py::handle beta, py::handle alpha) {
  const std::string iname = std::string(p.name) + "_";
  Tensor self = expect_tensor(selfh, iname.c_str(), "self");
  Tensor m1 = expect_tensor(m1h, iname.c_str(), p.arg1), m2 = expect_tensor(m2h, iname.c_str(), p.arg2);
  if (((self->requires_grad || m1->requires_grad || m2->requires_grad) && grad_enabled()) ||
      on_device(self) || on_device(m1) || on_device(m2))
    return redispatch(iname.c_str(), g_m->attr(iname.c_str()), py::make_tuple(selfh, m1h, m2h),
                         scale_kwargs(beta, alpha));
  p.inplace(self, m1, m2, to_scalar(beta), to_scalar(alpha));
  return py::reinterpret_borrow<py::object>(selfh);
}

py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

}  // namespace

void register_linalg(py::module_& m) {
  g_m = new py::module_(m);  // leaked: the bindings outlive interpreter teardown
  auto cls = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(tensor_type()));
  auto defm = [&](const char* name, py::cpp_function f) { py::setattr(cls, name, f); };

  for (const Product& p : kProducts) {
    const Product* pp = &p;
    m.def(p.name, [pp](py::handle a, py::handle b, py::handle out) {
      return product_call(*pp, a, b, out);
    }, py::arg("input"), py::arg(p.arg2), py::kw_only(), py::arg("out") = py::none());
    defm(p.name, py::cpp_function([pp](py::handle self, py::handle b) {
      return product_call(*pp, self, b, py::none());
    }, py::name(p.name), py::is_method(cls), py::arg(p.arg2)));
  }

  for (const AddProduct& p : kAddProducts) {
    const AddProduct* pp = &p;
    const std::string iname = std::string(p.name) + "_";
    m.def(p.name, [pp](py::handle in, py::handle m1, py::handle m2, py::handle beta,
                       py::handle alpha, py::handle out) {
      return add_call(*pp, in, m1, m2, beta, alpha, out);
    }, py::arg("input"), py::arg(p.arg1), py::arg(p.arg2), py::kw_only(), py::arg("beta") = 1,
       py::arg("alpha") = 1, py::arg("out") = py::none());
    m.def(iname.c_str(), [pp](py::handle self, py::handle m1, py::handle m2, py::handle beta,
                              py::handle alpha) {
      return add_inplace_call(*pp, self, m1, m2, beta, alpha);
    }, py::arg("input"), py::arg(p.arg1), py::arg(p.arg2), py::kw_only(), py::arg("beta") = 1,
       py::arg("alpha") = 1);
    defm(p.name, py::cpp_function([pp](py::handle self, py::handle m1, py::handle m2,
                                       py::handle beta, py::handle alpha) {
      return add_call(*pp, self, m1, m2, beta, alpha, py::none());
    }, py::name(p.name), py::is_method(cls), py::arg(p.arg1), py::arg(p.arg2), py::kw_only(),
       py::arg("beta") = 1, py::arg("alpha") = 1));
    defm(iname.c_str(), py::cpp_function([pp](py::handle self, py::handle m1, py::handle m2,
                                              py::handle beta, py::handle alpha) {
      return add_inplace_call(*pp, self, m1, m2, beta, alpha);
    }, py::name(iname.c_str()), py::is_method(cls), py::arg(p.arg1), py::arg(p.arg2),
       py::kw_only(), py::arg("beta") = 1, py::arg("alpha") = 1));
  }

  // The @ operator (PyTorch defines no in-place @=; Python then falls back to a = a @ b).
  static const Product& matmul_p = kProducts[2];
  defm("__matmul__", py::cpp_function([](py::handle self, py::handle other) -> py::object {
    if (!is_tensor(other)) return not_implemented();
    return product_call(matmul_p, self, other, py::none());
  }, py::name("__matmul__"), py::is_method(cls), py::is_operator()));
  defm("__rmatmul__", py::cpp_function([](py::handle self, py::handle other) -> py::object {
    if (!is_tensor(other)) return not_implemented();
    return product_call(matmul_p, other, self, py::none());
  }, py::name("__rmatmul__"), py::is_method(cls), py::is_operator()));
}

}  // namespace ember::pyb
