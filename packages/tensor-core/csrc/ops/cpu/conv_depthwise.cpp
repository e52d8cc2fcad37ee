// conv_depthwise.cpp - depthwise convolution (one big-side and one small-side channel per group),
// forward and both gradients, by direct loops; called by ops/conv.cpp. Compiled once per CPU
// capability (kernel.h).
//
// The channels are the vector lanes, as in oneDNN's blocked layouts: a block of kLanes<T>
// channels of one sample is packed into a zero-padded, position-major buffer P[d][h][w][lane], so
// that every tap of every output position is one multiply-add of kLanes<T> contiguous values
// with a vector of the block's weights, whatever the stride, dilation or plane size (MobileNet's
// planes are 2x2 to 32x32: too small to vectorise along a row). Packing and unpacking are the
// only strided accesses, O(input + output) against the taps' O(output * kernel).
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/iterator.h"
#include "ops/conv_geometry.h"
#include "runtime/parallel.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <typename T> constexpr int64_t kLanes = 64 / sizeof(T);  // one AVX-512 register

// The padded block buffer: the extent the taps read, (Dp, Hp, Wp) positions of kLanes values.
struct Block {
  int64_t Dp, Hp, Wp;
  explicit Block(const ConvGeometry& g) {
    int64_t* ext[3] = {&Dp, &Hp, &Wp};
    for (int i = 0; i < 3; ++i) *ext[i] = (g.O[i] - 1) * g.s[i] + (g.K[i] - 1) * g.d[i] + 1;
  }
  int64_t positions() const { return Dp * Hp * Wp; }
};

// P[pos][lane] <- planes c0 .. c0+lanes of `big` (N, C, I...) for sample n, zero elsewhere. The
// lanes are the inner loop, so the stores are contiguous (the loads stride across planes).
template <typename T>
void pack(const ConvGeometry& g, const Block& b, const T* plane0, int64_t ivol, int lanes, T* P) {
  constexpr int64_t L = kLanes<T>;
  std::fill(P, P + b.positions() * L, T(0));
  const int64_t n2 = std::min(g.I[2], b.Wp - g.p[2]);
  for (int64_t i0 = 0; i0 < g.I[0] && i0 + g.p[0] < b.Dp; ++i0)
    for (int64_t i1 = 0; i1 < g.I[1] && i1 + g.p[1] < b.Hp; ++i1) {
      const T* xr = plane0 + (i0 * g.I[1] + i1) * g.I[2];
      T* dst = P + (((i0 + g.p[0]) * b.Hp + i1 + g.p[1]) * b.Wp + g.p[2]) * L;
      if (lanes == L) {
        for (int64_t i2 = 0; i2 < n2; ++i2)
          for (int64_t l = 0; l < L; ++l) dst[i2 * L + l] = xr[l * ivol + i2];
      } else {
        for (int64_t i2 = 0; i2 < n2; ++i2)
          for (int l = 0; l < lanes; ++l) dst[i2 * L + l] = xr[l * ivol + i2];
      }
    }
}

// planes (lanes of them, ovol apart) <- Y[o][lane]: the planes' rows are the inner loop, so the
// stores are contiguous.
template <typename T> void unpack_outputs(const T* Y, int64_t ovol, int lanes, T* plane0) {
  constexpr int64_t L = kLanes<T>;
  for (int l = 0; l < lanes; ++l) {
    T* y = plane0 + l * ovol;
    for (int64_t o = 0; o < ovol; ++o) y[o] = Y[o * L + l];
  }
}

// Y[o][lane] <- planes: the gradient of unpack_outputs's layout.
template <typename T> void pack_outputs(const T* plane0, int64_t ovol, int lanes, T* Y) {
  constexpr int64_t L = kLanes<T>;
  if (lanes < L) std::fill(Y, Y + ovol * L, T(0));
  for (int64_t o = 0; o < ovol; ++o)
    for (int l = 0; l < lanes; ++l) Y[o * L + l] = plane0[l * ovol + o];
}

// The adjoint of pack: planes <- P's positions inside the input (positions the taps never read
// get 0).
template <typename T>
void unpack(const ConvGeometry& g, const Block& b, const T* P, int64_t ivol, int lanes, T* plane0) {
  constexpr int64_t L = kLanes<T>;
  for (int l = 0; l < lanes; ++l) {
    T* x = plane0 + l * ivol;
    std::fill(x, x + ivol, T(0));
    for (int64_t i0 = 0; i0 < g.I[0] && i0 + g.p[0] < b.Dp; ++i0)
      for (int64_t i1 = 0; i1 < g.I[1] && i1 + g.p[1] < b.Hp; ++i1) {
        T* xr = x + (i0 * g.I[1] + i1) * g.I[2];
        const T* src = P + (((i0 + g.p[0]) * b.Hp + i1 + g.p[1]) * b.Wp + g.p[2]) * L + l;
        const int64_t n = std::min(g.I[2], b.Wp - g.p[2]);
        for (int64_t i2 = 0; i2 < n; ++i2) xr[i2] = src[i2 * L];
      }
  }
}

// Wb[tap][lane] <- W[c0 + lane][tap], zero for lanes past the block's channels.
template <typename T> void pack_weights(const T* W, int64_t kvol, int lanes, T* Wb) {
  constexpr int64_t L = kLanes<T>;
  std::fill(Wb, Wb + kvol * L, T(0));
  for (int l = 0; l < lanes; ++l)
    for (int64_t t = 0; t < kvol; ++t) Wb[t * L + l] = W[l * kvol + t];
}

// Calls body(output position index, its first tap's offset into P) for every output position.
template <typename F> void over_outputs(const ConvGeometry& g, const Block& b, const F& body) {
  int64_t o = 0;
  for (int64_t o0 = 0; o0 < g.O[0]; ++o0)
    for (int64_t o1 = 0; o1 < g.O[1]; ++o1)
      for (int64_t o2 = 0; o2 < g.O[2]; ++o2, ++o)
        body(o, ((o0 * g.s[0]) * b.Hp + o1 * g.s[1]) * b.Wp + o2 * g.s[2]);
}

// Offsets (in positions) of the taps from an output position's first tap.
std::vector<int64_t> tap_offsets(const ConvGeometry& g, const Block& b) {
  std::vector<int64_t> off;
  for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
    for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
      for (int64_t k2 = 0; k2 < g.K[2]; ++k2)
        off.push_back(((k0 * g.d[0]) * b.Hp + k1 * g.d[1]) * b.Wp + k2 * g.d[2]);
  return off;
}

// What the three passes share: the packed block's extent, the taps' offsets in it, the sizes.
template <typename T> struct Plan {
  static constexpr int64_t L = kLanes<T>;
  const ConvGeometry& g;
  const Block b;
  const std::vector<int64_t> taps;
  const int64_t C, kvol, ivol, ovol, blocks;  // blocks of L channels
  Plan(const ConvGeometry& geo, int64_t channels)
      : g(geo), b(geo), taps(tap_offsets(geo, b)), C(channels), kvol(geo.kvol()), ivol(geo.ivol()),
        ovol(geo.ovol()), blocks((channels + L - 1) / L) {}
  int lanes(int64_t c0) const { return static_cast<int>(std::min(L, C - c0)); }

  // body(n, c0, P, Wb, Y) for every (sample, block of channels from c0), over the pool, with the
  // chunk's buffers: P the packed input positions, Wb the block's weights, Y the outputs.
  template <typename F> void over_sample_blocks(int64_t N, const F& body) const {
    const int64_t grain = grain_for(L * ovol * kvol);
    parallel_for(0, N * blocks, grain, [&](int64_t w0, int64_t w1) {
      std::vector<T> P(static_cast<size_t>(b.positions() * L)), Wb(static_cast<size_t>(kvol * L));
      std::vector<T> Y(static_cast<size_t>(ovol * L));
      for (int64_t w = w0; w < w1; ++w)
        body(w / blocks, (w % blocks) * L, P.data(), Wb.data(), Y.data());
    });
  }
};

template <typename T>
void forward_planes(const T* big, const T* W, T* small, int64_t N, int64_t C, const ConvGeometry& g) {
  constexpr int64_t L = kLanes<T>;
  const Plan<T> p(g, C);
  p.over_sample_blocks(N, [&](int64_t n, int64_t c0, T* P, T* Wb, T* Y) {
    const int lanes = p.lanes(c0);
    pack(g, p.b, big + (n * C + c0) * p.ivol, p.ivol, lanes, P);
    pack_weights(W + c0 * p.kvol, p.kvol, lanes, Wb);
    over_outputs(g, p.b, [&](int64_t o, int64_t first) {
      T acc[L] = {};
      const T* src = P + first * L;
      for (int64_t t = 0; t < p.kvol; ++t) {
        const T* v = src + p.taps[t] * L;
        const T* wt = Wb + t * L;
        for (int64_t l = 0; l < L; ++l) acc[l] += wt[l] * v[l];
      }
      T* yo = Y + o * L;
      for (int64_t l = 0; l < L; ++l) yo[l] = acc[l];
    });
    unpack_outputs(Y, p.ovol, lanes, small + (n * C + c0) * p.ovol);
  });
}

template <typename T>
void adjoint_planes(const T* small, const T* W, T* big, int64_t N, int64_t C, const ConvGeometry& g) {
  constexpr int64_t L = kLanes<T>;
  const Plan<T> p(g, C);
  p.over_sample_blocks(N, [&](int64_t n, int64_t c0, T* P, T* Wb, T* Y) {
    const int lanes = p.lanes(c0);
    std::fill(P, P + p.b.positions() * L, T(0));
    pack_weights(W + c0 * p.kvol, p.kvol, lanes, Wb);
    pack_outputs(small + (n * C + c0) * p.ovol, p.ovol, lanes, Y);
    over_outputs(g, p.b, [&](int64_t o, int64_t first) {
      const T* go = Y + o * L;
      T* dst = P + first * L;
      for (int64_t t = 0; t < p.kvol; ++t) {
        T* v = dst + p.taps[t] * L;
        const T* wt = Wb + t * L;
        for (int64_t l = 0; l < L; ++l) v[l] += wt[l] * go[l];
      }
    });
    unpack(g, p.b, P, p.ivol, lanes, big + (n * C + c0) * p.ivol);
  });
}

template <typename T>
void weight_planes(const T* small, const T* big, T* gW, int64_t N, int64_t C, const ConvGeometry& g) {
  constexpr int64_t L = kLanes<T>;
  const Plan<T> p(g, C);
  // One block of channels per work item, every sample inside it: no two items share a weight.
  parallel_for(0, p.blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<T> P(static_cast<size_t>(p.b.positions() * L)), acc(static_cast<size_t>(p.kvol * L));
    std::vector<T> Y(static_cast<size_t>(p.ovol * L));
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t c0 = blk * L;
      const int lanes = p.lanes(c0);
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t n = 0; n < N; ++n) {
        pack(g, p.b, big + (n * C + c0) * p.ivol, p.ivol, lanes, P.data());
        pack_outputs(small + (n * C + c0) * p.ovol, p.ovol, lanes, Y.data());
        over_outputs(g, p.b, [&](int64_t o, int64_t first) {
          const T* go = Y.data() + o * L;
          const T* src = P.data() + first * L;
          for (int64_t t = 0; t < p.kvol; ++t) {
            const T* v = src + p.taps[t] * L;
            T* a = acc.data() + t * L;
            for (int64_t l = 0; l < L; ++l) a[l] += go[l] * v[l];
          }
        });
      }
      for (int l = 0; l < lanes; ++l)
        for (int64_t t = 0; t < p.kvol; ++t) gW[(c0 + l) * p.kvol + t] = acc[t * L + l];
    }
  });
}

template <typename F> void on_float_type(ScalarType dtype, const F& f) {
  if (dtype == ScalarType::Float32) f(float{});
  else if (dtype == ScalarType::Float64) f(double{});
  else throw std::invalid_argument("depthwise convolution: float32 or float64 expected");
}

}  // namespace

void depthwise_forward(const ConvGeometry& g, int64_t N, int64_t C, ScalarType dtype,
                       const void* big, const void* weight, void* small) {
  on_float_type(dtype, [&](auto v) {
    using T = decltype(v);
    forward_planes(static_cast<const T*>(big), static_cast<const T*>(weight), static_cast<T*>(small),
                   N, C, g);
  });
}

void depthwise_adjoint(const ConvGeometry& g, int64_t N, int64_t C, ScalarType dtype,
                       const void* small, const void* weight, void* big) {
  on_float_type(dtype, [&](auto v) {
    using T = decltype(v);
    adjoint_planes(static_cast<const T*>(small), static_cast<const T*>(weight), static_cast<T*>(big),
                   N, C, g);
  });
}

void depthwise_weight(const ConvGeometry& g, int64_t N, int64_t C, ScalarType dtype,
                      const void* small, const void* big, void* grad_weight) {
  on_float_type(dtype, [&](auto v) {
    using T = decltype(v);
    weight_planes(static_cast<const T*>(small), static_cast<const T*>(big),
                  static_cast<T*>(grad_weight), N, C, g);
  });
}

}  // namespace ember::EMBER_CPU_NS
