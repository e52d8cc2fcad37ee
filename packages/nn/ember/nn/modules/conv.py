"""Conv1d/2d/3d and ConvTranspose1d/2d/3d over the core's convolution kernel."""

from __future__ import annotations

import math

import ember

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _ntuple(x, n):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,) * n


class _ConvNd(Module):
    _k = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", output_padding=0, device=None,
                 dtype=None):
        super().__init__()
        k = self._k
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, k)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, k)
        self.stride = _ntuple(stride, k)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, k)
        self.dilation = _ntuple(dilation, k)
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, k)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * k
            if padding == "same":
                for d, ks, i in zip(self.dilation, self.kernel_size, range(k - 1, -1, -1)):
                    total = d * (ks - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding)
                                                     for _ in range(2)]
        if self.transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(ember.empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(ember.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__, bias=self.bias)

    def _conv_forward(self, input, weight, bias):
        fn = getattr(F, f"conv{self._k}d")
        if self.padding_mode != "zeros":
            return fn(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                      weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    _k = 1


class Conv2d(_ConvNd):
    _k = 2


class Conv3d(_ConvNd):
    _k = 3


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, device, dtype)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        k = self._k
        output_size = list(output_size)[-k:]
        spatial = tuple(input.shape[-k:])
        res = []
        for d in range(k):
            min_size = ((spatial[d] - 1) * self.stride[d] - 2 * self.padding[d] +
                        self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            max_size = min_size + self.stride[d] - 1
            if not (min_size <= output_size[d] <= max_size):
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_size} to {max_size} (for an input of "
                                 f"{list(spatial)})")
            res.append(output_size[d] - min_size)
        return tuple(res)

    def forward(self, input, output_size=None):
        opad = self._output_padding(input, output_size)
        fn = getattr(F, f"conv_transpose{self._k}d")
        return fn(input, self.weight, self.bias, self.stride, self.padding, opad, self.groups,
                  self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _k = 1


class ConvTranspose2d(_ConvTransposeNd):
    _k = 2


class ConvTranspose3d(_ConvTransposeNd):
    _k = 3


# torch defines these in this module; ember in ``lazy`` (which imports this one), so they are
# found here on first access
_ELSEWHERE = ("LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
              "LazyConvTranspose2d", "LazyConvTranspose3d")


def __getattr__(name):
    if name in _ELSEWHERE:
        from . import lazy

        return getattr(lazy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
