// special_math.h: the gamma-family, Bessel, normal-distribution and zeta functions of
// torch.special and torch's lgamma/digamma/i0, as scalar double functions (the kernels of
// op_table.h call them through math::special<T>, which computes float and the half types in
// double and rounds once). The algorithms are the Cephes ones torch uses where they are short
// (digamma, zeta); the Bessel functions I are their power series below |x| = 20 and their
// asymptotic (Hankel) series above, both summed until the terms stop counting, in place of
// Cephes's Chebyshev tables (J, Y, K and Airy Ai: see their section); ndtri is Newton's method
// on log_ndtr from erfinv's estimate.
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

// ---- Bessel functions of the first and second kind, K0/K1 and Airy Ai ----
// J0, J1, Y0, Y1 are their power series below x = kJySeriesLimit and Hankel's asymptotic series
// above. The power series alternate, with terms up to ~e^x times the result, so they are summed
// in double-double arithmetic (a value as an unevaluated sum hi + lo, ~32 digits): at x = 20
// they cancel ~9 digits, and only from there does the asymptotic series reach full double
// precision (its smallest term is ~e^-2x). K0 and K1 are their series (log and harmonic
// numbers) up to x = 1, where the log term and the series cancel less than a digit (at 2
// already one), and above that the integral
//   e^x K_nu(x) = int_0^inf exp(-2x sinh^2(t/2)) cosh(nu t) dt
// by the trapezoidal rule, which converges geometrically for this smooth, doubly exponentially
// decaying integrand of positive terms; the same integral gives Airy Ai for x > 2 through
// Ai(x) = sqrt(x/3) K_{1/3}(zeta) / pi, zeta = (2/3) x^(3/2), where its Maclaurin series would
// cancel ~e^(2 zeta) and the asymptotic series is not yet accurate.
namespace dd {
struct Num {
  double hi, lo;
};
EMBER_MATH Num fast_two_sum(double a, double b) {  // |a| >= |b|
  const double s = a + b;
  return {s, b - (s - a)};
}
EMBER_MATH Num two_sum(double a, double b) {
  const double s = a + b, bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
EMBER_MATH Num add(Num a, Num b) {
  const Num s = two_sum(a.hi, b.hi);
  return fast_two_sum(s.hi, s.lo + a.lo + b.lo);
}
EMBER_MATH Num mul(Num a, Num b) {
  const double p = a.hi * b.hi;
  return fast_two_sum(p, std::fma(a.hi, b.hi, -p) + (a.hi * b.lo + a.lo * b.hi));
}
EMBER_MATH Num mul(Num a, double b) { return mul(a, Num{b, 0.0}); }
EMBER_MATH Num div(Num a, double b) {  // b an exactly representable divisor (an integer here)
  const double q = a.hi / b;
  const double p = q * b, p_err = std::fma(q, b, -p);
  const double r = ((a.hi - p) - p_err + a.lo) / b;
  return fast_two_sum(q, r);
}
EMBER_MATH Num reciprocal(double k) {  // 1/k, k a small integer
  const double r = 1 / k;
  return {r, std::fma(-r, k, 1.0) / k};
}
EMBER_MATH double value(Num a) { return a.hi + a.lo; }
}  // namespace dd

namespace detail {
constexpr double kEulerGamma = 0.57721566490153286061;
constexpr double kJySeriesLimit = 20;
constexpr double kKSeriesLimit = 1;

// ln(x/2), x/2 not rounded to 0 for the smallest subnormal x
EMBER_MATH double log_half(double x) {
  return x > 1e-300 ? std::log(x / 2) : std::log(x) - 0.69314718055994530942;
}

// The power series of J_nu (sign = -1) or I_nu (sign = +1), nu = 0 or 1, with terms
// t_k = (x/2)^nu (sign x^2/4)^k / (k! (k+nu)!), and beside it sum_k (H_k + H_(k+nu)) t_k, the
// harmonic-number series that Y_nu and K_nu add to their log term (H_k = 1 + 1/2 + ... + 1/k).
struct SeriesPair {
  double plain, harmonic;
};
EMBER_MATH SeriesPair bessel_series_pair(int nu, double x, double sign) {
  const dd::Num q = dd::mul(dd::Num{x * x, std::fma(x, x, -x * x)}, 0.25 * sign);
  dd::Num term = {nu == 0 ? 1.0 : x / 2, 0.0};
  dd::Num h_k = {0.0, 0.0}, h_knu = {nu == 0 ? 0.0 : 1.0, 0.0};  // H_k and H_(k+nu) at k = 0
  dd::Num plain = term, harmonic = dd::mul(term, dd::add(h_k, h_knu));
  for (int k = 1; k < 500; ++k) {
    term = dd::div(dd::mul(term, q), double(k) * double(k + nu));
    h_k = dd::add(h_k, dd::reciprocal(k));
    h_knu = dd::add(h_knu, dd::reciprocal(k + nu));
    plain = dd::add(plain, term);
    const dd::Num weighted = dd::mul(term, dd::add(h_k, h_knu));
    harmonic = dd::add(harmonic, weighted);
    // past the largest term, once the terms no longer reach the sums' last digits
    if (k * k > q.hi * sign && std::fabs(weighted.hi) <= 1e-34 * std::fabs(harmonic.hi) &&
        std::fabs(term.hi) <= 1e-34 * std::fabs(plain.hi) + 1e-300)
      break;
  }
  return {dd::value(plain), dd::value(harmonic)};
}

// Hankel's asymptotic series of J_nu and Y_nu (nu = 0, 1) for x >= kJySeriesLimit:
// sqrt(2/(pi x)) (P cos chi - Q sin chi) and sqrt(2/(pi x)) (P sin chi + Q cos chi), with
// chi = x - (nu/2 + 1/4) pi, P and Q the even and odd terms (alternating in sign) of
// a_k = a_(k-1) (4 nu^2 - (2k-1)^2) / (8 k x) (P = sum (-1)^m a_2m, Q = sum (-1)^m a_(2m+1)),
// cos chi and sin chi written out in cos x and sin x, which libm reduces exactly however large
// x is.
struct JY {
  double j, y;
};
EMBER_MATH JY bessel_jy_asymptotic(int nu, double x) {
  double p = 1, q = 0, term = 1;
  for (int k = 1; k < 500; ++k) {
    const double next = term * (4.0 * nu * nu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * x);
    if (std::fabs(next) >= std::fabs(term)) break;
    term = next;
    const double sign = (k / 2) % 2 == 0 ? 1 : -1;  // (-1)^floor(k/2)
    if (k % 2 == 0) p += sign * term; else q += sign * term;
    if (std::fabs(term) < kEps * 1e-2) break;
  }
  const double c = std::cos(x), s = std::sin(x), scale = kInvSqrtPi / std::sqrt(x);
  if (nu == 0) return {scale * (p * (c + s) - q * (s - c)), scale * (p * (s - c) + q * (c + s))};
  return {scale * (p * (s - c) + q * (s + c)), scale * (q * (s - c) - p * (s + c))};
}

// e^x K_nu(x) for x > 0 away from 0 (x > kKSeriesLimit here, or Airy's zeta > 1.8): the
// trapezoidal rule over t >= 0 of exp(-2x sinh^2(t/2)) cosh(nu t). Its error falls like
// exp(-2 pi a / h) for a strip |Im t| < a where the integrand stays small; the step keeps that
// below 1e-20 for every x (a shrinks like 1/sqrt(x) as x grows, and so does the step).
EMBER_MATH double bessel_k_scaled_quadrature(double nu, double x) {
  const double h = x < 16 ? 0.125 : 0.5 / std::sqrt(x);  // the smaller of the two
  double sum = 0.5;  // f(0) / 2
  for (int j = 1; j < 4000; ++j) {
    const double t = j * h, sh = std::sinh(t / 2);
    const double f = std::exp(-2 * x * sh * sh) * (nu == 0 ? 1.0 : std::cosh(nu * t));
    sum += f;
    if (f < 1e-18 * sum) break;
  }
  return h * sum;
}
}  // namespace detail

EMBER_MATH double bessel_j0(double x) {
  const double ax = std::fabs(x);
  if (std::isnan(x) || std::isinf(x)) return kNaN;  // torch: NaN at +-inf too
  if (ax < detail::kJySeriesLimit) return detail::bessel_series_pair(0, ax, -1).plain;
  return detail::bessel_jy_asymptotic(0, ax).j;
}
EMBER_MATH double bessel_j1(double x) {
  const double ax = std::fabs(x);
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  const double r = ax < detail::kJySeriesLimit ? detail::bessel_series_pair(1, ax, -1).plain
                                               : detail::bessel_jy_asymptotic(1, ax).j;
  return std::signbit(x) ? -r : r;  // odd, -0 at -0
}
// Y_0 = (2/pi) (ln(x/2) + gamma) J_0 - (1/pi) sum 2 H_k t_k and
// Y_1 = (2/pi) (ln(x/2) + gamma) J_1 - (1/pi) sum (H_k + H_(k+1)) t_k - 2/(pi x).
EMBER_MATH double bessel_y0(double x) {
  if (std::isnan(x) || x < 0 || std::isinf(x)) return kNaN;  // torch: NaN at +inf too
  if (x == 0) return -kInf;
  if (x >= detail::kJySeriesLimit) return detail::bessel_jy_asymptotic(0, x).y;
  const detail::SeriesPair s = detail::bessel_series_pair(0, x, -1);
  return (2 * (detail::log_half(x) + detail::kEulerGamma) * s.plain - s.harmonic) / kPi;
}
EMBER_MATH double bessel_y1(double x) {
  if (std::isnan(x) || x < 0 || std::isinf(x)) return kNaN;
  if (x == 0) return -kInf;
  if (x >= detail::kJySeriesLimit) return detail::bessel_jy_asymptotic(1, x).y;
  const detail::SeriesPair s = detail::bessel_series_pair(1, x, -1);
  return (2 * (detail::log_half(x) + detail::kEulerGamma) * s.plain - s.harmonic - 2 / x) / kPi;
}

// K_0 = -(ln(x/2) + gamma) I_0 + (1/2) sum 2 H_k t_k and
// K_1 = (ln(x/2) + gamma) I_1 - (1/2) sum (H_k + H_(k+1)) t_k + 1/x up to x = 1 (where the
// log term and the sum cancel at most a fraction of a digit; at 2 already one), the quadrature
// above; scaled, e^x K_nu(x).
namespace detail {
EMBER_MATH double bessel_k(int nu, double x, bool scaled) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  if (std::isinf(x)) return 0;
  if (x > kKSeriesLimit) {
    const double s = bessel_k_scaled_quadrature(nu, x);
    return scaled ? s : s * std::exp(-x);
  }
  const SeriesPair i = bessel_series_pair(nu, x, 1);
  const double log_term = (log_half(x) + kEulerGamma) * i.plain;
  const double k = nu == 0 ? i.harmonic / 2 - log_term : log_term - i.harmonic / 2 + 1 / x;
  return scaled ? k * std::exp(x) : k;
}
}  // namespace detail

EMBER_MATH double modified_bessel_k0(double x) { return detail::bessel_k(0, x, false); }
EMBER_MATH double modified_bessel_k1(double x) { return detail::bessel_k(1, x, false); }
EMBER_MATH double scaled_modified_bessel_k0(double x) { return detail::bessel_k(0, x, true); }
EMBER_MATH double scaled_modified_bessel_k1(double x) { return detail::bessel_k(1, x, true); }

// Airy Ai. From -10 to 2 its Maclaurin series Ai(0) f(x) + Ai'(0) g(x), f and g summed in
// double-double with Ai(0) and Ai'(0) to double-double precision (for x < 0 the terms reach
// ~e^zeta, zeta = (2/3) |x|^(3/2), and cancel). Above 2 through K_{1/3} (see above); below -10
// the asymptotic series (1/(sqrt(pi) |x|^(1/4))) (cos(zeta - pi/4) P + sin(zeta - pi/4) Q) with
// P, Q the even and odd terms (-1)^floor(k/2) u_k / zeta^k,
// u_k = u_(k-1) (6k-5)(6k-3)(6k-1) / (216 k (2k-1)).
namespace detail {
constexpr double kAiryMaclaurinLow = -10, kAiryMaclaurinHigh = 2;
// Below -2^40 the phase zeta (> 7e17) is no longer resolved to 1e-13 by double-double: NaN there
// rather than a value of the right size and an arbitrary sign.
constexpr double kAiryPhaseLimit = -1099511627776.0;
EMBER_MATH double airy_ai_maclaurin(double x) {
  const dd::Num ai0 = {0.3550280538878172, 2.05233632436212e-17};     // Ai(0)
  const dd::Num dai0 = {-0.2588194037928068, 2.522243111610832e-17};  // Ai'(0)
  const dd::Num x3 = dd::mul(dd::Num{x * x, std::fma(x, x, -x * x)}, x);
  dd::Num f_term = {1.0, 0.0}, g_term = {x, 0.0}, f = f_term, g = g_term;
  for (int k = 1; k < 500; ++k) {
    f_term = dd::div(dd::mul(f_term, x3), double(3 * k - 1) * double(3 * k));
    g_term = dd::div(dd::mul(g_term, x3), double(3 * k) * double(3 * k + 1));
    f = dd::add(f, f_term);
    g = dd::add(g, g_term);
    if (3.0 * k > std::fabs(x) * 3 && std::fabs(f_term.hi) + std::fabs(g_term.hi) <= 1e-36)
      break;
  }
  return dd::value(dd::add(dd::mul(ai0, f), dd::mul(dai0, g)));
}
// zeta = (2/3) ax^(3/2) in double-double (sqrt with its residual, then two products): its
// phase (x < 0) or e^-zeta (x > 0) stays exact to the last digit however large zeta is.
EMBER_MATH dd::Num airy_zeta(double ax) {
  const double r = std::sqrt(ax);
  const dd::Num root = {r, std::fma(-r, r, ax) / (2 * r)};
  return dd::mul(dd::mul(root, ax), dd::Num{0.6666666666666666, 3.700743415417188e-17});
}
EMBER_MATH double airy_ai_negative_asymptotic(double x) {  // x < kAiryMaclaurinLow
  const double ax = -x, r = std::sqrt(ax);
  const dd::Num zeta = airy_zeta(ax);
  double p = 1, q = 0, u = 1, power = 1;
  for (int k = 1; k < 500; ++k) {
    const double next_u =
        u * (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / (216.0 * k * (2.0 * k - 1));
    const double next_power = power / zeta.hi;
    if (next_u * next_power >= u * power) break;
    u = next_u, power = next_power;
    const double term = ((k / 2) % 2 == 0 ? 1 : -1) * u * power;
    if (k % 2 == 0) p += term; else q += term;
    if (u * power < kEps * 1e-2) break;
  }
  // cos and sin of zeta - pi/4: of zeta.hi from libm (exact reduction), then turned by the
  // small angle zeta.lo - pi/4
  const double c = std::cos(zeta.hi), s = std::sin(zeta.hi), d = zeta.lo - kPi / 4;
  const double cd = std::cos(d), sd = std::sin(d);
  const double cos_phase = c * cd - s * sd, sin_phase = s * cd + c * sd;
  return kInvSqrtPi / std::sqrt(r) * (cos_phase * p + sin_phase * q);
}
}  // namespace detail

EMBER_MATH double airy_ai(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;  // torch: NaN at +-inf
  if (x > detail::kAiryMaclaurinHigh) {
    const dd::Num zeta = detail::airy_zeta(x);
    if (zeta.hi > 800) return 0;  // e^-zeta underflows (x > ~105), inf included
    return std::sqrt(x) / (kPi * std::sqrt(3.0)) * (std::exp(-zeta.hi) * (1 - zeta.lo)) *
           detail::bessel_k_scaled_quadrature(1.0 / 3, zeta.hi);
  }
  if (x >= detail::kAiryMaclaurinLow) return detail::airy_ai_maclaurin(x);
  if (x < detail::kAiryPhaseLimit) return kNaN;
  return detail::airy_ai_negative_asymptotic(x);
}

}  // namespace ember::math::special
