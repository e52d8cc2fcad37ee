// Binary kernels, instantiated from EMBER_BINARY_OPS for the dtypes each kind allows.
#include "kernels/loops.h"
#include "kernels/math.h"
#include "ops/elementwise.h"

namespace ember {
namespace {

template <OpKind K, typename F> void dispatch_binary(const char* name, const ElementwiseIter& it, ScalarType dt, F f) {
  if constexpr (K == OpKind::FLOAT2 || K == OpKind::TRUEDIV || K == OpKind::FLOAT_ONLY2) {
    dispatch_floating(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      run_elementwise<T, T, T>(it, f);
    });
  } else if constexpr (K == OpKind::ARITH) {
    dispatch_numeric(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      run_elementwise<T, T, T>(it, f);
    });
  } else if constexpr (K == OpKind::CMP || K == OpKind::LOGICAL) {
    // float16/bfloat16 arrive converted to float32 (see binary()).
    dispatch_all(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16>)
        run_elementwise<bool, T, T>(it, f);
    });
  } else if constexpr (K == OpKind::BITWISE) {
    if (dt == ScalarType::Bool) return run_elementwise<bool, bool, bool>(it, f);
    dispatch_integral(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      run_elementwise<T, T, T>(it, f);
    });
  } else if constexpr (K == OpKind::SHIFT) {
    dispatch_integral(dt, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      run_elementwise<T, T, T>(it, f);
    });
  }
}

}  // namespace

void run_binary_kernel(BinaryOp op, const ElementwiseIter& it, ScalarType dt) {
  switch (op) {
#define EMBER_BINARY_CASE(name, kind, expr)                                           \
  case BinaryOp::name:                                                                \
    return dispatch_binary<OpKind::kind>(#name, it, dt, [](auto a, auto b) { return expr; });
    EMBER_BINARY_OPS(EMBER_BINARY_CASE)
#undef EMBER_BINARY_CASE
  }
}

static const OpInfoEntry kBinaryInfo[] = {
#define EMBER_INFO(name, kind, expr) {#name, 2, OpKind::kind, #kind},
    EMBER_BINARY_OPS(EMBER_INFO)
#undef EMBER_INFO
};
const OpInfoEntry& binary_info(BinaryOp op) { return kBinaryInfo[static_cast<int>(op)]; }
int num_binary_ops() { return static_cast<int>(sizeof(kBinaryInfo) / sizeof(kBinaryInfo[0])); }

}  // namespace ember
