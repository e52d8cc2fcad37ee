// linalg_lapack.h: the LAPACK-backed linear algebra primitives behind ember.linalg, with
// PyTorch's checks and messages. Python (ember/linalg.py) composes the public API over these:
// vector right-hand sides, batch broadcasting, left=False, norms, pinv, ... are done there.
//
// Layout: LAPACK is column-major. Each primitive copies its input into a fresh buffer holding
// every matrix of the batch in column-major order (one copy, also what makes the in-place
// routines safe for the caller's data), runs the routine per batch element, and returns views of
// the buffers with column-major strides in the last two dims: the same strides PyTorch's results
// have. Batch dims (any number, possibly empty) are flattened; A and B must share them exactly.
// Only float32 and float64 are supported (half precision and integers raise like PyTorch).
//
// Numerical failures (singular, not positive-definite) are reported through `info` (int32,
// batch-shaped) and, with check_errors, raised as LinAlgError (Python: ember.linalg.LinAlgError,
// a RuntimeError) naming the first failing batch element.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "core/tensor.h"

namespace ember {

struct LinAlgError : std::runtime_error { using std::runtime_error::runtime_error; };

// (inverse, info)
std::pair<Tensor, Tensor> linalg_inv_ex(const Tensor& A, bool check_errors);
Tensor linalg_det(const Tensor& A);
// (sign, logabsdet)
std::pair<Tensor, Tensor> linalg_slogdet(const Tensor& A);
// A (*, n, n), B (*, n, k) -> (X, info) with A X = B.
std::pair<Tensor, Tensor> linalg_solve_ex(const Tensor& A, const Tensor& B, bool check_errors);
// LU with partial pivoting of A (*, m, n): (LU, pivots (int32, 1-based, min(m, n) per matrix),
// info); with check_errors a zero U[i,i] raises. pivot=false is refused (as PyTorch on CPU).
std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex(const Tensor& A, bool pivot,
                                                       bool check_errors);
// (P, L, U) with A = P L U: L (*, m, k) unit lower, U (*, k, n) upper, k = min(m, n).
std::tuple<Tensor, Tensor, Tensor> linalg_lu(const Tensor& A, bool pivot);
// X with A X = B (A^T X = B with adjoint) from lu_factor's LU and pivots; B (*, n, k).
Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool adjoint);
// A (*, n, n) triangular (only the `upper` or lower triangle is read), B (*, n, k) -> X with
// A X = B; unitriangular: A's diagonal is taken as ones. A zero diagonal gives inf/nan (no error).
Tensor linalg_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool unitriangular);
// (L, info); with upper, the upper factor U (A = U^T U) from A's upper triangle.
std::pair<Tensor, Tensor> linalg_cholesky_ex(const Tensor& A, bool upper, bool check_errors);
// B (*, n, k), L (*, n, n) Cholesky factor -> X with A X = B.
Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper);
// mode: "reduced", "complete" or "r" (Q is then an empty tensor).
std::pair<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode);
// (LD, pivots, info): A = L D L^T (Bunch-Kaufman, LAPACK's sytrf on A's lower triangle); LD
// holds L below the diagonal and D's blocks, its strict upper triangle zeroed (torch's layout).
std::tuple<Tensor, Tensor, Tensor> linalg_ldl_factor_ex(const Tensor& A, bool hermitian,
                                                           bool check_errors);
// X with A X = B from ldl_factor's (LD, pivots); B (*, n, k), batches equal (broadcast in Python).
Tensor linalg_ldl_solve(const Tensor& LD, const Tensor& pivots, const Tensor& B,
                        bool hermitian);
// op(Q) C (left) or C op(Q), Q from geqrf's (A, tau), op = transpose or not (torch.ormqr).
Tensor ormqr(const Tensor& A, const Tensor& tau, const Tensor& C, bool left, bool transpose);
// LAPACK's packed QR: (a, tau) with R in a's upper triangle and the Householder reflectors
// below it (torch.geqrf).
std::pair<Tensor, Tensor> geqrf(const Tensor& A);
// The first n columns of the product of the reflectors (A's columns below the diagonal, scaled by
// tau): linalg.householder_product / orgqr. A (*, m, n) with m >= n >= tau's k.
Tensor householder_product(const Tensor& A, const Tensor& tau);
// (U, S, Vh); without compute_uv, U and Vh are empty tensors.
std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& A, bool full_matrices, bool compute_uv);
// (eigenvalues ascending, eigenvectors as columns); uplo "L" or "U".
std::pair<Tensor, Tensor> linalg_eigh(const Tensor& A, const std::string& uplo, bool compute_v);
// Eigenvalues and (compute_v) right eigenvectors of general square matrices, complex results
// (a real A is taken as complex: LAPACK's cgeev / zgeev).
std::pair<Tensor, Tensor> linalg_eig(const Tensor& A, bool compute_v);
// (solution, residuals, rank, singular_values); driver "gels", "gelsy", "gelsd" or "gelss".
std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_lstsq(const Tensor& A, const Tensor& B,
                                                        std::optional<double> rcond,
                                                        const std::string& driver);

}  // namespace ember
