"""ember.amp: automatic mixed precision, as torch.amp.

- :class:`autocast` (``ember.autocast``): a region where the ops torch lists run in float16 or
  bfloat16 (matrix products, convolutions), in float32 (losses, norms, reductions that lose
  precision) or in their inputs' widest dtype (cat, stack, ...): CPU with bfloat16 (default) or
  float16, CUDA with float16 (default) or bfloat16. See ``autocast_mode`` for how it reaches
  every op, and ``_lists`` for the lists.
- :class:`GradScaler`: loss scaling with step skipping on inf/NaN gradients.
- :func:`custom_fwd` / :func:`custom_bwd` for custom autograd Functions.
"""

from ember.amp.autocast_mode import (  # noqa: F401
    autocast,
    custom_bwd,
    custom_fwd,
    is_autocast_available,
)
from ember.amp.grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
