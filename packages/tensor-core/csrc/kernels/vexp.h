// vexp.h: an exp, a tanh and an erf that GCC vectorises, and a branch-free select, for the hot loops
// (math.h's exp/sigmoid/tanh, softmax, the recurrent cells). glibc's expf/tanhf are scalar calls.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// The helpers that run inside vectorised loops are always inlined: a call there keeps the loop
// scalar, and GCC declines to inline vexpf once a file has grown by its unit-growth limit (it did
// in the AVX2/AVX-512 kernel copies, which then called the default copy's out-of-line vexpf).
#define EMBER_ALWAYS_INLINE inline __attribute__((always_inline))

// Whether the target has a fused multiply-add instruction: x86-64 from x86-64-v3 (-mfma), every
// aarch64 CPU. Where it has one, the compiler also contracts a*b+c into it on its own (its
// default), so the kernels that choose between one and two roundings follow the same rule.
#if defined(__FMA__) || defined(__aarch64__)
#define EMBER_HAS_FMA 1
#else
#define EMBER_HAS_FMA 0
#endif

namespace ember::math {

// a * b + c: one fused instruction where the target has FMA; a multiply and an add elsewhere
// (std::fma without FMA is a call to libm's software fmaf, which keeps a loop scalar: 20x slower
// softmax in the x86-64-v2 kernels).
EMBER_ALWAYS_INLINE float madd(float a, float b, float c) {
#if EMBER_HAS_FMA
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// exp(r) for |r| <= ln2 / 2: Cephes' polynomial.
EMBER_ALWAYS_INLINE float exp_of_small(float r) {
  float p = 1.9875691500e-4f;
  p = madd(p, r, 1.3981999507e-3f);
  p = madd(p, r, 8.3334519073e-3f);
  p = madd(p, r, 4.1665795894e-2f);
  p = madd(p, r, 1.6666665459e-1f);
  p = madd(p, r, 5.0000001201e-1f);
  return madd(p * r, r, r) + 1.0f;
}

// x - n ln2 in two steps (Cody-Waite; the first constant has 16 bits, so its product is exact
// either way).
EMBER_ALWAYS_INLINE float ln2_remainder(float x, float n) {
  return madd(n, -1.428606765330187045e-06f, madd(n, -0.693145751953125f, x));
}

// exp(x - n ln2) for n = x log2(e) rounded.
EMBER_ALWAYS_INLINE float exp_of_remainder(float x, float n) {
  return exp_of_small(ln2_remainder(x, n));
}

// exp for the softmax loops, written without calls, branches or selects of float values so that
// GCC vectorises it (std::fmin/fmax calls, or a float select feeding later float math, stop it):
// Cephes polynomial, |rel err| < 2 ulp, with 2^n built from the bits of a float rounded by the
// 1.5 * 2^23 trick (fused multiply-adds where the CPU has them, so the last bit may differ
// between CPUs). Inputs below -104 (including -inf) give exactly 0, NaN gives NaN. Softmax only
// passes x - max <= 0; larger inputs overflow to inf as they should, up to x < 2^22.
EMBER_ALWAYS_INLINE float vexpf(float x) {
  uint32_t ub;
  std::memcpy(&ub, &x, 4);
  const uint32_t keep = (ub - 0xC2D00001u < 0x3CB00000u) ? 0u : 0xFFFFFFFFu;  // x < -104: 0
  const float magic = 12582912.0f;
  const float t = x * 1.44269504088896341f + magic;
  const float n = t - magic;
  int32_t tb;
  std::memcpy(&tb, &t, 4);
  const int32_t ni = tb - 0x4B400000;
  const float p = exp_of_remainder(x, n);
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  const int32_t b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  const float res = p * s1 * s2;
  uint32_t rb;
  std::memcpy(&rb, &res, 4);
  rb &= keep;
  float out;
  std::memcpy(&out, &rb, 4);
  return out;
}
EMBER_ALWAYS_INLINE double vexpf(double x) { return std::exp(x); }

// exp(x + lo) for x in [-87, 0], where the result is a normal float, without vexpf's range
// handling: 2^n straight from the bits of the rounded x log2(e) (the rounding constant carries the
// exponent's bias). A third fewer instructions, for loops whose speed is their instruction count
// (GELU's normal cdf). lo is a low-order part of the argument (x the rounded value of an exact
// x + lo), added to the remainder, which is small enough to keep its bits. Outside [-87, 0] the
// result is garbage (no clamp, to save its instructions): callers mask it out.
EMBER_ALWAYS_INLINE float vexpf_bounded(float x, float lo) {
  const float magic = 12582912.0f + 127.0f;  // 1.5 * 2^23, plus the bias
  const float t = madd(x, 1.44269504088896341f, magic);
  const float n = t - magic;
  int32_t tb;
  std::memcpy(&tb, &t, 4);
  const int32_t scale_bits = tb << 23;  // n + 127 in [1, 127]: the exponent field of 2^n
  float scale;
  std::memcpy(&scale, &scale_bits, 4);
  return exp_of_small(ln2_remainder(x, n) + lo) * scale;
}

// The unsigned integer type of T's size, to handle a value's bits (T itself above 8 bytes).
template <typename T>
using bits_t = std::conditional_t<sizeof(T) == 1, uint8_t,
               std::conditional_t<sizeof(T) == 2, uint16_t,
               std::conditional_t<sizeof(T) == 4, uint32_t,
               std::conditional_t<sizeof(T) == 8, uint64_t, T>>>>;

// m ? x : y without a branch (bit masks), so that a loop of it vectorises: with a random mask
// the branchy select mispredicted half the time (where() ran at 4 ns per element).
template <typename T> EMBER_ALWAYS_INLINE T blend(bool m, T x, T y) {
  if constexpr (std::is_arithmetic_v<T>) {
    using U = bits_t<T>;
    U xb, yb;
    std::memcpy(&xb, &x, sizeof(T));
    std::memcpy(&yb, &y, sizeof(T));
    const U mask = static_cast<U>(U(0) - static_cast<U>(m));
    const U r = static_cast<U>((xb & mask) | (yb & static_cast<U>(~mask)));
    T out;
    std::memcpy(&out, &r, sizeof(T));
    return out;
  } else {
    return m ? x : y;
  }
}

// Cephes' tanhf (~2 ulp), branch-free: the odd polynomial below |x| = 0.625, 1 - 2 / (e^2|x| + 1)
// with x's sign above, both computed and one picked with blend. NaN stays NaN, +-inf gives +-1.
EMBER_ALWAYS_INLINE float vtanhf(float x) {
  const float ax = std::fabs(x);
  const float big = std::copysign(1.0f - 2.0f / (vexpf(std::min(2.0f * ax, 100.0f)) + 1.0f), x);
  const float z = x * x;
  const float small =
      ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
        1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
  return blend(ax < 0.625f, std::copysign(small, x), big);  // copysign: tanh(-0) is -0
}

// erf in float, branch-free so that its loops vectorise (glibc's erff is a scalar call: 9 ns per
// element, and GELU is an erf per activation). |x| < 0.921875: x + x * p(x^2); above:
// 1 - exp(q(|x|)) with q a fit of log(erfc(|x|)) over [0.921875, 4] (erf(x) rounds to 1 in float
// beyond 3.92, and |x| is capped at 4), the sign put back. Both fits are least-squares on
// Chebyshev nodes against double-precision erf; the result is within 3 ulp of libm's erff. NaN
// stays NaN, +-inf gives +-1, erf(-0) is -0.
EMBER_ALWAYS_INLINE float verff(float x) {
  const float ax = std::fabs(x);
  const float s = x * x;
  float p = -6.008737252e-04f;
  p = madd(p, s, 4.997011677e-03f);
  p = madd(p, s, -2.676949626e-02f);
  p = madd(p, s, 1.128190486e-01f);
  p = madd(p, s, -3.761250330e-01f);
  p = madd(p, s, 1.283791512e-01f);
  const float small = madd(x, p, x);
  const float u = std::min(ax, 4.0f) - 2.5f;
  float q = 2.062473769e-08f;
  q = madd(q, u, -4.259023806e-08f);
  q = madd(q, u, -1.926213399e-07f);
  q = madd(q, u, 1.853200891e-06f);
  q = madd(q, u, -1.269294430e-05f);
  q = madd(q, u, 7.692460359e-05f);
  q = madd(q, u, -4.209833734e-04f);
  q = madd(q, u, 2.165536933e-03f);
  q = madd(q, u, -1.085805552e-02f);
  q = madd(q, u, -9.438937459e-01f);
  q = madd(q, u, -5.352680753e+00f);
  q = madd(q, u, -7.806815272e+00f);
  const float big = std::copysign(1.0f - vexpf(q), x);
  return blend(ax < 0.921875f, small, big);
}

}  // namespace ember::math
