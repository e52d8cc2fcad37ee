// conv.h: convolution (1-d/2-d/3-d, strided, padded, dilated, grouped, transposed) and its backward,
// under ATen's names and signatures so that gradient formulas can be written as calls to these ops.
//
// Algorithm (conv.cpp): vol2col + GEMM. Every convolution is seen from its "big" side (the input of
// a plain convolution, the output of a transposed one) and its "small" side (the other one):
//   forward      small[n, g] = W_g (S_g x B_g*kvol)  @  col(big[n, g])   (im2col, then one GEMM)
//   adjoint      big[n, g]   = col2im(W_g^T @ small[n, g])              (one GEMM, then col2im)
//   weight grad  W_g        += small[n, g] @ col(big[n, g])^T            (im2col, then one GEMM)
// A plain convolution is `forward`, its input gradient `adjoint`; a transposed convolution is
// `adjoint`, its input gradient `forward`; both weight gradients are `weight grad`. The weight is
// (S, B/groups, k...) in both cases (PyTorch's layouts), so group g's matrix is a contiguous block.
#pragma once

#include <array>
#include <optional>
#include <tuple>

#include "core/tensor.h"

namespace ember {

// torch.convolution. stride/padding/dilation/output_padding have one entry per spatial dim
// (the binding expands single ints). bias may be null. Unbatched input (C, *) is accepted.
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const Shape& stride,
                   const Shape& padding, const Shape& dilation, bool transposed,
                   const Shape& output_padding, int64_t groups);

// The shape torch.convolution returns, after every check it makes on its arguments' sizes and
// dtypes: the device ops' source of shapes and errors (they pass memory-free stand-ins).
Shape convolution_output_shape(const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const Shape& stride, const Shape& padding, const Shape& dilation,
                               bool transposed, const Shape& output_padding, int64_t groups);
// A plain convolution with padding 'same' (asymmetric padding when dilation*(k-1) is odd, as
// PyTorch pads the extra element at the end).
Tensor convolution_same(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const Shape& stride, const Shape& dilation, int64_t groups);

// aten::convolution_backward -> (grad_input, grad_weight, grad_bias); an entry whose output_mask is
// false is null. bias_sizes: the bias shape, or nullopt when the convolution had no bias.
std::tuple<Tensor, Tensor, Tensor> convolution_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    const std::optional<Shape>& bias_sizes, const Shape& stride, const Shape& padding,
    const Shape& dilation, bool transposed, const Shape& output_padding, int64_t groups,
    std::array<bool, 3> output_mask);

}  // namespace ember
