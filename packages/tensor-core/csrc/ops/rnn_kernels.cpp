// rnn_kernels.cpp: the fused LSTM and GRU cells (see rnn_kernels.h). Rows are independent, so each
// kernel runs in parallel over the batch; arithmetic is in the dtype's op-math type (float for
// half types), as in the composed formulas. Each step is a simple loop with at most one
// math::sigmoid/tanh (vectorised in float), so that every loop vectorises.
#include "ops/rnn_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/math.h"
#include "ops/reduce.h"
#include "runtime/parallel.h"

namespace ember {
namespace {

// The checks ATen's fused cells make, with the op's name and the shapes in the message.
void check_cell(const char* op, const Tensor& ig, const Tensor& hg, const Tensor& state,
                const char* state_name, int64_t gates, const Tensor& ib, const Tensor& hb) {
  EMBER_CHECK(ig->dim() == 2 && hg->dim() == 2 && state->dim() == 2, std::runtime_error, op,
              ": expected 2-D input_gates, hidden_gates and ", state_name, ", got ",
              shape_str(ig->sizes), ", ", shape_str(hg->sizes), " and ", shape_str(state->sizes));
  const int64_t n = state->sizes[0], h = state->sizes[1];
  EMBER_CHECK(ig->sizes == Shape({n, gates * h}) && hg->sizes == ig->sizes, std::runtime_error, op,
              ": expected input_gates and hidden_gates of size [", n, ", ", gates * h, "] for ",
              state_name, " of size ", shape_str(state->sizes), ", got ", shape_str(ig->sizes), " and ",
              shape_str(hg->sizes));
  EMBER_CHECK(ig->dtype == hg->dtype && ig->dtype == state->dtype, std::runtime_error, op,
              ": expected input_gates, hidden_gates and ", state_name, " of one dtype, got ",
              torch_type_name(ig->dtype), ", ", torch_type_name(hg->dtype), " and ",
              torch_type_name(state->dtype));
  EMBER_CHECK(is_floating(ig->dtype), NotImplementedError, "\"", op, "\" not implemented for '",
              torch_type_name(ig->dtype), "'");
  EMBER_CHECK(!ib == !hb, std::runtime_error, op, ": give both biases or neither");
  for (const Tensor& b : {ib, hb})
    EMBER_CHECK(!b || (b->sizes == Shape({gates * h}) && b->dtype == ig->dtype), std::runtime_error, op,
                ": expected biases of size [", gates * h, "] and dtype ", torch_type_name(ig->dtype),
                ", got ", shape_str(b->sizes), " ", torch_type_name(b->dtype));
}

template <typename T> const T* data_or_null(const Tensor& t) { return t ? t->data_as<T>() : nullptr; }

Tensor contiguous_or_null(const Tensor& t) { return t ? contiguous(t) : nullptr; }

// Rows per parallel chunk: about 16K gate values each.
int64_t row_grain(int64_t width) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1)); }

}  // namespace

std::tuple<Tensor, Tensor, Tensor> fused_lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                                   const Tensor& cx, const Tensor& input_bias,
                                                   const Tensor& hidden_bias) {
  const char* op = "_thnn_fused_lstm_cell";
  check_cell(op, input_gates, hidden_gates, cx, "cx", 4, input_bias, hidden_bias);
  Tensor ig = contiguous(input_gates), hg = contiguous(hidden_gates), c0 = contiguous(cx);
  Tensor ib = contiguous_or_null(input_bias), hb = contiguous_or_null(hidden_bias);
  const int64_t N = cx->sizes[0], H = cx->sizes[1];
  Tensor hy = empty({N, H}, cx->dtype), cy = empty({N, H}, cx->dtype), ws = empty({N, 4 * H}, cx->dtype);
  dispatch_floating(cx->dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T *pi = ig->data_as<T>(), *ph = hg->data_as<T>(), *pc = c0->data_as<T>();
    const T *pib = data_or_null<T>(ib), *phb = data_or_null<T>(hb);
    T *phy = hy->data_as<T>(), *pcy = cy->data_as<T>(), *pw = ws->data_as<T>();
    parallel_for(0, N, row_grain(4 * H), [&](int64_t r0, int64_t r1) {
      std::vector<A> buf(4 * H);
      A* __restrict__ act = buf.data();  // the row's gates: pre-activations, then activations
      for (int64_t r = r0; r < r1; ++r) {
        const T *gi = pi + r * 4 * H, *gh = ph + r * 4 * H;
        const T* __restrict__ c0r = pc + r * H;
        T* __restrict__ w = pw + r * 4 * H;
        T* __restrict__ hyr = phy + r * H;
        T* __restrict__ cyr = pcy + r * H;
        // One simple loop per step, each with at most one exp, so that every loop vectorises.
        if (pib)
          for (int64_t q = 0; q < 4 * H; ++q) act[q] = A(gi[q]) + A(gh[q]) + A(pib[q]) + A(phb[q]);
        else
          for (int64_t q = 0; q < 4 * H; ++q) act[q] = A(gi[q]) + A(gh[q]);
        for (int64_t q = 0; q < 2 * H; ++q) act[q] = math::sigmoid(act[q]);  // i, f
        for (int64_t q = 2 * H; q < 3 * H; ++q) act[q] = math::tanh(act[q]);  // g
        for (int64_t q = 3 * H; q < 4 * H; ++q) act[q] = math::sigmoid(act[q]);  // o
        for (int64_t j = 0; j < H; ++j) cyr[j] = static_cast<T>(act[H + j] * A(c0r[j]) + act[j] * act[2 * H + j]);
        for (int64_t j = 0; j < H; ++j) hyr[j] = static_cast<T>(act[3 * H + j] * math::tanh(A(cyr[j])));
        for (int64_t q = 0; q < 4 * H; ++q) w[q] = static_cast<T>(act[q]);
      }
    });
  });
  return {hy, cy, ws};
}

std::tuple<Tensor, Tensor, Tensor> fused_lstm_cell_backward(const Tensor& grad_hy, const Tensor& grad_cy,
                                                            const Tensor& cx, const Tensor& cy,
                                                            const Tensor& workspace, bool has_bias) {
  const char* op = "_thnn_fused_lstm_cell_backward";
  EMBER_CHECK(cx->dim() == 2 && cy->sizes == cx->sizes, std::runtime_error, op,
              ": expected cx and cy of one 2-D size, got ", shape_str(cx->sizes), " and ", shape_str(cy->sizes));
  const int64_t N = cx->sizes[0], H = cx->sizes[1];
  EMBER_CHECK(workspace->sizes == Shape({N, 4 * H}), std::runtime_error, op, ": expected workspace of size [",
              N, ", ", 4 * H, "], got ", shape_str(workspace->sizes));
  for (const Tensor& g : {grad_hy, grad_cy})
    EMBER_CHECK(!g || g->sizes == cx->sizes, std::runtime_error, op, ": expected gradients of size ",
                shape_str(cx->sizes), ", got ", shape_str(g->sizes));
  EMBER_CHECK(cy->dtype == cx->dtype && workspace->dtype == cx->dtype && (!grad_hy || grad_hy->dtype == cx->dtype) &&
                  (!grad_cy || grad_cy->dtype == cx->dtype),
              std::runtime_error, op, ": expected every tensor in dtype ", torch_type_name(cx->dtype));
  Tensor ghy = contiguous_or_null(grad_hy), gcy = contiguous_or_null(grad_cy);
  Tensor c0 = contiguous(cx), c1 = contiguous(cy), ws = contiguous(workspace);
  Tensor gates = empty({N, 4 * H}, cx->dtype), gcx = empty({N, H}, cx->dtype);
  dispatch_floating(cx->dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T *pghy = data_or_null<T>(ghy), *pgcy = data_or_null<T>(gcy);
    const T *pc0 = c0->data_as<T>(), *pc1 = c1->data_as<T>(), *pw = ws->data_as<T>();
    T *pg = gates->data_as<T>(), *pgcx = gcx->data_as<T>();
    parallel_for(0, N, row_grain(4 * H), [&](int64_t r0, int64_t r1) {
      std::vector<A> dh_buf(H), tc_buf(H);
      A* __restrict__ dhv = dh_buf.data();
      A* __restrict__ tcv = tc_buf.data();
      for (int64_t r = r0; r < r1; ++r) {
        const T* __restrict__ w = pw + r * 4 * H;
        const T* __restrict__ c0r = pc0 + r * H;
        T* __restrict__ g = pg + r * 4 * H;
        T* __restrict__ gcxr = pgcx + r * H;
        // the missing-gradient branches and the tanh in loops of their own, so all vectorise
        for (int64_t j = 0; j < H; ++j) tcv[j] = math::tanh(A(pc1[r * H + j]));
        for (int64_t j = 0; j < H; ++j) dhv[j] = pghy ? A(pghy[r * H + j]) : A(0);
        for (int64_t j = 0; j < H; ++j) {
          const A o = A(w[3 * H + j]), tc = tcv[j], dh = dhv[j];
          const A dc = dh * o * (A(1) - tc * tc);
          tcv[j] = dc;  // reused: dc without grad_cy
          g[3 * H + j] = static_cast<T>(dh * tc * o * (A(1) - o));
        }
        if (pgcy)
          for (int64_t j = 0; j < H; ++j) tcv[j] += A(pgcy[r * H + j]);
        for (int64_t j = 0; j < H; ++j) {
          const A i = A(w[j]), f = A(w[H + j]), gg = A(w[2 * H + j]), dc = tcv[j];
          g[j] = static_cast<T>(dc * gg * i * (A(1) - i));
          g[H + j] = static_cast<T>(dc * A(c0r[j]) * f * (A(1) - f));
          g[2 * H + j] = static_cast<T>(dc * i * (A(1) - gg * gg));
          gcxr[j] = static_cast<T>(dc * f);
        }
      }
    });
  });
  Tensor gb = has_bias ? sum(gates, std::vector<int64_t>{0}, false) : nullptr;
  return {gates, gcx, gb};
}

std::tuple<Tensor, Tensor> fused_gru_cell(const Tensor& input_gates, const Tensor& hidden_gates,
                                          const Tensor& hx, const Tensor& input_bias,
                                          const Tensor& hidden_bias) {
  const char* op = "_thnn_fused_gru_cell";
  check_cell(op, input_gates, hidden_gates, hx, "hx", 3, input_bias, hidden_bias);
  Tensor ig = contiguous(input_gates), hg = contiguous(hidden_gates), h0 = contiguous(hx);
  Tensor ib = contiguous_or_null(input_bias), hb = contiguous_or_null(hidden_bias);
  const int64_t N = hx->sizes[0], H = hx->sizes[1];
  Tensor hy = empty({N, H}, hx->dtype), ws = empty({N, 5 * H}, hx->dtype);
  dispatch_floating(hx->dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T *pi = ig->data_as<T>(), *ph = hg->data_as<T>(), *ph0 = h0->data_as<T>();
    const T *pib = data_or_null<T>(ib), *phb = data_or_null<T>(hb);
    T *phy = hy->data_as<T>(), *pw = ws->data_as<T>();
    parallel_for(0, N, row_grain(3 * H), [&](int64_t r0, int64_t r1) {
      std::vector<A> in_buf(3 * H), hid_buf(3 * H);
      A* __restrict__ in = in_buf.data();
      A* __restrict__ hid = hid_buf.data();
      for (int64_t r = r0; r < r1; ++r) {
        const T *gi = pi + r * 3 * H, *gh = ph + r * 3 * H;
        const T* __restrict__ h0r = ph0 + r * H;
        T* __restrict__ w = pw + r * 5 * H;
        T* __restrict__ hyr = phy + r * H;
        // one simple loop per step (at most one exp each), so that every loop vectorises
        for (int64_t q = 0; q < 3 * H; ++q) in[q] = A(gi[q]) + (pib ? A(pib[q]) : A(0));
        for (int64_t q = 0; q < 3 * H; ++q) hid[q] = A(gh[q]) + (phb ? A(phb[q]) : A(0));
        for (int64_t q = 0; q < 2 * H; ++q) in[q] = math::sigmoid(in[q] + hid[q]);  // r, z
        for (int64_t j = 0; j < H; ++j) in[2 * H + j] = math::tanh(in[2 * H + j] + in[j] * hid[2 * H + j]);
        for (int64_t j = 0; j < H; ++j) {
          const A z = in[H + j], n = in[2 * H + j], h = A(h0r[j]);
          hyr[j] = static_cast<T>((A(1) - z) * n + z * h);
          w[j] = static_cast<T>(in[j]);
          w[H + j] = static_cast<T>(z);
          w[2 * H + j] = static_cast<T>(n);
          w[3 * H + j] = static_cast<T>(hid[2 * H + j]);
          w[4 * H + j] = static_cast<T>(h);
        }
      }
    });
  });
  return {hy, ws};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> fused_gru_cell_backward(const Tensor& grad_hy,
                                                                           const Tensor& workspace,
                                                                           bool has_bias) {
  const char* op = "_thnn_fused_gru_cell_backward";
  EMBER_CHECK(grad_hy->dim() == 2, std::runtime_error, op, ": expected a 2-D grad_hy, got ",
              shape_str(grad_hy->sizes));
  const int64_t N = grad_hy->sizes[0], H = grad_hy->sizes[1];
  EMBER_CHECK(workspace->sizes == Shape({N, 5 * H}) && workspace->dtype == grad_hy->dtype, std::runtime_error,
              op, ": expected workspace of size [", N, ", ", 5 * H, "] and dtype ",
              torch_type_name(grad_hy->dtype), ", got ", shape_str(workspace->sizes), " ",
              torch_type_name(workspace->dtype));
  Tensor ghy = contiguous(grad_hy), ws = contiguous(workspace);
  const ScalarType dt = grad_hy->dtype;
  Tensor gi = empty({N, 3 * H}, dt), gh = empty({N, 3 * H}, dt), ghx = empty({N, H}, dt);
  dispatch_floating(dt, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T *pg = ghy->data_as<T>(), *pw = ws->data_as<T>();
    T *pgi = gi->data_as<T>(), *pgh = gh->data_as<T>(), *pghx = ghx->data_as<T>();
    parallel_for(0, N, row_grain(3 * H), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* w = pw + r * 5 * H;
        T *a = pgi + r * 3 * H, *b = pgh + r * 3 * H;
        for (int64_t j = 0; j < H; ++j) {
          const A rg = A(w[j]), z = A(w[H + j]), n = A(w[2 * H + j]), hn = A(w[3 * H + j]);
          const A h = A(w[4 * H + j]), d = A(pg[r * H + j]);
          const A dn = d * (A(1) - z) * (A(1) - n * n);
          const A dz = d * (h - n) * z * (A(1) - z);
          const A dr = dn * hn * rg * (A(1) - rg);
          a[j] = b[j] = static_cast<T>(dr);
          a[H + j] = b[H + j] = static_cast<T>(dz);
          a[2 * H + j] = static_cast<T>(dn);
          b[2 * H + j] = static_cast<T>(dn * rg);
          pghx[r * H + j] = static_cast<T>(d * z);
        }
      }
    });
  });
  Tensor gib, ghb;
  if (has_bias) {
    gib = sum(gi, std::vector<int64_t>{0}, false);
    ghb = sum(gh, std::vector<int64_t>{0}, false);
  }
  return {gi, gh, ghx, gib, ghb};
}

}  // namespace ember
