// bind_lapack.cpp: the LAPACK-backed primitives (ops/linalg_lapack.h) as private functions of
// ember._C (`_linalg_inv_ex`, `_linalg_svd`, ...), declared in the op registry
// (python/registry.h); ember/linalg.py builds the public torch.linalg-style API on them. Each
// takes its tensors positionally and its options (keyword-only where torch.linalg's are); the
// registry hands a call with an input that requires grad to the autograd hook, and one with a
// CUDA tensor to ember.cuda (which runs the same kernel on host copies), as
// hook("<name>", _C.<name>, (tensors...), {options}). Numerical failures raise
// ember._C._LinAlgError (a RuntimeError; ember.linalg.LinAlgError).
//
// These are ember's primitives, not torch's private ops of the same name: torch's `_linalg_det`,
// `_linalg_slogdet` and `_linalg_solve_ex` also return the LU factorization; `_linalg_eigh` and
// `_linalg_svd` take torch's parameters (svd's `driver` aside).
#include "ops/linalg_lapack.h"
#include "python/pyutils.h"
#include "python/registry.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {

// Runs `f` without the GIL (LAPACK can be long).
template <class F> auto nogil(F f) {
  GilRelease release;
  return f();
}

py::object tup(const std::pair<Tensor, Tensor>& p) { return py::make_tuple(wrap(p.first), wrap(p.second)); }

template <class... Ts> py::object tup(const std::tuple<Ts...>& t) {
  return std::apply([](const auto&... x) { return py::make_tuple(wrap(x)...); }, t);
}

// One primitive: differentiable (its formula is in autograd/_formulas_tensor.py), on CUDA through
// ember/cuda/_linalg_ops.py.
void def_primitive(py::module_& m, const std::string& signature, const std::string& doc,
                   std::function<py::object(const Args&)> impl) {
  def_op(m, {.name = signature.substr(0, signature.find('(')),
             .signatures = {signature},
             .family = "linalg", .variants = kFunction, .hooked = true,
             .doc = doc, .impl = std::move(impl)});
}

}  // namespace

void register_lapack(py::module_& m) {
  py::register_exception<LinAlgError>(m, "_LinAlgError", PyExc_RuntimeError);

  // out= of the Python-level linalg functions: PyTorch's rules (exact dtype, the result's device,
  // resize, no grad). A helper, not an op.
  m.def("_linalg_write_out", [](const std::string& op, py::handle rh, py::handle outh) {
    Tensor r = expect_tensor(rh, op.c_str(), "result"), out = expect_tensor(outh, op.c_str(), "out");
    check_out_dtype(out, r->dtype);
    check_out_device(op.c_str(), r, out);
    write_out(op.c_str(), r, out);
    return py::reinterpret_borrow<py::object>(outh);
  }, "op"_a, "result"_a, "out"_a);

  def_primitive(m, "_linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, Tensor info)",
                "", [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  const bool check = a.flag(1);
                  return tup(nogil([&] { return linalg_inv_ex(A, check); }));
                });
  def_primitive(m, "_linalg_det(Tensor A) -> Tensor", "The determinant alone (torch's also returns LU and pivots).",
                [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  return wrap(nogil([&] { return linalg_det(A); }));
                });
  def_primitive(m, "_linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)",
                "(sign, logabsdet) alone (torch's also returns LU and pivots).", [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  return tup(nogil([&] { return linalg_slogdet(A); }));
                });
  def_primitive(m, "_linalg_solve_ex(Tensor A, Tensor B, *, bool check_errors=False) -> (Tensor result, Tensor info)",
                "A X = B (ember.linalg.solve handles left=False and vector B; torch's also returns "
                "LU and pivots).",
                [](const Args& a) {
                  const Tensor A = a.tensor(0), B = a.tensor(1);
                  const bool check = a.flag(2);
                  return tup(nogil([&] { return linalg_solve_ex(A, B, check); }));
                });
  def_primitive(m, "_linalg_solve_triangular(Tensor A, Tensor B, *, bool upper, bool unitriangular=False) -> Tensor",
                "A X = B (ember.linalg.solve_triangular handles left=False).", [](const Args& a) {
                  const Tensor A = a.tensor(0), B = a.tensor(1);
                  const bool upper = a.flag(2), unit = a.flag(3);
                  return wrap(nogil([&] { return linalg_solve_triangular(A, B, upper, unit); }));
                });
  def_primitive(m, "_linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> "
                   "(Tensor LU, Tensor pivots, Tensor info)",
                "", [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  const bool pivot = a.flag(1), check = a.flag(2);
                  return tup(nogil([&] { return linalg_lu_factor_ex(A, pivot, check); }));
                });
  def_primitive(m, "_linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)", "",
                [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  const bool pivot = a.flag(1);
                  return tup(nogil([&] { return linalg_lu(A, pivot); }));
                });
  // pivots is among the tensors the hooks check: CUDA pivots with CPU LU and B get the
  // mixed-device error
  def_primitive(m, "_linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool adjoint=False) -> Tensor",
                "LU X = B (ember.linalg.lu_solve handles left=False).", [](const Args& a) {
                  const Tensor LU = a.tensor(0), P = a.tensor(1), B = a.tensor(2);
                  const bool adjoint = a.flag(3);
                  return wrap(nogil([&] { return linalg_lu_solve(LU, P, B, adjoint); }));
                });
  def_primitive(m, "_linalg_cholesky_ex(Tensor A, *, bool upper=False, bool check_errors=False) -> "
                   "(Tensor L, Tensor info)",
                "", [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  const bool upper = a.flag(1), check = a.flag(2);
                  return tup(nogil([&] { return linalg_cholesky_ex(A, upper, check); }));
                });
  def_primitive(m, "_cholesky_solve(Tensor B, Tensor L, *, bool upper=False) -> Tensor",
                "X with A X = B, A = L L^H (or U^H U): torch.cholesky_solve's kernel.",
                [](const Args& a) {
                  const Tensor B = a.tensor(0), L = a.tensor(1);
                  const bool upper = a.flag(2);
                  return wrap(nogil([&] { return cholesky_solve(B, L, upper); }));
                });
  def_primitive(m, "_linalg_qr(Tensor A, *, str mode='reduced') -> (Tensor Q, Tensor R)", "",
                [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  const std::string mode = a.str(1);
                  return tup(nogil([&] { return linalg_qr(A, mode); }));
                });
  def_primitive(m, "_linalg_ldl_factor_ex(Tensor A, *, bool hermitian=False, "
                   "bool check_errors=False) -> (Tensor LD, Tensor pivots, Tensor info)",
                "A = L D L^T (L D L^H with hermitian; LAPACK's sytrf / hetrf).",
                [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  const bool herm = a.flag(1), check = a.flag(2);
                  return tup(nogil([&] { return linalg_ldl_factor_ex(A, herm, check); }));
                });
  def_primitive(m, "_linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, "
                   "bool hermitian=False) -> Tensor",
                "X with A X = B from ldl_factor's factors (LAPACK's sytrs / hetrs).",
                [](const Args& a) {
                  const Tensor LD = a.tensor(0), piv = a.tensor(1), B = a.tensor(2);
                  const bool herm = a.flag(3);
                  return wrap(nogil([&] { return linalg_ldl_solve(LD, piv, B, herm); }));
                });
  def_primitive(m, "_ormqr(Tensor A, Tensor tau, Tensor C, bool left=True, bool transpose=False)"
                   " -> Tensor",
                "Q C (or C Q, Q^T ...) with Q from geqrf's reflectors (torch.ormqr's kernel).",
                [](const Args& a) {
                  const Tensor A = a.tensor(0), tau = a.tensor(1), C = a.tensor(2);
                  const bool left = a.flag(3), transpose = a.flag(4);
                  return wrap(nogil([&] { return ormqr(A, tau, C, left, transpose); }));
                });
  def_primitive(m, "_geqrf(Tensor A) -> (Tensor a, Tensor tau)",
                "LAPACK's packed QR (torch.geqrf's kernel).", [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  return tup(nogil([&] { return geqrf(A); }));
                });
  def_primitive(m, "_householder_product(Tensor A, Tensor tau) -> Tensor",
                "Q's first n columns from Householder reflectors (linalg.householder_product).",
                [](const Args& a) {
                  const Tensor A = a.tensor(0), tau = a.tensor(1);
                  return wrap(nogil([&] { return householder_product(A, tau); }));
                });
  def_primitive(m, "_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True) -> "
                   "(Tensor U, Tensor S, Tensor Vh)",
                "U and Vh are empty when compute_uv is False.", [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  const bool full = a.flag(1), uv = a.flag(2);
                  return tup(nogil([&] { return linalg_svd(A, full, uv); }));
                });
  def_primitive(m, "_linalg_eigh(Tensor A, str UPLO='L', bool compute_v=True) -> "
                   "(Tensor eigenvalues, Tensor eigenvectors)",
                "", [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  const std::string uplo = a.str(1);
                  const bool v = a.flag(2);
                  return tup(nogil([&] { return linalg_eigh(A, uplo, v); }));
                });
  def_primitive(m, "_linalg_eig(Tensor A, bool compute_v=True) -> "
                   "(Tensor eigenvalues, Tensor eigenvectors)",
                "Complex results; eigenvectors is empty when compute_v is False.",
                [](const Args& a) {
                  const Tensor A = a.tensor(0);
                  const bool v = a.flag(1);
                  return tup(nogil([&] { return linalg_eig(A, v); }));
                });
  def_primitive(m, "_linalg_lstsq(Tensor A, Tensor B, *, float? rcond=None, str driver='gelsy') -> "
                   "(Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)",
                "", [](const Args& a) {
                  const Tensor A = a.tensor(0), B = a.tensor(1);
                  const std::optional<double> rcond =
                      a.is_none(2) ? std::nullopt : std::optional<double>(a.real(2));
                  const std::string driver = a.str(3);
                  return tup(nogil([&] { return linalg_lstsq(A, B, rcond, driver); }));
                });
}

}  // namespace ember::pyb
