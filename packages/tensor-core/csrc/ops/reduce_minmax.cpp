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

Tensor extreme_values(const char* name, const Tensor& x, const std::vector<bool>& mask,
                      bool keepdim, bool is_max) {
  return reduce_with(name, x, mask, keepdim, x->dtype,
                     [&](auto tag, const ReducePlan& plan, const auto* in, const Tensor& result) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    T* out = result->data_as<T>();
    auto conv = [](T v) { return static_cast<C>(v); };
    if (is_max)
      run_reduce(make_op<T>(lowest_value<C>(), conv, [](C a, C v) {
        if constexpr (std::is_floating_point_v<C>) return (v > a || v != v) ? v : a;
        else return v > a ? v : a;
      }, Identity{}, out), plan, in);
    else
      run_reduce(make_op<T>(highest_value<C>(), conv, [](C a, C v) {
        if constexpr (std::is_floating_point_v<C>) return (v < a || v != v) ? v : a;
        else return v < a ? v : a;
      }, Identity{}, out), plan, in);
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

  static bool better(C v, C cur) {
    if constexpr (std::is_floating_point_v<C>) {
      if (v != v) return cur == cur;
    }
    if constexpr (IsMax) return v > cur;
    else return v < cur;
  }
  acc_t identity() const { return {C(0), -1}; }
  acc_t combine(acc_t a, acc_t b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    return better(b.v, a.v) ? b : a;
  }
  acc_t reduce_run(const In* p, int64_t n, int64_t i0) const {
    acc_t r{static_cast<C>(p[0]), i0};
    for (int64_t k = 1; k < n; ++k) {
      const C v = static_cast<C>(p[k]);
      if (better(v, r.v)) r = {v, i0 + k};
    }
    return r;
  }
  void accumulate_rows(acc_t* acc, const In* row, int64_t n, int64_t ri) const {
    for (int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(row[i]);
      if (acc[i].i < 0 || better(v, acc[i].v)) acc[i] = {v, ri};
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
  const Shape shape = reduced_shape(x, mask, keepdim);
  Tensor values = want_values ? empty(shape, x->dtype, x->device()) : nullptr;
  Tensor indices = empty(shape, ScalarType::Int64, x->device());
  ReducePlan plan;
  Tensor in = plan_input(x, mask, /*keep_order=*/true, plan);
  dispatch_all(in->dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* v = values ? values->data_as<T>() : nullptr;
    int64_t* i = indices->data_as<int64_t>();
    if (is_max) run_reduce(ArgOp<T, true>{v, i}, plan, in->data_as<T>());
    else run_reduce(ArgOp<T, false>{v, i}, plan, in->data_as<T>());
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
  auto mask = single_dim_mask(x, dim, "max", w);
  return arg_reduce("max", x, mask, keepdim, true, true);
}
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim) {
  int64_t w;
  auto mask = single_dim_mask(x, dim, "min", w);
  return arg_reduce("min", x, mask, keepdim, false, true);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme("argmax", x, dim, keepdim, true);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme("argmin", x, dim, keepdim, false);
}

}  // namespace ember
