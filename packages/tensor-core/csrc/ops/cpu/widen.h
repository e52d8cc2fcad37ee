// widen.h - float16/bfloat16 elementwise kernels through the float32 loops (unary.cpp, binary.cpp).
//
// A kernel over 16-bit floats computes in float and rounds once on store. Rather than a copy of
// every loop per 16-bit dtype (40% of the elementwise kernels' code and compile time), each run of
// the innermost dim goes through f's float loop in blocks: the operands are widened into float
// buffers, the float loop (the one the float32 kernel instantiates anyway) runs over them, and
// the results are rounded back. One driver per CPU copy serves every op, so a copy with
// F16C/AVX-512 also converts and computes with its wider instructions. The rounding is the
// per-dtype loop's (f's float result to nearest even), provided f returns float: kWidens checks.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#ifdef __F16C__
#include <immintrin.h>
#endif

#include "kernels/loops.h"
#include "ops/cpu/kernel.h"

namespace ember::EMBER_CPU_NS {

#if defined(__AVX2__) && defined(__F16C__)
// 8 float16/bfloat16 values as floats (a bfloat16 is a float's top 16 bits); GCC does not
// vectorise the scalar F16C conversion of each element (Half's operator float)
template <typename T16> inline __attribute__((always_inline)) __m256 widen8(const T16* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<T16, Half>) return _mm256_cvtph_ps(bits);
  else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}
#endif

// n 16-bit floats (T16: Half or BFloat16) at src, `stride` bytes apart, widened into dst.
template <typename T16>
__attribute__((noinline)) void widen_block(const char* src, int64_t stride, float* dst, int64_t n) {
  if (stride == int64_t(sizeof(T16))) {
    const T16* p = reinterpret_cast<const T16*>(src);
    int64_t i = 0;
#if defined(__AVX2__) && defined(__F16C__)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, widen8(p + i));
#endif
    for (; i < n; ++i) dst[i] = static_cast<float>(p[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(*reinterpret_cast<const T16*>(src + i * stride));
  }
}

template <typename F, size_t... I>
constexpr bool widens_impl(std::index_sequence<I...>) {
  return std::is_same_v<std::invoke_result_t<F&, decltype(float(I))...>, float>;
}
// Whether f over N float operands returns float, so that its 16-bit kernels can be widened. Only
// asked (f instantiated with floats) where Ask holds: the op kinds whose output dtype is the
// inputs' (an integer-only f does not compile for floats).
template <bool Ask, typename F, size_t N> constexpr bool kWidens = false;
template <typename F, size_t N>
constexpr bool kWidens<true, F, N> = widens_impl<F>(std::make_index_sequence<N>{});

// f's float loop over (output, N inputs) pointers and byte strides, as a plain function.
using FloatLoop = void (*)(const void* f, char** data, const int64_t* strides, int64_t n);

template <size_t> using FloatOperand = float;
template <typename F, size_t... I>
void float_loop(const void* f, char** data, const int64_t* strides, int64_t n) {
  F copy = *static_cast<const F*>(f);
  nary_loop_impl<float, FloatOperand<I>...>(data, strides, n, copy, std::index_sequence<I...>{});
}

// The elementwise kernel of `it` (dtype Float16 or BFloat16, n_inputs inputs of that dtype, the
// output too) through `loop` (defined in binary.cpp).
void run_widened(const ElementwiseIter& it, ScalarType dtype, int n_inputs, const void* f, FloatLoop loop);

template <typename F, size_t... I> constexpr FloatLoop float_loop_of(std::index_sequence<I...>) {
  return &float_loop<F, I...>;
}

// run_elementwise<T, T...>(it, f) for T = dtype, a 16-bit float, with f taking N floats.
template <size_t N, typename F>
void run_elementwise_widened(const ElementwiseIter& it, ScalarType dtype, const F& f) {
  static_assert(kWidens<true, F, N>);
  run_widened(it, dtype, N, &f, float_loop_of<F>(std::make_index_sequence<N>{}));
}

}  // namespace ember::EMBER_CPU_NS
