// sort.cpp: the sorting and selection kernels declared in sort.h (searchsorted and the
// histograms are in histogram.cpp).
//
// Keys: every element becomes an unsigned integer key whose order is PyTorch's order of the values
// (NaN largest). A row of keys is then tagged with element indices: for keys of <= 32 bits one
// uint64 word (key << 32 | index), else a (key, index) pair. Ordering the tagged records by
// (key, index) is a stable sort of the values, which every op here relies on (stable sort, the
// first-index rules of median/kthvalue ties, unique's inverse). Long rows use an LSD radix sort on
// the key bytes (passes whose digit is constant are skipped, so small ints take one or two
// passes), short ones std::sort on the records. Results read the input back by index.
#include "ops/sort.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernels/loops.h"
#include "ops/reduce.h"
#include "ops/sort_rows.h"
#include "runtime/gil.h"
#include "runtime/parallel.h"

namespace ember {

using namespace sort_rows;

namespace {

// ---- keys ----

// Branch-free (random signs would defeat branch prediction): negatives flip all bits, others
// set the sign bit; NaN becomes the largest key and -0.0 the key of +0.0.
template <typename U> inline U float_key(U b, U inf_bits) {
  constexpr int kBits = sizeof(U) * 8;
  constexpr U sign = U(U(1) << (kBits - 1));
  const U mag = U(b & U(~sign));
  const U mask = U(U(U(0) - U(b >> (kBits - 1))) | sign);
  U k = U(b ^ mask);
  k = mag == 0 ? sign : k;
  k = mag > inf_bits ? U(~U(0)) : k;
  return k;
}

template <typename T> struct Key {  // integers
  using U = std::make_unsigned_t<T>;
  using K = U;
  static constexpr bool has_nan = false;
  static K of(T v) {
    if constexpr (std::is_signed_v<T>) return K(U(v) ^ U(U(1) << (sizeof(T) * 8 - 1)));
    else return K(v);
  }
};
template <> struct Key<bool> {
  using K = uint8_t;
  static constexpr bool has_nan = false;
  static K of(bool v) { return v; }
};
template <> struct Key<float> {
  using K = uint32_t;
  static constexpr bool has_nan = true;
  static K of(float v) { K b; std::memcpy(&b, &v, 4); return float_key<K>(b, 0x7F800000u); }
};
template <> struct Key<double> {
  using K = uint64_t;
  static constexpr bool has_nan = true;
  static K of(double v) { K b; std::memcpy(&b, &v, 8); return float_key<K>(b, 0x7FF0000000000000ull); }
};
template <> struct Key<Half> {
  using K = uint16_t;
  static constexpr bool has_nan = true;
  static K of(Half v) { return float_key<K>(v.bits, 0x7C00); }
};
template <> struct Key<BFloat16> {
  using K = uint16_t;
  static constexpr bool has_nan = true;
  static K of(BFloat16 v) { return float_key<K>(v.bits, 0x7F80); }
};
template <typename T> using key_t = typename Key<T>::K;
template <typename T> inline bool key_is_nan(key_t<T> k) {
  return Key<T>::has_nan && k == key_t<T>(~key_t<T>(0));
}

// ---- records: a key tagged with its index in the row ----

template <typename K, bool Wide = (sizeof(K) > 4)> struct Rec {
  using R = uint64_t;
  static R make(K k, int64_t j) { return (uint64_t(k) << 32) | uint64_t(j); }
  static int64_t index(R r) { return int64_t(r & 0xFFFFFFFFu); }
  static K key(R r) { return K(r >> 32); }
  static unsigned digit(R r, int p) { return unsigned(r >> (32 + 8 * p)) & 0xFFu; }
};
struct Rec64 {
  uint64_t k;
  int64_t i;
  bool operator<(const Rec64& o) const { return k < o.k || (k == o.k && i < o.i); }
};
template <typename K> struct Rec<K, true> {
  using R = Rec64;
  static R make(K k, int64_t j) { return R{uint64_t(k), j}; }
  static int64_t index(const R& r) { return r.i; }
  static K key(const R& r) { return K(r.k); }
  static unsigned digit(const R& r, int p) { return unsigned(r.k >> (8 * p)) & 0xFFu; }
};
template <typename K> using rec_t = typename Rec<K>::R;

void check_row_length(int64_t n, const char* op) {
  EMBER_CHECK(n < (int64_t(1) << 32), NotImplementedError, op,
              "(): rows of 2**32 elements or more are not supported");
}

constexpr int64_t kRadixMin = 1024;  // below this std::sort on the records is faster

// LSD radix sort of a[0, n) by the key bytes (stable; the result ends in a). Runs `nchunks`
// chunks of each pass on the pool when nchunks > 1.
template <typename K>
void radix_sort(rec_t<K>* a, rec_t<K>* tmp, int64_t n, int nchunks) {
  using RT = Rec<K>;
  using R = rec_t<K>;
  std::vector<std::array<int64_t, 256>> hist(nchunks);
  auto lo = [&](int64_t c) { return c * n / nchunks; };
  R* src = a;
  R* dst = tmp;
  auto run = [&](auto&& f) {
    if (nchunks > 1) parallel_for(0, nchunks, 1, [&](int64_t b, int64_t e) { for (int64_t c = b; c < e; ++c) f(c); });
    else f(0);
  };
  for (int p = 0; p < static_cast<int>(sizeof(K)); ++p) {
    run([&](int64_t c) {
      auto& h = hist[c];
      h.fill(0);
      for (int64_t i = lo(c), e = lo(c + 1); i < e; ++i) ++h[RT::digit(src[i], p)];
    });
    bool trivial = false;
    for (int d = 0; d < 256 && !trivial; ++d) {
      int64_t t = 0;
      for (int c = 0; c < nchunks; ++c) t += hist[c][d];
      trivial = t == n;
    }
    if (trivial) continue;
    int64_t pos = 0;
    for (int d = 0; d < 256; ++d)
      for (int c = 0; c < nchunks; ++c) {
        const int64_t t = hist[c][d];
        hist[c][d] = pos;
        pos += t;
      }
    run([&](int64_t c) {
      int64_t h[256];  // a local copy: stores to dst cannot alias it, so it stays in cache lines
      std::copy(hist[c].begin(), hist[c].end(), h);
      for (int64_t i = lo(c), e = lo(c + 1); i < e; ++i) {
        const R v = src[i];
        dst[h[RT::digit(v, p)]++] = v;
      }
    });
    std::swap(src, dst);
  }
  if (src != a) std::memcpy(static_cast<void*>(a), src, sizeof(R) * n);
}

// Sorts the records of one row (stable order of the keys).
template <typename K> void sort_recs(std::vector<rec_t<K>>& r, std::vector<rec_t<K>>& tmp, bool parallel) {
  const int64_t n = static_cast<int64_t>(r.size());
  if (n < kRadixMin) {
    std::sort(r.begin(), r.end());
    return;
  }
  tmp.resize(n);
  int nchunks = 1;
  if (parallel) nchunks = static_cast<int>(std::clamp<int64_t>(n / 65536, 1, get_num_threads()));
  radix_sort<K>(r.data(), tmp.data(), n, nchunks);
}

// True when the 64-bit keys of `r` span less than 2**32.
inline bool narrow_range(const std::vector<Rec64>& r) {
  uint64_t mn = ~uint64_t(0), mx = 0;
  for (const auto& x : r) mn = std::min(mn, x.k), mx = std::max(mx, x.k);
  return mx - mn <= 0xFFFFFFFFull;
}

// Loads the records (key, index) of row r; flip reverses the order (descending/largest).
template <typename T>
void load_recs(const T* base, const Rows& L, int64_t r, bool flip, std::vector<rec_t<key_t<T>>>& out) {
  using K = key_t<T>;
  const T* p = base + L.in_offset(r);
  out.resize(L.n);
  for (int64_t j = 0; j < L.n; ++j) {
    K k = Key<T>::of(p[j * L.stride]);
    if (flip) k = K(~k);
    out[j] = Rec<K>::make(k, j);
  }
}

}  // namespace

// ---- sort ----

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool /*stable*/) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, "sort");
  dim = wrap_dim(dim, x->dim());  // (a bad dim first, as torch)
  EMBER_CHECK(!is_complex(x->dtype), std::runtime_error,
              " Sort does not support complex dtypes on CPU");  // (torch's text)
  Tensor values = empty(x->sizes, x->dtype), indices = empty(x->sizes, ScalarType::Int64);
  if (x->numel() == 0) return {values, indices};
  const Rows L = rows_of(x, dim);
  check_row_length(L.n, "sort");
  dispatch_all_and_wide_unsigned(x->dtype, "sort", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = key_t<T>;
    using RT = Rec<K>;
    const T* in = x->data_as<T>();
    T* ov = values->data_as<T>();
    int64_t* oi = indices->data_as<int64_t>();
    auto body = [&](int64_t rb, int64_t re, bool par) {
      std::vector<rec_t<K>> recs, tmp;
      for (int64_t r = rb; r < re; ++r) {
        const T* p = in + L.in_offset(r);
        recs.resize(L.n);
        auto load = [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) {
            K k = Key<T>::of(p[j * L.stride]);
            recs[j] = RT::make(descending ? K(~k) : k, j);
          }
        };
        if (par) parallel_for(0, L.n, kGrainSize, load);
        else load(0, L.n);
        const int64_t o = L.out_offset(r, L.n);
        if constexpr (sizeof(K) == 8) {
          // 64-bit keys spanning less than 2**32 (int64 data of a moderate range): sort the
          // offsets from the smallest key as packed 32-bit keys, half the bytes moved per pass.
          if (L.n >= kRadixMin && narrow_range(recs)) {
            uint64_t mn = recs[0].k;
            for (const auto& rc : recs) mn = std::min(mn, rc.k);
            std::vector<uint64_t> packed(L.n), ptmp;
            for (int64_t j = 0; j < L.n; ++j) packed[j] = ((recs[j].k - mn) << 32) | uint64_t(j);
            sort_recs<uint32_t>(packed, ptmp, par);
            auto store32 = [&](int64_t b, int64_t e) {
              for (int64_t j = b; j < e; ++j) {
                const int64_t i = int64_t(packed[j] & 0xFFFFFFFFu);
                oi[o + j * L.inner] = i;
                ov[o + j * L.inner] = p[i * L.stride];
              }
            };
            if (par) parallel_for(0, L.n, kGrainSize, store32);
            else store32(0, L.n);
            continue;
          }
        }
        sort_recs<K>(recs, tmp, par);
        auto store = [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) {
            const int64_t i = RT::index(recs[j]);
            oi[o + j * L.inner] = i;
            ov[o + j * L.inner] = p[i * L.stride];
          }
        };
        if (par) parallel_for(0, L.n, kGrainSize, store);
        else store(0, L.n);
      }
    };
    if (L.rows < get_num_threads() && L.n >= 65536) body(0, L.rows, true);
    else over_rows(L, L.n * 8, [&](int64_t b, int64_t e) { body(b, e, false); });
  });
  return {values, indices};
}

// ---- topk / kthvalue / median ----

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, "topk");
  dim = wrap_dim(dim, x->dim());  // (a bad dim first, as torch)
  EMBER_CHECK(x->dtype != ScalarType::Bool && !is_complex(x->dtype), std::runtime_error,
              " topk does not support ", x->dtype == ScalarType::Bool ? "bool" : "complex",
              " dtypes on CPU");
  const int64_t n = x->dim() ? x->sizes[dim] : 1;
  EMBER_CHECK(k >= 0 && k <= n, std::runtime_error, "selected index k out of range");
  if (is_wide_unsigned(x->dtype))  // (torch's kernel has none of them; after its k check)
    throw NotImplementedError(
        str_cat("\"topk_cpu\" not implemented for '", type_name(x->dtype), "'"));
  const Shape shape = with_dim_size(x, dim, k);
  Tensor values = empty(shape, x->dtype), indices = empty(shape, ScalarType::Int64);
  if (x->dim() == 0) {  // a 0-d result holds one element whatever k is (0 or 1), as torch's
    copy_(values, x);
    fill_(indices, Scalar::from_int(0));
    return {values, indices};
  }
  if (values->numel() == 0) return {values, indices};
  const Rows L = rows_of(x, dim);
  check_row_length(L.n, "topk");
  dispatch_all(x->dtype, "topk", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_same_v<T, bool>, uint8_t, opmath_t<T>>;
    using E = std::pair<C, int64_t>;
    const T* in = x->data_as<T>();
    T* ov = values->data_as<T>();
    int64_t* oi = indices->data_as<int64_t>();
    // PyTorch's selection (partial_sort for small k, else nth_element + sort), NaN largest,
    // reproduced so that the indices of equal values agree.
    auto nan = [](C a) { return std::isnan(static_cast<double>(a)); };
    auto gt = [&](const E& a, const E& b) { return (nan(a.first) && !nan(b.first)) || a.first > b.first; };
    auto lt = [&](const E& a, const E& b) { return (!nan(a.first) && nan(b.first)) || a.first < b.first; };
    over_rows(L, L.n * 4, [&](int64_t rb, int64_t re) {
      std::vector<E> q(L.n);
      for (int64_t r = rb; r < re; ++r) {
        const T* p = in + L.in_offset(r);
        for (int64_t j = 0; j < L.n; ++j) q[j] = {static_cast<C>(p[j * L.stride]), j};
        auto select = [&](auto cmp) {
          if (k * 64 <= L.n) {
            std::partial_sort(q.begin(), q.begin() + k, q.end(), cmp);
          } else {
            std::nth_element(q.begin(), q.begin() + k - 1, q.end(), cmp);
            if (sorted) std::sort(q.begin(), q.begin() + k - 1, cmp);
          }
        };
        if (largest) select(gt);
        else select(lt);
        const int64_t o = L.out_offset(r, k);
        for (int64_t j = 0; j < k; ++j) {
          const int64_t i = q[j].second;
          oi[o + j * L.inner] = i;
          ov[o + j * L.inner] = p[i * L.stride];
        }
      }
    });
  });
  return {values, indices};
}

namespace {

// Selects per row the element of rank `rank_of(row recs, nan_count)` (0-based; a negative rank
// picks the first NaN) and writes value and index.
template <typename RankFn>
std::pair<Tensor, Tensor> select_rows(const char* op, const Tensor& x, int64_t dim, bool keepdim,
                                      const RankFn& rank_of) {
  const Shape shape = reduced(x, dim, keepdim);
  Tensor values = empty(shape, x->dtype), indices = empty(shape, ScalarType::Int64);
  if (values->numel() == 0) return {values, indices};
  const Rows L = rows_of(x, dim);
  check_row_length(L.n, op);
  dispatch_all(x->dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = key_t<T>;
    const T* in = x->data_as<T>();
    T* ov = values->data_as<T>();
    int64_t* oi = indices->data_as<int64_t>();
    over_rows(L, L.n * 4, [&](int64_t rb, int64_t re) {
      std::vector<rec_t<K>> recs;
      for (int64_t r = rb; r < re; ++r) {
        load_recs<T>(in, L, r, false, recs);
        int64_t nans = 0, first_nan = -1;
        if constexpr (Key<T>::has_nan)
          for (int64_t j = 0; j < L.n; ++j)
            if (key_is_nan<T>(Rec<K>::key(recs[j]))) {
              if (first_nan < 0) first_nan = j;
              ++nans;
            }
        const int64_t rank = rank_of(L.n, nans);
        int64_t i;
        if (rank < 0) {
          i = first_nan;
        } else {
          std::nth_element(recs.begin(), recs.begin() + rank, recs.end());
          i = Rec<K>::index(recs[rank]);
        }
        const T* p = in + L.in_offset(r);
        ov[r] = p[i * L.stride];
        oi[r] = i;
      }
    });
  });
  return {values, indices};
}

}  // namespace

namespace {

// PyTorch's quick select (median-of-three pivot, NaN largest), reproduced so that kthvalue picks
// the same index among equal values. Leaves the k-th smallest at v[k], its index at ix[k].
template <typename C> void quick_select(std::vector<C>& v, std::vector<int64_t>& ix, int64_t k) {
  auto gt = [](C a, C b) { return (std::isnan(static_cast<double>(a)) && !std::isnan(static_cast<double>(b))) || a > b; };
  auto sw = [&](int64_t a, int64_t b) { std::swap(v[a], v[b]); std::swap(ix[a], ix[b]); };
  int64_t L = 0, R = static_cast<int64_t>(v.size()) - 1;
  while (true) {
    if (R <= L) return;
    if (R == L + 1) {
      if (gt(v[L], v[R])) sw(L, R);
      return;
    }
    const int64_t P = L + (R - L) / 2;
    sw(P, L + 1);
    if (gt(v[L + 1], v[R])) sw(L + 1, R);
    if (gt(v[L], v[R])) sw(L, R);
    if (gt(v[L + 1], v[L])) sw(L + 1, L);
    int64_t i = L + 1, j = R;
    const C piv = v[L];
    while (true) {
      do ++i; while (gt(piv, v[i]));
      do --j; while (gt(v[j], piv));
      if (j < i) break;
      sw(i, j);
    }
    sw(L, j);
    if (j <= k) L = i;
    if (j >= k) R = j - 1;
  }
}

}  // namespace

std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, "kthvalue");
  // (also when the result is empty, which reaches no row kernel's dtype dispatch)
  EMBER_CHECK(!is_wide_unsigned(x->dtype), NotImplementedError,
              "\"kthvalue_cpu\" not implemented for '", type_name(x->dtype), "'");
  dim = wrap_dim(dim, x->dim());
  check_nonempty_dim(x, dim, "kthvalue");
  const int64_t n = x->dim() ? x->sizes[dim] : 1;
  EMBER_CHECK(k >= 1 && k <= n, std::runtime_error,
              "kthvalue(): selected number k out of range for dimension ", dim);
  no_bool(x, "kthvalue_cpu");  // (after the dim and k checks, as torch's kernel dispatch)
  EMBER_CHECK(!is_complex(x->dtype), NotImplementedError,  // (before the empty shortcut)
              "\"kthvalue_cpu\" not implemented for '", torch_type_name(x->dtype), "'");
  const Shape shape = reduced(x, dim, keepdim);
  Tensor values = empty(shape, x->dtype), indices = empty(shape, ScalarType::Int64);
  if (values->numel() == 0) return {values, indices};
  const Rows L = rows_of(x, dim);
  dispatch_all(x->dtype, "kthvalue", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_same_v<T, bool>, uint8_t, opmath_t<T>>;
    const T* in = x->data_as<T>();
    T* ov = values->data_as<T>();
    int64_t* oi = indices->data_as<int64_t>();
    over_rows(L, L.n * 4, [&](int64_t rb, int64_t re) {
      std::vector<C> v(L.n);
      std::vector<int64_t> ix(L.n);
      for (int64_t r = rb; r < re; ++r) {
        const T* p = in + L.in_offset(r);
        for (int64_t j = 0; j < L.n; ++j) v[j] = static_cast<C>(p[j * L.stride]), ix[j] = j;
        quick_select(v, ix, k - 1);
        const int64_t i = ix[k - 1];
        ov[r] = p[i * L.stride];
        oi[r] = i;
      }
    });
  });
  return {values, indices};
}

std::pair<Tensor, Tensor> median_dim(const Tensor& x, int64_t dim, bool keepdim, bool ignore_nan) {
  GilRelease nogil(x->numel() > kGrainSize);
  const char* op = ignore_nan ? "nanmedian" : "median";
  require_cpu(x, op);
  no_bool(x, "median_out");
  // (also when the result is empty, which reaches no row kernel's dtype dispatch)
  EMBER_CHECK(!is_wide_unsigned(x->dtype) && !is_complex(x->dtype), NotImplementedError,
              "\"median_out\" not implemented for '", type_name(x->dtype), "'");
  dim = wrap_dim(dim, x->dim());
  check_nonempty_dim(x, dim, op);
  return select_rows(op, x, dim, keepdim, [ignore_nan](int64_t n, int64_t nans) -> int64_t {
    if (nans && (!ignore_nan || nans == n)) return -1;
    return (n - nans - 1) / 2;
  });
}

Tensor median_all(const Tensor& x, bool ignore_nan) {
  GilRelease nogil(x->numel() > kGrainSize);
  const char* op = ignore_nan ? "nanmedian" : "median";
  require_cpu(x, op);
  no_bool(x, "median_cpu");
  if (x->numel() == 0) {
    EMBER_CHECK(is_floating(x->dtype), std::runtime_error, op,
                "() cannot compute the median of an empty tensor of an integral dtype");
    Tensor r = empty({}, x->dtype);
    fill_(r, Scalar::from_double(std::numeric_limits<double>::quiet_NaN()));
    return r;
  }
  Tensor flat = reshape(x, {x->numel()});
  return median_dim(flat, 0, false, ignore_nan).first;
}

// ---- mode ----

std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim) {
  GilRelease nogil(x->numel() > kGrainSize);
  require_cpu(x, "mode");
  dim = wrap_dim(dim, x->dim());
  check_nonempty_dim(x, dim, "mode");
  const Shape shape = reduced(x, dim, keepdim);
  Tensor values = empty(shape, x->dtype), indices = empty(shape, ScalarType::Int64);
  if (values->numel() == 0) return {values, indices};
  const Rows L = rows_of(x, dim);
  check_row_length(L.n, "mode");
  dispatch_all(x->dtype, "mode", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = opmath_t<T>;
    const T* in = x->data_as<T>();
    T* ov = values->data_as<T>();
    int64_t* oi = indices->data_as<int64_t>();
    over_rows(L, L.n * 8, [&](int64_t rb, int64_t re) {
      std::vector<std::pair<C, int64_t>> el(L.n);
      for (int64_t r = rb; r < re; ++r) {
        const T* p = in + L.in_offset(r);
        for (int64_t j = 0; j < L.n; ++j) el[j] = {static_cast<C>(p[j * L.stride]), j};
        // PyTorch's algorithm, reproduced so that the index agrees: an unstable sort on the
        // value alone, then the last element of the first longest run of equal values.
        std::sort(el.begin(), el.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        int64_t best = 0, freq = 0, run = 0;
        for (int64_t i = 0; i < L.n; ++i) {
          ++run;
          if (i == L.n - 1 || el[i].first != el[i + 1].first) {
            if (run > freq) freq = run, best = i;
            run = 0;
          }
        }
        const int64_t i = el[best].second;
        ov[r] = p[i * L.stride];
        oi[r] = i;
      }
    });
  });
  return {values, indices};
}

// ---- cummax / cummin ----

std::pair<Tensor, Tensor> cumextreme(const Tensor& x, int64_t dim, bool is_max) {
  GilRelease nogil(x->numel() > kGrainSize);
  const char* op = is_max ? "cummax" : "cummin";
  require_cpu(x, op);
  dim = wrap_dim(dim, x->dim());
  Tensor values = empty(x->sizes, x->dtype), indices = empty(x->sizes, ScalarType::Int64);
  if (x->numel() == 0) return {values, indices};
  const Rows L = rows_of(x, dim);
  dispatch_all(x->dtype, is_max ? "cummax_cpu" : "cummin_cpu", [&](auto tag) {  // torch's names
    using T = typename decltype(tag)::type;
    using K = key_t<T>;
    const T* in = x->data_as<T>();
    T* ov = values->data_as<T>();
    int64_t* oi = indices->data_as<int64_t>();
    auto run = [&](auto max_tag) {
      constexpr bool kMax = decltype(max_tag)::value;
      over_rows(L, L.n, [&](int64_t rb, int64_t re) {
        const int64_t n = L.n, st = L.stride, inner = L.inner;
        for (int64_t r = rb; r < re; ++r) {
          const T* p = in + L.in_offset(r);
          const int64_t o = L.out_offset(r, n);
          T* vo = ov + o;
          int64_t* io = oi + o;
          T bv = p[0];
          K best = Key<T>::of(bv);
          int64_t bi = 0;
          for (int64_t j = 0; j < n; ++j) {
            const T v = p[j * st];
            const K k = Key<T>::of(v);
            // NaN (the largest key) sticks once reached; a later NaN or an equal value moves the index.
            bool take;
            if constexpr (kMax) take = k >= best;
            else take = key_is_nan<T>(k) || (!key_is_nan<T>(best) && k <= best);
            if (take) best = k, bi = j, bv = v;
            vo[j * inner] = bv;
            io[j * inner] = bi;
          }
        }
      });
    };
    if (is_max) run(std::true_type{});
    else run(std::false_type{});
  });
  return {values, indices};
}

// ---- unique ----

UniqueResult unique(const Tensor& x, std::optional<int64_t> dim, bool consecutive) {
  GilRelease nogil(x->numel() > kGrainSize);
  const char* op = consecutive ? "unique_consecutive" : "unique";
  require_cpu(x, op);
  UniqueResult res;
  if (!dim) {
    Tensor flat = contiguous_copy(reshape(x, {x->numel()}));
    const int64_t n = flat->numel();
    check_row_length(n, op);
    res.inverse = empty(x->sizes, ScalarType::Int64);
    std::vector<int64_t> firsts, counts;
    dispatch_all_and_wide_unsigned(x->dtype, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using K = key_t<T>;
      using RT = Rec<K>;
      const T* p = flat->data_as<T>();
      int64_t* inv = res.inverse->data_as<int64_t>();
      if (consecutive) {
        for (int64_t j = 0; j < n;) {
          const K k = Key<T>::of(p[j]);
          int64_t e = j + 1;
          if (!key_is_nan<T>(k))
            while (e < n && Key<T>::of(p[e]) == k) ++e;
          for (int64_t i = j; i < e; ++i) inv[i] = static_cast<int64_t>(firsts.size());
          firsts.push_back(j);
          counts.push_back(e - j);
          j = e;
        }
      } else {
        std::vector<rec_t<K>> recs(n), tmp;
        parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) recs[j] = RT::make(Key<T>::of(p[j]), j);
        });
        sort_recs<K>(recs, tmp, true);
        for (int64_t j = 0; j < n;) {
          const K k = RT::key(recs[j]);
          int64_t e = j + 1;
          if (!key_is_nan<T>(k))
            while (e < n && RT::key(recs[e]) == k) ++e;
          for (int64_t i = j; i < e; ++i) inv[RT::index(recs[i])] = static_cast<int64_t>(firsts.size());
          firsts.push_back(RT::index(recs[j]));
          counts.push_back(e - j);
          j = e;
        }
      }
      const int64_t u = static_cast<int64_t>(firsts.size());
      res.values = empty({u}, x->dtype);
      T* ov = res.values->data_as<T>();
      for (int64_t i = 0; i < u; ++i) ov[i] = p[firsts[i]];
    });
    const int64_t u = static_cast<int64_t>(counts.size());
    res.counts = empty({u}, ScalarType::Int64);
    std::copy(counts.begin(), counts.end(), res.counts->data_as<int64_t>());
    return res;
  }
  // Along a dim: slices compared lexicographically by their element keys.
  EMBER_CHECK(x->dim() > 0, IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got ", *dim, ")");
  const int64_t d = wrap_dim(*dim, x->dim());
  Shape perm(x->dim());
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + d);
  perm.insert(perm.begin(), d);
  Tensor moved = contiguous_copy(permute(x, perm));
  const int64_t n = x->sizes[d];
  const int64_t w = n ? moved->numel() / n : 0;
  EMBER_CHECK(w > 0 || n == 0, std::runtime_error,
              "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  std::vector<int64_t> order(n), firsts, counts;
  std::iota(order.begin(), order.end(), 0);
  Tensor inverse = empty({n}, ScalarType::Int64);
  int64_t* inv = inverse->data_as<int64_t>();
  dispatch_all_and_wide_unsigned(x->dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = key_t<T>;
    const T* p = moved->data_as<T>();
    std::vector<K> keys(moved->numel());
    for (int64_t i = 0; i < moved->numel(); ++i) keys[i] = Key<T>::of(p[i]);
    auto less = [&](int64_t a, int64_t b) {
      return std::lexicographical_compare(keys.begin() + a * w, keys.begin() + (a + 1) * w,
                                          keys.begin() + b * w, keys.begin() + (b + 1) * w);
    };
    auto equal = [&](int64_t a, int64_t b) {
      return std::equal(keys.begin() + a * w, keys.begin() + (a + 1) * w, keys.begin() + b * w);
    };
    if (!consecutive) std::stable_sort(order.begin(), order.end(), less);
    for (int64_t j = 0; j < n;) {
      int64_t e = j + 1;
      while (e < n && equal(order[j], order[e])) ++e;
      for (int64_t i = j; i < e; ++i) inv[order[i]] = static_cast<int64_t>(firsts.size());
      firsts.push_back(order[j]);
      counts.push_back(e - j);
      j = e;
    }
  });
  const int64_t u = static_cast<int64_t>(firsts.size());
  Shape vs = moved->sizes;
  vs[0] = u;
  Tensor vals = empty(vs, x->dtype);
  const size_t row_bytes = static_cast<size_t>(w) * x->element_size();
  for (int64_t i = 0; i < u; ++i)
    std::memcpy(vals->data() + i * row_bytes, moved->data() + firsts[i] * row_bytes, row_bytes);
  Shape back(x->dim());
  for (int64_t i = 0; i < x->dim(); ++i) back[perm[i]] = i;
  res.values = contiguous_copy(permute(vals, back));
  res.inverse = inverse;
  res.counts = empty({u}, ScalarType::Int64);
  std::copy(counts.begin(), counts.end(), res.counts->data_as<int64_t>());
  return res;
}

// ---- quantile ----

Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                QuantileInterp interp, bool ignore_nan) {
  GilRelease nogil(x->numel() > kGrainSize);
  const char* op = ignore_nan ? "nanquantile" : "quantile";
  require_cpu(x, op);
  EMBER_CHECK(x->numel() > 0, std::runtime_error, op, "() input tensor must be non-empty");
  EMBER_CHECK(x->dtype == ScalarType::Float32 || x->dtype == ScalarType::Float64, std::runtime_error,
              op, "() input tensor must be either float or double dtype");
  EMBER_CHECK(q->dim() <= 1, std::runtime_error, op, "() q must be a scalar or 1D tensor");
  EMBER_CHECK(q->dtype == x->dtype, std::runtime_error, op,
              "() q tensor must be same dtype as the input tensor");
  Tensor qc = contiguous_copy(to_dtype(q, ScalarType::Float64));
  const double* qp = qc->data_as<double>();
  const int64_t nq = qc->numel();
  for (int64_t i = 0; i < nq; ++i)
    EMBER_CHECK(qp[i] >= 0 && qp[i] <= 1, std::runtime_error, op,
                "() q values must be in the range [0, 1]");
  Tensor src = x;
  Shape out_shape;
  int64_t d = 0;
  if (dim) {
    d = wrap_dim(*dim, x->dim());
    out_shape = reduced(x, d, keepdim);
  } else {
    src = reshape(x, {x->numel()});
    if (keepdim) out_shape.assign(x->dim(), 1);
  }
  Shape full = out_shape;
  if (q->dim() == 1) full.insert(full.begin(), nq);
  Tensor out = empty(full, x->dtype);
  if (out->numel() == 0) return out;
  const Rows L = rows_of(src, d);
  dispatch_floating(x->dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* in = src->data_as<T>();
      T* o = out->data_as<T>();
      const T nan = std::numeric_limits<T>::quiet_NaN();
      over_rows(L, L.n * 8, [&](int64_t rb, int64_t re) {
        std::vector<T> buf;
        for (int64_t r = rb; r < re; ++r) {
          const T* p = in + L.in_offset(r);
          buf.clear();
          bool has_nan = false;
          for (int64_t j = 0; j < L.n; ++j) {
            const T v = p[j * L.stride];
            if (std::isnan(v)) has_nan = true;
            else buf.push_back(v);
          }
          const int64_t m = static_cast<int64_t>(buf.size());
          const bool all_nan = (has_nan && !ignore_nan) || m == 0;
          if (!all_nan) std::sort(buf.begin(), buf.end());
          for (int64_t qi = 0; qi < nq; ++qi) {
            T res = nan;
            if (!all_nan) {
              const T rank = static_cast<T>(qp[qi]) * static_cast<T>(m - 1);
              const int64_t below = static_cast<int64_t>(std::floor(rank));
              const int64_t above = static_cast<int64_t>(std::ceil(rank));
              switch (interp) {
                case QuantileInterp::Lower: res = buf[below]; break;
                case QuantileInterp::Higher: res = buf[above]; break;
                case QuantileInterp::Nearest: res = buf[static_cast<int64_t>(std::nearbyint(rank))]; break;
                case QuantileInterp::Linear:
                case QuantileInterp::Midpoint: {
                  const T w = interp == QuantileInterp::Midpoint ? T(0.5) : rank - static_cast<T>(below);
                  const T a = buf[below], b = buf[above];
                  res = std::abs(w) < T(0.5) ? a + w * (b - a) : b - (b - a) * (T(1) - w);
                  break;
                }
              }
            }
            o[qi * L.rows + r] = res;
          }
        }
      });
    }
  });
  return out;
}

}  // namespace ember
