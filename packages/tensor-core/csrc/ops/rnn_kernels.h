// rnn_kernels.h: the fused LSTM and GRU cells (ATen's _thnn_fused_lstm_cell / _thnn_fused_gru_cell):
// one pass over the gates computes the activations and the new state, and one pass computes
// their gradients, where composing core ops would take a dozen passes and as many graph nodes
// per time step.
#pragma once

#include <tuple>

#include "core/tensor.h"

namespace ember {

// input_gates, hidden_gates (N, 4H) in torch's gate order i, f, g, o; cx (N, H); biases (4H) or
// null. -> (hy, cy, workspace): workspace (N, 4H) holds the activated gates for the backward.
std::tuple<Tensor, Tensor, Tensor> fused_lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                                   const Tensor& cx, const Tensor& input_bias,
                                                   const Tensor& hidden_bias);
// grad_hy / grad_cy may be null (no gradient reached them). -> (grad_gates (N, 4H), grad_cx,
// grad_bias (4H) when has_bias, else null).
std::tuple<Tensor, Tensor, Tensor> fused_lstm_cell_backward(const Tensor& grad_hy, const Tensor& grad_cy,
                                                            const Tensor& cx, const Tensor& cy,
                                                            const Tensor& workspace, bool has_bias);

// input_gates, hidden_gates (N, 3H) in torch's order r, z, n; hx (N, H); biases (3H) or null.
// hy = (1 - z) * n + z * hx with n = tanh(in + r * hn). -> (hy, workspace): workspace (N, 5H)
// holds r, z, n, hn (the hidden n-gate, bias included) and hx.
std::tuple<Tensor, Tensor> fused_gru_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                          const Tensor& hx, const Tensor& input_bias,
                                          const Tensor& hidden_bias);
// -> (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias); the
// bias gradients are null unless has_bias.
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> fused_gru_cell_backward(const Tensor& grad_hy,
                                                                           const Tensor& workspace,
                                                                           bool has_bias);

}  // namespace ember
