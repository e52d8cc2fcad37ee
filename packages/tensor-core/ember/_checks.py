"""Argument checks for the ops written in Python, with torch's TypeErrors.

torch's argument parser refuses a wrong type before the op runs ("kron(): argument 'other'
(position 2) must be Tensor, not int"); an op written in Python would otherwise fail somewhere
inside with an AttributeError ('int' object has no attribute 'dim'), which `except TypeError`
does not catch. The check costs one isinstance per tensor parameter.
"""

from __future__ import annotations

import functools
import inspect

from ember import _C

_Tensor = _C.Tensor


def _type_name(x) -> str:
    return "NoneType" if x is None else type(x).__name__


def tensor_args(*names: str, op: str | None = None):
    """Decorator: the parameters `names` must be Tensors (None passes where the default is None).
    A variadic parameter (``*tensors``) must hold Tensors, or be one list or tuple of them.
    Messages name the op `op` (default: the function's name)."""

    def decorate(fn):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        checks = []  # (name, position or None for keyword-only, may be None, variadic)
        for name in names:
            p = sig.parameters[name]
            pos = params.index(p) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                                 p.VAR_POSITIONAL) else None
            checks.append((name, pos, p.default is None, p.kind == p.VAR_POSITIONAL))
        name_in_messages = op or fn.__name__

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            for name, pos, optional, variadic in checks:
                if variadic:
                    items = args[pos:]
                    if len(items) == 1 and isinstance(items[0], (list, tuple)):
                        items = items[0]
                    for i, x in enumerate(items):
                        if not isinstance(x, _Tensor):
                            raise TypeError(f"expected Tensor as element {i} in argument {pos}, "
                                            f"but got {_type_name(x)}")
                    continue
                x = args[pos] if pos is not None and pos < len(args) else kwargs.get(name)
                if x is None and (optional or (pos is not None and pos >= len(args)
                                               and name not in kwargs)):
                    continue  # absent: the call's own signature error (or default) applies
                if not isinstance(x, _Tensor):
                    where = f" (position {pos + 1})" if pos is not None else ""
                    raise TypeError(f"{name_in_messages}(): argument '{name}'{where} must be "
                                    f"Tensor, not {_type_name(x)}")
            return fn(*args, **kwargs)

        return checked

    return decorate
