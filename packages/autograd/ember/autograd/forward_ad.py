"""ember.autograd.forward_ad: forward-mode AD with dual tensors (PyTorch's API).

``make_dual(x, t)`` returns an alias of ``x`` carrying the tangent ``t``; every op on it goes
through the autograd hook (the alias requires grad so that the core hands its ops over), and the
hook computes the output's tangent from the tangent table below:
  - ops linear in their tensor arguments (add, sub, sum, mean, views, indexing, cumsum, copies):
    tangent = op(tangents in place of the inputs);
  - bilinear ops (mul, the matrix products): tangent = sum over inputs of op(with that input
    replaced by its tangent);
  - elementwise ops: the Jacobian is diagonal, so the tangent is the reverse formula applied to
    the input's tangent (broadcast to the output's shape);
  - anything else: the double-vjp trick, J t = d/du <vjp(u), t>, exact since the vjp is linear
    in u (two extra formula evaluations).
Tangents are computed without recording (forward-over-reverse is not supported).
"""

from __future__ import annotations

import weakref
from collections import namedtuple

import ember
from ember import _C

from ._engine import STATE

Tensor = _C.Tensor
UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_levels: list = []  # stack of lists of weakrefs to the tensors given tangents at that level

LINEAR = {"add", "sub", "neg", "sum", "mean", "clone", "_to_dtype", "_view", "reshape", "_expand",
          "permute", "transpose", "t", "squeeze", "unsqueeze", "flatten", "unflatten", "narrow",
          "select", "as_strided", "_getitem", "cumsum"}
BILINEAR = {"mul", "mm", "bmm", "matmul", "mv", "dot", "vdot", "inner", "outer", "ger"}


def enter_dual_level():
    _levels.append([])
    STATE.fw_level = len(_levels)
    return len(_levels) - 1


def exit_dual_level(*, level=None):
    refs = _levels.pop()
    for r in refs:
        t = r()
        if t is not None:
            t._ag.pop("_fw_grad", None)
    STATE.fw_level = len(_levels)


class dual_level:  # noqa: N801
    """Context manager for a forward-AD level: tangents exist only inside it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _set_tangent(t, tangent):
    t._ag["_fw_grad"] = tangent
    _levels[-1].append(weakref.ref(t))


def make_dual(tensor, tangent, *, level=None):
    """An alias of `tensor` carrying `tangent` (same shape) at the current dual level."""
    if not _levels:
        raise RuntimeError("To create a dual Tensor, you need to be in a dual level: use "
                           "`with ember.autograd.forward_ad.dual_level():`")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {tuple(tensor.shape)} while the given forward gradient is of "
                           f"size {tuple(tangent.shape)}.")
    if not tensor.dtype.is_floating_point:
        raise ValueError("Expected primal to be floating point")
    d = tensor.detach()
    d.requires_grad_(True)
    _set_tangent(d, tangent.detach().to(tensor.dtype))
    return d


def unpack_dual(tensor, *, level=None):
    """(primal, tangent); tangent is None for a tensor without one."""
    tangent = tensor._ag.get("_fw_grad") if isinstance(tensor, Tensor) else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(tensor.detach(), tangent)


def _tangent_of(a):
    return a._ag.get("_fw_grad") if isinstance(a, Tensor) else None


def propagate(name, fn, entry, args, kwargs, out):
    """Called by the hook (inside a dual level) after the forward: gives `out` its tangent."""
    tans = [_tangent_of(a) for a in args]
    if all(t is None for t in tans) or not isinstance(out, Tensor):
        return
    if not out.dtype.is_floating_point:
        return
    with ember.no_grad():
        tan = _jvp(name, fn, entry, args, kwargs, out, tans)
    if tan is not None:
        _set_tangent(out, tan)


def _replace(args, i, t):
    a = list(args)
    a[i] = t
    return a


def _jvp(name, fn, entry, args, kwargs, out, tans):
    idx = [i for i, t in enumerate(tans) if t is not None]
    if name in LINEAR:
        a = list(args)
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor) and i < 2:
                a[i] = tans[i] if tans[i] is not None else ember.zeros_like(arg)
        return fn(*a, **kwargs)
    if name in BILINEAR:
        total = None
        for i in idx:
            r = fn(*_replace(args, i, tans[i]), **kwargs)
            total = r if total is None else total + r
        return total
    if entry is None:
        raise RuntimeError(f"derivative for {name} is not implemented")
    if name in _elementwise():
        # diagonal Jacobian: the reverse formula applied to the (broadcast) tangent
        total = None
        for i in idx:
            needs = tuple(j == i for j in range(len(args)))
            r = entry.vjp(tans[i].expand(out.shape), needs, out, *args, **kwargs)[i]
            total = r if total is None else total + r
        return total
    return _double_vjp(entry, args, kwargs, out, tans, idx)


_ELEMENTWISE = None


def _elementwise():
    global _ELEMENTWISE
    if _ELEMENTWISE is None:
        from ._formulas_nn import ACTIVATIONS

        _ELEMENTWISE = {r["name"] for r in _C._op_table()} | {"where", "clamp", "lerp"} | \
            set(ACTIVATIONS)
    return _ELEMENTWISE


def _double_vjp(entry, args, kwargs, out, tans, idx):
    from . import grad as autograd_grad
    from ._engine import _sum_to

    with ember.enable_grad():
        u = ember.zeros_like(out).requires_grad_(True)
        prim = [a.detach().requires_grad_(True)
                if isinstance(a, Tensor) and a.dtype.is_floating_point else a for a in args]
        needs = tuple(i in idx for i in range(len(args)))
        o = out.detach()
        if isinstance(entry.save_output, tuple):  # formulas saving outputs get them as a tuple
            o = (o,)
        res = entry.vjp(u, needs, o, *prim, **kwargs)
        total = None
        for i in idx:
            gi = res[i]
            if gi is None:
                continue
            gi = _sum_to(gi, args[i].shape)
            if not gi.requires_grad:
                continue
            (jt,) = autograd_grad(gi, u, tans[i], allow_unused=True)
            if jt is not None:
                total = jt if total is None else total + jt
    return total if total is not None else ember.zeros_like(out)
