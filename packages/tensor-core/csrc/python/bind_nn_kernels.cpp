// bind_nn_kernels.cpp: the core kernels ember.nn composes, declared in the op registry
// (python/registry.h) under PyTorch's names and signatures (torch.*, torch._C._nn.*; aten's schema
// for the kernels torch binds only as aten::*): convolution (ops/conv.h), pooling (ops/pool.h),
// nll_loss, batch/layer norm and embedding (ops/nn_kernels.h), GELU (ops/activation.h), the
// fused LSTM/GRU cells (ops/rnn_kernels.h) and whole layers (ops/rnn_layer.h), with their
// backward kernels.
//
// Autograd and devices: a call with an input that requires grad goes to
// `redispatch(name, _C.<name>, args, kwargs)` in a canonical form that the formulas
// (autograd/_formulas_nn.py) and the CUDA kernels (ember/cuda/_nn_ops.py) read: the arguments up
// to the last tensor positionally, in the aten signature's order, the rest as keywords with every
// int list a list of one entry per spatial dim (stride resolved, single ints expanded). The
// friendly forms go to one canonical op: conv1d/2d/3d and conv_transpose* to "convolution",
// max_poolNd to "max_poolNd_with_indices". Rows whose generic hand-off gives exactly that form use
// it; the others (`hand_off = false`) build it in their `impl`.
#include <array>
#include <cmath>
#include <string>

#include "ops/activation.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/nn_kernels.h"
#include "ops/pool.h"
#include "ops/rnn_kernels.h"
#include "ops/rnn_layer.h"
#include "python/pyutils.h"
#include "python/registry.h"

using namespace pybind11::literals;

namespace ember::pyb {
namespace {


// To the autograd hook (an input requires grad) or the device hook, under `name`.
py::object hand_off(const char* name, py::tuple args, py::dict kwargs) {
  return redispatch(name, core_fn(name), std::move(args), std::move(kwargs));
}

// True when the call leaves the CPU kernels: a tensor argument requires grad (grad mode on) or
// lives on a device.
bool leaves_cpu(const Args& a) {
  const Schema& s = a.schema();
  for (int i = 0; i < static_cast<int>(s.params.size()); ++i) {
    if (a.is_none(i)) continue;
    if (s.params[i].type == ArgType::Tensor && needs_dispatch(a.tensor(i))) return true;
    if (s.params[i].type == ArgType::TensorList)
      for (const Tensor& t : a.tensors(i))
        if (needs_dispatch(t)) return true;
  }
  return false;
}

py::object none_or(const Tensor& t) { return t ? wrap(t) : py::none(); }

py::list list_of(const Shape& s) {
  py::list l;
  for (auto v : s) l.append(v);
  return l;
}

// An int[k] argument with one entry per spatial dim: the schema repeats a single int; a one-entry
// list is repeated too, as torch's kernels do (conv2d(x, w, stride=[2])). Other lengths are left
// to the kernel's check.
Shape spatial(const Args& a, int i, int64_t k) {
  Shape v = a.ints(i);
  if (v.size() == 1 && k > 1) v.assign(k, v[0]);
  return v;
}

bool is_bool(py::handle h) {
  if (PyBool_Check(h.ptr())) return true;
  if (!is_number(h)) return false;
  const std::string t = type_of(h);  // NumPy's bool scalar: "bool_" (NumPy 1), "bool" (NumPy 2)
  return t == "bool_" || t == "bool";
}

// aten's `bool[3] output_mask`: which of the three gradients to compute.
std::array<bool, 3> output_mask(const Args& a, int i) {
  py::handle h = a[i];
  std::array<bool, 3> mask{};
  bool ok = (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) && py::len(h) == 3;
  int j = 0;
  if (ok)
    for (py::handle item : py::reinterpret_borrow<py::sequence>(h)) {
      if (!is_bool(item)) ok = false;
      else mask[j++] = PyObject_IsTrue(item.ptr()) == 1;
    }
  if (!ok)
    throw py::type_error(str_cat(a.schema().name, "(): argument 'output_mask' must be a list or "
                                 "tuple of 3 bools, not ", type_of(h)));
  return mask;
}

py::tuple mask_obj(const std::array<bool, 3>& m) { return py::make_tuple(m[0], m[1], m[2]); }

// ---- convolution ----

// The canonical convolution: every list has one entry per spatial dim.
py::object convolution_run(py::handle xh, py::handle wh, py::handle bh, const Shape& stride,
                           const Shape& padding, const Shape& dilation, bool transposed,
                           const Shape& opad, int64_t groups) {
  Tensor x = to_tensor(xh), w = to_tensor(wh), b = bh.is_none() ? Tensor() : to_tensor(bh);
  if (needs_dispatch(x) || needs_dispatch(w) || needs_dispatch(b))
    return hand_off("convolution", py::make_tuple(xh, wh, bh),
                    py::dict("stride"_a = list_of(stride), "padding"_a = list_of(padding),
                             "dilation"_a = list_of(dilation), "transposed"_a = transposed,
                             "output_padding"_a = list_of(opad), "groups"_a = groups));
  return wrap(convolution(x, w, b, stride, padding, dilation, transposed, opad, groups));
}

void check_conv_dims(int64_t k, const std::string& name, const Tensor& x, const Tensor& w) {
  EMBER_CHECK(x->dim() == k + 1 || x->dim() == k + 2, std::runtime_error, "Expected ", k + 1,
              "D (unbatched) or ", k + 2, "D (batched) input to ", name, ", but got input of size: ",
              shape_str(x->sizes));
  EMBER_CHECK(w->dim() == k + 2, std::runtime_error, name, ": expected weight to be ", k + 2,
              "-dimensional, but got weight of size ", shape_str(w->sizes));
}

// A friendly form (conv{k}d, conv_transpose{k}d) of a complex input, as torch's
// complex_convolution: real convolutions of the parts, composed in Python so that autograd records
// them (_composite_ops/nn_forms.py). The canonical `convolution` refuses complex, as torch's.
py::object complex_convolution(const Args& a) {
  static py::object* compose = new py::object(  // leaked: outlives interpreter teardown
      py::module_::import("ember._composite_ops.nn_forms").attr("_complex_convolution"));
  py::tuple args(a.schema().params.size() + 1);
  args[0] = core_fn(a.schema().name.c_str());
  for (size_t i = 0; i < a.schema().params.size(); ++i)
    args[i + 1] = py::reinterpret_borrow<py::object>(a[static_cast<int>(i)]);
  return (*compose)(*args);
}

// conv{k}d; overload 1 takes padding by name ('valid' / 'same').
py::object conv_impl(int64_t k, const Args& a) {
  const std::string name = str_cat("conv", k, "d");
  Tensor x = a.tensor(0), w = a.tensor(1), b = a.opt_tensor(2);
  check_conv_dims(k, name, x, w);
  if (is_complex(x->dtype)) return complex_convolution(a);
  const Shape stride = spatial(a, 3, k), dilation = spatial(a, 5, k), zeros(k, 0);
  const int64_t groups = a.integer(6);
  if (a.overload() == 0)
    return convolution_run(a[0], a[1], a[2], stride, spatial(a, 4, k), dilation, false, zeros,
                           groups);
  const std::string mode = a.str(4);
  if (mode == "valid")
    return convolution_run(a[0], a[1], a[2], stride, zeros, dilation, false, zeros, groups);
  if (mode != "same") throw std::runtime_error("Invalid padding string: '" + mode + "'");
  if (!needs_dispatch(x) && !needs_dispatch(w) && !needs_dispatch(b))
    return wrap(convolution_same(x, w, b, stride, dilation, groups));
  for (auto s : stride)
    EMBER_CHECK(s == 1, std::runtime_error, "padding='same' is not supported for strided convolutions");
  EMBER_CHECK(static_cast<int64_t>(dilation.size()) == k, std::runtime_error,
              "expected dilation to be a single integer value or a list of ", k,
              " values to match the convolution dimensions, but got dilation=", shape_str(dilation));
  // Recorded as one convolution: symmetric padding of the larger side, then the extra leading
  // output element dropped where dilation * (kernel - 1) is odd (PyTorch pads it at the end).
  Shape pad(k);
  std::vector<bool> odd(k);
  for (int64_t i = 0; i < k; ++i) {
    const int64_t total = dilation[i] * (w->sizes[2 + i] - 1);
    pad[i] = total - total / 2;
    odd[i] = total % 2 == 1;
  }
  py::object r = convolution_run(a[0], a[1], a[2], stride, pad, dilation, false, zeros, groups);
  const int64_t off = x->dim() - k;
  for (int64_t i = 0; i < k; ++i)
    if (odd[i]) r = r.attr("narrow")(off + i, 1, x->sizes[off + i]);
  return r;
}

py::object conv_transpose_impl(int64_t k, const Args& a) {
  Tensor x = a.tensor(0), w = a.tensor(1);
  check_conv_dims(k, str_cat("conv_transpose", k, "d"), x, w);
  if (is_complex(x->dtype)) return complex_convolution(a);
  return convolution_run(a[0], a[1], a[2], spatial(a, 3, k), spatial(a, 4, k), spatial(a, 7, k),
                         true, spatial(a, 5, k), a.integer(6));
}

// ---- pooling ----

struct PoolArgs {
  Shape kernel, stride, padding, dilation;
};

// kernel_size, stride, padding (and dilation) from parameter `first` on; a stride of None or []
// is the kernel size (PyTorch's default).
PoolArgs pool_args(int64_t k, const Args& a, int first, bool with_dilation) {
  PoolArgs p;
  p.kernel = spatial(a, first, k);
  p.stride = a.is_none(first + 1) ? Shape() : spatial(a, first + 1, k);
  if (p.stride.empty()) p.stride = p.kernel;
  p.padding = spatial(a, first + 2, k);
  p.dilation = with_dilation ? spatial(a, first + 3, k) : Shape(k, 1);
  for (const Shape* s : {&p.kernel, &p.stride, &p.padding, &p.dilation})
    EMBER_CHECK(static_cast<int64_t>(s->size()) == k, std::runtime_error, a.schema().name,
                ": kernel_size, stride, padding and dilation must either be a single int, or a "
                "tuple of ", k, " ints");
  return p;
}

py::dict max_kwargs(const PoolArgs& p, bool ceil_mode) {
  return py::dict("kernel_size"_a = list_of(p.kernel), "stride"_a = list_of(p.stride),
                  "padding"_a = list_of(p.padding), "dilation"_a = list_of(p.dilation),
                  "ceil_mode"_a = ceil_mode);
}

// max_pool{k}d and max_pool{k}d_with_indices: recorded as the latter.
py::object max_pool_impl(int64_t k, bool with_indices, const Args& a) {
  const PoolArgs p = pool_args(k, a, 1, true);
  const bool ceil_mode = a.flag(5);
  if (leaves_cpu(a)) {
    const std::string name = str_cat("max_pool", k, "d_with_indices");
    py::object r = hand_off(name.c_str(), py::make_tuple(a[0]), max_kwargs(p, ceil_mode));
    return with_indices ? r : py::object(r[py::int_(0)]);
  }
  auto [v, i] = max_pool_with_indices(a.tensor(0), p.kernel, p.stride, p.padding, p.dilation,
                                      ceil_mode, with_indices);
  if (with_indices) return py::make_tuple(wrap(v), wrap(i));
  return wrap(v);
}

py::object max_pool_backward_impl(int64_t k, const Args& a) {
  const PoolArgs p = pool_args(k, a, 2, true);
  const bool ceil_mode = a.flag(6);
  if (leaves_cpu(a)) {
    py::dict kw = max_kwargs(p, ceil_mode);
    kw["indices"] = a[7];
    return hand_off(a.schema().name.c_str(), py::make_tuple(a[0], a[1]), kw);
  }
  return wrap(max_pool_with_indices_backward(a.tensor(0), a.tensor(1), p.kernel, p.stride,
                                             p.padding, p.dilation, ceil_mode, a.tensor(7)));
}

// avg_pool1d has no divisor_override (torch's has none): its hook arguments leave it out, since
// the double backward calls avg_pool1d with the backward's keywords.
py::dict avg_kwargs(int64_t k, const PoolArgs& p, bool ceil_mode, bool cip,
                    std::optional<int64_t> dov) {
  py::dict kw("kernel_size"_a = list_of(p.kernel), "stride"_a = list_of(p.stride),
              "padding"_a = list_of(p.padding), "ceil_mode"_a = ceil_mode,
              "count_include_pad"_a = cip);
  if (k > 1) kw["divisor_override"] = dov ? py::object(py::int_(*dov)) : py::none();
  return kw;
}

py::object avg_pool_impl(int64_t k, const Args& a) {
  const PoolArgs p = pool_args(k, a, 1, false);
  const bool ceil_mode = a.flag(4), cip = a.flag(5);
  const std::optional<int64_t> dov = k > 1 ? a.opt_integer(6) : std::nullopt;
  if (leaves_cpu(a))
    return hand_off(a.schema().name.c_str(), py::make_tuple(a[0]), avg_kwargs(k, p, ceil_mode, cip, dov));
  return wrap(avg_pool(a.tensor(0), p.kernel, p.stride, p.padding, ceil_mode, cip, dov));
}

py::object avg_pool_backward_impl(int64_t k, const Args& a) {
  const PoolArgs p = pool_args(k, a, 2, false);
  const bool ceil_mode = a.flag(5), cip = a.flag(6);
  const std::optional<int64_t> dov = k > 1 ? a.opt_integer(7) : std::nullopt;
  if (leaves_cpu(a))
    return hand_off(a.schema().name.c_str(), py::make_tuple(a[0], a[1]),
                    avg_kwargs(k, p, ceil_mode, cip, dov));
  return wrap(avg_pool_backward(a.tensor(0), a.tensor(1), p.kernel, p.stride, p.padding,
                                ceil_mode, cip, dov));
}

py::object adaptive_impl(int64_t k, bool is_max, const Args& a) {
  const Shape os = a.ints(1);  // an int was repeated k times by the schema
  EMBER_CHECK(static_cast<int64_t>(os.size()) == k, std::runtime_error, a.schema().name,
              ": output_size must be ", k);
  if (leaves_cpu(a))
    return hand_off(a.schema().name.c_str(), py::make_tuple(a[0]), py::dict("output_size"_a = list_of(os)));
  if (is_max) {
    auto [v, i] = adaptive_max_pool(a.tensor(0), os);
    return py::make_tuple(wrap(v), wrap(i));
  }
  return wrap(adaptive_avg_pool(a.tensor(0), os));
}

// ---- nll_loss ----

// reduction by name ('none', 'mean', 'sum') or as at::Reduction (0, 1, 2).
int64_t reduction_of(const Args& a, int i) {
  if (a.overload() == 0) return a.integer(i);
  const std::string s = a.str(i);
  if (s == "none") return 0;
  if (s == "mean") return 1;
  if (s == "sum") return 2;
  throw py::value_error(s + " is not a valid value for reduction");
}

// nll_loss, nll_loss_nd, nll_loss2d: aten::nll_loss_nd's semantics, recorded as nll_loss with the
// reduction as an int.
py::object nll_loss_impl(const Args& a) {
  const int64_t reduction = reduction_of(a, 3), ignore_index = a.integer(4);
  if (leaves_cpu(a))
    return hand_off("nll_loss", py::make_tuple(a[0], a[1], a[2]),
                    py::dict("reduction"_a = reduction, "ignore_index"_a = ignore_index));
  return wrap(nll_loss_forward(a.tensor(0), a.tensor(1), a.opt_tensor(2), reduction, ignore_index).first);
}

}  // namespace

void register_nn_kernels(py::module_& m) {
  const char* CONV = "convolution";
  const char* POOL = "pooling";
  const char* LOSS = "loss";
  const char* NORM = "normalization";

  // ---- convolution ----
  // torch.convolution takes int lists only (no single ints); a one-entry list stands for every
  // spatial dim, as in torch.
  def_op(m, {.name = "convolution",
             .signatures = {"convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, "
                            "int[] padding, int[] dilation, bool transposed, int[] output_padding, "
                            "SymInt groups) -> Tensor"},
             .family = CONV, .variants = kFunction, .hooked = true, .hand_off = false,
             .impl = [](const Args& a) {
               const int64_t k = std::max<int64_t>(a.tensor(1)->dim() - 2, 1);
               return convolution_run(a[0], a[1], a[2], spatial(a, 3, k), spatial(a, 4, k),
                                      spatial(a, 5, k), a.flag(6), spatial(a, 7, k), a.integer(8));
             }});
  // the shapes and errors of convolution for ember.cuda's kernels (memory-free stand-ins): a
  // helper, not an op
  m.def("_convolution_shape", [](const Tensor& x, const Tensor& w, py::handle bh, const Shape& stride,
                                 const Shape& padding, const Shape& dilation, bool transposed,
                                 const Shape& opad, int64_t groups) {
    return list_of(convolution_output_shape(x, w, bh.is_none() ? Tensor() : expect_tensor(bh, "convolution", "bias"),
                                            stride, padding, dilation, transposed, opad, groups));
  }, "input"_a, "weight"_a, "bias"_a, "stride"_a, "padding"_a, "dilation"_a, "transposed"_a,
     "output_padding"_a, "groups"_a);
  def_op(m, {.name = "convolution_backward",
             .signatures = {"convolution_backward(Tensor grad_output, Tensor input, Tensor weight, "
                            "int[]? bias_sizes, int[] stride, int[] padding, int[] dilation, "
                            "bool transposed, int[] output_padding, SymInt groups, Any output_mask) "
                            "-> (Tensor, Tensor, Tensor)"},
             .family = CONV, .variants = kFunction, .hooked = true, .hand_off = false,
             .doc = "aten::convolution_backward; output_mask: three bools (bool[3]).",
             .impl = [](const Args& a) {
               const int64_t k = std::max<int64_t>(a.tensor(2)->dim() - 2, 1);
               const Shape stride = spatial(a, 4, k), padding = spatial(a, 5, k),
                           dilation = spatial(a, 6, k), opad = spatial(a, 8, k);
               const std::optional<Shape> bias_sizes =
                   a.is_none(3) ? std::nullopt : std::optional<Shape>(a.ints(3));
               const bool transposed = a.flag(7);
               const int64_t groups = a.integer(9);
               const auto mask = output_mask(a, 10);
               if (leaves_cpu(a))
                 return hand_off("convolution_backward", py::make_tuple(a[0], a[1], a[2]),
                                 py::dict("bias_sizes"_a = bias_sizes ? py::object(list_of(*bias_sizes)) : py::none(),
                                          "stride"_a = list_of(stride), "padding"_a = list_of(padding),
                                          "dilation"_a = list_of(dilation), "transposed"_a = transposed,
                                          "output_padding"_a = list_of(opad), "groups"_a = groups,
                                          "output_mask"_a = mask_obj(mask)));
               auto [gi, gw, gb] = convolution_backward(a.tensor(0), a.tensor(1), a.tensor(2), bias_sizes,
                                                        stride, padding, dilation, transposed, opad,
                                                        groups, mask);
               return py::object(py::make_tuple(none_or(gi), none_or(gw), none_or(gb)));
             }});

  for (int64_t k = 1; k <= 3; ++k) {
    const std::string d = str_cat(k, "d"), ints = str_cat("int[", k, "]");
    // conv{k}d: padding as ints, or by name ('valid', 'same'); recorded as convolution
    const std::string conv = "conv" + d;
    const std::string conv_head = conv + "(Tensor input, Tensor weight, Tensor? bias=None, " + ints +
                                  " stride=1, ";
    const std::string conv_tail = ", " + ints + " dilation=1, SymInt groups=1) -> Tensor";
    def_op(m, {.name = conv,
               .signatures = {conv_head + ints + " padding=0" + conv_tail,
                              conv_head + "str padding='valid'" + conv_tail},
               .family = CONV, .variants = kFunction, .hooked = true, .hand_off = false,
               .doc = "Recorded as convolution.",
               .impl = [k](const Args& a) { return conv_impl(k, a); }});
    const std::string convt = "conv_transpose" + d;
    def_op(m, {.name = convt,
               .signatures = {convt + "(Tensor input, Tensor weight, Tensor? bias=None, " + ints +
                              " stride=1, " + ints + " padding=0, " + ints + " output_padding=0, "
                              "SymInt groups=1, " + ints + " dilation=1) -> Tensor"},
               .family = CONV, .variants = kFunction, .hooked = true, .hand_off = false,
               .doc = "Recorded as convolution.",
               .impl = [k](const Args& a) { return conv_transpose_impl(k, a); }});

    // max_pool{k}d (values; torch's takes no return_indices) and max_pool{k}d_with_indices:
    // recorded as the latter. A stride of None or [] is the kernel size.
    const std::string pool_params = "(Tensor input, " + ints + " kernel_size, " + ints +
                                    "? stride=None, " + ints + " padding=0, " + ints +
                                    " dilation=1, bool ceil_mode=False)";
    const std::string maxp = "max_pool" + d, maxpi = maxp + "_with_indices";
    def_op(m, {.name = maxp, .signatures = {maxp + pool_params + " -> Tensor"},
               .family = POOL, .variants = kFunction, .hooked = true, .hand_off = false,
               .doc = "Recorded as " + maxpi + ".",
               .impl = [k](const Args& a) { return max_pool_impl(k, false, a); }});
    def_op(m, {.name = maxpi, .signatures = {maxpi + pool_params + " -> (Tensor, Tensor)"},
               .family = POOL, .variants = kFunction, .hooked = true, .hand_off = false,
               .impl = [k](const Args& a) { return max_pool_impl(k, true, a); }});
    const std::string maxpb = maxpi + "_backward";
    def_op(m, {.name = maxpb,
               .signatures = {maxpb + "(Tensor grad_output, Tensor input, " + ints + " kernel_size, " +
                              ints + " stride, " + ints + " padding, " + ints + " dilation, "
                              "bool ceil_mode, Tensor indices) -> Tensor"},
               .family = POOL, .variants = kFunction, .hooked = true, .hand_off = false,
               .impl = [k](const Args& a) { return max_pool_backward_impl(k, a); }});

    // avg_pool{k}d: divisor_override for 2-d and 3-d only, as torch's
    const std::string avgp = "avg_pool" + d, avgpb = avgp + "_backward";
    const std::string dov = k > 1 ? ", int? divisor_override=None" : "";
    def_op(m, {.name = avgp,
               .signatures = {avgp + "(Tensor input, " + ints + " kernel_size, " + ints +
                              "? stride=None, " + ints + " padding=0, bool ceil_mode=False, "
                              "bool count_include_pad=True" + dov + ") -> Tensor"},
               .family = POOL, .variants = kFunction, .hooked = true, .hand_off = false,
               .impl = [k](const Args& a) { return avg_pool_impl(k, a); }});
    def_op(m, {.name = avgpb,
               .signatures = {avgpb + "(Tensor grad_output, Tensor input, " + ints + " kernel_size, " +
                              ints + " stride, " + ints + " padding, bool ceil_mode, "
                              "bool count_include_pad" + dov + ") -> Tensor"},
               .family = POOL, .variants = kFunction, .hooked = true, .hand_off = false,
               .impl = [k](const Args& a) { return avg_pool_backward_impl(k, a); }});

    // adaptive pooling: output_size an int or k ints (None entries are ember.nn.functional's,
    // as torch.nn.functional's)
    for (bool is_max : {false, true}) {
      const std::string base = (is_max ? "adaptive_max_pool" : "adaptive_avg_pool") + d;
      def_op(m, {.name = base,
                 .signatures = {base + "(Tensor input, " + ints + " output_size) -> " +
                                (is_max ? "(Tensor, Tensor)" : "Tensor")},
                 .family = POOL, .variants = kFunction, .hooked = true, .hand_off = false,
                 .impl = [k, is_max](const Args& a) { return adaptive_impl(k, is_max, a); }});
    }
    const std::string amaxb = "adaptive_max_pool" + d + "_backward";
    def_op(m, {.name = amaxb,
               .signatures = {amaxb + "(Tensor grad_output, Tensor input, Tensor indices) -> Tensor"},
               // the hooks take indices by keyword
               .family = POOL, .variants = kFunction, .hooked = true, .hook_positional = 2,
               .impl = [k](const Args& a) {
                 return wrap(adaptive_max_pool_backward(a.tensor(0), a.tensor(1), a.tensor(2), k));
               }});
    const std::string aavgb = "adaptive_avg_pool" + d + "_backward";
    def_op(m, {.name = aavgb,
               .signatures = {aavgb + "(Tensor grad_output, Tensor input) -> Tensor"},
               .family = POOL, .variants = kFunction, .hooked = true,
               .impl = [k](const Args& a) {
                 return wrap(adaptive_avg_pool_backward(a.tensor(0), a.tensor(1), k));
               }});
    // aten's name of the same kernel; recorded under the name above
    const std::string aavgb_aten = "_" + aavgb;
    def_op(m, {.name = aavgb_aten,
               .signatures = {aavgb_aten + "(Tensor grad_output, Tensor input) -> Tensor"},
               .family = POOL, .variants = kFunction, .hooked = true, .hand_off = false,
               .doc = "Recorded as " + aavgb + ".",
               .impl = [k, aavgb](const Args& a) {
                 if (leaves_cpu(a)) return hand_off(aavgb.c_str(), py::make_tuple(a[0], a[1]), py::dict());
                 return wrap(adaptive_avg_pool_backward(a.tensor(0), a.tensor(1), k));
               }});
  }

  // ---- nll_loss ----
  // aten::nll_loss_nd's semantics under every name; the reduction as at::Reduction (torch's) or,
  // as ember's user guide has it, by name; recorded as nll_loss with an int reduction.
  for (const std::string name : {"nll_loss", "nll_loss_nd", "nll_loss2d"}) {
    const std::string head = name + "(Tensor input, Tensor target, Tensor? weight=None, ";
    def_op(m, {.name = name,
               .signatures = {head + "int reduction=1, SymInt ignore_index=-100) -> Tensor",
                              head + "str reduction='mean', SymInt ignore_index=-100) -> Tensor"},
               .family = LOSS, .variants = kFunction, .hooked = true, .hand_off = false,
               .doc = "The second form (reduction 'none', 'mean' or 'sum') is ember's.",
               .impl = nll_loss_impl});
  }
  def_op(m, {.name = "nll_loss_forward",
             .signatures = {"nll_loss_forward(Tensor input, Tensor target, Tensor? weight=None, "
                            "int reduction=1, SymInt ignore_index=-100) -> (Tensor output, Tensor total_weight)"},
             .family = LOSS, .variants = kFunction, .cuda = "none",
             .impl = [](const Args& a) {
               auto [o, tw] = nll_loss_forward(a.tensor(0), a.tensor(1), a.opt_tensor(2), a.integer(3),
                                               a.integer(4));
               return py::object(py::make_tuple(wrap(o), wrap(tw)));
             }});
  def_op(m, {.name = "nll_loss_backward",
             .signatures = {"nll_loss_backward(Tensor grad_output, Tensor input, Tensor target, "
                            "Tensor? weight=None, int reduction=1, SymInt ignore_index=-100, "
                            "Tensor? total_weight=None) -> Tensor"},
             .family = LOSS, .variants = kFunction, .hooked = true,
             .doc = "total_weight None: recomputed.",
             .impl = [](const Args& a) {
               return wrap(nll_loss_backward(a.tensor(0), a.tensor(1), a.tensor(2), a.opt_tensor(3),
                                             a.integer(4), a.integer(5), a.opt_tensor(6)));
             }});

  // ---- clamp-shaped activations and the one-pass gradients of ReLU and hardtanh ----
  // (torch._C._nn.hardtanh / hardtanh_ and aten's threshold_backward / hardtanh_backward: the
  // autograd formulas of relu, hardtanh and relu6 call the backward kernels instead of a `where`
  // over a bool temporary.)
  auto hardtanh_bounds = [](const Args& a) {
    return std::make_pair(Operand(a.scalar(1)), Operand(a.scalar(2)));
  };
  def_op(m, {.name = "hardtanh",
             .signatures = {"hardtanh(Tensor input, Scalar min_val=-1, Scalar max_val=1) -> Tensor"},
             .family = "activation", .variants = kFunction, .hooked = true,
             .impl = [hardtanh_bounds](const Args& a) {
               auto [lo, hi] = hardtanh_bounds(a);
               return wrap(clamp(a.tensor(0), &lo, &hi));
             }});
  def_op(m, {.name = "hardtanh_",
             .signatures = {"hardtanh_(Tensor input, Scalar min_val=-1, Scalar max_val=1) -> Tensor"},
             .family = "activation", .variants = kFunction, .hooked = true,
             .impl = [hardtanh_bounds](const Args& a) {
               auto [lo, hi] = hardtanh_bounds(a);
               const Tensor x = a.tensor(0);
               clamp(x, &lo, &hi, x);
               return py::reinterpret_borrow<py::object>(a[0]);
             }});
  def_op(m, {.name = "threshold_backward",
             .signatures = {"threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) "
                            "-> Tensor"},
             .family = "activation", .variants = kFunction, .hooked = true,
             .impl = [](const Args& a) {
               return wrap(threshold_backward(a.tensor(0), a.tensor(1), a.real(2)));
             }});
  def_op(m, {.name = "hardtanh_backward",
             .signatures = {"hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, "
                            "Scalar max_val) -> Tensor"},
             .family = "activation", .variants = kFunction, .hooked = true,
             .impl = [](const Args& a) {
               return wrap(hardtanh_backward(a.tensor(0), a.tensor(1), a.real(2), a.real(3)));
             }});

  // ---- batch norm / layer norm ----
  def_op(m, {.name = "native_batch_norm",
             .signatures = {"native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, "
                            "Tensor? running_mean, Tensor? running_var, bool training, "
                            "float momentum, float eps) -> (Tensor, Tensor, Tensor)"},
             .family = NORM, .variants = kFunction, .hooked = true,
             .impl = [](const Args& a) {
               const Tensor rm = a.opt_tensor(3), rv = a.opt_tensor(4);
               if (static_cast<bool>(rm) != static_cast<bool>(rv))  // (torch's first check)
                 throw py::value_error(
                     "running_mean and running_var must either both be None or neither be None");
               const bool training = a.flag(5);
               for (const Tensor& r : {rm, rv})
                 if (r && training) check_inplace_writable(r, "native_batch_norm");
               auto [o, mean, invstd] = native_batch_norm(a.tensor(0), a.opt_tensor(1), a.opt_tensor(2),
                                                          rm, rv, training, a.real(6), a.real(7));
               return py::object(py::make_tuple(wrap(o), wrap(mean), wrap(invstd)));
             }});
  def_op(m, {.name = "native_batch_norm_backward",
             .signatures = {"native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
                            "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, "
                            "Tensor? save_invstd, bool train, float eps, Any output_mask) "
                            "-> (Tensor, Tensor, Tensor)"},
             .family = NORM, .variants = kFunction, .hooked = true, .hand_off = false,
             .doc = "output_mask: three bools (bool[3]).",
             .impl = [](const Args& a) {
               const auto mask = output_mask(a, 9);
               const bool train = a.flag(7);
               const double eps = a.real(8);
               if (leaves_cpu(a))
                 return hand_off("native_batch_norm_backward",
                                 py::make_tuple(a[0], a[1], a[2], a[3], a[4], a[5], a[6]),
                                 py::dict("train"_a = train, "eps"_a = eps, "output_mask"_a = mask_obj(mask)));
               auto [gi, gw, gb] = native_batch_norm_backward(
                   a.tensor(0), a.tensor(1), a.opt_tensor(2), a.opt_tensor(3), a.opt_tensor(4),
                   a.opt_tensor(5), a.opt_tensor(6), train, eps, mask);
               return py::object(py::make_tuple(none_or(gi), none_or(gw), none_or(gb)));
             }});
  def_op(m, {.name = "native_layer_norm",
             .signatures = {"native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, "
                            "Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)"},
             // the hooks take normalized_shape by position, between the tensors
             .family = NORM, .variants = kFunction, .hooked = true, .hook_positional = 4,
             .impl = [](const Args& a) {
               auto [o, mean, rstd] = native_layer_norm(a.tensor(0), a.ints(1), a.opt_tensor(2),
                                                        a.opt_tensor(3), a.real(4));
               return py::object(py::make_tuple(wrap(o), wrap(mean), wrap(rstd)));
             }});
  def_op(m, {.name = "native_layer_norm_backward",
             .signatures = {"native_layer_norm_backward(Tensor grad_out, Tensor input, "
                            "int[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, "
                            "Tensor? bias, Any output_mask) -> (Tensor, Tensor, Tensor)"},
             .family = NORM, .variants = kFunction, .hooked = true, .hand_off = false,
             .doc = "output_mask: three bools (bool[3]).",
             .impl = [](const Args& a) {
               const Shape ns = a.ints(2);
               const auto mask = output_mask(a, 7);
               if (leaves_cpu(a))
                 return hand_off("native_layer_norm_backward",
                                 py::make_tuple(a[0], a[1], list_of(ns), a[3], a[4], a[5], a[6]),
                                 py::dict("output_mask"_a = mask_obj(mask)));
               auto [gi, gw, gb] = native_layer_norm_backward(a.tensor(0), a.tensor(1), ns, a.tensor(3),
                                                              a.tensor(4), a.opt_tensor(5),
                                                              a.opt_tensor(6), mask);
               return py::object(py::make_tuple(none_or(gi), none_or(gw), none_or(gb)));
             }});

  // ---- GELU (ops/activation.h): ember.nn.functional.gelu's kernel on the CPU ----
  def_op(m, {.name = "gelu",
             .signatures = {"gelu(Tensor self, *, str approximate='none') -> Tensor"},
             .family = "activation", .variants = kFunction, .hooked = true, .cuda = "none",
             .impl = [](const Args& a) { return wrap(gelu(a.tensor(0), a.str(1))); }});
  def_op(m, {.name = "gelu_backward",
             .signatures = {"gelu_backward(Tensor grad_output, Tensor self, *, "
                            "str approximate='none') -> Tensor"},
             .family = "activation", .variants = kFunction, .cuda = "none",
             .doc = "Not differentiable: double backward composes the formula from core ops.",
             .impl = [](const Args& a) {
               check_not_differentiated("gelu_backward", {a.tensor(0), a.tensor(1)});
               return wrap(gelu_backward(a.tensor(0), a.tensor(1), a.str(2)));
             }});

  // ---- attention (ops/attention.cpp): F.scaled_dot_product_attention's CPU kernel ----
  def_op(m, {.name = "_scaled_dot_product_flash_attention_for_cpu",
             .signatures = {"_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, "
                            "Tensor value, float dropout_p=0.0, bool is_causal=False, *, "
                            "Tensor? attn_mask=None, float? scale=None) -> (Tensor, Tensor)"},
             .family = "attention", .variants = kFunction, .hooked = true, .cuda = "none",
             .doc = "-> (output, logsumexp). float32/float64 on the CPU, without attn_mask or "
                    "dropout (NotImplementedError): F.scaled_dot_product_attention composes core "
                    "ops for those.",
             .impl = [](const Args& a) {
               std::optional<double> scale;
               if (!a.is_none(6)) scale = a.real(6);
               auto [o, lse] = scaled_dot_product_attention_cpu(a.tensor(0), a.tensor(1), a.tensor(2),
                                                                a.real(3), a.flag(4), a.opt_tensor(5),
                                                                scale);
               return py::object(py::make_tuple(wrap(o), wrap(lse)));
             }});
  def_op(m, {.name = "_scaled_dot_product_flash_attention_for_cpu_backward",
             .signatures = {"_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, "
                            "Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, "
                            "float dropout_p, bool is_causal, *, Tensor? attn_mask=None, "
                            "float? scale=None) -> (Tensor, Tensor, Tensor)"},
             .family = "attention", .variants = kFunction, .cuda = "none",
             .doc = "-> (grad_query, grad_key, grad_value), each laid out as its input. Not "
                    "differentiable: double backward composes the formula from core ops.",
             .impl = [](const Args& a) {
               check_not_differentiated("_scaled_dot_product_flash_attention_for_cpu_backward",
                                        {a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3),
                                         a.tensor(4), a.tensor(5)});
               std::optional<double> scale;
               if (!a.is_none(9)) scale = a.real(9);
               auto [gq, gk, gv] = scaled_dot_product_attention_cpu_backward(
                   a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3), a.tensor(4), a.tensor(5),
                   a.real(6), a.flag(7), a.opt_tensor(8), scale);
               return py::object(py::make_tuple(wrap(gq), wrap(gk), wrap(gv)));
             }});

  // ---- embedding ----
  def_op(m, {.name = "embedding",
             .signatures = {"embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, "
                            "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor"},
             .family = "embedding", .variants = kFunction, .hooked = true,
             .doc = "padding_idx, scale_grad_by_freq: used by the gradient; sparse gradients are "
                    "not supported (the backward raises NotImplementedError).",
             .impl = [](const Args& a) { return wrap(embedding(a.tensor(0), a.tensor(1))); }});
  def_op(m, {.name = "embedding_dense_backward",
             .signatures = {"embedding_dense_backward(Tensor grad_output, Tensor indices, "
                            "SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor"},
             .family = "embedding", .variants = kFunction, .hooked = true,
             .impl = [](const Args& a) {
               return wrap(embedding_dense_backward(a.tensor(0), a.tensor(1), a.integer(2), a.integer(3),
                                                    a.flag(4)));
             }});
  def_op(m, {.name = "embedding_backward",
             .signatures = {"embedding_backward(Tensor grad, Tensor indices, SymInt num_weights, "
                            "SymInt padding_idx, bool scale_grad_by_freq, bool sparse) -> Tensor"},
             .family = "embedding", .variants = kFunction, .hooked = true, .hand_off = false,
             .doc = "Dense only; recorded as embedding_dense_backward.",
             .impl = [](const Args& a) {
               if (a.flag(5))
                 throw NotImplementedError("embedding_backward: sparse gradients are not supported");
               if (leaves_cpu(a))
                 return hand_off("embedding_dense_backward", py::make_tuple(a[0], a[1]),
                                 py::dict("num_weights"_a = a.integer(2), "padding_idx"_a = a.integer(3),
                                          "scale_grad_by_freq"_a = a.flag(4)));
               return wrap(embedding_dense_backward(a.tensor(0), a.tensor(1), a.integer(2), a.integer(3),
                                                    a.flag(4)));
             }});

  // ---- fused recurrent cells (ember.nn's LSTM/GRU); the backward kernels are not differentiable:
  // double backward composes the formula from core ops ----
  def_op(m, {.name = "_thnn_fused_lstm_cell",
             .signatures = {"_thnn_fused_lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx, "
                            "Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor, Tensor)"},
             .family = "rnn", .variants = kFunction, .hooked = true,
             .impl = [](const Args& a) {
               auto [hy, cy, ws] = fused_lstm_cell(a.tensor(0), a.tensor(1), a.tensor(2), a.opt_tensor(3),
                                                   a.opt_tensor(4));
               return py::object(py::make_tuple(wrap(hy), wrap(cy), wrap(ws)));
             }});
  def_op(m, {.name = "_thnn_fused_lstm_cell_backward_impl",
             .signatures = {"_thnn_fused_lstm_cell_backward_impl(Tensor? grad_hy, Tensor? grad_cy, "
                            "Tensor cx, Tensor cy, Tensor workspace, bool has_bias) -> (Tensor, Tensor, Tensor)"},
             .family = "rnn", .variants = kFunction, .cuda = "none",
             .impl = [](const Args& a) {
               const Tensor gh = a.opt_tensor(0), gc = a.opt_tensor(1), cx = a.tensor(2), cy = a.tensor(3),
                            ws = a.tensor(4);
               check_not_differentiated("_thnn_fused_lstm_cell_backward_impl", {gh, gc, cx, cy, ws});
               auto [gg, gcx, gb] = fused_lstm_cell_backward(gh, gc, cx, cy, ws, a.flag(5));
               return py::object(py::make_tuple(wrap(gg), wrap(gcx), none_or(gb)));
             }});
  def_op(m, {.name = "_thnn_fused_gru_cell",
             .signatures = {"_thnn_fused_gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx, "
                            "Tensor? input_bias=None, Tensor? hidden_bias=None) -> (Tensor, Tensor)"},
             .family = "rnn", .variants = kFunction, .hooked = true,
             .impl = [](const Args& a) {
               auto [hy, ws] = fused_gru_cell(a.tensor(0), a.tensor(1), a.tensor(2), a.opt_tensor(3),
                                              a.opt_tensor(4));
               return py::object(py::make_tuple(wrap(hy), wrap(ws)));
             }});
  def_op(m, {.name = "_thnn_fused_gru_cell_backward",
             .signatures = {"_thnn_fused_gru_cell_backward(Tensor grad_hy, Tensor workspace, "
                            "bool has_bias) -> (Tensor, Tensor, Tensor, Tensor, Tensor)"},
             .family = "rnn", .variants = kFunction, .cuda = "none",
             .impl = [](const Args& a) {
               const Tensor gh = a.tensor(0), ws = a.tensor(1);
               check_not_differentiated("_thnn_fused_gru_cell_backward", {gh, ws});
               auto [gi, ghid, ghx, gib, ghb] = fused_gru_cell_backward(gh, ws, a.flag(2));
               return py::object(py::make_tuple(wrap(gi), wrap(ghid), wrap(ghx), none_or(gib), none_or(ghb)));
             }});

  // ---- a whole LSTM/GRU layer, one direction (ops/rnn_layer.h): ember.nn's LSTM/GRU on the CPU ----
  def_op(m, {.name = "_rnn_layer",
             .signatures = {"_rnn_layer(Tensor input, Tensor weight_ih, Tensor weight_hh, Tensor? bias_ih, "
                            "Tensor? bias_hh, Tensor hx, Tensor? cx, str mode, bool reverse) "
                            "-> (Tensor, Tensor, Tensor, Tensor)"},
             .family = "rnn", .variants = kFunction, .hooked = true, .cuda = "none",
             .doc = "ember's own: -> (output, hy, cy, workspace); cy is empty for GRU.",
             .impl = [](const Args& a) {
               auto [out, hy, cy, ws] = rnn_layer(a.str(7), a.tensor(0), a.tensor(1), a.tensor(2),
                                                  a.opt_tensor(3), a.opt_tensor(4), a.tensor(5),
                                                  a.opt_tensor(6), a.flag(8));
               return py::object(py::make_tuple(wrap(out), wrap(hy), wrap(cy), wrap(ws)));
             }});
  def_op(m, {.name = "_rnn_layer_backward",
             .signatures = {"_rnn_layer_backward(Tensor? grad_output, Tensor? grad_hy, Tensor? grad_cy, "
                            "Tensor input, Tensor weight_ih, Tensor weight_hh, Tensor hx, Tensor? cx, "
                            "Tensor output, Tensor workspace, str mode, bool reverse, bool has_bias, "
                            "bool need_input=True, bool need_weights=True) "
                            "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)"},
             .family = "rnn", .variants = kFunction, .cuda = "none",
             .doc = "-> grads of (input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx), None "
                    "where not asked for; not differentiable (double backward recomputes the layer "
                    "step by step).",
             .impl = [](const Args& a) {
               check_not_differentiated("_rnn_layer_backward",
                                        {a.opt_tensor(0), a.opt_tensor(1), a.opt_tensor(2), a.tensor(3),
                                         a.tensor(4), a.tensor(5), a.tensor(8), a.tensor(9)});
               const RnnLayerGrads r = rnn_layer_backward(
                   a.str(10), a.opt_tensor(0), a.opt_tensor(1), a.opt_tensor(2), a.tensor(3), a.tensor(4),
                   a.tensor(5), a.flag(12), a.tensor(6), a.opt_tensor(7), a.tensor(8), a.tensor(9),
                   a.flag(11), a.flag(13), a.flag(14));
               return py::object(py::make_tuple(none_or(r.input), none_or(r.weight_ih), none_or(r.weight_hh),
                                                none_or(r.bias_ih), none_or(r.bias_hh), wrap(r.hx),
                                                none_or(r.cx)));
             }});
}

}  // namespace ember::pyb
