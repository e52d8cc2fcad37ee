// math.h: scalar math used by the kernels, written so integer and floating types share one
// table entry; float exp/sigmoid/tanh/erf go through vexp.h so that their loops vectorise.
//
// The CUDA elementwise kernels are compiled at run time (NVRTC) from this same file and
// op_table.h (cuda/elementwise_source.cpp embeds both), so that both devices compute one formula.
// Under NVRTC (__CUDACC_RTC__) there is no C++ library: the kernel source's prelude supplies the
// few std:: names used here, and the CPU-only vector tricks (vexp.h) give way to CUDA's own math.
#pragma once
#ifdef __CUDACC_RTC__
#define EMBER_MATH __device__ inline
#define EMBER_MATH_HOT __device__ __forceinline__
#else
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/vexp.h"
#define EMBER_MATH inline
#define EMBER_MATH_HOT EMBER_ALWAYS_INLINE
#endif

namespace ember::math {

#ifdef __CUDACC_RTC__
template <typename T> EMBER_MATH_HOT T blend(bool m, T x, T y) { return m ? x : y; }
#endif

// float exp through vexpf, which is branch-free so that the elementwise loops vectorise (the
// branches on NaN and overflow that were here kept exp and sigmoid scalar: 4M floats took
// 27 ms). vexpf is exact below 2^22; std::min caps larger inputs (to +inf) and keeps a NaN.
#ifdef __CUDACC_RTC__
template <typename T> EMBER_MATH_HOT T exp(T x) { return std::exp(x); }
template <typename T> EMBER_MATH_HOT T tanh(T x) { return std::tanh(x); }
template <typename T> EMBER_MATH_HOT T erf(T x) { return std::erf(x); }
#else
template <typename T> EMBER_MATH_HOT T exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return vexpf(std::min(x, 100.0f));
  } else {
    return std::exp(x);
  }
}
template <typename T> EMBER_MATH_HOT T tanh(T x) {
  if constexpr (std::is_same_v<T, float>) return vtanhf(x);  // vectorises; glibc's tanhf does not
  else return std::tanh(x);
}
// float erf through verff (vectorises, within 3 ulp of erff); double keeps libm's erf.
template <typename T> EMBER_MATH_HOT T erf(T x) {
  if constexpr (std::is_same_v<T, float>) return verff(x);
  else return std::erf(x);
}
#endif
template <typename T> EMBER_MATH_HOT T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }
template <typename T> EMBER_MATH T rsqrt(T x) { return T(1) / std::sqrt(x); }

template <typename T> EMBER_MATH T floor(T x) {
  if constexpr (std::is_integral_v<T>) return x; else return std::floor(x);
}
template <typename T> EMBER_MATH T ceil(T x) {
  if constexpr (std::is_integral_v<T>) return x; else return std::ceil(x);
}
template <typename T> EMBER_MATH T trunc(T x) {
  if constexpr (std::is_integral_v<T>) return x; else return std::trunc(x);
}
template <typename T> EMBER_MATH T round(T x) {
  if constexpr (std::is_integral_v<T>) return x; else return std::nearbyint(x);  // half to even
}
template <typename T> EMBER_MATH T abs(T x) {
  if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return x;
  else if constexpr (std::is_integral_v<T>) return x < 0 ? T(-x) : x;
  else return std::fabs(x);
}
template <typename T> EMBER_MATH T sign(T x) {
  if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return T(x > 0);
  else if constexpr (std::is_integral_v<T>) return T((x > 0) - (x < 0));
  else return T((x > T(0)) - (x < T(0)));  // torch's: NaN gives 0 (NumPy's gives NaN)
}
// torch.angle of a real number: pi below 0, NaN for NaN, else 0 (-0.0 too, unlike NumPy's)
template <typename T> EMBER_MATH T angle_real(T x) {
  return x < T(0) ? T(3.14159265358979323846) : (x != x ? x : T(0));
}
// The selects below go through blend (bit masks), not ?: on floats, so that their loops
// vectorise; with ?: GCC emitted jumps that mispredict on random signs.
template <typename T> EMBER_MATH T relu(T x) {
  return blend(!(x <= T(0)), x, T(0));  // keeps NaN (x <= 0 is false for it)
}
template <typename T> EMBER_MATH bool isnan(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x); else return false;
}
template <typename T> EMBER_MATH bool isinf(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isinf(x); else return false;
}
template <typename T> EMBER_MATH bool isfinite(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::isfinite(x); else return true;
}
template <typename T> EMBER_MATH bool signbit(T x) {
  if constexpr (std::is_floating_point_v<T>) return std::signbit(x);
  else if constexpr (std::is_signed_v<T>) return x < 0;
  else return false;
}

// NaN-propagating max/min, as torch.maximum/minimum.
template <typename T> EMBER_MATH T maximum(T a, T b) {
  const T r = blend(a > b, a, b);
  if constexpr (std::is_floating_point_v<T>) return blend((a != a) | (b != b), a + b, r);  // NaN
  else return r;
}
template <typename T> EMBER_MATH T minimum(T a, T b) {
  const T r = blend(a < b, a, b);
  if constexpr (std::is_floating_point_v<T>) return blend((a != a) | (b != b), a + b, r);  // NaN
  else return r;
}

// NaN-ignoring max/min (C's fmax/fmin), as torch.fmax/fmin: a NaN loses to a number. Written as
// selects, which GCC vectorises (calls to std::fmax it does not: 10x slower).
template <typename T> EMBER_MATH T fmax(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a != a ? b : (a >= b || b != b) ? a : b;
  else return a > b ? a : b;
}
template <typename T> EMBER_MATH T fmin(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return a != a ? b : (a <= b || b != b) ? a : b;
  else return a < b ? a : b;
}

namespace detail {
// One Newton step towards erf(x) = y, computed in F. The residual is erf(x) - y where
// |y| <= 1/2, and erfc(|x|) - (1 - |y|) beyond: 1 - |y| is exact there, and erfc keeps the
// digits that erf, rounding to nearly 1, loses in the tails.
template <typename F> EMBER_MATH double erfinv_newton(double x, double y) {
  const F k = F(2) / std::sqrt(F(3.14159265358979323846264338327950288L));
  const F X = x, Y = y;
  if (std::fabs(y) <= 0.5) return static_cast<double>(X - (std::erf(X) - Y) / (k * std::exp(-X * X)));
  const F ax = std::fabs(X);
  const F r = std::erfc(ax) - (F(1) - std::fabs(Y));
  return std::copysign(static_cast<double>(ax + r / (k * std::exp(-ax * ax))), y);
}
}  // namespace detail

// The inverse error function. A first guess from G. L. Pavlis's rational approximations (the
// start of MATLAB's erfinv), then Newton steps in double whose residual stays accurate in the
// tails (see erfinv_newton; Pavlis's own steps on erf(x) - y are off by up to 4e11 ulps at
// y = 1 - 1e-16). float64 takes two, then a third in long double (x87's 64-bit significand on
// x86; where long double is double it is one more double step): torch.erfinv's float64 results
// are correctly rounded, and ember's equal them for all but about 1 value in 2700 (an ulp
// apart, at near-ties). float32 (and the half types, which arrive as float32) takes one step and
// rounds the double once: torch's value for all but about 1 in 1600, likewise. The cost: about
// 170 ns per float64 value and 30 ns per float32 one on one core, 15-25x torch's.
template <typename T> EMBER_MATH T erfinv(T y) {
  const double yd = y, ay = std::fabs(yd);
  if (!(ay < 1)) return ay == 1 ? T(std::copysign(std::numeric_limits<double>::infinity(), yd))
                                : std::numeric_limits<T>::quiet_NaN();  // also NaN in
  if (yd == 0) return y;  // keeps the sign of zero
  double x;
  if (ay <= 0.7) {
    const double z = yd * yd;
    const double num = ((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899;
    const double den = (((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1;
    x = yd * num / den;
  } else {
    const double z = std::sqrt(-std::log((1 - ay) / 2));
    const double num = ((1.641345311 * z + 3.429567803) * z - 1.624906493) * z - 1.970840454;
    const double den = (1.637067800 * z + 3.543889200) * z + 1;
    x = std::copysign(num, yd) / den;
  }
  x = detail::erfinv_newton<double>(x, yd);
  if constexpr (std::is_same_v<T, double>) {
    x = detail::erfinv_newton<double>(x, yd);
#ifdef __CUDACC_RTC__
    x = detail::erfinv_newton<double>(x, yd);  // no long double on a GPU
#else
    x = detail::erfinv_newton<long double>(x, yd);
#endif
  }
  return static_cast<T>(x);
}

// sin(pi x) / (pi x), 1 at 0 (the normalised sinc of torch and NumPy).
template <typename T> EMBER_MATH T sinc(T x) {
  if (x == T(0)) return T(1);
  const T px = T(3.14159265358979323846) * x;
  return std::sin(px) / px;
}

// log(e^a + e^b) and log2(2^a + 2^b) without overflow; equal infinities give themselves
// (their difference would be NaN).
template <typename T> EMBER_MATH T logaddexp(T a, T b) {
  if (std::isinf(a) && a == b) return a;
  const T m = a < b ? b : a;
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}
template <typename T> EMBER_MATH T logaddexp2(T a, T b) {
  if (a == b) return a + T(1);  // exact, as NumPy's (PyTorch's is an ulp off at (-1, -1))
  const T m = a < b ? b : a;
  return m + std::log1p(std::exp2(-std::fabs(a - b))) * T(1.4426950408889634074);  // 1 / ln 2
}

// x * log(y), 0 where x == 0 unless y is NaN (torch.xlogy).
template <typename T> EMBER_MATH T xlogy(T x, T y) {
  if (std::isnan(y)) return y;
  if (x == T(0)) return T(0);
  return x * std::log(y);
}

// Python-style modulo (sign of the divisor); integer division by zero is reported by the caller.
template <typename T> EMBER_MATH T remainder(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;  // avoids INT_MIN % -1 (a hardware trap)
    }
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    T r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}
template <typename T> EMBER_MATH T fmod(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
    }
    return a % b;
  } else {
    return std::fmod(a, b);
  }
}
template <typename T> EMBER_MATH T floor_divide(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(a));
      T q = a / b, r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) --q;
      return q;
    } else {
      return a / b;
    }
  } else {
    if (b == 0) return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
    T fl;
    if (div != 0) {
      fl = std::floor(div);
      if (div - fl > T(0.5)) fl += T(1);
    } else {
      fl = std::copysign(T(0), a / b);
    }
    return fl;
  }
}
template <typename T> EMBER_MATH T trunc_divide(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(a));
    }
    return a / b;
  } else {
    return std::trunc(a / b);
  }
}
template <typename T> EMBER_MATH T pow(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || !b;
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    }
    using U = std::make_unsigned_t<T>;
    U result = 1, base = static_cast<U>(a);
    auto e = b;
    while (e) {
      if (e & 1) result *= base;
      base *= base;
      e >>= 1;
    }
    return static_cast<T>(result);
  } else {
    return std::pow(a, b);
  }
}
template <typename T> EMBER_MATH T shift_left(T a, T b) {
  using U = std::make_unsigned_t<T>;
  if (b < 0 || b >= T(sizeof(T) * 8)) return 0;
  return static_cast<T>(static_cast<U>(a) << b);
}
template <typename T> EMBER_MATH T shift_right(T a, T b) {
  if (b < 0 || b >= T(sizeof(T) * 8)) return a < 0 ? T(-1) : T(0);
  return a >> b;
}


// The functions of special_math.h, which compute in double: float and the half types convert
// in and round once on the way out.
template <typename T, typename F> EMBER_MATH T special1(T x, F f) {
  if constexpr (std::is_floating_point_v<T>) return T(f(double(x)));
  else return T(float(f(double(float(x)))));
}
template <typename T, typename F> EMBER_MATH T special2(T a, T b, F f) {
  if constexpr (std::is_floating_point_v<T>) return T(f(double(a), double(b)));
  else return T(float(f(double(float(a)), double(float(b)))));
}

}  // namespace ember::math

#include "kernels/special_math.h"  // after erfinv, which ndtri starts from

namespace ember {
template <typename T> EMBER_MATH T ember_bitwise_not(T x) {
  if constexpr (std::is_same_v<T, bool>) return !x; else return static_cast<T>(~x);
}
}  // namespace ember
