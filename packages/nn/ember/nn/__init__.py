"""``ember.nn``: modules, layers, losses (torch.nn's API). ``ember.nn.functional`` holds the
function forms, ``ember.nn.init`` the initialisers."""

from . import attention, common_types, functional, grad, init, parallel, utils  # noqa: F401
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


def factory_kwargs(kwargs):
    """torch.nn.factory_kwargs: the ``device`` / ``dtype`` / ``memory_format`` entries of a
    module's ``**kwargs`` (and of its ``factory_kwargs`` entry), checked, for factory calls."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r


__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "DataParallel", "functional", "init", "factory_kwargs", *_modules_all]
