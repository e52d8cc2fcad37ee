"""``ember.nn``: modules, layers, losses (torch.nn's API). ``ember.nn.functional`` holds the
function forms, ``ember.nn.init`` the initialisers."""

from . import functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .modules.module import _IncompatibleKeys  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from .parameter import (  # noqa: F401
    Buffer,
    Parameter,
    UninitializedBuffer,
    UninitializedParameter,
)

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "DataParallel", "functional", "init", *_modules_all]
