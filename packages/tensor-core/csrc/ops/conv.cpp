// conv.cpp: convolution by vol2col + GEMM (see conv.h for the shape of the algorithm). Checks and
// messages follow PyTorch's aten/src/ATen/native/Convolution.cpp.
#include "ops/conv.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/iterator.h"
#include "ops/channels_last.h"
#include "ops/conv_geometry.h"
#include "ops/cpu_kernels.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "runtime/blas.h"
#include "runtime/gil.h"
#include "runtime/onednn.h"
#include "runtime/parallel.h"

namespace ember {
namespace {

using Geo = ConvGeometry;

Geo make_geo(const Shape& big, const Shape& small, const Shape& kernel, const Shape& stride,
             const Shape& pad, const Shape& dil) {
  Geo g;
  const size_t k = kernel.size(), off = 3 - k;
  for (size_t i = 0; i < 3; ++i) {
    const bool have = i >= off;
    g.I[i] = have ? big[i - off] : 1;
    g.O[i] = have ? small[i - off] : 1;
    g.K[i] = have ? kernel[i - off] : 1;
    g.s[i] = have ? stride[i - off] : 1;
    g.p[i] = have ? pad[i - off] : 0;
    g.d[i] = have ? dil[i - off] : 1;
  }
  return g;
}

// First and one-past-last output position o (in [0, O)) whose input index o*s - p + k*d is
// inside [0, I).
inline void valid_range(int64_t O, int64_t I, int64_t s, int64_t off, int64_t& lo, int64_t& hi) {
  // i = o*s + off; need 0 <= i < I
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  hi = I - off <= 0 ? 0 : (I - off + s - 1) / s;
  lo = std::min(lo, O);
  hi = std::max(lo, std::min(hi, O));
}

// col (C*kvol, (r1-r0)*O[2]) <- patches of big (C, ivol) for the output rows [r0, r1) of the
// flattened (d, h) output grid; parallel over the rows of col. `ld`: col's row stride (0: the
// block's width; larger when several samples share one matrix side by side).
template <typename T>
void im2col(const T* big, int64_t C, const Geo& g, int64_t row0, int64_t row1, T* col,
            int64_t ld = 0) {
  const int64_t kvol = g.kvol(), ovol = (row1 - row0) * g.O[2], ivol = g.ivol();
  if (ld == 0) ld = ovol;
  const int64_t grain = grain_for(ovol);
  parallel_for(0, C * kvol, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r / kvol, kk = r % kvol;
      const int64_t kd = kk / (g.K[1] * g.K[2]), kh = (kk / g.K[2]) % g.K[1], kw = kk % g.K[2];
      const T* src = big + c * ivol;
      T* dst = col + r * ld;
      const int64_t offw = kw * g.d[2] - g.p[2];
      int64_t wlo, whi;
      valid_range(g.O[2], g.I[2], g.s[2], offw, wlo, whi);
      for (int64_t rr = row0; rr < row1; ++rr, dst += g.O[2]) {
        const int64_t od = rr / g.O[1], oh = rr % g.O[1];
        const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
        {
          const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
          if (id < 0 || id >= g.I[0] || ih < 0 || ih >= g.I[1]) {
            std::fill(dst, dst + g.O[2], T(0));
            continue;
          }
          const T* row = src + (id * g.I[1] + ih) * g.I[2];
          std::fill(dst, dst + wlo, T(0));
          if (g.s[2] == 1) {
            std::memcpy(dst + wlo, row + wlo + offw, sizeof(T) * (whi - wlo));
          } else {
            for (int64_t ow = wlo; ow < whi; ++ow) dst[ow] = row[ow * g.s[2] + offw];
          }
          std::fill(dst + whi, dst + g.O[2], T(0));
        }
      }
    }
  });
}

// big (C, ivol) <- sum of the patches in col (C*kvol, ovol); parallel over channels (each channel
// receives only its own rows, so no two threads write the same element). `ld`: col's row stride.
template <typename T> void col2im(const T* col, int64_t C, const Geo& g, T* big, int64_t ld = 0) {
  const int64_t kvol = g.kvol(), ovol = g.ovol(), ivol = g.ivol();
  if (ld == 0) ld = ovol;
  const int64_t grain = grain_for(kvol * ovol);
  parallel_for(0, C, grain, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      T* dstc = big + c * ivol;
      std::fill(dstc, dstc + ivol, T(0));
      for (int64_t kk = 0; kk < kvol; ++kk) {
        const int64_t kd = kk / (g.K[1] * g.K[2]), kh = (kk / g.K[2]) % g.K[1], kw = kk % g.K[2];
        const T* src = col + (c * kvol + kk) * ld;
        const int64_t offw = kw * g.d[2] - g.p[2];
        int64_t wlo, whi;
        valid_range(g.O[2], g.I[2], g.s[2], offw, wlo, whi);
        for (int64_t od = 0; od < g.O[0]; ++od) {
          const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
          for (int64_t oh = 0; oh < g.O[1]; ++oh, src += g.O[2]) {
            const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
            if (id < 0 || id >= g.I[0] || ih < 0 || ih >= g.I[1]) continue;
            T* row = dstc + (id * g.I[1] + ih) * g.I[2];
            if (g.s[2] == 1) {
              T* r = row + offw;
              for (int64_t ow = wlo; ow < whi; ++ow) r[ow] += src[ow];
            } else {
              for (int64_t ow = wlo; ow < whi; ++ow) row[ow * g.s[2] + offw] += src[ow];
            }
          }
        }
      }
    }
  });
}

using blas::gemm;

// Sizes of one call: N batch, S/B channels on the small/big side, G groups.
struct Dims {
  int64_t N, S, B, G;
};

// Runs body(n0, n1, slot) over the batch: with two or more samples and threads, the samples are
// split over the pool and each chunk runs single-threaded GEMMs (slot = the chunk's index, for
// per-chunk buffers); otherwise sample by sample, with OpenBLAS's threads inside each GEMM and
// im2col/col2im parallel. Returns the number of slots used.
template <typename F> int over_batch(int64_t N, const F& body) {
  const int nt = get_num_threads();
  if (N >= 2 && nt > 1 && !in_parallel_region()) {
    parallel_for(0, N, 1, [&](int64_t a, int64_t b) { body(a, b, get_thread_num()); });
    return nt;
  }
  std::optional<blas::Threaded> threaded;  // one sample: OpenBLAS's threads inside each GEMM
  if (nt > 1 && !in_parallel_region()) threaded.emplace();
  body(0, N, 0);
  return 1;
}

// Output rows per im2col block: the column block (R x rows*O[2]) is kept near 512 KiB so that
// the GEMM reads it from cache right after im2col wrote it (whole matrix when it is small).
template <typename T> int64_t row_block(int64_t R, const Geo& g) {
  const int64_t rows = g.O[0] * g.O[1];
  const int64_t per_row = std::max<int64_t>(R * g.O[2] * static_cast<int64_t>(sizeof(T)), 1);
  if (rows * per_row <= (int64_t{1} << 20)) return std::max<int64_t>(rows, 1);
  return std::max<int64_t>(1, (int64_t{1} << 19) / per_row);
}

// ---- depthwise: one big-side and one small-side channel per group (S == B == G) ----
// Direct loops per (sample, channel) plane (ops/cpu/conv_depthwise.cpp, compiled per CPU
// capability): the general path would run one 1 x kvol x ovol GEMM per sample and channel
// (15,000 BLAS calls for one MobileNet layer).
bool is_depthwise(const Dims& m) { return m.S == m.G && m.B == m.G; }

template <typename T> constexpr ScalarType float_type() {
  return std::is_same_v<T, float> ? ScalarType::Float32 : ScalarType::Float64;
}

template <typename T>
void depthwise_forward(const T* big, const T* W, T* small, const Dims& m, const Geo& g) {
  cpu_kernels().depthwise_forward(g, m.N, m.S, float_type<T>(), big, W, small);
}
template <typename T>
void depthwise_adjoint(const T* small, const T* W, T* big, const Dims& m, const Geo& g) {
  cpu_kernels().depthwise_adjoint(g, m.N, m.S, float_type<T>(), small, W, big);
}
template <typename T>
void depthwise_weight(const T* small, const T* big, T* gW, const Dims& m, const Geo& g) {
  cpu_kernels().depthwise_weight(g, m.N, m.S, float_type<T>(), small, big, gW);
}

// ---- small outputs: the batch folded into the GEMM's N dimension ----
// With an output of a few positions (ResNet's 2x2 and 4x4 stages) one GEMM per sample has only
// ovol columns and streams the whole weight matrix again for every sample. Laying the samples'
// columns side by side, col (R, nb * ovol), makes one GEMM per chunk of samples, its columns split
// over ember's threads (measured on a
// 1x1 conv 2048->512 at 2x2, batch 16: 10.5 ms per sample against 3.0 ms folded).

// Fold when an output plane has at most 64 positions, or 8 for a 1x1 convolution, whose
// per-sample GEMM reads the input in place while folding must copy it (measured with
// bench_nn_kernels.py's convolution rows, one thread, batch 16: 3x3 512->512 at 2x2 forward
// 7.4 -> 2.7 ms, 3x3 256->256 at 4x4 2.9 -> 2.2 ms; 1x1 2048->512 at 2x2 2.8 -> 1.2 ms, but 1x1
// 192->32 at 8x8 0.06 -> 0.22 ms). EMBER_CONV_FOLD_MAX_OVOL overrides both limits, for measuring.
int64_t fold_max_ovol(bool direct) {
  static const int64_t forced = [] {
    const char* e = std::getenv("EMBER_CONV_FOLD_MAX_OVOL");
    return e ? std::atoll(e) : int64_t{-1};
  }();
  if (forced >= 0) return forced;
  return direct ? 8 : 64;
}

bool folds(const Dims& m, const Geo& g) {
  return m.G == 1 && m.N >= 2 && g.ovol() <= fold_max_ovol(g.direct());
}

// Samples per folded chunk: the column matrix stays below ~32 MiB (EMBER_CONV_FOLD_CHUNK_BYTES
// overrides it, for the tests of the chunked loop).
template <typename T> int64_t fold_chunk(int64_t R, const Dims& m, const Geo& g) {
  static const int64_t cap = [] {
    const char* e = std::getenv("EMBER_CONV_FOLD_CHUNK_BYTES");
    return e ? std::atoll(e) : (int64_t{32} << 20);
  }();
  const int64_t per_sample = std::max<int64_t>(R * g.ovol() * static_cast<int64_t>(sizeof(T)), 1);
  return std::clamp<int64_t>(cap / per_sample, 1, m.N);
}

// dst (S, nb*ovol) <- src (nb, S, ovol), or back with to_batch.
template <typename T>
void fold_planes(const T* src, T* dst, int64_t nb, int64_t S, int64_t ovol, bool to_batch) {
  parallel_for(0, nb * S, grain_for(ovol),
               [&](int64_t a, int64_t b) {
                 for (int64_t i = a; i < b; ++i) {
                   const int64_t n = i / S, s = i % S;
                   T* folded = const_cast<T*>(to_batch ? src : dst) + (s * nb + n) * ovol;
                   T* plane = const_cast<T*>(to_batch ? dst : src) + i * ovol;
                   if (to_batch) std::copy(folded, folded + ovol, plane);
                   else std::copy(plane, plane + ovol, folded);
                 }
               });
}

// Splits a folded GEMM's columns over ember's pool, each chunk one single-threaded GEMM. Giving
// OpenBLAS its own threads instead made training 2-5x slower at two threads on a busy 2-core
// machine (its workers spin between calls while ember's pool runs the next op).
template <typename F> void over_columns(int64_t n, const F& gemm_block) {
  parallel_for(0, n, 64, gemm_block);
}

// What the three folded passes share: chunks of at most nbmax samples, each with its column
// matrix col (R, nb*ovol) and the small side's planes folded side by side, (S, nb*ovol).
template <typename T> struct Folded {
  const Dims& m;
  const Geo& g;
  const int64_t R, ovol, ivol, nbmax;
  std::vector<T> col, planes;
  Folded(const Dims& dims, const Geo& geo)
      : m(dims), g(geo), R(dims.B * geo.kvol()), ovol(geo.ovol()), ivol(geo.ivol()),
        nbmax(fold_chunk<T>(R, dims, geo)), col(static_cast<size_t>(R * nbmax * ovol)),
        planes(static_cast<size_t>(dims.S * nbmax * ovol)) {}
  // body(first sample, samples, row length nb*ovol) per chunk
  template <typename F> void each_chunk(const F& body) {
    for (int64_t n0 = 0; n0 < m.N; n0 += nbmax) {
      const int64_t nb = std::min(nbmax, m.N - n0);
      body(n0, nb, nb * ovol);
    }
  }
  void big_to_columns(const T* big, int64_t n0, int64_t nb, int64_t ld) {
    for (int64_t n = 0; n < nb; ++n)
      im2col(big + (n0 + n) * m.B * ivol, m.B, g, 0, g.O[0] * g.O[1], col.data() + n * ovol, ld);
  }
};

template <typename T>
void folded_forward(const T* big, const T* W, T* small, const Dims& m, const Geo& g) {
  Folded<T> f(m, g);
  f.each_chunk([&](int64_t n0, int64_t nb, int64_t ld) {
    f.big_to_columns(big, n0, nb, ld);
    over_columns(ld, [&](int64_t c0, int64_t c1) {
      gemm(false, false, m.S, c1 - c0, f.R, T(1), W, f.R, f.col.data() + c0, ld, T(0),
           f.planes.data() + c0, ld);
    });
    fold_planes(f.planes.data(), small + n0 * m.S * f.ovol, nb, m.S, f.ovol, /*to_batch=*/true);
  });
}

template <typename T>
void folded_adjoint(const T* small, const T* W, T* big, const Dims& m, const Geo& g) {
  Folded<T> f(m, g);
  f.each_chunk([&](int64_t n0, int64_t nb, int64_t ld) {
    fold_planes(small + n0 * m.S * f.ovol, f.planes.data(), nb, m.S, f.ovol, /*to_batch=*/false);
    over_columns(ld, [&](int64_t c0, int64_t c1) {
      gemm(true, false, f.R, c1 - c0, m.S, T(1), W, f.R, f.planes.data() + c0, ld, T(0),
           f.col.data() + c0, ld);
    });
    for (int64_t n = 0; n < nb; ++n)
      col2im(f.col.data() + n * f.ovol, m.B, g, big + (n0 + n) * m.B * f.ivol, ld);
  });
}

template <typename T>
void folded_weight(const T* small, const T* big, T* gW, const Dims& m, const Geo& g) {
  Folded<T> f(m, g);
  f.each_chunk([&](int64_t n0, int64_t nb, int64_t ld) {
    fold_planes(small + n0 * m.S * f.ovol, f.planes.data(), nb, m.S, f.ovol, /*to_batch=*/false);
    f.big_to_columns(big, n0, nb, ld);
    over_columns(f.R, [&](int64_t r0, int64_t r1) {  // gW's columns are col's rows
      gemm(false, true, m.S, r1 - r0, ld, T(1), f.planes.data(), ld, f.col.data() + r0 * ld, ld,
           n0 == 0 ? T(0) : T(1), gW + r0, f.R);
    });
  });
}

// float32 passes go to oneDNN when it is installed (runtime/onednn.h), except where the kernels
// here were measured to be as fast or faster (each pass timed alone on the paper models' layer
// shapes with EMBER_ONEDNN=all and with oneDNN disabled, one thread, batch 16; own / oneDNN ms;
// depthwise passes are 3-10x faster in oneDNN, 3x3 144
// channels at 16x16: forward 0.67 / 0.19, input gradient 2.0 / 0.22, weight gradient 1.8 / 0.16):
// - 1x1 stride-1 unpadded convolutions that do not fold: one GEMM over the input in place, no
//   copy (64->256 at 16x16 0.60 / 0.65, 16->96 at 32x32 0.36 / 0.61);
// - input gradients into a few channels (an image's 3, which oneDNN's blocked layouts pad to 16:
//   11x11/4 3->64 at 128x128 6.1 / 19.3) or through a strided 1x1 kernel (1.6 / 2.0);
// - weight gradients of wide layers at <= 4 output positions (1x1 2048->512 at 2x2 1.1 / 2.9,
//   3x3 512->512 2.6 / 3.5, depthwise 960 channels 0.19 / 2.4).
// float64 (gradcheck) and every shape oneDNN declines run the kernels below as well.
// EMBER_ONEDNN=all sends every float32 pass to oneDNN, for measuring these choices.
bool onednn_everywhere() {
  static const bool all = [] {
    const char* e = std::getenv("EMBER_ONEDNN");
    return e && std::string(e) == "all";
  }();
  return all;
}

template <typename T>
bool on_onednn(onednn::Pass pass, const Dims& m, const Geo& g, const T* a, const T* b, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_everywhere()) return onednn::convolution(pass, g, m.N, m.S, m.B, m.G, a, b, out);
    if (g.direct() && !folds(m, g)) return false;
    if (pass == onednn::Pass::Adjoint && (m.B < 16 || (g.kvol() == 1 && !g.direct()))) return false;
    if (pass == onednn::Pass::Weight && g.ovol() <= 4 && m.S >= 256) return false;
    return onednn::convolution(pass, g, m.N, m.S, m.B, m.G, a, b, out);
  } else {
    return false;
  }
}

// small (N, S, ovol) = W_g @ col(big (N, B, ivol)) per sample and group.
template <typename T> void forward_core(const T* big, const T* W, T* small, const Dims& m, const Geo& g) {
  if (on_onednn(onednn::Pass::Forward, m, g, big, W, small)) return;
  if (is_depthwise(m)) return depthwise_forward(big, W, small, m, g);
  if (folds(m, g)) return folded_forward(big, W, small, m, g);
  const int64_t Sg = m.S / m.G, Bg = m.B / m.G, R = Bg * g.kvol(), ovol = g.ovol(), ivol = g.ivol();
  const bool direct = g.direct();
  const int64_t rows = g.O[0] * g.O[1], rb = row_block<T>(R, g);
  over_batch(m.N, [&](int64_t n0, int64_t n1, int) {
    std::vector<T> col(direct ? 0 : static_cast<size_t>(R * rb * g.O[2]));
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t gi = 0; gi < m.G; ++gi) {
        const T* bp = big + (n * m.B + gi * Bg) * ivol;
        T* yp = small + (n * m.S + gi * Sg) * ovol;
        if (direct) {
          gemm(false, false, Sg, ovol, R, T(1), W + gi * Sg * R, R, bp, ovol, T(0), yp, ovol);
          continue;
        }
        for (int64_t r0 = 0; r0 < rows; r0 += rb) {
          const int64_t r1 = std::min(rows, r0 + rb), nb = (r1 - r0) * g.O[2];
          im2col(bp, Bg, g, r0, r1, col.data());
          gemm(false, false, Sg, nb, R, T(1), W + gi * Sg * R, R, col.data(), nb, T(0),
               yp + r0 * g.O[2], ovol);
        }
      }
  });
}

// big (N, B, ivol) = col2im(W_g^T @ small (N, S, ovol)).
template <typename T> void adjoint_core(const T* small, const T* W, T* big, const Dims& m, const Geo& g) {
  if (on_onednn(onednn::Pass::Adjoint, m, g, small, W, big)) return;
  if (is_depthwise(m)) return depthwise_adjoint(small, W, big, m, g);
  if (folds(m, g)) return folded_adjoint(small, W, big, m, g);
  const int64_t Sg = m.S / m.G, Bg = m.B / m.G, R = Bg * g.kvol(), ovol = g.ovol(), ivol = g.ivol();
  const bool direct = g.direct();
  over_batch(m.N, [&](int64_t n0, int64_t n1, int) {
    std::vector<T> col(direct ? 0 : static_cast<size_t>(R * ovol));
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t gi = 0; gi < m.G; ++gi) {
        T* bp = big + (n * m.B + gi * Bg) * ivol;
        T* cp = direct ? bp : col.data();
        gemm(true, false, R, ovol, Sg, T(1), W + gi * Sg * R, R, small + (n * m.S + gi * Sg) * ovol,
             ovol, T(0), cp, ovol);
        if (!direct) col2im(col.data(), Bg, g, bp);
      }
  });
}

// gW (S, Bg*kvol) = sum_n small[n, g] @ col(big[n, g])^T; one accumulator per chunk, summed after.
template <typename T> void weight_core(const T* small, const T* big, T* gW, const Dims& m, const Geo& g) {
  if (on_onednn(onednn::Pass::Weight, m, g, small, big, gW)) return;
  if (is_depthwise(m)) return depthwise_weight(small, big, gW, m, g);
  if (folds(m, g)) return folded_weight(small, big, gW, m, g);
  const int64_t Sg = m.S / m.G, Bg = m.B / m.G, R = Bg * g.kvol(), ovol = g.ovol(), ivol = g.ivol();
  const bool direct = g.direct();
  const int64_t wsize = m.S * R;
  const int64_t rows = g.O[0] * g.O[1], rb = row_block<T>(R, g);
  const int nt = std::max(get_num_threads(), 1);
  std::vector<T> acc(static_cast<size_t>(wsize) * (nt - 1), T(0));
  std::fill(gW, gW + wsize, T(0));
  const int used = over_batch(m.N, [&](int64_t n0, int64_t n1, int slot) {
    T* dst = slot == 0 ? gW : acc.data() + (slot - 1) * wsize;
    std::vector<T> col(direct ? 0 : static_cast<size_t>(R * rb * g.O[2]));
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t gi = 0; gi < m.G; ++gi) {
        const T* bp = big + (n * m.B + gi * Bg) * ivol;
        const T* sp = small + (n * m.S + gi * Sg) * ovol;
        if (direct) {
          gemm(false, true, Sg, R, ovol, T(1), sp, ovol, bp, ovol, T(1), dst + gi * Sg * R, R);
          continue;
        }
        for (int64_t r0 = 0; r0 < rows; r0 += rb) {
          const int64_t r1 = std::min(rows, r0 + rb), nb = (r1 - r0) * g.O[2];
          im2col(bp, Bg, g, r0, r1, col.data());
          gemm(false, true, Sg, R, nb, T(1), sp + r0 * g.O[2], ovol, col.data(), nb, T(1),
               dst + gi * Sg * R, R);
        }
      }
  });
  for (int s = 1; s < used; ++s) {
    const T* src = acc.data() + (s - 1) * wsize;
    for (int64_t i = 0; i < wsize; ++i) gW[i] += src[i];
  }
}

// Integer convolution, forward (torch's slow_conv2d for int8-int64 and uint8): im2col, then
// products summed in uint64, whose wrap-around equals the dtype's modulo 2^bits whatever the
// order of the sums, as torch's integer GEMM wraps. No BLAS has integer GEMMs: a plain loop.
template <typename T> inline uint64_t wrapping(T v) {  // (sign-extended: -1 is 2^64 - 1)
  return static_cast<uint64_t>(static_cast<int64_t>(v));
}

template <typename T>
void integer_forward(const T* big, const T* W, T* small, const Dims& m, const Geo& g) {
  const int64_t Sg = m.S / m.G, Bg = m.B / m.G, R = Bg * g.kvol(), ovol = g.ovol(), ivol = g.ivol();
  const int64_t rows = g.O[0] * g.O[1];
  over_batch(m.N, [&](int64_t n0, int64_t n1, int) {
    std::vector<T> col(static_cast<size_t>(R * ovol));
    std::vector<uint64_t> acc(static_cast<size_t>(ovol));
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t gi = 0; gi < m.G; ++gi) {
        im2col(big + (n * m.B + gi * Bg) * ivol, Bg, g, 0, rows, col.data());
        for (int64_t s = 0; s < Sg; ++s) {
          std::fill(acc.begin(), acc.end(), uint64_t{0});
          const T* wr = W + (gi * Sg + s) * R;
          for (int64_t r = 0; r < R; ++r) {
            const uint64_t w = wrapping(wr[r]);
            const T* cr = col.data() + r * ovol;
            for (int64_t p = 0; p < ovol; ++p) acc[p] += w * wrapping(cr[p]);
          }
          T* yp = small + (n * m.S + gi * Sg + s) * ovol;
          for (int64_t p = 0; p < ovol; ++p) yp[p] = static_cast<T>(acc[p]);
        }
      }
  });
}

// Integer transposed convolution (int64 only, as torch's): big = col2im(W_g^T @ small), in uint64.
template <typename T>
void integer_adjoint(const T* small, const T* W, T* big, const Dims& m, const Geo& g) {
  const int64_t Sg = m.S / m.G, Bg = m.B / m.G, R = Bg * g.kvol(), ovol = g.ovol(), ivol = g.ivol();
  over_batch(m.N, [&](int64_t n0, int64_t n1, int) {
    std::vector<uint64_t> col(static_cast<size_t>(R * ovol)), image(static_cast<size_t>(Bg * ivol));
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t gi = 0; gi < m.G; ++gi) {
        std::fill(col.begin(), col.end(), uint64_t{0});
        for (int64_t s = 0; s < Sg; ++s) {
          const T* sp = small + (n * m.S + gi * Sg + s) * ovol;
          const T* wr = W + (gi * Sg + s) * R;
          for (int64_t r = 0; r < R; ++r) {
            const uint64_t w = wrapping(wr[r]);
            uint64_t* cr = col.data() + r * ovol;
            for (int64_t p = 0; p < ovol; ++p) cr[p] += w * wrapping(sp[p]);
          }
        }
        col2im(col.data(), Bg, g, image.data());
        T* bp = big + (n * m.B + gi * Bg) * ivol;
        for (int64_t i = 0; i < Bg * ivol; ++i) bp[i] = static_cast<T>(image[i]);
      }
  });
}

// out (N, C, vol) += bias[c]
template <typename T> void add_bias(T* out, const T* bias, int64_t N, int64_t C, int64_t vol) {
  parallel_for(0, N * C, grain_for(vol), [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      const T v = bias[i % C];
      T* p = out + i * vol;
      for (int64_t j = 0; j < vol; ++j) p[j] += v;
    }
  });
}

// gb[c] = sum over n and space of g (N, C, vol), accumulated in double.
template <typename T> void bias_grad(const T* g, T* gb, int64_t N, int64_t C, int64_t vol) {
  parallel_for(0, C, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double acc = 0;
      for (int64_t n = 0; n < N; ++n) {
        const T* p = g + (n * C + c) * vol;
        T part = 0;
        for (int64_t j = 0; j < vol; ++j) part += p[j];
        acc += part;
      }
      gb[c] = static_cast<T>(acc);
    }
  });
}

// ---- argument checks (PyTorch's order and messages) ----

struct Params {
  int64_t k;  // spatial dims
  bool batched;
  Shape stride, padding, dilation, output_padding;
  bool transposed;
  int64_t groups;
};

Shape spatial(const Tensor& t) { return Shape(t->sizes.begin() + 2, t->sizes.end()); }

bool integer_conv(ScalarType t) { return is_integral(t, false) && !is_wide_unsigned(t); }

void check_list(const Shape& v, int64_t k, const char* what) {
  if (static_cast<int64_t>(v.size()) == k) return;
  throw std::runtime_error(str_cat("expected ", what, " to be a single integer value or a list of ", k,
                                   " values to match the convolution dimensions, but got ", what, "=",
                                   shape_str(v)));
}

// Checks everything about a convolution's arguments before any memory is touched and returns the
// parameters with the input's batch state. `input` is the caller's tensor (maybe unbatched).
Params check_conv(const Tensor& input, const Tensor& weight, const Tensor& bias, const Shape& stride,
                  const Shape& padding, const Shape& dilation, bool transposed,
                  const Shape& output_padding, int64_t groups) {
  const int64_t wdim = weight->dim();
  EMBER_CHECK(wdim >= 3 && wdim <= 5, std::runtime_error,
              "convolution: expected weight to be 3-, 4- or 5-dimensional, but got weight of size ",
              shape_str(weight->sizes));
  const int64_t k = wdim - 2;
  Params P{k, true, stride, padding, dilation, output_padding, transposed, groups};
  const int64_t idim = input->dim();
  if (idim == wdim - 1) {
    P.batched = false;
  } else if (idim != wdim) {
    throw std::runtime_error(str_cat("Expected ", wdim - 1, "D (unbatched) or ", wdim,
                                     "D (batched) input to conv", k, "d, but got input of size: ",
                                     shape_str(input->sizes)));
  }
  check_list(stride, k, "stride");
  check_list(padding, k, "padding");
  check_list(dilation, k, "dilation");
  check_list(output_padding, k, "output_padding");
  for (auto v : stride) EMBER_CHECK(v > 0, std::runtime_error, "non-positive stride is not supported");
  for (auto v : padding) EMBER_CHECK(v >= 0, std::runtime_error, "negative padding is not supported");
  for (auto v : output_padding)
    EMBER_CHECK(v >= 0, std::runtime_error, "negative output padding is not supported");
  for (auto v : dilation)
    EMBER_CHECK(v > 0, std::runtime_error, "dilation should be greater than zero, but got ",
                shape_str(dilation));
  EMBER_CHECK(groups > 0, std::runtime_error, "non-positive groups is not supported");
  EMBER_CHECK(input->dtype == weight->dtype, std::runtime_error, "Input type (",
              cpp_type_name(input->dtype), ") and weight type (", cpp_type_name(weight->dtype),
              ") should be the same");
  if (bias)
    EMBER_CHECK(input->dtype == bias->dtype, std::runtime_error, "Input type (",
                cpp_type_name(input->dtype), ") and bias type (", cpp_type_name(bias->dtype),
                ") should be the same");
  const ScalarType dt = input->dtype;
  const bool dilated = std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d > 1; });
  if (is_integral(dt, true) &&
      !(dt == ScalarType::Int64 || (integer_conv(dt) && !transposed && !dilated))) {
    // As torch's CPU kernels: int64 convolves in every form, int8-int32 and uint8 only plain
    // (neither transposed nor dilated); the others are refused by torch's name of the kernel
    // the form goes to. (Integers take no gradient: forward only.)
    const char* kernel = transposed ? (k == 3 ? "slow_conv_transpose3d_out_cpu"
                                              : "slow_conv_transpose2d_out_cpu")
                         : dilated  ? "slow_conv_dilated<>"
                         : k == 3   ? "compute_columns3d"
                                    : "slow_conv2d_cpu";
    throw NotImplementedError(str_cat("\"", kernel, "\" not implemented for '",
                                      torch_type_name(dt), "'"));
  }
  EMBER_CHECK(is_floating(dt) || integer_conv(dt), NotImplementedError, "\"conv", k,
              "d\" not implemented for '", torch_type_name(dt), "'");
  EMBER_CHECK(input->device().is_cpu() && weight->device().is_cpu(), std::runtime_error,
              "convolution: expected CPU tensors");

  // The batched view of the input's sizes.
  Shape in = input->sizes;
  if (!P.batched) in.insert(in.begin(), 1);
  const Shape& ws = weight->sizes;
  EMBER_CHECK(ws[0] % groups == 0 || transposed, std::runtime_error, "Given groups=", groups,
              ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size ", shape_str(ws), " instead");
  if (!transposed) {
    if (in[1] != ws[1] * groups) {
      throw std::runtime_error(str_cat("Given groups=", groups, ", weight of size ", shape_str(ws),
                                       ", expected input", shape_str(in), " to have ", ws[1] * groups,
                                       " channels, but got ", in[1], " channels instead"));
    }
    if (bias)
      EMBER_CHECK(bias->dim() == 1 && bias->sizes[0] == ws[0], std::runtime_error,
                  "Given weight of size ", shape_str(ws),
                  ", expected bias to be 1-dimensional with ", ws[0],
                  " elements, but got bias of size ", shape_str(bias->sizes), " instead");
    bool too_small = false;
    std::string padded, kern;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t pin = in[2 + i] + 2 * padding[i], kk = dilation[i] * (ws[2 + i] - 1) + 1;
      too_small |= pin < kk;
      padded += (i ? " x " : "") + std::to_string(pin);
      kern += (i ? " x " : "") + std::to_string(kk);
    }
    if (too_small)
      throw std::runtime_error(str_cat("Calculated padded input size per channel: (", padded,
                                       "). Kernel size: (", kern,
                                       "). Kernel size can't be greater than actual input size"));
  } else {
    EMBER_CHECK(ws[0] % groups == 0, std::runtime_error, "Given groups=", groups,
                ", expected weight to be divisible by ", groups,
                " at dimension 0, but got weight of size ", shape_str(ws), " instead");
    if (in[1] != ws[0]) {
      throw std::runtime_error(str_cat("Given transposed=1, weight of size ", shape_str(ws),
                                       ", expected input", shape_str(in), " to have ", ws[0],
                                       " channels, but got ", in[1], " channels instead"));
    }
    if (bias)
      EMBER_CHECK(bias->dim() == 1 && bias->sizes[0] == ws[1] * groups, std::runtime_error,
                  "Given transposed=1, weight of size ", shape_str(ws),
                  ", expected bias to be 1-dimensional with ", ws[1] * groups,
                  " elements, but got bias of size ", shape_str(bias->sizes), " instead");
    for (int64_t i = 0; i < k; ++i)
      if (output_padding[i] >= stride[i] && output_padding[i] >= dilation[i])
        throw std::runtime_error(str_cat(
            "output padding must be smaller than either stride or dilation, but got output_padding=",
            shape_str(output_padding), ", stride=", shape_str(stride), ", dilation=",
            shape_str(dilation)));
    for (int64_t i = 0; i < k; ++i) {
      const int64_t o = (in[2 + i] - 1) * stride[i] - 2 * padding[i] +
                        dilation[i] * (ws[2 + i] - 1) + output_padding[i] + 1;
      if (o <= 0 && in[2 + i] > 0)
        throw std::runtime_error(str_cat("Given input size per channel: ",
                                         shape_str(Shape(in.begin() + 2, in.end())),
                                         ". Calculated output size per channel is too small "
                                         "(non-positive) for conv_transpose", k, "d"));
    }
  }
  return P;
}

// Output shape (batched) of the convolution.
Shape conv_out_shape(const Shape& in, const Shape& ws, const Params& P) {
  Shape out{in[0], P.transposed ? ws[1] * P.groups : ws[0]};
  for (int64_t i = 0; i < P.k; ++i) {
    const int64_t eff = P.dilation[i] * (ws[2 + i] - 1);
    out.push_back(P.transposed
                      ? (in[2 + i] - 1) * P.stride[i] - 2 * P.padding[i] + eff + P.output_padding[i] + 1
                      : (in[2 + i] + 2 * P.padding[i] - eff - 1) / P.stride[i] + 1);
  }
  return out;
}

Tensor batched(const Tensor& t, bool is_batched) {
  return is_batched ? contiguous(t) : contiguous(unsqueeze(t, 0));
}

// The compute dtype: float16/bfloat16 run in float32.
ScalarType compute_type(ScalarType t) { return is_reduced_float(t) ? ScalarType::Float32 : t; }
Tensor as_compute(const Tensor& t) {
  if (!t) return t;
  return contiguous(to_dtype(t, compute_type(t->dtype)));
}

// Runs a plain or transposed convolution; `pad_lo` is the leading padding and `out_sp` the output
// spatial sizes (so that the asymmetric 'same' padding needs no padded copy).
Tensor conv_run(const Tensor& x /*batched, compute dtype, contiguous*/, const Tensor& w,
                const Tensor& b, const Params& P, const Shape& pad_lo, const Shape& out_sp) {
  // Long convolutions run without the GIL (multiply-adds bounded by input x weight elements).
  GilRelease nogil(double(x->numel()) * double(w->numel()) > double(kGrainSize));
  const int64_t N = x->sizes[0];
  const Shape& ws = w->sizes;
  Shape kern(ws.begin() + 2, ws.end());
  Shape out{N, P.transposed ? ws[1] * P.groups : ws[0]};
  out.insert(out.end(), out_sp.begin(), out_sp.end());
  Tensor y = empty(out, x->dtype);
  if (y->numel() == 0) return y;
  const int64_t C = out[1];
  if (integer_conv(x->dtype)) {  // (check_conv let through only the forms torch has)
    dispatch_integral(x->dtype, "convolution", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (x->sizes[1] == 0) {
        std::fill(y->data_as<T>(), y->data_as<T>() + y->numel(), T(0));
      } else if (!P.transposed) {
        Geo g = make_geo(spatial(x), out_sp, kern, P.stride, pad_lo, P.dilation);
        Dims m{N, ws[0], x->sizes[1], P.groups};
        integer_forward<T>(x->data_as<T>(), w->data_as<T>(), y->data_as<T>(), m, g);
      } else {
        Geo g = make_geo(out_sp, spatial(x), kern, P.stride, pad_lo, P.dilation);
        Dims m{N, x->sizes[1], C, P.groups};
        integer_adjoint<T>(x->data_as<T>(), w->data_as<T>(), y->data_as<T>(), m, g);
      }
      if (b) add_bias<T>(y->data_as<T>(), b->data_as<T>(), N, C, y->numel() / (N * C));
    });
    return y;
  }
  dispatch_floating(x->dtype, "convolution", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (!P.transposed) {
        Geo g = make_geo(spatial(x), out_sp, kern, P.stride, pad_lo, P.dilation);
        Dims m{N, ws[0], x->sizes[1], P.groups};
        if (x->sizes[1] == 0) std::fill(y->data_as<T>(), y->data_as<T>() + y->numel(), T(0));
        else forward_core<T>(x->data_as<T>(), w->data_as<T>(), y->data_as<T>(), m, g);
      } else {
        Geo g = make_geo(out_sp, spatial(x), kern, P.stride, pad_lo, P.dilation);
        Dims m{N, x->sizes[1], C, P.groups};
        if (x->sizes[1] == 0) std::fill(y->data_as<T>(), y->data_as<T>() + y->numel(), T(0));
        else adjoint_core<T>(x->data_as<T>(), w->data_as<T>(), y->data_as<T>(), m, g);
      }
      if (b) add_bias<T>(y->data_as<T>(), b->data_as<T>(), N, C, y->numel() / (N * C));
    }
  });
  return y;
}

// ---- channels_last (2-d, float32, oneDNN) ----
// A channels_last input is convolved in place by oneDNN (no reorder of the activations: that
// was 19-26% of oneDNN's time in ResNet-50 and VGG training steps) and gives a channels_last
// result, as torch. Without oneDNN, or for a shape it declines, the NCHW kernels run on a
// contiguous copy and the result is laid out channels_last again (torch's output format).

bool weights_in_place(const Tensor& weight, const Params& P) {
  return P.groups == 1 && weight->dtype == ScalarType::Float32 && is_channels_last(weight);
}

bool channels_last_case(const Tensor& input, const Params& P) {
  return P.batched && !P.transposed && P.k == 2 && input->dtype == ScalarType::Float32 &&
         is_channels_last(input);
}

// y[n, h, w, c] += bias[c] over a (rows, C) channels_last block.
void add_bias_channels_last(float* y, const float* bias, int64_t rows, int64_t C) {
  parallel_for(0, rows, grain_for(C),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r)
                   for (int64_t c = 0; c < C; ++c) y[r * C + c] += bias[c];
               });
}

// The forward through oneDNN, or null when it cannot run there.
Tensor conv_channels_last(const Tensor& x, const Tensor& weight, const Tensor& bias,
                          const Params& P, const Shape& pad_lo, const Shape& out_sp) {
  // channels_last weights (a model converted with .to(memory_format=channels_last)) are read as
  // they are by oneDNN (groups 1), not copied
  const bool w_cl = weights_in_place(weight, P);
  Tensor w = w_cl ? weight : contiguous(to_dtype(weight, ScalarType::Float32));
  Tensor b = bias ? contiguous(to_dtype(bias, ScalarType::Float32)) : Tensor();
  const int64_t N = x->sizes[0], S = w->sizes[0], B = x->sizes[1];
  Shape out{N, S};
  out.insert(out.end(), out_sp.begin(), out_sp.end());
  Tensor y = empty_channels_last(out, ScalarType::Float32);
  if (y->numel() == 0 || B == 0) return nullptr;  // the general path's zeros and empties
  GilRelease nogil(double(x->numel()) * double(w->numel()) > double(kGrainSize));
  Geo g = make_geo(spatial(x), out_sp, Shape(w->sizes.begin() + 2, w->sizes.end()), P.stride,
                   pad_lo, P.dilation);
  if (!onednn::convolution(onednn::Pass::Forward, g, N, S, B, P.groups, x->data_as<float>(),
                           w->data_as<float>(), y->data_as<float>(), /*channels_last=*/true, w_cl))
    return nullptr;
  if (b) add_bias_channels_last(y->data_as<float>(), b->data_as<float>(), y->numel() / S, S);
  return y;
}

// convolution_backward of a channels_last float32 input through oneDNN (grad_input channels_last,
// grad_weight in the weight's layout), or nullopt when it cannot run there.
std::optional<std::tuple<Tensor, Tensor, Tensor>> conv_backward_channels_last(
    const Tensor& grad_output, const Tensor& x, const Tensor& weight, const Params& P,
    std::array<bool, 3> mask) {
  const bool w_cl = weights_in_place(weight, P);
  Tensor w = w_cl ? weight : contiguous(weight), go = to_channels_last(grad_output);
  const int64_t N = x->sizes[0], S = w->sizes[0], B = x->sizes[1];
  if (N == 0 || S == 0 || B == 0 || go->numel() == 0 || x->numel() == 0) return std::nullopt;
  GilRelease nogil(double(x->numel()) * double(w->numel()) > double(kGrainSize));
  Geo g = make_geo(spatial(x), spatial(go), Shape(w->sizes.begin() + 2, w->sizes.end()),
                   P.stride, P.padding, P.dilation);
  Tensor gi, gw, gb;
  if (mask[0]) {
    gi = empty_channels_last(x->sizes, ScalarType::Float32);
    if (!onednn::convolution(onednn::Pass::Adjoint, g, N, S, B, P.groups, go->data_as<float>(),
                             w->data_as<float>(), gi->data_as<float>(), true, w_cl))
      return std::nullopt;
  }
  if (mask[1]) {
    // the gradient in the weight's layout, as torch's (and the optimizer's updates stay dense)
    gw = w_cl ? empty_channels_last(w->sizes, ScalarType::Float32)
              : empty(w->sizes, ScalarType::Float32);
    if (!onednn::convolution(onednn::Pass::Weight, g, N, S, B, P.groups, go->data_as<float>(),
                             x->data_as<float>(), gw->data_as<float>(), true, w_cl))
      return std::nullopt;
  }
  if (mask[2]) gb = sum(go, OptDims{std::vector<int64_t>{0, 2, 3}}, false);
  if (gw && !w_cl && is_channels_last(weight)) gw = to_channels_last(gw);  // grouped
  return std::make_tuple(gi, gw, gb);
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const Shape& stride,
                   const Shape& padding, const Shape& dilation, bool transposed,
                   const Shape& output_padding, int64_t groups) {
  Params P = check_conv(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  const ScalarType dt = input->dtype;
  const bool channels_last = channels_last_case(input, P);
  if (channels_last) {
    Shape osh = conv_out_shape(input->sizes, weight->sizes, P);
    if (Tensor y = conv_channels_last(input, weight, bias, P, padding, Shape(osh.begin() + 2, osh.end())))
      return y;
  }
  Tensor x = batched(as_compute(input), P.batched), w = as_compute(weight), b = as_compute(bias);
  Shape osh = conv_out_shape(x->sizes, w->sizes, P);
  Tensor y = conv_run(x, w, b, P, padding, Shape(osh.begin() + 2, osh.end()));
  if (!P.batched) y = squeeze_dims(y, {0});
  if (channels_last) y = to_channels_last(y);
  return y->dtype == dt ? y : to_dtype(y, dt);
}

Shape convolution_output_shape(const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const Shape& stride, const Shape& padding, const Shape& dilation,
                               bool transposed, const Shape& output_padding, int64_t groups) {
  Params P = check_conv(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  Shape in = input->sizes;
  if (!P.batched) in.insert(in.begin(), 1);
  Shape out = conv_out_shape(in, weight->sizes, P);
  if (!P.batched) out.erase(out.begin());
  return out;
}

Tensor convolution_same(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const Shape& stride, const Shape& dilation, int64_t groups) {
  const int64_t k = weight->dim() - 2;
  for (auto s : stride)
    EMBER_CHECK(s == 1, std::runtime_error, "padding='same' is not supported for strided convolutions");
  Shape zeros(std::max<int64_t>(k, 0), 0), pad_lo(zeros);
  if (static_cast<int64_t>(dilation.size()) == k)
    for (int64_t i = 0; i < k; ++i) pad_lo[i] = dilation[i] * (weight->sizes[2 + i] - 1) / 2;
  // Checked with the larger (trailing) padding, which is what the kernel-size check needs.
  Shape pad_hi(pad_lo);
  if (static_cast<int64_t>(dilation.size()) == k)
    for (int64_t i = 0; i < k; ++i) pad_hi[i] = dilation[i] * (weight->sizes[2 + i] - 1) - pad_lo[i];
  Params P = check_conv(input, weight, bias, stride, pad_hi, dilation, false, zeros, groups);
  const ScalarType dt = input->dtype;
  Tensor x = batched(as_compute(input), P.batched), w = as_compute(weight), b = as_compute(bias);
  Tensor y = conv_run(x, w, b, P, pad_lo, spatial(x));
  if (!P.batched) y = squeeze_dims(y, {0});
  return y->dtype == dt ? y : to_dtype(y, dt);
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    const std::optional<Shape>& bias_sizes, const Shape& stride, const Shape& padding,
    const Shape& dilation, bool transposed, const Shape& output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  Params P = check_conv(input, weight, nullptr, stride, padding, dilation, transposed, output_padding, groups);
  EMBER_CHECK(grad_output->dtype == input->dtype, std::runtime_error,
              "convolution_backward: expected grad_output of type ", cpp_type_name(input->dtype),
              ", but got ", cpp_type_name(grad_output->dtype));
  Shape in = input->sizes;
  if (!P.batched) in.insert(in.begin(), 1);
  Shape osh = conv_out_shape(in, weight->sizes, P);
  Shape gsh = grad_output->sizes;
  if (!P.batched) gsh.insert(gsh.begin(), 1);
  EMBER_CHECK(gsh == osh, std::runtime_error, "convolution_backward: expected grad_output of size ",
              shape_str(P.batched ? osh : Shape(osh.begin() + 1, osh.end())), ", but got ",
              shape_str(grad_output->sizes));
  if (output_mask[2] && bias_sizes)
    EMBER_CHECK(bias_sizes->size() == 1 && (*bias_sizes)[0] == osh[1], std::runtime_error,
                "convolution_backward: expected bias_sizes [", osh[1], "], but got ",
                shape_str(*bias_sizes));
  const ScalarType dt = input->dtype;
  const bool channels_last = channels_last_case(input, P) && weight->dtype == dt;
  if (channels_last)
    if (auto r = conv_backward_channels_last(grad_output, input, weight, P, output_mask)) return *r;
  GilRelease nogil(double(input->numel()) * double(weight->numel()) > double(kGrainSize));
  Tensor x = batched(as_compute(input), P.batched), w = as_compute(weight);
  Tensor go = batched(as_compute(grad_output), P.batched);
  const int64_t N = x->sizes[0];
  const Shape& ws = w->sizes;
  Shape kern(ws.begin() + 2, ws.end());
  Tensor gi, gw, gb;
  if (output_mask[0]) gi = empty(x->sizes, x->dtype);
  if (output_mask[1]) gw = empty(ws, x->dtype);
  if (output_mask[2]) gb = empty({osh[1]}, x->dtype);
  dispatch_floating(x->dtype, "convolution_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      // The big side is the input of a plain convolution, grad_output of a transposed one.
      const Tensor& big = transposed ? go : x;
      const Tensor& small = transposed ? x : go;
      Geo g = make_geo(spatial(big), spatial(small), kern, P.stride, P.padding, P.dilation);
      Dims m{N, small->sizes[1], big->sizes[1], P.groups};
      const bool empty_work = N == 0 || m.S == 0 || m.B == 0;
      if (gi) {
        T* p = gi->data_as<T>();
        if (empty_work || g.ovol() == 0 || g.ivol() == 0) std::fill(p, p + gi->numel(), T(0));
        else if (!transposed) adjoint_core<T>(go->data_as<T>(), w->data_as<T>(), p, m, g);
        else forward_core<T>(go->data_as<T>(), w->data_as<T>(), p, m, g);
      }
      if (gw) {
        T* p = gw->data_as<T>();
        if (empty_work || g.ovol() == 0 || g.ivol() == 0) std::fill(p, p + gw->numel(), T(0));
        else weight_core<T>(small->data_as<T>(), big->data_as<T>(), p, m, g);
      }
      if (gb) {
        const int64_t C = osh[1], vol = C ? go->numel() / std::max<int64_t>(N * C, 1) : 0;
        if (N == 0 || vol == 0) std::fill(gb->data_as<T>(), gb->data_as<T>() + C, T(0));
        else bias_grad<T>(go->data_as<T>(), gb->data_as<T>(), N, C, vol);
      }
    }
  });
  auto back = [&](Tensor t) { return t && t->dtype != dt ? to_dtype(t, dt) : t; };
  if (gi && !P.batched) gi = squeeze_dims(gi, {0});
  if (gi && channels_last) gi = to_channels_last(gi);  // the input's format, as torch
  if (gw && is_channels_last(weight)) gw = to_channels_last(gw);  // the weight's
  return {back(gi), back(gw), back(gb)};
}

}  // namespace ember
