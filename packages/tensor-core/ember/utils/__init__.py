"""ember.utils: a namespace shared by several distributions (``ember.utils.data`` is ember-data's).

extend_path adds the ember/utils folder of every sys.path entry, so sub-packages installed by
other distributions (also editable ones) are found.
"""

from __future__ import annotations

import importlib
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

_COMPONENTS = {"data": ("ember.utils.data", "ember-data")}


def __getattr__(name: str):
    if name in _COMPONENTS:
        module, dist = _COMPONENTS[name]
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name is not None and e.name != module:
                raise
            raise ImportError(
                f"ember.utils.{name} is provided by the {dist} distribution, which is not "
                f"installed: pip install {dist}"
            ) from None
        globals()[name] = mod
        return mod
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
