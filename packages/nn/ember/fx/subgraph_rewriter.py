"""``replace_pattern``: replaces every match of a pattern function's graph in a GraphModule by
a replacement function's graph (torch.fx.subgraph_rewriter's API, for patterns with one
output)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .graph_module import GraphModule
from .node import Node, map_arg
from .proxy import symbolic_trace


class Match(NamedTuple):
    anchor: Node                   # the pattern's output node in the matched graph
    nodes_map: dict[Node, Node]    # pattern node -> matched node


def _pattern_graph(fn):
    gm = fn if isinstance(fn, GraphModule) else symbolic_trace(fn)
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    (output,) = [n for n in graph.nodes if n.op == "output"]
    return gm, graph, placeholders, output


def _match_arg(p, g, nodes_map: dict) -> bool:
    if isinstance(p, Node):
        return isinstance(g, Node) and _match_node(p, g, nodes_map)
    if isinstance(p, (list, tuple)):
        return isinstance(g, (list, tuple)) and len(p) == len(g) and \
            all(_match_arg(a, b, nodes_map) for a, b in zip(p, g))
    if isinstance(p, dict):
        return isinstance(g, dict) and p.keys() == g.keys() and \
            all(_match_arg(p[k], g[k], nodes_map) for k in p)
    return not isinstance(g, Node) and type(p) is type(g) and p == g


def _match_node(p: Node, g: Node, nodes_map: dict) -> bool:
    if p in nodes_map:
        return nodes_map[p] is g
    if p.op == "placeholder":  # a pattern input matches any value, the same one each time
        if g in nodes_map.values():
            return False
        nodes_map[p] = g
        return True
    if p.op != g.op or p.target != g.target or len(p.args) != len(g.args) or \
            p.kwargs.keys() != g.kwargs.keys():
        return False
    before = dict(nodes_map)
    nodes_map[p] = g
    if all(_match_arg(a, b, nodes_map) for a, b in zip(p.args, g.args)) and \
            all(_match_arg(p.kwargs[k], g.kwargs[k], nodes_map) for k in p.kwargs):
        return True
    nodes_map.clear()  # undo what the failed attempt bound below this node
    nodes_map.update(before)
    return False


def replace_pattern(gm: GraphModule, pattern: Callable, replacement: Callable) -> list[Match]:
    """Finds the matches of ``pattern`` in ``gm`` (same ops and targets, same literal
    arguments; pattern inputs match anything; values inside a match may not be used outside
    it), replaces each by ``replacement`` called on the matched inputs, and recompiles."""
    _, pgraph, pinputs, poutput = _pattern_graph(pattern)
    _, rgraph, rinputs, routput = _pattern_graph(replacement)
    if len(pinputs) != len(rinputs):
        raise ValueError("the pattern and the replacement must take the same arguments")
    anchor = poutput.args[0]
    if not isinstance(anchor, Node):
        raise NotImplementedError("replace_pattern: the pattern must return one value")
    graph = gm.graph
    matches: list[Match] = []
    used: set[Node] = set()
    for node in list(graph.nodes):
        if node in used:
            continue
        nodes_map: dict[Node, Node] = {}
        if not _match_node(anchor, node, nodes_map):
            continue
        inner = [g for p, g in nodes_map.items() if p.op != "placeholder"]
        if any(g in used for g in inner):
            continue
        inner_set = set(inner)
        if any(u not in inner_set for g in inner if g is not node for u in g.users):
            continue  # an intermediate value is read outside the match
        matches.append(Match(node, dict(nodes_map)))
        used.update(inner)
    for match in matches:
        env = {r: match.nodes_map[p] for p, r in zip(pinputs, rinputs)}
        with graph.inserting_before(match.anchor):
            for rnode in rgraph.nodes:
                if rnode.op in ("placeholder", "output"):
                    continue
                if rnode.op in ("get_attr", "call_module"):
                    raise NotImplementedError("replace_pattern: replacements with attributes "
                                              "or modules are not supported")
                env[rnode] = graph.node_copy(rnode, env.__getitem__)
        result = map_arg(routput.args[0], env.__getitem__)
        match.anchor.replace_all_uses_with(result)
        pattern_order = [p for p in pgraph.nodes if p.op not in ("placeholder", "output")]
        for p in reversed(pattern_order):
            g = match.nodes_map[p]
            if not g.users:
                graph.erase_node(g)
    gm.recompile()
    return matches
