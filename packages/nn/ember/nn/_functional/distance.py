"""cosine_similarity, pairwise_distance and pdist: the core's (one implementation each)."""

from __future__ import annotations

import ember

# ---------------------------------------------------------------------------------------------
# distances

# (re-exported, not wrapped: F.cosine_similarity is ember.cosine_similarity, as in torch)
cosine_similarity = ember.cosine_similarity
pairwise_distance = ember.pairwise_distance
pdist = ember.pdist
