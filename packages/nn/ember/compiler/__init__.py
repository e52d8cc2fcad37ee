"""``ember.compiler``: torch.compiler's controls over ember.compile (``reset``,
``is_compiling``, ``disable``); docs/compile.md."""

from __future__ import annotations

import functools

__all__ = ["disable", "is_compiling", "reset"]


def reset() -> None:
    """Forgets every compiled graph (torch.compiler.reset)."""
    from ember import _dynamo
    _dynamo.reset()


def is_compiling() -> bool:
    """True while ember.compile (or ember.fx) is capturing the calling code: a model can
    skip what a graph should not hold (logging, assertions on values)."""
    from ember.fx.proxy import current_tracer
    return current_tracer() is not None


def disable(fn=None, recursive: bool = True):
    """Keeps ``fn`` out of captured graphs: called with traced values it becomes one
    ``call_function`` node that runs ``fn`` eagerly each time (its inside is not captured, so
    it may branch on data). Usable as ``@ember.compiler.disable``."""
    if fn is None:
        return functools.partial(disable, recursive=recursive)

    @functools.wraps(fn)
    def run_eagerly(*args, **kwargs):
        from ember.fx.proxy import _has_proxy, current_tracer
        tracer = current_tracer()
        if tracer is not None and not tracer._evaluating and _has_proxy(args, kwargs):
            return tracer.create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)
    run_eagerly._ember_compiler_disabled = True
    return run_eagerly
