"""ember.fft: torch.fft's real-valued helpers (sample frequencies and shifts).

The transforms themselves (fft, rfft, ifft, ...) give complex results, and ember has no complex
dtypes yet: asking for one raises an AttributeError saying so (tools/api_absences.toml lists them).
"""

from __future__ import annotations

from collections.abc import Sequence

import ember

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_COMPLEX = {
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
    "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
}


def _frequencies(name, n, d, dtype, device, requires_grad, out, count):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"fft_{name}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    k = ember.arange(count, dtype=dtype or ember.get_default_dtype(), device=device)
    if name == "fftfreq":  # 0, 1, ..., (n-1)//2, -(n//2), ..., -1
        k = ember.where(k > (n - 1) // 2, k - n, k)
    # as torch: a multiply by 1/(n d), not a division (n = 0: rfftfreq's one term is 0 * inf)
    result = k * (1.0 / (n * d) if n * d != 0 else float("inf"))
    if out is not None:
        out.resize_(result.shape).copy_(result)
        result = out
    return result.requires_grad_() if requires_grad else result


def fftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad: bool = False, pin_memory: bool = False):
    """The sample frequencies of a signal of size n with sample spacing d (torch.fft.fftfreq)."""
    return _frequencies("fftfreq", n, d, dtype, device, requires_grad, out, n)


def rfftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False):
    """The non-negative sample frequencies, 0 to n // 2 (torch.fft.rfftfreq)."""
    return _frequencies("rfftfreq", n, d, dtype, device, requires_grad, out, n // 2 + 1)


def _shift(input, dim, sign):
    if dim is None:
        dims = tuple(range(input.dim()))
    elif isinstance(dim, int):
        dims = (dim,)
    elif isinstance(dim, Sequence):
        dims = tuple(dim)
    else:
        raise TypeError(f"dim must be an int, a sequence of ints or None, not {type(dim).__name__}")
    if not dims:
        return input.clone()
    shifts = tuple(sign * (input.shape[d] // 2) for d in dims)
    return ember.roll(input, shifts, dims)


def fftshift(input, dim=None):
    """The zero-frequency term moved to the centre of each dim in `dim` (all by default)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of fftshift."""
    return _shift(input, dim, -1)


def __getattr__(name: str):
    if name in _COMPLEX:  # an AttributeError, so that hasattr() stays False
        raise AttributeError(
            f"ember.fft.{name} returns complex tensors, and ember has no complex dtypes yet")
    raise AttributeError(f"module 'ember.fft' has no attribute {name!r}")
