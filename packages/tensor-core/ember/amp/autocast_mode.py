"""Autocast: ops run in lower precision (float16/bfloat16) where that is safe, as torch.autocast.

The state (per device type: enabled, dtype; the weight-cast cache) is thread-local, as torch's.
The core keeps one flag per thread (``_C._set_autocast_active``) that says whether any device's
autocast is on; with it off an op pays one load of a global and nothing else. With it on, a call
of an op listed in ``ember.amp._lists`` (by name) goes through :func:`_autocast_hook` from the
core's dispatch (``redispatch``), for functions and methods alike, and the op then runs on the
cast tensors with autocast off for that call (torch's Autocast key excludes itself the same way).
The ``ember.nn.functional`` functions that ember composes in Python and torch lists are wrapped
(:func:`wrap_functional`) so that they are cast as a whole.

Casts are ``Tensor.to(dtype)`` calls: recorded by autograd, so gradients flow back to the
original tensors in their own dtype. Casts of float32 leaf tensors that require grad (the
parameters) to the region's dtype are cached until the outermost region exits
(``cache_enabled``), as torch does.
"""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any

import ember
from ember import _C
from ember.amp._lists import BANNED, BANNED_MESSAGE, FP32, FUNCTIONAL, LOWER, POLICIES, PROMOTE

__all__ = [
    "autocast", "is_autocast_available", "custom_fwd", "custom_bwd",
    "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
    "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype",
    "set_autocast_cpu_dtype", "is_autocast_gpu_enabled", "set_autocast_gpu_enabled",
    "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "is_autocast_cache_enabled",
    "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
    "autocast_decrement_nesting",
]

_DEVICE_TYPES = ("cpu", "cuda")
_DEFAULT_DTYPE = {"cpu": ember.bfloat16, "cuda": ember.float16}
# Tensors autocast casts: floating point, float64 left alone (torch's is_eligible).
_ELIGIBLE = frozenset((ember.float16, ember.bfloat16, ember.float32))
_LOWER_DTYPES = (ember.float16, ember.bfloat16)


class _State(threading.local):
    def __init__(self):
        self.enabled = dict.fromkeys(_DEVICE_TYPES, False)
        self.dtype = dict(_DEFAULT_DTYPE)
        self.cache_enabled = True
        self.nesting = 0
        self.cache: dict[int, tuple[Any, Any]] = {}  # id(weight) -> (weight, its cast)


_state = _State()


def _sync_core() -> None:
    _C._set_autocast_active(any(_state.enabled.values()))


def _check_bool(fn: str, name: str, position: int, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be bool, not "
                        f"{type(value).__name__}")
    return value


def _check_dtype(fn: str, position: int, value):
    if not isinstance(value, ember.dtype):
        raise TypeError(f"{fn}(): argument 'dtype' (position {position}) must be torch.dtype, "
                        f"not {type(value).__name__}")
    return value


def _check_legacy_dtype(value):
    if not isinstance(value, ember.dtype):
        raise TypeError(f"dtype must be a torch.dtype (got {type(value).__name__})")
    return value


def _check_device_type(device_type, op: str | None = None) -> str:
    """autocast's ValueError; the state functions' (`op`) TypeError of torch's parser."""
    if not isinstance(device_type, str):
        if op is not None:
            raise TypeError(f"{op}(): argument 'device_type' (position 1) must be str, not "
                            f"{type(device_type).__name__}")
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


# ---- the state, under torch's names ----

def is_autocast_available(device_type: str) -> bool:
    """True for the device types autocast supports here: ``"cpu"`` and ``"cuda"``."""
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (torch: no argument means CUDA)."""
    return _state.enabled[_check_device_type("cuda" if device_type is None else device_type,
                                             "is_autocast_enabled")]


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or torch's older one-argument form for
    CUDA."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _check_bool("set_autocast_enabled", "enabled", 2, enabled)
    _state.enabled[_check_device_type(device_type, "set_autocast_enabled")] = enabled
    _sync_core()


def get_autocast_dtype(device_type: str):
    return _state.dtype[_check_device_type(device_type, "get_autocast_dtype")]


def set_autocast_dtype(device_type: str, dtype) -> None:
    _state.dtype[_check_device_type(device_type, "set_autocast_dtype")] = _check_dtype(
        "set_autocast_dtype", 2, dtype)


def is_autocast_cpu_enabled() -> bool:
    return _state.enabled["cpu"]


def set_autocast_cpu_enabled(enabled: bool, /) -> None:
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    return _state.dtype["cpu"]


def set_autocast_cpu_dtype(dtype, /) -> None:
    _state.dtype["cpu"] = _check_legacy_dtype(dtype)


def is_autocast_gpu_enabled() -> bool:
    return _state.enabled["cuda"]


def set_autocast_gpu_enabled(enabled: bool, /) -> None:
    set_autocast_enabled("cuda", enabled)


def get_autocast_gpu_dtype():
    return _state.dtype["cuda"]


def set_autocast_gpu_dtype(dtype, /) -> None:
    _state.dtype["cuda"] = _check_legacy_dtype(dtype)


def is_autocast_cache_enabled() -> bool:
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _state.cache_enabled = enabled


def clear_autocast_cache() -> None:
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    _state.nesting -= 1
    return _state.nesting


# ---- the context manager ----

class autocast:
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: inside the region,
    the listed ops on tensors of ``device_type`` run in ``dtype`` (CPU: bfloat16 by default,
    float16 allowed; CUDA: float16 by default, bfloat16 allowed), in float32, or in the widest
    input dtype, as torch.autocast. Usable as a decorator; regions nest, and
    ``enabled=False`` inside a region turns it off for its body."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'")
        self.fast_dtype = (get_autocast_dtype(device_type) if dtype is None
                           else _check_dtype("autocast", 2, dtype))
        if cache_enabled is not None and not isinstance(cache_enabled, bool):
            raise TypeError(f"enabled must be a bool (got {type(cache_enabled).__name__})")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else cache_enabled
        if enabled and device_type == "cuda" and not _cuda_available():
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                          "Disabling", stacklevel=2)
            enabled = False
        if device_type == "cpu" and enabled and self.fast_dtype not in _LOWER_DTYPES:
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtype of "
                + ", ".join(str(d) for d in (ember.bfloat16, ember.float16)) + " currently.",
                stacklevel=2)
            enabled = False
        if device_type == "cuda" and enabled and self.fast_dtype not in _LOWER_DTYPES:
            raise RuntimeError(
                "In CUDA autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CUDA Autocast only supports dtype of torch.bfloat16, torch.float16 currently.")
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        _state.enabled[self.device] = self._enabled
        _state.dtype[self.device] = self.fast_dtype
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        _sync_core()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        _state.enabled[self.device] = self.prev
        _state.dtype[self.device] = self.prev_fastdtype
        set_autocast_cache_enabled(self.prev_cache_enabled)
        _sync_core()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cuda_available() -> bool:
    from ember import cuda

    return cuda.is_available()


# ---- casting: the hook the core calls, and the wrappers of Python-composed functions ----

def _device_of(args, kwargs) -> str | None:
    """The device type of the first tensor among the arguments (one level into sequences)."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, ember.Tensor):
            return "cuda" if a.is_cuda else "cpu"
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, ember.Tensor):
                    return "cuda" if b.is_cuda else "cpu"
    return None


def _eligible(t, device_type: str) -> bool:
    return t.dtype in _ELIGIBLE and (t.is_cuda == (device_type == "cuda"))


def _cast(t, dtype, device_type: str):
    if not _eligible(t, device_type) or t.dtype == dtype:
        return t
    # A parameter's cast is made once per region (torch's cached_cast)
    if (_state.cache_enabled and dtype in _LOWER_DTYPES and t.dtype == ember.float32
            and t.requires_grad and t.is_leaf and not t._is_view()):
        hit = _state.cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        cast = t.to(dtype)
        _state.cache[id(t)] = (t, cast)
        return cast
    return t.to(dtype)


def _map(value, fn):
    if isinstance(value, ember.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, ember.Tensor) for v in value):
        return type(value)(fn(v) if isinstance(v, ember.Tensor) else v for v in value)
    return value


def _promote_dtype(args, kwargs, device_type: str):
    # torch's prioritize: float32 wins over the region's dtype; another half type is an error
    lower = _state.dtype[device_type]
    widest = lower
    for a in (*args, *kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if not isinstance(t, ember.Tensor) or not _eligible(t, device_type):
                continue
            if t.dtype == ember.float32:
                widest = ember.float32
            elif t.dtype != lower:
                raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return widest


def _autocast_hook(name: str, args: tuple, kwargs: dict):
    """Called by the core for a listed op inside an autocast region: the cast (args, kwargs), or
    None when nothing changes."""
    device_type = _device_of(args, kwargs)
    if device_type is None or not _state.enabled[device_type]:
        return None
    policy = POLICIES[device_type].get(name)
    if policy is None:
        return None
    if policy == LOWER:
        dtype = _state.dtype[device_type]
    elif policy == FP32:
        dtype = ember.float32
    elif policy == PROMOTE:
        dtype = _promote_dtype(args, kwargs, device_type)
    else:
        assert policy == BANNED
        raise RuntimeError(BANNED_MESSAGE)

    def cast(t):
        return _cast(t, dtype, device_type)

    return tuple(_map(a, cast) for a in args), {k: _map(v, cast) for k, v in kwargs.items()}


def _listed_function(name: str, fn):
    """`fn` (composed in Python) cast as a whole in an autocast region, its parts run with
    autocast off; outside a region, one flag check."""

    @functools.wraps(fn)
    def autocast_wrapper(*args, **kwargs):
        if not _C._is_autocast_active():
            return fn(*args, **kwargs)
        cast = _autocast_hook(name, args, kwargs)
        if cast is None:
            return fn(*args, **kwargs)
        prev = _C._autocast_exclude(True)
        try:
            return fn(*cast[0], **cast[1])
        finally:
            _C._autocast_exclude(prev)

    autocast_wrapper.__wrapped_for_autocast__ = fn
    return autocast_wrapper


def wrap_functional(namespace: dict) -> None:
    """Rebinds the listed functions of a module namespace (``ember.nn.functional``'s globals)."""
    for name in FUNCTIONAL:
        fn = namespace.get(name)
        if fn is not None and not hasattr(fn, "__wrapped_for_autocast__"):
            namespace[name] = _listed_function(name, fn)


_C._set_autocast_hook(_autocast_hook, sorted(set(POLICIES["cpu"]) | set(POLICIES["cuda"])))


# ---- custom autograd Functions under autocast ----

def _cast_inputs(value, device_type: str, dtype):
    if isinstance(value, ember.Tensor):
        return value.to(dtype) if _eligible(value, device_type) else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast_inputs(k, device_type, dtype): _cast_inputs(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for the ``forward`` of a custom autograd Function: with ``cast_inputs`` given,
    inside an autocast region the floating-point tensor inputs are cast to it and ``forward``
    runs with autocast off; without, ``forward`` runs under the surrounding state (and
    :func:`custom_bwd` makes ``backward`` run under that same state)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast_inputs(args, device_type, cast_inputs),
                           **_cast_inputs(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for the ``backward`` of a custom autograd Function: runs it under the autocast
    state its ``forward`` (decorated with :func:`custom_fwd`) ran under."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
