"""ember.cpu.amp: torch.cpu.amp's deprecated spellings of ember.amp for the CPU."""

from __future__ import annotations

from ember.amp._device_spellings import spellings

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = spellings("cpu", "bfloat16")
