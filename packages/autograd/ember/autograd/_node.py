"""The graph: ``Node`` (one recorded op, its edges to its inputs' nodes and what its formula
saved), one subclass per op so that ``grad_fn`` prints as in torch, ``AccumulateGrad`` (the node
of a leaf, which adds into ``.grad`` under PyTorch's layout contract) and the switches the engine
reads on every op (anomaly mode, the profiler, forward-AD levels).
"""

from __future__ import annotations

import itertools
import traceback
import weakref

import ember
from ember import _C

from ._saved import RELEASED_MSG

_grad_on = _C.is_grad_enabled

# ---------------------------------------------------------------------------------------------
# global switches (anomaly mode, profiler, forward AD)


class _State:
    anomaly = False
    anomaly_check_nan = True
    profiler = None  # the active profile, or None
    fw_level = 0  # forward-AD dual levels entered


STATE = _State()
_SEQ = itertools.count(1)  # node creation order: the sweep runs the newest ready node first


# ---------------------------------------------------------------------------------------------
# nodes


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


_NODE_NAMES = {"_to_dtype": "ToCopy", "_to_device": "ToCopy", "_view": "View", "_expand": "Expand",
               "_getitem": "Index", "_setitem": "IndexPut", "_copy_": "Copy", "_fill_": "Fill",
               "t": "T"}


class Node:
    """One recorded op: ``next_functions`` are the edges to its inputs' nodes.

    ``_args`` holds the op's arguments as the formula will see them: numbers as given, a ``_Meta``
    (shape, dtype) for a tensor the formula does not need the values of, None for a saved one
    (``_saved``: position -> SavedTensor, -1 for the output). ``_fix`` lists, per differentiable
    input, (argument position, shape/dtype source) for reducing broadcast gradients. Hooks and
    metadata live in ``_hooks`` (None for almost every node)."""

    __slots__ = ("_op", "_formula", "next_functions", "_saved", "_args", "_kwargs", "_needs",
                 "_released", "_hooks", "_trace", "_seq", "_nout", "_out_meta", "_fix",
                 "__weakref__")

    def __init__(self, op: str, formula=None, nout: int = 1):
        self._op = op
        self._formula = formula
        self.next_functions = ()
        self._saved = None
        self._args = ()
        self._kwargs = None
        self._needs = ()
        self._released = False
        self._hooks = None
        self._nout = nout
        self._out_meta = None
        self._fix = ()
        self._seq = next(_SEQ)
        self._trace = "".join(traceback.format_stack()[:-3]) if STATE.anomaly else None

    def name(self) -> str:
        return type(self).__name__ if type(self) is not Node else _camel(self._op) + "Backward0"

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    def _hook_table(self):
        if self._hooks is None:
            self._hooks = {}
        return self._hooks

    @property
    def metadata(self) -> dict:
        return self._hook_table().setdefault("metadata", {})

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` after this node ran; may return new grad_inputs."""
        lst = self._hook_table().setdefault("post", [])
        lst.append(fn)
        return _Handle(lst, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` before this node runs; may return new grad_outputs."""
        lst = self._hook_table().setdefault("pre", [])
        lst.append(fn)
        return _Handle(lst, fn)

    def _register_tensor_hook(self, nr, fn):
        lst = self._hook_table().setdefault("tensor", {}).setdefault(nr, [])
        lst.append(fn)
        return _Handle(lst, fn)

    def _retain_grad(self, nr, tensor):
        self._hook_table().setdefault("retain", {})[nr] = weakref.ref(tensor)

    def _retains(self, nr) -> bool:
        return bool(self._hooks and nr in self._hooks.get("retain", ()))

    def _saved_values(self):
        if self._released:
            raise RuntimeError(RELEASED_MSG)
        return self._saved

    def apply(self, grads):
        """grads: a list with one gradient (or None) per output; returns one per argument."""
        if self._formula is None:
            raise RuntimeError(f"derivative for {self._op} is not implemented")
        saved = self._saved
        out = None
        kw = self._kwargs
        if saved:
            args = list(self._args)
            outs = None
            for i, s in saved.items():
                if type(i) is str:  # a tensor keyword argument
                    if kw is self._kwargs:
                        kw = dict(kw)
                    kw[i] = s.unpack(self, 0)
                elif i >= 0:
                    args[i] = s.unpack(self, 0)
                elif i == -1:
                    out = s.unpack(self, 0)
                else:  # several saved outputs (key -2 - output_nr): a tuple, in output order
                    if outs is None:
                        outs = {}
                    outs[-2 - i] = s.unpack(self, -2 - i)
            if outs is not None:
                out = tuple(outs[k] for k in sorted(outs))
        elif self._released:
            raise RuntimeError(RELEASED_MSG)
        else:
            args = self._args
        g = grads[0] if self._nout == 1 else tuple(grads)
        res = self._formula(g, self._needs, out, *args, **kw) if kw else \
            self._formula(g, self._needs, out, *args)
        return res if isinstance(res, (tuple, list)) else (res,)

    def _release(self):
        """Drops what the node saved (backward without retain_graph): the saved dict is the only
        holder of saved values, and ``_fix`` may hold SavedTensors too. A node that saved
        nothing stays runnable, as in PyTorch."""
        if self._saved:
            self._released = True
            self._saved = None
            self._fix = ()

    @property
    def _saved_tensors(self):
        s = self._saved_values() or {}
        return tuple(v.unpack(self) for k, v in sorted((k, v) for k, v in s.items()
                                                       if type(k) is int and k >= 0))


_NODE_CLASSES: dict = {}


def node_class(op: str):
    """One Node subclass per op (``MulBackward0``, ...), so that type(t.grad_fn).__name__ reads
    as in torch (the tensor's repr prints it)."""
    cls = _NODE_CLASSES.get(op)
    if cls is None:
        name = _NODE_NAMES.get(op, _camel(op)) + "Backward0"
        cls = _NODE_CLASSES[op] = type(name, (Node,), {"__slots__": ()})
    return cls


class AccumulateGrad(Node):
    """The node of a leaf: adds the incoming gradient into ``leaf.grad``."""

    __slots__ = ("_var", "_post_acc_hooks", "_slot", "_meta")

    def __init__(self, var):
        super().__init__("accumulate_grad")
        self._var = weakref.ref(var)
        self._post_acc_hooks = None
        # The leaf's autograd slot lives in its TensorImpl: a view can keep the leaf alive after
        # its Python object was dropped (``v = ember.ones(3, requires_grad=True)[:2]``), and
        # ``v._base.grad`` must still receive the gradient, as in PyTorch.
        self._slot = var._ag
        self._meta = _LeafMeta(var)

    def name(self):
        return "torch::autograd::AccumulateGrad"

    @property
    def variable(self):
        return self._var()

    def accumulate(self, g, create_graph, shared=None):
        """Adds `g` into the leaf's .grad. `shared`: ids of gradient objects that something else
        holds (the caller's gradients, another leaf's .grad): those are copied, never adopted."""
        var = self._var()
        if var is None:
            d = self._slot
            var = self._meta
        else:
            d = var._ag
        old = d.get("_grad")
        if old is None:
            if g.shape != var.shape:
                g = _sum_to(g, var.shape)
            wanted = d.get("grad_dtype", var.dtype)  # Tensor.grad_dtype: None takes any
            if wanted is not None and g.dtype != wanted:
                if g.dtype.is_complex and not wanted.is_complex:
                    g = ember.real(g)  # a real leaf of a complex computation: the real part
                g = g.to(wanted)
            if not _obeys_layout(g, var):
                g = _clone_like(g, var)  # a fresh tensor: nothing else holds it
            elif not create_graph:
                if (shared is not None and id(g) in shared) or \
                        (g._base is not None and not g._is_sole_view()):
                    g = g.clone()
                elif shared is not None:
                    shared.add(id(g))
            d["_grad"] = g if create_graph else g.detach()
        elif create_graph or old.requires_grad:
            new = old + g
            d["_grad"] = new if _obeys_layout(new, var) else _clone_like(new, var)
        else:
            old.add_(g.detach())
        if self._post_acc_hooks and type(var) is not _LeafMeta:
            for h in list(self._post_acc_hooks):
                h(var)


class _LeafMeta:
    """What AccumulateGrad needs of a leaf whose Python object is gone: shape, strides, dtype."""

    __slots__ = ("shape", "dtype", "_stride", "_contig")

    def __init__(self, t):
        self.shape, self.dtype = t.shape, t.dtype
        self._stride, self._contig = tuple(t.stride()), t.is_contiguous()

    def stride(self):
        return self._stride

    def is_contiguous(self):
        return self._contig


def _dense_strides(shape, stride):
    """True when a tensor of this shape/stride covers its memory exactly once (no overlap, no
    gaps), whatever the order of its dims."""
    expected = 1
    for d in sorted(range(len(shape)), key=lambda d: stride[d]):
        if shape[d] == 1:
            continue
        if shape[d] == 0:
            return True
        if stride[d] != expected:
            return False
        expected *= shape[d]
    return True


def _obeys_layout(g, var) -> bool:
    """PyTorch's layout contract for ``.grad`` (utils::obeys_layout_contract): the strides of
    the parameter when it is dense, contiguous otherwise."""
    if var.is_contiguous() or not _dense_strides(var.shape, var.stride()):
        return g.is_contiguous()
    return all(a == b for a, b, n in zip(g.stride(), var.stride(), var.shape) if n != 1)


def _clone_like(g, var):
    """A copy of `g` laid out as the contract wants (utils::clone_obey_contract)."""
    if var.is_contiguous() or not _dense_strides(var.shape, var.stride()):
        return g.contiguous() if not g.is_contiguous() else g.clone()
    out = ember.empty_strided(tuple(var.shape), tuple(var.stride()), dtype=g.dtype)
    if g.requires_grad and _grad_on():
        return out.copy_(g)  # differentiable: copy_ into a tensor without history
    with ember.no_grad():
        out.copy_(g)
    return out


class _Handle:
    """A RemovableHandle."""

    def __init__(self, lst, fn):
        self._lst, self._fn = lst, fn

    def remove(self):
        try:
            self._lst.remove(self._fn)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _sum_to(g, shape):
    """Sums a broadcast gradient back to `shape` (differentiable: uses ember ops)."""
    shape = tuple(shape)
    gshape = tuple(g.shape)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    if lead > 0:
        g = g.sum(dim=tuple(range(lead)))
    dims = tuple(i for i, (a, b) in enumerate(zip(g.shape, shape)) if b == 1 and a != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    if tuple(g.shape) != shape:
        g = g.reshape(shape)
    return g

