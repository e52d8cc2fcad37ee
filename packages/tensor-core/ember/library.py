"""ember.library: user-defined ops that ember treats like its built-ins (torch.library's
``custom_op`` API).

    @ember.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: ember.Tensor, alpha: float) -> ember.Tensor:
        return my_extension.scale(x, alpha)        # a compiled function, or any ember code

    scale.register_autograd(backward, setup_context=setup_context)

An op is a name (``namespace::op``), a schema (torch's schema language, inferred from the type
annotations or given as ``schema=``) and a kernel per device type. A call checks its arguments
against the schema (torch's messages), then goes where a built-in op's call goes: to the autograd
hook when grad mode is on and an input requires grad (ember-autograd records one node, whose
backward is the registered ``backward``; without one, backward raises torch's error), and
otherwise to the kernel registered for the tensors' device type (``register_kernel("cuda", fn)``
gives a CUDA tensor's calls their own kernel). Code that works on ops as data (ember.compile)
finds an op with ``get_op(name)``: its ``schema`` and its kernels.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, NamedTuple

from ember import _C

__all__ = ["CustomOpDef", "custom_op", "get_op", "infer_schema", "list_ops", "register_autograd",
           "register_fake", "register_kernel"]

Tensor = _C.Tensor

# name -> CustomOpDef: every op defined in this process (a later definition of a name replaces
# the earlier one, as re-running a notebook cell does).
_OPS: dict[str, CustomOpDef] = {}


def get_op(name: str) -> CustomOpDef | None:
    """The op registered as `name` (``"namespace::op"``), or None."""
    return _OPS.get(name)


def list_ops() -> list[str]:
    """The names of the ops registered in this process."""
    return sorted(_OPS)


# ---- schemas ------------------------------------------------------------------------------------

_NO_DEFAULT = inspect.Parameter.empty


class Param(NamedTuple):
    name: str
    type: str  # "Tensor", "Tensor?", "Tensor[]", "SymInt", "float", ...
    default: Any  # _NO_DEFAULT when the argument is required
    kw_only: bool
    mutable: bool  # an alias annotation with "!": the op writes into this tensor


def _accepts(type_: str, value) -> bool:
    if type_.endswith("?"):
        return value is None or _accepts(type_[:-1], value)
    if type_.endswith("[]"):
        return isinstance(value, (list, tuple)) and all(_accepts(type_[:-2], v) for v in value)
    if type_ == "Tensor":
        return isinstance(value, Tensor)
    if type_ in ("int", "SymInt"):
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ in ("float", "SymFloat"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_ == "bool":
        return isinstance(value, bool)
    if type_ == "str":
        return isinstance(value, str)
    if type_ == "Scalar":
        return isinstance(value, (int, float, bool))
    if type_ == "ScalarType":
        return isinstance(value, _C.dtype)
    if type_ == "Device":
        import ember

        return isinstance(value, (ember.device, str))
    return True  # "Any"


_BASE_TYPES = ("Tensor", "int", "SymInt", "float", "SymFloat", "bool", "str", "Scalar",
               "ScalarType", "Device", "Any")


def _check_type(type_: str, where: str) -> None:
    base = type_.rstrip("?")
    while base.endswith("[]") or base.endswith("?"):
        base = base[:-2] if base.endswith("[]") else base[:-1]
    if base not in _BASE_TYPES:
        raise ValueError(f"{where}: unsupported type '{type_}' (the schema types are "
                         f"{', '.join(_BASE_TYPES)}, with [] for lists and ? for optional)")


def _split_top(text: str) -> list[str]:
    """Splits on commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _parse_default(text: str, type_: str):
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text[:1] in "\"'":
        return text[1:-1]
    if text.startswith("["):
        return [_parse_default(t, type_.rstrip("[]")) for t in _split_top(text[1:-1])]
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse_schema(schema: str, where: str = "schema") -> tuple[list[Param], list[str]]:
    """``"(Tensor x, *, float alpha=1.0) -> (Tensor, Tensor)"`` (the op's name may come first)
    -> its parameters and its return types."""
    text = schema.strip()
    if "(" not in text or "->" not in text:
        raise ValueError(f"{where}: expected a schema like '(Tensor x, float alpha) -> Tensor', "
                         f"got {schema!r}")
    args_part, _, ret_part = text[text.index("("):].rpartition("->")
    args_part = args_part.strip()
    if not (args_part.startswith("(") and args_part.endswith(")")):
        raise ValueError(f"{where}: the parameters must be in parentheses, got {schema!r}")
    params: list[Param] = []
    kw_only = False
    for item in _split_top(args_part[1:-1]):
        if item == "*":
            kw_only = True
            continue
        decl, eq, default = item.partition("=")
        fields = decl.split()
        if len(fields) != 2:
            raise ValueError(f"{where}: cannot read the parameter {item!r} (expected 'Type name')")
        type_, name = fields
        mutable = "!" in type_
        if "(" in type_:  # an alias annotation, Tensor(a0!)
            type_ = type_[:type_.index("(")] + type_[type_.index(")") + 1:]
        _check_type(type_, where)
        params.append(Param(name, type_, _parse_default(default.strip(), type_) if eq
                            else _NO_DEFAULT, kw_only, mutable))
    ret = ret_part.strip()
    if ret.startswith("("):
        returns = [r.split()[0] for r in _split_top(ret[1:-1])]
    else:
        returns = [ret.split()[0]]
    for r in returns:
        _check_type(r, where)
    return params, returns


def _annotation_type(ann, where: str, param: str) -> str:
    import ember

    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        inner = args[0] if args[1] is type(None) else args[1]
        return _annotation_type(inner, where, param) + "?"
    if origin in (list, tuple, typing.Sequence) or (origin is not None and getattr(
            origin, "__name__", "") == "Sequence"):
        if args and (origin is not tuple or (len(args) == 2 and args[1] is Ellipsis)):
            return _annotation_type(args[0], where, param) + "[]"
    simple = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
              _C.dtype: "ScalarType", ember.device: "Device"}
    if ann in simple:
        return simple[ann]
    raise ValueError(f"{where}: Parameter {param} has unsupported type {ann}. The valid types "
                     "are: ember.Tensor, int, float, bool, str, ember.dtype, ember.device, "
                     "Optional[...] and Sequence[...] of these.")


def _default_text(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_default_text(v) for v in value) + "]"
    return repr(value)


def _annotations(fn) -> dict:
    """fn's annotations as objects; string annotations (``from __future__ import annotations``)
    that name things local to where fn was defined are read one by one, with typing's names."""
    try:
        return typing.get_type_hints(fn)
    except Exception:
        import ember

        names = {**vars(typing), "ember": ember, **getattr(fn, "__globals__", {})}
        hints = {}
        for k, v in getattr(fn, "__annotations__", {}).items():
            try:
                hints[k] = eval(v, names) if isinstance(v, str) else v  # noqa: S307
            except Exception:
                hints[k] = v
        return hints


def infer_schema(prototype_function: Callable, /, *, mutates_args, op_name=None) -> str:
    """torch.library.infer_schema: the schema of a function from its type annotations, e.g.
    ``(Tensor x, float alpha) -> Tensor``; `mutates_args` names the tensors it writes into."""
    where = "infer_schema(func)"
    sig = inspect.signature(prototype_function)
    hints = _annotations(prototype_function)
    mutated = _mutated_names(mutates_args, sig)
    parts = []
    star = False
    for i, (name, p) in enumerate(sig.parameters.items()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"{where}: we do not support *args or **kwargs (parameter {name})")
        ann = hints.get(name, p.annotation)
        if ann is inspect.Parameter.empty:
            raise ValueError(f"{where}: Parameter {name} must have a type annotation. Got func "
                             f"with signature {sig})")
        type_ = _annotation_type(ann, where, name)
        if p.kind == p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if name in mutated:
            if not type_.startswith("Tensor"):
                raise ValueError(f"{where}: mutates_args names {name}, which is not a Tensor")
            type_ = f"Tensor(a{i}!)" + type_[len("Tensor"):]
        text = f"{type_} {name}"
        if p.default is not inspect.Parameter.empty:
            text += f"={_default_text(p.default)}"
        parts.append(text)
    ret = hints.get("return", sig.return_annotation)
    if ret is inspect.Signature.empty:
        raise ValueError(f"{where}: the function must have a return annotation (-> ember.Tensor, "
                         "or -> None for an op that returns nothing)")
    if ret is None or ret is type(None):
        returns = "()"
    elif typing.get_origin(ret) is tuple and Ellipsis not in typing.get_args(ret):
        returns = "(" + ", ".join(_annotation_type(a, where, "return")
                                  for a in typing.get_args(ret)) + ")"
    else:
        returns = _annotation_type(ret, where, "return")
    return f"({', '.join(parts)}) -> {returns}"


def _mutated_names(mutates_args, sig) -> set:
    if mutates_args == "unknown":
        raise ValueError("mutates_args='unknown' is not supported by ember: name the tensors "
                         "the op writes into (or pass mutates_args=())")
    if isinstance(mutates_args, str):
        raise ValueError("mutates_args must be a sequence of argument names, not a string")
    names = set(mutates_args)
    if sig is not None:
        for n in names:
            if n not in sig.parameters:
                raise ValueError(f"mutates_args contains {n!r}, which is not a parameter")
    return names


# ---- the op -------------------------------------------------------------------------------------


def _tensors(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, Tensor))


class CustomOpDef:
    """An op made by ``custom_op``: call it like a function."""

    def __init__(self, name: str, schema: str, fn: Callable, device_types) -> None:
        self.namespace, _, self.op_name = name.partition("::")
        self.name = name
        self.params, self.returns = parse_schema(schema, f"custom_op({name!r})")
        self.schema = f"{name}{schema[schema.index('('):]}"
        self._kernels: dict[str | None, Callable] = {}
        self._backward: Callable | None = None
        self._setup_context: Callable | None = None
        self._fake: Callable | None = None
        self._init_fn = fn
        self.register_kernel(device_types, fn)
        self.__name__ = self.op_name
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __repr__(self) -> str:
        return f"<CustomOpDef({self.name})>"

    @property
    def _schema(self) -> str:  # torch's spelling
        return self.schema

    # -- registration --

    def register_kernel(self, device_types, fn: Callable | None = None):
        """The implementation for tensors on `device_types` ("cpu", "cuda", a list, or None for
        every device type without a kernel of its own). Usable as a decorator."""
        def register(f):
            types = [device_types] if device_types is None or isinstance(device_types, str) \
                else list(device_types)
            for t in types:
                if t not in (None, "cpu", "cuda"):
                    raise ValueError(f"{self.name}: unknown device type {t!r} (cpu, cuda)")
                self._kernels[t] = f
            return f

        return register(fn) if fn is not None else register

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None):
        """The op's gradient (torch's contract): ``setup_context(ctx, inputs, output)`` runs
        after the forward and saves what backward needs (``ctx.save_for_backward(...)``,
        attributes; keyword-only arguments are in ``ctx.keyword_only_inputs``), and
        ``backward(ctx, *grads)`` returns one gradient (or None) per positional input."""
        if any(p.mutable for p in self.params):
            raise RuntimeError(f"register_autograd({self.name}): ops that mutate their inputs "
                               "have no autograd support (as in torch)")
        if not callable(backward) or (setup_context is not None and not callable(setup_context)):
            raise TypeError("register_autograd: backward and setup_context must be callables")
        self._backward = backward
        self._setup_context = setup_context

    def register_fake(self, fn: Callable | None = None, /):
        """A function that computes only the output's shape and dtype (for tracing tools)."""
        def register(f):
            self._fake = f
            return f

        return register(fn) if fn is not None else register

    def kernel(self, device_type: str = "cpu") -> Callable | None:
        """The implementation a call on `device_type` tensors runs (None: no kernel)."""
        return self._kernels.get(device_type, self._kernels.get(None))

    # -- calls --

    def _bind(self, args, kwargs) -> tuple[tuple, dict]:
        """The call's arguments checked against the schema, defaults filled in: positional
        parameters as a tuple, keyword-only ones as a dict."""
        positional = [p for p in self.params if not p.kw_only]
        if len(args) > len(positional):
            raise RuntimeError(f"{self.name}() expected at most {len(positional)} argument(s) "
                               f"but received {len(args)} argument(s). Declaration: "
                               f"{self.schema}")
        values = {}
        for p, v in zip(positional, args):
            values[p.name] = v
        for k, v in kwargs.items():
            if not any(p.name == k for p in self.params):
                raise RuntimeError(f"{self.name}() got an unexpected keyword argument '{k}'. "
                                   f"Declaration: {self.schema}")
            if k in values:
                raise RuntimeError(f"{self.name}() got multiple values for argument '{k}'. "
                                   f"Declaration: {self.schema}")
            values[k] = v
        pos_out, kw_out = [], {}
        for i, p in enumerate(self.params):
            if p.name in values:
                v = values[p.name]
            elif p.default is not _NO_DEFAULT:
                v = p.default
            else:
                raise RuntimeError(f"{self.name}() is missing value for argument '{p.name}'. "
                                   f"Declaration: {self.schema}")
            if not _accepts(p.type, v):
                raise RuntimeError(
                    f"{self.name}() Expected a value of type '{p.type}' for argument "
                    f"'{p.name}' but instead found type '{type(v).__name__}'.\nPosition: {i}\n"
                    f"Value: {v!r}\nDeclaration: {self.schema}")
            if p.kw_only:
                kw_out[p.name] = v
            else:
                pos_out.append(v)
        return tuple(pos_out), kw_out

    def _dispatch(self, *args, **kwargs):
        """Runs the kernel of the tensors' device type (autograd is above this)."""
        device = "cpu"
        for t in _tensors((*args, *kwargs.values())):
            if t.device.type != "cpu":
                device = t.device.type
                break
        fn = self._kernels.get(device, self._kernels.get(None))
        if fn is None:
            have = ", ".join(sorted(k or "any" for k in self._kernels)) or "none"
            raise NotImplementedError(
                f"Could not run '{self.name}' with arguments from the '{device.upper()}' "
                f"backend: it has kernels for: {have}. Register one with "
                f"{self.op_name}.register_kernel({device!r}, fn).")
        return fn(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        args, kwargs = self._bind(args, kwargs)
        if _C._is_profiling():  # one event named after the op (its own ops are inside it)
            return _C._profiled(self.name, self._call_bound, args, kwargs)
        return self._call_bound(*args, **kwargs)

    def _call_bound(self, *args, **kwargs):
        if _C.is_grad_enabled() and any(t.requires_grad
                                        for t in _tensors((*args, *kwargs.values()))):
            hook = _C._get_autograd_hook()
            if hook is not None:  # ember-autograd: one node whose backward is ours
                return hook(self.name, self._dispatch, args, kwargs)
        return self._dispatch(*args, **kwargs)


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args, device_types=None,
              schema: str | None = None, tags=None):
    """Defines the op `name` (``"namespace::op"``) with `fn` as its implementation (for every
    device type, or only for `device_types`). The schema is inferred from `fn`'s annotations
    unless given; `mutates_args` names the tensor arguments `fn` writes into (``()``: none).
    Usable as a decorator; returns the CustomOpDef."""
    namespace, sep, op_name = name.partition("::")
    if not sep or not namespace.isidentifier() or not op_name.isidentifier():
        raise ValueError(f"custom_op: expected a name of the form 'namespace::op_name', got "
                         f"{name!r}")

    def define(f):
        if schema is None:
            text = infer_schema(f, mutates_args=mutates_args)
        else:
            _mutated_names(mutates_args, None)
            text = schema
        op = CustomOpDef(name, text, f, device_types)
        _OPS[name] = op
        return op

    return define(fn) if fn is not None else define


def _op(op) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    found = _OPS.get(op) if isinstance(op, str) else None
    if found is None:
        raise ValueError(f"{op!r} is not a custom op (define it with ember.library.custom_op)")
    return found


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib=None) -> None:
    """``ember.library.register_autograd("mylib::op", backward, setup_context=...)``."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, fn: Callable | None = None, /, *, lib=None):
    return _op(op).register_kernel(device_types, fn)


def register_fake(op, fn: Callable | None = None, /, *, lib=None):
    return _op(op).register_fake(fn)
