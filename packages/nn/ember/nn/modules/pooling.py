"""Pooling modules over the core's pooling kernels."""

from __future__ import annotations

from .. import functional as F
from .module import Module


class _MaxPoolNd(Module):
    _k = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, "
                "dilation={dilation}, ceil_mode={ceil_mode}").format(**self.__dict__)

    def forward(self, input):
        return getattr(F, f"max_pool{self._k}d")(input, self.kernel_size, self.stride,
                                                 self.padding, self.dilation, self.ceil_mode,
                                                 self.return_indices)


class MaxPool1d(_MaxPoolNd):
    _k = 1


class MaxPool2d(_MaxPoolNd):
    _k = 2


class MaxPool3d(_MaxPoolNd):
    _k = 3


class _AvgPoolNd(Module):
    _k = 2

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        fn = getattr(F, f"avg_pool{self._k}d")
        if self._k == 1:
            return fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                      self.count_include_pad)
        return fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                  self.count_include_pad, self.divisor_override)


class AvgPool1d(_AvgPoolNd):
    _k = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.kernel_size = _one(kernel_size)
        self.stride = _one(self.stride)
        self.padding = _one(padding)


def _one(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class AvgPool2d(_AvgPoolNd):
    _k = 2


class AvgPool3d(_AvgPoolNd):
    _k = 3


class _AdaptiveAvgPoolNd(Module):
    _k = 2

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return getattr(F, f"adaptive_avg_pool{self._k}d")(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _k = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _k = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _k = 3


class _AdaptiveMaxPoolNd(Module):
    _k = 2

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return getattr(F, f"adaptive_max_pool{self._k}d")(input, self.output_size,
                                                          self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _k = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _k = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _k = 3


class _MaxUnpoolNd(Module):
    _k = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        k = self._k
        self.kernel_size = _tuple(kernel_size, k)
        self.stride = _tuple(stride if stride is not None else kernel_size, k)
        self.padding = _tuple(padding, k)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input, indices, output_size=None):
        return getattr(F, f"max_unpool{self._k}d")(input, indices, self.kernel_size,
                                                   self.stride, self.padding, output_size)


def _tuple(x, k):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,) * k


class MaxUnpool1d(_MaxUnpoolNd):
    _k = 1


class MaxUnpool2d(_MaxUnpoolNd):
    _k = 2


class MaxUnpool3d(_MaxUnpoolNd):
    _k = 3


class _FractionalMaxPoolNd(Module):
    _k = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        k, name = self._k, type(self).__name__
        self.kernel_size = _tuple(kernel_size, k)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, k) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, k) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return getattr(F, f"fractional_max_pool{self._k}d")(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max pooling over pseudo-random, overlapping windows (Graham, fractional max-pooling)."""

    _k = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """The 3-d form of FractionalMaxPool2d."""

    _k = 3


# torch defines these in this module; ember in ``extra`` (which imports this one), so they are
# found here on first access
_ELSEWHERE = ("LPPool1d", "LPPool2d", "LPPool3d")


def __getattr__(name):
    if name in _ELSEWHERE:
        from . import extra

        return getattr(extra, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
