// complex_kernels.cpp - the complex64/complex128 kernels of the op table's ops that take complex
// inputs (EMBER_COMPLEX_UNARY_OPS / EMBER_COMPLEX_BINARY_OPS in op_table.h). Compiled once, not
// per CPU capability: std::complex arithmetic does not gain from the wider copies the way the
// real kernels do, and it keeps the build small. The dtype rules are elementwise.cpp's.
#include <complex>
#include <limits>

#include "kernels/loops.h"
#include "ops/elementwise.h"
#include "ops/cpu_kernels.h"

namespace ember {
namespace math {

// a * b and a / b as torch's c10::complex (and NumPy) compute them: the product without
// std::complex's inf/NaN recovery (which keeps the loop scalar and calls __mulsc3), the quotient
// by Smith's scaling (std::complex's calls __divsc3 per element, 4x slower).
template <typename C> inline C complex_mul(C a, C b) {
  return C(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}
template <typename C> inline C complex_div(C x, C y) {
  using R = typename C::value_type;
  const R a = x.real(), b = x.imag(), c = y.real(), d = y.imag();
  const R abs_c = std::abs(c), abs_d = std::abs(d);
  if (abs_c >= abs_d) {
    if (abs_c == R(0) && abs_d == R(0)) return C(a / abs_c, b / abs_d);  // inf or NaN, as torch
    const R rat = d / c, scl = R(1) / (c + d * rat);
    return C((a + b * rat) * scl, (b - a * rat) * scl);
  }
  const R rat = c / d, scl = R(1) / (d + c * rat);
  return C((a * rat + b) * scl, (b * rat - a) * scl);
}

// a ** b as NumPy and torch give it at the edges: x ** 0 is 1 (0 ** 0 too, where exp(0 * log 0)
// is NaN), 0 ** b with a positive real part is 0; x ** 1 and x ** 2 are exact.
template <typename C> C complex_pow(C a, C b) {
  using R = typename C::value_type;
  if (b == C(0)) return C(1);
  if (b == C(1)) return a;
  if (b == C(2)) return a * a;
  if (a == C(0) && b.imag() == R(0) && b.real() > R(0)) return C(0);
  return std::pow(a, b);
}

// exp(z) - 1 and log(1 + z) without the cancellation near 0 of the plain formulas:
// Re(e^z - 1) = expm1(x) cos y - 2 sin^2(y/2); Re log(1 + z) = log1p(2x + x^2 + y^2) / 2.
// The edges as C99's cexp - 1 and the array API standard give them: a real z stays real,
// Re z = -inf gives -1 + 0j, Re z = +inf with a non-finite Im z gives inf + NaN j.
template <typename C> C complex_expm1(C z) {
  using R = typename C::value_type;
  const R x = z.real(), y = z.imag();
  if (y == R(0)) return C(std::expm1(x), y);
  if (std::isinf(x) && x < 0) return C(R(-1), R(0));
  if (std::isinf(x) && !std::isfinite(y))
    return C(x, std::numeric_limits<R>::quiet_NaN());
  const R s = std::sin(y / 2);
  return C(std::expm1(x) * std::cos(y) - 2 * s * s, std::exp(x) * std::sin(y));
}
template <typename C> C complex_log1p(C z) {
  using R = typename C::value_type;
  const R x = z.real(), y = z.imag();
  if (std::abs(x) > R(0.5) || std::abs(y) > R(0.5)) return std::log(C(1) + z);
  return C(std::log1p(x * (2 + x) + y * y) / 2, std::atan2(y, 1 + x));
}

// log(e^a + e^b) as torch's complex kernel: shifted by the operand of the larger real part, a
// NaN part anywhere gives NaN + NaN j, two equal infinite real parts give the -inf operand itself
// (its phase cannot be known) or, for +inf, the unshifted sum.
template <typename C> C complex_logaddexp(C a, C b) {
  using R = typename C::value_type;
  const auto has_nan = [](C z) { return std::isnan(z.real()) || std::isnan(z.imag()); };
  if (has_nan(a) || has_nan(b)) {
    const R nan = std::numeric_limits<R>::quiet_NaN();
    return C(nan, nan);
  }
  const C lo = a.real() < b.real() ? a : b, hi = a.real() < b.real() ? b : a;
  if (std::isinf(lo.real()) && lo.real() == hi.real())
    return lo.real() < 0 ? lo : std::log(std::exp(lo) + std::exp(hi));
  return complex_log1p(std::exp(lo - hi)) + hi;
}

}  // namespace math

void run_complex_unary_kernel(UnaryOp op, const ElementwiseIter& it, ScalarType dt) {
  dispatch_complex(dt, unary_info(op).name, [&](auto tag) {
    using C = typename decltype(tag)::type;
    using R = typename C::value_type;
    switch (op) {
#define EMBER_COMPLEX_CASE(name, kind, expr)                                     \
  case UnaryOp::name:                                                           \
    if constexpr (std::string_view(#kind) == "REAL")                            \
      return run_elementwise<R, C>(it, [](C x) { return expr; });               \
    else if constexpr (std::string_view(#kind) == "PRED")                       \
      return run_elementwise<bool, C>(it, [](C x) { return expr; });            \
    else                                                                        \
      return run_elementwise<C, C>(it, [](C x) { return expr; });
      EMBER_COMPLEX_UNARY_OPS(EMBER_COMPLEX_CASE)
#undef EMBER_COMPLEX_CASE
      default:
        throw NotImplementedError(str_cat("\"", unary_info(op).name, "\" not implemented for '",
                                          type_name(dt), "'"));
    }
  });
}

void run_complex_binary_kernel(BinaryOp op, const ElementwiseIter& it, ScalarType dt) {
  dispatch_complex(dt, binary_info(op).name, [&](auto tag) {
    using C = typename decltype(tag)::type;
    switch (op) {
#define EMBER_COMPLEX_CASE(name, kind, expr)                                     \
  case BinaryOp::name:                                                          \
    if constexpr (std::string_view(#kind) == "COMPLEX")                         \
      return run_elementwise<C, C, C>(it, [](C a, C b) { return expr; });       \
    else                                                                        \
      return run_elementwise<bool, C, C>(it, [](C a, C b) { return expr; });
      EMBER_COMPLEX_BINARY_OPS(EMBER_COMPLEX_CASE)
#undef EMBER_COMPLEX_CASE
      default:
        throw NotImplementedError(str_cat("\"", binary_info(op).name, "_cpu\" not implemented for '",
                                          type_name(dt), "'"));
    }
  });
}

std::complex<double> complex_sum_contiguous(const Tensor& x) {
  double re_im[2];
  cpu_kernels().pair_sum(to_real_type(x->dtype), x->data(), x->numel(), re_im);
  return {re_im[0], re_im[1]};
}

// conj_physical: the conjugate, written out (ember has no lazy conjugate bit).
void run_conj_kernel(const ElementwiseIter& it, ScalarType dt) {
  dispatch_complex(dt, "conj_physical", [&](auto tag) {
    using C = typename decltype(tag)::type;
    run_elementwise<C, C>(it, [](C x) { return std::conj(x); });
  });
}

}  // namespace ember
