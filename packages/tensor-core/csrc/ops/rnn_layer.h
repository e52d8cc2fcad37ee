// rnn_layer.h: a whole LSTM or GRU layer (one direction) in one kernel, for ember.nn's LSTM/GRU:
// the input projection of every time step is one GEMM before the loop, each step one small GEMM
// (h @ W_hh^T) and one fused pass over the gates; the backward runs the steps in reverse with one
// small GEMM each and computes the weight gradients as one GEMM per weight after the loop (the
// per-step path recorded two graph nodes per step and summed T small products for W_hh's gradient).
// float32/float64 on the CPU.
#pragma once

#include <string>
#include <tuple>

#include "core/tensor.h"

namespace ember {

// mode: "LSTM" (gates i, f, g, o) or "GRU" (r, z, n), torch's order and formulas.
// input (T, N, I); weight_ih (G*H, I); weight_hh (G*H, H); biases (G*H) or null (both or neither);
// hx (N, H); cx (N, H) for LSTM, null for GRU. reverse: the steps run from T-1 down to 0.
// -> (output (T, N, H), hy (N, H), cy (N, H) (LSTM; an empty tensor for GRU), workspace): the
// workspace holds what the backward reads: LSTM (T, N, 5H) the activated gates and c per step,
// GRU (T, N, 4H) r, z, n and the hidden n-gate with its bias.
std::tuple<Tensor, Tensor, Tensor, Tensor> rnn_layer(const std::string& mode, const Tensor& input,
                                                     const Tensor& weight_ih, const Tensor& weight_hh,
                                                     const Tensor& bias_ih, const Tensor& bias_hh,
                                                     const Tensor& hx, const Tensor& cx, bool reverse);

struct RnnLayerGrads {
  Tensor input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx;  // bias_*/cx null when absent
};

// The gradients of rnn_layer's inputs from those of its outputs (each may be null: none reached
// it); output and workspace are rnn_layer's. need_input / need_weights: whether to compute the
// input's gradient (one GEMM over all steps, skipped for a first layer fed by data) and the
// weights' and biases' (null when not).
RnnLayerGrads rnn_layer_backward(const std::string& mode, const Tensor& grad_output,
                                 const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& input,
                                 const Tensor& weight_ih, const Tensor& weight_hh, bool has_bias,
                                 const Tensor& hx, const Tensor& cx, const Tensor& output,
                                 const Tensor& workspace, bool reverse, bool need_input = true,
                                 bool need_weights = true);

}  // namespace ember
