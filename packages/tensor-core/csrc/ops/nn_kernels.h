// nn_kernels.h: the fused kernels of the neural-network layers that composing core ops would make
// slow: the negative log-likelihood loss, batch and layer normalisation, embedding lookup, each with
// its backward kernel, under ATen's names and signatures.
#pragma once

#include <array>
#include <optional>
#include <tuple>
#include <utility>

#include "core/tensor.h"

namespace ember {

// reduction: 0 none, 1 mean, 2 sum (at::Reduction). input (C), (N, C) or (N, C, d1, ...), target
// (), (N) or (N, d1, ...) of integer class indices; weight (C) or null. -> (output, total_weight).
std::pair<Tensor, Tensor> nll_loss_forward(const Tensor& input, const Tensor& target,
                                           const Tensor& weight, int64_t reduction,
                                           int64_t ignore_index);
// total_weight may be null (recomputed).
Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                         const Tensor& weight, int64_t reduction, int64_t ignore_index,
                         const Tensor& total_weight);

// input (N, C, *). Training: batch statistics (biased variance for normalising), running stats
// (if given) updated in place with the unbiased variance. -> (out, save_mean, save_invstd); the
// saved tensors are empty in evaluation.
std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const Tensor& weight,
                                                     const Tensor& bias, const Tensor& running_mean,
                                                     const Tensor& running_var, bool training,
                                                     double momentum, double eps);
std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight, const Tensor& running_mean,
    const Tensor& running_var, const Tensor& save_mean, const Tensor& save_invstd, bool train,
    double eps, std::array<bool, 3> output_mask);

// -> (out, mean, rstd); mean/rstd have the input's leading sizes and 1 for each normalised dim.
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, const Shape& normalized_shape,
                                                     const Tensor& weight, const Tensor& bias, double eps);
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Shape& normalized_shape, const Tensor& mean,
    const Tensor& rstd, const Tensor& weight, const Tensor& bias, std::array<bool, 3> output_mask);

// Rows of weight (V, D) picked by indices (any shape, int32/int64).
Tensor embedding(const Tensor& weight, const Tensor& indices);
// Dense gradient (num_weights, D): grad rows scatter-added, rows of padding_idx left at zero,
// optionally divided by each index's count in the batch.
Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices,
                                int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq);

// ops/attention.cpp: softmax(q k^T * scale [causal mask]) v per matrix of (..., L, E) query,
// (..., S, E) key, (..., S, Ev) value with the same leading sizes, float32/float64 -> (output
// (..., L, Ev), logsumexp (..., L) of each row's scaled scores). A 4-d output has its heads side
// by side in memory ((B, L, H, Ev) seen as (B, H, L, Ev)) where the query's are, as ATen's.
// attn_mask and dropout raise NotImplementedError (the composed form handles them).
std::pair<Tensor, Tensor> scaled_dot_product_attention_cpu(const Tensor& query, const Tensor& key,
                                                           const Tensor& value, double dropout_p,
                                                           bool is_causal, const Tensor& attn_mask,
                                                           std::optional<double> scale);
// Its gradient -> (grad_query, grad_key, grad_value), each laid out as its input, from the
// forward's output and logsumexp.
std::tuple<Tensor, Tensor, Tensor> scaled_dot_product_attention_cpu_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value,
    const Tensor& out, const Tensor& logsumexp, double dropout_p, bool is_causal,
    const Tensor& attn_mask, std::optional<double> scale);

}  // namespace ember
