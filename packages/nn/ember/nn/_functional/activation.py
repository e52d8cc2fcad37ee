"""Activations, the softmax family and gumbel_softmax: composed from core ops (softmax and
log_softmax are core kernels); gelu, silu, the elu family, softplus, mish, hardsigmoid and
hardswish are recorded as one graph node each, whose gradient formula (ember.autograd's table)
reads only the saved input, as torch's do."""

from __future__ import annotations

import math

import ember
from ember import _C
from ember._checks import scalar_fits
from ember._composite_ops._common import _floating_kernel
from ember._shape import _one_node

# ---------------------------------------------------------------------------------------------
# activations

def relu(input, inplace=False):
    return input.relu_() if inplace else ember.relu(input)


def relu_(input):
    return input.relu_()


def threshold(input, threshold, value, inplace=False):
    if inplace:
        return ember.threshold_(input, threshold, value)
    return ember.threshold(input, threshold, value)  # the core's (torch.threshold)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    # One pass each way: the core's hardtanh kernels, whose gradient (torch's HardtanhBackward0)
    # is 0 at the bounds themselves and passes NaN's, as clamp's would not.
    if inplace:
        return _C.hardtanh_(input, min_val, max_val)
    return _C.hardtanh(input, min_val, max_val)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _floating_kernel("leaky_relu", input)
    scalar_fits(negative_slope, input.dtype, opmath=True)
    out = ember.where(input > 0, input, input * negative_slope)
    return input.copy_(out) if inplace else out


def prelu(input, weight):
    return input.prelu(weight)  # the core's composition (Tensor.prelu)


def elu(input, alpha=1.0, inplace=False):
    out = _elu(input, alpha, 1.0, 1.0)
    return input.copy_(out) if inplace else out


def _elu(input, alpha, scale, input_scale, name="elu"):
    """torch's elu kernel (selu and celu are elus): x * scale for x > 0, else
    expm1(x * input_scale) * alpha * scale; one graph node (EluBackward0, CeluBackward0 for celu)
    saving the input."""
    _floating_kernel("elu", input)  # torch's one kernel for the three
    for v in (alpha, scale, input_scale):
        scalar_fits(v, input.dtype, opmath=True)
    return _one_node(name, _elu_values, input.requires_grad, input, alpha, scale, input_scale)


def _elu_values(input, alpha, scale, input_scale):
    neg = input.clamp(max=0)
    if input_scale != 1.0:
        neg = neg * input_scale
    # (x >= 0: at a zero torch's kernel gives x * scale whatever alpha is, NaN and inf too)
    return ember.where(input >= 0, input * scale if scale != 1.0 else input,
                       neg.expm1() * (alpha * scale))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    out = _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0)
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    _floating_kernel("elu", input)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    out = _elu(input, alpha, 1.0, 1.0 / alpha, "celu")
    return input.copy_(out) if inplace else out


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError(
            f"approximate argument must be either none or tanh, got {approximate}")
    # one graph node (GeluBackward0) that saves only the input, as torch's: recorded op by op,
    # the composition kept four tensors of the input's size for backward. On the CPU the core's
    # one-pass kernel (vectorised erf/tanh), elsewhere the composition.
    if input.is_cuda:
        return _one_node("gelu", _gelu_values, input.requires_grad, input, approximate)
    return ember._C.gelu(input, approximate=approximate)


def _gelu_values(input, approximate):
    if approximate == "none":
        return input * 0.5 * (1.0 + (input * (1.0 / math.sqrt(2.0))).erf())
    inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
    return input * 0.5 * (1.0 + inner.tanh())


def silu(input, inplace=False):
    # one node (SiluBackward0) saving the input, as torch's (the product kept x and sigmoid(x))
    out = _one_node("silu", _silu_values, input.requires_grad, input)
    return input.copy_(out) if inplace else out


def _silu_values(input):
    return input * input.sigmoid()


def _log1p_exp(z):
    """log(1 + exp(z)) without overflow; each where-branch only sees inputs where it is finite,
    so the gradient never meets inf * 0, and it is exactly 1/2 at 0."""
    pos = z > 0
    zp = ember.where(pos, z, 0.0)
    zn = ember.where(pos, 0.0, z)
    return ember.where(pos, zp + (-zp).exp().log1p(), zn.exp().log1p())


def softplus(input, beta=1.0, threshold=20.0):
    scalar_fits(beta, input.dtype, opmath=True)
    scalar_fits(threshold, input.dtype, opmath=True)
    return _one_node("softplus", _softplus_values, input.requires_grad, input, beta, threshold)


def _softplus_values(input, beta, threshold):
    z = input * beta
    soft = _log1p_exp(z) / beta
    return ember.where(z > threshold, input, soft)


# mish, hardsigmoid and hardswish: one node each saving the input, as torch's
def mish(input, inplace=False):
    out = _one_node("mish", _mish_values, input.requires_grad, input)
    return input.copy_(out) if inplace else out


def _mish_values(input):
    return input * _softplus_values(input, 1.0, 20.0).tanh()


def hardsigmoid(input, inplace=False):
    out = _one_node("hardsigmoid", _hardsigmoid_values, input.requires_grad, input)
    return input.copy_(out) if inplace else out


def _hardsigmoid_values(input):
    return (input / 6.0 + 0.5).clamp(0.0, 1.0)


def hardswish(input, inplace=False):
    out = _one_node("hardswish", _hardswish_values, input.requires_grad, input)
    return input.copy_(out) if inplace else out


def _hardswish_values(input):
    return input * (input + 3.0).clamp(0.0, 6.0) / 6.0


def softsign(input):
    return input / (input.abs() + 1)


def logsigmoid(input):
    return -softplus(-input)


def tanhshrink(input):
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    _floating_kernel("softshrink_check", input, device_suffix=False)
    largest = ember.finfo(input.dtype).max
    if not 0 <= lambd <= largest:
        raise RuntimeError(f"lambda must be in range [0, {largest:g}] for input dtype "
                           f"{input.dtype._torch_name}, but found {lambd:g}")
    return ember.where(input > lambd, input - lambd, ember.where(input < -lambd, input + lambd,
                                                                 0.0))


def hardshrink(input, lambd=0.5):
    return ember.hardshrink(input, lambd)  # the core's (torch.hardshrink)


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def glu(input, dim=-1):
    if input.shape[dim] % 2 != 0:
        raise RuntimeError("Halving dimension must be even, but dimension "
                           f"{dim % input.dim()} is size {input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    gumbels = -ember.empty(tuple(logits.shape), dtype=logits.dtype,
                           device=logits.device).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    d = dim % logits.dim()
    ar = ember.arange(logits.shape[d], device=logits.device)
    ar = ar.reshape((-1,) + (1,) * (logits.dim() - d - 1))
    y_hard = (ar == index).to(logits.dtype)
    return y_hard - y_soft.detach() + y_soft  # straight-through


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return ember.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return ember.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    scalar_fits(lower, input.dtype, opmath=True)
    scalar_fits(upper, input.dtype, opmath=True)
    if training:
        slope = ember.empty(tuple(input.shape), dtype=input.dtype,
                            device=input.device).uniform_(lower, upper)
    else:
        slope = (lower + upper) / 2
    out = ember.where(input >= 0, input, input * slope)
    return input.copy_(out) if inplace else out


# torch.nn.functional's in-place forms (torch._C._nn's `<name>_`, F.elu_ ...): the activation
# with inplace=True, torch's defaults
def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)
