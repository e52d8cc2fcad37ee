"""Layout queries (to_dense, dim_order) and the in-place views: the tensor takes the view's
geometry (set_)."""

from __future__ import annotations

from ember import _C


def to_dense(self, dtype=None, *, masked_grad=None):
    """A strided tensor is dense already: itself (converted to `dtype` when given)."""
    return self if dtype is None or dtype == self.dtype else self.to(dtype)


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory, as torch's: contiguous and channels_last
    tensors take their formats' orders; otherwise an insertion sort by stride (larger first, a
    larger size first between equal strides) that leaves dims of stride 0 where they are. With
    ambiguity_check (True, or a list of memory formats), a tensor whose order is not unique is
    refused: one with a size-1 dim or two neighbours of equal stride that does not fit exactly
    one of the listed formats, or one the sort could not order strictly."""
    from ember import _memory_format as mf

    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list)
            and all(isinstance(f, mf.memory_format) for f in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    stride, shape, n = tuple(self.stride()), tuple(self.shape), self.dim()
    several = any(a == b for a, b in zip(stride, stride[1:])) or 1 in shape
    fits_one = sum(bool(self.is_contiguous(memory_format=f)) for f in formats) == 1
    if (ambiguity_check is not False) and several and not fits_one:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    if n < 2:
        return tuple(range(n))
    contiguous = self.is_contiguous()
    channels_last = n == 4 and self.is_contiguous(memory_format=mf.channels_last)
    if contiguous and not channels_last:
        return tuple(range(n))
    if channels_last and not contiguous:
        return (0, *range(2, n), 1)

    def ge(a, b):
        return b == 0 or (a != 0 and (a >= b or a % b == 0))

    def order(a, b):  # > 0: dim a lies outside dim b (swap), < 0: inside, 0: undecided
        if stride[a] == 0 or stride[b] == 0:
            return 0
        if stride[a] == stride[b]:
            return 0 if ge(shape[b], shape[a]) else 1
        return -1 if ge(stride[b], stride[a]) else 1

    perm = list(reversed(range(n)))  # innermost first while sorting
    for i in range(1, n):
        j = i
        for k in reversed(range(i)):
            c = order(perm[k], perm[j])
            if c > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif c < 0:
                break
    if ambiguity_check and any(order(perm[i], perm[i + 1]) != -1 for i in range(n - 1)):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))


def _restride_(self, name, view):
    if self.requires_grad and _C.is_grad_enabled():
        raise RuntimeError(f"{name}(): ember does not record in-place view changes of a tensor "
                           "that requires grad; use the out-of-place view instead")
    return self.set_(self.untyped_storage(), view.storage_offset(), view.shape, view.stride())


def transpose_(self, dim0, dim1):
    return _restride_(self, "transpose_", self.transpose(dim0, dim1))


def t_(self):
    return _restride_(self, "t_", self.t())


def squeeze_(self, dim=None):
    return _restride_(self, "squeeze_", self.squeeze() if dim is None else self.squeeze(dim))


def unsqueeze_(self, dim):
    return _restride_(self, "unsqueeze_", self.unsqueeze(dim))


def as_strided_(self, size, stride, storage_offset=None):
    return _restride_(self, "as_strided_", self.as_strided(size, stride, storage_offset))
