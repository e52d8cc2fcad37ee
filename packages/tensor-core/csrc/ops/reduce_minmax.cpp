// reduce_minmax.cpp: max/min (values, and values with indices), amax/amin and argmax/argmin.
// NaN wins: a NaN anywhere in a reduced block makes the value NaN and the index that of the
// first NaN; among equal values the first index wins.
#include <cmath>
#include <limits>

#include "ops/reduce.h"

namespace ember {

using namespace reduce_detail;

namespace {

template <typename C> C lowest_value() {
  if constexpr (std::is_floating_point_v<C>) return -std::numeric_limits<C>::infinity();
  else if constexpr (std::is_same_v<C, bool>) return false;
  else return std::numeric_limits<C>::lowest();
}
template <typename C> C highest_value() {
  if constexpr (std::is_floating_point_v<C>) return std::numeric_limits<C>::infinity();
  else if constexpr (std::is_same_v<C, bool>) return true;
  else return std::numeric_limits<C>::max();
}

// max/min values, NaN-propagating. Long runs use independent lanes with a compare-and-blend
// step (vectorised); short runs and tails use the branch-free `v > a ? v : a` (maxss) with a
// NaN flag, so rows of a few elements do not pay a mispredicted branch per element.
template <typename In, bool IsMax> struct ExtremeOp {
  using in_t = In;
  using C = opmath_t<In>;
  using acc_t = C;
  static constexpr bool kFloat = std::is_floating_point_v<C>;
  static constexpr int kLanes = sizeof(C) >= 8 ? 16 : sizeof(C) == 4 ? 32 : 64;
  In* out;

  static C pick(C a, C v) {
    if constexpr (IsMax) return v > a ? v : a;
    else return v < a ? v : a;
  }
  static C init() { return IsMax ? lowest_value<C>() : highest_value<C>(); }
  acc_t identity() const { return init(); }
  acc_t combine(C a, C b) const {
    if constexpr (kFloat) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return pick(a, b);
  }
  // NaN-sticky step: vectorises (compare + blend) inside the lane loop and accumulate_rows.
  static C step(C a, C v) {
    if constexpr (kFloat) return (v != v || (IsMax ? v > a : v < a)) ? v : a;
    else return pick(a, v);
  }
  // noinline (and in ArgOp): one copy of each loop, called per run from run_reduce's paths.
  __attribute__((noinline)) acc_t reduce_run(const In* __restrict__ p, int64_t n, int64_t) const {
    C m = init();
    int64_t i = 0;
    if (n >= 2 * kLanes) {
      C a[kLanes];
      for (int l = 0; l < kLanes; ++l) a[l] = init();
      for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) a[l] = step(a[l], static_cast<C>(p[i + l]));
      for (int l = 0; l < kLanes; ++l) m = combine(m, a[l]);
    }
    // short runs and the tail: branch-free maxss/minss plus a NaN flag
    C t = init();
    int32_t nan = 0;
    for (; i < n; ++i) {
      const C v = static_cast<C>(p[i]);
      t = pick(t, v);
      if constexpr (kFloat) nan |= (v != v);
    }
    if constexpr (kFloat) {
      if (nan) return std::numeric_limits<C>::quiet_NaN();
    }
    return combine(m, t);
  }
  __attribute__((noinline)) void accumulate_rows(C* __restrict__ acc, const In* __restrict__ row,
                                                 int64_t n, int64_t) const {
    for (int64_t i = 0; i < n; ++i) acc[i] = step(acc[i], static_cast<C>(row[i]));
  }
  void write(int64_t i, C a) const { out[i] = cast_to<In>(a); }
};

// float16/bfloat16 are reduced as float32, which holds each of their values exactly (so the
// extremes and their first positions are the same): one loop fewer per 16-bit dtype to compile.

Tensor extreme_values(const char* name, const Tensor& x, const std::vector<bool>& mask,
                      bool keepdim, bool is_max) {
  if (is_reduced_float(x->dtype))
    return to_dtype(extreme_values(name, to_dtype(x, ScalarType::Float32), mask, keepdim, is_max),
                    x->dtype);
  return reduce_with(name, x, mask, keepdim, x->dtype,
                     [&](auto tag, const ReducePlan& plan, const auto* in, const Tensor& result) {
    using T = typename decltype(tag)::type;
    if constexpr (!is_reduced_float_v<T>) {
      T* out = result->data_as<T>();
      if (is_max) run_reduce(ExtremeOp<T, true>{out}, plan, in);
      else run_reduce(ExtremeOp<T, false>{out}, plan, in);
    }
  });
}

// (value, index) reduction: the first NaN, else the first extreme value.
template <typename In, bool IsMax> struct ArgOp {
  using in_t = In;
  using C = opmath_t<In>;
  struct acc_t {
    C v;
    int64_t i;
  };
  In* values;        // may be null
  int64_t* indices;  // may be null

  // v beats cur when it is larger (smaller), or when it is the first NaN.
  static bool better(C v, C cur) {
    const bool strict = IsMax ? v > cur : v < cur;
    if constexpr (std::is_floating_point_v<C>) return strict | ((v != v) & (cur == cur));
    else return strict;
  }
  acc_t identity() const { return {C(0), -1}; }
  acc_t combine(acc_t a, acc_t b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    return better(b.v, a.v) ? b : a;
  }
  // Long runs take two vectorised passes instead of one branchy one: the extreme value (NaN if
  // any), then the first index holding it, found chunk by chunk.
  __attribute__((noinline)) acc_t reduce_run(const In* p, int64_t n, int64_t i0) const {
    if (n >= 64) {
      const C m = ExtremeOp<In, IsMax>{nullptr}.reduce_run(p, n, 0);
      const bool find_nan = m != m;
      constexpr int64_t kChunk = 64;
      for (int64_t k0 = 0; k0 < n; k0 += kChunk) {
        const int64_t len = std::min(kChunk, n - k0);
        int32_t hit = 0;
        for (int64_t j = 0; j < len; ++j) {
          const C v = static_cast<C>(p[k0 + j]);
          hit |= find_nan ? (v != v) : (v == m);
        }
        if (!hit) continue;
        for (int64_t j = 0; j < len; ++j) {
          const C v = static_cast<C>(p[k0 + j]);
          if (find_nan ? v != v : v == m) return {v, i0 + k0 + j};
        }
      }
    }
    acc_t r{static_cast<C>(p[0]), i0};
    for (int64_t k = 1; k < n; ++k) {
      const C v = static_cast<C>(p[k]);
      if (better(v, r.v)) r = {v, i0 + k};
    }
    return r;
  }
  __attribute__((noinline)) void accumulate_rows(acc_t* acc, const In* row, int64_t n,
                                                 int64_t ri) const {
    for (int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(row[i]);
      if ((acc[i].i < 0) | better(v, acc[i].v)) acc[i] = {v, ri};
    }
  }
  void write(int64_t o, acc_t a) const {
    if (values) values[o] = cast_to<In>(a.v);
    if (indices) indices[o] = a.i;
  }
};

// Runs ArgOp over `mask` writing values (if wanted) and indices.
std::pair<Tensor, Tensor> arg_reduce(const char* name, const Tensor& x, const std::vector<bool>& mask,
                                     bool keepdim, bool is_max, bool want_values) {
  if (is_reduced_float(x->dtype)) {
    auto [v, i] = arg_reduce(name, to_dtype(x, ScalarType::Float32), mask, keepdim, is_max,
                             want_values);
    return {v ? to_dtype(v, x->dtype) : v, i};
  }
  const Shape shape = reduced_shape(x, mask, keepdim);
  Tensor values = want_values ? empty(shape, x->dtype, x->device()) : nullptr;
  Tensor indices = empty(shape, ScalarType::Int64, x->device());
  ReducePlan plan;
  Tensor in = plan_input(x, mask, /*keep_order=*/true, plan);
  dispatch_all(in->dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!is_reduced_float_v<T>) {
      T* v = values ? values->data_as<T>() : nullptr;
      int64_t* i = indices->data_as<int64_t>();
      if (is_max) run_reduce(ArgOp<T, true>{v, i}, plan, in->data_as<T>());
      else run_reduce(ArgOp<T, false>{v, i}, plan, in->data_as<T>());
    }
  });
  return {values, indices};
}

std::vector<bool> single_dim_mask(const Tensor& x, int64_t dim, const char* name, int64_t& wrapped) {
  wrapped = wrap_dim(dim, x->dim());
  std::vector<bool> mask(x->dim(), false);
  if (x->dim()) {
    mask[wrapped] = true;
    EMBER_CHECK(x->sizes[wrapped] != 0, IndexError, name, "(): Expected reduction dim ", wrapped,
                " to have non-zero size.");
  }
  return mask;
}

Tensor amax_amin(const char* name, const Tensor& x, const OptDims& dim, bool keepdim, bool is_max) {
  // PyTorch checks for empty reduced dims before duplicates.
  if (!dim || dim->empty()) {
    EMBER_CHECK(x->numel() != 0, std::runtime_error, name,
                "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument.");
  } else if (x->dim()) {
    for (int64_t d : *dim)
      EMBER_CHECK(x->sizes[wrap_dim(d, x->dim())] != 0, IndexError, name,
                  "(): Expected reduction dim ", d, " to have non-zero size.");
  }
  auto mask = reduction_mask(x, dim);
  return extreme_values(name, x, mask, keepdim, is_max);
}

Tensor extreme_all(const char* name, const Tensor& x, bool is_max) {
  EMBER_CHECK(x->numel() != 0, std::runtime_error, name,
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
              "reduction dim with the 'dim' argument.");
  return extreme_values(name, x, std::vector<bool>(x->dim(), true), false, is_max);
}

Tensor arg_extreme(const char* name, const Tensor& x, std::optional<int64_t> dim, bool keepdim,
                   bool is_max) {
  EMBER_CHECK(x->dtype != ScalarType::Bool, std::runtime_error, name,
              "(): does not support bool input");
  EMBER_CHECK(!is_complex(x->dtype), std::runtime_error, name,
              "(): does not support complex input");
  if (!dim) {
    EMBER_CHECK(x->numel() != 0, IndexError, name,
                "(): Expected reduction dim to be specified for input.numel() == 0.");
    return arg_reduce(name, x, std::vector<bool>(x->dim(), true), keepdim, is_max, false).second;
  }
  int64_t w;
  auto mask = single_dim_mask(x, *dim, name, w);
  return arg_reduce(name, x, mask, keepdim, is_max, false).second;
}

}  // namespace

Tensor amax(const Tensor& x, const OptDims& dim, bool keepdim) { return amax_amin("amax", x, dim, keepdim, true); }
Tensor amin(const Tensor& x, const OptDims& dim, bool keepdim) { return amax_amin("amin", x, dim, keepdim, false); }
Tensor max_all(const Tensor& x) { return extreme_all("max", x, true); }
Tensor min_all(const Tensor& x) { return extreme_all("min", x, false); }

std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim) {
  int64_t w;
  auto mask = single_dim_mask(x, dim, "max", w);  // (a bad dim first, as torch)
  EMBER_CHECK(!is_complex(x->dtype), std::runtime_error, "max(): does not support complex input");
  return arg_reduce("max", x, mask, keepdim, true, true);
}
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim) {
  int64_t w;
  auto mask = single_dim_mask(x, dim, "min", w);  // (a bad dim first, as torch)
  EMBER_CHECK(!is_complex(x->dtype), std::runtime_error, "min(): does not support complex input");
  return arg_reduce("min", x, mask, keepdim, false, true);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme("argmax", x, dim, keepdim, true);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme("argmin", x, dim, keepdim, false);
}

}  // namespace ember
