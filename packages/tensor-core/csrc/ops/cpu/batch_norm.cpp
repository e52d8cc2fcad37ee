// batch_norm.cpp - the per-channel passes of batch norm over a contiguous (N, C, inner) tensor,
// forward and backward (ops/nn_kernels.cpp chooses the layout and computes the forward's
// coefficients).
// Compiled once per CPU capability (kernel.h): each pass is one vectorised loop per (n, c) row.
// Sums run in the lanes of vector registers of the compute type (float for float32, as torch's
// kernels), flushed into doubles every kFlush elements, so they vectorise without -ffast-math
// and long channels lose no precision. The backward works one channel at a time: its sums, then
// its input gradient while the channel's rows are in cache.
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <array>
#include <vector>

#include "runtime/parallel.h"

namespace ember::EMBER_CPU_NS {
namespace {

constexpr int64_t kFlush = 4096;

template <typename T> using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Sums over a row's j < n of op(load, j), K values each, op written once for both forms: load(p)
// gives the compute type's vector of the elements at p (a vector-extension register, where T is
// the compute type) or the one element at p. The vectors' lanes are summed into doubles every
// kFlush elements. (Written as arrays of lanes, GCC vectorised the loop across rows of lanes
// instead and summed each lane in order with scalar adds: 3x slower than torch's backward.)
template <typename T, size_t K, typename Op>
std::array<double, K> row_sums(int64_t n, const Op& op) {
  using A = Acc<T>;
  std::array<double, K> total{};
  int64_t j = 0;
  if constexpr (std::is_same_v<T, A>) {
    constexpr int L = kVecBytes / sizeof(A);
    typedef A V __attribute__((vector_size(kVecBytes)));
    static_assert(sizeof(V) == kVecBytes);
    typedef A Unaligned __attribute__((vector_size(kVecBytes), aligned(sizeof(A)), may_alias));
    const auto load = [](const T* p) { return V(*reinterpret_cast<const Unaligned*>(p)); };
    while (j + L <= n) {
      const int64_t end = std::min(n, j + kFlush);
      decltype(op(load, j)) acc{};  // (a std::array<V, K> written out drops V's attribute)
      for (; j + L <= end; j += L) {
        const auto v = op(load, j);
        for (size_t k = 0; k < K; ++k) acc[k] += v[k];
      }
      for (size_t k = 0; k < K; ++k)
        for (int l = 0; l < L; ++l) total[k] += static_cast<double>(acc[k][l]);
    }
  }
  const auto load = [](const T* p) { return static_cast<A>(*p); };
  while (j < n) {  // the tail, or every element of a type narrower than the compute type
    const int64_t end = std::min(n, j + kFlush);
    std::array<A, K> acc{};
    for (; j < end; ++j) {
      const std::array<A, K> v = op(load, j);
      for (size_t k = 0; k < K; ++k) acc[k] += v[k];
    }
    for (size_t k = 0; k < K; ++k) total[k] += static_cast<double>(acc[k]);
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
          s += row_sums<T, 1>(inner, [&](auto load, int64_t j) {
            return std::array{load(p + j)};
          })[0];
        }
        const double mu = M ? s / M : 0.0;
        const A mu_a = static_cast<A>(mu);
        double ss = 0;  // two passes: the squares of deviations, not E[x^2] - E[x]^2
        for (int64_t n = 0; n < N; ++n) {
          const T* p = x + (n * C + c) * inner;
          ss += row_sums<T, 1>(inner, [&](auto load, int64_t j) {
            const auto d = load(p + j) - mu_a;
            return std::array{d * d};
          })[0];
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

void batch_norm_backward(ScalarType dtype, const void* grad_out, const void* input,
                         void* grad_input, int64_t N, int64_t C, int64_t inner,
                         const double* mean, const double* invstd, const double* weight,
                         bool train, double* sum_g, double* sum_g_centered) {
  if (!compiled(dtype))
    return cpu_default::batch_norm_backward(dtype, grad_out, input, grad_input, N, C, inner, mean,
                                            invstd, weight, train, sum_g, sum_g_centered);
  on_floating(dtype, "batch_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* g = static_cast<const T*>(grad_out);
    const T* x = static_cast<const T*>(input);
    T* gi = static_cast<T*>(grad_input);
    // One channel at a time: its N rows are read for the sums and again, from cache, for the
    // gradient (two passes over the whole tensor read it twice from memory: 2x the time)
    parallel_for(0, C, channel_grain(N, inner), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const A mu = static_cast<A>(mean[c]);
        double sg = 0, sgx = 0;
        for (int64_t n = 0; n < N; ++n) {
          const T* gp = g + (n * C + c) * inner;
          const T* xp = x + (n * C + c) * inner;
          const std::array<double, 2> row = row_sums<T, 2>(inner, [&](auto load, int64_t j) {
            const auto gv = load(gp + j);
            return std::array{gv, gv * (load(xp + j) - mu)};
          });
          sg += row[0], sgx += row[1];
        }
        sum_g[c] = sg, sum_g_centered[c] = sgx;
        if (!gi) continue;
        const BnGradCoefficients k = bn_grad_coefficients(
            weight ? weight[c] : 1.0, invstd[c], sg, sgx, N * inner, train);
        const A a = static_cast<A>(k.k_grad), b = static_cast<A>(k.k_centered),
                k0 = static_cast<A>(k.k_const);
        for (int64_t n = 0; n < N; ++n) {
          const T* __restrict gp = g + (n * C + c) * inner;
          const T* __restrict xp = x + (n * C + c) * inner;
          T* __restrict out = gi + (n * C + c) * inner;
          for (int64_t j = 0; j < inner; ++j)
            out[j] = static_cast<T>(a * static_cast<A>(gp[j]) + b * (static_cast<A>(xp[j]) - mu) + k0);
        }
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

// out[k][c] = sum over rows of f(r, c)[k] for every channel, f returning K values of Acc<T>
// (std::array): K sums in one pass over the rows.
template <typename A, size_t K, typename F>
void column_sums(int64_t rows, int64_t C, const std::array<double*, K>& out, const F& f) {
  const int nt = std::max(get_num_threads(), 1);
  std::vector<double> partial(static_cast<size_t>(C) * K * nt, 0.0);
  parallel_for(0, rows, grain_for(C * static_cast<int64_t>(K)),
               [&](int64_t r0, int64_t r1) {
                 double* acc = partial.data() + static_cast<size_t>(get_thread_num()) * C * K;
                 std::vector<A> block(static_cast<size_t>(C) * K);
                 A* __restrict b = block.data();
                 for (int64_t start = r0; start < r1; start += kFlush) {
                   std::fill(block.begin(), block.end(), A(0));
                   const int64_t end = std::min(r1, start + kFlush);
                   for (int64_t r = start; r < end; ++r)
                     for (int64_t c = 0; c < C; ++c) {
                       const std::array<A, K> v = f(r, c);
                       for (size_t k = 0; k < K; ++k) b[k * C + c] += v[k];
                     }
                   for (size_t i = 0; i < block.size(); ++i) acc[i] += static_cast<double>(b[i]);
                 }
               });
  for (size_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c) {
      double total = 0;
      for (int t = 0; t < nt; ++t) total += partial[(static_cast<size_t>(t) * K + k) * C + c];
      out[k][c] = total;
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
    if (!rows) {
      std::fill_n(mean, C, 0.0), std::fill_n(m2, C, 0.0);
      return;
    }
    // the sums of x - (the first row): data far from 0 (1000 + N(0, 0.01)) keeps its bits in a
    // float sum of deviations, where a sum of the values loses them to the sum's magnitude
    const std::vector<A> first(x, x + C);
    const A* x0 = first.data();
    column_sums<A, 1>(rows, C, {mean}, [&](int64_t r, int64_t c) {
      return std::array<A, 1>{static_cast<A>(x[r * C + c]) - x0[c]};
    });
    for (int64_t c = 0; c < C; ++c) mean[c] = static_cast<double>(x0[c]) + mean[c] / rows;
    const std::vector<A> mu = as_acc<A>(mean, C);
    const A* m = mu.data();
    column_sums<A, 1>(rows, C, {m2}, [&](int64_t r, int64_t c) {
      const A d = static_cast<A>(x[r * C + c]) - m[c];
      return std::array<A, 1>{d * d};
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
    column_sums<A, 2>(rows, C, {sum_g, sum_g_centered}, [&](int64_t r, int64_t c) {
      const A gv = static_cast<A>(g[r * C + c]);
      return std::array<A, 2>{gv, gv * (static_cast<A>(x[r * C + c]) - m[c])};
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
