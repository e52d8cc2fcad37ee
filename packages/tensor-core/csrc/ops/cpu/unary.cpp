// Unary kernels, instantiated from EMBER_UNARY_OPS for the dtypes each kind allows (and this copy
// compiles: ops/cpu/kernel.h).
#include "ops/cpu/kernel.h"

#include "kernels/vector_libm.h"  // first: the simd declarations must precede any use

#include "kernels/loops.h"
#include "kernels/math.h"
#include "ops/cpu/widen.h"
#include "ops/elementwise.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <OpKind K, typename F>
void dispatch_unary(UnaryOp op, const char* name, const ElementwiseIter& it, ScalarType dt, F f) {
  // Kinds whose output has the input's dtype: every copy runs their 16-bit floats through its
  // float loops (widen.h).
  constexpr bool widened =
      kWidens<K == OpKind::FLOAT || K == OpKind::FLOAT_ONLY || K == OpKind::SAME, F, 1>;
  if constexpr (widened) {
    if (dt == ScalarType::Float16 || dt == ScalarType::BFloat16)
      return run_elementwise_widened<1>(it, dt, f);
  }
  if (!compiled(dt)) return cpu_default::unary(op, it, dt);
  if constexpr (K == OpKind::FLOAT || K == OpKind::FLOAT_ONLY) {
    dispatch_floating(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kCompiled<T> && !(widened && is_reduced_float_v<T>)) run_elementwise<T, T>(it, f);
    });
  } else if constexpr (K == OpKind::SAME) {
    dispatch_numeric(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kCompiled<T> && !(widened && is_reduced_float_v<T>)) run_elementwise<T, T>(it, f);
    });
  } else if constexpr (K == OpKind::PRED) {
    // float16/bfloat16 arrive converted to float32 (see unary()): GCC 12 miscompiles
    // bool-output loops over them at -O3.
    dispatch_all(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (kCompiled<T> && !std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16>)
        run_elementwise<bool, T>(it, f);
    });
  } else if constexpr (K == OpKind::INTEGRAL) {
    if constexpr (kDefaultCopy) {
      if (dt == ScalarType::Bool) return run_elementwise<bool, bool>(it, f);
      dispatch_integral(dt, name, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T>(it, f);
      });
    }
  }
}

}  // namespace

void unary(UnaryOp op, const ElementwiseIter& it, ScalarType dt) {
  switch (op) {
#define EMBER_UNARY_CASE(name, kind, expr)                                              \
  case UnaryOp::name:                                                                   \
    return dispatch_unary<OpKind::kind>(op, #name, it, dt, [](auto x) { return expr; });
    EMBER_UNARY_OPS(EMBER_UNARY_CASE)
#undef EMBER_UNARY_CASE
  }
}

}  // namespace ember::EMBER_CPU_NS
