// fft.cpp: ATen's _fft_c2c on the CPU for power-of-two lengths: the transform along each dim in
// turn, through the lane kernels of ops/cpu/fft.cpp (compiled per CPU capability). ember.fft
// calls it for the complex transforms of power-of-two lengths it takes (ember/fft.py says which
// and why) and leaves the others (and the real ones) to pocketfft.
#include "ops/fft.h"

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "ops/cpu_kernels.h"
#include "runtime/gil.h"

namespace ember {
namespace {

// w_n^k = exp(-2 pi i k / n), k < n, and for rows longer than kFftVectorRowsMax the six-step
// form's w_n^(k1 i2) (ops/cpu_kernels.h: FftTables), in float and double, computed in double. Kept per n for the next call (at most
// kMaxTables; the oldest go first).
template <typename T> struct Tables {
  std::vector<T> re, im, six_re, six_im;
};
struct Twiddles {
  Tables<float> f;
  Tables<double> d;
};

constexpr size_t kMaxTables = 16;
std::mutex g_mu;
std::map<std::pair<int64_t, bool>, std::shared_ptr<const Twiddles>> g_tables;
std::vector<std::pair<int64_t, bool>> g_order;

template <typename T> void fill(Tables<T>& t, int64_t n) {
  const double step = -2.0 * M_PI / static_cast<double>(n);
  t.re.resize(static_cast<size_t>(n));
  t.im.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    t.re[k] = static_cast<T>(std::cos(step * static_cast<double>(k)));
    t.im[k] = static_cast<T>(std::sin(step * static_cast<double>(k)));
  }
  if (n <= kFftVectorRowsMax) return;  // (only the six-step form reads the rest)
  const int64_t n1 = fft_six_step_rows(n), n2 = n / n1;
  t.six_re.resize(static_cast<size_t>(n));
  t.six_im.resize(static_cast<size_t>(n));
  for (int64_t k1 = 0; k1 < n1; ++k1)
    for (int64_t i2 = 0; i2 < n2; ++i2) {
      const int64_t k = (k1 * i2) & (n - 1);
      t.six_re[k1 * n2 + i2] = t.re[k];
      t.six_im[k1 * n2 + i2] = t.im[k];
    }
}

std::shared_ptr<const Twiddles> twiddles(int64_t n, bool dbl) {
  std::lock_guard<std::mutex> lock(g_mu);
  const auto key = std::make_pair(n, dbl);
  auto it = g_tables.find(key);
  if (it != g_tables.end()) return it->second;
  auto t = std::make_shared<Twiddles>();
  if (dbl) fill(t->d, n);
  else fill(t->f, n);
  if (g_order.size() >= kMaxTables) {
    g_tables.erase(g_order.front());
    g_order.erase(g_order.begin());
  }
  g_tables[key] = t;
  g_order.push_back(key);
  return t;
}

template <typename T> FftTables tables_of(const Tables<T>& t) {
  return {t.re.data(), t.im.data(), t.six_re.empty() ? nullptr : t.six_re.data(),
          t.six_im.empty() ? nullptr : t.six_im.data()};
}

bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

namespace {

void check_normalization(const char* op, int64_t normalization) {
  EMBER_CHECK(normalization >= 0 && normalization <= 2, ValueError, op,
              ": normalization must be 0 (none), 1 (1/sqrt(n)) or 2 (1/n), but got ",
              normalization);
}

double scale_of(int64_t normalization, int64_t n) {
  return normalization == 0   ? 1.0
         : normalization == 1 ? 1.0 / std::sqrt(static_cast<double>(n))
                              : 1.0 / static_cast<double>(n);
}

// The checks rfft's and irfft's kernels share: self's kind (complex_input: complex64/complex128,
// else float32/float64) and device, the normalization, one dim and that it is the last. Its index.
int64_t check_last_dim_transform(const char* op, const Tensor& self,
                                 const std::vector<int64_t>& dims, int64_t normalization,
                                 bool complex_input) {
  const ScalarType dt = self->dtype;
  if (complex_input)
    EMBER_CHECK(dt == ScalarType::Complex64 || dt == ScalarType::Complex128, std::runtime_error,
                op, ": expected a complex64 or complex128 tensor, but got ", torch_type_name(dt));
  else
    EMBER_CHECK(dt == ScalarType::Float32 || dt == ScalarType::Float64, std::runtime_error, op,
                ": expected a float32 or float64 tensor, but got ", torch_type_name(dt));
  EMBER_CHECK(self->device().is_cpu(), std::runtime_error, op, ": expected a CPU tensor, but got ",
              self->device().str());
  check_normalization(op, normalization);
  const int64_t nd = self->dim();
  EMBER_CHECK(dims.size() == 1, NotImplementedError, op,
              ": this kernel transforms one dim, but got ", dims.size());
  const int64_t d = wrap_dim(dims[0], nd, false);
  EMBER_CHECK(d == nd - 1, NotImplementedError, op,
              ": this kernel transforms the last dim only, but got dim ", d, " of ", nd);
  return d;
}

}  // namespace

Tensor fft_c2c_pow2(const Tensor& self, const std::vector<int64_t>& dims, int64_t normalization,
                    bool forward) {
  const char* op = "_fft_c2c";
  const ScalarType dt = self->dtype;
  EMBER_CHECK(dt == ScalarType::Complex64 || dt == ScalarType::Complex128, std::runtime_error, op,
              ": expected a complex64 or complex128 tensor, but got ", torch_type_name(dt));
  EMBER_CHECK(self->device().is_cpu(), std::runtime_error, op, ": expected a CPU tensor, but got ",
              self->device().str());
  check_normalization(op, normalization);
  const int64_t nd = self->dim();
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, nd, false);
    for (int64_t seen : wrapped)
      EMBER_CHECK(seen != w, std::runtime_error, "FFT dims must be unique");
    wrapped.push_back(w);
    EMBER_CHECK(power_of_two(self->sizes[w]), NotImplementedError, op,
                ": this kernel takes power-of-two lengths, but dim ", w, " has ", self->sizes[w],
                " points (ember.fft uses pocketfft for those)");
  }
  Tensor x = contiguous(self);
  if (wrapped.empty() || x->numel() == 0) return clone(x);
  GilRelease nogil(x->numel() > 4096);
  const bool dbl = dt == ScalarType::Complex128;
  const ScalarType real = dbl ? ScalarType::Float64 : ScalarType::Float32;
  // The first dim's transform writes a new tensor, the others work in place in it (every layout
  // of the kernel reads a row, a block of columns or a six-step pass whole before writing it).
  Tensor y;
  for (int64_t d : wrapped) {
    const int64_t n = x->sizes[d];
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < d; ++i) outer *= x->sizes[i];
    for (int64_t i = d + 1; i < nd; ++i) inner *= x->sizes[i];
    const double scale = scale_of(normalization, n);
    const auto tw = twiddles(n, dbl);
    if (!y) y = empty(x->sizes, dt);
    cpu_kernels().fft_pow2(real, x->data(), y->data(), n, outer, inner, !forward, scale,
                           dbl ? tables_of(tw->d) : tables_of(tw->f));
    x = y;
  }
  return y;
}

Tensor fft_r2c_pow2(const Tensor& self, const std::vector<int64_t>& dims, int64_t normalization,
                    bool onesided) {
  const char* op = "_fft_r2c";
  const ScalarType dt = self->dtype;
  const int64_t d = check_last_dim_transform(op, self, dims, normalization, false);
  EMBER_CHECK(onesided, NotImplementedError, op,
              ": this kernel computes the one-sided spectrum only (ember.fft uses pocketfft for "
              "the other)");
  const int64_t n = self->sizes[d];
  EMBER_CHECK(n >= 2 && power_of_two(n), NotImplementedError, op,
              ": this kernel takes power-of-two lengths of 2 or more, but dim ", d, " has ", n,
              " points (ember.fft uses pocketfft for those)");
  const Tensor x = contiguous(self);
  const bool dbl = dt == ScalarType::Float64;
  const ScalarType complex_dt = dbl ? ScalarType::Complex128 : ScalarType::Complex64;
  std::vector<int64_t> half_sizes = x->sizes, sizes = x->sizes;
  const int64_t h = n / 2;
  half_sizes[d] = h;
  sizes[d] = h + 1;
  Tensor z = empty(half_sizes, complex_dt);
  Tensor y = empty(sizes, complex_dt);
  const int64_t rows = x->numel() / n;
  if (rows == 0) return y;
  GilRelease nogil(x->numel() > 4096);
  const auto half = twiddles(h, dbl), full = twiddles(n, dbl);
  // the rows' pairs of points are h complex values each: their FFT, then the split
  cpu_kernels().fft_pow2(dbl ? ScalarType::Float64 : ScalarType::Float32, x->data(), z->data(), h,
                         rows, 1, false, 1.0, dbl ? tables_of(half->d) : tables_of(half->f));
  const FftTables w = dbl ? tables_of(full->d) : tables_of(full->f);
  cpu_kernels().fft_r2c_split(dt, z->data(), y->data(), h, rows, scale_of(normalization, n), w.re,
                              w.im);
  return y;
}

Tensor fft_c2r_pow2(const Tensor& self, const std::vector<int64_t>& dims, int64_t normalization,
                    int64_t last_dim_size) {
  const char* op = "_fft_c2r";
  const ScalarType dt = self->dtype;
  const int64_t d = check_last_dim_transform(op, self, dims, normalization, true);
  const int64_t n = last_dim_size;
  EMBER_CHECK(n >= 2 && power_of_two(n), NotImplementedError, op,
              ": this kernel takes power-of-two lengths of 2 or more, but got last_dim_size ", n,
              " (ember.fft uses pocketfft for those)");
  const int64_t h = n / 2;
  EMBER_CHECK(self->sizes[d] == h + 1, std::runtime_error, op, ": expected ", h + 1,
              " points (last_dim_size / 2 + 1) along dim ", d, ", but got ", self->sizes[d]);
  const Tensor x = contiguous(self);
  const bool dbl = dt == ScalarType::Complex128;
  const ScalarType real = dbl ? ScalarType::Float64 : ScalarType::Float32;
  std::vector<int64_t> half_sizes = x->sizes, sizes = x->sizes;
  half_sizes[d] = h;
  sizes[d] = n;
  Tensor z = empty(half_sizes, dt);
  Tensor y = empty(sizes, real);
  const int64_t rows = x->numel() / (h + 1);
  if (rows == 0) return y;
  GilRelease nogil(x->numel() > 4096);
  const auto half = twiddles(h, dbl), full = twiddles(n, dbl);
  const FftTables w = dbl ? tables_of(full->d) : tables_of(full->f);
  cpu_kernels().fft_c2r_join(real, x->data(), z->data(), h, rows, w.re, w.im);
  // (the join's values are twice the pairs' h-point spectrum, so their unnormalised h-point
  // inverse is n times the signal, as the n-point inverse's)
  cpu_kernels().fft_pow2(real, z->data(), y->data(), h, rows, 1, true, scale_of(normalization, n),
                         dbl ? tables_of(half->d) : tables_of(half->f));
  return y;
}

}  // namespace ember
