"""gradcheck (float64) of the 1-d and 3-d pooling kernels' gradients (their *_backward kernels),
whose values tensor-core's test_pooling_1d_3d.py checks against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck


def _x(shape, seed):
    # distinct values, far apart: a window's maximum does not move under finite differences
    rng = np.random.default_rng(seed)
    values = rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64)
    return ember.tensor(values, dtype=ember.float64, requires_grad=True)


@pytest.mark.parametrize("name,shape,args", [
    ("max_pool1d_with_indices", (2, 2, 9), ([3], [2], [1], [1], False)),
    ("max_pool1d_with_indices", (1, 2, 10), ([2], [2], [0], [2], True)),
    ("max_pool3d_with_indices", (1, 2, 5, 4, 4), ([2, 2, 2], [2, 1, 2], [1, 0, 1], [1, 1, 1],
                                                  False)),
    ("adaptive_max_pool1d", (2, 2, 10), ([4],)),
    ("adaptive_max_pool3d", (1, 2, 5, 4, 3), ([2, 3, 2],)),
])
def test_max_pool_gradients(name, shape, args):
    fn = getattr(ember._C, name)
    assert gradcheck(lambda t: fn(t, *args)[0], (_x(shape, 5),))


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("shape,args", [
    ((1, 2, 5, 4, 4), ([2, 2, 2], [2, 1, 2], [1, 0, 1], False)),
    ((2, 4, 4, 3), ([3, 2, 2], [1, 2, 1], [1, 1, 0], True)),
])
def test_avg_pool3d_gradients(shape, args, count_include_pad):
    assert gradcheck(lambda t: ember._C.avg_pool3d(t, *args, count_include_pad), (_x(shape, 6),))
