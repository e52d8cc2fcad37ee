// The GELU (exact and tanh) forward/backward loops and layer norm's row kernels, for contiguous
// float32/float64 data; the entry points (shape checks, other dtypes) are ops/activation.cpp and
// ops/nn_kernels.cpp. Compiled once per CPU capability so that the erf/exp/tanh of vexp.h and the
// row sums run at the CPU's vector width. Layer norm keeps its statistics in the input's type, as
// torch's CPU kernel does for float32, with one partial sum per vector lane (a single running sum
// would keep the loop scalar, since float addition is not associative).
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/math.h"
#include "runtime/parallel.h"

namespace ember::EMBER_CPU_NS {
namespace {

constexpr int64_t kGeluGrain = 16384;  // elements per chunk: ~10 us of work

// 64 bytes of lanes: one AVX-512 register, two AVX2 ones.
template <typename T> constexpr int kLanes = 64 / sizeof(T);

template <typename T> T sum_row(const T* __restrict__ x, int64_t n) {
  constexpr int L = kLanes<T>;
  T a[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) a[l] += x[i + l];
  T s = 0;
  for (; i < n; ++i) s += x[i];
  for (int l = 0; l < L; ++l) s += a[l];
  return s;
}

template <typename T> T centered_squares(const T* __restrict__ x, int64_t n, T mu) {
  constexpr int L = kLanes<T>;
  T a[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      const T d = x[i + l] - mu;
      a[l] += d * d;
    }
  T s = 0;
  for (; i < n; ++i) s += (x[i] - mu) * (x[i] - mu);
  for (int l = 0; l < L; ++l) s += a[l];
  return s;
}

// One row of layer norm's backward: gi = rstd (g w - mean(g w) - xhat mean(g w xhat)), and when
// pw/pb are given, the row's g xhat and g added into them (the weight's and bias's partial sums).
// Whether there is a weight is a template parameter: a `w ? w[k] : 1` inside the loops kept them
// scalar (0.57x torch's backward at GPT's 768 x 128).
template <typename T, bool kHasWeight>
void backward_row(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ w, T mu,
                  T rs, T* __restrict__ gi, T* __restrict__ pw, T* __restrict__ pb, int64_t D) {
  // sum(g w) and sum(g w (x - mu)), lane by lane in vector-extension registers: written as
  // arrays of lanes, GCC vectorised this loop across rows of lanes instead, keeping each lane's
  // sum in order with scalar adds (2.2x slower than torch)
  constexpr int L = kVecBytes / sizeof(T);
  typedef T V __attribute__((vector_size(kVecBytes)));
  typedef T Unaligned __attribute__((vector_size(kVecBytes), aligned(sizeof(T)), may_alias));
  const auto load = [](const T* p) { return V(*reinterpret_cast<const Unaligned*>(p)); };
  V a1 = {}, a2 = {};
  const V vmu = V{} + mu;
  int64_t j = 0;
  for (; j + L <= D; j += L) {
    const V gw = kHasWeight ? load(g + j) * load(w + j) : load(g + j);
    a1 += gw;
    a2 += gw * (load(x + j) - vmu);
  }
  T s1 = 0, s2 = 0;
  for (; j < D; ++j) {
    const T gw = kHasWeight ? g[j] * w[j] : g[j];
    s1 += gw;
    s2 += gw * (x[j] - mu);
  }
  for (int l = 0; l < L; ++l) s1 += a1[l], s2 += a2[l];
  const T rs_m1 = rs * s1 / T(D);            // rstd mean(g w)
  const T rs2_m2 = rs * rs * rs * s2 / T(D);  // rstd^2 mean(g w xhat)
  if (pw) {
    for (int64_t k = 0; k < D; ++k) {
      const T gw = kHasWeight ? g[k] * w[k] : g[k];
      const T centered = x[k] - mu;
      gi[k] = rs * gw - rs2_m2 * centered - rs_m1;
      pw[k] += g[k] * centered * rs;
      pb[k] += g[k];
    }
  } else {
    for (int64_t k = 0; k < D; ++k) {
      const T gw = kHasWeight ? g[k] * w[k] : g[k];
      gi[k] = rs * gw - rs2_m2 * (x[k] - mu) - rs_m1;
    }
  }
}

template <typename T> constexpr T kSqrtHalf = T(0.70710678118654752440);
template <typename T> constexpr T kInvSqrt2Pi = T(0.39894228040143267794);
template <typename T> constexpr T kTanhBeta = T(0.79788456080286535588);  // sqrt(2 / pi)
template <typename T> constexpr T kTanhKappa = T(0.044715);

// The normal distribution's cdf Phi(x) in float, and exp(-x^2/2) with it, for the exact GELU
// forward and backward without an erf: Phi(x) = erfc(-x/sqrt2)/2 with erfc(a) = exp(-a^2) R(t),
// R (erfc's scaled form, erfcx) a degree-8 polynomial in t = 1/(1 + 0.4154a) fitted over a in
// [0, 9.3] (least squares on Chebyshev nodes reweighted towards minimax, against scipy's erfcx;
// relative error 3.9e-8 with these float coefficients, which are R/2's). Against 1 + erf(x/sqrt2)
// this costs one polynomial and one exp instead of two polynomials and an exp, the backward's pdf
// reuses the exp, and for x < 0 Phi comes from erfc directly, so the negative tail keeps its
// relative accuracy where 1 + erf cancels (torch's GELU is 0 below x = -5.9). -x^2/2 is split into
// its rounded value and that rounding's error (a fused multiply-add), the error added to the
// exp's reduced argument, so exp(-x^2/2) keeps its bits as |x| grows. Beyond |x| = 13 Phi is 0 or
// 1 (it would be denormal: below 6e-39); NaN gives NaN through the caller's product with x
// (whatever Phi is then), and GELU(-inf) is NaN, as torch's. The loop's speed is its count of
// multiplies and fused multiply-adds (two ports): Horner's scheme, the 1/2 folded into the
// coefficients, no clamp before the exp (its garbage beyond |x| = 13 is masked).
EMBER_ALWAYS_INLINE float normal_cdf_f32(float x, float& exp_half_square) {
  const float ax = std::fabs(x);
  const float neg_half_x = -0.5f * x;  // exact
  const float arg = neg_half_x * x;
  const float arg_error = math::madd(neg_half_x, x, -arg);  // 0 without FMA: a few ulp lost
  exp_half_square = math::blend(ax > 13.0f, 0.0f, math::vexpf_bounded(arg, arg_error));
  const float t = 1.0f / math::madd(0.293749988f, ax, 1.0f);  // 0.4154 / sqrt(2)
  float r = 3.972554207e-02f;
  r = math::madd(r, t, -1.873197109e-01f);
  r = math::madd(r, t, 2.828275561e-01f);
  r = math::madd(r, t, -1.290050000e-01f);
  r = math::madd(r, t, 1.735805869e-01f);
  r = math::madd(r, t, 8.165097982e-02f);
  r = math::madd(r, t, 1.218015775e-01f);
  r = math::madd(r, t, 1.167177111e-01f);
  r = math::madd(r, t, 2.074806980e-05f);
  // (R > 0 on the fitted range; |R| keeps a zero exp's product positive for huge |x|, so that
  // GELU(-1e30) is -0, as torch's)
  const float half_erfc = exp_half_square * std::fabs(r);
  return math::blend(x > 0.0f, 1.0f - half_erfc, half_erfc);
}

template <typename T> void gelu_loop(const T* __restrict__ x, T* __restrict__ y, int64_t n, bool tanh_approx) {
  if constexpr (std::is_same_v<T, float>) {
    if (!tanh_approx) {
      for (int64_t i = 0; i < n; ++i) {
        float e;
        y[i] = x[i] * normal_cdf_f32(x[i], e);
      }
      return;
    }
  }
  if (tanh_approx) {
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i];
      const T inner = kTanhBeta<T> * (v + kTanhKappa<T> * v * v * v);
      y[i] = T(0.5) * v * (T(1) + math::tanh(inner));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i];
      y[i] = T(0.5) * v * (T(1) + math::erf(v * kSqrtHalf<T>));
    }
  }
}

template <typename T>
void gelu_backward_loop(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ gi, int64_t n,
                        bool tanh_approx) {
  if (tanh_approx) {  // d/dx of x/2 (1 + tanh(inner)), torch's GeluBackward (tanh)
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i], v2 = v * v;
      const T t = math::tanh(kTanhBeta<T> * (v + kTanhKappa<T> * v2 * v));
      const T dinner = kTanhBeta<T> * (T(1) + T(3) * kTanhKappa<T> * v2);
      gi[i] = g[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * dinner);
    }
  } else if constexpr (std::is_same_v<T, float>) {  // cdf(x) + x pdf(x)
    for (int64_t i = 0; i < n; ++i) {
      float e;
      const float cdf = normal_cdf_f32(x[i], e);
      gi[i] = g[i] * math::madd(x[i], e * kInvSqrt2Pi<float>, cdf);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const T v = x[i];
      const T cdf = T(0.5) * (T(1) + math::erf(v * kSqrtHalf<T>));
      const T pdf = math::exp(T(-0.5) * v * v) * kInvSqrt2Pi<T>;
      gi[i] = g[i] * (cdf + v * pdf);
    }
  }
}

template <typename F> void dispatch_float(ScalarType dt, F f) {
  if (dt == ScalarType::Float32) f(float{});
  else if (dt == ScalarType::Float64) f(double{});
}

}  // namespace

void gelu(const Tensor& in, const Tensor& out, bool tanh_approx) {
  dispatch_float(in->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* x = in->data_as<T>();
    T* y = out->data_as<T>();
    parallel_for(0, in->numel(), kGeluGrain, [&](int64_t a, int64_t b) {
      gelu_loop(x + a, y + a, b - a, tanh_approx);
    });
  });
}

void gelu_backward(const Tensor& grad_out, const Tensor& in, const Tensor& grad_in, bool tanh_approx) {
  dispatch_float(in->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* g = grad_out->data_as<T>();
    const T* x = in->data_as<T>();
    T* gi = grad_in->data_as<T>();
    parallel_for(0, in->numel(), kGeluGrain, [&](int64_t a, int64_t b) {
      gelu_backward_loop(g + a, x + a, gi + a, b - a, tanh_approx);
    });
  });
}

void layer_norm_rows(const Tensor& in, const Tensor& weight, const Tensor& bias, const Tensor& out,
                     const Tensor& mean, const Tensor& rstd, int64_t M, int64_t D, double eps) {
  dispatch_float(in->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* xp = in->data_as<T>();
    const T* w = weight ? weight->data_as<T>() : nullptr;
    const T* b = bias ? bias->data_as<T>() : nullptr;
    T* op = out->data_as<T>();
    T* mp = mean->data_as<T>();
    T* rp = rstd->data_as<T>();
    parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(D, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* __restrict__ x = xp + r * D;
        T* __restrict__ y = op + r * D;
        const T mu = D ? sum_row(x, D) / T(D) : T(0);
        const T var = D ? centered_squares(x, D, mu) / T(D) : T(0);
        const T rs = T(1) / std::sqrt(var + T(eps));
        mp[r] = mu, rp[r] = rs;
        if (w && b) {
          for (int64_t j = 0; j < D; ++j) y[j] = (x[j] - mu) * rs * w[j] + b[j];
        } else if (w) {
          for (int64_t j = 0; j < D; ++j) y[j] = (x[j] - mu) * rs * w[j];
        } else {
          for (int64_t j = 0; j < D; ++j) y[j] = (x[j] - mu) * rs + (b ? b[j] : T(0));
        }
      }
    });
  });
}

void layer_norm_backward_rows(const Tensor& grad_out, const Tensor& in, const Tensor& mean,
                              const Tensor& rstd, const Tensor& weight, const Tensor& grad_in,
                              const Tensor& grad_weight, const Tensor& grad_bias, int64_t M, int64_t D) {
  dispatch_float(in->dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* xp = in->data_as<T>();
    const T* gp = grad_out->data_as<T>();
    const T* mp = mean->data_as<T>();
    const T* rp = rstd->data_as<T>();
    const T* w = weight ? weight->data_as<T>() : nullptr;
    T* ip = grad_in ? grad_in->data_as<T>() : nullptr;
    const bool param_grads = grad_weight || grad_bias;
    // One row of weight/bias partial sums per chunk (get_thread_num), added up after the rows:
    // each chunk reads its rows once for both the input's and the parameters' gradients.
    const int64_t chunks = param_grads ? get_num_threads() : 0;
    std::vector<T> partial(static_cast<size_t>(chunks * 2 * D), T(0));
    parallel_for(0, M, std::max<int64_t>(1, 8192 / std::max<int64_t>(D, 1)), [&](int64_t r0, int64_t r1) {
      T* __restrict__ pw = param_grads ? partial.data() + get_thread_num() * 2 * D : nullptr;
      T* __restrict__ pb = param_grads ? pw + D : nullptr;
      for (int64_t r = r0; r < r1; ++r) {
        const T* __restrict__ x = xp + r * D;
        const T* __restrict__ g = gp + r * D;
        const T mu = mp[r], rs = rp[r];
        if (!ip) {  // the parameters' gradients alone
          if (pw)
            for (int64_t j = 0; j < D; ++j) {
              pw[j] += g[j] * (x[j] - mu) * rs;
              pb[j] += g[j];
            }
          continue;
        }
        if (w) backward_row<T, true>(g, x, w, mu, rs, ip + r * D, pw, pb, D);
        else backward_row<T, false>(g, x, w, mu, rs, ip + r * D, pw, pb, D);
      }
    });
    if (!param_grads) return;
    T* gw = grad_weight ? grad_weight->data_as<T>() : nullptr;
    T* gb = grad_bias ? grad_bias->data_as<T>() : nullptr;
    for (int64_t j = 0; j < D; ++j) {
      T sw = 0, sb = 0;
      for (int64_t c = 0; c < chunks; ++c) sw += partial[c * 2 * D + j], sb += partial[c * 2 * D + D + j];
      if (gw) gw[j] = sw;
      if (gb) gb[j] = sb;
    }
  });
}

}  // namespace ember::EMBER_CPU_NS
