"""ember.autograd.graph: the graph's Node type, gradient edges, saved-tensor hooks and hooks on
several tensors at once."""

from __future__ import annotations

import contextlib
import threading
from typing import NamedTuple

from ember import _C

from ._engine import TLS, AccumulateGrad, Node, _Handle, edge_of  # noqa: F401
from ._sweep import queue_callback

Variable = _C.Tensor
RemovableHandle = _Handle  # what the register_*hook functions return


class GradientEdge(NamedTuple):
    """Where a gradient flows: ``node`` and its input ``output_nr`` (usable as an input or output
    of ``autograd.grad``)."""

    node: object
    output_nr: int
    ownership_token: object = None


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge through which `tensor`'s gradient flows (its grad_fn, or its AccumulateGrad
    node for a leaf)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, nr = edge_of(tensor)
    return GradientEdge(node, nr)


class _MultiHandle(_Handle):
    """One handle for the hooks registered on several tensors."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """``mode='all'``: ``fn(grads)`` once per backward that reaches any of `tensors`, with the
    gradient of each (None where the backward computed none), after that backward's sweep;
    ``mode='any'``: ``fn(grad)`` with the first of their gradients computed."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    if mode == "any":
        state = {"fired": False}

        def reset():
            state["fired"] = False

        def any_hook(grad):
            with lock:
                if state["fired"]:
                    return
                state["fired"] = True
                queue_callback(reset)
            fn(grad)

        return _MultiHandle([t.register_hook(any_hook) for t in tensors if t.requires_grad])

    pending: dict = {}

    def finish():
        grads = [pending.get(i) for i in range(len(tensors))]
        pending.clear()
        fn(grads)

    def make_hook(i):
        def hook(grad):
            with lock:
                if not pending:
                    queue_callback(finish)
                pending[i] = grad

        return hook

    return _MultiHandle([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)
                         if t.requires_grad])


def _stack() -> list:
    st = TLS.saved_hooks
    if st is None:
        st = TLS.saved_hooks = []
    return st


class saved_tensors_hooks:  # noqa: N801
    """Within the block, every tensor a node saves goes through ``pack_hook`` and comes back in
    backward through ``unpack_hook`` (e.g. to offload or compress activations)."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        _stack().append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _stack().pop()
        return False


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    """Every tensor lives on the CPU already: saved tensors are kept as they are."""

    def __init__(self, pin_memory: bool = False) -> None:
        super().__init__(lambda t: t, lambda t: t)


class disable_saved_tensors_hooks:  # noqa: N801
    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self):
        self.prev = list(_stack())
        _stack().clear()
        return self

    def __exit__(self, *exc):
        _stack()[:] = self.prev
        return False


def increment_version(tensor) -> None:
    tensor._bump_version()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Within the block, a tensor saved for backward may be modified in place afterwards: every
    saved tensor is cloned when saved (torch clones lazily, on the first mutation), so backward
    sees the values of the forward."""
    with saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        yield
