"""ember.signal.windows against the windows' definitions in NumPy (and torch's values where
installed), symmetric and periodic, both float dtypes, with torch's errors."""

import math

import numpy as np
import pytest

import ember
from ember.signal import windows as W


def _sym_or_periodic(f, M, sym):
    """A symmetric window of M points, or the periodic one: M + 1 symmetric points, the last
    dropped."""
    return f(M) if sym or M <= 1 else f(M + 1)[:-1]


def _cosine_sum(a):
    def f(M):
        n = np.arange(M)
        return sum((-1) ** i * c * np.cos(2 * np.pi * i * n / (M - 1)) for i, c in enumerate(a))
    return f


REFERENCES = {
    "hann": (dict(), _cosine_sum([0.5, 0.5])),
    "hamming": (dict(), _cosine_sum([0.54, 0.46])),
    "general_hamming": (dict(alpha=0.6), _cosine_sum([0.6, 0.4])),
    "blackman": (dict(), _cosine_sum([0.42, 0.5, 0.08])),
    "nuttall": (dict(), _cosine_sum([0.3635819, 0.4891775, 0.1365995, 0.0106411])),
    "general_cosine": (dict(a=[0.4, 0.3, 0.3]), _cosine_sum([0.4, 0.3, 0.3])),
    "bartlett": (dict(), lambda M: 1 - np.abs(2 * np.arange(M) / (M - 1) - 1)),
    "gaussian": (dict(std=1.7), lambda M: np.exp(-0.5 * ((np.arange(M) - (M - 1) / 2) / 1.7) ** 2)),
    "exponential": (dict(tau=2.5), lambda M: np.exp(-np.abs(np.arange(M) - (M - 1) / 2) / 2.5)),
    "kaiser": (dict(beta=6.0), lambda M: np.kaiser(M, 6.0)),
    "cosine": (dict(), lambda M: np.sin(np.pi * (np.arange(M) + 0.5) / M)),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("M", [2, 5, 8, 16])
@pytest.mark.parametrize("sym", [True, False])
def test_windows_match_their_definitions(name, M, sym):
    kwargs, ref = REFERENCES[name]
    if name == "cosine" and not sym:  # sin(pi (n + 1/2) / (M + 1)) for the M points
        expected = np.sin(np.pi * (np.arange(M) + 0.5) / (M + 1))
    else:
        expected = _sym_or_periodic(ref, M, sym)
    got = getattr(W, name)(M, sym=sym, dtype=ember.float64, **kwargs)
    assert got.dtype == ember.float64 and got.shape == (M,)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    f32 = getattr(W, name)(M, sym=sym, **kwargs)
    assert f32.dtype == ember.float32
    np.testing.assert_allclose(f32.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_matches_torch_where_installed():
    TW = pytest.importorskip("torch.signal.windows")
    for name, (kwargs, _) in REFERENCES.items():
        for M in (0, 1, 7):
            for sym in (True, False):
                got = getattr(W, name)(M, sym=sym, **kwargs).numpy()
                want = getattr(TW, name)(M, sym=sym, **kwargs).numpy()
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=name)
    got = W.exponential(6, center=1.5, sym=False).numpy()
    np.testing.assert_allclose(got, TW.exponential(6, center=1.5, sym=False).numpy(), rtol=1e-6)
    assert math.isclose(float(W.gaussian(1)[0]), 1.0)


def test_lengths_zero_and_one_options_and_errors():
    assert W.hann(0).shape == (0,) and W.hann(1).tolist() == [1.0]
    for call, error, message in [
        (lambda: W.hann(-1), ValueError, "non-negative window length, got M=-1"),
        (lambda: W.hann(4, dtype=ember.int64), ValueError, "expects float32 or float64"),
        (lambda: W.gaussian(4, std=0), ValueError, "Standard deviation must be positive"),
        (lambda: W.exponential(4, tau=-1.0), ValueError, "Tau must be positive"),
        (lambda: W.exponential(4, center=1.0), ValueError, "Center must be None"),
        (lambda: W.kaiser(4, beta=-1.0), ValueError, "beta must be non-negative"),
        (lambda: W.general_cosine(4, a=[]), ValueError, "Coefficients cannot be empty"),
        (lambda: W.general_cosine(4, a=3), TypeError, "Coefficients must be a list/tuple"),
    ]:
        with pytest.raises(error, match=message):
            call()


def test_requires_grad():
    pytest.importorskip("ember.autograd")  # requires_grad needs it
    assert W.hann(4, requires_grad=True).requires_grad
    assert W.kaiser(1, requires_grad=True).requires_grad
