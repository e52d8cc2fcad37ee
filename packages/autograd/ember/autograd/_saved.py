"""Saved values: what a node keeps of its inputs and outputs for backward.

A ``SavedTensor`` holds a tensor with the version counter it had when saved, so that backward can
refuse a value an in-place op changed since; an output is kept detached (no node -> tensor -> node
cycle) and gets its edge back when unpacked for double backward. Under
``autograd.graph.saved_tensors_hooks`` the tensor is packed at once and only the packed value is
kept. A ``SavedSequence`` saves a tuple or list argument holding tensors (an index with tensors in
it) the same way, element by element. A ``_Meta`` stands for an input the formula needs the
shape and dtype of but not the values.

Everything a node keeps of a tensor's values is one of these, held only by the node's ``_saved``
dict, so that dropping that dict at backward (``Node._release``) frees the values.
"""

from __future__ import annotations

import threading

from ember import _C

_grad_on = _C.is_grad_enabled


class _ThreadState(threading.local):
    """Per thread, as torch's: the saved-tensor hooks, the final callbacks of the running
    backward, whether a reentrant checkpoint may run. The class attributes are each thread's
    defaults, so reading one is an attribute hit (a getattr with a default that misses costs
    1 us, once per saved tensor)."""

    saved_hooks = None  # a stack of (pack, unpack), or None
    final_callbacks = None  # a stack of lists of callbacks, one per running backward
    checkpoint_valid = True


TLS = _ThreadState()

RELEASED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)


def _type_str(t) -> str:
    return f"[{t.type()} [{', '.join(str(s) for s in t.shape)}]]"


class SavedTensor:
    """A tensor a node needs in backward, with the version it had when saved."""

    __slots__ = ("tensor", "version", "is_output", "packed", "unpack_hook", "origin", "meta")

    def __init__(self, t, is_output: bool):
        self.is_output = is_output
        self.version = t._version
        self.origin = None if is_output else t._ag.get("_ag_edge")
        # An output is saved detached: saving it with its grad_fn would make a reference cycle
        # node -> tensor -> node. It gets its edge back when unpacked for double backward.
        self.tensor = t.detach() if is_output else t
        self.packed = None
        self.unpack_hook = None
        self.meta = None
        hooks = TLS.saved_hooks
        if hooks:
            pack, unpack = hooks[-1]
            self.packed, self.unpack_hook = pack(self.tensor), unpack
            self.meta = _Meta(t)  # the shape and dtype the engine reduces gradients to
            self.tensor = None

    def unpack(self, node, output_nr: int = 0):
        if self.unpack_hook is not None:
            t = self.unpack_hook(self.packed)
        else:
            t = self.tensor
            if t._version != self.version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: {_type_str(t)}, which is output {output_nr} of "
                    f"{node.name()}, is at version {t._version}; expected version {self.version} "
                    "instead. Hint: enable anomaly detection to find the operation that failed "
                    "to compute its gradient, with ember.autograd.set_detect_anomaly(True)."
                    if self.is_output else
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: {_type_str(t)}{_edge_desc(self.origin)}, is at version "
                    f"{t._version}; expected version {self.version} instead. Hint: enable anomaly "
                    "detection to find the operation that failed to compute its gradient, with "
                    "ember.autograd.set_detect_anomaly(True).")
        if self.is_output and _grad_on() and (t.dtype.is_floating_point or t.dtype.is_complex):
            t = t.detach()
            t.requires_grad = True
            t._ag["_ag_edge"] = (node, output_nr)
        return t


class SavedSequence:
    """A tuple or list argument with tensors in it (an index such as ``(idx, slice(1, 3))``), saved:
    its tensors as SavedTensors, the rest as given; unpacked as a tuple when it held only tensors
    (index_put's indices), else as the type it had."""

    __slots__ = ("items", "kind")

    def __init__(self, seq):
        self.items = [SavedTensor(x, False) if isinstance(x, _C.Tensor) else x for x in seq]
        self.kind = tuple if all(type(x) is SavedTensor for x in self.items) else type(seq)

    def unpack(self, node, output_nr: int = 0):
        return self.kind(x.unpack(node, output_nr) if type(x) is SavedTensor else x
                         for x in self.items)


def _edge_desc(e) -> str:
    return f", which is output {e[1]} of {e[0].name()}" if e is not None else ""


class _Meta:
    """Shape, dtype and device of an input a formula needs but whose values it does not."""

    __slots__ = ("shape", "dtype", "device")

    def __init__(self, t):
        self.shape = t.shape
        self.dtype = t.dtype
        self.device = t.device

    def dim(self):
        return len(self.shape)

    def size(self, d=None):
        return self.shape if d is None else self.shape[d]

    @property
    def ndim(self):
        return len(self.shape)


class _StridedMeta(_Meta):
    """A _Meta with the strides and storage offset too: an operand that ``save_if`` left
    unsaved (a matrix product's gradient is laid out like its operand; as_strided's is placed
    by the input's geometry, which torch's AsStridedBackward keeps instead of the tensor)."""

    __slots__ = ("_stride", "_offset")

    def __init__(self, t):
        self.shape = t.shape
        self.dtype = t.dtype
        self.device = t.device
        self._stride = t.stride()
        self._offset = t.storage_offset()

    def stride(self):
        return self._stride

    def storage_offset(self):
        return self._offset

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n
