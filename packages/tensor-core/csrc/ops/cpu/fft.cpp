// Complex FFTs of power-of-two lengths (ops/fft.cpp is the op). Every transform here is a
// radix-4 Stockham pass sequence (autosorting: no bit reversal) over "points" that are vectors of
// lanes, real and imaginary parts in separate planes, so that each butterfly is a few vector
// instructions. Four layouts reach that form:
// - vector rows (the transformed dim is the last, 64 <= n <= 2^20): the lanes are inside each
//   row, by the six-step algorithm; a row's planes stay in L1 (the section below says how);
// - columns (an inner dim after the transformed one): kLanes neighbouring columns are already
//   side by side in memory, planes [index][lane] in the arrays of lane_fft;
// - one long row (n > 2^20): the six-step algorithm, n = n1 * n2: FFTs of n1 points down the
//   columns of the row seen as an n1 x n2 matrix, a twiddle w_n^(k1 i2), FFTs of n2 points along
//   the rows, the result read out transposed; both passes are lane FFTs;
// - short rows (n < 64, the six-step table absent): kLanes rows at a time, gathered into the
//   planes and scattered back (ember.fft sends those to pocketfft).
// One table of w_n^k (k < n, computed in double) serves every length: w_m^k = w_n^(k n / m); the
// six-step form's twiddles w_n^(k1 i2) have a table of their own (FftTables, ops/cpu_kernels.h).
// rfft and irfft (the last section) are a complex FFT of the rows' pairs of points read as
// complex values, with a split of its result or a join of the spectrum before it.
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/parallel.h"

namespace ember::EMBER_CPU_NS {
namespace {

constexpr int64_t kLanes = 16;
constexpr int64_t kTile = 64;  // points per tile of the rows' gather and scatter
// Vector rows from this length on split each row's steps over the threads when the rows are
// fewer than the threads (shorter ones: a row's work is less than a hand-off)
constexpr int64_t kVectorRowSplitMin = int64_t{1} << 14;

// Vectors of B bytes (GCC/Clang vector extensions): the vector rows' (B <= kVecBytes; a short row
// takes narrower ones, so that L * L <= n) and the planes' points (kLanes values, any width)
template <typename T, int B> struct Simd {
  static constexpr int L = B / static_cast<int>(sizeof(T));
  typedef T V __attribute__((vector_size(B)));
  typedef T Unaligned __attribute__((vector_size(B), aligned(sizeof(T)), may_alias));
  // (GCC before 12 has only __builtin_shuffle, which takes its indices as a vector)
  typedef std::conditional_t<sizeof(T) == 4, int32_t, int64_t> Index
      __attribute__((vector_size(B)));
};

// Lane c of a shuffle of two vectors (a's lanes 0..L-1, b's L..2L-1), by pattern:
struct Evens { static constexpr int at(int c, int) { return 2 * c; } };
struct Odds { static constexpr int at(int c, int) { return 2 * c + 1; } };
template <bool High> struct Interleave {  // a0 b0 a1 b1 ... (High: from the middle)
  static constexpr int at(int c, int L) { return (c & 1 ? L : 0) + c / 2 + (High ? L / 2 : 0); }
};
// One stage of the recursive transpose: rows r and r + B swap their off-diagonal B-blocks
template <int B, bool High> struct SwapBlocks {
  static constexpr int at(int c, int L) {
    return High ? (c & B ? L + c : c + B) : (c & B ? L + c - B : c);
  }
};

template <class S, class Pattern, size_t... C>
inline typename S::V shuffle_lanes(typename S::V a, typename S::V b, std::index_sequence<C...>) {
#if defined(__clang__) || __GNUC__ >= 12
  return __builtin_shufflevector(a, b, Pattern::at(C, S::L)...);
#else
  return __builtin_shuffle(a, b, typename S::Index{Pattern::at(C, S::L)...});
#endif
}
template <class S, class Pattern>
inline typename S::V shuffle_lanes(typename S::V a, typename S::V b) {
  return shuffle_lanes<S, Pattern>(a, b, std::make_index_sequence<S::L>());
}

template <class S, int B = S::L / 2> inline void transpose(typename S::V* v) {
  if constexpr (B >= 1) {
    for (int r = 0; r < S::L; ++r)
      if (!(r & B)) {
        const auto a = v[r], b = v[r + B];
        v[r] = shuffle_lanes<S, SwapBlocks<B, false>>(a, b);
        v[r + B] = shuffle_lanes<S, SwapBlocks<B, true>>(a, b);
      }
    transpose<S, B / 2>(v);
  }
}

// A Stockham pass sequence (radix 4, one radix-2 pass last when log2(m) is odd) over m points
// that are vectors V of lanes, each lane its own transform: re/im hold the points, wre/wim are
// work planes; wr/wi are the table of w_N^k and `step` = N / m picks w_m^k from it (one
// broadcast per butterfly group). The result is left in (re, im) or in the work planes: the
// return value says which (true: work).
template <typename T, typename V>
bool lane_fft(V* __restrict__ re, V* __restrict__ im, V* __restrict__ wre,
                     V* __restrict__ wim, int64_t m, const T* wr, const T* wi, int64_t step,
                     bool inverse, bool split = false) {
  V* sr = re;
  V* si = im;
  V* dr = wre;
  V* di = wim;
  const T conj = inverse ? T(-1) : T(1);
  constexpr int64_t lanes = sizeof(V) / sizeof(T);
  int64_t s = 1, len = m;
  for (; len >= 4; len /= 4) {
    const int64_t q = len / 4;
    // butterfly groups p0..p1, each over the sub-transforms j0..j1 (split: the pass's groups or,
    // where they are fewer than the sub-transforms, its sub-transforms over the threads)
    auto butterflies = [&](int64_t p0, int64_t p1, int64_t j0, int64_t j1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t k = p * s * step;
      const T w1r = wr[k], w1i = conj * wi[k], w2r = wr[2 * k], w2i = conj * wi[2 * k],
              w3r = wr[3 * k], w3i = conj * wi[3 * k];
      const V* ar = sr + s * p;
      const V* ai = si + s * p;
      V* yr = dr + s * 4 * p;
      V* yi = di + s * 4 * p;
      const int64_t qo = s * q;
      for (int64_t j = j0; j < j1; ++j) {
        const V a_r = ar[j], a_i = ai[j], b_r = ar[j + qo], b_i = ai[j + qo];
        const V c_r = ar[j + 2 * qo], c_i = ai[j + 2 * qo], d_r = ar[j + 3 * qo],
                d_i = ai[j + 3 * qo];
        const V apcr = a_r + c_r, apci = a_i + c_i, amcr = a_r - c_r, amci = a_i - c_i;
        const V bpdr = b_r + d_r, bpdi = b_i + d_i;
        // i (b - d), its sign flipped for the inverse
        const V jr = (d_i - b_i) * conj, ji = (b_r - d_r) * conj;
        yr[j] = apcr + bpdr;
        yi[j] = apci + bpdi;
        const V t2r = apcr - bpdr, t2i = apci - bpdi;
        yr[j + 2 * s] = t2r * w2r - t2i * w2i;
        yi[j + 2 * s] = t2r * w2i + t2i * w2r;
        const V t1r = amcr - jr, t1i = amci - ji;
        yr[j + s] = t1r * w1r - t1i * w1i;
        yi[j + s] = t1r * w1i + t1i * w1r;
        const V t3r = amcr + jr, t3i = amci + ji;
        yr[j + 3 * s] = t3r * w3r - t3i * w3i;
        yi[j + 3 * s] = t3r * w3i + t3i * w3r;
      }
    }
    };
    if (!split)
      butterflies(0, q, 0, s);
    else if (q >= s)
      parallel_for(0, q, grain_for(4 * s * lanes),
                   [&](int64_t p0, int64_t p1) { butterflies(p0, p1, 0, s); });
    else
      parallel_for(0, s, grain_for(4 * q * lanes),
                   [&](int64_t j0, int64_t j1) { butterflies(0, q, j0, j1); });
    std::swap(sr, dr);
    std::swap(si, di);
    s *= 4;
  }
  if (len == 2) {
    auto butterflies = [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) {
        const V a_r = sr[j], a_i = si[j], b_r = sr[j + s], b_i = si[j + s];
        dr[j] = a_r + b_r;
        di[j] = a_i + b_i;
        dr[j + s] = a_r - b_r;
        di[j + s] = a_i - b_i;
      }
    };
    if (split)
      parallel_for(0, s, grain_for(2 * lanes), butterflies);
    else
      butterflies(0, s);
    std::swap(sr, dr);
    std::swap(si, di);
  }
  return sr != re;
}

// Per-thread planes: data and work, real and imaginary, m points of kLanes each. (Zeroed when
// made: left uninitialised, the 1024-point transform took 20% longer, its first writes missing
// the cache.)
// Point k's kLanes values are plane[k * kLanes + l], one vector of kLanes values (of any width:
// the compiler splits it into this copy's vectors).
template <typename T> struct Planes {
  using V = typename Simd<T, kLanes * sizeof(T)>::V;
  std::vector<V> buf;
  T *re, *im, *wre, *wim;
  explicit Planes(int64_t m) : buf(static_cast<size_t>(4 * m)) {
    re = reinterpret_cast<T*>(buf.data());
    im = re + m * kLanes;
    wre = im + m * kLanes;
    wim = wre + m * kLanes;
  }
  void zero_data(int64_t m) { std::fill(re, re + 2 * m * kLanes, T(0)); }
  // The lane FFT of the data planes (m points, w_m^k = table[k * step]): the planes that hold
  // the result, real and imaginary.
  std::pair<T*, T*> fft(int64_t m, const T* wr, const T* wi, int64_t step, bool inverse) {
    const bool in_work = lane_fft<T, V>(reinterpret_cast<V*>(re), reinterpret_cast<V*>(im),
                                        reinterpret_cast<V*>(wre), reinterpret_cast<V*>(wim), m,
                                        wr, wi, step, inverse);
    return in_work ? std::make_pair(wre, wim) : std::make_pair(re, im);
  }
};

// Rows of n points (batch rows at in + b * n), kLanes rows per block; the tail block's missing
// lanes are zeros.
template <typename T>
void rows(const T* in, T* out, int64_t n, int64_t batch, bool inverse, T scale, const T* wr,
          const T* wi, int64_t N) {
  const int64_t blocks = (batch + kLanes - 1) / kLanes;
  parallel_for(0, blocks, grain_for(n * kLanes * 8), [&](int64_t b0, int64_t b1) {
    Planes<T> pl(n);
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t r0 = blk * kLanes, lanes = std::min(kLanes, batch - r0);
      if (lanes < kLanes) pl.zero_data(n);
      // the rows into the planes in tiles of kTile points (the tile's planes stay in L1)
      const T* first = in + 2 * r0 * n;
      for (int64_t k0 = 0; k0 < n; k0 += kTile) {
        const int64_t k1 = std::min(n, k0 + kTile);
        for (int64_t l = 0; l < lanes; ++l) {
          const T* row = first + 2 * l * n;
          for (int64_t k = k0; k < k1; ++k) {
            pl.re[k * kLanes + l] = row[2 * k];
            pl.im[k * kLanes + l] = row[2 * k + 1];
          }
        }
      }
      const auto [rr, ri] = pl.fft(n, wr, wi, N / n, inverse);
      for (int64_t k0 = 0; k0 < n; k0 += kTile) {
        const int64_t k1 = std::min(n, k0 + kTile);
        for (int64_t l = 0; l < lanes; ++l) {
          T* row = out + 2 * (r0 + l) * n;
          for (int64_t k = k0; k < k1; ++k) {
            row[2 * k] = rr[k * kLanes + l] * scale;
            row[2 * k + 1] = ri[k * kLanes + l] * scale;
          }
        }
      }
    }
  });
}

// [outer][n][inner] with inner > 1: the transform runs down the middle dim, kLanes neighbouring
// inner positions at a time.
template <typename T>
void columns(const T* in, T* out, int64_t n, int64_t outer, int64_t inner, bool inverse, T scale,
             const T* wr, const T* wi, int64_t N) {
  const int64_t chunks = (inner + kLanes - 1) / kLanes;
  parallel_for(0, outer * chunks, grain_for(n * kLanes * 8), [&](int64_t t0, int64_t t1) {
    Planes<T> pl(n);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, c0 = (t % chunks) * kLanes, lanes = std::min(kLanes, inner - c0);
      if (lanes < kLanes) pl.zero_data(n);
      const T* base = in + 2 * (o * n * inner + c0);
      for (int64_t k = 0; k < n; ++k) {
        const T* src = base + 2 * k * inner;
        for (int64_t l = 0; l < lanes; ++l) {
          pl.re[k * kLanes + l] = src[2 * l];
          pl.im[k * kLanes + l] = src[2 * l + 1];
        }
      }
      const auto [rr, ri] = pl.fft(n, wr, wi, N / n, inverse);
      T* obase = out + 2 * (o * n * inner + c0);
      for (int64_t k = 0; k < n; ++k) {
        T* dst = obase + 2 * k * inner;
        for (int64_t l = 0; l < lanes; ++l) {
          dst[2 * l] = rr[k * kLanes + l] * scale;
          dst[2 * l + 1] = ri[k * kLanes + l] * scale;
        }
      }
    }
  });
}

// One row of n = n1 * n2 points by the six-step algorithm (the header says how); tmp holds n
// complex points (split planes: n reals, then n imaginaries), the columns' results transposed.
template <typename T>
void six_step(const T* in, T* out, int64_t n, bool inverse, T scale, const T* wr, const T* wi,
              const T* w6r, const T* w6i, T* tmp) {
  const int64_t n1 = fft_six_step_rows(n);
  const int64_t n2 = n / n1;
  T* tr = tmp;
  T* ti = tmp + n;
  // 1. n2 columns of n1 points: lanes are neighbouring columns i2; then the twiddle
  //    w_n^(k1 i2); stored transposed, tmp[i2 * n1 + k1]
  const int64_t chunks2 = n2 / std::min(n2, kLanes);
  parallel_for(0, chunks2, 1, [&](int64_t c0, int64_t c1) {
    Planes<T> pl(n1);
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t i20 = c * kLanes, lanes = std::min(kLanes, n2 - i20);
      if (lanes < kLanes) pl.zero_data(n1);
      for (int64_t i1 = 0; i1 < n1; ++i1) {
        const T* src = in + 2 * (i1 * n2 + i20);
        for (int64_t l = 0; l < lanes; ++l) {
          pl.re[i1 * kLanes + l] = src[2 * l];
          pl.im[i1 * kLanes + l] = src[2 * l + 1];
        }
      }
      const auto [rr, ri] = pl.fft(n1, wr, wi, n / n1, inverse);
      // the twiddles in the planes (the table's rows are k1, its columns i2: contiguous lanes),
      // then the transposed store, plain data movement
      T* __restrict__ pr = rr;
      T* __restrict__ pi = ri;
      const T conj = inverse ? T(-1) : T(1);
      for (int64_t k1 = 0; k1 < n1; ++k1) {
        const T* __restrict__ cr = w6r + k1 * n2 + i20;
        const T* __restrict__ ci = w6i + k1 * n2 + i20;
        for (int64_t l = 0; l < kLanes; ++l) {
          const T xr = pr[k1 * kLanes + l], xi = pi[k1 * kLanes + l];
          const T c = cr[l], d = conj * ci[l];
          pr[k1 * kLanes + l] = xr * c - xi * d;
          pi[k1 * kLanes + l] = xr * d + xi * c;
        }
      }
      for (int64_t l = 0; l < lanes; ++l) {
        T* dr = tr + (i20 + l) * n1;
        T* di = ti + (i20 + l) * n1;
        for (int64_t k1 = 0; k1 < n1; ++k1) {
          dr[k1] = pr[k1 * kLanes + l];
          di[k1] = pi[k1 * kLanes + l];
        }
      }
    }
  });
  // 2. n1 rows of n2 points (k1 fixed, i2 along the row): lanes are neighbouring k1, read from
  //    the transposed tmp; X[k1 + n1 k2] written to out, kLanes neighbours at a time
  const int64_t chunks1 = (n1 + kLanes - 1) / kLanes;
  parallel_for(0, chunks1, 1, [&](int64_t c0, int64_t c1) {
    Planes<T> pl(n2);
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t k10 = c * kLanes, lanes = std::min(kLanes, n1 - k10);
      if (lanes < kLanes) pl.zero_data(n2);
      for (int64_t i2 = 0; i2 < n2; ++i2) {
        const T* sr = tr + i2 * n1 + k10;
        const T* si = ti + i2 * n1 + k10;
        for (int64_t l = 0; l < lanes; ++l) {
          pl.re[i2 * kLanes + l] = sr[l];
          pl.im[i2 * kLanes + l] = si[l];
        }
      }
      const auto [rr, ri] = pl.fft(n2, wr, wi, n / n2, inverse);
      for (int64_t k2 = 0; k2 < n2; ++k2) {
        T* dst = out + 2 * (k2 * n1 + k10);
        for (int64_t l = 0; l < lanes; ++l) {
          dst[2 * l] = rr[k2 * kLanes + l] * scale;
          dst[2 * l + 1] = ri[k2 * kLanes + l] * scale;
        }
      }
    }
  });
}

// ---- Rows as vectors ----
// A row of n = L * m points (L: the lanes of this copy's widest vector, m >= L) by the six-step
// algorithm with the lanes inside the row, so nothing is gathered across rows and a row's planes
// (n values each) stay in L1. Point i of the row's "lane view" is the vector of its L neighbours
// x[L i + l]: loading it is two vector loads and a de-interleave of real and imaginary parts.
// 1. m-point lane FFTs (lane l: the points l, l + L, l + 2L, ...);
// 2. the twiddle w_n^(l k), then per block of L results an L x L transpose in registers;
// 3. L-point lane FFTs across the block, whose result vectors are L neighbouring outputs
//    X[k + m k'] (k in the block, k' the transform's index): two interleaves and two stores.
// X[k + m k'] = sum_l w_L^(l k') w_n^(l k) sum_i w_m^(i k) x[l + L i] says why that is the DFT.

template <typename T, int B>
void vector_rows(const T* in, T* out, int64_t n, int64_t batch, bool inverse, T scale,
                 const T* wr, const T* wi) {
  using S = Simd<T, B>;
  using V = typename S::V;
  using U = typename S::Unaligned;
  constexpr int L = S::L;
  const int64_t m = n / L;
  // w_n^(l k) for k < m in lanes l (conjugated for the inverse), shared by the rows
  std::vector<V> twr(static_cast<size_t>(m)), twi(static_cast<size_t>(m));
  const T conj = inverse ? T(-1) : T(1);
  parallel_for(0, m, grain_for(2 * L), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k)
      for (int l = 0; l < L; ++l) {
        twr[k][l] = wr[(k * l) & (n - 1)];
        twi[k][l] = conj * wi[(k * l) & (n - 1)];
      }
  });
  // 1. the points i0..i1 of row x into the planes
  auto load = [&](const T* x, V* re, V* im, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const V a = *reinterpret_cast<const U*>(x + 2 * L * i);
      const V b = *reinterpret_cast<const U*>(x + 2 * L * i + L);
      re[i] = shuffle_lanes<S, Evens>(a, b);
      im[i] = shuffle_lanes<S, Odds>(a, b);
    }
  };
  // 3. the blocks of L results b0..b1 of the m-point FFTs (yr, yi) into the row y
  auto finish = [&](const V* yr, const V* yi, T* y, int64_t b0, int64_t b1) {
    for (int64_t k0 = b0 * L; k0 < b1 * L; k0 += L) {
      V br[L], bi[L], cr[L], ci[L];
      for (int c = 0; c < L; ++c) {
        const V xr = yr[k0 + c], xi = yi[k0 + c], tr = twr[k0 + c], ti = twi[k0 + c];
        br[c] = xr * tr - xi * ti;
        bi[c] = xr * ti + xi * tr;
      }
      transpose<S>(br);
      transpose<S>(bi);
      const bool w = lane_fft<T, V>(br, bi, cr, ci, L, wr, wi, n / L, inverse);
      const V* zr = w ? cr : br;
      const V* zi = w ? ci : bi;
      for (int k = 0; k < L; ++k) {
        const V vr = zr[k] * scale, vi = zi[k] * scale;
        T* dst = y + 2 * (k0 + m * k);
        *reinterpret_cast<U*>(dst) = shuffle_lanes<S, Interleave<false>>(vr, vi);
        *reinterpret_cast<U*>(dst + L) = shuffle_lanes<S, Interleave<true>>(vr, vi);
      }
    }
  };
  if (batch >= get_num_threads() || n < kVectorRowSplitMin) {  // whole rows per thread
    parallel_for(0, batch, grain_for(n * 8), [&](int64_t r0, int64_t r1) {
      std::vector<V> planes(static_cast<size_t>(4 * m));
      V* re = planes.data();
      V* im = re + m;
      for (int64_t r = r0; r < r1; ++r) {
        load(in + 2 * r * n, re, im, 0, m);
        const bool in_work = lane_fft<T, V>(re, im, im + m, im + 2 * m, m, wr, wi, L, inverse);
        finish(in_work ? im + m : re, in_work ? im + 2 * m : im, out + 2 * r * n, 0, m / L);
      }
    });
    return;
  }
  // few long rows: each step of a row split over the threads
  std::vector<V> planes(static_cast<size_t>(4 * m));
  V* re = planes.data();
  V* im = re + m;
  for (int64_t r = 0; r < batch; ++r) {
    const T* x = in + 2 * r * n;
    parallel_for(0, m, grain_for(2 * L), [&](int64_t i0, int64_t i1) { load(x, re, im, i0, i1); });
    const bool in_work = lane_fft<T, V>(re, im, im + m, im + 2 * m, m, wr, wi, L, inverse, true);
    const V* yr = in_work ? im + m : re;
    const V* yi = in_work ? im + 2 * m : im;
    parallel_for(0, m / L, grain_for(2 * L * L),
                 [&](int64_t b0, int64_t b1) { finish(yr, yi, out + 2 * r * n, b0, b1); });
  }
}

// The widest vectors of B <= kVecBytes bytes with L * L <= n (false: none, n too short)
template <typename T, int B = kVecBytes>
bool vector_rows_fit(const T* in, T* out, int64_t n, int64_t batch, bool inverse, T scale,
                     const T* wr, const T* wi) {
  constexpr int64_t L = B / sizeof(T);
  if (n >= L * L) {
    vector_rows<T, B>(in, out, n, batch, inverse, scale, wr, wi);
    return true;
  }
  // (16-byte vectors only where they are the widest: four lanes lose to the lane rows)
  if constexpr (B > 32) return vector_rows_fit<T, B / 2>(in, out, n, batch, inverse, scale, wr, wi);
  return false;
}

// ---- Real input ----
// rfft from an h-point complex FFT, irfft into one: both combine each value k of a row of
// complex values with the conjugate of its mirror h - k.
struct Reverse { static constexpr int at(int c, int L) { return L - 1 - c; } };

// For k = 1 .. h/2: (F, M) = pair(A, B, w_n^k) from A = Y_k and B = conj Y_(h-k), F stored at k
// and M at h - k of the row D; vectors of L values of k from the front, their mirrors (lanes
// reversed) from the back, and the rest one at a time. (Around k = h/2 a value may be stored
// from both sides; both are equal.)
template <typename T, class Pair>
inline void mirrored_pairs(const T* Y, T* D, int64_t h, const T* wr, const T* wi,
                           const Pair& pair) {
  using S = Simd<T, kVecBytes>;
  using V = typename S::V;
  using U = typename S::Unaligned;
  constexpr int L = S::L;
  int64_t k = 1;
  for (; k + L - 1 <= h / 2; k += L) {  // k .. k + L - 1 and their mirrors h - k - L + 1 ..
    const T* front = Y + 2 * k;
    const T* back = Y + 2 * (h - k - L + 1);
    const V f0 = *reinterpret_cast<const U*>(front), f1 = *reinterpret_cast<const U*>(front + L);
    const V b0 = *reinterpret_cast<const U*>(back), b1 = *reinterpret_cast<const U*>(back + L);
    const V ar = shuffle_lanes<S, Evens>(f0, f1), ai = shuffle_lanes<S, Odds>(f0, f1);
    const V br = shuffle_lanes<S, Reverse>(shuffle_lanes<S, Evens>(b0, b1), b0);
    const V bi = -shuffle_lanes<S, Reverse>(shuffle_lanes<S, Odds>(b0, b1), b0);
    const V cr = *reinterpret_cast<const U*>(wr + k), ci = *reinterpret_cast<const U*>(wi + k);
    V fr, fi, mr, mi;
    pair(ar, ai, br, bi, cr, ci, fr, fi, mr, mi);
    *reinterpret_cast<U*>(D + 2 * k) = shuffle_lanes<S, Interleave<false>>(fr, fi);
    *reinterpret_cast<U*>(D + 2 * k + L) = shuffle_lanes<S, Interleave<true>>(fr, fi);
    mr = shuffle_lanes<S, Reverse>(mr, mr);
    mi = shuffle_lanes<S, Reverse>(mi, mi);
    T* mirror = D + 2 * (h - k - L + 1);
    *reinterpret_cast<U*>(mirror) = shuffle_lanes<S, Interleave<false>>(mr, mi);
    *reinterpret_cast<U*>(mirror + L) = shuffle_lanes<S, Interleave<true>>(mr, mi);
  }
  for (; k <= h / 2; ++k) {
    T fr, fi, mr, mi;
    pair(Y[2 * k], Y[2 * k + 1], Y[2 * (h - k)], -Y[2 * (h - k) + 1], wr[k], wi[k], fr, fi, mr,
         mi);
    D[2 * k] = fr;
    D[2 * k + 1] = fi;
    D[2 * (h - k)] = mr;
    D[2 * (h - k) + 1] = mi;
  }
}

// The one-sided spectrum X_0..X_h of n = 2h real points from Z, the h-point FFT of the points
// read as h complex values z_j = x_2j + i x_(2j+1) (no copy): with Z_h = Z_0,
//   E_k = (Z_k + conj Z_(h-k)) / 2 and O_k = (Z_k - conj Z_(h-k)) / 2i are the FFTs of the even
//   and the odd points, and X_k = E_k + w_n^k O_k;
// X_(h-k) = conj(E_k - w_n^k O_k) (w_n^(h-k) = -conj w_n^k): a mirrored pair.
template <typename T>
void r2c_split(const T* z, T* x, int64_t h, int64_t rows, T scale, const T* wr, const T* wi) {
  const T half = T(0.5) * scale;
  // X_k and X_(h-k) from A = Z_k, B = conj Z_(h-k), w_n^k = (cr, ci): scaled
  auto pair = [half](auto ar, auto ai, auto br, auto bi, auto cr, auto ci, auto& xr, auto& xi,
                     auto& mr, auto& mi) {
    const auto er = ar + br, ei = ai + bi;  // 2 E_k
    const auto orr = ai - bi, oi = br - ar;  // 2 O_k = (A - B) / i
    const auto tr = orr * cr - oi * ci, ti = orr * ci + oi * cr;  // 2 w^k O_k
    xr = (er + tr) * half;
    xi = (ei + ti) * half;
    mr = (er - tr) * half;
    mi = (ti - ei) * half;
  };
  parallel_for(0, rows, grain_for(4 * h), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* Z = z + 2 * r * h;
      T* X = x + 2 * r * (h + 1);
      X[0] = (Z[0] + Z[1]) * scale;
      X[1] = 0;
      X[2 * h] = (Z[0] - Z[1]) * scale;
      X[2 * h + 1] = 0;
      mirrored_pairs(Z, X, h, wr, wi, pair);
    }
  });
}

// The inverse: from the one-sided X_0..X_h of a real signal of n = 2h points, the h values
// 2 Z_k = 2 (E_k + i O_k) whose inverse h-point FFT is the signal's unnormalised inverse read as
// h complex values: with A = X_k, B = conj X_(h-k), S = A + B and T = i (A - B) conj w_n^k,
// 2 Z_k = S + T and 2 Z_(h-k) = conj(S - T). The imaginary parts of X_0 and X_h are ignored, as
// pocketfft's and torch's c2r ignore them.
template <typename T>
void c2r_join(const T* x, T* z, int64_t h, int64_t rows, const T* wr, const T* wi) {
  auto pair = [](auto ar, auto ai, auto br, auto bi, auto cr, auto ci, auto& fr, auto& fi,
                 auto& mr, auto& mi) {
    const auto sr = ar + br, si = ai + bi, dr = ar - br, di = ai - bi;
    const auto tr = dr * ci - di * cr, ti = dr * cr + di * ci;  // i (A - B) conj w
    fr = sr + tr;
    fi = si + ti;
    mr = sr - tr;
    mi = ti - si;
  };
  parallel_for(0, rows, grain_for(4 * h), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* X = x + 2 * r * (h + 1);
      T* Z = z + 2 * r * h;
      Z[0] = X[0] + X[2 * h];
      Z[1] = X[0] - X[2 * h];
      mirrored_pairs(X, Z, h, wr, wi, pair);
    }
  });
}

template <typename T>
void run(const T* in, T* out, int64_t n, int64_t outer, int64_t inner, bool inverse, T scale,
         const T* wr, const T* wi, const T* w6r, const T* w6i) {
  if (inner > 1) {
    columns(in, out, n, outer, inner, inverse, scale, wr, wi, n);
  } else if (n <= kFftVectorRowsMax &&
             vector_rows_fit(in, out, n, outer, inverse, scale, wr, wi)) {
  } else if (!w6r) {
    rows(in, out, n, outer, inverse, scale, wr, wi, n);
  } else {
    std::vector<T> tmp(static_cast<size_t>(2 * n));
    for (int64_t b = 0; b < outer; ++b)
      six_step(in + 2 * b * n, out + 2 * b * n, n, inverse, scale, wr, wi, w6r, w6i, tmp.data());
  }
}

}  // namespace

void fft_r2c_split(ScalarType real_dtype, const void* z, void* x, int64_t h, int64_t rows,
                   double scale, const void* wr, const void* wi) {
  if (real_dtype == ScalarType::Float32)
    r2c_split(static_cast<const float*>(z), static_cast<float*>(x), h, rows,
              static_cast<float>(scale), static_cast<const float*>(wr),
              static_cast<const float*>(wi));
  else
    r2c_split(static_cast<const double*>(z), static_cast<double*>(x), h, rows, scale,
              static_cast<const double*>(wr), static_cast<const double*>(wi));
}

void fft_c2r_join(ScalarType real_dtype, const void* x, void* z, int64_t h, int64_t rows,
                  const void* wr, const void* wi) {
  if (real_dtype == ScalarType::Float32)
    c2r_join(static_cast<const float*>(x), static_cast<float*>(z), h, rows,
             static_cast<const float*>(wr), static_cast<const float*>(wi));
  else
    c2r_join(static_cast<const double*>(x), static_cast<double*>(z), h, rows,
             static_cast<const double*>(wr), static_cast<const double*>(wi));
}

void fft_pow2(ScalarType real_dtype, const void* in, void* out, int64_t n, int64_t outer,
              int64_t inner, bool inverse, double scale, const FftTables& t) {
  if (real_dtype == ScalarType::Float32)
    run(static_cast<const float*>(in), static_cast<float*>(out), n, outer, inner, inverse,
        static_cast<float>(scale), static_cast<const float*>(t.re), static_cast<const float*>(t.im),
        static_cast<const float*>(t.six_re), static_cast<const float*>(t.six_im));
  else
    run(static_cast<const double*>(in), static_cast<double*>(out), n, outer, inner, inverse, scale,
        static_cast<const double*>(t.re), static_cast<const double*>(t.im),
        static_cast<const double*>(t.six_re), static_cast<const double*>(t.six_im));
}

}  // namespace ember::EMBER_CPU_NS
