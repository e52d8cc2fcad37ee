"""ember.save / ember.load: PyTorch's checkpoint format, so that torch.load reads ember's files
and ember.load reads torch's.

The file is a zip archive (entries stored, not compressed)::

    archive/data.pkl        the object, pickled (protocol 2 by default)
    archive/byteorder       "little"
    archive/data/<key>      the bytes of one storage, aligned to 64 bytes in the file
    archive/version         "3"

In data.pkl a tensor is ``torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
requires_grad, OrderedDict())`` and a storage is a persistent id ``('storage',
torch.<Type>Storage, key, location, numel)``. Each storage is written once, so tensors that
share a storage (views) load sharing one, with their strides and offsets.

The pickle names torch's globals without torch being installed. For protocols 2 and 3 the C
pickler writes ember's own (importable) globals and their GLOBAL opcodes are renamed to torch's
afterwards; should a placeholder's bytes also occur in the user's data, or for protocols 4 and 5,
the pure-Python pickler is used instead, whose per-type dispatch writes stand-in objects as
``GLOBAL module name`` opcodes directly (the C pickler would import the module to check a name).

Loading with ``weights_only=True`` (the default, as in torch) goes through an unpickler of its
own (``_weights_only_unpickler.py``) that resolves only the globals a checkpoint needs (the
rebuild functions, storage types, dtypes, Size, device, OrderedDict and pickle's forms of
builtin values), calls and builds only what its allowlist names, and refuses everything else
with ``pickle.UnpicklingError``. In both modes every storage record and every tensor's geometry
is checked before the core sees it (see "Reading" below).
"""

from __future__ import annotations

import codecs
import collections
import io
import mmap as _mmap
import os
import pickle
import struct
import sys
import warnings
import zipfile
from typing import Any

import ember
from ember import _weights_only_unpickler as _weights_only

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals",
           "save"]

_ALIGN = 64
_DEFAULT_PROTOCOL = 2

# dtype name -> torch's legacy typed storage class name (the persistent id's storage type)
_STORAGE_NAMES = {
    "float32": "FloatStorage",
    "float64": "DoubleStorage",
    "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage",
    "int64": "LongStorage",
    "int32": "IntStorage",
    "int16": "ShortStorage",
    "int8": "CharStorage",
    "uint8": "ByteStorage",
    "bool": "BoolStorage",
    "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}
# dtypes torch has no typed storage for: saved as untyped bytes with the dtype beside them
# (_rebuild_tensor_v3), as torch saves them
_UNTYPED_DTYPE_NAMES = ("uint16", "uint32", "uint64")
_DTYPE_NAMES = tuple(_STORAGE_NAMES) + _UNTYPED_DTYPE_NAMES
# torch storage types whose dtypes ember does not have: refused with a message naming them
_UNSUPPORTED_STORAGES = ("ComplexHalfStorage",
                         "UInt16Storage", "UInt32Storage", "UInt64Storage", "QInt8Storage",
                         "QUInt8Storage", "QInt32Storage", "Float8_e4m3fnStorage",
                         "Float8_e5m2Storage")


def _dtype_name(dt) -> str:
    return str(dt).split(".")[-1]


# ---------------------------------------------------------------------------------------------
# Writing


class _Global:
    """Stand-in that pickles as ``GLOBAL module name`` (see the module docstring)."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):  # save_reduce wants a callable; this one is only ever written
        raise TypeError(f"{self.module}.{self.name} is a pickling stand-in")


_REBUILD_V2 = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_V3 = _Global("torch._utils", "_rebuild_tensor_v3")
_ORDERED_DICT = collections.OrderedDict
_TORCH_DEVICE = _Global("torch", "device")
_TORCH_SIZE = _Global("torch", "Size")
_STORAGE_GLOBALS = {n: _Global("torch", s) for n, s in _STORAGE_NAMES.items()}
_STORAGE_GLOBALS["untyped"] = _Global("torch.storage", "UntypedStorage")
_DTYPE_GLOBALS = {n: _Global("torch", n) for n in _DTYPE_NAMES}


class _StorageRef:
    """A storage as the pickle sees it: the untyped bytes plus the dtype they are viewed as."""

    __slots__ = ("storage", "dtype", "untyped")

    def __init__(self, storage, dtype, untyped: bool = False):
        self.storage, self.dtype, self.untyped = storage, dtype, untyped


class _SaveMixin:
    """What both picklers share: storages become persistent ids (each written once), tensors
    reduce to the rebuild function. The subclass names the globals to write (`_names`)."""

    def _init_state(self):
        self.storages: dict[int, tuple[str, Any, str]] = {}  # _cdata -> (key, storage, dtype)
        self.used: set = set()  # the placeholder globals written (see _FastPickler)

    def persistent_id(self, obj):
        if type(obj) is ember.UntypedStorage:  # a storage saved by itself: bytes, as uint8
            obj = _StorageRef(obj, ember.uint8, untyped=True)
        elif type(obj) is not _StorageRef:
            return None
        storage, name = obj.storage, _dtype_name(obj.dtype)
        seen = self.storages.get(storage._cdata)
        if seen is None:
            key = str(len(self.storages))
            self.storages[storage._cdata] = (key, storage, name)
        else:
            key = seen[0]
            if seen[2] != name:
                raise RuntimeError(
                    "Cannot save multiple tensors or storages that view the same data as "
                    "different types")
        storage_type = self._names["storage"]["untyped" if obj.untyped else name]
        self.used.add(storage_type)
        return ("storage", storage_type, key, str(storage.device),
                storage.nbytes() // obj.dtype.itemsize)

    def reducer_override(self, obj):
        names = self._names
        if isinstance(obj, ember.Tensor):
            untyped = _dtype_name(obj.dtype) in _UNTYPED_DTYPE_NAMES
            ref = _StorageRef(obj.untyped_storage(), ember.uint8 if untyped else obj.dtype,
                              untyped=untyped)
            args = (ref, obj.storage_offset(), tuple(obj.shape), tuple(obj.stride()),
                    bool(obj.requires_grad), _ORDERED_DICT())
            rebuild = names["rebuild_v3" if untyped else "rebuild"]
            self.used.add(rebuild)
            return rebuild, args + (obj.dtype,) if untyped else args
        if isinstance(obj, ember.dtype):
            self.used.add(obj)
            return names["dtype"](obj)
        if isinstance(obj, ember.Size):
            self.used.add(names["Size"])
            return names["Size"], (tuple(obj),)
        if isinstance(obj, ember.device):
            self.used.add(names["device"])
            return names["device"], (str(obj),)
        return NotImplemented


class _Pickler(_SaveMixin, pickle._Pickler):
    """The pure-Python pickler: its per-type dispatch writes the stand-ins as GLOBAL opcodes
    without importing torch. Slower; used for protocols 4 and 5 and as the fallback."""

    dispatch = dict(pickle._Pickler.dispatch)
    _names = {"storage": _STORAGE_GLOBALS, "rebuild": _REBUILD_V2, "rebuild_v3": _REBUILD_V3,
              "Size": _TORCH_SIZE, "device": _TORCH_DEVICE, "dtype": None}

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self._init_state()

    def _save_global_standin(self, obj: _Global):
        # What pickle's save_global writes for protocols 2 and 3, without importing the module.
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[_Global] = _save_global_standin

    def reducer_override(self, obj):
        if isinstance(obj, ember.dtype):
            return NotImplemented  # the dispatch entry below writes it
        return super().reducer_override(obj)


def _save_dtype(pickler: _Pickler, obj):
    standin = _DTYPE_GLOBALS[_dtype_name(obj)]
    seen = pickler.memo.get(id(standin))
    if seen is not None:  # a dtype saved before: pickle's save() looked up the dtype, not this
        pickler.write(pickler.get(seen[0]))
        return
    pickler._save_global_standin(standin)


_Pickler.dispatch[type(ember.float32)] = _save_dtype

# The C pickler (protocols 2 and 3) writes ember's own globals, which it can import; the GLOBAL
# opcodes are then renamed to torch's. Each distinct global is written exactly once (the pickle
# memo), so a placeholder that occurs any other number of times than its use says that user data
# contains its bytes: the pure-Python pickler is used instead.
_STORAGE_CLASSES = {n: type(s, (), {"__module__": __name__, "__qualname__": s})
                    for n, s in {**_STORAGE_NAMES, "untyped": "UntypedStorage"}.items()}
globals().update({cls.__name__: cls for cls in _STORAGE_CLASSES.values()})


def _global_line(module: str, name: str) -> bytes:
    return pickle.GLOBAL + f"{module}\n{name}\n".encode()


def _renames() -> dict:
    r = {_rebuild_tensor_v2: (_global_line(__name__, "_rebuild_tensor_v2"),
                              _global_line("torch._utils", "_rebuild_tensor_v2")),
         _rebuild_tensor_v3: (_global_line(__name__, "_rebuild_tensor_v3"),
                              _global_line("torch._utils", "_rebuild_tensor_v3")),
         ember.Size: (_global_line(ember.Size.__module__, "Size"), _global_line("torch", "Size")),
         ember.device: (_global_line(ember.device.__module__, "device"),
                        _global_line("torch", "device"))}
    for n, cls in _STORAGE_CLASSES.items():
        if n == "untyped":
            r[cls] = (_global_line(__name__, cls.__name__),
                      _global_line("torch.storage", cls.__name__))
            continue
        r[cls] = (_global_line(__name__, cls.__name__), _global_line("torch", cls.__name__))
        dt = getattr(ember, n)
        r[dt] = (_global_line(type(dt).__module__, n), _global_line("torch", n))
    for n in _UNTYPED_DTYPE_NAMES:
        dt = getattr(ember, n)
        r[dt] = (_global_line(type(dt).__module__, n), _global_line("torch", n))
    return r


class _FastPickler(_SaveMixin, pickle.Pickler):
    _names = None  # set below, once the rebuild function exists

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self._init_state()


def _dumps(obj, protocol: int):
    """(pickle bytes, the pickler's storages)."""
    if protocol in (2, 3):
        buf = io.BytesIO()
        pickler = _FastPickler(buf, protocol)
        pickler.dump(obj)
        data = buf.getvalue()
        renames = _renames()
        if all(data.count(old) == (key in pickler.used) for key, (old, _) in renames.items()):
            for key in pickler.used:
                old, new = renames[key]
                data = data.replace(old, new)
            return data, pickler.storages
    buf = io.BytesIO()
    pickler = _Pickler(buf, protocol)
    pickler.dump(obj)
    return buf.getvalue(), pickler.storages


def _zip_entry(zf: zipfile.ZipFile, name: str, data, align: bool = False) -> None:
    """Writes one stored entry; with `align`, pads the local header's extra field so the data
    starts on a 64-byte boundary of the file (torch does the same; it allows mmap loading)."""
    view = memoryview(data).cast("B")
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = view.nbytes
    zip64 = view.nbytes * 1.05 > zipfile.ZIP64_LIMIT
    if align:
        start = zf.fp.tell()
        header = 30 + len(name.encode("utf-8")) + (20 if zip64 else 0)
        pad = -(start + header + 4) % _ALIGN
        info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # 'FB', as torch's writer
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(view)


def _open_for(f, mode: str):
    if isinstance(f, (str, os.PathLike)):
        return open(f, mode), True
    want = "write" if "w" in mode else "read"
    if not hasattr(f, want):
        raise AttributeError(
            f"expected a path or a binary file object with a '{want}' method, got "
            f"{type(f).__name__}")
    return f, False


def save(obj, f, pickle_module=None, pickle_protocol: int = _DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Saves `obj` (tensors and containers of them, numbers, strings, ...) to `f`, a path or a
    binary file object, in PyTorch's checkpoint format (``torch.load`` reads it).

    >>> import io, ember
    >>> buf = io.BytesIO()
    >>> ember.save({"w": ember.ones(2, 3)}, buf)
    >>> _ = buf.seek(0)
    >>> ember.load(buf)["w"].shape
    ember.Size([2, 3])
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.save: only the standard pickle module is supported")
    if not _use_new_zipfile_serialization:
        raise ValueError("ember.save: the legacy (non-zip) format is not supported")
    data, storages = _dumps(obj, pickle_protocol)
    fobj, owned = _open_for(f, "wb")
    try:
        with zipfile.ZipFile(fobj, "w", zipfile.ZIP_STORED) as zf:
            _zip_entry(zf, "archive/data.pkl", data)
            _zip_entry(zf, "archive/.format_version", b"1")
            _zip_entry(zf, "archive/.storage_alignment", str(_ALIGN).encode())
            _zip_entry(zf, "archive/byteorder", sys.byteorder.encode())
            for key, storage, dtype_name in storages.values():
                if not storage.device.type == "cpu":
                    raise NotImplementedError(
                        f"ember.save: saving a {storage.device} storage is not supported yet")
                # whole elements only: the record must hold numel * itemsize bytes exactly
                itemsize = getattr(ember, dtype_name).itemsize
                whole = storage.nbytes() // itemsize * itemsize
                _zip_entry(zf, f"archive/data/{key}", memoryview(storage)[:whole], align=True)
            _zip_entry(zf, "archive/version", b"3\n")
    finally:
        if owned:
            fobj.close()


# ---------------------------------------------------------------------------------------------
# Reading
#
# A file is untrusted input. Before anything reaches the core, the loader checks each persistent
# id, each storage's record (its size against numel * itemsize and against the archive's bytes)
# and each tensor's geometry against its storage, in Python integers, which cannot overflow.
# The rebuild functions do these checks in both modes; with weights_only=True the unpickler of
# `_weights_only_unpickler.py` also decides which globals exist and what REDUCE, NEWOBJ and BUILD
# may do with them.

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# the most elements the core creates a tensor of (checked_numel in csrc/core/tensor.cpp): a
# loaded tensor must be one that clone() and contiguous() can make
CORE_MAX_NUMEL = 1 << 60
_MAX_DIMS = 64  # the core's iterators handle at most 64 dimensions
_DTYPE_TYPE = type(ember.float32)
# deflate expands one compressed byte to at most 1032 bytes: a record that declares more than
# that is lying about its size, and is refused before its size is allocated
_MAX_DEFLATE_RATIO = 1032


class _StorageType:
    """What ``torch.<Type>Storage`` resolves to while loading: carries the dtype."""

    def __init__(self, dtype_name: str | None, torch_name: str = "", untyped: bool = False):
        self.dtype = getattr(ember, dtype_name) if dtype_name else None
        self.torch_name = torch_name
        self.untyped = untyped  # torch.UntypedStorage: loads as the storage itself

    @classmethod
    def unsupported(cls, torch_name: str) -> _StorageType:
        return cls(None, torch_name)

    def __call__(self, *args, **kwargs):
        raise pickle.UnpicklingError("a storage type cannot be called while loading")


def _int64_list(values, what: str, where: str = "_rebuild_tensor") -> list[int]:
    """`values` as a list of int64s (sizes, strides); torch's error for an int it cannot
    unpack, a TypeError for anything else."""
    if not isinstance(values, (tuple, list)):  # ember.Size is a tuple
        raise TypeError(f"{where}: '{what}' must be a tuple of ints, not {type(values).__name__}")
    if len(values) > _MAX_DIMS:
        raise RuntimeError(f"{where}: '{what}' has {len(values)} dimensions, more than the "
                           f"{_MAX_DIMS} ember supports")
    for pos, v in enumerate(values):
        if type(v) is not int:  # bool and float are refused, as torch's set_ refuses them
            raise TypeError(f"{where}: '{what}' must be a tuple of ints, but found element of "
                            f"type {type(v).__name__} at pos {pos}")
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise TypeError(f"{where}: argument '{what}' failed to unpack the object at pos {pos} "
                            'with error "Overflow when unpacking long long"')
    return list(values)


def core_refuses_size(size) -> bool:
    """Whether the core would refuse to create a tensor of these sizes ("too large"), counted
    as it counts: left to right, a 0 ends the count; and whether its contiguous strides (right
    to left, a 0 counting as 1) overflow int64, which the core refuses even when it is empty."""
    n = 1
    for s in size:
        if s != 0 and n > CORE_MAX_NUMEL // s:
            return True
        n *= s
    stride = 1
    for s in reversed(list(size)[1:]):
        stride *= max(s, 1)
        if stride > _INT64_MAX:
            return True
    return False


def _check_geometry(nbytes: int, dtype, offset, size: list, stride: list) -> None:
    """Raises unless (size, stride, offset) addresses only bytes of a storage of `nbytes` and
    every count the core derives from it (numel, the bytes of a copy, the furthest element)
    fits an int64. Exact: Python integers do not overflow. torch's messages where torch refuses
    the same input; stricter than torch where ember's core is: negative strides, more than
    2**60 elements (also before a 0 size, as the core counts), and an empty tensor's strides,
    which must not overflow either."""
    if type(offset) is not int:
        raise TypeError(f"_rebuild_tensor: storage_offset must be an int, not "
                        f"{type(offset).__name__}")
    if not _INT64_MIN <= offset <= _INT64_MAX:
        raise ValueError("Overflow when unpacking long long")
    if len(size) != len(stride):
        raise RuntimeError(f"unequal size length ({len(size)}) and stride length ({len(stride)})")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    numel = 1
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {size}")
        numel *= s
        if numel > _INT64_MAX:  # left to right, as torch counts: a later 0 does not excuse it
            raise RuntimeError("numel: integer multiplication overflow")
    if any(st < 0 for st in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {stride}")
    if core_refuses_size(size):  # clone() or contiguous() could not make it
        raise ValueError(f"tensor of size {size} is too large")
    itemsize = dtype.itemsize
    furthest = offset + sum(st * (s - 1) for s, st in zip(size, stride) if s > 0)
    needed = (furthest + 1) * itemsize
    if needed > _INT64_MAX:
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={size} and strides={stride}")
    if numel and needed > nbytes:
        raise RuntimeError(
            f"setStorage: sizes {size}, strides {stride}, storage offset {offset}, and itemsize "
            f"{itemsize} requiring a storage size of {needed} are out of bounds for storage of "
            f"size {nbytes}")


def _canonical_bools(storage) -> None:
    """A file's bytes read as bools are made 0 or 1: a bool holding another byte is undefined
    behaviour in the kernels (C++ bool loads), which a crafted file must not reach."""
    import numpy as np

    if storage.nbytes():
        raw = np.frombuffer(memoryview(storage), dtype=np.uint8)
        raw[raw > 1] = 1


def _tensor_from_ref(ref, storage_offset, size, stride, requires_grad, dtype=None):
    if isinstance(ref, _StorageRef):
        storage, ref_dtype = ref.storage, ref.dtype
    elif type(ref) is ember.UntypedStorage:  # torch.UntypedStorage: bytes, viewed as `dtype`
        storage, ref_dtype = ref, ember.uint8
    else:
        raise pickle.UnpicklingError(
            f"_rebuild_tensor: expected a storage, got {type(ref).__name__}")
    if dtype is None:
        dtype = ref_dtype
    elif type(dtype) is not _DTYPE_TYPE:
        raise pickle.UnpicklingError(f"_rebuild_tensor_v3: expected a dtype, got "
                                     f"{type(dtype).__name__}")
    if dtype == ember.bool and ref_dtype != ember.bool and storage.device.type == "cpu":
        _canonical_bools(storage)  # bytes of another type read as bools
    size, stride = _int64_list(size, "size"), _int64_list(stride, "stride")
    if type(requires_grad) not in (bool, int):
        raise TypeError(f"_rebuild_tensor: requires_grad must be a bool, not "
                        f"{type(requires_grad).__name__}")
    _check_geometry(storage.nbytes(), dtype, storage_offset, size, stride)
    t = ember.empty(0, dtype=dtype)
    t.set_(storage, storage_offset, tuple(size), tuple(stride))
    if requires_grad:
        try:
            t.requires_grad_(True)
        except ImportError:  # no autograd package installed: the data loads all the same
            pass
    return t


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    return _tensor_from_ref(storage, storage_offset, size, stride, requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype=None, metadata=None):
    return _tensor_from_ref(storage, storage_offset, size, stride, requires_grad, dtype)


_FastPickler._names = {"storage": _STORAGE_CLASSES, "rebuild": _rebuild_tensor_v2,
                       "rebuild_v3": _rebuild_tensor_v3, "Size": ember.Size, "device": ember.device,
                       "dtype": lambda dt: _dtype_name(dt)}  # a str: pickle writes a global


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor_from_ref(storage, storage_offset, size, stride, False)


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    # nn.Parameter lives in ember-nn; a checkpoint's parameters load as plain tensors.
    if not isinstance(data, ember.Tensor):
        raise pickle.UnpicklingError(
            f"_rebuild_parameter: expected a tensor, got {type(data).__name__}")
    if type(requires_grad) not in (bool, int):
        raise TypeError(f"_rebuild_parameter: requires_grad must be a bool, not "
                        f"{type(requires_grad).__name__}")
    if requires_grad:
        try:
            data.requires_grad_(True)
        except ImportError:
            pass
    return data


_REBUILD_FUNCTIONS = (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3,
                      _rebuild_parameter)


def _rebuild_from_type_v2(func, new_type, args, state):
    # torch's form for tensors carrying Python attributes: the attributes are dropped here.
    if not any(func is f for f in _REBUILD_FUNCTIONS):
        raise pickle.UnpicklingError(
            f"_rebuild_from_type_v2: {_weights_only.describe(func)} is not a tensor rebuild "
            "function")
    if type(args) is not tuple:
        raise pickle.UnpicklingError("_rebuild_from_type_v2: the arguments must be a tuple")
    return func(*args)


def _size(dims=()):
    return ember.Size(_int64_list(dims, "sizes", "torch.Size"))


def _device(spec, index=None):
    if type(spec) is not str or not (index is None or type(index) is int):
        raise TypeError(f"torch.device: expected (str, int), got ({type(spec).__name__}, "
                        f"{type(index).__name__})")
    return ember.device(spec) if index is None else ember.device(spec, index)


# What pickle's protocol 2 writes for builtin values, each allowed in that form only:
# _codecs.encode(str, "latin1") for bytes, bytes() for b"", bytearray(bytes), set(list),
# frozenset(list), complex(real, imag). (bytearray(n) would allocate n bytes, for one.)


def _encode(obj, encoding="utf-8", errors="strict"):
    if type(obj) is not str or encoding not in ("latin1", "latin-1") or errors != "strict":
        raise pickle.UnpicklingError(
            "_codecs.encode: only encode(str, 'latin1'), pickle's form of bytes, is allowed")
    return codecs.encode(obj, "latin1")


def _bytes(*args):
    if args:
        raise pickle.UnpicklingError("builtins.bytes: only bytes() is allowed")
    return b""


def _bytearray(data=b""):
    if type(data) is not bytes:
        raise pickle.UnpicklingError("builtins.bytearray: only bytearray(bytes) is allowed")
    return bytearray(data)


def _items(where: str, items) -> list | tuple:
    if type(items) not in (list, tuple):
        raise pickle.UnpicklingError(f"builtins.{where}: only {where}(list) is allowed")
    return items


def _set(items=()):
    return set(_items("set", items))


def _frozenset(items=()):
    return frozenset(_items("frozenset", items))


def _complex(real=0.0, imag=0.0):
    if type(real) not in (int, float) or type(imag) not in (int, float):
        raise pickle.UnpicklingError("builtins.complex: only complex(real, imag) is allowed")
    return complex(real, imag)


def _torch_globals() -> dict:
    """torch's names (as torch.save writes them) -> what they load as in ember."""
    g = {
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch", "Size"): _size,
        ("ember._device", "Size"): _size,
        ("torch", "device"): _device,
        # markers only (the type _rebuild_from_type_v2 is given): never called, never built
        ("torch", "Tensor"): ember.Tensor,
        ("torch.nn.parameter", "Parameter"): ember.Tensor,
    }
    for name in _UNSUPPORTED_STORAGES:
        g[("torch", name)] = _StorageType.unsupported(name)
    for name, storage in _STORAGE_NAMES.items():
        g[("torch", storage)] = _StorageType(name)
        g[("torch", name)] = getattr(ember, name)
    for name in _UNTYPED_DTYPE_NAMES:
        g[("torch", name)] = getattr(ember, name)
    untyped = _StorageType("uint8", "UntypedStorage", untyped=True)
    g[("torch.storage", "UntypedStorage")] = g[("torch", "UntypedStorage")] = untyped
    return g


# The other globals a weights-only load resolves (with weights_only=False they are imported).
_BUILTIN_GLOBALS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,
    ("_codecs", "encode"): _encode,
    ("builtins", "bytes"): _bytes,
    ("builtins", "bytearray"): _bytearray,
    ("builtins", "set"): _set,
    ("builtins", "frozenset"): _frozenset,
    ("builtins", "complex"): _complex,
}
# What REDUCE may call and NEWOBJ may construct in a weights-only load (the user's safe
# globals besides); the storage types, dtypes and Tensor markers are values only.
_CALLABLE = (*_REBUILD_FUNCTIONS, _rebuild_from_type_v2, _size, _device,
             *_BUILTIN_GLOBALS.values())
_CONSTRUCTIBLE = (collections.OrderedDict, collections.Counter)


# Globals a user allows for weights_only loading (torch.serialization.add_safe_globals):
# object -> "module.name" as pickle writes it.
_USER_SAFE: dict = {}


def add_safe_globals(safe_globals: list) -> None:
    """Allows these classes/functions in ``ember.load(weights_only=True)``. An entry is the
    object, or ``(object, "module.name")`` to give the name it is pickled under. Allowed
    classes may be constructed and their instances' state set (BUILD), as in torch."""
    for entry in safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2 or type(entry[1]) is not str:
                raise ValueError("expected (global, 'module.name'), got a tuple of "
                                 f"{len(entry)} items")
            obj, full = entry
        else:
            obj, full = entry, f"{entry.__module__}.{entry.__qualname__}"
        _USER_SAFE[obj] = full


def get_safe_globals() -> list:
    return list(_USER_SAFE)


def clear_safe_globals() -> None:
    _USER_SAFE.clear()


class safe_globals:  # noqa: N801 - torch's name
    """Context manager: the globals are allowed inside the ``with`` block only."""

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals

    def __enter__(self):
        self.saved = dict(_USER_SAFE)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _USER_SAFE.clear()
        _USER_SAFE.update(self.saved)


def _weights_only_policy() -> _weights_only.Policy:
    user = {full: obj for obj, full in _USER_SAFE.items()}
    return _weights_only.Policy({**_torch_globals(), **_BUILTIN_GLOBALS}, _CALLABLE,
                                _CONSTRUCTIBLE, user)


_WEIGHTS_ONLY_HELP = (
    "Weights only load failed. Re-running `ember.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
    "file from a trusted source.\n\nWeightsUnpickler error: ")


def _persistent_load(pid, load_storage):
    """A storage's persistent id ``('storage', <Type>Storage, key, location, numel)``, checked
    item by item, to the storage (an UntypedStorage for torch.UntypedStorage, else the bytes
    with their dtype)."""
    if type(pid) is not tuple or len(pid) != 5:
        raise pickle.UnpicklingError(
            "a storage's persistent id is ('storage', type, key, location, numel), got a "
            f"{type(pid).__name__}" + (f" of {len(pid)} items" if type(pid) is tuple else ""))
    kind, stype, key, location, numel = pid
    if isinstance(kind, bytes):  # Python 2 files
        kind = kind.decode("ascii", "replace")
    if kind != "storage":
        raise pickle.UnpicklingError(
            f"Only persistent_load of storage is allowed, but got {type(kind)}")
    if not isinstance(stype, _StorageType):
        raise pickle.UnpicklingError(f"unsupported storage type {type(stype).__name__}")
    if stype.dtype is None:
        raise RuntimeError(
            f"ember.load: the file holds a torch.{stype.torch_name}, whose dtype ember lacks")
    if type(key) is int:  # torch formats any key into the record's name
        key = str(key)
    if type(key) is not str or type(location) is not str:
        raise pickle.UnpicklingError(
            "a storage's key and location must be strings, got "
            f"{type(key).__name__} and {type(location).__name__}")
    if type(numel) is not int or numel < 0:
        raise pickle.UnpicklingError(
            "a storage's element count must be a non-negative int, got "
            + _weights_only.describe(numel))
    storage = load_storage(key, numel, stype.dtype, location)
    return storage if stype.untyped else _StorageRef(storage, stype.dtype)


class _FullUnpickler(pickle.Unpickler):
    """weights_only=False: torch's names resolve to ember's, any other global is imported."""

    def __init__(self, file, load_storage, encoding: str = "utf-8"):
        super().__init__(file, encoding=encoding)
        self.load_storage = load_storage
        self.globals = _torch_globals()

    def find_class(self, module, name):
        found = self.globals.get((module, name))
        return found if found is not None else super().find_class(module, name)

    def persistent_load(self, pid):
        return _persistent_load(pid, self.load_storage)


def _data_offset(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    if info.header_offset < 0:  # a central directory that points before the archive
        raise zipfile.BadZipFile(f"Bad offset for file header of {info.filename}")
    zf.fp.seek(info.header_offset)
    header = zf.fp.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"Bad magic number for file header of {info.filename}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _check_record(zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive_size: int) -> int:
    """The offset of a record's data, once its sizes are known to be backed by the archive:
    its bytes lie inside the file and its declared size is one its compressed bytes can give
    (a record must not make the loader allocate what the file does not hold)."""
    if info.compress_type == zipfile.ZIP_STORED:
        if info.compress_size != info.file_size:
            raise RuntimeError(f"ember.load: record {info.filename} is stored with "
                               f"{info.compress_size} bytes but declares {info.file_size}")
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        if info.file_size > info.compress_size * _MAX_DEFLATE_RATIO + _ALIGN:
            raise RuntimeError(f"ember.load: record {info.filename} declares {info.file_size} "
                               f"bytes, more than its {info.compress_size} compressed bytes hold")
    else:
        raise RuntimeError(f"ember.load: record {info.filename} uses compression method "
                           f"{info.compress_type}; only stored and deflated records are read")
    begin = _data_offset(zf, info)
    if begin + info.compress_size > archive_size:
        raise RuntimeError(f"ember.load: record {info.filename} is truncated (the archive ends "
                           "before its data)")
    return begin


def _map_location(map_location, location: str, storage):
    if map_location is None:
        target = location
    elif callable(map_location) and not isinstance(map_location, (str, ember.device)):
        result = map_location(storage, location)
        return storage if result is None else result
    elif isinstance(map_location, dict):
        target = map_location.get(location, location)
    else:
        target = str(map_location)
    if not str(target).startswith("cpu"):
        raise RuntimeError(
            f"Attempting to deserialize object on device '{target}', which this build of ember "
            "cannot use. Use ember.load with map_location='cpu' to map the storages to the CPU.")
    return storage


_TRUE_VALUES = ("1", "y", "yes", "true")


def _weights_only_setting(weights_only):
    """`weights_only` as passed, or None, after torch's two overriding environment variables."""
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    force_not = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    if force and force_not:
        raise RuntimeError(
            "Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
            "should be set, but both were set.")
    if force:
        return True
    if weights_only is None:
        if force_not:
            warnings.warn(
                "Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the "
                "`weights_only` argument was not explicitly passed to `ember.load`, forcing "
                "weights_only=False.", UserWarning, stacklevel=3)  # past load, to its caller
            return False
        return True
    return weights_only


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args):
    """Loads an object saved by ``ember.save`` or ``torch.save`` (zip format).

    `weights_only=True` (the default) rebuilds only tensors, storages, dtypes, sizes, devices,
    containers and primitive values (and the classes allowed with `add_safe_globals`); any
    other global, and any opcode that would call, construct or set state on something else,
    raises ``pickle.UnpicklingError``. Every tensor's geometry is checked against its storage
    before it is built. Pass ``weights_only=False`` only for trusted files: it runs code.
    `mmap=True` maps the file instead of reading it: the tensors are (copy-on-write) views of
    the mapped bytes; `f` must then be a path.
    torch's environment variables apply: ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` forces
    `weights_only=True`; ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` makes it False where the call
    does not pass `weights_only` (with a warning).
    """
    weights_only = _weights_only_setting(weights_only)
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.load: only the standard pickle module is supported")
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    fobj, owned = _open_for(f, "rb")
    try:
        if not fobj.seekable():
            fobj = io.BytesIO(fobj.read())
        start = fobj.tell()
        magic = fobj.read(4)
        archive_size = fobj.seek(0, os.SEEK_END)
        fobj.seek(start)
        if magic[:2] != b"PK":
            raise RuntimeError(
                "ember.load: the file is not in PyTorch's zip checkpoint format (files written "
                "by torch.save with _use_new_zipfile_serialization=False are not supported)")
        mapped = None
        if mmap:
            mapped = _mmap.mmap(fobj.fileno(), 0, access=_mmap.ACCESS_COPY)
        with zipfile.ZipFile(fobj) as zf:
            encoding = pickle_load_args.get("encoding", "utf-8")
            if not weights_only:
                return _load_zip(zf, archive_size, mapped, map_location, None, encoding)
            try:
                return _load_zip(zf, archive_size, mapped, map_location,
                                 _weights_only_policy(), encoding)
            except pickle.UnpicklingError as e:
                raise pickle.UnpicklingError(_WEIGHTS_ONLY_HELP + str(e)) from None
    finally:
        if owned:
            fobj.close()


def _load_zip(zf: zipfile.ZipFile, archive_size: int, mapped, map_location, policy,
              encoding="utf-8"):
    """`policy` None: a full (trusted) load; else the weights-only unpickler's policy."""
    names = zf.namelist()
    pkl = next((n for n in names if n.endswith("data.pkl") and n.count("/") == 1), None)
    if pkl is None:
        raise RuntimeError("ember.load: the archive has no data.pkl record")
    prefix = pkl[: -len("data.pkl")]
    if f"{prefix}byteorder" in names:
        info = zf.getinfo(f"{prefix}byteorder")
        _check_record(zf, info, archive_size)
        with zf.open(info) as src:
            order = src.read(16).decode("ascii", "replace").strip()
        if order != sys.byteorder:
            raise RuntimeError(f"ember.load: {order!r}-endian files are not supported here")
    cache: dict[str, tuple[int, Any]] = {}  # key -> (the record's bytes, the storage)

    def load_storage(key: str, numel: int, dtype, location: str):
        nbytes = numel * dtype.itemsize
        hit = cache.get(key)
        if hit is None:
            try:
                info = zf.getinfo(f"{prefix}data/{key}")
            except KeyError:
                raise RuntimeError(f"ember.load: failed locating file data/{key} in the "
                                   "archive: file not found") from None
            record_size = info.file_size
        else:
            record_size = hit[0]
        if record_size != nbytes:  # torch's check, word for word
            raise RuntimeError(
                f"record size ({record_size} bytes) does not match expected size ({nbytes} "
                f"bytes = {numel} elements * {dtype.itemsize} bytes/element) for dtype {dtype}")
        if hit is not None:
            return hit[1]
        begin = _check_record(zf, info, archive_size)
        storage = None
        if mapped is not None and info.compress_type == zipfile.ZIP_STORED and begin % 8 == 0:
            storage = ember.UntypedStorage._from_buffer(memoryview(mapped)[begin:begin + nbytes])
        if storage is None:
            storage = ember.UntypedStorage(nbytes)
            if nbytes and info.compress_type == zipfile.ZIP_STORED:
                # straight from the file into the storage: one copy, no temporary bytes
                zf.fp.seek(begin)
                got = zf.fp.readinto(memoryview(storage))
            elif nbytes:
                with zf.open(info) as src:
                    got = src.readinto(memoryview(storage))
            else:
                got = 0
            if got != nbytes:
                raise RuntimeError(f"ember.load: storage {key} is truncated")
        if dtype == ember.bool:
            _canonical_bools(storage)
        storage = _map_location(map_location, location, storage)
        if type(storage) is not ember.UntypedStorage:
            raise TypeError(f"ember.load: map_location returned a {type(storage).__name__}, "
                            "not a storage")
        cache[key] = (record_size, storage)
        return storage

    info = zf.getinfo(pkl)
    _check_record(zf, info, archive_size)
    with zf.open(info) as src:
        data = src.read()
    if policy is not None:
        return _weights_only.WeightsUnpickler(
            data, policy, lambda pid: _persistent_load(pid, load_storage), encoding).load()
    return _FullUnpickler(io.BytesIO(data), load_storage, encoding).load()
