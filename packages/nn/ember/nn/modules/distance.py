"""torch.nn.modules.distance's path (the classes live in ``flatten``)."""

from .flatten import CosineSimilarity, PairwiseDistance

__all__ = ["CosineSimilarity", "PairwiseDistance"]
