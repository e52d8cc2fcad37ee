"""The 1-d and 3-d pooling kernels (max with indices, average, adaptive max) against NumPy
references written from torch's definitions: windows with stride, padding (-inf for max, zeros
counted or not for average), dilation, ceil_mode; adaptive windows [floor(i*L/n), ceil((i+1)*L/n)).
Indices are flat positions in each channel's input, as torch's."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import ember


def _out_len(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    n = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (n - 1) * s >= size + p:  # the last window must start inside
        n -= 1
    return n


def _windows(spatial, kernel, stride, padding, dilation, ceil_mode):
    """For each output position: the input positions of its window (None where padding)."""
    outs = [_out_len(*a, ceil_mode) for a in zip(spatial, kernel, stride, padding, dilation)]
    for o in itertools.product(*(range(n) for n in outs)):
        taps = []
        for offs in itertools.product(*(range(k) for k in kernel)):
            pos = tuple(oi * s - p + t * d for oi, s, p, t, d in
                        zip(o, stride, padding, offs, dilation))
            inside = all(0 <= q < n for q, n in zip(pos, spatial))
            taps.append(pos if inside else None)
        yield o, taps, outs


def max_pool_ref(x, kernel, stride, padding, dilation, ceil_mode):
    nd = len(kernel)
    spatial = x.shape[-nd:]
    lead = x.shape[:-nd]
    outs = [_out_len(*a, ceil_mode) for a in zip(spatial, kernel, stride, padding, dilation)]
    values = np.empty(lead + tuple(outs))
    indices = np.empty(lead + tuple(outs), dtype=np.int64)
    for c in itertools.product(*(range(n) for n in lead)):
        for o, taps, _ in _windows(spatial, kernel, stride, padding, dilation, ceil_mode):
            best, where = -math.inf, -1
            for pos in taps:
                if pos is not None and (x[c + pos] > best or where < 0):
                    best, where = x[c + pos], int(np.ravel_multi_index(pos, spatial))
            values[c + o], indices[c + o] = best, where
    return values, indices


def avg_pool_ref(x, kernel, stride, padding, ceil_mode, count_include_pad):
    nd = len(kernel)
    spatial = x.shape[-nd:]
    lead = x.shape[:-nd]
    ones = (1,) * nd
    outs = [_out_len(*a, ceil_mode) for a in zip(spatial, kernel, stride, padding, ones)]
    out = np.empty(lead + tuple(outs))
    for c in itertools.product(*(range(n) for n in lead)):
        for o, taps, _ in _windows(spatial, kernel, stride, padding, ones, ceil_mode):
            vals = [x[c + pos] for pos in taps if pos is not None]
            if count_include_pad:  # the window clipped to the padded input
                count = 1
                for oi, k, s, p, n in zip(o, kernel, stride, padding, spatial):
                    start = oi * s - p
                    count *= min(start + k, n + p) - start
            else:
                count = len(vals)
            out[c + o] = sum(vals) / count
    return out


def adaptive_max_ref(x, output_size):
    nd = len(output_size)
    spatial = x.shape[-nd:]
    lead = x.shape[:-nd]
    values = np.empty(lead + tuple(output_size))
    indices = np.empty(lead + tuple(output_size), dtype=np.int64)
    for c in itertools.product(*(range(n) for n in lead)):
        for o in itertools.product(*(range(n) for n in output_size)):
            ranges = [range(i * L // n, -(-(i + 1) * L // n)) for i, L, n in
                      zip(o, spatial, output_size)]
            best, where = -math.inf, -1
            for pos in itertools.product(*ranges):
                if x[c + pos] > best or where < 0:
                    best, where = x[c + pos], int(np.ravel_multi_index(pos, spatial))
            values[c + o], indices[c + o] = best, where
    return values, indices


def _input(shape, seed):
    # distinct values: the maximum of every window is unique, so indices are defined
    rng = np.random.default_rng(seed)
    return rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64) / 7.0


MAX_CASES_1D = [((2, 3, 9), (3,), (2,), (1,), (1,), False), ((1, 2, 10), (2,), (2,), (0,), (2,), True),
                ((4, 7), (3,), (1,), (0,), (1,), False)]
MAX_CASES_3D = [((1, 2, 5, 6, 4), (2, 3, 2), (2, 2, 1), (1, 1, 0), (1, 1, 1), False),
                ((2, 3, 4, 4), (2, 2, 2), (1, 2, 2), (0, 1, 1), (1, 1, 1), True),
                ((1, 1, 6, 5, 5), (2, 2, 2), (2, 1, 2), (0, 0, 0), (2, 1, 1), False)]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("case", MAX_CASES_1D + MAX_CASES_3D)
def test_max_pool_with_indices(case, dtype):
    shape, k, s, p, d, ceil_mode = case
    xn = _input(shape, 1)
    fn = ember._C.max_pool1d_with_indices if len(k) == 1 else ember._C.max_pool3d_with_indices
    values, indices = fn(ember.tensor(xn, dtype=dtype), list(k), list(s), list(p), list(d),
                         ceil_mode)
    ev, ei = max_pool_ref(xn, k, s, p, d, ceil_mode)
    np.testing.assert_allclose(values.numpy(), ev, rtol=1e-6)
    np.testing.assert_array_equal(indices.numpy(), ei)
    assert indices.dtype == ember.int64 and values.dtype == dtype


AVG_CASES_3D = [((1, 2, 5, 6, 4), (2, 3, 2), (2, 2, 1), (1, 1, 0), False),
                ((2, 3, 4, 4), (3, 2, 2), (1, 2, 2), (1, 1, 1), True),
                ((1, 1, 6, 5, 5), (2, 2, 2), (2, 2, 2), (0, 0, 0), False)]


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("case", AVG_CASES_3D)
def test_avg_pool3d(case, count_include_pad):
    shape, k, s, p, ceil_mode = case
    xn = _input(shape, 2)
    r = ember._C.avg_pool3d(ember.tensor(xn), list(k), list(s), list(p), ceil_mode,
                            count_include_pad)
    np.testing.assert_allclose(r.numpy(), avg_pool_ref(xn, k, s, p, ceil_mode,
                                                       count_include_pad), rtol=1e-5)


def test_avg_pool3d_divisor_override():
    xn = _input((1, 1, 4, 4, 4), 3)
    r = ember._C.avg_pool3d(ember.tensor(xn), [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, 3)
    ref = avg_pool_ref(xn, (2, 2, 2), (2, 2, 2), (0, 0, 0), False, True) * 8 / 3
    np.testing.assert_allclose(r.numpy(), ref, rtol=1e-5)


@pytest.mark.parametrize("shape,output_size", [
    ((2, 3, 10), (4,)), ((3, 7), (3,)), ((1, 2, 9), (9,)), ((2, 1, 5), (1,)),
    ((1, 2, 5, 7, 6), (2, 3, 4)), ((2, 4, 4, 3), (3, 2, 3)), ((1, 1, 3, 3, 3), (1, 1, 1)),
])
def test_adaptive_max_pool(shape, output_size):
    xn = _input(shape, 4)
    x = ember.tensor(xn)
    values, indices = (ember._C.adaptive_max_pool1d(x, list(output_size)) if len(output_size) == 1
                       else ember._C.adaptive_max_pool3d(x, list(output_size)))
    ev, ei = adaptive_max_ref(xn, output_size)
    np.testing.assert_allclose(values.numpy(), ev, rtol=1e-6)
    np.testing.assert_array_equal(indices.numpy(), ei)


def test_nan_is_the_maximum_as_torch():
    x = ember.tensor([[[1.0, float("nan"), 3.0, 2.0]]])
    values, indices = ember._C.max_pool1d_with_indices(x, [2], [2], [0], [1], False)
    assert math.isnan(values[0, 0, 0].item()) and indices[0, 0].tolist() == [1, 2]


@pytest.mark.parametrize("call,message", [
    (lambda: ember._C.max_pool1d_with_indices(ember.ones(1, 1, 4), [0], [1], [0], [1], False),
     "kernel size should be greater than zero"),
    (lambda: ember._C.max_pool3d_with_indices(ember.ones(1, 1, 4, 4, 4), [2, 2, 2], [1, 1, 1],
                                              [2, 0, 0], [1, 1, 1], False),
     "pad should be at most half of effective kernel size"),
    (lambda: ember._C.adaptive_max_pool3d(ember.ones(1, 2, 2), [1, 1, 1]), "4D or 5D"),
])
def test_bad_arguments_raise(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()
