"""Nested containers of tensors (pytrees) as ember.func walks them: tuples, lists, dicts
(OrderedDict and defaultdict included) and namedtuples are nodes, anything else is a leaf, as in
torch.utils._pytree. ``TreeSpec`` prints as torch's does, since vmap's messages show it."""

from __future__ import annotations

from collections import OrderedDict, defaultdict


class TreeSpec:
    """The shape of a pytree: its node type, the node's context (dict keys, namedtuple class)
    and the specs of its children; a leaf's spec is ``LEAF``."""

    __slots__ = ("type", "context", "children")

    def __init__(self, type_, context, children):
        self.type, self.context, self.children = type_, context, children

    def is_leaf(self) -> bool:
        return self.type is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.is_leaf() else sum(c.num_leaves for c in self.children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children == other.children)

    def __hash__(self):
        return id(self)

    def __repr__(self):
        if self.is_leaf():
            return "*"
        name = self.type.__name__
        ctx = None if self.type in (tuple, list) else self.context
        kids = ",\n  ".join(repr(c).replace("\n", "\n  ") for c in self.children)
        return f"TreeSpec({name}, {ctx}, [{kids}])"


LEAF = TreeSpec(None, None, [])


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(x):
    """(type, context, children) of a node, or None for a leaf."""
    if _is_namedtuple(x):
        return type(x), type(x), list(x)
    if type(x) in (tuple, list):
        return type(x), None, list(x)
    if isinstance(x, dict):
        keys = list(x.keys())
        ctx = (keys, x.default_factory) if isinstance(x, defaultdict) else keys
        return type(x), ctx, [x[k] for k in keys]
    return None


def tree_flatten(tree):
    """(leaves in order, spec)."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    node = _children(tree)
    if node is None:
        leaves.append(tree)
        return LEAF
    t, ctx, kids = node
    return TreeSpec(t, ctx, [_flatten(k, leaves) for k in kids])


def tree_unflatten(leaves, spec: TreeSpec):
    it = iter(leaves)
    return _build(it, spec)


def _build(it, spec):
    if spec.is_leaf():
        return next(it)
    kids = [_build(it, c) for c in spec.children]
    t = spec.type
    if t in (tuple, list):
        return t(kids)
    if isinstance(spec.context, type) and issubclass(t, tuple):  # namedtuple
        return t(*kids)
    if t is defaultdict:
        keys, factory = spec.context
        return defaultdict(factory, zip(keys, kids))
    if t is OrderedDict or issubclass(t, dict):
        return t(zip(spec.context, kids))
    raise TypeError(f"cannot rebuild a pytree node of type {t.__name__}")


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix, spec: TreeSpec):
    """The value of `prefix` for each leaf of the tree `spec` describes: a leaf of `prefix` applies
    to the whole subtree it sits over (vmap's ``in_dims=(0, None)`` for a dict argument). None if
    `prefix` does not fit the tree."""
    out: list = []
    return out if _broadcast(prefix, spec, out) else None


def _broadcast(prefix, spec, out) -> bool:
    node = _children(prefix)
    if node is None:
        out.extend([prefix] * spec.num_leaves)
        return True
    t, ctx, kids = node
    if spec.is_leaf() or len(kids) != len(spec.children):
        return False
    if isinstance(prefix, dict):
        if not isinstance(spec.context, (list, tuple)) or spec.type is defaultdict:
            keys = spec.context[0] if spec.type is defaultdict else None
        else:
            keys = spec.context
        if keys is None or set(keys) != set(prefix.keys()):
            return False
        kids = [prefix[k] for k in keys]
    elif not (isinstance(prefix, (list, tuple)) and spec.type in (tuple, list)
              or t is spec.type):
        return False
    return all(_broadcast(k, c, out) for k, c in zip(kids, spec.children))
