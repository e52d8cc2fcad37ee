"""The tape: graph nodes, the hook the core calls for every op on a tensor that requires grad, and
the reverse sweep.

How a call is recorded: the core hands ``hook(name, fn, args, kwargs)`` over when grad mode is on
and an input requires grad. ``record`` runs ``fn`` with grad mode off, then builds one ``Node`` that
holds the op's entry of the gradient table (``_formulas.FORMULAS``), the edges to the inputs'
nodes (``next_functions``) and only the values that entry asks to save. The output tensor gets an
edge ``(node, output_nr)`` in its autograd slot ``t._ag`` (a dict the core keeps in the
TensorImpl, so it survives the Python wrapper: a view's ``_base`` comes back with its history);
leaves get an ``AccumulateGrad`` node (cached in the slot; it references the tensor weakly, so
the graph never keeps a dropped parameter alive).

The reverse sweep (``run_backward``) counts, for every node reachable from the roots, how many
edges point at it, then executes nodes whose count has dropped to zero, newest first, summing
gradients per output slot. Saved values and buffered gradients are dropped the moment a node has
run (unless ``retain_graph``), so memory falls as the sweep goes.
"""

from __future__ import annotations

import itertools
import sys
import threading
import traceback
import warnings
import weakref

import ember
from ember import _C

Tensor = _C.Tensor
_set_rg = Tensor.requires_grad.fset  # the core's setter (ember.autograd wraps the property)
_set_grad = _C._set_grad_enabled
_grad_on = _C.is_grad_enabled

# ---------------------------------------------------------------------------------------------
# global switches (anomaly mode, saved-tensor hooks, profiler)


class _State:
    anomaly = False
    anomaly_check_nan = True
    profiler = None  # the active profile, or None
    fw_level = 0  # forward-AD dual levels entered


STATE = _State()
TLS = threading.local()  # per thread, as torch: saved_hooks (a stack of (pack, unpack))
_SEQ = itertools.count(1)  # node creation order: the sweep runs the newest ready node first

RELEASED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)


def _type_str(t) -> str:
    return f"[{t.type()} [{', '.join(str(s) for s in t.shape)}]]"


# ---------------------------------------------------------------------------------------------
# saved values


class SavedTensor:
    """A tensor a node needs in backward, with the version it had when saved."""

    __slots__ = ("tensor", "version", "is_output", "packed", "unpack_hook", "origin")

    def __init__(self, t, is_output: bool):
        self.is_output = is_output
        self.version = t._version
        self.origin = None if is_output else t._ag.get("_ag_edge")
        # An output is saved detached: saving it with its grad_fn would make a reference cycle
        # node -> tensor -> node. It gets its edge back when unpacked for double backward.
        self.tensor = t.detach() if is_output else t
        self.packed = None
        self.unpack_hook = None
        hooks = getattr(TLS, "saved_hooks", None)
        if hooks:
            pack, unpack = hooks[-1]
            self.packed, self.unpack_hook = pack(self.tensor), unpack
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
        if self.is_output and _grad_on() and t.dtype.is_floating_point:
            t = t.detach()
            t.requires_grad = True
            t._ag["_ag_edge"] = (node, output_nr)
        return t


def _edge_desc(e) -> str:
    return f", which is output {e[1]} of {e[0].name()}" if e is not None else ""


class _Meta:
    """Shape and dtype of an input a formula needs but whose values it does not."""

    __slots__ = ("shape", "dtype")

    def __init__(self, t):
        self.shape = t.shape
        self.dtype = t.dtype

    def dim(self):
        return len(self.shape)

    def size(self, d=None):
        return self.shape if d is None else self.shape[d]

    @property
    def ndim(self):
        return len(self.shape)


# ---------------------------------------------------------------------------------------------
# nodes


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


_NODE_NAMES = {"_to_dtype": "ToCopy", "_view": "View", "_expand": "Expand", "_getitem": "Index",
               "_setitem": "IndexPut", "_copy_": "Copy", "_fill_": "Fill", "t": "T"}


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
        if saved:
            args = list(self._args)
            outs = None
            for i, s in saved.items():
                if i >= 0:
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
        kw = self._kwargs
        res = self._formula(g, self._needs, out, *args, **kw) if kw else \
            self._formula(g, self._needs, out, *args)
        return res if isinstance(res, (tuple, list)) else (res,)

    def _release(self):
        if self._saved:
            self._released = True
            self._saved = None

    @property
    def _saved_tensors(self):
        s = self._saved_values() or {}
        return tuple(v.unpack(self) for k, v in sorted(s.items()) if k >= 0)


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
            if g.dtype != var.dtype:
                g = g.to(var.dtype)
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


def edge_of(t):
    """The edge a gradient for tensor `t` flows into: (node, output_nr), or None."""
    if _REBASES[0]:
        _refresh_view(t)
    e = t._ag.get("_ag_edge")
    if e is not None:
        return e
    if not t.requires_grad:
        return None
    acc = t._ag.get("_accum")
    if acc is None:
        acc = AccumulateGrad(t)
        t._ag["_accum"] = acc
    return (acc, 0)


# ---------------------------------------------------------------------------------------------
# the hook


def _is_float(t) -> bool:
    return t.dtype.is_floating_point


_FORMULAS: dict = {}  # filled by _formulas
MULTI_OUTPUT_SAVE: dict = {  # which output a multi-output op saves (the indices)
    n: 1 for n in ("max", "min", "sort", "topk", "kthvalue", "mode", "median_dim", "cummax",
                   "cummin")}


def hook(name, fn, args, kwargs):
    """Called by the core for every op with an input that requires grad (grad mode on)."""
    prof = STATE.profiler
    if prof is not None:
        return prof.timed(name, _hook_body, name, fn, args, kwargs)
    return _hook_body(name, fn, args, kwargs)


def _hook_body(name, fn, args, kwargs):
    if not _grad_on():  # some in-place paths call the hook regardless of grad mode
        return fn(*args, **kwargs)
    entry = _FORMULAS.get(name)
    if entry is not None and entry.inplace:
        return _record_inplace(name, entry, fn, args, kwargs)
    _set_grad(False)
    try:
        out = fn(*args, **kwargs)
    finally:
        _set_grad(True)
    if type(out) is Tensor:
        out = _unalias(args, out)
    if STATE.fw_level:
        from .forward_ad import propagate

        propagate(name, fn, entry, args, kwargs, out)
    return record(name, entry, args, kwargs, out)


_NO_EDGE = (None, 0)


def _inputs(args):
    """(index, tensor) of each tensor argument requiring grad; lists of tensors are flattened."""
    edges = []
    needs = []
    any_need = False
    for a in args:
        if type(a) is Tensor or isinstance(a, Tensor):
            if a.requires_grad:
                e = edge_of(a)
                edges.append(e)
                needs.append(True)
                any_need = True
                continue
        elif isinstance(a, (list, tuple)) and a and all(isinstance(e, Tensor) for e in a):
            sub = [edge_of(x) if x.requires_grad else None for x in a]
            edges.extend(sub)
            needs.append(tuple(e is not None for e in sub))
            any_need = any_need or any(e is not None for e in sub)
            continue
        edges.append(None)
        needs.append(False)
    return edges, needs, any_need


def record(name, entry, args, kwargs, out, node=None):
    """Attaches a node for `name` to the float outputs of `out`."""
    if type(out) is tuple or isinstance(out, tuple):
        outs = out
        if not any(isinstance(o, Tensor) and o.dtype.is_floating_point for o in outs):
            return out
    else:
        if not out.dtype.is_floating_point:
            return out
        outs = (out,)
    edges, needs, any_need = _inputs(args)
    if not any_need:
        return out
    if node is None:
        node = node_class(name)(name, entry.vjp if entry is not None else None, len(outs))
        _save(node, entry, args, kwargs, outs, needs)
    node.next_functions = tuple([e if e is not None else _NO_EDGE for e in edges])
    node._needs = tuple(needs)
    if len(outs) > 1:
        node._out_meta = [(o.shape, o.dtype) if isinstance(o, Tensor) else None for o in outs]
    for i, o in enumerate(outs):
        if isinstance(o, Tensor) and o.dtype.is_floating_point:
            _set_rg(o, True)
            o._ag["_ag_edge"] = (node, i)
            if _REBASES[0]:
                mark_view(o)
    return out


def mark_view(o):
    """Records, on a view that just got its history, which rebase of its base it follows."""
    b = o._base
    if b is not None and "_ag_rb" in b._ag:
        o._ag["_ag_rb"] = b._ag["_ag_rb"]


def _unalias(args, out):
    """An op that hands back one of its inputs (same Python object) returns an alias of it, so
    that recording never rewrites the input's own history."""
    for a in args:
        if a is out:
            return out.detach()
    return out


def _save(node, entry, args, kwargs, outs, needs):
    node._kwargs = kwargs if kwargs else None
    saved = None
    plain = []
    fix = []
    si = entry.save_inputs if entry is not None else ()
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            if si is True or i in si:
                if saved is None:
                    saved = {}
                st = saved[i] = SavedTensor(a, False)
                plain.append(None)
                if needs[i]:
                    fix.append((i, st))
            elif needs[i]:
                m = _Meta(a)
                plain.append(m)
                fix.append((i, m))
            else:
                plain.append(None)
        elif isinstance(a, (list, tuple)) and a and all(isinstance(e, Tensor) for e in a):
            if si is True or i in si:  # a saved tensor list (index_put's indices): as given
                plain.append(tuple(a))
            else:
                plain.append([_Meta(x) for x in a])  # tensor lists (cat, stack): shapes only
        else:
            plain.append(a)
    if entry is not None and entry.save_output:
        if saved is None:
            saved = {}
        if isinstance(entry.save_output, tuple):  # the formula gets these outputs as a tuple
            for oi in entry.save_output:
                if oi < len(outs):
                    saved[-2 - oi] = SavedTensor(outs[oi], True)
        else:
            oi = MULTI_OUTPUT_SAVE.get(entry.name, 0) if len(outs) > 1 else 0
            saved[-1] = SavedTensor(outs[oi], True)
    node._args = tuple(plain)
    node._saved = saved
    node._fix = tuple(fix)


def _is_leaf(t) -> bool:
    return t._ag.get("_ag_edge") is None


def _record_inplace(name, entry, fn, args, kwargs):
    """An in-place op: `self` (args[0]) gets a new history; a view's base is rebased."""
    self = args[0]
    base = self._base
    if self.requires_grad and _is_leaf(self):
        if base is None or not base.requires_grad:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation.")
    if base is not None and base.requires_grad and _is_leaf(base):
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place "
            "operation.")
    si = entry.save_inputs
    old_self = None
    if (si is True or 0 in si) and self.requires_grad:
        _set_grad(False)
        try:
            old_self = self.clone()
        finally:
            _set_grad(True)
    edges, needs, any_need = _inputs(args)
    _set_grad(False)
    try:
        fn(*args, **kwargs)
    finally:
        _set_grad(True)
    if not any_need or not self.dtype.is_floating_point:
        return self
    node = node_class(name)(name, entry.vjp)
    sargs = list(args)
    if old_self is not None:
        old_self.requires_grad = True
        if edges[0] is not None:
            old_self._ag["_ag_edge"] = edges[0]
        sargs = [old_self if a is self else a for a in args]
    _save(node, entry, tuple(sargs), kwargs, (self,), needs)
    node.next_functions = tuple(e if e is not None else (None, 0) for e in edges)
    node._needs = tuple(needs)
    if base is not None and (base.requires_grad or True):
        _rebase_view(self, base, node)
    else:
        self.requires_grad = True
        self._ag["_ag_edge"] = (node, 0)
        _REBASES[0] += 1  # views of `self` made earlier have a stale history now
        self._ag["_ag_rb"] = _REBASES[0]
    return self


class _ViewGeometry:
    """Where a view's elements lie in its base's memory, as PyTorch's CopySlices records it: the
    view's (size, stride, offset) relative to the base. A base that is not contiguous but dense
    (a transposed clone) is handled through ``perm``: ``base.permute(perm)`` is contiguous, so a
    gradient laid out like the base is ``g.permute(perm).contiguous()``."""

    __slots__ = ("size", "stride", "offset", "base_shape", "perm", "inv", "pshape", "numel")

    def __init__(self, view, base):
        shape = tuple(base.shape)
        bstride = tuple(base.stride())
        perm = sorted(range(len(shape)), key=lambda d: -bstride[d])
        numel = _prod(shape)
        expected = 1
        for d in reversed(perm):
            if shape[d] != 1 and numel:
                if bstride[d] != expected:
                    raise NotImplementedError(
                        "ember.autograd: in-place operation on a view of a tensor whose "
                        "elements overlap or are not dense in memory")
                expected *= shape[d]
        ident = perm == list(range(len(shape)))
        self.perm = None if ident else tuple(perm)
        inv = [0] * len(perm)
        for i, d in enumerate(perm):
            inv[d] = i
        self.inv = tuple(inv)
        self.pshape = tuple(shape[d] for d in perm)
        self.numel = numel
        self.size = tuple(view.shape)
        self.stride = tuple(view.stride())
        self.offset = view.storage_offset() - base.storage_offset()
        self.base_shape = shape

    def to_base_layout(self, g):
        """`g` (base-shaped) as a contiguous tensor whose memory is laid out like the base."""
        return (g if self.perm is None else g.permute(self.perm)).contiguous()

    def from_flat(self, z):
        """A flat tensor holding base-layout memory, back as a base-shaped tensor."""
        z = z.reshape(self.pshape)
        return z if self.perm is None else z.permute(self.inv)


_REBASES = [0]  # in-place ops on views so far: views made earlier may need a new history


def _rebase_view(view, base, op_node):
    """PyTorch's CopySlices: the base's history becomes (old base outside the view, the in-place
    op inside it); the view's becomes an as_strided of the new base."""
    geo = _ViewGeometry(view, base)
    base_edge = edge_of(base) if base.requires_grad else None
    cs = node_class("copy_slices")("copy_slices", _copy_slices_vjp(geo))
    cs.next_functions = (base_edge if base_edge is not None else (None, 0), (op_node, 0))
    cs._needs = (base_edge is not None, True)
    cs._args = (None, None)
    base.requires_grad = True
    base._ag["_ag_edge"] = (cs, 0)
    _REBASES[0] += 1
    base._ag["_ag_rb"] = _REBASES[0]
    _set_view_history(view, base, geo)


def _set_view_history(view, base, geo):
    vn = node_class("as_strided")("as_strided", _view_of_base_vjp(geo))
    vn.next_functions = (base._ag["_ag_edge"],)
    vn._needs = (True,)
    vn._args = (_MetaShape(geo.base_shape, base.dtype),)
    view.requires_grad = True
    view._ag["_ag_edge"] = (vn, 0)
    view._ag["_ag_rb"] = base._ag.get("_ag_rb", 0)


def _refresh_view(t):
    """A view whose base was rebased by an in-place op on another view (after this view's
    history was recorded) gets PyTorch's regenerated history: an as_strided of the base."""
    base = t._base
    if base is None:
        return
    rb = base._ag.get("_ag_rb")
    if rb is None or t._ag.get("_ag_rb") == rb:
        return
    try:
        geo = _ViewGeometry(t, base)
    except NotImplementedError:
        return
    _set_view_history(t, base, geo)


class _MetaShape(_Meta):
    def __init__(self, shape, dtype):
        self.shape = ember.Size(shape)
        self.dtype = dtype


def _view_of_base_vjp(geo):
    """The gradient of a view (given by its geometry in its base) w.r.t. the base."""
    def vjp(g, needs, out, base):
        z = ember.zeros(geo.numel, dtype=g.dtype)
        z.as_strided(geo.size, geo.stride, geo.offset).copy_(g)
        return (geo.from_flat(z),)

    return vjp


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _copy_slices_vjp(geo):
    def vjp(g, needs, out, *args):
        gl = geo.to_base_layout(g)
        gv = gl.as_strided(geo.size, geo.stride, geo.offset + gl.storage_offset())
        if not needs[0]:
            return (None, gv)
        with ember.no_grad():
            mask = ember.ones(geo.numel, dtype=g.dtype)
            mask.as_strided(geo.size, geo.stride, geo.offset).fill_(0)
        return (g * geo.from_flat(mask), gv)

    return vjp


class CopySlices:  # name only, for isinstance-free introspection in docs
    pass


# ---------------------------------------------------------------------------------------------
# the reverse sweep


def _collect(roots):
    """Dependency counts of every node reachable from `roots`."""
    deps = {}
    seen = set()
    stack = [n for n in roots]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for nxt, _ in n.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if id(nxt) not in seen:
                    stack.append(nxt)
    return deps


def _needed(roots, targets):
    """Nodes from which a target node is reachable (the rest need not run)."""
    memo = {}

    def visit(n):
        k = id(n)
        if k in memo:
            return memo[k]
        memo[k] = False
        r = n in targets
        for nxt, _ in n.next_functions:
            if nxt is not None and visit(nxt):
                r = True
        memo[k] = r
        return r

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 100000))
    try:
        for n in roots:
            visit(n)
    finally:
        sys.setrecursionlimit(old)
    return {k for k, v in memo.items() if v}


def run_backward(roots, grads, retain_graph, create_graph, capture=None, accumulate=True,
                 allow_unreachable=True):
    """roots: edges (node, nr); grads: their gradients. `capture`: {edge: slot} whose incoming
    gradients are returned (autograd.grad); leaves accumulate only when `accumulate`."""
    prev = _grad_on()
    _set_grad(bool(create_graph))
    try:
        return _sweep(roots, grads, retain_graph, create_graph, capture, accumulate)
    finally:
        _set_grad(prev)


def _sweep(roots, grads, retain_graph, create_graph, capture, accumulate):
    buffers = {}
    root_nodes = []
    for (node, nr), g in zip(roots, grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._nout
            root_nodes.append(node)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    deps = _collect(root_nodes)
    shared = {id(g) for g in grads}  # the caller's gradient tensors: never adopted as a .grad
    captured = None
    needed = None
    if capture is not None:
        captured = [None] * len(set(capture.values()))
        target_nodes = {e[0] for e in capture}
        if not accumulate:
            needed = _needed(root_nodes, target_nodes)
    ready = [n for n in root_nodes if deps.get(n, 0) == 0]
    prof = STATE.profiler
    while ready:
        if len(ready) > 1:
            ready.sort(key=_seq_key)
        node = ready.pop()
        buf = buffers.pop(node, None)
        if buf is None:
            buf = [None] * node._nout
        if needed is not None and id(node) not in needed:
            _release_edges(node, deps, ready)
            continue
        if prof is not None:
            prof.timed(node.name(), _run_node, node, buf, retain_graph, create_graph, capture,
                       captured, accumulate, buffers, deps, ready, shared)
        else:
            _run_node(node, buf, retain_graph, create_graph, capture, captured, accumulate,
                      buffers, deps, ready, shared)
    return captured


def _seq_key(n):
    return n._seq


def _release_edges(node, deps, ready):
    for nxt, _ in node.next_functions:
        if nxt is not None:
            c = deps[nxt] - 1
            deps[nxt] = c
            if c == 0:
                ready.append(nxt)


def _run_node(node, buf, retain_graph, create_graph, capture, captured, accumulate, buffers,
              deps, ready, shared):
    hooks = node._hooks
    if hooks is not None:
        buf = _pre_hooks(node, hooks, buf, create_graph)
    if capture is not None:
        for nr in range(len(buf)):
            slot = capture.get((node, nr))
            if slot is not None and buf[nr] is not None:
                captured[slot] = buf[nr] if captured[slot] is None else captured[slot] + buf[nr]
    if type(node) is AccumulateGrad:
        if accumulate and buf[0] is not None:
            node.accumulate(buf[0], create_graph, shared)
        return
    nf = node.next_functions
    if node._nout == 1:
        run = buf[0] is not None
    else:
        run = any(b is not None for b in buf)
        if run:
            buf = [b if b is not None else _zeros_for(node, i) for i, b in enumerate(buf)]
    if run:
        try:
            grads = node.apply(buf)
        except Exception:
            if node._trace:
                warnings.warn("Error detected in " + node.name() + ". Traceback of forward call "
                              "that caused the error:\n" + node._trace, stacklevel=2)
            raise
        grads = _fix_grads(node, grads)
    else:
        grads = [None] * len(nf)
    if STATE.anomaly and STATE.anomaly_check_nan:
        _check_nan(node, grads)
    if hooks is not None and "post" in hooks:
        for h in list(hooks["post"]):
            r = h(tuple(grads), tuple(buf))
            if r is not None:
                grads = list(r)
    if not retain_graph:
        node._release()
    del buf
    for (nxt, nr), g in zip(nf, grads):
        if nxt is None:
            continue
        if g is not None:
            b = buffers.get(nxt)
            if b is None:
                b = buffers[nxt] = [None] * nxt._nout
            b[nr] = g if b[nr] is None else b[nr] + g
        c = deps[nxt] - 1
        deps[nxt] = c
        if c == 0:
            ready.append(nxt)


def _pre_hooks(node, hooks, buf, create_graph):
    th = hooks.get("tensor")
    if th:
        for nr, lst in th.items():
            if buf[nr] is not None:
                for h in list(lst):
                    r = h(buf[nr])
                    if r is not None:
                        buf[nr] = r
    ret = hooks.get("retain")
    if ret:
        for nr, ref in ret.items():
            t = ref()
            if t is not None and buf[nr] is not None:
                old = t._ag.get("_grad")
                g = buf[nr] if create_graph else buf[nr].detach()
                t._ag["_grad"] = g.clone() if old is None else old + g
    pre = hooks.get("pre")
    if pre:
        for h in list(pre):
            r = h(tuple(buf))
            if r is not None:
                buf = list(r)
    return buf


def _zeros_for(node, i):
    meta = node._out_meta
    if meta is None or meta[i] is None:
        return None
    shape, dtype = meta[i]
    return ember.zeros(shape, dtype=dtype)


def _fix_grads(node, grads):
    """One gradient per next_functions edge: list arguments are flattened, broadcast gradients
    summed back to their input's shape and cast to its dtype."""
    needs = node._needs
    n = len(needs)
    if len(grads) < n:
        grads = list(grads) + [None] * (n - len(grads))
    flat = any(isinstance(need, tuple) for need in needs)  # a tensor-list argument (cat)
    out = [g if need else None for g, need in zip(grads, needs)]
    for i, src in node._fix:  # tensor arguments (not lists): reduce broadcasts, cast
        g = out[i]
        if g is None:
            continue
        m = src.tensor if type(src) is SavedTensor else src
        if m is None:
            continue
        if g.shape != m.shape:
            g = _sum_to(g, m.shape)
        if g.dtype != m.dtype:
            g = g.to(m.dtype)
        out[i] = g
    if flat:
        flat_out = []
        for i, need in enumerate(needs):
            g = out[i]
            if isinstance(need, tuple):
                gl = g if g is not None else [None] * len(need)
                flat_out.extend(gl[j] if nj else None for j, nj in enumerate(need))
            else:
                flat_out.append(g)
        return flat_out
    return out


def _check_nan(node, grads):
    for i, g in enumerate(grads):
        if g is not None and bool(ember.isnan(g).any()):
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node._trace:
                warnings.warn("Error detected in " + node.name() + ". Traceback of forward call "
                              "that caused the error:\n" + node._trace, stacklevel=3)
            raise RuntimeError(msg)
