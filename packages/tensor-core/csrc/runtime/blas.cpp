// blas.cpp - see blas.h. Loading is double-checked: an atomic status for the hot path, a mutex
// for the one-time dlopen (which may be retried after set_library_path if it failed).
#include "runtime/blas.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <stdexcept>

namespace ember {
namespace blas {
namespace {

// CBLAS enum values (ABI-stable since the reference CBLAS).
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

using sgemm_fn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                          float, float*, int);
using dgemm_fn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                          int, double, double*, int);
using sgemv_fn = void (*)(int, int, int, int, float, const float*, int, const float*, int, float,
                          float*, int);
using dgemv_fn = void (*)(int, int, int, int, double, const double*, int, const double*, int,
                          double, double*, int);
using set_threads_fn = void (*)(int);
using get_threads_fn = int (*)();

enum Status { kNotTried = 0, kLoaded = 1, kFailed = 2 };

// Never destroyed, so a thread still multiplying matrices while the process exits is safe.
struct State {
  std::mutex mu;  // guards the fields below while loading; after kLoaded they are read-only
  std::string path;
  std::string error;
  void* handle = nullptr;
  sgemm_fn sgemm = nullptr;
  dgemm_fn dgemm = nullptr;
  sgemv_fn sgemv = nullptr;  // (optional: products with one row or column use them)
  dgemv_fn dgemv = nullptr;
  set_threads_fn set_threads = nullptr;
  get_threads_fn get_threads = nullptr;
  int wanted_threads = 0;   // from set_num_threads: what Threaded scopes give the library
  int current_threads = 0;  // the count the library runs with now (0: not set yet)
  int single_scopes = 0;    // live SingleThreaded scopes
  int threaded_scopes = 0;  // live Threaded scopes
};

std::atomic<int> g_status{kNotTried};

State& st() {
  static State* s = new State();
  return *s;
}

// The library runs on one thread unless a Threaded scope is live and no SingleThreaded one is.
// Called with st().mu held, once loaded.
void apply_threads_locked() {
  State& S = st();
  if (!S.set_threads) return;
  int want = 1;
  if (S.threaded_scopes > 0 && S.single_scopes == 0)
    want = S.wanted_threads > 0 ? S.wanted_threads : (S.get_threads ? S.get_threads() : 1);
  if (want != S.current_threads) {
    S.set_threads(want);
    S.current_threads = want;
  }
}

void* lookup(void* handle, const char* name) {
  if (void* p = dlsym(handle, name)) return p;
  return dlsym(handle, (std::string("scipy_") + name).c_str());
}

// Called with st().mu held.
void load_locked() {
  State& S = st();
  const std::string path = S.path.empty() ? std::string("libscipy_openblas.so") : S.path;
  const std::string prefix = "ember: OpenBLAS could not be loaded from " + path + ": ";
  dlerror();
  void* h = dlopen(path.c_str(), RTLD_LOCAL | RTLD_NOW);
  if (!h) {
    const char* err = dlerror();
    S.error = prefix + (err ? err : "unknown dlopen error") + ". Reinstall scipy-openblas32.";
    g_status.store(kFailed, std::memory_order_release);
    return;
  }
  auto s = reinterpret_cast<sgemm_fn>(lookup(h, "cblas_sgemm"));
  auto d = reinterpret_cast<dgemm_fn>(lookup(h, "cblas_dgemm"));
  if (!s || !d) {
    dlclose(h);
    S.error = prefix + "the library exports no cblas_sgemm/cblas_dgemm. Reinstall scipy-openblas32.";
    g_status.store(kFailed, std::memory_order_release);
    return;
  }
  S.handle = h;
  S.sgemm = s;
  S.dgemm = d;
  S.sgemv = reinterpret_cast<sgemv_fn>(lookup(h, "cblas_sgemv"));
  S.dgemv = reinterpret_cast<dgemv_fn>(lookup(h, "cblas_dgemv"));
  S.set_threads = reinterpret_cast<set_threads_fn>(lookup(h, "openblas_set_num_threads"));
  S.get_threads = reinterpret_cast<get_threads_fn>(lookup(h, "openblas_get_num_threads"));
  if (S.wanted_threads == 0 && S.get_threads) S.wanted_threads = S.get_threads();
  apply_threads_locked();  // one thread until a Threaded scope asks for more
  S.error.clear();
  g_status.store(kLoaded, std::memory_order_release);
}

bool ensure_loaded() {
  if (g_status.load(std::memory_order_acquire) == kLoaded) return true;
  std::lock_guard<std::mutex> lock(st().mu);
  if (g_status.load(std::memory_order_relaxed) == kNotTried) load_locked();
  return g_status.load(std::memory_order_relaxed) == kLoaded;
}

void require_loaded() {
  if (ensure_loaded()) return;
  std::string err = load_error();  // empty only if a new path was set meanwhile
  throw std::runtime_error(err.empty() ? "ember: OpenBLAS is not loaded yet" : err);
}

void check_fits(const char* op, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                int64_t ldc) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (M > kMax || N > kMax || K > kMax || lda > kMax || ldb > kMax || ldc > kMax)
    throw std::invalid_argument(
        std::string(op) + ": sizes too large for the 32-bit OpenBLAS (M=" + std::to_string(M) +
        ", N=" + std::to_string(N) + ", K=" + std::to_string(K) + ", lda=" + std::to_string(lda) +
        ", ldb=" + std::to_string(ldb) + ", ldc=" + std::to_string(ldc) +
        "); each must be at most 2147483647");
}

// Validates arguments; returns false when there is nothing for the library to do (after doing
// what BLAS would: C = beta * C, with beta == 0 writing zeros without reading C).
template <class T>
bool prepare(const char* op, bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha,
             int64_t lda, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (M < 0 || N < 0 || K < 0)
    throw std::invalid_argument(std::string(op) + ": negative size (M=" + std::to_string(M) +
                                ", N=" + std::to_string(N) + ", K=" + std::to_string(K) + ")");
  if (M == 0 || N == 0) return false;
  const int64_t min_lda = std::max<int64_t>(1, ta ? M : K);
  const int64_t min_ldb = std::max<int64_t>(1, tb ? K : N);
  const int64_t min_ldc = std::max<int64_t>(1, N);
  if (lda < min_lda || ldb < min_ldb || ldc < min_ldc)
    throw std::invalid_argument(std::string(op) + ": leading dimension too small (lda=" +
                                std::to_string(lda) + " needs >= " + std::to_string(min_lda) +
                                ", ldb=" + std::to_string(ldb) + " needs >= " +
                                std::to_string(min_ldb) + ", ldc=" + std::to_string(ldc) +
                                " needs >= " + std::to_string(min_ldc) + ")");
  check_fits(op, M, N, K, lda, ldb, ldc);
  if (K == 0 || alpha == T(0)) {
    for (int64_t i = 0; i < M; ++i) {
      T* row = C + i * ldc;
      if (beta == T(0))
        std::fill(row, row + N, T(0));
      else if (beta != T(1))
        for (int64_t j = 0; j < N; ++j) row[j] *= beta;
    }
    return false;
  }
  return true;
}

// A product with one column (N == 1) or one row (M == 1) as a matrix-vector product: OpenBLAS's
// GEMM packs its operands for a panel one wide all the same (Linear(128, 1) on 1024 rows: 30 us
// as GEMM, 10 as GEMV). False when the library has no GEMV (then GEMM does it).
template <typename T, typename Gemv>
bool as_gemv(Gemv gemv, bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
             int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (!gemv || (N != 1 && M != 1)) return false;
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  if (N == 1) {  // C[:, 0] = op(A) b, b the one column of op(B), written down C's column
    if (beta == T(0))  // (GEMV scales y by beta, and 0 * NaN of uninitialised memory is NaN)
      for (int64_t r = 0; r < M; ++r) C[r * ldc] = T(0);
    gemv(kRowMajor, ta ? kTrans : kNoTrans, i(ta ? K : M), i(ta ? M : K), alpha, A, i(lda), B,
         i(tb ? 1 : ldb), beta, C, i(ldc));
  } else {  // C[0, :] = op(B)^T a, a the one row of op(A)
    if (beta == T(0)) std::fill(C, C + N, T(0));
    gemv(kRowMajor, tb ? kNoTrans : kTrans, i(tb ? N : K), i(tb ? K : N), alpha, B, i(ldb), A,
         i(ta ? lda : 1), beta, C, 1);
  }
  return true;
}

}  // namespace

void set_library_path(const std::string& path) {
  State& S = st();
  std::lock_guard<std::mutex> lock(S.mu);
  S.path = path;
  if (g_status.load(std::memory_order_relaxed) == kFailed) {
    g_status.store(kNotTried, std::memory_order_relaxed);  // a new path deserves a new try
    S.error.clear();
  }
}

bool available() { return ensure_loaded(); }

std::string load_error() {
  State& S = st();
  std::lock_guard<std::mutex> lock(S.mu);
  return S.error;
}

void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (!prepare("ember.blas.sgemm", transA, transB, M, N, K, alpha, lda, ldb, beta, C, ldc)) return;
  require_loaded();
  if (as_gemv(st().sgemv, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  st().sgemm(kRowMajor, transA ? kTrans : kNoTrans, transB ? kTrans : kNoTrans, static_cast<int>(M),
          static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B,
          static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

void dgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
           const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
           int64_t ldc) {
  if (!prepare("ember.blas.dgemm", transA, transB, M, N, K, alpha, lda, ldb, beta, C, ldc)) return;
  require_loaded();
  if (as_gemv(st().dgemv, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  st().dgemm(kRowMajor, transA ? kTrans : kNoTrans, transB ? kTrans : kNoTrans, static_cast<int>(M),
          static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B,
          static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

// cblas_?gemm of the complex types: alpha and beta by address; looked up once, at first use.
using complex_gemm_fn = void (*)(int, int, int, int, int, int, const void*, const void*, int,
                                 const void*, int, const void*, void*, int);
template <typename C>
void complex_gemm(const char* op, const char* name, bool transA, bool transB, int64_t M, int64_t N,
                  int64_t K, C alpha, const C* A, int64_t lda, const C* B, int64_t ldb, C beta,
                  C* Cm, int64_t ldc) {
  if (!prepare(op, transA, transB, M, N, K, alpha, lda, ldb, beta, Cm, ldc)) return;
  require_loaded();
  static const auto fn = reinterpret_cast<complex_gemm_fn>(lookup(st().handle, name));
  if (!fn) throw std::runtime_error(std::string(op) + ": the BLAS library exports no " + name);
  fn(kRowMajor, transA ? kTrans : kNoTrans, transB ? kTrans : kNoTrans, static_cast<int>(M),
     static_cast<int>(N), static_cast<int>(K), &alpha, A, static_cast<int>(lda), B,
     static_cast<int>(ldb), &beta, Cm, static_cast<int>(ldc));
}

void cgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, std::complex<float> alpha,
           const std::complex<float>* A, int64_t lda, const std::complex<float>* B, int64_t ldb,
           std::complex<float> beta, std::complex<float>* C, int64_t ldc) {
  complex_gemm("ember.blas.cgemm", "cblas_cgemm", transA, transB, M, N, K, alpha, A, lda, B, ldb,
               beta, C, ldc);
}
void zgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, std::complex<double> alpha,
           const std::complex<double>* A, int64_t lda, const std::complex<double>* B, int64_t ldb,
           std::complex<double> beta, std::complex<double>* C, int64_t ldc) {
  complex_gemm("ember.blas.zgemm", "cblas_zgemm", transA, transB, M, N, K, alpha, A, lda, B, ldb,
               beta, C, ldc);
}

void* symbol(const char* name) {
  require_loaded();
  return lookup(st().handle, name);
}

void set_num_threads(int n) {
  if (n < 1)
    throw std::invalid_argument("ember.blas.set_num_threads: expected a positive number of threads, got " +
                                std::to_string(n));
  State& S = st();
  std::lock_guard<std::mutex> lock(S.mu);
  S.wanted_threads = n;
  if (g_status.load(std::memory_order_relaxed) == kLoaded) apply_threads_locked();
}

// Enters (+1) or leaves (-1) a scope counted in `count`; false when there is no library.
static bool adjust_scope(int State::*count, int delta) {
  if (delta > 0 && !ensure_loaded()) return false;
  State& S = st();
  std::lock_guard<std::mutex> lock(S.mu);
  S.*count += delta;
  apply_threads_locked();
  return true;
}

SingleThreaded::SingleThreaded() : active_(adjust_scope(&State::single_scopes, +1)) {}
SingleThreaded::~SingleThreaded() {
  if (active_) adjust_scope(&State::single_scopes, -1);
}

Threaded::Threaded() : active_(adjust_scope(&State::threaded_scopes, +1)) {}
Threaded::~Threaded() {
  if (active_) adjust_scope(&State::threaded_scopes, -1);
}

}  // namespace blas
}  // namespace ember
