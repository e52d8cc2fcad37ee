"""A crafted-checkpoint fuzzer for ``ember.load(weights_only=True)``.

Each file comes from one seed (``random.Random(f"{seed}:{index}")``) and one generator:

- ``pickle-flip``: a valid ember checkpoint whose pickle has random bytes flipped, inserted,
  deleted or truncated (re-zipped, so the zip's CRC does not hide the change);
- ``zip-flip``: a valid checkpoint with random bytes of the archive flipped, or cut short;
- ``geometry``: tensors with hostile sizes, strides, offsets, dtypes, element counts and record
  sizes (or valid ones near the edges), through every rebuild function;
- ``nested``: containers nested deep, sharing objects through the memo, with such tensors;
- ``tricks``: BUILD, REDUCE, NEWOBJ, GLOBAL, STACK_GLOBAL, persistent ids, APPEND and SETITEM
  aimed at allowed and forbidden objects;
- ``opcodes``: random opcode streams;
- ``zip-structure``: truncated archives, records of the wrong size, lying size fields,
  compressed records, missing or duplicated data.pkl, foreign byte orders.

Files are loaded in a child process (many files per child; a crash is caught there and the
child respawned), with ``mmap=True`` for some. The verdict per file: the load returned, and
every tensor in the result reads fully (``tolist``/``sum``/``clone``, its values equal to a
NumPy view of the same storage bytes) or, when huge, at its first and last element; or it raised
an ordinary exception (not MemoryError, SystemError or RecursionError); and no attribute of
ember's classes or modules changed. Crashes, hangs and failures keep their file (and seed).

    python tests/checkpoint_fuzz.py --files 10000 [--seed 0] [--keep DIR]
    python tests/checkpoint_fuzz.py --replay FILE [--mmap]
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import pickle
import random
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from checkpoint_craft import (
    Build,
    Call,
    Global,
    NewObj,
    PersId,
    Raw,
    StackGlobal,
    archive,
    dumps,
    emit,
    ordered_dict,
)

HERE = Path(__file__).resolve().parent
FULL_READ_LIMIT = 1 << 16  # elements read in full (tolist, sum, clone); more: first and last
CHILD_MEMORY = 4 << 30  # address-space limit of a child: a runaway allocation fails, no OOM
HANG_SECONDS = 60

# ints that break arithmetic: around 2**31, 2**32, 2**63, 2**64, negatives
HOSTILE_INTS = [0, 1, 2, 3, 5, 7, 8, 255, 256, 2**15, 2**16, 2**31 - 1, 2**31, 2**32 - 1,
                2**32, 2**32 + 1, 2**53, 2**60, 2**61 + 1, 2**62, 2**63 - 1, 2**63, 2**64 - 1,
                2**64, 2**100, -1, -2, -(2**31), -(2**63), -(2**63) - 1]
STORAGE_TYPES = ["FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage",
                 "LongStorage", "IntStorage", "ShortStorage", "CharStorage", "ByteStorage",
                 "BoolStorage"]
ITEMSIZE = {"FloatStorage": 4, "DoubleStorage": 8, "HalfStorage": 2, "BFloat16Storage": 2,
            "LongStorage": 8, "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1,
            "ByteStorage": 1, "BoolStorage": 1, "UntypedStorage": 1}
ODD_STORAGE_TYPES = ["UntypedStorage", "ComplexFloatStorage", "UInt16Storage", "Storage",
                     "FloatTensor", "Size", "Tensor"]
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool", "complex64", "uint16", "float8_e4m3fn"]
ALLOWED_NAMES = [("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor_v3"),
                 ("torch._utils", "_rebuild_tensor"), ("torch._utils", "_rebuild_parameter"),
                 ("torch._utils", "_rebuild_parameter_with_state"),
                 ("torch._tensor", "_rebuild_from_type_v2"), ("torch", "Tensor"),
                 ("torch.nn.parameter", "Parameter"), ("torch", "FloatStorage"),
                 ("torch", "float32"), ("torch", "Size"), ("torch", "device"),
                 ("collections", "OrderedDict"), ("collections", "Counter"),
                 ("_codecs", "encode"), ("builtins", "set"), ("builtins", "frozenset"),
                 ("builtins", "bytearray"), ("builtins", "bytes"), ("builtins", "complex"),
                 ("__builtin__", "set"), ("torch.storage", "UntypedStorage"),
                 ("ember._device", "Size")]
FORBIDDEN_NAMES = [("builtins", "getattr"), ("builtins", "setattr"), ("builtins", "eval"),
                   ("builtins", "object"), ("builtins", "type"), ("__builtin__", "getattr"),
                   ("os", "system"), ("posix", "system"), ("sys", "modules"),
                   ("copyreg", "_reconstructor"), ("ember", "Tensor"), ("ember._C", "Tensor"),
                   ("ember.serialization", "_USER_SAFE"), ("ember.serialization", "load"),
                   ("torch", "Tensor.zero_"), ("torch._utils", "__dict__"),
                   ("torch._utils", "_rebuild_tensor_v2.__globals__"), ("torch", "load"),
                   ("collections", "OrderedDict.__setitem__"), ("functools", "partial")]
GENERATORS = {"pickle-flip": 3, "zip-flip": 2, "geometry": 4, "nested": 2, "tricks": 3,
              "opcodes": 2, "zip-structure": 2}


# ---------------------------------------------------------------------------------------------
# Generation


def _int(rng: random.Random, small: int = 6) -> int:
    r = rng.random()
    if r < 0.5:
        return rng.randint(0, small)
    if r < 0.9:
        return rng.choice(HOSTILE_INTS)
    return rng.randint(-(2**65), 2**65)


def _value(rng: random.Random, depth: int = 0):
    """A random pickle-able argument: numbers, strings, containers, hostile ints."""
    r = rng.random()
    if depth > 2 or r < 0.4:
        return rng.choice([None, True, False, _int(rng), rng.random() * 1e3, "cpu", "0",
                           "storage", b"\x00\x01", "zero_", (), [], {}])
    if r < 0.6:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randint(0, 4)))
    if r < 0.8:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["a", "zero_", "__dict__", "dtype", 1]): _value(rng, depth + 1)
            for _ in range(rng.randint(0, 3))}


def _valid_object(rng: random.Random, ember):
    """A random checkpoint object: nested containers of tensors (views of shared bases among
    them), storages and primitive values, as ember.save writes them."""
    bases = []

    def tensor():
        dtype = getattr(ember, rng.choice(DTYPES[:10]))
        if bases and rng.random() < 0.4:  # a view of an earlier tensor
            base = rng.choice(bases)
            t = base
            if t.ndim >= 2 and rng.random() < 0.5:
                t = t.transpose(0, t.ndim - 1)
            if t.ndim and t.shape[0] > 1:
                t = t[rng.randint(0, t.shape[0] - 1):]
            if t.ndim and rng.random() < 0.3:
                t = t.unsqueeze(0).expand(rng.randint(1, 3), *t.shape)
            return t
        shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
        n = 1
        for s in shape:
            n *= s
        t = (ember.arange(n, dtype=ember.float64) - 3).to(dtype).view(shape)
        bases.append(t)
        return t

    def leaf():
        return rng.choice([tensor, tensor, tensor, lambda: _int(rng), lambda: "text",
                           lambda: 2.5, lambda: None, lambda: b"raw",
                           lambda: getattr(ember, rng.choice(DTYPES[:10])),
                           lambda: ember.Size([2, 3]), lambda: ember.device("cpu"),
                           lambda: ember.UntypedStorage(rng.randint(0, 9))])()

    def node(depth):
        if depth > 2 or rng.random() < 0.3:
            return leaf()
        kind = rng.choice(["dict", "list", "tuple", "od"])
        items = [node(depth + 1) for _ in range(rng.randint(0, 4))]
        if kind == "list":
            return items
        if kind == "tuple":
            return tuple(items)
        pairs = [(f"k{i}", v) for i, v in enumerate(items)]
        return dict(pairs) if kind == "dict" else collections.OrderedDict(pairs)

    return node(0)


def _valid_checkpoint(rng: random.Random, ember) -> bytes:
    buf = io.BytesIO()
    while True:
        try:
            ember.save(_valid_object(rng, ember), buf, pickle_protocol=rng.choice([2, 2, 4, 5]))
            return buf.getvalue()
        except RuntimeError:  # a storage saved with two dtypes: draw again
            buf = io.BytesIO()


def _mutate(rng: random.Random, data: bytes, opcodes: bool = False, most: int = 6) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, most)):
        if not out:
            break
        i = rng.randrange(len(out))
        r = rng.random()
        if r < 0.35:
            out[i] ^= 1 << rng.randrange(8)
        elif r < 0.6:
            out[i] = rng.choice(pickle_opcodes()) if opcodes else rng.randrange(256)
        elif r < 0.7:
            del out[i:i + rng.randint(1, 8)]
        elif r < 0.8:
            out[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif r < 0.9:
            j = rng.randrange(len(out))
            out[i:i] = out[j:j + rng.randint(1, 16)]
        else:
            del out[rng.randrange(len(out)):]
    return bytes(out)


def _rezip(data: bytes, new_pickle: bytes) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            body = new_pickle if info.filename.endswith("data.pkl") else src.read(info)
            dst.writestr(info.filename, body)
    return buf.getvalue()


def gen_pickle_flip(rng, ember) -> bytes:
    data = _valid_checkpoint(rng, ember)
    pkl = zipfile.ZipFile(io.BytesIO(data)).read("archive/data.pkl")
    return _rezip(data, _mutate(rng, pkl, opcodes=rng.random() < 0.5, most=3))


def gen_zip_flip(rng, ember) -> bytes:
    return _mutate(rng, _valid_checkpoint(rng, ember))


def _storage_and_record(rng, key="0"):
    """A persistent id and its record: usually consistent, sometimes not."""
    stype = rng.choice(STORAGE_TYPES) if rng.random() < 0.9 else rng.choice(ODD_STORAGE_TYPES)
    numel = rng.randint(0, 40) if rng.random() < 0.8 else _int(rng)
    itemsize = ITEMSIZE.get(stype, 4)
    if rng.random() < 0.85 and 0 <= numel <= 1 << 12:
        nbytes = numel * itemsize
    else:
        nbytes = rng.randint(0, 200)
    record = bytes(rng.randrange(256) for _ in range(nbytes))
    pid_key = key if rng.random() < 0.95 else rng.choice([int(key), "missing", 0.5, None])
    location = "cpu" if rng.random() < 0.95 else rng.choice(["cuda:0", "meta", 3])
    return PersId(("storage", Global("torch", stype), pid_key, location, numel)), numel, record


def _geometry(rng, numel: int):
    """(offset, size, stride): valid near the edges of `numel` elements, or hostile."""
    ndim = rng.choice([0, 1, 1, 2, 2, 3, 4]) if rng.random() < 0.97 else rng.randint(5, 70)
    if rng.random() < 0.5:  # valid, or one element off
        size = [rng.randint(0, 5) for _ in range(ndim)]
        stride = [rng.randint(0, 6) for _ in range(ndim)]
        extent = sum(st * (s - 1) for s, st in zip(size, stride) if s > 0)
        offset = max(0, numel - 1 - extent - rng.randint(-1, 2))
        return offset, size, stride
    size = [_int(rng) for _ in range(ndim)]
    stride = [_int(rng) for _ in range(ndim + (rng.random() < 0.05))]
    offset = _int(rng) if rng.random() < 0.5 else 0
    if rng.random() < 0.05:
        size = rng.choice([[2.0], [True], "ab", None, [[1]]])
    return offset, size, stride


def _tensor_call(rng, storage):
    numel = storage.pid[4] if isinstance(storage.pid[4], int) else 0
    offset, size, stride = _geometry(rng, numel)
    requires_grad = rng.random() < 0.1
    args = (storage, offset, tuple(size) if isinstance(size, list) else size, tuple(stride),
            requires_grad, ordered_dict())
    r = rng.random()
    if r < 0.6:
        return Call(Global("torch._utils", "_rebuild_tensor_v2"), *args)
    if r < 0.75:
        dtype = Global("torch", rng.choice(DTYPES)) if rng.random() < 0.9 else None
        return Call(Global("torch._utils", "_rebuild_tensor_v3"), *args, dtype)
    if r < 0.8:
        return Call(Global("torch._utils", "_rebuild_tensor"), *args[:4])
    if r < 0.9:
        inner = Call(Global("torch._utils", "_rebuild_tensor_v2"), *args)
        return Call(Global("torch._utils", "_rebuild_parameter"), inner, rng.random() < 0.5,
                    ordered_dict())
    return Call(Global("torch._tensor", "_rebuild_from_type_v2"),
                Global("torch._utils", "_rebuild_tensor_v2"),
                Global("torch", rng.choice(["Tensor", "Size"])), args, {"attr": 1})


def _valid_geometry(rng) -> tuple[int, list, list, int]:
    """(offset, size, stride, the elements it needs) of a tensor that a storage can hold."""
    ndim = rng.choice([0, 1, 1, 2, 2, 3, 4])
    size = [rng.choice([0, 1, 1, 2, 3, 4, 5]) for _ in range(ndim)]
    stride = [rng.choice([0, 1, 1, 2, 3, 5, 7]) for _ in range(ndim)]
    offset = rng.randint(0, 4)
    extent = sum(st * (s - 1) for s, st in zip(size, stride) if s > 0)
    return offset, size, stride, (0 if 0 in size else offset + extent + 1)


def gen_geometry(rng, ember=None) -> bytes:
    """Tensors over one to three storages: valid ones (views at the very end of their storage),
    ones a single step past an edge, or hostile ones."""
    mode = rng.choice(["valid", "valid", "edge", "hostile", "hostile"])
    records, items = {}, []
    for k in range(rng.randint(1, 3)):
        key = str(k)
        if mode == "hostile":
            storage, _, records[key] = _storage_and_record(rng, key)
            items += [_tensor_call(rng, storage) for _ in range(rng.randint(1, 3))]
            continue
        stype = rng.choice(STORAGE_TYPES)
        geometries = [_valid_geometry(rng) for _ in range(rng.randint(1, 3))]
        numel = max(g[3] for g in geometries) + rng.choice([0, 0, 1, 3])
        record_numel = numel
        if mode == "edge":
            r = rng.random()
            if r < 0.3:
                numel = max(numel - 1, 0)
                record_numel = numel
            elif r < 0.5:
                record_numel = numel + rng.choice([-1, 1])
            else:
                g = list(geometries[0])
                i = rng.randrange(4) if g[1] else 0
                if i == 0:
                    g[0] += rng.choice([1, 2**62, 2**63 - 1])
                elif i == 3:
                    g[0] = numel
                else:
                    g[i] = list(g[i])
                    g[i][rng.randrange(len(g[i]))] += rng.choice([1, 2**31, 2**62])
                geometries[0] = tuple(g)
        storage = PersId(("storage", Global("torch", stype), key, "cpu", numel))
        records[key] = bytes(rng.randrange(256) for _ in range(max(record_numel, 0)
                                                                  * ITEMSIZE[stype]))
        for offset, size, stride, _ in geometries:
            floating = stype in ("FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage")
            args = (storage, offset, tuple(size), tuple(stride),
                    floating and rng.random() < 0.2, ordered_dict())
            call = Call(Global("torch._utils", "_rebuild_tensor_v2"), *args)
            if rng.random() < 0.2:
                call = Call(Global("torch._utils", "_rebuild_parameter"), call, args[4],
                            ordered_dict())
            items.append(call)
    return archive(items if len(items) > 1 else items[0], records)


def gen_nested(rng, ember=None) -> bytes:
    storage, _, record = _storage_and_record(rng)
    depth = rng.choice([1, 3, 10, 100, 2000])
    inner = _tensor_call(rng, storage)
    out = bytearray()
    emit(inner, out)
    out += pickle.BINPUT + b"\x01"
    for level in range(depth):
        r = rng.random()
        if r < 0.3:  # a list holding the level below and the shared tensor again
            out[:0] = pickle.EMPTY_LIST + pickle.MARK
            out += pickle.BINGET + b"\x01" + pickle.APPENDS
        elif r < 0.6:
            out[:0] = pickle.EMPTY_DICT + pickle.MARK + dumps(f"k{level}")[2:-1]
            out += pickle.SETITEMS
        elif r < 0.8:
            out[:0] = pickle.MARK
            out += dumps(_value(rng))[2:-1] + pickle.TUPLE
        else:
            out[:0] = dumps(ordered_dict())[2:-1] + pickle.MARK + dumps("x")[2:-1]
            out += pickle.SETITEMS
    return archive(pickle.PROTO + b"\x02" + bytes(out) + pickle.STOP, {"0": record})


def _global(rng):
    module, name = rng.choice(ALLOWED_NAMES if rng.random() < 0.6 else FORBIDDEN_NAMES)
    return StackGlobal(module, name) if rng.random() < 0.15 else Global(module, name)


# attributes a BUILD could replace on a class or a shared object
ATTRIBUTES = ["zero_", "__init__", "__new__", "__class__", "__dict__", "__setstate__", "add",
              "itemsize", "dtype", "_rebuild_tensor_v2", "__call__", "append", "keys"]


def _trick(rng, storage):
    r = rng.random()
    target = rng.choice([_global(rng), _global(rng), _global(rng),
                         Call(Global("torch", "Size"), [1]), ordered_dict(),
                         _tensor_call(rng, storage), {}, [], (), storage])
    if r < 0.12:  # the construction: an allowed global's attribute replaced
        module, name = rng.choice(ALLOWED_NAMES)
        return Build(Global(module, name), (None, {rng.choice(ATTRIBUTES): _value(rng)}))
    if r < 0.3:
        attrs = {rng.choice(ATTRIBUTES): _value(rng) for _ in range(rng.randint(1, 3))}
        state = rng.choice([attrs, (None, attrs), (attrs, attrs), (attrs, None), _value(rng)])
        return Build(target, state)
    if r < 0.5:
        return Call(_global(rng), *[_value(rng) for _ in range(rng.randint(0, 3))])
    if r < 0.6:
        return NewObj(_global(rng), *[_value(rng) for _ in range(rng.randint(0, 2))])
    if r < 0.7:
        pid = rng.choice([_value(rng), ("storage",), ("storage", Global("torch", "float32"),
                          "0", "cpu", 5), ("storage", _global(rng), "0", "cpu", _int(rng))])
        return PersId(pid)
    if r < 0.85:  # APPEND / SETITEM on whatever the target is
        body = bytearray()
        emit(target, body)
        emit(_value(rng), body)
        if rng.random() < 0.5:
            body += pickle.APPEND
        else:
            emit(_value(rng), body)
            body += pickle.SETITEM
        return Raw(bytes(body))
    return target


def gen_tricks(rng, ember=None) -> bytes:
    storage, _, record = _storage_and_record(rng)
    items = [_trick(rng, storage) for _ in range(rng.randint(1, 4))]
    return archive(items, {"0": record}, protocol=rng.choice([2, 4]))


_OPCODES: list = []


def pickle_opcodes() -> list:
    if not _OPCODES:
        _OPCODES.extend(op.code.encode("latin1")[0] for op in __import__("pickletools").opcodes)
    return _OPCODES


def gen_opcodes(rng, ember=None) -> bytes:
    out = bytearray(pickle.PROTO + bytes([rng.choice([2, 4, 5])]))
    for _ in range(rng.randint(1, 40)):
        op = rng.choice(pickle_opcodes())
        out.append(op)
        r = rng.random()
        if r < 0.3:
            out += bytes([rng.randrange(256)])
        elif r < 0.5:
            out += struct.pack("<i", rng.choice([0, 1, 5, 255, 2**31 - 1, -1]))
        elif r < 0.6:
            out += b"torch\nTensor\n" if rng.random() < 0.5 else b"collections\nOrderedDict\n"
        elif r < 0.7:
            out += dumps(_value(rng))[2:-1]
    if rng.random() < 0.8:
        out += pickle.STOP
    return archive(bytes(out), {"0": b"\x00" * 20})


def _patch_record_sizes(data: bytes, rng) -> bytes:
    """Rewrites the size fields of a random record (local header and/or central directory)."""
    buf = bytearray(data)
    infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    info = rng.choice(infos)
    size = rng.choice([0, 1, info.file_size + 1, max(info.file_size - 1, 0), 2**31, 2**32 - 1])
    comp = size if rng.random() < 0.5 else info.compress_size
    if rng.random() < 0.7:
        struct.pack_into("<II", buf, info.header_offset + 18, comp, size)
    pos = bytes(buf).find(b"PK\x01\x02")
    while pos >= 0 and rng.random() < 0.9:
        name_len = struct.unpack_from("<H", buf, pos + 28)[0]
        if bytes(buf[pos + 46:pos + 46 + name_len]) == info.filename.encode():
            struct.pack_into("<II", buf, pos + 20, comp, size)
            break
        pos = bytes(buf).find(b"PK\x01\x02", pos + 4)
    return bytes(buf)


def gen_zip_structure(rng, ember) -> bytes:
    r = rng.random()
    data = _valid_checkpoint(rng, ember)
    if r < 0.2:
        return data[:rng.randrange(len(data))]
    if r < 0.45:
        return _patch_record_sizes(data, rng)
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    method = rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2])
    with zipfile.ZipFile(buf, "w", method) as dst:
        for info in src.infolist():
            name, body = info.filename, src.read(info)
            if name.endswith("data.pkl") and r < 0.55:
                name = rng.choice(["archive/other.pkl", "data.pkl", "a/b/data.pkl"])
            if name.startswith("archive/data/") and r > 0.8:  # a record shorter or longer
                body = body[:rng.randrange(len(body) + 1)] + b"\x00" * rng.randint(0, 9)
            if name.endswith("byteorder") and rng.random() < 0.3:
                body = rng.choice([b"big", b"\xff" * 40, b""])
            dst.writestr(name, body)
        if rng.random() < 0.2:
            dst.writestr("other/data.pkl", dumps([1, 2]))
    return buf.getvalue()


GENERATOR_FUNCS = {"pickle-flip": gen_pickle_flip, "zip-flip": gen_zip_flip,
                   "geometry": gen_geometry, "nested": gen_nested, "tricks": gen_tricks,
                   "opcodes": gen_opcodes, "zip-structure": gen_zip_structure}


def generate(seed: int, index: int, ember) -> tuple[str, bytes, bool]:
    """(generator, the file's bytes, whether to load it with mmap=True) for one file."""
    rng = random.Random(f"{seed}:{index}")
    kinds = list(GENERATORS)
    kind = rng.choices(kinds, weights=[GENERATORS[k] for k in kinds])[0]
    return kind, GENERATOR_FUNCS[kind](rng, ember), rng.random() < 0.3


# ---------------------------------------------------------------------------------------------
# Loading and checking (in the child)


def _storage_elements(t, np):
    """The tensor's storage as a flat NumPy array of its dtype (bfloat16 as float64)."""
    name = str(t.dtype).split(".")[-1]
    raw = bytes(t.untyped_storage())
    np_name = {"bfloat16": "uint16", "bool": "uint8"}.get(name, name)
    base = np.frombuffer(raw, dtype=np_name, count=len(raw) // t.element_size())
    if name == "bfloat16":
        return (base.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return base != 0 if name == "bool" else base


def _offsets(t, indices) -> list:
    """Storage element indices of the given elements, in Python integers (exact)."""
    return [t.storage_offset() + sum(i * st for i, st in zip(index, t.stride()))
            for index in indices]


def _all_offsets(t) -> list:
    offsets = [t.storage_offset()]
    for size, stride in zip(t.shape, t.stride()):  # C order: the last dim varies fastest
        offsets = [o + i * stride for o in offsets for i in range(size)]
    return offsets


def _same(got, want, np) -> bool:
    if want.dtype.kind == "f":
        return np.array_equal(np.asarray(got, dtype=np.float64), want.astype(np.float64),
                              equal_nan=True)
    return np.array_equal(np.asarray(got, dtype=want.dtype), want)


def _read_fully(t, np) -> None:
    """Reads the tensor and checks what it reads against its storage's bytes, read by NumPy at
    the element offsets computed here in Python integers (an independent oracle). Small ones
    whole (tolist, sum, clone); others at their first and last element (tolist of an empty
    tensor of many dims builds the lists of its leading dims: that can be huge too)."""
    base = _storage_elements(t, np)
    leading = 1
    for size in t.shape:
        leading *= max(size, 1)
    if leading > FULL_READ_LIMIT:
        if t.numel():
            corners = [(0,) * t.ndim, tuple(size - 1 for size in t.shape)]
            got = [t[index].item() for index in corners]
            offsets = _offsets(t, corners)
            if max(offsets) >= len(base):
                raise AssertionError(f"{tuple(t.shape)} addresses past its storage")
            if not _same(got, base[offsets], np):
                raise AssertionError(f"corner elements {got} != {base[offsets]}")
        else:  # nothing to add or copy, whatever the shape
            t.sum()
            t.clone()
        return
    values = t.tolist()
    t.sum()
    if t.clone().shape != t.shape:
        raise AssertionError("clone changed the shape")
    if not t.numel():
        return
    offsets = _all_offsets(t)
    if max(offsets) >= len(base):
        raise AssertionError(f"{tuple(t.shape)} addresses past its storage")
    want = base[offsets].reshape(tuple(t.shape))
    if not _same(values, want, np):
        raise AssertionError(f"values of a {t.dtype} tensor of shape {tuple(t.shape)} differ "
                             "from its storage's bytes")


def _check_result(obj, ember, np) -> int:
    """Walks the loaded object (iteratively: it may be deep) and reads every tensor; returns
    how many tensors it read."""
    stack, seen, tensors = [obj], set(), 0
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, ember.Tensor):
            _read_fully(x, np)
            tensors += 1
        elif isinstance(x, ember.UntypedStorage):
            bytes(x)
        elif isinstance(x, dict):  # dict's own methods: a loaded dict's could be shadowed
            stack.extend(dict.keys(x))
            stack.extend(dict.values(x))
        elif isinstance(x, (list, tuple, set, frozenset)):
            stack.extend(x)
    return tensors


FAILING_EXCEPTIONS = (MemoryError, SystemError, RecursionError)
# With EMBER_CKPT_FUZZ_SELFTEST=1 in the environment, files that start with these make the child
# crash or change ember.Tensor: the tests of the fuzzer's own reporting use them.
SELFTEST_CRASH = b"SELFTEST-CRASH"
SELFTEST_CHANGE = b"SELFTEST-CHANGE"


def _worker(manifest: str, start: int) -> None:
    """Child: loads the manifest's files from `start`, one line of JSON each on stdout,
    preceded by ``B <index>`` so that the parent knows which file a crash happened in. The
    files are slices of one pack file (10,000 small files took longer to delete than to
    fuzz); one to be loaded with mmap=True is written to a path of its own first."""
    import resource

    if "asan" not in os.environ.get("LD_PRELOAD", ""):  # ASan reserves terabytes of shadow
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
    import numpy as np

    import ember

    try:
        import ember.autograd  # noqa: F401 - imported by a requires_grad tensor otherwise
        have_autograd = True
    except ImportError:  # the core alone (the sanitizer session installs only it)
        have_autograd = False
    from checkpoint_craft import changes, ember_snapshot, storage, tensor

    # what a first load, a tensor's repr and a refusal import lazily, imported before the
    # snapshot (a lazy import of ember's own module is no change a file made)
    ember.load(io.BytesIO(archive(tensor(storage()), {"0": b"\x00" * 20})))
    repr(ember.ones(2, requires_grad=have_autograd) * 2)
    try:
        ember.load(io.BytesIO(archive(Global("os", "system"))))
    except pickle.UnpicklingError:
        pass
    entries = json.loads(Path(manifest).read_text())
    pack = open(Path(manifest).with_suffix(".bin"), "rb")  # noqa: SIM115 - open while we run
    scratch = Path(manifest).with_name(f"child-{os.getpid()}.pt")
    selftest = os.environ.get("EMBER_CKPT_FUZZ_SELFTEST") == "1"
    before = ember_snapshot()
    out = sys.stdout
    for index in range(start, len(entries)):
        offset, length, use_mmap = entries[index]
        out.write(f"B {index}\n")
        out.flush()
        result = {"index": index}
        pack.seek(offset)
        data = pack.read(length)
        if selftest:
            head = data[:len(SELFTEST_CHANGE)]
            if head.startswith(SELFTEST_CRASH):
                os.kill(os.getpid(), signal.SIGSEGV)
            if head.startswith(SELFTEST_CHANGE):
                ember.Tensor._fuzz_selftest = True
        try:
            if use_mmap:
                # a new inode each time (os.replace): earlier mappings never see it change
                scratch.with_suffix(".tmp").write_bytes(data)
                os.replace(scratch.with_suffix(".tmp"), scratch)
                obj = ember.load(scratch, mmap=True)
            else:
                obj = ember.load(io.BytesIO(data))
        except FAILING_EXCEPTIONS as e:
            result["status"] = "bad-exception"
            result["detail"] = f"{type(e).__name__}: {str(e)[:300]}"
        except Exception as e:  # an ordinary refusal
            result["status"] = "raised"
            result["detail"] = type(e).__name__
        else:
            try:
                result["tensors"] = _check_result(obj, ember, np)
                result["status"] = "loaded"
            except BaseException as e:  # noqa: BLE001 - any failure to read is a finding
                result["status"] = "read-error"
                result["detail"] = "".join(traceback.format_exception_only(e)).strip()[:500]
            del obj
        after = ember_snapshot()
        changed = changes(before, after)
        if changed:
            result["status"] = "changed-ember"
            result["detail"] = ", ".join(changed[:20])
        out.write(json.dumps(result) + "\n")
        out.flush()
        if changed:
            return  # a fresh child for the rest: this one's ember is no longer the original


# ---------------------------------------------------------------------------------------------
# The parent


@dataclass
class Summary:
    files: int = 0
    seed: int = 0
    wall_s: float = 0.0
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    by_generator: collections.Counter = field(default_factory=collections.Counter)
    crashes: list = field(default_factory=list)
    hangs: list = field(default_factory=list)
    changes: list = field(default_factory=list)
    failures: list = field(default_factory=list)  # read errors, MemoryError, SystemError, ...
    children: int = 0
    kept: str = ""

    def problems(self) -> list:
        return self.crashes + self.hangs + self.changes + self.failures

    def report(self) -> str:
        lines = [f"{self.files} files (seed {self.seed}) in {self.wall_s:.1f} s, "
                 f"{self.children} child process(es)",
                 f"crashes: {len(self.crashes)}, hangs: {len(self.hangs)}, changes to ember: "
                 f"{len(self.changes)}, other failures: {len(self.failures)}",
                 "generators: " + ", ".join(f"{k} {v}" for k, v in
                                            sorted(self.by_generator.items())),
                 "outcomes: " + ", ".join(f"{k} {v}" for k, v in self.outcomes.most_common())]
        for p in self.problems():
            lines.append(f"  {p['status']}: file {p['index']} ({p['generator']}, seed "
                         f"{self.seed}, mmap={p['mmap']}): {p.get('detail', '')}\n"
                         f"    reproduce: python {Path(__file__).name} --replay {p['kept']}"
                         + (" --mmap" if p["mmap"] else ""))
        return "\n".join(lines)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name if code < 0 else f"exit status {code}"
    except ValueError:
        return f"signal {-code}"


def run(files: int, seed: int = 0, keep: str | os.PathLike | None = None, log=None,
        inject: dict | None = None) -> Summary:
    """Generates `files` files, loads them in child processes, and sums up. `inject` maps an
    index to bytes that replace the generated file (the fuzzer's own tests)."""
    import ember

    began = time.perf_counter()
    summary = Summary(files=files, seed=seed)
    work = Path(tempfile.mkdtemp(prefix="ember-ckpt-fuzz-"))
    keep_dir = Path(keep) if keep else None  # made at the first problem
    entries, kinds = [], []  # (offset in the pack, length, mmap), generator
    manifest = work / "manifest.json"
    with open(manifest.with_suffix(".bin"), "wb") as pack:
        for index in range(files):
            kind, data, use_mmap = generate(seed, index, ember)
            if inject and index in inject:
                kind, data = "injected", inject[index]
            entries.append((pack.tell(), len(data), use_mmap))
            pack.write(data)
            kinds.append(kind)
            summary.by_generator[kind] += 1
    manifest.write_text(json.dumps(entries))

    def problem(index: int, status: str, detail: str) -> dict:
        nonlocal keep_dir
        if keep_dir is None:
            keep_dir = Path(tempfile.mkdtemp(prefix="ember-ckpt-fuzz-kept-"))
        keep_dir.mkdir(parents=True, exist_ok=True)
        summary.kept = str(keep_dir)
        offset, length, use_mmap = entries[index]
        kept = keep_dir / f"{index:05d}-{kinds[index]}.pt"
        with open(manifest.with_suffix(".bin"), "rb") as pack:
            pack.seek(offset)
            kept.write_bytes(pack.read(length))
        return {"index": index, "status": status, "detail": detail, "generator": kinds[index],
                "mmap": use_mmap, "kept": str(kept)}

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    next_index = 0
    while next_index < files:
        if summary.children and log:
            log(f"a fresh child from file {next_index}")
        summary.children += 1
        stderr_path = work / f"child-{summary.children}.stderr"
        with open(stderr_path, "wb") as stderr:
            child = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker",
                                      str(manifest), str(next_index)], stdout=subprocess.PIPE,
                                     stderr=stderr, env=env)
        started_at, current, hung, pending = next_index, None, False, b""
        while True:  # raw reads and select: no line waits in a buffer that select cannot see
            ready, _, _ = select.select([child.stdout], [], [], HANG_SECONDS)
            if not ready:
                hung = True
                child.kill()
                break
            chunk = os.read(child.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                if line.startswith(b"B "):
                    current = int(line[2:])
                    continue
                result = json.loads(line)
                index, status = result["index"], result["status"]
                current, next_index = None, index + 1
                summary.outcomes[status if status != "raised"
                                 else f"raised {result['detail']}"] += 1
                if status == "changed-ember":
                    summary.changes.append(problem(index, status, result["detail"]))
                elif status in ("read-error", "bad-exception"):
                    summary.failures.append(problem(index, status, result["detail"]))
        code = child.wait()
        child.stdout.close()
        if current is not None:  # died (or hung) inside a file
            if hung:
                summary.hangs.append(problem(current, "hang", f"no answer in {HANG_SECONDS} s"))
            else:
                tail = stderr_path.read_bytes()[-400:].decode("utf-8", "replace").strip()
                summary.crashes.append(problem(current, "crash", f"{_signal_name(code)}"
                                               + (f"; stderr: {tail}" if tail else "")))
            summary.outcomes["hang" if hung else "crash"] += 1
            next_index = current + 1
        elif next_index < files and (code != 0 or next_index == started_at):
            raise RuntimeError(f"the fuzz child failed before loading file {next_index} "
                               f"({_signal_name(code)}): "
                               + stderr_path.read_text(errors="replace")[-2000:])
    summary.wall_s = time.perf_counter() - began
    shutil.rmtree(work, ignore_errors=True)  # the problems' files are in keep_dir
    return summary


def replay(path: str, use_mmap: bool) -> None:
    """Loads one file in this process, as the child would, and prints what happens."""
    import numpy as np

    import ember

    obj = ember.load(path, mmap=use_mmap)
    print(f"loaded; {_check_result(obj, ember, np)} tensor(s) read")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", help="folder for the files that crashed or failed")
    parser.add_argument("--replay", help="load one file in this process")
    parser.add_argument("--mmap", action="store_true", help="with --replay: mmap=True")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker[0], int(args.worker[1]))
        return 0
    if args.replay:
        replay(args.replay, args.mmap)
        return 0
    summary = run(args.files, args.seed, args.keep, log=print)
    print(summary.report())
    return 1 if summary.problems() else 0


if __name__ == "__main__":
    sys.exit(main())
