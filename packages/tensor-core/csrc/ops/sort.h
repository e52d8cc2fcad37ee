// sort.h: sorting, selection, searching and counting ops (sort, topk, kthvalue, median, mode,
// cummax/cummin, unique, searchsorted, histc/histogram, bincount, quantile), with PyTorch's
// dtype, NaN, empty-tensor and error rules.
//
// Every op that orders values works on an order-preserving unsigned *key* of each element
// (sort.cpp: floats flip their sign-magnitude bits, signed ints flip the sign bit, NaN maps to
// the largest key, -0.0 to the key of +0.0). One key type per width serves all ten dtypes, NaN
// sorts last as in PyTorch, and a (key << 32 | index) word sorts stably with a plain integer sort.
// Results always read the original elements back by index, so -0.0 and NaN payloads survive.
// Rows along `dim` are processed in parallel; one long row is radix-sorted with a parallel
// LSD radix sort (8-bit digits, per-chunk histograms).
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ember {

// (values, indices) along `dim`; NaN is the largest value. Sorting is always stable.
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable);
// The k largest (or smallest) along dim; sorted by value when `sorted`.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted);
// The k-th smallest (1-based) along dim.
std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim);
// Lower median of all elements (NaN if any is NaN, unless ignore_nan: nanmedian).
Tensor median_all(const Tensor& x, bool ignore_nan);
std::pair<Tensor, Tensor> median_dim(const Tensor& x, int64_t dim, bool keepdim, bool ignore_nan);
// Most frequent value along dim (smallest on ties) and an index of it, chosen as PyTorch does.
std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim);
// Running max (is_max) or min along dim with the index where it was (last) reached.
std::pair<Tensor, Tensor> cumextreme(const Tensor& x, int64_t dim, bool is_max);

struct UniqueResult {
  Tensor values, inverse, counts;
};
// torch.unique (sorted) / torch.unique_consecutive (consecutive = true), flattened or along dim.
UniqueResult unique(const Tensor& x, std::optional<int64_t> dim, bool consecutive);

// Indices where `values` would be inserted into the sorted last dim of `seq` (1-d, or with the
// same leading dims as values). `sorter` (optional, int64) gives seq's sorting order.
Tensor searchsorted(const Tensor& seq, const Tensor& values, bool out_int32, bool right,
                    const Tensor& sorter, const char* op = "searchsorted");

// torch.histc: `bins` equal bins over [lo, hi] (the data's range when lo == hi).
// out_dtype: an out='s dtype, checked in torch's order.
Tensor histc(const Tensor& x, int64_t bins, double lo, double hi,
             std::optional<ScalarType> out_dtype = std::nullopt);
// torch.histogram with `bins` equal bins (range given or the data's) or explicit edges.
std::pair<Tensor, Tensor> histogram(const Tensor& x, int64_t bins, std::optional<std::vector<double>> range,
                                    const Tensor& edges, const Tensor& weight, bool density,
                                    std::optional<ScalarType> hist_dtype = std::nullopt,
                                    std::optional<ScalarType> edges_dtype = std::nullopt);
Tensor bincount(const Tensor& x, const Tensor& weights, int64_t minlength);

enum class QuantileInterp { Linear, Lower, Higher, Midpoint, Nearest };
// q: a 0-d or 1-d tensor of x's dtype. The result has q's dims first when q is 1-d.
Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                QuantileInterp interp, bool ignore_nan);

}  // namespace ember
