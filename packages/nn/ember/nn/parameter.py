"""``Parameter``: a tensor a Module registers as a learnable weight; ``Buffer``; and the
``Uninitialized*`` placeholders of the lazy modules.

A Parameter is a real subclass of ``ember.Tensor`` (``type(p) is Parameter``): the core's
``Tensor(data)`` constructor gives each Python object its own tensor over ``data``'s storage, so
``Parameter(t)`` shares ``t``'s data, detached, as torch's ``Tensor._make_subclass`` does. Ops on
a parameter return plain tensors, as in torch (Parameter disables ``__torch_function__``).
"""

from __future__ import annotations

import ember
from ember import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "is_lazy"]


def _make_subclass(cls, data, requires_grad: bool) -> Tensor:
    """An instance of ``cls`` (a Tensor subclass) over ``data``'s storage, detached."""
    if not isinstance(data, Tensor):
        raise TypeError(f"{cls.__name__}: expected a Tensor as data, got {type(data).__name__}")
    return Tensor._make_subclass(cls, data, requires_grad)


class Parameter(Tensor):
    """Parameter(data=None, requires_grad=True): a tensor that a Module registers as a weight."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = ember.empty(0)
        return _make_subclass(cls, data, requires_grad)

    def __init__(self, *args, **kwargs):
        # the data was bound in __new__; Tensor.__init__ must not run a second time
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with ember.no_grad():
            result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        if self.grad is not None:
            result.grad = self.grad.clone()
        return result

    def __reduce_ex__(self, proto):
        return (Parameter, (self.detach(), self.requires_grad))

    __torch_function__ = None  # torch's marker: results of ops are plain tensors


class Buffer:
    """Buffer(data, persistent=True): a tensor to register as a module buffer."""

    def __new__(cls, data=None, *, persistent=True):
        t = ember.empty(0) if data is None else data.detach()
        t._buffer_persistent = persistent
        return t


class _UninitializedMixin:
    """What a lazy module holds before its first forward: no data yet (an empty tensor that
    knows its future device and dtype), until ``materialize(shape)``."""

    _allowed = ("materialize", "shape", "dtype", "device", "requires_grad", "requires_grad_",
                "grad", "is_leaf", "data", "__class__", "__repr__", "__dict__", "_is_lazy")

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor its shape (uninitialised data) and turn it into a plain
        Parameter / Tensor (torch's ``cls_to_become``)."""
        if device is None:
            device = self.device
        if dtype is None:
            dtype = self.dtype
        self.data = ember.empty(tuple(shape), device=device, dtype=dtype)
        if self.cls_to_become is Parameter:
            self.__class__ = Parameter
        else:
            # a Python object cannot turn into the core's Tensor type (another layout): the
            # buffer stays an UninitializedBuffer marked as materialized, and the lazy module
            # swaps in a plain tensor over the same data (materialized_buffer)
            self._materialized = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto):
        raise ValueError(f"'{type(self).__name__}' must be initialized before pickling")


class UninitializedParameter(_UninitializedMixin, Parameter):
    """A Parameter whose shape is not known yet (lazy modules)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return _make_subclass(cls, ember.empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(_UninitializedMixin, Tensor):
    """A buffer whose shape is not known yet (lazy modules)."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        obj = _make_subclass(cls, ember.empty(0, device=device, dtype=dtype), requires_grad)
        obj._buffer_persistent = persistent
        return obj

    def __init__(self, *args, **kwargs):
        pass


def is_lazy(param) -> bool:
    """True for an uninitialised parameter or buffer."""
    return isinstance(param, _UninitializedMixin) and not getattr(param, "_materialized", False)


def materialized_buffer(buf):
    """A plain tensor over a materialized UninitializedBuffer's data (else ``buf`` itself)."""
    if isinstance(buf, UninitializedBuffer) and getattr(buf, "_materialized", False):
        return buf.detach()
    return buf


def is_parameter(t) -> bool:
    return isinstance(t, Parameter)


def _tensor_deepcopy(self, memo):
    """copy.deepcopy of a tensor (as torch's Tensor.__deepcopy__): a fresh copy of the data that
    keeps requires_grad and .grad. Installed only if the core has none."""
    if id(self) in memo:
        return memo[id(self)]
    with ember.no_grad():
        new = self.detach().clone()
    if self.requires_grad and self.is_leaf:
        new.requires_grad_(True)
    memo[id(self)] = new
    g = self.grad if self.is_leaf else None
    if g is not None:
        new.grad = _tensor_deepcopy(g, memo)
    return new


if not hasattr(Tensor, "__deepcopy__"):
    Tensor.__deepcopy__ = _tensor_deepcopy
