"""The core ops on CUDA tensors, one table ``OPS``: the element-wise ops of the op table
(op_table.h), copies and fills, reductions, softmax, products, where/clamp/cat and the shape ops
that move elements. Their helpers (the array module, views of tensors, argument checks, the
CPU-computed result dtypes) are ``_ops``'s; ``_dispatch`` merges this table with the other op
modules'.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy

from ember import _C
from ember.cuda import _vector_kernels
from ember.cuda._ops import (  # the helpers every op module shares
    _CPU_NAME,
    _assign,
    _bits,
    _broadcast_shapes,
    _fill_value,
    _is_bf16,
    _is_tensor,
    _meta,
    _narrow,
    _on_current_stream,
    _operand,
    _pad,
    _result,
    _shape,
    _stand_in,
    device_of,
    empty,
    view,
    xp,
)

# ---- element-wise ops: from the op table (op_table.h) ---------------------------------------


_FLOOR_DIVIDE_KERNEL: list = []


def _floor_divide(a, b):
    """floor_divide as the CPU kernel (math::floor_divide, torch's div_floor): floats through
    fmod, so an infinite dividend gives NaN where CuPy's floor(a / b) gives an infinity, and a
    zero quotient takes the sign of a / b. NumPy's floor_divide already computes so; on CuPy a
    kernel does (float16 in float32, as the CPU's opmath)."""
    mod = xp()
    if mod is numpy or a.dtype.kind != "f":
        return mod.floor_divide(a, b)
    if not _FLOOR_DIVIDE_KERNEL:
        _FLOOR_DIVIDE_KERNEL.append(mod.ElementwiseKernel("T a, T b", "T r", """
            if (b == 0) { r = a / b; } else {
              T m = fmod(a, b), div = (a - m) / b;
              if (m != 0 && ((b < 0) != (m < 0))) div -= 1;
              if (div != 0) { T fl = floor(div); r = div - fl > (T)0.5 ? fl + 1 : fl; }
              else { r = copysign((T)0, a / b); }
            }""", "ember_floor_divide"))
    if a.dtype == numpy.float16:
        wide = _FLOOR_DIVIDE_KERNEL[0](a.astype(numpy.float32), mod.asarray(b, numpy.float32))
        return wide.astype(numpy.float16)
    return _FLOOR_DIVIDE_KERNEL[0](a, b)


def _trunc_divide(a, b):
    mod = xp()
    if a.dtype.kind == "f":
        return mod.trunc(a / b)
    q = mod.floor_divide(a, b)
    return q + ((mod.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(q.dtype)


def _remainder(a, b):
    """Python's modulo (the divisor's sign), as the CPU kernel: fmod, then b added where the
    signs differ. NumPy's and CuPy's remainder give a zero the divisor's sign (4 % -2.0: -0.0)."""
    mod = xp()
    if a.dtype.kind != "f":
        return mod.remainder(a, b)
    r = mod.fmod(a, b)
    return mod.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


def _power(a, b):
    """The CPU kernel's pow: a signed integer to a negative power is 1, +-1 or 0 (NumPy refuses
    it, CuPy differs)."""
    mod = xp()
    if a.dtype.kind != "i":
        return mod.power(a, b)
    negative = b < 0
    r = mod.power(a, mod.where(negative, b.dtype.type(0), b))
    odd = (b & 1) != 0
    special = mod.where(a == 1, 1, mod.where(a == -1, mod.where(odd, -1, 1), 0)).astype(a.dtype)
    return mod.where(negative, special, r)


def _xlogy(a, b):
    mod = xp()
    return mod.where((a == 0) & ~mod.isnan(b), mod.zeros_like(a * b), a * mod.log(b))


def _special(name: str) -> Callable:
    """erf/erfc/erfinv: cupyx.scipy.special on a GPU; SciPy or math for NumPy."""

    def fn(x):
        mod = xp()
        if mod is not numpy:
            import cupyx.scipy.special as sp

            return getattr(sp, name)(x)
        try:
            import scipy.special as sp

            return getattr(sp, name)(x).astype(x.dtype)
        except ImportError:
            scalar = {"erf": math.erf, "erfc": math.erfc}.get(name) or _erfinv_scalar
            return numpy.vectorize(scalar, otypes=[x.dtype])(x)

    return fn


def _special_kernel(scipy_name: str | None, cpu_name: str) -> Callable:
    """The gamma-family, Bessel, normal and zeta functions: cupyx.scipy.special's `scipy_name`
    on a GPU; otherwise the core's CPU kernel (the same values as the CPU op), over a host copy
    for GPU arrays. scipy_name None: functions CuPy has no kernel of (the orthogonal polynomials,
    Airy Ai) or whose edge values differ from torch's (the Bessel functions J, Y, K). The compiled
    CUDA kernels (the op table's formula) are the usual path; this one serves when they are off
    or unavailable."""

    def fn(*arrays):
        mod = xp()
        if mod is not numpy and scipy_name is not None:
            import cupyx.scipy.special as sp

            return getattr(sp, scipy_name)(*arrays)
        host = [a.get() if mod is not numpy and hasattr(a, "get") else a for a in arrays]
        cpu = getattr(_C, cpu_name)(*(_C.from_numpy(numpy.ascontiguousarray(h)) for h in host))
        return mod.asarray(cpu.numpy())

    return fn


def _erfinv_scalar(y: float) -> float:
    if y <= -1 or y >= 1:
        return math.copysign(math.inf, y) if abs(y) == 1 else math.nan
    x = 0.0
    for _ in range(60):  # Newton on erf(x) - y
        x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def _sign(x, out=None):
    """torch's sign: NaN gives 0 (xp.sign gives NaN), as the CPU kernel."""
    r = xp().sign(x, out=out)
    if r.dtype.kind == "f":
        r[xp().isnan(r)] = 0
    return r


def _identity_for_integers(fn_name: str) -> Callable:
    def fn(x):
        return x.copy() if x.dtype.kind in "biu" else getattr(xp(), fn_name)(x)

    return fn


def _x(name: str, vectorised: str | None = None) -> Callable:
    """The ufunc xp.<name>, looked up when called (xp changes with the backend). It can write
    straight into the result (`out=`), saving a pass over memory. `vectorised`: the op of
    _vector_kernels that computes the same where its operands qualify (faster on a GPU)."""

    def fn(*a, out=None):
        if vectorised and out is not None and _vector_kernels.binary(vectorised, *a, out):
            return out
        return getattr(xp(), name)(*a, out=out)

    fn.writes_out = True
    return fn


ELEMENTWISE: dict[str, Callable] = {
    # unary
    "exp": _x("exp"), "exp2": _x("exp2"), "expm1": _x("expm1"), "log": _x("log"),
    "log2": _x("log2"), "log10": _x("log10"), "log1p": _x("log1p"), "sqrt": _x("sqrt"),
    "rsqrt": lambda x: 1 / xp().sqrt(x), "sin": _x("sin"), "cos": _x("cos"), "tan": _x("tan"),
    "asin": _x("arcsin"), "acos": _x("arccos"), "atan": _x("arctan"), "sinh": _x("sinh"),
    "cosh": _x("cosh"), "tanh": _x("tanh"), "asinh": _x("arcsinh"), "acosh": _x("arccosh"),
    "atanh": _x("arctanh"), "sigmoid": lambda x: 1 / (1 + xp().exp(-x)),
    "erf": _special("erf"), "erfc": _special("erfc"), "erfinv": _special("erfinv"),
    "lgamma": _special_kernel("gammaln", "lgamma"),
    "digamma": _special_kernel("digamma", "digamma"), "i0": _special_kernel("i0", "i0"),
    "igamma": _special_kernel("gammainc", "igamma"),
    "igammac": _special_kernel("gammaincc", "igammac"),
    **{"_special_" + f: _special_kernel(f, "_special_" + f)
       for f in ("i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "erfcx", "entr", "xlog1py",
                 "zeta")},
    # no CuPy kernel, or SciPy's edge values (J0(inf) and Ai(+-inf) are NaN in torch, ...)
    **{"_special_" + f: _special_kernel(None, "_special_" + f)
       for f in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                 "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                 "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                 "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                 "laguerre_polynomial_l", "legendre_polynomial_p", "bessel_j0", "bessel_j1",
                 "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
                 "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai")},
    "sinc": lambda x: xp().sinc(x), "deg2rad": _x("deg2rad"), "rad2deg": _x("rad2deg"),
    "reciprocal": lambda x: 1 / x, "frac": lambda x: x - xp().trunc(x), "neg": _x("negative"),
    "abs": _x("absolute"), "square": lambda x: x * x, "sign": _sign,
    "relu": lambda x: xp().where(x > 0, x, xp().zeros_like(x)) if x.dtype.kind != "f"
    else xp().maximum(x, x.dtype.type(0)),
    "floor": _identity_for_integers("floor"), "ceil": _identity_for_integers("ceil"),
    "trunc": _identity_for_integers("trunc"), "isnan": _x("isnan"), "isinf": _x("isinf"),
    "isfinite": _x("isfinite"), "signbit": _x("signbit"), "logical_not": _x("logical_not"),
    "bitwise_not": _x("invert"),
    # binary
    "add": _x("add", "add"), "sub": _x("subtract", "sub"), "mul": _x("multiply", "mul"),
    "div": _x("true_divide"), "floor_divide": _floor_divide, "div_trunc": _trunc_divide,
    "remainder": _remainder, "fmod": _x("fmod"), "pow": _power, "maximum": _x("maximum"),
    "minimum": _x("minimum"),
    "atan2": _x("arctan2"), "hypot": _x("hypot"), "copysign": _x("copysign"), "xlogy": _xlogy,
    "logaddexp": _x("logaddexp"), "logaddexp2": _x("logaddexp2"), "fmax": _x("fmax"),
    "fmin": _x("fmin"), "eq": _x("equal"), "ne": _x("not_equal"), "lt": _x("less"),
    "le": _x("less_equal"), "gt": _x("greater"), "ge": _x("greater_equal"),
    "logical_and": _x("logical_and"), "logical_or": _x("logical_or"),
    "logical_xor": _x("logical_xor"), "bitwise_and": _x("bitwise_and"),
    "bitwise_or": _x("bitwise_or"), "bitwise_xor": _x("bitwise_xor"),
    "bitwise_left_shift": _x("left_shift"), "bitwise_right_shift": _x("right_shift"),
}  # fmt: skip

# Kinds whose computation runs in the inputs' common dtype rather than the result's.
_COMPUTE_IN_INPUT_TYPE = {"PRED", "CMP", "LOGICAL", "INTEGRAL", "SAME"}
_KIND = {row["name"]: row["kind"] for row in _C._op_table()}
# torch.special's table ops reach the hook under their bound names (_special_<f>)
_KIND.update({"_" + n: k for n, k in _KIND.items() if n.startswith("special_")})


_AT_OWN_VALUE = {"mul", "div", "floor_divide", "div_trunc"}


def _scalar_at_own_value(name: str, args) -> bool:
    """torch's CPU kernels multiply and divide (rounded division too) float16/bfloat16 tensors by
    a number or 0-d tensor second operand at its own value in float32
    (original_scalar_value<opmath_t>)."""
    return (name.rstrip("_") in _AT_OWN_VALUE and len(args) > 1
            and (not _is_tensor(args[1]) or args[1].dim() == 0))


def _compute_dtype(name: str, args, result_dtype):
    if result_dtype == _C.float16 and _scalar_at_own_value(name, args):
        return _C.float32  # the result is rounded to float16 once
    kind = _KIND[name]
    if kind not in _COMPUTE_IN_INPUT_TYPE:
        return result_dtype
    tensors = [a for a in args if _is_tensor(a)]
    if len(args) == 1:
        return tensors[0].dtype
    return _C.result_type(*(_stand_in(a) for a in args))


def _elementwise(name: str, args, kwargs):
    device = device_of(name, args)
    meta = _meta(name, args, kwargs)
    shape = _broadcast_shapes(*(_shape(a) for a in args))
    cdt = _compute_dtype(name, args, meta.dtype)
    with _on_current_stream(device):
        ops = [_operand(a, cdt) for a in args]
        out = empty(shape, meta.dtype, device)
        if "alpha" in kwargs and kwargs["alpha"] != 1:
            if out.numel():
                _add_alpha(name, ops, kwargs["alpha"], view(out))
            return out
        if out.numel():
            fn = ELEMENTWISE[name]
            target = view(out)
            if getattr(fn, "writes_out", False) and target.dtype == ops[0].dtype:
                fn(*ops, out=target)
            else:
                target[...] = fn(*ops)
    return out


def _add_alpha(name: str, ops, alpha, out) -> None:
    """out = add/sub's `a + alpha * b` as the CPU core computes it (add_alpha): integers exactly
    (wrapping), floats fused into one rounding with alpha in the dtype, float16 in float32."""
    a, b = ops
    if a.dtype.kind not in "f":
        product = b * xp().asarray(alpha).astype(a.dtype)  # wraps, as the CPU's cast
        out[...] = a + product if name == "add" else a - product
        return
    w = float(a.dtype.type(alpha))  # rounded to the dtype
    w = w if name == "add" else -w
    if a.dtype == numpy.float16:
        out[...] = _fused_multiply_add(b.astype(numpy.float32), w, a.astype(numpy.float32))
    elif not _vector_kernels.binary("fma", a, b, out, w):
        out[...] = _fused_multiply_add(b, w, a)


_FMA_KERNEL: list = []


def _fused_multiply_add(x, w: float, z):
    """x * w + z rounded once: CUDA's fma on a GPU (torch's CUDA kernels contract so too). The host
    backend computes float32 in float64 (the product is exact; the sum rounds twice only at a
    float32 midpoint of a float64 sum, about once in 2**29) and float64 with two roundings."""
    mod = xp()
    if mod is not numpy:
        if not _FMA_KERNEL:
            _FMA_KERNEL.append(mod.ElementwiseKernel(
                "T x, T w, T z", "T r", "r = fma(x, w, z)", "ember_fused_multiply_add"))
        return _FMA_KERNEL[0](x, x.dtype.type(w), z)
    if x.dtype == numpy.float32:
        wide = z.astype(numpy.float64) + numpy.float64(w) * x.astype(numpy.float64)
        return wide.astype(numpy.float32)
    return z + x.dtype.type(w) * x


def _inplace(base: Callable) -> Callable:
    """`op_(self, ...)`: the CPU's in-place dtype check on stand-ins, then the op written back."""

    def run(name: str, args, kwargs):
        self = args[0]
        _meta(name, args, kwargs)  # "result type Float can't be cast to ..." as on the CPU
        result = base(name[:-1], args, kwargs)
        if tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                f"{list(result.shape)}"
            )
        _copy_from("_copy_from", (self, result), {})
        return self

    return run


# ---- copies and fills (core copy_/fill_ route here for CUDA tensors) -------------------------


def _copy_from(name: str, args, kwargs):
    dst, src = args
    non_blocking = bool(kwargs.get("non_blocking", False))
    if dst.numel() == 0:
        return dst
    same_layout = (
        dst.dtype == src.dtype
        and tuple(dst.shape) == tuple(src.shape)
        and dst.is_contiguous()
        and src.is_contiguous()
    )
    dd, sd = dst.device, src.device
    if dd.type == "cuda" and sd == dd:  # on one device: a strided, casting, broadcasting copy
        with _on_current_stream(dd.index):
            _assign(dst, src)
        return dst
    if same_layout:  # the fast path: one cudaMemcpyAsync
        _C._cuda_copy_contiguous(dst, src, non_blocking)
        return dst
    if sd.type == "cpu":  # host -> device: dtype, broadcast and layout fixed on the host
        staged = src.to(dtype=dst.dtype).expand(tuple(dst.shape)).contiguous()
        if dst.is_contiguous():
            _C._cuda_copy_contiguous(dst, staged, False)
        else:
            tmp = empty(tuple(dst.shape), dst.dtype, dd.index)
            _C._cuda_copy_contiguous(tmp, staged, False)
            _copy_from(name, (dst, tmp), {})
        return dst
    # device -> host, or between two devices: a contiguous copy of dst's dtype on src's device
    with _on_current_stream(sd.index):
        tmp = empty(tuple(src.shape), dst.dtype, sd.index)
        _assign(tmp, src)
    if dd.type == "cpu":
        host = _C.empty(list(src.shape), dtype=dst.dtype)
        _C._cuda_copy_contiguous(host, tmp, False)
        dst.copy_(host)
    else:
        other = empty(tuple(src.shape), dst.dtype, dd.index)
        _C._cuda_copy_contiguous(other, tmp, False)
        _copy_from(name, (dst, other), {})
    return dst


def _fill(name: str, args, kwargs):
    dst, value = args
    with _on_current_stream(dst.device.index):
        if (value == 0 and not isinstance(value, bool) and math.copysign(1, value) > 0
                and dst.is_contiguous()):
            _C._cuda_memset(dst, 0)
        else:
            cpu = _C.full([], value, dtype=dst.dtype)  # the CPU's range check of `value`
            if _is_bf16(dst):  # and its conversion: the bits of the CPU's bf16 value
                _bits(dst)[...] = int(_narrow(cpu.item(), numpy))
            else:
                target = view(dst)
                target[...] = _fill_value(value, target.dtype)
    return dst


# ---- reductions --------------------------------------------------------------------------------


def _axes(dim, ndim: int):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return None
    dims = dim if isinstance(dim, (list, tuple)) else (dim,)
    return tuple(d % ndim if ndim else 0 for d in dims)


def _reduction(fn: Callable, *, cast_input: bool = True) -> Callable:
    """A reduction over kwargs dim/keepdim: `fn(array, axis, keepdims)` computed in the result
    dtype (the input cast first when `cast_input`)."""

    def run(name: str, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        meta = _meta(name, args, kwargs)
        axis = _axes(kwargs.get("dim"), x.dim())
        keep = bool(kwargs.get("keepdim", False))
        with _on_current_stream(device):
            a = _operand(x, meta.dtype) if cast_input else view(x)
            if x.dim() == 0:
                a = a.reshape(1)
                axis = None
            value = fn(a, axis, keep, kwargs)
            return _result(device, tuple(meta.shape) if x.dim() == 0 else
                           _reduced_shape(x, axis, keep), meta.dtype, value)

    return run


def _reduced_shape(x, axis, keep: bool) -> tuple:
    shape = tuple(x.shape)
    axes = range(len(shape)) if axis is None else axis
    if keep:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _var(a, axis, keep, kwargs):
    correction = kwargs.get("correction", 1)
    return xp().var(a, axis=axis, keepdims=keep, ddof=1 if correction is None else correction)


def _max_dim(is_max: bool) -> Callable:
    """max(x, dim) / min(x, dim): (values, indices), the first index of the extreme (and of a
    NaN, which wins, as in torch)."""

    def run(name: str, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        meta = _meta(name, args, kwargs)  # a ember.return_types.max/min: the type to return
        values_meta = meta[0]
        dim = kwargs["dim"] % max(x.dim(), 1)
        keep = bool(kwargs.get("keepdim", False))
        mod = xp()
        with _on_current_stream(device):
            a = view(x).reshape(1) if x.dim() == 0 else view(x)
            idx = _arg_extreme(a, dim, is_max)
            vals = mod.take_along_axis(a, mod.expand_dims(idx, dim), axis=dim)
            shape = _reduced_shape(x, (dim,), keep) if x.dim() else ()
            values = _result(device, shape, values_meta.dtype,
                             vals if keep else vals.reshape(shape))
            indices = _result(device, shape, _C.int64,
                              mod.expand_dims(idx, dim) if keep else idx.reshape(shape))
        return type(meta)(values, indices)

    return run


def _arg_extreme(a, axis, is_max: bool):
    mod = xp()
    if a.dtype.kind == "f":
        nan = mod.isnan(a)
        has_nan = nan.any(axis=axis)
        base = mod.argmax(a, axis=axis) if is_max else mod.argmin(a, axis=axis)
        return mod.where(has_nan, mod.argmax(nan, axis=axis), base).astype(numpy.int64)
    fn = mod.argmax if is_max else mod.argmin
    return fn(a, axis=axis).astype(numpy.int64)


def _argmax(is_max: bool) -> Callable:
    def run(name: str, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        _meta(name, args, kwargs)  # the CPU's checks (dim in range)
        dim, keep = kwargs.get("dim"), bool(kwargs.get("keepdim", False))
        with _on_current_stream(device):
            a = view(x)
            if dim is None:
                idx = _arg_extreme(a.reshape(-1), 0, is_max)
                shape = (1,) * x.dim() if keep else ()
            else:
                a = a.reshape(1) if x.dim() == 0 else a
                d = dim % max(x.dim(), 1)
                idx = _arg_extreme(a, d, is_max)
                shape = _reduced_shape(x, (d,), keep) if x.dim() else ()
            return _result(device, shape, _C.int64, idx.reshape(shape))

    return run


def _max_all(is_max: bool) -> Callable:
    def run(name: str, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        if x.numel() == 0:
            _meta(name, args, kwargs)
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        mod = xp()
        with _on_current_stream(device):
            a = view(x)
            v = (mod.max if is_max else mod.min)(a)
            return _result(device, (), x.dtype, v)

    return run


def _logsumexp(a, axis, keep, kwargs):
    mod = xp()
    m = mod.max(a, axis=axis, keepdims=True)
    m = mod.where(mod.isfinite(m), m, mod.zeros_like(m))
    r = mod.log(mod.sum(mod.exp(a - m), axis=axis, keepdims=True)) + m
    return r if keep else mod.squeeze(r, axis=axis)


def _norm(a, axis, keep, kwargs):
    mod = xp()
    p = kwargs.get("p", 2)
    p = 2 if p is None else p
    if p == math.inf:
        return mod.max(mod.abs(a), axis=axis, keepdims=keep)
    if p == -math.inf:
        return mod.min(mod.abs(a), axis=axis, keepdims=keep)
    if p == 0:
        return mod.sum(a != 0, axis=axis, keepdims=keep).astype(a.dtype)
    return mod.sum(mod.abs(a) ** p, axis=axis, keepdims=keep) ** (1.0 / p)


# ---- softmax and the loss kernels -------------------------------------------------------------


def _softmax(is_log: bool) -> Callable:
    def run(name: str, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        meta = _meta(name, args, kwargs)
        mod = xp()
        with _on_current_stream(device):
            a = _operand(x, meta.dtype)
            axis = kwargs["dim"] % max(x.dim(), 1) if x.dim() else None
            if x.dim() == 0:
                a = a.reshape(1)
                axis = 0
            shifted = a - mod.max(a, axis=axis, keepdims=True)
            e = mod.exp(shifted)
            s = mod.sum(e, axis=axis, keepdims=True)
            value = shifted - mod.log(s) if is_log else e / s
            return _result(device, tuple(x.shape), meta.dtype, value.reshape(tuple(x.shape)))

    return run


def _softmax_backward(is_log: bool) -> Callable:
    def run(name: str, args, kwargs):
        grad, output = args[0], args[1]
        device = device_of(name, args)
        meta = _meta(name, args, kwargs)
        mod = xp()
        dim = kwargs.get("dim", args[2] if len(args) > 2 else None)
        with _on_current_stream(device):
            g, y = _operand(grad, meta.dtype), _operand(output, meta.dtype)
            axis = dim % max(grad.dim(), 1)
            if is_log:
                value = g - mod.exp(y) * mod.sum(g, axis=axis, keepdims=True)
            else:
                value = y * (g - mod.sum(g * y, axis=axis, keepdims=True))
            return _result(device, tuple(grad.shape), meta.dtype, value)

    return run


# ---- products ----------------------------------------------------------------------------------


def _product(fn: Callable) -> Callable:
    def run(name: str, args, kwargs):
        device = device_of(name, args)
        meta = _meta(name, args, kwargs)  # the CPU's rank checks and dtype
        with _on_current_stream(device):
            try:
                value = fn(*(_operand(a, meta.dtype) for a in args))
            except ValueError:  # sizes that do not fit: the CPU op says so in its own words
                _raise_cpu_shape_error(name, args, kwargs)
                raise
            return _result(device, value.shape, meta.dtype, value)

    return run


def _raise_cpu_shape_error(name: str, args, kwargs) -> None:
    """Runs the CPU op on stand-ins of the arguments' shapes (one element each, expanded: no
    memory) for its shape error; returns if it finds none."""
    def shaped(a):
        return _stand_in(a).expand(list(a.shape)) if _is_tensor(a) else a

    getattr(_C, _CPU_NAME.get(name, name))(*(shaped(a) for a in args), **kwargs)


# ---- joining and selecting ---------------------------------------------------------------------


def _cat(name: str, args, kwargs):
    tensors = list(args[0])
    device = device_of(name, args)
    meta = _meta(name, args, kwargs)
    mod = xp()
    with _on_current_stream(device):
        parts = [_operand(t, meta.dtype) for t in tensors if not (t.dim() == 1 and t.numel() == 0)]
        dim = kwargs.get("dim", 0)
        if not parts:
            return empty(tuple(meta.shape), meta.dtype, device)
        axis = dim % parts[0].ndim
        value = mod.concatenate(parts, axis=axis)
        return _result(device, value.shape, meta.dtype, value)


def _where(name: str, args, kwargs):
    cond, a, b = args
    device = device_of(name, args)
    meta = _meta(name, args, kwargs)
    mod = xp()
    shape = _broadcast_shapes(*(_shape(x) for x in args))
    with _on_current_stream(device):
        c = _operand(cond, _C.bool)
        value = mod.where(c, _operand(a, meta.dtype), _operand(b, meta.dtype))
        return _result(device, shape, meta.dtype, value)


def _clamp(name: str, args, kwargs):
    x, lo, hi = args
    device = device_of(name, args)
    meta = _meta(name, args, kwargs)
    mod = xp()
    shape = _broadcast_shapes(*(_shape(v) for v in args if v is not None))
    with _on_current_stream(device):
        v = _operand(x, meta.dtype)
        if lo is not None:
            v = mod.maximum(v, _operand(lo, meta.dtype))
        if hi is not None:
            v = mod.minimum(v, _operand(hi, meta.dtype))
        return _result(device, shape, meta.dtype, v)


# ---- shape ops that move elements ---------------------------------------------------------------


def _same_shape(fn: Callable) -> Callable:
    """An op whose result has its input's shape and dtype: `fn(array, kwargs)`; the CPU op on a
    stand-in checks the arguments (dims in range, rank)."""

    def run(name: str, args, kwargs):
        x = args[0]
        device = device_of(name, args)
        _meta(name, args, kwargs)
        with _on_current_stream(device):
            return _result(device, tuple(x.shape), x.dtype, fn(view(x), kwargs))

    return run


def _constant_pad_nd(name: str, args, kwargs):
    x = args[0]
    device = device_of(name, args)
    pad, value = list(kwargs["pad"]), kwargs.get("value", 0)
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) // 2 > x.dim():
        raise RuntimeError("Length of pad should be no more than twice the number of dimensions "
                           f"of the input. Pad length is {len(pad)} while the input has "
                           f"{x.dim()} dimensions.")
    k = len(pad) // 2
    lo = [pad[2 * (k - 1 - i)] for i in range(k)]  # pad lists the last dim first
    hi = [pad[2 * (k - 1 - i) + 1] for i in range(k)]
    shape = list(x.shape)
    for i in range(k):  # the CPU kernel's checks, in its order
        d = x.dim() - k + i
        cur = shape[d]
        for p in (lo[i], hi[i]):
            if p < 0:
                if cur + p < 0:
                    raise RuntimeError("narrow(): length must be non-negative.")
                cur += p
        new = shape[d] + lo[i] + hi[i]
        if new < 0:
            raise RuntimeError(f"The input size {shape[d]}, plus negative padding {lo[i]} and "
                               f"{hi[i]} resulted in a negative output size, which is invalid. "
                               "Check dimension " f"{d} of your input.")
        shape[d] = new
    with _on_current_stream(device):
        return _result(device, tuple(shape), x.dtype, _pad(view(x), lo, hi, value))


# ---- the table -----------------------------------------------------------------------------------

OPS: dict[str, Callable] = {
    "_copy_from": _copy_from,
    "fill_": _fill,
    "where": _where,
    "clamp": _clamp,
    "cat": _cat,
    "sum": _reduction(lambda a, ax, k, kw: xp().sum(a, axis=ax, keepdims=k)),
    "mean": _reduction(lambda a, ax, k, kw: xp().mean(a, axis=ax, keepdims=k)),
    "nansum": _reduction(lambda a, ax, k, kw: xp().nansum(a, axis=ax, keepdims=k)),
    "nanmean": _reduction(lambda a, ax, k, kw: xp().nanmean(a, axis=ax, keepdims=k)),
    "prod": _reduction(lambda a, ax, k, kw: xp().prod(a, axis=ax, keepdims=k)),
    "amax": _reduction(lambda a, ax, k, kw: xp().max(a, axis=ax, keepdims=k)),
    "amin": _reduction(lambda a, ax, k, kw: xp().min(a, axis=ax, keepdims=k)),
    "all": _reduction(lambda a, ax, k, kw: xp().all(a, axis=ax, keepdims=k), cast_input=False),
    "any": _reduction(lambda a, ax, k, kw: xp().any(a, axis=ax, keepdims=k), cast_input=False),
    "var": _reduction(_var),
    "std": _reduction(lambda a, ax, k, kw: xp().sqrt(_var(a, ax, k, kw))),
    "logsumexp": _reduction(_logsumexp),
    "norm": _reduction(_norm),
    "max": lambda name, args, kw: (_max_dim if "dim" in kw else _max_all)(True)(name, args, kw),
    "min": lambda name, args, kw: (_max_dim if "dim" in kw else _max_all)(False)(name, args, kw),
    "argmax": _argmax(True),
    "argmin": _argmax(False),
    "softmax": _softmax(False),
    "log_softmax": _softmax(True),
    "_softmax_backward_data": _softmax_backward(False),
    "_log_softmax_backward_data": _softmax_backward(True),
    "mm": _product(lambda a, b: xp().matmul(a, b)),
    "bmm": _product(lambda a, b: xp().matmul(a, b)),
    "matmul": _product(lambda a, b: xp().matmul(a, b)),
    "mv": _product(lambda a, b: xp().matmul(a, b)),
    "dot": _product(lambda a, b: xp().dot(a, b)),
    "outer": _product(lambda a, b: xp().outer(a, b)),
    "ger": _product(lambda a, b: xp().outer(a, b)),
    "tril": _same_shape(lambda a, kw: xp().tril(a, kw.get("diagonal", 0))),
    "triu": _same_shape(lambda a, kw: xp().triu(a, kw.get("diagonal", 0))),
    "flip": _same_shape(lambda a, kw: xp().flip(a, axis=tuple(kw["dims"])) if a.ndim else a),
    "constant_pad_nd": _constant_pad_nd,
}  # fmt: skip
for _name in ELEMENTWISE:
    OPS[_name] = _elementwise
    OPS[_name + "_"] = _inplace(_elementwise)
OPS["clamp_"] = _inplace(_clamp)
# copy_ into a tensor that requires grad, outside autograd (load_state_dict, the initialisers):
# the core's copy handles every device pair and dtype itself
OPS["_copy_"] = lambda name, args, kwargs: _C._copy_(*args, **kwargs)

