// blas.h - matrix products through OpenBLAS, loaded at run time.
//
// The library comes from the scipy-openblas32 wheel (32-bit integers, symbols prefixed "scipy_").
// It is dlopen()ed lazily on first use instead of being linked, so the extension imports, and every
// non-BLAS op works, even when the wheel is missing or broken; the failure is reported, with its
// cause, only by the ops that need it. The path is supplied by the Python layer at import time.
#pragma once

#include <complex>
#include <cstdint>
#include <string>

namespace ember {
namespace blas {

// Remembers the shared library to load on first use. If no path is set, the soname
// "libscipy_openblas.so" is tried through the normal library search. Setting a path after a
// failed load allows a retry; once a library is loaded it stays (it cannot be safely unloaded).
void set_library_path(const std::string& path);

// Tries to load the library (once); false if it cannot be loaded.
bool available();

// Why the library could not be loaded ("" if it loaded or was not tried yet).
std::string load_error();

// Row-major GEMM: C = alpha * op(A) @ op(B) + beta * C, where op(A) is M x K and op(B) is K x N;
// lda/ldb/ldc are leading dimensions (row strides) in elements. With beta == 0, C is not read.
// Throws std::invalid_argument for negative sizes, leading dimensions too small, or any value that
// does not fit the library's 32-bit integers; std::runtime_error if the library is unavailable.
// M == 0, N == 0, K == 0 and alpha == 0 are handled here without the library.
void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void dgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
           const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
           int64_t ldc);
// sgemm / dgemm by the element type, for code templated over float and double.
inline void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha,
                 const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                 int64_t ldc) {
  sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
                 const double* A, int64_t lda, const double* B, int64_t ldb, double beta,
                 double* C, int64_t ldc) {
  dgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
// complex64 / complex128 (cblas_cgemm / cblas_zgemm; op is the transpose, not the conjugate one)
void cgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, std::complex<float> alpha,
           const std::complex<float>* A, int64_t lda, const std::complex<float>* B, int64_t ldb,
           std::complex<float> beta, std::complex<float>* C, int64_t ldc);
void zgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, std::complex<double> alpha,
           const std::complex<double>* A, int64_t lda, const std::complex<double>* B, int64_t ldb,
           std::complex<double> beta, std::complex<double>* C, int64_t ldc);

// Looks up `name`, then "scipy_" + name, in the loaded library (for LAPACK and other routines);
// nullptr if neither exists. Loads the library if needed; std::runtime_error if it cannot.
void* symbol(const char* name);

// OpenBLAS's threads. The library runs every call on the calling thread: ember's pool supplies
// the parallelism (it splits products into panels or batches). OpenBLAS's workers busy-wait for
// work, and on a busy machine, or beside another library's pool, they thrash (a 20x256x1024
// product went from 0.15 ms to 20 ms), and switching the count per call costs too.
// While a Threaded scope lives (and no SingleThreaded one does), calls use set_num_threads's count:
// for a caller that has no parallelism of its own (one sample's convolution). Scopes nest and
// overlap across threads (counted); SingleThreaded wins. Both are no-ops without the library.
class SingleThreaded {
 public:
  SingleThreaded();
  ~SingleThreaded();
  SingleThreaded(const SingleThreaded&) = delete;
  SingleThreaded& operator=(const SingleThreaded&) = delete;

 private:
  bool active_ = false;  // this scope holds a count
};

class Threaded {
 public:
  Threaded();
  ~Threaded();
  Threaded(const Threaded&) = delete;
  Threaded& operator=(const Threaded&) = delete;

 private:
  bool active_ = false;
};

// The thread count Threaded scopes give OpenBLAS (n >= 1, else std::invalid_argument);
// ember.set_num_threads sets it with the pool's.
void set_num_threads(int n);

}  // namespace blas
}  // namespace ember
