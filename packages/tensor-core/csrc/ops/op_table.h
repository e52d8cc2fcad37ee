// op_table.h: THE declaration of ember's elementwise ops. Each line names an op, its dtype
// rule and its scalar kernel. Everything else reads these lists: the kernels are instantiated
// from them (elementwise_*.cpp), the Python bindings generate function / method / in-place /
// out= variants from them (python/bind_ops.cpp), and `ember._C._op_table()` exposes them to
// the docs and to the op-database tests. Adding an elementwise op is one line here.
//
// Dtype rules ("kinds"):
//   FLOAT    result is floating: integer/bool inputs are promoted to the default dtype
//   SAME     numeric (not bool) in, same dtype out
//   PRED     any dtype in, bool out
//   INTEGRAL bool or integer in, same dtype out
//   ARITH    binary: inputs promoted to their common dtype, result in it
//   TRUEDIV  binary: like ARITH, but integer results are promoted to the default float dtype
//   FLOAT2   binary: like TRUEDIV (floating math such as atan2)
//   FLOAT_ONLY2 binary: floating common dtype only (integers refused, as logaddexp in PyTorch)
//   CMP      binary: compared in the common dtype, bool out
//   LOGICAL  binary: bool out from the truth values
//   BITWISE  binary: bool/integer common dtype
//   SHIFT    binary: integer common dtype (no bool)
//
// X(name, kind, expression over x / a, b in the op's compute type)
// A name special_<f> is torch.special.<f> only: bound as the private ember._C._special_<f>
// (python/bind_ops.cpp), which ember.special names <f>.
#pragma once

#define EMBER_UNARY_OPS(X)                                  \
  X(exp, FLOAT, math::exp(x))                               \
  X(exp2, FLOAT, std::exp2(x))                              \
  X(expm1, FLOAT, std::expm1(x))                            \
  X(log, FLOAT, std::log(x))                                \
  X(log2, FLOAT, std::log2(x))                              \
  X(log10, FLOAT, std::log10(x))                            \
  X(log1p, FLOAT, std::log1p(x))                            \
  X(sqrt, FLOAT, std::sqrt(x))                              \
  X(rsqrt, FLOAT, math::rsqrt(x))                           \
  X(sin, FLOAT, std::sin(x))                                \
  X(cos, FLOAT, std::cos(x))                                \
  X(tan, FLOAT, std::tan(x))                                \
  X(asin, FLOAT, std::asin(x))                              \
  X(acos, FLOAT, std::acos(x))                              \
  X(atan, FLOAT, std::atan(x))                              \
  X(sinh, FLOAT, std::sinh(x))                              \
  X(cosh, FLOAT, std::cosh(x))                              \
  X(tanh, FLOAT, math::tanh(x))                             \
  X(asinh, FLOAT, std::asinh(x))                            \
  X(acosh, FLOAT, std::acosh(x))                            \
  X(atanh, FLOAT, std::atanh(x))                            \
  X(sigmoid, FLOAT, math::sigmoid(x))                       \
  X(erf, FLOAT, math::erf(x))                               \
  X(erfc, FLOAT, std::erfc(x))                              \
  X(erfinv, FLOAT, math::erfinv(x))                         \
  X(sinc, FLOAT, math::sinc(x))                             \
  X(lgamma, FLOAT, math::special1(x, math::special::lgamma)) \
  X(digamma, FLOAT, math::special1(x, math::special::digamma)) \
  X(i0, FLOAT, math::special1(x, math::special::i0))        \
  X(special_i0e, FLOAT, math::special1(x, math::special::i0e)) \
  X(special_i1, FLOAT, math::special1(x, math::special::i1)) \
  X(special_i1e, FLOAT, math::special1(x, math::special::i1e)) \
  X(special_ndtr, FLOAT, math::special1(x, math::special::ndtr)) \
  X(special_ndtri, FLOAT, math::special1(x, math::special::ndtri)) \
  X(special_log_ndtr, FLOAT, math::special1(x, math::special::log_ndtr)) \
  X(special_erfcx, FLOAT, math::special1(x, math::special::erfcx)) \
  X(special_entr, FLOAT, math::special1(x, math::special::entr)) \
  X(special_bessel_j0, FLOAT, math::special1(x, math::special::bessel_j0)) \
  X(special_bessel_j1, FLOAT, math::special1(x, math::special::bessel_j1)) \
  X(special_bessel_y0, FLOAT, math::special1(x, math::special::bessel_y0)) \
  X(special_bessel_y1, FLOAT, math::special1(x, math::special::bessel_y1)) \
  X(special_modified_bessel_k0, FLOAT, math::special1(x, math::special::modified_bessel_k0)) \
  X(special_modified_bessel_k1, FLOAT, math::special1(x, math::special::modified_bessel_k1)) \
  X(special_scaled_modified_bessel_k0, FLOAT,              \
    math::special1(x, math::special::scaled_modified_bessel_k0)) \
  X(special_scaled_modified_bessel_k1, FLOAT,              \
    math::special1(x, math::special::scaled_modified_bessel_k1)) \
  X(special_airy_ai, FLOAT, math::special1(x, math::special::airy_ai)) \
  X(deg2rad, FLOAT, x * decltype(x)(0.017453292519943295769)) \
  X(rad2deg, FLOAT, x * decltype(x)(57.295779513082320877)) \
  X(reciprocal, FLOAT, decltype(x)(1) / x)                  \
  X(frac, FLOAT_ONLY, x - std::trunc(x))                    \
  X(neg, SAME, -x)                                          \
  X(abs, SAME, math::abs(x))                                \
  X(square, SAME, x * x)                                    \
  X(sign, SAME, math::sign(x))                              \
  X(angle, FLOAT, math::angle_real(x))                      \
  X(relu, SAME, math::relu(x))                              \
  X(floor, SAME, math::floor(x))                            \
  X(ceil, SAME, math::ceil(x))                              \
  X(trunc, SAME, math::trunc(x))                            \
  X(isnan, PRED, math::isnan(x))                            \
  X(isinf, PRED, math::isinf(x))                            \
  X(isfinite, PRED, math::isfinite(x))                      \
  X(signbit, PRED, math::signbit(x))                        \
  X(logical_not, PRED, !static_cast<bool>(x))               \
  X(bitwise_not, INTEGRAL, ember_bitwise_not(x))

#define EMBER_BINARY_OPS(X)                                        \
  X(add, ARITH, a + b)                                             \
  X(sub, ARITH, a - b)                                             \
  X(mul, ARITH, a * b)                                             \
  X(div, TRUEDIV, a / b)                                           \
  X(floor_divide, ARITH, math::floor_divide(a, b))                 \
  X(div_trunc, ARITH, math::trunc_divide(a, b))                    \
  X(remainder, ARITH, math::remainder(a, b))                       \
  X(fmod, ARITH, math::fmod(a, b))                                 \
  X(pow, ARITH, math::pow(a, b))                                   \
  X(maximum, ARITH, math::maximum(a, b))                           \
  X(minimum, ARITH, math::minimum(a, b))                           \
  X(atan2, FLOAT2, std::atan2(a, b))                               \
  X(hypot, FLOAT_ONLY2, std::hypot(a, b))                          \
  X(copysign, FLOAT2, std::copysign(a, b))                         \
  X(xlogy, FLOAT2, math::xlogy(a, b))                              \
  X(special_xlog1py, FLOAT2, math::special2(a, b, math::special::xlog1py)) \
  X(special_zeta, FLOAT2, math::special2(a, b, math::special::zeta)) \
  X(special_chebyshev_polynomial_t, FLOAT2, math::special2(a, b, math::special::chebyshev_t)) \
  X(special_chebyshev_polynomial_u, FLOAT2, math::special2(a, b, math::special::chebyshev_u)) \
  X(special_chebyshev_polynomial_v, FLOAT2, math::special2(a, b, math::special::chebyshev_v)) \
  X(special_chebyshev_polynomial_w, FLOAT2, math::special2(a, b, math::special::chebyshev_w)) \
  X(special_shifted_chebyshev_polynomial_t, FLOAT2,                                  \
    math::special2(a, b, math::special::shifted_chebyshev_t))                        \
  X(special_shifted_chebyshev_polynomial_u, FLOAT2,                                  \
    math::special2(a, b, math::special::shifted_chebyshev_u))                        \
  X(special_shifted_chebyshev_polynomial_v, FLOAT2,                                  \
    math::special2(a, b, math::special::shifted_chebyshev_v))                        \
  X(special_shifted_chebyshev_polynomial_w, FLOAT2,                                  \
    math::special2(a, b, math::special::shifted_chebyshev_w))                        \
  X(special_hermite_polynomial_h, FLOAT2, math::special2(a, b, math::special::hermite_h)) \
  X(special_hermite_polynomial_he, FLOAT2, math::special2(a, b, math::special::hermite_he)) \
  X(special_laguerre_polynomial_l, FLOAT2, math::special2(a, b, math::special::laguerre_l)) \
  X(special_legendre_polynomial_p, FLOAT2, math::special2(a, b, math::special::legendre_p)) \
  X(igamma, FLOAT_ONLY2, math::special2(a, b, math::special::igamma)) \
  X(igammac, FLOAT_ONLY2, math::special2(a, b, math::special::igammac)) \
  X(logaddexp, FLOAT_ONLY2, math::logaddexp(a, b))                 \
  X(logaddexp2, FLOAT_ONLY2, math::logaddexp2(a, b))               \
  X(fmax, ARITH, math::fmax(a, b))                                 \
  X(fmin, ARITH, math::fmin(a, b))                                 \
  X(eq, CMP, a == b)                                               \
  X(ne, CMP, a != b)                                               \
  X(lt, CMP, a < b)                                                \
  X(le, CMP, a <= b)                                               \
  X(gt, CMP, a > b)                                                \
  X(ge, CMP, a >= b)                                               \
  X(logical_and, LOGICAL, static_cast<bool>(a) && static_cast<bool>(b)) \
  X(logical_or, LOGICAL, static_cast<bool>(a) || static_cast<bool>(b))  \
  X(logical_xor, LOGICAL, static_cast<bool>(a) != static_cast<bool>(b)) \
  X(bitwise_and, BITWISE, a & b)                                   \
  X(bitwise_or, BITWISE, a | b)                                    \
  X(bitwise_xor, BITWISE, a ^ b)                                   \
  X(bitwise_left_shift, SHIFT, math::shift_left(a, b))             \
  X(bitwise_right_shift, SHIFT, math::shift_right(a, b))

// The ops that take complex inputs (complex64/complex128), with their complex formula over
// std::complex values (ops/complex_kernels.cpp). An op of the lists above that is not here refuses
// complex tensors with torch's NotImplementedError. Results are complex, except where the
// kind says otherwise: REAL (abs, angle: the real type), PRED/CMP/LOGICAL (bool).
// X(name, kind, expression over x / a, b)
#define EMBER_COMPLEX_UNARY_OPS(X)                        \
  X(exp, COMPLEX, std::exp(x))                            \
  X(exp2, COMPLEX, std::exp(x * typename decltype(x)::value_type(0.693147180559945309417))) \
  X(expm1, COMPLEX, math::complex_expm1(x))               \
  X(log, COMPLEX, std::log(x))                            \
  X(log1p, COMPLEX, math::complex_log1p(x))               \
  X(log2, COMPLEX, std::log(x) / typename decltype(x)::value_type(0.693147180559945309417)) \
  X(log10, COMPLEX, std::log10(x))                        \
  X(sqrt, COMPLEX, std::sqrt(x))                          \
  X(rsqrt, COMPLEX, decltype(x)(1) / std::sqrt(x))        \
  X(sin, COMPLEX, std::sin(x))                            \
  X(cos, COMPLEX, std::cos(x))                            \
  X(tan, COMPLEX, std::tan(x))                            \
  X(asin, COMPLEX, std::asin(x))                          \
  X(acos, COMPLEX, std::acos(x))                          \
  X(atan, COMPLEX, std::atan(x))                          \
  X(sinh, COMPLEX, std::sinh(x))                          \
  X(cosh, COMPLEX, std::cosh(x))                          \
  X(tanh, COMPLEX, std::tanh(x))                          \
  X(asinh, COMPLEX, std::asinh(x))                        \
  X(acosh, COMPLEX, std::acosh(x))                        \
  X(atanh, COMPLEX, std::atanh(x))                        \
  X(sigmoid, COMPLEX, decltype(x)(1) / (decltype(x)(1) + std::exp(-x))) \
  X(reciprocal, COMPLEX, math::complex_div(decltype(x)(1), x)) \
  X(neg, COMPLEX, -x)                                     \
  X(square, COMPLEX, math::complex_mul(x, x))             \
  X(sinc, COMPLEX, x == decltype(x)(0) ? decltype(x)(1) : math::complex_div(std::sin(x * typename decltype(x)::value_type(3.14159265358979323846)), x * typename decltype(x)::value_type(3.14159265358979323846))) \
  X(abs, REAL, std::abs(x))                               \
  X(angle, REAL, std::arg(x))                             \
  X(isnan, PRED, std::isnan(x.real()) || std::isnan(x.imag())) \
  X(isinf, PRED, std::isinf(x.real()) || std::isinf(x.imag())) \
  X(isfinite, PRED, std::isfinite(x.real()) && std::isfinite(x.imag())) \
  X(logical_not, PRED, x == decltype(x)(0))

#define EMBER_COMPLEX_BINARY_OPS(X)                               \
  X(add, COMPLEX, a + b)                                          \
  X(sub, COMPLEX, a - b)                                          \
  X(mul, COMPLEX, math::complex_mul(a, b))                        \
  X(div, COMPLEX, math::complex_div(a, b))                        \
  X(pow, COMPLEX, math::complex_pow(a, b))                        \
  X(logaddexp, COMPLEX, math::complex_logaddexp(a, b))            \
  X(eq, CMP, a == b)                                              \
  X(ne, CMP, a != b)                                              \
  X(logical_and, LOGICAL, a != decltype(a)(0) && b != decltype(b)(0)) \
  X(logical_or, LOGICAL, a != decltype(a)(0) || b != decltype(b)(0))  \
  X(logical_xor, LOGICAL, (a != decltype(a)(0)) != (b != decltype(b)(0)))

// NVRTC reads this file for the expressions alone (cuda/elementwise_source.cpp).
#ifndef __CUDACC_RTC__
namespace ember {

enum class UnaryOp {
#define EMBER_ENUM(name, kind, expr) name,
  EMBER_UNARY_OPS(EMBER_ENUM)
#undef EMBER_ENUM
};
enum class BinaryOp {
#define EMBER_ENUM(name, kind, expr) name,
  EMBER_BINARY_OPS(EMBER_ENUM)
#undef EMBER_ENUM
};

enum class OpKind {
  FLOAT, FLOAT_ONLY, SAME, PRED, INTEGRAL, ARITH, TRUEDIV, FLOAT2, FLOAT_ONLY2, CMP, LOGICAL, BITWISE, SHIFT
};

struct OpInfoEntry {
  const char* name;
  int arity;
  OpKind kind;
  const char* kind_name;
};

// name/kind per op, in enum order (read by dispatch and by the Python op table).
const OpInfoEntry& unary_info(UnaryOp op);
// Whether the op has a complex kernel (EMBER_COMPLEX_*_OPS), and whether its complex result is
// real (abs, angle) / bool.
enum class ComplexResult { None, Complex, Real, Bool };
ComplexResult complex_unary_result(UnaryOp op);
ComplexResult complex_binary_result(BinaryOp op);
// Whether the op writes only an out= of its result dtype (torch's structured kernels of these:
// "Found dtype Double but expected Float"); the other ops cast their result into out=.
bool exact_out_dtype(UnaryOp op);
const OpInfoEntry& binary_info(BinaryOp op);
int num_unary_ops();
int num_binary_ops();

}  // namespace ember
#endif  // __CUDACC_RTC__
