"""GraphModule: a Module whose forward is the Python code generated from its Graph."""

from __future__ import annotations

import copy
import itertools
import linecache

from ember.nn import Module

from .graph import Graph, _fetch_attr

_counter = itertools.count()


def _copy_attr(from_module, to_module, target: str) -> None:
    """Copies ``from_module``'s attribute at the dotted ``target`` onto ``to_module``, creating
    empty Modules for the intermediate levels (torch's scheme)."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    value = getattr(from_module, field)
    if isinstance(value, Module) or field in getattr(from_module, "_parameters", {}):
        setattr(to_module, field, value)
    elif field in getattr(from_module, "_buffers", {}):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


class GraphModule(Module):
    """A Module built from a Graph: ``forward`` is Python generated from the graph (see
    ``.code``); ``recompile()`` regenerates it after the graph changed. ``root`` is a Module
    (its submodules, parameters and buffers named by the graph are taken over) or a dict from
    qualified names to objects."""

    def __new__(cls, *args, **kwargs):
        # one class per instance, so that each can have its own generated forward
        if not cls.__dict__.get("_is_instance_class", False):
            cls = type(cls.__name__, (cls,), {"_is_instance_class": True})
        return super().__new__(cls)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    *prefix, field = node.target.split(".")
                    owner = self
                    for item in prefix:
                        if not hasattr(owner, item):
                            setattr(owner, item, Module())
                        owner = getattr(owner, item)
                    setattr(owner, field, root[node.target])
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward``."""
        return self._code

    def recompile(self):
        """Regenerates ``forward`` from ``self.graph``; returns the PythonCode."""
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        filename = f"<eval_with_key>.{next(_counter)}"
        linecache.cache[filename] = (len(python_code.src), None,
                                     python_code.src.splitlines(True), filename)
        namespace = dict(python_code.globals)
        exec(compile(python_code.src, filename, "exec"), namespace)
        type(self).forward = namespace["forward"]
        return python_code

    def print_readable(self, print_output: bool = True) -> str:
        text = f"class {type(self).__name__}(ember.nn.Module):" + \
            "\n".join("    " + line if line else "" for line in self._code.split("\n"))
        if print_output:
            print(text)
        return text

    def get_submodule(self, target: str):
        return _fetch_attr(self, target) if target else self

    def add_submodule(self, target: str, m: Module) -> bool:
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        setattr(mod, field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
        if field not in getattr(mod, "_modules", {}):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    def __deepcopy__(self, memo):
        fake = Module()
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        return GraphModule(fake, fake.__dict__["_graph"], type(self).__name__)

    def __copy__(self):
        return GraphModule(self, self.graph, type(self).__name__)

    def __str__(self) -> str:
        return super().__str__() + "\n\n" + self._code
