"""fx Graph: a doubly linked list of Nodes, and the Python code generated from it."""

from __future__ import annotations

import builtins
import importlib
import keyword
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .node import BINARY_OPERATORS, UNARY_OPERATORS, Node, map_arg

_ILLEGAL_CHARS = re.compile(r"[^0-9a-zA-Z_]+")
_NO_DEFAULT = object()  # a placeholder without a default value
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake_case(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


class _Namespace:
    """Unique Python identifiers for nodes: ``add``, ``add_1``, ``add_2`` ... (torch's scheme)."""

    def __init__(self):
        self._used: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        candidate = _ILLEGAL_CHARS.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        if candidate not in self._used and not self._reserved(candidate):
            self._used.add(candidate)
            return candidate
        match = re.match(r"(.*)_(\d+)$", candidate)
        base, num = (match.group(1), int(match.group(2))) if match else (candidate, None)
        num = self._base_count.get(base, 0) if num is None else num
        while True:
            num += 1
            name = f"{base}_{num}"
            if name not in self._used:
                break
        self._base_count[base] = num
        self._used.add(name)
        return name

    @staticmethod
    def _reserved(name: str) -> bool:
        return keyword.iskeyword(name) or name in dir(builtins) or name in ("self", "ember")


class _NodeList:
    """The nodes of a Graph in order; reversible, sized, and safe against removal of the node
    being visited (the next node is looked up only after it)."""

    def __init__(self, graph: Graph, reverse: bool = False):
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        cur = root._prev if self._reverse else root._next
        while cur is not root:
            following = cur._prev if self._reverse else cur._next
            if not cur._erased:
                yield cur
            cur = following

    def __reversed__(self):
        return iter(_NodeList(self._graph, not self._reverse))

    def __repr__(self) -> str:
        return repr(list(self))


@dataclass
class PythonCode:
    """What ``Graph.python_code`` returns: the source of ``forward`` and the globals it reads."""
    src: str
    globals: dict[str, Any]


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable):
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self.graph._insert = self.orig_insert


class Graph:
    """A program as a list of Nodes (torch.fx.Graph's API): build it with ``placeholder``,
    ``get_attr``, ``call_function``, ``call_method``, ``call_module``, ``output``; change it
    with ``inserting_before``/``inserting_after``, ``Node.replace_all_uses_with``,
    ``erase_node``, ``eliminate_dead_code``; check it with ``lint``."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._insert = self._root.prepend

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    def find_nodes(self, *, op: str, target=None, sort: bool = True) -> list[Node]:
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # --- building ---
    def create_node(self, op: str, target, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr=None) -> Node:
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        candidate = name if name is not None else self._target_to_str(op, target)
        node = Node(self, self._graph_namespace.create_name(candidate), op, target, args, kwargs,
                    type_expr)
        self._insert(node)
        self._len += 1
        return node

    @staticmethod
    def _target_to_str(op: str, target) -> str:
        if op == "call_function":
            if target in BINARY_OPERATORS or target in UNARY_OPERATORS:
                return target.__name__.rstrip("_")
            name = getattr(target, "__name__", None) or "fn"
            return _snake_case(name.strip("_")) or "fn"
        if op == "call_module" or op == "get_attr":
            return str(target).replace(".", "_")
        return _snake_case(str(target).strip("_")) or "fn"

    def placeholder(self, name: str, type_expr=None, default_value=_NO_DEFAULT) -> Node:
        args = () if default_value is _NO_DEFAULT else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr=None) -> Node:
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args=None, kwargs=None,
                      type_expr=None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result, type_expr=None) -> Node:
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable = lambda x: x) -> Node:
        """A copy of ``node`` (of any graph) in this one; its Node arguments are mapped through
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        name = node.name if node.op == "placeholder" else None
        result = self.create_node(node.op, node.target, args, kwargs, name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copies every node of ``g`` into this graph; ``val_map`` maps old nodes to new.
        Returns the copied output's value (not an output node)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    # --- changing ---
    def inserting_before(self, n: Node | None = None):
        """Context manager: nodes created inside go before ``n`` (the graph's start if None)."""
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None):
        """Context manager: nodes created inside go after ``n`` (the graph's end if None),
        each after the previous one."""
        if n is None:
            return self.inserting_before(self._root)
        state = {"last": n}

        def insert(node: Node) -> None:
            state["last"].append(node)
            state["last"] = node
        return _InsertPoint(self, insert)

    def erase_node(self, to_erase: Node) -> None:
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def eliminate_dead_code(self, is_impure_node: Callable | None = None) -> bool:
        """Removes nodes without users that have no side effect; returns whether any went."""
        self.lint()
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not impure(node) and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Checks the graph's invariants: known ops, each argument defined before its use and in
        this graph, users and inputs in agreement, unique names, one output at the end,
        get_attr/call_module targets present on the owning module."""
        seen: set[Node] = set()
        names: set[str] = set()
        outputs = 0
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to "
                                       "this Graph, but was used as an argument! If you are "
                                       "copying nodes from another graph, make sure to use "
                                       "``arg_transform`` on node_copy() to remap values")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       "has been defined! Please check that Nodes in the graph "
                                       "are topologically ordered\n" + str(self))
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' reads '{arg}' but is not among its users")
            if node.op == "output":
                outputs += 1
            elif outputs:
                raise RuntimeError(f"Node '{node}' comes after the graph's output")
            if self._owning_module is not None and node.op in ("get_attr", "call_module"):
                try:
                    obj = _fetch_attr(self._owning_module, node.target)
                except AttributeError:
                    kind = "module" if node.op == "call_module" else "attribute"
                    raise RuntimeError(f"Node {node} target {node.target} references "
                                       f"nonexistent {kind}") from None
                if node.op == "call_module" and not hasattr(obj, "forward"):
                    raise RuntimeError(f"Node {node} target {node.target} {obj} is not a Module")
            seen.add(node)
        if outputs > 1:
            raise RuntimeError("Graph has more than one output node")

    # --- printing ---
    def __str__(self) -> str:
        lines = ["graph():"]
        lines += ["    " + n.format_node() for n in self.nodes]
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Prints one row per node: opcode, name, target, args, kwargs (torch's columns)."""
        rows = [[n.op, n.name, self._target_str(n), str(n.args), str(n.kwargs)]
                for n in self.nodes]
        header = ["opcode", "name", "target", "args", "kwargs"]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        print(fmt.format(*header))
        print("  ".join("-" * w for w in widths))
        for r in rows:
            print(fmt.format(*r).rstrip())

    @staticmethod
    def _target_str(n: Node) -> str:
        if n.op == "call_function":
            from .node import _qualified_name
            if n.target in BINARY_OPERATORS or n.target in UNARY_OPERATORS:
                return f"<built-in function {n.target.__name__}>"
            return _qualified_name(n.target)
        return str(n.target)

    # --- code generation ---
    def python_code(self, root_module: str = "self") -> PythonCode:
        return _CodeGen(self, root_module).generate()

    def __deepcopy__(self, memo):
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            rv, node = out
            g.output(rv, type_expr=node.type)
        return g


def _fetch_attr(obj, target: str):
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def _attr_path(root: str, target: str) -> str:
    out = root
    for atom in target.split("."):
        out = f"{out}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) \
            else f'getattr({out}, "{atom}")'
    return out


class _CodeGen:
    def __init__(self, graph: Graph, root: str):
        self.graph = graph
        self.root = root
        self.globals: dict[str, Any] = {}
        self.global_names: dict[int, str] = {}
        self.taken = {n.name for n in graph.nodes} | {root, "ember"}  # names a global must avoid

    def _global(self, obj, candidate: str) -> str:
        if id(obj) in self.global_names:
            return self.global_names[id(obj)]
        name = _ILLEGAL_CHARS.sub("_", candidate) or "_g"
        base, i = name, 0
        while name in self.taken or (name in self.globals and self.globals[name] is not obj):
            i += 1
            name = f"{base}_{i}"
        self.globals[name] = obj
        self.global_names[id(obj)] = name
        return name

    def _function_name(self, fn) -> str:
        """How the code names ``fn``: its import path where it resolves to the same object
        (``ember.relu``, ``ember.nn.functional.gelu``), else a global of its own."""
        module = getattr(fn, "__module__", None)
        qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
        if getattr(builtins, str(getattr(fn, "__name__", "")), None) is fn:
            return fn.__name__
        candidates = []
        if module == "ember._C" or (module is None and getattr(fn, "__self__", None) is not None
                                    and getattr(fn.__self__, "__name__", "") == "ember._C"):
            candidates.append(f"ember.{fn.__name__}")
        if module and qualname and "<" not in qualname:
            if module.startswith("ember.nn._functional"):  # the public spelling first
                candidates.append(f"ember.nn.functional.{qualname}")
            candidates.append(f"{module}.{qualname}")
        for path in candidates:
            mod_name, _, attr = path.rpartition(".")
            if not mod_name:
                continue
            try:
                mod = importlib.import_module(mod_name)
            except Exception:  # noqa: BLE001 - not importable: try the next spelling
                continue
            if getattr(mod, attr, None) is fn:
                top = mod_name.split(".")[0]
                self.globals[top] = importlib.import_module(top)
                return path
        return self._global(fn, getattr(fn, "__name__", "fn"))

    def _repr(self, a) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return self._global(type(a), type(a).__name__) + \
                    "(" + ", ".join(self._repr(x) for x in a) + ")"
            inner = ", ".join(self._repr(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self._repr(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self._repr(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self._repr(a.start)}, {self._repr(a.stop)}, {self._repr(a.step)})"
        if a is Ellipsis:
            return "..."
        if isinstance(a, float) and not math.isfinite(a):
            return f"float('{a}')"
        if a is None or isinstance(a, (bool, int, float, str, complex)):
            return repr(a)
        import ember
        if isinstance(a, ember.dtype):
            return str(a) if str(a).startswith("ember.") else f"ember.{a}"
        if isinstance(a, ember.device):
            self.globals["ember"] = ember
            return f"ember.device({str(a)!r})"
        return self._global(a, f"_{type(a).__name__.lower()}_constant")

    def _call_args(self, args, kwargs) -> str:
        parts = [self._repr(a) for a in args]
        parts += [f"{k} = {self._repr(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def generate(self) -> PythonCode:
        import ember
        self.globals["ember"] = ember
        nodes = list(self.graph.nodes)
        last_use: dict[Node, Node] = {}
        for node in reversed(nodes):
            for inp in node._input_nodes:
                last_use.setdefault(inp, node)
        dies_at: dict[Node, list[Node]] = {}
        for value, user in last_use.items():
            dies_at.setdefault(user, []).append(value)

        params, body = [self.root], []
        for node in nodes:
            line = self._emit(node, params)
            if line is None:
                continue
            dead = [v.name for v in dies_at.get(node, []) if node.op != "output"]
            if dead:
                line += ";  " + " = ".join(dead) + " = None"
            body.append(line)
        if not body or not body[-1].startswith("return"):
            body.append("return None")
        src = "\n\n\ndef forward(" + ", ".join(params) + "):\n" + \
            "\n".join("    " + line for line in body) + "\n    "
        return PythonCode(src, self.globals)

    def _emit(self, node: Node, params: list[str]) -> str | None:
        if node.op == "placeholder":
            name = node.name
            if node.target.startswith("*"):
                params.append(node.target)
            elif node.args:
                params.append(f"{name} = {self._repr(node.args[0])}")
            else:
                params.append(name)
            return None
        if node.op == "output":
            return f"return {self._repr(node.args[0])}"
        if node.op == "get_attr":
            return f"{node.name} = {_attr_path(self.root, node.target)}"
        if node.op == "call_module":
            return f"{node.name} = {_attr_path(self.root, node.target)}" \
                   f"({self._call_args(node.args, node.kwargs)})"
        if node.op == "call_method":
            obj, *rest = node.args
            return f"{node.name} = {self._repr(obj)}.{node.target}" \
                   f"({self._call_args(rest, node.kwargs)})"
        fn = node.target
        if fn in BINARY_OPERATORS and len(node.args) == 2 and not node.kwargs:
            return f"{node.name} = {self._repr(node.args[0])} {BINARY_OPERATORS[fn]} " \
                   f"{self._repr(node.args[1])}"
        if fn in UNARY_OPERATORS and len(node.args) == 1 and not node.kwargs:
            return f"{node.name} = {UNARY_OPERATORS[fn]}{self._repr(node.args[0])}"
        if fn is operator.getitem and len(node.args) == 2:
            return f"{node.name} = {self._repr(node.args[0])}[{self._repr(node.args[1])}]"
        if fn is getattr and len(node.args) == 2 and isinstance(node.args[1], str) and \
                node.args[1].isidentifier():
            return f"{node.name} = {self._repr(node.args[0])}.{node.args[1]}"
        return f"{node.name} = {self._function_name(fn)}({self._call_args(node.args, node.kwargs)})"
