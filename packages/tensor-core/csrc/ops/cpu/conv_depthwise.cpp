// conv_depthwise.cpp - depthwise convolution (one big-side and one small-side channel per group),
// forward and both gradients, by direct loops over each (sample, channel) plane; called by
// ops/conv.cpp. Compiled once per CPU capability (kernel.h): the taps' multiply-adds are long
// contiguous loops that the compiler vectorises at the capability's width.
//
// To keep the loops long and contiguous on small planes (MobileNet's are 2x2 to 32x32), the
// zero-padded input plane P is split into its stride phases, ph[a][b][r][q] = P[r*s_h + a][q*s_w + b],
// each Hq x Wq. Tap (kh, kw) of output (oh, ow) reads P[oh*s_h + kh*d_h][ow*s_w + kw*d_w], which is
// phase (kh*d_h % s_h, kw*d_w % s_w) at (oh + kh*d_h / s_h, ow + kw*d_w / s_w): on an output grid
// of O_h x Wq (the columns past O_w are scratch) every tap is one contiguous multiply-add over
// O_h*Wq elements, for any stride and dilation. Depth (3-d) is an outer loop over slices.
#include "ops/cpu/kernel.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/iterator.h"
#include "ops/conv_geometry.h"
#include "runtime/parallel.h"

namespace ember::EMBER_CPU_NS {
namespace {

struct PhasePlan {
  int64_t sh, sw, Hq, Wq, rows;  // strides, one phase's height/width, rows allocated per phase
  int64_t Ih, Iw, ph, pw, Oh, Ow;
  std::vector<int64_t> tap_phase, tap_off;  // per (kh, kw): its phase and offset in the phase
  int64_t phases() const { return sh * sw; }
  int64_t slice() const { return phases() * rows * Wq; }  // one depth slice's phases
  int64_t grid() const { return Oh * Wq; }
};

PhasePlan make_phase_plan(const ConvGeometry& g) {
  PhasePlan P;
  P.sh = g.s[1], P.sw = g.s[2], P.Ih = g.I[1], P.Iw = g.I[2], P.ph = g.p[1], P.pw = g.p[2];
  P.Oh = g.O[1], P.Ow = g.O[2];
  // The padded extent that the taps read; input beyond it is never read.
  const int64_t Hp = (g.O[1] - 1) * g.s[1] + (g.K[1] - 1) * g.d[1] + 1;
  const int64_t Wp = (g.O[2] - 1) * g.s[2] + (g.K[2] - 1) * g.d[2] + 1;
  P.Hq = (Hp + P.sh - 1) / P.sh, P.Wq = (Wp + P.sw - 1) / P.sw;
  // A tap's run of Oh*Wq elements starts at most ((K_h-1)*d_h / s_h) rows down, and may run into
  // the row after the last: one spare row.
  P.rows = std::max(P.Hq, P.Oh + (g.K[1] - 1) * g.d[1] / P.sh + 1);
  for (int64_t kh = 0; kh < g.K[1]; ++kh)
    for (int64_t kw = 0; kw < g.K[2]; ++kw) {
      const int64_t r = kh * g.d[1], c = kw * g.d[2];
      P.tap_phase.push_back((r % P.sh) * P.sw + c % P.sw);
      P.tap_off.push_back((r / P.sh) * P.Wq + c / P.sw);
    }
  return P;
}

// Padded plane position (r, c) -> its place in the phases of one slice (nullptr-free: the caller
// checks r < Hq*sh and c < Wq*sw).
inline int64_t phase_index(const PhasePlan& P, int64_t r, int64_t c) {
  return ((r % P.sh) * P.sw + c % P.sw) * P.rows * P.Wq + (r / P.sh) * P.Wq + c / P.sw;
}

// The phases of one input slice (Ih x Iw), zero where the padding is.
template <typename T> void to_phases(const PhasePlan& P, const T* x, T* phases) {
  std::fill(phases, phases + P.slice(), T(0));
  for (int64_t i = 0; i < P.Ih; ++i) {
    const int64_t r = i + P.ph;
    if (r >= P.Hq * P.sh) break;
    const T* xr = x + i * P.Iw;
    const int64_t jmax = std::min(P.Iw, P.Wq * P.sw - P.pw);
    if (P.sw == 1) {
      std::copy(xr, xr + jmax, phases + phase_index(P, r, P.pw));
    } else {
      for (int64_t j = 0; j < jmax; ++j) phases[phase_index(P, r, j + P.pw)] = xr[j];
    }
  }
}

// The adjoint of to_phases: an input slice's gradient read back out of its phases.
template <typename T> void from_phases(const PhasePlan& P, const T* phases, T* x) {
  for (int64_t i = 0; i < P.Ih; ++i) {
    const int64_t r = i + P.ph;
    T* xr = x + i * P.Iw;
    const int64_t jmax = r < P.Hq * P.sh ? std::clamp<int64_t>(P.Wq * P.sw - P.pw, 0, P.Iw) : 0;
    if (P.sw == 1 && jmax > 0) {
      const T* src = phases + phase_index(P, r, P.pw);
      std::copy(src, src + jmax, xr);
    } else {
      for (int64_t j = 0; j < jmax; ++j) xr[j] = phases[phase_index(P, r, j + P.pw)];
    }
    std::fill(xr + jmax, xr + P.Iw, T(0));  // never read by the forward: no gradient
  }
}

// out[o*Wq + w] <- grid[o*Wq + w] for the valid columns w < Ow (and the reverse, zero-filling the
// scratch columns).
template <typename T> void grid_to_plane(const PhasePlan& P, const T* grid, T* out) {
  for (int64_t o = 0; o < P.Oh; ++o) std::copy(grid + o * P.Wq, grid + o * P.Wq + P.Ow, out + o * P.Ow);
}
template <typename T> void plane_to_grid(const PhasePlan& P, const T* plane, T* grid) {
  for (int64_t o = 0; o < P.Oh; ++o) {
    std::copy(plane + o * P.Ow, plane + (o + 1) * P.Ow, grid + o * P.Wq);
    std::fill(grid + o * P.Wq + P.Ow, grid + (o + 1) * P.Wq, T(0));
  }
}

// sum a[i] * b[i] in 16 independent lanes (vectorises without reassociating one running sum).
template <typename T> T dot_lanes(const T* a, const T* b, int64_t n) {
  constexpr int L = 16;
  T lanes[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int k = 0; k < L; ++k) lanes[k] += a[i + k] * b[i + k];
  T sum = 0;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (int k = 0; k < L; ++k) sum += lanes[k];
  return sum;
}

// Calls body(id, kd) for each kernel depth kd whose input slice id, seen from output depth od, is
// inside the input.
template <typename F> void depth_taps(const ConvGeometry& g, int64_t od, const F& body) {
  for (int64_t kd = 0; kd < g.K[0]; ++kd) {
    const int64_t id = od * g.s[0] - g.p[0] + kd * g.d[0];
    if (id >= 0 && id < g.I[0]) body(id, kd);
  }
}

int64_t plane_grain(const ConvGeometry& g) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(g.ovol() * g.kvol(), 1));
}

// small[n, c] = sum over taps of W[c, k] * shifted big[n, c]
template <typename T>
void forward_planes(const T* big, const T* W, T* small, int64_t N, int64_t C, const ConvGeometry& g) {
  const PhasePlan P = make_phase_plan(g);
  const int64_t kvol = g.kvol(), khw = g.K[1] * g.K[2], grid = P.grid();
  const int64_t islice = g.I[1] * g.I[2], oslice = g.O[1] * g.O[2];
  parallel_for(0, N * C, plane_grain(g), [&](int64_t p0, int64_t p1) {
    std::vector<T> phases(static_cast<size_t>(g.I[0] * P.slice())), acc(static_cast<size_t>(grid));
    for (int64_t p = p0; p < p1; ++p) {
      const T* w = W + (p % C) * kvol;
      for (int64_t i = 0; i < g.I[0]; ++i)
        to_phases(P, big + p * g.ivol() + i * islice, phases.data() + i * P.slice());
      T* y = small + p * g.ovol();
      for (int64_t od = 0; od < g.O[0]; ++od) {
        std::fill(acc.begin(), acc.end(), T(0));
        depth_taps(g, od, [&](int64_t id, int64_t kd) {
          const T* slice = phases.data() + id * P.slice();
          for (int64_t t = 0; t < khw; ++t) {
            const T wk = w[kd * khw + t];
            const T* src = slice + P.tap_phase[t] * P.rows * P.Wq + P.tap_off[t];
            T* a = acc.data();
            for (int64_t j = 0; j < grid; ++j) a[j] += wk * src[j];
          }
        });
        grid_to_plane(P, acc.data(), y + od * oslice);
      }
    }
  });
}

// big[n, c] = the adjoint of the above: each tap's products scattered back into the phases
template <typename T>
void adjoint_planes(const T* small, const T* W, T* big, int64_t N, int64_t C, const ConvGeometry& g) {
  const PhasePlan P = make_phase_plan(g);
  const int64_t kvol = g.kvol(), khw = g.K[1] * g.K[2], grid = P.grid();
  const int64_t islice = g.I[1] * g.I[2], oslice = g.O[1] * g.O[2];
  parallel_for(0, N * C, plane_grain(g), [&](int64_t p0, int64_t p1) {
    std::vector<T> phases(static_cast<size_t>(g.I[0] * P.slice())), gy(static_cast<size_t>(grid));
    for (int64_t p = p0; p < p1; ++p) {
      const T* w = W + (p % C) * kvol;
      std::fill(phases.begin(), phases.end(), T(0));
      for (int64_t od = 0; od < g.O[0]; ++od) {
        plane_to_grid(P, small + p * g.ovol() + od * oslice, gy.data());
        depth_taps(g, od, [&](int64_t id, int64_t kd) {
          T* slice = phases.data() + id * P.slice();
          for (int64_t t = 0; t < khw; ++t) {
            const T wk = w[kd * khw + t];
            T* dst = slice + P.tap_phase[t] * P.rows * P.Wq + P.tap_off[t];
            const T* src = gy.data();
            for (int64_t j = 0; j < grid; ++j) dst[j] += wk * src[j];
          }
        });
      }
      for (int64_t i = 0; i < g.I[0]; ++i)
        from_phases(P, phases.data() + i * P.slice(), big + p * g.ivol() + i * islice);
    }
  });
}

// gW[c, k] = sum over samples and output positions of small[n, c] * shifted big[n, c]
template <typename T>
void weight_planes(const T* small, const T* big, T* gW, int64_t N, int64_t C, const ConvGeometry& g) {
  const PhasePlan P = make_phase_plan(g);
  const int64_t kvol = g.kvol(), khw = g.K[1] * g.K[2], grid = P.grid();
  const int64_t islice = g.I[1] * g.I[2], oslice = g.O[1] * g.O[2];
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(N * g.ovol() * kvol, 1));
  parallel_for(0, C, grain, [&](int64_t c0, int64_t c1) {
    std::vector<T> phases(static_cast<size_t>(g.I[0] * P.slice())), gy(static_cast<size_t>(grid));
    for (int64_t c = c0; c < c1; ++c) {
      T* gw = gW + c * kvol;
      std::fill(gw, gw + kvol, T(0));
      for (int64_t n = 0; n < N; ++n) {
        const int64_t p = n * C + c;
        for (int64_t i = 0; i < g.I[0]; ++i)
          to_phases(P, big + p * g.ivol() + i * islice, phases.data() + i * P.slice());
        for (int64_t od = 0; od < g.O[0]; ++od) {
          plane_to_grid(P, small + p * g.ovol() + od * oslice, gy.data());
          depth_taps(g, od, [&](int64_t id, int64_t kd) {
            const T* slice = phases.data() + id * P.slice();
            for (int64_t t = 0; t < khw; ++t)
              gw[kd * khw + t] +=
                  dot_lanes(gy.data(), slice + P.tap_phase[t] * P.rows * P.Wq + P.tap_off[t], grid);
          });
        }
      }
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
