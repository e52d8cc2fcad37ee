"""``ember.compile``'s front end (torch._dynamo's role): captures a Module or function as an fx
graph the first time it sees a signature of its inputs, guards the graph on that signature,
hands it to a backend, and runs eagerly, with the reason kept, where capture is impossible.

Capture is ember.fx tracing with example values: the tracer runs the real ops beside the
recording, so shapes, dtypes and devices are known (and specialised: the guards hold them), and
only a branch on tensor *data* (``if x.sum() > 0``, ``.item()``) breaks the capture.
"""

from __future__ import annotations

import copy
import inspect
import operator
import time
import warnings
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import _C, fx
from ember.fx.node import map_arg
from ember.fx.proxy import _UNKNOWN, Proxy, TraceError

__all__ = ["OptimizedModule", "config", "counters", "explain", "is_compiling", "list_backends",
           "optimize", "reset", "Unsupported", "InvalidBackend"]


class Unsupported(RuntimeError):
    """Raised with ``fullgraph=True`` where the program cannot be captured as one graph."""


class InvalidBackend(RuntimeError):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `ember._dynamo.list_backends()` for "
                         "available backends.")


class _Config:
    cache_size_limit = 8  # compiled signatures per function before it stays eager (torch's)
    verbose = False


config = _Config()
# counters["stats"]["unique_graphs"], counters["recompiles"][<fn>], counters["graph_break"]
counters: defaultdict[str, Counter] = defaultdict(Counter)

_BACKENDS = {"inductor": ("inductor", ()), "eager": ("eager", ("debug",)),
             "aot_eager": ("eager", ("debug",))}
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_OPTIONS = {"cpp.threads": int}
_live: weakref.WeakSet = weakref.WeakSet()


def is_compiling() -> bool:
    """torch._dynamo.is_compiling: ember.compiler.is_compiling."""
    from ember.compiler import is_compiling as compiling
    return compiling()


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    excluded = set(exclude_tags or ())
    return sorted(n for n, (_, tags) in _BACKENDS.items() if not set(tags) & excluded)


def reset() -> None:
    """Forgets every compiled graph and the counters (torch._dynamo.reset)."""
    for c in list(_live):
        c._cache.clear()
        c.recompilations.clear()
        c.fallback_reasons.clear()
    counters.clear()


# --- capture ---

_SHAPE_ATTRIBUTES = {"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad", "layout",
                     "is_leaf", "is_sparse", "is_quantized", "is_meta"}
_SHAPE_METHODS = {"size", "dim", "numel", "nelement", "stride", "is_contiguous",
                  "is_floating_point", "is_complex", "element_size", "get_device", "ndimension"}
_DATA_METHODS = {"item", "tolist", "numpy", "__array__", "data_ptr"}


def _decompose_gelu(input, approximate="none"):
    from ember.nn._functional.activation import _gelu_values
    return _gelu_values(input, approximate)


def _decompose_linear(input, weight, bias=None):
    """linear as a bias-free linear and the bias add, which may fuse with the ops after it. The
    product stays a linear (not input @ weight.t()): its backward computes the weight's gradient
    in the weight's layout, where a matmul's went through a transpose (10% slower steps)."""
    if bias is None:
        return None  # the plain call
    result = F.linear(input, weight) + bias
    if isinstance(result, Proxy):
        t = result.tracer
        result.node.meta["linear"] = (t.create_arg(input), t.create_arg(weight),
                                      t.create_arg(bias))
    return result


_DECOMPOSITIONS: dict[Callable, Callable] = {
    F.gelu: _decompose_gelu,
    F.silu: lambda input, inplace=False: None if inplace else input * input.sigmoid(),
    F.relu: lambda input, inplace=False: None if inplace else input.relu(),
    F.sigmoid: lambda input: input.sigmoid(),
    F.tanh: lambda input: input.tanh(),
    F.dropout: lambda input, p=0.5, training=True, inplace=False:
        input if (not training or p == 0.0) else None,
    F.linear: _decompose_linear,
}


def _copy(value):
    if isinstance(value, ember.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    return value


class _CaptureTracer(fx.Tracer):
    """fx tracing that also runs each recorded op on example values (``node.meta['val']``), so
    that shape questions have answers and the fuser knows every node's shape and dtype."""

    def __init__(self, inputs: dict[str, Any], decompose: bool):
        super().__init__()
        self._example_values = True
        self._inputs = inputs
        self._decompose = decompose
        self._module_copies: dict[str, nn.Module] = {}

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        # modules that update buffers in place (batch norm's running statistics) stay one call
        return any(True for _ in m.buffers(recurse=False)) and \
            (type(m).__module__ or "").startswith("ember.nn")

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        # buffers too (fx records only parameters): their in-place updates belong in the graph
        if isinstance(attr_val, ember.Tensor) and id(attr_val) in self.tensor_attrs:
            name = self.tensor_attrs[id(attr_val)]
            if name not in parameter_proxy_cache:
                parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
            return parameter_proxy_cache[name]
        return attr_val

    def _call_function(self, fn, args, kwargs):
        if self._decompose and fn in _DECOMPOSITIONS:
            out = _DECOMPOSITIONS[fn](*args, **kwargs)
            if out is not None:
                return out
        return super()._call_function(fn, args, kwargs)

    def _record_example_value(self, node) -> None:
        # The capture runs the program once on copies (inputs, attributes, leaf modules), so
        # that its in-place updates (a buffer's add_, batch norm's running statistics) happen
        # once, in the compiled run, not twice on the first call.
        def value(n):
            return n.meta["val"]
        if node.op == "placeholder":
            node.meta["val"] = _copy(self._inputs[node.target])
            return
        args = map_arg(node.args, value)
        kwargs = map_arg(node.kwargs, value)
        self._evaluating += 1  # real calls below: the trace's patches step aside
        try:
            if node.op == "get_attr":
                result = self.root
                for atom in node.target.split("."):
                    result = getattr(result, atom)
                result = _copy(result)
            elif node.op == "call_function":
                result = node.target(*args, **kwargs)
            elif node.op == "call_method":
                result = getattr(args[0], node.target)(*args[1:], **kwargs)
            else:  # call_module
                if node.target not in self._module_copies:
                    self._module_copies[node.target] = copy.deepcopy(
                        self.root.get_submodule(node.target))
                result = self._module_copies[node.target](*args, **kwargs)
        finally:
            self._evaluating -= 1
        node.meta["val"] = result

    def _concrete_attribute(self, proxy: Proxy, name: str):
        val = proxy.node.meta.get("val")
        if not isinstance(val, ember.Tensor):
            return _UNKNOWN
        if name in _SHAPE_ATTRIBUTES or name in _SHAPE_METHODS:
            return getattr(val, name)  # specialised: the guards hold the shape
        if name in _DATA_METHODS:
            raise TraceError(f"data-dependent: Tensor.{name}() of '{proxy.node.name}' reads "
                             "the tensor's values, which a graph cannot hold")
        return _UNKNOWN

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError(f"data-dependent control flow: the truth value of '{obj.node.name}' "
                         f"({obj.node.format_node().split('= ', 1)[-1]}) decides a Python "
                         "branch")

    def _len(self, obj: Proxy) -> int:
        val = obj.node.meta.get("val")
        if isinstance(val, (ember.Tensor, tuple, list)):
            return len(val)  # a shape, known: the guards hold it
        return super()._len(obj)

    def iter(self, obj: Proxy):
        val = obj.node.meta.get("val")
        if isinstance(val, (tuple, list)):  # a tuple of tensors: its length is known
            return iter([obj[i] for i in range(len(val))])
        if isinstance(val, ember.Tensor) and val.dim() > 0:
            return iter([obj[i] for i in range(val.shape[0])])
        return super().iter(obj)


_training = operator.attrgetter("training")


def _signature(value) -> tuple:
    if isinstance(value, ember.Tensor):  # ("tensor", shape, dtype, is_cuda, requires_grad)
        return _C._guard_signature(value)
    hash(value)
    return ("value", type(value), value)


def _describe_change(names, old_key, new_key) -> str:
    old, new = old_key[0], new_key[0]
    for name, a, b in zip(names, old, new):
        if a == b:
            continue
        if a[0] == b[0] == "tensor":
            parts = ["shape", "dtype", "is_cuda", "requires_grad"]
            for what, x, y in zip(parts, a[1:], b[1:]):
                if x != y:
                    return f"{name}: {what} changed from {x} to {y}"
        return f"{name}: changed from {a[-1]!r} to {b[-1]!r}"
    if old_key[1][0] != new_key[1][0]:
        return f"grad mode changed from {old_key[1][0]} to {new_key[1][0]}"
    if old_key[1][1] != new_key[1][1]:
        return "a module's training flag changed (train()/eval())"
    return "a parameter's requires_grad changed"


@dataclass
class _Entry:
    run: Callable | None         # None: run eagerly
    reason: str | None = None
    graph_module: Any = None
    compiled: Any = None
    compile_seconds: float = 0.0


@dataclass
class Recompilation:
    signature: str
    reason: str


class _Compiled:
    """The state of one ``ember.compile`` call: cache of compiled signatures, the reasons for
    eager fallbacks, the recompilations."""

    def __init__(self, fn, module, backend, fullgraph, dynamic, mode, options):
        self.fn = fn
        self.module = module
        self.backend = backend
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.mode = mode
        self.options = dict(options or {})
        self._cache: dict[tuple, _Entry] = {}
        self.recompilations: list[Recompilation] = []
        self.fallback_reasons: list[str] = []
        self._warned = False
        self._last_key = None
        target = module.forward if module is not None else fn
        self._sig = inspect.signature(target)
        self._positional = [p.name for p in self._sig.parameters.values()
                            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._modules = list(module.modules()) if module is not None else []
        self._parameters = list(module.parameters()) if module is not None else []
        self._varargs = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                            for p in self._sig.parameters.values())
        _live.add(self)

    def _bind(self, args, kwargs):
        if not kwargs and len(args) == len(self._positional):  # the common call: no binding
            return list(zip(self._positional, args))
        bound = self._sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return list(bound.arguments.items())

    def _flags(self) -> tuple:
        # requires_grad of the parameters too: a backward kernel computes the gradients its
        # compilation saw were needed, so freezing or unfreezing a layer must recompile
        # (these run on every call, over every module and parameter: the flags in the core)
        training = tuple(map(_training, self._modules))
        frozen = _C._requires_grad_flags(self._parameters)
        return (ember.is_grad_enabled(), training, frozen)

    def __call__(self, *args, **kwargs):
        eager = self.module if self.module is not None else self.fn
        try:
            items = self._bind(args, kwargs)
        except TypeError:
            return eager(*args, **kwargs)
        if self._varargs:
            return self._fallback(None, "functions with *args/**kwargs are not captured",
                                  eager, args, kwargs)
        try:
            key = (tuple(_signature(v) for _, v in items), self._flags())
        except TypeError as e:
            return self._fallback(None, f"an argument is not hashable ({e})", eager, args,
                                  kwargs)
        entry = self._cache.get(key)
        if entry is None:
            if ember.is_autocast_enabled():
                return eager(*args, **kwargs)
            if len(self._cache) >= config.cache_size_limit:
                return self._fallback(None, f"cache_size_limit ({config.cache_size_limit}) "
                                      "reached", eager, args, kwargs)
            if self._cache:
                names = [n for n, _ in items]
                reason = _describe_change(names, self._last_key, key) \
                    if self._last_key else "new signature"
                self.recompilations.append(Recompilation(self._format_key(names, key), reason))
                counters["recompiles"][self._name()] += 1
            entry = self._compile(items, key)
            self._cache[key] = entry
        self._last_key = key
        if entry.run is None:
            return self._fallback(entry, entry.reason, eager, args, kwargs)
        return entry.run(*[v for _, v in items if isinstance(v, ember.Tensor)])

    def _name(self) -> str:
        target = self.module if self.module is not None else self.fn
        return getattr(target, "__qualname__", type(target).__name__)

    @staticmethod
    def _format_key(names, key) -> str:
        parts = []
        for n, s in zip(names, key[0]):
            parts.append(f"{n}: {list(s[1])} {s[2]}" if s[0] == "tensor" else f"{n}={s[2]!r}")
        return ", ".join(parts)

    def _fallback(self, entry, reason, eager, args, kwargs):
        if reason not in self.fallback_reasons:
            self.fallback_reasons.append(reason)
        if self.fullgraph:
            raise Unsupported(f"ember.compile(fullgraph=True): {reason}")
        if not self._warned:
            self._warned = True
            warnings.warn(f"ember.compile: {self._name()} runs eagerly: {reason}",
                          stacklevel=3)
        return eager(*args, **kwargs)

    def _compile(self, items, key) -> _Entry:
        started = time.perf_counter()
        tensors = {n: v for n, v in items if isinstance(v, ember.Tensor)}
        concrete = {n: v for n, v in items if not isinstance(v, ember.Tensor)}
        root = self.module if self.module is not None else self.fn
        hooked = _hooked_module(self.module)
        if hooked is not None:
            return _Entry(None, f"module hooks are not captured ({hooked} has hooks)")
        backend = self.backend
        decompose = backend == "inductor"
        tracer = _CaptureTracer(tensors, decompose)
        rng = ember.get_rng_state()  # the capture's random ops must not move the generator
        try:
            graph = tracer.trace(root, concrete_args=concrete)
        except (TraceError, NotImplementedError, RuntimeError, TypeError) as e:
            counters["graph_break"][str(e)] += 1
            return _Entry(None, f"capture failed: {e}")
        finally:
            ember.set_rng_state(rng)
        gm = fx.GraphModule(tracer.root, graph, type(root).__name__ if self.module is not None
                            else getattr(root, "__name__", "fn"))
        counters["stats"]["unique_graphs"] += 1
        example = list(tensors.values())
        entry = _Entry(gm, None, gm)
        if callable(backend):
            entry.run = backend(gm, example)
        elif backend == "eager":
            entry.run = gm
        else:
            from ember._inductor import compile_fx, cpp
            if cpp.compiler() is None:
                cpp.warn_no_compiler("no C++ compiler found (set CXX or install g++)")
                entry.run = gm
            else:
                threads = self.options.get("cpp.threads")
                try:
                    compiled = compile_fx(gm, example, grad_enabled=key[1][0])
                except Exception as e:  # noqa: BLE001 - any failure to build: eager graph
                    self._note(f"fusion failed, the captured graph runs unfused: {e}")
                    entry.run = gm
                else:
                    entry.compiled = compiled
                    entry.graph_module = compiled.graph_module
                    entry.run = compiled if not threads else _with_threads(compiled, threads)
        entry.compile_seconds = time.perf_counter() - started
        return entry

    def _note(self, reason: str) -> None:
        if reason not in self.fallback_reasons:
            self.fallback_reasons.append(reason)
        warnings.warn(f"ember.compile: {reason}", stacklevel=4)

    # --- what users read ---
    def entries(self) -> list[_Entry]:
        return list(self._cache.values())

    def report(self) -> str:
        lines = [f"ember.compile({self._name()}, backend={self.backend!r}): "
                 f"{len(self._cache)} signature(s), {len(self.recompilations)} "
                 "recompilation(s)"]
        for r in self.recompilations:
            lines.append(f"  recompiled for {r.signature}: {r.reason}")
        for reason in self.fallback_reasons:
            lines.append(f"  eager: {reason}")
        for e in self._cache.values():
            if e.compiled is not None:
                lines.append(f"  {len(e.compiled.groups)} fused kernel(s), compiled in "
                             f"{e.compile_seconds:.2f} s")
                lines += [f"    {g.describe()}" for g in e.compiled.groups]
        return "\n".join(lines)


def _hooked_module(module) -> str | None:
    """The name of a module with forward or backward hooks (which a graph would skip)."""
    from ember.nn.modules import module as module_mod
    if module_mod._global_forward_hooks or module_mod._global_forward_pre_hooks or \
            module_mod._global_backward_hooks or module_mod._global_backward_pre_hooks:
        return "every module (global hooks)"
    if module is None:
        return None
    for name, m in module.named_modules():
        if any(getattr(m, attr, None) for attr in ("_forward_hooks", "_forward_pre_hooks",
                                                    "_backward_hooks", "_backward_pre_hooks")):
            return repr(name) if name else type(module).__name__
    return None


def _with_threads(compiled, threads):
    def run(*args):
        before = ember.get_num_threads()
        ember.set_num_threads(threads)
        try:
            return compiled(*args)
        finally:
            ember.set_num_threads(before)
    return run


class OptimizedModule(nn.Module):
    """What ``ember.compile(module)`` returns: calls go through the compiled graphs; the
    original module is ``_orig_mod`` (parameters and state_dict are shared with it)."""

    def __init__(self, mod: nn.Module, compiled: _Compiled):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_compiled"] = compiled

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        if name == "_orig_mod":
            return super().__getattr__(name)
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._orig_mod, name)

    @property
    def compile_report(self) -> str:
        return self._compiled.report()

    @property
    def recompilations(self) -> list:
        return self._compiled.recompilations

    @property
    def fallback_reasons(self) -> list:
        return self._compiled.fallback_reasons


def _check_backend(backend):
    if callable(backend):
        return backend
    if backend not in _BACKENDS:
        raise InvalidBackend(backend)
    return _BACKENDS[backend][0]


def optimize(model=None, *, fullgraph: bool = False, dynamic: bool | None = None,
             backend="inductor", mode: str | None = None, options: dict | None = None,
             disable: bool = False):
    """``ember.compile``: see docs/compile.md."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    for k, v in (options or {}).items():
        if k not in _OPTIONS:
            raise RuntimeError(f"Unexpected optimization option {k}, known options are "
                               f"{list(_OPTIONS)}")
        if not isinstance(v, _OPTIONS[k]):
            raise RuntimeError(f"Unexpected type of attr {k}, got {type(v).__name__} should "
                               f"be {_OPTIONS[k].__name__}")
    resolved = _check_backend(backend)
    if model is None:
        def decorator(m):
            return optimize(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                            mode=mode, options=options, disable=disable)
        return decorator
    if disable:
        return model
    if isinstance(model, nn.Module):
        return OptimizedModule(model, _Compiled(None, model, resolved, fullgraph, dynamic,
                                                mode, options))
    if not callable(model):
        raise RuntimeError("ember.compile expects a Module or a callable")
    compiled = _Compiled(model, None, resolved, fullgraph, dynamic, mode, options)

    def compiled_fn(*args, **kwargs):
        return compiled(*args, **kwargs)
    compiled_fn.__wrapped__ = model
    compiled_fn.__name__ = getattr(model, "__name__", "compiled_fn")
    compiled_fn.__qualname__ = getattr(model, "__qualname__", compiled_fn.__name__)
    compiled_fn.__doc__ = getattr(model, "__doc__", None)
    compiled_fn._compiled = compiled
    return compiled_fn


def compiled_state(obj) -> _Compiled:
    """The state behind a compiled module or function (for reports and tests)."""
    state = getattr(obj, "_compiled", None)
    if state is None:
        raise TypeError(f"{obj!r} is not the result of ember.compile")
    return state


@dataclass
class ExplainOutput:
    """What ``explain`` found: the graphs captured, the breaks and their reasons."""
    graphs: list = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list = field(default_factory=list)
    ops_per_graph: list = field(default_factory=list)
    fused_kernels: list = field(default_factory=list)

    def __str__(self) -> str:
        out = [f"Graph Count: {self.graph_count}",
               f"Graph Break Count: {self.graph_break_count}",
               f"Op Count: {sum(len(o) for o in self.ops_per_graph)}"]
        if self.break_reasons:
            out.append("Break Reasons:")
            out += [f"  Break Reason {i + 1}: {r}" for i, r in enumerate(self.break_reasons)]
        for i, kernels in enumerate(self.fused_kernels):
            out.append(f"Fused kernels of graph {i + 1}:")
            out += [f"  {k}" for k in kernels]
        return "\n".join(out)


def explain(f, *extra_args, **extra_kwargs):
    """``explain(fn)(*args)``: captures ``fn`` on ``args`` and says what was captured and why
    anything was not (torch._dynamo.explain). ``fn`` runs once."""
    def inner(*args, **kwargs):
        opt = optimize(f)
        state = compiled_state(opt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt(*args, **kwargs)
        out = ExplainOutput()
        for entry in state.entries():
            if entry.run is None:
                out.graph_break_count += 1
                out.break_reasons.append(entry.reason)
                continue
            out.graph_count += 1
            gm = entry.graph_module
            out.graphs.append(gm)
            out.ops_per_graph.append([n.target for n in gm.graph.nodes
                                      if n.op.startswith("call_")])
            if entry.compiled is not None:
                out.fused_kernels.append([g.describe() for g in entry.compiled.groups])
        out.break_reasons += [r for r in state.fallback_reasons if r not in out.break_reasons]
        return out
    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner

