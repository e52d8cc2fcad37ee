"""ember.autograd: tape-based reverse-mode automatic differentiation (PyTorch's API).

Importing this package registers the hook through which the core hands over every op on a tensor
that requires grad, and installs the autograd part of the Tensor API (``backward``, ``grad``,
``grad_fn``, ``retain_grad``, ``register_hook``, ...). See README.md for how it works.
"""

from __future__ import annotations

import ember
from ember import _C
from ember._grad_mode import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

from . import (  # noqa: F401  (they fill the gradient table)
    _engine,
    _formulas,
    _formulas_complex,
    _formulas_linalg,
    _formulas_nn,
    _formulas_tensor,
)
from ._engine import STATE, AccumulateGrad, Node, edge_of, run_backward  # noqa: F401
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly  # noqa: F401
from .function import (  # noqa: F401
    Function,
    FunctionCtx,
    InplaceFunction,
    NestedIOFunction,
    once_differentiable,
)
from .grad_mode import is_multithreading_enabled, set_multithreading_enabled  # noqa: F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401

Tensor = _C.Tensor
__all__ = ["Function", "backward", "grad", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "detect_anomaly", "set_detect_anomaly",
           "GradcheckError", "once_differentiable", "graph", "functional", "forward_ad",
           "profiler", "Variable", "is_multithreading_enabled", "set_multithreading_enabled",
           "is_view_replay_enabled", "grad_mode", "function", "NestedIOFunction"]


def is_view_replay_enabled() -> bool:
    """ember regenerates a view's history from its base's own (never by replaying the view op)."""
    return False


def is_tensor_like(inp) -> bool:
    """Whether `inp` is a Tensor (ember has no ``__torch_function__`` protocol for other types
    to join)."""
    return isinstance(inp, Tensor)


def kineto_available() -> bool:
    """ember's profiler is its own (ember.autograd.profiler), not Kineto."""
    return False


def variable(*args, **kwargs):
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) "
                       "instead")


def _is_checkpoint_valid() -> bool:
    """False inside ``autograd.grad`` or ``backward(inputs=...)``, where a reentrant checkpoint
    cannot hand its gradients back."""
    return _engine.TLS.checkpoint_valid


def _make_grads(outputs, grad_outputs, create_graph):
    grads = []
    for out, g in zip(outputs, grad_outputs):
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                                   f"but got {out.dtype}")
            g = ember.ones(out.shape, dtype=out.dtype, device=out.device)
        elif not isinstance(g, Tensor):
            g = ember.full(out.shape, g, dtype=out.dtype, device=out.device)
        elif tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(
                f"Mismatch in shape: grad_output[0] has a shape of {g.shape} and output[0] has a "
                f"shape of {out.shape}.")
        grads.append(g)
    return grads


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _roots(outputs):
    edges = []
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        edges.append(edge_of(out))
    return edges


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulates the gradients of `tensors` w.r.t. the graph's leaves into their ``.grad``."""
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    gts = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(tensors)
    if len(gts) != len(tensors):
        raise RuntimeError(f"got {len(gts)} tensors and {len(tensors)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(tensors, gts, create_graph)
    roots = _roots(tensors)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        capture = {}
        for i, t in enumerate(inputs):
            e = edge_of(t)
            if e is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture[e] = i
        got = run_backward(roots, grads, retain_graph, create_graph, capture, accumulate=False)
        shared = {id(g) for g in grads}
        for t, g in zip(inputs, got):
            if g is None:
                continue
            e = edge_of(t)
            if isinstance(e[0], AccumulateGrad):
                e[0].accumulate(g, create_graph, shared)
            else:
                old = t._ag.get("_grad")
                g = g if create_graph else g.detach()
                t._ag["_grad"] = g if old is None else old + g
        return
    run_backward(roots, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` w.r.t. `inputs` (nothing is accumulated into ``.grad``)."""
    if is_grads_batched:
        raise NotImplementedError("ember.autograd.grad: is_grads_batched is not supported")
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads "
                         "is True, but got: allow_unused=False.")
    gos = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, gos, create_graph)
    roots = _roots(outputs)
    capture = {}
    slots = []
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        e = edge_of(t)
        slots.append(capture.setdefault(e, len(capture)))
    got = run_backward(roots, grads, retain_graph, create_graph, capture, accumulate=False)
    res = []
    for t, s in zip(inputs, slots):
        g = got[s]
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                g = ember.zeros_like(t)
        elif tuple(g.shape) != tuple(t.shape):
            g = _engine._sum_to(g, t.shape)
        res.append(g)
    return tuple(res)


# ---------------------------------------------------------------------------------------------
# the Tensor API


_NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.")


def _get_grad(self):
    d = self._ag
    g = d.get("_grad")
    if g is None:
        e = d.get("_ag_edge")
        if e is not None and not e[0]._retains(e[1]):
            import warnings

            warnings.warn(_NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
    return g


def _set_grad_attr(self, value):
    if value is not None:
        if not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if tuple(value.shape) != tuple(self.shape):
            raise RuntimeError("assigned grad has data of a different size")
        wanted = self._ag.get("grad_dtype", self.dtype)
        if wanted is not None and value.dtype != wanted:  # torch 2.13's message
            raise RuntimeError(
                f"attempting to assign a gradient with dtype '{value.dtype._cpp_name}' to a "
                f"tensor with grad_dtype '{wanted._torch_name}'. The gradient must match the "
                "tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
                "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
                "grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may "
                "break downstream systems that assume they match.")
    self._ag["_grad"] = value


def _get_grad_dtype(self):
    """The dtype gradients are cast to when accumulated into ``.grad`` (None: any dtype is
    kept); the tensor's own dtype unless set. Leaf tensors only, as torch's."""
    if self._ag.get("_ag_edge") is not None:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return self._ag.get("grad_dtype", self.dtype)


def _set_grad_dtype(self, dtype):
    if self._ag.get("_ag_edge") is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if dtype is not None and not isinstance(dtype, ember.dtype):
        raise TypeError(f"grad_dtype must be a dtype or None, not {type(dtype).__name__}")
    old = self._ag.get("_grad")
    if old is not None and dtype is not None and old.dtype != dtype:
        raise RuntimeError(
            f"Cannot set grad_dtype to '{dtype._torch_name}' because there is already a gradient "
            f"with dtype '{old.dtype._cpp_name}'. Please clear the gradient (.grad = None) "
            "before changing grad_dtype, or ensure the new grad_dtype matches the existing "
            "gradient's dtype.")
    self._ag["grad_dtype"] = dtype


def _get_grad_fn(self):
    if _engine._REBASES[0]:
        _engine._refresh_view(self)
    e = self._ag.get("_ag_edge")
    return e[0] if e is not None else None


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _retain_grad(self):
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    e = self._ag.get("_ag_edge")
    if e is None:
        return  # leaves keep their grad anyway
    node, nr = e
    node._retain_grad(nr, self)


def _retains_grad(self):
    e = self._ag.get("_ag_edge")
    return bool(e is not None and e[0]._retains(e[1]))


def _register_hook(self, hook):
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node, nr = edge_of(self)
    return node._register_tensor_hook(nr, hook)


def _register_post_accumulate_grad_hook(self, hook):
    if self._ag.get("_ag_edge") is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node, _ = edge_of(self)
    if node._post_acc_hooks is None:
        node._post_acc_hooks = []
    node._post_acc_hooks.append(hook)
    return _engine._Handle(node._post_acc_hooks, hook)


_core_detach_ = Tensor.detach_


def _detach_(self):
    out = _core_detach_(self)  # refuses views, with torch's message
    self._ag.pop("_ag_edge", None)
    return out


_core_requires_grad = Tensor.requires_grad  # the core's property (a C++ flag)
_core_requires_grad_ = Tensor.requires_grad_
_NONLEAF_RG = ("you can only change requires_grad flags of leaf variables. If you want to use a "
               "computed variable in a subgraph that doesn't require differentiation use "
               "var_no_grad = var.detach().")


def _set_requires_grad(self, value):
    if not value and self._ag.get("_ag_edge") is not None:
        raise RuntimeError(_NONLEAF_RG)
    _core_requires_grad.fset(self, value)


def _requires_grad_(self, requires_grad=True):
    if not isinstance(requires_grad, bool):  # (torch's parser: before its truth value is read)
        raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be bool, "
                        f"not {type(requires_grad).__name__}")
    if not requires_grad and self._ag.get("_ag_edge") is not None:
        raise RuntimeError(_NONLEAF_RG)
    return _core_requires_grad_(self, requires_grad)


def _as_subclass(self, cls):
    """torch.Tensor.as_subclass: the core's alias of ``self`` as a ``cls``, attached to the
    graph through a view of ``self`` (its gradient flows back to ``self``)."""
    obj = _core_as_subclass(self, cls)
    if self.requires_grad and _C.is_grad_enabled():
        alias = self.view_as(self)
        _engine._set_rg(obj, True)
        obj._ag["_ag_edge"] = alias._ag["_ag_edge"]
    return obj


_core_as_subclass = Tensor.as_subclass


def _install():
    Tensor.as_subclass = _as_subclass
    Tensor.requires_grad = property(_core_requires_grad.fget, _set_requires_grad)
    Tensor.requires_grad_ = _requires_grad_
    Tensor.grad = property(_get_grad, _set_grad_attr)
    Tensor.grad_dtype = property(_get_grad_dtype, _set_grad_dtype)
    Tensor.grad_fn = property(_get_grad_fn)
    Tensor.backward = _backward
    Tensor.retain_grad = _retain_grad
    Tensor.retains_grad = property(_retains_grad)
    Tensor.register_hook = _register_hook
    Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook
    Tensor.detach_ = _detach_
    Tensor.output_nr = property(lambda self: self._ag.get("_ag_edge", (None, 0))[1])
    Tensor.data = property(lambda self: self.detach(), _set_data)


def _set_data(self, value):
    """``t.data = value``: t now shares value's storage, shape and dtype (as in torch)."""
    if not isinstance(value, Tensor):
        raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
    self._set_data(value)


Variable = Tensor
_install()
_C._set_autograd_hook(_engine.hook)

from . import forward_ad, function, functional, grad_mode, graph, profiler  # noqa: E402,F401
