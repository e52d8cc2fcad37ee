// random_ops.cpp: see random_ops.h. The per-dtype transformations mirror PyTorch's
// (aten/src/ATen/core/TransformationHelper.h), so seeded streams agree element for element.
#include "ops/random_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "kernels/loops.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "runtime/gil.h"

namespace ember {
namespace {

constexpr double kPi = 3.14159265358979323846;

[[noreturn]] void not_implemented(const char* kernel, ScalarType t) {
  throw NotImplementedError(str_cat("\"", kernel, "\" not implemented for '", type_name(t), "'"));
}

Generator& pick(Generator* gen) { return gen ? *gen : default_generator(); }

// The generator locked for a batch of draws into `n` elements. A long batch runs without the
// GIL, released before the generator is locked: its mutex pins the GIL (runtime/gil.h).
class DrawLock {
 public:
  DrawLock(Generator& g, int64_t n) : nogil_(n > kGrainSize), lock_(g.mutex) {}

 private:
  GilRelease nogil_;  // declared first: released before the lock is taken, taken back after
  std::lock_guard<GilPinningMutex> lock_;
};

void check_cpu(const Tensor& t, const char* op) {
  EMBER_CHECK(t->device().is_cpu(), std::runtime_error, op,
              ": expected a cpu tensor, but got one on ", t->device().str());
}

// Mantissa digits (std::numeric_limits<T>::digits) of each floating storage type.
template <typename T> constexpr int digits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else return std::numeric_limits<T>::digits;
}
template <typename T> constexpr bool is_reduced() {
  return std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
}

// Uniform in [0, 1) as at::uniform_real_distribution draws it: 53 random bits for float64, 24
// bits in float for every other floating dtype (the 16-bit floats sample in float32 and round).
template <typename T> auto uniform01(Generator& g) {
  if constexpr (std::is_same_v<T, double>) return g.next_double();
  else return g.next_float();
}

// Dims of `t` ordered outermost first by stride: iterating them in row-major order visits the
// elements in memory order, as PyTorch's TensorIterator does for a nullary op.
Shape iteration_perm(const TensorImpl& t) {
  Shape perm(t.dim());
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (t.sizes[a] == 1 || t.sizes[b] == 1) return false;
    return t.strides[a] > t.strides[b];
  });
  return perm;
}

// Writes draw(i) for i = 0..numel-1 into `self` in iteration order. `draw` returns T.
template <typename T, typename Draw>
void fill_in_order(const Tensor& self, Draw&& draw) {
  const int64_t n = self->numel();
  if (n == 0) return;
  if (self->is_contiguous()) {
    T* p = self->data_as<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = draw(i);
  } else {
    Tensor buf = empty({n}, self->dtype);
    T* p = buf->data_as<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = draw(i);
    Tensor pv = permute(self, iteration_perm(*self));
    copy_(pv, view(buf, pv->sizes));
  }
  self->bump_version();
}

// A tensor on a CUDA device is drawn into a CPU twin from its device's generator (torch's default
// for that device when none is given), then copied over: the same seed gives the same numbers on
// every device. The twin has self's strides, so the sampler visits (and vectorises) its elements
// in the order it would visit self's on the CPU.
Generator* for_device(Generator* gen, const Tensor& self) {
  if (gen) return gen;  // the bindings checked its device type
  const Device d = self->device();
  return d.is_cpu() ? &default_generator() : &cuda_default_generator(d.index);
}

template <class Draw> bool drawn_on_cpu_twin(const Tensor& self, Draw&& draw) {
  if (self->device().is_cpu()) return false;
  Tensor twin = empty_strided(self->sizes, self->strides, self->dtype);
  draw(twin);
  copy_(self, twin);
  return true;
}

Tensor on_cpu(const Tensor& t) {
  if (t->device().is_cpu()) return t;
  Tensor c = empty(t->sizes, t->dtype);
  copy_(c, t);
  return c;
}

void check_writable(const Tensor& self, const char* op) {
  check_cpu(self, op);
  check_inplace_writable(self, op);
}

// PyTorch's normal fill for the 16-bit floats: blocks of 16 float uniforms turned into normals
// by Box-Muller in float32, then rounded; a last partial block is computed in full from 16 fresh
// uniforms and written over the last 16 elements.
void normal_fill_16_float(float* d, float mean, float std) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1 - d[j];  // [0, 1) -> (0, 1] for the log
    const float u2 = d[j + 8];
    const float radius = std::sqrt(-2 * std::log(u1));
    const float theta = static_cast<float>(2.0 * kPi * u2);
    d[j] = radius * std::cos(theta) * std + mean;
    d[j + 8] = radius * std::sin(theta) * std + mean;
  }
}

template <typename T>
void normal_fill_reduced(T* data, int64_t n, float mean, float std, Generator& g) {
  float buf[16];
  auto block = [&](T* dst) {
    for (int j = 0; j < 16; ++j) buf[j] = g.next_float();
    normal_fill_16_float(buf, mean, std);
    for (int j = 0; j < 16; ++j) dst[j] = T(buf[j]);
  };
  for (int64_t i = 0; i + 16 <= n; i += 16) block(data + i);
  if (n % 16 != 0) block(data + n - 16);
}

// Checks `from` and `to - 1` fit the dtype (PyTorch's check_from_to_in_range): an integral
// dtype's range, or a floating one's finite range (2^31 does not fit a float16).
void check_int_range(ScalarType dt, int64_t from, std::optional<int64_t> to_inc) {
  EMBER_CHECK(!is_complex(dt), std::runtime_error,
              "check_random_bounds handles only integral, floating-point and boolean types");
  if (is_floating(dt)) {
    const double hi = Scalar::largest_finite(dt);
    EMBER_CHECK(std::fabs(static_cast<double>(from)) <= hi, std::runtime_error,
                "from is out of bounds for ", cpp_type_name(dt));
    if (to_inc)
      EMBER_CHECK(std::fabs(static_cast<double>(*to_inc)) <= hi, std::runtime_error,
                  "to - 1 is out of bounds for ", cpp_type_name(dt));
    return;
  }
  if (!is_integral(dt, true)) return;
  int64_t lo = 0, hi = 1;
  dispatch_all_and_wide_unsigned(dt, "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      lo = static_cast<int64_t>(std::numeric_limits<T>::lowest());
      hi = static_cast<int64_t>(std::min<uint64_t>(std::numeric_limits<T>::max(),
                                                   std::numeric_limits<int64_t>::max()));
    }
  });
  EMBER_CHECK(from >= lo && from <= hi, std::runtime_error, "from is out of bounds for ",
              dtype_name(dt));
  if (to_inc)
    EMBER_CHECK(*to_inc >= lo && *to_inc <= hi, std::runtime_error,
                "to - 1 is out of bounds for ", dtype_name(dt));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void uniform_(const Tensor& self, double from, double to, Generator* gen) {
  if (drawn_on_cpu_twin(self, [&](const Tensor& t) { uniform_(t, from, to, for_device(gen, self)); })) return;
  check_writable(self, "uniform_");
  // complex: both parts drawn from [from, to), as torch's (which checks nothing for an empty one)
  if (is_complex(self->dtype)) {
    if (self->numel() == 0) return;
    return uniform_(view_as_real(self), from, to, gen);
  }
  if (!is_floating(self->dtype)) not_implemented("check_uniform_bounds", self->dtype);
  {  // torch's check_uniform_bounds: both ends within the dtype's finite range
    const double highest = Scalar::largest_finite(self->dtype);
    EMBER_CHECK(from >= -highest && from <= highest, std::runtime_error,
                "from is out of bounds for ", Scalar::checked_type_name(self->dtype));
    EMBER_CHECK(to >= -highest && to <= highest, std::runtime_error, "to is out of bounds for ",
                Scalar::checked_type_name(self->dtype));
  }
  EMBER_CHECK(from <= to, std::runtime_error,
              "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  Generator& g = pick(gen);
  dispatch_floating(self->dtype, "uniform_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const double lim = static_cast<double>(std::numeric_limits<opmath_t<T>>::max());
    EMBER_CHECK(to - from <= lim, std::runtime_error, "uniform_ expects to-from <= ",
                "std::numeric_limits<", dtype_name(self->dtype), ">::max(), but found to=", to,
                " and from=", from, " which result in to-from to exceed the limit");
    DrawLock lock(g, self->numel());
    // A value that rounds up to `to` becomes `from`, keeping the range half-open (as PyTorch).
    if constexpr (std::is_same_v<T, double>) {
      fill_in_order<T>(self, [&](int64_t) {
        const double v = g.next_double() * (to - from) + from;
        return v == to ? from : v;
      });
    } else {  // float32, and the 16-bit floats through float32
      const float f = static_cast<float>(from), t = static_cast<float>(to);
      const float t_rounded = static_cast<float>(T(t));
      // torch's kernel rounds u * (to - from) + from once (a fused multiply-add) where its
      // vectorised CPU kernels run, as ember's do where fused_multiply_add() says so.
      const bool fused = fused_multiply_add();
      fill_in_order<T>(self, [&](int64_t) {
        const float u = g.next_float();
        const T v = T(fused ? std::fma(u, t - f, f) : u * (t - f) + f);
        return static_cast<float>(v) == t_rounded ? T(f) : v;
      });
    }
  });
}

void normal_(const Tensor& self, double mean, double std, Generator* gen) {
  if (drawn_on_cpu_twin(self, [&](const Tensor& t) { normal_(t, mean, std, for_device(gen, self)); })) return;
  check_writable(self, "normal_");
  // torch checks std first and the dtype only when there is something to draw
  EMBER_CHECK(std >= 0.0, std::runtime_error, "normal expects std >= 0.0, but found std ", std);
  if (self->numel() == 0) return;
  // complex: each part normal with half the variance, as torch's (E|z - mean|^2 = std^2)
  if (is_complex(self->dtype)) return normal_(view_as_real(self), mean, std / std::sqrt(2.0), gen);
  if (!is_floating(self->dtype)) not_implemented("normal_kernel_cpu", self->dtype);
  Generator& g = pick(gen);
  const int64_t n = self->numel();
  if (n == 0) return;
  const bool vectorised = n >= 16 && self->is_contiguous();
  dispatch_floating(self->dtype, "normal_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (vectorised) {
      if constexpr (is_reduced<T>()) {
        DrawLock lock(g, n);
        normal_fill_reduced<T>(self->data_as<T>(), n, static_cast<float>(mean), static_cast<float>(std), g);
      } else {
        GilRelease nogil(n > kGrainSize);  // before fill_normal locks the generator
        fill_normal(g, self->data_as<T>(), n, mean, std);
      }
      self->bump_version();
      return;
    }
    DrawLock lock(g, n);
    fill_in_order<T>(self, [&](int64_t) { return static_cast<T>(g.next_normal() * std + mean); });
  });
}

void random_(const Tensor& self, Generator* gen) {
  if (drawn_on_cpu_twin(self, [&](const Tensor& t) { random_(t, for_device(gen, self)); })) return;
  check_writable(self, "random_");
  Generator& g = pick(gen);
  DrawLock lock(g, self->numel());
  dispatch_all(self->dtype, "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_in_order<T>(self, [&](int64_t) -> T {
      if constexpr (std::is_same_v<T, bool>) {
        return static_cast<bool>(g.next_u32() & 1u);
      } else if constexpr (std::is_same_v<T, int64_t>) {
        return static_cast<int64_t>(g.next_u64() % (uint64_t(std::numeric_limits<int64_t>::max()) + 1));
      } else if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(g.next_u32() % (uint64_t(std::numeric_limits<T>::max()) + 1));
      } else if constexpr (std::is_same_v<T, double>) {
        return static_cast<double>(g.next_u64() % ((uint64_t(1) << 53) + 1));
      } else {
        return T(static_cast<float>(g.next_u32() % ((uint64_t(1) << digits<T>()) + 1)));
      }
    });
  });
}

void random_(const Tensor& self, int64_t from, std::optional<int64_t> to, Generator* gen) {
  if (drawn_on_cpu_twin(self, [&](const Tensor& t) { random_(t, from, to, for_device(gen, self)); })) return;
  check_writable(self, "random_");
  const ScalarType dt = self->dtype;
  uint64_t range;
  bool full64 = false;
  if (to) {
    EMBER_CHECK(from < *to, std::runtime_error,
                "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", *to);
    check_int_range(dt, from, *to - 1);
    range = static_cast<uint64_t>(*to) - static_cast<uint64_t>(from);
  } else if (from == std::numeric_limits<int64_t>::min()) {
    // every 64-bit value (torch's random_full_64_bits_range kernel, cast into the dtype), which
    // torch has for four dtypes only; an empty tensor returns before its kernel
    if (self->numel() == 0) return;
    const bool has_kernel = dt == ScalarType::Int64 || dt == ScalarType::Float64 ||
                            dt == ScalarType::Float32 || dt == ScalarType::BFloat16;
    EMBER_CHECK(has_kernel || !is_integral(dt, false) || is_wide_unsigned(dt),
                std::runtime_error,
                "random_full_64_bits_range_kernel_cpu handles only int64, double, float and "
                "bfloat16");
    if (!has_kernel) not_implemented("random_full_64_bits_range_kernel_cpu", dt);
    range = 0;
    full64 = true;
  } else {  // up to the largest value of the dtype, inclusive
    // (uint64's, 2^64 - 1, is out of an int64's range: torch refuses it as a bound too)
    EMBER_CHECK(dt != ScalarType::UInt64, std::runtime_error, "to - 1 is out of bounds for ",
                dtype_name(dt));
    EMBER_CHECK(!is_complex(dt), std::runtime_error,
                "random_from_to_impl handles only integral, floating-point and boolean types");
    int64_t to_inc = 0;
    dispatch_all_and_wide_unsigned(dt, "random_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) to_inc = static_cast<int64_t>(std::numeric_limits<T>::max());
      else to_inc = int64_t(1) << digits<T>();
    });
    check_int_range(dt, from, std::nullopt);
    EMBER_CHECK(from <= to_inc, std::runtime_error,
                "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                "casted to dtype, but got from=", from, " > to_inc=", to_inc);
    range = static_cast<uint64_t>(to_inc) - static_cast<uint64_t>(from) + 1;
  }
  const bool wide_dtype = dt == ScalarType::Int64 || dt == ScalarType::UInt64 ||
                          dt == ScalarType::Float64 || dt == ScalarType::Float32 ||
                          dt == ScalarType::BFloat16;
  const bool use64 = wide_dtype && range >= (uint64_t(1) << 32);
  Generator& g = pick(gen);
  DrawLock lock(g, self->numel());
  // (the wide unsigned types too: torch draws their integers from a range, not its default)
  dispatch_all_and_wide_unsigned(dt, "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_in_order<T>(self, [&](int64_t) -> T {
      int64_t v;
      if (full64) v = static_cast<int64_t>(g.next_u64());
      else if (use64) v = static_cast<int64_t>(g.next_u64() % range + static_cast<uint64_t>(from));
      else v = static_cast<int64_t>(g.next_u32() % range + static_cast<uint64_t>(from));
      return cast_to<T>(v);
    });
  });
}

void bernoulli_(const Tensor& self, double p, Generator* gen) {
  if (drawn_on_cpu_twin(self, [&](const Tensor& t) { bernoulli_(t, p, for_device(gen, self)); })) return;
  check_writable(self, "bernoulli_");
  EMBER_CHECK(p >= 0.0 && p <= 1.0, std::runtime_error,
              "bernoulli_ expects p to be in [0, 1], but got p=", p);
  Generator& g = pick(gen);
  DrawLock lock(g, self->numel());
  dispatch_all(self->dtype, "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_in_order<T>(self, [&](int64_t) { return cast_to<T>(uniform01<double>(g) < p ? 1 : 0); });
  });
}

void bernoulli_(const Tensor& self, const Tensor& p, Generator* gen) {
  if (drawn_on_cpu_twin(self, [&](const Tensor& t) { bernoulli_(t, on_cpu(p), for_device(gen, self)); })) return;
  check_writable(self, "bernoulli_");
  check_cpu(p, "bernoulli_");
  if (!is_floating(p->dtype)) not_implemented("bernoulli_tensor_cpu_p_", p->dtype);
  if (self->numel() == 0) return;  // (torch's: p's shape unread)
  // p in the order the elements of self are visited, as double (exact for every float dtype).
  Tensor pe = expand(p, self->sizes);
  Tensor pv = self->is_contiguous() ? pe : permute(pe, iteration_perm(*self));
  Tensor pd = contiguous(to_dtype(pv, ScalarType::Float64));
  const double* pp = pd->data_as<double>();
  const int64_t n = self->numel();
  for (int64_t i = 0; i < n; ++i)
    EMBER_CHECK(pp[i] >= 0.0 && pp[i] <= 1.0, std::runtime_error,
                "bernoulli_ expects all elements of p to be in [0, 1], but got p=", pp[i]);
  const bool p_double = p->dtype == ScalarType::Float64;
  Generator& g = pick(gen);
  DrawLock lock(g, self->numel());
  dispatch_all(self->dtype, "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_in_order<T>(self, [&](int64_t i) {
      // PyTorch draws a double for float64 probabilities, a 24-bit float otherwise.
      const bool hit = p_double ? uniform01<double>(g) < pp[i]
                                : uniform01<float>(g) < static_cast<float>(pp[i]);
      return cast_to<T>(hit ? 1 : 0);
    });
  });
}

void exponential_(const Tensor& self, double lambd, Generator* gen) {
  if (drawn_on_cpu_twin(self, [&](const Tensor& t) { exponential_(t, lambd, for_device(gen, self)); })) return;
  check_writable(self, "exponential_");
  EMBER_CHECK(lambd > 0.0, std::runtime_error,
              "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  if (self->numel() == 0) return;  // torch checks the dtype only when there is something to draw
  EMBER_CHECK(is_floating(self->dtype), std::runtime_error,
              "Exponential distribution is a continuous probability distribution. dtype must be a "
              "floating point but you specified ", type_name(self->dtype));
  Generator& g = pick(gen);
  DrawLock lock(g, self->numel());
  dispatch_floating(self->dtype, "exponential_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_in_order<T>(self, [&](int64_t) {
      return cast_to<T>(-1.0 / lambd * std::log1p(-uniform01<double>(g)));
    });
  });
}

Tensor randperm(int64_t n, ScalarType dtype, Generator* gen) {
  (void)checked_numel({n});  // a negative n; then the dtype's range, before allocating n values
  if (dtype == ScalarType::Bool) not_implemented("randperm", dtype);
  if (n > 0) {
    const int64_t last = n - 1;
    if (is_floating(dtype)) {
      int d = dtype == ScalarType::Float16 ? 11 : dtype == ScalarType::BFloat16 ? 8
              : dtype == ScalarType::Float32 ? 24 : 53;
      const int64_t lim = (int64_t(1) << d) + 1;
      EMBER_CHECK(n <= lim, std::runtime_error, "n cannot be greater than 2^", d, "+1 for ",
                  torch_type_name(dtype), " type.");
    } else {  // (torch's check: n - 1 converted into the dtype)
      check_scalar_fits(Scalar::from_int(last), dtype);
    }
  }
  Tensor out = empty({n}, dtype);
  std::vector<int64_t> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), int64_t(0));
  Generator& g = pick(gen);
  {
    DrawLock lock(g, n);
    if (n < int64_t(std::numeric_limits<uint32_t>::max() / 20)) {
      for (int64_t i = 0; i < n - 1; ++i) {
        const int64_t z = static_cast<int64_t>(g.next_u32()) % (n - i);
        std::swap(r[i], r[z + i]);
      }
    } else {  // inside-out Fisher-Yates with 64-bit draws
      for (int64_t i = 0; i < n; ++i) {
        const int64_t z = static_cast<int64_t>(g.next_u64() % static_cast<uint64_t>(i + 1));
        r[i] = r[z];
        r[z] = i;
      }
    }
  }
  dispatch_numeric(dtype, "randperm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = out->data_as<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = cast_to<T>(r[i]);
  });
  return out;
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  check_cpu(probs, "multinomial");
  const int64_t nd = probs->dim();
  EMBER_CHECK(nd == 1 || nd == 2, std::runtime_error, "prob_dist must be 1 or 2 dim");
  EMBER_CHECK(is_floating(probs->dtype), std::runtime_error,
              "multinomial only supports floating-point dtypes for input, got: ",
              type_name(probs->dtype));
  EMBER_CHECK(num_samples > 0, std::runtime_error, "cannot sample n_sample <= 0 samples");
  const int64_t ncat = probs->sizes[nd - 1];
  const int64_t rows = nd == 1 ? 1 : probs->sizes[0];
  EMBER_CHECK(replacement || num_samples <= ncat, std::runtime_error,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  EMBER_CHECK(ncat <= (int64_t(1) << 24), std::runtime_error,
              "number of categories cannot exceed 2^24");
  Shape rshape = nd == 1 ? Shape{num_samples} : Shape{rows, num_samples};
  Tensor result = empty(rshape, ScalarType::Int64);
  if (rows == 0) return result;
  int64_t* res = result->data_as<int64_t>();
  Generator& g = pick(gen);
  GilRelease nogil(rows * ncat > kGrainSize);  // before any lock of the generator
  // Probabilities as double, row-major (exact for every float dtype).
  Tensor pd = contiguous(to_dtype(probs, ScalarType::Float64));
  const double* P = pd->data_as<double>();
  const bool is_double = probs->dtype == ScalarType::Float64;

  if (!replacement || num_samples == 1) {
    // PyTorch's Gumbel-max trick: the top-k of p / q with q ~ Exp(1) (q in the input's dtype).
    for (int64_t i = 0; i < rows * ncat; ++i)
      EMBER_CHECK(std::isfinite(P[i]) && P[i] >= 0.0, std::runtime_error,
                  "probability tensor contains either `inf`, `nan` or element < 0");
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t j = 0; j < ncat; ++j) s += P[r * ncat + j];
      EMBER_CHECK(s > 0, std::runtime_error,
                  "invalid multinomial distribution (sum of probabilities <= 0)");
    }
    Tensor q = empty({rows, ncat}, probs->dtype);
    exponential_(q, 1.0, gen);
    Tensor qd = to_dtype(q, ScalarType::Float64);
    const double* Q = qd->data_as<double>();
    std::vector<double> key(static_cast<size_t>(ncat));
    std::vector<int64_t> idx(static_cast<size_t>(ncat));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < ncat; ++j) {
        const double v = P[r * ncat + j] / Q[r * ncat + j];
        // The quotient is rounded to the input's dtype, as PyTorch computes it there.
        key[j] = is_double ? v : dispatch_floating(probs->dtype, "multinomial", [&](auto tag) {
          using T = typename decltype(tag)::type;
          return static_cast<double>(static_cast<float>(cast_to<T>(v)));
        });
      }
      std::iota(idx.begin(), idx.end(), int64_t(0));
      auto by_key = [&](int64_t a, int64_t b) { return key[a] > key[b] || (key[a] == key[b] && a < b); };
      std::partial_sort(idx.begin(), idx.begin() + num_samples, idx.end(), by_key);
      for (int64_t k = 0; k < num_samples; ++k) res[r * num_samples + k] = idx[k];
    }
    return result;
  }

  // With replacement: inverse-CDF sampling by binary search, one double draw per sample.
  std::vector<double> cum(static_cast<size_t>(ncat));
  DrawLock lock(g, rows * (ncat + num_samples));
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t j = 0; j < ncat; ++j) {
      const double v = P[r * ncat + j];
      EMBER_CHECK(std::isfinite(v), std::runtime_error,
                  "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
      EMBER_CHECK(v >= 0.0, std::runtime_error,
                  "invalid multinomial distribution (encountering probability entry < 0)");
      s += v;
      cum[j] = s;
    }
    EMBER_CHECK(s > 0, std::runtime_error,
                "invalid multinomial distribution (sum of probabilities <= 0)");
    for (int64_t j = 0; j < ncat; ++j) cum[j] /= s;
    cum[ncat - 1] = 1.0;
    for (int64_t k = 0; k < num_samples; ++k) {
      const double u = uniform01<double>(g);
      int64_t lo = 0, hi = ncat;
      while (hi - lo > 0) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (cum[mid] < u) lo = mid + 1;
        else hi = mid;
      }
      res[r * num_samples + k] = lo;
    }
  }
  return result;
}

// ---------------------------------------------------------------------------------------------

namespace {
void check_std_nonnegative(const Tensor& std) {
  EMBER_CHECK(!is_complex(std->dtype), std::runtime_error,
              "normal expects standard deviation to be non-complex");
  Tensor sd = contiguous(to_dtype(std, ScalarType::Float64));
  const double* p = sd->data_as<double>();
  for (int64_t i = 0; i < sd->numel(); ++i)
    EMBER_CHECK(p[i] >= 0.0, std::runtime_error, "normal expects all elements of std >= 0.0");
}
}  // namespace

Tensor normal(const Tensor& mean, double std, Generator* gen) {
  check_cpu(mean, "normal");
  EMBER_CHECK(std >= 0.0, std::runtime_error, "normal expects std >= 0.0, but found std ", std);
  Tensor out = empty(mean->sizes, mean->dtype);
  normal_(out, 0.0, std, gen);
  binary(BinaryOp::add, Operand(out), Operand(mean), out);
  return out;
}

Tensor normal(double mean, const Tensor& std, Generator* gen) {
  check_cpu(std, "normal");
  check_std_nonnegative(std);
  // torch's add_(mean) converts the mean into the dtype checked (reduced floats compute in
  // float32 and take it unchecked), also for an empty result, where no kernel runs
  if (!is_reduced_float(std->dtype)) check_scalar_fits(Scalar::from_double(mean), std->dtype);
  Tensor out = empty(std->sizes, std->dtype);
  // (torch's empty result still goes through its add of the mean, which uint16-64 lack)
  if (out->numel() == 0 && is_wide_unsigned(std->dtype)) not_implemented("add_stub", std->dtype);
  if (out->numel() == 0) return out;
  normal_(out, 0.0, 1.0, gen);
  binary(BinaryOp::mul, Operand(out), Operand(std), out);
  binary(BinaryOp::add, Operand(out), Operand(Scalar::from_double(mean)), out);
  return out;
}

Tensor normal(const Tensor& mean, const Tensor& std, Generator* gen) {
  check_cpu(mean, "normal"), check_cpu(std, "normal");
  check_std_nonnegative(std);
  Tensor out = empty(broadcast_shapes(mean->sizes, std->sizes), mean->dtype);
  normal_(out, 0.0, 1.0, gen);
  binary(BinaryOp::mul, Operand(out), Operand(std), out);
  binary(BinaryOp::add, Operand(out), Operand(mean), out);
  return out;
}

}  // namespace ember
