"""Convolutions (core kernels) and unfold/fold, written as grouped convolutions with one-hot
filters so that they run on the conv kernels and have their gradients."""

from __future__ import annotations

import math

import ember

from .common import _ntuple

# ---------------------------------------------------------------------------------------------
# convolution (core kernels)

conv1d = ember.conv1d
conv2d = ember.conv2d
conv3d = ember.conv3d
conv_transpose1d = ember.conv_transpose1d
conv_transpose2d = ember.conv_transpose2d
conv_transpose3d = ember.conv_transpose3d


def _eye_kernel(channels, kernel_size, dtype, device):
    k = int(math.prod(kernel_size))
    w = ember.eye(k, dtype=dtype, device=device).reshape((k, 1) + tuple(kernel_size))
    return w.repeat(channels, 1, 1, 1) if channels > 1 else w


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), written as a grouped convolution with one-hot
    filters so that it runs on the conv kernel and has its gradient."""
    if input.dim() not in (3, 4):
        raise NotImplementedError("Input Error: Only 3D or 4D input Tensors are supported "
                                  f"(got {input.dim()}D)")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    ks = _ntuple(kernel_size, 2)
    c = x.shape[1]
    w = _eye_kernel(1, ks, x.dtype, x.device)
    w = ember.cat([w] * c, 0) if c > 1 else w
    out = ember.conv2d(x, w, None, _ntuple(stride, 2), _ntuple(padding, 2), _ntuple(dilation, 2),
                       c)
    out = out.flatten(2)
    return out if batched else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of unfold: (N, C*kh*kw, L) -> (N, C, H, W)."""
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    ks, st, pd, dl = (_ntuple(v, 2) for v in (kernel_size, stride, padding, dilation))
    os_ = _ntuple(output_size, 2)
    k = ks[0] * ks[1]
    if x.shape[1] % k != 0:
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={ks}")
    c = x.shape[1] // k
    blocks = [(os_[i] + 2 * pd[i] - dl[i] * (ks[i] - 1) - 1) // st[i] + 1 for i in range(2)]
    if blocks[0] * blocks[1] != x.shape[2]:
        raise RuntimeError(f"Given output_size={os_}, kernel_size={ks}, dilation={dl}, "
                           f"padding={pd}, stride={st}, expected size of input's dimension 2 "
                           f"to match the calculated number of sliding blocks "
                           f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    cols = x.reshape(x.shape[0], c * k, blocks[0], blocks[1])
    w = _eye_kernel(1, ks, x.dtype, x.device)
    w = ember.cat([w] * c, 0) if c > 1 else w
    natural = [(blocks[i] - 1) * st[i] - 2 * pd[i] + dl[i] * (ks[i] - 1) + 1 for i in range(2)]
    opad = [os_[i] - natural[i] for i in range(2)]
    out = ember.conv_transpose2d(cols, w, None, st, pd, opad, c, dl)
    return out if batched else out.squeeze(0)


def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution in time-batch-channel layout: ``input`` (T, B, C_in), ``weight``
    (K, C_in, C_out), ``bias`` (C_out,) -> (T + 2 * pad - K + 1, B, C_out)."""
    if input.dim() != 3:
        raise RuntimeError(f"Input must have 3 dims: time, batch, in_channel (got "
                           f"{input.dim()})")
    if weight.dim() != 3:
        raise RuntimeError(f"Weight tensor must have 3 dims: kernel_width, in_channels, "
                           f"out_channels (got {weight.dim()})")
    if bias.dim() != 1:
        raise RuntimeError(f"Bias must be 1-D (got {bias.dim()})")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)
