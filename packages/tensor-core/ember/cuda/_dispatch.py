"""The core's device hook: every op's CUDA form in one table, and :func:`dispatch`.

The op modules import their helpers from ``_ops`` and export a table each (the core ops':
``_core_ops``); only this module imports them all, so ember.cuda has no import cycle (``_ops``
used to import the modules that import it).
"""

from __future__ import annotations

from ember.cuda._bf16_ops import _NATIVE_BF16, _has_bf16, _in_float32
from ember.cuda._core_ops import OPS as CORE_OPS
from ember.cuda._index_ops import INDEX_OPS
from ember.cuda._linalg_ops import LINALG_OPS
from ember.cuda._misc_ops import MISC_OPS
from ember.cuda._nn_ops import NN_OPS
from ember.cuda._ops import device_of
from ember.cuda._optim_ops import OPTIM_OPS
from ember.cuda._shape_ops import SHAPE_OPS
from ember.cuda._sort_ops import SORT_OPS

OPS: dict = {}
for _table in (CORE_OPS, NN_OPS, INDEX_OPS, SHAPE_OPS, MISC_OPS, SORT_OPS, LINALG_OPS,
               OPTIM_OPS):
    OPS.update(_table)


def dispatch(name: str, args: tuple, kwargs: dict):
    """The core's device hook: runs op `name` on CUDA tensors."""
    impl = OPS.get(name)
    if impl is None:
        device = device_of(name, args, kwargs)
        raise NotImplementedError(
            f"ember: '{name}' has no CUDA implementation yet (its tensors are on cuda:{device}). "
            "Move them to the CPU with .cpu(), or see docs/cuda.md for the ops that run on CUDA."
        )
    if name not in _NATIVE_BF16 and _has_bf16(args, kwargs):
        result = _in_float32(impl, name, args, kwargs)
    else:
        result = impl(name, args, kwargs)
    if name[-1] == "_" and name[0] != "_":
        # Writes through array views bypass the core's version counter, which autograd reads to
        # refuse a backward through a saved tensor that was modified since.
        args[0]._bump_version()
    return result
