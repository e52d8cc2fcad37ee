"""cosine_similarity, pairwise_distance and pdist: the core's (one implementation each)."""

from __future__ import annotations

import ember

# ---------------------------------------------------------------------------------------------
# distances

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between x1 and x2 along dim (torch's formula: the core's)."""
    return ember.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps along the last dim (the core's)."""
    return ember.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2.0):
    """The p-norm distances between the rows of an ``(N, M)`` input, for each pair ``i < j``
    in row-major order (the core's)."""
    return ember.pdist(input, p)
