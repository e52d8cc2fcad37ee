// fft.h: complex FFTs of power-of-two lengths on the CPU (ops/fft.cpp).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace ember {

// ATen's _fft_c2c for power-of-two lengths: the DFT of a complex64/complex128 tensor along each
// of dims (all of power-of-two length, else NotImplementedError), scaled by normalization 0
// (none), 1 (1/sqrt(n)) or 2 (1/n) per dim; forward: exp(-2 pi i jk/n), else its conjugate. A
// new contiguous tensor.
Tensor fft_c2c_pow2(const Tensor& self, const std::vector<int64_t>& dims, int64_t normalization,
                    bool forward);

}  // namespace ember
