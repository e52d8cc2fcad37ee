"""Ops on CUDA tensors: CuPy kernels over zero-copy views of ember's device storages; the helpers
every op module of ember.cuda imports (the core ops' own table is ``_core_ops.OPS``).

The core hands every op call that has a CUDA tensor among its arguments to
:func:`ember.cuda._dispatch.dispatch` (the core's device hook, which merges this table with the
op modules'), under the name and arguments the autograd package receives for the same call.
Autograd therefore works on CUDA unchanged: a recorded op runs its forward through the core
again, with grad mode off, and lands here.

Each op here
  1. checks that its tensors share one device (PyTorch's error otherwise; a 0-d CPU tensor may
     join a CUDA op as a number, as in PyTorch);
  2. takes the result's dtype from the CPU op itself, run on one-element stand-ins of the same
     dtypes and ranks (:func:`_meta`), so promotion rules and dtype errors are the CPU's exactly;
  3. allocates the result from ember's caching allocator and has the array module write into a
     view of it, on ember's current stream.

The array module ``xp`` is CuPy on a GPU. Where ember.cuda runs over its host backend (the tests
on machines without a GPU, ``ember.cuda._use_host_backend``), device memory is host memory and
``xp`` is NumPy: the same code runs, only the kernels differ.

An op with no entry in the merged table raises NotImplementedError naming it (docs/cuda.md
lists the ops); the CPU kernels themselves refuse device memory (TensorImpl::data), so nothing
reads a device pointer from the host.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy

from ember import _C
from ember._shape import _broadcast_with_core_message

# ---- the array module ------------------------------------------------------------------------

_state: dict[str, Any] = {"backend": None, "xp": None, "streams": {}}


def xp():
    """The array module for the current backend: CuPy on a GPU, NumPy over the host backend."""
    return _state["xp"] or _load_array_module()


def _backend_changed() -> None:
    """ember.cuda._use_host_backend switched backends: find the array module again."""
    _state["xp"] = None


def _load_array_module():
    backend = _C._cuda_backend_name()
    if backend == "host":
        _state["xp"] = numpy
    else:
        try:
            import cupy
        except ImportError:
            raise RuntimeError(
                "ember: ops on CUDA tensors run on CuPy, which is not installed: "
                "pip install cupy-cuda12x (or cupy-cuda13x, to match the CUDA driver)"
            ) from None
        from ember.cuda._cupy import route_cupy_allocations

        route_cupy_allocations()
        _state["xp"] = cupy
    _state["backend"] = backend
    _state["streams"] = {}
    return _state["xp"]


class _on_current_stream:
    """Runs CuPy's kernels on ember's current stream of `device` (nothing to do on NumPy)."""

    __slots__ = ("ctx",)

    def __init__(self, device: int) -> None:
        self.ctx = None
        mod = xp()
        if mod is numpy:  # CuPy does not warn on inf/nan results (nor does torch): neither here
            self.ctx = (numpy.errstate(all="ignore"), None)
            return
        handle = _C._cuda_current_stream(device)
        streams = _state["streams"]
        key = (device, handle)
        if key not in streams:
            with warnings.catch_warnings():  # CuPy 14 deprecates it for Stream.from_external,
                warnings.simplefilter("ignore", DeprecationWarning)  # which older ones lack
                streams[key] = mod.cuda.ExternalStream(handle, device) if handle else None
        stream = streams[key]
        self.ctx = (mod.cuda.Device(device), stream)

    def __enter__(self):
        if self.ctx is not None:
            dev, stream = self.ctx
            dev.__enter__()
            if stream is not None:
                stream.__enter__()
        return self

    def __exit__(self, *exc):
        if self.ctx is not None:
            dev, stream = self.ctx
            if stream is not None:
                stream.__exit__(*exc)
            dev.__exit__(*exc)
        return False


# ---- views of tensors ------------------------------------------------------------------------

_TYPESTR = {
    "bool": "|b1",
    "uint8": "|u1",
    "int8": "|i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
    "complex64": "<c8",
    "complex128": "<c16",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
}


class _Exported:
    """Holds a tensor alive behind the array interface NumPy or CuPy reads."""

    def __init__(self, tensor, interface: dict, cuda: bool) -> None:
        self.tensor = tensor
        if cuda:
            self.__cuda_array_interface__ = interface
        else:
            self.__array_interface__ = interface


def typestr(dtype) -> str:
    try:
        return _TYPESTR[dtype.name]
    except KeyError:
        raise TypeError(
            f"ember: {dtype} tensors on CUDA are not supported by ember's CuPy ops yet "
            "(NumPy and CuPy have no bfloat16)"
        ) from None


def view(t):
    """A zero-copy array over a CUDA tensor's bytes (its shape, strides and dtype)."""
    return _array_over(t, typestr(t.dtype))


def _array_over(t, ts: str):
    """A zero-copy array over a CUDA tensor's bytes, read as array-interface type `ts`."""
    mod = xp()
    if t.numel() == 0:
        return mod.empty(tuple(t.shape), dtype=numpy.dtype(ts))
    interface = _C._cuda_array_interface(t, ts)
    if mod is numpy:
        return numpy.asarray(_Exported(t, interface, cuda=False))
    return mod.asarray(_Exported(t, interface, cuda=True))


def empty(shape, dtype, device: int):
    return _C._cuda_empty(list(shape), dtype, device)


# ---- bfloat16: raw bits in the array module, float32 compute ---------------------------------
# NumPy and CuPy have no bfloat16. A bf16 tensor is read as uint16 bits, widened exactly to
# float32, and float32 values are narrowed to bits the way the CPU core does (core/half.h,
# float_to_bf16_bits). Plain element-wise expressions: they run on CuPy unchanged.


def _is_bf16(a) -> bool:
    return _is_tensor(a) and a.dtype == _C.bfloat16


def _bits(t):
    """A zero-copy uint16 array over a bf16 CUDA tensor's bits."""
    return _array_over(t, "<u2")


def _widen(bits):
    """bf16 bits -> float32 values (exact)."""
    return (bits.astype(numpy.uint32) << numpy.uint32(16)).view(numpy.float32)


def _narrow(values, mod=None):
    """float32 values -> bf16 bits: round to nearest even, NaN kept a quiet NaN of the same sign
    and leading payload (the CPU's float_to_bf16_bits, bit for bit). `mod`: the array module
    (default: the backend's)."""
    mod = mod or xp()
    x = mod.asarray(values, dtype=numpy.float32).view(numpy.uint32)
    u = numpy.uint32
    rounded = (x + u(0x7FFF) + ((x >> u(16)) & u(1))) >> u(16)
    nan = (x & u(0x7FFFFFFF)) > u(0x7F800000)
    return mod.where(nan, (x >> u(16)) | u(0x40), rounded).astype(numpy.uint16)


def _values(t):
    """An array of t's values: its view, or for bf16 the float32 widening."""
    return _widen(_bits(t)) if _is_bf16(t) else view(t)


def _assign(dst, src) -> None:
    """dst[...] = src on one device: a strided, casting, broadcasting copy. Into bf16 through
    float32, as the CPU's copy kernel converts (cast_to: static_cast<float>, then to bf16)."""
    if not _is_bf16(dst):
        target, value = view(dst), _values(src)
    elif _is_bf16(src):
        target, value = _bits(dst), _bits(src)
    else:
        _bits(dst)[...] = _narrow(view(src).astype(numpy.float32))
        return
    target[...] = _unaliased(target, value)


def _unaliased(target, value):
    """value, copied first where it overlaps target at another address (x[1:].copy_(x[:-1])).
    NumPy's assignment handles overlap; CuPy's copies equal-layout contiguous arrays with one
    memcpy, undefined for overlapping ranges (its kernels copy overlapping inputs themselves)."""
    mod = xp()
    if (mod is not numpy and value.data.ptr != target.data.ptr
            and mod.may_share_memory(target, value)):
        return value.copy()
    return value


def _converted(t, dtype):
    """A new contiguous tensor of `dtype` on t's device holding t's values."""
    out = empty(tuple(t.shape), dtype, t.get_device())
    with _on_current_stream(t.get_device()):
        if out.numel():
            _assign(out, t)
    return out


def _np_dtype(dtype):
    return numpy.dtype(typestr(dtype))


# ---- arguments -------------------------------------------------------------------------------


def _is_tensor(a) -> bool:
    return isinstance(a, _C.Tensor)


def _tensors(args) -> list:
    out = []
    for a in args:
        if _is_tensor(a):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(b for b in a if _is_tensor(b))
    return out


def device_of(name: str, args, kwargs=None) -> int:
    """The CUDA device the call runs on; PyTorch's error when its tensors are on two devices (a
    0-d CPU tensor may take part, as a number)."""
    index = None
    for t in _tensors(args) + (_tensors(kwargs.values()) if kwargs else []):
        i = t.get_device()  # -1 on the CPU; cheaper than building t.device objects
        if i < 0 and t.dim() == 0:
            continue
        if index is None:
            index = i
        elif i != index:
            index = -1
            break
    if index is None or index < 0:
        _raise_mixed_devices(name, args, kwargs)
    return index


def _raise_mixed_devices(name: str, args, kwargs):
    devices = []
    for t in _tensors(list(args) + list((kwargs or {}).values())):
        d = t.device
        if (d.type != "cpu" or t.dim() != 0) and d not in devices:
            devices.append(d)
    a, b = (str(d) for d in (devices + devices)[:2]) if len(devices) > 1 else ("cpu", "cpu")
    raise RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        f"{a} and {b}! (when checking argument for {name})"
    )


_STAND_INS: dict = {}


def _stand_in(a):
    """A one-element CPU tensor of ones with a's dtype and rank (numbers and the rest pass as
    they are). Shared between calls: only an in-place op's first argument is written, and _meta
    gives that one a copy."""
    if _is_tensor(a):
        key = (a.dtype, a.dim())
        t = _STAND_INS.get(key)
        if t is None:
            t = _STAND_INS[key] = _C.ones([1] * a.dim(), dtype=a.dtype)
        return t
    if isinstance(a, (list, tuple)) and any(_is_tensor(b) for b in a):
        return type(a)(_stand_in(b) for b in a)
    return a


_CPU_NAME = {"div_trunc": "_div_trunc", "div_trunc_": "_div_trunc_"}


def _meta_key(a):
    """What of an argument can decide the CPU op's result dtype, rank and argument errors:
    a tensor's dtype and rank, any other value itself (NotImplemented: not cacheable)."""
    if _is_tensor(a):
        return (a.dtype, a.dim())
    if isinstance(a, (list, tuple)):
        keys = tuple(_meta_key(b) for b in a)
        return NotImplemented if NotImplemented in keys else (type(a), keys)
    try:
        hash(a)
    except TypeError:
        return NotImplemented
    return (type(a), a)  # type too: 1, 1.0 and True decide different dtypes


_META_CACHE: dict = {}
_META_CACHE_SIZE = 4096


def _meta(name: str, args, kwargs):
    """The CPU op on stand-ins: its result has the dtype the device result must have, and any
    dtype error is raised with the CPU's message. Results are remembered per (op, dtypes,
    ranks, other arguments), since a loop calls the same op the same way again and again;
    callers only read them."""
    key = (name, _meta_key(tuple(args)), _meta_key(tuple(kwargs.items())))
    if NotImplemented in key:
        return _run_meta(name, args, kwargs)
    hit = _META_CACHE.get(key)
    if hit is None:
        if len(_META_CACHE) >= _META_CACHE_SIZE:
            _META_CACHE.clear()
        hit = _META_CACHE[key] = _run_meta(name, args, kwargs)
    return hit


def _run_meta(name: str, args, kwargs):
    cpu_name = _CPU_NAME.get(name, name)
    stand = [_stand_in(a) for a in args]
    if cpu_name.endswith("_") and stand and _is_tensor(stand[0]):
        stand[0] = stand[0].clone()  # written in place: not the shared stand-in
    fn = getattr(_C, cpu_name, None)
    if fn is None and cpu_name.endswith("_"):
        fn = getattr(stand[0], cpu_name)
        stand = stand[1:]
    if fn is None:
        raise NotImplementedError(f"ember: no CPU op {name!r} to take the dtype rules from")
    with warnings.catch_warnings():  # e.g. var's "degrees of freedom <= 0" on a 1-element stand-in
        warnings.simplefilter("ignore")
        return fn(*stand, **{k: _stand_in(v) for k, v in kwargs.items()})


def _check_fill_range(value, dtype) -> None:
    """Raises the CPU's error for a fill value that `dtype` cannot hold (masked_fill, index_fill
    and scatter refuse uint8 -3.27 or int8 300, as torch's do), by making the CPU's 0-d tensor."""
    _C.full([], value, dtype=dtype)


def _fill_value(value, dtype):
    """`value` to fill an array of `dtype` with: itself, or for a float -0.0 a 0-d array of it.
    CuPy's fill (behind full, assigning a number and asarray of a number) writes zeros with a
    memset for any value == 0, which would drop the sign; a 0-d array is copied element-wise."""
    if (isinstance(value, (float, numpy.floating)) and value == 0 and math.copysign(1, value) < 0
            and numpy.dtype(dtype).kind == "f" and xp() is not numpy):
        bits = numpy.dtype(f"u{numpy.dtype(dtype).itemsize}")
        return xp().full((), 1 << (8 * bits.itemsize - 1), dtype=bits).view(dtype)
    return value


def _number(a):
    """A CPU 0-d tensor joining a CUDA op becomes its number."""
    if _is_tensor(a) and a.get_device() < 0:
        return a.item()
    return a


def _operand(a, dtype):
    """An operand as an array of `dtype` (tensors: a view, cast if needed; numbers: 0-d)."""
    npd = _np_dtype(dtype)
    a = _number(a)
    if _is_tensor(a):
        v = view(a)
        return v if v.dtype == npd else v.astype(npd)
    return _scalar_array(a, npd)


def _scalar_array(value, dtype):
    """A 0-d array of `dtype` holding the number `value`, converted as the CPU casts it (an
    integer out of range wraps: int8 + 300 adds 44) on the host, so one copy to the device. A -0.0
    keeps its sign (_fill_value)."""
    v = _fill_value(value, dtype)
    if v is not value:
        return v
    return xp().asarray(numpy.asarray(value).astype(dtype))


def _result(device: int, shape, dtype, value):
    """A new CUDA tensor holding `value` (an array of any dtype, broadcast to `shape`)."""
    out = empty(shape, dtype, device)
    if out.numel():
        target = view(out)
        target[...] = _fill_value(value, target.dtype)
    return out


def _broadcast_shapes(*shapes) -> tuple:
    """The shapes broadcast together, with the core's message."""
    first = shapes[0]
    if all(s == first for s in shapes):  # the common case, without the general rule's cost
        return tuple(first)
    return _broadcast_with_core_message(*shapes)


def _shape(a) -> tuple:
    return tuple(a.shape) if _is_tensor(a) else ()


# ---- array helpers shared by the op modules ------------------------------------------------


def _pad(a, lo, hi, value=0):
    """a with its trailing len(lo) dims padded by lo/hi elements of `value` (negative: cropped)."""
    mod = xp()
    k = len(lo)
    lead = a.ndim - k
    if all(v == 0 for v in lo) and all(v == 0 for v in hi):
        return mod.ascontiguousarray(a)
    sizes = a.shape[lead:]
    out = mod.full(a.shape[:lead] + tuple(s + lo_ + hi_ for s, lo_, hi_ in zip(sizes, lo, hi)),
                   value, dtype=a.dtype)
    src, dst = [slice(None)] * lead, [slice(None)] * lead
    for s, lo_, hi_ in zip(sizes, lo, hi):
        a0, a1 = max(-lo_, 0), s - max(-hi_, 0)
        src.append(slice(a0, a1))
        dst.append(slice(max(lo_, 0), max(lo_, 0) + max(a1 - a0, 0)))
    out[tuple(dst)] = a[tuple(src)]
    return out


def _scatter_add(target, index, values):
    """target[index] += values, with repeated indices summed (1-d arrays)."""
    _scatter_reduce(target, index, values, "add")


# The dtypes CUDA's atomicAdd (so cupy.add.at) takes.
_ATOMIC_ADD = ("float32", "float64", "int32", "uint32", "uint64")


def _scatter_reduce(target, index, values, ufunc: str):
    """target[index] = ufunc(target[index], values) for every pair in order, repeated indices
    folded in (1-d arrays; ufunc: add, multiply, maximum or minimum). NumPy's ufunc.at runs them
    in order, as the CPU kernels do; on CuPy, atomics where CUDA has them, else a segmented
    reduction."""
    mod = xp()
    if mod is numpy:
        getattr(numpy, ufunc).at(target, index, values)
        return
    if ufunc == "add" and target.dtype.name in _ATOMIC_ADD:
        if hasattr(mod.add, "at"):  # CuPy >= 13; cupyx.scatter_add is deprecated since
            mod.add.at(target, index, values)
        else:
            import cupyx

            cupyx.scatter_add(target, index, values)
        return
    _segmented_scatter(target, index, values, ufunc)


def _segmented_scatter(target, index, values, ufunc: str):
    """_scatter_reduce without ufunc.at: the pairs sorted by index (non-negative), each run of one
    index folded by a segmented scan (log2(n) passes), then one write per distinct index."""
    mod = xp()
    fn = getattr(mod, ufunc)
    n = index.shape[0]
    if n == 0:
        return
    # CuPy's argsort is always stable and takes no kind=; NumPy's needs it
    order = numpy.argsort(index, kind="stable") if mod is numpy else mod.argsort(index)
    keys = index[order]
    acc = mod.broadcast_to(mod.asarray(values, dtype=target.dtype), index.shape)[order]
    step = 1
    while step < n:
        same = keys[step:] == keys[:-step]
        acc[step:] = mod.where(same, fn(acc[:-step], acc[step:]), acc[step:])
        step *= 2
    last = mod.ones(n, dtype=bool)
    last[:-1] = keys[1:] != keys[:-1]
    at = keys[last]
    target[at] = fn(target[at], acc[last])
