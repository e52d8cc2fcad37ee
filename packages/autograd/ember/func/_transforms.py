"""ember.func's differentiation transforms: grad, grad_and_value, vjp, jvp, jacrev, jacfwd,
hessian, linearize, built on ember.autograd's reverse mode.

Each call differentiates with respect to fresh aliases of its inputs (a detached leaf for an input
that needs no gradient, ``view_as`` for one that does), so transforms nest (``grad(grad(f))``,
``jacrev(jacrev(f))``, ``vmap(grad(f))``) and a function's closure keeps its gradients: the
gradient graph is kept (``create_graph``) exactly when the function's graph reaches a tensor
requiring grad other than these aliases (an outer transform's input, a closed-over parameter), as
torch.func's results are differentiable exactly then. Forward mode (jvp, jacfwd) is the
double-vjp trick, J v = d/du <u^T J, v>, exact because u^T J is linear in u; it composes with
everything reverse mode does.
"""

from __future__ import annotations

import functools

import ember
from ember import _C
from ember.autograd import _engine
from ember.autograd import grad as _autograd_grad

from ._pytree import tree_flatten, tree_unflatten
from ._vmap import _RngWatch

Tensor = _C.Tensor


# ---------------------------------------------------------------------------------------------
# argument handling


def _check_argnums(argnums, n_args):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and all(isinstance(a, int) for a in argnums):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        nums = argnums
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    out = []
    for a in nums:
        if not -n_args <= a < n_args:
            raise RuntimeError(f"Got argnum={a}, but only {n_args} positional inputs")
        out.append(a % n_args)
    if len(set(out)) != len(out):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    return out


def _alias(t):
    """A tensor to differentiate with respect to: a fresh leaf, or a view of `t` when `t` already
    requires grad (an outer transform's input: the outer graph runs through the view)."""
    if not isinstance(t, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(t)}")
    if t.requires_grad:
        return t.view_as(t)
    return t.detach().requires_grad_(True)


def _aliased_args(args, argnums):
    """(args with the differentiated ones replaced by aliases, the flat aliases, the spec of the
    differentiated part: one pytree per argnum)."""
    args = list(args)
    chosen = []
    for a in argnums:
        leaves, spec = tree_flatten(args[a])
        aliases = [_alias(t) for t in leaves]
        args[a] = tree_unflatten(aliases, spec)
        chosen.append((aliases, spec))
    return args, chosen


def _reaches_outer(outputs, aliases) -> bool:
    """Whether the graph of `outputs` reaches a tensor requiring grad other than `aliases` (so the
    results must stay differentiable for whoever owns it)."""
    if not _C.is_grad_enabled():
        return False
    own = set()
    for t in aliases:
        e = _engine.edge_of(t)
        if e is not None and isinstance(e[0], _engine.AccumulateGrad):
            own.add(id(e[0]))
    if len(own) < len(aliases):  # a view alias: its input requires grad outside
        return True
    seen = set()
    stack = [_engine.edge_of(o)[0] for o in outputs
             if isinstance(o, Tensor) and o.requires_grad]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, _engine.AccumulateGrad):
            if id(node) not in own:
                return True
            continue
        stack.extend(n for n, _ in getattr(node, "next_functions", ()) if n is not None)
    return False


def _reaches_any(t, node_ids) -> bool:
    """Whether the graph of tensor `t` reaches one of the nodes whose ids are given."""
    if not t.requires_grad:
        return False
    seen = set()
    stack = [_engine.edge_of(t)[0]]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        if id(node) in node_ids:
            return True
        seen.add(id(node))
        stack.extend(n for n, _ in getattr(node, "next_functions", ()) if n is not None)
    return False


def _grads_of(outputs, inputs, cotangents, keep_graph):
    """d<outputs, cotangents>/d inputs; zeros for inputs the outputs do not depend on."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return [ember.zeros_like(i) for i in inputs]
    got = _autograd_grad([p[0] for p in pairs], inputs, [p[1] for p in pairs],
                         retain_graph=True, create_graph=keep_graph, allow_unused=True)
    return [ember.zeros_like(i) if g is None else g for g, i in zip(got, inputs)]


def _detach_tree(tree, keep_graph):
    if keep_graph:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return out


def _unflatten_per_argnum(flat_per_arg, chosen, argnums):
    trees = tuple(tree_unflatten(g, spec) for g, (_, spec) in zip(flat_per_arg, chosen))
    return trees[0] if isinstance(argnums, int) else trees


# ---------------------------------------------------------------------------------------------
# grad


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning ``(gradient of func w.r.t. args[argnums], func's value)``; with
    ``has_aux``, func returns ``(value, aux)`` and the result is ``(gradient, (value, aux))``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        api = "grad_and_value(f)(*args)"
        with ember.enable_grad():
            call_args, chosen = _aliased_args(args, nums)
            out, aux = _split_aux(func(*call_args, **kwargs), has_aux, api)
            if not isinstance(out, Tensor):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the "
                                   "vjp or jacrev APIs instead?")
            flat = [t for aliases, _ in chosen for t in aliases]
            keep = _reaches_outer([out], flat)
            if out.requires_grad and out.dtype.is_floating_point:
                gs = _grads_of([out], flat, [ember.ones_like(out)], keep)
            else:
                gs = [ember.zeros_like(t) for t in flat]
        per_arg, k = [], 0
        for aliases, _ in chosen:
            per_arg.append([g if keep else g.detach() for g in gs[k:k + len(aliases)]])
            k += len(aliases)
        grads = _unflatten_per_argnum(per_arg, chosen, argnums)
        value = _detach_tree(out, keep)
        if has_aux:
            return grads, (value, _detach_tree(aux, keep))
        return grads, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of scalar-valued ``func`` w.r.t. ``args[argnums]`` (a
    tuple of gradients for a tuple of argnums; pytrees of tensors keep their structure); with
    ``has_aux``, ``(gradient, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


# ---------------------------------------------------------------------------------------------
# vjp


def _flat_tensor_outputs(out, api):
    leaves, spec = tree_flatten(out)
    for x in leaves:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got "
                               f"unsupported type {type(x)}")
    return leaves, spec


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns the vector-Jacobian product
    with respect to each primal (a tuple, one pytree per primal). With ``has_aux``, func returns
    ``(output, aux)`` and vjp returns ``(output, vjp_fn, aux)``."""
    api = "vjp(f, *primals)"
    with ember.enable_grad():
        call_args, chosen = _aliased_args(primals, range(len(primals)))
        out, aux = _split_aux(func(*call_args), has_aux, api)
        outs, out_spec = _flat_tensor_outputs(out, api)
        flat = [t for aliases, _ in chosen for t in aliases]
        keep = _reaches_outer(outs, flat)

    def vjp_fn(cotangents):
        cots, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                               f"structure of outputs to the function. cotangents: {cot_spec}, "
                               f"primal output: {out_spec}")
        for i, (o, c) in enumerate(zip(outs, cots)):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{c.shape} and output[{i}] has a shape of {o.shape}.")
        with ember.enable_grad():
            cot_keep = keep or any(c.requires_grad for c in cots)
            gs = _grads_of(outs, flat, cots, cot_keep)
        res, k = [], 0
        for aliases, spec in chosen:
            part = [g if cot_keep else g.detach() for g in gs[k:k + len(aliases)]]
            res.append(tree_unflatten(part, spec))
            k += len(aliases)
        return tuple(res)

    value = _detach_tree(out, keep)
    if has_aux:
        return value, vjp_fn, _detach_tree(aux, keep)
    return value, vjp_fn


# ---------------------------------------------------------------------------------------------
# jvp and linearize (forward mode through the double-vjp trick)


class _Linearized:
    """func run once at the primals, with the vjp graph kept so that J v costs one more backward
    per tangent (and no new call of func)."""

    def __init__(self, func, primals, has_aux, api):
        with ember.enable_grad():
            call_args, chosen = _aliased_args(primals, range(len(primals)))
            out, self.aux = _split_aux(func(*call_args), has_aux, api)
            self.outs, self.out_spec = _flat_tensor_outputs(out, api)
            self.ins = [t for aliases, _ in chosen for t in aliases]
            self.chosen = chosen
            self.keep = _reaches_outer(self.outs, self.ins)
            self.out = out
            # u^T J for a free cotangent u per output: linear in u, differentiated below. u is
            # ones, not zeros: a backward that is not differentiable (a Function's
            # once_differentiable backward) then shows as a non-zero vjp without a graph
            self.us = [ember.ones_like(o).requires_grad_(True) for o in self.outs]
            pairs = [(o, u) for o, u in zip(self.outs, self.us) if o.requires_grad]
            if pairs:
                got = _autograd_grad([p[0] for p in pairs], self.ins, [p[1] for p in pairs],
                                     retain_graph=True, create_graph=True, allow_unused=True)
            else:
                got = [None] * len(self.ins)
            u_nodes = {id(_engine.edge_of(u)[0]) for u in self.us}
            for g in got:
                # u^T J is linear in u: a non-zero one whose graph does not reach u came from a
                # backward that was not recorded
                if g is not None and not _reaches_any(g, u_nodes) and bool((g != 0).any()):
                    raise RuntimeError(
                        f"{api}: the backward of an op in the function is not differentiable "
                        "(e.g. an autograd.Function with a once_differentiable backward): "
                        "ember computes forward-mode derivatives by differentiating the backward, "
                        "so this function has none. Use vjp/jacrev instead.")
            self.vjps = [(g, i) for g, i in zip(got, self.ins) if g is not None
                         and g.requires_grad]

    def tangent_out(self, flat_tangents):
        """J v for flat tangents (one per input leaf): a flat list, one per output."""
        with ember.enable_grad():
            pairs = [(g, t) for (g, i), t in zip(self.vjps, self._matching(flat_tangents))]
            keep = self.keep or any(t.requires_grad for t in flat_tangents)
            if pairs:
                got = _autograd_grad([p[0] for p in pairs], self.us, [p[1] for p in pairs],
                                     retain_graph=True, create_graph=keep, allow_unused=True)
            else:
                got = [None] * len(self.us)
        return [ember.zeros_like(o) if g is None else (g if keep else g.detach())
                for g, o in zip(got, self.outs)]

    def _matching(self, flat_tangents):
        by_input = {id(i): t for i, t in zip(self.ins, flat_tangents)}
        return [by_input[id(i)] for _, i in self.vjps]


def _check_jvp_args(primals, tangents, api):
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents "
                           f"also must be. Got primals with structure {p_spec} and tangents with "
                           f"structure {t_spec}")
    for p, t in zip(p_leaves, t_leaves):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected primals and tangents to be tensors, got "
                               f"{type(p)} and {type(t)}")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"{api}: Expected primals and tangents to have the same shape. "
                               f"Got primal of shape {tuple(p.shape)} and tangent of shape "
                               f"{tuple(t.shape)}.")
    return t_leaves


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J tangents)`` (with ``has_aux``: ``(output, jvp_out, aux)``)."""
    api = "jvp(f, primals, tangents)"
    flat_tangents = _check_jvp_args(primals, tangents, api)
    lin = _Linearized(func, primals, has_aux, api)
    jv = tree_unflatten(lin.tangent_out(flat_tangents), lin.out_spec)
    value = _detach_tree(lin.out, lin.keep)
    if has_aux:
        return value, jv, _detach_tree(lin.aux, lin.keep)
    return value, jv


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is J tangents at ``primals``, without
    calling func again."""
    lin = _Linearized(func, primals, False, "linearize(f, *primals)")

    def jvp_fn(*tangents):
        flat = _check_jvp_args(primals, tangents, "linearize")
        return tree_unflatten(lin.tangent_out(flat), lin.out_spec)

    return _detach_tree(lin.out, lin.keep), jvp_fn


# ---------------------------------------------------------------------------------------------
# Jacobians


def _jacobian_tree(out_leaves, out_spec, in_leaves_per_arg, rows, argnums):
    """Assembles ``rows[o][k]`` (the Jacobian block of output leaf o w.r.t. input leaf k, shaped
    out.shape + in.shape) into torch's nesting: the output's pytree, each leaf holding the
    input's pytree (a tuple of them for a tuple of argnums)."""
    result = []
    for o in range(len(out_leaves)):
        per_arg, k = [], 0
        for leaves, spec in in_leaves_per_arg:
            per_arg.append(tree_unflatten(rows[o][k:k + len(leaves)], spec))
            k += len(leaves)
        result.append(per_arg[0] if isinstance(argnums, int) else tuple(per_arg))
    return tree_unflatten(result, out_spec)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of func w.r.t. ``args[argnums]`` by reverse mode: one backward per output
    element."""
    if chunk_size is not None and chunk_size < 1:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        api = "vjp(f, *primals)"
        with ember.enable_grad():
            call_args, chosen = _aliased_args(args, nums)
            out, aux = _split_aux(func(*call_args, **kwargs), has_aux, api)
            outs, out_spec = _flat_tensor_outputs(out, api)
            ins = [t for aliases, _ in chosen for t in aliases]
            keep = _reaches_outer(outs, ins)
            rows = []
            for o in outs:
                flat_o = o.reshape(-1)
                per_elem = [_grads_of([flat_o[j]], ins, [None], keep) if o.requires_grad
                            else [ember.zeros_like(i) for i in ins] for j in range(o.numel())]
                blocks = []
                for k, i in enumerate(ins):
                    shape = tuple(o.shape) + tuple(i.shape)
                    if per_elem:
                        blocks.append(ember.stack([g[k] for g in per_elem]).reshape(shape))
                    else:
                        blocks.append(ember.zeros(shape, dtype=i.dtype, device=i.device))
                rows.append([b if keep else b.detach() for b in blocks])
        jac = _jacobian_tree(outs, out_spec, chosen, rows, argnums)
        return (jac, _detach_tree(aux, keep)) if has_aux else jac

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func w.r.t. ``args[argnums]`` by forward mode: one Jacobian-vector product
    per input element (each a backward through the vjp graph, see the module docstring)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        api = "jvp(f, primals, tangents)"

        def call(*chosen_args):
            full = list(args)
            for a, v in zip(nums, chosen_args):
                full[a] = v
            return func(*full, **kwargs)

        rng = _RngWatch(randomness)  # torch's jacfwd runs under vmap: random ops are refused
        lin = _Linearized(call, tuple(args[a] for a in nums), has_aux, api)
        rng.after_calls()
        ins = lin.ins
        columns = []  # columns[k][j]: J e_j for element j of input leaf k, one per output
        for k, i in enumerate(ins):
            per_elem = []
            for j in range(i.numel()):
                basis = [ember.zeros_like(x) for x in ins]
                basis[k] = ember.zeros(i.numel(), dtype=i.dtype, device=i.device)
                basis[k][j] = 1
                basis[k] = basis[k].reshape(i.shape)
                per_elem.append(lin.tangent_out(basis))
            columns.append(per_elem)
        rows = []
        for o_idx, o in enumerate(lin.outs):
            blocks = []
            for k, i in enumerate(ins):
                shape = tuple(o.shape) + tuple(i.shape)
                if i.numel() == 0:
                    blocks.append(ember.zeros(shape, dtype=o.dtype, device=o.device))
                    continue
                cols = ember.stack([c[o_idx].reshape(-1) for c in columns[k]], dim=-1)
                blocks.append(cols.reshape(shape))
            rows.append(blocks)
        jac = _jacobian_tree(lin.outs, lin.out_spec, lin.chosen, rows, argnums)
        return (jac, _detach_tree(lin.aux, lin.keep)) if has_aux else jac

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of scalar func w.r.t. ``args[argnums]``: the Jacobian of its gradient (torch
    computes ``jacfwd(jacrev(func))``; ember uses ``jacrev(jacrev(func))``, equal in value and
    needing second derivatives only)."""
    return jacrev(jacrev(func, argnums), argnums)
