"""``pad``: torch.nn.functional.pad's modes over the core's primitives.

'constant' is the C++ kernel ``ember.constant_pad_nd``; 'reflect', 'replicate' and 'circular'
are narrow/flip/expand/cat compositions (differentiable through their parts). ember-nn's
``F.pad`` re-exports this function (``from ember._padding import pad``); it is also reachable
as ``ember._pad``.
"""

from __future__ import annotations

from ember import _C

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _unsupported(n_pad: int, ndim: int) -> NotImplementedError:
    return NotImplementedError(
        f"Padding size {n_pad} is not supported for {ndim}D input tensor.\n"
        "Supported combinations for non-constant padding:\n"
        "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
        "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
        "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
    )


def pad(input, pad, mode: str = "constant", value=None):
    """Pads the last ``len(pad) // 2`` dims of ``input``: ``pad = (left_last, right_last,
    left_second_last, ...)``, as torch.nn.functional.pad. Negative pads crop.

    >>> import ember
    >>> from ember._padding import pad
    >>> pad(ember.tensor([[1, 2, 3]]), (2, 1), mode="reflect").tolist()
    [[3, 2, 1, 2, 3, 2]]
    """
    pad = [int(p) for p in pad]
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {input.dim()}"
        )
    if mode == "constant":
        return _C.constant_pad_nd(input, pad, 0 if value is None else value)
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.dim() not in (k + 1, k + 2):
        raise _unsupported(len(pad), input.dim())
    if input.dtype == _C.bool and mode != "circular":
        kind = "replication" if mode == "replicate" else "reflection"
        raise NotImplementedError(f"\"{kind}_pad{k}d\" not implemented for 'Bool'")
    nd = input.dim()
    if mode != "circular":
        # Every dim but the optional batch dim must be non-empty.
        first = 1 if nd == k + 2 else 0
        if any(s == 0 for s in input.shape[first:]):
            raise RuntimeError(
                f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                f"other non-zero dimensions for input, but got: {list(input.shape)}"
            )
    if mode == "circular":
        for i in reversed(range(k)):  # PyTorch checks the outermost padded dim first
            n, left, right = input.shape[nd - 1 - i], pad[2 * i], pad[2 * i + 1]
            if left > n or right > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if n + left + right < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        if input.numel() == 0:  # nothing to wrap around: only the shape matters
            return _C.constant_pad_nd(input, pad, 0)
    x = input
    for i in range(k):
        d = nd - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = input.shape[d]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(
                f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({left}, {right}) at dimension {d} of input "
                f"{list(input.shape)}"
            )
        if mode == "circular":
            x = _pad_circular(x, d, left, right)
        else:
            size = n + left + right
            if size < (1 if k == 1 else 0):  # PyTorch's 1-d kernels refuse an empty result too
                axis = "WHD"[i]
                raise RuntimeError(
                    f"input ({axis}: {n}) is too small. Calculated output {axis}: {size}"
                )
            x = _pad_edge(x, d, left, right, mode)
    return x


def _pad_circular(x, d: int, left: int, right: int):
    # PyTorch crops first and wraps around the cropped tensor.
    n = x.shape[d]
    start, stop = max(-left, 0), n - max(-right, 0)
    if stop < start:
        raise RuntimeError("narrow(): length must be non-negative.")
    x = x.narrow(d, start, stop - start)
    left, right = max(left, 0), max(right, 0)
    m = x.shape[d]
    if left > m or right > m:  # PyTorch reads past the cropped input here
        raise RuntimeError("Padding value causes wrapping around more than once.")
    parts = [x.narrow(d, m - left, left)] if left else []
    parts.append(x)
    if right:
        parts.append(x.narrow(d, 0, right))
    return _C.cat(parts, d) if len(parts) > 1 else x


def _pad_edge(x, d: int, left: int, right: int, mode: str):
    """Output index j reads input index i = j - left, mirrored ('reflect') or clamped
    ('replicate') into [0, n): three runs of i (before, inside, after the input) -> pieces."""
    n = x.shape[d]
    a, b = -left, n - 1 + right  # the range of i, inclusive
    if b < a:
        return x.narrow(d, 0, 0)
    parts = []
    if a < 0:  # i in [a, min(b, -1)]
        e = min(b, -1)
        if mode == "reflect":
            parts.append(_C.flip(x.narrow(d, -e, e - a + 1), (d,)))
        else:
            parts.append(_expand_along(x.narrow(d, 0, 1), d, e - a + 1))
    lo, hi = max(a, 0), min(b, n - 1)
    if hi >= lo:
        parts.append(x.narrow(d, lo, hi - lo + 1))
    if b >= n:  # i in [max(a, n), b]
        s = max(a, n)
        if mode == "reflect":
            parts.append(_C.flip(x.narrow(d, 2 * (n - 1) - b, b - s + 1), (d,)))
        else:
            parts.append(_expand_along(x.narrow(d, n - 1, 1), d, b - s + 1))
    return _C.cat(parts, d) if len(parts) > 1 else parts[0]


def _expand_along(edge, d: int, count: int):
    shape = list(edge.shape)
    shape[d] = count
    return edge.expand(shape)

