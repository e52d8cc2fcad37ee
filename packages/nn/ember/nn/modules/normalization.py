"""BatchNorm1d/2d/3d (core kernel), LayerNorm (core kernel), GroupNorm, InstanceNorm1d/2d/3d,
RMSNorm, LocalResponseNorm (composed)."""

from __future__ import annotations

import ember

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _affine_params(module, affine, shape, bias, dtype, device=None):
    """Registers ``weight`` and ``bias`` (``bias`` None when not wanted; both None when not
    ``affine``), uninitialised: ``_reset_affine`` fills them."""
    if affine:
        module.weight = Parameter(ember.empty(shape, dtype=dtype, device=device))
        if bias:
            module.bias = Parameter(ember.empty(shape, dtype=dtype, device=device))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module, affine):
    """weight = 1, bias = 0 (torch's initial affine transform of a norm: the identity)."""
    if affine:
        init.ones_(module.weight)
        if module.bias is not None:
            init.zeros_(module.bias)


class _NormBase(Module):
    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_params(self, affine, num_features, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, dtype=dtype,
                                                             device=device))
            self.register_buffer("running_var", ember.ones(num_features, dtype=dtype,
                                                           device=device))
            self.register_buffer("num_batches_tracked", ember.tensor(0, dtype=ember.int64,
                                                                     device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self, self.affine)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
                "bias={use_bias}, track_running_stats={track_running_stats}".format(
                    **self.__dict__, use_bias=self.bias is not None))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = ember.tensor(0, dtype=ember.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        eaf = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                eaf = 1.0 / float(self.num_batches_tracked)
            else:
                eaf = self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias,
                            bn_training, eaf, self.eps)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    _k = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input):
        k = self._k
        if input.dim() not in (k + 1, k + 2):
            raise ValueError(f"expected {k + 1}D or {k + 2}D input (got {input.dim()}D input)")
        unbatched = input.dim() == k + 1
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features "
                             f"({self.num_features}), but got: {x.shape[1]}.")
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, self.momentum
                              if self.momentum is not None else 0.1, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    _k = 1


class InstanceNorm2d(_InstanceNorm):
    _k = 2


class InstanceNorm3d(_InstanceNorm):
    _k = 3


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_params(self, elementwise_affine, self.normalized_shape, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self, self.elementwise_affine)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return ("{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, "
                "bias={b}".format(**self.__dict__, b=self.bias is not None))


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_params(self, affine, num_channels, bias, dtype, device)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self, self.affine)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}, bias={b}".format(
            **self.__dict__, b=self.bias is not None)


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ember.ones(self.normalized_shape, dtype=dtype,
                                               device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return ("{normalized_shape}, eps={eps}, "
                "elementwise_affine={elementwise_affine}".format(**self.__dict__))


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


class CrossMapLRN2d(Module):
    """torch's legacy (Lua torch) cross-channel LRN of 4-D input: ``x * (k + alpha / size *
    sum of x^2 over neighbouring channels) ** -beta``, with torch's exact windows (channel 0's
    square stays in every sum, as in torch's running-sum code) and torch's own backward."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        return _cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


def _channel_matrix(channels, include, input):
    rows = [[1.0 if include(c, j) else 0.0 for j in range(channels)] for c in range(channels)]
    return ember.tensor(rows, dtype=input.dtype, device=input.device)


def _mix_channels(t, matrix):
    """``out[:, c] = sum_j matrix[c, j] * t[:, j]`` for (N, C, H, W) tensors."""
    return (t.permute(0, 2, 3, 1) @ matrix.t()).permute(0, 3, 1, 2)


def _cross_map_lrn2d(input, size, alpha, beta, k):
    from ember.autograd import Function

    channels = input.shape[1]
    pre_pad = int((size - 1) / 2 + 1)
    inverse_pre_pad = int(size - (size - 1) / 2)
    # forward windows: channel c sums squares j <= c + pre_pad - 1 and j >= c - pre_pad + 1,
    # plus channel 0 always; backward windows: c - inverse_pre_pad <= j <= that + size - 1
    fwd = _channel_matrix(channels, lambda c, j: j <= c + pre_pad - 1
                          and (j == 0 or j >= c - pre_pad + 1), input)
    bwd = _channel_matrix(channels, lambda c, j: c - inverse_pre_pad <= j
                          <= c - inverse_pre_pad + size - 1, input)

    class _CrossMapLRN2d(Function):
        @staticmethod
        def forward(ctx, x):
            scale = _mix_channels(x * x, fwd) * (alpha / size) + k
            out = scale.pow(-beta) * x
            ctx.save_for_backward(x, out, scale)
            return out

        @staticmethod
        def backward(ctx, grad_output):
            x, out, scale = ctx.saved_tensors
            ratio = grad_output * out / scale
            accum = _mix_channels(ratio, bwd)
            return scale.pow(-beta) * grad_output - x * accum * (2 * alpha * beta / size)

    return _CrossMapLRN2d.apply(input)
