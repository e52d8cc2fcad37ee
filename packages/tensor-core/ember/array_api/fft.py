"""ember.array_api.fft: the standard's FFT extension (2023.12) over ember.fft.

The standard's names and keywords mapped onto ember.fft's torch-style functions: ``axis`` is
``dim``, ``axes`` is ``dim`` (a sequence), ``n`` and ``s`` are the same; ``norm`` is one of
``"backward"`` (the default), ``"ortho"`` and ``"forward"``. The types are the standard's:
``fft``/``ifft``/``fftn``/``ifftn`` keep a complex input's dtype; ``rfft``/``rfftn``/``ihfft``
give the complex dtype of a real input's precision; ``irfft``/``irfftn``/``hfft`` give the real
dtype of a complex input's precision; ``fftfreq``/``rfftfreq`` give the default real floating
dtype (or ``dtype=``, as the 2024.12 revision allows). The transforms' inputs should have the
dtypes the standard names (complex, or real floating for ``rfft``/``rfftn``/``ihfft``); others are
promoted as ember.fft promotes them.
"""

from __future__ import annotations

import builtins
import importlib

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_NORMS = ("backward", "ortho", "forward")


def _fft(name: str):
    """ember.fft.<name>, or NotImplementedError naming it where this build of the core lacks it
    (ember.fft is imported on first use, so that the namespace imports without it)."""
    try:
        mod = importlib.import_module("ember.fft")
    except ImportError:
        mod = None
    fn = getattr(mod, name, None)
    if fn is None:
        raise NotImplementedError(
            f"ember.array_api.fft.{name} needs ember.fft.{name}, which this build of the core "
            "does not have")
    return fn


def _check_norm(norm) -> None:
    if norm not in _NORMS:
        raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}")


def _check_device(device) -> None:
    if device is not None and str(device) != "cpu":
        raise ValueError(f"device {device!r} is not available in this build of ember")


def _axes(axes):
    return None if axes is None else tuple(axes)


def fft(x, /, *, n=None, axis: int = -1, norm: str = "backward"):
    """The 1-d discrete Fourier transform along `axis` (ember.fft.fft)."""
    _check_norm(norm)
    return _fft("fft")(x, n=n, dim=axis, norm=norm)


def ifft(x, /, *, n=None, axis: int = -1, norm: str = "backward"):
    """The 1-d inverse discrete Fourier transform along `axis` (ember.fft.ifft)."""
    _check_norm(norm)
    return _fft("ifft")(x, n=n, dim=axis, norm=norm)


def fftn(x, /, *, s=None, axes=None, norm: str = "backward"):
    """The n-d discrete Fourier transform over `axes` (all by default; ember.fft.fftn)."""
    _check_norm(norm)
    return _fft("fftn")(x, s=s, dim=_axes(axes), norm=norm)


def ifftn(x, /, *, s=None, axes=None, norm: str = "backward"):
    """The n-d inverse discrete Fourier transform over `axes` (ember.fft.ifftn)."""
    _check_norm(norm)
    return _fft("ifftn")(x, s=s, dim=_axes(axes), norm=norm)


def rfft(x, /, *, n=None, axis: int = -1, norm: str = "backward"):
    """The 1-d transform of a real input: the n // 2 + 1 non-negative frequency terms."""
    _check_norm(norm)
    return _fft("rfft")(x, n=n, dim=axis, norm=norm)


def irfft(x, /, *, n=None, axis: int = -1, norm: str = "backward"):
    """The inverse of rfft: n real points (2 * (m - 1) by default)."""
    _check_norm(norm)
    return _fft("irfft")(x, n=n, dim=axis, norm=norm)


def rfftn(x, /, *, s=None, axes=None, norm: str = "backward"):
    """The n-d transform of a real input, the last axis cut to s[-1] // 2 + 1 terms."""
    _check_norm(norm)
    return _fft("rfftn")(x, s=s, dim=_axes(axes), norm=norm)


def irfftn(x, /, *, s=None, axes=None, norm: str = "backward"):
    """The inverse of rfftn: real, the last axis 2 * (m - 1) points by default."""
    _check_norm(norm)
    return _fft("irfftn")(x, s=s, dim=_axes(axes), norm=norm)


def hfft(x, /, *, n=None, axis: int = -1, norm: str = "backward"):
    """The 1-d transform of a Hermitian-symmetric signal given by its half: n real points."""
    _check_norm(norm)
    return _fft("hfft")(x, n=n, dim=axis, norm=norm)


def ihfft(x, /, *, n=None, axis: int = -1, norm: str = "backward"):
    """The inverse of hfft, from a real input: n // 2 + 1 complex terms."""
    _check_norm(norm)
    return _fft("ihfft")(x, n=n, dim=axis, norm=norm)


def fftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None):
    """The sample frequencies of a transform of n points with spacing d, in the default real
    floating dtype (or `dtype`, a real floating dtype)."""
    _check_device(device)
    return _fft("fftfreq")(n, d, dtype=dtype)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype=None, device=None):
    """The n // 2 + 1 non-negative sample frequencies (for rfft and irfft)."""
    _check_device(device)
    return _fft("rfftfreq")(n, d, dtype=dtype)


def fftshift(x, /, *, axes=None):
    """The zero-frequency term moved to the centre of each axis in `axes` (all by default)."""
    return _fft("fftshift")(x, dim=axes if axes is None or isinstance(axes, builtins.int)
                         else tuple(axes))


def ifftshift(x, /, *, axes=None):
    """The inverse of fftshift."""
    return _fft("ifftshift")(x, dim=axes if axes is None or isinstance(axes, builtins.int)
                          else tuple(axes))

