// nn_kernels.cpp: nll_loss, batch/layer norm and embedding kernels (see nn_kernels.h). Statistics
// and loss sums accumulate in double; per-channel/per-row loops run in parallel. Every index
// (targets, embedding indices) is checked before any output is written.
#include "ops/nn_kernels.h"

#include "ops/channels_last.h"
#include "ops/cpu_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/iterator.h"
#include "ops/cpu_kernels.h"
#include "ops/elementwise.h"
#include "runtime/gil.h"
#include "runtime/parallel.h"

namespace ember {
namespace {

int64_t prod(Shape::const_iterator a, Shape::const_iterator b) {
  int64_t n = 1;
  for (; a != b; ++a) n *= *a;
  return n;
}

// A small per-channel tensor as doubles (empty when t is null).
std::vector<double> as_doubles(const Tensor& t) {
  if (!t) return {};
  Tensor c = contiguous(to_dtype(t, ScalarType::Float64));
  const double* p = c->data_as<double>();
  return std::vector<double>(p, p + c->numel());
}

Tensor from_doubles(const std::vector<double>& v, const Shape& shape, ScalarType dt) {
  Tensor t = empty(shape, ScalarType::Float64);
  std::copy(v.begin(), v.end(), t->data_as<double>());
  return dt == ScalarType::Float64 ? t : to_dtype(t, dt);
}

std::vector<int64_t> targets_of(const Tensor& target) {
  Tensor t = contiguous(target);
  std::vector<int64_t> v(t->numel());
  dispatch_integral(t->dtype, "nll_loss", [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* p = t->data_as<I>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(p[i]);
  });
  return v;
}

struct NllGeo {
  int64_t N, C, inner;
};

NllGeo check_nll(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction) {
  EMBER_CHECK(input->dim() >= 1, std::runtime_error, "input tensor should be 1D or 2D");
  EMBER_CHECK(is_floating(input->dtype), NotImplementedError,
              "\"nll_loss\" not implemented for '", torch_type_name(input->dtype), "'");
  EMBER_CHECK(is_integral(target->dtype, false), std::runtime_error,
              "expected scalar type Long but found ", torch_type_name(target->dtype));
  EMBER_CHECK(reduction >= 0 && reduction <= 2, ValueError, reduction,
              " is not a valid value for reduction");
  NllGeo g;
  if (input->dim() == 1) {
    EMBER_CHECK(target->dim() <= 1 && target->numel() == 1, std::runtime_error,
                "0D or 1D target tensor expected, multi-target not supported");
    g = {1, input->sizes[0], 1};
  } else {
    g = {input->sizes[0], input->sizes[1], prod(input->sizes.begin() + 2, input->sizes.end())};
    Shape want{input->sizes[0]};
    want.insert(want.end(), input->sizes.begin() + 2, input->sizes.end());
    if (input->dim() == 2)
      EMBER_CHECK(target->sizes == want, std::runtime_error, "size mismatch (got input: ",
                  shape_str(input->sizes), ", target: ", shape_str(target->sizes), ")");
    else
      EMBER_CHECK(target->sizes == want, std::runtime_error, "Expected target size ",
                  shape_str(want), ", got ", shape_str(target->sizes));
  }
  if (weight) {
    EMBER_CHECK(weight->numel() == g.C, std::runtime_error,
                "weight tensor should be defined either for all ", g.C,
                " classes or no classes but got weight tensor of shape: ", shape_str(weight->sizes));
    EMBER_CHECK(weight->dtype == input->dtype, std::runtime_error,
                "expected scalar type ", torch_type_name(input->dtype), " but found ",
                torch_type_name(weight->dtype));
  }
  return g;
}

void check_targets(const std::vector<int64_t>& t, int64_t C, int64_t ignore_index) {
  for (int64_t v : t)
    if (v != ignore_index && (v < 0 || v >= C))
      throw IndexError(str_cat("Target ", v, " is out of bounds."));
}

}  // namespace

std::pair<Tensor, Tensor> nll_loss_forward(const Tensor& input, const Tensor& target,
                                           const Tensor& weight, int64_t reduction,
                                           int64_t ignore_index) {
  GilRelease nogil(input->numel() > kGrainSize);
  NllGeo g = check_nll(input, target, weight, reduction);
  std::vector<int64_t> t = targets_of(target);
  check_targets(t, g.C, ignore_index);
  std::vector<double> w = as_doubles(weight);
  Tensor x = contiguous(input);
  const int64_t M = g.N * g.inner;
  Tensor out = empty(reduction == 0 ? target->sizes : Shape{}, x->dtype);
  Tensor tw = empty({}, x->dtype);
  dispatch_floating(x->dtype, "nll_loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x->data_as<T>();
    double total = 0, sum = 0;
    T* op = out->data_as<T>();
    for (int64_t i = 0; i < M; ++i) {
      const int64_t n = i / g.inner, j = i % g.inner, c = t[i];
      double v = 0, wc = 0;
      if (c != ignore_index) {
        wc = w.empty() ? 1.0 : w[c];
        v = -wc * static_cast<double>(xp[(n * g.C + c) * g.inner + j]);
      }
      if (reduction == 0) op[i] = static_cast<T>(v);
      sum += v;
      total += wc;
    }
    if (reduction == 1) op[0] = static_cast<T>(sum / total);  // 0/0 = nan when all are ignored
    if (reduction == 2) op[0] = static_cast<T>(sum);
    tw->data_as<T>()[0] = static_cast<T>(reduction == 0 ? 0.0 : total);
  });
  return {out, tw};
}

Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                         const Tensor& weight, int64_t reduction, int64_t ignore_index,
                         const Tensor& total_weight) {
  GilRelease nogil(input->numel() > kGrainSize);
  NllGeo g = check_nll(input, target, weight, reduction);
  const Shape gshape = reduction == 0 ? target->sizes : Shape{};
  EMBER_CHECK(grad_output->sizes == gshape || (reduction != 0 && grad_output->numel() == 1),
              std::runtime_error, "nll_loss_backward: expected grad_output of size ",
              shape_str(gshape), ", but got ", shape_str(grad_output->sizes));
  std::vector<int64_t> t = targets_of(target);
  check_targets(t, g.C, ignore_index);
  std::vector<double> w = as_doubles(weight);
  const int64_t M = g.N * g.inner;
  double total = 0;
  if (reduction == 1) {
    if (total_weight) {
      total = to_dtype(total_weight, ScalarType::Float64)->data_as<double>()[0];
    } else {
      for (int64_t i = 0; i < M; ++i)
        if (t[i] != ignore_index) total += w.empty() ? 1.0 : w[t[i]];
    }
  }
  Tensor go = contiguous(to_dtype(grad_output, input->dtype));
  Tensor gi = empty(input->sizes, input->dtype);
  dispatch_floating(input->dtype, "nll_loss_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* gp = gi->data_as<T>();
    std::fill(gp, gp + gi->numel(), T(0));
    const T* gop = go->data_as<T>();
    for (int64_t i = 0; i < M; ++i) {
      const int64_t c = t[i];
      if (c == ignore_index) continue;
      const int64_t n = i / g.inner, j = i % g.inner;
      double gv = static_cast<double>(reduction == 0 ? gop[i] : gop[0]);
      if (reduction == 1) gv /= total;
      gp[(n * g.C + c) * g.inner + j] = static_cast<T>(-(w.empty() ? 1.0 : w[c]) * gv);
    }
  });
  return gi;
}

// ---- batch norm ----

namespace {

struct BnGeo {
  int64_t N, C, inner;
};

// A contiguous (N, C, inner) input with few elements per channel and sample (ResNet's 2x2 maps,
// BatchNorm1d's (N, C)) runs through the channels_last passes as (N, C * inner): their vectors
// then span channels, where the (N, C, inner) passes loop over rows of a few elements. Per-channel
// values are repeated for each of a channel's positions, and the per-position sums folded back
// into channels. (Measured on AVX2, one thread, batch 16, forward / backward us, per channel /
// flat: 2048 channels at 2x2 355 / 153, 284 / 159; (64, 256) 150 / 18, 98 / 18; 64 at 3x3 22 /
// 16, 21 / 15; from 4x4 on per channel is faster: 1024 at 4x4 231 / 263, 234 / 283.)
constexpr int64_t kFlatBelow = 16;  // elements per channel and sample

std::vector<double> per_position(const std::vector<double>& v, int64_t inner) {
  std::vector<double> r(v.size() * static_cast<size_t>(inner));
  for (size_t c = 0; c < v.size(); ++c)
    std::fill_n(r.begin() + static_cast<int64_t>(c) * inner, inner, v[c]);
  return r;
}

void fold_positions(const std::vector<double>& pos, int64_t inner, std::vector<double>& out) {
  for (size_t c = 0; c < out.size(); ++c) {
    double s = 0;
    for (int64_t j = 0; j < inner; ++j) s += pos[c * inner + j];
    out[c] = s;
  }
}

// The statistics of (N, C, inner) from its (N, C * inner) columns' means and squared
// deviations, combined as Chan et al.'s parallel variance: m2 = sum of the columns' m2 + N *
// (column mean - channel mean)^2 (deviations throughout, no E[x^2] - E[x]^2).
void flat_batch_norm_stats(const Tensor& x, const BnGeo& g, std::vector<double>& mean,
                           std::vector<double>& m2) {
  const int64_t P = g.C * g.inner;
  std::vector<double> pmean(P), pm2(P);
  cpu_kernels().batch_norm_stats_cl(x->dtype, x->data(), g.N, P, pmean.data(), pm2.data());
  for (int64_t c = 0; c < g.C; ++c) {
    double mu = 0, ss = 0;
    for (int64_t j = 0; j < g.inner; ++j) mu += pmean[c * g.inner + j];
    mu /= g.inner;
    for (int64_t j = 0; j < g.inner; ++j) {
      const double d = pmean[c * g.inner + j] - mu;
      ss += pm2[c * g.inner + j] + static_cast<double>(g.N) * d * d;
    }
    mean[c] = mu, m2[c] = ss;
  }
}

// torch's mixed-dtype rule of its CPU normalisations: parameters of another dtype than the
// input's must be float32, and then the input float16 or bfloat16 (autocast's case). Returns
// the dtype of the saved statistics: float32 when mixed, else the input's (bfloat16 too).
ScalarType check_mixed_dtypes(const Tensor& input, std::initializer_list<const Tensor*> params) {
  bool mixed = false;
  for (const Tensor* p : params) mixed = mixed || (*p && (*p)->dtype != input->dtype);
  if (!mixed) return input->dtype;
  for (const Tensor* p : params)
    EMBER_CHECK(!*p || (*p)->dtype == ScalarType::Float32, std::runtime_error,
                "mixed dtype (CPU): expect parameter to have scalar type of Float");
  EMBER_CHECK(is_reduced_float(input->dtype), std::runtime_error,
              "mixed dtype (CPU): all inputs must share same datatype.");
  return ScalarType::Float32;
}

BnGeo check_bn(const Tensor& input, const std::vector<const Tensor*>& per_channel) {
  EMBER_CHECK(input->dim() >= 2, std::runtime_error,
              "batch_norm: expected input with at least 2 dims, but got input of size ",
              shape_str(input->sizes));
  EMBER_CHECK(is_floating(input->dtype), NotImplementedError,
              "\"batch_norm\" not implemented for '", torch_type_name(input->dtype), "'");
  BnGeo g{input->sizes[0], input->sizes[1], prod(input->sizes.begin() + 2, input->sizes.end())};
  static const char* names[] = {"weight", "bias", "running_mean", "running_var", "save_mean",
                                "save_invstd"};
  for (size_t i = 0; i < per_channel.size(); ++i) {
    const Tensor& t = *per_channel[i];
    if (t)
      EMBER_CHECK(t->numel() == g.C, std::runtime_error, "batch_norm: expected ", names[i],
                  " to have ", g.C, " elements, but got ", names[i], " of size ",
                  shape_str(t->sizes));
  }
  return g;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const Tensor& weight,
                                                     const Tensor& bias, const Tensor& running_mean,
                                                     const Tensor& running_var, bool training,
                                                     double momentum, double eps) {
  GilRelease nogil(input->numel() > kGrainSize);
  BnGeo g = check_bn(input, {&weight, &bias, &running_mean, &running_var});
  EMBER_CHECK(training || (running_mean && running_var), std::runtime_error,
              "batch_norm: running_mean and running_var must be defined in evaluation mode");
  EMBER_CHECK(!training || input->numel() > 0, std::runtime_error,  // (no statistics to take)
              "input tensor must have at least one element, but got input_sizes = ",
              shape_str(input->sizes));
  const ScalarType sdt = check_mixed_dtypes(input, {&weight, &bias, &running_mean, &running_var});
  std::vector<double> w = as_doubles(weight), b = as_doubles(bias);
  std::vector<double> mean(g.C), invstd(g.C), varu(g.C);
  // A channels_last input is normalised in place and gives a channels_last result, as torch.
  const bool cl = is_channels_last(input);
  Tensor x = cl ? input : contiguous(input);
  Tensor out = cl ? empty_channels_last(x->sizes, x->dtype) : empty(x->sizes, x->dtype);
  const int64_t M = g.N * g.inner;
  const bool flat = !cl && g.inner < kFlatBelow && g.N > 0;
  // Two vectorised passes for the statistics (ops/cpu/batch_norm.cpp), then one for the output.
  if (training) {
    std::vector<double> m2(g.C);
    if (cl)
      cpu_kernels().batch_norm_stats_cl(x->dtype, x->data(), M, g.C, mean.data(), m2.data());
    else if (flat)
      flat_batch_norm_stats(x, g, mean, m2);
    else
      cpu_kernels().batch_norm_stats(x->dtype, x->data(), g.N, g.C, g.inner, mean.data(), m2.data());
    for (int64_t c = 0; c < g.C; ++c) {
      invstd[c] = 1.0 / std::sqrt((M ? m2[c] / M : 0.0) + eps);
      varu[c] = M > 1 ? m2[c] / (M - 1) : NAN;
    }
  } else {
    std::vector<double> rm = as_doubles(running_mean), rv = as_doubles(running_var);
    for (int64_t c = 0; c < g.C; ++c) mean[c] = rm[c], invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
  }
  std::vector<double> scale(g.C), shift(g.C);
  for (int64_t c = 0; c < g.C; ++c) {
    scale[c] = invstd[c] * (w.empty() ? 1.0 : w[c]);
    shift[c] = (b.empty() ? 0.0 : b[c]) - mean[c] * scale[c];
  }
  if (cl)
    cpu_kernels().channel_affine_cl(x->dtype, x->data(), out->data(), M, g.C, scale.data(),
                                    shift.data());
  else if (flat)
    cpu_kernels().channel_affine_cl(x->dtype, x->data(), out->data(), g.N, g.C * g.inner,
                                    per_position(scale, g.inner).data(),
                                    per_position(shift, g.inner).data());
  else
    cpu_kernels().channel_affine(x->dtype, x->data(), out->data(), g.N, g.C, g.inner,
                                 scale.data(), shift.data());
  if (!training) return {out, empty({0}, sdt), empty({0}, sdt)};
  if (running_mean) {
    std::vector<double> rm = as_doubles(running_mean);
    for (int64_t c = 0; c < g.C; ++c) rm[c] = (1 - momentum) * rm[c] + momentum * mean[c];
    copy_(running_mean, from_doubles(rm, running_mean->sizes, ScalarType::Float64));
    running_mean->bump_version();
  }
  if (running_var) {
    std::vector<double> rv = as_doubles(running_var);
    for (int64_t c = 0; c < g.C; ++c) rv[c] = (1 - momentum) * rv[c] + momentum * varu[c];
    copy_(running_var, from_doubles(rv, running_var->sizes, ScalarType::Float64));
    running_var->bump_version();
  }
  return {out, from_doubles(mean, {g.C}, sdt), from_doubles(invstd, {g.C}, sdt)};
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight, const Tensor& running_mean,
    const Tensor& running_var, const Tensor& save_mean, const Tensor& save_invstd, bool train,
    double eps, std::array<bool, 3> output_mask) {
  GilRelease nogil(input->numel() > kGrainSize);
  BnGeo g = check_bn(input, {&weight, &weight, &running_mean, &running_var,
                             train ? &save_mean : &weight, train ? &save_invstd : &weight});
  EMBER_CHECK(grad_out->sizes == input->sizes, std::runtime_error,
              "batch_norm_backward: expected grad_out of size ", shape_str(input->sizes),
              ", but got ", shape_str(grad_out->sizes));
  std::vector<double> mean, invstd;
  if (train) {
    EMBER_CHECK(save_mean && save_invstd, std::runtime_error,
                "batch_norm_backward: save_mean and save_invstd are needed in training mode");
    mean = as_doubles(save_mean), invstd = as_doubles(save_invstd);
  } else {
    EMBER_CHECK(running_mean && running_var, std::runtime_error,
                "batch_norm_backward: running_mean and running_var are needed in evaluation mode");
    mean = as_doubles(running_mean);
    invstd = as_doubles(running_var);
    for (auto& v : invstd) v = 1.0 / std::sqrt(v + eps);
  }
  std::vector<double> w = as_doubles(weight), gw(g.C), gb(g.C);
  const bool cl = is_channels_last(input);  // as the forward: in place, gradient channels_last
  Tensor x = cl ? input : contiguous(input);
  Tensor go = to_dtype(grad_out, input->dtype);
  go = cl ? to_channels_last(go) : contiguous(go);
  Tensor gi = !output_mask[0] ? nullptr
              : cl         ? empty_channels_last(x->sizes, x->dtype)
                           : empty(x->sizes, x->dtype);
  const int64_t M = g.N * g.inner;
  // The sums of g and g * (x - mean) per channel, then the input's gradient from them
  // (bn_grad_coefficients): in (N, C, inner) one channel at a time, in cache between the two;
  // channels_last and flat, one vectorised pass for the sums and one for the gradient.
  std::vector<double> sum_g(g.C), sum_gc(g.C);
  const bool flat = !cl && g.inner < kFlatBelow && g.N > 0;
  if (!cl && !flat) {
    cpu_kernels().batch_norm_backward(x->dtype, go->data(), x->data(), gi ? gi->data() : nullptr,
                                      g.N, g.C, g.inner, mean.data(), invstd.data(),
                                      w.empty() ? nullptr : w.data(), train, sum_g.data(),
                                      sum_gc.data());
  } else {
    const int64_t inner = flat ? g.inner : 1;  // (flat: per position, each channel's repeated)
    const int64_t rows = flat ? g.N : M, cols = flat ? g.C * g.inner : g.C;
    const std::vector<double> col_mean = flat ? per_position(mean, inner) : mean;
    if (train || output_mask[1] || output_mask[2]) {
      std::vector<double> psg(cols), psgc(cols);
      cpu_kernels().batch_norm_grad_sums_cl(x->dtype, go->data(), x->data(), rows, cols,
                                            col_mean.data(), psg.data(), psgc.data());
      fold_positions(psg, inner, sum_g), fold_positions(psgc, inner, sum_gc);
    }
    if (gi) {
      std::vector<double> k_grad(g.C), k_centered(g.C), k_const(g.C);
      for (int64_t c = 0; c < g.C; ++c) {
        const BnGradCoefficients k = bn_grad_coefficients(w.empty() ? 1.0 : w[c], invstd[c],
                                                          sum_g[c], sum_gc[c], M, train);
        k_grad[c] = k.k_grad, k_centered[c] = k.k_centered, k_const[c] = k.k_const;
      }
      cpu_kernels().batch_norm_grad_input_cl(
          x->dtype, go->data(), x->data(), gi->data(), rows, cols, col_mean.data(),
          per_position(k_grad, inner).data(), per_position(k_centered, inner).data(),
          per_position(k_const, inner).data());
    }
  }
  for (int64_t c = 0; c < g.C; ++c) gb[c] = sum_g[c], gw[c] = sum_gc[c] * invstd[c];
  const ScalarType wdt = weight ? weight->dtype : x->dtype;
  Tensor tw = output_mask[1] ? from_doubles(gw, {g.C}, wdt) : nullptr;
  Tensor tb = output_mask[2] ? from_doubles(gb, {g.C}, wdt) : nullptr;
  return {gi, tw, tb};
}

// ---- layer norm ----

namespace {

struct LnGeo {
  int64_t M, D, axis;
  ScalarType stats;  // the saved mean/rstd's dtype (check_mixed_dtypes)
};

LnGeo check_ln(const Tensor& input, const Shape& ns, const Tensor& weight, const Tensor& bias) {
  const int64_t nd = static_cast<int64_t>(ns.size()), dim = input->dim();
  EMBER_CHECK(nd >= 1, std::runtime_error,
              "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
              "one element, but got normalized_shape = ", shape_str(ns));
  if (weight)
    EMBER_CHECK(weight->sizes == ns, std::runtime_error,
                "Expected weight to be of same shape as normalized_shape, but got weight of shape ",
                shape_str(weight->sizes), " and normalized_shape = ", shape_str(ns));
  if (bias)
    EMBER_CHECK(bias->sizes == ns, std::runtime_error,
                "Expected bias to be of same shape as normalized_shape, but got bias of shape ",
                shape_str(bias->sizes), " and normalized_shape = ", shape_str(ns));
  bool ok = dim >= nd;
  for (int64_t i = 0; ok && i < nd; ++i) ok = input->sizes[dim - nd + i] == ns[i];
  if (!ok) {
    std::string star = "[*";
    for (auto v : ns) star += ", " + std::to_string(v);
    throw std::runtime_error(str_cat("Given normalized_shape=", shape_str(ns),
                                     ", expected input with shape ", star,
                                     "], but got input of size", shape_str(input->sizes)));
  }
  EMBER_CHECK(is_floating(input->dtype), NotImplementedError,
              "\"layer_norm\" not implemented for '", torch_type_name(input->dtype), "'");
  const ScalarType stats = check_mixed_dtypes(input, {&weight, &bias});
  const int64_t axis = dim - nd;
  return {prod(input->sizes.begin(), input->sizes.begin() + axis),
          prod(input->sizes.begin() + axis, input->sizes.end()), axis, stats};
}

// float32/float64 with parameters of the same dtype: the vectorised row kernels of
// ops/cpu/nn_rows.cpp, statistics in the input's dtype (as torch's). Reduced floats and mixed
// dtypes keep the double-precision loops below.
bool ln_vector_path(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  const ScalarType dt = input->dtype;
  return (dt == ScalarType::Float32 || dt == ScalarType::Float64) && (!weight || weight->dtype == dt) &&
         (!bias || bias->dtype == dt);
}

Shape stat_shape(const Tensor& input, int64_t axis) {
  Shape s(input->sizes.begin(), input->sizes.begin() + axis);
  s.resize(input->sizes.size(), 1);
  return s;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, const Shape& normalized_shape,
                                                     const Tensor& weight, const Tensor& bias, double eps) {
  GilRelease nogil(input->numel() > kGrainSize);
  LnGeo g = check_ln(input, normalized_shape, weight, bias);
  const Shape ss = stat_shape(input, g.axis);
  if (ln_vector_path(input, weight, bias)) {
    Tensor x = contiguous(input);
    Tensor out = empty(x->sizes, x->dtype), mean = empty(ss, x->dtype), rstd = empty(ss, x->dtype);
    cpu_kernels().layer_norm_rows(x, weight ? contiguous(weight) : Tensor(),
                                  bias ? contiguous(bias) : Tensor(), out, mean, rstd, g.M, g.D, eps);
    return {out, mean, rstd};
  }
  std::vector<double> w = as_doubles(weight), b = as_doubles(bias);
  Tensor x = contiguous(input);
  Tensor out = empty(x->sizes, x->dtype);
  std::vector<double> mean(g.M), rstd(g.M);
  dispatch_floating(x->dtype, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x->data_as<T>();
    T* op = out->data_as<T>();
    parallel_for(0, g.M, std::max<int64_t>(1, 16384 / std::max<int64_t>(g.D, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* p = xp + r * g.D;
        T* q = op + r * g.D;
        double s = 0;
        for (int64_t j = 0; j < g.D; ++j) s += static_cast<double>(p[j]);
        const double mu = g.D ? s / g.D : 0.0;
        double ss = 0;
        for (int64_t j = 0; j < g.D; ++j) {
          const double dv = static_cast<double>(p[j]) - mu;
          ss += dv * dv;
        }
        const double rs = 1.0 / std::sqrt((g.D ? ss / g.D : 0.0) + eps);
        mean[r] = mu, rstd[r] = rs;
        for (int64_t j = 0; j < g.D; ++j) {
          double v = (static_cast<double>(p[j]) - mu) * rs;
          if (!w.empty()) v *= w[j];
          if (!b.empty()) v += b[j];
          q[j] = static_cast<T>(v);
        }
      }
    });
  });
  return {out, from_doubles(mean, ss, g.stats), from_doubles(rstd, ss, g.stats)};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Shape& normalized_shape, const Tensor& mean,
    const Tensor& rstd, const Tensor& weight, const Tensor& bias, std::array<bool, 3> output_mask) {
  GilRelease nogil(input->numel() > kGrainSize);
  LnGeo g = check_ln(input, normalized_shape, weight, bias);
  EMBER_CHECK(grad_out->sizes == input->sizes, std::runtime_error,
              "layer_norm_backward: expected grad_out of size ", shape_str(input->sizes),
              ", but got ", shape_str(grad_out->sizes));
  EMBER_CHECK(mean && rstd && mean->numel() == g.M && rstd->numel() == g.M, std::runtime_error,
              "layer_norm_backward: expected mean and rstd with ", g.M, " elements");
  if (ln_vector_path(input, weight, bias)) {
    const ScalarType dt = input->dtype;
    Tensor x = contiguous(input), go = contiguous(to_dtype(grad_out, dt));
    Tensor gi = output_mask[0] ? empty(x->sizes, dt) : Tensor();
    Tensor tw = output_mask[1] && weight ? empty(normalized_shape, dt) : Tensor();
    Tensor tb = output_mask[2] && bias ? empty(normalized_shape, dt) : Tensor();
    cpu_kernels().layer_norm_backward_rows(go, x, contiguous(to_dtype(mean, dt)),
                                           contiguous(to_dtype(rstd, dt)),
                                           weight ? contiguous(weight) : Tensor(), gi, tw, tb, g.M, g.D);
    return {gi, tw, tb};
  }
  std::vector<double> mu = as_doubles(mean), rs = as_doubles(rstd), w = as_doubles(weight);
  Tensor x = contiguous(input), go = contiguous(to_dtype(grad_out, input->dtype));
  Tensor gi = output_mask[0] ? empty(x->sizes, x->dtype) : nullptr;
  std::vector<double> gw(g.D, 0.0), gb(g.D, 0.0);
  dispatch_floating(x->dtype, "layer_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x->data_as<T>();
    const T* gp = go->data_as<T>();
    if (gi) {
      T* ip = gi->data_as<T>();
      parallel_for(0, g.M, std::max<int64_t>(1, 8192 / std::max<int64_t>(g.D, 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T* p = xp + r * g.D;
          const T* gr = gp + r * g.D;
          double s1 = 0, s2 = 0;  // sum(g*w), sum(g*w*xhat)
          for (int64_t j = 0; j < g.D; ++j) {
            const double gw_ = static_cast<double>(gr[j]) * (w.empty() ? 1.0 : w[j]);
            s1 += gw_;
            s2 += gw_ * (static_cast<double>(p[j]) - mu[r]) * rs[r];
          }
          const double m1 = s1 / g.D, m2 = s2 / g.D;
          for (int64_t j = 0; j < g.D; ++j) {
            const double gw_ = static_cast<double>(gr[j]) * (w.empty() ? 1.0 : w[j]);
            const double xh = (static_cast<double>(p[j]) - mu[r]) * rs[r];
            ip[r * g.D + j] = static_cast<T>(rs[r] * (gw_ - m1 - xh * m2));
          }
        }
      });
    }
    if (output_mask[1] || output_mask[2]) {
      parallel_for(0, g.D, 256, [&](int64_t j0, int64_t j1) {
        for (int64_t r = 0; r < g.M; ++r) {
          const T* p = xp + r * g.D;
          const T* gr = gp + r * g.D;
          for (int64_t j = j0; j < j1; ++j) {
            const double gv = static_cast<double>(gr[j]);
            gb[j] += gv;
            gw[j] += gv * (static_cast<double>(p[j]) - mu[r]) * rs[r];
          }
        }
      });
    }
  });
  Tensor tw = output_mask[1] && weight ? from_doubles(gw, normalized_shape, weight->dtype) : nullptr;
  Tensor tb = output_mask[2] && bias ? from_doubles(gb, normalized_shape, bias->dtype) : nullptr;
  return {gi, tw, tb};
}

// ---- embedding ----

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  EMBER_CHECK(weight->dim() == 2, std::runtime_error, "'weight' must be 2-D");
  EMBER_CHECK(indices->dtype == ScalarType::Int64 || indices->dtype == ScalarType::Int32,
              std::runtime_error,
              "Expected tensor for argument #1 'indices' to have one of the following scalar "
              "types: Long, Int; but got ember.", torch_type_name(indices->dtype),
              "Tensor instead (while checking arguments for embedding)");
  const int64_t V = weight->sizes[0], D = weight->sizes[1];
  std::vector<int64_t> idx = targets_of(indices);
  for (int64_t v : idx) EMBER_CHECK(v >= 0 && v < V, IndexError, "index out of range in self");
  Tensor w = contiguous(weight);
  Shape os = indices->sizes;
  os.push_back(D);
  Tensor out = empty(os, w->dtype);
  const size_t row = static_cast<size_t>(D) * w->element_size();
  const char* src = w->data();
  char* dst = out->data();
  parallel_for(0, static_cast<int64_t>(idx.size()), std::max<int64_t>(1, 16384 / std::max<int64_t>(D, 1)),
               [&](int64_t a, int64_t b) {
                 for (int64_t i = a; i < b; ++i) std::memcpy(dst + i * row, src + idx[i] * row, row);
               });
  return out;
}

Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices,
                                int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq) {
  GilRelease nogil(grad_output->numel() > kGrainSize);
  EMBER_CHECK(indices->dtype == ScalarType::Int64 || indices->dtype == ScalarType::Int32,
              std::runtime_error, "embedding_backward: expected indices of type Long or Int");
  EMBER_CHECK(num_weights >= 0, std::runtime_error, "embedding_backward: num_weights must be >= 0");
  const int64_t n = indices->numel();
  EMBER_CHECK(grad_output->dim() == indices->dim() + 1 &&
                  Shape(grad_output->sizes.begin(), grad_output->sizes.end() - 1) == indices->sizes,
              std::runtime_error, "embedding_backward: expected grad_output of size ",
              shape_str(indices->sizes), " + [D], but got ", shape_str(grad_output->sizes));
  EMBER_CHECK(is_floating(grad_output->dtype), NotImplementedError,
              "\"embedding_backward\" not implemented for '", torch_type_name(grad_output->dtype), "'");
  const int64_t D = grad_output->sizes.back();
  std::vector<int64_t> idx = targets_of(indices);
  for (int64_t v : idx)
    EMBER_CHECK(v >= 0 && v < num_weights, IndexError, "index out of range in self");
  std::vector<int64_t> count;
  if (scale_grad_by_freq) {
    count.assign(num_weights, 0);
    for (int64_t v : idx) ++count[v];
  }
  Tensor go = contiguous(grad_output);
  Tensor gw = empty({num_weights, D}, go->dtype);
  dispatch_floating(go->dtype, "embedding_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    T* out = gw->data_as<T>();
    const T* gp = go->data_as<T>();
    std::fill(out, out + gw->numel(), T(0));
    // Parallel over the columns: each thread owns a slice of every row, so no two write one element.
    parallel_for(0, D, std::max<int64_t>(1, 65536 / std::max<int64_t>(n, 1)), [&](int64_t j0, int64_t j1) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = idx[i];
        if (v == padding_idx) continue;
        const A s = scale_grad_by_freq ? A(1) / static_cast<A>(count[v]) : A(1);
        T* dst = out + v * D;
        const T* src = gp + i * D;
        for (int64_t j = j0; j < j1; ++j) dst[j] = static_cast<T>(A(dst[j]) + A(src[j]) * s);
      }
    });
  });
  return gw;
}

}  // namespace ember
