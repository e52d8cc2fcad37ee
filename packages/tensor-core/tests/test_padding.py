"""Padding: ember.constant_pad_nd (the C++ kernel) and ember._padding.pad's constant, reflect,
replicate and circular modes against np.pad, with torch.nn.functional.pad's rules and errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._padding import pad
from ember.testing.opdb import ALL_DTYPES, NP_DTYPE, make_tensor, to_numpy


def mk(shape, dtype="float32", layout="contiguous", seed=0):
    rng = np.random.default_rng(seed)
    arr = rng.random(shape) < 0.5 if dtype == "bool" else rng.integers(0, 100, size=shape)
    arr = arr.astype(NP_DTYPE[dtype])
    return make_tensor(arr, dtype, layout), arr


def eq(t, expected):
    expected = np.asarray(expected)
    assert tuple(t.shape) == expected.shape, (tuple(t.shape), expected.shape)
    np.testing.assert_array_equal(to_numpy(t), expected)



@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_constant_pad_nd(dtype, layout):
    x, nx = mk((2, 3, 4), dtype, layout)
    value = True if dtype == "bool" else 5
    for p in ((1, 2), (0, 1, 2, 0), (1, 1, 1, 1, 1, 1), (-1, 2), (-1, -1, 1, -1), ()):
        widths = [(0, 0)] * 3
        crop = [slice(None)] * 3
        for i in range(len(p) // 2):
            d = 2 - i
            lo, hi = p[2 * i], p[2 * i + 1]
            widths[d] = (max(lo, 0), max(hi, 0))
            crop[d] = slice(max(-lo, 0), nx.shape[d] - max(-hi, 0))
        exp = np.pad(nx[tuple(crop)], widths, constant_values=value)
        eq(ember.constant_pad_nd(x, p, value), exp)
        eq(pad(x, p, value=value), exp)
    eq(ember.constant_pad_nd(x, (1, 1)), np.pad(nx, [(0, 0), (0, 0), (1, 1)]))


def test_constant_pad_nd_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="Length of pad must be even but instead it equals 3"):
        ember.constant_pad_nd(x, (1, 2, 3))
    with pytest.raises(RuntimeError, match="Length of pad should be no more than twice"):
        ember.constant_pad_nd(x, (1,) * 6)
    with pytest.raises(RuntimeError, match=r"narrow\(\): length must be non-negative"):
        ember.constant_pad_nd(x, (-4, 0))
    with pytest.raises(RuntimeError, match=r"narrow\(\): length must be non-negative"):
        ember.constant_pad_nd(ember.zeros(0, 4), (0, 0, -1, 1))
    eq(ember.constant_pad_nd(ember.tensor(1.0), ()), np.float32(1))
    eq(ember.constant_pad_nd(x.int(), (1, 1), 2.5), np.pad(np.zeros((2, 3), np.int32), [(0, 0), (1, 1)],
                                                           constant_values=2))


NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,p", [((2, 5), (2, 3)), ((1, 2, 5), (0, 4)), ((2, 4, 5), (1, 2, 3, 0)),
                                     ((1, 3, 4, 5), (1, 1, 2, 2)), ((1, 2, 3, 4, 5), (1, 2, 1, 2, 1, 2)),
                                     ((2, 3, 4, 5), (1, 0, 2, 1, 1, 1))])
@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_pad_modes(mode, shape, p, dtype):
    x, nx = mk(shape, dtype, "transposed")
    widths = [(0, 0)] * len(shape)
    for i in range(len(p) // 2):
        widths[len(shape) - 1 - i] = (p[2 * i], p[2 * i + 1])
    eq(pad(x, p, mode=mode), np.pad(nx, widths, mode=NP_MODE[mode]))
    assert ember._pad is pad


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_negative(mode):
    x, nx = mk((1, 2, 6))
    exp = np.pad(nx[:, :, 1:], [(0, 0), (0, 0), (0, 2)], mode=NP_MODE[mode])
    eq(pad(x, (-1, 2), mode=mode), exp)


def test_pad_errors():
    x = ember.zeros(1, 2, 3)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two"):
        pad(x, (1,) * 8)
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        pad(x, (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding "
                       r"input dimension, but got: padding \(3, 3\) at dimension 2"):
        pad(x, (3, 3), mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 6 is not supported for 3D input"):
        pad(x, (1,) * 6, mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D input"):
        pad(ember.zeros(3), (1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        pad(x, (4, 0), mode="circular")
    with pytest.raises(RuntimeError, match="doesn't take in value argument"):
        pad(x, (1, 1), mode="reflect", value=1.0)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D"):
        pad(ember.zeros(1, 3, 0), (1, 1), mode="replicate")
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        pad(x.bool(), (1, 1), mode="replicate")


def test_pad_negative_reads_like_pytorch():
    # Output index j reads input index j - left, mirrored / clamped into the *uncropped* input.
    x = ember.tensor([[[1.0, 2.0, 3.0]]])
    eq(pad(x, (2, -1), mode="reflect"), np.array([[[3, 2, 1, 2]]], np.float32))
    eq(pad(ember.tensor([[5.0]]), (-1, 2), mode="replicate"), np.array([[5, 5]], np.float32))
    eq(pad(ember.zeros(2, 3, 1), (0, -1, -1, 1), mode="replicate"), np.zeros((2, 3, 0), np.float32))
    with pytest.raises(RuntimeError, match=r"input \(W: 1\) is too small. Calculated output W: 0"):
        pad(ember.zeros(3, 1), (0, -1), mode="reflect")
    with pytest.raises(RuntimeError, match="Negative padding value is resulting in an empty"):
        pad(ember.zeros(2, 0, 0), (1, -1, -1, -1), mode="circular")
    eq(pad(ember.zeros(0, 2, 3), (1, 1), mode="circular"), np.zeros((0, 2, 5), np.float32))
