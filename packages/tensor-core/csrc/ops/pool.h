// pool.h: max / average / adaptive pooling over 1, 2 or 3 spatial dims and their backward kernels,
// under ATen's names. `kernel_size`, `stride`, `padding`, `dilation` have one entry per spatial dim
// (the binding expands single ints; an empty stride means stride = kernel_size). Inputs are
// (N, C, *) or unbatched (C, *); max-pool indices are int64 flat offsets within each channel's
// spatial volume, as PyTorch's.
#pragma once

#include <optional>
#include <utility>

#include "core/tensor.h"

namespace ember {

std::pair<Tensor, Tensor> max_pool_with_indices(const Tensor& input, const Shape& kernel_size,
                                                const Shape& stride, const Shape& padding,
                                                const Shape& dilation, bool ceil_mode,
                                                bool want_indices = true);
Tensor max_pool_with_indices_backward(const Tensor& grad_output, const Tensor& input,
                                      const Shape& kernel_size, const Shape& stride,
                                      const Shape& padding, const Shape& dilation, bool ceil_mode,
                                      const Tensor& indices);

Tensor avg_pool(const Tensor& input, const Shape& kernel_size, const Shape& stride,
                const Shape& padding, bool ceil_mode, bool count_include_pad,
                std::optional<int64_t> divisor_override);
Tensor avg_pool_backward(const Tensor& grad_output, const Tensor& input, const Shape& kernel_size,
                         const Shape& stride, const Shape& padding, bool ceil_mode,
                         bool count_include_pad, std::optional<int64_t> divisor_override);

// output_size has one entry per spatial dim (k = its length).
Tensor adaptive_avg_pool(const Tensor& input, const Shape& output_size);
// k: the number of spatial dims (the input alone cannot tell (C, D, H, W) from (N, C, H, W)).
Tensor adaptive_avg_pool_backward(const Tensor& grad_output, const Tensor& input, int64_t k);
std::pair<Tensor, Tensor> adaptive_max_pool(const Tensor& input, const Shape& output_size);
Tensor adaptive_max_pool_backward(const Tensor& grad_output, const Tensor& input,
                                  const Tensor& indices, int64_t k);

}  // namespace ember
