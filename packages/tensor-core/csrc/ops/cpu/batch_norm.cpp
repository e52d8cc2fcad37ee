// batch_norm.cpp - the per-channel passes of batch norm over a contiguous (N, C, inner) tensor,
// forward and backward (ops/nn_kernels.cpp computes the per-channel coefficients between them).
// Compiled once per CPU capability (kernel.h): each pass is one vectorised loop per (n, c) row.
// Sums run in 16 independent lanes of the compute type (float for float32, as torch's kernels),
// flushed into a double every kFlush elements, so they vectorise without -ffast-math and long
// channels lose no precision.
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <vector>

#include "runtime/parallel.h"

namespace ember::EMBER_CPU_NS {
namespace {

constexpr int kLanes = 16;
constexpr int64_t kFlush = 4096;

template <typename T> using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// sum over i < n of f(i), f returning Acc<T>.
template <typename A, typename F> double lane_sum(int64_t n, const F& f) {
  double total = 0;
  for (int64_t start = 0; start < n; start += kFlush) {
    const int64_t end = std::min(n, start + kFlush);
    A lanes[kLanes] = {};
    int64_t i = start;
    for (; i + kLanes <= end; i += kLanes)
      for (int k = 0; k < kLanes; ++k) lanes[k] += f(i + k);
    A rest = 0;
    for (; i < end; ++i) rest += f(i);
    A block = rest;
    for (int k = 0; k < kLanes; ++k) block += lanes[k];
    total += static_cast<double>(block);
  }
  return total;
}

template <typename F> void on_floating(ScalarType dtype, const char* name, const F& f) {
  dispatch_floating(dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCompiled<T>) f(tag);
  });
}

int64_t channel_grain(int64_t N, int64_t inner) {
  return grain_for(N * inner);
}

}  // namespace

void batch_norm_stats(ScalarType dtype, const void* input, int64_t N, int64_t C, int64_t inner,
                      double* mean, double* m2) {
  if (!compiled(dtype)) return cpu_default::batch_norm_stats(dtype, input, N, C, inner, mean, m2);
  on_floating(dtype, "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* x = static_cast<const T*>(input);
    const int64_t M = N * inner;
    parallel_for(0, C, channel_grain(N, inner), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n) {
          const T* p = x + (n * C + c) * inner;
          s += lane_sum<A>(inner, [&](int64_t j) { return static_cast<A>(p[j]); });
        }
        const double mu = M ? s / M : 0.0;
        const A mu_a = static_cast<A>(mu);
        double ss = 0;  // two passes: the squares of deviations, not E[x^2] - E[x]^2
        for (int64_t n = 0; n < N; ++n) {
          const T* p = x + (n * C + c) * inner;
          ss += lane_sum<A>(inner, [&](int64_t j) {
            const A d = static_cast<A>(p[j]) - mu_a;
            return d * d;
          });
        }
        mean[c] = mu, m2[c] = ss;
      }
    });
  });
}

void channel_affine(ScalarType dtype, const void* input, void* output, int64_t N, int64_t C,
                    int64_t inner, const double* scale, const double* shift) {
  if (!compiled(dtype))
    return cpu_default::channel_affine(dtype, input, output, N, C, inner, scale, shift);
  on_floating(dtype, "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* x = static_cast<const T*>(input);
    T* y = static_cast<T*>(output);
    parallel_for(0, N * C, grain_for(inner),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     const A a = static_cast<A>(scale[r % C]), b = static_cast<A>(shift[r % C]);
                     const T* p = x + r * inner;
                     T* q = y + r * inner;
                     for (int64_t j = 0; j < inner; ++j) q[j] = static_cast<T>(static_cast<A>(p[j]) * a + b);
                   }
                 });
  });
}

void batch_norm_grad_sums(ScalarType dtype, const void* grad_out, const void* input, int64_t N,
                          int64_t C, int64_t inner, const double* mean, double* sum_g,
                          double* sum_g_centered) {
  if (!compiled(dtype))
    return cpu_default::batch_norm_grad_sums(dtype, grad_out, input, N, C, inner, mean, sum_g,
                                             sum_g_centered);
  on_floating(dtype, "batch_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* g = static_cast<const T*>(grad_out);
    const T* x = static_cast<const T*>(input);
    parallel_for(0, C, channel_grain(N, inner), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const A mu = static_cast<A>(mean[c]);
        double sg = 0, sgx = 0;
        for (int64_t n = 0; n < N; ++n) {
          const T* gp = g + (n * C + c) * inner;
          const T* xp = x + (n * C + c) * inner;
          sg += lane_sum<A>(inner, [&](int64_t j) { return static_cast<A>(gp[j]); });
          sgx += lane_sum<A>(inner, [&](int64_t j) {
            return static_cast<A>(gp[j]) * (static_cast<A>(xp[j]) - mu);
          });
        }
        sum_g[c] = sg, sum_g_centered[c] = sgx;
      }
    });
  });
}

void batch_norm_grad_input(ScalarType dtype, const void* grad_out, const void* input,
                           void* grad_input, int64_t N, int64_t C, int64_t inner,
                           const double* mean, const double* k_grad, const double* k_centered,
                           const double* k_const) {
  if (!compiled(dtype))
    return cpu_default::batch_norm_grad_input(dtype, grad_out, input, grad_input, N, C, inner,
                                              mean, k_grad, k_centered, k_const);
  on_floating(dtype, "batch_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* g = static_cast<const T*>(grad_out);
    const T* x = static_cast<const T*>(input);
    T* gi = static_cast<T*>(grad_input);
    parallel_for(0, N * C, grain_for(inner),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     const int64_t c = r % C;
                     const A a = static_cast<A>(k_grad[c]), b = static_cast<A>(k_centered[c]),
                             k = static_cast<A>(k_const[c]), mu = static_cast<A>(mean[c]);
                     const T* gp = g + r * inner;
                     const T* xp = x + r * inner;
                     T* out = gi + r * inner;
                     for (int64_t j = 0; j < inner; ++j)
                       out[j] = static_cast<T>(a * static_cast<A>(gp[j]) + b * (static_cast<A>(xp[j]) - mu) + k);
                   }
                 });
  });
}

}  // namespace ember::EMBER_CPU_NS

// ---- channels_last: (rows, C) with C innermost (torch's channels_last, rows = N*H*W) ----
// Each pass runs along the rows with the channels as the inner, vectorised loop; the sums keep a
// float (double for float64) accumulator per channel over blocks of kFlush rows, flushed into a
// double per channel and thread (parallel_for's static chunks: the same bits for a thread count).

namespace ember::EMBER_CPU_NS {
namespace {

// out[c] = sum over rows of f(r, c) for every channel, f returning Acc<T>.
template <typename A, typename F>
void column_sums(int64_t rows, int64_t C, double* out, const F& f) {
  const int nt = std::max(get_num_threads(), 1);
  std::vector<double> partial(static_cast<size_t>(C) * nt, 0.0);
  parallel_for(0, rows, grain_for(C),
               [&](int64_t r0, int64_t r1) {
                 double* acc = partial.data() + static_cast<size_t>(get_thread_num()) * C;
                 std::vector<A> block(static_cast<size_t>(C));
                 A* __restrict b = block.data();
                 for (int64_t start = r0; start < r1; start += kFlush) {
                   std::fill(block.begin(), block.end(), A(0));
                   const int64_t end = std::min(r1, start + kFlush);
                   for (int64_t r = start; r < end; ++r)
                     for (int64_t c = 0; c < C; ++c) b[c] += f(r, c);
                   for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<double>(b[c]);
                 }
               });
  for (int64_t c = 0; c < C; ++c) {
    double total = 0;
    for (int t = 0; t < nt; ++t) total += partial[static_cast<size_t>(t) * C + c];
    out[c] = total;
  }
}

template <typename A> std::vector<A> as_acc(const double* v, int64_t C) {
  return std::vector<A>(v, v + C);
}

}  // namespace

void batch_norm_stats_cl(ScalarType dtype, const void* input, int64_t rows, int64_t C,
                         double* mean, double* m2) {
  if (!compiled(dtype)) return cpu_default::batch_norm_stats_cl(dtype, input, rows, C, mean, m2);
  on_floating(dtype, "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* x = static_cast<const T*>(input);
    column_sums<A>(rows, C, mean, [&](int64_t r, int64_t c) { return static_cast<A>(x[r * C + c]); });
    for (int64_t c = 0; c < C; ++c) mean[c] = rows ? mean[c] / rows : 0.0;
    const std::vector<A> mu = as_acc<A>(mean, C);
    const A* m = mu.data();
    column_sums<A>(rows, C, m2, [&](int64_t r, int64_t c) {
      const A d = static_cast<A>(x[r * C + c]) - m[c];
      return d * d;
    });
  });
}

void channel_affine_cl(ScalarType dtype, const void* input, void* output, int64_t rows, int64_t C,
                       const double* scale, const double* shift) {
  if (!compiled(dtype))
    return cpu_default::channel_affine_cl(dtype, input, output, rows, C, scale, shift);
  on_floating(dtype, "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* x = static_cast<const T*>(input);
    T* y = static_cast<T*>(output);
    const std::vector<A> a = as_acc<A>(scale, C), b = as_acc<A>(shift, C);
    parallel_for(0, rows, grain_for(C),
                 [&](int64_t r0, int64_t r1) {
                   const A* __restrict pa = a.data();
                   const A* __restrict pb = b.data();
                   for (int64_t r = r0; r < r1; ++r) {
                     const T* __restrict p = x + r * C;
                     T* __restrict q = y + r * C;
                     for (int64_t c = 0; c < C; ++c)
                       q[c] = static_cast<T>(static_cast<A>(p[c]) * pa[c] + pb[c]);
                   }
                 });
  });
}

void batch_norm_grad_sums_cl(ScalarType dtype, const void* grad_out, const void* input,
                             int64_t rows, int64_t C, const double* mean, double* sum_g,
                             double* sum_g_centered) {
  if (!compiled(dtype))
    return cpu_default::batch_norm_grad_sums_cl(dtype, grad_out, input, rows, C, mean, sum_g,
                                                sum_g_centered);
  on_floating(dtype, "batch_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* g = static_cast<const T*>(grad_out);
    const T* x = static_cast<const T*>(input);
    const std::vector<A> mu = as_acc<A>(mean, C);
    const A* m = mu.data();
    column_sums<A>(rows, C, sum_g, [&](int64_t r, int64_t c) { return static_cast<A>(g[r * C + c]); });
    column_sums<A>(rows, C, sum_g_centered, [&](int64_t r, int64_t c) {
      return static_cast<A>(g[r * C + c]) * (static_cast<A>(x[r * C + c]) - m[c]);
    });
  });
}

void batch_norm_grad_input_cl(ScalarType dtype, const void* grad_out, const void* input,
                              void* grad_input, int64_t rows, int64_t C, const double* mean,
                              const double* k_grad, const double* k_centered,
                              const double* k_const) {
  if (!compiled(dtype))
    return cpu_default::batch_norm_grad_input_cl(dtype, grad_out, input, grad_input, rows, C, mean,
                                                 k_grad, k_centered, k_const);
  on_floating(dtype, "batch_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* g = static_cast<const T*>(grad_out);
    const T* x = static_cast<const T*>(input);
    T* gi = static_cast<T*>(grad_input);
    const std::vector<A> a = as_acc<A>(k_grad, C), b = as_acc<A>(k_centered, C),
                         k = as_acc<A>(k_const, C), mu = as_acc<A>(mean, C);
    parallel_for(0, rows, grain_for(C),
                 [&](int64_t r0, int64_t r1) {
                   const A* __restrict pa = a.data();
                   const A* __restrict pb = b.data();
                   const A* __restrict pk = k.data();
                   const A* __restrict pm = mu.data();
                   for (int64_t r = r0; r < r1; ++r) {
                     const T* __restrict gp = g + r * C;
                     const T* __restrict xp = x + r * C;
                     T* __restrict out = gi + r * C;
                     for (int64_t c = 0; c < C; ++c)
                       out[c] = static_cast<T>(pa[c] * static_cast<A>(gp[c]) +
                                               pb[c] * (static_cast<A>(xp[c]) - pm[c]) + pk[c]);
                   }
                 });
  });
}

}  // namespace ember::EMBER_CPU_NS
