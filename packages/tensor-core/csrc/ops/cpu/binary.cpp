// Binary kernels, instantiated from EMBER_BINARY_OPS for the dtypes each kind allows (and this
// copy compiles: ops/cpu/kernel.h), and add/sub with alpha in one pass.
#include "kernels/vector_libm.h"  // first: the simd declarations must precede any use
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <cmath>

#ifdef __F16C__
#include <immintrin.h>
#endif

#include "kernels/loops.h"
#include "kernels/math.h"
#include "ops/cpu/widen.h"
#include "ops/elementwise.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <OpKind K, typename F>
void dispatch_binary(BinaryOp op, const char* name, const ElementwiseIter& it, ScalarType dt, F f) {
  // Kinds whose output has the inputs' dtype: every copy runs their 16-bit floats through its
  // float loops (widen.h).
  constexpr bool widened = kWidens<K == OpKind::FLOAT2 || K == OpKind::TRUEDIV ||
                                        K == OpKind::FLOAT_ONLY2 || K == OpKind::ARITH, F, 2>;
  if constexpr (widened) {
    if (dt == ScalarType::Float16 || dt == ScalarType::BFloat16)
      return run_elementwise_widened<2>(it, dt, f);
  }
  if (!compiled(dt)) return cpu_default::binary(op, it, dt);
  if constexpr (K == OpKind::FLOAT2 || K == OpKind::TRUEDIV || K == OpKind::FLOAT_ONLY2) {
    dispatch_floating(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kCompiled<T> && !(widened && is_reduced_float_v<T>)) run_elementwise<T, T, T>(it, f);
    });
  } else if constexpr (K == OpKind::ARITH) {
    dispatch_numeric(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kCompiled<T> && !(widened && is_reduced_float_v<T>)) run_elementwise<T, T, T>(it, f);
    });
  } else if constexpr (K == OpKind::CMP || K == OpKind::LOGICAL) {
    // float16/bfloat16 arrive converted to float32 (see binary()).
    dispatch_all(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kCompiled<T> && !std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16>)
        run_elementwise<bool, T, T>(it, f);
    });
  } else if constexpr (K == OpKind::BITWISE) {
    if constexpr (kDefaultCopy) {
      if (dt == ScalarType::Bool) return run_elementwise<bool, bool, bool>(it, f);
      dispatch_integral(dt, name, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T, T>(it, f);
      });
    }
  } else if constexpr (K == OpKind::SHIFT) {
    if constexpr (kDefaultCopy) {
      dispatch_integral(dt, name, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T, T>(it, f);
      });
    }
  }
}

// a*b + c rounded once where this copy's target fuses it (x86's vfmadd, aarch64's fmla; torch's
// vec::fmadd), else rounded twice as torch's kernels without FMA do.
constexpr bool kFusedMultiplyAdd = EMBER_HAS_FMA;
template <typename M> inline M fused_multiply_add(M a, M b, M c) {
  if constexpr (kFusedMultiplyAdd) return std::fma(a, b, c);
  else return a * b + c;
}

}  // namespace

void binary(BinaryOp op, const ElementwiseIter& it, ScalarType dt) {
  switch (op) {
#define EMBER_BINARY_CASE(name, kind, expr)                                                 \
  case BinaryOp::name:                                                                      \
    return dispatch_binary<OpKind::kind>(op, #name, it, dt, [](auto a, auto b) { return expr; });
    EMBER_BINARY_OPS(EMBER_BINARY_CASE)
#undef EMBER_BINARY_CASE
  }
}

bool fused_multiply_add() { return kFusedMultiplyAdd; }

// a + alpha * b (alpha negated for sub) on a floating dtype. Every copy compiles the 16-bit floats
// here, so that whether the result is rounded once depends on the CPU alone, not on the dtype.
void add_alpha(const ElementwiseIter& it, ScalarType dtype, double alpha, bool subtract) {
  dispatch_floating(dtype, subtract ? "sub" : "add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    // alpha in the dtype (float16/bfloat16: rounded to it, then widened), negated for sub
    M w = static_cast<M>(cast_to<T>(alpha));
    if (subtract) w = -w;
    run_elementwise<T, T, T>(it, [w](M x, M y) { return fused_multiply_add(y, w, x); });
  });
}

// ---- 16-bit floats through the float loops (widen.h) ----

namespace {

constexpr int64_t kWidenBlock = 256;  // floats per operand buffer: all of them stay in L1

template <typename T16>
__attribute__((noinline)) void narrow_block(const float* src, char* dst, int64_t stride, int64_t n) {
  if (stride == int64_t(sizeof(T16))) {
    T16* p = reinterpret_cast<T16*>(dst);
    int64_t i = 0;
#ifdef __F16C__
    if constexpr (std::is_same_v<T16, Half>)  // rounded to nearest even, as Half(float)
      for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < n; ++i) p[i] = T16(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T16*>(dst + i * stride) = T16(src[i]);
  }
}

template <typename T16>
void run_widened_as(const ElementwiseIter& it, int n_inputs, const void* f, FloatLoop loop) {
  it.for_each([&](char** data, const int64_t* s, int64_t n) {
    alignas(64) float buf[kMaxOperands][kWidenBlock];
    char* ptrs[kMaxOperands];
    int64_t fs[kMaxOperands];
    for (int k = 0; k <= n_inputs; ++k) ptrs[k] = reinterpret_cast<char*>(buf[k]);
    fs[0] = sizeof(float);
    for (int64_t b = 0; b < n; b += kWidenBlock) {
      const int64_t m = std::min(kWidenBlock, n - b);
      for (int k = 1; k <= n_inputs; ++k) {
        const char* src = data[k] + b * s[k];
        if (s[k] == 0) {  // a broadcast operand stays one value (the float loop's scalar path)
          buf[k][0] = static_cast<float>(*reinterpret_cast<const T16*>(src));
          fs[k] = 0;
        } else {
          widen_block<T16>(src, s[k], buf[k], m);
          fs[k] = sizeof(float);
        }
      }
      loop(f, ptrs, fs, m);
      narrow_block<T16>(buf[0], data[0] + b * s[0], s[0], m);
    }
  });
}

}  // namespace

void run_widened(const ElementwiseIter& it, ScalarType dtype, int n_inputs, const void* f, FloatLoop loop) {
  if (dtype == ScalarType::Float16) run_widened_as<Half>(it, n_inputs, f, loop);
  else run_widened_as<BFloat16>(it, n_inputs, f, loop);
}

namespace {

// W <- T16 (widen) or T16 <- W copies, W float32 or float64 (through float32, as torch's
// Half(float(double))); a strided or float64 side goes through a block buffer.
template <typename T16, typename W> void convert_as(const ElementwiseIter& it, bool widen) {
  it.for_each([&](char** data, const int64_t* s, int64_t n) {
    constexpr int64_t kWide = sizeof(W);
    if constexpr (std::is_same_v<W, float>) {
      if (widen && s[0] == kWide) return widen_block<T16>(data[1], s[1], reinterpret_cast<float*>(data[0]), n);
      if (!widen && s[1] == kWide) return narrow_block<T16>(reinterpret_cast<const float*>(data[1]), data[0], s[0], n);
    }
    alignas(64) float buf[kWidenBlock];
    for (int64_t b = 0; b < n; b += kWidenBlock) {
      const int64_t m = std::min(kWidenBlock, n - b);
      if (widen) {
        widen_block<T16>(data[1] + b * s[1], s[1], buf, m);
        if (s[0] == kWide) {  // typed: the compiler vectorises the conversion
          W* out = reinterpret_cast<W*>(data[0]) + b;
          for (int64_t i = 0; i < m; ++i) out[i] = buf[i];
        } else {
          for (int64_t i = 0; i < m; ++i) *reinterpret_cast<W*>(data[0] + (b + i) * s[0]) = buf[i];
        }
      } else {
        if (s[1] == kWide) {
          const W* in = reinterpret_cast<const W*>(data[1]) + b;
          for (int64_t i = 0; i < m; ++i) buf[i] = static_cast<float>(in[i]);
        } else {
          for (int64_t i = 0; i < m; ++i)
            buf[i] = static_cast<float>(*reinterpret_cast<const W*>(data[1] + (b + i) * s[1]));
        }
        narrow_block<T16>(buf, data[0] + b * s[0], s[0], m);
      }
    }
  });
}

template <typename T16> void convert_with(const ElementwiseIter& it, bool widen, ScalarType wide) {
  if (wide == ScalarType::Float32) convert_as<T16, float>(it, widen);
  else convert_as<T16, double>(it, widen);
}

}  // namespace

void convert_reduced_float(const ElementwiseIter& it, ScalarType dst, ScalarType src) {
  const bool widen = !is_reduced_float(dst);
  const ScalarType t16 = widen ? src : dst, wide = widen ? dst : src;
  if (t16 == ScalarType::Float16) convert_with<Half>(it, widen, wide);
  else convert_with<BFloat16>(it, widen, wide);
}

}  // namespace ember::EMBER_CPU_NS
