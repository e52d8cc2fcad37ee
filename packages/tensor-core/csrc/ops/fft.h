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

// ATen's _fft_r2c for one dim, the last, of a power-of-two length, one-sided (else
// NotImplementedError): the DFT of a float32/float64 tensor's rows (n >= 2 points), its n / 2 + 1
// non-negative frequencies, scaled as fft_c2c_pow2's; computed as an n/2-point complex FFT of
// the rows' pairs of points and a split into the even and odd points' spectra. A new tensor.
Tensor fft_r2c_pow2(const Tensor& self, const std::vector<int64_t>& dims, int64_t normalization,
                    bool onesided);

// ATen's _fft_c2r for one dim, the last, with last_dim_size n a power of two >= 2 (else
// NotImplementedError): the real signal of n points whose one-sided spectrum is self's n / 2 + 1
// values along that dim (complex64/complex128; the imaginary parts of the first and the last
// are ignored), scaled by normalization as fft_c2c_pow2's inverse. A new tensor.
Tensor fft_c2r_pow2(const Tensor& self, const std::vector<int64_t>& dims, int64_t normalization,
                    int64_t last_dim_size);

}  // namespace ember
