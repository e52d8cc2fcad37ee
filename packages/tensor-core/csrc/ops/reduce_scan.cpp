// reduce_scan.cpp: cumsum/cumprod, the fused softmax/log_softmax kernels and logsumexp.
//
// Scans and softmax view the (contiguous) input as [outer, D, inner] around the dim. When
// inner == 1 (the last dim) each row is processed on its own (softmax: max, then exp(x - max)
// written and summed in one pass, then a scale); otherwise a tile of the inner dim is processed
// for all D at once, vectorised along the inner dim. logsumexp reduces rows of a copy with the
// reduced dims last, with the same max / exp-sum row kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/vexp.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "runtime/gil.h"

namespace ember {

namespace {

struct Layout {
  int64_t outer = 1, D = 1, inner = 1;
};

Layout layout_around(const Tensor& x, int64_t d) {
  Layout l;
  if (x->dim() == 0) return l;
  for (int64_t i = 0; i < d; ++i) l.outer *= x->sizes[i];
  l.D = x->sizes[d];
  for (int64_t i = d + 1; i < x->dim(); ++i) l.inner *= x->sizes[i];
  return l;
}

constexpr int64_t kTile = 512;

// ---- scans ----

template <typename T, bool Prod> void scan_kernel(const T* in, T* out, const Layout& l) {
  using A = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, opmath_t<T>, int64_t>;
  const A init = Prod ? A(1) : A(0);
  if (l.inner == 1) {
    parallel_for(0, l.outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(l.D, 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* src = in + o * l.D;
        T* dst = out + o * l.D;
        A acc = init;
        for (int64_t k = 0; k < l.D; ++k) {
          if constexpr (Prod) acc = acc * static_cast<A>(src[k]);
          else acc = acc + static_cast<A>(src[k]);
          dst[k] = cast_to<T>(acc);
        }
      }
    });
    return;
  }
  const int64_t ntiles = (l.inner + kTile - 1) / kTile;
  const int64_t work = l.D * std::min(l.inner, kTile);
  parallel_for(0, l.outer * ntiles, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work, 1)),
               [&](int64_t b, int64_t e) {
    A acc[kTile];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / ntiles, j0 = (t % ntiles) * kTile, n = std::min(kTile, l.inner - j0);
      for (int64_t j = 0; j < n; ++j) acc[j] = init;
      for (int64_t k = 0; k < l.D; ++k) {
        const T* __restrict__ src = in + (o * l.D + k) * l.inner + j0;
        T* __restrict__ dst = out + (o * l.D + k) * l.inner + j0;
        for (int64_t j = 0; j < n; ++j) {
          if constexpr (Prod) acc[j] = acc[j] * static_cast<A>(src[j]);
          else acc[j] = acc[j] + static_cast<A>(src[j]);
          dst[j] = cast_to<T>(acc[j]);
        }
      }
    }
  });
}

Tensor scan(const char* name, const Tensor& x, int64_t dim, ScalarType dtype, bool is_prod) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, name);
  const int64_t d = wrap_dim(dim, x->dim());
  ScalarType out_dt = dtype != ScalarType::Undefined ? dtype
                      : is_integral(x->dtype, true) ? ScalarType::Int64 : x->dtype;
  Tensor in = contiguous_copy(to_dtype(x, out_dt));
  Tensor out = empty(x->sizes, out_dt, x->device());
  if (x->numel() == 0) return out;
  const Layout l = layout_around(x, d);
  dispatch_all(out_dt, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_prod) scan_kernel<T, true>(in->data_as<T>(), out->data_as<T>(), l);
    else scan_kernel<T, false>(in->data_as<T>(), out->data_as<T>(), l);
  });
  return out;
}

// ---- softmax ----

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
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(D, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* __restrict__ x = in + r * D;
      T* __restrict__ y = out + r * D;
      const T m = row_max(x, D);
      if (!log) {
        const T inv = T(1) / exp_sum_row(x, y, D, m);
        for (int64_t i = 0; i < D; ++i) y[i] *= inv;
      } else {
        const T shift = m + std::log(exp_sum_only(x, D, m));
        for (int64_t i = 0; i < D; ++i) y[i] = x[i] - shift;
      }
    }
  });
}

// [outer, D, inner] with inner > 1: tiles of the inner dim, vectorised along it.
template <typename T> void softmax_inner(const T* in, T* out, const Layout& l, bool log) {
  const int64_t ntiles = (l.inner + kTile - 1) / kTile;
  const int64_t work = l.D * std::min(l.inner, kTile);
  parallel_for(0, l.outer * ntiles, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work, 1)),
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
        for (int64_t j = 0; j < n; ++j) sm[j] = mx[j] + std::log(sm[j]);
        for (int64_t k = 0; k < l.D; ++k) {
          const T* __restrict__ x = base + k * l.inner;
          T* __restrict__ y = obase + k * l.inner;
          for (int64_t j = 0; j < n; ++j) y[j] = x[j] - sm[j];
        }
      }
    }
  });
}

Tensor softmax_impl(const Tensor& x, int64_t dim, ScalarType dtype, bool log) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, log ? "log_softmax" : "softmax");
  const int64_t d = wrap_dim(dim, x->dim());
  Tensor in = dtype != ScalarType::Undefined ? to_dtype(x, dtype) : x;
  const bool lastdim = x->dim() == 0 || d == x->dim() - 1;
  if (x->numel() == 0) return empty(x->sizes, in->dtype, x->device());
  if (!is_floating(in->dtype))
    throw NotImplementedError(str_cat("\"", log ? "log_softmax" : "softmax",
                                      lastdim ? "_lastdim_kernel_impl" : "_kernel_impl",
                                      "\" not implemented for '", torch_type_name(in->dtype), "'"));
  const ScalarType out_dt = in->dtype;
  if (is_reduced_float(out_dt)) in = to_dtype(in, ScalarType::Float32);  // computed in float
  in = contiguous(in);  // no copy when it already is
  Tensor out = empty(x->sizes, in->dtype, x->device());
  if (x->numel() != 0) {
    const Layout l = layout_around(x, d);
    if (in->dtype == ScalarType::Float32) {
      if (l.inner == 1) softmax_lastdim(in->data_as<float>(), out->data_as<float>(), l.outer, l.D, log);
      else softmax_inner(in->data_as<float>(), out->data_as<float>(), l, log);
    } else {
      if (l.inner == 1) softmax_lastdim(in->data_as<double>(), out->data_as<double>(), l.outer, l.D, log);
      else softmax_inner(in->data_as<double>(), out->data_as<double>(), l, log);
    }
  }
  return to_dtype(out, out_dt);
}

// Softmax backward over rows of length D with `inner` elements between row entries:
// log: gi = go - exp(out) * sum(go); plain: gi = out * (go - sum(go * out)). Sums per (outer,
// inner) position are kept in a vector so every pass reads memory in order.
template <typename T>
void softmax_backward_rows(const T* go, const T* out, T* gi, const Layout& l, bool log) {
  const int64_t row = l.D * l.inner;
  parallel_for(0, l.outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(row, 1)),
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
template <typename T> void logsumexp_rows(const T* in, T* out, int64_t rows, int64_t D) {
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(D, 1)),
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

}  // namespace

Tensor logsumexp(const Tensor& x, const OptDims& dim, bool keepdim) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, "logsumexp");
  auto mask = reduction_mask(x, dim);
  const ScalarType out_dt = is_floating(x->dtype) ? x->dtype : get_default_dtype();
  const ScalarType dt = is_reduced_float(out_dt) ? ScalarType::Float32 : out_dt;
  const Shape shape = reduced_shape(x, mask, keepdim);
  Tensor r = empty(shape, dt, x->device());
  const int64_t R = reduced_numel(x, mask), N = r->numel();
  if (R == 0) {
    fill_(r, Scalar::from_double(-std::numeric_limits<double>::infinity()));
  } else if (N != 0) {
    // Rows of the reduced elements: kept dims first, reduced dims last, contiguous.
    Shape perm;
    for (int64_t d = 0; d < x->dim(); ++d)
      if (!mask[d]) perm.push_back(d);
    for (int64_t d = 0; d < x->dim(); ++d)
      if (mask[d]) perm.push_back(d);
    Tensor rows = contiguous_copy(to_dtype(permute(x, perm), dt));
    if (dt == ScalarType::Float32) logsumexp_rows(rows->data_as<float>(), r->data_as<float>(), N, R);
    else logsumexp_rows(rows->data_as<double>(), r->data_as<double>(), N, R);
  }
  return to_dtype(r, out_dt);
}

Tensor softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                             ScalarType input_dtype, bool log) {
  GilRelease nogil(grad_output->numel() > kGrainSize);
  const char* op = log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  require_cpu(output, op);
  EMBER_CHECK(grad_output->sizes == output->sizes, std::runtime_error, op,
              ": expected grad_output and output of one size, got ", shape_str(grad_output->sizes),
              " and ", shape_str(output->sizes));
  EMBER_CHECK(is_floating(output->dtype) && grad_output->dtype == output->dtype, std::runtime_error,
              op, ": expected floating grad_output and output of one dtype, got ",
              torch_type_name(grad_output->dtype), " and ", torch_type_name(output->dtype));
  const int64_t d = wrap_dim(dim, output->dim());
  const ScalarType dt = is_reduced_float(output->dtype) ? ScalarType::Float32 : output->dtype;
  Tensor go = contiguous(to_dtype(grad_output, dt)), y = contiguous(to_dtype(output, dt));
  Tensor gi = empty(output->sizes, dt, output->device());
  if (gi->numel() != 0) {
    const Layout l = layout_around(output, d);
    if (dt == ScalarType::Float32)
      softmax_backward_rows(go->data_as<float>(), y->data_as<float>(), gi->data_as<float>(), l, log);
    else
      softmax_backward_rows(go->data_as<double>(), y->data_as<double>(), gi->data_as<double>(), l, log);
  }
  return to_dtype(gi, input_dtype == ScalarType::Undefined ? output->dtype : input_dtype);
}

Tensor cumsum(const Tensor& x, int64_t dim, ScalarType dtype) { return scan("cumsum", x, dim, dtype, false); }
Tensor cumprod(const Tensor& x, int64_t dim, ScalarType dtype) { return scan("cumprod", x, dim, dtype, true); }
Tensor softmax(const Tensor& x, int64_t dim, ScalarType dtype) { return softmax_impl(x, dim, dtype, false); }
Tensor log_softmax(const Tensor& x, int64_t dim, ScalarType dtype) { return softmax_impl(x, dim, dtype, true); }

}  // namespace ember
