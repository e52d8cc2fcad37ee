"""Pointwise compositions: addcmul/addcdiv, addr, clamp_min/max, float_power, ldexp,
heaviside, nextafter, gcd/lcm, frexp, the special functions polygamma and mvlgamma."""

from __future__ import annotations

import builtins
import collections
import math
import numbers
import operator

from ember import _C, _grad_mode, _shape
from ember._checks import scalar_fits
from ember._composite_ops._common import (
    _SHELL_UNSIGNED,
    _binary_iter_checks,
    _dtype_name,
    _finish,
    _finish_cast,
    _is_tensor,
    _refuse_complex,
)


def _check_addcdiv_integral(t1, t2):
    if not (t1.dtype.is_floating_point or t1.dtype.is_complex or t2.dtype.is_floating_point
            or t2.dtype.is_complex):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to("
            "input.dtype) using PyTorch 1.5 or later, or as (input + value * tensor1 // tensor2) "
            "using earlier versions.")


def _pointwise_value(common, value):
    """addcmul/addcdiv's value, converted to the operands' common dtype (its opmath type) and
    checked, as torch's kernels do: a float value of an integer computation is truncated.
    Returns it and whether it can be add's alpha: a bool (add takes one only for bool results)
    and a float16 computation's value beyond float16's range (torch computes in float32) are
    applied as a product instead."""
    if common is None:  # (the bindings raise their TypeError)
        return value, True
    scalar_fits(value, common, opmath=True)
    if isinstance(value, bool):
        return value, False
    if isinstance(value, float) and not (common.is_floating_point or common.is_complex):
        return int(value), True
    beyond_half = (isinstance(value, (int, float)) and math.isfinite(value)
                   and abs(value) > 65504)
    return value, not (common == _C.float16 and beyond_half)


def _in_common_dtype(input, tensor1, tensor2):
    """tensor1 and tensor2 converted to the three operands' common dtype first, as torch's
    TensorIterator does (an int64 factor of a float16 input is rounded to float16 before the
    product, not multiplied, and wrapped, in int64; a bool and a 0-d int8 factor of a uint8
    input multiply in uint8), and that dtype (None: not three tensors)."""
    if not (_is_tensor(input) and _is_tensor(tensor1) and _is_tensor(tensor2)):
        return tensor1, tensor2, None  # (the bindings raise their TypeError)
    common = _C._result_type(input, tensor1, tensor2)
    if common == _C.bool:
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    return (tensor1 if tensor1.dtype == common else tensor1.to(common),
            tensor2 if tensor2.dtype == common else tensor2.to(common), common)


def _pointwise(input, tensor1, tensor2, value, combine, out=None, in_place=False, name=""):
    """input + value * combine(tensor1, tensor2): addcmul, addcdiv and their in-place forms."""
    tensor1, tensor2, common = _in_common_dtype(input, tensor1, tensor2)
    if common is not None and isinstance(value, complex) and not common.is_complex:
        scalar_fits(value, common, opmath=True)  # (a nonzero imaginary part: torch's error)
        value = value.real
    if common in (_C.float16, _C.bfloat16) and (not in_place or input.dtype == common):
        # torch computes half and bfloat16 in float32, as input + (value * t1) op t2, and
        # rounds once: rounding the quotient or product to bfloat16 first moved results by one
        # bfloat16 step
        scalar_fits(value, common, opmath=True)
        widened = _C.add(input.to(common).float(),
                         combine(_C.mul(tensor1.float(), value), tensor2.float())).to(common)
        return input.copy_(widened) if in_place else _finish_cast(widened, out, name)
    value, as_alpha = _pointwise_value(common, value)
    if common is not None and not in_place and input.dtype != common:
        # input in the common dtype first, as torch's TensorIterator reads it (a uint16 input
        # of a complex result is never promoted with complex, which torch refuses)
        input = input.to(common)
    if common is not None and common.is_complex:
        # torch's complex kernel computes (value * tensor1) / tensor2: a finite quotient's
        # infinity stays infinite, where value * (tensor1 / tensor2) as a product gives NaN
        part = combine(_C.mul(tensor1, value), tensor2)
        return input.add_(part) if in_place else _C.add(input, part, out=out)
    part = combine(tensor1, tensor2)
    if not as_alpha:
        part = _C.mul(part, value)
    kwargs = {"alpha": value} if as_alpha else {}
    if in_place:
        return input.add_(part, **kwargs)
    return _C.add(input, part, out=out, **kwargs)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    return _pointwise(input, tensor1, tensor2, value, _C.mul, out, name="addcmul")


def addcmul_(self, tensor1, tensor2, *, value=1):
    return _pointwise(self, tensor1, tensor2, value, _C.mul, in_place=True)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    _check_addcdiv_integral(tensor1, tensor2)
    return _pointwise(input, tensor1, tensor2, value, _C.div, out, name="addcdiv")


def addcdiv_(self, tensor1, tensor2, *, value=1):
    _check_addcdiv_integral(tensor1, tensor2)
    return _pointwise(self, tensor1, tensor2, value, _C.div, in_place=True)


def _addr(name, input, vec1, vec2, beta, alpha):
    for arg, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"{name}: Expected 1-D argument {arg}, but got {v.dim()}-D")
    # (torch's kernel multiplies in the result's dtype: a complex input makes the products
    # complex, so inf * (x + 0j) has torch's NaN imaginary part)
    dt = _C.promote_types(_C.promote_types(vec1.dtype, vec2.dtype), input.dtype)
    for what, v in (("beta", beta), ("alpha", alpha)):  # (torch's check_addr_scalar)
        if isinstance(v, bool) and dt != _C.bool:
            raise RuntimeError(f"Boolean {what} only supported for Boolean results.")
        if not (dt.is_floating_point or dt.is_complex or isinstance(v, numbers.Integral)):
            raise RuntimeError(f"For integral input tensors, argument {what} must not be a "
                               "floating point number.")
    for v in (beta, alpha):
        scalar_fits(v, dt)
    if dt == _C.bool:  # beta && self || alpha && vec1 && vec2, as torch's bool kernel
        product = _C.outer(vec1, vec2) & bool(alpha)
        return product | input.expand(product.shape) if beta else product
    if dt.is_complex:  # torch's alpha * vec1 * vec2 and beta * self: complex products even by
        # 1, which give an infinite value a NaN imaginary part
        product = _C.outer(vec1.to(dt) * alpha, vec2.to(dt))
    else:
        product = _C.outer(vec1.to(dt), vec2.to(dt))
        if alpha != 1:
            product = product * alpha
    base = input.expand(product.shape)  # input broadcasts to the outer product, not beyond
    if beta == 0:  # torch ignores input (its NaN and inf too); the product as it is (a -0 too)
        return product
    if dt.is_complex:
        return product + base.to(dt) * beta
    return _C.add(product, base, alpha=beta) if beta != 1 else product + base


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    return _finish_cast(_addr("addr", input, vec1, vec2, beta, alpha), out, "addr")


def addr_(self, vec1, vec2, *, beta=1, alpha=1):
    return self.copy_(_addr("addr_", self, vec1, vec2, beta, alpha))


def clamp_min(input, min, *, out=None):  # noqa: A002 - torch's name
    return _C.clamp(input, min=min, out=out)


def clamp_max(input, max, *, out=None):  # noqa: A002
    return _C.clamp(input, max=max, out=out)


def clamp_min_(self, min):  # noqa: A002
    return self.clamp_(min=min)


def clamp_max_(self, max):  # noqa: A002
    return self.clamp_(max=max)


def _double_or_cdouble(x):
    """float_power's operand: float64, or complex128 where it is complex (torch's rule)."""
    if _is_tensor(x):
        return x.to(_C.complex128 if x.dtype.is_complex else _C.float64)
    return builtins.complex(x) if isinstance(x, builtins.complex) else float(x)


def float_power(input, exponent, *, out=None):
    if out is not None:  # exactly float64 or complex128, as torch's
        cplx = any(_is_tensor(v) and v.dtype.is_complex or isinstance(v, builtins.complex)
                   for v in (input, exponent))
        want = _C.complex128 if cplx else _C.float64
        if out.dtype != want:
            raise RuntimeError(f"the output given to float_power has dtype "
                               f"{_dtype_name(out.dtype)} but the operation's result requires "
                               f"dtype {_dtype_name(want)}")
    return _C.pow(_double_or_cdouble(input), _double_or_cdouble(exponent), out=out)


def float_power_(self, exponent):
    if self.dtype.is_complex or _is_tensor(exponent) and exponent.dtype.is_complex:
        if self.dtype != _C.complex128:
            raise RuntimeError(f"the base given to float_power_ has dtype "
                               f"{_dtype_name(self.dtype)} but the operation's result requires "
                               f"dtype ComplexDouble")
        return self.pow_(_double_or_cdouble(exponent))
    if self.dtype != _C.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_dtype_name(self.dtype)} "
                           "but the operation's result requires dtype Double")
    return self.pow_(exponent.to(_C.float64) if _is_tensor(exponent) else float(exponent))


def _check_ldexp_exponent(input, other):
    if (other.dtype == _C.bool or other.dtype in _SHELL_UNSIGNED) and input.dtype.is_floating_point:
        # torch's float kernel has no exponent of these types
        raise NotImplementedError(f"\"ldexp_cpu_exp\" not implemented for "
                                  f"'{_dtype_name(other.dtype)}'")


def _ldexp_dtype(input, other):
    """torch's ldexp's result dtype: a floating or complex input keeps its dtype against an
    integer exponent (an unsigned one too: bfloat16 * 2**int16 is bfloat16) and promotes with a
    floating one; any other input takes a floating exponent's dtype, else the default float."""
    if not _is_tensor(other):
        return _C.result_type(input, other)
    exponent_float = other.dtype.is_floating_point or other.dtype.is_complex
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        return other.dtype if exponent_float else _C.get_default_dtype()
    return _C.result_type(input, other) if exponent_float else input.dtype


def ldexp(input, other, *, out=None):
    """input * 2**other, in _ldexp_dtype's dtype; powers of two make the product exact."""
    result = _ldexp_dtype(input, other)
    if out is not None:  # torch's order: the out= cast first, then the exponent's dtype
        if not _C.can_cast(result, out.dtype):
            raise RuntimeError(f"ldexp can't be cast to the desired output type "
                               f"{out.dtype._torch_name}")
    _check_ldexp_exponent(input, other)
    r = _C.mul(input, _ldexp_factor(input, other))
    if r.dtype != result:
        r = r.to(result)
    if out is not None:  # (torch's mul_out: an overlapping out refused)
        _C._check_inplace_writable(out, "ldexp")
    return _finish(r, out)


def ldexp_(self, other):
    result = _ldexp_dtype(self, other)  # torch's order: the cast into self, then the exponent
    if not _C.can_cast(result, self.dtype):
        raise RuntimeError(f"ldexp can't be cast to the desired output type "
                           f"{self.dtype._torch_name}")
    _check_ldexp_exponent(self, other)
    return self.mul_(_ldexp_factor(self, other))


def _ldexp_factor(input, other):
    """2**other as torch's ldexp computes it: in a floating exponent's own dtype (a bfloat16
    exponent's powers are rounded to bfloat16), exactly (in double) for an integer one; for a
    complex input in the complex dtype of a floating exponent (torch has no complex half: a
    float16 exponent is refused unless it is 0-d; bfloat16 counts as float32) or the input's
    for an integer one, or for a 0-d exponent."""
    if not _is_tensor(other):
        return _C.pow(2.0, other)
    exponent = other.dtype
    if input.dtype.is_complex:
        if other.dim() == 0 and (exponent.is_floating_point or exponent.is_complex):
            # a 0-d exponent takes the input's dtype in torch's promotion, its power too
            return _C.pow(2.0, other.to(_C.result_type(input, other)))
        if exponent == _C.float16:
            raise NotImplementedError("\"pow\" not implemented for 'ComplexHalf'")
        if exponent.is_complex:
            return _C.pow(2.0, other)
        if not exponent.is_floating_point:
            return _C.pow(2.0, other.to(input.dtype))
        return _C.pow(2.0, other.to(_C.complex128 if exponent == _C.float64 else _C.complex64))
    if exponent.is_floating_point or exponent.is_complex:
        return _C.pow(2.0, other)
    return _C.pow(2.0, other.to(_C.float64))


def heaviside(input, values, *, out=None):
    if input.dtype != values.dtype or (out is not None and out.dtype != input.dtype):
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    if out is not None:  # (torch's TensorIterator: before the out's resize)
        _C._check_inplace_writable(out, "heaviside")
    r = _C.where(input == 0, values, (input > 0).to(input.dtype))
    return _finish(r.to(input.dtype), out)


def heaviside_(self, values):
    return self.copy_(heaviside(self, values))


# The float types' bits as the integer type of their width: nextafter steps those bits.
_BITS_OF = {_C.float16: _C.int16, _C.bfloat16: _C.int16, _C.float32: _C.int32,
            _C.float64: _C.int64}


def nextafter(input, other, *, out=None):
    """The next representable value after ``input`` towards ``other`` in their common float dtype
    (its own ulp: a float16 steps by float16's): one step of the bits, which for a sign and
    magnitude encoding moves away from zero by +1 whatever the sign. Zero steps to the smallest
    subnormal with ``other``'s sign; equal inputs give ``other``; a NaN gives NaN. No gradient,
    as torch's."""
    dtype = _binary_iter_checks("nextafter", input, other, out)
    if dtype not in _BITS_OF:
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{dtype._torch_name}'")
    with _grad_mode.no_grad():
        a, b = _shape.broadcast_tensors(input.to(dtype), other.to(dtype))
        bits = a.contiguous().view(_BITS_OF[dtype])
        away = (b > a) == (a > 0)  # the step grows the magnitude
        stepped = _C.where(away, bits + 1, bits - 1).view(dtype)
        tiny = _C.ones((), dtype=_BITS_OF[dtype], device=a.device).view(dtype)
        r = _C.where(a == 0, _C.copysign(tiny, b), stepped)
        r = _C.where(a == b, b, r)
        r = _C.where(_C.isnan(a) | _C.isnan(b), a + b, r)
    return _finish(r, out)


def nextafter_(self, other):
    _binary_iter_checks("nextafter", self, other, inplace=True)
    return self.copy_(nextafter(self, other))


def isneginf(input, *, out=None):
    _refuse_complex("isneginf", input)
    if out is not None and out.dtype != _C.bool:
        raise RuntimeError("isneginf does not support non-boolean outputs.")
    r = input == -math.inf if input.dtype.is_floating_point else _C.zeros_like(input, dtype=_C.bool)
    return _finish(r, out)


def isposinf(input, *, out=None):
    _refuse_complex("isposinf", input)
    if out is not None and out.dtype != _C.bool:
        raise RuntimeError("isposinf does not support non-boolean outputs.")
    r = input == math.inf if input.dtype.is_floating_point else _C.zeros_like(input, dtype=_C.bool)
    return _finish(r, out)


def positive(input):
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def adjoint(input):
    if input.dim() < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.dim()}-D tensor.")
    return input.transpose(-2, -1).conj()


def polygamma(n, input, *, out=None):
    n = operator.index(n)  # (a 0-d integer tensor is an int, as torch's)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return _C.digamma(input, out=out)
    # psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x); n! overflows a double beyond 170 (and computing
    # it exactly for a huge n would take forever)
    scale = float(math.factorial(n)) if n <= 170 else math.inf
    sign = 1.0 if n % 2 else -1.0
    r = _C._special_zeta(float(n + 1), input) * (sign * scale)
    return _finish_cast(r, out, "polygamma")


def polygamma_method(self, n):
    return polygamma(n, self)


def _write_inplace(self, result, prefix=""):
    """self.copy_(result) for an in-place composition, refusing a result self's dtype cannot
    hold (float into an integer tensor, ...) as torch's in-place ops do."""
    if not _C.can_cast(result.dtype, self.dtype):
        raise RuntimeError(f"{prefix}result type {_dtype_name(result.dtype)} can't be cast to the "
                           f"desired output type {_dtype_name(self.dtype)}")
    return self.copy_(result)


def polygamma_(self, n):
    return _write_inplace(self, polygamma(n, self))


def mvlgamma(input, p, *, out=None):
    if input.dtype == _C.bool:  # (torch's order of the three checks)
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    _refuse_complex("mvlgamma", input, NotImplementedError, '"mvlgamma" not implemented for '
                    f"'{_dtype_name(input.dtype)}'")
    # torch no longer checks the domain (x > (p-1)/2): lgamma's poles give inf there
    x = input if input.dtype.is_floating_point else input.to(_C.get_default_dtype())
    if out is not None and not _C.can_cast(x.dtype, out.dtype):
        # torch's message, which names the input's dtype and the result's
        raise RuntimeError(f"mvlgamma: result type {_dtype_name(input.dtype)} can't be cast to "
                           f"the desired output type {_dtype_name(x.dtype)}")
    if x.numel() == 0:  # no terms to sum, but torch still makes p's shifts: a p whose shifts
        _C.empty((p,), dtype=x.dtype, device=x.device)  # cannot be stored fails, untouched here
        return _finish(_C.empty(x.shape, dtype=x.dtype, device=x.device), out)
    # the (..., p) terms need this much memory: a p too large fails here at once, before the
    # p shifts are made (an untouched block costs nothing)
    _C.empty((*x.shape, p), dtype=x.dtype, device=x.device)
    shifts = _C.arange(p, dtype=x.dtype, device=x.device) * -0.5
    r = _C.lgamma(x.unsqueeze(-1) + shifts).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
    return _finish(r, out)


def mvlgamma_(self, p):
    if not self.dtype.is_floating_point and self.dtype != _C.bool:
        # torch's message, which names the input's dtype as the result's
        raise RuntimeError(f"mvlgamma: result type {_dtype_name(self.dtype)} can't be cast to the "
                           f"desired output type {_dtype_name(_C.get_default_dtype())}")
    return _write_inplace(self, mvlgamma(self, p))


def _check_integral(name, input, other, inplace=False, out=None):  # noqa: A002
    """torch's order (_binary_iter_checks), then an integer kernel for the common dtype."""
    dt = _binary_iter_checks(name, input, other, out, inplace)
    if dt.is_floating_point or dt.is_complex or dt == _C.bool or \
            dt in _SHELL_UNSIGNED:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype_name(dt)}'")
    return dt


def gcd(input, other, *, out=None):
    dt = _check_integral("gcd", input, other, out=out)
    a, b = _shape.broadcast_tensors(input.to(dt).abs(), other.to(dt).abs())
    while bool((b != 0).any()):  # Euclid's steps, elementwise: at most ~90 for int64
        nonzero = b != 0
        r = _C.where(nonzero, a.remainder(_C.where(nonzero, b, 1)), 0)
        a, b = _C.where(nonzero, b, a), r
    return _finish(a, out)


def gcd_(self, other):
    _check_integral("gcd", self, other, inplace=True)
    return self.copy_(gcd(self, other))


def lcm(input, other, *, out=None):
    dt = _check_integral("lcm", input, other, out=out)
    input, other = input.to(dt), other.to(dt)
    g = gcd(input, other)
    r = _C.where(g == 0, 0, (input.div(_C.where(g == 0, 1, g), rounding_mode="trunc") * other)
                 ).abs()
    return _finish(r, out)


def lcm_(self, other):
    _check_integral("lcm", self, other, inplace=True)
    return self.copy_(lcm(self, other))


_frexp_result = collections.namedtuple("frexp", ["mantissa", "exponent"])


def frexp(input, *, out=None):
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.detach()
    finite_nonzero = x.isfinite() & (x != 0)
    safe = _C.where(finite_nonzero, x, 1.0).abs().to(_C.float64)
    e = safe.log2().floor() + 1
    m = safe / _C.pow(2.0, e)
    e = _C.where(m >= 1, e + 1, _C.where(m < 0.5, e - 1, e))  # log2's rounding near powers of 2
    exponent = _C.where(finite_nonzero, e, 0).to(_C.int32)
    # the division in float64: 2**exponent itself overflows a float16 (65504 = 0.9995 * 2**16)
    mantissa = _C.where(finite_nonzero, (input.to(_C.float64) / _C.pow(2.0, exponent.to(
        _C.float64))).to(input.dtype), input)
    if out is not None:  # (the dtypes exactly, as torch's)
        if out[0].dtype != input.dtype:
            raise RuntimeError(f"torch.frexp() expects mantissa to have dtype "
                               f"{input.dtype._cpp_name} but got {out[0].dtype._cpp_name}")
        if out[1].dtype != _C.int32:
            raise RuntimeError(f"torch.frexp() expects exponent to have int dtype but got "
                               f"{out[1].dtype._cpp_name}")
        return _frexp_result(_finish(mantissa, out[0]), _finish(exponent, out[1]))
    return _frexp_result(mantissa, exponent)
