"""``ember.nn.init``: torch.nn.init's initialisers. They draw from ember's generator in the same
order and with the same calls as torch, so with a torch-compatible RNG and the same seed the
weights are the same (see tests/test_init.py)."""

from __future__ import annotations

import math
import warnings

import ember


def calculate_gain(nonlinearity, param=None):
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with ember.no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with ember.no_grad():
        return tensor.normal_(mean, std)


def constant_(tensor, val):
    with ember.no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with ember.no_grad():
        return tensor.zero_()


def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with ember.no_grad():
        return tensor.copy_(ember.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype,
                                      device=tensor.device))


def dirac_(tensor, groups=1):
    dimensions = tensor.dim()
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    with ember.no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min_dim):
                idx = (g * out_chans_per_grp + d, d) + tuple(s // 2 for s in sizes[2:])
                tensor[idx] = 1
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills `tensor` from Normal(mean, std) truncated to [a, b], as torch 2.13 draws it (the
    same calls on the generator in the same order, so the same seed gives torch's numbers):

    - when [a, b] holds more than 30% of the mass: normal_, then every value outside the bounds
      (the bounds rounded to the tensor's dtype) redrawn from a fresh full-size normal_ draw
      until none is left;
    - otherwise, rejection from the uniform on [a, b]: a candidate x is kept when
      log(u) <= -((x - mean) / std)^2 / 2 - log_peak (u uniform, log_peak the density's
      logarithm at the mode within [a, b]), rejected ones redrawn together until none is left.

    (Older torch releases drew it by inverse CDF: uniform_, erfinv_, scale, clamp_.)
    """

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    with ember.no_grad():
        mass = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if mass > 0.3:
            lo = ember.tensor(a, dtype=tensor.dtype).item()
            hi = ember.tensor(b, dtype=tensor.dtype).item()
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                outside = (result < lo) | (result > hi)
                if not outside.any():
                    break
                fresh = ember.empty_like(result).normal_(mean, std, generator=generator)
                result = ember.where(outside, fresh, result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor

        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def log_density(x):  # relative to the peak, in place
            return x.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)

        candidates, accept = ember.empty_like(tensor), ember.empty_like(tensor)
        tensor.uniform_(a, b, generator=generator)
        log_density(candidates.copy_(tensor))
        pending = accept.uniform_(generator=generator).log_().gt(candidates)
        if pending.any():
            result = tensor
            while True:
                candidates.uniform_(a, b, generator=generator)
                result = ember.where(pending, candidates, result)
                log_density(candidates)
                retry = accept.uniform_(generator=generator).log_().gt(candidates)
                pending = ember.where(pending, retry, pending)
                if not pending.any():
                    break
            tensor.copy_(result)
        return tensor


def orthogonal_(tensor, gain=1, generator=None):
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    # QR runs on the CPU (LAPACK; an initialiser runs once) and the result is copied to the
    # tensor's device. CUDA random numbers are drawn on the CPU anyway, so the values are the same.
    flattened = ember.empty(rows, cols, dtype=tensor.dtype).normal_(0, 1)
    if rows < cols:
        flattened = flattened.t()
    q, r = ember.linalg.qr(flattened)
    d = r.diagonal()
    q = q * d.sign()
    if rows < cols:
        q = q.t()
    with ember.no_grad():
        tensor.copy_(q.reshape(tuple(tensor.shape)) * gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with ember.no_grad():
        tensor.normal_(0, std)
        for c in range(cols):
            perm = ember.randperm(rows)[:num_zeros]
            for r in perm.tolist():
                tensor[r, c] = 0
    return tensor


def _make_deprecate(meth):
    """torch's pre-underscore name of ``meth``: the same initialiser, with a FutureWarning."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__name__ = old_name
    deprecated_init.__doc__ = f"Deprecated: use :func:`{new_name}`."
    return deprecated_init


# the pre-underscore (deprecated) names torch still has
uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
