"""``ember.fx``: symbolic tracing of Modules and functions into a graph, and code generated
back from it (torch.fx's API: ``symbolic_trace``, ``Graph``, ``Node``, ``GraphModule``,
``Tracer``, ``Proxy``, ``Interpreter``, ``Transformer``, ``wrap``), so that graph passes
written for torch.fx port by changing the import. docs/compile.md has the guide."""

from .graph import Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Attribute, Proxy, TraceError, Tracer, symbolic_trace, wrap
from .subgraph_rewriter import replace_pattern

__all__ = ["Attribute", "Graph", "GraphModule", "Interpreter", "Node", "Proxy", "PythonCode",
           "TraceError", "Tracer", "Transformer", "map_arg", "replace_pattern", "symbolic_trace",
           "wrap"]
