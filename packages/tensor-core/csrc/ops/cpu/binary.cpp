// Binary kernels, instantiated from EMBER_BINARY_OPS for the dtypes each kind allows (and this
// copy compiles: ops/cpu/kernel.h), and add/sub with alpha in one pass.
#include "ops/cpu/kernel.h"

#include <cmath>

#include "kernels/loops.h"
#include "kernels/math.h"
#include "ops/elementwise.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <OpKind K, typename F> void dispatch_binary(const char* name, const ElementwiseIter& it, ScalarType dt, F f) {
  if constexpr (K == OpKind::FLOAT2 || K == OpKind::TRUEDIV || K == OpKind::FLOAT_ONLY2) {
    dispatch_floating(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kCompiled<T>) run_elementwise<T, T, T>(it, f);
    });
  } else if constexpr (K == OpKind::ARITH) {
    dispatch_numeric(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kCompiled<T>) run_elementwise<T, T, T>(it, f);
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

// a*b + c rounded once where this copy's target fuses it (vfmadd with FMA; torch's vec::fmadd),
// else rounded twice as torch's kernels without FMA do.
#ifdef __FMA__
constexpr bool kFusedMultiplyAdd = true;
#else
constexpr bool kFusedMultiplyAdd = false;
#endif
template <typename M> inline M fused_multiply_add(M a, M b, M c) {
  if constexpr (kFusedMultiplyAdd) return std::fma(a, b, c);
  else return a * b + c;
}

}  // namespace

void binary(BinaryOp op, const ElementwiseIter& it, ScalarType dt) {
  if (!compiled(dt)) return cpu_default::binary(op, it, dt);
  switch (op) {
#define EMBER_BINARY_CASE(name, kind, expr)                                           \
  case BinaryOp::name:                                                                \
    return dispatch_binary<OpKind::kind>(#name, it, dt, [](auto a, auto b) { return expr; });
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

}  // namespace ember::EMBER_CPU_NS
