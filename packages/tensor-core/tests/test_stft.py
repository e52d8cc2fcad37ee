"""ember.stft / ember.istft (torch.stft / torch.istft) and the Tensor methods.

The oracle is a NumPy reference written here (frames cut from the padded signal, the window
centred in n_fft points, numpy.fft; overlap-add frame by frame for the inverse), so the file
tests without torch; where torch is installed the same calls are compared with torch's values,
dtypes, shapes, warnings and error messages (torch's "torch.FloatTensor" is ember's
"ember.FloatTensor"). Gradients: ember.autograd.gradcheck in float64 / complex128.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import ember
from ember import _spectral

PAD_MODES = ["reflect", "constant", "replicate", "circular"]
NP_PAD = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SINGLE = {np.dtype(np.float32), np.dtype(np.complex64)}


@pytest.fixture(autouse=True)
def _fresh_warn_once():
    """The warnings are given once per process (TORCH_WARN_ONCE): each test sees them anew."""
    _spectral._WARNED.clear()
    yield
    _spectral._WARNED.clear()


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---- the NumPy oracle ----

def ref_window(n_fft, win_length=None, window=None):
    win = n_fft if win_length is None else win_length
    w = np.ones(win) if window is None else np.asarray(window)
    left = (n_fft - win) // 2
    full = np.zeros(n_fft, dtype=np.result_type(w.dtype, np.float64))
    full[left:left + win] = w
    return full


def ref_stft(x, n_fft, hop_length=None, win_length=None, window=None, center=True,
             pad_mode="reflect", normalized=False, onesided=None, align_to_window=False):
    x = np.asarray(x)
    batched = x.ndim == 2
    x = np.atleast_2d(x).astype(np.result_type(x.dtype, np.float64))
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    w = ref_window(n_fft, win_length, window)
    if center:
        x = np.pad(x, ((0, 0), (n_fft // 2, n_fft // 2)), mode=NP_PAD[pad_mode])
    elif align_to_window:
        left = (n_fft - win) // 2
        x = np.pad(x, ((0, 0), (left, n_fft - win - left)))
    n_frames = 1 + (x.shape[1] - n_fft) // hop
    frames = np.stack([x[:, t * hop:t * hop + n_fft] for t in range(n_frames)], axis=1) * w
    if onesided is None:
        onesided = not np.iscomplexobj(frames)
    spec = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    if normalized:
        spec = spec / np.sqrt(n_fft)
    spec = spec.transpose(0, 2, 1)
    return spec if batched else spec[0]


def ref_istft(spec, n_fft, hop_length=None, win_length=None, window=None, center=True,
              normalized=False, onesided=None, length=None, return_complex=False):
    spec = np.asarray(spec).astype(np.complex128)
    batched = spec.ndim == 3
    spec = spec if batched else spec[None]
    hop = n_fft // 4 if hop_length is None else hop_length
    w = ref_window(n_fft, win_length, window)
    if onesided is None:
        onesided = spec.shape[1] != n_fft
    frames = spec.transpose(0, 2, 1)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        frames = np.fft.ifft(frames, axis=-1, norm=norm)
    else:
        frames = np.fft.irfft(frames[..., :n_fft // 2 + 1], n=n_fft, axis=-1, norm=norm)
    n_frames = frames.shape[1]
    total = n_fft + hop * (n_frames - 1)
    y = np.zeros((spec.shape[0], total), dtype=np.result_type(frames.dtype, w.dtype))
    envelope = np.zeros(total, dtype=np.result_type(w.dtype, np.float64))
    for t in range(n_frames):  # (the plain loop: the oracle)
        y[:, t * hop:t * hop + n_fft] += frames[:, t] * w
        envelope[t * hop:t * hop + n_fft] += w * w
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = total - n_fft // 2 if center else total
    if np.abs(envelope[start:end]).min() < 1e-11:
        raise ValueError("NOLA: the overlap-added squared window vanishes")
    y = y[:, start:end] / envelope[start:end]
    if length is not None and y.shape[1] < length:
        y = np.pad(y, ((0, 0), (0, length - y.shape[1])))
    return y if batched else y[0]


def signal(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def hann(n, dtype=np.float64):
    return np.hanning(n + 2)[1:-1].astype(dtype)  # no zeros: NOLA holds with center=False


def E(a):
    return ember.from_numpy(np.array(a, order="C"))  # (a copy; 0-d stays 0-d)


def tol(dtype):
    return 2e-4 if np.dtype(dtype) in SINGLE else 1e-10


def close(actual, expected, dtype):
    actual = actual.detach().numpy() if isinstance(actual, ember.Tensor) else actual
    np.testing.assert_allclose(actual, expected, rtol=tol(dtype), atol=tol(dtype))


def real_of(dtype):
    return {np.dtype(np.complex64): np.float32,
            np.dtype(np.complex128): np.float64}.get(np.dtype(dtype), dtype)


# ---- stft values ----

WINDOWS = [  # (n_fft, hop_length, win_length, window kind)
    (16, None, None, "none"),
    (16, 4, None, "hann"),
    (16, 5, 10, "hann"),  # a window shorter than n_fft, centred in it
    (9, 3, 4, "none"),  # odd n_fft, a shorter rectangular window
    (7, 2, 6, "hann"),
]
PADS = [(True, m) for m in PAD_MODES] + [(False, "reflect")]


def _window(kind, n_fft, win_length, dtype):
    if kind == "none":
        return None
    return hann(n_fft if win_length is None else win_length, real_of(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("center,pad_mode", PADS)
@pytest.mark.parametrize("batched", [False, True])
def test_stft_matches_numpy(dtype, center, pad_mode, batched):
    x = signal((3, 40) if batched else (40,), dtype)
    complex_input = np.iscomplexobj(x)
    for n_fft, hop, win, kind in WINDOWS:
        w = _window(kind, n_fft, win, dtype)
        for normalized in (False, True):
            for onesided in ([None, False] if complex_input else [None, True, False]):
                kw = dict(hop_length=hop, win_length=win, center=center, pad_mode=pad_mode,
                          normalized=normalized, onesided=onesided)
                with _quiet():
                    got = ember.stft(E(x), n_fft, window=None if w is None else E(w),
                                     return_complex=True, **kw)
                want = ref_stft(x, n_fft, window=w, **kw)
                assert tuple(got.shape) == want.shape
                assert got.dtype == (ember.complex64 if np.dtype(dtype) in SINGLE
                                     else ember.complex128)
                close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batched", [False, True])
def test_stft_matches_torch(dtype, batched):
    torch = pytest.importorskip("torch")
    x = signal((2, 37) if batched else (37,), dtype, seed=3)
    complex_input = np.iscomplexobj(x)
    for center, pad_mode in PADS:
        for n_fft, hop, win, kind in WINDOWS:
            w = _window(kind, n_fft, win, dtype)
            for normalized in (False, True):
                for onesided in ([None, False] if complex_input else [None, True, False]):
                    kw = dict(hop_length=hop, win_length=win, center=center,
                              pad_mode=pad_mode, normalized=normalized, onesided=onesided,
                              return_complex=True)
                    with _quiet():
                        got = ember.stft(E(x), n_fft, window=None if w is None else E(w), **kw)
                        want = torch.stft(torch.from_numpy(x), n_fft, window=None if w is None
                                          else torch.from_numpy(w), **kw)
                    assert tuple(got.shape) == tuple(want.shape)
                    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
                    close(got, want.numpy(), dtype)


def test_stft_defaults():
    x = signal(64, np.float64)
    with _quiet():
        got = ember.stft(E(x), 16, return_complex=True)
    # hop n_fft // 4, win_length n_fft, rectangular window, centred with reflect padding
    assert tuple(got.shape) == (9, 1 + 64 // 4)
    close(got, ref_stft(x, 16, hop_length=4, center=True, pad_mode="reflect"), np.float64)
    # n_frames: 1 + L // hop centred, 1 + (L - n_fft) // hop otherwise
    with _quiet():
        assert ember.stft(E(x), 16, hop_length=5, return_complex=True).shape[-1] == 1 + 64 // 5
        assert ember.stft(E(x), 16, hop_length=5, center=False,
                          return_complex=True).shape[-1] == 1 + (64 - 16) // 5
        assert ember.stft(E(x), 64, center=False, return_complex=True).shape == (33, 1)


def test_stft_onesided_defaults_and_complex_windows():
    x = signal(32, np.float64)
    xc = signal(32, np.complex128)
    w = hann(8)
    with _quiet():
        assert ember.stft(E(x), 8, window=E(w), return_complex=True).shape[0] == 5
        assert ember.stft(E(xc), 8, window=E(w)).shape[0] == 8  # complex: return_complex too
        cw = E(w * (1 + 0.5j))
        got = ember.stft(E(x), 8, window=cw)  # a complex window: two-sided, complex
    assert got.dtype == ember.complex128 and got.shape[0] == 8
    close(got, ref_stft(x, 8, window=w * (1 + 0.5j)), np.float64)


def test_stft_return_real_is_view_as_real_and_warns_once():
    x = signal((2, 30), np.float32)
    w = E(hann(8, np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        real = ember.stft(E(x), 8, window=w, return_complex=False)
        ember.stft(E(x), 8, window=w, return_complex=False)
    messages = [str(c.message) for c in caught]
    assert messages == [_spectral._RETURN_REAL_DEPRECATED]
    assert messages[0].startswith("stft with return_complex=False is deprecated.")
    comp = ember.stft(E(x), 8, window=w, return_complex=True)
    assert real.dtype == ember.float32 and tuple(real.shape) == tuple(comp.shape) + (2,)
    np.testing.assert_array_equal(real.numpy(), ember.view_as_real(comp).numpy())
    # a complex input with return_complex=False: the real view, no error
    with _quiet():
        r = ember.stft(E(signal(30, np.complex64)), 8, window=w, return_complex=False)
    assert r.dtype == ember.float32 and r.shape == (8, 16, 2)


def test_stft_window_dtype_promotion():
    x = signal(40, np.float32)
    with _quiet():
        assert ember.stft(E(x), 8, window=E(hann(8)), return_complex=True).dtype == \
            ember.complex128
        ints = ember.stft(E(x), 8, window=E(np.ones(8, np.int64)), return_complex=True)
        bools = ember.stft(E(x), 8, window=E(np.ones(8, bool)), return_complex=True)
        plain = ember.stft(E(x), 8, window=None, return_complex=True)
    assert ints.dtype == bools.dtype == ember.complex64
    close(ints, plain.numpy(), np.float32)
    close(bools, plain.numpy(), np.float32)


@pytest.mark.parametrize("n_fft,win,hop", [(16, 8, 3), (16, 6, 4), (10, 4, 1), (8, 8, 2)])
def test_stft_align_to_window(n_fft, win, hop):
    x = signal((2, 41), np.float64)
    w = hann(win)
    got = ember.stft(E(x), n_fft, hop_length=hop, win_length=win, window=E(w), center=False,
                     align_to_window=True, return_complex=True)
    want = ref_stft(x, n_fft, hop, win, w, center=False, align_to_window=True)
    assert tuple(got.shape) == want.shape
    assert got.shape[-1] == 1 + (41 - win) // hop  # the frames start where their windows do
    close(got, want, np.float64)
    same = ember.stft(E(x), n_fft, hop_length=hop, win_length=win, window=E(w), center=False,
                      align_to_window=False, return_complex=True)
    close(same, ref_stft(x, n_fft, hop, win, w, center=False), np.float64)


def test_stft_align_to_window_matches_torch():
    torch = pytest.importorskip("torch")
    x = signal((2, 41), np.float64)
    for n_fft, win, hop in [(16, 8, 3), (16, 6, 4), (10, 4, 1)]:  # (n_fft - win even: torch
        w = hann(win)                                             # reads past odd ones)
        got = ember.stft(E(x), n_fft, hop, win, E(w), center=False, align_to_window=True,
                         return_complex=True)
        want = torch.stft(torch.from_numpy(x), n_fft, hop, win, torch.from_numpy(w),
                          center=False, align_to_window=True, return_complex=True)
        close(got, want.numpy(), np.float64)


def test_stft_noncontiguous_input():
    x = signal((30, 2), np.float64).T  # a transposed (2, 30) signal
    w = hann(8)
    got = ember.stft(E(x.copy()).t().contiguous().t(), 8, window=E(w), return_complex=True)
    close(got, ref_stft(x, 8, window=w), np.float64)


# ---- istft values ----

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("n_fft,hop,win", [(16, None, None), (16, 4, 12), (15, 5, None),
                                           (32, 8, 32), (8, 1, 8)])
def test_round_trip(dtype, batched, n_fft, hop, win):
    x = signal((3, 100) if batched else (100,), dtype, seed=5)
    w = E(np.hanning(win or n_fft).astype(dtype))  # Hann: its zeros sit in the trimmed edges
    spec = ember.stft(E(x), n_fft, hop, win, w, return_complex=True)
    y = ember.istft(spec, n_fft, hop, win, w, length=100)
    assert y.dtype == E(x).dtype and tuple(y.shape) == x.shape
    close(y, x, dtype)
    # without length: n_fft + hop * (n_frames - 1) - 2 * (n_fft // 2) samples
    y2 = ember.istft(spec, n_fft, hop, win, w)
    h = n_fft // 4 if hop is None else hop
    assert y2.shape[-1] == h * (spec.shape[-1] - 1) + n_fft - 2 * (n_fft // 2)
    close(y2, x[..., :y2.shape[-1]], dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_round_trip_complex(dtype):
    x = signal((2, 50), dtype)
    w = E(np.hanning(16).astype(real_of(dtype)))
    spec = ember.stft(E(x), 16, 4, window=w)
    assert spec.shape == (2, 16, 13)
    y = ember.istft(spec, 16, 4, window=w, length=50, return_complex=True)
    assert y.dtype == E(x).dtype
    close(y, x, dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("normalized", [False, True])
def test_istft_matches_numpy(dtype, center, normalized):
    rng = np.random.default_rng(7)
    checked = {"values": 0, "NOLA": 0}
    for n_fft, hop, win, onesided, rc in [(16, 4, None, None, False), (16, 4, 10, None, False),
                                          (16, 4, None, False, False), (9, 3, None, None, False),
                                          (16, 4, None, None, True), (12, 3, 8, False, True)]:
        freq = n_fft if onesided is False or rc else n_fft // 2 + 1
        spec = (rng.standard_normal((2, freq, 9)) + 1j * rng.standard_normal((2, freq, 9)))
        spec = spec.astype(dtype)
        w = hann(n_fft if win is None else win, real_of(dtype))
        for length in (None, 20, 60):
            kw = dict(hop_length=hop, win_length=win, center=center, normalized=normalized,
                      onesided=onesided, length=length, return_complex=rc)
            try:
                want = ref_istft(spec, n_fft, window=w, **kw)
            except ValueError:  # the squared window vanishes somewhere in the kept samples
                checked["NOLA"] += 1
                with _quiet(), pytest.raises(RuntimeError, match="window overlap add min: 1"):
                    ember.istft(E(spec), n_fft, window=E(w), **kw)
                continue
            checked["values"] += 1
            with _quiet():
                got = ember.istft(E(spec), n_fft, window=E(w), **kw)
            assert tuple(got.shape) == want.shape
            close(got, want, dtype)
            with _quiet():
                got1 = ember.istft(E(spec[1]), n_fft, window=E(w), **kw)  # unbatched
            close(got1, want[1], dtype)
    assert checked["values"] >= 9


def test_istft_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    for dtype in (np.complex64, np.complex128):
        for n_fft, hop, win, onesided, rc in [(16, 4, None, None, False),
                                              (16, 4, 10, None, False),
                                              (16, 4, None, False, False),
                                              (9, 3, None, None, False),
                                              (16, 4, None, None, True)]:
            freq = n_fft if onesided is False or rc else n_fft // 2 + 1
            spec = rng.standard_normal((2, freq, 9)) + 1j * rng.standard_normal((2, freq, 9))
            spec = spec.astype(dtype)
            w = hann(n_fft if win is None else win, real_of(dtype))
            for center in (True, False):
                for normalized in (False, True):
                    for length in (None, 20, 60):
                        kw = dict(hop_length=hop, win_length=win, center=center,
                                  normalized=normalized, onesided=onesided, length=length,
                                  return_complex=rc)
                        with _quiet():
                            try:
                                want = torch.istft(torch.from_numpy(spec), n_fft,
                                                   window=torch.from_numpy(w), **kw)
                            except RuntimeError as e:  # NOLA: the same error
                                with pytest.raises(RuntimeError) as info:
                                    ember.istft(E(spec), n_fft, window=E(w), **kw)
                                assert str(info.value) == str(e).replace("torch.", "ember.")
                                continue
                            got = ember.istft(E(spec), n_fft, window=E(w), **kw)
                        assert tuple(got.shape) == tuple(want.shape)
                        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
                        close(got, want.numpy(), dtype)


def test_istft_length_pads_with_a_warning():
    x = signal(40, np.float64)
    w = E(hann(8))
    spec = ember.stft(E(x), 8, window=w, return_complex=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        long = ember.istft(spec, 8, window=w, length=55)
        ember.istft(spec, 8, window=w, length=55)
    assert [str(c.message) for c in caught] == [_spectral._LENGTH_PADDED]
    assert long.shape == (55,)
    close(long[:40], x, np.float64)
    # zeros past the end of the overlap-added signal (n_fft + hop * (n_frames - 1) - n_fft // 2)
    assert np.all(long.numpy()[8 + 2 * 20 - 4:] == 0)
    short = ember.istft(spec, 8, window=w, length=17)
    close(short, x[:17], np.float64)


def test_istft_window_dtypes():
    x = signal((2, 40), np.float64)
    with _quiet():
        spec = ember.stft(E(x), 16, 2, return_complex=True)
    plain = ember.istft(spec, 16, 2, window=E(np.ones(16)))
    for w in (np.ones(16, np.int64), np.ones(16, bool)):
        got = ember.istft(spec, 16, 2, window=E(w))
        assert got.dtype == ember.float64
        close(got, plain.numpy(), np.float64)
    spec32 = ember.stft(E(x.astype(np.float32)), 16, 2, return_complex=True)
    assert ember.istft(spec32, 16, 2, window=E(np.ones(16))).dtype == ember.float64
    # a complex window needs return_complex=True (two-sided)
    cw = E(hann(16) * (1 + 0.25j))
    xc = signal(40, np.complex128)
    y = ember.istft(ember.stft(E(xc), 16, 2, window=cw), 16, 2, window=cw, length=40,
                    return_complex=True)
    close(y, xc, np.complex128)


def test_istft_noncontiguous_spectrogram():
    rng = np.random.default_rng(9)
    spec = (rng.standard_normal((9, 5)) + 1j * rng.standard_normal((9, 5))).T  # (5, 9), strided
    w = hann(8)
    got = ember.istft(E(spec.copy()).t().contiguous().t(), 8, window=E(w))
    close(got, ref_istft(spec, 8, window=w), np.float64)


def test_large_signal_round_trip():
    """The overlap-add is one index_add over all frames: a long signal takes moments."""
    x = signal((2, 200_000), np.float32, seed=11)
    w = ember.hann_window(512)
    spec = ember.stft(E(x), 512, 128, window=w, return_complex=True)
    assert spec.shape == (2, 257, 1 + 200_000 // 128)
    y = ember.istft(spec, 512, 128, window=w, length=200_000)
    close(y, x, np.float32)


# ---- warnings ----

def test_missing_window_warns_once():
    x = E(signal(32, np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = ember.stft(x, 8, return_complex=True)
        ember.stft(x, 8, return_complex=True)
        ember.istft(spec, 8)
        ember.istft(spec, 8)
        ember.stft(x, 8, window=ember.ones(8), return_complex=True)
    assert [str(c.message) for c in caught] == [_spectral._STFT_NO_WINDOW,
                                                 _spectral._ISTFT_NO_WINDOW]
    assert all(c.category is UserWarning for c in caught)
    assert caught[0].filename == __file__  # attributed to the caller


def test_warning_texts_match_torch():
    torch = pytest.importorskip("torch")
    import subprocess
    import sys

    code = (
        "import warnings, torch\n"
        "warnings.simplefilter('always')\n"
        "x = torch.randn(32)\n"
        "with warnings.catch_warnings(record=True) as c:\n"
        "    warnings.simplefilter('always')\n"
        "    s = torch.stft(x, 8, return_complex=True)\n"
        "    torch.stft(x, 8, window=torch.ones(8), return_complex=False)\n"
        "    torch.istft(s, 8)\n"
        "    torch.istft(s, 8, window=torch.ones(8), length=60)\n"
        "for w in c:\n"
        "    print(repr(str(w.message).split(' (Triggered internally')[0]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    import ast

    assert [ast.literal_eval(line) for line in out] == [
        _spectral._STFT_NO_WINDOW, _spectral._RETURN_REAL_DEPRECATED,
        _spectral._ISTFT_NO_WINDOW, _spectral._LENGTH_PADDED]
    del torch


# ---- Tensor methods and exports ----

def test_tensor_methods_and_exports():
    x = E(signal((2, 40), np.float64))
    w = E(hann(8))
    spec = x.stft(8, 2, window=w, return_complex=True)
    np.testing.assert_array_equal(
        spec.numpy(), ember.stft(x, 8, 2, window=w, return_complex=True).numpy())
    y = spec.istft(8, 2, window=w, length=40)
    close(y, x.numpy(), np.float64)
    assert ember.stft is _spectral.stft and ember.istft is _spectral.istft
    assert "stft" in ember.__all__ and "istft" in ember.__all__
    import inspect

    assert list(inspect.signature(ember.stft).parameters) == [
        "input", "n_fft", "hop_length", "win_length", "window", "center", "pad_mode",
        "normalized", "onesided", "return_complex", "align_to_window"]
    assert list(inspect.signature(ember.istft).parameters) == [
        "input", "n_fft", "hop_length", "win_length", "window", "center", "normalized",
        "onesided", "length", "return_complex"]


def test_signatures_match_torch():
    torch = pytest.importorskip("torch")
    import inspect

    def defaults(f):
        return [(p.name, p.default) for p in inspect.signature(f).parameters.values()][1:]

    assert defaults(ember.stft) == defaults(torch.functional.stft)
    assert defaults(ember.Tensor.stft) == defaults(torch.Tensor.stft)
    assert defaults(ember.Tensor.istft) == defaults(torch.Tensor.istft)


# ---- errors: torch's messages ----

X20 = signal(20, np.float32, seed=1)
HANN8 = hann(8, np.float32)
SPEC = ref_stft(X20, 8, window=HANN8).astype(np.complex64)  # (5, 11)
SPEC_FULL = ref_stft(X20, 8, window=HANN8, onesided=False).astype(np.complex64)  # (8, 11)


def _t(lib, a):
    return lib.from_numpy(np.array(a, order="C"))


def _s(lib, a, *args, **kw):
    return lib.stft(_t(lib, a), *args, **kw)


def _i(lib, a, *args, **kw):
    return lib.istft(_t(lib, a), *args, **kw)


_S20 = ("stft(ember.FloatTensor[{}], n_fft={}, hop_length={}, win_length={}, window={}, "
        "normalized=0, onesided={}, return_complex={}, align_to_window=None) : ")
_I511 = ("istft(CPUComplexFloatType[5, 11], n_fft={}, hop_length={}, win_length={}, window={}, "
         "center={}, normalized=0, onesided={}, length={}, return_complex=0) ")
_RC = ("stft requires the return_complex parameter be given for real inputs, and will further "
       "require that return_complex=True in a future PyTorch release.")
_NOLA = "window overlap add min: 1\n[ CPUBoolType{} ]"
_W8 = "ember.FloatTensor{[8]}"

ERRORS = {  # name: (call, exception, ember's message)
    "return_complex_missing": (lambda L: _s(L, X20, 8), RuntimeError, _RC),
    "return_complex_missing_int": (lambda L: _s(L, np.arange(20), 4), RuntimeError, _RC),
    "n_fft_zero": (lambda L: _s(L, X20, 0, return_complex=True), RuntimeError,
                   _S20.format(20, 0, 0, 0, "None", "None", 1)
                   + "expected 0 < n_fft < 20, but got n_fft=0"),
    "n_fft_too_big": (lambda L: _s(L, X20, 64, center=False, return_complex=True), RuntimeError,
                      _S20.format(20, 64, 16, 64, "None", "None", 1)
                      + "expected 0 < n_fft < 20, but got n_fft=64"),
    # (torch's message gives win_length as n_fft)
    "n_fft_too_big_win": (lambda L: _s(L, X20, 64, win_length=10, center=False,
                                       return_complex=True), RuntimeError,
                          _S20.format(20, 64, 16, 10, "None", "None", 1)
                          + "expected 0 < n_fft < 20, but got n_fft=10"),
    "n_fft_reflect_pad_too_big": (lambda L: _s(L, X20, 64, return_complex=True), RuntimeError,
                                  "Argument #4: Padding size should be less than the "
                                  "corresponding input dimension, but got: padding (32, 32) at "
                                  "dimension 2 of input [1, 1, 20]"),
    "hop_zero": (lambda L: _s(L, X20, 8, hop_length=0, return_complex=True), RuntimeError,
                 _S20.format(28, 8, 0, 8, "None", "None", 1)
                 + "expected hop_length > 0, but got hop_length=0"),
    "hop_default_zero": (lambda L: _s(L, X20, 3, return_complex=True), RuntimeError,
                         _S20.format(22, 3, 0, 3, "None", "None", 1)
                         + "expected hop_length > 0, but got hop_length=0"),
    "win_too_big": (lambda L: _s(L, X20, 8, win_length=9, return_complex=True), RuntimeError,
                    _S20.format(28, 8, 2, 9, "None", "None", 1)
                    + "expected 0 < win_length <= n_fft, but got win_length=9"),
    "win_zero": (lambda L: _s(L, X20, 8, win_length=0, return_complex=True), RuntimeError,
                 _S20.format(28, 8, 2, 0, "None", "None", 1)
                 + "expected 0 < win_length <= n_fft, but got win_length=0"),
    "window_size": (lambda L: _s(L, X20, 8, window=_t(L, np.ones(7, np.float32)),
                                 return_complex=True), RuntimeError,
                    _S20.format(28, 8, 2, 8, "ember.FloatTensor{[7]}", "None", 1)
                    + "expected a 1D window tensor of size equal to win_length=8, but got "
                      "window with size [7]"),
    "window_2d": (lambda L: _s(L, X20, 8, window=_t(L, np.ones((2, 4), np.float64)),
                               return_complex=True), RuntimeError,
                  _S20.format(28, 8, 2, 8, "ember.DoubleTensor{[2, 4]}", "None", 1)
                  + "expected a 1D window tensor of size equal to win_length=8, but got "
                    "window with size [2, 4]"),
    "window_complex_size": (lambda L: _s(L, X20, 8, window=_t(L, np.ones(7, np.complex64)),
                                         return_complex=True), RuntimeError,
                            _S20.format(28, 8, 2, 8, "CPUComplexFloatType{[7]}", "None", 1)
                            + "expected a 1D window tensor of size equal to win_length=8, but "
                              "got window with size [7]"),
    "input_3d": (lambda L: _s(L, X20.reshape(2, 2, 5), 4, return_complex=True), RuntimeError,
                 "stft(ember.FloatTensor[2, 2, 9], n_fft=4, hop_length=1, win_length=4, "
                 "window=None, normalized=0, onesided=None, return_complex=1, "
                 "align_to_window=None) : expected a 1D or 2D tensor"),
    "input_4d": (lambda L: _s(L, np.zeros((2, 3, 4, 5), np.float32), 4, return_complex=True),
                 NotImplementedError,
                 "Padding size 2 is not supported for 4D input tensor.\nSupported combinations "
                 "for non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last "
                 "dimension)\n  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                 "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"),
    "input_0d": (lambda L: _s(L, np.float32(1.0).reshape(()), 4, return_complex=True,
                              center=False), RuntimeError,
                 "stft(ember.FloatTensor[], n_fft=4, hop_length=1, win_length=4, window=None, "
                 "normalized=0, onesided=None, return_complex=1, align_to_window=None) : "
                 "expected a 1D or 2D tensor"),
    "input_0d_constant_pad": (lambda L: _s(L, np.float32(1.0).reshape(()), 4,
                                           return_complex=True, pad_mode="constant"),
                              RuntimeError,
                              "stft(ember.FloatTensor[1, 1, 5], n_fft=4, hop_length=1, "
                              "win_length=4, window=None, normalized=0, onesided=None, "
                              "return_complex=1, align_to_window=None) : expected a 1D or 2D "
                              "tensor"),
    "input_int": (lambda L: _s(L, np.arange(20), 4, return_complex=True), RuntimeError,
                  "stft(ember.LongTensor[24], n_fft=4, hop_length=1, win_length=4, window=None, "
                  "normalized=0, onesided=None, return_complex=1, align_to_window=None) : "
                  "expected a tensor of floating point or complex values"),
    "complex_onesided": (lambda L: _s(L, X20.astype(np.complex64), 4, onesided=True),
                         RuntimeError, "Cannot have onesided output if window or input is "
                                       "complex"),
    "complex_window_onesided": (lambda L: _s(L, X20, 4, window=_t(L, np.ones(4, np.complex64)),
                                             onesided=True), RuntimeError,
                                "Cannot have onesided output if window or input is complex"),
    "pad_mode_unknown": (lambda L: _s(L, X20, 4, pad_mode="bogus", return_complex=True),
                         NotImplementedError, "Unrecognised padding mode bogus"),
    "circular_pad_too_big": (lambda L: _s(L, X20, 42, pad_mode="circular", return_complex=True),
                             RuntimeError, "Padding value causes wrapping around more than "
                                           "once."),
    "align_with_center": (lambda L: _s(L, X20, 8, align_to_window=False, return_complex=True),
                          RuntimeError, "stft align_to_window should only be set when center = "
                                        "false"),
    "empty": (lambda L: _s(L, np.zeros(0, np.float32), 8, return_complex=True), RuntimeError,
              "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other "
              "non-zero dimensions for input, but got: [1, 1, 0]"),
    "half": (lambda L: _s(L, X20.astype(np.float16), 8, return_complex=True), RuntimeError,
             "MKL FFT doesn't support tensors of type: Half"),
    # istft
    "i_real_input": (lambda L: _i(L, np.stack([SPEC.real, SPEC.imag], -1), 8,
                                  window=_t(L, HANN8)), RuntimeError,
                     "istft requires a complex-valued input tensor matching the output from "
                     "stft with return_complex=True."),
    "i_empty": (lambda L: _i(L, SPEC[:, :0], 8, window=_t(L, HANN8)), RuntimeError,
                "istft(CPUComplexFloatType[5, 0], n_fft=8, hop_length=2, win_length=8, "
                f"window={_W8}, center=1, normalized=0, onesided=None, length=None, "
                "return_complex=0) : input tensor cannot be empty."),
    "i_1d": (lambda L: _i(L, SPEC[0], 8, window=_t(L, HANN8)), IndexError,
             "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    "i_0d": (lambda L: _i(L, SPEC[0, 0].reshape(()), 8, window=_t(L, HANN8)), IndexError,
             "Dimension out of range (expected to be in range of [-1, 0], but got -2)"),
    "i_4d": (lambda L: _i(L, SPEC.reshape(1, 1, 5, 11), 8, window=_t(L, HANN8)), RuntimeError,
             "istft(CPUComplexFloatType[1, 1, 5, 11], n_fft=8, hop_length=2, win_length=8, "
             f"window={_W8}, center=1, normalized=0, onesided=None, length=None, "
             "return_complex=0) : expected a tensor with 3 or 4 dimensions, but got 5"),
    "i_onesided_false": (lambda L: _i(L, SPEC, 8, window=_t(L, HANN8), onesided=False),
                         RuntimeError, _I511.format(8, 2, 8, _W8, 1, 0, "None")
                         + ": expected the frequency dimension (3rd to the last) of the input "
                           "tensor to match n_fft when onesided=False, but got 5"),
    "i_onesided_true": (lambda L: _i(L, SPEC_FULL, 8, window=_t(L, HANN8), onesided=True),
                        RuntimeError,
                        "istft(CPUComplexFloatType[8, 11], n_fft=8, hop_length=2, "
                        f"win_length=8, window={_W8}, center=1, normalized=0, onesided=1, "
                        "length=None, return_complex=0) : expected the frequency dimension "
                        "(3rd to the last) of the input tensor to match n_fft / 2 + 1 when "
                        "onesided=True, but got 8"),
    "i_n_fft_mismatch": (lambda L: _i(L, SPEC, 7, window=_t(L, np.ones(7, np.float32))),
                         RuntimeError, _I511.format(7, 1, 7, "ember.FloatTensor{[7]}", 1,
                                                    "None", "None")
                         + ": expected the frequency dimension (3rd to the last) of the input "
                           "tensor to match n_fft / 2 + 1 when onesided=True, but got 5"),
    "i_n_fft_zero": (lambda L: _i(L, SPEC, 0), RuntimeError,
                     _I511.format(0, 0, 0, "None", 1, "None", "None")
                     + ": expected the frequency dimension (3rd to the last) of the input "
                       "tensor to match n_fft / 2 + 1 when onesided=True, but got 5"),
    "i_return_complex_onesided": (lambda L: _i(L, SPEC, 8, window=_t(L, HANN8),
                                               return_complex=True), RuntimeError,
                                  "Cannot have onesided output if window or input is complex"),
    "i_hop_zero": (lambda L: _i(L, SPEC, 8, window=_t(L, HANN8), hop_length=0), RuntimeError,
                   _I511.format(8, 0, 8, _W8, 1, "None", "None")
                   + ": expected 0 < hop_length <= win_length"),
    "i_hop_above_win": (lambda L: _i(L, SPEC, 8, window=_t(L, HANN8[:4]), hop_length=5,
                                     win_length=4), RuntimeError,
                        _I511.format(8, 5, 4, "ember.FloatTensor{[4]}", 1, "None", "None")
                        + ": expected 0 < hop_length <= win_length"),
    "i_win_too_big": (lambda L: _i(L, SPEC, 8, window=_t(L, HANN8), win_length=9),
                      RuntimeError, _I511.format(8, 2, 9, _W8, 1, "None", "None")
                      + ": expected 0 < win_length <= n_fft"),
    "i_window_size": (lambda L: _i(L, SPEC, 8, window=_t(L, np.ones(7, np.float32))),
                      RuntimeError,
                      _I511.format(8, 2, 8, "ember.FloatTensor{[7]}", 1, "None", "None")
                      + ": Invalid window shape. window has to be 1D and length of "
                        "`win_length`"),
    "i_complex_window_real_output": (lambda L: _i(L, SPEC, 8,
                                                  window=_t(L, np.ones(8, np.complex64))),
                                     RuntimeError,
                                     "Complex windows are incompatible with return_complex="
                                     "False"),
    "i_nola_zero_window": (lambda L: _i(L, SPEC, 8, window=_t(L, np.zeros(8, np.float32))),
                           RuntimeError, _I511.format(8, 2, 8, _W8, 1, "None", "None")
                           + _NOLA),
    "i_nola_center_false": (lambda L: _i(L, SPEC, 8, window=_t(L, np.hanning(8)
                                                             .astype(np.float32)),
                                         center=False), RuntimeError,
                            _I511.format(8, 2, 8, _W8, 0, "None", "None") + _NOLA),
    "i_nola_int_window": (lambda L: _i(L, SPEC, 8, window=_t(L, np.eye(8, dtype=np.int64)[3])),
                          RuntimeError, _I511.format(8, 2, 8, "ember.LongTensor{[8]}", 1, "None",
                                                     "None") + _NOLA),
    "i_length_zero": (lambda L: _i(L, SPEC, 8, window=_t(L, HANN8), length=0), RuntimeError,
                      "min(): Expected reduction dim to be specified for input.numel() == 0. "
                      "Specify the reduction dim with the 'dim' argument."),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    call, exc, message = ERRORS[name]
    with _quiet(), pytest.raises(exc) as info:
        call(ember)
    assert str(info.value) == message


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    torch = pytest.importorskip("torch")
    call, exc, message = ERRORS[name]
    with _quiet(), pytest.raises(exc) as info:
        call(torch)
    assert str(info.value).replace("torch.", "ember.") == message


def test_argument_types():
    x = E(X20)
    with pytest.raises(TypeError, match="argument 'n_fft' must be int, not float"):
        ember.stft(x, 8.0, return_complex=True)
    with pytest.raises(TypeError, match="argument 'hop_length' must be int, not float"):
        ember.istft(E(SPEC), 8, hop_length=2.0)
    with pytest.raises(TypeError, match="argument 'window' must be Tensor, not list"):
        ember.istft(E(SPEC), 8, window=[1.0] * 8)
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor"):
        ember.istft([1.0] * 8, 8)
    with pytest.raises(TypeError, match="argument 'center' must be bool, not int"):
        ember.istft(E(SPEC), 8, window=E(HANN8), center=1)
    assert ember.stft(x, np.int64(8), return_complex=True, window=E(HANN8)).shape == (5, 11)


# ---- gradients ----

def test_gradcheck_stft_real_input():
    autograd = pytest.importorskip("ember.autograd")
    x = ember.randn(2, 12, dtype=ember.float64, requires_grad=True)
    w = ember.rand(6, dtype=ember.float64).add(0.5).requires_grad_()
    for pad_mode in PAD_MODES:
        assert autograd.gradcheck(
            lambda x, w, m=pad_mode: ember.stft(x, 6, 2, window=w, pad_mode=m, return_complex=True),
            (x, w))
    w4 = ember.rand(4, dtype=ember.float64, requires_grad=True)
    assert autograd.gradcheck(
        lambda x, w: ember.stft(x, 6, 2, 4, w, normalized=True, return_complex=True), (x, w4))
    with _quiet():  # (return_complex=False: deprecated)
        assert autograd.gradcheck(
            lambda x: ember.stft(x[0], 6, 3, window=w.detach(), center=False, onesided=False,
                                 return_complex=False), (x,))
    assert autograd.gradcheck(
        lambda x: ember.stft(x, 6, 2, 4, w4.detach(), center=False, align_to_window=True,
                             return_complex=True), (x,))


def test_gradcheck_stft_complex_input():
    autograd = pytest.importorskip("ember.autograd")
    z = ember.randn(12, dtype=ember.complex128, requires_grad=True)
    w = ember.rand(6, dtype=ember.float64).add(0.5)
    assert autograd.gradcheck(lambda z: ember.stft(z, 6, 2, window=w), (z,))


def test_gradcheck_istft():
    autograd = pytest.importorskip("ember.autograd")
    w = ember.rand(6, dtype=ember.float64).add(0.5).requires_grad_()
    x = ember.randn(2, 12, dtype=ember.float64)
    s = ember.stft(x, 6, 2, window=w.detach(), return_complex=True).requires_grad_()
    assert autograd.gradcheck(lambda s, w: ember.istft(s, 6, 2, window=w), (s, w))
    assert autograd.gradcheck(
        lambda s: ember.istft(s, 6, 2, window=w.detach(), center=False, normalized=True,
                              length=16), (s,))  # (padded past the signal's end)
    z = ember.randn(12, dtype=ember.complex128)
    sc = ember.stft(z, 6, 2, window=w.detach()).requires_grad_()
    assert autograd.gradcheck(
        lambda s: ember.istft(s, 6, 2, window=w.detach(), return_complex=True), (sc,))
    assert autograd.gradcheck(
        lambda s: ember.istft(s, 6, 2, window=w.detach(), win_length=6, onesided=False), (sc,))


def test_round_trip_gradient_is_identity():
    pytest.importorskip("ember.autograd")
    x = ember.randn(2, 300, dtype=ember.float64, requires_grad=True)
    w = ember.hann_window(32, dtype=ember.float64)
    y = ember.istft(ember.stft(x, 32, 8, window=w, return_complex=True), 32, 8, window=w,
                    length=300)
    g = ember.randn(2, 300, dtype=ember.float64)
    (y * g).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), g.numpy(), atol=1e-10)


# ---- autocast ----

def test_autocast_runs_stft_in_float32():
    """torch lists stft among the float32 ops of autocast (CPU and CUDA): its inputs are cast."""
    x = E(signal((2, 40), np.float32)).bfloat16()
    w = ember.hann_window(8).bfloat16()
    with ember.autocast("cpu", dtype=ember.bfloat16):
        got = ember.stft(x, 8, window=w, return_complex=True)
        method = x.stft(8, window=w, return_complex=True)
    want = ember.stft(x.float(), 8, window=w.float(), return_complex=True)
    assert got.dtype == method.dtype == ember.complex64
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(method.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match="MKL FFT doesn't support tensors of type: BFloat16"):
        ember.stft(x, 8, window=w, return_complex=True)  # (outside the region)
