// activation.h: the fused GELU kernels (torch._C._nn.gelu, aten::gelu_backward): one pass each,
// where the composition from core ops made several passes and temporaries.
#pragma once

#include <string>

#include "core/tensor.h"

namespace ember {

// approximate: "none" (x * Phi(x), through erf) or "tanh".
Tensor gelu(const Tensor& input, const std::string& approximate);
// grad_output * d gelu(input) / d input; grad_output has the input's size.
Tensor gelu_backward(const Tensor& grad_output, const Tensor& input, const std::string& approximate);

}  // namespace ember
