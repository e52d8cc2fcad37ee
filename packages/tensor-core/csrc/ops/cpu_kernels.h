// cpu_kernels.h - THE list of the kernels compiled once per CPU capability (the files in ops/cpu/),
// and the table through which the ops call them.
//
// setup.py compiles each file of ops/cpu/ once per capability the build targets, with that
// capability's -march, into its own namespace (cpu_default, cpu_avx2, cpu_avx512). cpu_kernels()
// returns the table of the capability in use (runtime/cpu_capability.h), so an op calls e.g.
// cpu_kernels().unary(op, it, dtype) and runs the widest code the CPU can execute. Only the
// default copy has every dtype; the wider copies compile float32 and float64, where the vector
// width pays, and hand other dtypes to the default copy. Adding a kernel: one line here, its
// definition in a file of ops/cpu/.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "ops/op_table.h"
#include "runtime/cpu_capability.h"

namespace ember {

// Batch norm's input gradient per channel, gi = k_grad * g + k_centered * (x - mean) + k_const:
// k * g in evaluation mode, k * (g - mean(g) - xhat * mean(g * xhat)) in training, k = weight *
// invstd, xhat = (x - mean) * invstd, from the channel's sums of g and of g * (x - mean) over
// its M elements.
struct BnGradCoefficients {
  double k_grad, k_centered, k_const;
};
inline BnGradCoefficients bn_grad_coefficients(double weight, double invstd, double sum_g,
                                               double sum_g_centered, int64_t M, bool train) {
  const double k = weight * invstd;
  if (!train || !M) return {k, 0.0, 0.0};
  return {k, -k * invstd * (sum_g_centered * invstd / M), -k * (sum_g / M)};
}

class ElementwiseIter;
struct ConvGeometry;
namespace reduce_detail {
struct ReducePlan;
enum class SumKind { Sum, NanSum, Mean, Prod };
}  // namespace reduce_detail

// The twiddle tables of fft_pow2 for n points, in the real dtype: re/im hold w_n^k for k < n;
// six_re/six_im the six-step form's w_n^(k1 i2) laid out [k1][i2] (k1 < fft_six_step_rows(n),
// i2 < n / that), or null (then the kernel does not take the six-step form).
struct FftTables {
  const void *re, *im, *six_re, *six_im;
};
// Rows up to this length run as vector rows (ops/cpu/fft.cpp); longer ones by the six-step
// form over lanes, whose table (FftTables::six_re/six_im) ops/fft.cpp builds for them only.
constexpr int64_t kFftVectorRowsMax = int64_t{1} << 20;
// The six-step form's n1 (rows of the n1 x n2 matrix a row of n = 2^k points is seen as): the
// largest power of two with n1 * n1 <= n.
inline int64_t fft_six_step_rows(int64_t n) {
  int64_t n1 = 1;
  while (n1 * n1 * 4 <= n) n1 *= 2;
  return n1;
}

// X(name, return type, parameters...)
#define EMBER_CPU_KERNELS(X)                                                                      \
  /* ops/cpu/unary.cpp, binary.cpp: the op table's kernels, and a + alpha * b in one pass */  \
  X(unary, void, UnaryOp op, const ElementwiseIter& it, ScalarType compute)                       \
  X(binary, void, BinaryOp op, const ElementwiseIter& it, ScalarType compute)                     \
  X(add_alpha, void, const ElementwiseIter& it, ScalarType dtype, double alpha, bool subtract)    \
  X(fused_multiply_add, bool, void) /* whether add_alpha rounds once (this copy has FMA) */       \
  /* float32/64 <-> float16/bfloat16 copies (one of dst, src reduced); binary.cpp */             \
  X(convert_reduced_float, void, const ElementwiseIter& it, ScalarType dst, ScalarType src)      \
  /* ops/cpu/reduce.cpp: the arithmetic reductions over a plan (ops/reduce.h) */                  \
  X(sum, void, reduce_detail::SumKind kind, const reduce_detail::ReducePlan& plan,                \
    const Tensor& in, const Tensor& out, int64_t reduced)                                         \
  X(count, void, bool not_nan, const reduce_detail::ReducePlan& plan, const Tensor& in,           \
    const Tensor& out)                                                                            \
  X(all_any, void, bool is_all, const reduce_detail::ReducePlan& plan, const Tensor& in,          \
    const Tensor& out)                                                                            \
  X(norm, void, double p, const reduce_detail::ReducePlan& plan, const Tensor& in,                \
    const Tensor& out)                                                                            \
  X(sum_squares, void, double denom, bool take_sqrt, const reduce_detail::ReducePlan& plan,       \
    const Tensor& in, const Tensor& out)                                                          \
  /* the sum of n contiguous float16/bfloat16 values (dtype), NaNs skipped with skip_nan */      \
  X(reduced_float_sum, double, ScalarType dtype, const void* data, int64_t n, bool skip_nan)      \
  /* the (real, imaginary) sums of n contiguous complex values of the real dtype's parts */       \
  X(pair_sum, void, ScalarType real_dtype, const void* data, int64_t n, double* re_im)            \
  /* ops/cpu/softmax.cpp: contiguous float32/float64 viewed as [outer, D, inner] around dim */    \
  X(softmax, void, const Tensor& in, const Tensor& out, int64_t outer, int64_t D, int64_t inner,  \
    bool log)                                                                                     \
  X(softmax_backward, void, const Tensor& grad_out, const Tensor& out, const Tensor& grad_in,     \
    int64_t outer, int64_t D, int64_t inner, bool log)                                            \
  X(logsumexp_rows, void, const Tensor& rows, const Tensor& out, int64_t n, int64_t D)          \
  /* one attention matrix's L x S scores (ops/attention.cpp) in place: each row's softmax, */    \
  /* entries past the causal diagonal 0, the row's logsumexp into lse[r] */                      \
  X(attention_softmax_rows, void, ScalarType dtype, void* scores, int64_t L, int64_t S,          \
    bool causal, void* lse)                                                                       \
  /* its backward: weights (L x S scores in) = exp(scores - lse), grad_scores (L x S, grad_out */  \
  /* times value^T in) = weights * (grad_scores - rowsum(grad_out * out)) * scale */              \
  X(attention_backward_rows, void, ScalarType dtype, void* weights, void* grad_scores, int64_t L,   \
    int64_t S, bool causal, const void* lse, const void* grad_out, int64_t ldg, const void* out,   \
    int64_t ldo, int64_t Ev, double scale)                                                        \
  /* ops/cpu/fft.cpp: complex FFTs of n = 2^k points along the middle dim of contiguous */     \
  /* interleaved [outer][n][inner] data, out of place or in place (in == out), scaled     */     \
  /* (FftTables below)                                                                    */     \
  X(fft_pow2, void, ScalarType real_dtype, const void* in, void* out, int64_t n, int64_t outer,  \
    int64_t inner, bool inverse, double scale, const FftTables& tables)                          \
  /* the one-sided spectrum [rows][h + 1] of 2h real points per row from the h-point FFT     */     \
  /* [rows][h] of their pairs read as complex values; wr/wi: w_2h^k (ops/cpu/fft.cpp)       */     \
  X(fft_r2c_split, void, ScalarType real_dtype, const void* z, void* x, int64_t h, int64_t rows,  \
    double scale, const void* wr, const void* wi)                                                 \
  /* its inverse's first step: from the one-sided [rows][h + 1], the [rows][h] values whose   */     \
  /* inverse h-point FFT is the real signal's, unnormalised, read as complex values            */     \
  X(fft_c2r_join, void, ScalarType real_dtype, const void* x, void* z, int64_t h, int64_t rows,   \
    const void* wr, const void* wi)                                                               \
  /* ops/cpu/conv_depthwise.cpp: one channel per group, float32/float64 (ops/conv.cpp) */         \
  X(depthwise_forward, void, const ConvGeometry& g, int64_t N, int64_t C, ScalarType dtype,       \
    const void* big, const void* weight, void* small)                                             \
  X(depthwise_adjoint, void, const ConvGeometry& g, int64_t N, int64_t C, ScalarType dtype,       \
    const void* small, const void* weight, void* big)                                             \
  X(depthwise_weight, void, const ConvGeometry& g, int64_t N, int64_t C, ScalarType dtype,        \
    const void* small, const void* big, void* grad_weight)                                        \
  /* ops/cpu/max_pool.cpp: float32/float64 planes, dilation 1; geometry = IH, IW, OH, OW, KH, KW, \
     SH, SW, PH, PW; indices may be null (not written) */                                         \
  X(max_pool2d, void, ScalarType dtype, const void* input, void* output, int64_t* indices,        \
    int64_t planes, const int64_t* geometry)                                                      \
  /* the same over channels_last (N, H, W, C) input, output and indices */                        \
  X(max_pool2d_channels_last, void, ScalarType dtype, const void* input, void* output,             \
    int64_t* indices, int64_t N, int64_t C, const int64_t* geometry)                              \
  /* ops/cpu/batch_norm.cpp: per-channel passes over a contiguous (N, C, inner) tensor */          \
  X(batch_norm_stats, void, ScalarType dtype, const void* input, int64_t N, int64_t C,             \
    int64_t inner, double* mean, double* m2)                                                      \
  X(channel_affine, void, ScalarType dtype, const void* input, void* output, int64_t N, int64_t C, \
    int64_t inner, const double* scale, const double* shift)                                      \
  /* the backward, channel by channel (its sums, then its input gradient while the channel's   \
     rows are in cache); grad_input may be null; weight null is ones; coefficients of           \
     bn_grad_coefficients */                                                                    \
  X(batch_norm_backward, void, ScalarType dtype, const void* grad_out, const void* input,         \
    void* grad_input, int64_t N, int64_t C, int64_t inner, const double* mean,                    \
    const double* invstd, const double* weight, bool train, double* sum_g,                        \
    double* sum_g_centered)                                                                       \
  /* the same passes over a channels_last tensor seen as (rows = N*H*W, C), C innermost */       \
  X(batch_norm_stats_cl, void, ScalarType dtype, const void* input, int64_t rows, int64_t C,       \
    double* mean, double* m2)                                                                     \
  X(channel_affine_cl, void, ScalarType dtype, const void* input, void* output, int64_t rows,      \
    int64_t C, const double* scale, const double* shift)                                          \
  X(batch_norm_grad_sums_cl, void, ScalarType dtype, const void* grad_out, const void* input,     \
    int64_t rows, int64_t C, const double* mean, double* sum_g, double* sum_g_centered)           \
  X(batch_norm_grad_input_cl, void, ScalarType dtype, const void* grad_out, const void* input,    \
    void* grad_input, int64_t rows, int64_t C, const double* mean, const double* k_grad,          \
    const double* k_centered, const double* k_const)                                             \
  /* ops/cpu/activation.cpp: clamp with number bounds; ReLU's and hardtanh's gradients */         \
  X(clamp_scalar, void, const ElementwiseIter& it, ScalarType dtype, bool has_min,                \
    double min_value, bool has_max, double max_value)                                             \
  X(threshold_backward, void, const ElementwiseIter& it, ScalarType dtype, double threshold)      \
  X(hardtanh_backward, void, const ElementwiseIter& it, ScalarType dtype, double min_value,       \
    double max_value)                                                                             \
  /* ops/cpu/nn_rows.cpp: contiguous float32/float64 (other dtypes: nothing is done) */            \
  X(gelu, void, const Tensor& in, const Tensor& out, bool tanh_approx)                            \
  X(gelu_backward, void, const Tensor& grad_out, const Tensor& in, const Tensor& grad_in,          \
    bool tanh_approx)                                                                             \
  /* rows of D; mean/rstd (M) written in the input's dtype; weight/bias may be null */            \
  X(layer_norm_rows, void, const Tensor& in, const Tensor& weight, const Tensor& bias,            \
    const Tensor& out, const Tensor& mean, const Tensor& rstd, int64_t M, int64_t D, double eps)  \
  /* any of grad_in, grad_weight, grad_bias may be null (not computed) */                         \
  X(layer_norm_backward_rows, void, const Tensor& grad_out, const Tensor& in, const Tensor& mean, \
    const Tensor& rstd, const Tensor& weight, const Tensor& grad_in, const Tensor& grad_weight,   \
    const Tensor& grad_bias, int64_t M, int64_t D)                                               \
  /* ops/cpu/packed_gemm.cpp: C (M x N) = A (M x K) @ B with B packed once into panels of      \
     packed_panel_width(dtype) columns (0: this copy has no such kernel; use a GEMM); the       \
     panels hold K x width floats each, ceil(N / width) of them; B[k][n] at                     \
     B + k * row_stride + n * col_stride */                                                      \
  X(packed_panel_width, int64_t, ScalarType dtype)                                                \
  X(pack_panels, void, const float* B, int64_t row_stride, int64_t col_stride, int64_t K,         \
    int64_t N, float* panels)                                                                     \
  X(packed_gemm, void, const float* A, int64_t lda, const float* panels, int64_t M, int64_t N,    \
    int64_t K, float* C, int64_t ldc)                                                             \
  /* ops/cpu/rnn_rows.cpp: one step of ops/rnn_layer.cpp's LSTM/GRU, (N, *) row views */         \
  X(rnn_step_forward, void, bool lstm, const Tensor& xg, const Tensor& hg, const Tensor& b_ih,    \
    const Tensor& b_hh, const Tensor& h_prev, const Tensor& c_prev, const Tensor& ws,            \
    const Tensor& out)                                                                            \
  X(rnn_step_backward, void, bool lstm, const Tensor& grad_out, const Tensor& ws,                 \
    const Tensor& h_prev, const Tensor& c_prev, const Tensor& carry, const Tensor& direct,        \
    const Tensor& dc, const Tensor& d_in, const Tensor& d_hid)

#define EMBER_CPU_KERNEL_DECLARE(name, ret, ...) ret name(__VA_ARGS__);
namespace cpu_default { EMBER_CPU_KERNELS(EMBER_CPU_KERNEL_DECLARE) }
namespace cpu_avx2 { EMBER_CPU_KERNELS(EMBER_CPU_KERNEL_DECLARE) }
namespace cpu_avx512 { EMBER_CPU_KERNELS(EMBER_CPU_KERNEL_DECLARE) }
#undef EMBER_CPU_KERNEL_DECLARE

struct CpuKernels {
#define EMBER_CPU_KERNEL_FIELD(name, ret, ...) ret (*name)(__VA_ARGS__);
  EMBER_CPU_KERNELS(EMBER_CPU_KERNEL_FIELD)
#undef EMBER_CPU_KERNEL_FIELD
};

// The table of a capability this build has (any other gives the default one's).
const CpuKernels& cpu_kernels_for(CpuCapability c);

// The table of the capability in use.
inline const CpuKernels& cpu_kernels() {
  static const CpuKernels& table = cpu_kernels_for(cpu_capability());
  return table;
}

}  // namespace ember
