// linalg.cpp: matrix products. See linalg.h for the design; the shape checks and messages follow
// PyTorch's (aten/src/ATen/native/LinearAlgebra.cpp, Blas.cpp).
#include "ops/linalg.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "ops/elementwise.h"
#include "runtime/blas.h"
#include "runtime/gil.h"
#include "runtime/parallel.h"

namespace ember {
namespace {

// ---------------------------------------------------------------------------------------------
// Names PyTorch uses in these messages: ScalarType names ("Float") and C++ type names ("float").


int64_t prod(const Shape& s) {
  int64_t n = 1;
  for (auto v : s) n *= v;
  return n;
}

[[noreturn]] void not_implemented_bool(const char* kernel) {
  throw NotImplementedError(str_cat("\"", kernel, "\" not implemented for 'Bool'"));
}

// The result tensor: `out` checked and resized, or a new one.
Tensor make_out(const Tensor& out, const Shape& shape, ScalarType dt, const char* op) {
  if (!out) return empty(shape, dt);
  EMBER_CHECK(out->dtype == dt, std::runtime_error, "Expected out tensor to have dtype ",
              cpp_type_name(dt), ", but got ", cpp_type_name(out->dtype), " instead");
  EMBER_CHECK(out->device().is_cpu(), std::runtime_error, op,
              "(): expected out tensor on cpu, but got ", out->device().str());
  resize_output(out, shape);
  check_inplace_writable(out, op);
  return out;
}

bool is_zero(Scalar s, ScalarType dt) {
  if (is_complex(dt)) return !s.to_bool();
  return is_floating(dt) ? s.to_double() == 0.0 : s.to_int() == 0;
}

// ---------------------------------------------------------------------------------------------
// Layouts

// How BLAS can read a rows x cols matrix with element strides (rs, cs): row-major with leading
// dimension `ld` (trans = false), or as the transpose of a row-major cols x rows matrix
// (trans = true). Strides of size-1 dims do not matter. ok = false: copy it first.
struct Layout {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

Layout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  constexpr int64_t kMaxLd = INT_MAX;
  if (cols == 1 || cs == 1) {
    const int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    if (ld >= std::max<int64_t>(cols, 1) && ld <= kMaxLd) return {true, false, ld};
  }
  if (rows == 1 || rs == 1) {
    const int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    if (ld >= std::max<int64_t>(rows, 1) && ld <= kMaxLd) return {true, true, ld};
  }
  return {};
}

Layout matrix_layout(const TensorImpl& t) {
  const int64_t n = t.dim();
  return blas_layout(t.sizes[n - 2], t.sizes[n - 1], t.strides[n - 2], t.strides[n - 1]);
}

// Element offset of each matrix of `t` (shape (..., r, c)) when its batch dims are broadcast to
// `bshape` (broadcast dims contribute nothing: a broadcast operand is never materialised).
std::vector<int64_t> batch_offsets(const Shape& bshape, const TensorImpl& t) {
  const int nb = static_cast<int>(bshape.size());
  const int tb = static_cast<int>(t.dim()) - 2;
  std::vector<int64_t> st(nb, 0);
  for (int d = 0; d < tb; ++d) st[nb - tb + d] = t.sizes[d] == 1 ? 0 : t.strides[d];
  const int64_t total = prod(bshape);
  std::vector<int64_t> offs(static_cast<size_t>(total));
  std::vector<int64_t> idx(nb, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < total; ++i) {
    offs[i] = off;
    for (int d = nb - 1; d >= 0; --d) {
      if (++idx[d] < bshape[d]) {
        off += st[d];
        break;
      }
      off -= st[d] * (bshape[d] - 1);
      idx[d] = 0;
    }
  }
  return offs;
}

// ---------------------------------------------------------------------------------------------
// Kernels

void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
               int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  blas::sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
               int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  blas::dgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, std::complex<float> alpha,
               const std::complex<float>* A, int64_t lda, const std::complex<float>* B,
               int64_t ldb, std::complex<float> beta, std::complex<float>* C, int64_t ldc) {
  blas::cgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, std::complex<double> alpha,
               const std::complex<double>* A, int64_t lda, const std::complex<double>* B,
               int64_t ldb, std::complex<double> beta, std::complex<double>* C, int64_t ldc) {
  blas::zgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

struct Batches {
  int64_t count = 0;
  bool sum = false;  // all products accumulate into one C (addbmm)
  std::vector<int64_t> a, b, c;
};

// Every float product runs on OpenBLAS with one thread; ember's pool supplies the parallelism.
// OpenBLAS's own workers busy-wait for work, and when the machine is busy (other processes,
// or the other library in a side-by-side benchmark) they thrash: on a loaded 2-core machine a
// 256^3 product took 13-23 ms on two OpenBLAS threads and 1.5 ms on one, and an LSTM step's
// 20x256x1024 products went from 0.15 ms to 20 ms. ember's pool yields instead of spinning.
// A batch of products at most kSmallGemmWork each is split over the batch; anything else (a
// single product, a summed batch, big products) is split into row or column blocks of C, each
// thread looping over the batch in order, so a summed batch still accumulates in order.
constexpr int64_t kSmallGemmWork = int64_t(1) << 27;  // 512 x 512 x 512
// Below this a product is not worth splitting: it runs whole on the calling thread.
constexpr int64_t kTinyGemmWork = int64_t(1) << 18;
// Blocks of C are multiples of this many rows or columns (whole SIMD panels of the kernel).
constexpr int64_t kGemmPanel = 16;

template <typename T>
void float_gemm(const Batches& bt, int64_t M, int64_t N, int64_t K, T alpha, T beta,
                const T* A, Layout la, const T* B, Layout lb, T* C, Layout lc) {
  // Normalise to a row-major C: a column-major C is C^T = op(B)^T op(A)^T, row-major N x M.
  bool ta = la.trans, tb = lb.trans;
  int64_t lda = la.ld, ldb = lb.ld, m = M, n = N;
  const std::vector<int64_t>*ao = &bt.a, *bo = &bt.b;
  if (lc.trans) {
    std::swap(A, B);
    std::swap(lda, ldb);
    std::swap(m, n);
    std::swap(ao, bo);
    const bool t = ta;
    ta = !tb;
    tb = !t;
  }
  const int64_t ldc = lc.ld;
  // C[r0:r1, c0:c1] of product i (op(A) is m x K, op(B) is K x n).
  auto block = [&](int64_t i, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const T be = (bt.sum && i > 0) ? T(1) : beta;
    blas_gemm(ta, tb, r1 - r0, c1 - c0, K, alpha, A + (*ao)[i] + (ta ? r0 : r0 * lda), lda,
              B + (*bo)[i] + (tb ? c0 * ldb : c0), ldb, be, C + bt.c[i] + r0 * ldc + c0, ldc);
  };
  const int64_t work = std::max<int64_t>(m * n * K, 1);
  blas::SingleThreaded single;
  if (bt.count > 1 && !bt.sum && work <= kSmallGemmWork) {
    parallel_for(0, bt.count, std::max<int64_t>(1, kTinyGemmWork / work), [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) block(i, 0, m, 0, n);
    });
    return;
  }
  if (work * (bt.sum ? bt.count : 1) <= kTinyGemmWork || get_num_threads() == 1) {
    for (int64_t i = 0; i < bt.count; ++i) block(i, 0, m, 0, n);
    return;
  }
  // Split the longer side of C into panels; each chunk gets at least kTinyGemmWork of work.
  const bool by_rows = m >= n;
  const int64_t len = by_rows ? m : n, other = by_rows ? n : m;
  const int64_t panels = (len + kGemmPanel - 1) / kGemmPanel;
  const int64_t grain = std::max<int64_t>(1, kTinyGemmWork / std::max<int64_t>(kGemmPanel * other * K, 1));
  parallel_for(0, panels, grain, [&](int64_t s, int64_t e) {
    const int64_t lo = s * kGemmPanel, hi = std::min(len, e * kGemmPanel);
    for (int64_t i = 0; i < bt.count; ++i) {
      if (by_rows)
        block(i, lo, hi, 0, n);
      else
        block(i, 0, m, lo, hi);
    }
  });
}

// Integer GEMM: C = beta * C + alpha * A @ B with row-major A, B, C. Products accumulate in
// unsigned 32-bit (types up to 4 bytes) or 64-bit integers, so overflow wraps modulo 2^bits
// exactly as the same computation in the stored type would.
template <typename T>
void int_gemm(const Batches& bt, int64_t M, int64_t N, int64_t K, T alpha, T beta, bool beta_zero,
              const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  using W = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
  constexpr int64_t MB = 16, NB = 256, KB = 256;
  const int64_t mblocks = (M + MB - 1) / MB;
  const W wa = static_cast<W>(alpha);

  auto block = [&](int64_t bi, int64_t ib, bool bz, W wb) {
    const T* a = A + bt.a[bi];
    const T* b = B + bt.b[bi];
    T* c = C + bt.c[bi];
    const int64_t i0 = ib * MB, i1 = std::min(M, i0 + MB);
    auto store = [&](T* dst, W v) {
      *dst = bz ? static_cast<T>(wa * v) : static_cast<T>(wa * v + wb * static_cast<W>(*dst));
    };
    if (N == 1) {  // matrix @ vector: one running sum per row
      for (int64_t i = i0; i < i1; ++i) {
        const T* ar = a + i * lda;
        W s = 0;
        if (ldb == 1) {
          for (int64_t k = 0; k < K; ++k) s += static_cast<W>(ar[k]) * static_cast<W>(b[k]);
        } else {
          for (int64_t k = 0; k < K; ++k) s += static_cast<W>(ar[k]) * static_cast<W>(b[k * ldb]);
        }
        store(c + i * ldc, s);
      }
      return;
    }
    std::unique_ptr<W[]> acc(new W[MB * NB]);
    for (int64_t j0 = 0; j0 < N; j0 += NB) {
      const int64_t nj = std::min(NB, N - j0);
      std::fill(acc.get(), acc.get() + MB * NB, W(0));
      for (int64_t k0 = 0; k0 < K; k0 += KB) {
        const int64_t k1 = std::min(K, k0 + KB);
        for (int64_t i = i0; i < i1; ++i) {
          W* __restrict__ row = acc.get() + (i - i0) * NB;
          const T* ar = a + i * lda;
          for (int64_t k = k0; k < k1; ++k) {
            const W av = static_cast<W>(ar[k]);
            const T* __restrict__ br = b + k * ldb + j0;
            for (int64_t j = 0; j < nj; ++j) row[j] += av * static_cast<W>(br[j]);
          }
        }
      }
      for (int64_t i = i0; i < i1; ++i) {
        const W* row = acc.get() + (i - i0) * NB;
        T* cr = c + i * ldc + j0;
        for (int64_t j = 0; j < nj; ++j) store(cr + j, row[j]);
      }
    }
  };

  const int64_t block_work = std::max<int64_t>(1, std::min(MB, M) * N * K);
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / block_work);
  const W wbeta = static_cast<W>(beta);
  if (!bt.sum) {
    parallel_for(0, bt.count * mblocks, grain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) block(i / mblocks, i % mblocks, beta_zero, wbeta);
    });
  } else {  // every batch adds into the same C: batches in order, rows in parallel
    for (int64_t bi = 0; bi < bt.count; ++bi) {
      parallel_for(0, mblocks, grain, [&](int64_t s, int64_t e) {
        for (int64_t ib = s; ib < e; ++ib)
          block(bi, ib, bi == 0 ? beta_zero : false, bi == 0 ? wbeta : W(1));
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The driver. c: (batch..., M, N); a: (..., M, K); b: (..., K, N), whose batch dims broadcast to
// c's. Computes c = beta * c + alpha * a @ b (c not read when beta == 0). With `sum`, a and b are
// (B, M, K), (B, K, N), c is (M, N) and the B products are summed. `kernel` names the op in the
// not-implemented error for bool, as PyTorch's kernels do.
void gemm_out(const Tensor& c, Tensor a, Tensor b, Scalar alpha, Scalar beta, const char* kernel,
              bool sum = false) {
  const ScalarType dt = a->dtype;
  check_scalar_fits(alpha, dt);  // (torch's checked conversions, also of an empty product)
  check_scalar_fits(beta, dt);
  const int64_t M = a->sizes[a->dim() - 2], K = a->sizes[a->dim() - 1];
  const int64_t N = b->sizes[b->dim() - 1];
  Shape bshape = sum ? Shape{a->sizes[0]} : Shape(c->sizes.begin(), c->sizes.end() - 2);
  const int64_t nbatch = prod(bshape);
  if (c->numel() == 0) return;
  const bool beta_zero = is_zero(beta, dt);
  // A product worth splitting over threads runs without the GIL, also on one thread.
  GilRelease nogil(double(nbatch) * double(M) * double(N) * double(K) > double(kTinyGemmWork));

  // bool has no kernel (torch's refusal names it), but an empty product never reaches one
  if (dt == ScalarType::Bool && K != 0 && nbatch != 0) not_implemented_bool(kernel);
  if (K == 0 || nbatch == 0 || is_zero(alpha, dt)) {  // nothing to multiply: c = beta * c
    // (torch's addmm/baddbmm multiply c by the number beta, which bool cannot hold; its
    // addmv by beta made a tensor of c's dtype first)
    if (dt == ScalarType::Bool && !beta_zero && !beta.is_bool() &&
        std::string_view(kernel) != "addmv_impl_cpu")
      throw std::runtime_error(str_cat("result type ", beta.is_floating_kind() ? "Float" : "Long",
                                       " can't be cast to the desired output type Bool"));
    if (beta_zero) fill_(c, Scalar::from_int(0));
    else if (is_complex(dt) ? (beta.is_complex() || beta.to_double() != 1.0)
             : is_floating(dt) ? beta.to_double() != 1.0 : beta.to_int() != 1)
      binary(BinaryOp::mul, Operand(c),
             Operand(is_floating(dt) || is_complex(dt) ? beta : Scalar::from_int(beta.to_int())), c);
    return;
  }

  if (is_reduced_float(dt)) {  // compute in float32, round once on the way back
    constexpr auto F = ScalarType::Float32;
    Tensor c32 = empty(c->sizes, F);
    if (!beta_zero) copy_(c32, c);
    gemm_out(c32, to_dtype(a, F), to_dtype(b, F), alpha, beta, kernel, sum);
    copy_(c, c32);
    return;
  }

  const bool is_float = is_floating(dt) || is_complex(dt);  // BLAS reads transposed layouts
  Layout lc = matrix_layout(*c);
  const bool c_usable = lc.ok && (is_float || !lc.trans);
  if (!c_usable || c->storage == a->storage || c->storage == b->storage) {
    Tensor tmp = empty(c->sizes, dt);
    if (!beta_zero) copy_(tmp, c);
    gemm_out(tmp, a, b, alpha, beta, kernel, sum);
    copy_(c, tmp);
    return;
  }

  Layout la = matrix_layout(*a), lb = matrix_layout(*b);
  if (!la.ok || (!is_float && la.trans)) a = contiguous(a), la = matrix_layout(*a);
  if (!lb.ok || (!is_float && lb.trans)) b = contiguous(b), lb = matrix_layout(*b);

  Batches bt;
  bt.count = nbatch;
  bt.sum = sum;
  bt.a = batch_offsets(bshape, *a);
  bt.b = batch_offsets(bshape, *b);
  bt.c = sum ? std::vector<int64_t>(static_cast<size_t>(nbatch), 0) : batch_offsets(bshape, *c);

  if (dt == ScalarType::Float32) {
    float_gemm<float>(bt, M, N, K, alpha.to<float>(), beta_zero ? 0.f : beta.to<float>(),
                      a->data_as<float>(), la, b->data_as<float>(), lb, c->data_as<float>(), lc);
  } else if (dt == ScalarType::Float64) {
    float_gemm<double>(bt, M, N, K, alpha.to<double>(), beta_zero ? 0.0 : beta.to<double>(),
                       a->data_as<double>(), la, b->data_as<double>(), lb, c->data_as<double>(),
                       lc);
  } else if (is_complex(dt)) {
    dispatch_complex(dt, kernel, [&](auto tag) {
      using T = typename decltype(tag)::type;
      float_gemm<T>(bt, M, N, K, alpha.to<T>(), beta_zero ? T(0) : beta.to<T>(), a->data_as<T>(),
                    la, b->data_as<T>(), lb, c->data_as<T>(), lc);
    });
  } else {
    dispatch_integral(dt, kernel, [&](auto tag) {
      using T = typename decltype(tag)::type;
      int_gemm<T>(bt, M, N, K, alpha.to<T>(), beta.to<T>(), beta_zero, a->data_as<T>(), la.ld,
                  b->data_as<T>(), lb.ld, c->data_as<T>(), lc.ld);
    });
  }
  c->bump_version();
}

// A view of `c` with `shape` when c's layout allows one; else null.
Tensor try_view(const Tensor& c, const Shape& shape) {
  if (!c->is_contiguous()) return nullptr;
  return make_view(c, shape, contiguous_strides(shape), c->offset);
}

// ---------------------------------------------------------------------------------------------
// Shared checks

void check_mm_shapes(const Tensor& m1, const Tensor& m2) {
  EMBER_CHECK(m1->sizes[1] == m2->sizes[0], std::runtime_error,
              "mat1 and mat2 shapes cannot be multiplied (", m1->sizes[0], "x", m1->sizes[1],
              " and ", m2->sizes[0], "x", m2->sizes[1], ")");
}
void check_m1_m2_dtype(const Tensor& m1, const Tensor& m2) {
  EMBER_CHECK(m1->dtype == m2->dtype, std::runtime_error,
              "expected m1 and m2 to have the same dtype, but got: ", cpp_type_name(m1->dtype), " != ",
              cpp_type_name(m2->dtype));
}
void check_cpu(const Tensor& t, const char* op) {
  EMBER_CHECK(t->device().is_cpu(), std::runtime_error, op,
              "(): expected all tensors to be on cpu, but found one on ", t->device().str());
}
void check_bmm_shapes(const Tensor& b1, const Tensor& b2) {
  EMBER_CHECK(b1->dim() == 3, std::runtime_error, "batch1 must be a 3D tensor");
  EMBER_CHECK(b2->dim() == 3, std::runtime_error, "batch2 must be a 3D tensor");
  const int64_t bs = b1->sizes[0], K = b1->sizes[2];
  EMBER_CHECK(b2->sizes[0] == bs && b2->sizes[1] == K, std::runtime_error,
              "Expected size for first two dimensions of batch2 tensor to be: [", bs, ", ", K,
              "] but got: [", b2->sizes[0], ", ", b2->sizes[1], "].");
}

// Shape of addmm's product after its checks.
Shape addmm_shape(const Tensor& input, const Tensor& m1, const Tensor& m2) {
  for (auto* t : {&input, &m1, &m2}) check_cpu(*t, "addmm");
  EMBER_CHECK(m1->dim() == 2, std::runtime_error, "mat1 must be a matrix, got ", m1->dim(),
              "-D tensor");
  EMBER_CHECK(m2->dim() == 2, std::runtime_error, "mat2 must be a matrix, got ", m2->dim(),
              "-D tensor");
  check_mm_shapes(m1, m2);
  check_m1_m2_dtype(m1, m2);
  EMBER_CHECK(input->dtype == m1->dtype, std::runtime_error,
              "self and mat2 must have the same dtype, but got ", type_name(input->dtype),
              " and ", type_name(m1->dtype));
  return {m1->sizes[0], m2->sizes[1]};
}

Shape addmv_shape(const Tensor& input, const Tensor& mat, const Tensor& vec) {
  for (auto* t : {&input, &mat, &vec}) check_cpu(*t, "addmv");
  EMBER_CHECK(mat->dim() == 2 && vec->dim() == 1 && input->dim() <= 1, std::runtime_error,
              "vector + matrix @ vector expected, got ", input->dim(), ", ", mat->dim(), ", ",
              vec->dim());
  const int64_t in_n = input->dim() == 0 ? 1 : input->sizes[0];
  EMBER_CHECK(mat->sizes[1] == vec->sizes[0] && (in_n == mat->sizes[0] || in_n == 1),
              std::runtime_error, "size mismatch, got input (", in_n, "), mat (", mat->sizes[0],
              "x", mat->sizes[1], "), vec (", vec->sizes[0], ")");
  EMBER_CHECK(input->dtype == mat->dtype && mat->dtype == vec->dtype, std::runtime_error,
              "addmv input tensors must have the same dtype, but got ", type_name(input->dtype),
              ", ", type_name(mat->dtype), ", and ", type_name(vec->dtype));
  return {mat->sizes[0]};
}

Shape baddbmm_shape(const Tensor& input, const Tensor& b1, const Tensor& b2) {
  for (auto* t : {&input, &b1, &b2}) check_cpu(*t, "baddbmm");
  check_bmm_shapes(b1, b2);
  EMBER_CHECK(input->dtype == b1->dtype && b1->dtype == b2->dtype, std::runtime_error,
              "Input dtypes must be the same, got: input ", cpp_type_name(input->dtype), ", batch1: ",
              cpp_type_name(b1->dtype), ", batch2: ", cpp_type_name(b2->dtype));
  return {b1->sizes[0], b1->sizes[1], b2->sizes[2]};
}

Shape addbmm_shape(const Tensor& input, const Tensor& b1, const Tensor& b2) {
  for (auto* t : {&input, &b1, &b2}) check_cpu(*t, "addbmm");
  EMBER_CHECK(b1->dim() == 3, std::runtime_error, "batch1 must be a 3D tensor");
  EMBER_CHECK(b2->dim() == 3, std::runtime_error, "batch2 must be a 3D tensor");
  EMBER_CHECK(b1->sizes[0] == b2->sizes[0], std::runtime_error,
              "batch1 and batch2 must have same number of batches, got ", b1->sizes[0], " and ",
              b2->sizes[0]);
  EMBER_CHECK(b1->sizes[2] == b2->sizes[1], std::runtime_error,
              "Incompatible matrix sizes for bmm (", b1->sizes[1], "x", b1->sizes[2], " and ",
              b2->sizes[1], "x", b2->sizes[2], ")");
  EMBER_CHECK(input->dtype == b1->dtype && b1->dtype == b2->dtype, std::runtime_error,
              "Input dtypes must be the same, got: input ", cpp_type_name(input->dtype), ", batch1: ",
              cpp_type_name(b1->dtype), ", batch2: ", cpp_type_name(b2->dtype));
  return {b1->sizes[1], b2->sizes[2]};
}

// Writes the broadcast `input` into the result `c` unless beta == 0 (then c is never read) or
// c already is input. An input sharing memory with an out= tensor is copied first, since
// resizing or writing `c` may change it.
Tensor stage_input(const Tensor& input, const Tensor& out) {
  if (out && out->storage == input->storage && out != input) return clone(input);
  return input;
}
void load_input(const Tensor& c, const Tensor& input, Scalar beta) {
  if (c == input || is_zero(beta, c->dtype)) return;
  copy_(c, expand(input, c->sizes));
}

// Result of a product computed with the last dims of `full` (a view of c or a temporary).
template <typename Fn>
Tensor with_view(const Tensor& c, const Shape& full, Fn fn) {
  if (Tensor v = try_view(c, full)) {
    fn(v);
    return c;
  }
  Tensor tmp = empty(full, c->dtype);
  fn(tmp);
  copy_(c, view(tmp, c->sizes));
  return c;
}

Tensor dot_impl(const Tensor& a, const Tensor& b, const Tensor& out, const char* op) {
  check_cpu(a, op), check_cpu(b, op);
  EMBER_CHECK(a->dim() == 1 && b->dim() == 1, std::runtime_error, "1D tensors expected, but got ",
              a->dim(), "D and ", b->dim(), "D tensors");
  EMBER_CHECK(a->dtype == b->dtype, std::runtime_error,
              "dot : expected both vectors to have same dtype, but found ", type_name(a->dtype),
              " and ", type_name(b->dtype));
  EMBER_CHECK(a->numel() == b->numel(), std::runtime_error,
              "inconsistent tensor size, expected tensor [", a->numel(), "] and src [", b->numel(),
              "] to have the same number of elements, but got ", a->numel(), " and ", b->numel(),
              " elements respectively");
  // (checked at every length, as torch's dot, which a real vdot is: "dot" for both)
  EMBER_CHECK(a->dtype != ScalarType::Bool && !is_wide_unsigned(a->dtype), NotImplementedError,
              "\"dot\" not implemented for '", type_name(a->dtype), "'");
  Tensor c = make_out(out, {}, a->dtype, op);
  Tensor c2 = make_view(c, {1, 1}, {1, 1}, c->offset);
  gemm_out(c2, unsqueeze(a, 0), unsqueeze(b, 1), Scalar::from_int(1), Scalar::from_int(0), "dot");
  return c;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public ops

Tensor mm(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_cpu(a, "mm"), check_cpu(b, "mm");
  EMBER_CHECK(a->dim() == 2, std::runtime_error, "self must be a matrix");
  EMBER_CHECK(b->dim() == 2, std::runtime_error, "mat2 must be a matrix");
  check_mm_shapes(a, b);
  check_m1_m2_dtype(a, b);
  Tensor c = make_out(out, {a->sizes[0], b->sizes[1]}, a->dtype, "mm");
  gemm_out(c, a, b, Scalar::from_int(1), Scalar::from_int(0), "addmm_impl_cpu_");
  return c;
}

Tensor bmm(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_cpu(a, "bmm"), check_cpu(b, "bmm");
  check_bmm_shapes(a, b);
  EMBER_CHECK(a->dtype == b->dtype, std::runtime_error, "expected scalar type ",
              type_name(a->dtype), " but found ", type_name(b->dtype));
  Tensor c = make_out(out, {a->sizes[0], a->sizes[1], b->sizes[2]}, a->dtype, "bmm");
  gemm_out(c, a, b, Scalar::from_int(1), Scalar::from_int(0), "bmm");
  return c;
}

Tensor mv(const Tensor& mat, const Tensor& vec, const Tensor& out) {
  check_cpu(mat, "mv"), check_cpu(vec, "mv");
  EMBER_CHECK(mat->dim() == 2 && vec->dim() == 1, std::runtime_error,
              "vector + matrix @ vector expected, got 1, ", mat->dim(), ", ", vec->dim());
  EMBER_CHECK(mat->sizes[1] == vec->sizes[0], std::runtime_error, "size mismatch, got input (",
              mat->sizes[0], "), mat (", mat->sizes[0], "x", mat->sizes[1], "), vec (",
              vec->sizes[0], ")");
  EMBER_CHECK(mat->dtype == vec->dtype, std::runtime_error,
              "addmv input tensors must have the same dtype, but got ", type_name(vec->dtype),
              ", ", type_name(mat->dtype), ", and ", type_name(vec->dtype));
  Tensor c = make_out(out, {mat->sizes[0]}, mat->dtype, "mv");
  gemm_out(unsqueeze(c, 1), mat, unsqueeze(vec, 1), Scalar::from_int(1), Scalar::from_int(0),
           "addmv_impl_cpu");
  return c;
}

Tensor dot(const Tensor& a, const Tensor& b, const Tensor& out) { return dot_impl(a, b, out, "dot"); }
// vdot conjugates its first argument (a copy here: ember has no lazy conjugate)
Tensor vdot(const Tensor& a, const Tensor& b, const Tensor& out) {
  return dot_impl(is_complex(a->dtype) ? conj_physical(a) : a, b, out, "vdot");
}

Tensor matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_cpu(a, "matmul"), check_cpu(b, "matmul");
  const int64_t da = a->dim(), db = b->dim();
  EMBER_CHECK(da > 0 && db > 0, std::runtime_error,
              "both arguments to matmul need to be at least 1D, but they are ", da, "D and ", db,
              "D");
  if (da == 1 && db == 1) return dot(a, b, out);
  if (da == 2 && db == 1) return mv(a, b, out);
  if (da == 2 && db == 2) return mm(a, b, out);
  if (da == 1 && db == 2) {
    Tensor a2 = unsqueeze(a, 0);
    check_mm_shapes(a2, b);
    check_m1_m2_dtype(a2, b);
    Tensor c = make_out(out, {b->sizes[1]}, a->dtype, "matmul");
    gemm_out(unsqueeze(c, 0), a2, b, Scalar::from_int(1), Scalar::from_int(0), "addmm_impl_cpu_");
    return c;
  }
  const int64_t K = a->sizes[da - 1];
  if (da >= 3 && db <= 2) {
    // Fold the batch into the rows: one large product instead of many small ones.
    Shape rshape(a->sizes.begin(), a->sizes.end() - 1);
    const int64_t rows = prod(rshape);
    if (db == 2) rshape.push_back(b->sizes[1]);
    Tensor a2 = reshape(a, {rows, K});
    if (db == 1) {
      EMBER_CHECK(K == b->sizes[0], std::runtime_error, "size mismatch, got input (", rows,
                  "), mat (", rows, "x", K, "), vec (", b->sizes[0], ")");
      EMBER_CHECK(a->dtype == b->dtype, std::runtime_error,
                  "addmv input tensors must have the same dtype, but got ", type_name(b->dtype),
                  ", ", type_name(a->dtype), ", and ", type_name(b->dtype));
    } else {
      check_mm_shapes(a2, b);
      check_m1_m2_dtype(a2, b);
    }
    Tensor c = make_out(out, rshape, a->dtype, "matmul");
    Tensor b2 = db == 1 ? unsqueeze(b, 1) : b;
    return with_view(c, {rows, b2->sizes[1]}, [&](const Tensor& v) {
      gemm_out(v, a2, b2, Scalar::from_int(1), Scalar::from_int(0),
               db == 1 ? "addmv_impl_cpu" : "addmm_impl_cpu_");
    });
  }
  // General batched product with broadcast batch dims.
  Tensor a3 = da == 1 ? unsqueeze(a, 0) : a;
  Tensor b3 = db == 1 ? unsqueeze(b, 1) : b;
  const int64_t M = a3->sizes[a3->dim() - 2], N = b3->sizes[b3->dim() - 1];
  const int64_t K2 = b3->sizes[b3->dim() - 2];
  Shape ba(a3->sizes.begin(), a3->sizes.end() - 2), bb(b3->sizes.begin(), b3->sizes.end() - 2);
  Shape bshape = broadcast_shapes(ba, bb);
  EMBER_CHECK(K == K2, std::runtime_error,
              "Expected size for first two dimensions of batch2 tensor to be: [", prod(bshape),
              ", ", K, "] but got: [", prod(bshape), ", ", K2, "].");
  EMBER_CHECK(a->dtype == b->dtype, std::runtime_error, "expected scalar type ",
              type_name(a->dtype), " but found ", type_name(b->dtype));
  Shape rshape = bshape;
  if (da > 1) rshape.push_back(M);
  if (db > 1) rshape.push_back(N);
  Tensor c = make_out(out, rshape, a->dtype, "matmul");
  Tensor cfull = c;
  if (da == 1) cfull = unsqueeze(cfull, cfull->dim() - (db > 1 ? 1 : 0));
  if (db == 1) cfull = unsqueeze(cfull, cfull->dim());
  gemm_out(cfull, a3, b3, Scalar::from_int(1), Scalar::from_int(0), "bmm");
  return c;
}

Tensor inner(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_cpu(a, "inner"), check_cpu(b, "inner");
  if (a->dim() == 0 || b->dim() == 0) {  // torch's mul_out: out resized to the product's shape
    if (out) {  // (an overlapping out refused before it is resized, as torch's iterator)
      check_inplace_writable(out, "inner");
      resize_output(out, broadcast_shapes(a->sizes, b->sizes));
    }
    return binary(BinaryOp::mul, Operand(a), Operand(b), out);
  }
  const int64_t K = a->sizes.back();
  EMBER_CHECK(K == b->sizes.back(), std::runtime_error,
              "inner() the last dimension must match on both input tensors but got shapes ",
              shape_str(a->sizes), " and ", shape_str(b->sizes));
  EMBER_CHECK(a->dtype == b->dtype, std::runtime_error, "both inputs should have same dtype");
  // (torch's inner of two vectors is dot, of more a matrix product: neither has uint16-64;
  // an empty product of matrices returns before the dtype is read, as torch's mm)
  const bool vectors = a->dim() == 1 && b->dim() == 1;
  const bool no_kernel = is_wide_unsigned(a->dtype) || a->dtype == ScalarType::Bool;
  if (no_kernel && (vectors || (a->numel() > 0 && b->numel() > 0))) {
    const char* kernel = vectors ? "dot" : "addmm_impl_cpu_";
    throw NotImplementedError(
        str_cat("\"", kernel, "\" not implemented for '", type_name(a->dtype), "'"));
  }
  Shape rshape(a->sizes.begin(), a->sizes.end() - 1);
  rshape.insert(rshape.end(), b->sizes.begin(), b->sizes.end() - 1);
  const int64_t P = prod(Shape(a->sizes.begin(), a->sizes.end() - 1));
  const int64_t Q = prod(Shape(b->sizes.begin(), b->sizes.end() - 1));
  Tensor a2 = reshape(a, {P, K}), b2 = transpose(reshape(b, {Q, K}), 0, 1);
  Tensor c = make_out(out, rshape, a->dtype, "inner");
  return with_view(c, {P, Q}, [&](const Tensor& v) {
    gemm_out(v, a2, b2, Scalar::from_int(1), Scalar::from_int(0), "addmm_impl_cpu_");
  });
}

Tensor outer(const Tensor& a, const Tensor& b, const Tensor& out) {
  EMBER_CHECK(a->dim() == 1, std::runtime_error, "outer: Expected 1-D argument self, but got ",
              a->dim(), "-D");
  EMBER_CHECK(b->dim() == 1, std::runtime_error, "outer: Expected 1-D argument vec2, but got ",
              b->dim(), "-D");
  if (out) {  // (torch's mul_out: an overlapping out refused, then out resized)
    check_inplace_writable(out, "outer");
    resize_output(out, {a->sizes[0], b->sizes[0]});
  }
  return binary(BinaryOp::mul, Operand(unsqueeze(a, 1)), Operand(b), out);
}

Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, Scalar beta, Scalar alpha,
             const Tensor& out) {
  Shape shape = addmm_shape(input, m1, m2);
  expand(input, shape);  // checks broadcastability before anything is written
  Tensor in = stage_input(input, out);
  Tensor c = make_out(out, shape, m1->dtype, "addmm");
  load_input(c, in, beta);
  gemm_out(c, m1, m2, alpha, beta, "addmm_impl_cpu_");
  return c;
}

Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta, Scalar alpha,
             const Tensor& out) {
  Shape shape = addmv_shape(input, mat, vec);
  Tensor in = stage_input(input, out);
  Tensor c = make_out(out, shape, mat->dtype, "addmv");
  load_input(c, in, beta);
  gemm_out(unsqueeze(c, 1), mat, unsqueeze(vec, 1), alpha, beta, "addmv_impl_cpu");
  return c;
}

Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha,
               const Tensor& out) {
  Shape shape = baddbmm_shape(input, b1, b2);
  expand(input, shape);
  Tensor in = stage_input(input, out);
  Tensor c = make_out(out, shape, b1->dtype, "baddbmm");
  load_input(c, in, beta);
  gemm_out(c, b1, b2, alpha, beta, "baddbmm");
  return c;
}

Tensor addbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha,
              const Tensor& out) {
  Shape shape = addbmm_shape(input, b1, b2);
  expand(input, shape);
  Tensor in = stage_input(input, out);
  Tensor c = make_out(out, shape, b1->dtype, "addbmm");
  load_input(c, in, beta);
  gemm_out(c, b1, b2, alpha, beta, "addmm_impl_cpu_", /*sum=*/true);
  return c;
}

namespace {
void check_inplace_shape(const Tensor& self, const Shape& shape) {
  EMBER_CHECK(self->sizes == shape, std::runtime_error, "Bad in-place call: input tensor size ",
              shape_str(self->sizes), " and output tensor size ", shape_str(shape),
              " should match");
}
}  // namespace

void addmm_(const Tensor& self, const Tensor& m1, const Tensor& m2, Scalar beta, Scalar alpha) {
  check_inplace_shape(self, addmm_shape(self, m1, m2));
  check_inplace_writable(self, "addmm_");
  gemm_out(self, m1, m2, alpha, beta, "addmm_impl_cpu_");
}

void addmv_(const Tensor& self, const Tensor& mat, const Tensor& vec, Scalar beta, Scalar alpha) {
  check_inplace_shape(self, addmv_shape(self, mat, vec));
  check_inplace_writable(self, "addmv_");
  gemm_out(unsqueeze(self, 1), mat, unsqueeze(vec, 1), alpha, beta, "addmv_impl_cpu");
}

void baddbmm_(const Tensor& self, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha) {
  check_inplace_shape(self, baddbmm_shape(self, b1, b2));
  check_inplace_writable(self, "baddbmm_");
  gemm_out(self, b1, b2, alpha, beta, "baddbmm");
}

void addbmm_(const Tensor& self, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha) {
  check_inplace_shape(self, addbmm_shape(self, b1, b2));
  check_inplace_writable(self, "addbmm_");
  gemm_out(self, b1, b2, alpha, beta, "addmm_impl_cpu_", /*sum=*/true);
}

}  // namespace ember
