// rnn_layer.cpp: the whole-layer LSTM/GRU kernels (see rnn_layer.h). The products go through
// ops/linalg.h (OpenBLAS, parallel over panels), the recurrent one through a packed kernel where
// the CPU has it (RecurrentProduct); each step's gate pass is a kernel of
// ops/cpu/rnn_rows.cpp (compiled per CPU capability, parallel over the batch). Time step t of the workspace, the output and the gate buffers is always the
// sequence's position t, whichever way the layer runs.
#include "ops/rnn_layer.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ops/cpu_kernels.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reduce.h"
#include "runtime/gil.h"

namespace ember {
namespace {

struct LayerGeo {
  bool lstm;
  int64_t T, N, I, H, G;  // G: gates per unit (4 LSTM, 3 GRU)
};

void check_shape(const Tensor& t, const Shape& want, const char* what) {
  EMBER_CHECK(t->sizes == want, std::runtime_error, "_rnn_layer: expected ", what, " of size ",
              shape_str(want), ", but got ", shape_str(t->sizes));
}

LayerGeo check_layer(const std::string& mode, const Tensor& input, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih, const Tensor& b_hh, const Tensor& hx, const Tensor& cx) {
  EMBER_CHECK(mode == "LSTM" || mode == "GRU", ValueError, "_rnn_layer: unknown mode '", mode,
              "' (expected 'LSTM' or 'GRU')");
  const bool lstm = mode == "LSTM";
  EMBER_CHECK(input->dim() == 3, std::runtime_error, "_rnn_layer: expected input (T, N, I), but got size ",
              shape_str(input->sizes));
  EMBER_CHECK(w_hh->dim() == 2 && w_ih->dim() == 2, std::runtime_error,
              "_rnn_layer: expected 2-D weights, but got weight_ih ", shape_str(w_ih->sizes),
              " and weight_hh ", shape_str(w_hh->sizes));
  LayerGeo g{lstm, input->sizes[0], input->sizes[1], input->sizes[2], w_hh->sizes[1], lstm ? 4 : 3};
  check_shape(w_hh, {g.G * g.H, g.H}, "weight_hh");
  check_shape(w_ih, {g.G * g.H, g.I}, "weight_ih");
  EMBER_CHECK(!b_ih == !b_hh, std::runtime_error, "_rnn_layer: expected both biases or neither");
  if (b_ih) check_shape(b_ih, {g.G * g.H}, "bias_ih");
  if (b_hh) check_shape(b_hh, {g.G * g.H}, "bias_hh");
  check_shape(hx, {g.N, g.H}, "hx");
  EMBER_CHECK(!lstm || cx, std::runtime_error, "_rnn_layer: LSTM needs cx");
  if (lstm) check_shape(cx, {g.N, g.H}, "cx");
  const ScalarType dt = input->dtype;
  EMBER_CHECK(dt == ScalarType::Float32 || dt == ScalarType::Float64, NotImplementedError,
              "\"_rnn_layer\" not implemented for '", torch_type_name(dt), "'");
  for (const Tensor* t : {&w_ih, &w_hh, &b_ih, &b_hh, &hx, &cx})
    if (*t)
      EMBER_CHECK((*t)->dtype == dt, std::runtime_error, "_rnn_layer: expected all tensors of dtype ",
                  torch_type_name(dt), ", but got ", torch_type_name((*t)->dtype));
  return g;
}

template <typename F> void dispatch_float(ScalarType dt, F f) {
  if (dt == ScalarType::Float32) f(float{});
  else f(double{});
}

Tensor zeros(const Shape& sizes, ScalarType dt) {
  Tensor t = empty(sizes, dt);
  std::memset(t->data(), 0, static_cast<size_t>(t->numel() * t->element_size()));
  return t;
}

// a (rows x K) @ b (K x N) for every time step of one layer call, b the same each time: packed
// once into panels where this CPU's kernels have the packed product (ops/cpu/packed_gemm.cpp:
// about 2.5x OpenBLAS's speed on these few-row products, which repack b on every call), else
// one OpenBLAS product per step.
class RecurrentProduct {
 public:
  RecurrentProduct(const Tensor& b, int64_t rows) : b_(b) {
    const int64_t width =
        rows <= kMaxRows ? cpu_kernels().packed_panel_width(b->dtype) : int64_t{0};
    if (width == 0) return;
    K_ = b->sizes[0];
    N_ = b->sizes[1];
    panels_ = empty({(N_ + width - 1) / width * K_ * width}, ScalarType::Float32);
    cpu_kernels().pack_panels(b->data_as<float>(), b->strides[0], b->strides[1], K_, N_,
                              panels_->data_as<float>());
  }
  // c (rows x N, rows contiguous) = a (rows x K, rows contiguous)
  void run(const Tensor& a, const Tensor& c) const {
    if (!panels_ || a->strides[1] != 1 || c->strides[1] != 1) {
      mm(a, b_, c);
      return;
    }
    cpu_kernels().packed_gemm(a->data_as<float>(), a->strides[0], panels_->data_as<float>(),
                              a->sizes[0], N_, K_, c->data_as<float>(), c->strides[0]);
  }

 private:
  static constexpr int64_t kMaxRows = 128;  // the batch: larger ones are OpenBLAS's ground
  Tensor b_, panels_;
  int64_t K_ = 0, N_ = 0;
};

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor> rnn_layer(const std::string& mode, const Tensor& input,
                                                     const Tensor& weight_ih, const Tensor& weight_hh,
                                                     const Tensor& bias_ih, const Tensor& bias_hh,
                                                     const Tensor& hx, const Tensor& cx, bool reverse) {
  const LayerGeo g = check_layer(mode, input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx);
  GilRelease nogil;
  const ScalarType dt = input->dtype;
  const int64_t T = g.T, N = g.N, H = g.H, GH = g.G * g.H, W = g.lstm ? 5 * H : 4 * H;
  // every step's input gates in one product: (T*N, I) @ W_ih^T
  Tensor xg = mm(reshape(contiguous(input), {T * N, g.I}), transpose(weight_ih, 0, 1));
  Tensor out = empty({T, N, H}, dt), ws = empty({T, N, W}, dt), hg = empty({N, GH}, dt);
  Tensor h0 = contiguous(hx), c0 = g.lstm ? contiguous(cx) : Tensor();
  // no bias: zeros, so that the gate loops have no branch
  Tensor b_ih = bias_ih ? contiguous(bias_ih) : zeros({GH}, dt);
  Tensor b_hh = bias_hh ? contiguous(bias_hh) : zeros({GH}, dt);
  const RecurrentProduct hidden_gates(transpose(weight_hh, 0, 1), N);  // h @ W_hh^T
  Tensor h_prev = h0, c_prev = c0;
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    hidden_gates.run(h_prev, hg);
    Tensor ws_t = select(ws, 0, t), out_t = select(out, 0, t);
    cpu_kernels().rnn_step_forward(g.lstm, narrow(xg, 0, t * N, N), hg, b_ih, b_hh, h_prev, c_prev,
                                   ws_t, out_t);
    h_prev = out_t;
    if (g.lstm) c_prev = narrow(ws_t, 1, 4 * H, H);
  }
  Tensor hy = T ? clone(select(out, 0, reverse ? 0 : T - 1)) : clone(h0);
  Tensor cy;
  if (g.lstm)
    cy = T ? clone(narrow(select(ws, 0, reverse ? 0 : T - 1), 1, 4 * H, H)) : clone(c0);
  else
    cy = empty({0}, dt);
  return {out, contiguous(hy), contiguous(cy), ws};
}

RnnLayerGrads rnn_layer_backward(const std::string& mode, const Tensor& grad_output,
                                 const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& input,
                                 const Tensor& weight_ih, const Tensor& weight_hh, bool has_bias,
                                 const Tensor& hx, const Tensor& cx, const Tensor& output,
                                 const Tensor& workspace, bool reverse, bool need_input,
                                 bool need_weights) {
  const LayerGeo g = check_layer(mode, input, weight_ih, weight_hh, Tensor(), Tensor(), hx, cx);
  GilRelease nogil;
  const ScalarType dt = input->dtype;
  const int64_t T = g.T, N = g.N, H = g.H, GH = g.G * g.H, W = g.lstm ? 5 * H : 4 * H;
  check_shape(output, {T, N, H}, "output");
  check_shape(workspace, {T, N, W}, "workspace");
  if (grad_output) check_shape(grad_output, {T, N, H}, "grad_output");
  if (grad_hy) check_shape(grad_hy, {N, H}, "grad_hy");
  if (grad_cy) check_shape(grad_cy, {N, H}, "grad_cy");
  Tensor go = grad_output ? contiguous(to_dtype(grad_output, dt)) : Tensor();
  Tensor out = contiguous(output), ws = contiguous(workspace), h0 = contiguous(hx);
  Tensor c0 = g.lstm ? contiguous(cx) : Tensor();
  // d(input gates) for every step; GRU's hidden gates differ in the n-gate (scaled by r)
  Tensor d_in = empty({T * N, GH}, dt);
  Tensor d_hid = g.lstm ? d_in : empty({T * N, GH}, dt);
  // the gradient reaching h through the recurrence: carry (from the product) + direct (GRU's z * dh)
  Tensor carry = grad_hy ? contiguous(clone(to_dtype(grad_hy, dt))) : zeros({N, H}, dt);
  Tensor direct = zeros({N, H}, dt);
  Tensor dc = g.lstm ? (grad_cy ? contiguous(clone(to_dtype(grad_cy, dt))) : zeros({N, H}, dt)) : Tensor();
  const RecurrentProduct through_hidden(weight_hh, N);  // d(hidden gates) @ W_hh
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? s : T - 1 - s;  // the forward's order, backwards
    const bool first = reverse ? t == T - 1 : t == 0;  // the step that read hx / cx
    const int64_t tp = reverse ? t + 1 : t - 1;        // the step that produced h_prev
    Tensor h_prev = first ? h0 : select(out, 0, tp);
    Tensor c_prev = !g.lstm ? Tensor() : first ? c0 : narrow(select(ws, 0, tp), 1, 4 * H, H);
    Tensor d_hid_t = narrow(d_hid, 0, t * N, N);
    cpu_kernels().rnn_step_backward(g.lstm, go ? select(go, 0, t) : Tensor(), select(ws, 0, t), h_prev,
                                    c_prev, carry, direct, dc, narrow(d_in, 0, t * N, N), d_hid_t);
    // dh_prev through the recurrent product: d(hidden gates) @ W_hh
    through_hidden.run(d_hid_t, carry);
  }
  RnnLayerGrads r;
  if (!g.lstm)
    dispatch_float(dt, [&](auto zero) {
      using T_ = decltype(zero);
      T_* c = carry->data_as<T_>();
      const T_* d = direct->data_as<T_>();
      for (int64_t i = 0; i < N * H; ++i) c[i] += d[i];
    });
  r.hx = carry;
  r.cx = g.lstm ? dc : Tensor();
  if (need_input) r.input = reshape(mm(d_in, weight_ih), {T, N, g.I});
  if (!need_weights) return r;
  // h_prev of every step as one (T*N, H) matrix, for W_hh's gradient in one product
  Tensor hprev_all = empty({T, N, H}, dt);
  if (T) {
    const int64_t row = N * H * static_cast<int64_t>(hprev_all->element_size());
    char* dst = hprev_all->data();
    const char* o = out->data();
    const char* h = h0->data();
    for (int64_t t = 0; t < T; ++t) {
      const bool first = reverse ? t == T - 1 : t == 0;
      const int64_t tp = reverse ? t + 1 : t - 1;
      std::memcpy(dst + t * row, first ? h : o + tp * row, row);
    }
  }
  r.weight_hh = mm(transpose(d_hid, 0, 1), reshape(hprev_all, {T * N, H}));
  r.weight_ih = mm(transpose(d_in, 0, 1), reshape(contiguous(input), {T * N, g.I}));
  if (has_bias) {
    r.bias_ih = sum(d_in, OptDims{std::vector<int64_t>{0}}, false);
    // LSTM: the same sums, copied so that the two gradients never alias
    r.bias_hh = g.lstm ? clone(r.bias_ih) : sum(d_hid, OptDims{std::vector<int64_t>{0}}, false);
  }
  return r;
}

}  // namespace ember
