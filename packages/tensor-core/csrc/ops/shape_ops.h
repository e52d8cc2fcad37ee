// shape_ops.h: joining and reshaping primitives that need a kernel (cat, flip, roll, tril/triu,
// constant_pad_nd, repeat_interleave, diag_embed) and the views that the core did not have
// (diagonal, unfold). The composites over them (stack, split, movedim, rot90, pad modes, ...)
// live in Python (ember/_shape.py, ember/_padding.py).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ember {

// ---- cat ----
// Shape and result dtype of cat(tensors, dim) with PyTorch's rules: 1-d empty tensors are
// skipped (legacy behaviour), the dtype is promoted across every input. Raises on mismatches;
// with an out's dtype, that the result casts to it, between the dim and the sizes as torch.
Shape cat_shape(const std::vector<Tensor>& tensors, int64_t dim, ScalarType* dtype,
                int64_t* wrapped_dim = nullptr, ScalarType out_dtype = ScalarType::Undefined);
// `out` (optional) must already have the result's shape (cat resizes it otherwise, silently).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, const Tensor& out = nullptr);

// ---- copies with index math ----
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);
// dims empty: roll the flattened tensor by shifts[0].
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims);
// upper=false: tril. `inplace` zeroes x itself.
Tensor tril_triu(const Tensor& x, int64_t diagonal, bool upper, bool inplace);
Tensor constant_pad_nd(const Tensor& x, const std::vector<int64_t>& pad, Scalar value);
// repeats: a 0-d/1-d integer tensor (counts) or, when null, `repeat` for every element.
// dim nullopt: the flattened input.
// output_size: the result's length along dim when the caller knows it (any value, a negative
// one too, is checked against the counts' sum), nullopt when not
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, int64_t repeat,
                         std::optional<int64_t> dim, std::optional<int64_t> output_size);
Tensor repeat_interleave_counts(const Tensor& repeats,  // the one-argument form
                                std::optional<int64_t> output_size);
Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2);
// tril_indices / triu_indices: a 2 x N tensor of (row, col) indices.
Tensor tri_indices(int64_t row, int64_t col, int64_t offset, bool upper, ScalarType dtype);

// ---- views ----
// complex64/complex128 <-> float32/float64 with a last dim of 2 (real, imaginary): views of the
// same memory, with torch's checks on the layout.
Tensor view_as_real(const Tensor& x);
Tensor view_as_complex(const Tensor& x);
Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2);
Tensor unfold(const Tensor& x, int64_t dimension, int64_t size, int64_t step);

}  // namespace ember
