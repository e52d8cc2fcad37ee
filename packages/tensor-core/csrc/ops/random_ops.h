// random_ops.h: sampling ops on CPU tensors, drawing from a Generator (runtime/random.h).
//
// Streams follow PyTorch's CPU kernels (aten/src/ATen/native/cpu/DistributionTemplates.h and
// friends, the non-MKL paths) so that the same seed gives the same numbers:
//   uniform_      one 32-bit draw per element (64-bit for float64), masked to the mantissa width
//                 of the dtype (24 bits float32, 11 float16, 8 bfloat16, 53 float64), scaled.
//   normal_       contiguous tensors of >= 16 elements: uniforms for the whole tensor, then
//                 Box-Muller over blocks of 16 (the last block redone with fresh uniforms when the
//                 size is not a multiple of 16); otherwise one cached Box-Muller draw per element.
//   random_       a draw modulo the range (64-bit draws when the range needs them).
//   randperm      PyTorch's swap shuffle (random() % (n - i)) below 2^32 / 20 elements.
//   bernoulli_, exponential_, multinomial: PyTorch's default (non-MKL) kernels; PyTorch builds
//   with MKL sample these differently, so only their distributions, not their streams, agree.
// Elements are visited in memory order (dims sorted by stride), as PyTorch's TensorIterator does,
// so a transposed tensor receives the same values in the same memory slots.
// `gen` == nullptr means the default generator. The generator's mutex is held while drawing.
#pragma once

#include <optional>

#include "core/tensor.h"
#include "runtime/random.h"

namespace ember {

void uniform_(const Tensor& self, double from, double to, Generator* gen);
void normal_(const Tensor& self, double mean, double std, Generator* gen);
// Integers drawn uniformly from [0, 2^mantissa] for floating dtypes, [0, max] for integers.
void random_(const Tensor& self, Generator* gen);
// Integers drawn uniformly from [from, to); without `to`, up to the dtype's largest value.
void random_(const Tensor& self, int64_t from, std::optional<int64_t> to, Generator* gen);
void bernoulli_(const Tensor& self, double p, Generator* gen);
void bernoulli_(const Tensor& self, const Tensor& p, Generator* gen);  // p broadcasts to self
void exponential_(const Tensor& self, double lambd, Generator* gen);

Tensor randperm(int64_t n, ScalarType dtype, Generator* gen);
// Samples indices from each row of `probs` (1-d or 2-d, non-negative weights); int64 result.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen);

// normal(mean, std) with tensor arguments, PyTorch's formulation: samples from N(0, 1) (or
// N(0, std) for a float std) scaled and shifted elementwise. The result has the broadcast shape
// and the dtype of the tensor argument (mean's when both are tensors).
Tensor normal(const Tensor& mean, double std, Generator* gen);
Tensor normal(double mean, const Tensor& std, Generator* gen);
Tensor normal(const Tensor& mean, const Tensor& std, Generator* gen);

}  // namespace ember
