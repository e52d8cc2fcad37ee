"""``ember.nn.functional``: torch.nn.functional's names over ember's core ops.

Fused core kernels: conv*, *pool*, nll_loss, batch_norm/layer_norm (native_*), embedding,
softmax/log_softmax. Everything else is composed from core ops and is differentiable through its
parts (no gradient entries of its own).
"""

from __future__ import annotations

import math

import ember
from ember._padding import pad  # noqa: F401  (re-exported: F.pad)

# ---------------------------------------------------------------------------------------------
# helpers


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _ntuple(x, n):
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,) * n


# ---------------------------------------------------------------------------------------------
# linear

def linear(input, weight, bias=None):
    if input.dim() == 2 and bias is not None:
        return ember.addmm(bias, input, weight.t())
    out = input.matmul(weight.t())
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError("bilinear(): input batch dimensions do not match: got "
                           f"{tuple(input1.shape[:-1])} and {tuple(input2.shape[:-1])}")
    lead = tuple(input1.shape[:-1])
    a = input1.reshape(-1, input1.shape[-1])
    b = input2.reshape(-1, input2.shape[-1])
    out = ember.einsum("bi,oij,bj->bo", a, weight, b)
    if bias is not None:
        out = out + bias
    return out.reshape(lead + (weight.shape[0],))


# ---------------------------------------------------------------------------------------------
# convolution and pooling (core kernels)

conv1d = ember.conv1d
conv2d = ember.conv2d
conv3d = ember.conv3d
conv_transpose1d = ember.conv_transpose1d
conv_transpose2d = ember.conv_transpose2d
conv_transpose3d = ember.conv_transpose3d
avg_pool1d = ember.avg_pool1d
avg_pool2d = ember.avg_pool2d
avg_pool3d = ember.avg_pool3d
adaptive_avg_pool1d = ember.adaptive_avg_pool1d
adaptive_avg_pool2d = ember.adaptive_avg_pool2d
adaptive_avg_pool3d = ember.adaptive_avg_pool3d


def _max_pool(k):
    fn = getattr(ember, f"max_pool{k}d")

    def max_pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 return_indices=False):
        return fn(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)

    max_pool.__name__ = f"max_pool{k}d"
    return max_pool


max_pool1d, max_pool2d, max_pool3d = (_max_pool(k) for k in (1, 2, 3))


def _adaptive_max(k):
    fn = getattr(ember, f"adaptive_max_pool{k}d")

    def adaptive_max_pool(input, output_size, return_indices=False):
        out, idx = fn(input, output_size)
        return (out, idx) if return_indices else out

    adaptive_max_pool.__name__ = f"adaptive_max_pool{k}d"
    return adaptive_max_pool


adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d = (_adaptive_max(k)
                                                                 for k in (1, 2, 3))


def _eye_kernel(channels, kernel_size, dtype):
    k = int(math.prod(kernel_size))
    w = ember.eye(k, dtype=dtype).reshape((k, 1) + tuple(kernel_size))
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
    w = _eye_kernel(1, ks, x.dtype)
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
    w = _eye_kernel(1, ks, x.dtype)
    w = ember.cat([w] * c, 0) if c > 1 else w
    natural = [(blocks[i] - 1) * st[i] - 2 * pd[i] + dl[i] * (ks[i] - 1) + 1 for i in range(2)]
    opad = [os_[i] - natural[i] for i in range(2)]
    out = ember.conv_transpose2d(cols, w, None, st, pd, opad, c, dl)
    return out if batched else out.squeeze(0)


# ---------------------------------------------------------------------------------------------
# activations

def relu(input, inplace=False):
    return input.relu_() if inplace else ember.relu(input)


def relu_(input):
    return input.relu_()


def threshold(input, threshold, value, inplace=False):
    out = ember.where(input > threshold, input, value)
    return input.copy_(out) if inplace else out


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return input.clamp_(min_val, max_val) if inplace else input.clamp(min_val, max_val)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = ember.where(input > 0, input, input * negative_slope)
    return input.copy_(out) if inplace else out


def prelu(input, weight):
    w = weight
    if weight.numel() != 1:
        if input.dim() < 2 or input.shape[1] != weight.numel():
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers "
                f"= {weight.numel()} and channel size = "
                f"{input.shape[1] if input.dim() >= 2 else 1}.")
        w = weight.reshape((1, -1) + (1,) * (input.dim() - 2))
    return ember.where(input > 0, input, input * w)


def elu(input, alpha=1.0, inplace=False):
    out = ember.where(input > 0, input, input.clamp(max=0).expm1() * alpha)
    return input.copy_(out) if inplace else out


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    out = elu(input, _SELU_ALPHA) * _SELU_SCALE
    return input.copy_(out) if inplace else out


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    out = ember.where(input > 0, input, (input.clamp(max=0) / alpha).expm1() * alpha)
    return input.copy_(out) if inplace else out


def gelu(input, approximate="none"):
    if approximate == "none":
        return input * 0.5 * (1.0 + (input * (1.0 / math.sqrt(2.0))).erf())
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * 0.5 * (1.0 + inner.tanh())
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate}")


def silu(input, inplace=False):
    out = input * input.sigmoid()
    return input.copy_(out) if inplace else out


def _log1p_exp(z):
    """log(1 + exp(z)) without overflow; each where-branch only sees inputs where it is finite,
    so the gradient never meets inf * 0, and it is exactly 1/2 at 0."""
    pos = z > 0
    zp = ember.where(pos, z, 0.0)
    zn = ember.where(pos, 0.0, z)
    return ember.where(pos, zp + (-zp).exp().log1p(), zn.exp().log1p())


def softplus(input, beta=1.0, threshold=20.0):
    z = input * beta
    soft = _log1p_exp(z) / beta
    return ember.where(z > threshold, input, soft)


def mish(input, inplace=False):
    out = input * softplus(input).tanh()
    return input.copy_(out) if inplace else out


def hardsigmoid(input, inplace=False):
    out = (input / 6.0 + 0.5).clamp(0.0, 1.0)
    return input.copy_(out) if inplace else out


def hardswish(input, inplace=False):
    out = input * (input + 3.0).clamp(0.0, 6.0) / 6.0
    return input.copy_(out) if inplace else out


def softsign(input):
    return input / (input.abs() + 1)


def logsigmoid(input):
    return -softplus(-input)


def tanhshrink(input):
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    return ember.where(input > lambd, input - lambd, ember.where(input < -lambd, input + lambd,
                                                                 0.0))


def hardshrink(input, lambd=0.5):
    return ember.where(input.abs() > lambd, input, 0.0)


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
    gumbels = -ember.empty(tuple(logits.shape), dtype=logits.dtype).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    d = dim % logits.dim()
    ar = ember.arange(logits.shape[d]).reshape((-1,) + (1,) * (logits.dim() - d - 1))
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


# ---------------------------------------------------------------------------------------------
# dropout

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    else:
        mask = ember.empty(tuple(input.shape), dtype=input.dtype).bernoulli_(1 - p)
        out = input * mask / (1 - p)
    return input.copy_(out) if inplace else out


def _feature_dropout(input, p, training, inplace, spatial):
    _check_p(p)
    if not training or p == 0.0:
        return input
    batched = input.dim() == spatial + 2
    shape = tuple(input.shape[:2]) if batched else tuple(input.shape[:1])
    mshape = shape + (1,) * spatial
    if p == 1.0:
        out = input * 0.0
    else:
        mask = ember.empty(mshape, dtype=input.dtype).bernoulli_(1 - p)
        out = input * mask / (1 - p)
    return input.copy_(out) if inplace else out


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    keep = ember.empty(tuple(input.shape), dtype=input.dtype).bernoulli_(1 - p)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out


# ---------------------------------------------------------------------------------------------
# normalisation

def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    if training:
        size = input.numel() // input.shape[1] if input.dim() > 1 else 0
        if size == 1:
            raise ValueError("Expected more than 1 value per channel when training, got input "
                             f"size {_size(input.shape)}")
    if not training and running_mean is not None and _wants_grad(input, weight, bias):
        return _batch_norm_eval(input, running_mean, running_var, weight, bias, eps)
    return ember.native_batch_norm(input, weight, bias, running_mean, running_var, training,
                                   0.0 if momentum is None else momentum, eps)[0]


def _wants_grad(*ts):
    return ember.is_grad_enabled() and any(t is not None and t.requires_grad for t in ts)


def _batch_norm_eval(input, running_mean, running_var, weight, bias, eps):
    """Eval-mode batch norm as one scale and shift per channel, composed from core ops, so that
    its gradient needs no saved running statistics (see autograd/_formulas_nn.py)."""
    scale = (running_var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    shp = (1, -1) + (1,) * (input.dim() - 2)
    return input * scale.reshape(shp) + shift.reshape(shp)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    ns = _ntuple(normalized_shape, 1)
    if tuple(input.shape[input.dim() - len(ns):]) != tuple(ns) or input.dim() < len(ns):
        raise RuntimeError(
            f"Given normalized_shape={list(ns)}, expected input with shape [*, "
            f"{', '.join(str(s) for s in ns)}], but got input of size{_size(input.shape)}")
    return ember.native_layer_norm(input, list(ns), weight, bias, eps)[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    ns = _ntuple(normalized_shape, 1)
    dims = tuple(range(input.dim() - len(ns), input.dim()))
    if eps is None:
        eps = {ember.float64: 2.220446049250313e-16, ember.float16: 0.0009765625,
               ember.bfloat16: 0.0078125}.get(input.dtype, 1.1920928955078125e-07)
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {_size(input.shape)} and "
                           f"num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, correction=0, keepdim=True)
    out = ((x - mean) * (var + eps).rsqrt()).reshape(tuple(input.shape))
    shp = (1, c) + (1,) * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(shp)
    if bias is not None:
        out = out + bias.reshape(shp)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    n, c = input.shape[0], input.shape[1]
    x = input.reshape((1, n * c) + tuple(input.shape[2:]))
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    if not use_input_stats and _wants_grad(input, weight, bias):
        out = _batch_norm_eval(x, rm, rv, w, b, eps)
    else:
        out = ember.native_batch_norm(x, w, b, rm, rv, use_input_stats, momentum, eps)[0]
    if use_input_stats and running_mean is not None:
        with ember.no_grad():
            running_mean.copy_(rm.reshape(n, c).mean(0))
            running_var.copy_(rv.reshape(n, c).mean(0))
    return out.reshape(tuple(input.shape))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    sq = (input * input).unsqueeze(1)
    if input.dim() == 3:
        sq = pad(sq, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(sq, (size, 1), stride=1).squeeze(1)
    else:
        shp = tuple(input.shape)
        sq = sq.reshape(shp[0], 1, shp[1], shp[2], -1)
        sq = pad(sq, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(sq, (size, 1, 1), stride=1).squeeze(1).reshape(shp)
    return input / (div * alpha + k) ** beta


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    r = input / denom
    return r if out is None else out.copy_(r)


# ---------------------------------------------------------------------------------------------
# embedding

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.shape[0] + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return ember.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def _embedding_renorm_(weight, input, max_norm, norm_type):
    with ember.no_grad():
        ones = ember.ones(tuple(input.shape) + (1,), dtype=weight.dtype)
        used = ember.embedding_dense_backward(ones, input, weight.shape[0], -1, False) > 0
        norms = weight.norm(norm_type, 1, keepdim=True)
        scale = ember.where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight.mul_(scale)
    return weight


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on GitHub.")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences.")
        bags = [input[i] for i in range(input.shape[0])]
        psw = [per_sample_weights[i] for i in range(input.shape[0])] \
            if per_sample_weights is not None else None
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        offs = [int(o) for o in offsets.tolist()]
        if offs and offs[0] != 0:
            raise ValueError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                             "has to start from position 0. However, got "
                             f"{offs[0]}")
        ends = offs[1:] + ([] if include_last_offset else [input.shape[0]])
        if include_last_offset:
            offs = offs[:-1]
        bags = [input[s:e] for s, e in zip(offs, ends)]
        psw = [per_sample_weights[s:e] for s, e in zip(offs, ends)] \
            if per_sample_weights is not None else None
    else:
        raise ValueError("input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    pidx = -1 if padding_idx is None else padding_idx % weight.shape[0]
    if mode != "max" and bags:
        return _embedding_bag_reduce(input, weight, bags, psw, pidx, mode)
    rows = []
    for i, b in enumerate(bags):
        e = ember.embedding(weight, b, pidx)
        if psw is not None:
            e = e * psw[i].unsqueeze(-1)
        n = b.numel() if pidx < 0 else int((b != pidx).sum())
        if n == 0:
            rows.append(ember.zeros(weight.shape[1], dtype=weight.dtype))
        elif mode == "sum":
            rows.append(e.sum(0))
        elif mode == "mean":
            rows.append(e.sum(0) / n)
        else:
            rows.append(e.max(0)[0])
    if not rows:
        return ember.zeros(0, weight.shape[1], dtype=weight.dtype)
    return ember.stack(rows)


def _embedding_bag_reduce(input, weight, bags, psw, pidx, mode):
    """sum/mean bags without a per-bag loop: one lookup, then a segment sum written as the
    embedding backward kernel (a scatter-add of rows by bag id), which is differentiable."""
    flat = input.reshape(-1)
    seg = ember.tensor([i for i, b in enumerate(bags) for _ in range(b.numel())],
                       dtype=ember.int64)
    e = ember.embedding(weight, flat)
    keep = None
    if pidx >= 0:
        keep = (flat != pidx).to(weight.dtype).unsqueeze(-1)
        e = e * keep
    if psw is not None:
        e = e * ember.cat([w.reshape(-1) for w in psw]).unsqueeze(-1)
    out = ember.embedding_dense_backward(e, seg, len(bags), -1, False)
    if mode == "mean":
        ones = keep if keep is not None else ember.ones(flat.numel(), 1, dtype=weight.dtype)
        counts = ember.embedding_dense_backward(ones, seg, len(bags), -1, False)
        out = out / counts.clamp(min=1)
    return out


def one_hot(tensor, num_classes=-1):
    if tensor.dtype != ember.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel() > 0:
        if int(tensor.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(tensor.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == ember.arange(num_classes)).to(ember.int64)


# ---------------------------------------------------------------------------------------------
# distances

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    w12 = (x1 * x2).sum(dim)
    w1 = (x1 * x1).sum(dim)
    w2 = (x2 * x2).sum(dim)
    return w12 / (w1 * w2).clamp(min=eps * eps).sqrt()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    d = max(x1.dim(), x2.dim())
    return (x1 - x2 + eps).norm(p, d - 1 if d > 0 else None, keepdim=keepdim)


# ---------------------------------------------------------------------------------------------
# resampling

def _max_unpool(k, input, indices, kernel_size, stride, padding, output_size):
    ks = _ntuple(kernel_size, k)
    st = _ntuple(stride if stride is not None else kernel_size, k)
    pd = _ntuple(padding, k)
    spatial = tuple(input.shape[-k:])
    if output_size is None:
        out_sp = tuple((spatial[i] - 1) * st[i] - 2 * pd[i] + ks[i] for i in range(k))
    else:
        out_sp = tuple(output_size)[-k:]
    lead = tuple(input.shape[:-k])
    planes = 1
    for s_ in lead:
        planes *= s_
    plane = 1
    for s_ in out_sp:
        plane *= s_
    idx = indices.reshape(planes, -1)
    if idx.numel() and (int(idx.max()) >= plane or int(idx.min()) < 0):
        raise RuntimeError(f"Found an invalid max index: {int(idx.max())} (output volumes are "
                           f"of size {'x'.join(str(s_) for s_ in out_sp)}")
    offs = (ember.arange(planes, dtype=ember.int64) * plane).reshape(planes, 1)
    # a scatter of the values to their flat indices, written as the embedding backward kernel
    out = ember.embedding_dense_backward(input.reshape(-1, 1), (idx + offs).reshape(-1),
                                         planes * plane, -1, False)
    return out.reshape(lead + out_sp)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = tuple(input.shape)
    if c % (r * r) != 0:
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    oc = c // (r * r)
    x = input.reshape(-1, oc, r, r, h, w).permute(0, 1, 4, 2, 5, 3)
    return x.reshape(tuple(lead) + (oc, h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = tuple(input.shape)
    x = input.reshape(-1, c, h // r, r, w // r, r).permute(0, 1, 3, 5, 2, 4)
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def _take(x, dim, idx):
    """x.index_select(dim, idx) written as an embedding lookup (differentiable)."""
    xm = x.movedim(dim, 0)
    rest = tuple(xm.shape[1:])
    out = ember.embedding(xm.reshape(xm.shape[0], -1), idx)
    return out.reshape((idx.numel(),) + rest).movedim(0, dim)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    nsp = input.dim() - 2
    if mode in ("nearest", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    in_sz = tuple(input.shape[2:])
    if size is not None:
        out_sz = _ntuple(size, nsp)
        scales = [None] * nsp
    else:
        sf = _ntuple(scale_factor, nsp)
        out_sz = tuple(int(math.floor(in_sz[i] * sf[i])) for i in range(nsp))
        scales = [None if recompute_scale_factor else sf[i] for i in range(nsp)]
    if mode in ("linear", "bilinear", "trilinear"):
        want = {"linear": 1, "bilinear": 2, "trilinear": 3}[mode]
        if want != nsp:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                      f"{want + 2}D input")
    elif mode == "bicubic":
        if nsp != 2:
            raise NotImplementedError(f"Got {input.dim()}D input, but bicubic mode needs 4D "
                                      "input")
    elif mode == "area":
        return getattr(ember, f"adaptive_avg_pool{nsp}d")(input, list(out_sz))
    elif mode not in ("nearest", "nearest-exact"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported yet")
    out = input
    for i in range(nsp):
        dim = 2 + i
        n_in, n_out = in_sz[i], out_sz[i]
        scale = (1.0 / scales[i]) if scales[i] else n_in / n_out
        if mode == "nearest":
            src = [min(int(math.floor(o * scale)), n_in - 1) for o in range(n_out)]
            out = _take(out, dim, ember.tensor(src))
        elif mode == "nearest-exact":
            src = [min(int(math.floor((o + 0.5) * scale)), n_in - 1) for o in range(n_out)]
            out = _take(out, dim, ember.tensor(src))
        elif mode == "bicubic":
            out = _cubic_axis(out, dim, n_in, n_out, scale, align_corners)
        else:
            if align_corners:
                pos = [o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0 for o in range(n_out)]
            else:
                pos = [max((o + 0.5) * scale - 0.5, 0.0) for o in range(n_out)]
            lo = [min(int(math.floor(p)), n_in - 1) for p in pos]
            hi = [min(i0 + 1, n_in - 1) for i0 in lo]
            lam = ember.tensor([p - i0 for p, i0 in zip(pos, lo)], dtype=input.dtype)
            lam = lam.reshape((-1,) + (1,) * (out.dim() - dim - 1))
            a = _take(out, dim, ember.tensor(lo))
            b = _take(out, dim, ember.tensor(hi))
            out = a + (b - a) * lam
    return out


_CUBIC_A = -0.75


def _cubic_weights(t):
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _cubic_axis(x, dim, n_in, n_out, scale, align_corners):
    """One axis of bicubic resampling (torch's convolution coefficients, A = -0.75, source
    coordinates not clamped, taps clamped to the border)."""
    if align_corners:
        pos = [o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0 for o in range(n_out)]
    else:
        pos = [(o + 0.5) * scale - 0.5 for o in range(n_out)]
    fl = [math.floor(p) for p in pos]
    ws = [_cubic_weights(p - f) for p, f in zip(pos, fl)]
    shape = (-1,) + (1,) * (x.dim() - dim - 1)
    out = None
    for k in range(4):
        idx = ember.tensor([min(max(f - 1 + k, 0), n_in - 1) for f in fl])
        wk = ember.tensor([w[k] for w in ws], dtype=x.dtype).reshape(shape)
        term = _take(x, dim, idx) * wk
        out = term if out is None else out + term
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


# ---------------------------------------------------------------------------------------------
# losses

def _check_same_size(input, target, name):
    if tuple(target.shape) != tuple(input.shape):
        import warnings

        warnings.warn(f"Using a target size ({_size(target.shape)}) that is different to the "
                      f"input size ({_size(input.shape)}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_same_size(input, target, "l1")
    return _reduce((input - target).abs(), reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size(input, target, "mse")
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size(input, target, "smooth_l1")
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    return _reduce(ember.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_same_size(input, target, "huber")
    d = (input - target).abs()
    loss = ember.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    _check_reduction(reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() >= 2 and target.dim() >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    return ember.nll_loss(input, target, weight, reduction, ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    cdim = 0 if input.dim() == 1 else 1
    c = input.shape[cdim]
    lsm = ember.log_softmax(input, cdim)
    wshape = (c,) + (1,) * (input.dim() - cdim - 1)
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError("Expected target size " + _size(input.shape) + ", got " +
                               _size(target.shape))
        t = target if label_smoothing == 0 else target * (1 - label_smoothing) + \
            label_smoothing / c
        prod = lsm * t
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        loss = -prod.sum(cdim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // c if input.numel() else 1) \
                if input.dim() > 1 else loss.sum()
        return _reduce(loss, reduction)
    if target.dtype.is_floating_point is False and target.dtype == ember.bool:
        raise RuntimeError("expected scalar type Long but found Bool")
    nll = ember.nll_loss(lsm, target, weight, reduction, ignore_index)
    if label_smoothing == 0.0:
        return nll
    keep = (target != ignore_index)
    prod = lsm if weight is None else lsm * weight.reshape(wshape)
    smooth = -prod.sum(cdim) * keep.to(lsm.dtype)
    if reduction == "none":
        ret = smooth
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        if weight is None:
            ret = smooth.sum() / keep.sum().to(lsm.dtype)
        else:
            safe_t = ember.where(keep, target, 0)
            wt = ember.embedding(weight.reshape(-1, 1), safe_t).squeeze(-1) * keep.to(lsm.dtype)
            ret = smooth.sum() / wt.sum()
    return nll * (1 - label_smoothing) + ret * (label_smoothing / c)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({_size(target.shape)}) that is different to the "
                         f"input size ({_size(input.shape)}) is deprecated. Please ensure they "
                         "have the same size.")
    if input.numel() and (bool((input < 0).any()) or bool((input > 1).any())):
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = -(target * input.log().clamp(min=-100) + (1 - target) *
             (1 - input).log().clamp(min=-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({_size(target.shape)}) must be the same as input size "
                         f"({_size(input.shape)})")
    log_sig_neg = _log1p_exp(-input)  # -log(sigmoid(x)), finite for every x
    if pos_weight is not None:
        lw = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + lw * log_sig_neg
    else:
        loss = (1 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        tlog = ember.where(target > 0, target * ember.where(target > 0, target, 1.0).log(), 0.0)
        loss = tlog - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    _check_reduction(reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        st = target * ember.where(target > 1, target, 1.0).log() - target + \
            (target * (2 * math.pi)).clamp(min=1e-30).log() * 0.5
        loss = loss + ember.where(target > 1, st, 0.0)
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    _check_reduction(reduction)
    if input1.dim() not in (1, 2):
        raise RuntimeError(f"cosine_embedding_loss: Expected 1D or 2D input, got {input1.dim()}D")
    cos = cosine_similarity(input1, input2, dim=input1.dim() - 1, eps=1e-12)
    loss = ember.where(target == 1, 1 - cos, ember.where(target == -1, (cos - margin).clamp(
        min=0), 0.0))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    _check_reduction(reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {_size(input1.shape)}, input2: {_size(input2.shape)}, "
            f"target: {_size(target.shape)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    _check_reduction(reduction)
    loss = ember.where(target == 1, input, 0.0) + \
        ember.where(target == -1, (margin - input).clamp(min=0), 0.0)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(softplus(-target * input), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    _check_reduction(reduction)
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and "
            f"negative {negative.dim()}D inputs")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_pn = pairwise_distance(positive, negative, p, eps)
        d_an = ember.minimum(d_an, d_pn)
    return _reduce((d_ap - d_an + margin).clamp(min=0), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    _check_reduction(reduction)
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    v = var.clamp(min=eps)
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------------------------------------
# attention

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    lq, lk = query.shape[-2], key.shape[-2]
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * s
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        causal = ember.ones(lq, lk, dtype=ember.bool).tril()
        scores = ember.where(causal, scores, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == ember.bool:
            scores = ember.where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    w = ember.softmax(scores, -1)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True)
    return w.matmul(value)


def _size(shape):
    return "torch.Size([" + ", ".join(str(int(s)) for s in shape) + "])"


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    _check_reduction(reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    t = target.reshape(-1)
    c = x.shape[1]
    onehot = one_hot(t, c).to(x.dtype)
    x_y = (x * onehot).sum(1, keepdim=True)
    z = (margin - x_y + x).clamp(min=0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * ember.embedding(weight.reshape(-1, 1), t).reshape(-1, 1)
    loss = (z * (1 - onehot)).sum(1) / c
    if input.dim() == 1:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


_CTC_NEG = -1e30  # a finite "log 0": logsumexp and its gradient stay finite on dead paths


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist Temporal Classification loss: the forward (alpha) recursion in log space,
    vectorised over the batch and the extended label sequence, looped over time; differentiable
    through its parts."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    t_max, n, c = lp.shape
    in_lens = [int(v) for v in (input_lengths.tolist() if isinstance(input_lengths, ember.Tensor)
                                else input_lengths)]
    tg_lens = [int(v) for v in (target_lengths.tolist() if isinstance(target_lengths,
                                                                      ember.Tensor)
                                else target_lengths)]
    if unbatched:
        in_lens, tg_lens = in_lens[:1], tg_lens[:1]
    tg = targets.tolist()
    if unbatched and targets.dim() == 1 and len(tg) >= tg_lens[0] and not isinstance(tg[0], list):
        seqs = [tg[:tg_lens[0]]]
    elif targets.dim() == 2:
        seqs = [tg[i][:tg_lens[i]] for i in range(n)]
    else:  # concatenated 1-D targets
        seqs, pos = [], 0
        for ln in tg_lens:
            seqs.append(tg[pos:pos + ln])
            pos += ln
    for ln in in_lens:
        if ln > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got "
                               f"value {ln} (while checking arguments for ctc_loss_cpu)")
    for s in seqs:
        for v in s:
            if v < 0 or v >= c:
                raise IndexError(f"Target {v} is out of bounds.")
    lmax = 2 * max((len(s) for s in seqs), default=0) + 1
    ext = [[blank] * lmax for _ in range(n)]
    skip = [[False] * lmax for _ in range(n)]
    for i, s in enumerate(seqs):
        for j, v in enumerate(s):
            ext[i][2 * j + 1] = v
            if j > 0 and v != s[j - 1]:
                skip[i][2 * j + 1] = True
    ext_t = ember.tensor(ext)
    onehot = one_hot(ext_t, c).to(lp.dtype)  # (N, L', C)
    lp_ext = ember.einsum("tnc,nlc->tnl", lp, onehot)  # log_probs at the extended labels
    skip_t = ember.tensor(skip)
    neg1 = ember.full((n, 1), _CTC_NEG, dtype=lp.dtype)
    neg2 = ember.full((n, 2), _CTC_NEG, dtype=lp.dtype)
    start = ember.full((n, lmax), _CTC_NEG, dtype=lp.dtype)
    init_mask = ember.tensor([[j < 2 for j in range(lmax)]] * n)
    alpha = ember.where(init_mask, lp_ext[0], start)
    lens_t = ember.tensor(in_lens).reshape(n, 1)
    final = alpha
    for t in range(1, t_max):
        a1 = ember.cat([neg1, alpha[:, :-1]], 1)
        a2 = ember.cat([neg2, alpha[:, :-2]], 1) if lmax > 2 else ember.full(
            (n, lmax), _CTC_NEG, dtype=lp.dtype)
        a2 = ember.where(skip_t, a2, _CTC_NEG)
        alpha = ember.logsumexp(ember.stack([alpha, a1, a2]), 0) + lp_ext[t]
        final = ember.where(lens_t == t + 1, alpha, final)
    ends = [[j in (2 * len(s), 2 * len(s) - 1) for j in range(lmax)] for s in seqs]
    nll = -ember.logsumexp(ember.where(ember.tensor(ends), final, _CTC_NEG), 1)
    nll = ember.where(nll > 1e29, float("inf"), nll)
    if zero_infinity:
        nll = ember.where(nll == float("inf"), 0.0, nll)
    if unbatched:
        nll = nll.squeeze(0)
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    denom = ember.tensor([max(v, 1) for v in tg_lens], dtype=lp.dtype)
    return (nll / (denom if not unbatched else denom[0])).mean()


# ---------------------------------------------------------------------------------------------
# spatial transformers

def _base_coords(n, align_corners, dtype):
    if n == 1:
        return ember.zeros(1, dtype=dtype)
    if align_corners:
        return ember.linspace(-1.0, 1.0, n, dtype=dtype)
    return (ember.arange(n, dtype=dtype) * 2 + 1) / n - 1


def affine_grid(theta, size, align_corners=None):
    align_corners = bool(align_corners)
    if len(size) != 4:
        raise NotImplementedError("affine_grid only supports 4D sizes, for 2D affine "
                                  "transformations")
    n, _, h, w = size
    if tuple(theta.shape) != (n, 2, 3):
        raise ValueError("Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{_size(size)}. Got {_size(theta.shape)}.")
    xs = _base_coords(w, align_corners, theta.dtype).reshape(1, w).expand(h, w)
    ys = _base_coords(h, align_corners, theta.dtype).reshape(h, 1).expand(h, w)
    base = ember.stack([xs, ys, ember.ones(h, w, dtype=theta.dtype)], -1).reshape(1, h * w, 3)
    return base.matmul(theta.transpose(1, 2)).reshape(n, h, w, 2)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """2-d grid_sample (bilinear or nearest; zeros or border padding), composed: the corner
    lookups are embedding gathers, so gradients reach both the input and the grid."""
    align_corners = bool(align_corners)
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample: mode {mode!r} is not supported yet")
    if padding_mode not in ("zeros", "border"):
        raise NotImplementedError(f"grid_sample: padding_mode {padding_mode!r} is not supported "
                                  "yet")
    if input.dim() != 4 or grid.dim() != 4 or grid.shape[-1] != 2:
        raise NotImplementedError("grid_sample: only 4-d input with an (N, H, W, 2) grid is "
                                  "supported")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    gx, gy = grid[..., 0], grid[..., 1]
    if align_corners:
        ix, iy = (gx + 1) * ((w - 1) / 2), (gy + 1) * ((h - 1) / 2)
    else:
        ix, iy = ((gx + 1) * w - 1) / 2, ((gy + 1) * h - 1) / 2
    if padding_mode == "border":
        ix, iy = ix.clamp(0, w - 1), iy.clamp(0, h - 1)
    table = input.permute(0, 2, 3, 1).reshape(n * h * w, c)
    base = (ember.arange(n, dtype=ember.int64) * (h * w)).reshape(n, 1, 1)

    def corner(xi, yi):
        inside = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        xc = xi.clamp(0, w - 1).to(ember.int64)
        yc = yi.clamp(0, h - 1).to(ember.int64)
        vals = ember.embedding(table, base + yc * w + xc)  # (N, Ho, Wo, C)
        return vals * inside.to(input.dtype).unsqueeze(-1)

    if mode == "nearest":
        out = corner(ix.round(), iy.round())
    else:
        x0, y0 = ix.floor(), iy.floor()
        wx1, wy1 = (ix - x0).unsqueeze(-1), (iy - y0).unsqueeze(-1)
        wx0, wy0 = 1 - wx1, 1 - wy1
        out = (corner(x0, y0) * wx0 * wy0 + corner(x0 + 1, y0) * wx1 * wy0 +
               corner(x0, y0 + 1) * wx0 * wy1 + corner(x0 + 1, y0 + 1) * wx1 * wy1)
    del ho, wo
    return out.permute(0, 3, 1, 2)


def channel_shuffle(input, groups):
    n, c = input.shape[0], input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and "
                           f"{groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape(
        tuple(input.shape))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if training:
        slope = ember.empty(tuple(input.shape), dtype=input.dtype).uniform_(lower, upper)
    else:
        slope = (lower + upper) / 2
    out = ember.where(input >= 0, input, input * slope)
    return input.copy_(out) if inplace else out


def _lp_pool(k, input, norm_type, kernel_size, stride, ceil_mode):
    ks = _ntuple(kernel_size, k)
    pool = getattr(ember, f"avg_pool{k}d")
    out = pool(input.pow(norm_type), ks, stride if stride is not None else ks, 0, ceil_mode)
    return (out.sign() * ember.relu(out.abs())).mul(math.prod(ks)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_an = ember.minimum(d_an, dist(positive, negative))
    return _reduce((d_ap - d_an + margin).clamp(min=0), reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _check_reduction(reduction)
    x = input if input.dim() == 2 else input.unsqueeze(0)
    c = x.shape[-1]
    rows = target.reshape(-1, c).tolist()
    is_t = []
    for r in rows:
        mark = [False] * c
        for v in r:
            if v < 0:
                break
            if v >= c:
                raise RuntimeError(f"multilabel_margin_loss: target index {v} is out of bounds")
            mark[v] = True
        is_t.append(mark)
    is_t = ember.tensor(is_t)
    pair = (is_t.unsqueeze(2) & ~is_t.unsqueeze(1)).to(x.dtype)  # [n, j target, i other]
    margins = (1 - x.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0) * pair
    loss = margins.sum((1, 2)) / c
    if input.dim() < 2:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)
