"""torch's function forms of Tensor methods and queries (fill, zero_, detach_, get_device,
sum_to_size, is_nonzero, ...) and the queries of bits ember does not have (is_neg, is_inference)."""

from __future__ import annotations

from ember import _C
from ember._composite_ops._common import _is_tensor


def type_as(self, other):
    return self.to(device=other.device, dtype=other.dtype)


def sum_to_size(self, *size):
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    if not size:  # torch's sum_to: to no dims is the whole sum (a 0-d bool becomes int64)
        return self.sum()
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == t or s == 1 for s, t in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size)
                                if s == 1 and shape[lead + i] != 1]
    r = self.sum(dims, keepdim=True) if dims else self
    return r.reshape(size) if lead else r


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input):
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def resolve_neg(input):
    return input


def is_neg(input) -> bool:
    return False


def is_inference(input) -> bool:
    return False


def fill(input, value):
    if _is_tensor(value) and value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    if _is_tensor(value):  # a 0-d tensor: its gradient flows through the copy
        return _C.full_like(input, 0).copy_(value.expand(input.shape))
    return _C.full_like(input, value)


def zero_function(input):
    return input.zero_()


def detach_function(input):
    return input.detach_()


def rsub(input, other, alpha=1):  # (alpha by position: torch's overload for a number other)
    return _C.sub(other, input, alpha=alpha)


def fill_function_(input, value):
    return input.fill_(value)


def round_function_(input, *, decimals=None):
    # decimals given (even 0) is torch's other overload, with no integer kernel
    return input.round_() if decimals is None else input.round_(decimals=decimals)


def get_device(input) -> int:
    return input.get_device()
