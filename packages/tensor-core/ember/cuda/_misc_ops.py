"""More ops on CUDA tensors, registered in ``_dispatch.OPS``: the parametrised element-wise ops
(``lerp``, ``nan_to_num``, ``logit``, ``round(decimals=)``), the samplers that take tensors
(``bernoulli``, ``normal``), the add-product family (``addmm``, ``addmv``,
``baddbmm``, ``addbmm``, in place too), ``inner``, ``vdot``, ``var_mean``/``std_mean`` and
``count_nonzero``.

Each follows the CPU kernel's arithmetic: 16-bit floats compute in float32 and round once, as
the CPU's ``opmath`` does, and constants are rounded to the tensor's dtype where the CPU rounds
them. Shape errors the one-element stand-ins of ``_meta`` cannot see repeat the CPU's messages.
"""

from __future__ import annotations

import numpy

from ember import _C
from ember.cuda._core_ops import (
    _axes,
    _copy_from,
    _inplace,
    _reduced_shape,
)
from ember.cuda._ops import (
    _broadcast_shapes,
    _is_tensor,
    _meta,
    _np_dtype,
    _on_current_stream,
    _operand,
    _result,
    _shape,
    device_of,
    view,
    xp,
)


def _opmath(npd):
    """The dtype the CPU kernels compute a storage dtype in (float32 for float16)."""
    return numpy.dtype(numpy.float32) if npd == numpy.float16 else npd


def _rounded(value, npd):
    """`value` rounded to the storage dtype as the CPU does (through float32 for float16), back
    in the compute dtype: a host scalar."""
    c = _opmath(npd)
    with numpy.errstate(all="ignore"):  # 1e6 in float16 is inf, silently, as on the CPU
        return numpy.asarray(numpy.asarray(value, dtype=c), dtype=npd).astype(c)[()]


def _const(value, npd):
    """_rounded(value) as a 0-d device array."""
    return xp().asarray(_rounded(value, npd))


# ---- parametrised element-wise ops ------------------------------------------------------------


def _lerp(name: str, args, kwargs):
    device = device_of(name, args)
    meta = _meta(name, args, kwargs)  # dtype checks: `end` of start's dtype, floating only
    shape = _broadcast_shapes(*(_shape(a) for a in args))
    c = _opmath(_np_dtype(meta.dtype))
    mod = xp()
    with _on_current_stream(device):
        # computed in the opmath dtype (float32 for float16), a number weight at its own value
        s, e, w = (_operand(a, meta.dtype if _is_tensor(a) else c).astype(c, copy=False)
                   for a in args)
        d = e - s
        value = mod.where(mod.abs(w) < c.type(0.5), s + w * d, e - d * (c.type(1) - w))
        return _result(device, shape, meta.dtype, value)


def _nan_to_num(name: str, args, kwargs):
    x = args[0]
    nan, posinf, neginf = (list(args[1:]) + [0.0, None, None][len(args) - 1:])[:3]
    device = device_of(name, args)
    _meta(name, args, kwargs)
    npd = _np_dtype(x.dtype)
    mod = xp()
    with _on_current_stream(device):
        a = view(x)
        if npd.kind != "f":  # integers have no nan/inf: a copy
            return _result(device, tuple(x.shape), x.dtype, a)
        big = numpy.finfo(npd).max  # the dtype's own finite extremes (float16's for float16)
        hi = _const(big if posinf is None else posinf, npd)
        lo = _const(-big if neginf is None else neginf, npd)
        a = a.astype(_opmath(npd), copy=False)
        value = mod.where(mod.isnan(a), _const(nan, npd),
                          mod.where(mod.isinf(a), mod.where(a > 0, hi, lo), a))
        return _result(device, tuple(x.shape), x.dtype, value)


def _logit(name: str, args, kwargs):
    x = args[0]
    eps = args[1] if len(args) > 1 else kwargs.get("eps")
    device = device_of(name, args)
    meta = _meta(name, args, kwargs)  # integers compute in the default float dtype
    npd = _np_dtype(meta.dtype)
    mod = xp()
    with _on_current_stream(device):
        a = _operand(x, meta.dtype).astype(_opmath(npd), copy=False)
        if eps is not None and eps >= 0:  # a negative eps means none, as on the CPU
            lo = _rounded(eps, npd)  # the bounds in the tensor's dtype, as the CPU's are
            hi = xp().asarray(_rounded(lo.dtype.type(1) - lo, npd))
            lo = xp().asarray(lo)
            a = mod.where(a < lo, lo, mod.where(a > hi, hi, a))  # NaN passes
        return _result(device, tuple(x.shape), meta.dtype, mod.log(a / (1 - a)))


def _round(name: str, args, kwargs):
    x = args[0]
    decimals = kwargs.get("decimals") or 0  # None: not given
    device = device_of(name, args)
    _meta(name, args, kwargs)  # integers refuse decimals != 0
    npd = _np_dtype(x.dtype)
    mod = xp()
    with _on_current_stream(device):
        a = view(x)
        if npd.kind != "f":
            return _result(device, tuple(x.shape), x.dtype, a)
        c = _opmath(npd)
        a = a.astype(c, copy=False)
        if decimals == 0:
            value = mod.rint(a)  # half to even, as nearbyint
        else:
            # 10^|d| as the CPU's pow in the compute dtype gives it
            ten = mod.asarray(numpy.power(c.type(10), c.type(abs(decimals))))
            value = mod.rint(a / ten) * ten if decimals < 0 else mod.rint(a * ten) / ten
        return _result(device, tuple(x.shape), x.dtype, value)


# ---- samplers ----------------------------------------------------------------------------------


def _sampled(name: str, args, kwargs):
    """bernoulli / normal with tensor parameters, in the CPU op's own recipe: the in-place
    samplers draw into the result (on a host twin, from the device's generator: docs/cuda.md), so
    a seed gives the CPU's numbers. multinomial runs the CPU kernel on a host copy in its
    binding."""
    device = device_of(name, args)
    gen = kwargs["generator"]  # the bindings chose the device's default and checked a given one
    if name == "bernoulli":
        x, p = args if len(args) == 2 else (args[0], None)  # bernoulli(input) or (input, p)
        out = _C.empty(list(x.shape), dtype=x.dtype, device=f"cuda:{device}")  # contiguous
        return out.bernoulli_(x if p is None else p, generator=gen)
    mean, std = args  # normal: mean + std * N(0, 1), in the CPU kernel's order of operations
    if _is_tensor(std):
        bad = std < 0
        if bool(bad.any().item() if bad.numel() else False):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    shape = _broadcast_shapes(*(tuple(t.shape) for t in (mean, std) if _is_tensor(t)))
    dtype = mean.dtype if _is_tensor(mean) else std.dtype
    out = _C.empty(list(shape), dtype=dtype, device=f"cuda:{device}")
    if not _is_tensor(std):
        out.normal_(0.0, float(std), generator=gen)
        return out.add_(mean)
    out.normal_(0.0, 1.0, generator=gen)
    out.mul_(std)
    return out.add_(mean)


# ---- products ----------------------------------------------------------------------------------


def _size(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _check_add_product(name: str, inp, m1, m2):
    """The CPU's shape checks of addmm/addmv/baddbmm/addbmm, in its order; the result shape."""
    base = name.rstrip("_")
    if base == "addmm":
        for t, arg in ((m1, "mat1"), (m2, "mat2")):
            if t.dim() != 2:
                raise RuntimeError(f"{arg} must be a matrix, got {t.dim()}-D tensor")
        if m1.shape[1] != m2.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m1.shape[0]}x"
                               f"{m1.shape[1]} and {m2.shape[0]}x{m2.shape[1]})")
        return (m1.shape[0], m2.shape[1])
    if base == "addmv":
        if not (m1.dim() == 2 and m2.dim() == 1 and inp.dim() <= 1):
            raise RuntimeError(f"vector + matrix @ vector expected, got {inp.dim()}, {m1.dim()}, "
                               f"{m2.dim()}")
        n = 1 if inp.dim() == 0 else inp.shape[0]
        if m1.shape[1] != m2.shape[0] or n not in (m1.shape[0], 1):
            raise RuntimeError(f"size mismatch, got input ({n}), mat ({m1.shape[0]}x"
                               f"{m1.shape[1]}), vec ({m2.shape[0]})")
        return (m1.shape[0],)
    for t, arg in ((m1, "batch1"), (m2, "batch2")):
        if t.dim() != 3:
            raise RuntimeError(f"{arg} must be a 3D tensor")
    if base == "baddbmm":
        if m2.shape[0] != m1.shape[0] or m2.shape[1] != m1.shape[2]:
            raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{m1.shape[0]}, {m1.shape[2]}] but got: [{m2.shape[0]}, "
                               f"{m2.shape[1]}].")
        return (m1.shape[0], m1.shape[1], m2.shape[2])
    if m1.shape[0] != m2.shape[0]:
        raise RuntimeError("batch1 and batch2 must have same number of batches, got "
                           f"{m1.shape[0]} and {m2.shape[0]}")
    if m1.shape[2] != m2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({m1.shape[1]}x{m1.shape[2]} and "
                           f"{m2.shape[1]}x{m2.shape[2]})")
    return (m1.shape[1], m2.shape[2])


def _add_product(name: str, args, kwargs):
    """beta * input + alpha * (m1 @ m2) for addmm/addmv/baddbmm/addbmm (addbmm sums the batch).
    As on the CPU: input is not read when beta == 0 (its NaNs do not propagate), the product is
    not computed when alpha == 0 or it is empty, and integers wrap (computed in int64, a ring
    homomorphism of the CPU's modular arithmetic)."""
    inp, m1, m2 = args
    device = device_of(name, args)
    inplace = name.endswith("_")
    base = name.rstrip("_")
    shape = _check_add_product(name, inp, m1, m2)
    meta = _meta(base, args, kwargs)  # the dtype checks (one dtype; not bool)
    dt = m1.dtype
    if inplace and tuple(inp.shape) != shape:
        raise RuntimeError(f"Bad in-place call: input tensor size {_size(inp.shape)} and output "
                           f"tensor size {_size(shape)} should match")
    if not inplace:
        inp.expand(shape)  # the CPU's broadcast check and message
    npd = _np_dtype(dt)
    c = _opmath(npd) if npd.kind == "f" else numpy.dtype(numpy.int64)
    conv = float if npd.kind == "f" else int
    beta, alpha = conv(kwargs.get("beta", 1)), conv(kwargs.get("alpha", 1))
    mod = xp()
    with _on_current_stream(device):
        if beta == 0:
            value = mod.zeros(shape, dtype=c)
        else:
            value = _operand(inp, dt).astype(c)
            if beta != 1:
                value = value * c.type(beta)
        k = m1.shape[-1]
        empty_batch = base in ("baddbmm", "addbmm") and m1.shape[0] == 0
        if alpha != 0 and k != 0 and not empty_batch:
            a, b = view(m1).astype(c, copy=False), view(m2).astype(c, copy=False)
            prod = mod.matmul(a, b)
            if base == "addbmm":
                prod = prod.sum(axis=0)
            value = value + (prod if alpha == 1 else prod * c.type(alpha))
        if inplace:
            _copy_from("_copy_from", (inp, _result(device, shape, dt, value)), {})
            return inp
        return _result(device, shape, meta.dtype, value)


def _inner(name: str, args, kwargs):
    a, b = args
    device = device_of(name, args)
    if a.dim() and b.dim() and a.shape[-1] != b.shape[-1]:
        raise RuntimeError("inner() the last dimension must match on both input tensors but got "
                           f"shapes {_size(a.shape)} and {_size(b.shape)}")
    meta = _meta(name, args, kwargs)
    npd = _np_dtype(meta.dtype)
    c = _opmath(npd)
    with _on_current_stream(device):
        x, y = _operand(a, meta.dtype).astype(c), _operand(b, meta.dtype).astype(c)
        value = x * y if a.dim() == 0 or b.dim() == 0 else xp().inner(x, y)
        return _result(device, value.shape, meta.dtype, value)


def _vdot(name: str, args, kwargs):
    a, b = args
    device = device_of(name, args)
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    meta = _meta(name, args, kwargs)
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    c = _opmath(_np_dtype(meta.dtype))
    with _on_current_stream(device):
        value = xp().dot(view(a).astype(c), view(b).astype(c))
        return _result(device, (), meta.dtype, value)


# ---- reductions --------------------------------------------------------------------------------


def _var_mean(take_sqrt: bool):
    """var_mean / std_mean: (var or std, mean) over `dim`, divided by max(n - correction, 0) as
    on the CPU (inf or NaN past it, no warning from the array module)."""

    def run(name: str, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        meta = _meta(name, args, kwargs)
        dt = meta[0].dtype
        axis = _axes(kwargs.get("dim"), x.dim())
        keep = bool(kwargs.get("keepdim", False))
        corr = kwargs.get("correction", 1)
        corr = 1 if corr is None else corr
        mod = xp()
        with _on_current_stream(device):
            a = _operand(x, dt).astype(_opmath(_np_dtype(dt)), copy=False)
            if x.dim() == 0:
                a, axis = a.reshape(1), None
            n = a.size if axis is None else int(numpy.prod([a.shape[d] for d in axis]))
            m = mod.sum(a, axis=axis, keepdims=True) / a.dtype.type(n)  # n = 0: NaN
            d = a - m
            v = mod.sum(d * d, axis=axis, keepdims=keep) / a.dtype.type(max(n - corr, 0))
            if take_sqrt:
                v = mod.sqrt(v)
            if not keep:
                m = m.reshape(v.shape)
            shape = tuple(meta[0].shape) if x.dim() == 0 else _reduced_shape(x, axis, keep)
            return (_result(device, shape, dt, v), _result(device, shape, dt, m))

    return run


def _count_nonzero(name: str, args, kwargs):
    x = args[0]
    device = device_of(name, args)
    meta = _meta(name, args, kwargs)  # dims in range, no repeats
    axis = _axes(kwargs.get("dim"), x.dim())
    with _on_current_stream(device):
        a = view(x)
        if x.dim() == 0:
            a, axis = a.reshape(1), None
        value = (a != 0).sum(axis=axis, dtype=numpy.int64)
        shape = tuple(meta.shape) if x.dim() == 0 else _reduced_shape(x, axis, False)
        return _result(device, shape, _C.int64, value)


# ---- the table ---------------------------------------------------------------------------------

MISC_OPS = {
    "lerp": _lerp,
    "nan_to_num": _nan_to_num,
    "logit": _logit,
    "logit_": _inplace(_logit),
    "round": _round,
    "round_": _inplace(_round),
    "bernoulli": _sampled,
    "normal": _sampled,
    "inner": _inner,
    "vdot": _vdot,
    "var_mean": _var_mean(False),
    "std_mean": _var_mean(True),
    "count_nonzero": _count_nonzero,
}
for _name in ("addmm", "addmv", "baddbmm", "addbmm"):
    MISC_OPS[_name] = MISC_OPS[_name + "_"] = _add_product
