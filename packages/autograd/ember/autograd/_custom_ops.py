"""Recording calls of ``ember.library`` custom ops.

The core's hook hands a custom op's call over like a built-in's (``hook("mylib::op", kernel,
args, kwargs)``); it has no entry in the gradient table, so it is recorded as one Function node
whose backward is the one given to ``register_autograd`` (``setup_context(ctx, inputs, output)``
after the forward, ``backward(ctx, *grads)`` in the sweep), named as torch names it
(``GeneratedBackwardFor_mylib_op_defaultBackward``). An op without a registered backward still
records its node, so that backward raises torch's error instead of silently giving no gradient.
"""

from __future__ import annotations

from .function import Function

# op object -> (backward, setup_context, Function subclass): rebuilt when the op's autograd
# registration changes.
_FUNCTIONS: dict = {}


def run(op, args, kwargs):
    """Runs and records one call of the custom op `op` (grad mode on, an input requires grad)."""
    if any(p.mutable for p in op.params):
        raise RuntimeError(f"{op.name}: ops that mutate their inputs have no autograd support "
                           "(call it under ember.no_grad(), or on tensors that do not require "
                           "grad)")
    cached = _FUNCTIONS.get(op)
    if cached is None or cached[0] is not op._backward or cached[1] is not op._setup_context:
        cached = (op._backward, op._setup_context, _function_for(op))
        _FUNCTIONS[op] = cached
    return cached[2].apply(*args, **kwargs)


def _function_for(op):
    dotted = f"{op.namespace}.{op.op_name}.default"
    backward_fn, setup_context = op._backward, op._setup_context

    def forward(ctx, *args, **kwargs):
        out = op._dispatch(*args, **kwargs)
        ctx.keyword_only_inputs = kwargs
        if setup_context is not None:
            setup_context(ctx, args, out)
        return out

    def backward(ctx, *grads):
        if backward_fn is None:
            raise RuntimeError(f"Trying to backward through {dotted} but no autograd formula "
                               "was registered. Please use register_autograd to add one.")
        return backward_fn(ctx, *grads)

    name = f"GeneratedBackwardFor_{op.namespace}_{op.op_name}_default"
    return type(name, (Function,), {"forward": staticmethod(forward),
                                    "backward": staticmethod(backward)})
