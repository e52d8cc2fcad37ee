"""The tape: the hook the core calls for every op on a tensor that requires grad, and how a call
is recorded. The graph's types are in ``_node.py``, saved values in ``_saved.py``, the reverse
sweep in ``_sweep.py``; this module re-exports what the rest of the package uses of them.

How a call is recorded: the core hands ``hook(name, fn, args, kwargs)`` over when grad mode is on
and an input requires grad. ``record`` runs ``fn`` with grad mode off, then builds one ``Node`` that
holds the op's entry of the gradient table (``_formulas.FORMULAS``), the edges to the inputs'
nodes (``next_functions``) and only the values that entry asks to save. The output tensor gets an
edge ``(node, output_nr)`` in its autograd slot ``t._ag`` (a dict the core keeps in the
TensorImpl, so it survives the Python wrapper: a view's ``_base`` comes back with its history);
leaves get an ``AccumulateGrad`` node (cached in the slot; it references the tensor weakly, so
the graph never keeps a dropped parameter alive). An in-place op on a view rebases the view's
base as PyTorch's CopySlices does (``_rebase_view``).
"""

from __future__ import annotations

import ember
from ember import _C

# STATE, AccumulateGrad, Node, _Handle, _sum_to, RELEASED_MSG, TLS, run_backward: re-exported for
# the rest of the package, which imports them from here.
from ._node import STATE, AccumulateGrad, Node, _Handle, _sum_to, node_class  # noqa: F401
from ._saved import RELEASED_MSG, TLS, SavedSequence, SavedTensor, _Meta, _StridedMeta  # noqa: F401
from ._sweep import run_backward  # noqa: F401

Tensor = _C.Tensor
_set_rg = Tensor.requires_grad.fset  # the core's setter (ember.autograd wraps the property)
_set_grad = _C._set_grad_enabled
_grad_on = _C.is_grad_enabled
_recorded_inputs = _C._recorded_inputs


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


_FORMULAS: dict = {}  # filled by _formulas
# name -> the entry used where complex values take part (filled by _formulas_complex); an op not
# in it is refused for complex tensors
_COMPLEX_FORMULAS: dict = {}


def complex_entry(name, entry):
    c = _COMPLEX_FORMULAS.get(name)
    if c is None:
        _refuse_complex(name)
    return c
MULTI_OUTPUT_SAVE: dict = {  # which output a multi-output op saves (the indices)
    n: 1 for n in ("max", "min", "sort", "topk", "kthvalue", "mode", "median_dim", "cummax",
                   "cummin")}


def hook(name, fn, args, kwargs):
    """Called by the core for every op with an input that requires grad (grad mode on). (The
    profiler times ops in the core, around this call: ember.autograd.profiler.)"""
    if not _grad_on():  # some in-place paths call the hook regardless of grad mode
        return fn(*args, **kwargs)
    entry = _FORMULAS.get(name)
    if entry is not None and entry.inplace:
        return _record_inplace(name, entry, fn, args, kwargs)
    if entry is None and "::" in name:  # an ember.library custom op: its own backward
        from ember import library

        op = library.get_op(name)
        if op is not None:
            from . import _custom_ops

            return _custom_ops.run(op, args, kwargs)
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
    """(edges, needs, any_need) of a call's arguments: the edge of each tensor requiring grad
    (None for the other arguments), whether each argument's gradient is wanted (a tuple of bools
    for a list of tensors), any_need 0 none, 1 some, 2 some and one of them complex. In the core
    (this ran on every recorded op: 3.5 us of Python for two tensors); edge_of's rules."""
    return _recorded_inputs(args, AccumulateGrad, _refresh_view if _REBASES[0] else None)


def _refuse_complex(name):
    # An op with no formula checked for complex values (_formulas_complex.py) is refused rather
    # than recorded with a wrong or missing gradient.
    raise NotImplementedError(f"ember: the derivative of '{name}' for complex tensors is not "
                              f"implemented")


def _differentiable(dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def record(name, entry, args, kwargs, out, node=None):
    """Attaches a node for `name` to the float outputs of `out` (none for an op whose entry says
    no output is differentiable: torch's output_differentiability [False])."""
    diff = getattr(entry, "diff_outputs", None)  # None: every output (entry may be None)
    if diff == ():
        return out
    complex_out = False
    if type(out) is tuple or isinstance(out, tuple):
        outs = out
        complex_out = any(isinstance(o, Tensor) and o.dtype.is_complex for o in outs)
        if not complex_out and not any(isinstance(o, Tensor) and o.dtype.is_floating_point
                                       for o in outs):
            return out
    else:
        if not out.dtype.is_floating_point:
            if not out.dtype.is_complex:
                return out
            complex_out = True
        outs = (out,)
    edges, needs, any_need = _inputs(args)
    if not any_need:
        return out
    if complex_out or any_need == 2:  # complex values: the formulas checked for them only
        entry = complex_entry(name, entry)
    if node is None:
        node = node_class(name)(name, entry.vjp if entry is not None else None, len(outs))
        _save(node, entry, args, kwargs, outs, needs)
    node.next_functions = tuple([e if e is not None else _NO_EDGE for e in edges])
    node._needs = tuple(needs)
    if len(outs) > 1:
        node._out_meta = [(o.shape, o.dtype, o.device)
                          if isinstance(o, Tensor) and (diff is None or i in diff) else None
                          for i, o in enumerate(outs)]
    for i, o in enumerate(outs):
        if isinstance(o, Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex):
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


def _wants(needs, j) -> bool:
    """Whether the gradient of argument j is wanted (a tensor list: of any of its tensors)."""
    n = needs[j] if j < len(needs) else False
    return n is True or (type(n) is tuple and any(n))


def saves_input(entry, i, needs) -> bool:
    """Whether `entry` keeps argument i, given which gradients are wanted: an argument in
    ``save_if`` is kept only when a gradient that reads it is wanted (``a`` of ``a * b`` only
    for b's gradient), as PyTorch's generated code saves only for the outputs it will compute."""
    si = entry.save_inputs
    if si is not True and i not in si:
        return False
    cond = entry.save_if
    return cond is None or _used(cond.get(i), needs)


def _used(users, needs) -> bool:
    """Whether one of the gradients `users` (argument positions; None: any) is wanted."""
    if users is None:
        return True
    for j in users:
        if _wants(needs, j):
            return True
    return False


def _save(node, entry, args, kwargs, outs, needs):
    """Fills the node's ``_args`` (what the formula sees of each argument), ``_saved`` (the
    values it keeps for backward, and only those) and ``_fix`` (shape/dtype per input whose
    gradient the engine reduces)."""
    saved = None
    plain = []
    fix = []
    cond = entry.save_if if entry is not None else None
    si = entry.save_inputs if entry is not None else ()
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            keep = si is True or i in si
            if keep and cond is not None:  # _used, inlined: this runs for every recorded op
                users = cond.get(i)
                if users is not None:
                    keep = False
                    for j in users:
                        n = needs[j] if j < len(needs) else False
                        if n is True or (type(n) is tuple and any(n)):
                            keep = True
                            break
            if keep:
                if saved is None:
                    saved = {}
                st = saved[i] = SavedTensor(a, False)
                plain.append(None)
                if needs[i]:
                    fix.append((i, st))
            elif needs[i] or cond is not None:
                m = _Meta(a) if cond is None else _StridedMeta(a)  # left unsaved by save_if
                plain.append(m)
                if needs[i]:
                    fix.append((i, m))
            else:
                plain.append(None)
        elif isinstance(a, (list, tuple)) and a and any(isinstance(e, Tensor) for e in a):
            if si is True or i in si:  # a saved sequence (index_put's indices, an index)
                if saved is None:
                    saved = {}
                saved[i] = SavedSequence(a)
                plain.append(None)
            elif all(isinstance(e, Tensor) for e in a):
                plain.append([_Meta(x) for x in a])  # tensor lists (cat, stack): shapes only
            else:
                plain.append(a)
        else:
            plain.append(a)
    kw = kwargs if kwargs else None
    if kw and Tensor in map(type, kwargs.values()):  # (cheaper than isinstance per value)
        for k, v in kwargs.items():
            if isinstance(v, Tensor):  # a tensor keyword (pooling's indices): saved as well
                if saved is None:
                    saved = {}
                saved[k] = SavedTensor(v, False)
                if kw is kwargs:
                    kw = dict(kwargs)
                kw[k] = None
    node._kwargs = kw
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
    edges, needs, any_need = _inputs(args)
    if any_need == 2 or self.dtype.is_complex:
        entry = complex_entry(name, entry)
    old_self = None
    if any_need and saves_input(entry, 0, needs):
        # the formula reads self's value from before the op: keep a copy (also when self needs
        # no gradient: ``x.mul_(w)`` needs the old x for w's gradient)
        _set_grad(False)
        try:
            old_self = self.clone()
        finally:
            _set_grad(True)
    _set_grad(False)
    try:
        fn(*args, **kwargs)
    finally:
        _set_grad(True)
    if not any_need or not _differentiable(self.dtype):
        return self
    node = node_class(name)(name, entry.vjp)
    sargs = list(args)
    if old_self is not None:
        if needs[0]:  # the copy stands for self in the graph (double backward)
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
        z = ember.zeros(geo.numel, dtype=g.dtype, device=g.device)
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
            mask = ember.ones(geo.numel, dtype=g.dtype, device=g.device)
            mask.as_strided(geo.size, geo.stride, geo.offset).fill_(0)
        return (g * geo.from_flat(mask), gv)

    return vjp
