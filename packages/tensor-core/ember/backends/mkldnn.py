"""ember.backends.mkldnn: oneDNN (once called MKL-DNN), the optional library that runs ember's
float32 CPU convolutions where it is faster than ember's own kernels (csrc/runtime/onednn.h,
docs/architecture.md "Convolution"). It is loaded at run time, on the first convolution, from the
``onednn-cpu-gomp`` wheel (``pip install "ember-tensor[onednn]"``), ``$EMBER_ONEDNN_LIBRARY``
or the system; without it every convolution runs ember's kernels and ``is_available()`` is False.

- ``enabled``: True. False (or ``EMBER_ONEDNN=0`` in the environment) sends every convolution to
  ember's kernels.
- ``deterministic``: kept and read back, as torch's (oneDNN's convolutions give the same bits
  from run to run for a given thread count).
"""

import contextlib
import sys
import types

from ember import _C

# `enabled` is a property of the module's class (below), not a global: hence the noqa
__all__ = ["is_available", "enabled", "deterministic", "flags", "version"]  # noqa: F822

deterministic = False


def is_available() -> bool:
    """Whether oneDNN is installed and loads (this loads it, once)."""
    return bool(_C._onednn_available())


def version() -> str | None:
    """oneDNN's version ("3.2.0 (hash)"), or None when it is not available."""
    return (_C._onednn_version() or None) if is_available() else None


def _unavailable_reason() -> str:
    """Why is_available() is False ("" when it is True)."""
    return "" if is_available() else _C._onednn_load_error()


@contextlib.contextmanager
def flags(enabled=False, deterministic=False):
    module = sys.modules[__name__]
    orig = (module.enabled, module.deterministic)
    module.enabled, module.deterministic = bool(enabled), bool(deterministic)
    try:
        yield
    finally:
        module.enabled, module.deterministic = orig


class _MkldnnModule(types.ModuleType):
    """``enabled`` is the core's switch, read by every convolution: a property of the module."""

    @property
    def enabled(self) -> bool:
        return bool(_C._onednn_enabled())

    @enabled.setter
    def enabled(self, value) -> None:
        _C._set_onednn_enabled(bool(value))


sys.modules[__name__].__class__ = _MkldnnModule
