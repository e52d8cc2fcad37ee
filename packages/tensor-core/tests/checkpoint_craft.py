"""Crafted checkpoints for the tests of ember.load on untrusted files: a small pickle assembler
(every opcode written by hand, so that a file can say what no pickler would write), the zip
archive around it, and a fingerprint of ember's classes to show that a load changed none.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import pickle
import struct
import zipfile


class Global:
    """``GLOBAL module name``."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name


class StackGlobal(Global):
    """``module name STACK_GLOBAL`` (protocol 4): names with dots reach no attribute."""


class Call:
    """``func args REDUCE``."""

    def __init__(self, func, *args):
        self.func, self.args = func, args


class NewObj:
    """``cls args NEWOBJ``."""

    def __init__(self, cls, *args):
        self.cls, self.args = cls, args


class Build:
    """``obj state BUILD``."""

    def __init__(self, obj, state):
        self.obj, self.state = obj, state


class PersId:
    """``pid BINPERSID``."""

    def __init__(self, pid):
        self.pid = pid


class Raw:
    """Bytes written as they are (opcodes of one's own)."""

    def __init__(self, data: bytes):
        self.data = data


def emit(obj, out: bytearray) -> None:
    """Appends the opcodes that build `obj` to `out`."""
    if isinstance(obj, Raw):
        out += obj.data
    elif obj is None:
        out += pickle.NONE
    elif obj is True or obj is False:
        out += pickle.NEWTRUE if obj else pickle.NEWFALSE
    elif isinstance(obj, int):
        if 0 <= obj < 256:
            out += pickle.BININT1 + bytes([obj])
        elif -(2**31) <= obj < 2**31:
            out += pickle.BININT + struct.pack("<i", obj)
        else:
            data = pickle.encode_long(obj)
            out += pickle.LONG1 + bytes([len(data)]) + data if len(data) < 256 else (
                pickle.LONG4 + struct.pack("<i", len(data)) + data)
    elif isinstance(obj, float):
        out += pickle.BINFLOAT + struct.pack(">d", obj)
    elif isinstance(obj, str):
        data = obj.encode("utf-8", "surrogatepass")
        out += pickle.BINUNICODE + struct.pack("<I", len(data)) + data
    elif isinstance(obj, bytes):
        out += pickle.BINBYTES + struct.pack("<I", len(obj)) + obj
    elif isinstance(obj, tuple):
        out += pickle.MARK
        for item in obj:
            emit(item, out)
        out += pickle.TUPLE
    elif isinstance(obj, list):
        out += pickle.EMPTY_LIST + pickle.MARK
        for item in obj:
            emit(item, out)
        out += pickle.APPENDS
    elif isinstance(obj, dict):
        out += pickle.EMPTY_DICT + pickle.MARK
        for k, v in obj.items():
            emit(k, out)
            emit(v, out)
        out += pickle.SETITEMS
    elif isinstance(obj, StackGlobal):
        emit(obj.module, out)
        emit(obj.name, out)
        out += pickle.STACK_GLOBAL
    elif isinstance(obj, Global):
        out += pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode()
    elif isinstance(obj, Call):
        emit(obj.func, out)
        emit(tuple(obj.args), out)
        out += pickle.REDUCE
    elif isinstance(obj, NewObj):
        emit(obj.cls, out)
        emit(tuple(obj.args), out)
        out += pickle.NEWOBJ
    elif isinstance(obj, Build):
        emit(obj.obj, out)
        emit(obj.state, out)
        out += pickle.BUILD
    elif isinstance(obj, PersId):
        emit(obj.pid, out)
        out += pickle.BINPERSID
    else:
        raise TypeError(f"cannot emit {type(obj).__name__}")


def dumps(obj, protocol: int = 2) -> bytes:
    out = bytearray(pickle.PROTO + bytes([protocol]))
    emit(obj, out)
    out += pickle.STOP
    return bytes(out)


def storage(key="0", numel=5, stype="FloatStorage", location="cpu") -> PersId:
    return PersId(("storage", Global("torch", stype), key, location, numel))


def ordered_dict() -> Call:
    return Call(Global("collections", "OrderedDict"))


def tensor(st, offset=0, size=(5,), stride=(1,), requires_grad=False,
           rebuild="_rebuild_tensor_v2") -> Call:
    """``_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())``."""
    return Call(Global("torch._utils", rebuild), st, offset, tuple(size), tuple(stride),
                requires_grad, ordered_dict())


def archive(obj, records: dict | None = None, compression: int = zipfile.ZIP_STORED,
            protocol: int = 2) -> bytes:
    """A checkpoint whose data.pkl is `obj` (assembled, or bytes as they are) and whose
    data/<key> records are `records`."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        zf.writestr("archive/data.pkl", obj if isinstance(obj, bytes) else dumps(obj, protocol))
        zf.writestr("archive/byteorder", "little")
        for key, data in (records or {}).items():
            zf.writestr(f"archive/data/{key}", data)
        zf.writestr("archive/version", "3\n")
    return buf.getvalue()


def float_records(numel: int = 5) -> dict:
    """One float32 record, key "0", of `numel` elements 0, 1, 2, ..."""
    return {"0": struct.pack(f"<{numel}f", *range(numel))}


def ember_classes() -> list:
    """Every class defined by ember that its modules expose (the core's types included)."""
    seen, classes = set(), []
    for module in _ember_modules():
        for value in list(vars(module).values()):
            if (isinstance(value, type) and id(value) not in seen
                    and getattr(value, "__module__", "").startswith("ember")):
                seen.add(id(value))
                classes.append(value)
    return classes


def _ember_modules() -> list:
    import ember

    return [ember] + [m for m in vars(ember).values() if inspect.ismodule(m)
                      and getattr(m, "__name__", "").startswith("ember")]


def ember_snapshot() -> dict:
    """``"owner.attribute" -> identity of the value`` over the attribute dicts of ember's
    classes and modules, plus the fields of the dtype objects: a load that replaced, added or
    removed any of them (a method of ember.Tensor, a module global) shows in `changes`."""
    import ember

    snap = {}
    spaces = [(f"{c.__module__}.{c.__qualname__}", vars(c)) for c in ember_classes()]
    spaces += [(m.__name__, vars(m)) for m in _ember_modules()]
    for owner, space in spaces:
        for key, value in list(space.items()):
            if key != "__warningregistry__":  # what warnings.warn records: no change of ember
                snap[f"{owner}.{key}"] = id(value)
    for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                 "uint8", "bool"):
        dt = getattr(ember, name)
        snap[f"dtype {name}"] = (id(dt), dt.itemsize, dt.is_floating_point, dt.is_signed)
    from ember import serialization

    snap["safe globals"] = tuple(map(id, serialization.get_safe_globals()))
    return snap


def changes(before: dict, after: dict) -> list:
    """What differs between two snapshots, by name."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def ember_fingerprint() -> str:
    """A hash of `ember_snapshot()` (one line to compare across processes)."""
    snap = ember_snapshot()
    return hashlib.sha256(repr(sorted(snap.items())).encode()).hexdigest()
