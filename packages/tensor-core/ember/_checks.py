"""Argument checks for the ops written in Python, with torch's TypeErrors.

torch's argument parser refuses a wrong type before the op runs ("kron(): argument 'other'
(position 2) must be Tensor, not int"); an op written in Python would otherwise fail somewhere
inside with an AttributeError ('int' object has no attribute 'dim'), which `except TypeError`
does not catch. The check costs one isinstance per tensor parameter.
"""

from __future__ import annotations

import functools
import inspect
import numbers

from ember import _C

_Tensor = _C.Tensor


def _type_name(x) -> str:
    return "NoneType" if x is None else type(x).__name__


def _is_int_arg(x) -> bool:
    """What torch's parser takes for an `int` parameter: an int (not a bool), a NumPy integer,
    or a 0-d integer tensor."""
    if isinstance(x, _Tensor):
        return x.dim() == 0 and x.dtype != _C.bool and not x.dtype.is_floating_point \
            and not x.dtype.is_complex
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_float_arg(x) -> bool:
    """A real number (bools and ints too) or a 0-d real tensor."""
    if isinstance(x, _Tensor):
        return x.dim() == 0 and not x.dtype.is_complex
    return isinstance(x, numbers.Real)


_SCALAR_CHECKS = {"int": _is_int_arg, "bool": lambda x: isinstance(x, bool),
                  "float": _is_float_arg}
_PYTHON_TYPE = {"int": int, "bool": bool, "float": float}


def tensor_args(*names: str, op: str | None = None):
    """Decorator: the parameters `names` must be Tensors (None passes where the default is None).
    A variadic parameter (``*tensors``) must hold Tensors, or be one list or tuple of them.
    Parameters annotated ``int``, ``bool`` or ``float`` (or ``int | None``, ...) must hold what
    torch's parser takes for that type (NumPy numbers and 0-d tensors reach the function as
    Python numbers).
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
        typed = []  # (name, position or None, type name, accepts)
        for p in params:
            ann = p.annotation if isinstance(p.annotation, str) else getattr(
                p.annotation, "__name__", None)
            may_be_none = isinstance(ann, str) and ann.endswith(" | None")
            if may_be_none:
                ann = ann.removesuffix(" | None")
            if ann in _SCALAR_CHECKS:
                pos = params.index(p) if p.kind in (p.POSITIONAL_ONLY,
                                                    p.POSITIONAL_OR_KEYWORD) else None
                typed.append((p.name, pos, ann, _SCALAR_CHECKS[ann], may_be_none))
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
            for name, pos, type_name, accepts, may_be_none in typed:
                if pos is not None and pos < len(args):
                    x = args[pos]
                elif name in kwargs:
                    x = kwargs[name]
                else:
                    continue  # the default
                if x is None and may_be_none:
                    continue
                if not accepts(x):
                    where = f" (position {pos + 1})" if pos is not None else ""
                    raise TypeError(f"{name_in_messages}(): argument '{name}'{where} must be "
                                    f"{type_name}, not {_type_name(x)}")
                if type(x) is not _PYTHON_TYPE[type_name]:  # a NumPy number, a 0-d tensor
                    x = _PYTHON_TYPE[type_name](x)
                    if pos is not None and pos < len(args):
                        args = args[:pos] + (x,) + args[pos + 1:]
                    else:
                        kwargs[name] = x
            return fn(*args, **kwargs)

        return checked

    return decorate


_REDUCED_FLOATS = (_C.float16, _C.bfloat16)


def scalar_fits(value, dtype, opmath: bool = False) -> None:
    """torch's checked conversion of a number argument into the dtype its kernel computes in
    (RuntimeError "value cannot be converted to type float without overflow"). opmath: the
    kernel computes float16/bfloat16 in float32, so the number is checked against float32."""
    if isinstance(value, numbers.Number):
        _C._check_scalar_fits(value, _C.float32 if opmath and dtype in _REDUCED_FLOATS else dtype)
