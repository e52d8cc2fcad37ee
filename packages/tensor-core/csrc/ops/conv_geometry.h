// conv_geometry.h - the geometry of one convolution, shared by ops/conv.cpp and the per-capability
// kernels of ops/cpu/ (conv_depthwise.cpp).
#pragma once

#include <cstdint>

namespace ember {

// Always 3 spatial dims (missing leading dims have size 1). "Big" and "small" name the two sides
// of a convolution whatever its direction: a plain convolution reads the big side (its input)
// and writes the small one; its input gradient, and a transposed convolution, go the other way.
// I: big-side sizes, O: small-side sizes, K: kernel, s/p/d: stride, padding (before), dilation.
struct ConvGeometry {
  int64_t I[3], O[3], K[3], s[3], p[3], d[3];
  int64_t ivol() const { return I[0] * I[1] * I[2]; }
  int64_t ovol() const { return O[0] * O[1] * O[2]; }
  int64_t kvol() const { return K[0] * K[1] * K[2]; }
  // The column matrix is the big side itself (1x1 kernel, stride 1, no padding, same sizes).
  bool direct() const {
    for (int i = 0; i < 3; ++i)
      if (K[i] != 1 || s[i] != 1 || p[i] != 0 || I[i] != O[i]) return false;
    return true;
  }
};

}  // namespace ember
