// half.h - ember::Half (IEEE 754 binary16) and ember::BFloat16 (bfloat16), header-only.
//
// Both are 2-byte trivially copyable structs holding the raw bits, so tensors of them are plain
// arrays. Arithmetic goes through float (as in PyTorch), rounding back to nearest-even on store.
// float -> Half uses the F16C instructions when the translation unit is compiled with them
// (__F16C__), else portable bit manipulation with identical results (NaN kept quiet with its top
// payload bits, overflow to inf). Conversions from double round once, directly to the 16-bit
// format: double -> float uses round-to-odd, which makes the second rounding exact.
// Note: with F16C enabled these inline functions contain AVX instructions; build every translation
// unit of one binary with the same target flags.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace ember {

namespace detail {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Portable float -> binary16, round to nearest even.
inline uint16_t float_to_half_bits_portable(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u) {  // inf or NaN; NaN becomes quiet, keeping the top payload bits
    return static_cast<uint16_t>(sign | 0x7C00u |
                                 (ax > 0x7F800000u ? 0x200u | ((ax >> 13) & 0x3FFu) : 0u));
  }
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                                    // below 2^-14: subnormal half or zero
    if (ax <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25 rounds (ties) to zero
    const uint32_t e = ax >> 23;
    const uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - e;  // in [14, 24]: aligns the value to units of 2^-24
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) ++r;  // may carry into the smallest normal: fine
    return static_cast<uint16_t>(sign | r);
  }
  const uint32_t v = ax - 0x38000000u;  // rebias the exponent from 127 to 15
  uint32_t r = v >> 13;
  const uint32_t rem = v & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // carry may bump the exponent: fine
  return static_cast<uint16_t>(sign | r);
}

// Portable binary16 -> float (exact).
inline float half_bits_to_float_portable(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) {  // inf / NaN (a signalling NaN comes out quiet, as with F16C)
    return f32_from_bits(sign | 0x7F800000u | (mant << 13) | (mant ? 0x400000u : 0u));
  }
  if (exp == 0) {
    if (mant == 0) return f32_from_bits(sign);
    exp = 113;  // subnormal: normalise the mantissa
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --exp;
    }
    mant &= 0x3FFu;
    return f32_from_bits(sign | (exp << 23) | (mant << 13));
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_half_bits(float f) {
#if defined(__F16C__)
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#else
  return float_to_half_bits_portable(f);
#endif
}

inline float half_bits_to_float(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return half_bits_to_float_portable(h);
#endif
}

// float -> bfloat16, round to nearest even; NaN stays a quiet NaN. Branch-free so loops vectorise.
inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  const bool nan = (x & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<uint16_t>(nan ? ((x >> 16) | 0x40u) : rounded);
}

inline float bf16_bits_to_float(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }

// double -> float rounded to odd: truncate, then set the last bit if anything was dropped. A
// subsequent round-to-nearest to a format with <= 22 significant bits then equals a direct rounding.
inline float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || d != d) return f;
  uint32_t u = f32_bits(f);
  const double af = f < 0 ? -static_cast<double>(f) : static_cast<double>(f);
  const double ad = d < 0 ? -d : d;
  if (af > ad) --u;  // rounded away from zero (possibly to inf): step back toward zero
  return f32_from_bits(u | 1u);
}

// Integer -> double rounded to odd (exact below 2^53), so that one more rounding is correct.
template <class T>
inline double integer_to_double_round_odd(T v) {
  using U = std::make_unsigned_t<T>;
  const bool neg = std::is_signed<T>::value && v < 0;
  U m = neg ? static_cast<U>(U(0) - static_cast<U>(v)) : static_cast<U>(v);
  if (static_cast<uint64_t>(m) < (uint64_t(1) << 53)) return static_cast<double>(v);
  uint64_t w = static_cast<uint64_t>(m);
  int shift = 0;
  while ((w >> shift) >= (uint64_t(1) << 53)) ++shift;
  const uint64_t kept = (w >> shift) | ((w & ((uint64_t(1) << shift) - 1)) != 0 ? 1u : 0u);
  double d = static_cast<double>(kept) * static_cast<double>(uint64_t(1) << shift);
  return neg ? -d : d;
}

}  // namespace detail

struct Half {
  uint16_t bits;

  struct from_bits_t {};
  Half() = default;  // trivial: leaves bits uninitialised, like a float
  constexpr Half(uint16_t b, from_bits_t) : bits(b) {}
  static constexpr Half from_bits(uint16_t b) { return Half(b, from_bits_t{}); }

  explicit Half(float f) : bits(detail::float_to_half_bits(f)) {}
  explicit Half(double d) : bits(detail::float_to_half_bits(detail::double_to_float_round_odd(d))) {}
  template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
  explicit Half(T v)
      : bits(detail::float_to_half_bits(
            detail::double_to_float_round_odd(detail::integer_to_double_round_odd(v)))) {}

  operator float() const { return detail::half_bits_to_float(bits); }

  Half& operator+=(Half o) { return *this = Half(float(*this) + float(o)); }
  Half& operator-=(Half o) { return *this = Half(float(*this) - float(o)); }
  Half& operator*=(Half o) { return *this = Half(float(*this) * float(o)); }
  Half& operator/=(Half o) { return *this = Half(float(*this) / float(o)); }
};

struct BFloat16 {
  uint16_t bits;

  struct from_bits_t {};
  BFloat16() = default;
  constexpr BFloat16(uint16_t b, from_bits_t) : bits(b) {}
  static constexpr BFloat16 from_bits(uint16_t b) { return BFloat16(b, from_bits_t{}); }

  explicit BFloat16(float f) : bits(detail::float_to_bf16_bits(f)) {}
  explicit BFloat16(double d)
      : bits(detail::float_to_bf16_bits(detail::double_to_float_round_odd(d))) {}
  template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
  explicit BFloat16(T v)
      : bits(detail::float_to_bf16_bits(
            detail::double_to_float_round_odd(detail::integer_to_double_round_odd(v)))) {}

  operator float() const { return detail::bf16_bits_to_float(bits); }

  BFloat16& operator+=(BFloat16 o) { return *this = BFloat16(float(*this) + float(o)); }
  BFloat16& operator-=(BFloat16 o) { return *this = BFloat16(float(*this) - float(o)); }
  BFloat16& operator*=(BFloat16 o) { return *this = BFloat16(float(*this) * float(o)); }
  BFloat16& operator/=(BFloat16 o) { return *this = BFloat16(float(*this) / float(o)); }
};

static_assert(sizeof(Half) == 2 && std::is_trivially_copyable<Half>::value, "Half must be 2 raw bytes");
static_assert(sizeof(BFloat16) == 2 && std::is_trivially_copyable<BFloat16>::value,
              "BFloat16 must be 2 raw bytes");
static_assert(std::is_standard_layout<Half>::value && std::is_standard_layout<BFloat16>::value,
              "layout must match uint16_t");

// Same-type arithmetic rounds back to the 16-bit type; mixed with float/double it stays in float
// (through the implicit conversion), as in PyTorch. Comparisons use the float conversion.
inline Half operator+(Half a, Half b) { return Half(float(a) + float(b)); }
inline Half operator-(Half a, Half b) { return Half(float(a) - float(b)); }
inline Half operator*(Half a, Half b) { return Half(float(a) * float(b)); }
inline Half operator/(Half a, Half b) { return Half(float(a) / float(b)); }
inline Half operator-(Half a) { return Half::from_bits(static_cast<uint16_t>(a.bits ^ 0x8000u)); }

inline BFloat16 operator+(BFloat16 a, BFloat16 b) { return BFloat16(float(a) + float(b)); }
inline BFloat16 operator-(BFloat16 a, BFloat16 b) { return BFloat16(float(a) - float(b)); }
inline BFloat16 operator*(BFloat16 a, BFloat16 b) { return BFloat16(float(a) * float(b)); }
inline BFloat16 operator/(BFloat16 a, BFloat16 b) { return BFloat16(float(a) / float(b)); }
inline BFloat16 operator-(BFloat16 a) {
  return BFloat16::from_bits(static_cast<uint16_t>(a.bits ^ 0x8000u));
}

// Bulk converters (n elements; the ranges must not overlap).
inline void half_to_float(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = detail::half_bits_to_float(src[i].bits);
}

inline void float_to_half(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i].bits = detail::float_to_half_bits(src[i]);
}

inline void bfloat16_to_float(const BFloat16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = detail::bf16_bits_to_float(src[i].bits);
}

inline void float_to_bfloat16(const float* src, BFloat16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i].bits = detail::float_to_bf16_bits(src[i]);
}

}  // namespace ember
