// lapack.cpp - see lapack.h. Each routine is resolved once (a function-local static, so the lookup
// is thread-safe); workspaces are sized by LAPACK's own query (lwork = -1) and held in vectors.
#include "runtime/lapack.h"

#include <algorithm>
#include <complex>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/blas.h"

namespace ember {
namespace lapack {
namespace {

using I = lapack_int;
using L = std::size_t;  // gfortran's hidden CHARACTER length argument

template <class F> F resolve(const char* name) {
  void* p = blas::symbol(name);
  if (!p)
    throw std::runtime_error(std::string("ember: the OpenBLAS library exports no LAPACK routine ") +
                             name + "; reinstall scipy-openblas32");
  return reinterpret_cast<F>(p);
}

// LAPACK's type letter: s, d, c (complex<float>), z (complex<double>).
template <class T> constexpr const char* type_letter() {
  if constexpr (std::is_same_v<T, float>) return "s";
  else if constexpr (std::is_same_v<T, double>) return "d";
  else if constexpr (std::is_same_v<T, std::complex<float>>) return "c";
  else return "z";
}

// The routine `<letter><name>_` for T, resolved on first use.
#define EMBER_LAPACK_FN(var, type, name) \
  static const auto var =                \
      reinterpret_cast<type>(resolve<void*>((std::string(type_letter<T>()) + name "_").c_str()))

// The routine's name: the unitary ones (ungqr, unmqr, hetrf, ...) replace the orthogonal or
// symmetric ones for complex T.
template <class T> constexpr const char* pick(const char* real, const char* cplx) {
  return std::is_floating_point_v<T> ? real : cplx;
}
#define EMBER_LAPACK_FN2(var, type, real, cplx)                                           \
  static const auto var = reinterpret_cast<type>(resolve<void*>(                        \
      (std::string(type_letter<T>()) + pick<T>(real, cplx) + "_").c_str()))

// A workspace query's answer (a complex routine answers in the real part).
template <class T> I query_size(T w) {
  return static_cast<I>(std::max<double>(std::real(w), 1.0)) + 1;
}

}  // namespace

template <class T> I getrf(I m, I n, T* a, I lda, I* ipiv) {
  using F = void (*)(const I*, const I*, T*, const I*, I*, I*);
  EMBER_LAPACK_FN(fn, F, "getrf");
  I info = 0;
  fn(&m, &n, a, &lda, ipiv, &info);
  return info;
}

template <class T> I getri(I n, T* a, I lda, const I* ipiv) {
  using F = void (*)(const I*, T*, const I*, const I*, T*, const I*, I*);
  EMBER_LAPACK_FN(fn, F, "getri");
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&n, a, &lda, ipiv, &wq, &lwork, &info);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&n, a, &lda, ipiv, work.data(), &lwork, &info);
  return info;
}

template <class T> I getrs(char trans, I n, I nrhs, const T* a, I lda, const I* ipiv, T* b, I ldb) {
  using F = void (*)(const char*, const I*, const I*, const T*, const I*, const I*, T*, const I*,
                     I*, L);
  EMBER_LAPACK_FN(fn, F, "getrs");
  I info = 0;
  fn(&trans, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);
  return info;
}

template <class T> I potrf(char uplo, I n, T* a, I lda) {
  using F = void (*)(const char*, const I*, T*, const I*, I*, L);
  EMBER_LAPACK_FN(fn, F, "potrf");
  I info = 0;
  fn(&uplo, &n, a, &lda, &info, 1);
  return info;
}

template <class T> I potrs(char uplo, I n, I nrhs, const T* a, I lda, T* b, I ldb) {
  using F = void (*)(const char*, const I*, const I*, const T*, const I*, T*, const I*, I*, L);
  EMBER_LAPACK_FN(fn, F, "potrs");
  I info = 0;
  fn(&uplo, &n, &nrhs, a, &lda, b, &ldb, &info, 1);
  return info;
}

template <class T>
void trsm(char uplo, char trans, char diag, I n, I nrhs, T alpha, const T* a, I lda, T* b, I ldb) {
  using F = void (*)(const char*, const char*, const char*, const char*, const I*, const I*,
                     const T*, const T*, const I*, T*, const I*, L, L, L, L);
  EMBER_LAPACK_FN(fn, F, "trsm");
  const char side = 'L';
  fn(&side, &uplo, &trans, &diag, &n, &nrhs, &alpha, a, &lda, b, &ldb, 1, 1, 1, 1);
}

template <class T>
I ormqr(char side, char trans, I m, I n, I k, const T* a, I lda, const T* tau, T* c, I ldc) {
  using F = void (*)(const char*, const char*, const I*, const I*, const I*, const T*, const I*,
                     const T*, T*, const I*, T*, const I*, I*, L, L);
  EMBER_LAPACK_FN2(fn, F, "ormqr", "unmqr");
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, &wq, &lwork, &info, 1, 1);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work.data(), &lwork, &info, 1, 1);
  return info;
}

template <class T> I sytrf(char uplo, I n, T* a, I lda, I* ipiv, bool hermitian) {
  using F = void (*)(const char*, const I*, T*, const I*, I*, T*, const I*, I*, L);
  EMBER_LAPACK_FN(sy, F, "sytrf");
  EMBER_LAPACK_FN2(he, F, "sytrf", "hetrf");
  const F fn = hermitian ? he : sy;
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&uplo, &n, a, &lda, ipiv, &wq, &lwork, &info, 1);
  if (info != 0) return info;
  lwork = std::max<I>(query_size(wq), 1);
  std::vector<T> work(lwork);
  fn(&uplo, &n, a, &lda, ipiv, work.data(), &lwork, &info, 1);
  return info;
}

template <class T>
I sytrs(char uplo, I n, I nrhs, const T* a, I lda, const I* ipiv, T* b, I ldb, bool hermitian) {
  using F = void (*)(const char*, const I*, const I*, const T*, const I*, const I*, T*, const I*,
                     I*, L);
  EMBER_LAPACK_FN(sy, F, "sytrs");
  EMBER_LAPACK_FN2(he, F, "sytrs", "hetrs");
  const F fn = hermitian ? he : sy;
  I info = 0;
  fn(&uplo, &n, &nrhs, a, &lda, ipiv, b, &ldb, &info, 1);
  return info;
}

template <class T> I geqrf(I m, I n, T* a, I lda, T* tau) {
  using F = void (*)(const I*, const I*, T*, const I*, T*, T*, const I*, I*);
  EMBER_LAPACK_FN(fn, F, "geqrf");
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&m, &n, a, &lda, tau, &wq, &lwork, &info);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&m, &n, a, &lda, tau, work.data(), &lwork, &info);
  return info;
}

template <class T> I orgqr(I m, I n, I k, T* a, I lda, const T* tau) {
  using F = void (*)(const I*, const I*, const I*, T*, const I*, const T*, T*, const I*, I*);
  EMBER_LAPACK_FN2(fn, F, "orgqr", "ungqr");
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&m, &n, &k, a, &lda, tau, &wq, &lwork, &info);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&m, &n, &k, a, &lda, tau, work.data(), &lwork, &info);
  return info;
}

template <class T> I gesdd(char jobz, I m, I n, T* a, I lda, T* s, T* u, I ldu, T* vt, I ldvt) {
  using F = void (*)(const char*, const I*, const I*, T*, const I*, T*, T*, const I*, T*,
                     const I*, T*, const I*, I*, I*, L);
  EMBER_LAPACK_FN(fn, F, "gesdd");
  std::vector<I> iwork(8 * static_cast<size_t>(std::max<I>(1, std::min(m, n))));
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &wq, &lwork, iwork.data(), &info, 1);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork, iwork.data(), &info, 1);
  return info;
}

template <class T> I syevd(char jobz, char uplo, I n, T* a, I lda, T* w) {
  using F = void (*)(const char*, const char*, const I*, T*, const I*, T*, T*, const I*, I*,
                     const I*, I*, L, L);
  EMBER_LAPACK_FN(fn, F, "syevd");
  I info = 0, lwork = -1, liwork = -1, iq = 0;
  T wq = 0;
  fn(&jobz, &uplo, &n, a, &lda, w, &wq, &lwork, &iq, &liwork, &info, 1, 1);
  if (info != 0) return info;
  lwork = query_size(wq);
  liwork = std::max<I>(iq, 1);
  std::vector<T> work(lwork);
  std::vector<I> iwork(liwork);
  fn(&jobz, &uplo, &n, a, &lda, w, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  return info;
}

template <class T> I gels(I m, I n, I nrhs, T* a, I lda, T* b, I ldb) {
  using F = void (*)(const char*, const I*, const I*, const I*, T*, const I*, T*, const I*, T*,
                     const I*, I*, L);
  EMBER_LAPACK_FN(fn, F, "gels");
  const char trans = 'N';
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&trans, &m, &n, &nrhs, a, &lda, b, &ldb, &wq, &lwork, &info, 1);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&trans, &m, &n, &nrhs, a, &lda, b, &ldb, work.data(), &lwork, &info, 1);
  return info;
}

template <class T> I gelsy(I m, I n, I nrhs, T* a, I lda, T* b, I ldb, T rcond, I* rank) {
  using F = void (*)(const I*, const I*, const I*, T*, const I*, T*, const I*, I*, const T*, I*,
                     T*, const I*, I*);
  EMBER_LAPACK_FN(fn, F, "gelsy");
  std::vector<I> jpvt(std::max<I>(n, 1), 0);  // 0: every column is free to move
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&m, &n, &nrhs, a, &lda, b, &ldb, jpvt.data(), &rcond, rank, &wq, &lwork, &info);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&m, &n, &nrhs, a, &lda, b, &ldb, jpvt.data(), &rcond, rank, work.data(), &lwork, &info);
  return info;
}

template <class T> I gelsd(I m, I n, I nrhs, T* a, I lda, T* b, I ldb, T* s, T rcond, I* rank) {
  using F = void (*)(const I*, const I*, const I*, T*, const I*, T*, const I*, T*, const T*, I*,
                     T*, const I*, I*, I*);
  EMBER_LAPACK_FN(fn, F, "gelsd");
  I info = 0, lwork = -1, iq = 0;
  T wq = 0;
  fn(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, &wq, &lwork, &iq, &info);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  std::vector<I> iwork(std::max<I>(iq, 1));
  fn(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work.data(), &lwork, iwork.data(), &info);
  return info;
}

template <class T> I geev(char jobvr, I n, T* a, I lda, T* w, T* vr, I ldvr) {
  using R = typename T::value_type;
  using F = void (*)(const char*, const char*, const I*, T*, const I*, T*, T*, const I*, T*,
                     const I*, T*, const I*, R*, I*, L, L);
  EMBER_LAPACK_FN(fn, F, "geev");
  const char jobvl = 'N';
  I info = 0, lwork = -1, one = 1;
  T wq = 0, vl_dummy = 0;
  std::vector<R> rwork(2 * static_cast<std::size_t>(std::max<I>(n, 1)));
  fn(&jobvl, &jobvr, &n, a, &lda, w, &vl_dummy, &one, vr, &ldvr, &wq, &lwork, rwork.data(), &info,
     1, 1);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&jobvl, &jobvr, &n, a, &lda, w, &vl_dummy, &one, vr, &ldvr, work.data(), &lwork,
     rwork.data(), &info, 1, 1);
  return info;
}

template <class T, class R>
I gesdd_complex(char jobz, I m, I n, T* a, I lda, R* s, T* u, I ldu, T* vt, I ldvt) {
  using F = void (*)(const char*, const I*, const I*, T*, const I*, R*, T*, const I*, T*,
                     const I*, T*, const I*, R*, I*, I*, L);
  EMBER_LAPACK_FN(fn, F, "gesdd");
  const std::size_t mn = static_cast<std::size_t>(std::max<I>(1, std::min(m, n)));
  const std::size_t mx = static_cast<std::size_t>(std::max<I>(1, std::max(m, n)));
  // LAPACK's rwork size: 7 mn values only (5 mn + 7 for some releases), else the larger formula
  const std::size_t lrwork = jobz == 'N' ? 7 * mn + 7 : mn * std::max(5 * mn + 7, 2 * mx + 2 * mn + 1);
  std::vector<R> rwork(lrwork);
  std::vector<I> iwork(8 * mn);
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &wq, &lwork, rwork.data(), iwork.data(),
     &info, 1);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork, rwork.data(),
     iwork.data(), &info, 1);
  return info;
}

template <class T> I geev_real(char jobvr, I n, T* a, I lda, T* wr, T* wi, T* vr, I ldvr) {
  using F = void (*)(const char*, const char*, const I*, T*, const I*, T*, T*, T*, const I*, T*,
                     const I*, T*, const I*, I*, L, L);
  EMBER_LAPACK_FN(fn, F, "geev");
  const char jobvl = 'N';
  I info = 0, lwork = -1, one = 1;
  T wq = 0, vl_dummy = 0;
  fn(&jobvl, &jobvr, &n, a, &lda, wr, wi, &vl_dummy, &one, vr, &ldvr, &wq, &lwork, &info, 1, 1);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&jobvl, &jobvr, &n, a, &lda, wr, wi, &vl_dummy, &one, vr, &ldvr, work.data(), &lwork, &info,
     1, 1);
  return info;
}

template <class T, class R> I heevd(char jobz, char uplo, I n, T* a, I lda, R* w) {
  using F = void (*)(const char*, const char*, const I*, T*, const I*, R*, T*, const I*, R*,
                     const I*, I*, const I*, I*, L, L);
  EMBER_LAPACK_FN(fn, F, "heevd");
  I info = 0, lwork = -1, lrwork = -1, liwork = -1, iq = 0;
  T wq = 0;
  R rq = 0;
  fn(&jobz, &uplo, &n, a, &lda, w, &wq, &lwork, &rq, &lrwork, &iq, &liwork, &info, 1, 1);
  if (info != 0) return info;
  lwork = query_size(wq);
  lrwork = query_size(rq);
  liwork = std::max<I>(iq, 1);
  std::vector<T> work(lwork);
  std::vector<R> rwork(lrwork);
  std::vector<I> iwork(liwork);
  fn(&jobz, &uplo, &n, a, &lda, w, work.data(), &lwork, rwork.data(), &lrwork, iwork.data(),
     &liwork, &info, 1, 1);
  return info;
}

template <class T, class R>
I gelsy_complex(I m, I n, I nrhs, T* a, I lda, T* b, I ldb, R rcond, I* rank) {
  using F = void (*)(const I*, const I*, const I*, T*, const I*, T*, const I*, I*, const R*, I*,
                     T*, const I*, R*, I*);
  EMBER_LAPACK_FN(fn, F, "gelsy");
  std::vector<I> jpvt(std::max<I>(n, 1), 0);
  std::vector<R> rwork(2 * static_cast<std::size_t>(std::max<I>(n, 1)));
  I info = 0, lwork = -1;
  T wq = 0;
  fn(&m, &n, &nrhs, a, &lda, b, &ldb, jpvt.data(), &rcond, rank, &wq, &lwork, rwork.data(), &info);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  fn(&m, &n, &nrhs, a, &lda, b, &ldb, jpvt.data(), &rcond, rank, work.data(), &lwork,
     rwork.data(), &info);
  return info;
}

template <class T, class R>
I gelsd_complex(I m, I n, I nrhs, T* a, I lda, T* b, I ldb, R* s, R rcond, I* rank) {
  using F = void (*)(const I*, const I*, const I*, T*, const I*, T*, const I*, R*, const R*, I*,
                     T*, const I*, R*, I*, I*);
  EMBER_LAPACK_FN(fn, F, "gelsd");
  I info = 0, lwork = -1, iq = 0;
  T wq = 0;
  R rq = 0;
  fn(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, &wq, &lwork, &rq, &iq, &info);
  if (info != 0) return info;
  lwork = query_size(wq);
  std::vector<T> work(lwork);
  std::vector<R> rwork(query_size(rq));
  std::vector<I> iwork(std::max<I>(iq, 1));
  fn(&m, &n, &nrhs, a, &lda, b, &ldb, s, &rcond, rank, work.data(), &lwork, rwork.data(),
     iwork.data(), &info);
  return info;
}

// The routines whose complex version has the real one's signature (with unmqr, ungqr, hetrf, ...
// for the orthogonal and symmetric ones).
#define EMBER_LAPACK_INSTANTIATE_ANY(T)                                                      \
  template I potrf<T>(char, I, T*, I);                                                       \
  template I potrs<T>(char, I, I, const T*, I, T*, I);                                       \
  template void trsm<T>(char, char, char, I, I, T, const T*, I, T*, I);                     \
  template I ormqr<T>(char, char, I, I, I, const T*, I, const T*, T*, I);                    \
  template I sytrf<T>(char, I, T*, I, I*, bool);                                             \
  template I sytrs<T>(char, I, I, const T*, I, const I*, T*, I, bool);                       \
  template I geqrf<T>(I, I, T*, I, T*);                                                      \
  template I orgqr<T>(I, I, I, T*, I, const T*);                                             \
  template I gels<T>(I, I, I, T*, I, T*, I);
#define EMBER_LAPACK_INSTANTIATE(T)                                                          \
  template I getrf<T>(I, I, T*, I, I*);                                                      \
  template I getri<T>(I, T*, I, const I*);                                                   \
  template I getrs<T>(char, I, I, const T*, I, const I*, T*, I);                             \
  EMBER_LAPACK_INSTANTIATE_ANY(T)                                                            \
  template I gesdd<T>(char, I, I, T*, I, T*, T*, I, T*, I);                                  \
  template I syevd<T>(char, char, I, T*, I, T*);                                             \
  template I gelsy<T>(I, I, I, T*, I, T*, I, T, I*);                                         \
  template I gelsd<T>(I, I, I, T*, I, T*, I, T*, T, I*);                                     \
  template I geev_real<T>(char, I, T*, I, T*, T*, T*, I);
EMBER_LAPACK_INSTANTIATE(float)
EMBER_LAPACK_INSTANTIATE(double)
EMBER_LAPACK_INSTANTIATE_ANY(std::complex<float>)
EMBER_LAPACK_INSTANTIATE_ANY(std::complex<double>)
#define EMBER_LAPACK_INSTANTIATE_COMPLEX(T, R)                                              \
  template I heevd<T, R>(char, char, I, T*, I, R*);                                          \
  template I gelsy_complex<T, R>(I, I, I, T*, I, T*, I, R, I*);                              \
  template I gelsd_complex<T, R>(I, I, I, T*, I, T*, I, R*, R, I*);
EMBER_LAPACK_INSTANTIATE_COMPLEX(std::complex<float>, float)
EMBER_LAPACK_INSTANTIATE_COMPLEX(std::complex<double>, double)
// complex: the LU family (trans 'C' in getrs: the conjugate transpose)
template I getrf<std::complex<float>>(I, I, std::complex<float>*, I, I*);
template I getri<std::complex<float>>(I, std::complex<float>*, I, const I*);
template I getrs<std::complex<float>>(char, I, I, const std::complex<float>*, I, const I*,
                                      std::complex<float>*, I);
template I getrf<std::complex<double>>(I, I, std::complex<double>*, I, I*);
template I getri<std::complex<double>>(I, std::complex<double>*, I, const I*);
template I getrs<std::complex<double>>(char, I, I, const std::complex<double>*, I, const I*,
                                       std::complex<double>*, I);
template I gesdd_complex<std::complex<float>, float>(char, I, I, std::complex<float>*, I, float*,
                                                     std::complex<float>*, I, std::complex<float>*,
                                                     I);
template I gesdd_complex<std::complex<double>, double>(char, I, I, std::complex<double>*, I,
                                                       double*, std::complex<double>*, I,
                                                       std::complex<double>*, I);
template I geev<std::complex<float>>(char, I, std::complex<float>*, I, std::complex<float>*,
                                     std::complex<float>*, I);
template I geev<std::complex<double>>(char, I, std::complex<double>*, I, std::complex<double>*,
                                      std::complex<double>*, I);

}  // namespace lapack
}  // namespace ember
