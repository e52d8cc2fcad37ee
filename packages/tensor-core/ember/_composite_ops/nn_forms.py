"""torch's top-level forms of nn functions: hardshrink, selu, celu, threshold, prelu,
cosine_similarity, the distances (pairwise_distance, pdist, cdist), and the complex
convolutions the core's conv rows hand here."""

from __future__ import annotations

import math

from ember import _C, _grad_mode, _shape
from ember._checks import scalar_fits
from ember._composite_ops._common import (
    _SHELL_UNSIGNED,
    _dtype_name,
    _finish_cast,
    _finish_same_dtype,
    _floating_kernel,
    _refuse_complex,
)


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


def _complex_convolution(convolve, input, weight, bias, *options):
    """conv1d-3d and conv_transpose1d-3d of a complex input (the core's rows hand it here), as
    torch's complex_convolution: with Gauss's trick, three real convolutions of the parts rather
    than four, a = conv(xr, wr, br), b = conv(xi, wi), c = conv(xr + xi, wr + wi, br + bi), and
    the result a - b + i (c - a - b). ``convolve`` is the real form itself, so padding strings,
    checks and gradients are its."""
    for role, tensor in (("weight", weight), ("bias", bias)):
        if tensor is not None and tensor.dtype != input.dtype:
            raise RuntimeError(f"Input type ({_dtype_name(input.dtype)}) and {role} type "
                               f"({_dtype_name(tensor.dtype)}) should be the same")
    xr, xi, wr, wi = input.real, input.imag, weight.real, weight.imag
    a = convolve(xr, wr, None if bias is None else bias.real, *options)
    b = convolve(xi, wi, None, *options)
    c = convolve(xr + xi, wr + wi, None if bias is None else bias.real + bias.imag, *options)
    return a - b + 1j * (c - a - b)  # torch's arithmetic: 0 * inf makes the real part NaN


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
    if not p >= 0:  # (NaN too)
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
    if input.dtype in (_C.float16, _C.bfloat16):  # (torch's opmath: x / alpha in float32)
        return celu(input.float(), alpha).to(input.dtype)
    return _C.where(input >= 0, input, alpha * _C.expm1(input / alpha))


def celu_(self, alpha=1.0):
    return self.copy_(celu(self, alpha))


_NO_THRESHOLD_KERNEL = (_C.bool, *_SHELL_UNSIGNED)


def _threshold(input, threshold, value):
    if input.dtype in _NO_THRESHOLD_KERNEL or input.dtype.is_complex:
        _floating_kernel("threshold", input)
    # torch's kernel reads the threshold in the compute type and the value in the dtype
    scalar_fits(threshold, input.dtype, opmath=True)
    scalar_fits(value, input.dtype)
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
    if not eps >= 0:  # (torch's, before the shapes; NaN too)
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
    if not p >= 0:  # (NaN too)
        raise RuntimeError("pdist only supports non-negative p values")
    if input.dtype in (_C.float16, _C.bfloat16):  # (torch's kernel: float32 and float64)
        raise NotImplementedError(f"\"pdist\" not implemented for '{input.dtype._torch_name}'")
    n = input.shape[0]
    if n < 2:
        return input.new_empty((0,))
    rows, cols = _C.triu_indices(n, n, 1, device=input.device)
    return _distance_last(input[rows] - input[cols], p)
