// elementwise.h: entry points of the elementwise ops declared in op_table.h. They apply
// PyTorch's type promotion, broadcasting and in-place / out= rules, convert operands to the
// compute dtype, and run the kernel from the table through ElementwiseIter.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "ops/op_table.h"

namespace ember {

// A binary op's operand: a tensor or a Python number (which takes part in promotion by
// category only, like PyTorch's wrapped numbers).
struct Operand {
  Tensor t;
  Scalar s;
  bool is_scalar = false;
  Operand(Tensor tensor) : t(std::move(tensor)) {}  // NOLINT(implicit)
  Operand(Scalar scalar) : s(scalar), is_scalar(true) {}  // NOLINT(implicit)
};

ScalarType get_default_dtype();
void set_default_dtype(ScalarType t);

// torch.result_type over tensors and scalars.
ScalarType result_type(const std::vector<Operand>& operands);

// The dtype an op computes in and the dtype it returns (torch's rules), raising torch's error
// for a dtype the op refuses. binary_dtypes takes the operands' result_type; a bool `common`
// for add/mul/max/min (which binary() runs as logical_or/logical_and) gives bool.
struct ElementwiseDtypes {
  ScalarType compute, result;
};
ElementwiseDtypes unary_dtypes(UnaryOp op, ScalarType input);
ElementwiseDtypes binary_dtypes(BinaryOp op, const Operand& other, ScalarType common);
// The ops that divide integers (an integer divisor of zero raises ZeroDivisionError).
bool is_integer_division(BinaryOp op);

// `out` null: allocate. out == x: in-place (checked like PyTorch: castable, no overlap).
// torch's own out= rules of some unary ops (signbit: a bool out=; floor, abs, ...: an out= of
// the result's dtype), for a caller that writes out= itself.
void check_unary_out(UnaryOp op, const Tensor& x, const Tensor& out);
Tensor unary(UnaryOp op, const Tensor& x, const Tensor& out = nullptr);
Tensor binary(BinaryOp op, const Operand& a, const Operand& b, const Tensor& out = nullptr);
Tensor binary_inplace(BinaryOp op, const Tensor& self, const Operand& other);
// add/sub with alpha != 1 on a floating common dtype, as torch's kernel: a + alpha * b in one
// pass, fused (one rounding) where the CPU kernels in use have FMA (fused_multiply_add()), in
// float32 for float16/bfloat16 with alpha rounded to the dtype. Null for integral and bool dtypes
// (the caller folds alpha into b, exact there).
Tensor add_alpha(BinaryOp op, const Operand& a, const Operand& b, Scalar alpha,
                 const Tensor& out);
// Whether add_alpha rounds once: the kernels of the CPU capability in use have FMA.
bool fused_multiply_add();

// The op table's kernels, at the CPU capability in use (ops/cpu_kernels.h, ops/cpu/).
class ElementwiseIter;
void run_unary_kernel(UnaryOp op, const ElementwiseIter& it, ScalarType compute);
// The complex kernels (ops/complex_kernels.cpp), for the ops of EMBER_COMPLEX_*_OPS.
void run_complex_unary_kernel(UnaryOp op, const ElementwiseIter& it, ScalarType dt);
void run_complex_binary_kernel(BinaryOp op, const ElementwiseIter& it, ScalarType dt);
void run_conj_kernel(const ElementwiseIter& it, ScalarType dt);
// The sum of a contiguous complex tensor's values, in double (ops/complex_kernels.cpp).
std::complex<double> complex_sum_contiguous(const Tensor& x);
// The complex conjugate, written out; a copy of a real tensor.
Tensor conj_physical(const Tensor& x);
void run_binary_kernel(BinaryOp op, const ElementwiseIter& it, ScalarType compute);

// Copy with dtype conversion (copy_kernels.cpp).
void run_copy_kernel(const ElementwiseIter& it, ScalarType dst, ScalarType src);

// Ternary and parametrised elementwise ops.
Tensor where(const Tensor& cond, const Operand& a, const Operand& b);
Tensor lerp(const Tensor& start, const Tensor& end, const Operand& weight, const Tensor& out = nullptr);
Tensor clamp(const Tensor& x, const Operand* lo, const Operand* hi, const Tensor& out = nullptr);

// The gradients of relu (threshold 0) and hardtanh/relu6, as torch's aten ops: grad_output where
// `self` is above the threshold (strictly inside (min_val, max_val)), else 0; one pass
// (ops/cpu/activation.cpp). `self` may be the input or the result (both give the same mask).
Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, double threshold);
Tensor hardtanh_backward(const Tensor& grad_output, const Tensor& self, double min_val,
                         double max_val);
Tensor nan_to_num(const Tensor& x, double nan, const double* posinf, const double* neginf, const Tensor& out = nullptr);
Tensor round_decimals(const Tensor& x, int64_t decimals, const Tensor& out = nullptr);
// log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given (not null, >= 0).
Tensor logit(const Tensor& x, const double* eps, const Tensor& out = nullptr);

}  // namespace ember
