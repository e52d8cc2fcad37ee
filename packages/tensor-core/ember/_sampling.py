"""torch.binomial: Binomial(count, prob) draws, one per element, written with ember's ops (so they
run on the tensors' device) and drawing every uniform from the given generator.

Inversion (counting geometric waiting times) where count * min(p, 1 - p) < 10, Hormann's BTRS
transformed rejection elsewhere, as NumPy's and torch's samplers; p > 0.5 is sampled as count
minus a Binomial(count, 1 - p). ``ember.distributions.Binomial`` samples through this.
"""

from __future__ import annotations

import math

from ember import _C, _grad_mode, _shape

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def binomial(count, prob, generator=None):
    """Binomial(count, prob) successes, in count's floating dtype (torch.binomial); counts of 0
    or less give 0, probabilities of 1 or more give count, NaN gives NaN."""
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{count.dtype._torch_name}")
    if not prob.dtype.is_floating_point:  # (before the dtypes' match, as torch's)
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: "
                         f"{prob.dtype._torch_name}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"Found dtype {prob.dtype._torch_name} but expected "
                           f"{count.dtype._torch_name}")
    if count.dtype in (_C.float16, _C.bfloat16):
        raise NotImplementedError(
            f"\"binomial_cpu\" not implemented for '{count.dtype._torch_name}'")
    with _grad_mode.no_grad():
        count, prob = _shape.broadcast_tensors(count.detach(), prob.detach())
        undefined = _C.isnan(prob) | ~_C.isfinite(count)
        flip = prob > 0.5
        p = _C.where(flip, 1.0 - prob, prob)
        degenerate = (p <= 0) | (count <= 0) | undefined
        p_safe = _C.where(degenerate, _C.full_like(p, 0.5), p)
        n_safe = _C.where(degenerate, _C.zeros_like(count), count)
        large = n_safe * p_safe >= 10
        out = _inversion(_C.where(large, _C.zeros_like(n_safe), n_safe), p_safe, generator)
        if bool(large.any()):
            big = _by_rejection(_btrs_proposal, generator,
                                _C.where(large, n_safe, _C.full_like(n_safe, 40.0)),
                                _C.where(large, p_safe, _C.full_like(p_safe, 0.5)))
            out = _C.where(large, big, out)
        out = _C.where(degenerate, _C.zeros_like(out), out)
        out = _C.where(flip, count - out, out)
        return _C.where(undefined, _C.full_like(out, math.nan), out)


def _uniform(shape, like, generator):
    return _C.rand(tuple(shape), dtype=like.dtype, device=like.device, generator=generator)


def _by_rejection(propose, generator, *params):
    """Draws of the (equal) shape of ``params``: ``propose(generator, *flat_params)`` returns
    candidate values and which of them are accepted; the rejected elements are proposed again."""
    like = params[0]
    flat = [p.reshape(-1) for p in params]
    out = _C.zeros(flat[0].shape, dtype=like.dtype, device=like.device)
    pending = _C.arange(flat[0].numel(), device=like.device)
    while pending.numel() > 0:
        value, accept = propose(generator, *[p[pending] for p in flat])
        out[pending[accept]] = value[accept]
        pending = pending[~accept]
    return out.reshape(like.shape)


def _inversion(count, prob, generator):
    """Successes as the number of geometric waiting times that fit in ``count`` trials."""
    flat_count = count.reshape(-1)
    out = _C.zeros_like(flat_count)
    index = _C.arange(flat_count.numel(), device=count.device)
    log1m_p = _C.log1p(-prob.reshape(-1))
    geom_sum = _C.zeros_like(flat_count)
    successes = _C.zeros_like(flat_count)
    while index.numel() > 0:
        u = _uniform(index.shape, count, generator)
        geom_sum = geom_sum + _C.ceil(_C.log(u) / log1m_p)
        done = geom_sum > flat_count
        out[index[done]] = successes[done]
        going = ~done
        index, log1m_p, geom_sum = index[going], log1m_p[going], geom_sum[going]
        flat_count, successes = flat_count[going], successes[going] + 1
    return out.reshape(count.shape)


def _stirling_tail(k):
    """lgamma(k + 1) minus Stirling's approximation of it."""
    k1 = k + 1.0
    return _C.lgamma(k1) - ((k + 0.5) * _C.log(k1) - k1 + _HALF_LOG_2PI)


def _btrs_proposal(generator, count, prob):
    """One round of Hormann's BTRS transformed rejection (count * prob >= 10, prob <= 0.5)."""
    q = 1.0 - prob
    stddev = _C.sqrt(count * prob * q)
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / q
    alpha = (2.83 + 5.1 / b) * stddev
    m = _C.floor((count + 1) * prob)
    u = _uniform(count.shape, count, generator) - 0.5
    v = _uniform(count.shape, count, generator)
    us = 0.5 - _C.abs(u)
    k = _C.floor((2 * a / us + b) * u + c)
    in_range = (k >= 0) & (k <= count)
    quick = in_range & (us >= 0.07) & (v <= v_r)
    k = _C.clamp(_C.minimum(k, count), min=0.0)
    log_v = _C.log(v * alpha / (a / (us * us) + b))
    bound = ((m + 0.5) * _C.log((m + 1) / (r * (count - m + 1)))
             + (count + 1) * _C.log((count - m + 1) / (count - k + 1))
             + (k + 0.5) * _C.log(r * (count - k + 1) / (k + 1))
             + _stirling_tail(m) + _stirling_tail(count - m)
             - _stirling_tail(k) - _stirling_tail(count - k))
    return k, quick | (in_range & (log_v <= bound))
