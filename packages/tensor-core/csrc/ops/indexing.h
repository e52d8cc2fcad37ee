// indexing.h: gathers and scatters driven by index tensors: advanced indexing (index /
// index_put_), index_select, gather, scatter (+ add / reduce), index_add / index_copy /
// index_fill, masked_fill / masked_select / masked_scatter, take, nonzero.
//
// Every op checks its arguments (dtypes, shapes, and every index in range, before any memory
// is written) and then runs one index plan (kernels/index_plan.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/index_plan.h"

namespace ember {

IndexReduce parse_index_reduce(const std::string& name, bool legacy);  // throws on bad names

// ---- advanced indexing (aten::index / index_put_) ----
// `indices` holds one entry per leading dim of `self`; a null entry leaves that dim whole.
// Entries are int64/int32 index tensors or bool/uint8 masks (a mask covers mask.dim() dims).
Tensor index(const Tensor& self, const std::vector<Tensor>& indices);
void index_put_(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                bool accumulate);
// True when a uint8 mask was used (the binding layer turns it into PyTorch's warning).
bool indices_have_byte_mask(const std::vector<Tensor>& indices);

// ---- dim-wise ops ----
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);
// scatter_ with a tensor source (src) or a scalar (src null, value used).
void scatter_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
              Scalar value, IndexReduce reduce, const char* op);
void scatter_reduce_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     IndexReduce reduce, bool include_self);
void index_add_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                Scalar alpha);
void index_copy_(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source);
void index_fill_(const Tensor& self, int64_t dim, const Tensor& index, Scalar value);

// ---- masks ----
void masked_fill_(const Tensor& self, const Tensor& mask, Scalar value);
Tensor masked_select(const Tensor& self, const Tensor& mask);
void masked_scatter_(const Tensor& self, const Tensor& mask, const Tensor& source);

// ---- flat / along-dim ----
Tensor take(const Tensor& self, const Tensor& index);
Tensor take_along_dim(const Tensor& self, const Tensor& indices, std::optional<int64_t> dim);
Tensor nonzero(const Tensor& self);  // [n, ndim] int64, row-major order

}  // namespace ember
