"""Padding modules over F.pad (torch's ZeroPad/ConstantPad/ReflectionPad/ReplicationPad/
CircularPad 1d/2d/3d)."""

from __future__ import annotations

from .. import functional as F
from .module import Module


def _ntuple(p, n):
    return tuple(p) if isinstance(p, (tuple, list)) else (p,) * (2 * n)


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = _ntuple(padding, self._n)
        if self._mode == "constant":
            self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant" and not type(self).__name__.startswith("Zero"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _make(name, n, mode, zero=False):
    if zero:
        def __init__(self, padding):
            _PadNd.__init__(self, padding, 0.0)
    else:
        __init__ = _PadNd.__init__
    return type(name, (_PadNd,), {"_n": n, "_mode": mode, "__init__": __init__,
                                  "__module__": __name__})


ConstantPad1d = _make("ConstantPad1d", 1, "constant")
ConstantPad2d = _make("ConstantPad2d", 2, "constant")
ConstantPad3d = _make("ConstantPad3d", 3, "constant")
ZeroPad1d = _make("ZeroPad1d", 1, "constant", True)
ZeroPad2d = _make("ZeroPad2d", 2, "constant", True)
ZeroPad3d = _make("ZeroPad3d", 3, "constant", True)
ReflectionPad1d = _make("ReflectionPad1d", 1, "reflect")
ReflectionPad2d = _make("ReflectionPad2d", 2, "reflect")
ReflectionPad3d = _make("ReflectionPad3d", 3, "reflect")
ReplicationPad1d = _make("ReplicationPad1d", 1, "replicate")
ReplicationPad2d = _make("ReplicationPad2d", 2, "replicate")
ReplicationPad3d = _make("ReplicationPad3d", 3, "replicate")
CircularPad1d = _make("CircularPad1d", 1, "circular")
CircularPad2d = _make("CircularPad2d", 2, "circular")
CircularPad3d = _make("CircularPad3d", 3, "circular")
