"""Text formatting of tensors for ``repr``/``str``.

The output matches PyTorch's tensor printing character for character (with
``ember.`` in place of ``torch.`` in dtype names).  The module works purely on
NumPy arrays, so it has no dependency on the tensor core: the caller hands in
the tensor's values together with the metadata that affects the text.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any

import numpy as np

__all__ = [
    "PRINT_OPTIONS",
    "PrintOptions",
    "format_tensor",
    "get_printoptions",
    "printoptions",
    "set_printoptions",
]


@dataclasses.dataclass
class PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTIONS = PrintOptions()

# profile name -> (precision, threshold, edgeitems, linewidth)
_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}

# Dtypes whose name is omitted from the repr even when not the default float.
_IMPLICIT_DTYPES = ("int64", "bool")


def set_printoptions(
    precision=None,
    threshold=None,
    edgeitems=None,
    linewidth=None,
    profile=None,
    sci_mode=None,
):
    """Set options for printing tensors (same semantics as PyTorch).

    ``profile`` ("default", "short" or "full") resets precision, threshold,
    edgeitems and linewidth first; explicitly given options override it.
    ``sci_mode`` is always assigned: ``None`` means "choose automatically".
    """
    opts = PRINT_OPTIONS
    if profile in _PROFILES:
        opts.precision, opts.threshold, opts.edgeitems, opts.linewidth = _PROFILES[profile]
    if precision is not None:
        opts.precision = precision
    if threshold is not None:
        opts.threshold = threshold
    if edgeitems is not None:
        opts.edgeitems = edgeitems
    if linewidth is not None:
        opts.linewidth = linewidth
    opts.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Current print options, as keyword arguments for :func:`set_printoptions`."""
    return dataclasses.asdict(PRINT_OPTIONS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Context manager that temporarily changes the print options."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Chooses a common width and notation for a set of real values."""

    def __init__(self, data: np.ndarray):
        self.floating = data.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = data.reshape(-1)
        if not self.floating:
            if flat.size:
                # str() length grows with |value| for each sign: the extremes suffice.
                ends = (flat.min().item(), flat.max().item())
                self.max_width = max(len(f"{v}") for v in ends)
            return

        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        absvals = np.abs(vals)
        vmin, vmax = absvals.min(), absvals.max()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if PRINT_OPTIONS.sci_mode is None:
            with np.errstate(over="ignore"):  # a ratio of inf is fine
                ratio = vmax / vmin
            self.sci_mode = bool(ratio > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4)
        else:
            self.sci_mode = PRINT_OPTIONS.sci_mode

        # The formatted length only depends on the sign and grows with |value|,
        # except for 3-digit exponents, which occur at either magnitude extreme.
        # So the smallest and largest value of each sign are enough.
        ends = []
        for part in (vals[vals > 0], vals[vals < 0]):
            if part.size:
                ends += [part.min(), part.max()]
        if self.sci_mode:
            spec, extra = f".{PRINT_OPTIONS.precision}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1  # room for the trailing "."
        else:
            spec, extra = f".{PRINT_OPTIONS.precision}f", 0
        self.max_width = max(len(format(float(v), spec)) + extra for v in ends)

    def format(self, value) -> str:
        precision = PRINT_OPTIONS.precision
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.max_width}.{precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if not (math.isinf(value) or math.isnan(value)):
                text += "."
        else:
            text = f"{value:.{precision}f}"
        return text.rjust(self.max_width)


def _make_formatter(data: np.ndarray):
    """Return ``(format_fn, element_length)``; the length includes ", "."""
    if data.dtype.kind == "c":
        real, imag = _Formatter(data.real), _Formatter(data.imag)

        def format_complex(value):
            real_str = real.format(value.real)
            imag_str = (imag.format(value.imag) + "j").lstrip()
            sep = "" if imag_str[0] in "+-" else "+"
            return real_str + sep + imag_str

        return format_complex, real.max_width + imag.max_width + 3
    formatter = _Formatter(data)
    return formatter.format, formatter.max_width + 2


def _summarized_data(a: np.ndarray, edgeitems: int) -> np.ndarray:
    """The values that remain visible once ``a`` is summarised."""
    if a.ndim == 0:
        return a
    index = [
        np.r_[0:edgeitems, n - edgeitems : n] if n > 2 * edgeitems else np.arange(n)
        for n in a.shape
    ]
    return a[np.ix_(*index)]


def _body(a: np.ndarray, indent: int, summarize: bool, fmt, element_length: int) -> str:
    """Nested-bracket text of ``a``, continuation lines indented by ``indent``."""
    edge = PRINT_OPTIONS.edgeitems
    if a.ndim == 0:
        return fmt(a.item())
    if a.ndim == 1:
        if summarize and not edge:
            items = ["..."]
        elif summarize and a.shape[0] > 2 * edge:
            items = [fmt(v) for v in a[:edge].tolist()] + [" ..."]
            items += [fmt(v) for v in a[-edge:].tolist()]
        else:
            items = [fmt(v) for v in a.tolist()]
        per_line = max(1, math.floor((PRINT_OPTIONS.linewidth - indent) / element_length))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"

    def sub(i):
        return _body(a[i], indent + 1, summarize, fmt, element_length)

    n = a.shape[0]
    if summarize and n > 2 * edge:
        rows = [sub(i) for i in range(edge)] + ["..."] + [sub(i) for i in range(n - edge, n)]
    else:
        rows = [sub(i) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _add_suffixes(text: str, suffixes, indent: int) -> str:
    """Append ``, suffix`` items, wrapping onto a new line past the linewidth."""
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def format_tensor(
    values,
    *,
    dtype_name: str,
    is_default_float: bool,
    shape: tuple,
    device: str = "cpu",
    suffixes: tuple[str, ...] = (),
    prefix: str = "tensor(",
) -> str:
    """Format a tensor the way PyTorch's ``repr`` does.

    Args:
        values: NumPy array (or array-like) with the tensor's values; it is
            reshaped to ``shape``.  Half-precision tensors should be passed
            converted to float32.
        dtype_name: ember dtype name, e.g. ``"float32"`` or ``"int64"``.
        is_default_float: whether the dtype is the default floating dtype
            (for complex tensors: the matching default complex dtype).
        shape: the tensor's shape.
        device: device string; anything but ``"cpu"`` is shown.
        suffixes: extra pre-formatted items (``"requires_grad=True"``,
            ``"grad_fn=<AddBackward0>"``) appended in order.
        prefix: text before the values; continuation lines align with it.
    """
    opts = PRINT_OPTIONS
    shape = tuple(int(n) for n in shape)
    a = np.asarray(values)
    if a.dtype.kind not in "biufc":  # e.g. extension float types
        a = a.astype(np.float32)
    a = a.reshape(shape)
    indent = len(prefix)
    extra = [] if device.split(":")[0] == "cpu" else [f"device='{device}'"]
    dtype_item = f"dtype=ember.{dtype_name}"

    if a.size == 0:
        # Empty tensors show their shape unless 1-d, and any non-default dtype.
        if a.ndim != 1:
            extra.append(f"size={shape}")
        if not is_default_float or a.dtype.kind == "c":
            extra.append(dtype_item)
        body = "[]"
    else:
        if not opts.edgeitems:
            extra.append(f"size={shape}")
        if not (is_default_float or dtype_name in _IMPLICIT_DTYPES):
            extra.append(dtype_item)
        summarize = a.size > opts.threshold
        fmt, element_length = _make_formatter(
            _summarized_data(a, opts.edgeitems) if summarize else a
        )
        body = _body(a, indent, summarize, fmt, element_length)
    return _add_suffixes(prefix + body, [*extra, *suffixes], indent)
