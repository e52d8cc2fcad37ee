// bind_nn_kernels.cpp: Python bindings of the core kernels ember.nn composes: convolution
// (ops/conv.h), pooling (ops/pool.h), nll_loss, batch/layer norm and embedding (ops/nn_kernels.h),
// the fused LSTM/GRU cells (ops/rnn_kernels.h),
// with their backward kernels, under PyTorch's names (torch.*, torch._C._nn.*, aten::*).
//
// Autograd: a differentiable op whose tensor input requires grad goes to
// `redispatch(name, _C.<name>, args, kwargs)` in a canonical form: the arguments up to the last
// tensor positionally, in the aten signature's order, the rest as keywords with every int list
// spelled out (stride resolved, single ints expanded). The friendly forms route to one canonical
// op: conv1d/2d/3d and conv_transpose* to "convolution", max_poolNd to "max_poolNd_with_indices".
#include <cmath>
#include <string>

#include "ops/conv.h"
#include "ops/nn_kernels.h"
#include "ops/pool.h"
#include "ops/rnn_kernels.h"
#include "python/pyutils.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {

py::module_* g_m = nullptr;
py::object core_fn(const char* name) { return g_m->attr(name); }

bool grad_any(std::initializer_list<Tensor> ts) {
  for (const auto& t : ts)
    if (needs_dispatch(t)) return true;
  return false;
}

Tensor opt_tensor(py::handle h, const char* op, const char* arg) {
  if (!h || h.is_none()) return nullptr;
  return expect_tensor(h, op, arg);
}

py::object none_or(const Tensor& t) { return t ? wrap(t) : py::none(); }

// An int or a sequence of ints; a single int (or a 1-element sequence) is repeated k times.
Shape int_list(py::handle h, int64_t k, const char* op, const char* arg) {
  Shape v;
  if (is_int_like(h)) {
    v.assign(k, as_int(h));
    return v;
  }
  if (!py::isinstance<py::sequence>(h) || py::isinstance<py::str>(h))
    throw py::type_error(str_cat(op, "(): argument '", arg, "' must be tuple of ints, not ", type_of(h)));
  for (auto item : py::reinterpret_borrow<py::sequence>(h)) {
    if (!is_int_like(item))
      throw py::type_error(str_cat(op, "(): argument '", arg, "' must be tuple of ints, but found "
                                   "element of type ", type_of(item)));
    v.push_back(as_int(item));
  }
  if (v.size() == 1 && k > 1) v.assign(k, v[0]);
  return v;
}

py::list list_of(const Shape& s) {
  py::list l;
  for (auto v : s) l.append(v);
  return l;
}

int64_t reduction_of(py::handle h) {
  if (py::isinstance<py::str>(h)) {
    const std::string s = h.cast<std::string>();
    if (s == "none") return 0;
    if (s == "mean") return 1;
    if (s == "sum") return 2;
    throw py::value_error(s + " is not a valid value for reduction");
  }
  return as_int(h);
}

// ---- convolution ----

py::object convolution_call(py::handle xh, py::handle wh, py::handle bh, py::handle strideh,
                            py::handle paddingh, py::handle dilationh, bool transposed,
                            py::handle opadh, int64_t groups) {
  Tensor x = expect_tensor(xh, "convolution", "input"), w = expect_tensor(wh, "convolution", "weight");
  Tensor b = opt_tensor(bh, "convolution", "bias");
  const int64_t k = std::max<int64_t>(w->dim() - 2, 1);
  Shape stride = int_list(strideh, k, "convolution", "stride");
  Shape padding = int_list(paddingh, k, "convolution", "padding");
  Shape dilation = int_list(dilationh, k, "convolution", "dilation");
  Shape opad = int_list(opadh, k, "convolution", "output_padding");
  if (grad_any({x, w, b}))
    return redispatch("convolution", core_fn("convolution"), py::make_tuple(xh, wh, bh),
                         py::dict("stride"_a = list_of(stride), "padding"_a = list_of(padding),
                                  "dilation"_a = list_of(dilation), "transposed"_a = transposed,
                                  "output_padding"_a = list_of(opad), "groups"_a = groups));
  return wrap(convolution(x, w, b, stride, padding, dilation, transposed, opad, groups));
}

void check_weight_dim(const Tensor& w, int64_t k, const char* op) {
  EMBER_CHECK(w->dim() == k + 2, std::runtime_error, op, ": expected weight to be ", k + 2,
              "-dimensional, but got weight of size ", shape_str(w->sizes));
}

py::object conv_call(int64_t k, py::handle xh, py::handle wh, py::handle bh, py::handle strideh,
                     py::handle paddingh, py::handle dilationh, int64_t groups) {
  const std::string name = str_cat("conv", k, "d");
  const char* op = name.c_str();
  Tensor x = expect_tensor(xh, op, "input"), w = expect_tensor(wh, op, "weight");
  Tensor b = opt_tensor(bh, op, "bias");
  EMBER_CHECK(x->dim() == k + 1 || x->dim() == k + 2, std::runtime_error, "Expected ", k + 1,
              "D (unbatched) or ", k + 2, "D (batched) input to ", name, ", but got input of size: ",
              shape_str(x->sizes));
  check_weight_dim(w, k, op);
  Shape stride = int_list(strideh, k, op, "stride");
  Shape dilation = int_list(dilationh, k, op, "dilation");
  Shape zeros(k, 0);
  if (py::isinstance<py::str>(paddingh)) {
    const std::string mode = paddingh.cast<std::string>();
    if (mode == "valid") {
      paddingh = py::int_(0);
    } else if (mode == "same") {
      if (!grad_any({x, w, b})) return wrap(convolution_same(x, w, b, stride, dilation, groups));
      for (auto s : stride)
        EMBER_CHECK(s == 1, std::runtime_error, "padding='same' is not supported for strided convolutions");
      // Symmetric padding of the larger side, then drop the extra leading output element where
      // dilation * (kernel - 1) is odd (PyTorch pads the extra element at the end).
      Shape pad(k);
      std::vector<bool> odd(k);
      EMBER_CHECK(static_cast<int64_t>(dilation.size()) == k, std::runtime_error,
                  "expected dilation to be a single integer value or a list of ", k,
                  " values to match the convolution dimensions, but got dilation=", shape_str(dilation));
      for (int64_t i = 0; i < k; ++i) {
        const int64_t total = dilation[i] * (w->sizes[2 + i] - 1);
        pad[i] = total - total / 2;
        odd[i] = total % 2 == 1;
      }
      py::object r = convolution_call(xh, wh, bh, list_of(stride), list_of(pad), list_of(dilation),
                                      false, list_of(zeros), groups);
      const int64_t off = x->dim() - k;
      for (int64_t i = 0; i < k; ++i)
        if (odd[i]) r = r.attr("narrow")(off + i, 1, x->sizes[off + i]);
      return r;
    } else {
      throw std::runtime_error("Invalid padding string: '" + mode + "'");
    }
  }
  Shape padding = int_list(paddingh, k, op, "padding");
  return convolution_call(xh, wh, bh, list_of(stride), list_of(padding), list_of(dilation), false,
                          list_of(zeros), groups);
}

py::object conv_transpose_call(int64_t k, py::handle xh, py::handle wh, py::handle bh,
                               py::handle strideh, py::handle paddingh, py::handle opadh,
                               int64_t groups, py::handle dilationh) {
  const std::string name = str_cat("conv_transpose", k, "d");
  const char* op = name.c_str();
  Tensor x = expect_tensor(xh, op, "input"), w = expect_tensor(wh, op, "weight");
  EMBER_CHECK(x->dim() == k + 1 || x->dim() == k + 2, std::runtime_error, "Expected ", k + 1,
              "D (unbatched) or ", k + 2, "D (batched) input to ", name, ", but got input of size: ",
              shape_str(x->sizes));
  check_weight_dim(w, k, op);
  return convolution_call(xh, wh, bh, list_of(int_list(strideh, k, op, "stride")),
                          list_of(int_list(paddingh, k, op, "padding")),
                          list_of(int_list(dilationh, k, op, "dilation")), true,
                          list_of(int_list(opadh, k, op, "output_padding")), groups);
}

std::array<bool, 3> mask3(py::handle h) {
  auto v = h.cast<std::vector<bool>>();
  EMBER_CHECK(v.size() == 3, std::runtime_error, "output_mask must have 3 entries");
  return {v[0], v[1], v[2]};
}

py::object convolution_backward_call(py::handle goh, py::handle xh, py::handle wh, py::handle bsh,
                                     py::handle strideh, py::handle paddingh, py::handle dilationh,
                                     bool transposed, py::handle opadh, int64_t groups,
                                     py::handle maskh) {
  const char* op = "convolution_backward";
  Tensor go = expect_tensor(goh, op, "grad_output"), x = expect_tensor(xh, op, "input"),
         w = expect_tensor(wh, op, "weight");
  const int64_t k = std::max<int64_t>(w->dim() - 2, 1);
  Shape stride = int_list(strideh, k, op, "stride"), padding = int_list(paddingh, k, op, "padding");
  Shape dilation = int_list(dilationh, k, op, "dilation"), opad = int_list(opadh, k, op, "output_padding");
  std::optional<Shape> bias_sizes;
  if (!bsh.is_none()) bias_sizes = to_shape(bsh);
  auto mask = mask3(maskh);
  if (grad_any({go, x, w}))
    return redispatch(op, core_fn(op), py::make_tuple(goh, xh, wh),
                         py::dict("bias_sizes"_a = bias_sizes ? py::object(list_of(*bias_sizes)) : py::none(),
                                  "stride"_a = list_of(stride), "padding"_a = list_of(padding),
                                  "dilation"_a = list_of(dilation), "transposed"_a = transposed,
                                  "output_padding"_a = list_of(opad), "groups"_a = groups,
                                  "output_mask"_a = py::make_tuple(mask[0], mask[1], mask[2])));
  auto [gi, gw, gb] = convolution_backward(go, x, w, bias_sizes, stride, padding, dilation,
                                           transposed, opad, groups, mask);
  return py::make_tuple(none_or(gi), none_or(gw), none_or(gb));
}

// ---- pooling ----

struct PoolArgs {
  Shape kernel, stride, padding, dilation;
};

PoolArgs pool_args(int64_t k, const char* op, py::handle kh, py::handle sh, py::handle ph,
                   py::handle dh) {
  PoolArgs a;
  a.kernel = int_list(kh, k, op, "kernel_size");
  // stride None or [] means the kernel size (PyTorch's default).
  a.stride = sh.is_none() ? a.kernel : int_list(sh, k, op, "stride");
  if (a.stride.empty()) a.stride = a.kernel;
  a.padding = int_list(ph, k, op, "padding");
  a.dilation = dh ? int_list(dh, k, op, "dilation") : Shape(k, 1);
  for (const Shape* s : {&a.kernel, &a.stride, &a.padding, &a.dilation})
    EMBER_CHECK(static_cast<int64_t>(s->size()) == k, std::runtime_error, op,
                ": kernel_size, stride, padding and dilation must either be a single int, or a "
                "tuple of ", k, " ints");
  return a;
}

py::dict max_kwargs(const PoolArgs& a, bool ceil_mode) {
  return py::dict("kernel_size"_a = list_of(a.kernel), "stride"_a = list_of(a.stride),
                  "padding"_a = list_of(a.padding), "dilation"_a = list_of(a.dilation),
                  "ceil_mode"_a = ceil_mode);
}

py::object max_pool_call(int64_t k, bool with_indices, py::handle xh, py::handle kh, py::handle sh,
                         py::handle ph, py::handle dh, bool ceil_mode) {
  const std::string name = str_cat("max_pool", k, "d");
  const std::string wname = name + "_with_indices";
  Tensor x = expect_tensor(xh, name.c_str(), "input");
  PoolArgs a = pool_args(k, name.c_str(), kh, sh, ph, dh);
  if (needs_dispatch(x)) {
    py::object r = redispatch(wname.c_str(), core_fn(wname.c_str()), py::make_tuple(xh),
                                 max_kwargs(a, ceil_mode));
    return with_indices ? r : py::object(r[py::int_(0)]);
  }
  auto [v, i] = max_pool_with_indices(x, a.kernel, a.stride, a.padding, a.dilation, ceil_mode, with_indices);
  if (with_indices) return py::make_tuple(wrap(v), wrap(i));
  return wrap(v);
}

py::object max_pool_backward_call(int64_t k, py::handle goh, py::handle xh, py::handle kh,
                                  py::handle sh, py::handle ph, py::handle dh, bool ceil_mode,
                                  py::handle ih) {
  const std::string name = str_cat("max_pool", k, "d_with_indices_backward");
  const char* op = name.c_str();
  Tensor go = expect_tensor(goh, op, "grad_output"), x = expect_tensor(xh, op, "input");
  Tensor idx = expect_tensor(ih, op, "indices");
  PoolArgs a = pool_args(k, op, kh, sh, ph, dh);
  if (grad_any({go, x})) {
    py::dict kw = max_kwargs(a, ceil_mode);
    kw["indices"] = ih;
    return redispatch(op, core_fn(op), py::make_tuple(goh, xh), kw);
  }
  return wrap(max_pool_with_indices_backward(go, x, a.kernel, a.stride, a.padding, a.dilation,
                                             ceil_mode, idx));
}

std::optional<int64_t> opt_int(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return as_int(h);
}

py::dict avg_kwargs(const PoolArgs& a, bool ceil_mode, bool cip, std::optional<int64_t> dov) {
  return py::dict("kernel_size"_a = list_of(a.kernel), "stride"_a = list_of(a.stride),
                  "padding"_a = list_of(a.padding), "ceil_mode"_a = ceil_mode,
                  "count_include_pad"_a = cip,
                  "divisor_override"_a = dov ? py::object(py::int_(*dov)) : py::none());
}

py::object avg_pool_call(int64_t k, py::handle xh, py::handle kh, py::handle sh, py::handle ph,
                         bool ceil_mode, bool cip, py::handle dovh) {
  const std::string name = str_cat("avg_pool", k, "d");
  Tensor x = expect_tensor(xh, name.c_str(), "input");
  PoolArgs a = pool_args(k, name.c_str(), kh, sh, ph, py::handle());
  auto dov = opt_int(dovh);
  if (needs_dispatch(x))
    return redispatch(name.c_str(), core_fn(name.c_str()), py::make_tuple(xh),
                         avg_kwargs(a, ceil_mode, cip, dov));
  return wrap(avg_pool(x, a.kernel, a.stride, a.padding, ceil_mode, cip, dov));
}

py::object avg_pool_backward_call(int64_t k, py::handle goh, py::handle xh, py::handle kh,
                                  py::handle sh, py::handle ph, bool ceil_mode, bool cip,
                                  py::handle dovh) {
  const std::string name = str_cat("avg_pool", k, "d_backward");
  const char* op = name.c_str();
  Tensor go = expect_tensor(goh, op, "grad_output"), x = expect_tensor(xh, op, "input");
  PoolArgs a = pool_args(k, op, kh, sh, ph, py::handle());
  auto dov = opt_int(dovh);
  if (grad_any({go, x}))
    return redispatch(op, core_fn(op), py::make_tuple(goh, xh), avg_kwargs(a, ceil_mode, cip, dov));
  return wrap(avg_pool_backward(go, x, a.kernel, a.stride, a.padding, ceil_mode, cip, dov));
}

// output_size: an int, or a sequence whose None entries keep the input's size.
Shape adaptive_size(int64_t k, const Tensor& x, py::handle h, const char* op) {
  Shape v;
  if (is_int_like(h)) return Shape(k, as_int(h));
  if (!py::isinstance<py::sequence>(h))
    throw py::type_error(str_cat(op, "(): argument 'output_size' must be tuple of ints, not ", type_of(h)));
  auto seq = py::reinterpret_borrow<py::sequence>(h);
  const int64_t n = static_cast<int64_t>(py::len(seq));
  if (n != k) throw std::runtime_error(str_cat(op, ": output_size must be ", k));
  for (int64_t i = 0; i < n; ++i) {
    py::object item = seq[i];
    if (item.is_none()) {
      EMBER_CHECK(x->dim() >= k, std::runtime_error, op, ": input has too few dimensions");
      v.push_back(x->sizes[x->dim() - k + i]);
    } else {
      v.push_back(as_int(item));
    }
  }
  return v;
}

py::object adaptive_call(int64_t k, bool is_max, py::handle xh, py::handle osh) {
  const std::string name = str_cat(is_max ? "adaptive_max_pool" : "adaptive_avg_pool", k, "d");
  const char* op = name.c_str();
  Tensor x = expect_tensor(xh, op, "input");
  Shape os = adaptive_size(k, x, osh, op);
  if (needs_dispatch(x))
    return redispatch(op, core_fn(op), py::make_tuple(xh), py::dict("output_size"_a = list_of(os)));
  if (is_max) {
    auto [v, i] = adaptive_max_pool(x, os);
    return py::make_tuple(wrap(v), wrap(i));
  }
  return wrap(adaptive_avg_pool(x, os));
}

py::object adaptive_backward_call(int64_t k, bool is_max, py::handle goh, py::handle xh, py::handle ih) {
  const std::string name = str_cat(is_max ? "adaptive_max_pool" : "adaptive_avg_pool", k, "d_backward");
  const char* op = name.c_str();
  Tensor go = expect_tensor(goh, op, "grad_output"), x = expect_tensor(xh, op, "input");
  Tensor idx = is_max ? expect_tensor(ih, op, "indices") : nullptr;
  if (grad_any({go, x})) {
    py::dict kw;
    if (is_max) kw["indices"] = ih;
    return redispatch(op, core_fn(op), py::make_tuple(goh, xh), kw);
  }
  return wrap(is_max ? adaptive_max_pool_backward(go, x, idx, k) : adaptive_avg_pool_backward(go, x, k));
}

// ---- nll_loss ----

py::object nll_loss_call(py::handle xh, py::handle th, py::handle wh, py::handle redh, int64_t ignore_index) {
  const char* op = "nll_loss";
  Tensor x = expect_tensor(xh, op, "input"), t = expect_tensor(th, op, "target");
  Tensor w = opt_tensor(wh, op, "weight");
  const int64_t reduction = reduction_of(redh);
  if (needs_dispatch(x))
    return redispatch(op, core_fn(op), py::make_tuple(xh, th, wh),
                         py::dict("reduction"_a = reduction, "ignore_index"_a = ignore_index));
  return wrap(nll_loss_forward(x, t, w, reduction, ignore_index).first);
}

py::object nll_loss_backward_call(py::handle goh, py::handle xh, py::handle th, py::handle wh,
                                  py::handle redh, int64_t ignore_index, py::handle twh) {
  const char* op = "nll_loss_backward";
  Tensor go = expect_tensor(goh, op, "grad_output"), x = expect_tensor(xh, op, "self"),
         t = expect_tensor(th, op, "target");
  Tensor w = opt_tensor(wh, op, "weight"), tw = opt_tensor(twh, op, "total_weight");
  const int64_t reduction = reduction_of(redh);
  if (grad_any({go, x}))
    return redispatch(op, core_fn(op), py::make_tuple(goh, xh, th, wh),
                         py::dict("reduction"_a = reduction, "ignore_index"_a = ignore_index,
                                  "total_weight"_a = twh));
  return wrap(nll_loss_backward(go, x, t, w, reduction, ignore_index, tw));
}

// ---- batch norm / layer norm ----

py::object batch_norm_call(py::handle xh, py::handle wh, py::handle bh, py::handle rmh, py::handle rvh,
                           bool training, double momentum, double eps) {
  const char* op = "native_batch_norm";
  Tensor x = expect_tensor(xh, op, "input"), w = opt_tensor(wh, op, "weight"),
         b = opt_tensor(bh, op, "bias"), rm = opt_tensor(rmh, op, "running_mean"),
         rv = opt_tensor(rvh, op, "running_var");
  if (grad_any({x, w, b}))
    return redispatch(op, core_fn(op), py::make_tuple(xh, wh, bh, rmh, rvh),
                         py::dict("training"_a = training, "momentum"_a = momentum, "eps"_a = eps));
  for (const Tensor& r : {rm, rv})
    if (r && training) check_inplace_writable(r, op);
  auto [o, m, s] = native_batch_norm(x, w, b, rm, rv, training, momentum, eps);
  return py::make_tuple(wrap(o), wrap(m), wrap(s));
}

py::object batch_norm_backward_call(py::handle goh, py::handle xh, py::handle wh, py::handle rmh,
                                    py::handle rvh, py::handle smh, py::handle sih, bool train,
                                    double eps, py::handle maskh) {
  const char* op = "native_batch_norm_backward";
  Tensor go = expect_tensor(goh, op, "grad_out"), x = expect_tensor(xh, op, "input"),
         w = opt_tensor(wh, op, "weight"), rm = opt_tensor(rmh, op, "running_mean"),
         rv = opt_tensor(rvh, op, "running_var"), sm = opt_tensor(smh, op, "save_mean"),
         si = opt_tensor(sih, op, "save_invstd");
  auto mask = mask3(maskh);
  if (grad_any({go, x, w}))
    return redispatch(op, core_fn(op), py::make_tuple(goh, xh, wh, rmh, rvh, smh, sih),
                         py::dict("train"_a = train, "eps"_a = eps,
                                  "output_mask"_a = py::make_tuple(mask[0], mask[1], mask[2])));
  auto [gi, gw, gb] = native_batch_norm_backward(go, x, w, rm, rv, sm, si, train, eps, mask);
  return py::make_tuple(none_or(gi), none_or(gw), none_or(gb));
}

py::object layer_norm_call(py::handle xh, py::handle nsh, py::handle wh, py::handle bh, double eps) {
  const char* op = "native_layer_norm";
  Tensor x = expect_tensor(xh, op, "input"), w = opt_tensor(wh, op, "weight"),
         b = opt_tensor(bh, op, "bias");
  Shape ns = to_shape(nsh);
  if (grad_any({x, w, b}))
    return redispatch(op, core_fn(op), py::make_tuple(xh, list_of(ns), wh, bh),
                         py::dict("eps"_a = eps));
  auto [o, m, r] = native_layer_norm(x, ns, w, b, eps);
  return py::make_tuple(wrap(o), wrap(m), wrap(r));
}

py::object layer_norm_backward_call(py::handle goh, py::handle xh, py::handle nsh, py::handle mh,
                                    py::handle rh, py::handle wh, py::handle bh, py::handle maskh) {
  const char* op = "native_layer_norm_backward";
  Tensor go = expect_tensor(goh, op, "grad_out"), x = expect_tensor(xh, op, "input"),
         m = expect_tensor(mh, op, "mean"), r = expect_tensor(rh, op, "rstd"),
         w = opt_tensor(wh, op, "weight"), b = opt_tensor(bh, op, "bias");
  Shape ns = to_shape(nsh);
  auto mask = mask3(maskh);
  if (grad_any({go, x, w}))
    return redispatch(op, core_fn(op), py::make_tuple(goh, xh, list_of(ns), mh, rh, wh, bh),
                         py::dict("output_mask"_a = py::make_tuple(mask[0], mask[1], mask[2])));
  auto [gi, gw, gb] = native_layer_norm_backward(go, x, ns, m, r, w, b, mask);
  return py::make_tuple(none_or(gi), none_or(gw), none_or(gb));
}

// ---- embedding ----

py::object embedding_call(py::handle wh, py::handle ih, int64_t padding_idx, bool scale, bool sparse) {
  const char* op = "embedding";
  Tensor w = expect_tensor(wh, op, "weight"), i = expect_tensor(ih, op, "indices");
  if (needs_dispatch(w))
    return redispatch(op, core_fn(op), py::make_tuple(wh, ih),
                         py::dict("padding_idx"_a = padding_idx, "scale_grad_by_freq"_a = scale,
                                  "sparse"_a = sparse));
  return wrap(embedding(w, i));
}

py::object embedding_backward_call(py::handle goh, py::handle ih, int64_t num_weights,
                                   int64_t padding_idx, bool scale, bool sparse) {
  const char* op = "embedding_dense_backward";
  if (sparse) throw NotImplementedError("embedding_backward: sparse gradients are not supported");
  Tensor go = expect_tensor(goh, op, "grad_output"), i = expect_tensor(ih, op, "indices");
  if (needs_dispatch(go))
    return redispatch(op, core_fn(op), py::make_tuple(goh, ih),
                         py::dict("num_weights"_a = num_weights, "padding_idx"_a = padding_idx,
                                  "scale_grad_by_freq"_a = scale));
  return wrap(embedding_dense_backward(go, i, num_weights, padding_idx, scale));
}

// ---- fused recurrent cells ----
py::object lstm_cell_call(py::handle igh, py::handle hgh, py::handle cxh, py::handle ibh, py::handle hbh) {
  const char* op = "_thnn_fused_lstm_cell";
  Tensor ig = expect_tensor(igh, op, "input_gates"), hg = expect_tensor(hgh, op, "hidden_gates");
  Tensor cx = expect_tensor(cxh, op, "cx"), ib = opt_tensor(ibh, op, "input_bias"),
         hb = opt_tensor(hbh, op, "hidden_bias");
  if (grad_any({ig, hg, cx, ib, hb}))
    return redispatch(op, core_fn(op), py::make_tuple(igh, hgh, cxh, ibh, hbh), py::dict());
  auto [hy, cy, ws] = fused_lstm_cell(ig, hg, cx, ib, hb);
  return py::make_tuple(wrap(hy), wrap(cy), wrap(ws));
}

py::object lstm_cell_backward_call(py::handle ghh, py::handle gch, py::handle cxh, py::handle cyh,
                                   py::handle wsh, bool has_bias) {
  const char* op = "_thnn_fused_lstm_cell_backward_impl";
  Tensor gh = opt_tensor(ghh, op, "grad_hy"), gc = opt_tensor(gch, op, "grad_cy");
  Tensor cx = expect_tensor(cxh, op, "cx"), cy = expect_tensor(cyh, op, "cy"),
         ws = expect_tensor(wsh, op, "workspace");
  check_not_differentiated(op, {gh, gc, cx, cy, ws});
  auto [gg, gcx, gb] = fused_lstm_cell_backward(gh, gc, cx, cy, ws, has_bias);
  return py::make_tuple(wrap(gg), wrap(gcx), none_or(gb));
}

py::object gru_cell_call(py::handle igh, py::handle hgh, py::handle hxh, py::handle ibh, py::handle hbh) {
  const char* op = "_thnn_fused_gru_cell";
  Tensor ig = expect_tensor(igh, op, "input_gates"), hg = expect_tensor(hgh, op, "hidden_gates");
  Tensor hx = expect_tensor(hxh, op, "hx"), ib = opt_tensor(ibh, op, "input_bias"),
         hb = opt_tensor(hbh, op, "hidden_bias");
  if (grad_any({ig, hg, hx, ib, hb}))
    return redispatch(op, core_fn(op), py::make_tuple(igh, hgh, hxh, ibh, hbh), py::dict());
  auto [hy, ws] = fused_gru_cell(ig, hg, hx, ib, hb);
  return py::make_tuple(wrap(hy), wrap(ws));
}

py::object gru_cell_backward_call(py::handle ghh, py::handle wsh, bool has_bias) {
  const char* op = "_thnn_fused_gru_cell_backward";
  Tensor gh = expect_tensor(ghh, op, "grad_hy"), ws = expect_tensor(wsh, op, "workspace");
  check_not_differentiated(op, {gh, ws});
  auto [gi, ghid, ghx, gib, ghb] = fused_gru_cell_backward(gh, ws, has_bias);
  return py::make_tuple(wrap(gi), wrap(ghid), wrap(ghx), none_or(gib), none_or(ghb));
}

}  // namespace

void register_nn_kernels(py::module_& m) {
  g_m = new py::module_(m);  // leaked: outlives interpreter teardown
  const auto none = py::none();

  m.def("convolution", &convolution_call, "input"_a, "weight"_a, "bias"_a, "stride"_a, "padding"_a,
        "dilation"_a, "transposed"_a, "output_padding"_a, "groups"_a);
  m.def("_convolution_shape", [](const Tensor& x, const Tensor& w, py::handle bh, const Shape& stride,
                                 const Shape& padding, const Shape& dilation, bool transposed,
                                 const Shape& opad, int64_t groups) {
    return list_of(convolution_output_shape(x, w, opt_tensor(bh, "convolution", "bias"), stride,
                                            padding, dilation, transposed, opad, groups));
  }, "input"_a, "weight"_a, "bias"_a, "stride"_a, "padding"_a, "dilation"_a, "transposed"_a,
     "output_padding"_a, "groups"_a);
  m.def("convolution_backward", &convolution_backward_call, "grad_output"_a, "input"_a, "weight"_a,
        "bias_sizes"_a, "stride"_a, "padding"_a, "dilation"_a, "transposed"_a, "output_padding"_a,
        "groups"_a, "output_mask"_a);
  for (int64_t k = 1; k <= 3; ++k) {
    m.def(str_cat("conv", k, "d").c_str(),
          [k](py::handle x, py::handle w, py::handle b, py::handle s, py::handle p, py::handle d,
              int64_t groups) { return conv_call(k, x, w, b, s, p, d, groups); },
          "input"_a, "weight"_a, "bias"_a = none, "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
          "groups"_a = 1);
    m.def(str_cat("conv_transpose", k, "d").c_str(),
          [k](py::handle x, py::handle w, py::handle b, py::handle s, py::handle p, py::handle op,
              int64_t groups, py::handle d) { return conv_transpose_call(k, x, w, b, s, p, op, groups, d); },
          "input"_a, "weight"_a, "bias"_a = none, "stride"_a = 1, "padding"_a = 0,
          "output_padding"_a = 0, "groups"_a = 1, "dilation"_a = 1);

    // pooling
    m.def(str_cat("max_pool", k, "d").c_str(),
          [k](py::handle x, py::handle ks, py::handle s, py::handle p, py::handle d, bool ceil_mode,
              bool return_indices) { return max_pool_call(k, return_indices, x, ks, s, p, d, ceil_mode); },
          "input"_a, "kernel_size"_a, "stride"_a = none, "padding"_a = 0, "dilation"_a = 1,
          "ceil_mode"_a = false, "return_indices"_a = false);
    m.def(str_cat("max_pool", k, "d_with_indices").c_str(),
          [k](py::handle x, py::handle ks, py::handle s, py::handle p, py::handle d, bool ceil_mode) {
            return max_pool_call(k, true, x, ks, s, p, d, ceil_mode);
          },
          "input"_a, "kernel_size"_a, "stride"_a = none, "padding"_a = 0, "dilation"_a = 1,
          "ceil_mode"_a = false);
    m.def(str_cat("max_pool", k, "d_with_indices_backward").c_str(),
          [k](py::handle go, py::handle x, py::handle ks, py::handle s, py::handle p, py::handle d,
              bool ceil_mode, py::handle idx) {
            return max_pool_backward_call(k, go, x, ks, s, p, d, ceil_mode, idx);
          },
          "grad_output"_a, "input"_a, "kernel_size"_a, "stride"_a, "padding"_a, "dilation"_a,
          "ceil_mode"_a, "indices"_a);
    m.def(str_cat("avg_pool", k, "d").c_str(),
          [k](py::handle x, py::handle ks, py::handle s, py::handle p, bool ceil_mode, bool cip,
              py::handle dov) { return avg_pool_call(k, x, ks, s, p, ceil_mode, cip, dov); },
          "input"_a, "kernel_size"_a, "stride"_a = none, "padding"_a = 0, "ceil_mode"_a = false,
          "count_include_pad"_a = true, "divisor_override"_a = none);
    m.def(str_cat("avg_pool", k, "d_backward").c_str(),
          [k](py::handle go, py::handle x, py::handle ks, py::handle s, py::handle p, bool ceil_mode,
              bool cip, py::handle dov) {
            return avg_pool_backward_call(k, go, x, ks, s, p, ceil_mode, cip, dov);
          },
          "grad_output"_a, "input"_a, "kernel_size"_a, "stride"_a, "padding"_a, "ceil_mode"_a,
          "count_include_pad"_a, "divisor_override"_a = none);
    for (bool is_max : {false, true}) {
      const std::string base = str_cat(is_max ? "adaptive_max_pool" : "adaptive_avg_pool", k, "d");
      m.def(base.c_str(), [k, is_max](py::handle x, py::handle os) { return adaptive_call(k, is_max, x, os); },
            "input"_a, "output_size"_a);
      if (is_max)
        m.def((base + "_backward").c_str(),
              [k](py::handle go, py::handle x, py::handle idx) {
                return adaptive_backward_call(k, true, go, x, idx);
              },
              "grad_output"_a, "input"_a, "indices"_a);
      else
        for (const std::string& bname : {base + "_backward", "_" + base + "_backward"})
          m.def(bname.c_str(),
                [k](py::handle go, py::handle x) { return adaptive_backward_call(k, false, go, x, py::none()); },
                "grad_output"_a, "input"_a);
    }
  }

  // nll_loss (aten::nll_loss_nd semantics under every name)
  for (const char* name : {"nll_loss", "nll_loss_nd", "nll_loss2d"})
    m.def(name, &nll_loss_call, "input"_a, "target"_a, "weight"_a = none, "reduction"_a = 1,
          "ignore_index"_a = -100);
  m.def("nll_loss_forward", [](py::handle xh, py::handle th, py::handle wh, py::handle redh, int64_t ii) {
    Tensor x = expect_tensor(xh, "nll_loss_forward", "input"), t = expect_tensor(th, "nll_loss_forward", "target");
    auto [o, tw] = nll_loss_forward(x, t, opt_tensor(wh, "nll_loss_forward", "weight"), reduction_of(redh), ii);
    return py::make_tuple(wrap(o), wrap(tw));
  }, "input"_a, "target"_a, "weight"_a = none, "reduction"_a = 1, "ignore_index"_a = -100);
  m.def("nll_loss_backward", &nll_loss_backward_call, "grad_output"_a, "input"_a, "target"_a,
        "weight"_a = none, "reduction"_a = 1, "ignore_index"_a = -100, "total_weight"_a = none);

  m.def("native_batch_norm", &batch_norm_call, "input"_a, "weight"_a, "bias"_a, "running_mean"_a,
        "running_var"_a, "training"_a, "momentum"_a, "eps"_a);
  m.def("native_batch_norm_backward", &batch_norm_backward_call, "grad_out"_a, "input"_a,
        "weight"_a, "running_mean"_a, "running_var"_a, "save_mean"_a, "save_invstd"_a, "train"_a,
        "eps"_a, "output_mask"_a);
  m.def("native_layer_norm", &layer_norm_call, "input"_a, "normalized_shape"_a, "weight"_a,
        "bias"_a, "eps"_a);
  m.def("native_layer_norm_backward", &layer_norm_backward_call, "grad_out"_a, "input"_a,
        "normalized_shape"_a, "mean"_a, "rstd"_a, "weight"_a, "bias"_a, "output_mask"_a);

  m.def("embedding", &embedding_call, "weight"_a, "indices"_a, "padding_idx"_a = -1,
        "scale_grad_by_freq"_a = false, "sparse"_a = false);
  m.def("embedding_dense_backward",
        [](py::handle go, py::handle i, int64_t n, int64_t p, bool s) {
          return embedding_backward_call(go, i, n, p, s, false);
        },
        "grad_output"_a, "indices"_a, "num_weights"_a, "padding_idx"_a, "scale_grad_by_freq"_a);
  m.def("embedding_backward", &embedding_backward_call, "grad"_a, "indices"_a, "num_weights"_a,
        "padding_idx"_a, "scale_grad_by_freq"_a, "sparse"_a);

  m.def("_thnn_fused_lstm_cell", &lstm_cell_call, "input_gates"_a, "hidden_gates"_a, "cx"_a,
        "input_bias"_a = none, "hidden_bias"_a = none);
  m.def("_thnn_fused_lstm_cell_backward_impl", &lstm_cell_backward_call, "grad_hy"_a, "grad_cy"_a,
        "cx"_a, "cy"_a, "workspace"_a, "has_bias"_a);
  m.def("_thnn_fused_gru_cell", &gru_cell_call, "input_gates"_a, "hidden_gates"_a, "hx"_a,
        "input_bias"_a = none, "hidden_bias"_a = none);
  m.def("_thnn_fused_gru_cell_backward", &gru_cell_backward_call, "grad_hy"_a, "workspace"_a,
        "has_bias"_a);
}

}  // namespace ember::pyb
