"""The ops that are compositions of the core's: their rows are in the op registry
(csrc/python/bind_aliases.cpp, kComposites), which parses and checks the arguments with torch's
TypeErrors and passes them here, the parameters before ``*`` by position and the keyword-only
ones by name. Each is written with ember's public ops, so autograd records its parts (no
gradient formula of its own) and CUDA tensors run on the parts' device implementations.

The functions torch itself writes in Python over varargs (``cartesian_prod(*tensors)``,
``block_diag(*tensors)``, ...) are plain functions at the end, exported from ``ember``.
Names, results, dtypes and error classes follow PyTorch.
"""

from __future__ import annotations

import builtins
import collections
import itertools
import math
import operator
import warnings

from ember import _C, _grad_mode, _shape
from ember._checks import _is_int_arg, scalar_fits
from ember._sampling import binomial  # noqa: F401  (a registry row: kComposites)

_SHELL_UNSIGNED = (_C.uint16, _C.uint32, _C.uint64)  # torch's types without arithmetic

_Tensor = _C.Tensor
_abs = builtins.abs
_min = builtins.min
_max = builtins.max


def _is_tensor(x) -> bool:
    return isinstance(x, _Tensor)


def _finish(result, out):
    """out=: the result written into `out` (resized as torch's out= does), else returned."""
    if out is None:
        return result
    if out.requires_grad and _C.is_grad_enabled():
        raise RuntimeError("functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(result.shape)
    out.copy_(result)
    return out


def _finish_cast(result, out, name, check_overlap=True):
    """out= of an op whose result is cast into out's dtype where torch's can_cast allows (its
    'can't be cast' error otherwise), out's overlap checked before a resize, as torch's (whose
    threshold kernel alone does not check it)."""
    if out is not None:
        if not _C.can_cast(result.dtype, out.dtype):
            raise RuntimeError(f"result type {result.dtype._torch_name} can't be cast to the "
                               f"desired output type {out.dtype._torch_name}")
        if check_overlap:
            _C._check_inplace_writable(out, name)
    return _finish(result, out)


def _finish_same_dtype(result, out, name):
    """out= of an op whose kernel writes its own dtype only (torch's 'Found dtype')."""
    if out is not None:
        if out.dtype != result.dtype:
            raise RuntimeError(f"Found dtype {out.dtype._torch_name} but expected "
                               f"{result.dtype._torch_name}")
        _C._check_inplace_writable(out, name)  # (torch's check comes before a resize)
    return _finish(result, out)


def _finish_exact(result, out):
    """out= of a linalg norm: exactly the result's dtype."""
    if out is not None and out.dtype != result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype._cpp_name}, but got "
                           f"{out.dtype._cpp_name} instead")
    return _finish(result, out)


def _dim_list(dim) -> list:
    """An int[] argument as ints: an int, a one-element integer tensor, or a sequence of them."""
    if isinstance(dim, int) or (_is_tensor(dim) and dim.numel() == 1):
        return [operator.index(dim)]
    return [operator.index(d) for d in dim]


def _wrap_dim(dim: int, ndim: int) -> int:
    if not isinstance(dim, int):  # (a 0-d integer tensor or NumPy integer, as torch's int)
        dim = operator.index(dim)
    n = _max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


# ---- the new_* family: factories with self's dtype and device as defaults ----

def _like(self, dtype, device):
    return (self.dtype if dtype is None else dtype), (self.device if device is None else device)


def new_empty(self, size, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.empty(size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                    requires_grad=requires_grad)


def new_zeros(self, size, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.zeros(size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                    requires_grad=requires_grad)


def new_ones(self, size, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.ones(size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                   requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.full(size, fill_value, dtype=dtype, layout=layout, device=device,
                   pin_memory=pin_memory, requires_grad=requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      pin_memory=False, requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.empty_strided(size, stride, dtype=dtype, layout=layout, device=device,
                            pin_memory=pin_memory, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, layout=None, device=None, pin_memory=False,
               requires_grad=False):
    dtype, device = _like(self, dtype, device)
    if _is_tensor(data):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than "
            "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        r = data.detach().to(device=device, dtype=dtype, copy=True)
        return r.requires_grad_(requires_grad) if requires_grad else r
    return _C.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def type_as(self, other):
    return self.to(device=other.device, dtype=other.dtype)


# ---- pointwise compositions ----

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
    product, not multiplied, and wrapped, in int64), and that dtype (None: not three tensors)."""
    if not (_is_tensor(input) and _is_tensor(tensor1) and _is_tensor(tensor2)):
        return tensor1, tensor2, None  # (the bindings raise their TypeError)
    common = _C._result_type(input, tensor1, tensor2)
    if common == _C.bool:
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    if not (common.is_floating_point or common.is_complex):
        return tensor1, tensor2, common
    return (tensor1 if tensor1.dtype == common else tensor1.to(common),
            tensor2 if tensor2.dtype == common else tensor2.to(common), common)


def _pointwise(input, tensor1, tensor2, value, combine, out=None, in_place=False, name=""):
    """input + value * combine(tensor1, tensor2): addcmul, addcdiv and their in-place forms."""
    tensor1, tensor2, common = _in_common_dtype(input, tensor1, tensor2)
    if common in (_C.float16, _C.bfloat16) and (not in_place or input.dtype == common):
        # torch computes half and bfloat16 in float32, as input + (value * t1) op t2, and
        # rounds once: rounding the quotient or product to bfloat16 first moved results by one
        # bfloat16 step
        scalar_fits(value, common, opmath=True)
        widened = _C.add(input.to(common).float(),
                         combine(_C.mul(tensor1.float(), value), tensor2.float())).to(common)
        return input.copy_(widened) if in_place else _finish_cast(widened, out, name)
    value, as_alpha = _pointwise_value(common, value)
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
    product = _C.outer(vec1, vec2)
    for v in (beta, alpha):
        scalar_fits(v, _C.promote_types(product.dtype, input.dtype))
    if alpha != 1:
        product = product * alpha
    base = input.expand(product.shape)  # input broadcasts to the outer product, not beyond
    if beta == 0:  # torch ignores input (its NaN and inf too)
        return product + _C.zeros((), dtype=input.dtype, device=input.device)
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


def _refuse_complex(name, input, error=RuntimeError, message=None):
    """torch's refusal of a complex input, for the compositions that are real-only."""
    if input.dtype.is_complex:
        raise error(message or f"{name} does not support complex inputs.")


def _dtype_name(dt) -> str:
    return dt._torch_name


def _floating_kernel(kernel, input, device_suffix=True):
    """torch's refusal of an integer, bool or complex input by a floating-only kernel:
    NotImplementedError('"elu_cpu" not implemented for 'Long'')."""
    if not input.dtype.is_floating_point:
        if device_suffix:
            kernel = f"{kernel}_{'cuda' if input.is_cuda else 'cpu'}"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(input.dtype)}'")


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
    for an integer one."""
    if not _is_tensor(other):
        return _C.pow(2.0, other)
    exponent = other.dtype
    if input.dtype.is_complex:
        if exponent == _C.float16:
            if other.dim() == 0:  # (a 0-d exponent keeps its own dtype in torch's promotion)
                return _C.pow(2.0, other)
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


# ---- special functions over the core's table ops ----

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


# ---- reductions and scans ----

_aminmax_result = collections.namedtuple("aminmax", ["min", "max"])


def aminmax(input, *, dim=None, keepdim=False):
    if input.dtype.is_complex:  # (torch's two messages: its 0-d path with a dim, its kernel's)
        if input.dim() == 0 and dim is not None:
            raise RuntimeError(f"aminmax not implemented for {input.dtype._torch_name}")
        raise NotImplementedError(
            f"\"aminmax_cpu\" not implemented for '{input.dtype._torch_name}'")
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        lo, hi = _C.amin(input), _C.amax(input)
        if keepdim:
            shape = (1,) * input.dim()
            lo, hi = lo.reshape(shape), hi.reshape(shape)
        return _aminmax_result(lo, hi)
    return _aminmax_result(_C.amin(input, dim, keepdim), _C.amax(input, dim, keepdim))


def logcumsumexp(input, dim, *, out=None):
    if out is not None and out.dtype != input.dtype:  # torch checks out= before anything else
        raise RuntimeError(f"expected scalar_type {input.dtype._torch_name} but found "
                           f"{out.dtype._torch_name}")
    d = _wrap_dim(dim, input.dim())  # then a bad dim
    if not input.dtype.is_complex:  # complex: the same running logaddexp, as torch's
        _floating_kernel("logcumsumexp_out", input)
    x = input
    if x.dim() == 0 or x.shape[d] <= 1:
        return _finish(x.clone(), out)
    # the running log-sum-exp: each step one logaddexp, exact in the tails (a shift by the
    # overall maximum would underflow the prefixes far below it)
    acc = x.select(d, 0)
    parts = [acc]
    for i in range(1, x.shape[d]):
        acc = _C.logaddexp(acc, x.select(d, i))
        parts.append(acc)
    return _finish(_shape.stack(parts, d), out)


def hash_tensor(input, dim=None, *, keepdim=False, mode=0, out=None):
    """torch.hash_tensor, mode 0: each element as a 64-bit value (floating types as float64,
    integers and bools as int64), the bits XOR-ed over ``dim`` (every dim when None or empty),
    as uint64."""
    if out is not None and out.dtype != _C.uint64:  # (torch's order: out, the dims, the mode)
        raise RuntimeError(
            f"Expected result to be of dtype uint64, but got {out.dtype._torch_name}")
    n = input.dim()
    dims = [] if dim is None else _dim_list(dim)
    for d in dims:  # (torch's order: each dim's range (a 0-d input's too), then its size)
        w = _wrap_dim(d, max(n, 1))
        if n and input.shape[w] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {w} to have non-zero size.")
    if len({_wrap_dim(d, max(n, 1)) for d in dims}) != len(dims):
        first = next(d for i, d in enumerate(dims) if _wrap_dim(d, max(n, 1)) in
                     {_wrap_dim(e, max(n, 1)) for e in dims[:i]})
        raise RuntimeError(f"dim {_wrap_dim(first, max(n, 1))} appears multiple times in the "
                           "list of dims")
    if not dims and input.numel() == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    reduced = sorted({_wrap_dim(d, n) for d in dims}) if dims and n else list(range(n))
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    dt = input.dtype
    if (dt.is_complex or dt in _SHELL_UNSIGNED) and input.numel():  # (no kernel runs if empty)
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{dt._torch_name}'")
    kept = [d for d in range(n) if d not in reduced]
    bits = (input.to(_C.float64) if dt.is_floating_point else input.to(_C.int64)).view(_C.int64)
    rows = bits.permute(kept + reduced).reshape(-1, math.prod(input.shape[d] for d in reduced))
    while rows.shape[1] > 1:  # pairwise halving: log2(R) passes over the data
        half = rows.shape[1] // 2
        folded = _C.bitwise_xor(rows[:, :half], rows[:, half:2 * half])
        rows = _C.cat([folded, rows[:, 2 * half:]], 1) if rows.shape[1] % 2 else folded
    shape = [1 if d in reduced else input.shape[d] for d in range(n)] if keepdim else \
        [input.shape[d] for d in kept]
    return _finish(rows[:, 0].reshape(shape).view(_C.uint64), out)


def dist(input, other, p=2):
    from ember import linalg

    return linalg.vector_norm(input - other, p)


def renorm(input, p, dim, maxnorm, *, out=None):
    from ember import linalg

    for v in (p, maxnorm):  # torch's Scalar parser: an int beyond int64 does not convert
        if isinstance(v, builtins.int) and not isinstance(v, builtins.bool) \
                and not -2**63 <= v < 2**63:
            raise OverflowError("int too big to convert")
    # torch's order (its meta function, then the kernel): p, maxnorm (NaN fails both), the
    # rank, the dim, then the dtype
    if isinstance(p, builtins.complex):
        raise RuntimeError("renorm: p must be real-valued")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if isinstance(maxnorm, builtins.complex):
        raise RuntimeError("renorm: maxnorm must be real-valued")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm)}")
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           "dimensions")
    d = _wrap_dim(dim, input.dim())
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_dtype_name(input.dtype)}")
    others = tuple(i for i in range(input.dim()) if i != d)
    norm = linalg.vector_norm(input, p, dim=others, keepdim=True) if others else input.abs()
    factor = _C.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).to(input.dtype)
    return _finish(input * factor, out)


def renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))


def cov(input, *, correction=1, fweights=None, aweights=None):
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    if input.dtype == _C.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(_C.get_default_dtype())
    n = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if wt.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{name} with {wt.dim()} dimensions")
        if wt.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {wt.numel()} != {n}")
        if name == "fweights" and wt.dtype.is_floating_point:
            raise RuntimeError("cov(): expected fweights to have integral dtype but got "
                               f"fweights with {_dtype_name(wt.dtype)} dtype")
        if name == "aweights" and not wt.dtype.is_floating_point:
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {_dtype_name(wt.dtype)} dtype")
        if not bool((wt >= 0).all()):  # (NaN weights too, as torch's check)
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = wt if w is None else w * wt
    if w is not None and not bool(w.sum() != 0):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    if w is None:
        avg = x.mean(1)
        w_sum = float(n)
        norm_factor = w_sum - correction
    else:
        # (torch's in * w: the weights' dtype takes part, float64 aweights give a float64 cov)
        common = _C.promote_types(x.dtype, w.dtype)
        x, w = x.to(common), w.to(common)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if aweights is None:
            norm_factor = w_sum - correction
        else:
            norm_factor = w_sum - correction * (w * aweights.to(x.dtype)).sum() / w_sum
    if (float(norm_factor) if _is_tensor(norm_factor) else norm_factor) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm_factor = 0.0 if not _is_tensor(norm_factor) else norm_factor.clamp(min=0)
    centred = x - avg.unsqueeze(1)
    weighted = centred if w is None else centred * w
    c = _C.mm(weighted, centred.t().conj()) / norm_factor
    return c.squeeze() if input.dim() < 2 or x.shape[0] == 1 else c  # (one variable: 0-d)


def corrcoef(input):
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    std = (d.real if d.dtype.is_complex else d).sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    if c.dtype.is_complex:  # each part clipped, as torch's
        c.real.clamp_(-1, 1)
        c.imag.clamp_(-1, 1)
        return c
    return c.clamp(-1, 1)


def sum_to_size(self, *size):
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == t or s == 1 for s, t in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size)
                                if s == 1 and shape[lead + i] != 1]
    r = self.sum(dims, keepdim=True) if dims else self
    return r.reshape(size) if lead else r


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input):
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def fill_diagonal_(self, fill_value, wrap=False):
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if self.dim() > 2 and any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    n = _min(shape)
    if self.dim() == 2 and wrap and shape[0] > shape[1] + 1:
        # torch's wrap: the diagonal starts again every (columns + 1) rows
        rows = [r for r in range(shape[0]) if r % (shape[1] + 1) < shape[1]]
        cols = [r % (shape[1] + 1) for r in rows]
        index = (_C.tensor(rows, dtype=_C.int64, device=self.device),  # (none: no columns)
                 _C.tensor(cols, dtype=_C.int64, device=self.device))
    else:
        i = _C.arange(n, device=self.device)
        index = (i,) * self.dim()
    self[index] = fill_value
    return self


# ---- copies, scatters and selections written with views ----

def narrow_copy(input, dim, start, length, *, out=None):
    """A contiguous copy of input.narrow(dim, start, length)."""
    if out is not None and _is_tensor(out) and out.dtype != input.dtype:  # (torch's check)
        raise RuntimeError("Expected self.dtype() == output.dtype() to be true, but got false.")
    return _finish(input.narrow(dim, start, length).clone(), out)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input, laid out with input's strides and storage offset, with src written where
    copy.as_strided(size, stride, offset) looks (offset: input's by default). Built as scatters
    into a flat buffer of the copy's storage and a strided view of it, so both gradients are
    those ops'."""
    size, stride = [int(v) for v in size], [int(v) for v in stride]
    base = input.storage_offset()  # the copy has input's sizes, strides and storage offset
    offset = base if storage_offset is None else int(storage_offset)
    if tuple(src.shape) != tuple(size):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {size}")
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(size)} vs "
                           f"{len(stride)}")
    shape, strides = tuple(input.shape), tuple(input.stride())
    storage = base + 1 + sum((n - 1) * st for n, st in zip(shape, strides)) \
        if input.numel() else base
    reach = offset + sum((n - 1) * st for n, st in zip(size, stride))
    if _min(size, default=1) > 0 and reach >= storage:
        raise RuntimeError(f"setStorage: sizes {size}, strides {stride}, storage offset {offset} "
                           f"is out of bounds for storage of size {storage}")
    if any(n > 1 and st == 0 for n, st in zip(size, stride)):  # (torch's copy_ into the view)
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")

    def positions(sizes, steps, start):
        p = _C.full([], start, dtype=_C.int64, device=input.device)
        for k, (n, st) in enumerate(zip(sizes, steps)):
            dims = [1] * len(sizes)
            dims[k] = n
            p = p + _C.arange(n, device=input.device).reshape(dims) * st
        return p.expand(tuple(sizes)).reshape(-1)

    buffer = _C.zeros([storage], dtype=input.dtype, device=input.device)
    buffer = buffer.scatter(0, positions(shape, strides, base), input.reshape(-1))
    # (src is copied in, converted into input's dtype, as torch's copy_ into the strided view)
    buffer = buffer.scatter(0, positions(size, stride, offset), src.reshape(-1).to(input.dtype))
    return buffer.as_strided(shape, strides, base)


def nonzero_static(input, *, size, fill_value=-1, out=None):
    """nonzero(input) with exactly `size` rows: cut, or padded with `fill_value`."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"size={size}")
    if out is not None and out.dtype != _C.int64:
        raise RuntimeError("nonzero_static: Expected out tensor to have scalar type Long but got "
                           f"scalar type{out.dtype._torch_name}")  # (torch's, without a space)
    found = _C.nonzero(input)
    n = found.shape[0]
    if n >= size:
        result = found[:size]
    else:
        pad = _C.full([size - n, found.shape[1]], fill_value, dtype=found.dtype,
                      device=found.device)
        result = _C.cat([found, pad])
    return _finish(result.contiguous(), out)


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_reduce(name, self, dim, index, source, reduce, include_self, inplace):
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"{name}(): Expected reduce to be one of prod, mean, amax or amin but "
                           f"got {reduce}.")
    d = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if index.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(f"{name}_(): Expected dtype int32/int64 for index but got: "
                           f"{index.dtype._torch_name}")
    if self.dtype != source.dtype:
        raise RuntimeError(f"{name}_(): self ({self.dtype._torch_name}) and source "
                           f"({source.dtype._torch_name}) must have the same scalar type")
    if source.dim() != self.dim() and not (source.dim() == 0 and self.dim() <= 1):
        raise IndexError(f"{name}_(): Source/destination tensor must have same number of "
                         "dimensions")
    count = index.numel()
    if source.dim() and source.shape[d] != count:
        raise IndexError(f"{name}_(): Number of indices ({count}) should be equal to "
                         f"source.size(dim) ({source.shape[d]})")
    if self.dtype.is_complex:  # torch's kernel has no complex type, for any reduction
        raise NotImplementedError(f"\"index_func_\" not implemented for "
                                  f"'{_dtype_name(self.dtype)}'")
    # index_reduce along dim is scatter_reduce with the index broadcast over source's other dims
    shape = [1] * _max(source.dim(), 1)
    shape[d if source.dim() else 0] = count
    expanded = index.reshape(shape).expand(tuple(source.shape) if source.dim() else (count,))
    src = source if source.dim() else source.reshape(1)
    if inplace:
        return self.scatter_reduce_(d, expanded, src, reduce, include_self=include_self)
    return _C.scatter_reduce(self, d, expanded, src, reduce, include_self=include_self)


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    return _finish(_index_reduce("index_reduce", input, dim, index, source, reduce,
                                 include_self, False), out)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return _index_reduce("index_reduce", self, dim, index, source, reduce, include_self, True)


def cholesky_inverse(input, upper=False, *, out=None):
    """The inverse of A = L L^H (or U^H U) from its Cholesky factor, batched as torch."""
    if input.dim() < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError("cholesky_inverse: A must be batches of square matrices, but they are "
                           f"{input.shape[-2] if input.dim() >= 2 else 1} by "
                           f"{input.shape[-1] if input.dim() else 1} matrices")
    if input.dtype not in (_C.float32, _C.float64, _C.complex64, _C.complex128):
        raise NotImplementedError(f"\"cholesky_inverse_out_cpu\" not implemented for "
                                  f"'{_dtype_name(input.dtype)}'")
    if out is not None and not _C.can_cast(input.dtype, out.dtype):  # (before the factor's)
        raise RuntimeError(f"cholesky_inverse: Expected result to be safely castable from "
                           f"{_dtype_name(input.dtype)} dtype, but got result with dtype "
                           f"{_dtype_name(out.dtype)}")
    n = input.shape[-1]
    from ember import linalg  # (linalg imports this module)

    # a zero on the factor's diagonal: torch's LinAlgError (the solves would give inf and NaN)
    zero = (input.diagonal(0, -2, -1) == 0).reshape(-1, n) if input.numel() else None
    if zero is not None and bool(zero.any()):
        first = int(zero.any(1).to(_C.int64).argmax())
        where = f"(Batch element {first}): " if input.dim() > 2 else ""
        element = int(zero[first].to(_C.int64).argmax()) + 1
        raise linalg.LinAlgError(
            f"cholesky_inverse: {where}The diagonal element {element} is zero, the inversion "
            "could not be completed because the input matrix is singular.")
    eye = _C.eye(n, dtype=input.dtype, device=input.device).expand(tuple(input.shape))

    return _finish(linalg._cholesky_solve(eye, input, upper), out)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) with A = P L U from linalg.lu_factor's packed (LU, pivots): L unit lower
    (m x k), U upper (k x n), P the permutation of LAPACK's row interchanges (pivots 1-based)."""
    if LU_data.dim() < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = _min(m, n)
    batch = tuple(LU_data.shape[:-2])
    if unpack_pivots:  # (torch reads nothing of the pivots otherwise)
        if LU_pivots.dtype != _C.int32:
            raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                               "of torch.int32 dtype. Note: this function does not check if the "
                               "pivots are sensible and may segfault if they are not. Got "
                               f"{LU_pivots.dtype}")
        if tuple(LU_pivots.shape) != batch + (k,):
            raise RuntimeError(f"torch.lu_unpack: LU_pivots of size {list(LU_pivots.shape)} do "
                               f"not match LU_data of size {list(LU_data.shape)}")
    empty = _C.empty([0], dtype=LU_data.dtype, device=LU_data.device)
    L = U = P = empty
    if unpack_data:
        eye = _C.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        L = LU_data.narrow(-1, 0, k).tril(-1) + eye
        U = LU_data.narrow(-2, 0, k).triu()
    if unpack_pivots:
        # A's rows were swapped in order (row i with row pivots[i] - 1): P is the transposed
        # permutation of those swaps, so that A = P L U
        flat = LU_pivots.reshape(-1, k).cpu().tolist()
        rows = []
        for piv in flat:
            perm = list(range(m))
            for i, p in enumerate(piv):
                perm[i], perm[p - 1] = perm[p - 1], perm[i]
            rows.append(perm)
        index = _C.tensor(rows, dtype=_C.int64).reshape(batch + (m,))
        eye_m = _C.eye(m, dtype=LU_data.dtype)
        P = eye_m[index].mT.to(LU_data.device)
    return P, L, U


# ---- in-place samplers composed from uniform_ and normal_ (the generator's stream) ----

def _check_floating(self, name):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{name} expects a floating point tensor, but got {self.dtype}")


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """median + sigma * tan(pi * (u - 1/2)), u uniform in [0, 1) (torch's transformation)."""
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    _check_floating(self, "cauchy_")
    u = _C.empty(tuple(self.shape), dtype=_C.float64, device=self.device)
    u.uniform_(0.0, 1.0, generator=generator)
    return self.copy_(((u - 0.5) * math.pi).tan() * sigma + median)


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """exp of a normal(mean, std) draw."""
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    if not self.dtype.is_floating_point:  # torch's kernel dispatch: nothing to refuse when empty
        if self.numel() == 0:
            return self
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for "
                                  f"'{_dtype_name(self.dtype)}'")
    z = _C.empty(tuple(self.shape), dtype=_C.float64, device=self.device)
    z.normal_(mean, std, generator=generator)
    return self.copy_(z.exp())


def geometric_(self, p, *, generator=None):
    """The number of Bernoulli(p) trials up to the first success: ceil(log(u) / log(1 - p)) for
    u uniform in (0, 1] (at least 1)."""
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if (self.dtype in (_C.bool, *_SHELL_UNSIGNED) or self.dtype.is_complex) and self.numel():
        raise NotImplementedError(f"\"geometric_cpu\" not implemented for "
                                  f"'{_dtype_name(self.dtype)}'")
    u = _C.empty(tuple(self.shape), dtype=_C.float64, device=self.device)
    u.uniform_(0.0, 1.0, generator=generator)
    u = 1.0 - u  # (0, 1]: log(u) finite
    return self.copy_((u.log() / math.log1p(-p)).ceil().clamp_min(1.0))


def poisson(input, generator=None):
    """Poisson(rate) draws, one per element of `input` (the rates), by inverting the CDF of one
    uniform each: the smallest k with P(X <= k) = Q(k + 1, rate) >= u (the regularised upper
    incomplete gamma function), found by bisection. Exact but for rounding, vectorised over the
    tensor (and so on CUDA too), and reproducible from the generator's uniform stream. The result
    has the rates' dtype; it carries a zero gradient, as torch's."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"poisson_cpu\" not implemented for '{_dtype_name(input.dtype)}'")
    rate = input.detach().to(_C.float64)
    if bool((rate < 0).any()) or bool(rate.isnan().any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    u = _C.empty(tuple(rate.shape), dtype=_C.float64, device=rate.device)
    u.uniform_(0.0, 1.0, generator=generator)
    infinite = rate.isinf()
    rate = _C.where(infinite, _C.zeros_like(rate), rate)  # an infinite rate draws infinity
    lo = _C.full(tuple(rate.shape), -1.0, dtype=_C.float64, device=rate.device)  # CDF(-1) = 0
    hi = (rate + 10.0 * rate.sqrt() + 10.0).ceil()
    while True:  # widen until CDF(hi) >= u everywhere (u within rounding of 1: rarely needed)
        short = _gammaincc(hi + 1.0, rate) < u
        if not bool(short.any()):
            break
        hi = _C.where(short, hi * 2.0 + 1.0, hi)
    while bool(((hi - lo) > 1.0).any()):
        mid = ((lo + hi) * 0.5).floor()
        mid = _C.where(mid <= lo, lo + 1.0, mid)
        reached = _gammaincc(mid + 1.0, rate) >= u
        open_ = (hi - lo) > 1.0
        hi = _C.where(open_ & reached, mid, hi)
        lo = _C.where(open_ & ~reached, mid, lo)
    draw = _C.where(rate == 0, _C.zeros_like(hi), hi)
    draw = _C.where(infinite, _C.full([], math.inf, dtype=_C.float64), draw).to(input.dtype)
    if input.requires_grad and _C.is_grad_enabled():
        # torch's zero gradient: a zero that depends on the rates (inf * 0 is NaN: zeroed too)
        draw = draw + (input * 0.0).nan_to_num(0.0)
    return draw


def _gammaincc(a, x):
    from ember import special

    return special.gammaincc(a, x)


def prelu(input, weight):
    """x where x > 0, else weight * x, one weight per channel (dim 1) or one for all."""
    # torch's order: the dtypes, the channel count, the weight's rank, then the kernel's dtype
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype._torch_name} "
                           f"and {weight.dtype._torch_name}")
    w = weight
    if weight.numel() != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() > 1 else 1
        if channels != weight.numel():
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers "
                f"= {weight.numel()} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError("prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"prelu_cpu\" not implemented for '{_dtype_name(input.dtype)}'")
    if weight.numel() != 1:
        w = weight.reshape((1, -1) + (1,) * (input.dim() - 2))
    return _C.where(input > 0, input, input * w)


# ---- layout queries ----

def to_dense(self, dtype=None, *, masked_grad=None):
    """A strided tensor is dense already: itself (converted to `dtype` when given)."""
    return self if dtype is None or dtype == self.dtype else self.to(dtype)


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory, as torch's: contiguous and channels_last
    tensors take their formats' orders; otherwise an insertion sort by stride (larger first, a
    larger size first between equal strides) that leaves dims of stride 0 where they are. With
    ambiguity_check (True, or a list of memory formats), a tensor whose order is not unique is
    refused: one with a size-1 dim or two neighbours of equal stride that does not fit exactly
    one of the listed formats, or one the sort could not order strictly."""
    from ember import _memory_format as mf

    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list)
            and all(isinstance(f, mf.memory_format) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    stride, shape, n = tuple(self.stride()), tuple(self.shape), self.dim()
    several = any(a == b for a, b in zip(stride, stride[1:])) or 1 in shape
    fits_one = sum(bool(self.is_contiguous(memory_format=f)) for f in formats) == 1
    if (ambiguity_check is not False) and several and not fits_one:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    if n < 2:
        return tuple(range(n))
    contiguous = self.is_contiguous()
    channels_last = n == 4 and self.is_contiguous(memory_format=mf.channels_last)
    if contiguous and not channels_last:
        return tuple(range(n))
    if channels_last and not contiguous:
        return (0, *range(2, n), 1)

    def ge(a, b):
        return b == 0 or (a != 0 and (a >= b or a % b == 0))

    def order(a, b):  # > 0: dim a lies outside dim b (swap), < 0: inside, 0: undecided
        if stride[a] == 0 or stride[b] == 0:
            return 0
        if stride[a] == stride[b]:
            return 0 if ge(shape[b], shape[a]) else 1
        return -1 if ge(stride[b], stride[a]) else 1

    perm = list(reversed(range(n)))  # innermost first while sorting
    for i in range(1, n):
        j = i
        for k in reversed(range(i)):
            c = order(perm[k], perm[j])
            if c > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif c < 0:
                break
    if ambiguity_check and any(order(perm[i], perm[i + 1]) != -1 for i in range(n - 1)):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """An uninitialised tensor of `size` whose dims lie in memory in `physical_layout`'s order
    (outermost first)."""
    size, perm = list(size), list(physical_layout)
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; or physical_layout is not a permutation: size "
                           f"{size}, physical_layout {perm}")
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    physical = _C.empty([size[p] for p in perm], dtype=dtype, device=device,
                        pin_memory=bool(pin_memory))
    result = physical.permute(inverse)
    return result.requires_grad_() if requires_grad else result


# ---- distances and products ----

_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    if compute_mode not in _CDIST_MODES:  # torch's Python wrapper checks it first
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_dtype_name(x.dtype)}")
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.dtype != x2.dtype:  # (torch's kernels take one dtype; they do not promote)
        raise RuntimeError(f"expected scalar type {_dtype_name(x1.dtype)} but found "
                           f"{_dtype_name(x2.dtype)}")
    # torch's own kernel has float and double only; its matrix-product path for p == 2 (always
    # with use_mm_for_euclid_dist, past 25 rows when necessary) takes the half types too
    mode = _CDIST_MODES.index(compute_mode)
    mm = p == 2 and (mode == 1 or (mode == 0 and (x1.shape[-2] > 25 or x2.shape[-2] > 25)))
    if not mm and x1.dtype in (_C.float16, _C.bfloat16):
        raise NotImplementedError(f"\"cdist\" not implemented for '{_dtype_name(x1.dtype)}'")
    return _distance_last(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)  # (..., P, R)


def _distance_last(diff, p):
    """The p-norm over the last dimension, with torch's cdist gradient at a zero distance (0,
    where the norm's own derivative is 0/0): the root is taken where the sum is positive only."""
    if diff.shape[-1] == 0:
        return diff.sum(-1)
    if p == 0:
        return (diff != 0).sum(-1).to(diff.dtype)
    if math.isinf(p):
        return diff.abs().amax(-1)
    total = (diff.abs() ** p).sum(-1)
    positive = total > 0
    return _C.where(positive, _C.where(positive, total, 1.0) ** (1.0 / p), 0.0).to(diff.dtype)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    # torch's order: the dim, no samples, the dtypes, dx, the spacing, the sums' kernels
    d = _wrap_dim(dim, y.dim())
    n = y.shape[d]
    if n == 0:  # torch's zeros_like_except: zeros of y's dtype without the dim (not a sum's)
        return _C.zeros(tuple(y.shape[:d]) + tuple(y.shape[d + 1:]), dtype=y.dtype,
                        device=y.device)
    _check_integrand("trapezoid", y, x)
    _check_dx("trapezoid", dx)
    # torch's formulas (Integration.cpp), so the dtypes and roundings are its own
    spacing = _spacing("trapezoid", y, x, dx, d)
    _no_add_kernel(y)
    if not isinstance(spacing, _C.Tensor):
        return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * spacing
    return (spacing * (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))).sum(d) / 2.0


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    # torch's order: given x, the dim, then the dtypes; given dx (or neither), the dtypes and
    # dx, then the dim. No shortcut for no samples: the result is then empty, in the dtype of
    # the formula (an integer y's halves are floats)
    if x is None:
        _check_integrand("cumulative_trapezoid", y, x)
        _check_dx("cumulative_trapezoid", dx)
    d = _wrap_dim(dim, y.dim())
    if x is not None:
        _check_integrand("cumulative_trapezoid", y, x)
    spacing = _spacing("cumulative_trapezoid", y, x, dx, d)
    _no_add_kernel(y)
    pairs = _tail(y, d) + _head(y, d)
    if not isinstance(spacing, _C.Tensor):
        return (spacing / 2.0 * pairs).cumsum(d)
    return (spacing * pairs).cumsum(d) / 2.0


def _head(t, d):
    """t[:-1] along dim d (empty when t has no entries there), as torch's slice."""
    return t.narrow(d, 0, max(t.shape[d] - 1, 0))


def _tail(t, d):
    """t[1:] along dim d (empty when t has no entries there)."""
    n = t.shape[d]
    return t.narrow(d, min(n, 1), max(n - 1, 0))


def _no_add_kernel(t):
    if t.dtype in _SHELL_UNSIGNED:
        raise NotImplementedError(f"\"add_stub\" not implemented for '{_dtype_name(t.dtype)}'")


def _check_integrand(name, y, x):
    """torch's refusals of bool samples (its message names y, or x or y)."""
    if y.dtype == _C.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    if _is_tensor(x) and x.dtype == _C.bool:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           "supported")


def _check_dx(name, dx):
    if isinstance(dx, (bool, builtins.complex)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")


def _spacing(name, y, x, dx, d):
    if x is None:
        return 1.0 if dx is None else dx
    if x.dim() == 1:
        n = x.shape[0]
        if n != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[d] = max(n - 1, 0)
        _no_add_kernel(x)  # (the unsigned types have no difference kernel either)
        return (_tail(x, 0) - _head(x, 0)).reshape(shape)
    if x.dim() < y.dim():  # torch's: x's shape padded with leading 1s to y's rank first
        x = x.reshape((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    _no_add_kernel(x)
    return _tail(x, d) - _head(x, d)


def vander(x, N=None, increasing=False):
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = x.dtype if x.dtype != _C.bool else _C.int64
    if not (dt.is_floating_point or dt.is_complex):
        dt = _C.int64
    if n == 0:
        return _C.empty((x.shape[0], 0), dtype=dt, device=x.device)
    cols = [_C.ones((x.shape[0], 1), dtype=dt, device=x.device)]
    if n > 1:
        cols.append(x.to(dt).unsqueeze(1).expand(x.shape[0], n - 1))
    r = _C.cat(cols, 1).cumprod(1)
    return r if increasing else r.flip(1)


def combinations(input, r=2, with_replacement=False):
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.empty((0,), dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = list(pick(range(input.shape[0]), r))
    if not index:
        return _C.empty((0, r), dtype=input.dtype, device=input.device)
    return input[_C.tensor(index, device=input.device)]


def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    if not _is_tensor(elements) and not _is_tensor(test_elements):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but "
                        "expected one of: (Tensor elements, Tensor test_elements), (Number "
                        "element, Tensor test_elements), (Tensor elements, Number test_element)")
    if not _is_tensor(elements):
        elements = _C.tensor(elements, device=test_elements.device)
    if not _is_tensor(test_elements):
        test_elements = _C.tensor(test_elements, device=elements.device)
    for x in (elements, test_elements):  # torch's check_for_unsupported_isin_dtype, each input
        if x.dtype == _C.bool or x.dtype.is_complex:
            raise RuntimeError(f"Unsupported input type encountered for isin(): "
                               f"{_dtype_name(x.dtype)}")
    if out is not None and out.dtype != _C.bool:
        raise RuntimeError(f"Expected out tensor to have dtype bool, but got {out.dtype._cpp_name} "
                           "instead")
    dt = _C.promote_types(elements.dtype, test_elements.dtype)
    values = test_elements.reshape(-1).to(dt).sort().values
    probe = elements.to(dt)
    if values.numel() == 0:
        found = _C.zeros(elements.shape, dtype=_C.bool, device=elements.device)
    else:
        at = _C.searchsorted(values, probe.reshape(-1)).clamp(max=values.numel() - 1)
        found = (values[at] == probe.reshape(-1)).reshape(elements.shape)
    return _finish(~found if invert else found, out)


# ---- integer functions, frexp, put, the scatters, window functions ----

def _binary_iter_checks(name, input, other, out=None, inplace=False):  # noqa: A002
    """The checks of torch's binary TensorIterator ops, in its order: the written-to tensor's
    internal overlap, the shapes, whether the common dtype casts to the written-to tensor's; the
    common dtype is returned for the kernel's own dtype check, which comes after them."""
    target = input if inplace else out
    if target is not None:
        _C._check_inplace_writable(target, name + "_" if inplace else name)
    shape = _shape._broadcast_with_core_message(tuple(input.shape), tuple(other.shape))
    if inplace and tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    common = _C.result_type(input, other)
    if target is not None and not _C.can_cast(common, target.dtype):
        raise RuntimeError(f"result type {common._torch_name} can't be cast to the desired output "
                           f"type {target.dtype._torch_name}")
    return common


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


def put_(self, index, source, accumulate=False):
    if source.dtype != self.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_dtype_name(self.dtype)} and source.dtype = "
                           f"{_dtype_name(source.dtype)}")
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{_dtype_name(index.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, "
                         f"index.numel() = {index.numel()}")
    n = self.numel()
    if index.numel() and bool(((index < -n) | (index >= n)).any()):
        raise IndexError(f"out of range: tried to access index "
                         f"{int(index[(index < -n) | (index >= n)][0])} on a tensor of {n} "
                         "elements.")
    coords = unravel_index(index.reshape(-1), tuple(self.shape)) if self.dim() else ()
    if not self.dim():
        return self.copy_(source.reshape(()) + (self if accumulate else 0))
    return self.index_put_(coords, source.reshape(-1).to(self.dtype), accumulate)


def put(input, index, source, accumulate=False):
    return put_(input.clone(), index, source, accumulate)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    r = input.clone()
    view = r.diagonal(offset, dim1, dim2)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(view.shape)}")
    view.copy_(src)
    return r


def select_scatter(input, src, dim, index):
    r = input.clone()
    view = r.select(dim, index)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(view.shape)}")
    view.copy_(src)
    return r


def slice_scatter(input, src, dim=0, start=None, end=None, step=1, *, out=None):
    if input.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if out is not None and out.dtype != input.dtype:
        return _finish_exact(input, out)  # (torch's message for out's dtype)
    r = input.clone()
    d = _wrap_dim(dim, input.dim())
    index = [builtins.slice(None)] * input.dim()
    index[d] = builtins.slice(start, end, step)
    view = r[tuple(index)]
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(view.shape)}")
    view.copy_(src)
    return _finish(r, out)


def ravel(input):
    return input.reshape(-1)


def resolve_neg(input):
    return input


# Complex numbers. real/imag are views (of view_as_real's (real, imaginary) pairs), so writes
# through them reach the tensor, as torch's. conj writes the conjugate out: ember has no lazy
# conjugate bit, so is_conj is always False and resolve_conj has nothing to resolve.
def conj(input):
    return _C.conj_physical(input) if input.dtype.is_complex else input


def resolve_conj(input):
    return input


def real(input):
    return _C.view_as_real(input)[..., 0] if input.dtype.is_complex else input


def imag(input):
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _C.view_as_real(input)[..., 1]


def isreal(input):
    if input.dtype.is_complex:
        return _C.eq(imag(input), 0)
    return _C.ones_like(input, dtype=_C.bool)


def is_complex(input) -> bool:
    return input.dtype.is_complex


def _check_complex_parts(name, a, b, first, second):
    if a.dtype != b.dtype:
        raise RuntimeError(f"Expected object of scalar type {a.dtype._torch_name} but got scalar "
                           f"type {b.dtype._torch_name} for second argument")
    if a.dtype == _C.float16:  # (torch's complex() makes a complex32; its polar kernel has none)
        if name == "polar":
            raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
        raise RuntimeError(f"{name}: float16 parts would make a complex32 (ComplexHalf) tensor, "
                           f"a dtype ember does not have; convert them to float32 first")
    if a.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{a.dtype._torch_name} and {b.dtype._torch_name}")


def _complex_out(parts, out):
    """The complex tensor of (real, imaginary) pairs stacked on a last dim, written to `out`."""
    result = _C.view_as_complex(_shape.stack(parts, -1))
    if out is None:
        return result
    if not out.dtype.is_complex:
        raise RuntimeError(f"Expected object of scalar type {result.dtype._torch_name} but got "
                           f"scalar type {out.dtype._torch_name} for argument 'out'")
    out.resize_(result.shape).copy_(result)
    return out


def complex(real, imag, *, out=None):  # noqa: A001 - torch's name
    """The complex tensor real + imag * 1j (torch.complex): both float32 or both float64."""
    _check_complex_parts("complex", real, imag, "real", "imag")
    real, imag = _shape.broadcast_tensors(real, imag)
    return _complex_out([real, imag], out)


def polar(abs, angle, *, out=None):  # noqa: A002 - torch's names
    """abs * (cos(angle) + sin(angle) * 1j) (torch.polar)."""
    _check_complex_parts("polar", abs, angle, "abs", "angle")
    return _complex_out([abs * _C.cos(angle), abs * _C.sin(angle)], out)


def sgn(input, *, out=None):
    """sign for real tensors; x / |x| (0 at 0) for complex ones."""
    if not input.dtype.is_complex:
        return _C.sign(input, out=out)
    magnitude = _C.abs(input)
    result = _C.where(magnitude == 0, _C.zeros_like(input), input / magnitude)
    return _finish_same_dtype(result, out, "sgn")


def sgn_(input):
    if not input.dtype.is_complex:
        return input.sign_()
    return input.copy_(sgn(input))


def conj_physical_(input):
    return input.copy_(_C.conj_physical(input)) if input.dtype.is_complex else input


def is_conj(input) -> bool:
    return False


def is_neg(input) -> bool:
    return False


def is_inference(input) -> bool:
    return False


def _window(name, window_length, periodic, dtype, layout, device, requires_grad, fn,
            pin_memory=False):
    # pinned as torch's factories pin: a RuntimeError where no accelerator is usable, before
    # anything is computed (empty's check)
    if pin_memory:
        _C.empty(0, pin_memory=True)
    w = _window_values(name, window_length, periodic, dtype, layout, device, requires_grad, fn)
    return w.pin_memory() if pin_memory else w


def _window_values(name, window_length, periodic, dtype, layout, device, requires_grad, fn):
    window_length = operator.index(window_length)  # (a 0-d integer tensor is an int)
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length="
                           f"{window_length}")
    dt = _C.get_default_dtype() if dtype is None else dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length == 0:
        return _C.empty(0, dtype=dt, layout=layout, device=device, requires_grad=requires_grad)
    if window_length == 1:
        return _C.ones(1, dtype=dt, layout=layout, device=device, requires_grad=requires_grad)
    if dt.is_complex:  # torch's check lets complex through; its arange of them then fails
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dt._torch_name}'")
    n = window_length + 1 if periodic else window_length
    k = _C.arange(window_length, dtype=_C.float64, device=device)
    w = fn(k, n).to(dt)
    return w.requires_grad_(requires_grad) if requires_grad else w


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda k, n: 0.5 - 0.5 * (k * (2 * math.pi / (n - 1))).cos(), pin_memory)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda k, n: alpha - beta * (k * (2 * math.pi / (n - 1))).cos(),
                   pin_memory)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    def fn(k, n):
        t = k * (2 * math.pi / (n - 1))
        return 0.42 - 0.5 * t.cos() + 0.08 * (2 * t).cos()

    return _window("blackman_window", window_length, periodic, dtype, layout, device,
                   requires_grad, fn, pin_memory)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    return _window("bartlett_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda k, n: 1 - (k * (2 / (n - 1)) - 1).abs(), pin_memory)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    def fn(k, n):
        r = k * (2 / (n - 1)) - 1
        peak = _C.i0(_C.tensor(float(beta), dtype=_C.float64, device=k.device))
        return _C.i0(beta * (1 - r * r).clamp(min=0).sqrt()) / peak

    return _window("kaiser_window", window_length, periodic, dtype, layout, device,
                   requires_grad, fn, pin_memory)


# ---- in-place views: the tensor takes the view's geometry (set_) ----

def _restride_(self, name, view):
    if self.requires_grad and _C.is_grad_enabled():
        raise RuntimeError(f"{name}(): ember does not record in-place view changes of a tensor "
                           "that requires grad; use the out-of-place view instead")
    return self.set_(self.untyped_storage(), view.storage_offset(), view.shape, view.stride())


def transpose_(self, dim0, dim1):
    return _restride_(self, "transpose_", self.transpose(dim0, dim1))


def t_(self):
    return _restride_(self, "t_", self.t())


def squeeze_(self, dim=None):
    return _restride_(self, "squeeze_", self.squeeze() if dim is None else self.squeeze(dim))


def unsqueeze_(self, dim):
    return _restride_(self, "unsqueeze_", self.unsqueeze(dim))


def as_strided_(self, size, stride, storage_offset=None):
    return _restride_(self, "as_strided_", self.as_strided(size, stride, storage_offset))


def fill(input, value):
    if _is_tensor(value) and value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    if _is_tensor(value):  # a 0-d tensor: its gradient flows through the copy
        return _C.full_like(input, 0).copy_(value.expand(input.shape))
    return _C.full_like(input, value)


def zero_function(input):
    return input.zero_()


def detach_function(input):
    return input.detach_()


# ---- torch's top-level forms of nn and linalg functions ----

def rsub(input, other, alpha=1):  # (alpha by position: torch's overload for a number other)
    return _C.sub(other, input, alpha=alpha)


def hardshrink(input, lambd=0.5, *, out=None):
    _floating_kernel("hardshrink", input)
    scalar_fits(lambd, input.dtype)
    # x outside [-lambd, lambd] and NaN stay, as torch's
    result = _C.where((input >= -lambd) & (input <= lambd), 0, input).to(input.dtype)
    return _finish_same_dtype(result, out, "hardshrink")


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input):
    _floating_kernel("elu", input)
    # (x >= 0: at a zero torch's elu kernel gives x whatever alpha is, as nn.functional's)
    return _SELU_SCALE * _C.where(input >= 0, input, _SELU_ALPHA * _C.expm1(input))


def selu_(self):
    return self.copy_(selu(self))


def celu(input, alpha=1.0):
    _floating_kernel("elu", input)
    scalar_fits(alpha, input.dtype, opmath=True)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _C.where(input >= 0, input, alpha * _C.expm1(input / alpha))


def celu_(self, alpha=1.0):
    return self.copy_(celu(self, alpha))


_NO_THRESHOLD_KERNEL = (_C.bool, *_SHELL_UNSIGNED)


def _threshold(input, threshold, value):
    if input.dtype in _NO_THRESHOLD_KERNEL or input.dtype.is_complex:
        _floating_kernel("threshold", input)
    scalar_fits(threshold, input.dtype, opmath=True)
    scalar_fits(value, input.dtype, opmath=True)
    if not (input.dtype.is_floating_point or input.dtype == _C.bool):
        # an integer kernel takes both numbers in its type, truncated (-2.5 is -2), as torch's
        threshold, value = int(threshold), int(value)
    # torch's kernel: x <= threshold ? value : x, so NaN inputs and a NaN threshold keep x
    return _C.where(input <= threshold, value, input).to(input.dtype)


def threshold(input, threshold, value, *, out=None):
    return _finish_cast(_threshold(input, threshold, value), out, "threshold",
                        check_overlap=False)


def threshold_(self, threshold, value):
    return self.copy_(_threshold(self, threshold, value))


def fill_function_(input, value):
    return input.fill_(value)


def round_function_(input, *, decimals=None):
    # decimals given (even 0) is torch's other overload, with no integer kernel
    return input.round_() if decimals is None else input.round_(decimals=decimals)


def get_device(input) -> int:
    return input.get_device()


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    from ember import linalg

    for x in (x1, x2):
        _refuse_complex("cosine_similarity", x, message="expected common dtype to be floating "
                        f"point, yet common dtype is {_dtype_name(x.dtype)}")

    # torch's formula (Distance.cpp): each operand divided by its norm first (integers as the
    # common dtype), the norms clamped to eps outside autograd, then the sum of products
    common = _C.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{_dtype_name(common)}")
    if eps < 0:  # (torch's, before the shapes)
        raise RuntimeError(f"eps must be non-negative, got: {eps:g}")
    x1, x2 = (x if x.dtype.is_floating_point else x.to(common) for x in (x1, x2))
    x1, x2 = _shape.broadcast_tensors(x1, x2)
    n1 = linalg.vector_norm(x1, 2, dim=dim, keepdim=True).clone()
    n2 = linalg.vector_norm(x2, 2, dim=dim, keepdim=True).clone()
    with _grad_mode.no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    from ember import linalg

    difference = x1 - x2 + eps
    if not (difference.dtype.is_floating_point or difference.dtype.is_complex):
        # (integers with an integer eps: torch's norm takes them in the default float dtype)
        difference = difference.to(_C.get_default_dtype())
    return linalg.vector_norm(difference, p, dim=-1, keepdim=keepdim)


def pdist(input, p=2.0):
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.dtype in (_C.float16, _C.bfloat16):  # (torch's kernel: float32 and float64)
        raise NotImplementedError(f"\"pdist\" not implemented for '{input.dtype._torch_name}'")
    n = input.shape[0]
    if n < 2:
        return input.new_empty((0,))
    rows, cols = _C.triu_indices(n, n, 1, device=input.device)
    return _distance_last(input[rows] - input[cols], p)


def matrix_exp(input):
    from ember import linalg

    return linalg.matrix_exp(input)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    from ember import linalg

    dims = tuple(_dim_list(dim))
    return _finish_exact(linalg.vector_norm(input, 2, dim=dims or None, keepdim=keepdim), out)


def nuclear_norm_row(input, *args, out=None):
    """The registry's two forms: (input, keepdim) and (input, dim, keepdim)."""
    if len(args) == 2:
        return nuclear_norm(input, args[0], args[1], out=out)
    return nuclear_norm(input, None, args[0] if args else False, out=out)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    from ember import linalg

    if dim is None:
        result = linalg.matrix_norm(input, "nuc", keepdim=keepdim)
    else:
        dims = _dim_list(dim)
        dims = tuple(dims * 2 if len(dims) == 1 else dims)  # int[2]: one int stands for two
        result = linalg.matrix_norm(input, "nuc", dim=dims, keepdim=keepdim)
    if out is not None and out.dtype != result.dtype:
        raise RuntimeError(f"linalg.matrix_norm expected out tensor dtype "
                           f"{result.dtype._torch_name} but got: {out.dtype._torch_name}")
    return _finish(result, out)


# ---- torch's Python functions over varargs (exported as they are) ----

def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, as itertools.product: (N1*...*Nk, k), or the
    tensor itself for one."""
    for i, t in enumerate(tensors):  # torch's parser first: a TensorList, given unpacked
        if not _is_tensor(t):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = _shape.meshgrid(*tensors, indexing="ij")
    return _shape.stack([g.reshape(-1) for g in grids], 1)


def block_diag(*tensors):
    """The block-diagonal matrix of the tensors (0-d and 1-d ones as one-row matrices), in
    their promoted dtype."""
    for i, t in enumerate(tensors):  # every element's type first, as torch's parser
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.dim()} dimensions")
        mats.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not mats:
        return _C.empty((1, 0))  # torch's
    dt = _C._result_type(*tensors)  # torch's rule: 0-d tensors count only by category
    rows = sum(m.shape[0] for m in mats)
    cols = sum(m.shape[1] for m in mats)
    device = mats[0].device
    parts = []
    col = 0
    for m in mats:
        left = _C.zeros((m.shape[0], col), dtype=dt, device=device)
        right = _C.zeros((m.shape[0], cols - col - m.shape[1]), dtype=dt, device=device)
        parts.append(_C.cat([left, m.to(dt), right], 1))
        col += m.shape[1]
    return _C.cat(parts, 0) if rows else _C.zeros((0, cols), dtype=dt, device=device)


def chain_matmul(*matrices, out=None):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    from ember import linalg

    for i, m in enumerate(matrices):
        if not isinstance(m, _C.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(m).__name__}")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return _finish(matrices[0].clone(), out)
    return linalg.multi_dot(list(matrices), out=out)


def unravel_index(indices, shape):
    """The coordinates of flat indices in an array of `shape`: a tuple of tensors."""
    # torch's order of checks: the indices' dtype, the shape's type, its entries, their signs
    if not _is_tensor(indices):
        indices = _C.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype == _C.bool:
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    if not isinstance(shape, (int, tuple, list, _C.Size)):  # (a bool is an int, as torch's)
        raise TypeError("expected 'shape' to be int or sequence of ints, but got "
                        f"{type(shape)}")
    if isinstance(shape, int):
        shape = (shape,)
    for d in shape:
        if not isinstance(d, int):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    total = math.prod(shape)
    indices = indices.to(_C.int64)  # (torch's coordinates are int64 whatever the indices' dtype)
    if bool(((indices < -total) | (indices >= total)).any()):
        raise ValueError(f"'indices' must be in range [{-total}, {total})")
    flat = indices.remainder(total) if total else indices
    coords = []
    for s in reversed(shape):
        coords.append(flat.remainder(s))
        flat = flat.div(s, rounding_mode="floor")
    return tuple(reversed(coords))


def numel(input) -> int:
    if not _is_tensor(input):
        raise TypeError(f"numel(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.numel()


def is_tensor(obj) -> bool:
    return isinstance(obj, _Tensor)


def is_storage(obj) -> bool:
    return type(obj).__name__ in ("UntypedStorage", "TypedStorage")


def _expect_tensor(name: str, input) -> None:
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def is_floating_point(input) -> bool:
    _expect_tensor("is_floating_point", input)
    return input.is_floating_point()


def is_signed(input) -> bool:
    _expect_tensor("is_signed", input)
    return input.is_signed()


# The plain functions `import ember` exports (the registry rows are bound by the core).
EXPORTS = ("cartesian_prod", "block_diag", "chain_matmul", "unravel_index", "numel",
           "is_tensor", "is_storage", "is_floating_point", "is_signed")


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The derivative of input sampled on a grid, one tensor per dim: central differences inside,
    one-sided ones (first or second order) at the edges, with uniform spacing (a number, or one
    per dim) or sample coordinates (one 1-d tensor per dim), as torch.gradient and NumPy's."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if not _is_tensor(input):
        raise TypeError(f"gradient(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype == _C.bool:  # (torch's differences: its messages for these dtypes)
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if input.dtype == _C.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    ndim = input.dim()
    dims = list(range(ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, ndim) for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError("torch.gradient: dims must be unique")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but got "
                               f"a spacing argument of length {len(spacing)} and a dim argument "
                               f"of length {len(dims)}.")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    if not dims:  # (a 0-d input: no dim to differentiate along, nothing computed)
        return ()
    _no_add_kernel(input)
    inexact = input.dtype.is_floating_point or input.dtype.is_complex
    f = input if inexact else input.to(_C.get_default_dtype())
    return tuple(_gradient_along(f, d, h, edge_order) for d, h in zip(dims, spacings))


def _gradient_along(f, d, h, edge_order):
    n = f.shape[d]

    def part(start, length):
        return f.narrow(d, start, length)

    def along(v):  # a 1-d tensor of coefficients shaped to broadcast along d
        shape = [1] * f.dim()
        shape[d] = v.shape[0]
        return v.reshape(shape)

    if _is_tensor(h):  # sample coordinates
        if h.dim() != 1 or h.shape[0] != n:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"and to have one dimension of the size of input's dim {d} ({n})"
                               f", but got spacing of size {list(h.shape)}")
        x = h.to(f.dtype)
        dx = x[1:] - x[:-1]
        dx1, dx2 = dx[:-1], dx[1:]
        a = -dx2 / (dx1 * (dx1 + dx2))
        b = (dx2 - dx1) / (dx1 * dx2)
        c = dx1 / (dx2 * (dx1 + dx2))
        inner = (along(a) * part(0, n - 2) + along(b) * part(1, n - 2)
                 + along(c) * part(2, n - 2)) if n > 2 else None
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / dx[0]
            last = (part(n - 1, 1) - part(n - 2, 1)) / dx[-1]
        else:
            d1, d2 = dx[0], dx[1]
            first = (-(2 * d1 + d2) / (d1 * (d1 + d2)) * part(0, 1)
                     + (d1 + d2) / (d1 * d2) * part(1, 1) - d1 / (d2 * (d1 + d2)) * part(2, 1))
            d1, d2 = dx[-2], dx[-1]
            last = (d2 / (d1 * (d1 + d2)) * part(n - 3, 1) - (d2 + d1) / (d1 * d2)
                    * part(n - 2, 1) + (2 * d2 + d1) / (d2 * (d1 + d2)) * part(n - 1, 1))
    else:  # uniform spacing h
        inner = (part(2, n - 2) - part(0, n - 2)) / (2 * h) if n > 2 else None
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / h
            last = (part(n - 1, 1) - part(n - 2, 1)) / h
        else:
            first = (-3 * part(0, 1) + 4 * part(1, 1) - part(2, 1)) / (2 * h)
            last = (3 * part(n - 1, 1) - 4 * part(n - 2, 1) + part(n - 3, 1)) / (2 * h)
    pieces = [first] + ([inner] if inner is not None else []) + [last]
    return _C.cat(pieces, d)


# ---- objects as tensors, sharing their memory where they can ----

def _numpy_dtype(dtype):
    """The NumPy dtype that holds `dtype`'s bits (bfloat16 as int16: NumPy has none)."""
    import numpy

    return numpy.dtype("int16") if dtype == _C.bfloat16 else numpy.dtype(dtype.name)


def _over_numpy(array, dtype):
    """A tensor over a NumPy array's memory, read as `dtype` (bfloat16 from int16 bits)."""
    t = _C.from_numpy(array)
    return t.view(_C.bfloat16) if dtype == _C.bfloat16 else t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor over an object that exposes the buffer protocol (bytes, bytearray,
    memoryview, array.array, mmap), sharing its memory: `count` elements of `dtype` from byte
    `offset` (count=-1: to the end). The tensor keeps the buffer alive; a read-only buffer gives
    a tensor that must not be written (torch's warning)."""
    import numpy

    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"frombuffer(): argument 'dtype' must be ember.dtype, not "
                        f"{type(dtype).__name__}")
    try:  # (a tensor too: ember's export the buffer protocol, torch's do not)
        if isinstance(buffer, _C.Tensor):
            raise TypeError
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length, size = view.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    array = numpy.frombuffer(view.cast("B") if view.format != "B" else view,
                             dtype=_numpy_dtype(dtype), count=count, offset=offset)
    with warnings.catch_warnings():  # said below in the buffer's terms, not the array's
        warnings.simplefilter("ignore", UserWarning)
        result = _over_numpy(array, dtype)
    if view.readonly:
        warnings.warn("The given buffer is not writable, and ember does not support non-writable "
                      "tensors. This means you can write to the underlying (supposedly "
                      "non-writable) buffer using the tensor. You may want to copy the buffer to "
                      "protect its data or make it writable before converting it to a tensor.",
                      UserWarning, stacklevel=2)
    return result.requires_grad_() if requires_grad else result


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor, as torch.asarray: a tensor, a NumPy array, a DLPack or buffer object is
    shared without a copy when dtype and device allow (copy=None), always copied (copy=True) or
    never (copy=False: ValueError when a copy is needed); sequences and numbers are copied."""
    import numpy

    from ember._device import device as device_class

    if device is None:  # ember.set_default_device's, if any (torch's asarray follows it too)
        device = _C._get_default_device()
    target = None if device is None else device_class(device) if not isinstance(
        device, device_class) else device
    if _is_tensor(obj):
        result = obj
    elif isinstance(obj, numpy.ndarray) or hasattr(obj, "__array_interface__"):
        array = numpy.asarray(obj)
        try:
            result = _C.from_numpy(array)
        except TypeError:  # a NumPy dtype ember has not: a copy through tensor()
            if copy is False:
                raise ValueError(f"can't alias NumPy array of dtype {array.dtype}") from None
            result, copy = _C.tensor(array), None
    elif hasattr(obj, "__dlpack__"):
        result = _C.from_dlpack(obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)) and dtype is not None:
        result = frombuffer(obj, dtype=dtype)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        result = _C.tensor(obj, dtype=dtype, device=target)
        return result.requires_grad_() if requires_grad else result
    wants_dtype = dtype is not None and dtype != result.dtype
    wants_device = target is not None and target != result.device
    if copy is False and wants_dtype:
        raise ValueError(f"can't alias tensor with dtype '{_dtype_name(result.dtype)}' into "
                         f"dtype '{_dtype_name(dtype)}'.")
    if copy is False and wants_device:
        raise ValueError(f"can't alias tensor on device '{result.device}' into device "
                         f"'{target}'.")
    if copy or wants_dtype or wants_device:
        result = result.to(device=target or result.device, dtype=dtype or result.dtype,
                           copy=bool(copy))
    return result.requires_grad_() if requires_grad and not result.requires_grad else result


# ---- randomized low-rank factorizations (Halko, Martinsson and Tropp, 2009) ----

def _range_basis(A, q, niter, M):
    """An orthonormal basis (m x q) of the dominant column space of A - M, by randomized subspace
    iteration (a Gaussian sketch, then `niter` power steps with re-orthonormalization)."""
    from ember import linalg

    def times(X):  # (A - M) X
        return A @ X if M is None else A @ X - M @ X

    def times_t(X):  # (A - M)^H X
        return A.mH @ X if M is None else A.mH @ X - M.mH @ X

    sketch = _C.randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = linalg.qr(times(sketch)).Q
    for _ in range(niter):
        Q = linalg.qr(times_t(Q)).Q
        Q = linalg.qr(times(Q)).Q
    return Q


def _svd_lowrank(A, q, niter, M):
    from ember import linalg

    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"svd_lowrank: expected a floating point tensor, got {A.dtype}")
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))
    wide = m < n
    if wide:  # work on the tall conjugate transpose: A^H = U S V^H gives A = V S U^H
        A = A.mH
        M = None if M is None else M.mH
    Q = _range_basis(A, q, niter, M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = linalg.svd(B, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if wide else (U, S, V)


def _check_matrix_arg(A, op):
    if not _is_tensor(A):
        raise TypeError(f"{op}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{op}(): A must have at least 2 dimensions, but got {A.dim()}")


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ~= U diag(S) V^H of rank q, by a randomized SVD (the sketch is
    drawn from the default generator, as torch's)."""
    _check_matrix_arg(A, "svd_lowrank")
    # (torch checks neither q nor niter here: a q beyond min(m, n) gives min(m, n) columns, the
    # sketch's randn refuses a q that is no int or is negative; pca_lowrank checks both)
    q = 6 if q is None else q
    # (torch's sketch, randn(n, q), refuses it before anything else; its size takes a
    # one-element integer tensor too)
    if _is_tensor(q) and q.numel() == 1 and not (q.dtype.is_floating_point or q.dtype.is_complex
                                                  or q.dtype == _C.bool):
        q = int(q.item())
    q = int(q) if isinstance(q, bool) else q  # (a bool is an int to torch's randn size)
    if not _is_int_arg(q):
        raise TypeError(f"svd_lowrank(): argument 'q' must be int, not {type(q).__name__}")
    return _svd_lowrank(A, q, 2 if niter is None else niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V), the principal directions of A's rows (centered when `center`), by
    svd_lowrank: A's covariance ~= V diag(S^2 / (m - 1)) V^T."""
    _check_matrix_arg(A, "pca_lowrank")
    m, n = A.shape[-2], A.shape[-1]
    q = _min(6, m, n) if q is None else q
    if not 0 <= q <= _min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={_min(m, n)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    mean = A.mean(-2, keepdim=True)
    return _svd_lowrank(A, q, niter, mean)


# ---- histograms over several dimensions ----

_histogramdd_result = collections.namedtuple("histogramdd", ["hist", "bin_edges"])


_HISTOGRAMDD_SIGNATURES = (
    "(Tensor input, int bins, tuple of floats range = None, Tensor weight = None, bool density = "
    "False), (Tensor input, tuple of ints bins, tuple of floats range = None, Tensor weight = "
    "None, bool density = False), (Tensor input, tuple of Tensors bins, tuple of floats range = "
    "None, Tensor weight = None, bool density = False)")


def _histogramdd_bins_kind(input, bins, range, weight, density):  # noqa: A002
    """"int", "ints" or "tensors", the overload torch's parser picks; a TypeError for none."""
    kind = None
    if isinstance(bins, int) and not isinstance(bins, bool):
        kind = "int"
    elif isinstance(bins, (list, tuple)):
        if bins and all(_is_tensor(b) for b in bins):
            kind = "tensors"
        elif all(isinstance(b, int) for b in bins):
            kind = "ints"
    ok = (kind is not None and _is_tensor(input)
          and (range is None or (isinstance(range, (list, tuple))
                                 and all(isinstance(v, (int, float)) for v in range)))
          and (weight is None or _is_tensor(weight)) and isinstance(density, bool))
    if not ok:
        got = ", ".join([type(input).__name__, type(bins).__name__])
        raise TypeError(f"histogramdd() received an invalid combination of arguments - got "
                        f"({got}), but expected one of: {_HISTOGRAMDD_SIGNATURES}")
    return kind


def _histogramdd_check_weight(input, weight):  # noqa: A002
    if weight is None:
        return
    if weight.dtype != input.dtype:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and "
                           f"weight tensor should have the same dtype, but got input("
                           f"{input.dtype._cpp_name}), and weight({weight.dtype._cpp_name})")
    if list(weight.shape or [1]) != list(input.shape[:-1]):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the "
                           "same shape as the input tensor excluding its innermost dimension, but "
                           f"got input with shape {list(input.shape)} and weight with shape "
                           f"{list(weight.shape)}")


def histogramdd(input, bins, range=None, weight=None, density=False):  # noqa: A002
    """The histogram of the points input[..., :] (the last dim holds each point's D coordinates)
    on a grid of bins: ``bins`` an int, one int per dim, or one tensor of edges per dim;
    ``range`` the (min, max) pairs flattened (default: the data's, widened by 0.5 each way when
    they are equal). Bins are closed on the left, the last one on both sides (NumPy's).
    The checks come in torch's order: the input's rank, the bins, the range, the edges in the
    input's dtype, the weight, the bin counts, then the dtype of the counting kernel."""
    kind = _histogramdd_bins_kind(input, bins, range, weight, density)
    if kind == "int":
        if input.dim() == 0:
            raise IndexError("Dimension specified as -1 but tensor has no dimensions")
        bins = [bins] * input.shape[-1]
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    D = input.shape[-1]
    points = input.reshape(-1, D)
    floating = input.dtype.is_floating_point
    if kind == "tensors":
        if len(bins) != D:
            raise RuntimeError(f"torch.histogramdd: expected {D} sequences of bin edges for a {D}"
                               f"-dimensional histogram but got {len(bins)}")
        for d, b in enumerate(bins):
            if b.dtype != input.dtype:
                raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have "
                                   f"the same dtype, but got input with dtype "
                                   f"{input.dtype._cpp_name} and bins for dimension {d} with "
                                   f"dtype {b.dtype._cpp_name}")
            if b.dim() != 1:
                raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but "
                                   f"got {b.dim()} dimensions in the bins tensor for dimension {d}")
            if b.numel() == 0:
                raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, "
                                   f"but got 0 elements in the bins tensor for dimension {d}")
        _histogramdd_check_weight(input, weight)
        bin_edges = list(bins)
    else:
        if len(bins) != D:
            raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                               "dimension of the input.")
        if range is not None and len(range) != 2 * D:
            raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should "
                               f"have {2 * D} elements, but got {len(range)}")
        if range is None and points.shape[0] and input.dtype not in (_C.float32, _C.float64):
            raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                      f"'{_dtype_name(input.dtype)}'")
        ends = []
        for d in builtins.range(D):
            if range is not None:
                lo, hi = float(range[2 * d]), float(range[2 * d + 1])
            elif points.shape[0]:
                lo, hi = float(points[:, d].min()), float(points[:, d].max())
            else:
                lo, hi = 0.0, 1.0
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo:g}, {hi:g}] "
                                   "is not finite")
            if lo > hi:
                raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                                   f"{lo:g} max {hi:g} for dimension {d}")
            ends.append((lo - 0.5, hi + 0.5) if lo == hi else (lo, hi))
        bin_edges = []
        for (lo, hi), b in zip(ends, bins):
            steps = int(b) + 1
            if steps >= 2 and input.dtype == _C.bool:
                raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
            for v in (lo, hi)[:builtins.max(0, builtins.min(steps, 2))]:
                _C.full([], v, dtype=input.dtype)  # torch's linspace: an end the dtype can't hold
            bin_edges.append(_C.linspace(lo, hi, steps, dtype=input.dtype if floating
                                         else _C.float64, device=input.device))
        for d, e in enumerate(bin_edges):
            if e.numel() == 0:
                raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, "
                                   f"but got 0 elements in the bins tensor for dimension {d}")
        _histogramdd_check_weight(input, weight)
    for d, e in enumerate(bin_edges):
        if e.numel() - 1 <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {e.numel() - 1} "
                               f"for dimension {d}")
    if not floating:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{_dtype_name(input.dtype)}'")
    edges, index, valid = [], None, None
    sizes = []
    for d, e in enumerate(bin_edges):
        column = points[:, d]
        n = e.shape[0] - 1
        i = _C.bucketize(column, e, right=True) - 1
        i = _C.where(column == e[-1], _C.full([], n - 1, dtype=i.dtype, device=i.device), i)
        ok = (i >= 0) & (i < n)
        index = i if index is None else index * n + i
        valid = ok if valid is None else valid & ok
        edges.append(e)
        sizes.append(n)
    total = 1
    for n in sizes:
        total *= n
    w = None if weight is None else weight.reshape(-1)[valid]
    hist = _C.bincount(index[valid], weights=w, minlength=total).to(input.dtype)
    hist = hist.reshape(tuple(sizes))
    if density:
        volume = None
        for d, e in enumerate(edges):
            shape = [1] * D
            shape[d] = sizes[d]
            width = (e[1:] - e[:-1]).reshape(shape)
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return _histogramdd_result(hist, tuple(edges))

