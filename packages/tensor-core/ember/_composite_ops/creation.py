"""Factories: the new_* family (self's dtype and device as defaults), empty_permuted, the
window functions, and objects as tensors (frombuffer, asarray), sharing memory where they can."""

from __future__ import annotations

import math
import operator
import warnings

from ember import _C
from ember._composite_ops._common import _dtype_name, _is_tensor


def _like(self, dtype, device):
    return (self.dtype if dtype is None else dtype), (self.device if device is None else device)


def new_empty(self, size, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.empty(size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                    requires_grad=requires_grad)


def new_zeros(self, size, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.zeros(size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                    requires_grad=requires_grad)


def new_ones(self, size, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.ones(size, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                   requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.full(size, fill_value, dtype=dtype, layout=layout, device=device,
                   pin_memory=pin_memory, requires_grad=requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      pin_memory=False, requires_grad=False):
    dtype, device = _like(self, dtype, device)
    return _C.empty_strided(size, stride, dtype=dtype, layout=layout, device=device,
                            pin_memory=pin_memory, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, layout=None, device=None, pin_memory=False,
               requires_grad=False):
    dtype, device = _like(self, dtype, device)
    if _is_tensor(data):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than "
            "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        r = data.detach().to(device=device, dtype=dtype, copy=True)
        return r.requires_grad_(requires_grad) if requires_grad else r
    return _C.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """An uninitialised tensor of `size` whose dims lie in memory in `physical_layout`'s order
    (outermost first)."""
    size, perm = list(size), list(physical_layout)
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; or physical_layout is not a permutation: size "
                           f"{size}, physical_layout {perm}")
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    physical = _C.empty([size[p] for p in perm], dtype=dtype, device=device,
                        pin_memory=bool(pin_memory))
    result = physical.permute(inverse)
    return result.requires_grad_() if requires_grad else result


def _window(name, window_length, periodic, dtype, layout, device, requires_grad, fn,
            pin_memory=False):
    # pinned as torch's factories pin: a RuntimeError where no accelerator is usable, before
    # anything is computed (empty's check)
    if pin_memory:
        _C.empty(0, pin_memory=True)
    w = _window_values(name, window_length, periodic, dtype, layout, device, requires_grad, fn)
    return w.pin_memory() if pin_memory else w


def _window_values(name, window_length, periodic, dtype, layout, device, requires_grad, fn):
    window_length = operator.index(window_length)  # (a 0-d integer tensor is an int)
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length="
                           f"{window_length}")
    dt = _C.get_default_dtype() if dtype is None else dtype
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if window_length == 0:
        return _C.empty(0, dtype=dt, layout=layout, device=device, requires_grad=requires_grad)
    if window_length == 1:
        return _C.ones(1, dtype=dt, layout=layout, device=device, requires_grad=requires_grad)
    if dt.is_complex:  # torch's check lets complex through; its arange of them then fails
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dt._torch_name}'")
    n = window_length + 1 if periodic else window_length
    if window_length <= _WINDOW_BLOCK:
        w = fn(_C.arange(window_length, dtype=_C.float64, device=device), n).to(dt)
    else:  # block by block, so that a 16-bit window of 2**31 needs no 16 GiB of float64
        w = _C.empty(window_length, dtype=dt, device=device)
        positions = _C.arange(_WINDOW_BLOCK, dtype=_C.float64, device=device)
        for start in range(0, window_length, _WINDOW_BLOCK):
            stop = min(start + _WINDOW_BLOCK, window_length)
            w[start:stop] = fn(positions[:stop - start] + start, n)  # (exact: integers < 2**53)
    return w.requires_grad_(requires_grad) if requires_grad else w


# Window values are computed in float64 (rounded once to the dtype) this many at a time: 256 KiB
# per temporary, which stays in the L2 cache through the formula's passes (with 2 MiB blocks a
# window of 2**24 took 1.5-3x torch's time; a 2**31 one ran past the fuzzer's 20 s timeout).
_WINDOW_BLOCK = 1 << 15


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda k, n: 0.5 - 0.5 * (k * (2 * math.pi / (n - 1))).cos(), pin_memory)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda k, n: alpha - beta * (k * (2 * math.pi / (n - 1))).cos(),
                   pin_memory)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    def fn(k, n):
        t = k * (2 * math.pi / (n - 1))
        return 0.42 - 0.5 * t.cos() + 0.08 * (2 * t).cos()

    return _window("blackman_window", window_length, periodic, dtype, layout, device,
                   requires_grad, fn, pin_memory)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    return _window("bartlett_window", window_length, periodic, dtype, layout, device,
                   requires_grad, lambda k, n: 1 - (k * (2 / (n - 1)) - 1).abs(), pin_memory)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    def fn(k, n):
        r = k * (2 / (n - 1)) - 1
        peak = _C.i0(_C.tensor(float(beta), dtype=_C.float64, device=k.device))
        return _C.i0(beta * (1 - r * r).clamp(min=0).sqrt()) / peak

    return _window("kaiser_window", window_length, periodic, dtype, layout, device,
                   requires_grad, fn, pin_memory)


def _numpy_dtype(dtype):
    """The NumPy dtype that holds `dtype`'s bits (bfloat16 as int16: NumPy has none)."""
    import numpy

    return numpy.dtype("int16") if dtype == _C.bfloat16 else numpy.dtype(dtype.name)


def _over_numpy(array, dtype):
    """A tensor over a NumPy array's memory, read as `dtype` (bfloat16 from int16 bits)."""
    t = _C.from_numpy(array)
    return t.view(_C.bfloat16) if dtype == _C.bfloat16 else t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor over an object that exposes the buffer protocol (bytes, bytearray,
    memoryview, array.array, mmap), sharing its memory: `count` elements of `dtype` from byte
    `offset` (count=-1: to the end). The tensor keeps the buffer alive; a read-only buffer gives
    a tensor that must not be written (torch's warning)."""
    import numpy

    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"frombuffer(): argument 'dtype' must be ember.dtype, not "
                        f"{type(dtype).__name__}")
    try:  # (a tensor too: ember's export the buffer protocol, torch's do not)
        if isinstance(buffer, _C.Tensor):
            raise TypeError
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length, size = view.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    array = numpy.frombuffer(view.cast("B") if view.format != "B" else view,
                             dtype=_numpy_dtype(dtype), count=count, offset=offset)
    with warnings.catch_warnings():  # said below in the buffer's terms, not the array's
        warnings.simplefilter("ignore", UserWarning)
        result = _over_numpy(array, dtype)
    if view.readonly:
        warnings.warn("The given buffer is not writable, and ember does not support non-writable "
                      "tensors. This means you can write to the underlying (supposedly "
                      "non-writable) buffer using the tensor. You may want to copy the buffer to "
                      "protect its data or make it writable before converting it to a tensor.",
                      UserWarning, stacklevel=2)
    return result.requires_grad_() if requires_grad else result


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor, as torch.asarray: a tensor, a NumPy array, a DLPack or buffer object is
    shared without a copy when dtype and device allow (copy=None), always copied (copy=True) or
    never (copy=False: ValueError when a copy is needed); sequences and numbers are copied."""
    import numpy

    from ember._device import device as device_class

    if device is None:  # ember.set_default_device's, if any (torch's asarray follows it too)
        device = _C._get_default_device()
    target = None if device is None else device_class(device) if not isinstance(
        device, device_class) else device
    if _is_tensor(obj):
        result = obj
    elif isinstance(obj, numpy.ndarray) or hasattr(obj, "__array_interface__"):
        array = numpy.asarray(obj)
        try:
            result = _C.from_numpy(array)
        except TypeError:  # a NumPy dtype ember has not: a copy through tensor()
            if copy is False:
                raise ValueError(f"can't alias NumPy array of dtype {array.dtype}") from None
            result, copy = _C.tensor(array), None
    elif hasattr(obj, "__dlpack__"):
        result = _C.from_dlpack(obj)
    elif isinstance(obj, (bytes, bytearray, memoryview)) and dtype is not None:
        result = frombuffer(obj, dtype=dtype)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        result = _C.tensor(obj, dtype=dtype, device=target)
        return result.requires_grad_() if requires_grad else result
    wants_dtype = dtype is not None and dtype != result.dtype
    wants_device = target is not None and target != result.device
    if copy is False and wants_dtype:
        raise ValueError(f"can't alias tensor with dtype '{_dtype_name(result.dtype)}' into "
                         f"dtype '{_dtype_name(dtype)}'.")
    if copy is False and wants_device:
        raise ValueError(f"can't alias tensor on device '{result.device}' into device "
                         f"'{target}'.")
    if copy or wants_dtype or wants_device:
        result = result.to(device=target or result.device, dtype=dtype or result.dtype,
                           copy=bool(copy))
    return result.requires_grad_() if requires_grad and not result.requires_grad else result
