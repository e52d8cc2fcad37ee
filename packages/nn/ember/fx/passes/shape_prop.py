"""``ShapeProp``: runs a GraphModule on example inputs and records each node's tensor metadata
in ``node.meta['tensor_meta']`` (torch.fx.passes.shape_prop's API)."""

from __future__ import annotations

from typing import Any, NamedTuple

import ember

from ..interpreter import Interpreter
from ..node import map_aggregate


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(t) -> TensorMetadata:
    # ember has no memory_format objects yet: the name of torch's, or None (as torch for a
    # layout that is none of them)
    memory_format = "contiguous_format" if t.is_contiguous() else None
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, tuple(t.stride()), memory_format,
                          False, {})


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` runs ``gm`` and stores ``tensor_meta`` (a
    TensorMetadata, or a structure of them for tuple results) and ``type`` on every node."""

    def run_node(self, n):
        result = super().run_node(n)
        found = False

        def extract(obj):
            nonlocal found
            if isinstance(obj, ember.Tensor):
                found = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        return super().run(*args)
