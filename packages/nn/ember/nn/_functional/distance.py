"""cosine_similarity and pairwise_distance."""

from __future__ import annotations

import ember

# ---------------------------------------------------------------------------------------------
# distances

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    w12 = (x1 * x2).sum(dim)
    w1 = (x1 * x1).sum(dim)
    w2 = (x2 * x2).sum(dim)
    return w12 / (w1 * w2).clamp(min=eps * eps).sqrt()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = max(x1.dim(), x2.dim())
    return (x1 - x2 + eps).norm(p, d - 1 if d > 0 else None, keepdim=keepdim)


def pdist(input, p=2.0):
    """The p-norm distances between the rows of an ``(N, M)`` input, for each pair ``i < j``
    in row-major order: the upper triangle of ``cdist(input, input)``, flattened."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    first = [i for i in range(n) for _ in range(i + 1, n)]
    second = [j for i in range(n) for j in range(i + 1, n)]
    if not first:
        return ember.zeros(0, dtype=input.dtype, device=input.device)
    idx = ember.tensor(first, device=input.device), ember.tensor(second, device=input.device)
    diff = input.index_select(0, idx[0]) - input.index_select(0, idx[1])
    return ember.linalg.vector_norm(diff, p, dim=1)
