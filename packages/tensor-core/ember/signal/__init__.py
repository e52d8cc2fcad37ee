"""ember.signal: torch.signal (its ``windows``)."""

from ember.signal import windows

__all__ = ["windows"]
