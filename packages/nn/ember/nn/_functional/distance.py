"""cosine_similarity and pairwise_distance."""

from __future__ import annotations

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
