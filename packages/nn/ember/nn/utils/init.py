"""torch.nn.utils.init: ``skip_init``."""

from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Build ``module_cls(*args, **kwargs)`` on ``kwargs['device']`` (default CPU).

    torch builds it on the meta device and allocates uninitialised storage; ember has no meta
    device, so the module is built directly and its parameters hold the usual initial
    values. Either way the caller is expected to overwrite them.
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs)
