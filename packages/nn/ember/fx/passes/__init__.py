"""Graph passes shipped with ember.fx (torch.fx.passes' names)."""

from . import shape_prop  # noqa: F401
