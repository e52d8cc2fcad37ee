"""ember.autograd.Function: user-defined ops with their own backward (PyTorch's API, both the
``forward(ctx, ...)`` style and the newer ``forward(...)`` + ``setup_context(ctx, inputs, output)``
style)."""

from __future__ import annotations

import functools

import ember
from ember import _C

from . import _engine
from ._engine import Node, SavedTensor, _Meta, edge_of

Tensor = _C.Tensor


class FunctionCtx:
    """What ``forward`` can tell ``backward``: saved tensors and flags."""

    def save_for_backward(self, *tensors):
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = value


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one Function.apply call."""

    def __init__(self, cls):
        Node.__init__(self, cls.__name__)
        self._cls = cls
        self.to_save = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self._ctx_saved = None
        self.needs_input_grad = ()
        self._out_info = ()

    def name(self):
        return self._cls.__name__ + "Backward"

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(_engine.RELEASED_MSG)
        if self._ctx_saved is None:
            return tuple(self.to_save)
        return tuple(s.unpack(self, k) if s is not None else None
                     for k, s in enumerate(self._ctx_saved))

    @property
    def saved_variables(self):
        return self.saved_tensors

    def _release(self):
        if self._ctx_saved:
            self._released = True
            self._ctx_saved = None

    def apply(self, grads):
        if self.materialize_grads:
            grads = [g if g is not None else ember.zeros(shape, dtype=dt, device=dev)
                     for g, (shape, dt, dev) in zip(grads, self._out_info)]
        res = self._cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self._needs)
        if len(res) != n:
            if len(res) > n and all(r is None for r in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n}, got {len(res)})")
        for i, (r, need) in enumerate(zip(res, self._needs)):
            if r is not None and need and not isinstance(r, Tensor):
                raise TypeError(f"function {self.name()} returned a gradient that is not a "
                                f"Tensor or None at position {i}")
        return res


_TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"


def once_differentiable(fn):
    """The decorated backward runs without recording. When its gradients would be differentiated
    (create_graph, or ember.func's forward mode), they carry a node that raises torch's error in
    that backward, instead of silently counting as constants."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with ember.no_grad():
            outputs = fn(ctx, *args)
        if not _C.is_grad_enabled() or not any(isinstance(a, Tensor) and a.requires_grad
                                                for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        marked = _DelayedError.apply(*[_fake_requires_grad(o) for o in outs])
        marked = marked if isinstance(marked, tuple) else (marked,)
        return marked[0] if single else marked

    return wrapper


def _fake_requires_grad(t):
    if isinstance(t, Tensor) and (t.dtype.is_floating_point or t.dtype.is_complex):
        t = t.detach()
        t.requires_grad = True
    return t


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._new_style = "setup_context" in attrs or any(
            "setup_context" in b.__dict__ and b.__dict__["setup_context"] is not
            Function.__dict__.get("setup_context") for b in cls.__mro__[1:-1]
            if b is not Function)


class Function(FunctionCtx, metaclass=_FunctionMeta):
    """Subclass with static ``forward`` and ``backward``; call ``MyFn.apply(...)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not overridden")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    # vmap: ember's vmap calls apply once per batch element, so no rule is needed; these exist so
    # that Functions written for torch.func define and read them unchanged.
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = BackwardCFunction(cls)
        needs = []
        for a in args:
            needs.append(isinstance(a, Tensor) and a.requires_grad)
        ctx.needs_input_grad = tuple(needs)
        recording = _C.is_grad_enabled() and any(needs)
        edges = [edge_of(a) if n else None for a, n in zip(args, needs)]
        with ember.no_grad():
            if cls._new_style:
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        if not recording:
            return out
        ctx.next_functions = tuple(e if e is not None else (None, 0) for e in edges)
        ctx._needs = tuple(needs)
        ctx._fix = tuple((i, _Meta(a)) for i, (a, n) in enumerate(zip(args, needs)) if n)
        ctx._args = tuple(None for _ in args)
        ctx._nout = len(outs)
        ctx._out_info = tuple((o.shape, o.dtype, o.device) if isinstance(o, Tensor)
                              else ((), None, None) for o in outs)
        dirty = {id(t) for t in ctx.dirty_tensors}
        nondiff = {id(t) for t in ctx.non_differentiable}
        arg_ids = {id(a) for a in args if isinstance(a, Tensor)}
        new_outs = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                new_outs.append(o)
                continue
            if id(o) in dirty:
                if o.requires_grad and o._ag.get("_ag_edge") is None:
                    raise RuntimeError("a leaf Variable that requires grad is being used in an "
                                       "in-place operation.")
            elif id(o) in arg_ids:
                o = o.detach()  # an input returned as is: the output is a new alias of it
            if id(o) in nondiff or not (o.dtype.is_floating_point or o.dtype.is_complex):
                new_outs.append(o)
                continue
            o.requires_grad = True
            o._ag["_ag_edge"] = (ctx, i)
            if _engine._REBASES[0]:
                _engine.mark_view(o)
            new_outs.append(o)
        out_ids = {id(o) for o in new_outs if isinstance(o, Tensor)} | {
            id(o) for o in outs if isinstance(o, Tensor)}
        ctx._ctx_saved = [SavedTensor(t, id(t) in out_ids) if isinstance(t, Tensor) else None
                          for t in ctx.to_save]
        ctx._saved = None
        ctx.to_save = ()
        return new_outs[0] if single else tuple(new_outs)


FunctionMeta = _FunctionMeta


class InplaceFunction(Function):
    pass


class NestedIOFunction(Function):
    pass


class _DelayedError(Function):
    """Aliases of its inputs whose backward raises (torch's DelayedError node)."""

    @staticmethod
    def forward(ctx, *tensors):
        return tuple(t.view_as(t) if isinstance(t, Tensor) else t for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(_TWICE)
