"""ember.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp of Python functions (PyTorch's
API). jvp uses the double-vjp trick (exact: the vjp is linear in its cotangent)."""

from __future__ import annotations

import ember
from ember import _C

from . import grad as _grad

Tensor = _C.Tensor


def _tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _prep(inputs, create_graph):
    return tuple(t.detach().requires_grad_(True) if not create_graph or not t.requires_grad
                 else t.view_as(t) for t in inputs)


def _grads(outs, ins, gos, create_graph):
    gs = _grad(outs, ins, gos, create_graph=create_graph, retain_graph=True, allow_unused=True)
    return tuple(ember.zeros_like(i) if g is None else g for g, i in zip(gs, ins))


def _finish(x, create_graph):
    return x if create_graph else x.detach()


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J)."""
    single = isinstance(inputs, Tensor)
    with ember.enable_grad():
        ins = _prep(_tuple(inputs), create_graph)
        out = func(*ins)
        outs = _tuple(out)
        vs = _tuple(v) if v is not None else (None,) * len(outs)
        diff = [(o, g) for o, g in zip(outs, vs) if o.requires_grad]
        if diff:
            res = _grads([d[0] for d in diff], ins, [d[1] for d in diff], create_graph)
        else:
            res = tuple(ember.zeros_like(i) for i in ins)
    res = tuple(_finish(r, create_graph) for r in res)
    out = _finish(out, create_graph) if isinstance(out, Tensor) else tuple(
        _finish(o, create_graph) for o in outs)
    return out, (res[0] if single else res)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v), through the double-vjp trick."""
    with ember.enable_grad():
        ins = _prep(_tuple(inputs), create_graph)
        vs = _tuple(v) if v is not None else tuple(ember.ones_like(i) for i in ins)
        out = func(*ins)
        outs = _tuple(out)
        us = tuple(ember.zeros_like(o).requires_grad_(True) for o in outs)
        gi = _grad(outs, ins, us, create_graph=True, retain_graph=True, allow_unused=True)
        pairs = [(g, w) for g, w in zip(gi, vs) if g is not None and g.requires_grad]
        if pairs:
            res = _grads([p[0] for p in pairs], us, [p[1] for p in pairs], create_graph)
        else:
            res = tuple(ember.zeros_like(o) for o in outs)
    res = tuple(_finish(r, create_graph) for r in res)
    out = _finish(out, create_graph) if isinstance(out, Tensor) else tuple(
        _finish(o, create_graph) for o in outs)
    return out, (res[0] if isinstance(out, Tensor) else res)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian: out.shape + in.shape per (output, input) pair (tuples as torch nests them)."""
    single_in = isinstance(inputs, Tensor)
    with ember.enable_grad():
        ins = _prep(_tuple(inputs), create_graph)
        out = func(*ins)
        single_out = isinstance(out, Tensor)
        outs = _tuple(out)
        jac = []
        for o in outs:
            rows = [[] for _ in ins]
            flat = o.reshape(-1)
            for j in range(flat.numel()):
                if o.requires_grad:
                    gs = _grads((flat[j],), ins, None, create_graph)
                else:
                    gs = tuple(ember.zeros_like(i) for i in ins)
                for k, g in enumerate(gs):
                    rows[k].append(g)
            per_in = []
            for k, i in enumerate(ins):
                if rows[k]:
                    st = ember.stack(rows[k]) if hasattr(ember, "stack") else _stack(rows[k])
                else:
                    st = ember.zeros((0,) + tuple(i.shape), dtype=i.dtype, device=i.device)
                per_in.append(_finish(st.reshape(tuple(o.shape) + tuple(i.shape)), create_graph))
            jac.append(per_in[0] if single_in else tuple(per_in))
    return jac[0] if single_out else tuple(jac)


def _stack(ts):
    return ember.cat([t.unsqueeze(0) for t in ts]) if hasattr(ember, "cat") else _stack_slow(ts)


def _stack_slow(ts):
    out = ember.zeros((len(ts),) + tuple(ts[0].shape), dtype=ts[0].dtype, device=ts[0].device)
    for i, t in enumerate(ts):
        out[i] = t
    return out


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function."""
    single = isinstance(inputs, Tensor)

    def grad_fn(*ins):
        with ember.enable_grad():
            out = func(*ins)
            gs = _grad(out, ins, create_graph=True, allow_unused=True)
            gs = tuple(ember.zeros_like(i) if g is None else g for g, i in zip(gs, ins))
        return gs[0] if single else gs

    return jacobian(grad_fn, inputs, create_graph=create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H)."""
    single = isinstance(inputs, Tensor)
    with ember.enable_grad():
        ins = _prep(_tuple(inputs), create_graph)
        out = func(*ins)
        gs = _grad(out, ins, create_graph=True, allow_unused=True)
        vs = _tuple(v)
        pairs = [(g, w) for g, w in zip(gs, vs) if g is not None and g.requires_grad]
        res = _grads([p[0] for p in pairs], ins, [p[1] for p in pairs], create_graph) \
            if pairs else tuple(ember.zeros_like(i) for i in ins)
    res = tuple(_finish(r, create_graph) for r in res)
    return _finish(out, create_graph), (res[0] if single else res)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v); H is symmetric, so this is vhp."""
    return vhp(func, inputs, v, create_graph, strict)
