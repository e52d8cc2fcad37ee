// special_math.h: the gamma-family, Bessel, normal-distribution and zeta functions of
// torch.special and torch's lgamma/digamma/i0, as scalar double functions (the kernels of
// op_table.h call them through math::special<T>, which computes float and the half types in
// double and rounds once). The algorithms are the Cephes ones torch uses where they are short
// (digamma, zeta); the Bessel functions are their power series below |x| = 20 and their
// asymptotic (Hankel) series above, both summed until the terms stop counting, in place of
// Cephes's Chebyshev tables; ndtri is Newton's method on log_ndtr from erfinv's estimate.
// Compiled by NVRTC too, for the CUDA kernels (see math.h).
#pragma once
#ifndef __CUDACC_RTC__
#include <cmath>
#include <limits>
#endif

#include "kernels/math.h"  // erfinv, EMBER_MATH

namespace ember::math::special {

constexpr double kPi = 3.14159265358979323846;
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrtPi = 0.56418958354775628695;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kEps = 1.11022302462515654042e-16;  // Cephes's MACHEP
#ifdef __CUDACC_RTC__  // no constexpr NaN or infinity there: their bit patterns
#define kNaN (__longlong_as_double(0x7ff8000000000000LL))
#define kInf (__longlong_as_double(0x7ff0000000000000LL))
#else
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
#endif

EMBER_MATH double lgamma(double x) { return std::lgamma(x); }

// Cephes psi, as torch's calc_digamma: reflection below 0, the recurrence up to 10, then the
// asymptotic series ln x - 1/(2x) - sum B_2k / (2k x^2k).
EMBER_MATH double digamma(double x) {
  if (x == 0) return std::copysign(kInf, -x);  // torch: -inf at +0, +inf at -0
  if (x < 0) {
    if (x == std::trunc(x)) return kNaN;
    double whole;
    const double r = std::modf(x, &whole);
    return digamma(1 - x) - kPi / std::tan(kPi * r);
  }
  double result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + 2.25175258906672110764;  // digamma(10)
  double y = 0;
  if (x < 1.0e17) {
    const double z = 1 / (x * x);
    // 1/12 - z/120 + z^2/252 - z^3/240 + z^4/132 - 691 z^5/32760 + z^6/12, by Horner
    y = z * (1.0 / 12 + z * (-1.0 / 120 + z * (1.0 / 252 + z * (-1.0 / 240 + z * (1.0 / 132 +
             z * (-691.0 / 32760 + z * (1.0 / 12)))))));
  }
  return result + std::log(x) - 0.5 / x - y;
}

// The Hurwitz zeta function sum_k (k + q)^-x (Cephes zeta, as torch.special.zeta): direct
// terms until q + k > 9, then the Euler-Maclaurin tail.
EMBER_MATH double zeta(double x, double q) {
  constexpr double A[] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0,
                          -1.8924375803183791606e9, 7.47242496e10, -2.950130727918164224e12,
                          1.1646782814350067249e14, -4.5979787224074726105e15,
                          1.8152105401943546773e17, -7.1661652561756670113e18};
  if (x == 1) return kInf;  // Cephes's order of checks, NaN included (zeta(1, nan) is inf)
  if (x < 1) return kNaN;
  if (q <= 0) {
    if (q == std::floor(q)) return kInf;
    if (x != std::floor(x)) return kNaN;  // q^-x is not real
  }
  double s = std::pow(q, -x), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    i += 1;
    a += 1;
    b = std::pow(a, -x);
    s += b;
    if (std::fabs(b / s) < kEps) return s;
  }
  const double w = a;
  s += b * w / (x - 1);
  s -= 0.5 * b;
  a = 1;
  double k = 0;
  for (i = 0; i < 12; ++i) {
    a *= x + k;
    b /= w;
    const double t = a * b / A[i];
    s += t;
    if (std::fabs(t / s) < kEps) return s;
    k += 1;
    a *= x + k;
    b /= w;
    k += 1;
  }
  return s;
}

namespace detail {
// I_nu(x) for nu = 0, 1 and 0 <= x <= 20: the power series sum (x/2)^(2k+nu) / (k! (k+nu)!),
// whose terms are all positive (no cancellation).
EMBER_MATH double bessel_i_series(int nu, double x) {
  const double q = x * x / 4;
  double term = nu == 0 ? 1.0 : x / 2, sum = term;
  for (int k = 1; k < 500; ++k) {
    term *= q / (double(k) * double(k + nu));
    sum += term;
    if (term < kEps * sum) break;
  }
  return sum;
}
// e^-x I_nu(x) for x > 20: Hankel's asymptotic series (1/sqrt(2 pi x)) sum_k t_k with
// t_k = t_(k-1) ((2k-1)^2 - 4 nu^2) / (8 k x), summed until the terms stop shrinking.
EMBER_MATH double bessel_ie_asymptotic(int nu, double x) {
  double term = 1, sum = 1;
  for (int k = 1; k < 500; ++k) {
    const double next = term * ((2.0 * k - 1) * (2.0 * k - 1) - 4.0 * nu * nu) / (8.0 * k * x);
    if (std::fabs(next) >= std::fabs(term)) break;
    term = next;
    sum += term;
    if (std::fabs(term) < kEps * std::fabs(sum)) break;
  }
  return sum / std::sqrt(2 * kPi * x);
}
constexpr double kSeriesLimit = 20;
}  // namespace detail

// Modified Bessel functions of the first kind, orders 0 and 1, and their exponentially scaled
// forms e^-|x| I(x).
EMBER_MATH double i0(double x) {
  const double ax = std::fabs(x);
  if (std::isnan(x) || std::isinf(x)) return ax;
  if (ax <= detail::kSeriesLimit) return detail::bessel_i_series(0, ax);
  return std::exp(ax) * detail::bessel_ie_asymptotic(0, ax);
}
EMBER_MATH double i0e(double x) {
  const double ax = std::fabs(x);
  if (std::isnan(x)) return x;
  if (ax <= detail::kSeriesLimit) return std::exp(-ax) * detail::bessel_i_series(0, ax);
  return detail::bessel_ie_asymptotic(0, ax);
}
EMBER_MATH double i1(double x) {
  const double ax = std::fabs(x);
  if (std::isnan(x) || std::isinf(x)) return x;
  const double r = ax <= detail::kSeriesLimit ? detail::bessel_i_series(1, ax)
                                              : std::exp(ax) * detail::bessel_ie_asymptotic(1, ax);
  return x < 0 ? -r : r;
}
EMBER_MATH double i1e(double x) {
  const double ax = std::fabs(x);
  if (std::isnan(x)) return x;
  const double r = ax <= detail::kSeriesLimit ? std::exp(-ax) * detail::bessel_i_series(1, ax)
                                              : detail::bessel_ie_asymptotic(1, ax);
  return x < 0 ? -r : r;
}

// e^(x^2) erfc(x). Below 10: the product, with e^(x^2) from x^2 split into its rounded value
// and the rounding error (fma), so that the square's rounding costs no digits; above: the
// asymptotic series 1/(x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k.
EMBER_MATH double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x > 0 ? 0.0 : kInf;
  // 2 e^(x^2) overflows below -26.63; there the product below would be inf * 0 (exp of the
  // square's rounding error can underflow)
  if (x < -26.7) return kInf;
  if (x < 10) {
    const double hi = x * x, lo = std::fma(x, x, -hi);
    return std::exp(hi) * std::exp(lo) * std::erfc(x);
  }
  const double r = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k < 200; ++k) {
    term *= -(2.0 * k - 1) * r;
    sum += term;
    if (std::fabs(term) < kEps * sum) break;
  }
  return sum * kInvSqrtPi / x;
}

// The standard normal distribution function, its logarithm (accurate far into the lower tail
// through erfcx, as torch's) and its inverse.
EMBER_MATH double ndtr(double x) { return 0.5 * std::erfc(-x * kInvSqrt2); }
EMBER_MATH double log_ndtr(double x) {
  const double t = x * kInvSqrt2;
  if (x < -1) return std::log(erfcx(-t) / 2) - t * t;
  return std::log1p(-std::erfc(t) / 2);
}

EMBER_MATH double ndtri(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  if (p > 0.5) return -ndtri(1 - p);  // 1 - p is exact for p in [0.5, 1]
  // Newton's method on log_ndtr(x) = log(p): concave and increasing, so the iterates climb to
  // the root from below once one step is taken.
  double x = p > 1e-10 ? std::sqrt(2.0) * ::ember::math::erfinv(2 * p - 1) : -std::sqrt(-2 * std::log(p));
  const double target = std::log(p);
  for (int i = 0; i < 100; ++i) {
    const double lv = log_ndtr(x);
    const double slope = std::exp(-0.5 * x * x - lv) * kInvSqrt2Pi;  // pdf / cdf
    const double step = (lv - target) / slope;
    x -= step;
    if (std::fabs(step) <= 1e-16 * std::fabs(x) + 1e-300) break;
  }
  return x;
}

// -x log x, 0 at 0, -inf below 0 (torch.special.entr).
EMBER_MATH double entr(double x) {
  if (std::isnan(x)) return x;
  if (x > 0) return -x * std::log(x);
  return x == 0 ? 0.0 : -kInf;
}

// x log1p(y), 0 where x is 0 and y is not NaN (torch.special.xlog1py).
EMBER_MATH double xlog1py(double x, double y) {
  if (std::isnan(y)) return kNaN;
  if (x == 0) return 0;
  return x * std::log1p(y);
}

namespace detail {
// x^a e^-x / Gamma(a), the factor both incomplete gamma forms share.
EMBER_MATH double igamma_factor(double a, double x) {
  return std::exp(a * std::log(x) - x - std::lgamma(a));
}
// P(a, x) by its series sum x^n / (a (a+1) ... (a+n)): for x < a + 1.
EMBER_MATH double igamma_series(double a, double x) {
  double term = 1 / a, sum = term;
  for (int n = 1; n < 100000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < kEps * std::fabs(sum)) break;
  }
  return sum * igamma_factor(a, x);
}
// Q(a, x) by its continued fraction (modified Lentz): for x >= a + 1.
EMBER_MATH double igammac_fraction(double a, double x) {
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < kEps) break;
  }
  return h * igamma_factor(a, x);
}
}  // namespace detail

// log Gamma(1 + x), accurate for small x (SciPy's lgam1p): the Taylor series
// -gamma x + sum_n (-x)^n zeta(n) / n near 0, where lgamma(1 + x) would round 1 + x.
EMBER_MATH double lgamma1p(double x) {
  auto taylor = [](double t) {
    if (t == 0) return 0.0;
    double result = -0.57721566490153286061 * t, power = -t;
    for (int n = 2; n < 42; ++n) {
      power *= -t;
      const double term = zeta(n, 1) * power / n;
      result += term;
      if (std::fabs(term) < kEps * std::fabs(result)) break;
    }
    return result;
  };
  if (std::fabs(x) <= 0.5) return taylor(x);
  if (std::fabs(x - 1) < 0.5) return std::log(x) + taylor(x - 1);
  return std::lgamma(x + 1);
}

namespace detail {
// Q(a, x) for x < 1.1 and a small next to x (SciPy's igamc_series): 1 - P computed without
// the cancellation of 1 - P when P is nearly 1 (tiny a).
EMBER_MATH double igammac_small_shape(double a, double x) {
  double fac = 1, sum = 0;
  for (int n = 1; n < 100000; ++n) {
    fac *= -x / n;
    const double term = fac / (a + n);
    sum += term;
    if (std::fabs(term) <= kEps * std::fabs(sum)) break;
  }
  const double logx = std::log(x);
  return -std::expm1(a * logx - lgamma1p(a)) - std::exp(a * logx - std::lgamma(a)) * sum;
}
// Whether Q(a, x) takes igammac_small_shape (SciPy's choice of method).
EMBER_MATH bool small_shape_region(double a, double x) {
  if (x < 0.5) return -0.4 / std::log(x) >= a;
  return x < 1.1 && x * 0.75 >= a;
}
}  // namespace detail

// The regularized lower and upper incomplete gamma functions P(a, x) and Q(a, x)
// (torch.igamma / igammac, special.gammainc / gammaincc), with torch's values at the edges.
// Not covered: shapes beyond ~1e15, where torch switches to Temme's asymptotic expansion and
// these series give NaN.
EMBER_MATH double igamma(double a, double x) {
  if (x < 0 || a < 0) return kNaN;
  if (a == 0) return x > 0 ? 1.0 : kNaN;
  if (x == 0) return 0.0;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : 0.0;
  if (std::isinf(x)) return 1.0;
  if (std::isnan(a) || std::isnan(x)) return kNaN;
  if (detail::small_shape_region(a, x)) return 1 - detail::igammac_small_shape(a, x);
  return x < a + 1 ? detail::igamma_series(a, x) : 1 - detail::igammac_fraction(a, x);
}
EMBER_MATH double igammac(double a, double x) {
  if (x < 0 || a < 0) return kNaN;
  if (a == 0) return x > 0 ? 0.0 : kNaN;
  if (x == 0) return 1.0;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : 1.0;
  if (std::isinf(x)) return 0.0;
  if (std::isnan(a) || std::isnan(x)) return kNaN;
  if (detail::small_shape_region(a, x)) return detail::igammac_small_shape(a, x);
  return x < a + 1 ? 1 - detail::igamma_series(a, x) : detail::igammac_fraction(a, x);
}

// ---- orthogonal polynomials: torch.special.<family>_polynomial_<kind>(x, n) ----
// The degree n is truncated to an integer, as torch converts it; n < 0 gives 0. Each is its
// three-term recurrence from P_0 and P_1, except where a closed form is exact or shorter: the
// values at x = +-1, and for the Chebyshev kinds at |x| < 1 and n > 8 the trigonometric forms
// (T_n(cos t) = cos(n t), U_n = sin((n+1) t) / sin t, V_n = cos((n+1/2) t) / cos(t/2),
// W_n = sin((n+1/2) t) / sin(t/2)), which round once instead of n times. A recurrence stops
// once its value overflows; degrees above kMaxDegree that would need one give NaN rather than a
// loop of that length per element.
namespace poly {
constexpr double kMaxDegree = 16777216.0;  // 2^24

// (P_0, P_1, step(k, P_k, P_{k-1}) -> P_{k+1}) evaluated at degree n >= 2.
template <typename Step>
EMBER_MATH double recurrence(double n, double p0, double p1, Step step) {
  if (n > kMaxDegree) return kNaN;
  const long long last = static_cast<long long>(n);
  double prev = p0, cur = p1;
  for (long long k = 1; k < last; ++k) {
    const double next = step(static_cast<double>(k), cur, prev);
    prev = cur, cur = next;
    if (!std::isfinite(cur)) break;
  }
  return cur;
}

// The degree truncated toward zero (NaN stays NaN). Every polynomial then answers a NaN degree
// with NaN, a negative one with 0 and degree 0 with 1, whatever x is (torch's order); a NaN x
// gives NaN from degree 1 on (it flows through the forms below).
EMBER_MATH double degree(double n) { return std::isnan(n) ? n : std::trunc(n); }

EMBER_MATH bool odd(double n) { return std::fmod(n, 2.0) != 0; }
}  // namespace poly

EMBER_MATH double chebyshev_t(double x, double n) {
  n = poly::degree(n);
  if (std::isnan(n)) return kNaN;
  if (n < 0) return 0;
  if (n == 0) return 1;  // before x is looked at: NaN included, as torch's
  if (std::fabs(x) == 1) return (x > 0 || !poly::odd(n)) ? 1 : -1;
  if (std::fabs(x) < 1 && n > 8) return std::cos(n * std::acos(x));
  if (n == 0) return 1;
  if (n == 1) return x;
  return poly::recurrence(n, 1, x, [x](double, double c, double p) { return 2 * x * c - p; });
}

EMBER_MATH double chebyshev_u(double x, double n) {
  n = poly::degree(n);
  if (std::isnan(n)) return kNaN;
  if (n < 0) return 0;
  if (n == 0) return 1;  // before x is looked at: NaN included, as torch's
  if (std::fabs(x) == 1) return (x > 0 || !poly::odd(n)) ? n + 1 : -(n + 1);
  if (std::fabs(x) < 1 && n > 8) {
    const double t = std::acos(x);
    return std::sin((n + 1) * t) / std::sin(t);
  }
  if (n == 0) return 1;
  if (n == 1) return 2 * x;
  return poly::recurrence(n, 1, 2 * x, [x](double, double c, double p) { return 2 * x * c - p; });
}

EMBER_MATH double chebyshev_v(double x, double n) {
  n = poly::degree(n);
  if (std::isnan(n)) return kNaN;
  if (n < 0) return 0;
  if (n == 0) return 1;  // before x is looked at: NaN included, as torch's
  if (x == 1) return 1;
  if (x == -1) return poly::odd(n) ? -(2 * n + 1) : 2 * n + 1;
  if (std::fabs(x) < 1 && n > 8) {
    const double t = std::acos(x);
    return std::cos((n + 0.5) * t) / std::cos(t / 2);
  }
  if (n == 0) return 1;
  if (n == 1) return 2 * x - 1;
  return poly::recurrence(n, 1, 2 * x - 1, [x](double, double c, double p) { return 2 * x * c - p; });
}

EMBER_MATH double chebyshev_w(double x, double n) {
  n = poly::degree(n);
  if (std::isnan(n)) return kNaN;
  if (n < 0) return 0;
  if (n == 0) return 1;  // before x is looked at: NaN included, as torch's
  if (x == 1) return 2 * n + 1;
  if (x == -1) return poly::odd(n) ? -1 : 1;
  if (std::fabs(x) < 1 && n > 8) {
    const double t = std::acos(x);
    return std::sin((n + 0.5) * t) / std::sin(t / 2);
  }
  if (n == 0) return 1;
  if (n == 1) return 2 * x + 1;
  return poly::recurrence(n, 1, 2 * x + 1, [x](double, double c, double p) { return 2 * x * c - p; });
}

// The shifted Chebyshev polynomials, orthogonal on [0, 1]: P*_n(x) = P_n(2x - 1).
EMBER_MATH double shifted_chebyshev_t(double x, double n) { return chebyshev_t(2 * x - 1, n); }
EMBER_MATH double shifted_chebyshev_u(double x, double n) { return chebyshev_u(2 * x - 1, n); }
EMBER_MATH double shifted_chebyshev_v(double x, double n) { return chebyshev_v(2 * x - 1, n); }
EMBER_MATH double shifted_chebyshev_w(double x, double n) { return chebyshev_w(2 * x - 1, n); }

// Physicists' Hermite H (H_1 = 2x) and probabilists' He (He_1 = x).
EMBER_MATH double hermite_h(double x, double n) {
  n = poly::degree(n);
  if (std::isnan(n)) return kNaN;
  if (n < 0) return 0;
  if (n == 0) return 1;  // before x is looked at: NaN included, as torch's
  if (n == 0) return 1;
  if (n == 1) return 2 * x;
  return poly::recurrence(n, 1, 2 * x,
                          [x](double k, double c, double p) { return 2 * x * c - 2 * k * p; });
}

EMBER_MATH double hermite_he(double x, double n) {
  n = poly::degree(n);
  if (std::isnan(n)) return kNaN;
  if (n < 0) return 0;
  if (n == 0) return 1;  // before x is looked at: NaN included, as torch's
  if (n == 0) return 1;
  if (n == 1) return x;
  return poly::recurrence(n, 1, x, [x](double k, double c, double p) { return x * c - k * p; });
}

EMBER_MATH double laguerre_l(double x, double n) {
  n = poly::degree(n);
  if (std::isnan(n)) return kNaN;
  if (n < 0) return 0;
  if (n == 0) return 1;  // before x is looked at: NaN included, as torch's
  if (x == 0 || n == 0) return 1;  // L_n(0) = 1
  if (n == 1) return 1 - x;
  return poly::recurrence(n, 1, 1 - x, [x](double k, double c, double p) {
    return ((2 * k + 1 - x) * c - k * p) / (k + 1);
  });
}

EMBER_MATH double legendre_p(double x, double n) {
  n = poly::degree(n);
  if (std::isnan(n)) return kNaN;
  if (n < 0) return 0;
  if (n == 0) return 1;  // before x is looked at: NaN included, as torch's
  if (std::fabs(x) == 1) return (x > 0 || !poly::odd(n)) ? 1 : -1;
  if (n == 0) return 1;
  if (n == 1) return x;
  return poly::recurrence(n, 1, x, [x](double k, double c, double p) {
    return ((2 * k + 1) * x * c - k * p) / (k + 1);
  });
}

}  // namespace ember::math::special
