// max_pool.cpp - 2-d max pooling of float32/float64 planes with a dilation of 1 (nn.MaxPool2d's
// usual case, padded or not), called by ops/pool.cpp. Compiled once per CPU capability (kernel.h).
//
// One output row at a time, tap by tap: for each tap (kh, kw) in PyTorch's scan order, the row's
// running maxima take that tap's values of every output column in one loop over the columns,
// which the compiler vectorises (a compare and two selects per lane; the column stride is a
// template constant for strides 1 and 2, so the strided loads become shuffles). The window loop
// per output it replaces ran at about 3 ns per tap. Ties keep the first maximum and a NaN wins
// (the last NaN's index), exactly as torch's `(val > max) || isnan(val)` scan.
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <limits>

#include "kernels/math.h"
#include "runtime/parallel.h"

namespace ember::EMBER_CPU_NS {
namespace {

struct Window {
  int64_t IH, IW, OH, OW, KH, KW, SH, SW, PH, PW;
};

// First and one-past-last output column whose tap kw reads inside [0, IW).
inline void valid_columns(const Window& w, int64_t kw, int64_t& lo, int64_t& hi) {
  const int64_t off = kw - w.PW;  // iw = ow * SW + off
  lo = off >= 0 ? 0 : (-off + w.SW - 1) / w.SW;
  hi = w.IW - off <= 0 ? 0 : (w.IW - off + w.SW - 1) / w.SW;
  lo = std::min(lo, w.OW);
  hi = std::max(lo, std::min(hi, w.OW));
}

template <typename T, int kStride, bool kIndices>
void pool_plane(const Window& w, const T* x, T* y, int64_t* ind) {
  const int64_t SW = kStride > 0 ? kStride : w.SW;
  for (int64_t oh = 0; oh < w.OH; ++oh) {
    T* best = y + oh * w.OW;
    int64_t* where = kIndices ? ind + oh * w.OW : nullptr;
    const int64_t h0 = oh * w.SH - w.PH;
    const int64_t kh_lo = std::max<int64_t>(0, -h0), kh_hi = std::min(w.KH, w.IH - h0);
    for (int64_t ow = 0; ow < w.OW; ++ow) {
      best[ow] = -std::numeric_limits<T>::infinity();
      // torch's index when no tap beats -inf: the window's first tap inside the input
      if constexpr (kIndices)
        where[ow] = std::max<int64_t>(h0, 0) * w.IW + std::max<int64_t>(ow * SW - w.PW, 0);
    }
    for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
      const int64_t ih = h0 + kh;
      const T* row = x + ih * w.IW;
      for (int64_t kw = 0; kw < w.KW; ++kw) {
        int64_t lo, hi;
        valid_columns(w, kw, lo, hi);
        const int64_t off = kw - w.PW;
        // Unconditional stores of bit-mask selects (math::blend: with ?: the compiler made a
        // branch and a conditional store of it) through restrict pointers (the input and the
        // output rows cannot overlap): what lets the compiler vectorise the loop.
        const T* __restrict src = row + off;
        T* __restrict b = best;
        if constexpr (kIndices) {
          int64_t* __restrict at = where;
          const int64_t base = ih * w.IW + off;
          for (int64_t ow = lo; ow < hi; ++ow) {
            const T v = src[ow * SW], m = b[ow];
            const bool take = (v > m) | (v != v);
            b[ow] = math::blend(take, v, m);
            at[ow] = math::blend(take, base + ow * SW, at[ow]);
          }
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) {
            const T v = src[ow * SW], m = b[ow];
            b[ow] = math::blend((v > m) | (v != v), v, m);
          }
        }
      }
    }
  }
}

template <typename T, int kStride>
void pool_planes(const Window& w, const T* x, T* y, int64_t* ind, int64_t planes) {
  const int64_t ivol = w.IH * w.IW, ovol = w.OH * w.OW;
  const int64_t grain = grain_for(ovol * w.KH * w.KW);
  parallel_for(0, planes, grain, [&](int64_t a, int64_t b) {
    for (int64_t p = a; p < b; ++p) {
      if (ind) pool_plane<T, kStride, true>(w, x + p * ivol, y + p * ovol, ind + p * ovol);
      else pool_plane<T, kStride, false>(w, x + p * ivol, y + p * ovol, nullptr);
    }
  });
}

template <typename T>
void run(const Window& w, const void* x, void* y, int64_t* ind, int64_t planes) {
  const T* xs = static_cast<const T*>(x);
  T* ys = static_cast<T*>(y);
  if (w.SW == 1) pool_planes<T, 1>(w, xs, ys, ind, planes);
  else if (w.SW == 2) pool_planes<T, 2>(w, xs, ys, ind, planes);
  else pool_planes<T, 0>(w, xs, ys, ind, planes);
}

}  // namespace

void max_pool2d(ScalarType dtype, const void* input, void* output, int64_t* indices,
                int64_t planes, const int64_t* geometry) {
  const Window w{geometry[0], geometry[1], geometry[2], geometry[3], geometry[4],
                 geometry[5], geometry[6], geometry[7], geometry[8], geometry[9]};
  if (dtype == ScalarType::Float32) run<float>(w, input, output, indices, planes);
  else if (dtype == ScalarType::Float64) run<double>(w, input, output, indices, planes);
}

}  // namespace ember::EMBER_CPU_NS

// ---- channels_last: (N, H, W, C) with C innermost ----
// Every tap of an output position updates that position's C running maxima (and indices) in one
// loop over the channels, contiguous in memory: vectorised like the rows above.

namespace ember::EMBER_CPU_NS {
namespace {

template <typename T, bool kIndices>
void pool_position(const Window& w, const T* x, int64_t C, int64_t oh, int64_t ow, T* best,
                   int64_t* where) {
  const int64_t h0 = oh * w.SH - w.PH, w0 = ow * w.SW - w.PW;
  const int64_t first = std::max<int64_t>(h0, 0) * w.IW + std::max<int64_t>(w0, 0);
  for (int64_t c = 0; c < C; ++c) {
    best[c] = -std::numeric_limits<T>::infinity();
    if constexpr (kIndices) where[c] = first;
  }
  for (int64_t kh = std::max<int64_t>(0, -h0); kh < std::min(w.KH, w.IH - h0); ++kh)
    for (int64_t kw = std::max<int64_t>(0, -w0); kw < std::min(w.KW, w.IW - w0); ++kw) {
      const int64_t at_plane = (h0 + kh) * w.IW + (w0 + kw);
      const T* __restrict src = x + at_plane * C;
      T* __restrict b = best;
      if constexpr (kIndices) {
        int64_t* __restrict at = where;
        for (int64_t c = 0; c < C; ++c) {
          const T v = src[c], m = b[c];
          const bool take = (v > m) | (v != v);
          b[c] = math::blend(take, v, m);
          at[c] = math::blend(take, at_plane, at[c]);
        }
      } else {
        for (int64_t c = 0; c < C; ++c) {
          const T v = src[c], m = b[c];
          b[c] = math::blend((v > m) | (v != v), v, m);
        }
      }
    }
}

template <typename T>
void run_channels_last(const Window& w, const void* input, void* output, int64_t* indices,
                       int64_t N, int64_t C) {
  const T* x = static_cast<const T*>(input);
  T* y = static_cast<T*>(output);
  const int64_t positions = w.OH * w.OW;
  parallel_for(0, N * positions,
               grain_for(C * w.KH * w.KW),
               [&](int64_t a, int64_t b) {
                 for (int64_t i = a; i < b; ++i) {
                   const int64_t n = i / positions, o = i % positions;
                   const T* xn = x + n * w.IH * w.IW * C;
                   if (indices)
                     pool_position<T, true>(w, xn, C, o / w.OW, o % w.OW, y + i * C,
                                            indices + i * C);
                   else
                     pool_position<T, false>(w, xn, C, o / w.OW, o % w.OW, y + i * C, nullptr);
                 }
               });
}

}  // namespace

void max_pool2d_channels_last(ScalarType dtype, const void* input, void* output,
                              int64_t* indices, int64_t N, int64_t C, const int64_t* geometry) {
  const Window w{geometry[0], geometry[1], geometry[2], geometry[3], geometry[4],
                 geometry[5], geometry[6], geometry[7], geometry[8], geometry[9]};
  if (dtype == ScalarType::Float32) run_channels_last<float>(w, input, output, indices, N, C);
  else if (dtype == ScalarType::Float64) run_channels_last<double>(w, input, output, indices, N, C);
}

}  // namespace ember::EMBER_CPU_NS
