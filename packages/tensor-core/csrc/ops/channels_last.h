// channels_last.h - torch's channels_last memory format for 4-d (N, C, H, W) tensors: the same
// sizes with C innermost, strides (H*W*C, 1, W*C, C). The ops that keep it (convolution through
// oneDNN, batch norm) read and write such tensors in place; elementwise ops keep any layout.
#pragma once

#include "core/tensor.h"

namespace ember {

inline Shape channels_last_strides(const Shape& s) {
  return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}

// Laid out as channels_last (a dim of size 1 may have any stride) and not also contiguous: the
// tensors torch's suggest_memory_format calls channels_last.
inline bool is_channels_last(const Tensor& t) {
  if (t->dim() != 4 || t->is_contiguous()) return false;
  const Shape want = channels_last_strides(t->sizes);
  for (int i = 0; i < 4; ++i)
    if (t->sizes[i] != 1 && t->strides[i] != want[i]) return false;
  return true;
}

inline Tensor empty_channels_last(const Shape& sizes, ScalarType dtype) {
  return empty_strided(sizes, channels_last_strides(sizes), dtype);
}

// t itself when it is channels_last already, else a channels_last copy of it.
inline Tensor to_channels_last(const Tensor& t) {
  if (is_channels_last(t)) return t;
  Tensor r = empty_channels_last(t->sizes, t->dtype);
  copy_(r, t);
  return r;
}

}  // namespace ember
