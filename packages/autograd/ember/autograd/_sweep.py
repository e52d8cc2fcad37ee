"""The reverse sweep.

``run_backward`` counts, for every node reachable from the roots, how many edges point at it,
then executes nodes whose count has dropped to zero, newest first, summing gradients per output
slot. Saved values and buffered gradients are dropped the moment a node has run (unless
``retain_graph``), so memory falls as the sweep goes. After a node's formula ran, ``_fix_grads``
sums broadcast gradients back to each input's shape and casts them to its dtype; a leaf's
gradient goes to ``AccumulateGrad.accumulate``.
"""

from __future__ import annotations

import heapq
import itertools
import sys
import warnings

import ember
from ember import _C

from ._node import STATE, AccumulateGrad, _sum_to
from ._saved import TLS, SavedTensor

_set_grad = _C._set_grad_enabled
_grad_on = _C.is_grad_enabled


def _collect(roots):
    """Dependency counts of every node reachable from `roots`."""
    deps = {}
    seen = set()
    stack = [n for n in roots]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for nxt, _ in n.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if id(nxt) not in seen:
                    stack.append(nxt)
    return deps


def _needed(roots, targets):
    """Nodes from which a target node is reachable (the rest need not run)."""
    memo = {}

    def visit(n):
        k = id(n)
        if k in memo:
            return memo[k]
        memo[k] = False
        r = n in targets
        for nxt, _ in n.next_functions:
            if nxt is not None and visit(nxt):
                r = True
        memo[k] = r
        return r

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 100000))
    try:
        for n in roots:
            visit(n)
    finally:
        sys.setrecursionlimit(old)
    return {k for k, v in memo.items() if v}


def run_backward(roots, grads, retain_graph, create_graph, capture=None, accumulate=True,
                 allow_unreachable=True):
    """roots: edges (node, nr); grads: their gradients. `capture`: {edge: slot} whose incoming
    gradients are returned (autograd.grad); leaves accumulate only when `accumulate`."""
    prev = _grad_on()
    # A reentrant checkpoint's recomputation accumulates into leaves: valid only under a plain
    # backward, not autograd.grad or backward(inputs=...) (torch's _is_checkpoint_valid).
    prev_valid = TLS.checkpoint_valid
    TLS.checkpoint_valid = capture is None
    callbacks = TLS.final_callbacks
    if callbacks is None:
        callbacks = TLS.final_callbacks = []
    callbacks.append([])  # what queue_callback adds during this sweep runs at its end
    _set_grad(bool(create_graph))
    try:
        result = _sweep(roots, grads, retain_graph, create_graph, capture, accumulate)
        for cb in callbacks[-1]:
            cb()
        return result
    finally:
        callbacks.pop()
        _set_grad(prev)
        TLS.checkpoint_valid = prev_valid


def queue_callback(cb) -> None:
    """Runs `cb` once the current backward sweep has finished (torch's
    ``Variable._execution_engine.queue_callback``)."""
    stack = TLS.final_callbacks
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    stack[-1].append(cb)


def _sweep(roots, grads, retain_graph, create_graph, capture, accumulate):
    buffers = {}
    root_nodes = []
    for (node, nr), g in zip(roots, grads):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._nout
            root_nodes.append(node)
        buf[nr] = g if buf[nr] is None else buf[nr] + g
    deps = _collect(root_nodes)
    shared = {id(g) for g in grads}  # the caller's gradient tensors: never adopted as a .grad
    captured = None
    needed = None
    if capture is not None:
        captured = [None] * len(set(capture.values()))
        target_nodes = {e[0] for e in capture}
        if not accumulate:
            needed = _needed(root_nodes, target_nodes)
    ready = _ReadyQueue(n for n in root_nodes if deps.get(n, 0) == 0)
    prof = STATE.profiler
    while ready:
        node = ready.pop()
        buf = buffers.pop(node, None)
        if buf is None:
            buf = [None] * node._nout
        if needed is not None and id(node) not in needed:
            _release_edges(node, deps, ready)
            continue
        if prof is not None:
            prof.timed(node.name(), _run_node, node, buf, retain_graph, create_graph, capture,
                       captured, accumulate, buffers, deps, ready, shared)
        else:
            _run_node(node, buf, retain_graph, create_graph, capture, captured, accumulate,
                      buffers, deps, ready, shared)
    return captured


class _ReadyQueue:
    """The nodes whose inputs are all in, the most recently created first (torch's order): a
    heap (sorting the list at every pop was 27,000 key calls per ResNet-50 backward)."""

    __slots__ = ("heap", "count")

    def __init__(self, nodes=()):
        self.count = itertools.count()
        self.heap = [(-n._seq, next(self.count), n) for n in nodes]
        heapq.heapify(self.heap)

    def append(self, node) -> None:
        heapq.heappush(self.heap, (-node._seq, next(self.count), node))

    def pop(self):
        return heapq.heappop(self.heap)[2]

    def __bool__(self) -> bool:
        return bool(self.heap)


def _release_edges(node, deps, ready):
    for nxt, _ in node.next_functions:
        if nxt is not None:
            c = deps[nxt] - 1
            deps[nxt] = c
            if c == 0:
                ready.append(nxt)


def _run_node(node, buf, retain_graph, create_graph, capture, captured, accumulate, buffers,
              deps, ready, shared):
    hooks = node._hooks
    if hooks is not None:
        buf = _pre_hooks(node, hooks, buf, create_graph)
    if capture is not None:
        for nr in range(len(buf)):
            slot = capture.get((node, nr))
            if slot is not None and buf[nr] is not None:
                captured[slot] = buf[nr] if captured[slot] is None else captured[slot] + buf[nr]
    if type(node) is AccumulateGrad:
        if accumulate and buf[0] is not None:
            node.accumulate(buf[0], create_graph, shared)
        return
    nf = node.next_functions
    if node._nout == 1:
        run = buf[0] is not None
    else:
        run = any(b is not None for b in buf)
        if run:
            buf = [b if b is not None else _zeros_for(node, i) for i, b in enumerate(buf)]
    if run:
        try:
            grads = node.apply(buf)
        except Exception:
            if node._trace:
                warnings.warn("Error detected in " + node.name() + ". Traceback of forward call "
                              "that caused the error:\n" + node._trace, stacklevel=2)
            raise
        grads = _fix_grads(node, grads)
    else:
        grads = [None] * len(nf)
    if STATE.anomaly and STATE.anomaly_check_nan:
        _check_nan(node, grads)
    if hooks is not None and "post" in hooks:
        for h in list(hooks["post"]):
            r = h(tuple(grads), tuple(buf))
            if r is not None:
                grads = list(r)
    if not retain_graph:
        node._release()
    del buf
    for (nxt, nr), g in zip(nf, grads):
        if nxt is None:
            continue
        if g is not None:
            b = buffers.get(nxt)
            if b is None:
                b = buffers[nxt] = [None] * nxt._nout
            b[nr] = g if b[nr] is None else b[nr] + g
        c = deps[nxt] - 1
        deps[nxt] = c
        if c == 0:
            ready.append(nxt)


def _pre_hooks(node, hooks, buf, create_graph):
    th = hooks.get("tensor")
    if th:
        for nr, lst in th.items():
            if buf[nr] is not None:
                for h in list(lst):
                    r = h(buf[nr])
                    if r is not None:
                        buf[nr] = r
    ret = hooks.get("retain")
    if ret:
        for nr, ref in ret.items():
            t = ref()
            if t is not None and buf[nr] is not None:
                old = t._ag.get("_grad")
                g = buf[nr] if create_graph else buf[nr].detach()
                t._ag["_grad"] = g.clone() if old is None else old + g
    pre = hooks.get("pre")
    if pre:
        for h in list(pre):
            r = h(tuple(buf))
            if r is not None:
                buf = list(r)
    return buf


def _zeros_for(node, i):
    meta = node._out_meta
    if meta is None or meta[i] is None:
        return None
    shape, dtype, device = meta[i]
    return ember.zeros(shape, dtype=dtype, device=device)


def _cast_grad(g, dtype):
    """A gradient in its input's dtype: a real input of a complex computation gets the real
    part (the derivative along the real axis), as torch's."""
    if g.dtype.is_complex and not dtype.is_complex:
        g = ember.real(g)
    return g.to(dtype)


def _fix_grads(node, grads):
    """One gradient per next_functions edge: list arguments are flattened, broadcast gradients
    summed back to their input's shape and cast to its dtype."""
    needs = node._needs
    n = len(needs)
    if len(grads) < n:
        grads = list(grads) + [None] * (n - len(grads))
    flat = any(isinstance(need, tuple) for need in needs)  # a tensor-list argument (cat)
    out = [g if need else None for g, need in zip(grads, needs)]
    for i, src in node._fix:  # tensor arguments (not lists): reduce broadcasts, cast
        g = out[i]
        if g is None:
            continue
        m = src if type(src) is not SavedTensor else \
            src.tensor if src.tensor is not None else src.meta  # packed by saved-tensor hooks
        if g.shape != m.shape:
            g = _sum_to(g, m.shape)
        if g.dtype != m.dtype:
            g = _cast_grad(g, m.dtype)
        out[i] = g
    if flat:
        flat_out = []
        for i, need in enumerate(needs):
            g = out[i]
            if isinstance(need, tuple):
                gl = g if g is not None else [None] * len(need)
                flat_out.extend(gl[j] if nj else None for j, nj in enumerate(need))
            else:
                flat_out.append(g)
        return flat_out
    return out


def _check_nan(node, grads):
    for i, g in enumerate(grads):
        if g is not None and bool(ember.isnan(g).any()):
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node._trace:
                warnings.warn("Error detected in " + node.name() + ". Traceback of forward call "
                              "that caused the error:\n" + node._trace, stacklevel=3)
            raise RuntimeError(msg)
