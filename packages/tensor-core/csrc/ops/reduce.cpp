// reduce.cpp: the reduction plan, and the arithmetic reductions (sum, nansum, mean, nanmean,
// prod, count_nonzero, all/any, norm, var/std). max/min and the arg-reductions live in
// reduce_minmax.cpp; scans, softmax and logsumexp in reduce_scan.cpp.
#include "ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>

#include "ops/cpu_kernels.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "runtime/gil.h"

namespace ember {

using namespace reduce_detail;

std::vector<bool> reduction_mask(const Tensor& x, const OptDims& dim) {
  const int64_t nd = x->dim();
  std::vector<bool> mask(nd, false);
  if (!dim || dim->empty()) {
    std::fill(mask.begin(), mask.end(), true);
    return mask;
  }
  std::vector<bool> seen(std::max<int64_t>(nd, 1), false);
  for (int64_t d : *dim) {
    const int64_t w = wrap_dim(d, nd);
    EMBER_CHECK(!seen[w], std::runtime_error, "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    if (nd) mask[w] = true;
  }
  return mask;
}

int64_t reduced_numel(const Tensor& x, const std::vector<bool>& mask) {
  int64_t n = 1;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) n *= x->sizes[d];
  return n;
}

Shape reduced_shape(const Tensor& x, const std::vector<bool>& mask, bool keepdim) {
  Shape s;
  for (size_t d = 0; d < mask.size(); ++d) {
    if (!mask[d]) s.push_back(x->sizes[d]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

void require_cpu(const Tensor& x, const char* op) {
  if (!x->device().is_cpu())
    throw NotImplementedError(str_cat(op, ": expected a tensor on cpu, but got one on ",
                                      x->device().str(), " (the CPU kernels cannot read it)"));
}

Tensor contiguous_copy(const Tensor& x) {
  if (x->is_contiguous()) return x;
  Tensor y = empty(x->sizes, x->dtype, x->device());
  copy_(y, x);
  return y;
}

// ---------------------------------------------------------------------------------------------
// The plan

namespace reduce_detail {

ReducePlan make_plan(const TensorImpl& x, const std::vector<bool>& mask, bool keep_order) {
  ReducePlan p;
  const int nd = static_cast<int>(x.dim());
  std::vector<int64_t> ostride(nd, 0);
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; --d)
    if (!mask[d]) ostride[d] = s, s *= x.sizes[d];
  struct Dim {
    int64_t size, in, out;
  };
  std::vector<Dim> kd, rd;
  for (int d = 0; d < nd; ++d) {
    const int64_t sz = x.sizes[d];
    if (mask[d]) {
      p.red_numel *= sz;
      if (sz != 1) rd.push_back({sz, x.strides[d], 0});
    } else {
      p.out_numel *= sz;
      if (sz != 1) kd.push_back({sz, x.strides[d], ostride[d]});
    }
  }
  // Largest stride outermost; a stride-0 (broadcast) dim counts as the largest.
  auto key = [](const Dim& a) {
    return a.in == 0 ? std::numeric_limits<int64_t>::max() : (a.in < 0 ? -a.in : a.in);
  };
  auto by_stride = [&](const Dim& a, const Dim& b) { return key(a) > key(b); };
  std::stable_sort(kd.begin(), kd.end(), by_stride);
  if (!keep_order) std::stable_sort(rd.begin(), rd.end(), by_stride);
  for (const Dim& d : kd) {
    if (!p.k_size.empty() && p.k_in.back() == d.in * d.size && p.k_out.back() == d.out * d.size) {
      p.k_size.back() *= d.size;
      p.k_in.back() = d.in;
      p.k_out.back() = d.out;
    } else {
      p.k_size.push_back(d.size);
      p.k_in.push_back(d.in);
      p.k_out.push_back(d.out);
    }
  }
  for (const Dim& d : rd) {
    if (!p.r_size.empty() && p.r_in.back() == d.in * d.size) {
      p.r_size.back() *= d.size;
      p.r_in.back() = d.in;
    } else {
      p.r_size.push_back(d.size);
      p.r_in.push_back(d.in);
    }
  }
  EMBER_CHECK(p.k_size.size() + p.r_size.size() <= kMaxDims, std::runtime_error,
              "reduction: too many dimensions");
  return p;
}

Tensor plan_input(const Tensor& x, const std::vector<bool>& mask, bool keep_order, ReducePlan& plan) {
  require_cpu(x, "reduction");
  plan = make_plan(*x, mask, keep_order);
  if (plan.inner() || plan.outer() || plan.r_size.empty() || plan.out_numel == 0 ||
      plan.red_numel == 0)
    return x;
  // Neither the reduced block nor the kept dims are contiguous: copy with the reduced dims last.
  const int64_t nd = x->dim();
  Shape perm;
  for (int64_t d = 0; d < nd; ++d)
    if (!mask[d]) perm.push_back(d);
  for (int64_t d = 0; d < nd; ++d)
    if (mask[d]) perm.push_back(d);
  const int64_t nk = nd - static_cast<int64_t>(std::count(mask.begin(), mask.end(), true));
  Tensor y = contiguous_copy(permute(x, perm));
  std::vector<bool> m2(nd, false);
  for (int64_t d = nk; d < nd; ++d) m2[d] = true;
  plan = make_plan(*y, m2, keep_order);
  return y;
}

}  // namespace reduce_detail

// ---------------------------------------------------------------------------------------------
// Additive reductions (the kernels, per CPU capability, are in ops/cpu/reduce.cpp)

namespace {

// sum / nansum / mean / prod of x (already in its compute dtype) into out_dtype, which is x's
// dtype or int64 for bool/integer x.
Tensor additive(const Tensor& x, const std::vector<bool>& mask, bool keepdim,
                ScalarType out_dtype, SumKind kind) {
  // Integer sums and products accumulate in int64 and wrap as PyTorch's do; into a narrower
  // integer dtype they are computed in int64 and narrowed once (the same bits, two's complement),
  // so the kernels have one integer output type.
  if (is_integral(out_dtype, true) && out_dtype != ScalarType::Int64)
    return to_dtype(additive(x, mask, keepdim, ScalarType::Int64, kind), out_dtype);
  // float16/bfloat16 accumulate in float32 and round once: the float32 kernels on a float32 copy
  // (the kernels have no 16-bit copies: see ops/cpu/reduce.cpp).
  if (is_reduced_float(x->dtype)) {
    const ScalarType acc = is_reduced_float(out_dtype) ? ScalarType::Float32 : out_dtype;
    // a contiguous tensor's sum/mean over every element, in float32 or its own dtype: one pass
    // that widens blocks into float lanes (the float32 copy below took two)
    const bool all = std::all_of(mask.begin(), mask.end(), [](bool m) { return m; });
    if (all && acc == ScalarType::Float32 && x->is_contiguous() && x->device().is_cpu() &&
        kind != SumKind::Prod) {
      const int64_t n = x->numel();
      double s;
      {
        GilRelease nogil(n > kGrainSize);
        s = cpu_kernels().reduced_float_sum(x->dtype, x->data(), n, kind == SumKind::NanSum);
      }
      if (kind == SumKind::Mean) s /= static_cast<double>(n);  // (0 / 0: NaN, as torch)
      Tensor r = to_dtype(scalar_tensor(Scalar::from_double(static_cast<float>(s)),
                                        ScalarType::Float32), out_dtype);
      return keepdim ? reshape(r, reduced_shape(x, mask, true)) : r;
    }
    Tensor r = additive(to_dtype(x, ScalarType::Float32), mask, keepdim, acc, kind);
    return acc == out_dtype ? r : to_dtype(r, out_dtype);
  }
  const int64_t R = reduced_numel(x, mask);
  return reduce_planned(x, mask, keepdim, out_dtype,
                        [&](const ReducePlan& plan, const Tensor& in, const Tensor& result) {
    cpu_kernels().sum(kind, plan, in, result, R);
  });
}

// sum/prod's result dtype: `dtype` if given, else int64 for bool/integers, else x's.
ScalarType sum_dtype(const Tensor& x, ScalarType dtype) {
  if (dtype != ScalarType::Undefined) return dtype;
  return is_integral(x->dtype, true) ? ScalarType::Int64 : x->dtype;
}

// Counts elements that are nonzero (or, with not_nan, that are not NaN) into int64.
Tensor count_impl(const Tensor& x, const std::vector<bool>& mask, bool keepdim, bool not_nan) {
  if (is_reduced_float(x->dtype))  // exact in float32 (zeros and NaNs stay what they were)
    return count_impl(to_dtype(x, ScalarType::Float32), mask, keepdim, not_nan);
  return reduce_planned(x, mask, keepdim, ScalarType::Int64,
                        [&](const ReducePlan& plan, const Tensor& in, const Tensor& result) {
    cpu_kernels().count(not_nan, plan, in, result);
  });
}

// sum / mean of a complex tensor (or into a complex dtype): the same reduction of its real and
// imaginary parts, since these add the parts separately.
Tensor complex_additive(const Tensor& x, std::vector<bool> mask, bool keepdim, ScalarType dtype,
                        SumKind kind, const char* op) {
  const ScalarType dt = dtype == ScalarType::Undefined ? x->dtype : dtype;
  EMBER_CHECK(is_complex(dt), std::runtime_error, op, "(): the dtype of a complex input's result "
              "must be complex, got ", type_name(dt));
  // each part reduced on its own (a strided view): one reduction over pairs with the pair dim
  // kept ran 10x slower
  const Tensor xc = to_dtype(x, dt);
  const bool all = std::all_of(mask.begin(), mask.end(), [](bool m) { return m; });
  if (all && xc->is_contiguous() && xc->device().is_cpu() &&
      (kind == SumKind::Sum || kind == SumKind::Mean)) {
    GilRelease nogil(xc->numel() > kGrainSize);
    std::complex<double> s = complex_sum_contiguous(xc);
    if (kind == SumKind::Mean) s /= static_cast<double>(xc->numel());  // (0 / 0: NaN, as torch)
    Tensor r = scalar_tensor(Scalar::from_complex(s.real(), s.imag()), dt);
    return keepdim ? reshape(r, reduced_shape(x, mask, true)) : r;
  }
  const Tensor parts = view_as_real(xc);
  const ScalarType real = to_real_type(dt);
  Tensor re = additive(select(parts, -1, 0), mask, keepdim, real, kind);
  Tensor im = additive(select(parts, -1, 1), mask, keepdim, real, kind);
  Tensor out = empty(re->sizes, dt, x->device());
  const Tensor out_parts = view_as_real(out);
  copy_(select(out_parts, -1, 0), re);
  copy_(select(out_parts, -1, 1), im);
  return out;
}

// uint16/32/64 sum into int64 as torch's do (the input taken as int64: uint64's upper half wraps,
// as torch's accumulation does); a result of one of these types is refused, as torch refuses it.
Tensor wide_unsigned_as_int64(const Tensor& x, ScalarType dtype, const char* op) {
  if (is_wide_unsigned(dtype))
    throw NotImplementedError(str_cat("\"", op, "_cpu\" not implemented for '", type_name(dtype),
                                      "'"));
  return to_dtype(x, ScalarType::Int64);
}

Tensor squeeze_to(const Tensor& t, const Tensor& x, const std::vector<bool>& mask, bool keepdim) {
  return keepdim ? t : reshape(t, reduced_shape(x, mask, false));
}

}  // namespace

Tensor sum(const Tensor& x, const OptDims& dim, bool keepdim, ScalarType dtype) {
  if (is_wide_unsigned(x->dtype) || is_wide_unsigned(dtype)) {
    (void)reduction_mask(x, dim);  // a bad dim first, as torch
    return sum(wide_unsigned_as_int64(x, dtype, "sum"), dim, keepdim, dtype);
  }
  auto mask = reduction_mask(x, dim);
  if (is_complex(x->dtype) || is_complex(dtype))
    return complex_additive(x, mask, keepdim, dtype, SumKind::Sum, "sum");
  const ScalarType out = sum_dtype(x, dtype);
  return additive(to_dtype(x, dtype == ScalarType::Undefined ? x->dtype : dtype), mask,
                  keepdim, out, SumKind::Sum);
}

Tensor nansum(const Tensor& x, const OptDims& dim, bool keepdim, ScalarType dtype) {
  if (is_wide_unsigned(x->dtype) || is_wide_unsigned(dtype)) {
    (void)reduction_mask(x, dim);  // a bad dim first, as torch
    return nansum(wide_unsigned_as_int64(x, dtype, "nansum"), dim, keepdim, dtype);
  }
  // integers hold no NaN: torch's nansum of them is sum (a complex dtype= included)
  if (is_integral(x->dtype, /*include_bool=*/true)) return sum(x, dim, keepdim, dtype);
  auto mask = reduction_mask(x, dim);
  EMBER_CHECK(!is_complex(x->dtype), std::runtime_error,
              "nansum on CPU does not support complex inputs");
  EMBER_CHECK(!is_complex(dtype), NotImplementedError, "\"nansum_cpu\" not implemented for '",
              type_name(dtype), "'");
  // a floating input summed in an integer dtype= (torch's): NaN skipped, each element converted
  if (dtype != ScalarType::Undefined && is_integral(dtype, true)) {
    Tensor zeroed = where(unary(UnaryOp::isnan, x), Operand(Scalar::from_int(0)), Operand(x));
    return sum(to_dtype(zeroed, dtype), dim, keepdim, dtype);
  }
  const ScalarType out = sum_dtype(x, dtype);
  return additive(to_dtype(x, dtype == ScalarType::Undefined ? x->dtype : dtype), mask,
                  keepdim, out, SumKind::NanSum);
}

// The product of complex values along the reduced dims: rows of a copy with the reduced dims
// last, multiplied in complex<double> (the additive kernels have no complex product).
static Tensor complex_prod(const Tensor& x, const std::vector<bool>& mask, bool keepdim,
                           ScalarType dt) {
  EMBER_CHECK(is_complex(dt), std::runtime_error,
              "prod(): the dtype of a complex input's result must be complex, got ", type_name(dt));
  Shape perm;
  for (int64_t d = 0; d < x->dim(); ++d)
    if (!mask[d]) perm.push_back(d);
  for (int64_t d = 0; d < x->dim(); ++d)
    if (mask[d]) perm.push_back(d);
  const Tensor rows = contiguous(permute(to_dtype(x, ScalarType::Complex128), perm));
  const int64_t R = reduced_numel(x, mask);
  Tensor out = empty(reduced_shape(x, mask, false), ScalarType::Complex128);
  const auto* in = rows->data_as<std::complex<double>>();
  auto* o = out->data_as<std::complex<double>>();
  for (int64_t r = 0, N = out->numel(); r < N; ++r) {
    std::complex<double> p = 1;
    for (int64_t i = 0; i < R; ++i) {
      const std::complex<double> v = in[r * R + i];
      p = {p.real() * v.real() - p.imag() * v.imag(), p.real() * v.imag() + p.imag() * v.real()};
    }
    o[r] = p;
  }
  const Tensor result = to_dtype(out, dt);
  return keepdim ? reshape(result, reduced_shape(x, mask, true)) : result;
}

Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim, ScalarType dtype) {
  if (is_wide_unsigned(x->dtype) || is_wide_unsigned(dtype)) {
    if (dim) (void)wrap_dim(*dim, x->dim(), true);  // a bad dim first, as torch
    return prod(wide_unsigned_as_int64(x, dtype, "prod"), dim, keepdim, dtype);
  }
  OptDims dims;
  if (dim) dims = std::vector<int64_t>{*dim};
  auto mask = reduction_mask(x, dims);
  if (is_complex(x->dtype) || is_complex(dtype))
    return complex_prod(x, mask, keepdim, dtype == ScalarType::Undefined ? x->dtype : dtype);
  const ScalarType out = sum_dtype(x, dtype);
  return additive(to_dtype(x, dtype == ScalarType::Undefined ? x->dtype : dtype), mask,
                  keepdim, out, SumKind::Prod);
}

void check_mean_dtype(ScalarType input, ScalarType dtype) {
  if (dtype != ScalarType::Undefined)
    EMBER_CHECK(is_floating(dtype) || is_complex(dtype), std::runtime_error,
                "mean(): could not infer output dtype. Optional dtype must be either a floating "
                "point or complex dtype. Got: ", torch_type_name(dtype));
  else
    EMBER_CHECK(is_floating(input) || is_complex(input), std::runtime_error,
                "mean(): could not infer output dtype. Input dtype must be either a floating point "
                "or complex dtype. Got: ", torch_type_name(input));
}

Tensor mean(const Tensor& x, const OptDims& dim, bool keepdim, ScalarType dtype) {
  check_mean_dtype(x->dtype, dtype);
  const ScalarType dt = dtype == ScalarType::Undefined ? x->dtype : dtype;
  auto mask = reduction_mask(x, dim);
  if (is_complex(dt)) return complex_additive(x, mask, keepdim, dt, SumKind::Mean, "mean");
  return additive(to_dtype(x, dt), mask, keepdim, dt, SumKind::Mean);
}

Tensor nanmean(const Tensor& x, const OptDims& dim, bool keepdim, ScalarType dtype) {
  EMBER_CHECK(is_floating(x->dtype), std::runtime_error,
              "nanmean(): expected input to have floating point or complex dtype but got ",
              torch_type_name(x->dtype));
  EMBER_CHECK(dtype == ScalarType::Undefined || is_floating(dtype) || is_complex(dtype),
              std::runtime_error, "nanmean(): could not infer output dtype. Optional dtype must be "
              "either a floating point or complex dtype. Got: ", torch_type_name(dtype));
  auto mask = reduction_mask(x, dim);
  Tensor s = nansum(x, dim, keepdim, dtype);
  Tensor n = count_impl(x, mask, keepdim, /*not_nan=*/true);
  return binary(BinaryOp::div, Operand(s), Operand(n));
}

// The truth of a complex value is either part being nonzero.
static Tensor nonzero_mask(const Tensor& x) {
  return binary(BinaryOp::ne, Operand(x), Operand(Scalar::from_int(0)));
}

Tensor count_nonzero(const Tensor& x, const OptDims& dim) {
  // (torch's full count has no kernel for the wide unsigned types; its count over dims has)
  EMBER_CHECK(!(is_wide_unsigned(x->dtype) && !dim), NotImplementedError,
              "\"nonzero_count_cpu\" not implemented for '", type_name(x->dtype), "'");
  if (is_complex(x->dtype) || is_wide_unsigned(x->dtype)) return count_nonzero(nonzero_mask(x), dim);
  return count_impl(x, reduction_mask(x, dim), false, false);
}

static Tensor all_any(const Tensor& x, const OptDims& dim, bool keepdim, bool is_all) {
  if (is_complex(x->dtype) || is_wide_unsigned(x->dtype))
    return all_any(nonzero_mask(x), dim, keepdim, is_all);
  if (is_reduced_float(x->dtype))  // exact in float32
    return all_any(to_dtype(x, ScalarType::Float32), dim, keepdim, is_all);
  std::vector<bool> mask;
  if (dim && dim->empty()) mask.assign(x->dim(), false);  // dim=(): no reduction
  else mask = reduction_mask(x, dim);
  const ScalarType out_dt = x->dtype == ScalarType::UInt8 ? ScalarType::UInt8 : ScalarType::Bool;
  return reduce_planned(x, mask, keepdim, out_dt,
                        [&](const ReducePlan& plan, const Tensor& in, const Tensor& result) {
    cpu_kernels().all_any(is_all, plan, in, result);
  });
}

Tensor all(const Tensor& x, const OptDims& dim, bool keepdim) { return all_any(x, dim, keepdim, true); }
Tensor any(const Tensor& x, const OptDims& dim, bool keepdim) { return all_any(x, dim, keepdim, false); }

// ---------------------------------------------------------------------------------------------
// norm

static std::string norm_order_str(double p) { return str_cat(p); }

Tensor norm(const Tensor& x, double p, const OptDims& dim, bool keepdim, ScalarType dtype) {
  if (is_complex(x->dtype)) {  // every vector norm is the norm of the magnitudes
    EMBER_CHECK(dtype == ScalarType::Undefined || is_complex(dtype), std::runtime_error,
                "linalg.vector_norm: dtype should be complex for a complex input, but got ",
                torch_type_name(dtype));
    EMBER_CHECK(dtype == ScalarType::Undefined || promote_types(x->dtype, dtype) == dtype,
                std::runtime_error, "linalg.vector_norm: the dtype of the input (",
                torch_type_name(x->dtype), ") should be convertible without narrowing to the "
                "specified dtype (", torch_type_name(dtype), ")");
    Tensor in = dtype == ScalarType::Undefined ? x : to_dtype(x, dtype);
    return norm(unary(UnaryOp::abs, in), p, dim, keepdim, ScalarType::Undefined);
  }
  EMBER_CHECK(is_floating(x->dtype), std::runtime_error,
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              torch_type_name(x->dtype));
  Tensor in = x;
  if (dtype != ScalarType::Undefined) {
    EMBER_CHECK(is_floating(dtype), std::runtime_error,
                "linalg.vector_norm: dtype should be floating point or complex, but got ",
                torch_type_name(dtype));
    EMBER_CHECK(promote_types(x->dtype, dtype) == dtype, std::runtime_error,
                "linalg.vector_norm: the dtype of the input (", torch_type_name(x->dtype),
                ") should be convertible without narrowing to the specified dtype (",
                torch_type_name(dtype), ")");
    in = to_dtype(x, dtype);
  }
  if (p < 0 || std::isinf(p)) {  // (checked before duplicate dims, as PyTorch)
    if (!dim || dim->empty()) {
      EMBER_CHECK(x->numel() != 0, std::runtime_error, "linalg.vector_norm cannot compute the ",
                  norm_order_str(p),
                  " norm on an empty tensor because the operation does not have an identity");
    } else {
      for (int64_t d : *dim) {
        const int64_t w = x->dim() ? wrap_dim(d, x->dim()) : 0;
        EMBER_CHECK(x->dim() == 0 || x->sizes[w] != 0, std::runtime_error,
                    "linalg.vector_norm cannot compute the ", norm_order_str(p),
                    " norm on the dimension ", d,
                    "because this dimension is empty and the operation does not have an identity");
      }
    }
  }
  auto mask = reduction_mask(x, dim);
  // One element per result (the reduced dims of size 1): its magnitude, as torch's; the
  // kernels' (|x|^p)^(1/p) overflowed or rounded it away (the 2-norm of [1e200] was inf, the
  // 1e-30-norm of [3] was 1). None per result: 0, for every order that has an identity (the
  // kernels' 0^(1/p) was 1 where 1/p rounds to 0).
  const int64_t per_result = reduced_numel(x, mask);
  if (per_result == 0 || (p != 0 && per_result == 1))
    return additive(unary(UnaryOp::abs, in), mask, keepdim, in->dtype, SumKind::Sum);
  const bool low = is_reduced_float(in->dtype);  // computed in float32, rounded once
  Tensor r = reduce_planned(low ? to_dtype(in, ScalarType::Float32) : in, mask, keepdim,
                            low ? ScalarType::Float32 : in->dtype,
                            [&](const ReducePlan& plan, const Tensor& src, const Tensor& result) {
    cpu_kernels().norm(p, plan, src, result);
  });
  return low ? to_dtype(r, in->dtype) : r;
}

// ---------------------------------------------------------------------------------------------
// var / std (two passes: the mean, then the sum of squared deviations)

std::pair<Tensor, Tensor> var_mean(const Tensor& x, const OptDims& dim, double correction,
                                   bool keepdim, bool take_sqrt) {
  if (is_complex(x->dtype)) {  // the variance of z is var(re z) + var(im z), a real number
    Tensor parts = view_as_real(x);
    Tensor v = binary(BinaryOp::add,
                      Operand(var_mean(select(parts, -1, 0), dim, correction, keepdim, false).first),
                      Operand(var_mean(select(parts, -1, 1), dim, correction, keepdim, false).first));
    if (take_sqrt) v = unary(UnaryOp::sqrt, v);
    return {v, mean(x, dim, keepdim)};
  }
  EMBER_CHECK(is_floating(x->dtype), std::runtime_error,
              "std and var only support floating point and complex dtypes");
  auto mask = reduction_mask(x, dim);
  const bool low = is_reduced_float(x->dtype);
  Tensor xf = low ? to_dtype(x, ScalarType::Float32) : x;
  const int64_t R = reduced_numel(x, mask);
  Tensor m = additive(xf, mask, true, xf->dtype, SumKind::Mean);
  Tensor dev = binary(BinaryOp::sub, Operand(xf), Operand(m));
  // (no element: NaN whatever the correction, as torch's; 0 / 0 in the kernel)
  const double denom = R == 0 ? 0.0 : std::max(0.0, static_cast<double>(R) - correction);
  Tensor v = reduce_planned(dev, mask, keepdim, xf->dtype,
                            [&](const ReducePlan& plan, const Tensor& src, const Tensor& result) {
    cpu_kernels().sum_squares(denom, take_sqrt, plan, src, result);
  });
  m = squeeze_to(m, x, mask, keepdim);
  if (low) {
    v = to_dtype(v, x->dtype);
    m = to_dtype(m, x->dtype);
  }
  return {v, m};
}

Tensor var(const Tensor& x, const OptDims& dim, double correction, bool keepdim, bool take_sqrt) {
  return var_mean(x, dim, correction, keepdim, take_sqrt).first;
}

}  // namespace ember
