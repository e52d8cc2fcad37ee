"""torch.nn.grad: the gradients of a convolution with respect to its input and its weight,
given the output's gradient (computed by autograd through ember's conv, which is linear in
each argument)."""

from __future__ import annotations

import ember
import ember.autograd  # noqa: F401  (ember.autograd.grad)

from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _input_grad(k, input_size, weight, grad_output, stride, padding, dilation, groups):
    x = ember.zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device,
                    requires_grad=True)
    with ember.enable_grad():
        out = getattr(F, f"conv{k}d")(x, weight.detach(), None, stride, padding, dilation,
                                      groups)
        return ember.autograd.grad(out, x, grad_output)[0]


def _weight_grad(k, input, weight_size, grad_output, stride, padding, dilation, groups):
    w = ember.zeros(tuple(weight_size), dtype=grad_output.dtype, device=grad_output.device,
                    requires_grad=True)
    with ember.enable_grad():
        out = getattr(F, f"conv{k}d")(input.detach(), w, None, stride, padding, dilation,
                                      groups)
        return ember.autograd.grad(out, w, grad_output)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
