"""Reductions and scans written with the core's: aminmax, logcumsumexp, hash_tensor, dist,
renorm, cov and corrcoef."""

from __future__ import annotations

import builtins
import collections
import math
import warnings

from ember import _C, _shape
from ember._composite_ops._common import (
    _SHELL_UNSIGNED,
    _dim_list,
    _dtype_name,
    _finish,
    _floating_kernel,
    _is_tensor,
    _wrap_dim,
)

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
        if not (x.dtype.is_floating_point or x.dtype.is_complex):
            x = x.to(_C.get_default_dtype())
        avg = x.mean(1)
        w_sum = float(n)
        norm_factor = w_sum - correction
    else:
        # torch's arithmetic, step by step: the weights' sums in their own dtype (bfloat16
        # aweights: bfloat16 sums), the products with the input in the promoted one (float64
        # aweights give a float64 cov; an integer input with float16 ones a float16 cov)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if aweights is None or correction == 0:
            norm_factor = w_sum - correction
        else:
            norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
    if (float(norm_factor) if _is_tensor(norm_factor) else norm_factor) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm_factor = 0.0 if not _is_tensor(norm_factor) else norm_factor.clamp(min=0)
    centred = x - avg.unsqueeze(1)
    weighted = centred if w is None else centred * w
    c = _C.true_divide(_C.mm(centred, weighted.t().conj()), norm_factor)
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
