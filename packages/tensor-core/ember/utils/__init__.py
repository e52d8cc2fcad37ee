"""ember.utils: utilities of the core (``ember.utils.safetensors``,
``ember.utils.cpp_extension``), and a namespace that other distributions extend: ember-data
installs ``ember.utils.data``, ember-autograd ``ember.utils.checkpoint``.

``__path__`` is extended with pkgutil, so an ``ember/utils/`` folder from another distribution
(also an editable install elsewhere on sys.path) contributes its sub-packages here. Such a
distribution must not ship an ``ember/utils/__init__.py`` of its own, or must ship this same one.
"""

from __future__ import annotations

import importlib
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

# Sub-packages provided by other distributions, imported on first touch.
_COMPONENTS = {"data": "ember-data", "checkpoint": "ember-autograd"}


def __getattr__(name: str):
    if name in ("safetensors", "cpp_extension"):  # the core's own, imported on first touch
        return importlib.import_module(f"{__name__}.{name}")
    if name in _COMPONENTS:
        module = f"{__name__}.{name}"
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is not None and e.name != module and not module.startswith(e.name):
                raise
            from ember import _not_installed

            raise ImportError(_not_installed(module, _COMPONENTS[name])) from None
        globals()[name] = mod
        return mod
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
