"""ember.fft's real-valued helpers against NumPy's (and torch's where it is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.fft


@pytest.mark.parametrize("n", [1, 2, 5, 8, 11])
@pytest.mark.parametrize("d", [1.0, 0.1, 3.0])
def test_frequencies_match_numpy(n, d):
    f = ember.fft.fftfreq(n, d, dtype=ember.float64)
    r = ember.fft.rfftfreq(n, d, dtype=ember.float64)
    np.testing.assert_array_equal(f.numpy(), np.fft.fftfreq(n, d))
    np.testing.assert_array_equal(r.numpy(), np.fft.rfftfreq(n, d))
    assert ember.fft.fftfreq(n, d).dtype == ember.get_default_dtype()
    np.testing.assert_allclose(ember.fft.fftfreq(n, d).numpy(), np.fft.fftfreq(n, d), rtol=1e-6)


def test_frequencies_edge_cases_and_errors():
    assert ember.fft.fftfreq(0).shape == (0,)
    assert np.isnan(ember.fft.rfftfreq(0).numpy()).all()  # torch's 0 * (1/0)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ember.fft.fftfreq(-1)
    with pytest.raises(TypeError, match="argument 'n' \\(position 1\\) must be int, not float"):
        ember.fft.fftfreq(2.0)
    assert ember.fft.fftfreq(4, requires_grad=True).requires_grad
    out = ember.empty(0)
    assert ember.fft.fftfreq(4, out=out) is out and out.tolist() == [0.0, 0.25, -0.5, -0.25]


@pytest.mark.parametrize("shape", [(7,), (4, 5), (2, 3, 6)])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, -1)])
def test_shifts_match_numpy(shape, dim):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x = ember.from_numpy(a)
    np.testing.assert_array_equal(ember.fft.fftshift(x, dim).numpy(), np.fft.fftshift(a, dim))
    np.testing.assert_array_equal(ember.fft.ifftshift(x, dim).numpy(), np.fft.ifftshift(a, dim))
    np.testing.assert_array_equal(ember.fft.ifftshift(ember.fft.fftshift(x, dim), dim).numpy(), a)


def test_shift_errors():
    with pytest.raises(IndexError):
        ember.fft.fftshift(ember.ones(2), dim=(5,))
    assert ember.fft is __import__("ember").fft


def test_against_torch():
    torch = pytest.importorskip("torch")
    for n, d in [(5, 0.1), (8, 1.0), (0, 1.0)]:
        for name in ("fftfreq", "rfftfreq"):
            e = getattr(ember.fft, name)(n, d)
            t = getattr(torch.fft, name)(n, d)
            np.testing.assert_array_equal(e.numpy(), t.numpy())
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    for dim in (None, 1, (0, 1)):
        np.testing.assert_array_equal(ember.fft.fftshift(ember.from_numpy(a), dim).numpy(),
                                      torch.fft.fftshift(torch.from_numpy(a), dim).numpy())
