"""Memory formats (torch.memory_format): the order in which a tensor's dims lie in memory.

ember's tensors are strided, so a memory format is a choice of strides: ``channels_last`` keeps
an (N, C, H, W) tensor with C innermost (strides (HWC, 1, WC, C)), ``channels_last_3d`` the same
for (N, C, D, H, W). ``contiguous(memory_format=...)``, ``is_contiguous(memory_format=...)``,
``clone(memory_format=...)`` and ``to(memory_format=...)`` read them (the core's bindings call
the functions below); kernels take any strides, so a channels-last tensor computes the same
values as a contiguous one.
"""

from __future__ import annotations

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format", "legacy_contiguous_format"]


class memory_format:  # noqa: N801 - torch's name
    """A memory format (``ember.contiguous_format``, ``channels_last``, ``channels_last_3d``,
    ``preserve_format``); compared by identity, as torch's."""

    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):  # the formats below are the only ones, as torch's
        raise TypeError("cannot create 'ember.memory_format' instances")

    @classmethod
    def _make(cls, name: str) -> memory_format:
        fmt = object.__new__(cls)
        fmt._name = name
        return fmt

    def __repr__(self) -> str:
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name  # pickles as the module-level object of that name


contiguous_format = memory_format._make("contiguous_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")
preserve_format = memory_format._make("preserve_format")
legacy_contiguous_format = contiguous_format  # torch's alias

# dims from outermost to innermost, and the rank each format needs
_ORDER = {channels_last: ((0, 2, 3, 1), 4), channels_last_3d: ((0, 2, 3, 4, 1), 5)}


def _check(fmt) -> None:
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be an ember.memory_format, not {type(fmt).__name__}")


def _is_contiguous(t, fmt) -> bool:
    """t.is_contiguous(memory_format=fmt): size-1 dims may have any stride, as in torch."""
    _check(fmt)
    if fmt is contiguous_format:
        return t.is_contiguous()
    if fmt is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    order, rank = _ORDER[fmt]
    if t.dim() != rank:
        return False
    shape, stride = tuple(t.shape), t.stride()
    expected = 1
    for d in reversed(order):
        if shape[d] != 1 and stride[d] != expected:
            return False
        expected *= shape[d]
    return True


def _contiguous(t, fmt):
    """t.contiguous(memory_format=fmt): t itself when it is laid out so already, else a copy."""
    _check(fmt)
    if fmt is contiguous_format or fmt is preserve_format:
        return t.contiguous()
    order, rank = _ORDER[fmt]
    if t.dim() != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    if _is_contiguous(t, fmt):
        return t
    inverse = [0] * rank
    for i, d in enumerate(order):
        inverse[d] = i
    return t.permute(*order).contiguous().permute(*inverse)


def _clone(t, fmt):
    """t.clone(memory_format=fmt): a copy laid out in fmt (preserve_format: t's own layout
    when it is dense, as the core's clone keeps)."""
    _check(fmt)
    if fmt is preserve_format:
        return t.clone()
    if _is_contiguous(t, fmt):
        return t.clone()  # the core's clone keeps a dense layout
    return _contiguous(t, fmt)


def _to(t, fmt):
    """The memory_format step of t.to(..., memory_format=fmt), after dtype and device."""
    _check(fmt)
    return t if fmt is preserve_format else _contiguous(t, fmt)
