"""ember.backends.mkldnn: oneDNN, which ember does not use (its CPU kernels are its own, with
OpenBLAS for matrix products). ``enabled`` is kept and read back."""

import contextlib

__all__ = ["is_available", "enabled", "deterministic", "flags"]

enabled = True
deterministic = False


def is_available() -> bool:
    """False: ember is not built with oneDNN."""
    return False


@contextlib.contextmanager
def flags(enabled=False, deterministic=False):
    global_vars = globals()
    orig = (global_vars["enabled"], global_vars["deterministic"])
    global_vars["enabled"], global_vars["deterministic"] = bool(enabled), bool(deterministic)
    try:
        yield
    finally:
        global_vars["enabled"], global_vars["deterministic"] = orig
