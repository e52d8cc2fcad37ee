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

Loading with ``weights_only=True`` (the default, as in torch) goes through an unpickler that
resolves only the globals a checkpoint needs (the rebuild functions, storage types, dtypes,
OrderedDict) and refuses every other one with ``pickle.UnpicklingError``.
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
import zipfile
from typing import Any

import ember

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
}
_DTYPE_NAMES = tuple(_STORAGE_NAMES)
# torch storage types whose dtypes ember does not have: refused with a message naming them
_UNSUPPORTED_STORAGES = ("ComplexFloatStorage", "ComplexDoubleStorage", "ComplexHalfStorage",
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
            ref = _StorageRef(obj.untyped_storage(), obj.dtype)
            args = (ref, obj.storage_offset(), tuple(obj.shape), tuple(obj.stride()),
                    bool(obj.requires_grad), _ORDERED_DICT())
            self.used.add(names["rebuild"])
            return names["rebuild"], args
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
    _names = {"storage": _STORAGE_GLOBALS, "rebuild": _REBUILD_V2, "Size": _TORCH_SIZE,
              "device": _TORCH_DEVICE, "dtype": None}

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
    pickler._save_global_standin(_DTYPE_GLOBALS[_dtype_name(obj)])


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
            for key, storage, _ in storages.values():
                if not storage.device.type == "cpu":
                    raise NotImplementedError(
                        f"ember.save: saving a {storage.device} storage is not supported yet")
                _zip_entry(zf, f"archive/data/{key}", memoryview(storage), align=True)
            _zip_entry(zf, "archive/version", b"3\n")
    finally:
        if owned:
            fobj.close()


# ---------------------------------------------------------------------------------------------
# Reading


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


def _tensor_from_ref(ref, storage_offset, size, stride, requires_grad):
    if not isinstance(ref, _StorageRef):
        raise pickle.UnpicklingError(
            f"_rebuild_tensor: expected a storage, got {type(ref).__name__}")
    t = ember.empty(0, dtype=ref.dtype)
    t.set_(ref.storage, int(storage_offset), tuple(size), tuple(stride))
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
    return _tensor_from_ref(storage, storage_offset, size, stride, requires_grad)


_FastPickler._names = {"storage": _STORAGE_CLASSES, "rebuild": _rebuild_tensor_v2,
                       "Size": ember.Size, "device": ember.device,
                       "dtype": lambda dt: _dtype_name(dt)}  # a str: pickle writes a global


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor_from_ref(storage, storage_offset, size, stride, False)


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    # nn.Parameter lives in ember-nn; a checkpoint's parameters load as plain tensors.
    if requires_grad and isinstance(data, ember.Tensor):
        try:
            data.requires_grad_(True)
        except ImportError:
            pass
    return data


def _rebuild_from_type_v2(func, new_type, args, state):
    # torch's form for tensors carrying Python attributes: the attributes are dropped here.
    return func(*args)


def _device(spec, index=None):
    return ember.device(spec) if index is None else ember.device(spec, index)


def _allowed_globals() -> dict:
    g = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("_codecs", "encode"): codecs.encode,  # how protocol 2 writes bytes (torch allows it too)
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
        ("torch", "Size"): ember.Size,
        ("torch", "device"): _device,
        ("ember._device", "Size"): ember.Size,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch", "Tensor"): ember.Tensor,
        ("torch.nn.parameter", "Parameter"): ember.Tensor,
    }
    for name in _UNSUPPORTED_STORAGES:
        g[("torch", name)] = _StorageType.unsupported(name)
    for name, storage in _STORAGE_NAMES.items():
        g[("torch", storage)] = _StorageType(name)
        g[("torch", name)] = getattr(ember, name)
    untyped = _StorageType("uint8", "UntypedStorage", untyped=True)
    g[("torch.storage", "UntypedStorage")] = g[("torch", "UntypedStorage")] = untyped
    return g


# Globals a user allows for weights_only loading (torch.serialization.add_safe_globals):
# object -> (module, name) as pickle writes it.
_USER_SAFE: dict = {}


def add_safe_globals(safe_globals: list) -> None:
    """Allows these classes/functions in ``ember.load(weights_only=True)``. An entry is the
    object, or ``(object, "module.name")`` to give the name it is pickled under."""
    for entry in safe_globals:
        obj, full = entry if isinstance(entry, tuple) else (entry, None)
        if full is None:
            full = f"{obj.__module__}.{obj.__qualname__}"
        module, _, name = full.rpartition(".")
        _USER_SAFE[obj] = (module, name)


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


_WEIGHTS_ONLY_HELP = (
    "Weights only load failed. Re-running `ember.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
    "file from a trusted source.\n\nWeightsUnpickler error: ")


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, weights_only: bool, load_storage, encoding: str = "utf-8"):
        super().__init__(file, encoding=encoding)
        self.weights_only = weights_only
        self.load_storage = load_storage
        self.globals = _allowed_globals()
        for obj, (module, name) in _USER_SAFE.items():
            self.globals.setdefault((module, name), obj)

    def find_class(self, module, name):
        found = self.globals.get((module, name))
        if found is not None:
            return found
        if self.weights_only:
            raise pickle.UnpicklingError(
                f"{_WEIGHTS_ONLY_HELP}Unsupported global: GLOBAL {module}.{name} was not an "
                "allowed global by default. If you trust it, allow it with "
                f"ember.serialization.add_safe_globals([{name}]) or the "
                f"ember.serialization.safe_globals([{name}]) context manager.")
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType):
            raise pickle.UnpicklingError(f"unsupported storage type {stype!r}")
        if stype.dtype is None:
            raise RuntimeError(
                f"ember.load: the file holds a torch.{stype.torch_name}, whose dtype ember lacks")
        nbytes = int(numel) * stype.dtype.itemsize
        storage = self.load_storage(str(key), nbytes, str(location))
        return storage if stype.untyped else _StorageRef(storage, stype.dtype)


def _data_offset(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    zf.fp.seek(info.header_offset)
    header = zf.fp.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


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


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = True,
         mmap: bool | None = None, **pickle_load_args):
    """Loads an object saved by ``ember.save`` or ``torch.save`` (zip format).

    `weights_only=True` (the default) resolves only the globals a checkpoint of tensors needs
    and raises ``pickle.UnpicklingError`` for any other; pass ``False`` only for trusted files.
    `mmap=True` maps the file instead of reading it: the tensors are (copy-on-write) views of
    the mapped bytes; `f` must then be a path.
    """
    if weights_only is None:
        weights_only = True
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
        fobj.seek(start)
        if magic[:2] != b"PK":
            raise RuntimeError(
                "ember.load: the file is not in PyTorch's zip checkpoint format (files written "
                "by torch.save with _use_new_zipfile_serialization=False are not supported)")
        mapped = None
        if mmap:
            mapped = _mmap.mmap(fobj.fileno(), 0, access=_mmap.ACCESS_COPY)
        with zipfile.ZipFile(fobj) as zf:
            return _load_zip(zf, mapped, map_location, weights_only,
                             pickle_load_args.get("encoding", "utf-8"))
    finally:
        if owned:
            fobj.close()


def _load_zip(zf: zipfile.ZipFile, mapped, map_location, weights_only, encoding="utf-8"):
    names = zf.namelist()
    pkl = next((n for n in names if n.endswith("data.pkl") and n.count("/") == 1), None)
    if pkl is None:
        raise RuntimeError("ember.load: the archive has no data.pkl record")
    prefix = pkl[: -len("data.pkl")]
    if f"{prefix}byteorder" in names:
        order = zf.read(f"{prefix}byteorder").decode().strip()
        if order != sys.byteorder:
            raise RuntimeError(f"ember.load: {order}-endian files are not supported here")
    cache: dict[str, Any] = {}

    def load_storage(key: str, nbytes: int, location: str):
        hit = cache.get(key)
        if hit is not None:
            return hit
        try:
            info = zf.getinfo(f"{prefix}data/{key}")
        except KeyError:
            raise RuntimeError(f"ember.load: the archive has no record for storage {key}") from None
        if info.file_size < nbytes:
            raise RuntimeError(
                f"ember.load: storage {key} has {info.file_size} bytes, {nbytes} expected")
        storage = None
        if mapped is not None and info.compress_type == zipfile.ZIP_STORED:
            begin = _data_offset(zf, info)
            if begin % _ALIGN == 0 or begin % 8 == 0:
                storage = ember.UntypedStorage._from_buffer(
                    memoryview(mapped)[begin:begin + nbytes])
        if storage is None:
            storage = ember.UntypedStorage(nbytes)
            if nbytes and info.compress_type == zipfile.ZIP_STORED:
                # straight from the file into the storage: one copy, no temporary bytes
                zf.fp.seek(_data_offset(zf, info))
                if zf.fp.readinto(memoryview(storage)) != nbytes:
                    raise RuntimeError(f"ember.load: storage {key} is truncated")
            elif nbytes:
                with zf.open(info) as src:
                    src.readinto(memoryview(storage))
        storage = _map_location(map_location, location, storage)
        cache[key] = storage
        return storage

    with zf.open(pkl) as data:
        unpickler = _Unpickler(io.BytesIO(data.read()), weights_only, load_storage, encoding)
        return unpickler.load()
