// optim_kernels.cpp: see optim_kernels.h. The element loops are written once per update rule as
// a lambda over (param index, [begin, end) inside that param) and run by for_each_chunk, which
// maps a flat range of the concatenated parameters back onto the tensors.
#include "ops/optim_kernels.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/parallel.h"

namespace ember {
namespace {

constexpr int64_t kGrain = 1 << 15;

void check_list(const char* op, const char* what, const std::vector<Tensor>& params,
                const std::vector<Tensor>& ts, bool strided_ok = false) {
  EMBER_CHECK(ts.size() == params.size(), ValueError, op, ": expected ", params.size(), " ", what,
              ", got ", ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    const Tensor& p = params[i];
    EMBER_CHECK(t, ValueError, op, ": ", what, "[", i, "] is None");
    EMBER_CHECK(t->device() == p->device(), ValueError, op, ": ", what, "[", i,
                "] must be on the parameters' device (", p->device().str(), "), got ",
                t->device().str());
    EMBER_CHECK(t->dtype == p->dtype, TypeError, op, ": ", what, "[", i, "] has dtype ",
                torch_type_name(t->dtype), " but the parameter has ", torch_type_name(p->dtype));
    EMBER_CHECK(t->sizes == p->sizes, ValueError, op, ": ", what, "[", i, "] has shape ",
                shape_str(t->sizes), " but the parameter has ", shape_str(p->sizes));
    EMBER_CHECK(strided_ok || t->is_contiguous(), ValueError, op, ": ", what, "[", i,
                "] must be contiguous");
  }
}

void check_params(const char* op, const std::vector<Tensor>& params) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    EMBER_CHECK(p, ValueError, op, ": params[", i, "] is None");
    EMBER_CHECK(p->dtype == ScalarType::Float32 || p->dtype == ScalarType::Float64, TypeError, op,
                ": params[", i, "] must be float32 or float64, got ", torch_type_name(p->dtype));
    EMBER_CHECK(p->dtype == params[0]->dtype, TypeError, op,
                ": all parameters of one call must share a dtype");
    EMBER_CHECK(p->device() == params[0]->device(), ValueError, op, ": params[", i,
                "] must be on ", params[0]->device().str(), " as params[0], got ",
                p->device().str());
    EMBER_CHECK(p->is_contiguous(), ValueError, op, ": params[", i, "] must be contiguous");
  }
}

void bump_all(const std::vector<Tensor>& ts) {
  for (const auto& t : ts)
    if (t) t->bump_version();
}

// Runs f(i, begin, end) over every parameter's elements, in parallel over their total count.
template <class F>
void for_each_chunk(const std::vector<Tensor>& params, const F& f) {
  std::vector<int64_t> start(params.size() + 1, 0);
  for (size_t i = 0; i < params.size(); ++i) start[i + 1] = start[i] + params[i]->numel();
  parallel_for(0, start.back(), kGrain, [&](int64_t b, int64_t e) {
    // the first parameter whose range contains b
    size_t i = std::upper_bound(start.begin(), start.end(), b) - start.begin() - 1;
    for (; i < params.size() && start[i] < e; ++i) {
      int64_t lo = std::max(b, start[i]) - start[i];
      int64_t hi = std::min(e, start[i + 1]) - start[i];
      if (lo < hi) f(i, lo, hi);
    }
  });
}

// Gradients may be strided: autograd can leave a Linear weight's gradient as the transpose of a
// contiguous matrix. Such a gradient is first copied to a dense tensor, the transposed case by
// 32x32 tiles (several times faster than an element walk), anything else by the core's copy.
template <typename T>
Tensor dense_grad(const Tensor& g) {
  if (g->is_contiguous()) return g;
  if (g->dim() == 2 && g->strides[0] == 1 && g->strides[1] == g->sizes[0]) {
    const int64_t R = g->sizes[0], C = g->sizes[1];
    Tensor out = empty(g->sizes, g->dtype);
    const T* src = g->data_as<T>();  // src[r + c * R] is element (r, c)
    T* dst = out->data_as<T>();
    constexpr int64_t kTile = 32;
    parallel_for(0, (R + kTile - 1) / kTile, 8, [&](int64_t tb, int64_t te) {
      for (int64_t r0 = tb * kTile; r0 < std::min(R, te * kTile); r0 += kTile)
        for (int64_t c0 = 0; c0 < C; c0 += kTile)
          for (int64_t r = r0; r < std::min(R, r0 + kTile); ++r)
            for (int64_t c = c0; c < std::min(C, c0 + kTile); ++c) dst[r * C + c] = src[r + c * R];
    });
    return out;
  }
  return contiguous(g);
}

template <typename T>
std::vector<Tensor> dense_grads(const std::vector<Tensor>& grads) {
  std::vector<Tensor> out(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) out[i] = dense_grad<T>(grads[i]);
  return out;
}

// The element loops: the options are template parameters so that each loop is branch-free and
// vectorises (with __restrict__, the compiler needs no runtime alias checks).
template <typename T, bool kMaximize, bool kDecay, bool kMomentum, bool kInit, bool kNesterov>
void sgd_loop(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf, int64_t n, T lr,
              T wd, T mom, T damp) {
  for (int64_t k = 0; k < n; ++k) {
    T d = kMaximize ? -g[k] : g[k];
    if (kDecay) d += wd * p[k];
    if (kMomentum) {
      T m = kInit ? d : mom * buf[k] + (T(1) - damp) * d;
      buf[k] = m;
      d = kNesterov ? d + mom * m : m;
    }
    p[k] -= lr * d;
  }
}

template <typename T, bool kMaximize, bool kDecay>
void sgd_dispatch(T* p, const T* g, T* buf, int64_t n, T lr, T wd, T mom, T damp, bool use_mom,
                  bool init, bool nesterov) {
  if (!use_mom) return sgd_loop<T, kMaximize, kDecay, false, false, false>(p, g, buf, n, lr, wd,
                                                                           mom, damp);
  if (init) {
    if (nesterov) return sgd_loop<T, kMaximize, kDecay, true, true, true>(p, g, buf, n, lr, wd,
                                                                          mom, damp);
    return sgd_loop<T, kMaximize, kDecay, true, true, false>(p, g, buf, n, lr, wd, mom, damp);
  }
  if (nesterov) return sgd_loop<T, kMaximize, kDecay, true, false, true>(p, g, buf, n, lr, wd,
                                                                         mom, damp);
  sgd_loop<T, kMaximize, kDecay, true, false, false>(p, g, buf, n, lr, wd, mom, damp);
}

template <typename T>
void sgd_impl(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
              const std::vector<Tensor>& bufs, const std::vector<bool>& first, T lr, T wd, T mom,
              T damp, bool nesterov, bool maximize) {
  const bool use_mom = mom != T(0);
  const bool decay = wd != T(0);
  for_each_chunk(params, [&](size_t i, int64_t b, int64_t e) {
    const T* g = grads[i]->data_as<T>() + b;
    T* p = params[i]->data_as<T>() + b;
    T* buf = use_mom ? bufs[i]->data_as<T>() + b : nullptr;
    const bool init = use_mom && first[i];
    const int64_t n = e - b;
    if (maximize) {
      if (decay) sgd_dispatch<T, true, true>(p, g, buf, n, lr, wd, mom, damp, use_mom, init,
                                             nesterov);
      else sgd_dispatch<T, true, false>(p, g, buf, n, lr, wd, mom, damp, use_mom, init, nesterov);
    } else {
      if (decay) sgd_dispatch<T, false, true>(p, g, buf, n, lr, wd, mom, damp, use_mom, init,
                                              nesterov);
      else sgd_dispatch<T, false, false>(p, g, buf, n, lr, wd, mom, damp, use_mom, init,
                                         nesterov);
    }
  });
}

// kDecay: 0 none, 1 L2 (Adam: g += wd * p), 2 decoupled (AdamW: p *= 1 - lr * wd)
template <typename T, bool kMaximize, int kDecay, bool kAmsgrad>
void adam_loop(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ ea,
               T* __restrict__ eas, T* __restrict__ mx, int64_t n, T b1, T b2, T one_b2, T eps,
               T wd, T decay, T ss, T bc) {
  for (int64_t k = 0; k < n; ++k) {
    T d = kMaximize ? -g[k] : g[k];
    T pk = p[k];
    if (kDecay == 1) d += wd * pk;
    if (kDecay == 2) pk *= decay;
    T a = ea[k] + b1 * (d - ea[k]);  // lerp(exp_avg, g, 1 - beta1)
    T s = eas[k] * b2 + one_b2 * d * d;
    ea[k] = a;
    eas[k] = s;
    if (kAmsgrad) {
      s = mx[k] > s ? mx[k] : s;
      mx[k] = s;
    }
    T denom = std::sqrt(s) / bc + eps;
    p[k] = pk - ss * (a / denom);
  }
}

template <typename T, bool kMaximize, int kDecay>
void adam_dispatch(bool amsgrad, T* p, const T* g, T* ea, T* eas, T* mx, int64_t n, T b1, T b2,
                   T one_b2, T eps, T wd, T decay, T ss, T bc) {
  if (amsgrad)
    adam_loop<T, kMaximize, kDecay, true>(p, g, ea, eas, mx, n, b1, b2, one_b2, eps, wd, decay,
                                          ss, bc);
  else
    adam_loop<T, kMaximize, kDecay, false>(p, g, ea, eas, mx, n, b1, b2, one_b2, eps, wd, decay,
                                           ss, bc);
}

template <typename T>
void adam_impl(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
               const std::vector<Tensor>& m1, const std::vector<Tensor>& m2,
               const std::vector<Tensor>& vmax, const std::vector<double>& scalars, double lr,
               double beta1, double beta2, double eps, double wd, bool amsgrad, bool maximize,
               bool decoupled) {
  size_t n = params.size();
  std::vector<T> step_size(n), bc2_sqrt(n);
  for (size_t i = 0; i < n; ++i) {
    step_size[i] = static_cast<T>(scalars[2 * i]);
    bc2_sqrt[i] = static_cast<T>(scalars[2 * i + 1]);
  }
  const T b1 = static_cast<T>(1.0 - beta1), b2 = static_cast<T>(beta2),
          one_b2 = static_cast<T>(1.0 - beta2), teps = static_cast<T>(eps),
          twd = static_cast<T>(wd), decay = static_cast<T>(1.0 - lr * wd);
  const int mode = wd == 0.0 ? 0 : decoupled ? 2 : 1;
  for_each_chunk(params, [&](size_t i, int64_t b, int64_t e) {
    const T* g = grads[i]->data_as<T>() + b;
    T* p = params[i]->data_as<T>() + b;
    T* ea = m1[i]->data_as<T>() + b;
    T* eas = m2[i]->data_as<T>() + b;
    T* mx = amsgrad ? vmax[i]->data_as<T>() + b : nullptr;
    const int64_t len = e - b;
    const T ss = step_size[i], bc = bc2_sqrt[i];
#define EMBER_ADAM(MAX, MODE)                                                                  \
  adam_dispatch<T, MAX, MODE>(amsgrad, p, g, ea, eas, mx, len, b1, b2, one_b2, teps, twd, decay, \
                              ss, bc)
    if (maximize) {
      if (mode == 0) EMBER_ADAM(true, 0);
      else if (mode == 1) EMBER_ADAM(true, 1);
      else EMBER_ADAM(true, 2);
    } else {
      if (mode == 0) EMBER_ADAM(false, 0);
      else if (mode == 1) EMBER_ADAM(false, 1);
      else EMBER_ADAM(false, 2);
    }
#undef EMBER_ADAM
  });
}

}  // namespace

void check_fused_sgd(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                     const std::vector<Tensor>& bufs, const std::vector<bool>& first,
                     double momentum) {
  const char* op = "_fused_sgd_";
  check_params(op, params);
  check_list(op, "grads", params, grads, true);
  if (momentum != 0.0) {
    check_list(op, "momentum_buffers", params, bufs);
    EMBER_CHECK(first.size() == params.size(), ValueError, op, ": expected ", params.size(),
                " first-step flags, got ", first.size());
  }
}

void check_fused_adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                      const std::vector<Tensor>& exp_avgs,
                      const std::vector<Tensor>& exp_avg_sqs,
                      const std::vector<Tensor>& max_exp_avg_sqs,
                      const std::vector<Tensor>& steps, bool amsgrad) {
  const char* op = "_fused_adam_";
  check_params(op, params);
  check_list(op, "grads", params, grads, true);
  check_list(op, "exp_avgs", params, exp_avgs);
  check_list(op, "exp_avg_sqs", params, exp_avg_sqs);
  if (amsgrad) check_list(op, "max_exp_avg_sqs", params, max_exp_avg_sqs);
  EMBER_CHECK(steps.size() == params.size(), ValueError, op, ": expected ", params.size(),
              " step tensors, got ", steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const Tensor& s = steps[i];
    EMBER_CHECK(s && s->numel() == 1 && s->device().is_cpu() &&
                    (s->dtype == ScalarType::Float32 || s->dtype == ScalarType::Float64),
                ValueError, op, ": steps[", i, "] must be a one-element float CPU tensor");
  }
}

std::vector<double> adam_step_scalars(const std::vector<Tensor>& steps, double lr, double beta1,
                                      double beta2) {
  // computed once per parameter in double, as torch does with Python floats
  std::vector<double> scalars(2 * steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const Tensor& s = steps[i];
    const double step = s->dtype == ScalarType::Float32 ? ++*s->data_as<float>()
                                                        : ++*s->data_as<double>();
    s->bump_version();
    scalars[2 * i] = lr / (1.0 - std::pow(beta1, step));
    scalars[2 * i + 1] = std::sqrt(1.0 - std::pow(beta2, step));
  }
  return scalars;
}

void fused_sgd_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                const std::vector<Tensor>& bufs, const std::vector<bool>& first, double lr,
                double weight_decay, double momentum, double dampening, bool nesterov,
                bool maximize) {
  check_fused_sgd(params, grads, bufs, first, momentum);
  if (params.empty()) return;
  EMBER_CHECK(params[0]->device().is_cpu(), ValueError, "_fused_sgd_: params[0] must be a CPU "
              "tensor, got ", params[0]->device().str());
  if (params[0]->dtype == ScalarType::Float32)
    sgd_impl<float>(params, dense_grads<float>(grads), bufs, first, float(lr),
                    float(weight_decay), float(momentum), float(dampening), nesterov, maximize);
  else
    sgd_impl<double>(params, dense_grads<double>(grads), bufs, first, lr, weight_decay, momentum,
                     dampening, nesterov, maximize);
  bump_all(params);
  if (momentum != 0.0) bump_all(bufs);
}

void fused_adam_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                 const std::vector<Tensor>& max_exp_avg_sqs, const std::vector<Tensor>& steps,
                 double lr, double beta1, double beta2, double eps, double weight_decay,
                 bool amsgrad, bool maximize, bool decoupled) {
  check_fused_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, amsgrad);
  EMBER_CHECK(params.empty() || params[0]->device().is_cpu(), ValueError,
              "_fused_adam_: params[0] must be a CPU tensor, got ", params[0]->device().str());
  // every argument is checked before anything is written
  const std::vector<double> scalars = adam_step_scalars(steps, lr, beta1, beta2);
  if (params.empty()) return;
  if (params[0]->dtype == ScalarType::Float32)
    adam_impl<float>(params, dense_grads<float>(grads), exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                     scalars, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled);
  else
    adam_impl<double>(params, dense_grads<double>(grads), exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                      scalars, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled);
  bump_all(params);
  bump_all(exp_avgs);
  bump_all(exp_avg_sqs);
  if (amsgrad) bump_all(max_exp_avg_sqs);
}

}  // namespace ember
