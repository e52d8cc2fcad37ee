"""Fusion: groups of elementwise nodes of one shape, ended by the reductions over their trailing
dims, found in a graph whose nodes carry example values (``meta['val']``), and the graph
rewritten so that each group is one call of a generated kernel."""

from __future__ import annotations

import heapq
import operator
from dataclasses import dataclass, field

from ember import fx

from .ops import DIFFERENTIABLE_REDUCTIONS, GRADIENTS, elementwise_op, reduction_op

FUSIBLE_DTYPES = ("float32", "float64")


@dataclass(eq=False)  # hashed by identity: groups are keys of the rewrite's maps
class Group:
    """One fused kernel: ``members`` (elementwise nodes and the reductions that end them, in
    graph order) iterate over ``shape``; ``inputs`` are the tensors read from outside,
    ``outputs`` the members read outside (elementwise ones in full shape, reductions in theirs).
    """
    index: int
    shape: tuple
    dtype: str
    device: str
    members: list = field(default_factory=list)
    ops: dict = field(default_factory=dict)         # node -> (op, operands)
    reductions: dict = field(default_factory=dict)  # node -> (op, operand, keepdim)
    reduced: int | None = None                      # trailing dims the reductions reduce
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    requires_grad: bool = False

    @property
    def closed(self) -> bool:  # a reduction ends the group for elementwise nodes
        return bool(self.reductions)

    def operand_nodes(self, node) -> list:
        if node in self.ops:
            return [a for a in self.ops[node][1] if isinstance(a, fx.Node)]
        return [self.reductions[node][1]]

    def describe(self) -> str:
        names = [m.name for m in self.members]
        return f"fused_{self.index}: {', '.join(names)} over {list(self.shape)} ({self.dtype})"


def _val(node):
    return node.meta.get("val") if isinstance(node, fx.Node) else None


def _tensor_info(node):
    import ember
    v = _val(node)
    if not isinstance(v, ember.Tensor):
        return None
    return tuple(v.shape), str(v.dtype).replace("ember.", ""), v.device.type, v.requires_grad


def _broadcastable(shape, to) -> bool:
    if len(shape) > len(to):
        return False
    for s, t in zip(reversed(shape), reversed(to)):
        if s != t and s != 1:
            return False
    return True


def find_groups(graph: fx.Graph, grad_enabled: bool) -> list[Group]:
    """Groups in graph order. A node joins the group of one of its operands when it has that
    group's shape, dtype and device, the group has no reduction yet, and joining makes no
    cycle (an outside operand that depends on the group); a reduction over the group's
    trailing dims joins and closes it."""
    member_of: dict[fx.Node, Group] = {}
    groups: list[Group] = []
    segment = _segments(graph)

    def depends_on_group(start, group: Group) -> bool:
        seen, stack = set(), [start]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            g = member_of.get(n)
            if g is group:
                return True
            if g is not None:
                for m in g.members:
                    stack.extend(g.operand_nodes(m))
            stack.extend(n.all_input_nodes)
        return False

    def can_join(node, group: Group, operands) -> bool:
        for a in operands:
            if isinstance(a, fx.Node) and member_of.get(a) is not group and \
                    depends_on_group(a, group):
                return False
        return True

    for node in graph.nodes:
        info = _tensor_info(node)
        if info is None:
            continue
        shape, dtype, device, requires_grad = info
        if dtype not in FUSIBLE_DTYPES:
            continue
        needs_grad = grad_enabled and requires_grad
        ew = elementwise_op(node)
        if ew is not None:
            name, operands = ew
            if needs_grad and name not in GRADIENTS:
                continue
            ok = True
            for a in operands:
                if isinstance(a, fx.Node):
                    ai = _tensor_info(a)
                    if ai is None or ai[1] != dtype or ai[2] != device or \
                            not _broadcastable(ai[0], shape):
                        ok = False
            if not ok or 0 in shape:
                continue
            target = None
            for a in operands:
                g = member_of.get(a) if isinstance(a, fx.Node) else None
                if g is not None and not g.closed and g.shape == shape and g.dtype == dtype \
                        and g.device == device and segment[g.members[0]] == segment[node] \
                        and can_join(node, g, operands):
                    target = g
                    break
            if target is None:
                target = Group(len(groups), shape, dtype, device)
                groups.append(target)
            target.members.append(node)
            target.ops[node] = (name, operands)
            target.requires_grad |= needs_grad
            member_of[node] = target
            continue
        red = reduction_op(node)
        if red is None:
            continue
        name, operand, dims, keepdim = red
        g = member_of.get(operand)
        if g is None or g.dtype != dtype or segment[g.members[0]] != segment[node] or \
                (needs_grad and name not in DIFFERENTIABLE_REDUCTIONS):
            continue
        rank = len(g.shape)
        dims = tuple(range(rank)) if dims is None else tuple(sorted(d % rank for d in dims)) \
            if rank else None
        if not dims or dims != tuple(range(rank - len(dims), rank)):
            continue  # only trailing dims (after normalising) fuse
        if g.reduced is not None and g.reduced != len(dims):
            continue
        if not _reduction_layout_ok(g, len(dims), operand):
            continue
        g.reduced = len(dims)
        g.members.append(node)
        g.reductions[node] = (name, operand, keepdim)
        g.requires_grad |= needs_grad
        member_of[node] = g

    kept = []
    for g in groups:
        if len(g.members) < 2:  # one op: the eager kernel is as good
            for m in g.members:
                del member_of[m]
            continue
        _finish(g, member_of)
        kept.append(g)
    for i, g in enumerate(kept):
        g.index = i
    return kept


# ops that draw random numbers: their order is the generator's order, so none moves past another
_RANDOM = ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli",
           "multinomial", "normal", "poisson", "dropout", "alpha_dropout", "feature_alpha_dropout",
           "dropout1d", "dropout2d", "dropout3d", "rrelu", "gumbel_softmax", "randperm")


def _is_barrier(node) -> bool:
    """A node with an effect beyond its result: an in-place op (``x.add_(1)``, ``out=``), a
    call of a leaf module (batch norm updates its statistics), a random op."""
    if node.op == "call_module":
        return True
    if node.op not in ("call_method", "call_function"):
        return False
    name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
    if name.endswith("_") and not name.endswith("__"):
        return True
    return "out" in node.kwargs or "inplace" in node.kwargs and node.kwargs["inplace"] is True \
        or name in _RANDOM


def _segments(graph) -> dict:
    """Each node's segment: the number of barriers before it. A group stays inside one, so
    that no fused value is read before an in-place change it should see (or after one it
    should not) and random ops keep their order."""
    out, seg = {}, 0
    for node in graph.nodes:
        if _is_barrier(node):
            seg += 1
        out[node] = seg
    return out


def _reduction_layout_ok(group: Group, reduced: int, operand) -> bool:
    """Each tensor the group reads must be present in all reduced dims or broadcast in all."""
    shape = group.shape
    tail = shape[len(shape) - reduced:]
    nodes = set()
    for m in group.members:
        nodes.update(a for a in group.operand_nodes(m) if group.ops.get(a) is None and
                     a not in group.reductions)
    for n in nodes:
        s = tuple(_val(n).shape)
        s = (1,) * (len(shape) - len(s)) + s
        t = s[len(shape) - reduced:]
        present = [a == b and b != 1 for a, b in zip(t, tail)]
        relevant = [p for p, b in zip(present, tail) if b != 1]
        if relevant and not (all(relevant) or not any(relevant)):
            return False
    return True


def _finish(group: Group, member_of: dict) -> None:
    members = set(group.members)
    inputs: dict = {}
    for m in group.members:
        for a in group.operand_nodes(m):
            if a not in members:
                inputs.setdefault(a)
    group.inputs = list(inputs)
    group.outputs = [m for m in group.members
                     if any(u not in members for u in m.users)]


def rewrite(gm: fx.GraphModule, groups: list[Group], kernels: list) -> fx.Graph:
    """A new graph in which each group is one ``call_function`` of its kernel (returning a tuple
    of the group's outputs) and ``getitem`` nodes; nodes are topologically re-sorted, groups
    as units, keeping the original order where it can."""
    old = gm.graph
    member_of = {m: g for g in groups for m in g.members}
    order = {n: i for i, n in enumerate(old.nodes)}
    units = []  # each: a node or a group
    seen_groups = set()
    for n in old.nodes:
        g = member_of.get(n)
        if g is None:
            units.append(n)
        elif g.index not in seen_groups:
            seen_groups.add(g.index)
            units.append(g)

    def unit_of(n):
        return member_of.get(n, n)

    def deps(u):
        if isinstance(u, Group):
            return {unit_of(i) for i in u.inputs}
        return {unit_of(i) for i in u.all_input_nodes}

    def key(u):
        return order[u.members[-1]] if isinstance(u, Group) else order[u]

    pending = {id(u): len(deps(u)) for u in units}
    users: dict[int, list] = {}
    for u in units:
        for d in deps(u):
            users.setdefault(id(d), []).append(u)
    ready = [(key(u), i, u) for i, u in enumerate(units) if pending[id(u)] == 0]
    heapq.heapify(ready)
    sorted_units = []
    while ready:
        _, _, u = heapq.heappop(ready)
        sorted_units.append(u)
        for v in users.get(id(u), []):
            pending[id(v)] -= 1
            if pending[id(v)] == 0:
                heapq.heappush(ready, (key(v), units.index(v), v))
    if len(sorted_units) != len(units):
        raise RuntimeError("fusion made a cycle")  # find_groups prevents it

    new = fx.Graph()
    env: dict = {}
    for u in sorted_units:
        if isinstance(u, Group):
            kernel = kernels[u.index]
            call = new.create_node("call_function", kernel, tuple(env[i] for i in u.inputs),
                                   name=f"{kernel.__name__}_out")
            for k, out in enumerate(u.outputs):
                item = new.call_function(operator.getitem, (call, k))
                item.meta = dict(out.meta)
                env[out] = item
        else:
            env[u] = new.node_copy(u, lambda n: env[n])
    return new
