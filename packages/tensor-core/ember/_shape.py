"""Joining, splitting and reshaping ops that are argument sugar over the core's primitives.

The primitives with kernels (cat, flip, roll, tril/triu, constant_pad_nd, repeat_interleave,
diag_embed) and the views diagonal / Tensor.unfold are C++ (csrc/ops/shape_ops.cpp). Everything
here composes them with the core views (narrow, select, expand, permute, reshape), so it is
differentiable through its parts and needs no gradient formula of its own. Names, signatures,
results and error messages follow PyTorch.
"""

from __future__ import annotations

import builtins
import collections.abc
import os
import warnings

from ember import _C
from ember._checks import _is_int_arg, tensor_args

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
    "broadcast_to", "chunk", "column_stack", "diag", "diagflat", "dsplit", "dstack", "fliplr",
    "flipud", "hsplit", "hstack", "kron", "meshgrid", "moveaxis", "movedim", "rot90", "row_stack",
    "split", "split_with_sizes", "stack", "swapaxes", "swapdims", "tensor_split", "tile", "trace",
    "unbind", "vsplit", "vstack",
]

_int = builtins.int


def _is_int(x) -> bool:
    return (isinstance(x, _int) and not isinstance(x, bool)) or (
        hasattr(x, "__index__") and not isinstance(x, (bool, _C.Tensor))
    )


def _is_index(x) -> bool:
    """What torch's parser takes for an int where an int list may stand instead (its
    THPUtils_checkIndex): an int (not a bool), a NumPy integer, or a one-element integer or bool
    tensor (through __index__)."""
    if isinstance(x, _C.Tensor):
        return x.numel() == 1 and not x.dtype.is_floating_point and not x.dtype.is_complex
    return _is_int(x)


def _as_index(x, symint: bool = True) -> int:
    if symint and isinstance(x, _C.Tensor) and x.dtype == _C.bool:
        # torch reads a SymInt[] element with item<int64_t>(), which refuses a bool
        raise RuntimeError("Expected scalar.isIntegral( false) to be true, but got false.")
    return _int(x.item() if isinstance(x, _C.Tensor) else x)


def _int_list(op: str, name: str, position: int | None, value, symint: bool = True) -> list:
    """torch's parser for an int[] argument: a list or tuple of ints, NumPy integers or
    one-element integer tensors; anything else is a TypeError. `symint`: torch's SymInt[],
    which refuses a bool tensor element."""
    where = f" (position {position})" if position is not None else ""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{op}(): argument '{name}'{where} must be tuple of ints, not "
                        f"{type(value).__name__}")
    if value and not _is_index(value[0]):
        raise TypeError(f"{op}(): argument '{name}'{where} must be tuple of ints, but found "
                        f"element of type {type(value[0]).__name__} at pos 0")
    return _unpack_ints(op, name, value, symint)


def _unpack_ints(op: str, name: str, values, symint: bool) -> list:
    """The elements in order, as torch unpacks them once the first passed its check: a bool is
    taken as an int there."""
    out = []
    for i, v in enumerate(values):
        if not (_is_index(v) or isinstance(v, bool)):
            raise TypeError(f"{op}(): argument '{name}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(v).__name__}\"")
        out.append(_as_index(v, symint))
    return out


def _int_varargs(op: str, name: str, args: tuple, symint: bool = True) -> list:
    """A Tensor method's only int[] parameter, which torch also takes as separate ints
    (x.repeat(2, 3) for x.repeat((2, 3)))."""
    if not args:
        raise TypeError(f"{op}() missing 1 required positional arguments: \"{name}\"")
    if _is_index(args[0]):
        return _unpack_ints(op, name, args, symint)
    if len(args) > 1:
        raise TypeError(f"{op}() takes 1 positional argument but {len(args)} were given")
    return _int_list(op, name, 1, args[0], symint)


def _wrap(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if dim < -n or dim >= n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _tensor_list(tensors, op: str) -> list:
    if isinstance(tensors, _C.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, "
            f"not {type(tensors).__name__}"
        )
    for i, t in enumerate(tensors):
        if not isinstance(t, _C.Tensor):
            raise TypeError(
                f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}"
            )
    return list(tensors)




def _write_out(result, out, op: str = ""):
    """out= for the composites: PyTorch's resize/copy rules through cat's out= handling."""
    if out is None:
        return result
    if not _C.can_cast(result.dtype, out.dtype):
        raise RuntimeError(
            f"{op}: result type {result.dtype._torch_name} can't be cast to the desired "
            f"out= type {out.dtype._torch_name}"
        )
    if result.dim() == 0:
        out.copy_(result) if out.dim() == 0 else _C.cat([result.reshape(1)], out=out)
        return out
    return _C.cat([result], out=out)


# ---- joining ----

def stack(tensors, dim: int = 0, *, out=None):
    """Joins equal-shaped tensors along a new dim (cat of unsqueezed inputs)."""
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0].shape
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != shape:
            raise RuntimeError(
                "stack expects each tensor to be equal size, but got "
                f"{list(shape)} at entry 0 and {list(t.shape)} at entry {i}"
            )
    dim = _wrap(dim, tensors[0].dim() + 1)
    if out is None:  # one graph node, not one unsqueeze node per input and a cat
        return _one_node("stack", _stack_unsqueezed, any(t.requires_grad for t in tensors),
                         tensors, dim)
    return _C.cat([t.unsqueeze(dim) for t in tensors], dim, out=out)


def _stack_unsqueezed(tensors, dim):
    return _C.cat([t.unsqueeze(dim) for t in tensors], dim)


def _one_node(name, fn, requires_grad, *args):
    """Runs a composite op; when autograd records it, as one graph node named `name` (whose
    formula is in the autograd table) instead of one node per core op inside it."""
    if requires_grad and _C.is_grad_enabled():
        hook = _C._get_autograd_hook()
        if hook is not None:
            return hook(name, fn, args, {})
    return fn(*args)


@tensor_args("tensors")
def atleast_1d(*tensors):
    return _atleast(tensors, 1)


@tensor_args("tensors")
def atleast_2d(*tensors):
    return _atleast(tensors, 2)


@tensor_args("tensors")
def atleast_3d(*tensors):
    return _atleast(tensors, 3)


def _atleast(tensors, n: int):
    """torch's atleast_nd: one tensor gives a tensor; several, or one list, give a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], _C.Tensor):
        return _atleast_each(tensors, n)[0]
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(_atleast_each(tensors, n))


def _atleast_each(tensors, n: int) -> list:
    res = []
    for t in tensors:
        if n == 1:
            t = t.reshape(1) if t.dim() == 0 else t
        elif n == 2:
            t = t.reshape(1, 1) if t.dim() == 0 else t.unsqueeze(0) if t.dim() == 1 else t
        else:
            if t.dim() == 0:
                t = t.reshape(1, 1, 1)
            elif t.dim() == 1:
                t = t.reshape(1, -1, 1)
            elif t.dim() == 2:
                t = t.unsqueeze(-1)
        res.append(t)
    return res


def hstack(tensors, *, out=None):
    """cat along dim 1 (dim 0 for 1-d inputs), after atleast_1d."""
    tensors = _atleast_each(_tensor_list(tensors, "hstack"), 1)
    if not tensors:
        raise RuntimeError("hstack expects a non-empty TensorList")
    dim = 0 if tensors[0].dim() == 1 else 1
    return _C.cat(list(tensors), dim, out=out)


def vstack(tensors, *, out=None):
    """cat along dim 0 after atleast_2d."""
    tensors = _atleast_each(_tensor_list(tensors, "vstack"), 2)
    if not tensors:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return _C.cat(list(tensors), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """cat along dim 2 after atleast_3d."""
    tensors = _atleast_each(_tensor_list(tensors, "dstack"), 3)
    if not tensors:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return _C.cat(list(tensors), 2, out=out)


def column_stack(tensors, *, out=None):
    """hstack with 0-d/1-d inputs taken as columns."""
    tensors = _tensor_list(tensors, "column_stack")
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    cols = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in tensors]
    return _C.cat(cols, 1, out=out)


# ---- splitting (every piece is a view of the input) ----

def _pieces(name, fn, tensor, *args):
    """Runs a splitting op: the pieces share one graph node whose backward concatenates
    (stacks) their gradients, rather than one node per piece building an input-sized one."""
    return _one_node(name, fn, tensor.requires_grad, tensor, *args)


def _narrow_pieces(tensor, sizes, dim):
    pieces, start = [], 0
    for s in sizes:
        pieces.append(tensor.narrow(dim, start, s))
        start += s
    return tuple(pieces)


_BYTES_PER_PIECE = 256  # a view's Python object and TensorImpl, at the least


def _check_piece_count(op: str, pieces: int) -> None:
    """Refuses a split into more views than this machine's memory can hold (torch fails the
    same calls allocating its vector of results); building them would only exhaust memory."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # no sysconf: assume a large machine
        memory = 1 << 40
    if pieces * _BYTES_PER_PIECE > memory:
        raise RuntimeError(
            f"{op}: the result would hold {pieces} tensors, more than this machine's memory "
            f"({memory} bytes) can hold")


@tensor_args("tensor")
def split(tensor, split_size_or_sections, dim: int = 0):
    """Views of `tensor` along `dim`: pieces of split_size (the last may be smaller) or of the
    given sizes."""
    size = split_size_or_sections
    if isinstance(size, _C.Tensor):  # torch's Tensor.split: int(t) when that works
        try:
            size = _int(size)
        except ValueError:
            pass
    if not (isinstance(size, _int) and not isinstance(size, bool)):
        return split_with_sizes(tensor, size, dim)
    if tensor.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = _wrap(dim, tensor.dim())
    n = tensor.shape[dim]
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    if size == 0 and n != 0:
        raise RuntimeError(
            f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
        )
    if n == 0:
        return (tensor.narrow(dim, 0, 0),)
    _check_piece_count("split", -(-n // size))
    return _pieces("split_with_sizes", _narrow_pieces, tensor,
                   [min(size, n - s) for s in range(0, n, size)], dim)


@tensor_args("tensor")
def split_with_sizes(tensor, split_sizes, dim: int = 0):
    sizes = _int_list("split_with_sizes", "split_sizes", 2, split_sizes)
    if tensor.dim() == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = _wrap(dim, tensor.dim())
    n = tensor.shape[dim]
    if any(s < 0 for s in sizes):
        raise RuntimeError(
            "split_with_sizes expects split_sizes have only non-negative entries, but got "
            f"split_sizes={sizes}"
        )
    if sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
            f"dimension {dim}), but got split_sizes={sizes}"
        )
    return _pieces("split_with_sizes", _narrow_pieces, tensor, sizes, dim)


@tensor_args("input")
def chunk(input, chunks: int, dim: int = 0):
    """At most `chunks` views of equal size ceil(n / chunks) (the last may be smaller)."""
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    dim = _wrap(dim, input.dim())
    n = input.shape[dim]
    if n == 0:
        _check_piece_count("chunk", chunks)
        return tuple(input.narrow(dim, 0, 0) for _ in range(chunks))
    return split(input, (n + chunks - 1) // chunks, dim)


@tensor_args("input")
def tensor_split(input, indices_or_sections, dim: int = 0):
    """Views like np.array_split: `sections` near-equal pieces, or cuts before each index."""
    ios = indices_or_sections
    # (the parser's check, before the rank and dim: an int, a tensor or a list, not a bool)
    if isinstance(ios, bool) or not (_is_int(ios) or isinstance(ios, (list, tuple, _C.Tensor))):
        raise TypeError(f"tensor_split() received an invalid combination of arguments - got "
                        f"({type(ios).__name__}), but expected one of: (int sections, int dim), "
                        "(tuple of ints indices, int dim), (Tensor tensor_indices_or_sections, "
                        "int dim)")
    if isinstance(ios, (list, tuple)):  # (the parser's: its first element picks the overload)
        if ios and not _is_index(ios[0]):
            raise TypeError(f"tensor_split() received an invalid combination of arguments - got "
                            f"(Tensor, {type(ios).__name__}), but expected one of: (Tensor "
                            "input, tuple of ints indices, int dim)")
        ios = _unpack_ints("tensor_split", "indices", ios, symint=True)
    if input.dim() == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    dim = _wrap(dim, input.dim())
    n = input.shape[dim]
    if isinstance(ios, _C.Tensor):
        if ios.dtype != _C.int64:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                f"{ios.dtype._torch_name}"
            )
        if ios.dim() > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {ios.dim()} dims"
            )
        ios = ios.item() if ios.dim() == 0 else ios.tolist()
    if _is_int(ios):
        sections = _int(ios)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        _check_piece_count("tensor_split", sections)
        base, extra = divmod(n, sections)
        pieces, start = [], 0
        for i in range(sections):
            size = base + (1 if i < extra else 0)
            pieces.append(input.narrow(dim, start, size))
            start += size
        return tuple(pieces)
    bounds = [0] + [_int(i) for i in ios] + [n]
    pieces = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        a = min(max(a + n if a < 0 else a, 0), n)
        b = min(max(b + n if b < 0 else b, 0), n)
        pieces.append(input.narrow(dim, a, max(b - a, 0)))
    return tuple(pieces)


_SPLIT_ALONG_SIGNATURES = "(Tensor input, int sections), (Tensor input, tuple of ints indices)"


def _sections_or_indices(name: str, ios, method: bool = False):
    """torch's overloads of hsplit/vsplit/dsplit: (int sections) takes an int, a NumPy integer or
    a 0-d integer tensor; (int[] indices) a list of ints, and a method also one other value
    with __index__ (a one-element tensor: x.hsplit(t) as x.hsplit(t.item(),))."""
    if _is_int_arg(ios):
        return _int(ios)
    if method and _is_index(ios):
        return [_as_index(ios, symint=False)]
    if isinstance(ios, (list, tuple)) and (not ios or _is_index(ios[0])):
        return _int_list(name, "indices", None, ios, symint=False)
    raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                    f"{type(ios).__name__}), but expected one of: {_SPLIT_ALONG_SIGNATURES}")


def _split_along(name: str, input, ios, dim: int, min_dims: int):
    ios = _sections_or_indices(name, ios)
    if input.dim() < min_dims:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
            f"with {input.dim()} dimensions!"
        )
    if _is_int(ios):
        n = input.shape[dim]
        if ios == 0 or n % ios != 0:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                f"dimension {n} is not divisible by the split_size {ios}!"
            )
    return tensor_split(input, ios, dim)


@tensor_args("input")
def hsplit(input, indices_or_sections):
    indices_or_sections = _sections_or_indices("hsplit", indices_or_sections)
    if input.dim() == 0:
        raise RuntimeError(
            "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 "
            "dimensions!"
        )
    return _split_along("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


@tensor_args("input")
def vsplit(input, indices_or_sections):
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


@tensor_args("input")
def dsplit(input, indices_or_sections):
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


@tensor_args("input")
def unbind(input, dim: int = 0):
    """The slices along `dim`, as views, with `dim` removed."""
    if input.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return _pieces("unbind", _select_all, input, _wrap(dim, input.dim()))


def _select_all(input, dim):
    return tuple(input.select(dim, i) for i in range(input.shape[dim]))


# ---- moving dims, broadcasting ----

def _movedim_dims(op, source, destination):
    """torch's two forms of movedim's dims: (int[] source, int[] destination) and (int source,
    int destination), where an int may also be a 0-d integer tensor; a list and an int mixed
    fit neither (a TypeError before any dim is checked)."""
    if isinstance(source, (list, tuple)) and isinstance(destination, (list, tuple)):
        return (_int_list(op, "source", 2, source), _int_list(op, "destination", 3, destination))
    if _is_int_arg(source) and _is_int_arg(destination):
        return [_as_index(source)], [_as_index(destination)]
    raise TypeError(f"{op}() received an invalid combination of arguments - got (Tensor, "
                    f"{type(source).__name__}, {type(destination).__name__}), but expected one "
                    f"of:\n * (Tensor input, tuple of ints source, tuple of ints destination)\n"
                    f" * (Tensor input, int source, int destination)")


def _movedim(op, input, source, destination):
    src, dst = _movedim_dims(op, source, destination)
    nd = input.dim()
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
            f"same number of dims as destination ({dst} dims)"
        )
    src_n = [_wrap(d, nd) for d in src]
    dst_n = [_wrap(d, nd) for d in dst]
    if len(set(src_n)) != len(src_n):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(dst_n)) != len(dst_n):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    if nd == 0:
        return input.reshape(())
    perm = [-1] * nd
    for s, d in zip(src_n, dst_n):
        perm[d] = s
    rest = iter(d for d in range(nd) if d not in src_n)
    perm = [p if p >= 0 else next(rest) for p in perm]
    return input.permute(perm)


@tensor_args("input")
def movedim(input, source, destination):
    """A view with the dims in `source` moved to the positions in `destination`."""
    return _movedim("movedim", input, source, destination)


@tensor_args("input")
def moveaxis(input, source, destination):
    """Alias of movedim (NumPy's name)."""
    return _movedim("moveaxis", input, source, destination)


@tensor_args("input")
def swapaxes(input, axis0: int, axis1: int):
    return input.transpose(axis0, axis1)


@tensor_args("input")
def swapdims(input, dim0: int, dim1: int):
    return input.transpose(dim0, dim1)


def broadcast_shapes(*shapes):
    """The shape all of `shapes` broadcast to (without creating tensors), as torch's
    torch._refs._broadcast_shapes: an int is a shape of one dim, None is skipped, anything else
    that is no sequence is a RuntimeError."""
    shapes = tuple((s,) if isinstance(s, _int) else s for s in shapes if s is not None)
    if not shapes:
        return _C.Size(())
    for s in shapes:
        if not isinstance(s, collections.abc.Sequence):
            raise RuntimeError("Input shapes should be of type ints, a tuple of ints, or a list "
                               f"of ints, got {s}")
    result = [1] * max(len(s) for s in shapes)
    for idx, s in enumerate(shapes):
        for i in range(-1, -1 - len(s), -1):
            if s[i] == result[i]:
                continue
            if result[i] == 1:
                if s[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                result[i] = s[i]
            if s[i] != 1 and result[i] != s[i]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {s[i]} at {i}! Mismatching "
                    f"argument at index {idx} had {s}; but expected shape should be "
                    f"broadcastable to {result}"
                )
    return _C.Size(tuple(result))


def _broadcast_with_core_message(*shapes) -> tuple:
    """The shapes broadcast together, folded pairwise with the message the core's kernels raise
    ("The size of tensor a ... must match ..."), for Python code that stands in for a kernel."""
    out: tuple = ()
    for s in shapes:
        n = max(len(out), len(s))
        a, b = (1,) * (n - len(out)) + tuple(out), (1,) * (n - len(s)) + tuple(s)
        for i, (da, db) in enumerate(zip(a, b)):
            if da != db and da != 1 and db != 1:
                raise RuntimeError(f"The size of tensor a ({da}) must match the size of tensor b "
                                   f"({db}) at non-singleton dimension {i}")
        out = tuple(db if da == 1 else da for da, db in zip(a, b))
    return out


@tensor_args("input")
def broadcast_to(input, size):
    return input.expand(tuple(_int_list("broadcast_to", "size", 2, size)))


def _broadcast_to_method(self, *size):  # x.broadcast_to(2, 3) too, as torch's
    return self.expand(tuple(_int_varargs("broadcast_to", "size", size)))


@tensor_args("tensors")
def broadcast_tensors(*tensors):
    for i, t in enumerate(tensors):  # (a list of tensors too: torch's takes them unpacked only)
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


@tensor_args("tensors")
def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids (views of the inputs) for 0-d/1-d tensors; 'ij' (matrix) or 'xy'
    (Cartesian) indexing."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}"
            )
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = indexing == "xy" and len(tensors) >= 2
    ts = list(tensors)
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.numel() for t in ts]
    n = len(ts)
    grids = [
        t.reshape([-1 if i == j else 1 for j in range(n)]).expand(shape) for i, t in enumerate(ts)
    ]
    if swap:  # the grids of the swapped inputs already have the 'xy' shape
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


# ---- repeating, flipping, rotating ----

def _only_keyword(op: str, name: str, args: tuple, kwargs: dict) -> tuple:
    """The argument of a method whose only parameter `name` was given by keyword."""
    for k in kwargs:
        if k != name:
            raise TypeError(f"{op}() got an unexpected keyword argument '{k}'")
    if args:
        raise TypeError(f"{op}() got multiple values for argument '{name}'")
    return (kwargs[name],)


def _repeat(self, *sizes, **kwargs):
    if kwargs:  # x.repeat(repeats=...)
        sizes = _only_keyword("repeat", "repeats", sizes, kwargs)
    return _repeat_ints(self, _int_varargs("repeat", "repeats", sizes))


def _repeat_ints(self, reps: list):
    if len(reps) < self.dim():
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
            "tensor"
        )
    shape = [1] * (len(reps) - self.dim()) + list(self.shape)
    # (the products in int64 as torch's: one that overflows wraps, and is refused as negative)
    out_shape = [(r * s + 2**63) % 2**64 - 2**63 for r, s in zip(reps, shape)]
    for s in out_shape:
        if s == -2**63:
            raise RuntimeError(f"IntArrayRef contains an int that cannot be represented as a "
                               f"SymInt: {s}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {out_shape}")
    for r, s, wrapped in zip(reps, shape, out_shape):
        if r * s != wrapped:  # (torch's wrapped size then fails its view: a RuntimeError too)
            raise RuntimeError(f"repeat: {r} repeats of a dimension of size {s} overflow int64")
    if 0 in out_shape:  # nothing to copy (the expanded view's strides could overflow int64)
        return self.reshape(-1)[:0].reshape(out_shape).clone()
    interleaved = []
    for s in shape:
        interleaved += [1, s]
    expanded = []
    for r, s in zip(reps, shape):
        expanded += [r if r > 0 else 0, s]  # (a negative r passed the check on a size of 0)
    x = self.reshape(interleaved).expand(expanded)
    # torch's repeat always returns a new contiguous tensor: reshaping the expanded view would
    # keep its 0 strides wherever a repeated dimension meets one of size 1 (x.repeat(3, 1) of a
    # 1-d x), and a later in-place op on the result would then write one element many times.
    x = x.contiguous() if not x.is_contiguous() else x.clone()
    return x.reshape(out_shape)


@tensor_args("input")
def tile(input, dims):
    """repeat, with `dims` padded with leading 1s to the input's rank."""
    return _tile_ints(input, _int_list("tile", "dims", 2, dims))


def _tile_ints(input, dims: list):  # noqa: A002
    if len(dims) < input.dim():
        dims = [1] * (input.dim() - len(dims)) + dims
    return _repeat_ints(input, dims)


def _tile_method(self, *dims, **kwargs):
    if kwargs:  # x.tile(dims=...)
        dims = _only_keyword("tile", "dims", dims, kwargs)
    return _tile_ints(self, _int_varargs("tile", "dims", dims))


def _split_along_method(name: str):
    def m(self, *args, **kwargs):
        if len(args) > 1:  # x.hsplit(1, 2): the indices as separate ints
            args = (_int_varargs(name, "indices", args, symint=False),)
        elif len(args) == 1:
            args = (_sections_or_indices(name, args[0], method=True),)
        return globals()[name](self, *args, **kwargs)

    m.__name__ = name
    m.__doc__ = globals()[name].__doc__
    return m


@tensor_args("input")
def fliplr(input):
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _C.flip(input, (1,))


@tensor_args("input")
def flipud(input):
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _C.flip(input, (0,))


@tensor_args("input")
def rot90(input, k: int = 1, dims=(0, 1)):
    """Rotates by 90 degrees k times in the plane of `dims` (from the first towards the second)."""
    dims = _int_list("rot90", "dims", 3, dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = _wrap(dims[0], input.dim()), _wrap(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    k %= 4
    if k == 1:
        return _C.flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return _C.flip(input, (d0, d1))
    if k == 3:
        return _C.flip(input, (d0,)).transpose(d0, d1)
    return input.clone()


# ---- diagonals ----

@tensor_args("input")
def diag(input, diagonal: int = 0, *, out=None):
    """1-d input: a matrix with it on the `diagonal`-th diagonal; 2-d: a copy of that diagonal."""
    if out is not None and out.dtype != input.dtype:  # (torch's diag writes its dtype only)
        raise RuntimeError(f"Expected out tensor to have dtype {input.dtype._cpp_name}, but got "
                           f"{out.dtype._cpp_name} instead")
    if input.dim() == 1:
        return _write_out(_C.diag_embed(input, diagonal, 0, 1), out, "diag")
    if input.dim() == 2:
        return _write_out(_C.diagonal(input, diagonal, 0, 1).clone(), out, "diag")
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


@tensor_args("input")
def diagflat(input, offset: int = 0):
    return _C.diag_embed(input.reshape(-1), offset, 0, 1)


@tensor_args("input")
def trace(input):
    """Sum of the main diagonal of a matrix (integers accumulate in int64)."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype in (_C.bool, _C.uint16, _C.uint32, _C.uint64):
        raise NotImplementedError(f"\"trace\" not implemented for '{input.dtype._torch_name}'")
    return _C.diagonal(input, 0, 0, 1).sum()


@tensor_args("input", "other")
def kron(input, other, *, out=None):
    """The Kronecker product."""
    nd = max(input.dim(), other.dim())
    a_shape = [1] * (nd - input.dim()) + list(input.shape)
    b_shape = [1] * (nd - other.dim()) + list(other.shape)
    a_view, b_view = [], []
    for sa, sb in zip(a_shape, b_shape):
        a_view += [sa, 1]
        b_view += [1, sb]
    prod = _C.mul(input.reshape(a_view), other.reshape(b_view))
    return _write_out(prod.reshape([sa * sb for sa, sb in zip(a_shape, b_shape)]), out, "kron")


# ---- Tensor methods ----

def _method(fn):
    def m(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    m.__name__ = fn.__name__
    m.__doc__ = fn.__doc__
    m.__wrapped__ = fn  # (refuse_out reads the function's parameters through it)
    return m


def _split_method(self, split_size, dim=0):
    return split(self, split_size, dim)


def install(cls) -> None:
    cls.broadcast_to = _broadcast_to_method
    for name in ("chunk", "tensor_split", "unbind", "movedim",
                 "moveaxis", "fliplr", "flipud", "rot90", "diag",
                 "diagflat", "trace", "kron", "split_with_sizes", "swapaxes", "swapdims"):
        setattr(cls, name, _method(globals()[name]))
    for name in ("hsplit", "vsplit", "dsplit"):
        setattr(cls, name, _split_along_method(name))
    cls.split = _split_method
    cls.repeat = _repeat
    cls.tile = _tile_method
