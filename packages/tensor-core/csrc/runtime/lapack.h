// lapack.h - LAPACK routines from the same OpenBLAS library as blas.h (scipy-openblas32).
//
// OpenBLAS ships the reference LAPACK (plus its own faster getrf/potrf/getrs/...), so ember needs
// no SciPy and no second library: the routines are looked up in the library blas.h loads, by their
// Fortran names ("dgetrf_", tried with the "scipy_" prefix first), once, on first use.
//
// Conventions are Fortran's: matrices are column-major, `lda` is the column stride, integers are
// 32-bit (the scipy-openblas32 build), every argument is passed by pointer, and each CHARACTER
// argument has a hidden length argument (passed here; harmless for routines written in C).
// The wrappers below take values, return LAPACK's `info` (0 = success, < 0 = bad argument,
// > 0 = the routine's numerical failure code), and are templated on float / double (getrf,
// getri and getrs also on std::complex<float> / <double>: cgetrf, zgetrs, ...).
// Workspace queries (lwork = -1) are done by the wrappers: callers never size workspaces.
// Throws std::runtime_error when the library or a routine is missing.
#pragma once

#include <cstdint>

namespace ember {
namespace lapack {

using lapack_int = int32_t;

// LU with partial pivoting: A = P L U (m x n). ipiv has min(m, n) entries (1-based).
template <class T> lapack_int getrf(lapack_int m, lapack_int n, T* a, lapack_int lda, lapack_int* ipiv);
// Inverse from getrf's factors (n x n, in place).
template <class T> lapack_int getri(lapack_int n, T* a, lapack_int lda, const lapack_int* ipiv);
// Solves op(A) X = B from getrf's factors; B is n x nrhs, overwritten by X. trans: 'N', 'T' or
// (complex) 'C'.
template <class T>
lapack_int getrs(char trans, lapack_int n, lapack_int nrhs, const T* a, lapack_int lda,
                 const lapack_int* ipiv, T* b, lapack_int ldb);
// C (m x n) replaced by op(Q) C (side 'L') or C op(Q) ('R'), Q = H_1 ... H_k from geqrf's
// reflectors in a (lda x k); trans 'N' or 'T' ('C' for complex T: unmqr).
template <class T>
lapack_int ormqr(char side, char trans, lapack_int m, lapack_int n, lapack_int k, const T* a,
                 lapack_int lda, const T* tau, T* c, lapack_int ldc);
// Symmetric indefinite (Bunch-Kaufman) factorization A = L D L^T (uplo 'L'); ipiv as LAPACK's
// (negative entries mark 2 x 2 blocks of D). For complex T, hermitian picks L D L^H (hetrf).
template <class T>
lapack_int sytrf(char uplo, lapack_int n, T* a, lapack_int lda, lapack_int* ipiv, bool hermitian);
// Solves A X = B from sytrf's factors; B is n x nrhs, overwritten by X.
template <class T>
lapack_int sytrs(char uplo, lapack_int n, lapack_int nrhs, const T* a, lapack_int lda,
                 const lapack_int* ipiv, T* b, lapack_int ldb, bool hermitian);
// Cholesky: A = U^H U (uplo 'U') or L L^H ('L'); only that triangle is read and written.
template <class T> lapack_int potrf(char uplo, lapack_int n, T* a, lapack_int lda);
// Solves A X = B from potrf's factor.
template <class T>
lapack_int potrs(char uplo, lapack_int n, lapack_int nrhs, const T* a, lapack_int lda, T* b,
                 lapack_int ldb);
// Triangular solve (BLAS-3, Fortran interface): op(A) X = alpha B with A n x n triangular, B
// n x nrhs overwritten by X (side 'L'). No singularity check: a zero diagonal gives inf/nan.
template <class T>
void trsm(char uplo, char trans, char diag, lapack_int n, lapack_int nrhs, T alpha, const T* a,
          lapack_int lda, T* b, lapack_int ldb);
// QR: R in the upper triangle, Householder reflectors below it and in tau (min(m, n) entries).
template <class T> lapack_int geqrf(lapack_int m, lapack_int n, T* a, lapack_int lda, T* tau);
// Forms the m x n matrix Q with orthonormal columns from k reflectors of geqrf (n <= m; ungqr
// for complex T).
template <class T>
lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, T* a, lapack_int lda, const T* tau);
// SVD by divide and conquer. jobz: 'A' (full U, VT), 'S' (min(m, n) columns/rows), 'N' (values
// only; u and vt are not referenced). A is destroyed.
template <class T>
lapack_int gesdd(char jobz, lapack_int m, lapack_int n, T* a, lapack_int lda, T* s, T* u,
                 lapack_int ldu, T* vt, lapack_int ldvt);
// Symmetric eigendecomposition by divide and conquer: eigenvalues ascending in w; with jobz 'V'
// the eigenvectors replace A's columns.
template <class T>
lapack_int syevd(char jobz, char uplo, lapack_int n, T* a, lapack_int lda, T* w);
// The same for a Hermitian complex T (cheevd / zheevd): real eigenvalues w (R, T's real type).
template <class T, class R>
lapack_int heevd(char jobz, char uplo, lapack_int n, T* a, lapack_int lda, R* w);
// gesdd for complex T (cgesdd / zgesdd): real singular values s (R, T's real type); vt is V^H.
template <class T, class R>
lapack_int gesdd_complex(char jobz, lapack_int m, lapack_int n, T* a, lapack_int lda, R* s, T* u,
                         lapack_int ldu, T* vt, lapack_int ldvt);
// General eigendecomposition, complex T only (cgeev / zgeev): eigenvalues in w, with jobvr 'V'
// the right eigenvectors (unit norm, largest component real) in vr's columns. A is destroyed.
template <class T>
lapack_int geev(char jobvr, lapack_int n, T* a, lapack_int lda, T* w, T* vr, lapack_int ldvr);
// The same for real T (sgeev / dgeev): eigenvalues wr + i wi, conjugate pairs adjacent (positive
// imaginary part first); a pair's eigenvectors are vr[:, j] +- i vr[:, j + 1].
template <class T>
lapack_int geev_real(char jobvr, lapack_int n, T* a, lapack_int lda, T* wr, T* wi, T* vr,
                     lapack_int ldvr);
// Least squares. gels: QR, A of full rank (also for complex T); gelsy: complete orthogonal
// factorization with column pivoting (rank in *rank); gelsd: SVD (rank and singular values s,
// min(m, n) entries); gelsy_complex / gelsd_complex: cgelsy, zgelsd, ... (real rcond and s).
// B is max(m, n) x nrhs on entry (ldb >= max(1, m, n)) and holds the n x nrhs solution on exit.
template <class T>
lapack_int gels(lapack_int m, lapack_int n, lapack_int nrhs, T* a, lapack_int lda, T* b,
                lapack_int ldb);
template <class T>
lapack_int gelsy(lapack_int m, lapack_int n, lapack_int nrhs, T* a, lapack_int lda, T* b,
                 lapack_int ldb, T rcond, lapack_int* rank);
template <class T>
lapack_int gelsd(lapack_int m, lapack_int n, lapack_int nrhs, T* a, lapack_int lda, T* b,
                 lapack_int ldb, T* s, T rcond, lapack_int* rank);
template <class T, class R>
lapack_int gelsy_complex(lapack_int m, lapack_int n, lapack_int nrhs, T* a, lapack_int lda, T* b,
                         lapack_int ldb, R rcond, lapack_int* rank);
template <class T, class R>
lapack_int gelsd_complex(lapack_int m, lapack_int n, lapack_int nrhs, T* a, lapack_int lda, T* b,
                         lapack_int ldb, R* s, R rcond, lapack_int* rank);

}  // namespace lapack
}  // namespace ember
