"""What the compositions share: out= handling with torch's checks and messages, dimension
arguments, and the dtype checks several families make."""

from __future__ import annotations

import builtins
import operator

from ember import _C, _shape

_SHELL_UNSIGNED = (_C.uint16, _C.uint32, _C.uint64)  # torch's types without arithmetic

_Tensor = _C.Tensor
_min = builtins.min
_max = builtins.max


def _is_tensor(x) -> bool:
    return isinstance(x, _Tensor)


def _finish(result, out):
    """out=: the result written into `out` (resized as torch's out= does), else returned."""
    if out is None:
        return result
    if out.requires_grad and _C.is_grad_enabled():
        raise RuntimeError("functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(result.shape)
    out.copy_(result)
    return out


def _finish_cast(result, out, name, check_overlap=True):
    """out= of an op whose result is cast into out's dtype where torch's can_cast allows (its
    'can't be cast' error otherwise), out's overlap checked before a resize, as torch's (whose
    threshold kernel alone does not check it)."""
    if out is not None:
        if not _C.can_cast(result.dtype, out.dtype):
            raise RuntimeError(f"result type {result.dtype._torch_name} can't be cast to the "
                               f"desired output type {out.dtype._torch_name}")
        if check_overlap:
            _C._check_inplace_writable(out, name)
    return _finish(result, out)


def _finish_same_dtype(result, out, name):
    """out= of an op whose kernel writes its own dtype only (torch's 'Found dtype')."""
    if out is not None:
        if out.dtype != result.dtype:
            raise RuntimeError(f"Found dtype {out.dtype._torch_name} but expected "
                               f"{result.dtype._torch_name}")
        _C._check_inplace_writable(out, name)  # (torch's check comes before a resize)
    return _finish(result, out)


def _finish_exact(result, out):
    """out= of a linalg norm: exactly the result's dtype."""
    if out is not None and out.dtype != result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype._cpp_name}, but got "
                           f"{out.dtype._cpp_name} instead")
    return _finish(result, out)


def _dim_list(dim) -> list:
    """An int[] argument as ints: an int, a one-element integer tensor, or a sequence of them."""
    if isinstance(dim, int) or (_is_tensor(dim) and dim.numel() == 1):
        return [operator.index(dim)]
    return [operator.index(d) for d in dim]


def _wrap_dim(dim: int, ndim: int) -> int:
    if not isinstance(dim, int):  # (a 0-d integer tensor or NumPy integer, as torch's int)
        dim = operator.index(dim)
    n = _max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _refuse_complex(name, input, error=RuntimeError, message=None):
    """torch's refusal of a complex input, for the compositions that are real-only."""
    if input.dtype.is_complex:
        raise error(message or f"{name} does not support complex inputs.")


def _dtype_name(dt) -> str:
    return dt._torch_name


def _floating_kernel(kernel, input, device_suffix=True):
    """torch's refusal of an integer, bool or complex input by a floating-only kernel:
    NotImplementedError('"elu_cpu" not implemented for 'Long'')."""
    if not input.dtype.is_floating_point:
        if device_suffix:
            kernel = f"{kernel}_{'cuda' if input.is_cuda else 'cpu'}"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype_name(input.dtype)}'")


def _binary_iter_checks(name, input, other, out=None, inplace=False):  # noqa: A002
    """The checks of torch's binary TensorIterator ops, in its order: the written-to tensor's
    internal overlap, the shapes, whether the common dtype casts to the written-to tensor's; the
    common dtype is returned for the kernel's own dtype check, which comes after them."""
    target = input if inplace else out
    if target is not None:
        _C._check_inplace_writable(target, name + "_" if inplace else name)
    shape = _shape._broadcast_with_core_message(tuple(input.shape), tuple(other.shape))
    if inplace and tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    common = _C.result_type(input, other)
    if target is not None and not _C.can_cast(common, target.dtype):
        raise RuntimeError(f"result type {common._torch_name} can't be cast to the desired output "
                           f"type {target.dtype._torch_name}")
    return common
