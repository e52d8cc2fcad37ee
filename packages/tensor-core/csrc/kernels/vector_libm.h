// vector_libm.h: lets GCC vectorise the loops of ops/cpu/unary.cpp and binary.cpp that call libm's
// transcendental functions (std::cos, std::log1p, std::pow, ...), through glibc's vector math library
// (libmvec: _ZGVbN2v_cos for SSE4, _ZGVdN4v_cos for AVX2, _ZGVeN8v_cos for AVX-512).
//
// glibc declares these variants itself only under -ffast-math, which ember does not use (NaN and
// inf must behave). Redeclaring the functions with GCC's `simd` attribute gives the vectoriser
// the same permission and nothing else. libmvec's results are within a few ulps of the scalar
// functions' (glibc's manual lists each; tests/test_ops_elementwise.py measures them), and it
// handles NaN, inf, signed zeros and huge arguments as the scalar functions do. A loop's tail
// and strided runs still call the scalar functions, as torch's strided loops do.
//
// setup.py defines EMBER_VECTOR_LIBM where the compiler and C library have these (GCC on x86-64
// glibc >= 2.35, checked by linking a probe); elsewhere this header declares nothing.
#pragma once
#include <cmath>

// The functions whose vector forms ember uses: all that libmvec has, of one argument and of two.
#define EMBER_VECTOR_LIBM_FUNCTIONS(X)                                                      \
  X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) X(acosh)    \
  X(atanh) X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) X(erf) X(erfc)
#define EMBER_VECTOR_LIBM_FUNCTIONS2(X2) X2(pow) X2(atan2) X2(hypot)

#if defined(EMBER_VECTOR_LIBM) && defined(__x86_64__) && defined(__GLIBC__) && \
    !defined(__clang__) && !defined(__FAST_MATH__)
#define EMBER_VECTOR_FN(name)                                                   \
  __attribute__((__simd__("notinbranch"))) double name(double) __THROW;       \
  __attribute__((__simd__("notinbranch"))) float name##f(float) __THROW;
#define EMBER_VECTOR_FN2(name)                                                  \
  __attribute__((__simd__("notinbranch"))) double name(double, double) __THROW; \
  __attribute__((__simd__("notinbranch"))) float name##f(float, float) __THROW;
extern "C" {
EMBER_VECTOR_LIBM_FUNCTIONS(EMBER_VECTOR_FN)
EMBER_VECTOR_LIBM_FUNCTIONS2(EMBER_VECTOR_FN2)
}
#undef EMBER_VECTOR_FN
#undef EMBER_VECTOR_FN2
#define EMBER_VECTOR_LIBM_ACTIVE 1
#else
#define EMBER_VECTOR_LIBM_ACTIVE 0
#endif
