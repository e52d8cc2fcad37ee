// linalg_lapack.cpp: see linalg_lapack.h. Every primitive follows one pattern: check (PyTorch's
// messages), copy the input into a column-major buffer (colmajor_copy), loop over the batch calling
// the LAPACK routine (runtime/lapack.h) on each matrix, collect `info`, return column-major views.
#include "ops/linalg_lapack.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "runtime/blas.h"
#include "runtime/lapack.h"
#include "runtime/parallel.h"

namespace ember {
namespace {

using lapack::lapack_int;

template <class F> decltype(auto) dispatch_lapack(ScalarType t, F&& f) {
  if (t == ScalarType::Float32) return f(float{});
  return f(double{});
}
// Most primitives also run on complex matrices (cgetrf, zpotrf, ...); slogdet's real-only
// kernel uses dispatch_lapack.
template <class F> decltype(auto) dispatch_lapack_all(ScalarType t, F&& f) {
  if (t == ScalarType::Complex64) return f(std::complex<float>{});
  if (t == ScalarType::Complex128) return f(std::complex<double>{});
  return dispatch_lapack(t, std::forward<F>(f));
}

// The primitives whose float16/bfloat16 refusal is torch's NotImplementedError naming its
// kernel; the others (inv, slogdet, lstsq, ...) raise RuntimeError, as torch's do.
const char* low_precision_kernel(const char* op) {
  static const std::pair<const char*, const char*> kernels[] = {
      {"linalg.det", "lu_cpu"},           {"linalg.solve", "lu_cpu"},
      {"linalg.lu_factor", "lu_cpu"},     {"linalg.lu", "lu_cpu"},
      {"linalg.cholesky", "cholesky_cpu"}, {"linalg.qr", "geqrf_cpu"},
      {"linalg.svd", "linalg_svd_cpu"},   {"linalg.eigh", "linalg_eigh_cpu"},
      {"linalg.solve_triangular", "triangular_solve_cpu"}};
  for (const auto& [name, kernel] : kernels)
    if (std::strcmp(name, op) == 0) return kernel;
  return nullptr;
}

void check_dtype(const Tensor& A, const char* op) {
  // torch's geqrf checks no dtype itself: every type but the four LAPACK ones is its kernel's
  // refusal (integers too)
  if (std::strcmp(op, "geqrf") == 0 && A->dtype != ScalarType::Float32 &&
      A->dtype != ScalarType::Float64 && !is_complex(A->dtype))
    throw NotImplementedError(
        str_cat("\"geqrf_cpu\" not implemented for '", torch_type_name(A->dtype), "'"));
  if (A->dtype == ScalarType::Float16 || A->dtype == ScalarType::BFloat16) {
    if (const char* kernel = low_precision_kernel(op))
      throw NotImplementedError(
          str_cat("\"", kernel, "\" not implemented for '", torch_type_name(A->dtype), "'"));
    throw std::runtime_error(
        str_cat(op, ": Low precision dtypes not supported. Got ", torch_type_name(A->dtype)));
  }
  EMBER_CHECK(is_floating(A->dtype) || is_complex(A->dtype), std::runtime_error, op,
              ": Expected a floating point or complex tensor as input. Got ",
              torch_type_name(A->dtype));
}

void check_matrix(const Tensor& A, const char* op) {
  EMBER_CHECK(A->dim() >= 2, std::runtime_error, op,
              ": The input tensor A must have at least 2 dimensions.");
  check_dtype(A, op);
  constexpr int64_t kMax = std::numeric_limits<lapack_int>::max();
  EMBER_CHECK(A->sizes[A->dim() - 1] <= kMax && A->sizes[A->dim() - 2] <= kMax, std::runtime_error,
              op, ": matrix dimensions too large for the 32-bit LAPACK (", shape_str(A->sizes), ")");
}

// The number of right-hand sides must fit LAPACK's 32-bit integers too.
void check_columns(const Tensor& B, const char* op) {
  EMBER_CHECK(B->sizes.back() <= std::numeric_limits<lapack_int>::max(), std::runtime_error, op,
              ": too many columns for the 32-bit LAPACK (", shape_str(B->sizes), ")");
}

void check_square(const Tensor& A, const char* op) {
  check_matrix(A, op);
  const int64_t r = A->sizes[A->dim() - 2], c = A->sizes[A->dim() - 1];
  EMBER_CHECK(r == c, std::runtime_error, op,
              ": A must be batches of square matrices, but they are ", r, " by ", c, " matrices");
}

Shape batch_of(const Tensor& A) { return Shape(A->sizes.begin(), A->sizes.end() - 2); }

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

void check_same_batch(const Tensor& A, const Tensor& B, const char* op) {
  EMBER_CHECK(batch_of(A) == batch_of(B), std::runtime_error, op,
              ": A and B must have the same batch dimensions, but got ", shape_str(A->sizes),
              " and ", shape_str(B->sizes));
}

// A fresh contiguous buffer of shape (..., n, m) holding each m x n matrix of A column-major.
Tensor colmajor_copy(const Tensor& A) {
  Shape s = A->sizes;
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  Tensor buf = empty(s, A->dtype);
  if (buf->numel() != 0) copy_(buf, transpose(A, A->dim() - 1, A->dim() - 2));
  return buf;
}

Tensor colmajor_zeros(const Shape& batch, int64_t rows, int64_t cols, ScalarType dt) {
  Tensor buf = empty(with(batch, {cols, rows}), dt);
  if (buf->numel() != 0) fill_(buf, Scalar::from_double(0.0));
  return buf;
}

// The (..., rows, cols) view of a column-major buffer (..., cols, rows).
Tensor colmajor_view(const Tensor& buf) { return transpose(buf, buf->dim() - 1, buf->dim() - 2); }

Tensor info_tensor(const Shape& batch, const std::vector<lapack_int>& info) {
  Tensor t = empty(batch, ScalarType::Int32);
  std::copy(info.begin(), info.end(), t->data_as<int32_t>());
  return t;
}

lapack_int ld(int64_t n) { return static_cast<lapack_int>(std::max<int64_t>(1, n)); }

// Raises LinAlgError for the first batch element with info > 0; `what(info)` says what failed.
template <class F>
void raise_first(const char* op, const std::vector<lapack_int>& info, bool batched, F what) {
  for (size_t b = 0; b < info.size(); ++b) {
    if (info[b] <= 0) continue;
    std::string prefix = str_cat(op, ": ");
    if (batched) prefix += str_cat("(Batch element ", b, "): ");
    throw LinAlgError(prefix + what(info[b]));
  }
}

// Runs f(b) for every matrix b of a batch. OpenBLAS is held to one thread meanwhile: LAPACK makes
// many small BLAS calls, and OpenBLAS's thread hand-off per call costs more than it gains (a
// 512 x 512 QR ran 10-90x slower threaded on a busy 2-core machine); the batch is spread over
// ember's pool instead. `flops` estimates the work per matrix, to keep tiny batches inline.
template <class F> void for_each_matrix(int64_t nb, int64_t flops, const F& f) {
  if (nb == 0) return;
  blas::SingleThreaded single;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(flops, 1));
  parallel_for(0, nb, grain, [&](int64_t s, int64_t e) {
    for (int64_t b = s; b < e; ++b) f(b);
  });
}

int64_t cube(int64_t m, int64_t n) { return m * n * std::max<int64_t>(std::min(m, n), 1); }

// The checks of a square system A X = B (A named `a_name`: "A", or "LU" for lu_solve), in torch's
// order and words; returns (n, k), the size of A and the number of right-hand sides.
std::pair<int64_t, int64_t> check_linear_system(const Tensor& A, const Tensor& B, const char* op,
                                                const char* a_name = "A") {
  check_square(A, op);
  EMBER_CHECK(B->dim() >= 2, std::runtime_error, op,
              ": The input tensor B must have at least 2 dimensions.");
  EMBER_CHECK(A->dtype == B->dtype, std::runtime_error, op, ": Expected ", a_name,
              " and B to have the same dtype, but found ", a_name, " of type ",
              torch_type_name(A->dtype), " and B of type ", torch_type_name(B->dtype), " instead");
  check_columns(B, op);
  const int64_t n = A->sizes.back(), k = B->sizes.back();
  EMBER_CHECK(B->sizes[B->dim() - 2] == n, std::runtime_error, op,
              ": Incompatible shapes of A and B for the equation AX = B (", n, "x", n, " and ",
              B->sizes[B->dim() - 2], "x", k, ")");
  check_same_batch(A, B, op);
  return {n, k};
}

void check_argument_info(const char* op, const char* routine, lapack_int info) {
  EMBER_CHECK(info >= 0, std::runtime_error, op, ": LAPACK ", routine,
              " rejected argument ", -info, " (internal error)");
}

}  // namespace

std::pair<Tensor, Tensor> linalg_inv_ex(const Tensor& A, bool check_errors) {
  const char* op = "linalg.inv";
  check_square(A, op);
  const Shape batch = batch_of(A);
  const int64_t n = A->sizes.back(), nb = count(batch);
  Tensor buf = colmajor_copy(A);
  std::vector<lapack_int> info(nb, 0);
  if (n > 0) {
    dispatch_lapack_all(A->dtype, [&](auto tag) {
      using T = decltype(tag);
      for_each_matrix(nb, cube(n, n), [&](int64_t b) {
        std::vector<lapack_int> ipiv(n);
        T* a = buf->data_as<T>() + b * n * n;
        info[b] = lapack::getrf<T>(n, n, a, ld(n), ipiv.data());
        if (info[b] == 0) info[b] = lapack::getri<T>(n, a, ld(n), ipiv.data());
        check_argument_info(op, "getrf/getri", info[b]);
      });
    });
  }
  if (check_errors)
    raise_first(op, info, !batch.empty(), [](lapack_int i) {
      return str_cat("The diagonal element ", i,
                     " is zero, the inversion could not be completed because the input matrix "
                     "is singular.");
    });
  return {colmajor_view(buf), info_tensor(batch, info)};
}

namespace {
// LU-factors each matrix of A; calls f(b, lu, ipiv, n) per batch element.
template <class T, class F> void lu_each(const Tensor& A, const char* op, F f) {
  const int64_t n = A->sizes.back(), nb = count(batch_of(A));
  Tensor buf = colmajor_copy(A);
  for_each_matrix(nb, cube(n, n), [&](int64_t b) {
    std::vector<lapack_int> ipiv(std::max<int64_t>(n, 1));
    T* a = buf->data_as<T>() + b * n * n;
    if (n > 0) check_argument_info(op, "getrf", lapack::getrf<T>(n, n, a, ld(n), ipiv.data()));
    f(b, a, ipiv.data(), n);
  });
}
}  // namespace

Tensor linalg_det(const Tensor& A) {
  const char* op = "linalg.det";
  check_square(A, op);
  Tensor out = empty(batch_of(A), A->dtype);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = out->data_as<T>();
    lu_each<T>(A, op, [&](int64_t b, const T* lu, const lapack_int* ipiv, int64_t n) {
      T d = T(1);
      for (int64_t i = 0; i < n; ++i) {
        d *= lu[i * n + i];
        if (ipiv[i] != i + 1) d = -d;
      }
      o[b] = d;
    });
  });
  return out;
}

std::pair<Tensor, Tensor> linalg_slogdet(const Tensor& A) {
  const char* op = "linalg.slogdet";
  check_square(A, op);
  if (is_complex(A->dtype)) {  // sign: the product of the pivots' phases; logabsdet real
    Tensor sign = empty(batch_of(A), A->dtype),
           logabs = empty(batch_of(A), to_real_type(A->dtype));
    dispatch_lapack_all(A->dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_complex_v<T>) {
        using R = typename T::value_type;
        T* s = sign->data_as<T>();
        R* l = logabs->data_as<R>();
        lu_each<T>(A, op, [&](int64_t b, const T* lu, const lapack_int* ipiv, int64_t n) {
          std::complex<double> sg = 1;
          double acc = 0;
          for (int64_t i = 0; i < n; ++i) {
            const std::complex<double> d(lu[i * n + i]);
            const double r = std::abs(d);
            sg = r == 0 ? 0 : sg * (d / r);
            if (ipiv[i] != i + 1) sg = -sg;
            acc += std::log(r);
          }
          s[b] = T(sg);
          l[b] = static_cast<R>(acc);
        });
      }
    });
    return {sign, logabs};
  }
  Tensor sign = empty(batch_of(A), A->dtype), logabs = empty(batch_of(A), A->dtype);
  dispatch_lapack(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    T* s = sign->data_as<T>();
    T* l = logabs->data_as<T>();
    lu_each<T>(A, op, [&](int64_t b, const T* lu, const lapack_int* ipiv, int64_t n) {
      T sg = T(1);
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) {
        const T d = lu[i * n + i];
        if (d < 0) sg = -sg;
        if (d == 0) sg = T(0);
        if (ipiv[i] != i + 1) sg = -sg;
        acc += std::log(std::abs(static_cast<double>(d)));
      }
      s[b] = sg;
      l[b] = static_cast<T>(acc);
    });
  });
  return {sign, logabs};
}

std::pair<Tensor, Tensor> linalg_solve_ex(const Tensor& A, const Tensor& B, bool check_errors) {
  const char* op = "linalg.solve";
  int64_t n, k;
  std::tie(n, k) = check_linear_system(A, B, op);  // (lambdas cannot capture structured bindings)
  const Shape batch = batch_of(A);
  const int64_t nb = count(batch);
  Tensor a = colmajor_copy(A), x = colmajor_copy(B);
  std::vector<lapack_int> info(nb, 0);
  if (n > 0) {
    dispatch_lapack_all(A->dtype, [&](auto tag) {
      using T = decltype(tag);
      for_each_matrix(nb, cube(n, n) + n * n * k, [&](int64_t b) {
        std::vector<lapack_int> ipiv(n);
        T* ap = a->data_as<T>() + b * n * n;
        info[b] = lapack::getrf<T>(n, n, ap, ld(n), ipiv.data());
        check_argument_info(op, "getrf", info[b]);
        if (info[b] == 0 && k > 0)
          check_argument_info(op, "getrs", lapack::getrs<T>('N', n, k, ap, ld(n), ipiv.data(),
                                                            x->data_as<T>() + b * n * k, ld(n)));
      });
    });
  }
  if (check_errors)
    raise_first(op, info, !batch.empty(), [](lapack_int) {
      return std::string("The solver failed because the input matrix is singular.");
    });
  return {colmajor_view(x), info_tensor(batch, info)};
}

Tensor linalg_solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool unitriangular) {
  const char* op = "linalg.solve_triangular";
  int64_t n, k;
  std::tie(n, k) = check_linear_system(A, B, op);  // (lambdas cannot capture structured bindings)
  const int64_t nb = count(batch_of(A));
  Tensor a = colmajor_copy(A), x = colmajor_copy(B);
  if (n > 0 && k > 0) {
    dispatch_lapack_all(A->dtype, [&](auto tag) {
      using T = decltype(tag);
      for_each_matrix(nb, n * n * k, [&](int64_t b) {
        lapack::trsm<T>(upper ? 'U' : 'L', 'N', unitriangular ? 'U' : 'N', n, k, T(1),
                        a->data_as<T>() + b * n * n, ld(n), x->data_as<T>() + b * n * k, ld(n));
      });
    });
  }
  return colmajor_view(x);
}

namespace {
// getrf on a column-major copy of A: (LU buffer, pivots, info).
std::tuple<Tensor, Tensor, std::vector<lapack_int>> lu_factor_impl(const Tensor& A, bool pivot,
                                                                    const char* op) {
  EMBER_CHECK(pivot, std::runtime_error, op, ": LU without pivoting is not implemented on the CPU");
  check_matrix(A, op);
  const int64_t m = A->sizes[A->dim() - 2], n = A->sizes.back(), k = std::min(m, n);
  const int64_t nb = count(batch_of(A));
  Tensor lu = colmajor_copy(A);
  Tensor piv = empty(with(batch_of(A), {k}), ScalarType::Int32);
  std::vector<lapack_int> info(nb, 0);
  if (k > 0) {
    dispatch_lapack_all(A->dtype, [&](auto tag) {
      using T = decltype(tag);
      for_each_matrix(nb, cube(m, n), [&](int64_t b) {
        info[b] = lapack::getrf<T>(m, n, lu->data_as<T>() + b * m * n, ld(m),
                                   piv->data_as<int32_t>() + b * k);
        check_argument_info(op, "getrf", info[b]);
      });
    });
  }
  return {lu, piv, info};
}
}  // namespace

std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex(const Tensor& A, bool pivot,
                                                       bool check_errors) {
  const char* op = "linalg.lu_factor";
  auto [lu, piv, info] = lu_factor_impl(A, pivot, op);
  if (check_errors)
    raise_first(op, info, A->dim() > 2, [](lapack_int i) {
      return str_cat("U[", i, ",", i, "] is zero and using it on lu_solve would result in a "
                     "division by zero. If you still want to perform the factorization, consider "
                     "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
    });
  return {colmajor_view(lu), piv, info_tensor(batch_of(A), info)};
}

std::tuple<Tensor, Tensor, Tensor> linalg_lu(const Tensor& A, bool pivot) {
  const char* op = "linalg.lu";
  auto [lu, piv, info] = lu_factor_impl(A, pivot, op);
  const Shape batch = batch_of(A);
  const int64_t m = A->sizes[A->dim() - 2], n = A->sizes.back(), k = std::min(m, n);
  const int64_t nb = count(batch);
  Tensor P = empty(with(batch, {m, m}), A->dtype), L = empty(with(batch, {m, k}), A->dtype),
         U = empty(with(batch, {k, n}), A->dtype);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t b = 0; b < nb; ++b) {
      const T* f = lu->data_as<T>() + b * m * n;  // column-major m x n
      T* p = P->data_as<T>() + b * m * m;
      T* l = L->data_as<T>() + b * m * k;
      T* u = U->data_as<T>() + b * k * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j)
          l[i * k + j] = i == j ? T(1) : i > j ? f[j * m + i] : T(0);
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < n; ++j) u[i * n + j] = i <= j ? f[j * m + i] : T(0);
      // Row i of L U is row perm[i] of A: P[perm[i], i] = 1.
      std::vector<int64_t> perm(m);
      for (int64_t i = 0; i < m; ++i) perm[i] = i;
      const int32_t* ip = piv->data_as<int32_t>() + b * k;
      for (int64_t i = 0; i < k; ++i) std::swap(perm[i], perm[ip[i] - 1]);
      std::fill(p, p + m * m, T(0));
      for (int64_t i = 0; i < m; ++i) p[perm[i] * m + i] = T(1);
    }
  });
  return {P, L, U};
}

namespace {

// LAPACK's pivots of a factor (*, n, n): int32, shaped (*, n).
void check_pivots(const Tensor& pivots, const Tensor& factor, int64_t n, const char* op,
                  const char* factor_name) {
  EMBER_CHECK(pivots->dtype == ScalarType::Int32, std::runtime_error, op,
              ": pivots should be a Tensor of scalar type int32");
  EMBER_CHECK(pivots->dim() == factor->dim() - 1 && pivots->sizes.back() == n &&
                  Shape(pivots->sizes.begin(), pivots->sizes.end() - 1) == batch_of(factor),
              std::runtime_error, op, ": Incompatible shapes of ", factor_name, " ",
              shape_str(factor->sizes), " and pivots ", shape_str(pivots->sizes));
}

}  // namespace

Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool adjoint) {
  const char* op = "linalg.lu_solve";
  int64_t n, k;
  std::tie(n, k) = check_linear_system(LU, B, op, "LU");
  check_pivots(pivots, LU, n, op, "LU");
  const int64_t nb = count(batch_of(LU));
  Tensor lu = colmajor_copy(LU), x = colmajor_copy(B), piv = contiguous(pivots);
  const int32_t* pv = piv->data_as<int32_t>();
  for (int64_t i = 0; i < nb * n; ++i)
    EMBER_CHECK(pv[i] >= 1 && pv[i] <= n, std::runtime_error, op, ": pivots must lie in [1, ", n,
                "], got ", pv[i]);
  if (n > 0 && k > 0) {
    dispatch_lapack_all(LU->dtype, [&](auto tag) {
      using T = decltype(tag);
      for_each_matrix(nb, n * n * k, [&](int64_t b) {
        // the adjoint of a complex factor is its conjugate transpose
        const char trans = !adjoint ? 'N' : is_complex_v<T> ? 'C' : 'T';
        check_argument_info(op, "getrs", lapack::getrs<T>(trans, n, k,
                                                          lu->data_as<T>() + b * n * n, ld(n),
                                                          pv + b * n,
                                                          x->data_as<T>() + b * n * k, ld(n)));
      });
    });
  }
  return colmajor_view(x);
}

namespace {
// Zeroes the triangle of each column-major n x n matrix that a factor does not use.
template <class T> void zero_triangle(T* a, int64_t n, bool keep_upper) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i)
      if (keep_upper ? i > j : i < j) a[j * n + i] = T(0);
}
}  // namespace

std::pair<Tensor, Tensor> linalg_cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  const char* op = "linalg.cholesky";
  check_square(A, op);
  const Shape batch = batch_of(A);
  const int64_t n = A->sizes.back(), nb = count(batch);
  Tensor buf = colmajor_copy(A);
  std::vector<lapack_int> info(nb, 0);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    for_each_matrix(nb, cube(n, n), [&](int64_t b) {
      T* a = buf->data_as<T>() + b * n * n;
      info[b] = lapack::potrf<T>(upper ? 'U' : 'L', n, a, ld(n));
      check_argument_info(op, "potrf", info[b]);
      // (reference LAPACK stops at a NaN pivot as at a non-positive one; OpenBLAS's potrf
      // carries it on: its first NaN on the diagonal is that order)
      for (int64_t j = 0; info[b] == 0 && j < n; ++j)
        if (std::isnan(std::real(a[j * n + j]))) info[b] = static_cast<lapack_int>(j + 1);
      zero_triangle(a, n, upper);
    });
  });
  if (check_errors)
    raise_first(op, info, !batch.empty(), [](lapack_int i) {
      return str_cat("The factorization could not be completed because the input is not "
                     "positive-definite (the leading minor of order ", i,
                     " is not positive-definite).");
    });
  return {colmajor_view(buf), info_tensor(batch, info)};
}

Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper) {
  const char* op = "cholesky_solve";
  check_square(L, op);
  EMBER_CHECK(B->dim() >= 2, std::runtime_error, op,
              ": b should have at least 2 dimensions, but has ", B->dim(), " dimensions instead");
  EMBER_CHECK(B->dtype == L->dtype, std::runtime_error,
              "Expected b and A to have the same dtype, but found b of type ",
              torch_type_name(B->dtype), " and A of type ", torch_type_name(L->dtype), " instead.");
  check_columns(B, op);
  const int64_t n = L->sizes.back(), k = B->sizes.back();
  EMBER_CHECK(B->sizes[B->dim() - 2] == n, std::runtime_error,
              "Incompatible matrix sizes for cholesky_solve: each A matrix is ", n, " by ", n,
              " but each b matrix is ", B->sizes[B->dim() - 2], " by ", k);
  check_same_batch(L, B, op);
  const int64_t nb = count(batch_of(L));
  Tensor l = colmajor_copy(L), x = colmajor_copy(B);
  if (n > 0 && k > 0) {
    dispatch_lapack_all(L->dtype, [&](auto tag) {
      using T = decltype(tag);
      for_each_matrix(nb, n * n * k, [&](int64_t b) {
        check_argument_info(op, "potrs", lapack::potrs<T>(upper ? 'U' : 'L', n, k,
                                                          l->data_as<T>() + b * n * n, ld(n),
                                                          x->data_as<T>() + b * n * k, ld(n)));
      });
    });
  }
  return colmajor_view(x);
}

std::pair<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode) {
  const char* op = "linalg.qr";
  EMBER_CHECK(mode == "reduced" || mode == "complete" || mode == "r", std::runtime_error,
              "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  check_matrix(A, op);
  const Shape batch = batch_of(A);
  const int64_t m = A->sizes[A->dim() - 2], n = A->sizes.back(), k = std::min(m, n);
  const int64_t nb = count(batch);
  const bool want_q = mode != "r", complete = mode == "complete";
  const int64_t rrows = complete ? m : k, qcols = complete ? m : k;
  Tensor a = colmajor_copy(A);
  Tensor r = colmajor_zeros(batch, rrows, n, A->dtype);
  Tensor q = want_q ? empty(with(batch, {qcols, m}), A->dtype) : empty({0}, A->dtype);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    for_each_matrix(nb, cube(m, n), [&](int64_t b) {
      std::vector<T> tau(std::max<int64_t>(k, 1));
      T* ap = a->data_as<T>() + b * m * n;
      if (k > 0) check_argument_info(op, "geqrf", lapack::geqrf<T>(m, n, ap, ld(m), tau.data()));
      T* rp = r->data_as<T>() + b * rrows * n;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i <= std::min(j, rrows - 1); ++i) rp[j * rrows + i] = ap[j * m + i];
      if (!want_q || m == 0 || qcols == 0) return;
      T* qp = q->data_as<T>() + b * m * qcols;
      std::copy(ap, ap + m * std::min(n, qcols), qp);
      check_argument_info(op, "orgqr", lapack::orgqr<T>(m, qcols, k, qp, ld(m), tau.data()));
    });
  });
  return {want_q ? colmajor_view(q) : q, colmajor_view(r)};
}

std::tuple<Tensor, Tensor, Tensor> linalg_ldl_factor_ex(const Tensor& A, bool hermitian,
                                                           bool check_errors) {
  const char* op = "torch.linalg.ldl_factor_ex";
  check_square(A, op);
  const Shape batch = batch_of(A);
  const int64_t n = A->sizes.back(), nb = count(batch);
  Tensor a = colmajor_copy(A);  // A is symmetric: its lower triangle is read
  Tensor piv = empty(with(batch, {n}), ScalarType::Int32);
  std::vector<lapack_int> info(nb, 0);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    for_each_matrix(nb, cube(n, n), [&](int64_t b) {
      T* ap = a->data_as<T>() + b * n * n;
      if (n > 0) info[b] = lapack::sytrf<T>('L', n, ap, ld(n), piv->data_as<int32_t>() + b * n,
                                                 hermitian);
      check_argument_info(op, "sytrf", info[b]);
      for (int64_t j = 0; j < n; ++j)  // torch's LD: the strict upper triangle zeroed
        for (int64_t i = 0; i < j; ++i) ap[j * n + i] = T(0);
    });
  });
  if (check_errors)
    raise_first(op, info, !batch.empty(), [](lapack_int i) {
      return str_cat("The factorization could not be completed because the input is not "
                     "invertible: D[", i - 1, ",", i - 1, "] is exactly zero.");
    });
  return {colmajor_view(a), piv, info_tensor(batch, info)};
}

Tensor linalg_ldl_solve(const Tensor& LD, const Tensor& pivots, const Tensor& B,
                        bool hermitian) {
  const char* op = "torch.linalg.ldl_solve";
  int64_t n, k;
  std::tie(n, k) = check_linear_system(LD, B, op, "LD");
  check_pivots(pivots, LD, n, op, "LD");
  const int64_t nb = count(batch_of(LD));
  Tensor ld_ = colmajor_copy(LD), x = colmajor_copy(B), piv = contiguous(pivots);
  const int32_t* pv = piv->data_as<int32_t>();
  // LAPACK reads rows |pivot| (and a 2 x 2 block's second row): check them before it does
  for (int64_t b = 0; b < nb; ++b) {
    const int32_t* p = pv + b * n;
    for (int64_t i = 0; i < n;) {
      const int32_t v = p[i];
      EMBER_CHECK(v != 0 && (v > 0 ? v : -int64_t(v)) <= n, std::runtime_error, op,
                  ": pivots must lie in [-", n, ", -1] or [1, ", n, "], got ", v);
      if (v > 0) {
        ++i;
        continue;
      }
      EMBER_CHECK(i + 1 < n && p[i + 1] == v, std::runtime_error, op,
                  ": a negative pivot (a 2 x 2 block of D) must repeat in the next entry, got ",
                  v, " at ", i);
      i += 2;
    }
  }
  if (n > 0 && k > 0) {
    dispatch_lapack_all(LD->dtype, [&](auto tag) {
      using T = decltype(tag);
      for_each_matrix(nb, n * n * k, [&](int64_t b) {
        check_argument_info(op, "sytrs", lapack::sytrs<T>('L', n, k, ld_->data_as<T>() + b * n * n,
                                                          ld(n), pv + b * n,
                                                          x->data_as<T>() + b * n * k, ld(n),
                                                          hermitian));
      });
    });
  }
  return colmajor_view(x);
}

Tensor ormqr(const Tensor& A, const Tensor& tau, const Tensor& C, bool left, bool transpose) {
  const char* op = "torch.ormqr";
  check_matrix(A, op);
  check_matrix(C, op);
  EMBER_CHECK(C->dtype == A->dtype && tau->dtype == A->dtype, std::runtime_error, op,
              ": Expected input, tau and other to have the same dtype, but got ",
              dtype_name(A->dtype), ", ", dtype_name(tau->dtype), " and ", dtype_name(C->dtype));
  EMBER_CHECK(tau->dim() == A->dim() - 1, std::runtime_error, op,
              ": input must have one more dimension than tau");
  const Shape batch = batch_of(A);
  EMBER_CHECK(batch_of(C) == batch && Shape(tau->sizes.begin(), tau->sizes.end() - 1) == batch,
              std::runtime_error, op, ": Expected batch dimensions of other and tau to be equal to "
              "input.shape[:-2], but got ", shape_str(C->sizes), " and ", shape_str(tau->sizes));
  const int64_t ar = A->sizes[A->dim() - 2], ac = A->sizes.back(), k = tau->sizes.back();
  const int64_t m = C->sizes[C->dim() - 2], n = C->sizes.back();
  const int64_t q = left ? m : n;  // Q is q x q
  EMBER_CHECK(ar == q, std::runtime_error, op, left ? ": other.shape[-2]" : ": other.shape[-1]",
              " must be equal to input.shape[-2]");
  EMBER_CHECK(k == std::min(q, ac), std::runtime_error, op, ": tau.shape[-1] must be equal to "
              "min(", left ? "other.shape[-2]" : "other.shape[-1]", ", input.shape[-1])");
  const int64_t nb = count(batch);
  Tensor a = colmajor_copy(A), c = colmajor_copy(C), t = contiguous(tau);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    for_each_matrix(nb, m * n * std::max<int64_t>(k, 1), [&](int64_t b) {
      if (m == 0 || n == 0 || k == 0) return;
      // torch's transpose of a complex Q is its conjugate transpose
      const char trans = !transpose ? 'N' : is_complex_v<T> ? 'C' : 'T';
      check_argument_info(op, "ormqr", lapack::ormqr<T>(left ? 'L' : 'R', trans, m, n, k,
                                                        a->data_as<T>() + b * ar * ac, ld(ar),
                                                        t->data_as<T>() + b * k,
                                                        c->data_as<T>() + b * m * n, ld(m)));
    });
  });
  return colmajor_view(c);
}

std::pair<Tensor, Tensor> geqrf(const Tensor& A) {
  const char* op = "geqrf";
  check_matrix(A, op);
  const Shape batch = batch_of(A);
  const int64_t m = A->sizes[A->dim() - 2], n = A->sizes.back(), k = std::min(m, n);
  const int64_t nb = count(batch);
  Tensor a = colmajor_copy(A);
  Tensor tau = empty(with(batch, {k}), A->dtype);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    for_each_matrix(nb, cube(m, n), [&](int64_t b) {
      if (k > 0)
        check_argument_info(op, "geqrf", lapack::geqrf<T>(m, n, a->data_as<T>() + b * m * n, ld(m),
                                                          tau->data_as<T>() + b * k));
    });
  });
  return {colmajor_view(a), tau};
}

Tensor householder_product(const Tensor& A, const Tensor& tau) {
  const char* op = "torch.linalg.householder_product";
  check_matrix(A, op);
  const int64_t m = A->sizes[A->dim() - 2], n = A->sizes.back();
  EMBER_CHECK(m >= n, std::runtime_error, op,
              ": input.shape[-2] must be greater than or equal to input.shape[-1]");
  EMBER_CHECK(tau->dim() == A->dim() - 1, std::runtime_error, op,
              ": input must have one more dimension than tau");
  const int64_t k = tau->dim() ? tau->sizes.back() : 0;
  EMBER_CHECK(n >= k, std::runtime_error, op,
              ": input.shape[-1] must be greater than or equal to tau.shape[-1]");
  const Shape batch = batch_of(A);
  EMBER_CHECK(Shape(tau->sizes.begin(), tau->sizes.end() - 1) == batch, std::runtime_error, op,
              ": Expected batch dimensions of tau to be equal to input.shape[:-2], but got ",
              shape_str(Shape(tau->sizes.begin(), tau->sizes.end() - 1)));
  EMBER_CHECK(tau->dtype == A->dtype, std::runtime_error, op,
              ": tau dtype ", dtype_name(tau->dtype), " does not match input dtype ",
              dtype_name(A->dtype));
  const int64_t nb = count(batch);
  Tensor q = colmajor_copy(A);
  const Tensor t = contiguous(tau);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    for_each_matrix(nb, cube(m, n), [&](int64_t b) {
      if (m == 0 || n == 0) return;
      check_argument_info(op, "orgqr", lapack::orgqr<T>(m, n, k, q->data_as<T>() + b * m * n,
                                                        ld(m), t->data_as<T>() + b * k));
    });
  });
  return colmajor_view(q);
}

std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& A, bool full_matrices,
                                              bool compute_uv) {
  const char* op = "linalg.svd";
  check_matrix(A, op);
  const Shape batch = batch_of(A);
  const int64_t m = A->sizes[A->dim() - 2], n = A->sizes.back(), k = std::min(m, n);
  const int64_t nb = count(batch);
  const bool full = full_matrices && compute_uv;
  const int64_t ucols = full ? m : k, vrows = full ? n : k;
  Tensor a = colmajor_copy(A);
  Tensor s = empty(with(batch, {k}), to_real_type(A->dtype));  // real for complex A too
  Tensor u = compute_uv ? colmajor_zeros(batch, m, ucols, A->dtype) : empty({0}, A->dtype);
  Tensor vt = compute_uv ? colmajor_zeros(batch, vrows, n, A->dtype) : empty({0}, A->dtype);
  const char jobz = !compute_uv ? 'N' : full ? 'A' : 'S';
  std::vector<lapack_int> info(nb, 0);  // kNonFinite: gesdd refused NaN/inf input
  constexpr lapack_int kNonFinite = std::numeric_limits<lapack_int>::min();
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    for_each_matrix(nb, cube(m, n), [&](int64_t b) {
      T dummy[1] = {T(0)};
      T* up = compute_uv ? u->data_as<T>() + b * m * ucols : dummy;
      T* vp = compute_uv ? vt->data_as<T>() + b * vrows * n : dummy;
      if (k == 0) {  // nothing to factor: full U / V^T are identities
        if (compute_uv) {
          for (int64_t i = 0; i < std::min(m, ucols); ++i) up[i * m + i] = T(1);
          for (int64_t i = 0; i < std::min(n, vrows); ++i) vp[i * vrows + i] = T(1);
        }
        return;
      }
      const T* src = a->data_as<T>() + b * m * n;
      if constexpr (is_complex_v<T>) {
        using R = typename T::value_type;
        info[b] = lapack::gesdd_complex<T, R>(jobz, m, n, a->data_as<T>() + b * m * n, ld(m),
                                              s->data_as<R>() + b * k, up, ld(m), vp, ld(vrows));
      } else {
        info[b] = lapack::gesdd<T>(jobz, m, n, a->data_as<T>() + b * m * n, ld(m),
                                   s->data_as<T>() + b * k, up, ld(m), vp, ld(vrows));
      }
      if (info[b] < 0) {  // newer LAPACKs refuse non-finite input (A is then untouched)
        bool finite = true;
        for (int64_t i = 0; i < m * n && finite; ++i)
          finite = std::isfinite(std::real(src[i])) && std::isfinite(std::imag(src[i]));
        check_argument_info(op, "gesdd", finite ? info[b] : 0);
        info[b] = kNonFinite;
      }
    });
  });
  for (int64_t b = 0; b < nb; ++b) {
    const std::string where = batch.empty() ? "" : str_cat("(Batch element ", b, "): ");
    if (info[b] == kNonFinite)
      throw LinAlgError(str_cat(op, ": ", where,
                                "The algorithm failed to converge because the input matrix "
                                "contained non-finite values."));
    if (info[b] > 0)
      throw LinAlgError(str_cat(op, ": ", where,
                                "The algorithm failed to converge because the input matrix is "
                                "ill-conditioned or has too many repeated singular values "
                                "(error code: ", info[b], ")."));
  }
  if (!compute_uv) return {u, s, vt};
  return {colmajor_view(u), s, colmajor_view(vt)};
}

std::pair<Tensor, Tensor> linalg_eigh(const Tensor& A, const std::string& uplo, bool compute_v) {
  const char* op = "linalg.eigh";
  EMBER_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u", std::runtime_error,
              "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  check_square(A, op);
  const Shape batch = batch_of(A);
  const int64_t n = A->sizes.back(), nb = count(batch);
  Tensor a = colmajor_copy(A);
  Tensor w = empty(with(batch, {n}), to_real_type(A->dtype));  // real for Hermitian A too
  std::vector<lapack_int> info(nb, 0);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    if (n == 0) return;
    const char jobz = compute_v ? 'V' : 'N', lo = static_cast<char>(std::toupper(uplo[0]));
    for_each_matrix(nb, cube(n, n), [&](int64_t b) {
      T* ap = a->data_as<T>() + b * n * n;
      if constexpr (is_complex_v<T>) {
        using R = typename T::value_type;
        info[b] = lapack::heevd<T, R>(jobz, lo, n, ap, ld(n), w->data_as<R>() + b * n);
      } else {
        info[b] = lapack::syevd<T>(jobz, lo, n, ap, ld(n), w->data_as<T>() + b * n);
      }
      check_argument_info(op, "syevd", info[b]);
    });
  });
  raise_first(op, info, !batch.empty(), [](lapack_int i) {
    return str_cat("The algorithm failed to converge because the input matrix is ill-conditioned "
                   "or has too many repeated eigenvalues (error code: ", i, ").");
  });
  return {w, compute_v ? colmajor_view(a) : empty({0}, A->dtype)};
}

std::pair<Tensor, Tensor> linalg_eig(const Tensor& A, bool compute_v) {
  const char* op = "linalg.eig";
  check_square(A, op);
  const Shape batch = batch_of(A);
  const int64_t n = A->sizes.back(), nb = count(batch);
  const ScalarType ct = to_complex_type(A->dtype);
  Tensor a = colmajor_copy(A);
  const Tensor finite = all(unary(UnaryOp::isfinite, a), OptDims{}, false);
  EMBER_CHECK(*finite->data_as<bool>(), std::runtime_error, op,
              ": input tensor should not contain infs or NaNs.");
  Tensor w = empty(with(batch, {n}), ct);
  Tensor v = compute_v ? colmajor_zeros(batch, n, n, ct) : empty({0}, ct);
  std::vector<lapack_int> info(nb, 0);
  if (n > 0) {
    dispatch_lapack_all(A->dtype, [&](auto tag) {
      using T = decltype(tag);
      for_each_matrix(nb, cube(n, n), [&](int64_t b) {
        T* ab = a->data_as<T>() + b * n * n;
        if constexpr (is_complex_v<T>) {  // cgeev / zgeev straight into the results
          T dummy = 0;
          info[b] = lapack::geev<T>(compute_v ? 'V' : 'N', n, ab, ld(n), w->data_as<T>() + b * n,
                                    compute_v ? v->data_as<T>() + b * n * n : &dummy, ld(n));
        } else {  // sgeev / dgeev: real eigenvalues exactly real, pairs exactly conjugate
          using C = std::complex<T>;
          std::vector<T> wr(n), wi(n), vr(compute_v ? n * n : 1);
          info[b] = lapack::geev_real<T>(compute_v ? 'V' : 'N', n, ab, ld(n), wr.data(),
                                         wi.data(), vr.data(), ld(n));
          C* wo = reinterpret_cast<C*>(w->data_as<C>()) + b * n;
          for (int64_t j = 0; j < n; ++j) wo[j] = C(wr[j], wi[j]);
          if (compute_v && info[b] == 0) {
            C* vo = v->data_as<C>() + b * n * n;  // column-major
            for (int64_t j = 0; j < n; ++j) {
              if (wi[j] != 0 && j + 1 < n) {  // a pair: columns j and j + 1
                for (int64_t i = 0; i < n; ++i) {
                  vo[j * n + i] = C(vr[j * n + i], vr[(j + 1) * n + i]);
                  vo[(j + 1) * n + i] = C(vr[j * n + i], -vr[(j + 1) * n + i]);
                }
                ++j;
              } else {
                for (int64_t i = 0; i < n; ++i) vo[j * n + i] = C(vr[j * n + i], 0);
              }
            }
          }
        }
        check_argument_info(op, "geev", info[b]);
      });
    });
  }
  raise_first(op, info, !batch.empty(), [](lapack_int i) {
    return str_cat("The algorithm failed to converge because the input matrix is "
                   "ill-conditioned or has too many repeated eigenvalues (error code: ", i, ").");
  });
  return {w, compute_v ? colmajor_view(v) : v};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_lstsq(const Tensor& A, const Tensor& B,
                                                        std::optional<double> rcond,
                                                        const std::string& driver) {
  const char* op = "linalg.lstsq";
  EMBER_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss",
              std::runtime_error,
              "linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  EMBER_CHECK(A->dim() >= 2, std::runtime_error, op, ": input must have at least 2 dimensions.");
  EMBER_CHECK(B->dim() >= 2, std::runtime_error, op, ": other must have at least 2 dimensions.");
  EMBER_CHECK(A->dtype == B->dtype, std::runtime_error, op,
              ": Expected input and other to have the same dtype, but got input's dtype ",
              torch_type_name(A->dtype), " and other's dtype ", torch_type_name(B->dtype));
  check_matrix(A, op);
  check_columns(B, op);
  const int64_t m = A->sizes[A->dim() - 2], n = A->sizes.back(), k = B->sizes.back();
  EMBER_CHECK(B->sizes[B->dim() - 2] == m, std::runtime_error, op,
              ": input.size(-2) should match other.size(-2)");
  check_same_batch(A, B, op);
  const Shape batch = batch_of(A);
  const int64_t nb = count(batch), mn = std::min(m, n), ldb = std::max<int64_t>({1, m, n});
  const bool with_rank = driver != "gels", with_sv = driver == "gelsd" || driver == "gelss";
  Tensor a = colmajor_copy(A);
  Tensor x = colmajor_zeros(batch, ldb, k, A->dtype);  // (..., ldb, k) column-major
  if (m > 0 && k > 0) copy_(narrow(colmajor_view(x), x->dim() - 2, 0, m), B);
  Tensor rank = with_rank ? empty(batch, ScalarType::Int64) : empty({0}, ScalarType::Int64);
  const ScalarType real = to_real_type(A->dtype);  // singular values and residuals are real
  Tensor sv = with_sv ? empty(with(batch, {mn}), real) : empty({0}, real);
  std::vector<lapack_int> info(nb, 0), ranks(nb, 0);
  dispatch_lapack_all(A->dtype, [&](auto tag) {
    using T = decltype(tag);
    using R = decltype(std::real(tag));
    const R rc = rcond ? static_cast<R>(*rcond)
                       : std::numeric_limits<R>::epsilon() * static_cast<R>(std::max(m, n));
    if (mn == 0) return;
    for_each_matrix(nb, cube(m, n) + ldb * mn * k, [&](int64_t b) {
      T* ap = a->data_as<T>() + b * m * n;
      T* xp = x->data_as<T>() + b * ldb * k;
      R* sp = with_sv ? sv->data_as<R>() + b * mn : nullptr;
      lapack_int& r = ranks[b];
      if (driver == "gels") {
        info[b] = lapack::gels<T>(m, n, k, ap, ld(m), xp, ldb);
      } else if constexpr (is_complex_v<T>) {
        if (driver == "gelsy")
          info[b] = lapack::gelsy_complex<T, R>(m, n, k, ap, ld(m), xp, ldb, rc, &r);
        else
          info[b] = lapack::gelsd_complex<T, R>(m, n, k, ap, ld(m), xp, ldb, sp, rc, &r);
      } else {
        if (driver == "gelsy") info[b] = lapack::gelsy<T>(m, n, k, ap, ld(m), xp, ldb, rc, &r);
        else info[b] = lapack::gelsd<T>(m, n, k, ap, ld(m), xp, ldb, sp, rc, &r);
      }
      check_argument_info(op, driver.c_str(), info[b]);
    });
  });
  raise_first(op, info, !batch.empty(), [&](lapack_int i) {
    if (driver == "gels")
      return str_cat("The least squares solution could not be computed because the input matrix "
                     "does not have full rank (error code: ", i, ").");
    return str_cat("The algorithm failed to converge because the input matrix is ill-conditioned "
                   "or has too many repeated singular values (error code: ", i, ").");
  });
  bool full_rank = true;
  for (int64_t b = 0; b < nb && with_rank; ++b) {
    rank->data_as<int64_t>()[b] = ranks[b];
    if (ranks[b] != n) full_rank = false;
  }
  Tensor residuals = empty({0}, real);
  if (m > n && driver != "gelsy" && full_rank) {
    residuals = empty(with(batch, {k}), real);
    dispatch_lapack_all(A->dtype, [&](auto tag) {
      using T = decltype(tag);
      using R = decltype(std::real(tag));
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t j = 0; j < k; ++j) {
          const T* col = x->data_as<T>() + (b * k + j) * ldb;
          R acc = R(0);
          for (int64_t i = n; i < m; ++i) acc += std::norm(col[i]);
          residuals->data_as<R>()[b * k + j] = acc;
        }
    });
  }
  Tensor solution = narrow(colmajor_view(x), x->dim() - 2, 0, n);
  return {solution, residuals, rank, sv};
}

}  // namespace ember
