"""Process-wide settings under torch's names: deterministic algorithms, the float32
matrix-product precision, warn-always, the inter-op thread count, and what the build has.

What they change in ember: deterministic algorithms keep cuDNN convolutions on a GPU to
deterministic algorithms (the CPU kernels and ember's own CUDA kernels have one algorithm per op,
deterministic already); the float32 matrix precision is read back (ember's float32 products run
in full float32). The rest are kept so that programs that set them run and read back what they
set, with torch's argument checks.
"""

from __future__ import annotations

import warnings

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "set_warn_always", "is_warn_always_enabled",
           "get_num_interop_threads", "set_num_interop_threads", "init_num_threads",
           "has_lapack", "has_mkl", "has_openmp", "has_spectral", "typename", "is_distributed",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]

_deterministic = False
_warn_only = False
_matmul_precision = "highest"


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Asks for deterministic algorithms (torch raises or warns where an op has no
    deterministic implementation; ember has one implementation per op and raises for none)."""
    global _deterministic, _warn_only
    if not isinstance(mode, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _deterministic, _warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _warn_only


def set_deterministic_debug_mode(debug_mode) -> None:
    """``"default"``/0 (off), ``"warn"``/1, ``"error"``/2: the same setting as
    use_deterministic_algorithms, as torch's."""
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = modes[debug_mode]
    if not isinstance(debug_mode, int):  # (a bool is an int, as torch's)
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")


def get_deterministic_debug_mode() -> int:
    if not _deterministic:
        return 0
    return 1 if _warn_only else 2


def set_float32_matmul_precision(precision: str) -> None:
    """``"highest"`` (default), ``"high"`` or ``"medium"``; ember computes float32 products in
    float32 at every setting. An unknown value warns and changes nothing, as torch."""
    global _matmul_precision
    if not isinstance(precision, str):
        raise RuntimeError("set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision


# ---- warn-always, threads, what the build has ----

_warn_always = False
_interop_threads = None  # None: not set (the default is the CPU count, as torch's)

has_lapack = True  # OpenBLAS's LAPACK (scipy-openblas32): ember.linalg
has_mkl = False
has_openmp = False  # ember's own thread pool
has_spectral = False  # ember.fft has the helpers (fftfreq, fftshift, ...), not the transforms


def set_warn_always(b: bool) -> None:
    """torch's warn-always flag (warnings that torch gives once are given every time): read
    back by is_warn_always_enabled()."""
    global _warn_always
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always = b


def is_warn_always_enabled() -> bool:
    return _warn_always


def get_num_interop_threads() -> int:
    """The inter-op thread count: what set_num_interop_threads set, else the CPU count (ember
    runs ops one after another and has no inter-op pool)."""
    import os

    return _interop_threads if _interop_threads is not None else (os.cpu_count() or 1)


def set_num_interop_threads(n: int) -> None:
    """Sets the inter-op thread count once, as torch (a second call raises its error)."""
    global _interop_threads
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"set_num_interop_threads(): argument 'int' must be int, not "
                        f"{type(n).__name__}")
    if n <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _interop_threads = n


def init_num_threads() -> None:
    """torch's per-thread initialisation of the intra-op settings: ember's pool needs none."""


def typename(obj) -> str:
    """The type's name, as torch.typename: a tensor's type() ('ember.FloatTensor'), else the
    qualified name of the object (a class or function) or of its class."""
    from ember import _C

    if isinstance(obj, _C.Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_distributed(obj) -> bool:
    """torch.is_distributed: a tensor's is_distributed(), always False."""
    from ember import _C

    if not isinstance(obj, _C.Tensor):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(obj).__name__}")
    return obj.is_distributed()


def _anomaly_mode():
    try:
        from ember.autograd import anomaly_mode
    except ImportError:
        return None
    return anomaly_mode


def is_anomaly_enabled() -> bool:
    mode = _anomaly_mode()
    return mode is not None and mode.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    mode = _anomaly_mode()
    return mode is not None and mode.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turns autograd's anomaly detection on or off (ember.autograd.set_detect_anomaly's
    state), as torch's."""
    for position, (name, value) in enumerate((("enabled", enabled), ("check_nan", check_nan))):
        if not isinstance(value, bool):
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {position + 1}) "
                            f"must be bool, not {type(value).__name__}")
    mode = _anomaly_mode()
    if mode is None:
        raise ImportError("anomaly detection is part of ember.autograd (the ember-autograd "
                          "distribution), which is not installed")
    mode.set_detect_anomaly(enabled, check_nan)

