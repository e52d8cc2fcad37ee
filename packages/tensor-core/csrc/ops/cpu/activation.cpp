// activation.cpp - the one-pass kernels of the clamp-shaped activations (ReLU6, hardtanh) and of
// the ReLU/hardtanh gradients, over an ElementwiseIter (ops/nn_kernels.cpp, ops/elementwise.cpp).
// Compiled once per CPU capability (kernel.h): each is one select per element, vectorised, with no
// bool temporary and no second pass.
#include "ops/cpu/kernel.h"

#include "kernels/loops.h"
#include "kernels/math.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <typename F> void on_floating(ScalarType dtype, const char* name, const F& f) {
  dispatch_floating(dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCompiled<T>) f(tag);
  });
}

}  // namespace

void clamp_scalar(const ElementwiseIter& it, ScalarType dtype, bool has_min, double min_value,
                  bool has_max, double max_value) {
  if (!compiled(dtype))
    return cpu_default::clamp_scalar(it, dtype, has_min, min_value, has_max, max_value);
  on_floating(dtype, "clamp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    const C lo = C(min_value), hi = C(max_value);
    // NaN input or bound stays NaN (NaN-propagating maximum/minimum, as torch's clamp).
    if (has_min && has_max)
      run_elementwise<T, T>(it, [=](auto v) { return math::minimum(math::maximum(v, lo), hi); });
    else if (has_min)
      run_elementwise<T, T>(it, [=](auto v) { return math::maximum(v, lo); });
    else
      run_elementwise<T, T>(it, [=](auto v) { return math::minimum(v, hi); });
  });
}

void threshold_backward(const ElementwiseIter& it, ScalarType dtype, double threshold) {
  if (!compiled(dtype)) return cpu_default::threshold_backward(it, dtype, threshold);
  on_floating(dtype, "threshold_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    const C t = C(threshold);
    run_elementwise<T, T, T>(it, [=](auto g, auto x) { return x <= t ? decltype(g)(0) : g; });
  });
}

void hardtanh_backward(const ElementwiseIter& it, ScalarType dtype, double min_value,
                       double max_value) {
  if (!compiled(dtype)) return cpu_default::hardtanh_backward(it, dtype, min_value, max_value);
  on_floating(dtype, "hardtanh_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    const C lo = C(min_value), hi = C(max_value);
    run_elementwise<T, T, T>(
        it, [=](auto g, auto x) { return (x <= lo || x >= hi) ? decltype(g)(0) : g; });
  });
}

}  // namespace ember::EMBER_CPU_NS
