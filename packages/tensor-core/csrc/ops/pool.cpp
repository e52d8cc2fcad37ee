// pool.cpp: pooling kernels. Every op runs over 3 spatial dims internally (1-d and 2-d inputs get
// leading dims of size 1) and in parallel over the (N*C) planes, each plane's window loops being
// independent; backward kernels scatter into their own plane only, so they need no atomics.
// Output sizes, NaN handling (a NaN wins a max window) and messages follow PyTorch's
// aten/src/ATen/native/Pool.h, DilatedMaxPool*.cpp, AveragePool*.cpp, Adaptive*.cpp.
#include "ops/pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/iterator.h"
#include "ops/channels_last.h"
#include "ops/cpu_kernels.h"
#include "ops/shape_ops.h"
#include "ops/elementwise.h"
#include "kernels/vexp.h"
#include "runtime/gil.h"
#include "runtime/parallel.h"

namespace ember {
namespace {

struct Geo {
  int64_t k = 0;
  bool batched = true;
  int64_t N = 1, C = 1;
  int64_t I[3] = {1, 1, 1}, O[3] = {1, 1, 1}, K[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0},
          d[3] = {1, 1, 1};
  int64_t ivol() const { return I[0] * I[1] * I[2]; }
  int64_t ovol() const { return O[0] * O[1] * O[2]; }
  int64_t planes() const { return N * C; }
  // The output's shape in the caller's batching.
  Shape out_shape() const {
    Shape r;
    if (batched) r.push_back(N);
    r.push_back(C);
    for (int64_t i = 3 - k; i < 3; ++i) r.push_back(O[i]);
    return r;
  }
};

std::string join(const Shape& v, const char* sep) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? sep : "") + std::to_string(v[i]);
  return r;
}

// The input's batching and spatial sizes; PyTorch's "non-empty 3D or 4D" check.
Geo input_geo(const Tensor& x, int64_t k, const std::string& name, bool adaptive) {
  Geo g;
  g.k = k;
  const int64_t dim = x->dim();
  bool ok = dim == k + 1 || dim == k + 2;
  if (ok) {
    // Adaptive pools require only the spatial dims to be non-empty, window pools the channels too.
    for (int64_t i = adaptive ? dim - k : (dim == k + 2 ? 1 : 0); i < dim; ++i)
      if (x->sizes[i] == 0) {
        if (adaptive)
          throw std::runtime_error(str_cat(name, "(): Expected input to have non-zero size for "
                                           "non-batch dimensions, but input has sizes ",
                                           shape_str(x->sizes), " with dimension ", i,
                                           " being empty"));
        ok = false;
      }
  }
  EMBER_CHECK(ok, std::runtime_error, "non-empty ", k + 1, "D or ", k + 2,
              "D (batch mode) tensor expected for input");
  EMBER_CHECK(x->device().is_cpu(), std::runtime_error, name, ": expected a CPU tensor");
  g.batched = dim == k + 2;
  g.N = g.batched ? x->sizes[0] : 1;
  g.C = x->sizes[dim - k - 1];
  for (int64_t i = 0; i < k; ++i) g.I[3 - k + i] = x->sizes[dim - k + i];
  return g;
}

void check_len(const Shape& v, int64_t k, const std::string& name, const char* what, bool allow_empty) {
  if (static_cast<int64_t>(v.size()) == k || (allow_empty && v.empty())) return;
  throw std::runtime_error(str_cat(name, ": ", what, " must either be a single int, or a tuple of ",
                                   k, " ints"));
}

int64_t pool_out(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil_mode) {
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// Fills the window parameters and output sizes of a (max or avg) pooling, with every check.
Geo window_geo(const Tensor& x, const Shape& kernel, const Shape& stride_in, const Shape& padding,
               const Shape& dilation, bool ceil_mode, const char* kind) {
  const int64_t k = static_cast<int64_t>(kernel.size());
  const std::string name = str_cat(kind, k, "d");
  EMBER_CHECK(k >= 1 && k <= 3, std::runtime_error, name, ": kernel_size must have 1 to 3 entries");
  check_len(stride_in, k, name, "stride", true);
  check_len(padding, k, name, "padding", false);
  check_len(dilation, k, name, "dilation", false);
  const Shape& stride = stride_in.empty() ? kernel : stride_in;
  for (auto v : kernel)
    EMBER_CHECK(v > 0, std::runtime_error,
                "kernel size should be greater than zero, but got kernel_size=", shape_str(kernel));
  for (auto v : stride)
    EMBER_CHECK(v > 0, std::runtime_error, "stride should be greater than zero, but got stride=",
                shape_str(stride));
  for (auto v : dilation)
    EMBER_CHECK(v > 0, std::runtime_error,
                "dilation should be greater than zero, but got dilation=", shape_str(dilation));
  for (int64_t i = 0; i < k; ++i) {
    EMBER_CHECK(padding[i] >= 0, std::runtime_error, "pad must be non-negative, but got pad: ",
                padding[i]);
    EMBER_CHECK(padding[i] <= ((kernel[i] - 1) * dilation[i] + 1) / 2, std::runtime_error,
                "pad should be at most half of effective kernel size, but got pad=", padding[i],
                ", kernel_size=", kernel[i], " and dilation=", dilation[i]);
  }
  Geo g = input_geo(x, k, name, false);
  Shape in_sp, out_sp;
  bool small = false;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t j = 3 - k + i;
    g.K[j] = kernel[i], g.s[j] = stride[i], g.p[j] = padding[i], g.d[j] = dilation[i];
    g.O[j] = pool_out(g.I[j], kernel[i], padding[i], stride[i], dilation[i], ceil_mode);
    in_sp.push_back(g.I[j]);
    out_sp.push_back(g.O[j]);
    small |= g.O[j] < 1;
  }
  if (small)
    throw std::runtime_error(str_cat("Given input size: (", g.C, "x", join(in_sp, "x"),
                                     "). Calculated output size: (", g.C, "x", join(out_sp, "x"),
                                     "). Output size is too small"));
  return g;
}

// The dtypes torch's CPU pooling kernels take: floating ones, plus int64 (avg_pool) or every
// integer type (max_pool with indices); the others are its NotImplementedError, named after
// its kernel.
void check_pool_dtype(ScalarType dt, const std::string& kernel, bool int64 = false,
                      bool ints = false) {
  if (is_floating(dt) || (int64 && dt == ScalarType::Int64) ||
      (ints && dt != ScalarType::Bool && is_integral(dt, false)))
    return;
  throw NotImplementedError(str_cat("\"", kernel, "\" not implemented for '", type_name(dt), "'"));
}

// Taps k in [lo, hi) of a window starting at `start` (dilation d, K taps) with start + k*d in [0, I).
inline void tap_range(int64_t start, int64_t d, int64_t K, int64_t I, int64_t& lo, int64_t& hi) {
  lo = start >= 0 ? 0 : (-start + d - 1) / d;
  hi = start >= I ? 0 : std::min<int64_t>(K, (I - start + d - 1) / d);
  if (hi < lo) hi = lo;
}

template <typename A> inline bool is_nan_v(A v) {
  if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
  else return false;
}

int64_t plane_grain(const Geo& g, int64_t per_out) {
  return grain_for(g.ovol() * per_out);
}

// Checks a backward call's grad_output (and indices) against the forward's output shape.
void check_grad(const Tensor& go, const Geo& g, const Tensor& x, const std::string& name) {
  EMBER_CHECK(go->sizes == g.out_shape(), std::runtime_error, name,
              ": expected grad_output of size ", shape_str(g.out_shape()), ", but got ",
              shape_str(go->sizes));
  EMBER_CHECK(go->dtype == x->dtype, std::runtime_error, name, ": expected grad_output of dtype ",
              dtype_name(x->dtype), ", but got ", dtype_name(go->dtype));
}

void check_indices(const Tensor& idx, const Tensor& go, const std::string& name) {
  EMBER_CHECK(idx->dtype == ScalarType::Int64, std::runtime_error, name,
              ": expected indices of dtype int64, but got ", dtype_name(idx->dtype));
  EMBER_CHECK(idx->sizes == go->sizes, std::runtime_error, name, ": expected indices of size ",
              shape_str(go->sizes), ", but got ", shape_str(idx->sizes));
}

// The error for the first index of idx outside an input plane, if there is one.
void check_max_indices(const Tensor& idx, const Geo& g) {
  const int64_t ivol = g.ivol();
  const int64_t* ip = idx->data_as<int64_t>();
  for (int64_t i = 0, n = idx->numel(); i < n; ++i)
    EMBER_CHECK(ip[i] >= 0 && ip[i] < ivol, std::runtime_error, "Found an invalid max index: ",
                ip[i], " (output volumes are of size ", join(Shape(g.I + 3 - g.k, g.I + 3), "x"), ")");
}

// grad_input[plane, idx[o]] += grad_output[plane, o], each index checked as the scatter reads it
// (a pass of its own before the scatter took as long as the scatter); each (n, c)
// plane is scattered into its own plane, so no two threads write one element. A channels_last
// input (4-d) gives a channels_last gradient, as torch: its planes' elements lie C apart.
Tensor scatter_max_grad(const Tensor& go_in, const Tensor& x, const Tensor& idx_in, const Geo& g) {
  const bool cl = is_channels_last(x);
  Tensor go = cl ? to_channels_last(go_in) : contiguous(go_in);
  Tensor idx = cl ? to_channels_last(idx_in) : contiguous(idx_in);
  Tensor gi = cl ? empty_channels_last(x->sizes, x->dtype) : empty(x->sizes, x->dtype);
  const int64_t ivol = g.ivol(), ovol = g.ovol(), C = g.C;
  // element e of plane (n, c): n * C * vol + c * plane_step + e * step
  const int64_t step = cl ? C : 1, in_plane = cl ? 1 : ivol, out_plane = cl ? 1 : ovol;
  const int64_t* ip = idx->data_as<int64_t>();
  std::atomic<bool> any_invalid{false};
  dispatch_floating(x->dtype, "max_pool_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T* gp = go->data_as<T>();
    T* out = gi->data_as<T>();
    // (the contiguous layout's unit step known to the compiler: its fill is a memset)
    const auto scatter_planes = [&](auto unit_step, int64_t a, int64_t b) {
      const int64_t st = decltype(unit_step)::value ? 1 : step;
      for (int64_t pl = a; pl < b; ++pl) {
        const int64_t n = pl / C, c = pl % C;
        T* dst = out + n * C * ivol + c * in_plane;
        for (int64_t e = 0; e < ivol; ++e) dst[e * st] = T(0);
        const int64_t first = n * C * ovol + c * out_plane;
        const T* src = gp + first;
        const int64_t* ix = ip + first;
        bool invalid = false;
        for (int64_t o = 0; o < ovol; ++o) {
          const int64_t k = ix[o * st];
          if (static_cast<uint64_t>(k) >= static_cast<uint64_t>(ivol)) {  // (negative: huge)
            invalid = true;
            continue;
          }
          T& d = dst[k * st];
          d = T(A(d) + A(src[o * st]));
        }
        if (invalid) any_invalid.store(true, std::memory_order_relaxed);
      }
    };
    parallel_for(0, g.planes(), plane_grain(g, 1), [&](int64_t a, int64_t b) {
      if (step == 1) scatter_planes(std::true_type{}, a, b);
      else scatter_planes(std::false_type{}, a, b);
    });
  });
  if (any_invalid.load()) check_max_indices(idx, g);
  return gi;
}

}  // namespace

std::pair<Tensor, Tensor> max_pool_with_indices(const Tensor& input, const Shape& kernel_size,
                                                const Shape& stride, const Shape& padding,
                                                const Shape& dilation, bool ceil_mode,
                                                bool want_indices) {
  GilRelease nogil(input->numel() > kGrainSize);
  Geo g = window_geo(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool");
  const std::string name = str_cat("max_pool", g.k, "d");
  if (g.k == 1 && !want_indices)  // torch's max_pool1d without indices: its own float kernel
    check_pool_dtype(input->dtype, "max_pool1d_impl");
  else
    check_pool_dtype(input->dtype, g.k == 3 ? "max_pool3d" : "max_pool2d", false, true);
  if (is_channels_last(input) && g.k == 2 && g.d[1] == 1 && g.d[2] == 1 &&
      (input->dtype == ScalarType::Float32 || input->dtype == ScalarType::Float64)) {
    // channels_last in, channels_last out (as torch), pooled in place (ops/cpu/max_pool.cpp)
    Tensor out = empty_channels_last(g.out_shape(), input->dtype);
    Tensor ind = want_indices ? empty_channels_last(g.out_shape(), ScalarType::Int64) : nullptr;
    const int64_t geometry[10] = {g.I[1], g.I[2], g.O[1], g.O[2], g.K[1],
                                  g.K[2], g.s[1], g.s[2], g.p[1], g.p[2]};
    if (out->numel())
      cpu_kernels().max_pool2d_channels_last(input->dtype, input->data(), out->data(),
                                             ind ? ind->data_as<int64_t>() : nullptr, g.N, g.C,
                                             geometry);
    return {out, ind};
  }
  Tensor x = contiguous(input);
  Tensor out = empty(g.out_shape(), x->dtype);
  Tensor ind = want_indices ? empty(g.out_shape(), ScalarType::Int64) : nullptr;
  dispatch_numeric(x->dtype, name.c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T* xp = x->data_as<T>();
    T* op = out->data_as<T>();
    int64_t* ip = ind ? ind->data_as<int64_t>() : nullptr;
    const int64_t ivol = g.ivol(), ovol = g.ovol();
    const int64_t kvol = g.K[0] * g.K[1] * g.K[2];
    // float32/float64 1-d/2-d windows without dilation: the vectorised kernel (ops/cpu/max_pool.cpp)
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (g.k <= 2 && g.d[1] == 1 && g.d[2] == 1) {
        const int64_t geometry[10] = {g.I[1], g.I[2], g.O[1], g.O[2], g.K[1],
                                      g.K[2], g.s[1], g.s[2], g.p[1], g.p[2]};
        cpu_kernels().max_pool2d(x->dtype, xp, op, ip, g.planes(), geometry);
        return;
      }
    }
    // 1-d/2-d windows that never leave the input (no padding or dilation): the common
    // nn.MaxPool2d case, without bounds checks, and branch-free (a select, not a jump, keeps the
    // running max: on random data the jump mispredicted every other tap).
    bool simple = g.K[0] == 1 && g.O[0] == g.I[0];
    for (int i = 1; i < 3; ++i)
      simple = simple && g.p[i] == 0 && g.d[i] == 1 && (g.O[i] - 1) * g.s[i] + g.K[i] <= g.I[i];
    if (simple) {
      const int64_t slice = g.I[1] * g.I[2];  // one depth slice of a plane
      parallel_for(0, g.planes() * g.O[0], plane_grain(g, kvol), [&](int64_t a, int64_t b) {
        for (int64_t pl = a; pl < b; ++pl) {
          const T* src = xp + pl * slice;
          T* dst = op + pl * g.O[1] * g.O[2];
          int64_t* idst = ip ? ip + pl * g.O[1] * g.O[2] : nullptr;
          const int64_t depth_off = (pl % g.O[0]) * slice;  // indices count from the plane start
          for (int64_t oh = 0; oh < g.O[1]; ++oh)
            for (int64_t ow = 0; ow < g.O[2]; ++ow) {
              const int64_t w0 = oh * g.s[1] * g.I[2] + ow * g.s[2];
              A best = static_cast<A>(src[w0]);
              int64_t bi = w0;
              for (int64_t kh = 0; kh < g.K[1]; ++kh)
                for (int64_t kw = 0; kw < g.K[2]; ++kw) {
                  const int64_t off = w0 + kh * g.I[2] + kw;
                  const A v = static_cast<A>(src[off]);
                  const bool take = (v > best) | is_nan_v(v);
                  best = math::blend(take, v, best);
                  bi = math::blend(take, off, bi);
                }
              dst[oh * g.O[2] + ow] = static_cast<T>(best);
              if (idst) idst[oh * g.O[2] + ow] = bi + depth_off;
            }
        }
      });
      return;
    }
    parallel_for(0, g.planes(), plane_grain(g, kvol), [&](int64_t a, int64_t b) {
      for (int64_t pl = a; pl < b; ++pl) {
        const T* src = xp + pl * ivol;
        int64_t o = pl * ovol;
        for (int64_t od = 0; od < g.O[0]; ++od)
          for (int64_t oh = 0; oh < g.O[1]; ++oh)
            for (int64_t ow = 0; ow < g.O[2]; ++ow, ++o) {
              const int64_t d0 = od * g.s[0] - g.p[0], h0 = oh * g.s[1] - g.p[1],
                            w0 = ow * g.s[2] - g.p[2];
              A best = std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                             : std::numeric_limits<A>::lowest();
              int64_t bidx = -1;
              // The kernel taps that fall inside the input, per dim (no test in the inner loop).
              int64_t kdl, kdh, khl, khh, kwl, kwh;
              tap_range(d0, g.d[0], g.K[0], g.I[0], kdl, kdh);
              tap_range(h0, g.d[1], g.K[1], g.I[1], khl, khh);
              tap_range(w0, g.d[2], g.K[2], g.I[2], kwl, kwh);
              for (int64_t kd = kdl; kd < kdh; ++kd) {
                const int64_t id = d0 + kd * g.d[0];
                for (int64_t kh = khl; kh < khh; ++kh) {
                  const int64_t ih = h0 + kh * g.d[1];
                  const int64_t rowb = (id * g.I[1] + ih) * g.I[2];
                  for (int64_t kw = kwl; kw < kwh; ++kw) {
                    const int64_t iw = w0 + kw * g.d[2];
                    const A v = static_cast<A>(src[rowb + iw]);
                    if (bidx < 0 || v > best || is_nan_v(v)) {
                      best = v;
                      bidx = rowb + iw;
                    }
                  }
                }
              }
              op[o] = static_cast<T>(best);
              if (ip) ip[o] = bidx < 0 ? 0 : bidx;
            }
      }
    });
  });
  // other channels_last inputs (dilated, other dtypes): channels_last results too, as torch
  if (is_channels_last(input)) {
    out = to_channels_last(out);
    if (ind) ind = to_channels_last(ind);
  }
  return {out, ind};
}

Tensor max_pool_with_indices_backward(const Tensor& grad_output, const Tensor& input,
                                      const Shape& kernel_size, const Shape& stride,
                                      const Shape& padding, const Shape& dilation, bool ceil_mode,
                                      const Tensor& indices) {
  GilRelease nogil(input->numel() > kGrainSize);
  Geo g = window_geo(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool");
  const std::string name = str_cat("max_pool", g.k, "d_with_indices_backward");
  check_grad(grad_output, g, input, name);
  check_indices(indices, grad_output, name);
  return scatter_max_grad(grad_output, input, indices, g);
}

namespace {

// The average-pool window of output o along one dim: [st, en) clipped, and the padded size.
inline void avg_window(int64_t o, int64_t s, int64_t p, int64_t k, int64_t I, int64_t& st,
                       int64_t& en, int64_t& padded) {
  st = o * s - p;
  en = std::min(st + k, I + p);
  padded = en - st;
  st = std::max<int64_t>(st, 0);
  en = std::min(en, I);
}

// The clipped window [st, en) of output oo and its divisor (0 for an empty window).
int64_t avg_window_at(const Geo& g, bool count_include_pad, std::optional<int64_t> dov,
                      const int64_t* oo, int64_t* st, int64_t* en) {
  int64_t pad[3];
  bool empty_win = false;
  for (int i = 0; i < 3; ++i) {
    avg_window(oo[i], g.s[i], g.p[i], g.K[i], g.I[i], st[i], en[i], pad[i]);
    empty_win |= st[i] >= en[i];
  }
  if (empty_win) return 0;
  return dov ? *dov
             : count_include_pad ? pad[0] * pad[1] * pad[2]
                                 : (en[0] - st[0]) * (en[1] - st[1]) * (en[2] - st[2]);
}

// Runs f(plane, o, window_start[3], window_end[3], divisor) over every output.
template <typename F>
void for_avg_windows(const Geo& g, bool count_include_pad, std::optional<int64_t> dov, const F& f) {
  const int64_t kvol = g.K[0] * g.K[1] * g.K[2];
  parallel_for(0, g.planes(), plane_grain(g, kvol), [&](int64_t a, int64_t b) {
    for (int64_t pl = a; pl < b; ++pl) {
      int64_t o = 0;
      for (int64_t od = 0; od < g.O[0]; ++od)
        for (int64_t oh = 0; oh < g.O[1]; ++oh)
          for (int64_t ow = 0; ow < g.O[2]; ++ow, ++o) {
            int64_t st[3], en[3];
            const int64_t oo[3] = {od, oh, ow};
            f(pl, o, st, en, avg_window_at(g, count_include_pad, dov, oo, st, en));
          }
    }
  });
}

// Averaging pools of a channels_last (N, H, W, C in memory) 2-d input, as torch keeps that layout:
// each output pixel averages whole channel rows, so the inner loop runs over C contiguous values.
// window(oo, st, en) gives an output's window and divisor (0: an empty window).
template <typename T, typename A, typename Window>
void avg_pool_nhwc(const Geo& g, const T* x, T* out, const Window& window) {
  const int64_t C = g.C, IH = g.I[1], IW = g.I[2], OH = g.O[1], OW = g.O[2];
  const int64_t taps = std::max<int64_t>(g.ivol() / std::max<int64_t>(g.ovol(), 1), 1);
  parallel_for(0, g.N * OH * OW, std::max<int64_t>(kGrainSize / std::max<int64_t>(C * taps, 1), 1),
               [&](int64_t a, int64_t b) {
    std::vector<A> acc(C);
    for (int64_t i = a; i < b; ++i) {
      const int64_t n = i / (OH * OW), oh = i / OW % OH, ow = i % OW;
      const int64_t oo[3] = {0, oh, ow};
      int64_t st[3], en[3];
      const int64_t div = window(oo, st, en);
      T* dst = out + i * C;
      if (div == 0) {
        std::fill(dst, dst + C, T(0));
        continue;
      }
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t ih = st[1]; ih < en[1]; ++ih)
        for (int64_t iw = st[2]; iw < en[2]; ++iw) {
          const T* row = x + ((n * IH + ih) * IW + iw) * C;
          for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<A>(row[c]);
        }
      for (int64_t c = 0; c < C; ++c) dst[c] = static_cast<T>(acc[c] / static_cast<A>(div));
    }
  });
}

// Its backward: every output's gradient / divisor added to its window's channel rows. Windows of
// one sample overlap, so the work splits over samples.
template <typename T, typename A, typename Window>
void avg_pool_nhwc_backward(const Geo& g, const T* go, T* gi, const Window& window) {
  const int64_t C = g.C, IH = g.I[1], IW = g.I[2], OH = g.O[1], OW = g.O[2];
  parallel_for(0, g.N, 1, [&](int64_t a, int64_t b) {
    std::vector<A> v(C);
    std::fill(gi + a * IH * IW * C, gi + b * IH * IW * C, T(0));
    for (int64_t n = a; n < b; ++n)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t oo[3] = {0, oh, ow};
          int64_t st[3], en[3];
          const int64_t div = window(oo, st, en);
          if (div == 0) continue;
          const T* src = go + ((n * OH + oh) * OW + ow) * C;
          for (int64_t c = 0; c < C; ++c) v[c] = static_cast<A>(src[c]) / static_cast<A>(div);
          for (int64_t ih = st[1]; ih < en[1]; ++ih)
            for (int64_t iw = st[2]; iw < en[2]; ++iw) {
              T* row = gi + ((n * IH + ih) * IW + iw) * C;
              for (int64_t c = 0; c < C; ++c) row[c] = T(A(row[c]) + v[c]);
            }
        }
  });
}

// Whether a pool takes the channels_last path: a 4-d channels_last input of a 2-d pool.
bool pool_nhwc(const Tensor& x, const Geo& g) { return g.k == 2 && is_channels_last(x); }

Geo avg_geo(const Tensor& x, const Shape& kernel, const Shape& stride, const Shape& padding,
            bool ceil_mode, std::optional<int64_t> dov) {
  EMBER_CHECK(!dov || *dov != 0, std::runtime_error, "divisor must be not zero");
  return window_geo(x, kernel, stride, padding, Shape(kernel.size(), 1), ceil_mode, "avg_pool");
}

}  // namespace

Tensor avg_pool(const Tensor& input, const Shape& kernel_size, const Shape& stride,
                const Shape& padding, bool ceil_mode, bool count_include_pad,
                std::optional<int64_t> divisor_override) {
  GilRelease nogil(input->numel() > kGrainSize);
  Geo g = avg_geo(input, kernel_size, stride, padding, ceil_mode, divisor_override);
  check_pool_dtype(input->dtype, g.k == 3 ? "avg_pool3d_out_frame" : "avg_pool2d", true);
  const bool nhwc = pool_nhwc(input, g);
  Tensor x = nhwc ? input : contiguous(input);
  Tensor out = nhwc ? empty_channels_last(g.out_shape(), x->dtype) : empty(g.out_shape(), x->dtype);
  dispatch_numeric(x->dtype, str_cat("avg_pool", g.k, "d").c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<std::is_integral_v<T>, int64_t, opmath_t<T>>;
    const T* xp = x->data_as<T>();
    T* op = out->data_as<T>();
    if (nhwc)
      return avg_pool_nhwc<T, A>(g, xp, op, [&](const int64_t* oo, int64_t* st, int64_t* en) {
        return avg_window_at(g, count_include_pad, divisor_override, oo, st, en);
      });
    const int64_t ivol = g.ivol(), ovol = g.ovol();
    for_avg_windows(g, count_include_pad, divisor_override,
                    [&](int64_t pl, int64_t o, const int64_t* st, const int64_t* en, int64_t div) {
                      if (div == 0) {
                        op[pl * ovol + o] = T(0);
                        return;
                      }
                      const T* src = xp + pl * ivol;
                      A acc = 0;
                      for (int64_t id = st[0]; id < en[0]; ++id)
                        for (int64_t ih = st[1]; ih < en[1]; ++ih) {
                          const T* row = src + (id * g.I[1] + ih) * g.I[2];
                          for (int64_t iw = st[2]; iw < en[2]; ++iw) acc += static_cast<A>(row[iw]);
                        }
                      op[pl * ovol + o] = static_cast<T>(acc / static_cast<A>(div));
                    });
  });
  return out;
}

Tensor avg_pool_backward(const Tensor& grad_output, const Tensor& input, const Shape& kernel_size,
                         const Shape& stride, const Shape& padding, bool ceil_mode,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
  GilRelease nogil(input->numel() > kGrainSize);
  Geo g = avg_geo(input, kernel_size, stride, padding, ceil_mode, divisor_override);
  check_grad(grad_output, g, input, str_cat("avg_pool", g.k, "d_backward"));
  const bool nhwc = pool_nhwc(input, g);
  Tensor go = nhwc ? to_channels_last(grad_output) : contiguous(grad_output);
  Tensor gi = nhwc ? empty_channels_last(input->sizes, input->dtype) : empty(input->sizes, input->dtype);
  dispatch_floating(input->dtype, "avg_pool_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T* gp = go->data_as<T>();
    T* out = gi->data_as<T>();
    if (nhwc)
      return avg_pool_nhwc_backward<T, A>(g, gp, out, [&](const int64_t* oo, int64_t* st, int64_t* en) {
        return avg_window_at(g, count_include_pad, divisor_override, oo, st, en);
      });
    const int64_t ivol = g.ivol(), ovol = g.ovol();
    parallel_for(0, g.planes(), 64, [&](int64_t a, int64_t b) {
      std::fill(out + a * ivol, out + b * ivol, T(0));
    });
    for_avg_windows(g, count_include_pad, divisor_override,
                    [&](int64_t pl, int64_t o, const int64_t* st, const int64_t* en, int64_t div) {
                      if (div == 0) return;
                      const A v = static_cast<A>(gp[pl * ovol + o]) / static_cast<A>(div);
                      T* dst = out + pl * ivol;
                      for (int64_t id = st[0]; id < en[0]; ++id)
                        for (int64_t ih = st[1]; ih < en[1]; ++ih) {
                          T* row = dst + (id * g.I[1] + ih) * g.I[2];
                          for (int64_t iw = st[2]; iw < en[2]; ++iw) row[iw] = T(A(row[iw]) + v);
                        }
                    });
  });
  return gi;
}

namespace {

inline int64_t ad_start(int64_t o, int64_t O, int64_t I) { return (o * I) / O; }
inline int64_t ad_end(int64_t o, int64_t O, int64_t I) { return ((o + 1) * I + O - 1) / O; }

Geo adaptive_geo(const Tensor& x, const Shape& output_size, const char* kind) {
  const int64_t k = static_cast<int64_t>(output_size.size());
  EMBER_CHECK(k >= 1 && k <= 3, std::runtime_error, kind, ": output_size must have 1 to 3 entries");
  const std::string name = str_cat(kind, k, "d");
  for (auto v : output_size)
    if (v < 0)
      throw std::runtime_error(str_cat(name, ": elements of output_size must be greater than or ",
                                       "equal to 0 but received {", join(output_size, ", "), "}"));
  Geo g = input_geo(x, k, name, true);
  for (int64_t i = 0; i < k; ++i) g.O[3 - k + i] = output_size[i];
  return g;
}

// The window [st, en) of adaptive output oo, and its size.
int64_t adaptive_window_at(const Geo& g, const int64_t* oo, int64_t* st, int64_t* en) {
  for (int i = 0; i < 3; ++i) st[i] = ad_start(oo[i], g.O[i], g.I[i]), en[i] = ad_end(oo[i], g.O[i], g.I[i]);
  return (en[0] - st[0]) * (en[1] - st[1]) * (en[2] - st[2]);
}

template <typename F> void for_adaptive_windows(const Geo& g, const F& f) {
  parallel_for(0, g.planes(), plane_grain(g, std::max<int64_t>(g.ivol() / std::max<int64_t>(g.ovol(), 1), 1)),
               [&](int64_t a, int64_t b) {
                 for (int64_t pl = a; pl < b; ++pl) {
                   int64_t o = 0;
                   for (int64_t od = 0; od < g.O[0]; ++od)
                     for (int64_t oh = 0; oh < g.O[1]; ++oh)
                       for (int64_t ow = 0; ow < g.O[2]; ++ow, ++o) {
                         const int64_t oo[3] = {od, oh, ow};
                         int64_t st[3], en[3];
                         adaptive_window_at(g, oo, st, en);
                         f(pl, o, st, en);
                       }
                 }
               });
}

}  // namespace

Tensor adaptive_avg_pool(const Tensor& input, const Shape& output_size) {
  GilRelease nogil(input->numel() > kGrainSize);
  Geo g = adaptive_geo(input, output_size, "adaptive_avg_pool");
  const bool nhwc = pool_nhwc(input, g);
  Tensor x = nhwc ? input : contiguous(input);
  Tensor out = nhwc ? empty_channels_last(g.out_shape(), x->dtype) : empty(g.out_shape(), x->dtype);
  // (an empty output takes any dtype, as torch's kernel; an output of ones is its mean, whose
  // dtype check comes first)
  const bool whole_window = std::all_of(output_size.begin(), output_size.end(),
                                        [](int64_t s) { return s == 1; });
  if (out->numel() == 0 && !whole_window) return out;
  EMBER_CHECK(is_floating(input->dtype) || is_complex(input->dtype), std::runtime_error,
              "mean(): could not infer output dtype. Input dtype must be either a floating point or "
              "complex dtype. Got: ", type_name(input->dtype));  // (torch's: its kernel is a mean)
  if (out->numel() == 0) return out;
  if (is_complex(input->dtype)) {
    // torch's complex adaptive average pooling is its mean over the whole window only (an
    // output of all ones); its kernels have no complex type
    EMBER_CHECK(whole_window, NotImplementedError, "\"",
                g.k == 3 ? "adaptive_avg_pool3d_cpu" : "adaptive_avg_pool2d",
                "\" not implemented for '", type_name(input->dtype), "'");
    // the mean of each window, part by part: (..., C, *spatial) as (..., 2C, *spatial) reals
    const int64_t nd = input->dim(), lead = nd - g.k;
    Shape to_front, back;
    for (int64_t d = 0; d < lead; ++d) to_front.push_back(d);
    to_front.push_back(nd);  // the (real, imaginary) pair joins the channels
    for (int64_t d = lead; d < nd; ++d) to_front.push_back(d);
    Tensor parts = contiguous(permute(view_as_real(input), to_front));
    Shape merged(input->sizes.begin(), input->sizes.begin() + lead);
    if (lead > 0) merged.back() *= 2; else merged.push_back(2);
    merged.insert(merged.end(), input->sizes.begin() + lead, input->sizes.end());
    Tensor pooled = adaptive_avg_pool(reshape(parts, merged), output_size);
    Shape split(input->sizes.begin(), input->sizes.begin() + lead);
    split.push_back(2);
    split.insert(split.end(), pooled->sizes.end() - g.k, pooled->sizes.end());
    for (int64_t d = 0; d < lead; ++d) back.push_back(d);
    for (int64_t d = lead + 1; d <= nd; ++d) back.push_back(d);
    back.push_back(lead);
    Tensor moved = permute(reshape(pooled, split), back);
    Tensor pairs = empty(moved->sizes, moved->dtype);  // (C-order strides, for the complex view)
    copy_(pairs, moved);
    Tensor r = view_as_complex(pairs);
    return lead > 0 ? r : reshape(r, g.out_shape());
  }
  dispatch_floating(x->dtype, str_cat("adaptive_avg_pool", g.k, "d").c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T* xp = x->data_as<T>();
    T* op = out->data_as<T>();
    if (nhwc)
      return avg_pool_nhwc<T, A>(g, xp, op, [&](const int64_t* oo, int64_t* st, int64_t* en) {
        return adaptive_window_at(g, oo, st, en);
      });
    const int64_t ivol = g.ivol(), ovol = g.ovol();
    for_adaptive_windows(g, [&](int64_t pl, int64_t o, const int64_t* st, const int64_t* en) {
      const T* src = xp + pl * ivol;
      A acc = 0;
      for (int64_t id = st[0]; id < en[0]; ++id)
        for (int64_t ih = st[1]; ih < en[1]; ++ih) {
          const T* row = src + (id * g.I[1] + ih) * g.I[2];
          for (int64_t iw = st[2]; iw < en[2]; ++iw) acc += static_cast<A>(row[iw]);
        }
      const A cnt = static_cast<A>((en[0] - st[0]) * (en[1] - st[1]) * (en[2] - st[2]));
      op[pl * ovol + o] = static_cast<T>(acc / cnt);
    });
  });
  return out;
}

Tensor adaptive_avg_pool_backward(const Tensor& grad_output, const Tensor& input, int64_t k) {
  GilRelease nogil(input->numel() > kGrainSize);
  EMBER_CHECK(grad_output->dim() == input->dim(), std::runtime_error,
              "adaptive_avg_pool", k, "d_backward: expected grad_output and input to have the same "
              "number of dimensions, but got ", grad_output->dim(), " and ", input->dim());
  EMBER_CHECK(k >= 1 && k <= 3 && k < input->dim(), std::runtime_error,
              "adaptive_avg_pool_backward: expected 1 to 3 spatial dims");
  Shape osz(grad_output->sizes.end() - k, grad_output->sizes.end());
  Geo g = adaptive_geo(input, osz, "adaptive_avg_pool");
  check_grad(grad_output, g, input, str_cat("adaptive_avg_pool", k, "d_backward"));
  const bool nhwc = pool_nhwc(input, g);
  Tensor go = nhwc ? to_channels_last(grad_output) : contiguous(grad_output);
  Tensor gi = nhwc ? empty_channels_last(input->sizes, input->dtype) : empty(input->sizes, input->dtype);
  dispatch_floating(input->dtype, "adaptive_avg_pool_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T* gp = go->data_as<T>();
    T* out = gi->data_as<T>();
    if (nhwc)
      return avg_pool_nhwc_backward<T, A>(g, gp, out, [&](const int64_t* oo, int64_t* st, int64_t* en) {
        return adaptive_window_at(g, oo, st, en);
      });
    const int64_t ivol = g.ivol(), ovol = g.ovol();
    parallel_for(0, g.planes(), 64, [&](int64_t a, int64_t b) {
      std::fill(out + a * ivol, out + b * ivol, T(0));
    });
    for_adaptive_windows(g, [&](int64_t pl, int64_t o, const int64_t* st, const int64_t* en) {
      const A cnt = static_cast<A>((en[0] - st[0]) * (en[1] - st[1]) * (en[2] - st[2]));
      const A v = static_cast<A>(gp[pl * ovol + o]) / cnt;
      T* dst = out + pl * ivol;
      for (int64_t id = st[0]; id < en[0]; ++id)
        for (int64_t ih = st[1]; ih < en[1]; ++ih) {
          T* row = dst + (id * g.I[1] + ih) * g.I[2];
          for (int64_t iw = st[2]; iw < en[2]; ++iw) row[iw] = T(A(row[iw]) + v);
        }
    });
  });
  return gi;
}

std::pair<Tensor, Tensor> adaptive_max_pool(const Tensor& input, const Shape& output_size) {
  GilRelease nogil(input->numel() > kGrainSize);
  Geo g = adaptive_geo(input, output_size, "adaptive_max_pool");
  check_pool_dtype(input->dtype, g.k == 3 ? "adaptive_max_pool3d_cpu" : "adaptive_max_pool2d");
  Tensor x = contiguous(input);
  Tensor out = empty(g.out_shape(), x->dtype);
  Tensor ind = empty(g.out_shape(), ScalarType::Int64);
  if (out->numel() == 0) return {out, ind};
  dispatch_numeric(x->dtype, str_cat("adaptive_max_pool", g.k, "d").c_str(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = opmath_t<T>;
    const T* xp = x->data_as<T>();
    T* op = out->data_as<T>();
    int64_t* ip = ind->data_as<int64_t>();
    const int64_t ivol = g.ivol(), ovol = g.ovol();
    for_adaptive_windows(g, [&](int64_t pl, int64_t o, const int64_t* st, const int64_t* en) {
      const T* src = xp + pl * ivol;
      A best = 0;
      int64_t bidx = -1;
      for (int64_t id = st[0]; id < en[0]; ++id)
        for (int64_t ih = st[1]; ih < en[1]; ++ih) {
          const int64_t rowb = (id * g.I[1] + ih) * g.I[2];
          for (int64_t iw = st[2]; iw < en[2]; ++iw) {
            const A v = static_cast<A>(src[rowb + iw]);
            if (bidx < 0 || v > best || is_nan_v(v)) best = v, bidx = rowb + iw;
          }
        }
      op[pl * ovol + o] = static_cast<T>(best);
      ip[pl * ovol + o] = bidx;
    });
  });
  if (pool_nhwc(input, g)) return {to_channels_last(out), to_channels_last(ind)};  // as torch
  return {out, ind};
}

Tensor adaptive_max_pool_backward(const Tensor& grad_output, const Tensor& input,
                                  const Tensor& indices, int64_t k) {
  GilRelease nogil(input->numel() > kGrainSize);
  EMBER_CHECK(grad_output->dim() == input->dim() && k >= 1 && k <= 3 && k < input->dim(),
              std::runtime_error, "adaptive_max_pool", k,
              "d_backward: expected grad_output and input to have the same number of dimensions");
  Shape osz(grad_output->sizes.end() - k, grad_output->sizes.end());
  Geo g = adaptive_geo(input, osz, "adaptive_max_pool");
  const std::string name = str_cat("adaptive_max_pool", k, "d_backward");
  check_grad(grad_output, g, input, name);
  check_indices(indices, grad_output, name);
  return scatter_max_grad(grad_output, input, indices, g);
}

}  // namespace ember
