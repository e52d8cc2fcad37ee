// The softmax/log_softmax row kernels (forward and backward) and logsumexp's rows, for contiguous
// float32/float64 tensors viewed as [outer, D, inner] around the dim. When inner == 1 (the last
// dim) each row is processed on its own (softmax: max, then exp(x - max) written and summed in one
// pass, then a scale); otherwise a tile of the inner dim is processed for all D at once, vectorised
// along the inner dim. The entry points are in ops/reduce_scan.cpp.
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/iterator.h"
#include "kernels/vexp.h"
#include "runtime/parallel.h"

namespace ember::EMBER_CPU_NS {
namespace {

struct Layout {
  int64_t outer = 1, D = 1, inner = 1;
};

constexpr int64_t kTile = 512;

using math::vexpf;

template <typename T> T row_max(const T* __restrict__ x, int64_t n) {
  constexpr int L = 64 / sizeof(T);
  T m = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
  if (n >= L) {
    T a[L];
    for (int l = 0; l < L; ++l) a[l] = x[l];
    for (i = L; i + L <= n; i += L)
      for (int l = 0; l < L; ++l) a[l] = std::max(a[l], x[i + l]);
    for (int l = 0; l < L; ++l) m = a[l] > m ? a[l] : m;
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// y = exp(x - m), returns sum(y). Written with independent lane sums so it vectorises.
template <typename T> T exp_sum_row(const T* __restrict__ x, T* __restrict__ y, int64_t n, T m) {
  constexpr int L = 64 / sizeof(T);
  T a[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      const T e = vexpf(x[i + l] - m);
      y[i + l] = e;
      a[l] += e;
    }
  T s = 0;
  for (; i < n; ++i) {
    const T e = vexpf(x[i] - m);
    y[i] = e;
    s += e;
  }
  for (int l = 0; l < L; ++l) s += a[l];
  return s;
}

// x = exp(x - m) in place, returns the sum (exp_sum_row with y = x would alias its restrict
// pointers)
template <typename T> T exp_sum_inplace(T* __restrict__ x, int64_t n, T m) {
  constexpr int L = 64 / sizeof(T);
  T a[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) a[l] += (x[i + l] = vexpf(x[i + l] - m));
  T s = 0;
  for (; i < n; ++i) s += (x[i] = vexpf(x[i] - m));
  for (int l = 0; l < L; ++l) s += a[l];
  return s;
}

template <typename T> T exp_sum_only(const T* __restrict__ x, int64_t n, T m) {
  constexpr int L = 64 / sizeof(T);
  T a[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) a[l] += vexpf(x[i + l] - m);
  T s = 0;
  for (; i < n; ++i) s += vexpf(x[i] - m);
  for (int l = 0; l < L; ++l) s += a[l];
  return s;
}

// Rows of length D (the last dim), T float or double.
template <typename T> void softmax_lastdim(const T* in, T* out, int64_t rows, int64_t D, bool log) {
  parallel_for(0, rows, grain_for(D),
               [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* __restrict__ x = in + r * D;
      T* __restrict__ y = out + r * D;
      const T m = row_max(x, D);
      if (!log) {
        const T inv = T(1) / exp_sum_row(x, y, D, m);
        for (int64_t i = 0; i < D; ++i) y[i] *= inv;
      } else {
        // (x - m) - log(sum), as torch's: x - (m + log(sum)) rounds the shift to m's ulp
        // (log_softmax([65504, 65504]) was -0.6914 in float32)
        const T log_sum = std::log(exp_sum_only(x, D, m));
        for (int64_t i = 0; i < D; ++i) y[i] = (x[i] - m) - log_sum;
      }
    }
  });
}

// [outer, D, inner] with inner > 1: tiles of the inner dim, vectorised along it.
template <typename T> void softmax_inner(const T* in, T* out, const Layout& l, bool log) {
  const int64_t ntiles = (l.inner + kTile - 1) / kTile;
  const int64_t work = l.D * std::min(l.inner, kTile);
  parallel_for(0, l.outer * ntiles, grain_for(work),
               [&](int64_t b, int64_t e) {
    T mx[kTile], sm[kTile];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / ntiles, j0 = (t % ntiles) * kTile, n = std::min(kTile, l.inner - j0);
      const T* base = in + o * l.D * l.inner + j0;
      T* obase = out + o * l.D * l.inner + j0;
      for (int64_t j = 0; j < n; ++j) mx[j] = -std::numeric_limits<T>::infinity(), sm[j] = 0;
      for (int64_t k = 0; k < l.D; ++k) {
        const T* __restrict__ x = base + k * l.inner;
        for (int64_t j = 0; j < n; ++j) mx[j] = std::max(mx[j], x[j]);
      }
      for (int64_t k = 0; k < l.D; ++k) {
        const T* __restrict__ x = base + k * l.inner;
        T* __restrict__ y = obase + k * l.inner;
        if (!log) {
          for (int64_t j = 0; j < n; ++j) {
            const T v = vexpf(x[j] - mx[j]);
            y[j] = v;
            sm[j] += v;
          }
        } else {
          for (int64_t j = 0; j < n; ++j) sm[j] += vexpf(x[j] - mx[j]);
        }
      }
      if (!log) {
        for (int64_t j = 0; j < n; ++j) sm[j] = T(1) / sm[j];
        for (int64_t k = 0; k < l.D; ++k) {
          T* __restrict__ y = obase + k * l.inner;
          for (int64_t j = 0; j < n; ++j) y[j] *= sm[j];
        }
      } else {
        for (int64_t j = 0; j < n; ++j) sm[j] = std::log(sm[j]);
        for (int64_t k = 0; k < l.D; ++k) {
          const T* __restrict__ x = base + k * l.inner;
          T* __restrict__ y = obase + k * l.inner;
          for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mx[j]) - sm[j];
        }
      }
    }
  });
}

// Softmax backward over rows of length D with `inner` elements between row entries:
// log: gi = go - exp(out) * sum(go); plain: gi = out * (go - sum(go * out)). Sums per (outer,
// inner) position are kept in a vector so every pass reads memory in order.
template <typename T>
void softmax_backward_rows(const T* go, const T* out, T* gi, const Layout& l, bool log) {
  const int64_t row = l.D * l.inner;
  parallel_for(0, l.outer, grain_for(row),
               [&](int64_t b, int64_t e) {
    std::vector<double> sums(l.inner);
    for (int64_t o = b; o < e; ++o) {
      const T* __restrict__ g = go + o * row;
      const T* __restrict__ y = out + o * row;
      T* __restrict__ r = gi + o * row;
      if (l.inner == 1) {  // the common case (last dim): tight loops the compiler vectorises
        constexpr int L = 8;  // independent lane sums, so the double accumulation vectorises
        double lanes[L] = {};
        int64_t j = 0;
        for (; j + L <= l.D; j += L)
          for (int q = 0; q < L; ++q) lanes[q] += log ? double(g[j + q]) : double(g[j + q]) * y[j + q];
        double s = 0;
        for (; j < l.D; ++j) s += log ? double(g[j]) : double(g[j]) * y[j];
        for (int q = 0; q < L; ++q) s += lanes[q];
        const T st = static_cast<T>(s);
        if (log)  // y = log_softmax <= 0: the range vexpf is exact for
          for (j = 0; j < l.D; ++j) r[j] = g[j] - vexpf(y[j]) * st;
        else
          for (j = 0; j < l.D; ++j) r[j] = y[j] * (g[j] - st);
        continue;
      }
      std::fill(sums.begin(), sums.end(), 0.0);
      for (int64_t j = 0; j < l.D; ++j)
        for (int64_t k = 0; k < l.inner; ++k)
          sums[k] += log ? double(g[j * l.inner + k]) : double(g[j * l.inner + k]) * y[j * l.inner + k];
      for (int64_t j = 0; j < l.D; ++j)
        for (int64_t k = 0; k < l.inner; ++k) {
          const int64_t i = j * l.inner + k;
          r[i] = log ? static_cast<T>(g[i] - std::exp(y[i]) * static_cast<T>(sums[k]))
                     : static_cast<T>(y[i] * (g[i] - static_cast<T>(sums[k])));
        }
    }
  });
}

// log(sum(exp(x - m))) + m per row of length D, m the row max (0 when infinite, as PyTorch).
template <typename T> void logsumexp_typed(const T* in, T* out, int64_t rows, int64_t D) {
  parallel_for(0, rows, grain_for(D),
               [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* x = in + r * D;
      const T m = row_max(x, D);
      if (std::isfinite(m)) {
        out[r] = std::log(exp_sum_only(x, D, m)) + m;
      } else {  // +-inf max, or NaN: the plain formula gives PyTorch's inf / -inf / NaN
        T s = 0;
        for (int64_t i = 0; i < D; ++i) s += std::exp(x[i]);
        out[r] = std::log(s);
      }
    }
  });
}

// Runs f(TypeTag<T>) for float32 / float64 (the dtypes the entry points hand over).
template <typename F> void float_or_double(ScalarType t, F&& f) {
  if (t == ScalarType::Float64) f(TypeTag<double>{});
  else f(TypeTag<float>{});
}

}  // namespace

void softmax(const Tensor& in, const Tensor& out, int64_t outer, int64_t D, int64_t inner,
             bool log) {
  const Layout l{outer, D, inner};
  float_or_double(in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (inner == 1) softmax_lastdim(in->data_as<T>(), out->data_as<T>(), outer, D, log);
    else softmax_inner(in->data_as<T>(), out->data_as<T>(), l, log);
  });
}

void softmax_backward(const Tensor& grad_out, const Tensor& out, const Tensor& grad_in,
                      int64_t outer, int64_t D, int64_t inner, bool log) {
  const Layout l{outer, D, inner};
  float_or_double(out->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_backward_rows(grad_out->data_as<T>(), out->data_as<T>(), grad_in->data_as<T>(), l, log);
  });
}

void logsumexp_rows(const Tensor& rows, const Tensor& out, int64_t n, int64_t D) {
  float_or_double(rows->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    logsumexp_typed(rows->data_as<T>(), out->data_as<T>(), n, D);
  });
}

void attention_softmax_rows(ScalarType dtype, void* scores, int64_t L, int64_t S, bool causal,
                            void* lse) {
  auto run = [&](auto zero) {
    using T = decltype(zero);
    T* s = static_cast<T*>(scores);
    T* l = static_cast<T*>(lse);
    for (int64_t r = 0; r < L; ++r) {
      T* __restrict__ x = s + r * S;
      const int64_t live = causal ? std::min(S, r + 1) : S;  // torch's tril(ones(L, S)) mask
      const T m = row_max(x, live);
      if (m == -std::numeric_limits<T>::infinity()) {  // every score -inf: softmax's NaN row
        for (int64_t i = 0; i < S; ++i) x[i] = std::numeric_limits<T>::quiet_NaN();
        l[r] = m;
        continue;
      }
      const T sum = exp_sum_inplace(x, live, m);
      const T inv = T(1) / sum;
      for (int64_t i = 0; i < live; ++i) x[i] *= inv;
      for (int64_t i = live; i < S; ++i) x[i] = T(0);
      l[r] = m + std::log(sum);
    }
  };
  if (dtype == ScalarType::Float32) run(float{});
  else run(double{});
}

void attention_backward_rows(ScalarType dtype, void* weights, void* grad_scores, int64_t L,
                             int64_t S, bool causal, const void* lse, const void* grad_out,
                             int64_t ldg, const void* out, int64_t ldo, int64_t Ev, double scale) {
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const T* l = static_cast<const T*>(lse);
    const T* g = static_cast<const T*>(grad_out);
    const T* o = static_cast<const T*>(out);
    const T sc = static_cast<T>(scale);
    for (int64_t r = 0; r < L; ++r) {
      T* __restrict__ p = static_cast<T*>(weights) + r * S;
      T* __restrict__ ds = static_cast<T*>(grad_scores) + r * S;
      const T* __restrict__ gr = g + r * ldg;
      const T* __restrict__ orow = o + r * ldo;
      T d = 0;  // rowsum(g * o): the weights' gradient sums to it along the row
      for (int64_t c = 0; c < Ev; ++c) d += gr[c] * orow[c];
      const int64_t live = causal ? std::min(S, r + 1) : S;
      const T m = l[r];
      for (int64_t c = 0; c < live; ++c) {
        const T e = vexpf(p[c] - m);
        p[c] = e;
        ds[c] = e * (ds[c] - d) * sc;
      }
      for (int64_t c = live; c < S; ++c) p[c] = ds[c] = T(0);
    }
  };
  if (dtype == ScalarType::Float32) run(float{});
  else run(double{});
}

}  // namespace ember::EMBER_CPU_NS
