"""Symbolic tracing: Proxy values that record what is done to them, and the Tracer that runs a
Module or function on them (torch.fx's Proxy, Tracer, symbolic_trace, wrap).

ember has no ``__torch_function__`` protocol: its functions are C entry points that accept only
tensors. While a trace runs, the Tracer therefore replaces, for its duration, the callables of the
``ember`` and ``ember.nn.functional`` namespaces (and the same objects in the traced function's
globals) with wrappers that record a ``call_function`` node when an argument is a Proxy and call
the original otherwise; ``Module.__call__`` and ``Module.__getattr__`` are patched the same way
(calls of leaf modules become ``call_module`` nodes, parameters ``get_attr`` nodes). Tensor
methods need no patch: they are looked up on the Proxy. docs/architecture.md says why.
"""

from __future__ import annotations

import bisect
import builtins
import dis
import functools
import inspect
import math
import operator
import threading
import types
from collections.abc import Callable
from typing import Any

from .graph import Graph
from .node import Node, map_aggregate


class TraceError(ValueError):
    pass


class Proxy:
    """A value during symbolic tracing: every operation on it records a Node in the tracer's
    graph and returns another Proxy."""

    def __init__(self, node: Node, tracer: Tracer | None = None):
        self.node = node
        self.tracer = tracer if tracer is not None else node.graph._tracer

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        known = self.tracer._concrete_attribute(self, k)
        if known is not _UNKNOWN:
            return known
        return Attribute(self, k)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self):
        # ``a, b = proxy`` (an UNPACK_SEQUENCE right after): the count is in the bytecode, so
        # the unpacking records getitem nodes, as torch.fx does
        frame = inspect.currentframe().f_back
        instructions = list(dis.get_instructions(frame.f_code))
        offsets = [i.offset for i in instructions]
        index = bisect.bisect_left(offsets, frame.f_lasti)
        if index < len(instructions) and instructions[index].opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(instructions[index].argval))
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        return self.tracer._len(self)

    def _len_unsupported(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call ember.fx.wrap('len') at "
                           "module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __index__(self):
        raise TraceError(f"{self} ({self.node.op} {self.node.target}) cannot be used as an "
                         "index or size while tracing: its value depends on the data")

    __int__ = __float__ = __index__

    def __deepcopy__(self, memo):
        raise TraceError("a Proxy cannot be deep-copied while tracing")


class Attribute(Proxy):
    """``proxy.attr``: a ``getattr`` node when used as a value, a ``call_method`` when called."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


_UNKNOWN = object()


def _define_operators() -> None:
    binary = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift",
              "rshift", "and_", "or_", "xor", "eq", "ne", "lt", "le", "gt", "ge"]
    for name in binary:
        fn = getattr(operator, name)
        dunder = name.rstrip("_")

        def forward(self, other, fn=fn):
            return self.tracer.create_proxy("call_function", fn, (self, other), {})

        def reflected(self, other, fn=fn):
            return self.tracer.create_proxy("call_function", fn, (other, self), {})
        setattr(Proxy, f"__{dunder}__", forward)
        if name not in ("eq", "ne", "lt", "le", "gt", "ge"):
            setattr(Proxy, f"__r{dunder}__", reflected)
    for name in ["neg", "pos", "invert", "abs"]:
        fn = getattr(operator, name) if name != "abs" else builtins.abs

        def unary(self, fn=fn):
            return self.tracer.create_proxy("call_function", fn, (self,), {})
        setattr(Proxy, f"__{name}__", unary)

    def getitem(self, key):
        return self.tracer.create_proxy("call_function", operator.getitem, (self, key), {})
    Proxy.__getitem__ = getitem
    Proxy.__hash__ = object.__hash__


_define_operators()

# Functions the user asked to record as calls rather than trace through (ember.fx.wrap).
_wrapped_functions: dict[tuple[int, str], Any] = {}


def wrap(fn_or_name):
    """Records calls to a module-level function as ``call_function`` nodes instead of tracing
    through it (torch.fx.wrap). Call at module scope with the function or its name."""
    frame = inspect.currentframe().f_back
    globals_ = frame.f_globals
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    if name not in globals_ and name not in dir(builtins):
        raise NameError(f"Function {name} is not found in the calling module's globals")
    _wrapped_functions[(id(globals_), name)] = globals_
    return fn_or_name


def _has_proxy(args, kwargs) -> bool:
    found = False

    def check(a):
        nonlocal found
        if isinstance(a, Proxy):
            found = True
        return a
    map_aggregate(args, check)
    map_aggregate(kwargs, check)
    return found


# ember's non-op callables that read a Proxy as the Python object it is
_NOT_RECORDED = {"is_tensor", "is_storage", "is_grad_enabled", "is_inference_mode_enabled",
                 "get_default_dtype", "set_default_dtype", "no_grad", "enable_grad",
                 "set_grad_enabled", "is_autocast_enabled"}


class Tracer:
    """Runs a Module's ``forward`` (or a function) on Proxies and returns the recorded Graph
    (torch.fx.Tracer). Modules under ``ember.nn`` are leaves (one ``call_module`` node) except
    the containers; override ``is_leaf_module`` to change that."""

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False):
        self._autowrap_function_ids = {
            id(v) for m in autowrap_modules for k, v in vars(m).items()
            if not k.startswith("_") and callable(v)}
        self._autowrap_function_ids |= {id(f) for f in autowrap_functions}
        self._autowrap_functions = autowrap_functions
        self.param_shapes_constant = param_shapes_constant
        self.graph: Graph | None = None
        self.root = None
        self.tensor_attrs: dict[int, str] = {}
        self._evaluating = 0  # > 0 while running real code to compute example values
        self._example_values = False

    # --- overridable policy ---
    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        import ember.nn as nn
        module = type(m).__module__ or ""
        return (module.startswith("ember.nn") or module.startswith("ember.ao.nn")) and \
            not isinstance(m, (nn.Sequential, nn.ModuleList, nn.ModuleDict))

    def path_of_module(self, mod) -> str:
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward: Callable, args: tuple, kwargs: dict):
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        import ember.nn as nn
        if isinstance(attr_val, nn.Parameter):
            name = self.tensor_attrs.get(id(attr_val))
            if name is not None:
                if name not in parameter_proxy_cache:
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                return parameter_proxy_cache[name]
        return attr_val

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj: Proxy):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the ember.fx docs on symbolic tracing")

    def keys(self, obj: Proxy):
        return Attribute(obj, "keys")()

    def _len(self, obj: Proxy) -> int:
        return obj._len_unsupported()

    # --- recording ---
    def create_node(self, kind: str, target, args, kwargs, name=None, type_expr=None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None) -> Proxy:
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        proxy = proxy_factory_fn(node) if proxy_factory_fn else self.proxy(node)
        if self._example_values:
            self._record_example_value(node)
        return proxy

    def create_arg(self, a):
        """Turns ``a`` into something a Node can hold: Proxies into their nodes, the root's
        parameters and buffers into ``get_attr`` nodes, other tensors into constant attributes
        of the root (``_tensor_constant0`` ...)."""
        import ember
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, ember.Tensor):
            name = self.tensor_attrs.get(id(a))
            if name is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                name = f"_tensor_constant{i}"
                setattr(self.root, name, a)
                self.tensor_attrs[id(a)] = name
            return self.create_proxy("get_attr", name, (), {}).node
        if isinstance(a, (tuple, list)):
            out = [self.create_arg(x) for x in a]
            return type(a)(*out) if hasattr(a, "_fields") else type(a)(out)
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, Node) or a is None or a is Ellipsis or isinstance(
                a, (bool, int, float, str, complex, ember.dtype, ember.device, range)):
            return a
        import ember.nn as nn
        if isinstance(a, nn.Module):
            return self.create_proxy("get_attr", self.path_of_module(a), (), {}).node
        if isinstance(a, (types.FunctionType, types.BuiltinFunctionType, type)):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def _call_function(self, fn, args, kwargs):
        """A call of a recorded function with Proxy arguments (ember.compile's capture
        decomposes some here)."""
        return self.create_proxy("call_function", fn, args, kwargs)

    # example values (ember.compile's capture): each node's value computed as it is recorded
    def _record_example_value(self, node: Node) -> None:
        pass

    def _concrete_attribute(self, proxy: Proxy, name: str):
        return _UNKNOWN

    # --- the trace ---
    def trace(self, root, concrete_args: dict[str, Any] | None = None) -> Graph:
        import ember.nn as nn
        if isinstance(root, nn.Module):
            self.root = root
            fn = type(root).forward
            self_arg: tuple = (root,)
        else:
            self.root = nn.Module()
            fn = root
            self_arg = ()
        tracer_cls = getattr(self, "__class__", None)
        self.graph = Graph(tracer_cls=tracer_cls)
        self.graph._tracer = self
        self._module_paths = {id(m): name for name, m in self.root.named_modules()}
        self.tensor_attrs = {}
        for name, p in self.root.named_parameters(remove_duplicate=False):
            self.tensor_attrs.setdefault(id(p), name)
        for name, b in self.root.named_buffers(remove_duplicate=False):
            self.tensor_attrs.setdefault(id(b), name)
        fn_globals = getattr(fn, "__globals__", {})
        args = self._create_placeholders(fn, self_arg, concrete_args or {})
        with _Patcher(self, fn_globals):
            result = fn(*self_arg, *args)
        self.create_node("output", "output", (self.create_arg(result),), {})
        return self.graph

    def _create_placeholders(self, fn, self_arg: tuple, concrete_args: dict) -> list:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[len(self_arg):]
        out = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TraceError(f"ember.fx cannot trace a function with *args/**kwargs "
                                 f"({fn.__qualname__}({p}))")
            if p.name in concrete_args:
                out.append(concrete_args[p.name])
                continue
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            out.append(self.create_proxy("placeholder", p.name, default, {}))
        return out


_TRACE_LOCK = threading.RLock()
_tracing = threading.local()  # .tracer: the Tracer running on this thread, if any


def current_tracer():
    """The Tracer tracing on this thread, or None."""
    return getattr(_tracing, "tracer", None)


class _Patcher:
    """Replaces, for the duration of a trace, ``Module.__call__``/``__getattr__`` and the
    callables of ``ember``, ``ember.nn.functional``, the autowrapped modules and the traced
    function's globals with recording wrappers; restores everything on exit."""

    def __init__(self, tracer: Tracer, fn_globals: dict):
        self.tracer = tracer
        self.fn_globals = fn_globals
        self.undo: list[tuple[Any, str, Any, bool]] = []

    def _set(self, owner, name: str, value, is_dict: bool) -> None:
        old = owner[name] if is_dict else owner.__dict__[name]
        self.undo.append((owner, name, old, is_dict))
        if is_dict:
            owner[name] = value
        else:
            setattr(owner, name, value)

    def _recording(self, original):
        tracer = self.tracer
        owner = self.owner

        @functools.wraps(original)
        def record(*args, **kwargs):
            if tracer._evaluating or not _has_proxy(args, kwargs) or \
                    threading.get_ident() != owner:
                return original(*args, **kwargs)
            return tracer._call_function(original, args, kwargs)
        record.__fx_original__ = original
        return record

    def __enter__(self):
        # one trace at a time in the process (the patches are global); other threads' calls
        # go to the originals
        _TRACE_LOCK.acquire()
        self.owner = threading.get_ident()
        self.outer_tracer = current_tracer()
        _tracing.tracer = self.tracer
        try:
            self._install()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _install(self) -> None:
        import ember
        import ember.nn as nn
        import ember.nn.functional as F
        tracer = self.tracer
        wrappers: dict[int, Callable] = {}

        def wrapper_for(fn):
            if id(fn) not in wrappers:
                wrappers[id(fn)] = self._recording(fn)
            return wrappers[id(fn)]

        for namespace in (ember, F):
            for name, value in list(vars(namespace).items()):
                if name.startswith("__") or name in _NOT_RECORDED or isinstance(value, type):
                    continue
                if isinstance(value, (types.BuiltinFunctionType, types.FunctionType)):
                    self._set(namespace, name, wrapper_for(value), False)
        for key, globals_ in _wrapped_functions.items():
            name = key[1]
            if name in globals_ and callable(globals_[name]):
                self._set(globals_, name, wrapper_for(globals_[name]), True)
        for name, value in list(self.fn_globals.items()):
            if callable(value) and not isinstance(value, type) and (
                    id(value) in wrappers or id(value) in tracer._autowrap_function_ids):
                self._set(self.fn_globals, name, wrapper_for(value), True)
        for fn in tracer._autowrap_functions:
            name = getattr(fn, "__name__", None)
            if name and self.fn_globals.get(name) is fn:
                self._set(self.fn_globals, name, wrapper_for(fn), True)

        owner = self.owner
        original_call = nn.Module.__call__
        original_getattr = nn.Module.__getattr__
        parameter_proxy_cache: dict[str, Proxy] = {}

        def module_call(mod, *args, **kwargs):
            if tracer._evaluating or threading.get_ident() != owner:
                return original_call(mod, *args, **kwargs)

            return tracer.call_module(mod, mod.forward, args, kwargs)

        def module_getattr(mod, attr):
            value = original_getattr(mod, attr)
            if tracer._evaluating or threading.get_ident() != owner:
                return value
            return tracer.getattr(attr, value, parameter_proxy_cache)

        self._set(nn.Module, "__call__", module_call, False)
        self._set(nn.Module, "__getattr__", module_getattr, False)
        tracer._original_module_call = original_call

    def __exit__(self, *exc):
        try:
            for owner, name, old, is_dict in reversed(self.undo):
                if is_dict:
                    owner[name] = old
                else:
                    setattr(owner, name, old)
            self.undo.clear()
        finally:
            _tracing.tracer = self.outer_tracer
            _TRACE_LOCK.release()


def symbolic_trace(root, concrete_args: dict[str, Any] | None = None):
    """Traces ``root`` (a Module or a function) and returns a GraphModule (torch.fx's)."""
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    import ember.nn as nn
    name = type(root).__name__ if isinstance(root, nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
