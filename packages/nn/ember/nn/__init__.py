"""``ember.nn``: modules, layers, losses (torch.nn's API). ``ember.nn.functional`` holds the
function forms, ``ember.nn.init`` the initialisers."""

from . import functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .modules.module import _IncompatibleKeys  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401

__all__ = ["Parameter", "Buffer", "functional", "init", *_modules_all]
