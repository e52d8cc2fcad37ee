"""gradcheck / gradgradcheck: analytical gradients against central differences (float64)."""

from __future__ import annotations

import ember
from ember import _C

Tensor = _C.Tensor


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients differ."""


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _diff_inputs(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _flat_outputs(fn, inputs):
    out = fn(*inputs)
    return [o for o in _as_tuple(out) if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _numerical(fn, inputs, idx, eps):
    """Jacobian by central differences: jac[out][in] is a (numel_in, numel_out) list of rows."""
    def outputs(args):
        # grad mode stays on: gradgradcheck's function differentiates inside
        return [o.detach().reshape(-1).to(ember.float64).clone() for o in _flat_outputs(fn, args)]

    outs0 = outputs(inputs)
    jac = [[None] * len(idx) for _ in outs0]
    for k, i in enumerate(idx):
        x = inputs[i]
        flat = x.detach().reshape(-1).clone()
        rows = [[] for _ in outs0]
        for j in range(flat.numel()):
            orig = float(flat[j])
            vals = []
            for d in (eps, -eps):
                with ember.no_grad():
                    flat[j] = orig + d
                args = list(inputs)
                args[i] = flat.reshape(x.shape).clone().requires_grad_(True)
                vals.append(outputs(args))
            with ember.no_grad():
                flat[j] = orig
            for o in range(len(outs0)):
                rows[o].append(((vals[0][o] - vals[1][o]) / (2 * eps)).tolist())
        for o in range(len(outs0)):
            jac[o][k] = rows[o]
    return jac


def _analytical(fn, inputs, idx):
    from . import grad as autograd_grad

    outs = _flat_outputs(fn, inputs)
    jac = [[None] * len(idx) for _ in outs]
    for o, out in enumerate(outs):
        n = out.numel()
        cols = [[[0.0] * n for _ in range(inputs[i].numel())] for i in idx]
        if out.requires_grad:
            for j in range(n):
                g = ember.zeros(n, dtype=out.dtype, device=out.device)
                g[j] = 1.0
                gs = autograd_grad(out, [inputs[i] for i in idx], g.reshape(out.shape),
                                   retain_graph=True, allow_unused=True)
                for k, gi in enumerate(gs):
                    if gi is None:
                        continue
                    vals = gi.detach().reshape(-1).tolist()
                    for r, v in enumerate(vals):
                        cols[k][r][j] = v
        for k in range(len(idx)):
            jac[o][k] = cols[k]
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """True when the gradients of `func` at `inputs` match finite differences."""
    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i in idx:
        if inputs[i].dtype != ember.float64:
            import warnings

            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of double "
                          "precision floating point. ", stacklevel=2)
    num = _numerical(func, inputs, idx, eps)
    ana = _analytical(func, inputs, idx)
    for o in range(len(num)):
        for k, i in enumerate(idx):
            for r, (nrow, arow) in enumerate(zip(num[o][k], ana[o][k])):
                for c, (nv, av) in enumerate(zip(nrow, arow)):
                    if not abs(av - nv) <= atol + rtol * abs(nv):
                        if not raise_exception:
                            return False
                        raise GradcheckError(
                            f"Jacobian mismatch for output {o} with respect to input {i},\n"
                            f"numerical:{_fmt(num[o][k])}\nanalytical:{_fmt(ana[o][k])}\n"
                            f"(first mismatch at input element {r}, output element {c}: "
                            f"numerical {nv}, analytical {av})")
    return True


def _fmt(rows):
    return "tensor(" + repr(rows) + ")"


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the gradients of `func` (second derivatives, through create_graph=True)."""
    from . import grad as autograd_grad

    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    outs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        gen = ember.Generator().manual_seed(0) if hasattr(ember, "Generator") else None
        grad_outputs = tuple(
            (ember.rand(o.shape, dtype=ember.float64, generator=gen) + 0.5).to(o.device)
            .requires_grad_()
            if gen is not None else ember.ones(o.shape, dtype=ember.float64, device=o.device)
            .requires_grad_()
            for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def new_func(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _flat_outputs(func, ins)
        diff = [ins[i] for i in idx]
        pairs = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
        if not pairs:
            return tuple(ember.zeros_like(t) for t in diff)
        gs = autograd_grad([p[0] for p in pairs], diff, [p[1] for p in pairs],
                           create_graph=True, allow_unused=True, materialize_grads=True)
        return gs

    return gradcheck(new_func, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
