"""``Parameter``: a tensor a Module registers as a learnable weight.

NOTE: the core's pybind11 ``Tensor`` has no Python-level constructor, so a Python subclass could
not be instantiated over an existing tensor's storage. A Parameter is therefore a plain ``Tensor``
(a detached alias of the data, requires_grad=True) carrying a ``_is_param`` mark in its instance
dict; ``isinstance(t, Parameter)`` reads that mark through the metaclass, and the repr says
"Parameter containing:". Ops on a parameter return plain tensors, as in torch.
"""

from __future__ import annotations

import ember
from ember import Tensor


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and getattr(obj, "_is_param", False) is True


class Parameter(metaclass=_ParameterMeta):
    """Parameter(data=None, requires_grad=True) -> Tensor marked as a parameter."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = ember.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor as data, got {type(data).__name__}")
        t = data.detach()
        t.requires_grad_(requires_grad)
        t._is_param = True
        return t


class Buffer:
    """Buffer(data, persistent=True): a tensor to register as a module buffer."""

    def __new__(cls, data=None, *, persistent=True):
        t = ember.empty(0) if data is None else data.detach()
        t._buffer_persistent = persistent
        return t


def is_parameter(t) -> bool:
    return isinstance(t, Parameter)


def _marked(core):
    def param_repr(self, *args, **kwargs):
        s = core(self, *args, **kwargs)
        if getattr(self, "_is_param", False) is True:
            return "Parameter containing:\n" + s
        return s

    param_repr._ember_param = True
    return param_repr


for _name in ("__repr__", "__str__"):
    _core = getattr(Tensor, _name)
    if not getattr(_core, "_ember_param", False):
        setattr(Tensor, _name, _marked(_core))


def _tensor_deepcopy(self, memo):
    """copy.deepcopy of a tensor (as torch's Tensor.__deepcopy__): a fresh copy of the data that
    keeps requires_grad, .grad and the parameter mark. Installed only if the core has none."""
    if id(self) in memo:
        return memo[id(self)]
    with ember.no_grad():
        new = self.detach().clone()
    if self.requires_grad and self.is_leaf:
        new.requires_grad_(True)
    if getattr(self, "_is_param", False) is True:
        new._is_param = True
    memo[id(self)] = new
    g = self.grad if self.is_leaf else None
    if g is not None:
        new.grad = _tensor_deepcopy(g, memo)
    return new


if not hasattr(Tensor, "__deepcopy__"):
    Tensor.__deepcopy__ = _tensor_deepcopy
