// scalar.h: a Python number carried into C++ with its category (bool/int/float/complex), which type
// promotion needs: a Python scalar takes part in promotion by category only.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/dtype.h"

namespace ember {

struct Scalar {
  enum class Kind : uint8_t { Bool, Int, Float, Complex } kind = Kind::Int;
  union {
    bool b;
    int64_t i;
    double d;  // a complex number's real part too
  } v{};
  double imag = 0;  // Complex only
  // An Int above int64's range (uint64's upper half), v.i holding its bits: it converts to
  // uint64, bool and the floating and complex types; into other integer types it is torch's
  // OverflowError.
  bool uint64_upper = false;
  Scalar() { v.i = 0; }
  static Scalar from_bool(bool b) { Scalar s; s.kind = Kind::Bool; s.v.b = b; return s; }
  static Scalar from_int(int64_t i) { Scalar s; s.kind = Kind::Int; s.v.i = i; return s; }
  static Scalar from_uint64(uint64_t u) {
    Scalar s = from_int(static_cast<int64_t>(u));
    s.uint64_upper = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    return s;
  }
  static Scalar from_double(double d) { Scalar s; s.kind = Kind::Float; s.v.d = d; return s; }
  static Scalar from_complex(double re, double im) {
    Scalar s; s.kind = Kind::Complex; s.v.d = re; s.imag = im; return s;
  }

  bool is_float() const { return kind == Kind::Float; }
  bool is_complex() const { return kind == Kind::Complex; }
  bool is_int() const { return kind == Kind::Int; }
  bool is_bool() const { return kind == Kind::Bool; }
  // A complex number gives its real part to a real type (its imaginary part is checked where
  // data is created: to_checked).
  bool is_floating_kind() const { return kind == Kind::Float || kind == Kind::Complex; }
  double to_double() const {
    return is_floating_kind() ? v.d
           : kind == Kind::Int ? (uint64_upper ? double(uint64_t(v.i)) : double(v.i)) : double(v.b);
  }
  int64_t to_int() const {
    if (uint64_upper) throw OverflowError("int too big to convert");
    return is_floating_kind() ? int64_t(v.d) : kind == Kind::Int ? v.i : int64_t(v.b);
  }
  bool to_bool() const {
    return kind == Kind::Complex ? (v.d != 0 || imag != 0)
           : kind == Kind::Float ? v.d != 0 : kind == Kind::Int ? v.i != 0 : v.b;
  }
  template <typename T> T to() const {
    // (torch's: into a floating or complex type such an int is its nearest value)
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint64_t> && !std::is_same_v<T, bool>)
      if (uint64_upper) throw OverflowError("int too big to convert");
    if constexpr (is_complex_v<T>) {
      using R = typename T::value_type;
      return T(static_cast<R>(to_double()), static_cast<R>(kind == Kind::Complex ? imag : 0.0));
    }
    else if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_same_v<T, uint64_t>)
      return uint64_upper ? uint64_t(v.i)
             : is_floating_kind() ? unsigned_from_double<T>(v.d) : T(to_int());
    else if constexpr (std::is_integral_v<T>) return is_floating_kind() ? static_cast<T>(static_cast<int64_t>(v.d)) : static_cast<T>(to_int());
    else return static_cast<T>(to_double());
  }
  // Conversion for creating data (ember.tensor, full, fill_): refuses values the target type
  // cannot hold, as PyTorch does, instead of wrapping (and instead of the undefined behaviour of
  // converting NaN or an out-of-range double to an integer). `float_range` also refuses finite
  // values beyond a float type's largest, as PyTorch's fill_, full, masked_fill, index_fill and
  // scatter do (its tensor() from a list rounds them to inf instead); inf and NaN pass.
  template <typename T> T to_checked(bool float_range = false) const {
    const auto refuse = [] {
      throw std::runtime_error(std::string("value cannot be converted to type ") +
                               checked_type_name(scalar_type_of<T>()) + " without overflow");
    };
    // torch refuses a complex number with an imaginary part for a real type (not for bool,
    // whose conversion is "not zero" and never overflows)
    if constexpr (!is_complex_v<T> && !std::is_same_v<T, bool>)
      if (kind == Kind::Complex && imag != 0) refuse();
    if constexpr (is_complex_v<T>) {
      if (float_range) {
        const double lim = largest_finite(to_real_type(scalar_type_of<T>()));
        const double re = to_double(), im = kind == Kind::Complex ? imag : 0.0;
        if ((std::isfinite(re) && std::fabs(re) > lim) || (std::isfinite(im) && std::fabs(im) > lim))
          refuse();
      }
      return to<T>();
    } else if constexpr (!std::is_integral_v<T>) {
      const double d = to_double();
      if (float_range && std::isfinite(d) && std::fabs(d) > largest_finite(scalar_type_of<T>()))
        refuse();
    }
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // PyTorch's rule (c10 `overflows`): floats must lie in [min, max] (NaN never does);
      // integers must fit, except that negative ones may wrap into unsigned types.
      using L = std::numeric_limits<T>;
      bool ok;
      if (is_floating_kind()) {
        ok = v.d >= static_cast<double>(L::lowest()) && v.d <= static_cast<double>(L::max());
      } else if (uint64_upper) {
        ok = std::is_same_v<T, uint64_t>;
      } else {
        const int64_t i = to_int();
        if constexpr (std::is_unsigned_v<T>)
          ok = i >= 0 ? static_cast<uint64_t>(i) <= L::max()
                      : static_cast<uint64_t>(-(i + 1)) < static_cast<uint64_t>(L::max());
        else
          ok = sizeof(T) >= 8 || (i >= static_cast<int64_t>(L::min()) && i <= static_cast<int64_t>(L::max()));
      }
      if (!ok) refuse();
    }
    return to<T>();
  }
  // The C++ type names of torch's "value cannot be converted to type X without overflow".
  static const char* checked_type_name(ScalarType t) {
    static const char* names[] = {"bool",      "uint8_t",   "int8_t",  "int16_t",
                                  "int",       "int64_t",   "c10::Half", "c10::BFloat16",
                                  "float",     "double",    "c10::complex<float>",
                                  "c10::complex<double>",   "uint16_t", "uint32_t",
                                  "uint64_t",  "undefined"};
    return names[static_cast<int>(t)];
  }
  static double largest_finite(ScalarType t) {
    switch (t) {
      case ScalarType::Float16: return 65504.0;
      case ScalarType::BFloat16: return 3.3895313892515355e38;
      case ScalarType::Float32: return std::numeric_limits<float>::max();
      default: return std::numeric_limits<double>::max();
    }
  }
  // The dtype a Python scalar of this kind becomes as a tensor (float -> default dtype, complex
  // -> its complex counterpart, as torch's default complex dtype follows the default dtype).
  ScalarType natural_dtype(ScalarType default_float) const {
    return kind == Kind::Bool ? ScalarType::Bool : kind == Kind::Int ? ScalarType::Int64
           : kind == Kind::Complex ? to_complex_type(default_float) : default_float;
  }
};

}  // namespace ember
