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


def _analytical(fn, inputs, idx, check_grad_dtypes=False):
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
                    if check_grad_dtypes and gi.dtype != inputs[idx[k]].dtype:
                        raise GradcheckError(f"Gradient has dtype mismatch: input {idx[k]} is "
                                             f"{inputs[idx[k]].dtype}, its gradient {gi.dtype}")
                    vals = gi.detach().reshape(-1).tolist()
                    for r, v in enumerate(vals):
                        cols[k][r][j] = v
        for k in range(len(idx)):
            jac[o][k] = cols[k]
    return jac


def _as_real(func, inputs, idx):
    """A complex check as a real one, as torch's gradcheck does: each complex input that
    requires grad becomes its (real, imaginary) pairs (view_as_real, a float64 leaf) and each
    complex output its pairs too, so the Jacobians compared are those of a real function. With
    torch's convention (a gradient dL/dx + i dL/dy), backward through view_as_complex /
    view_as_real gives exactly that real function's vector-Jacobian products."""
    complex_in = [i for i in idx if inputs[i].dtype.is_complex]
    args = list(inputs)
    for i in complex_in:
        args[i] = ember.view_as_real(inputs[i].detach()).clone().requires_grad_(True)

    def real_func(*a):
        a = list(a)
        for i in complex_in:
            a[i] = ember.view_as_complex(a[i])
        out = func(*a)
        single = isinstance(out, Tensor)
        outs = tuple(ember.view_as_real(o) if isinstance(o, Tensor) and o.dtype.is_complex
                     else o for o in _as_tuple(out))
        return outs[0] if single else outs

    return real_func, tuple(args)


def _refuse(fn_name: str, **flags) -> None:
    """What ember cannot check is refused rather than skipped: a check that silently did not
    run would pass code torch's would fail."""
    reasons = {
        "check_batched_grad": "needs vmap, which ember does not have",
        "check_batched_forward_grad": "needs vmap, which ember does not have",
        "check_fwd_over_rev": "forward-mode AD over a backward graph is not supported",
        "masked": "is for sparse inputs, which ember does not have",
    }
    for name, value in flags.items():
        if value:
            raise NotImplementedError(f"{fn_name}({name}=True): {reasons[name]}")


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """True when the gradients of `func` at `inputs` match finite differences, as torch's:
    the backward Jacobian (``check_backward_ad``) and/or the forward-mode one
    (``check_forward_ad``, through ember.autograd.forward_ad), every element or, with
    ``fast_mode``, one random projection v^T J u per input and output; backward run twice and
    compared within ``nondet_tol`` (reentrancy); zero output gradients give zero input gradients
    (``check_undefined_grad``: ember has no undefined gradients, zeros stand for them);
    gradients of the inputs' dtype (``check_grad_dtypes``). The batched checks need vmap and
    raise NotImplementedError."""
    _refuse("gradcheck", check_batched_grad=check_batched_grad,
            check_batched_forward_grad=check_batched_forward_grad, masked=masked)
    if not (check_forward_ad or check_backward_ad):
        raise ValueError("Expected at least one of check_forward_ad or check_backward_ad to be "
                         "True")
    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i in idx:
        if inputs[i].dtype not in (ember.float64, ember.complex128):
            import warnings

            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of double "
                          "precision floating point. ", stacklevel=2)
    func, inputs = _as_real(func, inputs, idx)
    try:
        if fast_mode:
            _check_fast(func, inputs, idx, eps, atol, rtol, check_forward_ad, check_backward_ad)
        else:
            num = _numerical(func, inputs, idx, eps)
            if check_backward_ad:
                ana = _analytical(func, inputs, idx, check_grad_dtypes)
                _compare(num, ana, idx, atol, rtol, "")
                _check_reentrant(ana, _analytical(func, inputs, idx, False), nondet_tol)
            if check_forward_ad:
                _compare(num, _forward_jacobian(func, inputs, idx), idx, atol, rtol,
                         " (forward mode)")
        if check_backward_ad and check_undefined_grad:
            _check_zero_output_grads(func, inputs, idx)
    except GradcheckError:
        if not raise_exception:
            return False
        raise
    return True


def _compare(num, ana, idx, atol, rtol, mode):
    for o in range(len(num)):
        for k, i in enumerate(idx):
            for r, (nrow, arow) in enumerate(zip(num[o][k], ana[o][k])):
                for c, (nv, av) in enumerate(zip(nrow, arow)):
                    if not abs(av - nv) <= atol + rtol * abs(nv):
                        raise GradcheckError(
                            f"Jacobian mismatch for output {o} with respect to input {i}{mode},\n"
                            f"numerical:{_fmt(num[o][k])}\nanalytical:{_fmt(ana[o][k])}\n"
                            f"(first mismatch at input element {r}, output element {c}: "
                            f"numerical {nv}, analytical {av})")


def _check_reentrant(first, second, nondet_tol):
    for a_out, b_out in zip(first, second):
        for a_in, b_in in zip(a_out, b_out):
            for a_row, b_row in zip(a_in, b_in):
                if any(abs(x - y) > nondet_tol for x, y in zip(a_row, b_row)):
                    raise GradcheckError(
                        "Backward is not reentrant, i.e., running backward with same input and "
                        "grad_output multiple times gives different values, although analytical "
                        "gradient matches numerical gradient. The tolerance for nondeterminism "
                        f"was {nondet_tol}.")


def _check_zero_output_grads(func, inputs, idx):
    from . import grad as autograd_grad

    outs = [o for o in _flat_outputs(func, inputs) if o.requires_grad]
    if not outs:
        return
    grads = autograd_grad(outs, [inputs[i] for i in idx], [ember.zeros_like(o) for o in outs],
                          allow_unused=True)
    for i, g in zip(idx, grads):
        if g is not None and bool((g.detach() != 0).any()):
            raise GradcheckError(
                f"Expected backward to give zero gradients for input {i} when every output's "
                "gradient is zero (ember's stand-in for undefined output gradients)")


def _forward_jacobian(func, inputs, idx):
    """Jacobian by forward-mode AD, one tangent per input element, laid out as _numerical's."""
    from . import forward_ad as fwAD

    jac = None
    for k, i in enumerate(idx):
        x = inputs[i]
        n = x.numel()
        rows = None
        for j in range(n):
            tangent = ember.zeros(n, dtype=x.dtype, device=x.device)
            tangent[j] = 1.0
            with fwAD.dual_level():
                args = list(inputs)
                args[i] = fwAD.make_dual(x.detach(), tangent.reshape(x.shape))
                outs = _flat_outputs(func, args)
                cols = []
                for out in outs:
                    t = fwAD.unpack_dual(out).tangent
                    cols.append([0.0] * out.numel() if t is None
                                else t.detach().reshape(-1).to(ember.float64).tolist())
            if rows is None:
                rows = [[] for _ in outs]
            for o, col in enumerate(cols):
                rows[o].append(col)
        if jac is None:
            jac = [[None] * len(idx) for _ in rows]
        for o in range(len(rows)):
            jac[o][k] = rows[o]
    return jac


def _check_fast(func, inputs, idx, eps, atol, rtol, forward, backward):
    """torch's fast mode: for random u (per input) and v (per output), v^T J u from finite
    differences along u against backward (v^T J, then . u) and forward mode (J u, then v .)."""
    from . import grad as autograd_grad

    gen = ember.Generator().manual_seed(0)
    outs = _flat_outputs(func, inputs)
    vs = [ember.rand(o.shape, dtype=ember.float64, generator=gen).to(o.dtype) for o in outs]
    for i in idx:
        x = inputs[i]
        u = ember.rand(x.shape, dtype=ember.float64, generator=gen).to(x.dtype)
        vals = []
        for d in (eps, -eps):
            args = list(inputs)
            with ember.no_grad():
                args[i] = (x.detach() + d * u).requires_grad_(True)
            vals.append([o.detach().to(ember.float64) for o in _flat_outputs(func, args)])
        numerical = [float(((p - m) / (2 * eps) * v.to(ember.float64)).sum())
                     for p, m, v in zip(vals[0], vals[1], vs)]
        checks = []
        if backward:
            fresh = _flat_outputs(func, inputs)
            for o, (out, v) in enumerate(zip(fresh, vs)):
                g = (autograd_grad(out, [x], v, retain_graph=True, allow_unused=True)[0]
                     if out.requires_grad else None)
                value = 0.0 if g is None else float((g.detach().to(ember.float64) *
                                                     u.to(ember.float64)).sum())
                checks.append((o, value, ""))
        if forward:
            from . import forward_ad as fwAD

            with fwAD.dual_level():
                args = list(inputs)
                args[i] = fwAD.make_dual(x.detach(), u)
                for o, (out, v) in enumerate(zip(_flat_outputs(func, args), vs)):
                    t = fwAD.unpack_dual(out).tangent
                    value = 0.0 if t is None else float((t.detach().to(ember.float64) *
                                                         v.to(ember.float64)).sum())
                    checks.append((o, value, " (forward mode)"))
        for o, value, mode in checks:
            if not abs(value - numerical[o]) <= atol + rtol * abs(numerical[o]):
                raise GradcheckError(
                    f"Jacobian mismatch for output {o} with respect to input {i}{mode} (fast "
                    f"mode, v^T J u for random u and v): numerical {numerical[o]}, analytical "
                    f"{value}")


def _fmt(rows):
    return "tensor(" + repr(rows) + ")"


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the gradients of `func` (second derivatives, through create_graph=True)."""
    from . import grad as autograd_grad

    _refuse("gradgradcheck", check_batched_grad=check_batched_grad,
            check_fwd_over_rev=check_fwd_over_rev, masked=masked)
    if not check_rev_over_rev:
        raise ValueError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to "
                         "be True")
    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    func, inputs = _as_real(func, inputs, idx)  # complex inputs/outputs as real pairs
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
    if gen_non_contig_grad_outputs:  # the same values, every other element of a wider buffer
        grad_outputs = tuple(_non_contiguous(g) for g in grad_outputs)
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
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode)


def _non_contiguous(t):
    wide = ember.zeros(*t.shape, 2, dtype=t.dtype, device=t.device)
    with ember.no_grad():
        wide[..., 0] = t.detach()
    out = wide[..., 0]
    return out.requires_grad_(t.requires_grad) if t.dim() else out.clone().requires_grad_(
        t.requires_grad)
