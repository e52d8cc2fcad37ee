"""Grad-mode switches. The flag lives in the core (thread-local, read by every op), so these work
with or without ember-autograd installed; ember.autograd re-exports them."""

from __future__ import annotations

import functools
import threading

from ember import _C


class _GradModeContext:
    """Base for context managers that are also decorators (``@ember.no_grad()``)."""

    _enabled: bool

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__._fresh(self):
                return fn(*args, **kwargs)

        return wrapper

    @staticmethod
    def _fresh(ctx):
        return ctx.__class__.__new__(ctx.__class__)._init_like(ctx)

    def _init_like(self, other):
        self.__dict__.update(other.__dict__)
        return self

    def clone(self):
        return self._fresh(self)


class _NoParamDecorator(_GradModeContext):
    """Also a decorator without parentheses, as torch's: ``@ember.no_grad``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator):  # noqa: N801
    """Disables gradient recording inside the block (or the decorated function)."""

    def __init__(self, orig_func=None) -> None:
        self._enabled = False


class enable_grad(_NoParamDecorator):  # noqa: N801
    """Enables gradient recording inside the block, e.g. within ``no_grad``."""

    def __init__(self, orig_func=None) -> None:
        self._enabled = True


class set_grad_enabled(_GradModeContext):  # noqa: N801
    """Sets grad mode on or off; works as a function call, a context manager or a decorator."""

    def __init__(self, mode: bool) -> None:
        self._prev = _C.is_grad_enabled()
        self._enabled = bool(mode)
        _C._set_grad_enabled(self._enabled)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


_state = threading.local()  # inference mode is per thread, as grad mode is


class inference_mode(_GradModeContext):  # noqa: N801
    """Like ``no_grad`` (ember keeps no extra per-tensor state that inference mode could skip)."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # @ember.inference_mode without parentheses, as torch's

    def __init__(self, mode: bool = True) -> None:
        self._enabled = not mode
        self._mode = mode

    def __enter__(self):
        self._prev_inference = getattr(_state, "inference", False)
        _state.inference = self._mode
        return super().__enter__()

    def __exit__(self, *exc):
        _state.inference = self._prev_inference
        return super().__exit__(*exc)


def is_inference_mode_enabled() -> bool:
    return getattr(_state, "inference", False)
