"""ember.functional: torch.functional's names, the same functions as ember's top-level ones
(``torch.functional.einsum`` is ``torch.einsum``). lu is deprecated in torch: not here."""

from __future__ import annotations

from ember import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    cartesian_prod,
    cdist,
    chain_matmul,
    einsum,
    istft,
    meshgrid,
    norm,
    pca_lowrank,
    split,
    stft,
    svd_lowrank,
    tensordot,
    unique,
    unique_consecutive,
    unravel_index,
)

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "istft",
           "meshgrid", "norm", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot",
           "unique", "unique_consecutive", "unravel_index"]
