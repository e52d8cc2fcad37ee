// dtype.h: the fifteen scalar types, their properties, PyTorch's promotion lattice, and the
// compile-time dispatch that turns a runtime ScalarType into a C++ type for a kernel.
#pragma once
#include <complex>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/errors.h"
#include "core/half.h"

namespace ember {

// Types are numbered in the order they were added, so that a type's number stays what it was
// (extensions' ABI): the complex types came after the real ones, the wide unsigned types after them.
enum class ScalarType : int8_t {
  Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64,
  Complex64, Complex128, UInt16, UInt32, UInt64, Undefined
};
constexpr int kNumScalarTypes = 15;

inline size_t itemsize(ScalarType t) {
  static constexpr size_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16, 2, 4, 8, 0};
  return sizes[static_cast<int>(t)];
}
// PyTorch's ScalarType name of each type ("Float", "Long", ...): its error messages quote these,
// and Tensor.type() builds "ember.FloatTensor" from them.
inline const char* type_name(ScalarType t) {
  static const char* names[] = {"Bool",   "Byte",         "Char",          "Short", "Int",
                                "Long",   "Half",         "BFloat16",      "Float", "Double",
                                "ComplexFloat", "ComplexDouble", "UInt16",  "UInt32", "UInt64",
                                "Undefined"};
  return names[static_cast<int>(t)];
}
inline const char* torch_type_name(ScalarType t) { return type_name(t); }
// The C++ type name torch's messages quote for some checks ("float", "c10::Half").
inline const char* cpp_type_name(ScalarType t) {
  static const char* names[] = {"bool",      "unsigned char", "signed char",   "short int",
                                "int",       "long int",      "c10::Half",     "c10::BFloat16",
                                "float",     "double",        "c10::complex<float>",
                                "c10::complex<double>",       "unsigned short",
                                "unsigned int", "unsigned long", "undefined"};
  return names[static_cast<int>(t)];
}
inline const char* dtype_name(ScalarType t) {
  static const char* names[] = {"bool",    "uint8",    "int8",    "int16",     "int32",
                                "int64",   "float16",  "bfloat16", "float32",  "float64",
                                "complex64", "complex128", "uint16",  "uint32",   "uint64",
                                "undefined"};
  return names[static_cast<int>(t)];
}
// uint16/uint32/uint64: torch's "shell" unsigned types. They are stored, converted, compared for
// equality, multiplied, masked bitwise, summed (into int64), sorted and hashed; other ops refuse
// them with NotImplementedError, as torch's do, and they promote only with themselves and with
// the floating types.
inline bool is_wide_unsigned(ScalarType t) {
  return t == ScalarType::UInt16 || t == ScalarType::UInt32 || t == ScalarType::UInt64;
}
inline bool is_signed_type(ScalarType t) {  // torch's dtype.is_signed
  return t != ScalarType::Bool && t != ScalarType::UInt8 && !is_wide_unsigned(t);
}
// A floating value into an unsigned integer type, as torch converts it: through int64 (-1.0
// becomes 2^n - 1, not undefined behaviour); uint64's upper half directly.
template <typename To> inline To unsigned_from_double(double d) {
  if constexpr (sizeof(To) == 8)
    if (d >= 9223372036854775808.0) return static_cast<To>(d);
  return static_cast<To>(static_cast<int64_t>(d));
}
inline bool is_complex(ScalarType t) {
  return t == ScalarType::Complex64 || t == ScalarType::Complex128;
}
// complex64 <-> float32, complex128 <-> float64 (a real type's complex counterpart; the 16-bit
// floats map to complex64, as ember has no complex32).
inline ScalarType to_real_type(ScalarType t) {
  return t == ScalarType::Complex64 ? ScalarType::Float32
         : t == ScalarType::Complex128 ? ScalarType::Float64 : t;
}
inline ScalarType to_complex_type(ScalarType t) {
  return t == ScalarType::Float64 || t == ScalarType::Complex128 ? ScalarType::Complex128
                                                                  : ScalarType::Complex64;
}
inline bool is_floating(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}
inline bool is_integral(ScalarType t, bool include_bool) {
  return (include_bool && t == ScalarType::Bool) ||
         (t >= ScalarType::UInt8 && t <= ScalarType::Int64) || is_wide_unsigned(t);
}
inline bool is_reduced_float(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16;
}
// Category used by promotion: 0 bool, 1 integer, 2 floating, 3 complex.
inline int category(ScalarType t) {
  return t == ScalarType::Bool ? 0 : is_complex(t) ? 3 : is_floating(t) ? 2 : 1;
}

// PyTorch's promote_types table (torch/csrc c10/core/ScalarType.cpp), restricted to our types.
inline ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  if (is_wide_unsigned(a) || is_wide_unsigned(b)) {
    if (a == b) return a;
    if (is_floating(a) || is_floating(b)) return is_floating(a) ? a : b;
    throw std::runtime_error(str_cat("Promotion for uint16, uint32, uint64 types is not "
                                     "supported, attempted to promote ", type_name(a), " and ",
                                     type_name(b)));
  }
  constexpr auto b1 = ScalarType::Bool, u1 = ScalarType::UInt8, i1 = ScalarType::Int8,
                 i2 = ScalarType::Int16, i4 = ScalarType::Int32, i8 = ScalarType::Int64,
                 f2 = ScalarType::Float16, bf = ScalarType::BFloat16, f4 = ScalarType::Float32,
                 f8 = ScalarType::Float64, c4 = ScalarType::Complex64, c8 = ScalarType::Complex128;
  static constexpr ScalarType table[kNumScalarTypes][kNumScalarTypes] = {
      /*        b1  u1  i1  i2  i4  i8  f2  bf  f4  f8  c4  c8 */
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8, c4, c8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8, c4, c8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8, c4, c8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8, c4, c8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c8, c8},
      /* c4 */ {c4, c4, c4, c4, c4, c4, c4, c4, c4, c8, c4, c8},
      /* c8 */ {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

// torch.can_cast: casting is allowed unless it lowers the category (complex->float, float->int,
// int->bool).
inline bool can_cast(ScalarType from, ScalarType to) { return category(from) <= category(to); }

// The C++ type that stores each dtype, and the type kernels compute in ("opmath": float for
// the 16-bit floats, as PyTorch does, so that float16/bfloat16 are stored natively but
// computed in float32).
template <ScalarType S> struct CppType;
template <> struct CppType<ScalarType::Bool> { using type = bool; };
template <> struct CppType<ScalarType::UInt8> { using type = uint8_t; };
template <> struct CppType<ScalarType::Int8> { using type = int8_t; };
template <> struct CppType<ScalarType::Int16> { using type = int16_t; };
template <> struct CppType<ScalarType::Int32> { using type = int32_t; };
template <> struct CppType<ScalarType::Int64> { using type = int64_t; };
template <> struct CppType<ScalarType::Float16> { using type = Half; };
template <> struct CppType<ScalarType::BFloat16> { using type = BFloat16; };
template <> struct CppType<ScalarType::Float32> { using type = float; };
template <> struct CppType<ScalarType::Float64> { using type = double; };
// std::complex has the layout of float[2] / double[2] (C++ [complex.numbers]), which NumPy,
// DLPack and BLAS's complex GEMM share.
template <> struct CppType<ScalarType::Complex64> { using type = std::complex<float>; };
template <> struct CppType<ScalarType::Complex128> { using type = std::complex<double>; };
template <> struct CppType<ScalarType::UInt16> { using type = uint16_t; };
template <> struct CppType<ScalarType::UInt32> { using type = uint32_t; };
template <> struct CppType<ScalarType::UInt64> { using type = uint64_t; };

template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <typename T> using opmath_t = typename OpMath<T>::type;

template <typename T> constexpr ScalarType scalar_type_of();
template <> constexpr ScalarType scalar_type_of<bool>() { return ScalarType::Bool; }
template <> constexpr ScalarType scalar_type_of<uint8_t>() { return ScalarType::UInt8; }
template <> constexpr ScalarType scalar_type_of<int8_t>() { return ScalarType::Int8; }
template <> constexpr ScalarType scalar_type_of<int16_t>() { return ScalarType::Int16; }
template <> constexpr ScalarType scalar_type_of<int32_t>() { return ScalarType::Int32; }
template <> constexpr ScalarType scalar_type_of<int64_t>() { return ScalarType::Int64; }
template <> constexpr ScalarType scalar_type_of<Half>() { return ScalarType::Float16; }
template <> constexpr ScalarType scalar_type_of<BFloat16>() { return ScalarType::BFloat16; }
template <> constexpr ScalarType scalar_type_of<float>() { return ScalarType::Float32; }
template <> constexpr ScalarType scalar_type_of<double>() { return ScalarType::Float64; }
template <> constexpr ScalarType scalar_type_of<std::complex<float>>() { return ScalarType::Complex64; }
template <> constexpr ScalarType scalar_type_of<std::complex<double>>() { return ScalarType::Complex128; }
template <> constexpr ScalarType scalar_type_of<uint16_t>() { return ScalarType::UInt16; }
template <> constexpr ScalarType scalar_type_of<uint32_t>() { return ScalarType::UInt32; }
template <> constexpr ScalarType scalar_type_of<uint64_t>() { return ScalarType::UInt64; }

// Kernels that move elements by size (copies, flips, index plans, masked fills) take the widest
// element, complex128, as this.
struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};

template <typename T> struct IsComplex : std::false_type {};
template <typename T> struct IsComplex<std::complex<T>> : std::true_type {};
template <typename T> constexpr bool is_complex_v = IsComplex<T>::value;
// float16/bfloat16 (is_reduced_float of the C++ type)
template <typename T>
constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename T> struct TypeTag { using type = T; };

// Dispatch sets: a kernel is instantiated only for the dtypes its op supports, which keeps the
// build small. `f` is a generic lambda taking TypeTag<T>.
#define EMBER_CASE(ST, ...)                                   \
  case ScalarType::ST:                                        \
    return f(TypeTag<typename CppType<ScalarType::ST>::type>{});

template <typename F> decltype(auto) dispatch_floating(ScalarType t, const char* op, F&& f) {
  switch (t) {
    EMBER_CASE(Float32) EMBER_CASE(Float64) EMBER_CASE(Float16) EMBER_CASE(BFloat16)
    default: break;
  }
  throw NotImplementedError(str_cat("\"", op, "\" not implemented for '", type_name(t), "'"));
}
template <typename F> decltype(auto) dispatch_integral(ScalarType t, const char* op, F&& f) {
  switch (t) {
    EMBER_CASE(UInt8) EMBER_CASE(Int8) EMBER_CASE(Int16) EMBER_CASE(Int32) EMBER_CASE(Int64)
    default: break;
  }
  throw NotImplementedError(str_cat("\"", op, "\" not implemented for '", type_name(t), "'"));
}
template <typename F> decltype(auto) dispatch_all(ScalarType t, const char* op, F&& f) {
  switch (t) {
    EMBER_CASE(Bool) EMBER_CASE(UInt8) EMBER_CASE(Int8) EMBER_CASE(Int16) EMBER_CASE(Int32)
    EMBER_CASE(Int64) EMBER_CASE(Float16) EMBER_CASE(BFloat16) EMBER_CASE(Float32)
    EMBER_CASE(Float64)
    default: break;
  }
  throw NotImplementedError(str_cat("\"", op, "\" not implemented for '", type_name(t), "'"));
}
// The complex types (std::complex<float>/<double>): only the ops that have complex kernels
// dispatch here, so that dispatch_all's kernels need not compile for them.
template <typename F> decltype(auto) dispatch_complex(ScalarType t, const char* op, F&& f) {
  switch (t) {
    EMBER_CASE(Complex64) EMBER_CASE(Complex128)
    default: break;
  }
  throw NotImplementedError(str_cat("\"", op, "\" not implemented for '", type_name(t), "'"));
}
template <typename F> decltype(auto) dispatch_all_and_complex(ScalarType t, const char* op, F&& f) {
  if (is_complex(t)) return dispatch_complex(t, op, std::forward<F>(f));
  return dispatch_all(t, op, std::forward<F>(f));
}
template <typename F> decltype(auto) dispatch_wide_unsigned(ScalarType t, const char* op, F&& f) {
  switch (t) {
    EMBER_CASE(UInt16) EMBER_CASE(UInt32) EMBER_CASE(UInt64)
    default: break;
  }
  throw NotImplementedError(str_cat("\"", op, "\" not implemented for '", type_name(t), "'"));
}
// The real types and the wide unsigned ones: ops torch has for them too (sort, unique).
template <typename F> decltype(auto) dispatch_all_and_wide_unsigned(ScalarType t, const char* op,
                                                                    F&& f) {
  if (is_wide_unsigned(t)) return dispatch_wide_unsigned(t, op, std::forward<F>(f));
  return dispatch_all(t, op, std::forward<F>(f));
}
// Every type: the conversions (copy_, to) and the ops that only move elements.
template <typename F> decltype(auto) dispatch_every(ScalarType t, const char* op, F&& f) {
  if (is_wide_unsigned(t)) return dispatch_wide_unsigned(t, op, std::forward<F>(f));
  return dispatch_all_and_complex(t, op, std::forward<F>(f));
}
template <typename F> decltype(auto) dispatch_numeric(ScalarType t, const char* op, F&& f) {
  if (t == ScalarType::Bool)
    throw NotImplementedError(str_cat("\"", op, "\" not implemented for 'Bool'"));
  return dispatch_all(t, op, std::forward<F>(f));
}

}  // namespace ember
