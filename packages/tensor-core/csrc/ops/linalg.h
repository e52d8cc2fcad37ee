// linalg.h: matrix products with PyTorch's semantics (shape rules, dtype rules, error messages).
//
// Every product funnels into one batched GEMM driver (linalg.cpp):
//   float32/float64   OpenBLAS sgemm/dgemm (runtime/blas.h). An operand whose matrix is a
//                     row-major or transposed (column-major) block is passed as is, with the
//                     transpose flag and its leading dimension; anything else is copied to
//                     contiguous first. A column-major output is computed as C^T = B^T A^T.
//                     Batches (with broadcast batch dims taken by stride, never materialised)
//                     are one gemm call each; OpenBLAS runs its own threads inside each call.
//   float16/bfloat16  converted to float32, multiplied as above, converted back (rounded once).
//   integer dtypes    a cache-blocked i-k-j loop accumulating in unsigned 32/64-bit integers, so
//                     overflow wraps like PyTorch's; parallel over (batch, row block).
//   bool              NotImplementedError, like PyTorch.
// All operands must share one dtype (no promotion, as in PyTorch). `out` tensors are resized to
// the result's shape when they differ (PyTorch's resize_output) and must have the result's dtype.
// alpha/beta follow BLAS: with beta == 0 the input is not read (NaNs in it do not propagate).
#pragma once

#include "core/scalar.h"
#include "core/tensor.h"

namespace ember {

Tensor mm(const Tensor& a, const Tensor& b, const Tensor& out = nullptr);
Tensor bmm(const Tensor& a, const Tensor& b, const Tensor& out = nullptr);
// 1-d/2-d/batched product with batch broadcasting (torch.matmul, the @ operator).
Tensor matmul(const Tensor& a, const Tensor& b, const Tensor& out = nullptr);
Tensor mv(const Tensor& mat, const Tensor& vec, const Tensor& out = nullptr);
Tensor dot(const Tensor& a, const Tensor& b, const Tensor& out = nullptr);
Tensor vdot(const Tensor& a, const Tensor& b, const Tensor& out = nullptr);  // real dtypes: dot
Tensor inner(const Tensor& a, const Tensor& b, const Tensor& out = nullptr);
// Outer product; unlike the other products it promotes dtypes (it is an elementwise multiply).
Tensor outer(const Tensor& a, const Tensor& b, const Tensor& out = nullptr);

// beta * input + alpha * (product); input broadcasts to the product's shape.
Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, Scalar beta, Scalar alpha,
             const Tensor& out = nullptr);
Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta, Scalar alpha,
             const Tensor& out = nullptr);
Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha,
               const Tensor& out = nullptr);
// Sums the batch of products: beta * input + alpha * sum_i b1[i] @ b2[i].
Tensor addbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha,
              const Tensor& out = nullptr);


// In-place forms: self must already have the product's shape (no broadcasting), as in PyTorch.
void addmm_(const Tensor& self, const Tensor& m1, const Tensor& m2, Scalar beta, Scalar alpha);
void addmv_(const Tensor& self, const Tensor& mat, const Tensor& vec, Scalar beta, Scalar alpha);
void baddbmm_(const Tensor& self, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha);
void addbmm_(const Tensor& self, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha);

}  // namespace ember
