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
        # Every non-batch dim must be non-empty (a batch dim of 0 is allowed).
        if (nd == k + 2 and input.shape[1] == 0) or any(s == 0 for s in input.shape[nd - k:]):
            raise RuntimeError(
                f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                f"other non-zero dimensions for input, but got: {list(input.shape)}"
            )
    x = input
    for i in range(k):
        d = nd - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = input.shape[d]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(
                "Argument #4: Padding size should be less than the corresponding input dimension, "
                f"but got: padding ({left}, {right}) at dimension {d} of input {list(input.shape)}"
            )
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        x = _pad_dim(x, d, left, right, mode)
    return x


def _pad_dim(x, d: int, left: int, right: int, mode: str):
    n = x.shape[d]
    # Negative pads crop first; the positive side then pads the cropped tensor (as PyTorch's
    # circular mode does; for reflect/replicate the two agree since a side pads or crops).
    if left < 0 or right < 0:
        start, stop = max(-left, 0), n - max(-right, 0)
        if stop < start:
            raise RuntimeError("narrow(): length must be non-negative.")
        x = x.narrow(d, start, stop - start)
        left, right = max(left, 0), max(right, 0)
    parts = []
    m = x.shape[d]
    if left > 0:
        if mode == "reflect":
            parts.append(_C.flip(x.narrow(d, 1, left), (d,)))
        elif mode == "replicate":
            parts.append(_expand_along(x.narrow(d, 0, 1), d, left))
        else:
            parts.append(x.narrow(d, m - left, left))
    parts.append(x)
    if right > 0:
        if mode == "reflect":
            parts.append(_C.flip(x.narrow(d, m - 1 - right, right), (d,)))
        elif mode == "replicate":
            parts.append(_expand_along(x.narrow(d, m - 1, 1), d, right))
        else:
            parts.append(x.narrow(d, 0, right))
    return _C.cat(parts, d) if len(parts) > 1 else x


def _expand_along(edge, d: int, count: int):
    shape = list(edge.shape)
    shape[d] = count
    return edge.expand(shape)

