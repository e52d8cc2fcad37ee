"""``ember.nn.functional``: torch.nn.functional's names over ember's core ops.

Fused core kernels: conv*, *pool*, nll_loss, batch_norm/layer_norm (native_*), embedding,
softmax/log_softmax. Everything else is composed from core ops and is differentiable through its
parts (no gradient entries of its own).

This module only re-exports. The functions live in the private package ``ember.nn._functional``,
one module per family (the sections of torch.nn.functional's documentation):

=================  ==============================================================================
``common``         shared helpers: ``_reduce``, ``_check_reduction``, ``_ntuple``, ``_size``
``activation``     relu ... glu, rrelu, softmax/log_softmax/softmin, gumbel_softmax
``dropout``        dropout, dropout1d/2d/3d, alpha_dropout
``linear``         linear, bilinear, grouped_mm
``conv``           conv*, conv_transpose*, unfold, fold
``pooling``        max/avg/adaptive pooling, lp_pool1d/2d, max_unpool1d/2d/3d
``normalization``  batch/layer/rms/group/instance/local-response norm, normalize
``sparse``         embedding, embedding_bag, one_hot
``distance``       cosine_similarity, pairwise_distance
``loss``           every loss, from l1_loss to ctc_loss
``vision``         interpolate, upsample, pixel_(un)shuffle, affine_grid, grid_sample,
                   channel_shuffle
``attention``      scaled_dot_product_attention
=================  ==============================================================================

``pad`` is the core's (``ember._padding``). The modules import ``common`` and each other (loss
uses activation, distance and sparse; normalization uses pooling; dropout uses activation's SELU
constants; attention uses dropout), never this module.
"""

from __future__ import annotations

import math  # noqa: F401  (F.math, as torch.nn.functional has it)

import ember  # noqa: F401  (F.ember, as torch.nn.functional has F.torch)
from ember._padding import pad  # noqa: F401  (re-exported: F.pad)

# Autocast (ember.amp): the functions composed here that torch's autocast lists (linear, the
# losses, layer_norm, ...) are cast as a whole inside an autocast region; outside, the wrapper
# costs one flag check.
from ember.amp.autocast_mode import wrap_functional as _wrap_for_autocast  # noqa: E402

from ._functional.activation import (  # noqa: F401
    celu,
    celu_,
    elu,
    elu_,
    gelu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
    threshold_,
)
from ._functional.attention import (  # noqa: F401
    multi_head_attention_forward,
    scaled_dot_product_attention,
)
from ._functional.conv import (  # noqa: F401
    conv1d,
    conv2d,
    conv3d,
    conv_tbc,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from ._functional.distance import cosine_similarity, pairwise_distance, pdist  # noqa: F401
from ._functional.dropout import (  # noqa: F401
    alpha_dropout,
    dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from ._functional.linear import bilinear, grouped_mm, linear  # noqa: F401
from ._functional.loss import (  # noqa: F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    ctc_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    linear_cross_entropy,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ._functional.normalization import (  # noqa: F401
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    normalize,
    rms_norm,
)
from ._functional.pooling import (  # noqa: F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from ._functional.sparse import embedding, embedding_bag, one_hot  # noqa: F401
from ._functional.vision import (  # noqa: F401
    affine_grid,
    channel_shuffle,
    grid_sample,
    interpolate,
    native_channel_shuffle,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)

_wrap_for_autocast(globals())
