// bind_lapack.cpp: Python bindings of the LAPACK-backed primitives (ops/linalg_lapack.h) as
// private functions of ember._C (`_linalg_inv_ex`, `_linalg_svd`, ...); ember/linalg.py builds
// the public torch.linalg-style API on them. Each primitive takes canonical arguments (tensors
// positional, options as keywords) and, when an input requires grad, goes to the autograd hook
// as redispatch("<name>", _C.<name>, (tensors...), {options}). Numerical failures raise
// ember._C._LinAlgError (a RuntimeError; ember.linalg.LinAlgError).
#include "ops/linalg_lapack.h"
#include "python/pyutils.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {

py::module_* g_m = nullptr;

// Runs `f` without the GIL (LAPACK can be long).
template <class F> auto nogil(F f) {
  GilRelease release;
  return f();
}

py::object tup(const std::pair<Tensor, Tensor>& p) { return py::make_tuple(wrap(p.first), wrap(p.second)); }

template <class... Ts> py::object tup(const std::tuple<Ts...>& t) {
  return std::apply([](const auto&... x) { return py::make_tuple(wrap(x)...); }, t);
}

// True when the call must leave the LAPACK kernels: to be recorded, or because a tensor is on a
// device (whose table refuses it: the kernels' host copy would silently return a CPU result).
bool any_grad(std::initializer_list<Tensor> ts) {
  for (const Tensor& t : ts)
    if (needs_dispatch(t)) return true;
  return false;
}

py::object hook(const char* name, py::tuple args, py::dict kwargs) {
  return redispatch(name, g_m->attr(name), std::move(args), std::move(kwargs));
}

}  // namespace

void register_lapack(py::module_& m) {
  g_m = new py::module_(m);  // leaked: the bindings outlive interpreter teardown
  py::register_exception<LinAlgError>(m, "_LinAlgError", PyExc_RuntimeError);

  // out= of the Python-level linalg functions: PyTorch's rules (exact dtype, the result's device,
  // resize, no grad).
  m.def("_linalg_write_out", [](const std::string& op, py::handle rh, py::handle outh) {
    Tensor r = expect_tensor(rh, op.c_str(), "result"), out = expect_tensor(outh, op.c_str(), "out");
    check_out_dtype(out, r->dtype);
    check_out_device(op.c_str(), r, out);
    write_out(op.c_str(), r, out);
    return py::reinterpret_borrow<py::object>(outh);
  }, "op"_a, "result"_a, "out"_a);

  m.def("_linalg_inv_ex", [](py::handle ah, bool check_errors) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.inv", "A");
    if (any_grad({A})) return hook("_linalg_inv_ex", py::make_tuple(ah), py::dict("check_errors"_a = check_errors));
    return tup(nogil([&] { return linalg_inv_ex(A, check_errors); }));
  }, "A"_a, py::kw_only(), "check_errors"_a = false);

  m.def("_linalg_det", [](py::handle ah) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.det", "A");
    if (any_grad({A})) return hook("_linalg_det", py::make_tuple(ah), py::dict());
    return wrap(nogil([&] { return linalg_det(A); }));
  }, "A"_a);

  m.def("_linalg_slogdet", [](py::handle ah) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.slogdet", "A");
    if (any_grad({A})) return hook("_linalg_slogdet", py::make_tuple(ah), py::dict());
    return tup(nogil([&] { return linalg_slogdet(A); }));
  }, "A"_a);

  m.def("_linalg_solve_ex", [](py::handle ah, py::handle bh, bool check_errors) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.solve", "A"), B = expect_tensor(bh, "linalg.solve", "B");
    if (any_grad({A, B}))
      return hook("_linalg_solve_ex", py::make_tuple(ah, bh), py::dict("check_errors"_a = check_errors));
    return tup(nogil([&] { return linalg_solve_ex(A, B, check_errors); }));
  }, "A"_a, "B"_a, py::kw_only(), "check_errors"_a = false);

  m.def("_linalg_solve_triangular", [](py::handle ah, py::handle bh, bool upper,
                                       bool unitriangular) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.solve_triangular", "A"),
           B = expect_tensor(bh, "linalg.solve_triangular", "B");
    if (any_grad({A, B}))
      return hook("_linalg_solve_triangular", py::make_tuple(ah, bh),
                  py::dict("upper"_a = upper, "unitriangular"_a = unitriangular));
    return wrap(nogil([&] { return linalg_solve_triangular(A, B, upper, unitriangular); }));
  }, "A"_a, "B"_a, py::kw_only(), "upper"_a, "unitriangular"_a = false);

  m.def("_linalg_lu_factor_ex", [](py::handle ah, bool pivot, bool check_errors) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.lu_factor", "A");
    if (any_grad({A}))
      return hook("_linalg_lu_factor_ex", py::make_tuple(ah),
                  py::dict("pivot"_a = pivot, "check_errors"_a = check_errors));
    return tup(nogil([&] { return linalg_lu_factor_ex(A, pivot, check_errors); }));
  }, "A"_a, py::kw_only(), "pivot"_a = true, "check_errors"_a = false);

  m.def("_linalg_lu", [](py::handle ah, bool pivot) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.lu", "A");
    if (any_grad({A})) return hook("_linalg_lu", py::make_tuple(ah), py::dict("pivot"_a = pivot));
    return tup(nogil([&] { return linalg_lu(A, pivot); }));
  }, "A"_a, py::kw_only(), "pivot"_a = true);

  m.def("_linalg_lu_solve", [](py::handle luh, py::handle ph, py::handle bh,
                               bool adjoint) -> py::object {
    Tensor LU = expect_tensor(luh, "linalg.lu_solve", "LU"),
           P = expect_tensor(ph, "linalg.lu_solve", "pivots"),
           B = expect_tensor(bh, "linalg.lu_solve", "B");
    if (any_grad({LU, P, B}))  // P too: CUDA pivots with CPU LU and B get the mixed-device error
      return hook("_linalg_lu_solve", py::make_tuple(luh, ph, bh), py::dict("adjoint"_a = adjoint));
    return wrap(nogil([&] { return linalg_lu_solve(LU, P, B, adjoint); }));
  }, "LU"_a, "pivots"_a, "B"_a, py::kw_only(), "adjoint"_a = false);

  m.def("_linalg_cholesky_ex", [](py::handle ah, bool upper, bool check_errors) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.cholesky", "A");
    if (any_grad({A}))
      return hook("_linalg_cholesky_ex", py::make_tuple(ah),
                  py::dict("upper"_a = upper, "check_errors"_a = check_errors));
    return tup(nogil([&] { return linalg_cholesky_ex(A, upper, check_errors); }));
  }, "A"_a, py::kw_only(), "upper"_a = false, "check_errors"_a = false);

  m.def("_cholesky_solve", [](py::handle bh, py::handle lh, bool upper) -> py::object {
    Tensor B = expect_tensor(bh, "cholesky_solve", "input"),
           L = expect_tensor(lh, "cholesky_solve", "input2");
    if (any_grad({B, L}))
      return hook("_cholesky_solve", py::make_tuple(bh, lh), py::dict("upper"_a = upper));
    return wrap(nogil([&] { return cholesky_solve(B, L, upper); }));
  }, "B"_a, "L"_a, py::kw_only(), "upper"_a = false);

  m.def("_linalg_qr", [](py::handle ah, const std::string& mode) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.qr", "A");
    if (any_grad({A})) return hook("_linalg_qr", py::make_tuple(ah), py::dict("mode"_a = mode));
    return tup(nogil([&] { return linalg_qr(A, mode); }));
  }, "A"_a, py::kw_only(), "mode"_a = "reduced");

  m.def("_linalg_svd", [](py::handle ah, bool full_matrices, bool compute_uv) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.svd", "A");
    if (any_grad({A}))
      return hook("_linalg_svd", py::make_tuple(ah),
                  py::dict("full_matrices"_a = full_matrices, "compute_uv"_a = compute_uv));
    return tup(nogil([&] { return linalg_svd(A, full_matrices, compute_uv); }));
  }, "A"_a, py::kw_only(), "full_matrices"_a = true, "compute_uv"_a = true);

  m.def("_linalg_eigh", [](py::handle ah, const std::string& uplo, bool compute_v) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.eigh", "A");
    if (any_grad({A}))
      return hook("_linalg_eigh", py::make_tuple(ah), py::dict("UPLO"_a = uplo, "compute_v"_a = compute_v));
    return tup(nogil([&] { return linalg_eigh(A, uplo, compute_v); }));
  }, "A"_a, py::kw_only(), "UPLO"_a = "L", "compute_v"_a = true);

  m.def("_linalg_lstsq", [](py::handle ah, py::handle bh, std::optional<double> rcond,
                            const std::string& driver) -> py::object {
    Tensor A = expect_tensor(ah, "linalg.lstsq", "A"), B = expect_tensor(bh, "linalg.lstsq", "B");
    if (any_grad({A, B}))
      return hook("_linalg_lstsq", py::make_tuple(ah, bh),
                  py::dict("rcond"_a = rcond ? py::object(py::float_(*rcond)) : py::object(py::none()),
                           "driver"_a = driver));
    return tup(nogil([&] { return linalg_lstsq(A, B, rcond, driver); }));
  }, "A"_a, "B"_a, py::kw_only(), "rcond"_a = py::none(), "driver"_a = "gelsy");
}

}  // namespace ember::pyb
