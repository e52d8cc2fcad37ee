// histogram.cpp: values placed into bins, declared in sort.h: searchsorted (into sorted
// boundaries), histc, histogram and bincount (counts, in double and rounded once).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/loops.h"
#include "ops/reduce.h"
#include "ops/sort.h"
#include "ops/sort_rows.h"
#include "runtime/gil.h"
#include "runtime/parallel.h"

namespace ember {

using namespace sort_rows;

// ---- searchsorted ----

Tensor searchsorted(const Tensor& seq, const Tensor& values, bool out_int32, bool right,
                    const Tensor& sorter, const char* op) {
  GilRelease nogil(seq->numel() + values->numel() > kGrainSize);
  require_cpu(seq, op);
  require_cpu(values, op);
  auto mismatch = [&]() {
    return std::runtime_error(str_cat(
        "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
        "of boundaries tensor and input value tensor must match, but we got boundaries tensor ",
        shape_str(seq->sizes), " and input value tensor ", shape_str(values->sizes)));
  };
  if (seq->dim() == 0) throw mismatch();
  const bool batched = seq->dim() > 1;
  if (batched) {
    if (values->dim() != seq->dim()) throw mismatch();
    for (int64_t i = 0; i + 1 < seq->dim(); ++i)
      if (seq->sizes[i] != values->sizes[i]) throw mismatch();
  }
  if (sorter) {
    EMBER_CHECK(sorter->dtype == ScalarType::Int64, std::runtime_error,
                "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype ",
                torch_type_name(sorter->dtype));
    EMBER_CHECK(sorter->sizes == seq->sizes, std::runtime_error,
                "torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                "tensor ", shape_str(seq->sizes), "and got sorter tensor ", shape_str(sorter->sizes));
  }
  const ScalarType common = promote_types(seq->dtype, values->dtype);
  no_bool(empty({0}, common), "searchsorted_out_cpu");
  Tensor s = contiguous_copy(to_dtype(seq, common));
  Tensor v = contiguous_copy(to_dtype(values, common));
  Tensor so = sorter ? contiguous_copy(sorter) : nullptr;
  const int64_t M = seq->sizes.back();
  if (so) {
    const int64_t* sp = so->data_as<int64_t>();
    for (int64_t i = 0; i < so->numel(); ++i)
      EMBER_CHECK(sp[i] >= 0 && sp[i] < M, std::runtime_error, "torch.searchsorted(): sorter index out of range");
  }
  Tensor out = empty(values->sizes, out_int32 ? ScalarType::Int32 : ScalarType::Int64);
  const int64_t N = values->dim() ? values->sizes.back() : 1;
  const int64_t total = values->numel();
  if (total == 0) return out;
  dispatch_all(common, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    const T* sp = s->data_as<T>();
    const T* vp = v->data_as<T>();
    const int64_t* srt = so ? so->data_as<int64_t>() : nullptr;
    auto body = [&](auto* o) {
      using O = std::remove_pointer_t<decltype(o)>;
      parallel_for(0, total, 4096, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t row = batched ? i / N : 0;
          const T* base = sp + row * M;
          const int64_t* sb = srt ? srt + row * M : nullptr;
          const C val = static_cast<C>(vp[i]);
          int64_t lo = 0, hi = M;
          while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            const C mv = static_cast<C>(sb ? base[sb[mid]] : base[mid]);
            // PyTorch's comparisons: a NaN value lands after every boundary.
            const bool go_right = right ? !(mv > val) : !(mv >= val);
            if (go_right) lo = mid + 1;
            else hi = mid;
          }
          o[i] = static_cast<O>(lo);
        }
      });
    };
    if (out_int32) body(out->data_as<int32_t>());
    else body(out->data_as<int64_t>());
  });
  return out;
}

// ---- histc / histogram / bincount ----

namespace {

// Counts (or sums weights of) x's elements into nb bins with the given edges; `linear` edges are
// equally spaced, which allows computing the bin and correcting it by a local search.
template <typename T>
void hist_kernel(const T* x, const T* w, int64_t N, const std::vector<T>& edges, bool linear, bool search,
                 T* out) {
  using C = opmath_t<T>;
  const int64_t nb = static_cast<int64_t>(edges.size()) - 1;
  const C lo = static_cast<C>(edges.front()), hi = static_cast<C>(edges.back());
  const int nchunks = static_cast<int>(std::clamp<int64_t>(N / 32768, 1, get_num_threads()));
  std::vector<std::vector<double>> part(nchunks, std::vector<double>(nb, 0.0));
  parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      auto& h = part[c];
      for (int64_t i = c * N / nchunks, e = (c + 1) * N / nchunks; i < e; ++i) {
        const C v = static_cast<C>(x[i]);
        if (!(v >= lo && v <= hi)) continue;  // also drops NaN
        int64_t pos;
        if (linear) {
          // PyTorch's arithmetic, rounded to T after each step as its Half/BFloat16 operators do.
          auto rt = [](C a) { return static_cast<C>(cast_to<T>(a)); };
          pos = static_cast<int64_t>(rt(rt(rt(v - lo) * static_cast<C>(nb)) / rt(hi - lo)));
          if (search) {  // torch.histogram corrects the bin against the edges; histc does not
            const int64_t pmin = std::max<int64_t>(pos - 1, 0), pmax = std::min<int64_t>(pos + 2, nb + 1);
            pos = std::upper_bound(edges.begin() + pmin, edges.begin() + pmax, v,
                                   [](C a, const T& b) { return a < static_cast<C>(b); }) - edges.begin() - 1;
          }
        } else {
          pos = std::upper_bound(edges.begin(), edges.end(), v,
                                 [](C a, const T& b) { return a < static_cast<C>(b); }) - edges.begin() - 1;
        }
        if (pos >= nb) pos = nb - 1;
        h[pos] += w ? static_cast<double>(static_cast<C>(w[i])) : 1.0;
      }
    }
  });
  for (int64_t b = 0; b < nb; ++b) {
    double t = 0;
    for (int c = 0; c < nchunks; ++c) t += part[c][b];
    out[b] = cast_to<T>(t);
  }
}

// PyTorch's linspace(lo, hi, nb + 1) in dtype T.
template <typename T> std::vector<T> linear_edges(double lo, double hi, int64_t nb) {
  using C = opmath_t<T>;
  std::vector<T> e(nb + 1);
  const C start = static_cast<C>(lo), end = static_cast<C>(hi);
  const C step = (end - start) / static_cast<C>(nb);
  const int64_t half = (nb + 1) / 2;
  for (int64_t i = 0; i <= nb; ++i)
    e[i] = cast_to<T>(i < half ? start + step * static_cast<C>(i) : end - step * static_cast<C>(nb - i));
  return e;
}

void check_bins(int64_t bins, const char* op) {
  EMBER_CHECK(bins > 0, std::runtime_error, op, " bins must be > 0, but got ", bins, " for dimension 0");
}

// The data's range (min, max) as doubles; (0, 0) for an empty tensor.
std::pair<double, double> data_range(const Tensor& xc) {
  if (xc->numel() == 0) return {0.0, 0.0};
  return {to_dtype(min_all(xc), ScalarType::Float64)->data_as<double>()[0],
          to_dtype(max_all(xc), ScalarType::Float64)->data_as<double>()[0]};
}

NotImplementedError not_implemented(const char* kernel, ScalarType dt) {
  return NotImplementedError(str_cat("\"", kernel, "\" not implemented for '", type_name(dt), "'"));
}

// torch writes the edges with linspace in the input's dtype before its kernel refuses a
// non-floating input: linspace has no bool kernel, and an edge the dtype cannot hold is an
// overflow error.
void check_linspace_edges(double lo, double hi, ScalarType dt) {
  if (dt == ScalarType::Bool) throw not_implemented("linspace_cpu", dt);
  scalar_tensor(Scalar::from_double(lo), dt, /*checked=*/true);
  scalar_tensor(Scalar::from_double(hi), dt, /*checked=*/true);
}

// torch's histogramdd checks of the hist and bin_edges outputs (out=) and the bin count.
void check_hist_out(const Tensor& x, int64_t bins, std::optional<ScalarType> hist_dtype,
                    std::optional<ScalarType> edges_dtype) {
  EMBER_CHECK(!hist_dtype || *hist_dtype == x->dtype, std::runtime_error,
              "torch.histogram: input tensor and hist tensor should have the same dtype, but got "
              "input ", cpp_type_name(x->dtype), " and hist ", cpp_type_name(*hist_dtype));
  EMBER_CHECK(!edges_dtype || *edges_dtype == x->dtype, std::runtime_error,
              "torch.histogram: input tensor and bin_edges tensor should have the same dtype, but "
              "got input ", cpp_type_name(x->dtype), " and bin_edges ", cpp_type_name(*edges_dtype),
              " for dimension 0");
  check_bins(bins, "torch.histogram():");
}

}  // namespace

// Checks in torch's order (aten's Histogram.cpp): the bin count, the range (the data's when
// min == max), the edges in the input's dtype, then the kernel's dtype.
Tensor histc(const Tensor& x, int64_t bins, double lo, double hi, std::optional<ScalarType> out_dtype) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, "histc");
  check_hist_out(x, bins, out_dtype, std::nullopt);
  if (lo == hi && x->numel() > 0) {
    if (is_complex(x->dtype)) throw not_implemented("aminmax_cpu", x->dtype);
    std::tie(lo, hi) = data_range(contiguous_copy(x));
  }
  if (lo == hi) lo -= 1, hi += 1;
  EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), std::runtime_error, "torch.histc: range of [",
              lo, ", ", hi, "] is not finite");
  EMBER_CHECK(lo < hi, std::runtime_error, "torch.histc: max must be larger than min");
  check_linspace_edges(lo, hi, x->dtype);
  if (!is_floating(x->dtype)) throw not_implemented("histogram_cpu", x->dtype);
  Tensor xc = contiguous_copy(x);
  Tensor out = empty({bins}, x->dtype);
  dispatch_floating(x->dtype, "histc", [&](auto tag) {
    using T = typename decltype(tag)::type;
    hist_kernel<T>(xc->data_as<T>(), nullptr, xc->numel(), linear_edges<T>(lo, hi, bins), true, false,
                   out->data_as<T>());
  });
  return out;
}

std::pair<Tensor, Tensor> histogram(const Tensor& x, int64_t bins, std::optional<std::vector<double>> range,
                                    const Tensor& edges, const Tensor& weight, bool density,
                                    std::optional<ScalarType> hist_dtype,
                                    std::optional<ScalarType> edges_dtype) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, "histogram");
  // torch's histogramdd_check_inputs: the edges, then the weight (of the input's element count).
  auto check_inputs = [&]() {
    if (edges) {
      EMBER_CHECK(edges->dtype == x->dtype, std::runtime_error,
                  "torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                  "got input with dtype ", cpp_type_name(x->dtype),
                  " and bins for dimension 0 with dtype ", cpp_type_name(edges->dtype));
      EMBER_CHECK(edges->dim() == 1, std::runtime_error,
                  "torch.histogramdd: bins tensor should have one dimension, but got ", edges->dim(),
                  " dimensions in the bins tensor for dimension 0");
      EMBER_CHECK(edges->numel() > 0, std::runtime_error,
                  "torch.histogramdd: bins tensor should have at least 1 element, but got 0 "
                  "elements in the bins tensor for dimension 0");
    }
    if (weight) {
      EMBER_CHECK(weight->dtype == x->dtype, std::runtime_error,
                  "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                  "should have the same dtype, but got input(", cpp_type_name(x->dtype),
                  "), and weight(", cpp_type_name(weight->dtype), ")");
      EMBER_CHECK(weight->numel() == x->numel(), std::runtime_error,
                  "torch.histogramdd: if weight tensor is provided it should have the same shape as "
                  "the input tensor excluding its innermost dimension, but got input with shape [",
                  x->numel(), ", 1] and weight with shape [", weight->numel(), "]");
    }
  };
  double lo = 0, hi = 0;
  if (edges) {
    check_inputs();
    bins = edges->numel() - 1;
    check_hist_out(x, bins, hist_dtype, edges_dtype);
  } else {
    check_hist_out(x, bins, hist_dtype, edges_dtype);
    if (range) {
      EMBER_CHECK(range->size() == 2, std::runtime_error, "torch.histogramdd: for a 1-dimensional "
                  "histogram range should have 2 elements, but got ", range->size());
      lo = (*range)[0], hi = (*range)[1];
    } else if (x->numel() == 0) {
      lo = 0, hi = 1;  // NumPy's and torch's range for no data
    } else {
      if (!is_floating(x->dtype) || x->dtype == ScalarType::Float16 ||
          x->dtype == ScalarType::BFloat16)
        throw not_implemented("histogramdd", x->dtype);  // torch's data range: float and double
      std::tie(lo, hi) = data_range(contiguous_copy(x));
    }
    EMBER_CHECK(std::isfinite(lo) && std::isfinite(hi), std::runtime_error,
                "torch.histogramdd: dimension 0's range [", lo, ", ", hi, "] is not finite");
    EMBER_CHECK(lo <= hi, std::runtime_error,
                "torch.histogramdd: min should not exceed max, but got min ", lo, " max ", hi,
                " for dimension 0");
    if (lo == hi) lo -= 0.5, hi += 0.5;  // NumPy's and PyTorch's rule for a degenerate range
    check_linspace_edges(lo, hi, x->dtype);
    check_inputs();
  }
  if (!is_floating(x->dtype)) throw not_implemented("histogram_cpu", x->dtype);
  Tensor xc = contiguous_copy(x);
  Tensor wc = weight ? contiguous_copy(weight) : nullptr;
  Tensor ec = edges ? contiguous_copy(edges) : nullptr;
  Tensor hist = empty({bins}, x->dtype), out_edges = empty({bins + 1}, x->dtype);
  dispatch_floating(x->dtype, "histogram", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    std::vector<T> e = ec ? std::vector<T>(ec->data_as<T>(), ec->data_as<T>() + ec->numel())
                          : linear_edges<T>(lo, hi, bins);
    std::copy(e.begin(), e.end(), out_edges->data_as<T>());
    T* h = hist->data_as<T>();
    if (bins > 0) hist_kernel<T>(xc->data_as<T>(), wc ? wc->data_as<T>() : nullptr, xc->numel(), e, !ec, true, h);
    if (density) {
      C total = 0;
      for (int64_t b = 0; b < bins; ++b) total += static_cast<C>(h[b]);
      for (int64_t b = 0; b < bins; ++b)
        h[b] = cast_to<T>(static_cast<C>(h[b]) / (total * (static_cast<C>(e[b + 1]) - static_cast<C>(e[b]))));
    }
  });
  return {hist, out_edges};
}

Tensor bincount(const Tensor& x, const Tensor& weights, int64_t minlength) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, "bincount");
  if (!is_integral(x->dtype, false) || is_wide_unsigned(x->dtype))  // (torch's kernel's types)
    throw NotImplementedError(str_cat("\"bincount_cpu\" not implemented for '", type_name(x->dtype), "'"));
  EMBER_CHECK(minlength >= 0, std::runtime_error, "minlength should be >= 0");
  // torch's shortcut, before it reads the weights: int64 zeros whatever their dtype
  if (x->dim() == 1 && x->numel() == 0) {
    Tensor r = empty({minlength}, ScalarType::Int64);
    fill_(r, Scalar::from_int(0));
    return r;
  }
  EMBER_CHECK(x->dim() == 1, std::runtime_error, "bincount only supports 1-d non-negative integral inputs.");
  if (weights)
    EMBER_CHECK(weights->dim() == 1 && weights->sizes[0] == x->sizes[0], std::runtime_error,
                "weights should be 1-d and have the same length as input");
  Tensor xi = contiguous_copy(to_dtype(x, ScalarType::Int64));
  const int64_t* p = xi->data_as<int64_t>();
  const int64_t n = xi->numel();
  int64_t mx = -1;
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(p[i] >= 0, std::runtime_error, "bincount only supports 1-d non-negative integral inputs.");
    mx = std::max(mx, p[i]);
  }
  const int64_t len = std::max(mx + 1, minlength);
  if (!weights) {
    Tensor out = empty({len}, ScalarType::Int64);
    int64_t* o = out->data_as<int64_t>();
    std::fill(o, o + len, 0);
    for (int64_t i = 0; i < n; ++i) ++o[p[i]];
    return out;
  }
  const ScalarType wt = weights->dtype == ScalarType::Float32 ? ScalarType::Float32 : ScalarType::Float64;
  Tensor w = contiguous_copy(to_dtype(weights, ScalarType::Float64));
  const double* wp = w->data_as<double>();
  Tensor acc = empty({len}, ScalarType::Float64);
  double* o = acc->data_as<double>();
  std::fill(o, o + len, 0.0);
  for (int64_t i = 0; i < n; ++i) o[p[i]] += wp[i];
  return wt == ScalarType::Float64 ? acc : to_dtype(acc, wt);
}

}  // namespace ember
