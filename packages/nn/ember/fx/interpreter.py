"""Interpreter (runs a GraphModule node by node) and Transformer (builds a new one), after
torch.fx's: override the per-op methods to change what a node does."""

from __future__ import annotations

from .graph import Graph, _fetch_attr
from .node import Node, map_aggregate, map_arg
from .proxy import Proxy, Tracer


class Interpreter:
    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None):
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, object] = {}
        self.garbage_collect_values = garbage_collect_values
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        if garbage_collect_values:
            seen: set[Node] = set()
            for node in reversed(list(self.graph.nodes)):
                for n in node.all_input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict | None = None):
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    self.env.pop(to_delete, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def fetch_args_kwargs_from_env(self, n: Node):
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n: Node):
        def load(a: Node):
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[a]
        return map_arg(args, load)

    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               "was not passed in!") from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target: str):
        try:
            return _fetch_attr(self.module, target)
        except AttributeError:
            raise RuntimeError(f"Node referenced nonexistent target {target}") from None


class Transformer(Interpreter):
    """Runs the graph on Proxies, so that each overridden method can emit other nodes; returns
    the new GraphModule from ``transform()``."""

    def __init__(self, module):
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()

        class _TransformerTracer(Tracer):
            def __init__(self, graph):
                super().__init__()
                self.graph = graph
                self.tensor_attrs = {}

            def is_leaf_module(self, m, qualname):
                return True
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module
        self.tracer._module_paths = {id(m): name for name, m in module.named_modules()}

    def placeholder(self, target, args, kwargs):
        default = args if args else ()
        return Proxy(self.new_graph.placeholder(target, default_value=default[0])
                     if default else self.new_graph.placeholder(target), self.tracer)

    def get_attr(self, target, args, kwargs):
        return Proxy(self.new_graph.get_attr(target), self.tracer)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self):
        from .graph_module import GraphModule
        result = super().run()
        if result is not None:
            def strip(a):
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip))
        return GraphModule(self.module, self.new_graph)
