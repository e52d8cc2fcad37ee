"""fx Node: one operation of a Graph (torch.fx.Node's fields and methods)."""

from __future__ import annotations

import builtins
import operator
import types
from collections.abc import Callable
from typing import Any

OPCODES = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output",
           "root")

# Functions with side effects: eliminate_dead_code keeps them even without users.
_SIDE_EFFECTFUL_FUNCTIONS: set = set()


def map_aggregate(a, fn: Callable):
    """Applies ``fn`` to every leaf of nested tuples, lists, dicts and slices (torch's)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn: Callable):
    """Applies ``fn`` to every Node in ``a`` (nested containers followed)."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(func) -> str:
    if func is getattr:
        return "getattr"
    if getattr(builtins, getattr(func, "__name__", ""), None) is func:
        return func.__name__
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    module = getattr(func, "__module__", None) or ""
    if isinstance(func, types.BuiltinFunctionType) and module in ("ember._C", ""):
        module = "ember"
    return f"{module}.{name}" if module else name


class Node:
    """An operation in a Graph. ``op`` is one of placeholder, get_attr, call_function,
    call_method, call_module, output; ``target`` what it calls (a function, a method name, a
    module path, an attribute path, or the placeholder's name); ``args``/``kwargs`` may hold
    other Nodes. ``users`` maps each node that reads this one to None; ``meta`` is free for
    passes (ember.compile stores each node's example value under ``meta['val']``)."""

    def __init__(self, graph, name: str, op: str, target, args: tuple, kwargs: dict,
                 return_type=None):
        if op not in OPCODES:
            raise ValueError(f"invalid op {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and \
                not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # --- the linked list ---
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Inserts ``x`` before this node (moving it if it is already in the list)."""
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Inserts ``x`` after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # --- arguments ---
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, a) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = tuple(map_arg(tuple(new_args), self._note_input))
        self._kwargs = dict(map_arg(dict(new_kwargs), self._note_input))

    def _note_input(self, n: Node) -> Node:
        if n.graph is not self.graph:
            raise RuntimeError(f"node {n} of another graph used as an input of {self}")
        self._input_nodes.setdefault(n)
        n.users.setdefault(self)
        return n

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb=lambda user: True, *,
                              propagate_meta: bool = False) -> list[Node]:
        """Every use of this node becomes a use of ``replace_with``; returns the changed users."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = []
        for user in list(self.users):
            if user is replace_with or not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        def swap(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self) -> bool:
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _SIDE_EFFECTFUL_FUNCTIONS
        if self.op == "call_method":
            return isinstance(self.target, str) and self.target.endswith("_") \
                and not self.target.endswith("__")  # in-place tensor methods
        if self.op == "call_module":
            mod = self.graph.owning_module
            sub = mod.get_submodule(self.target) if mod is not None else None
            return bool(getattr(sub, "_is_impure", False))
        return False

    # --- printing ---
    def __repr__(self) -> str:
        return self.name

    def _pretty(self, a) -> str:
        if isinstance(a, Node):
            return "%" + a.name
        if isinstance(a, tuple):
            inner = ", ".join(self._pretty(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self._pretty(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k}: {self._pretty(v)}" for k, v in a.items()) + "}"
        return str(a)

    def format_node(self) -> str:
        """One line per node, as torch's ``Graph.__str__`` prints it."""
        if self.op == "placeholder":
            return (f"%{self.name} : [num_users={len(self.users)}] = "
                    f"placeholder[target={self.target}]")
        if self.op == "output":
            return f"return {self._pretty(self.args[0])}"
        target = _qualified_name(self.target) if self.op == "call_function" else self.target
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target}]"
                f"(args = {self._pretty(self.args)}, kwargs = {self._pretty(self.kwargs)})")


# the operators the code generator writes infix
BINARY_OPERATORS = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
    operator.rshift: ">>", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
    operator.le: "<=", operator.gt: ">", operator.ge: ">=",
}
UNARY_OPERATORS = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}
