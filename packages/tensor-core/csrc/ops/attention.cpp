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

}  // namespace

std::pair<Tensor, Tensor> scaled_dot_product_attention_cpu(const Tensor& query, const Tensor& key,
                                                           const Tensor& value, double dropout_p,
                                                           bool is_causal, const Tensor& attn_mask,
                                                           std::optional<double> scale) {
  const char* op = "_scaled_dot_product_flash_attention_for_cpu";
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
  const Shape lead(query->sizes.begin(), query->sizes.end() - 2);
  const int64_t L = query->sizes[nd - 2], E = query->sizes[nd - 1];
  const int64_t S = key->sizes[nd - 2], Ev = value->sizes[nd - 1];
  EMBER_CHECK(Shape(key->sizes.begin(), key->sizes.end() - 2) == lead &&
                  Shape(value->sizes.begin(), value->sizes.end() - 2) == lead &&
                  key->sizes[nd - 1] == E && value->sizes[nd - 2] == S,
              std::runtime_error, op, ": incompatible sizes query ", shape_str(query->sizes),
              ", key ", shape_str(key->sizes), ", value ", shape_str(value->sizes),
              " (expected (..., L, E), (..., S, E), (..., S, Ev) with the same leading sizes)");
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(E));

  // The output in the query's layout, as ATen's: heads side by side in memory ((B, L, H, Ev) seen
  // as (B, H, L, Ev)) when the query's are (heads split from one projection), so that the usual
  // out.transpose(1, 2).reshape(B, L, H * Ev) is a view.
  Tensor out;
  if (nd == 4 && query->strides[1] < query->strides[2]) {
    out = transpose(empty({lead[0], L, lead[1], Ev}, dt), 1, 2);
  } else {
    Shape s = lead;
    s.push_back(L);
    s.push_back(Ev);
    out = empty(s, dt);
  }
  Shape lse_shape = lead;
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
        blas::gemm(false, true, L, S, E, static_cast<T>(sc), qd + qo[i], ldq, kd + ko[i], ldk,
                   T(0), scores.data(), S);
        cpu_kernels().attention_softmax_rows(dt, scores.data(), L, S, is_causal, lse_i);
        blas::gemm(false, false, L, Ev, S, T(1), scores.data(), S, vd + vo[i], ldv, T(0), o, ldo);
      }
    });
  };
  if (dt == ScalarType::Float32) run(float{});
  else run(double{});
  return {out, lse};
}

}  // namespace ember
