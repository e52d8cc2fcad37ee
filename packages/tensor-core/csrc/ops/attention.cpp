// attention.cpp: scaled dot-product attention on the CPU as one kernel per (batch, head)
// matrix (ATen's _scaled_dot_product_flash_attention_for_cpu). The composed form (matmul, scale,
// mask, softmax, matmul) makes five passes over the L x S scores and a copy of the output to
// bring its heads together; here each matrix's scores live in a per-thread buffer: one product
// with the scale folded in, one softmax pass that applies the causal mask and records the
// logsumexp (the backward recomputes the weights from it), one product written straight into
// the output. q/k/v are read through their row strides, so the heads split from a fused qkv
// projection are not copied.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu_kernels.h"
#include "ops/nn_kernels.h"
#include "runtime/blas.h"
#include "runtime/gil.h"
#include "runtime/parallel.h"

namespace ember {
namespace {

// Element offsets of each matrix of t (its dims before the last two, in row-major order).
std::vector<int64_t> matrix_offsets(const Tensor& t) {
  const int64_t lead = t->dim() - 2;
  int64_t n = 1;
  for (int64_t d = 0; d < lead; ++d) n *= t->sizes[d];
  std::vector<int64_t> offsets(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, off = 0;
    for (int64_t d = lead - 1; d >= 0; --d) {
      off += rest % t->sizes[d] * t->strides[d];
      rest /= t->sizes[d];
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  return offsets;
}

// rows contiguous within a row (the products read rows through their stride)
Tensor unit_last_stride(const Tensor& t) { return t->strides.back() == 1 ? t : contiguous(t); }


// What both directions check and share: the sizes (..., L, E), (..., S, E), (..., S, Ev) and
// the scale.
struct AttentionDims {
  Shape lead;
  int64_t L, E, S, Ev;
  double scale;
};

AttentionDims check_attention(const char* op, const Tensor& query, const Tensor& key,
                              const Tensor& value, double dropout_p, const Tensor& attn_mask,
                              std::optional<double> scale) {
  EMBER_CHECK(!attn_mask, NotImplementedError, op,
              ": attn_mask is not supported by this kernel (scaled_dot_product_attention takes "
              "the composed path for it)");
  EMBER_CHECK(dropout_p == 0.0, NotImplementedError, op,
              ": dropout_p > 0 is not supported by this kernel (got ", dropout_p, ")");
  const ScalarType dt = query->dtype;
  EMBER_CHECK(dt == ScalarType::Float32 || dt == ScalarType::Float64, NotImplementedError, "\"", op,
              "\" not implemented for '", torch_type_name(dt), "'");
  EMBER_CHECK(key->dtype == dt && value->dtype == dt, std::runtime_error, op,
              ": expected query, key and value of one dtype, but got ", torch_type_name(dt), ", ",
              torch_type_name(key->dtype), " and ", torch_type_name(value->dtype));
  for (const Tensor* t : {&query, &key, &value})
    EMBER_CHECK((*t)->device().is_cpu(), std::runtime_error, op, ": expected CPU tensors, but got ",
                (*t)->device().str());
  const int64_t nd = query->dim();
  EMBER_CHECK(nd >= 2 && key->dim() == nd && value->dim() == nd, std::runtime_error, op,
              ": expected query, key and value with the same number of dims (at least 2), but got "
              "sizes ", shape_str(query->sizes), ", ", shape_str(key->sizes), " and ",
              shape_str(value->sizes));
  AttentionDims d;
  d.lead = Shape(query->sizes.begin(), query->sizes.end() - 2);
  d.L = query->sizes[nd - 2];
  d.E = query->sizes[nd - 1];
  d.S = key->sizes[nd - 2];
  d.Ev = value->sizes[nd - 1];
  EMBER_CHECK(Shape(key->sizes.begin(), key->sizes.end() - 2) == d.lead &&
                  Shape(value->sizes.begin(), value->sizes.end() - 2) == d.lead &&
                  key->sizes[nd - 1] == d.E && value->sizes[nd - 2] == d.S,
              std::runtime_error, op, ": incompatible sizes query ", shape_str(query->sizes),
              ", key ", shape_str(key->sizes), ", value ", shape_str(value->sizes),
              " (expected (..., L, E), (..., S, E), (..., S, Ev) with the same leading sizes)");
  d.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(d.E));
  return d;
}

// A new (lead..., rows, cols) tensor laid out as `like`, as ATen's kernels lay out their outputs:
// heads side by side in memory ((B, rows, H, cols) seen as (B, H, rows, cols)) when like's are
// (heads split from one projection), so that the usual x.transpose(1, 2).reshape(B, rows, H *
// cols) is a view; row-major otherwise.
Tensor empty_like_heads(const Tensor& like, const Shape& lead, int64_t rows, int64_t cols,
                        ScalarType dt) {
  if (like->dim() == 4 && like->strides[1] < like->strides[2])
    return transpose(empty({lead[0], rows, lead[1], cols}, dt), 1, 2);
  Shape s = lead;
  s.push_back(rows);
  s.push_back(cols);
  return empty(s, dt);
}

void check_same(const char* op, const char* what, const Tensor& t, const Shape& expected,
                ScalarType dt) {
  EMBER_CHECK(t->sizes == expected, std::runtime_error, op, ": expected ", what, " of size ",
              shape_str(expected), ", but got ", shape_str(t->sizes));
  EMBER_CHECK(t->dtype == dt && t->device().is_cpu(), std::runtime_error, op, ": expected ", what,
              " of dtype ", torch_type_name(dt), " on the CPU, but got ", torch_type_name(t->dtype),
              " on ", t->device().str());
}

// With a causal mask, row r sees the keys up to r only: the rows go in blocks of kCausalRows,
// each block's products over the keys its last row sees (a quarter less work at 64 x 64, towards
// half as L grows; the masked scores are never read, the softmax writes their zeros). f(r0, r1,
// keys) for each block; one block of every key without a mask.
constexpr int64_t kCausalRows = 32;
template <typename F> void for_row_blocks(int64_t L, int64_t S, bool causal, const F& f) {
  if (!causal) return f(int64_t{0}, L, S);
  for (int64_t r0 = 0; r0 < L; r0 += kCausalRows) {
    const int64_t r1 = std::min(L, r0 + kCausalRows);
    f(r0, r1, std::min(S, r1));
  }
}

}  // namespace

std::pair<Tensor, Tensor> scaled_dot_product_attention_cpu(const Tensor& query, const Tensor& key,
                                                           const Tensor& value, double dropout_p,
                                                           bool is_causal, const Tensor& attn_mask,
                                                           std::optional<double> scale) {
  const char* op = "_scaled_dot_product_flash_attention_for_cpu";
  const AttentionDims d = check_attention(op, query, key, value, dropout_p, attn_mask, scale);
  const ScalarType dt = query->dtype;
  const int64_t nd = query->dim(), L = d.L, E = d.E, S = d.S, Ev = d.Ev;
  const double sc = d.scale;
  Tensor out = empty_like_heads(query, d.lead, L, Ev, dt);
  Shape lse_shape = d.lead;
  lse_shape.push_back(L);
  Tensor lse = empty(lse_shape, dt);
  if (out->numel() == 0 && lse->numel() == 0) return {out, lse};

  const Tensor q = unit_last_stride(query), k = unit_last_stride(key), v = unit_last_stride(value);
  const std::vector<int64_t> qo = matrix_offsets(q), ko = matrix_offsets(k), vo = matrix_offsets(v),
                             oo = matrix_offsets(out);
  const int64_t n = static_cast<int64_t>(qo.size());
  const int64_t ldq = q->strides[nd - 2], ldk = k->strides[nd - 2], ldv = v->strides[nd - 2];
  const int64_t ldo = out->strides[nd - 2];
  GilRelease nogil(n * L * S > 4096);
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const T* qd = q->data_as<T>();
    const T* kd = k->data_as<T>();
    const T* vd = v->data_as<T>();
    T* od = out->data_as<T>();
    T* ld = lse->data_as<T>();
    parallel_for(0, n, grain_for(L * (S + E + Ev)), [&](int64_t b, int64_t e) {
      std::vector<T> scores(static_cast<size_t>(L * S));
      for (int64_t i = b; i < e; ++i) {
        T* o = od + oo[i];
        T* lse_i = ld + i * L;
        if (S == 0) {  // no keys: the weights are empty, the output is 0 (the composed result)
          for (int64_t r = 0; r < L; ++r) {
            for (int64_t c = 0; c < Ev; ++c) o[r * ldo + c] = T(0);
            lse_i[r] = -std::numeric_limits<T>::infinity();
          }
          continue;
        }
        T* sd = scores.data();
        for_row_blocks(L, S, is_causal, [&](int64_t r0, int64_t r1, int64_t keys) {
          blas::gemm(false, true, r1 - r0, keys, E, static_cast<T>(sc), qd + qo[i] + r0 * ldq,
                     ldq, kd + ko[i], ldk, T(0), sd + r0 * S, S);
        });
        cpu_kernels().attention_softmax_rows(dt, sd, L, S, is_causal, lse_i);
        for_row_blocks(L, S, is_causal, [&](int64_t r0, int64_t r1, int64_t keys) {
          blas::gemm(false, false, r1 - r0, Ev, keys, T(1), sd + r0 * S, S, vd + vo[i], ldv, T(0),
                     o + r0 * ldo, ldo);
        });
      }
    });
  };
  if (dt == ScalarType::Float32) run(float{});
  else run(double{});
  return {out, lse};
}

// The backward, one (batch, head) matrix at a time as the forward: the weights recomputed from
// the saved logsumexp, P = exp(q k^T scale - lse); dV = P^T g; dS = P * (g v^T - rowsum(g * o))
// * scale; dQ = dS k; dK = dS^T q. The two L x S matrices stay in a per-thread buffer, so the
// composed form's six passes over them (and its batched products' temporaries) are one.
std::tuple<Tensor, Tensor, Tensor> scaled_dot_product_attention_cpu_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value,
    const Tensor& out, const Tensor& logsumexp, double dropout_p, bool is_causal,
    const Tensor& attn_mask, std::optional<double> scale) {
  const char* op = "_scaled_dot_product_flash_attention_for_cpu_backward";
  const AttentionDims d = check_attention(op, query, key, value, dropout_p, attn_mask, scale);
  const ScalarType dt = query->dtype;
  const int64_t nd = query->dim(), L = d.L, E = d.E, S = d.S, Ev = d.Ev;
  Shape out_shape = d.lead;
  out_shape.push_back(L);
  Shape lse_shape = out_shape;
  out_shape.push_back(Ev);
  check_same(op, "grad_out", grad_out, out_shape, dt);
  check_same(op, "out", out, out_shape, dt);
  check_same(op, "logsumexp", logsumexp, lse_shape, dt);
  Tensor gq = empty_like_heads(query, d.lead, L, E, dt);
  Tensor gk = empty_like_heads(key, d.lead, S, E, dt);
  Tensor gv = empty_like_heads(value, d.lead, S, Ev, dt);
  if (L == 0 || S == 0) {  // no weights: every gradient is 0
    fill_(gq, Scalar::from_int(0));
    fill_(gk, Scalar::from_int(0));
    fill_(gv, Scalar::from_int(0));
    return {gq, gk, gv};
  }

  const Tensor q = unit_last_stride(query), k = unit_last_stride(key), v = unit_last_stride(value);
  const Tensor g = unit_last_stride(grad_out), o = unit_last_stride(out);
  const Tensor lse = contiguous(logsumexp);
  const std::vector<int64_t> qo = matrix_offsets(q), ko = matrix_offsets(k), vo = matrix_offsets(v),
                             go = matrix_offsets(g), oo = matrix_offsets(o),
                             gqo = matrix_offsets(gq), gko = matrix_offsets(gk),
                             gvo = matrix_offsets(gv);
  const int64_t n = static_cast<int64_t>(qo.size());
  const int64_t ldq = q->strides[nd - 2], ldk = k->strides[nd - 2], ldv = v->strides[nd - 2];
  const int64_t ldg = g->strides[nd - 2], ldo = o->strides[nd - 2];
  const int64_t ldgq = gq->strides[nd - 2], ldgk = gk->strides[nd - 2],
                ldgv = gv->strides[nd - 2];
  GilRelease nogil(n * L * S > 4096);
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const T sc = static_cast<T>(d.scale);
    const T* qd = q->data_as<T>();
    const T* kd = k->data_as<T>();
    const T* vd = v->data_as<T>();
    const T* gd = g->data_as<T>();
    const T* od = o->data_as<T>();
    const T* ld = lse->data_as<T>();
    T* gqd = gq->data_as<T>();
    T* gkd = gk->data_as<T>();
    T* gvd = gv->data_as<T>();
    parallel_for(0, n, grain_for(L * (2 * S + E + Ev)), [&](int64_t b, int64_t e) {
      std::vector<T> buf(static_cast<size_t>(2 * L * S));
      T* p = buf.data();
      T* ds = p + L * S;
      for (int64_t i = b; i < e; ++i) {
        for_row_blocks(L, S, is_causal, [&](int64_t r0, int64_t r1, int64_t keys) {
          blas::gemm(false, true, r1 - r0, keys, E, sc, qd + qo[i] + r0 * ldq, ldq, kd + ko[i],
                     ldk, T(0), p + r0 * S, S);
          blas::gemm(false, true, r1 - r0, keys, Ev, T(1), gd + go[i] + r0 * ldg, ldg,
                     vd + vo[i], ldv, T(0), ds + r0 * S, S);
        });
        cpu_kernels().attention_backward_rows(dt, p, ds, L, S, is_causal, ld + i * L, gd + go[i],
                                              ldg, od + oo[i], ldo, Ev, d.scale);
        // dV and dK sum over the rows: by blocks, each adds to the keys its rows see
        T* gvi = gvd + gvo[i];
        T* gki = gkd + gko[i];
        if (is_causal)
          for (int64_t c = 0; c < S; ++c) {
            std::fill_n(gvi + c * ldgv, Ev, T(0));
            std::fill_n(gki + c * ldgk, E, T(0));
          }
        const T beta = is_causal ? T(1) : T(0);
        for_row_blocks(L, S, is_causal, [&](int64_t r0, int64_t r1, int64_t keys) {
          const T* pb = p + r0 * S;
          const T* dsb = ds + r0 * S;
          blas::gemm(true, false, keys, Ev, r1 - r0, T(1), pb, S, gd + go[i] + r0 * ldg, ldg,
                     beta, gvi, ldgv);
          blas::gemm(false, false, r1 - r0, E, keys, T(1), dsb, S, kd + ko[i], ldk, T(0),
                     gqd + gqo[i] + r0 * ldgq, ldgq);
          blas::gemm(true, false, keys, E, r1 - r0, T(1), dsb, S, qd + qo[i] + r0 * ldq, ldq,
                     beta, gki, ldgk);
        });
      }
    });
  };
  if (dt == ScalarType::Float32) run(float{});
  else run(double{});
  return {gq, gk, gv};
}

}  // namespace ember
