"""``stft`` and ``istft``: torch.stft / torch.istft over ember.fft and the core's shape ops.

stft (torch 2.13's signature, defaults, dtype rules, warnings and error messages): the signal
(1-D, or 2-D with a batch dim first) is padded by ``n_fft // 2`` on both sides with ``pad_mode``
when ``center``; cut into frames of ``n_fft`` samples ``hop_length`` apart (``Tensor.unfold``,
a view); multiplied by the window, zero-padded on both sides to ``n_fft`` when ``win_length`` is
shorter (a rectangular window of ``win_length`` ones when none is given); and transformed
(``ember.fft.rfft`` for a real signal and window, one-sided by default; ``ember.fft.fft``
otherwise), ``norm="ortho"`` when ``normalized``. The result is ``(B?, freq, frames)``, complex,
or its ``view_as_real`` with ``return_complex=False`` (deprecated, as in torch). With
``center=False`` and ``align_to_window=True`` a frame starts where its (shorter) window starts.

istft inverts it: the frames' inverse transforms (``irfft`` of the one-sided half, or ``ifft``
with ``return_complex=True``) times the window are overlap-added (one ``index_add`` over all
frames, on real views for complex values) and divided by the overlap-added squared window,
whose smallest magnitude must stay above 1e-11 (torch's NOLA check); ``center`` trims the
``n_fft // 2`` padded samples and ``length`` cuts the signal, or pads it with zeros.

Both are differentiable through their parts (ember.autograd's formulas for unfold, index_add,
the pads, the FFTs and the complex views): a real signal of stft and a complex spectrogram of
istft, and their windows. Messages are torch's, with a tensor's legacy type name as
``Tensor.type()`` spells it ("ember.FloatTensor" where torch writes "torch.FloatTensor").
"""

from __future__ import annotations

import operator
import warnings

import ember
from ember import _C

__all__ = ["stft", "istft"]

Tensor = _C.Tensor

# TORCH_WARN_ONCE: each warning is given once per process (keys of the ones given)
_WARNED: set[str] = set()

_STFT_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied,which is known to cause "
    "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
    "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
    "window, explicitly set `window=torch.ones(n_fft, device=<device>)`."
)
_ISTFT_NO_WINDOW = (
    "A window was not provided. A rectangular window will be applied.Please provide the same "
    "window used by stft to make the inversion lossless.To suppress this warning and use a "
    "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`."
)
_RETURN_REAL_DEPRECATED = (
    "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
    "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
    "Note: you can still call torch.view_as_real on the complex output to recover the old "
    "return format."
)
_LENGTH_PADDED = (
    "The length of signal is shorter than the length parameter. Result is being padded with "
    "zeros in the tail. Please check your center and hop_length settings."
)


def _warn_once(key: str, message: str, stacklevel: int = 3) -> None:
    """Warns at the caller of istft (stacklevel 3) or of stft (4: stft runs _stft)."""
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, UserWarning, stacklevel=stacklevel)


# ---- arguments ----

def _tensor_arg(fname, name, value, position=None, optional=False):
    if value is None and optional:
        return None
    if not isinstance(value, _C.Tensor):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{fname}(): argument '{name}'{where} must be Tensor, not "
                        f"{type(value).__name__}")
    return value


def _int_arg(fname, name, value, optional=False):
    if value is None and optional:
        return None
    # (torch's int: a 0-d integer tensor too, not a bool)
    if isinstance(value, _C.Tensor) and value.dim() == 0 and not value.dtype.is_floating_point \
            and not value.dtype.is_complex and value.dtype != _C.bool:
        return operator.index(value)
    if not isinstance(value, bool) and not isinstance(value, _C.Tensor):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{fname}(): argument '{name}' must be int, not {type(value).__name__}")


def _bool_arg(fname, name, value, optional=False):
    if value is None and optional:
        return None
    if isinstance(value, bool) or type(value).__name__ == "bool_":  # (NumPy's bool too)
        return bool(value)
    raise TypeError(f"{fname}(): argument '{name}' must be bool, not {type(value).__name__}")


# ---- torch's spellings of tensors and values in messages ----

def _sizes(t) -> str:
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


# the dtypes with a legacy tensor type name (torch.FloatTensor, ...)
_LEGACY = frozenset({"Float", "Double", "Half", "Long", "Int", "Short", "Char", "Byte"})


def _type_name(t) -> str:
    """Tensor::toString(): the legacy type name where the dtype has one (``Tensor.type()``,
    ember.FloatTensor where torch writes torch.FloatTensor), else CPUComplexFloatType,
    CUDABFloat16Type, CPUBoolType, ..."""
    name = t.type()
    scalar = name.rsplit(".", 1)[-1][: -len("Tensor")]
    if scalar in _LEGACY:
        return name
    return ("CUDA" if t.is_cuda else "CPU") + scalar + "Type"


def _opt(value) -> str:
    return "None" if value is None else _flag(value)


def _flag(value) -> str:
    return str(int(value)) if isinstance(value, bool) else str(value)


def _window_repr(window) -> str:
    return "None" if window is None else f"{_type_name(window)}{{{_sizes(window)}}}"


def _cdiv(a: int, b: int) -> int:
    """C++'s integer division (towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _slice_bounds(size: int, start: int, end: int) -> tuple[int, int]:
    """Tensor.slice's bounds: negative ones count from the end, both clamped to [0, size]."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end


# ---- stft ----

def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect",
         normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of ``input`` (1-D, or 2-D with a batch dim), as
    torch.stft: ``(B?, n_fft // 2 + 1 or n_fft, n_frames)`` complex values.

    >>> import ember
    >>> x = ember.arange(16, dtype=ember.float64)
    >>> ember.stft(x, 8, hop_length=4, window=ember.hann_window(8, dtype=ember.float64),
    ...            return_complex=True).shape
    ember.Size([5, 5])
    """
    args = (input, n_fft, hop_length, win_length, window, center, pad_mode, normalized,
            onesided, return_complex, align_to_window)
    if _C._is_autocast_active():  # torch lists stft as a float32 op: cast as a whole
        return _autocast_stft()(*args)
    return _stft(*args)


_AUTOCAST: list = []  # stft wrapped by ember.amp for autocast regions, made on first use


def _autocast_stft():
    if not _AUTOCAST:
        from ember.amp.autocast_mode import _listed_function

        _AUTOCAST.append(_listed_function("stft", _stft))
    return _AUTOCAST[0]


def _stft(input, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
          return_complex, align_to_window):
    fname = "stft"
    input = _tensor_arg(fname, "input", input, position=1)
    n_fft = _int_arg(fname, "n_fft", n_fft)
    hop_length = _int_arg(fname, "hop_length", hop_length, optional=True)
    win_length = _int_arg(fname, "win_length", win_length, optional=True)
    window = _tensor_arg(fname, "window", window, optional=True)
    center = _bool_arg(fname, "center", center)
    if not isinstance(pad_mode, str):
        raise TypeError(f"pad(): argument 'mode' (position 3) must be str, not "
                        f"{type(pad_mode).__name__}")
    normalized = _bool_arg(fname, "normalized", normalized)
    onesided = _bool_arg(fname, "onesided", onesided, optional=True)
    return_complex = _bool_arg(fname, "return_complex", return_complex, optional=True)
    align_to_window = _bool_arg(fname, "align_to_window", align_to_window, optional=True)

    # torch.functional.stft's own steps (in Python there, before the kernel)
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        from ember._padding import pad

        signal_dim = input.dim()
        extended_shape = [1] * (3 - signal_dim) + list(input.shape)
        amount = n_fft // 2
        input = pad(input.view(extended_shape), [amount, amount], pad_mode)
        input = input.view(list(input.shape)[-signal_dim:])

    # the kernel (aten::stft)
    if window is None:
        _warn_once("stft_window", _STFT_NO_WINDOW, 4)
    if window is not None and window.device != input.device:
        raise RuntimeError("stft input and window must be on the same device but got self on "
                           f"{input.device} and window on {window.device}")
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    complex_return = return_complex if return_complex is not None else (
        input.is_complex() or (window is not None and window.is_complex()))
    if not complex_return:
        if return_complex is None:
            raise RuntimeError(
                "stft requires the return_complex parameter be given for real inputs, and will "
                "further require that return_complex=True in a future PyTorch release.")
        _warn_once("stft_return_complex", _RETURN_REAL_DEPRECATED, 4)

    def fail(message):
        raise RuntimeError(
            f"stft({_type_name(input)}{_sizes(input)}, n_fft={n_fft}, hop_length={hop}, "
            f"win_length={win}, window={_window_repr(window)}, normalized={_flag(normalized)}, "
            f"onesided={_opt(onesided)}, return_complex={_opt(return_complex)}, "
            f"align_to_window={_opt(align_to_window)}) : {message}")

    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        fail("expected a tensor of floating point or complex values")
    if input.dim() not in (1, 2):
        fail("expected a 1D or 2D tensor")
    x = input.unsqueeze(0) if input.dim() == 1 else input
    length = x.shape[1]
    if n_fft <= 0 or n_fft > length:
        # (torch's message names win_length as n_fft)
        fail(f"expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        fail(f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail(f"expected a 1D window tensor of size equal to win_length={win}, but got window "
             f"with size {_sizes(window)}")

    window_ = window
    if win < n_fft:  # the window centred in n_fft points
        left, right = (n_fft - win) // 2, n_fft - win - (n_fft - win) // 2
        if window is None:
            window_ = _C.ones([win], dtype=input.dtype, device=input.device)
        window_ = _C.constant_pad_nd(window_, [left, right], 0)
        if align_to_window:
            # frames start where their windows start: frame t holds x[t * hop : t * hop + win]
            # at [left, left + win) (torch pads the signal by `left` on both sides instead,
            # and reads past it when n_fft - win is odd)
            x = _C.constant_pad_nd(x, [left, right], 0)

    frames = _frames(x, n_fft, hop)  # (B, n_frames, n_fft)
    if window_ is not None:
        frames = frames * window_
    complex_fft = frames.is_complex()
    one_sided = onesided if onesided is not None else not complex_fft
    if not frames.is_cuda and frames.dtype in (_C.float16, _C.bfloat16):
        name = "Half" if frames.dtype == _C.float16 else "BFloat16"
        raise RuntimeError(f"MKL FFT doesn't support tensors of type: {name}")
    norm = "ortho" if normalized else "backward"
    if complex_fft:
        if one_sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = ember.fft.fft(frames, dim=-1, norm=norm)
    elif one_sided:
        out = ember.fft.rfft(frames, dim=-1, norm=norm)
    else:
        out = ember.fft.fft(frames, dim=-1, norm=norm)
    out = out.transpose(1, 2)
    if input.dim() == 1:
        out = out.squeeze(0)
    return out if complex_return else _C.view_as_real(out)


def _frames(x, n_fft: int, hop: int):
    """(B, L) -> (B, n_frames, n_fft): frame t is x[:, t * hop : t * hop + n_fft]."""
    if not x.is_complex():
        return x.unfold(-1, n_fft, hop)  # a view
    # complex values: unfold the real view (B, L, 2) along L (its derivative is real)
    parts = _C.view_as_real(x).unfold(1, n_fft, hop)  # (B, n_frames, 2, n_fft)
    return _C.view_as_complex(parts.transpose(-1, -2).contiguous())


# ---- istft ----

def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """The inverse of :func:`stft`, as torch.istft: the least-squares signal of the
    spectrogram ``input`` (``(B?, freq, n_frames)``, complex), real unless ``return_complex``.

    >>> import ember
    >>> x = ember.randn(64, dtype=ember.float64)
    >>> w = ember.hann_window(16, dtype=ember.float64)
    >>> y = ember.istft(ember.stft(x, 16, window=w, return_complex=True), 16, window=w,
    ...                 length=64)
    >>> bool(ember.allclose(x, y))
    True
    """
    fname = "istft"
    input = _tensor_arg(fname, "input", input, position=1)
    n_fft = _int_arg(fname, "n_fft", n_fft)
    hop_length = _int_arg(fname, "hop_length", hop_length, optional=True)
    win_length = _int_arg(fname, "win_length", win_length, optional=True)
    window = _tensor_arg(fname, "window", window, optional=True)
    center = _bool_arg(fname, "center", center)
    normalized = _bool_arg(fname, "normalized", normalized)
    onesided = _bool_arg(fname, "onesided", onesided, optional=True)
    length = _int_arg(fname, "length", length, optional=True)
    return_complex = _bool_arg(fname, "return_complex", return_complex)

    if window is None:
        _warn_once("istft_window", _ISTFT_NO_WINDOW)

    if window is not None and window.device != input.device:
        raise RuntimeError("istft input and window must be on the same device but got self on "
                           f"{input.device} and window on {window.device}")
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def prefix():
        return (f"istft({_type_name(input)}{_sizes(input)}, n_fft={n_fft}, hop_length={hop}, "
                f"win_length={win}, window={_window_repr(window)}, center={_flag(center)}, "
                f"normalized={_flag(normalized)}, onesided={_opt(onesided)}, "
                f"length={_opt(length)}, return_complex={_flag(return_complex)}) ")

    def fail(message):
        raise RuntimeError(prefix() + ": " + message)

    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    real_dim = input.dim() + 1  # torch works on view_as_real(input)
    for d in (-2, -3):
        if real_dim < -d:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-real_dim}, {real_dim - 1}], but got {d})")
    n_frames = input.shape[-1]
    fft_size = input.shape[-2]
    expected_len = n_fft + hop * (n_frames - 1)
    if input.numel() == 0:
        fail("input tensor cannot be empty.")
    if real_dim not in (3, 4):
        fail(f"expected a tensor with 3 or 4 dimensions, but got {real_dim}")
    one_sided = onesided if onesided is not None else fft_size != n_fft
    if one_sided:
        if _cdiv(n_fft, 2) + 1 != fft_size:
            fail("expected the frequency dimension (3rd to the last) of the input tensor to "
                 f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    elif n_fft != fft_size:
        fail("expected the frequency dimension (3rd to the last) of the input tensor to match "
             f"n_fft when onesided=False, but got {fft_size}")
    if not (0 < hop <= win):
        fail("expected 0 < hop_length <= win_length")
    if not (0 < win <= n_fft):
        fail("expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        fail("Invalid window shape. window has to be 1D and length of `win_length`")

    real_dtype = _C.view_as_real(input.detach()).dtype
    window_tmp = window if window is not None else _C.ones([win], dtype=real_dtype,
                                                           device=input.device)
    if win != n_fft:
        left = (n_fft - win) // 2
        window_tmp = _C.constant_pad_nd(window_tmp, [left, n_fft - win - left], 0)

    spec = input.unsqueeze(0) if real_dim == 3 else input
    spec = spec.transpose(1, 2)  # (B, n_frames, fft_size)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if one_sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = ember.fft.ifft(spec, dim=-1, norm=norm)
    else:
        if window is not None and window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not one_sided:
            spec = spec.narrow(-1, 0, n_fft // 2 + 1)
        frames = ember.fft.irfft(spec, n=n_fft, dim=-1, norm=norm)  # (B, n_frames, n_fft)

    if not (window_tmp.dtype.is_floating_point or window_tmp.dtype.is_complex):
        # (integer and bool windows: their squares as the frames' real dtype, exactly)
        window_tmp = window_tmp.to(_C.promote_types(window_tmp.dtype, real_dtype))
    y = _overlap_add(frames * window_tmp, hop, expected_len)  # (B, expected_len)
    squares = (window_tmp * window_tmp).expand(1, n_frames, n_fft)
    envelope = _overlap_add(squares, hop, expected_len)  # (1, expected_len)

    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = -(n_fft // 2)
    else:
        end = expected_len
    lo, hi = _slice_bounds(expected_len, start, end)
    y = y.narrow(1, lo, hi - lo)
    envelope = envelope.narrow(1, lo, hi - lo)

    lowest = envelope.detach().abs().min()  # (torch's error for an empty envelope, too)
    if bool((lowest < 1e-11).item()):
        bool_type = ("CUDA" if input.is_cuda else "CPU") + "BoolType"
        raise RuntimeError(prefix() + f"window overlap add min: 1\n[ {bool_type}{{}} ]")

    y = y / envelope
    if real_dim == 3:
        y = y.squeeze(0)
    if end > expected_len:
        _warn_once("istft_length", _LENGTH_PADDED)
        y = _C.constant_pad_nd(y, [0, end - expected_len], 0)
    return y


def _overlap_add(frames, hop: int, total: int):
    """(B, n_frames, n) -> (B, total): frame t added at [t * hop, t * hop + n), in one
    index_add over all frames (complex values through their real views)."""
    batch, n_frames, n = frames.shape
    device = frames.device
    index = (_C.arange(n_frames, device=device) * hop).unsqueeze(1) + _C.arange(n, device=device)
    index = index.reshape(-1)
    if frames.is_complex():
        parts = _C.view_as_real(frames).reshape(batch, n_frames * n, 2)
        out = _C.zeros([batch, total, 2], dtype=parts.dtype, device=device)
        return _C.view_as_complex(out.index_add(1, index, parts))
    source = frames.reshape(batch, n_frames * n)
    return _C.zeros([batch, total], dtype=frames.dtype, device=device).index_add(1, index, source)
