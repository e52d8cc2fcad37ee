"""The op lists of autocast, per device type: torch's (ATen's autocast_mode.cpp), by op name.

A name is the one an op reaches the dispatch with: a core op's row name (``mm``, ``conv2d``,
``native_layer_norm``, the LAPACK primitives ``_linalg_*`` ...) or, for the functions that ember
composes in Python, the ``ember.nn.functional`` function's name (``linear``, ``mse_loss`` ...).
Names that ember does not have (yet) are kept, so that an op added later is cast at once.

Policies:
- ``LOWER``: floating-point tensors (not float64) run in the region's dtype (float16/bfloat16);
- ``FP32``: floating-point tensors (not float64) run in float32;
- ``PROMOTE``: floating-point tensors (not float64) run in the widest of their dtypes;
- ``BANNED``: refused (CUDA's binary_cross_entropy), with torch's message.
torch's ``fp32_set_opt_dtype`` ops (softmax, sum, cumsum ... on CUDA: computed and returned in
float32 unless a dtype is given) are FP32 here: casting the input gives the same values.
"""

from __future__ import annotations

LOWER, FP32, PROMOTE, BANNED = "lower", "fp32", "promote", "banned"

# ---- CPU (torch's AutocastCPU) ----
_CPU_LOWER = """
conv1d conv2d conv3d convolution _convolution conv_tbc conv_transpose1d conv_transpose2d
conv_transpose3d bmm mm linalg_vecdot baddbmm addmm addbmm linear matmul __matmul__
__rmatmul__ prelu scaled_dot_product_attention _native_multi_head_attention mkldnn_rnn
"""
_CPU_FP32 = """
avg_pool3d binary_cross_entropy grid_sampler grid_sample polar prod quantile nanquantile stft
cdist trace view_as_complex cholesky cholesky_inverse cholesky_solve _cholesky_solve inverse
lu_solve orgqr ormqr pinverse max_pool3d max_pool3d_with_indices max_unpool2d max_unpool3d
adaptive_avg_pool3d reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d
replication_pad3d mse_loss cosine_embedding_loss nll_loss nll_loss2d nll_loss_nd
hinge_embedding_loss poisson_nll_loss smooth_l1_loss cross_entropy cross_entropy_loss l1_loss
huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss multi_margin_loss ctc_loss
kl_div multilabel_margin_loss binary_cross_entropy_with_logits fft_fft fft_ifft fft_fft2
fft_ifft2 fft_fftn fft_ifftn fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn
fft_hfft fft_ihfft linalg_cond linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals
linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product linalg_tensorinv
linalg_tensorsolve fake_quantize_per_tensor_affine geqrf _lu_with_info qr svd
triangular_solve fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d
multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex linalg_svd linalg_eig linalg_eigh
linalg_lstsq linalg_inv_ex _linalg_inv_ex _linalg_svd _linalg_qr _linalg_cholesky_ex
_linalg_eigh _linalg_lstsq _linalg_solve_ex _linalg_lu _linalg_lu_factor_ex _linalg_lu_solve
_linalg_solve_triangular _linalg_det _linalg_slogdet
"""
_CPU_PROMOTE = "stack cat concat concatenate index_copy"

# ---- CUDA (torch's AutocastCUDA) ----
_CUDA_LOWER = """
_convolution conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d
convolution prelu addmm addmv addr matmul __matmul__ __rmatmul__ einsum mm mv linalg_vecdot
linear addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell
_thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
_scaled_dot_product_flash_attention scaled_dot_product_attention
"""
_CUDA_FP32 = """
acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow softplus
layer_norm native_layer_norm group_norm frobenius_norm nuclear_norm cosine_similarity
poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d nll_loss_nd hinge_embedding_loss
kl_div l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss multilabel_margin_loss
soft_margin_loss triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits
cross_entropy dist pdist cdist renorm logsumexp interpolate upsample upsample_nearest
upsample_bilinear upsample_nearest1d upsample_nearest2d upsample_nearest3d upsample_linear1d
upsample_bilinear2d upsample_trilinear3d upsample_bicubic2d grid_sampler grid_sample polar
quantile nanquantile stft trace view_as_complex
prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum norm
"""
# cat, stack and index_copy are not listed for CUDA (they promote mixed dtypes themselves, as in
# torch, whose CUDA list dropped them while the CPU's keeps them)
_CUDA_PROMOTE = """
addcdiv addcmul atan2 bilinear cross linalg_cross dot vdot index_put scatter_add tensordot
"""
_CUDA_BANNED = "binary_cross_entropy"

BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")


def _table(*groups: tuple[str, str]) -> dict[str, str]:
    table: dict[str, str] = {}
    for names, policy in groups:
        for name in names.split():
            table[name] = policy
    return table


POLICIES: dict[str, dict[str, str]] = {
    "cpu": _table((_CPU_LOWER, LOWER), (_CPU_FP32, FP32), (_CPU_PROMOTE, PROMOTE)),
    "cuda": _table((_CUDA_LOWER, LOWER), (_CUDA_FP32, FP32), (_CUDA_PROMOTE, PROMOTE),
                   (_CUDA_BANNED, BANNED)),
}

# The ember.nn.functional functions composed in Python that are listed: they are wrapped (see
# ember.amp.autocast_mode.wrap_functional), since their parts alone would not be cast as torch
# casts the whole (``linear``'s matmul plus a float32 bias would give float32).
FUNCTIONAL = sorted({
    "linear", "bilinear", "prelu", "scaled_dot_product_attention", "layer_norm", "group_norm",
    "cosine_similarity", "softplus", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear", "grid_sample", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "kl_div", "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "poisson_nll_loss", "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "ctc_loss",
})
