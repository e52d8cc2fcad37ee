"""``torch.onnx``'s entry points, so that programs that import it run; ember has no ONNX exporter.

Programs commonly ``import torch.onnx`` at the top and export only on request (a command-line
option): the import works, and asking for an export says what is missing.
"""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, *unused_args, **unused_kwargs):
    raise NotImplementedError(
        "ember.onnx.export: ember has no ONNX exporter; save the weights with "
        "ember.save(model.state_dict(), path) and export from torch, which loads them")


def is_in_onnx_export() -> bool:
    """False: ember never traces a model for ONNX."""
    return False
