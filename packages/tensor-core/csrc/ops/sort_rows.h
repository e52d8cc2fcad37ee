// sort_rows.h: a tensor seen as rows along one dim, for the kernels of sort.cpp and
// histogram.cpp (each row is one sort, selection, search or count).
#pragma once

#include <algorithm>

#include "core/errors.h"
#include "core/tensor.h"
#include "kernels/iterator.h"
#include "runtime/parallel.h"

namespace ember::sort_rows {

struct Rows {
  int64_t n = 1;      // row length (size of dim; 1 for a 0-d tensor)
  int64_t rows = 1;   // number of rows
  int64_t inner = 1;  // product of the sizes after dim
  int64_t stride = 0; // input stride along dim
  Shape osz, ost;     // the other dims of the input: sizes and strides
  int64_t in_offset(int64_t r) const {
    int64_t off = 0;
    for (int d = static_cast<int>(osz.size()) - 1; d >= 0; --d) {
      off += (r % osz[d]) * ost[d];
      r /= osz[d];
    }
    return off;
  }
  // Offset of row r's first element in a contiguous tensor whose dim has size m.
  int64_t out_offset(int64_t r, int64_t m) const { return (r / inner) * m * inner + r % inner; }
};

inline Rows rows_of(const Tensor& x, int64_t dim) {
  Rows L;
  if (x->dim() == 0) return L;
  L.n = x->sizes[dim];
  L.stride = x->strides[dim];
  for (int64_t d = 0; d < x->dim(); ++d) {
    if (d == dim) continue;
    L.osz.push_back(x->sizes[d]);
    L.ost.push_back(x->strides[d]);
    L.rows *= x->sizes[d];
    if (d > dim) L.inner *= x->sizes[d];
  }
  return L;
}

inline Shape with_dim_size(const Tensor& x, int64_t dim, int64_t m) {
  Shape s = x->sizes;
  if (!s.empty()) s[dim] = m;
  return s;
}
inline Shape reduced(const Tensor& x, int64_t dim, bool keepdim) {
  Shape s = x->sizes;
  if (s.empty()) return s;
  if (keepdim) s[dim] = 1;
  else s.erase(s.begin() + dim);
  return s;
}


// Runs body(r_begin, r_end) over the rows on the pool.
template <typename F> void over_rows(const Rows& L, int64_t per_row, const F& body) {
  parallel_for(0, L.rows, grain_for(per_row), body);
}

inline void no_bool(const Tensor& x, const char* kernel) {
  if (x->dtype == ScalarType::Bool)
    throw NotImplementedError(str_cat("\"", kernel, "\" not implemented for 'Bool'"));
}

inline void check_nonempty_dim(const Tensor& x, int64_t dim, const char* op) {
  if (x->dim() > 0)
    EMBER_CHECK(x->sizes[dim] > 0, IndexError, op, "(): Expected reduction dim ", dim,
                " to have non-zero size.");
}

}  // namespace ember::sort_rows
