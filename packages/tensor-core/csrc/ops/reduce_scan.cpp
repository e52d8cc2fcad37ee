// reduce_scan.cpp: cumsum/cumprod, the fused softmax/log_softmax kernels and logsumexp.
//
// Scans and softmax view the (contiguous) input as [outer, D, inner] around the dim. When
// inner == 1 (the last dim) each row is processed on its own (softmax: max, then exp(x - max)
// written and summed in one pass, then a scale); otherwise a tile of the inner dim is processed
// for all D at once, vectorised along the inner dim. logsumexp reduces rows of a copy with the
// reduced dims last, with the same max / exp-sum row kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/cpu_kernels.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "runtime/gil.h"

namespace ember {

namespace {

struct Layout {
  int64_t outer = 1, D = 1, inner = 1;
};

Layout layout_around(const Tensor& x, int64_t d) {
  Layout l;
  if (x->dim() == 0) return l;
  for (int64_t i = 0; i < d; ++i) l.outer *= x->sizes[i];
  l.D = x->sizes[d];
  for (int64_t i = d + 1; i < x->dim(); ++i) l.inner *= x->sizes[i];
  return l;
}

constexpr int64_t kTile = 512;

// ---- scans ----

template <typename T, bool Prod> void scan_kernel(const T* in, T* out, const Layout& l) {
  using A = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, opmath_t<T>, int64_t>;
  const A init = Prod ? A(1) : A(0);
  if (l.inner == 1) {
    parallel_for(0, l.outer, grain_for(l.D),
                 [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* src = in + o * l.D;
        T* dst = out + o * l.D;
        A acc = init;
        for (int64_t k = 0; k < l.D; ++k) {
          if constexpr (Prod) acc = acc * static_cast<A>(src[k]);
          else acc = acc + static_cast<A>(src[k]);
          dst[k] = cast_to<T>(acc);
        }
      }
    });
    return;
  }
  const int64_t ntiles = (l.inner + kTile - 1) / kTile;
  const int64_t work = l.D * std::min(l.inner, kTile);
  parallel_for(0, l.outer * ntiles, grain_for(work),
               [&](int64_t b, int64_t e) {
    A acc[kTile];
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / ntiles, j0 = (t % ntiles) * kTile, n = std::min(kTile, l.inner - j0);
      for (int64_t j = 0; j < n; ++j) acc[j] = init;
      for (int64_t k = 0; k < l.D; ++k) {
        const T* __restrict__ src = in + (o * l.D + k) * l.inner + j0;
        T* __restrict__ dst = out + (o * l.D + k) * l.inner + j0;
        for (int64_t j = 0; j < n; ++j) {
          if constexpr (Prod) acc[j] = acc[j] * static_cast<A>(src[j]);
          else acc[j] = acc[j] + static_cast<A>(src[j]);
          dst[j] = cast_to<T>(acc[j]);
        }
      }
    }
  });
}

Tensor scan(const char* name, const Tensor& x, int64_t dim, ScalarType dtype, bool is_prod) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, name);
  const int64_t d = wrap_dim(dim, x->dim());
  ScalarType out_dt = dtype != ScalarType::Undefined ? dtype
                      : is_integral(x->dtype, true) ? ScalarType::Int64 : x->dtype;
  EMBER_CHECK(out_dt != ScalarType::Bool, NotImplementedError, "\"", name,
              "_out_cpu\" not implemented for 'Bool'");
  // a 0-d input is its own scan (the parts' view below would scan the (real, imag) pair)
  if (x->dim() == 0) return contiguous_copy(to_dtype(x, out_dt));
  if (is_complex(out_dt) && !is_prod) {  // a running sum adds the parts separately
    Tensor parts = view_as_real(contiguous_copy(to_dtype(x, out_dt)));
    return view_as_complex(scan(name, parts, d, to_real_type(out_dt), false));
  }
  Tensor in = contiguous_copy(to_dtype(x, out_dt));
  Tensor out = empty(x->sizes, out_dt, x->device());
  if (x->numel() == 0) return out;
  const Layout l = layout_around(x, d);
  if (is_complex(out_dt)) {  // a running product, as torch's: in complex128, c10::complex's *
    auto run = [&](auto tag) {
      using C = typename decltype(tag)::type;
      const C* src = in->data_as<C>();
      C* dst = out->data_as<C>();
      parallel_for(0, l.outer * l.inner, grain_for(l.D), [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const int64_t o = t / l.inner, j = t % l.inner;
          double re = 1, im = 0;
          for (int64_t k = 0; k < l.D; ++k) {
            const int64_t at = (o * l.D + k) * l.inner + j;
            const double vr = src[at].real(), vi = src[at].imag();
            const double r2 = re * vr - im * vi;
            im = re * vi + im * vr;
            re = r2;
            dst[at] = C(static_cast<typename C::value_type>(re), static_cast<typename C::value_type>(im));
          }
        }
      });
    };
    if (out_dt == ScalarType::Complex64) run(TypeTag<std::complex<float>>{});
    else run(TypeTag<std::complex<double>>{});
    return out;
  }
  dispatch_all(out_dt, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_prod) scan_kernel<T, true>(in->data_as<T>(), out->data_as<T>(), l);
    else scan_kernel<T, false>(in->data_as<T>(), out->data_as<T>(), l);
  });
  return out;
}

// ---- softmax (the row kernels, per CPU capability, are in ops/cpu/softmax.cpp) ----

Tensor softmax_impl(const Tensor& x, int64_t dim, ScalarType dtype, bool log) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, log ? "log_softmax" : "softmax");
  const int64_t d = wrap_dim(dim, x->dim());
  Tensor in = dtype != ScalarType::Undefined ? to_dtype(x, dtype) : x;
  const bool lastdim = x->dim() == 0 || d == x->dim() - 1;
  if (x->numel() == 0) return empty(x->sizes, in->dtype, x->device());
  if (!is_floating(in->dtype))
    throw NotImplementedError(str_cat("\"", log ? "log_softmax" : "softmax",
                                      lastdim ? "_lastdim_kernel_impl" : "_kernel_impl",
                                      "\" not implemented for '", torch_type_name(in->dtype), "'"));
  const ScalarType out_dt = in->dtype;
  if (is_reduced_float(out_dt)) in = to_dtype(in, ScalarType::Float32);  // computed in float
  in = contiguous(in);  // no copy when it already is
  Tensor out = empty(x->sizes, in->dtype, x->device());
  if (x->numel() != 0) {
    const Layout l = layout_around(x, d);
    cpu_kernels().softmax(in, out, l.outer, l.D, l.inner, log);
  }
  return to_dtype(out, out_dt);
}

}  // namespace

Tensor logsumexp(const Tensor& x, const OptDims& dim, bool keepdim) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, "logsumexp");
  auto mask = reduction_mask(x, dim);
  if (is_complex(x->dtype)) {
    // torch's: shifted by each set's largest real part (an infinite one by 0), so that the
    // exponentials cannot overflow; the phases ride along in the complex exp and log.
    if (x->numel() == 0) return unary(UnaryOp::log, sum(unary(UnaryOp::exp, x), dim, keepdim));
    Tensor m = amax(select(view_as_real(x), -1, 0), dim, true);
    m = where(unary(UnaryOp::isinf, m), Scalar::from_double(0), m);
    Tensor r = unary(UnaryOp::log, sum(unary(UnaryOp::exp, binary(BinaryOp::sub, x, m)), dim,
                                       keepdim));
    return binary(BinaryOp::add, r, reshape(m, r->sizes));
  }
  const ScalarType out_dt = is_floating(x->dtype) ? x->dtype : get_default_dtype();
  const ScalarType dt = is_reduced_float(out_dt) ? ScalarType::Float32 : out_dt;
  const Shape shape = reduced_shape(x, mask, keepdim);
  Tensor r = empty(shape, dt, x->device());
  const int64_t R = reduced_numel(x, mask), N = r->numel();
  if (R == 0) {
    fill_(r, Scalar::from_double(-std::numeric_limits<double>::infinity()));
  } else if (N != 0) {
    // Rows of the reduced elements: kept dims first, reduced dims last, contiguous.
    Shape perm;
    for (int64_t d = 0; d < x->dim(); ++d)
      if (!mask[d]) perm.push_back(d);
    for (int64_t d = 0; d < x->dim(); ++d)
      if (mask[d]) perm.push_back(d);
    Tensor rows = contiguous_copy(to_dtype(permute(x, perm), dt));
    cpu_kernels().logsumexp_rows(rows, r, N, R);
  }
  return to_dtype(r, out_dt);
}

Tensor softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                             ScalarType input_dtype, bool log) {
  GilRelease nogil(grad_output->numel() > kGrainSize);
  const char* op = log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  require_cpu(output, op);
  EMBER_CHECK(grad_output->sizes == output->sizes, std::runtime_error, op,
              ": expected grad_output and output of one size, got ", shape_str(grad_output->sizes),
              " and ", shape_str(output->sizes));
  EMBER_CHECK(is_floating(output->dtype) && grad_output->dtype == output->dtype, std::runtime_error,
              op, ": expected floating grad_output and output of one dtype, got ",
              torch_type_name(grad_output->dtype), " and ", torch_type_name(output->dtype));
  const int64_t d = wrap_dim(dim, output->dim());
  const ScalarType dt = is_reduced_float(output->dtype) ? ScalarType::Float32 : output->dtype;
  Tensor go = contiguous(to_dtype(grad_output, dt)), y = contiguous(to_dtype(output, dt));
  Tensor gi = empty(output->sizes, dt, output->device());
  if (gi->numel() != 0) {
    const Layout l = layout_around(output, d);
    cpu_kernels().softmax_backward(go, y, gi, l.outer, l.D, l.inner, log);
  }
  return to_dtype(gi, input_dtype == ScalarType::Undefined ? output->dtype : input_dtype);
}

Tensor cumsum(const Tensor& x, int64_t dim, ScalarType dtype) { return scan("cumsum", x, dim, dtype, false); }
Tensor cumprod(const Tensor& x, int64_t dim, ScalarType dtype) { return scan("cumprod", x, dim, dtype, true); }
Tensor softmax(const Tensor& x, int64_t dim, ScalarType dtype) { return softmax_impl(x, dim, dtype, false); }
Tensor log_softmax(const Tensor& x, int64_t dim, ScalarType dtype) { return softmax_impl(x, dim, dtype, true); }

}  // namespace ember
