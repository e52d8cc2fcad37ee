"""Process-wide numerical settings under torch's names: deterministic algorithms and the float32
matrix-product precision.

What they change in ember: nothing in the results. ember has one algorithm per op, so there is
no nondeterministic variant to turn off or faster one to turn on, and its float32 matrix products
run in full float32 (no TF32 or bfloat16 passes). The settings are kept so that programs that
set them run and read back what they set, with torch's argument checks.
"""

from __future__ import annotations

import warnings

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision"]

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
    if not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
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
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision
