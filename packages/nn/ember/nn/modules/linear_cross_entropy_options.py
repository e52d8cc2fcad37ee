"""torch.nn.LinearCrossEntropyOptions: the settings of torch's chunked linear + cross-entropy.

ember computes ``linear_cross_entropy`` by its reference path (the logits, then
cross_entropy); the options are accepted, validated as torch does, and otherwise unused.
"""

from __future__ import annotations

import dataclasses

__all__ = ["LinearCrossEntropyOptions"]

_ACC_POLICIES = ("accurate", "balanced", "compact", "auto")


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"acc_policy must be one of {_ACC_POLICIES}, got "
                             f"{self.acc_policy!r}")
        if self.batch_chunk_size is not None and self.batch_chunk_size < 1:
            raise ValueError(f"batch_chunk_size must be positive, got {self.batch_chunk_size}")
