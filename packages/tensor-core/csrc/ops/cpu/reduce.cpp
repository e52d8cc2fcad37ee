// The arithmetic reductions' kernels (sum, nansum, mean, prod, count_nonzero, all/any, norm and
// var/std's sum of squares) over a plan of ops/reduce.h; the entry points, dtype rules and checks
// are in ops/reduce.cpp.
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "ops/cpu/widen.h"
#include "ops/reduce.h"

namespace ember::EMBER_CPU_NS {

using namespace reduce_detail;

namespace {

// float16/bfloat16 arrive as float32 (ops/reduce.cpp converts them): no loop here has them.
void refuse_16bit(ScalarType t, const char* op) {
  if (is_reduced_float(t))
    throw std::logic_error(str_cat(op, ": a float16/bfloat16 input reached the float kernels"));
}

// Accumulator of sum/prod: opmath (float for the 16-bit floats) for floating types, int64 for
// bool and the integers (which wrap exactly like PyTorch's).
template <typename T>
using sum_acc_t = std::conditional_t<std::is_floating_point_v<opmath_t<T>>, opmath_t<T>, int64_t>;

}  // namespace

// out's dtype is in's (floating) or int64 (bool and integer input: ops/reduce.cpp narrows it).
void sum(SumKind kind, const ReducePlan& plan, const Tensor& x, const Tensor& result, int64_t R) {
  if (!compiled(x->dtype)) return cpu_default::sum(kind, plan, x, result, R);
  refuse_16bit(x->dtype, "sum");
  dispatch_all(x->dtype, "sum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCompiled<T> && !is_reduced_float_v<T>) {
      using A = sum_acc_t<T>;
      const T* in = x->data_as<T>();
      auto go = [&](auto otag) {
        using O = typename decltype(otag)::type;
        O* out = result->data_as<O>();
        auto plus = [](A a, A b) { return a + b; };
        auto conv = [](T v) { return static_cast<A>(v); };
        if constexpr (std::is_floating_point_v<A>) {
          if (kind == SumKind::NanSum) {
            auto skip = [](T v) { A a = static_cast<A>(v); return a != a ? A(0) : a; };
            run_reduce(make_op<T>(A(0), skip, plus, Identity{}, out), plan, in);
            return;
          }
          if (kind == SumKind::Mean) {
            const A n = static_cast<A>(R);
            run_reduce(make_op<T>(A(0), conv, plus, [n](A a) { return a / n; }, out), plan, in);
            return;
          }
        }
        if (kind == SumKind::Prod)
          run_reduce(make_op<T>(A(1), conv, [](A a, A b) { return a * b; }, Identity{}, out), plan, in);
        else
          run_reduce(make_op<T>(A(0), conv, plus, Identity{}, out), plan, in);
      };
      if constexpr (std::is_floating_point_v<A>) go(TypeTag<T>{});
      else go(TypeTag<int64_t>{});
    }
  });
}

// Counts elements that are nonzero (or, with not_nan, that are not NaN: floating x only) into
// int64.
void count(bool not_nan, const ReducePlan& plan, const Tensor& x, const Tensor& result) {
  if (!compiled(x->dtype)) return cpu_default::count(not_nan, plan, x, result);
  refuse_16bit(x->dtype, "count_nonzero");
  dispatch_all(x->dtype, "count_nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCompiled<T> && !is_reduced_float_v<T>) {
      using C = opmath_t<T>;
      const T* in = x->data_as<T>();
      int64_t* out = result->data_as<int64_t>();
      auto plus = [](int64_t a, int64_t b) { return a + b; };
      if constexpr (std::is_floating_point_v<C>) {
        if (not_nan) {
          run_reduce(make_op<T>(int64_t(0), [](T v) { C c = static_cast<C>(v); return int64_t(c == c); },
                                plus, Identity{}, out), plan, in);
          return;
        }
      }
      run_reduce(make_op<T>(int64_t(0), [](T v) { return int64_t(static_cast<C>(v) != C(0)); },
                            plus, Identity{}, out), plan, in);
    }
  });
}

// Into a bool or uint8 result (one byte, 0 or 1, either way).
void all_any(bool is_all, const ReducePlan& plan, const Tensor& x, const Tensor& result) {
  if (!compiled(x->dtype)) return cpu_default::all_any(is_all, plan, x, result);
  refuse_16bit(x->dtype, "all/any");
  dispatch_all(x->dtype, is_all ? "all" : "any", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCompiled<T> && !is_reduced_float_v<T>) {
      using C = opmath_t<T>;
      const T* in = x->data_as<T>();
      uint8_t* out = result->data_as<uint8_t>();
      // int32 lanes (not bool) so that the compare-and-combine loop vectorises.
      auto nz = [](T v) { return int32_t(static_cast<C>(v) != C(0)); };
      if (is_all)
        run_reduce(make_op<T>(int32_t(1), nz, [](int32_t a, int32_t b) { return a & b; }, Identity{}, out), plan, in);
      else
        run_reduce(make_op<T>(int32_t(0), nz, [](int32_t a, int32_t b) { return a | b; }, Identity{}, out), plan, in);
    }
  });
}

// Vector p-norm into a result of x's (floating) dtype.
void norm(double p, const ReducePlan& plan, const Tensor& x, const Tensor& result) {
  if (!compiled(x->dtype)) return cpu_default::norm(p, plan, x, result);
  refuse_16bit(x->dtype, "linalg.vector_norm");
  dispatch_floating(x->dtype, "linalg.vector_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCompiled<T> && !is_reduced_float_v<T>) {
      using A = opmath_t<T>;
      const T* src = x->data_as<T>();
      T* out = result->data_as<T>();
      auto plus = [](A a, A b) { return a + b; };
      auto absv = [](T v) { return std::abs(static_cast<A>(v)); };
      if (p == 2) {
        run_reduce(make_op<T>(A(0), [](T v) { A a = static_cast<A>(v); return a * a; }, plus,
                              [](A a) { return std::sqrt(a); }, out), plan, src);
      } else if (p == 1) {
        run_reduce(make_op<T>(A(0), absv, plus, Identity{}, out), plan, src);
      } else if (p == 0) {
        run_reduce(make_op<T>(A(0), [](T v) { return A(static_cast<A>(v) != A(0)); }, plus,
                              Identity{}, out), plan, src);
      } else if (std::isinf(p)) {
        if (p > 0)
          run_reduce(make_op<T>(A(0), absv, [](A a, A v) { return (v > a || v != v) ? v : a; },
                                Identity{}, out), plan, src);
        else
          run_reduce(make_op<T>(std::numeric_limits<A>::infinity(), absv,
                                [](A a, A v) { return (v < a || v != v) ? v : a; }, Identity{}, out),
                     plan, src);
      } else {
        const A pa = static_cast<A>(p), inv = A(1) / static_cast<A>(p);
        run_reduce(make_op<T>(A(0), [pa](T v) { return std::pow(std::abs(static_cast<A>(v)), pa); },
                              plus, [inv](A a) { return std::pow(a, inv); }, out), plan, src);
      }
    }
  });
}

// sum(x^2) / denom, or its square root, for float32/float64 x (var/std's second pass, over the
// deviations from the mean).
void sum_squares(double denom, bool take_sqrt, const ReducePlan& plan, const Tensor& x,
                 const Tensor& result) {
  if (!compiled(x->dtype)) return cpu_default::sum_squares(denom, take_sqrt, plan, x, result);
  dispatch_floating(x->dtype, take_sqrt ? "std" : "var", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCompiled<T> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
      const T* src = x->data_as<T>();
      const T dn = static_cast<T>(denom);
      auto sq = [](T v) { return v * v; };
      auto plus = [](T a, T b) { return a + b; };
      if (take_sqrt)
        run_reduce(make_op<T>(T(0), sq, plus, [dn](T a) { return std::sqrt(a / dn); },
                              result->data_as<T>()), plan, src);
      else
        run_reduce(make_op<T>(T(0), sq, plus, [dn](T a) { return a / dn; }, result->data_as<T>()),
                   plan, src);
    }
  });
}

namespace {
// The sum of n contiguous complex values: one pass over the interleaved (real, imaginary)
// floats, in lanes of 16 (even lanes real parts, odd ones imaginary) that the compiler
// vectorises, each block of 256 values added into double, the chunks split over the pool.
// (Reducing the two parts as strided views took two passes, 6x torch's time.)
template <typename R> void sum_pairs(const R* p, int64_t n, double* re_im) {
  constexpr int64_t kChunk = int64_t(1) << 15, kBlock = 256, kLanes = 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(2 * static_cast<size_t>(std::max<int64_t>(chunks, 1)), 0.0);
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t b = c * kChunk, m = std::min(n, b + kChunk) - b;
      const R* q = p + 2 * b;
      double re = 0, im = 0;
      int64_t i = 0;
      for (; i + kBlock <= m; i += kBlock) {
        R lane[kLanes] = {};
        const R* blk = q + 2 * i;
        for (int64_t j = 0; j < 2 * kBlock; j += kLanes)
          for (int64_t k = 0; k < kLanes; ++k) lane[k] += blk[j + k];
        for (int64_t k = 0; k < kLanes; k += 2) re += lane[k], im += lane[k + 1];
      }
      for (; i < m; ++i) re += q[2 * i], im += q[2 * i + 1];
      partial[2 * c] = re, partial[2 * c + 1] = im;
    }
  });
  re_im[0] = re_im[1] = 0;
  for (size_t c = 0; c < partial.size(); c += 2) re_im[0] += partial[c], re_im[1] += partial[c + 1];
}
}  // namespace

namespace {
// The sum of n contiguous 16-bit floats in one pass: 8 values at a time widened in registers
// (widen8: F16C for float16) into four float accumulators where this copy has AVX2, through a
// float buffer in 16 float lanes otherwise; each block of 256 added into double, the chunks split
// over the pool. (The sum of a float32 copy took two passes and 2.7x torch's time.) skip_nan:
// nansum.
template <typename T16> double sum_16bit(const T16* p, int64_t n, bool skip_nan) {
  constexpr int64_t kChunk = int64_t(1) << 15, kBlock = 256, kLanes = 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(chunks, 1)), 0.0);
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    alignas(64) float buf[kBlock];
    for (int64_t c = cb; c < ce; ++c) {
      const int64_t b = c * kChunk, m = std::min(n, b + kChunk) - b;
      double s = 0;
      int64_t i = 0;
#if defined(__AVX2__) && defined(__F16C__)
      for (; i + kBlock <= m; i += kBlock) {
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                         _mm256_setzero_ps()};
        const T16* q = p + b + i;
        for (int64_t j = 0; j < kBlock; j += 32)
          for (int k = 0; k < 4; ++k) {
            __m256 v = widen8(q + j + 8 * k);
            if (skip_nan) v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN: +0
            acc[k] = _mm256_add_ps(acc[k], v);
          }
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]),
                                             _mm256_add_ps(acc[2], acc[3])));
        for (float v : lanes) s += v;
      }
#endif
      for (; i < m; i += kBlock) {
        const int64_t len = std::min(kBlock, m - i);
        widen_block<T16>(reinterpret_cast<const char*>(p + b + i), sizeof(T16), buf, len);
        if (skip_nan)
          for (int64_t j = 0; j < len; ++j) buf[j] = buf[j] != buf[j] ? 0.0f : buf[j];
        float lane[kLanes] = {};
        int64_t j = 0;
        for (; j + kLanes <= len; j += kLanes)
          for (int64_t k = 0; k < kLanes; ++k) lane[k] += buf[j + k];
        for (; j < len; ++j) s += buf[j];
        for (int64_t k = 0; k < kLanes; ++k) s += lane[k];
      }
      partial[c] = s;
    }
  });
  double total = 0;
  for (double v : partial) total += v;
  return total;
}
}  // namespace

double reduced_float_sum(ScalarType dtype, const void* data, int64_t n, bool skip_nan) {
  if (dtype == ScalarType::Float16) return sum_16bit(static_cast<const Half*>(data), n, skip_nan);
  return sum_16bit(static_cast<const BFloat16*>(data), n, skip_nan);
}

void pair_sum(ScalarType real_dtype, const void* data, int64_t n, double* re_im) {
  if (real_dtype == ScalarType::Float32) sum_pairs(static_cast<const float*>(data), n, re_im);
  else sum_pairs(static_cast<const double*>(data), n, re_im);
}

}  // namespace ember::EMBER_CPU_NS
