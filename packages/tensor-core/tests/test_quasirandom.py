"""ember.quasirandom.SobolEngine (torch.quasirandom's): the Sobol' points written out by hand
(Gray-code order, direction numbers 1/2 for the first dimension, Joe and Kuo's for the next),
the base-2 balance rule, fast_forward/reset, dtypes and out=, scrambling from a seed."""

import numpy as np
import pytest

import ember

pytest.importorskip("scipy.stats")

from ember.quasirandom import SobolEngine  # noqa: E402

# the first 8 unscrambled points in 3 dimensions (van der Corput in the first)
FIRST_8 = [[0, 0, 0], [0.5, 0.5, 0.5], [0.75, 0.25, 0.25], [0.25, 0.75, 0.75],
           [0.375, 0.375, 0.625], [0.875, 0.875, 0.125], [0.625, 0.125, 0.875],
           [0.125, 0.625, 0.375]]


def test_unscrambled_points_by_hand():
    e = SobolEngine(3)
    pts = e.draw(8)
    assert pts.dtype == ember.float32 and pts.shape == (8, 3) and e.num_generated == 8
    assert pts.tolist() == FIRST_8
    # each dimension's first 2**k points are a permutation of the grid i / 2**k
    big = SobolEngine(5).draw_base2(6, dtype=ember.float64).numpy()
    for d in range(5):
        np.testing.assert_array_equal(np.sort(big[:, d]), np.arange(64) / 64)


def test_fast_forward_reset_and_base2_rule():
    e = SobolEngine(3)
    e.fast_forward(5)
    assert e.num_generated == 5 and e.draw(2).tolist() == FIRST_8[5:7]
    e.reset()
    assert e.num_generated == 0 and e.draw_base2(2).tolist() == FIRST_8[:4]
    with pytest.raises(ValueError, match="4 points have been previously generated, then: "
                                         r"n=4\+2\*\*1=6"):
        e.draw_base2(1)
    assert e.draw_base2(2).tolist() == FIRST_8[4:]


def test_dtype_out_and_repr():
    e = SobolEngine(2)
    assert e.draw(3, dtype=ember.float64).dtype == ember.float64
    out = ember.empty(0)
    assert e.draw(2, out=out) is out and out.shape == (2, 2)
    assert repr(SobolEngine(3, scramble=True, seed=1)) == \
        "SobolEngine(dimension=3, scramble=True, seed=1)"
    assert repr(SobolEngine(3)) == "SobolEngine(dimension=3)"
    for bad in (0, SobolEngine.MAXDIM + 1):
        with pytest.raises(ValueError, match=r"Supported range of dimensionality for "
                                             r"SobolEngine is \[1, 21201\]"):
            SobolEngine(bad)


def test_scrambled_from_a_seed():
    a = SobolEngine(4, scramble=True, seed=7).draw(16)
    b = SobolEngine(4, scramble=True, seed=7).draw(16)
    c = SobolEngine(4, scramble=True, seed=8).draw(16)
    assert ember.equal(a, b) and not ember.equal(a, c)
    x = a.numpy()
    assert ((x >= 0) & (x < 1)).all()
    # scrambling keeps the stratification: each of 16 equal intervals holds one point per dim
    for d in range(4):
        np.testing.assert_array_equal(np.sort(np.floor(x[:, d] * 16)), np.arange(16))


def test_matches_torch_where_installed():
    torch = pytest.importorskip("torch")
    t = torch.quasirandom.SobolEngine(6)
    e = SobolEngine(6)
    t.fast_forward(3)
    e.fast_forward(3)
    np.testing.assert_array_equal(e.draw(29, dtype=ember.float64).numpy(),
                                  t.draw(29, dtype=torch.float64).numpy())
