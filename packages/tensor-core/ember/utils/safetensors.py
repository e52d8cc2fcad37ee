"""The safetensors format, natively: files that the ``safetensors`` library reads, byte for byte
the same as it writes them, and its files read without it.

Layout: an 8-byte little-endian header length N, N bytes of JSON header, then the tensors' bytes::

    {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3],
                                          "data_offsets": [begin, end]}, ...}

Offsets are relative to the end of the header. As the library does, the header is padded with
spaces to a multiple of 8 bytes and the tensors are laid out by decreasing dtype rank (wider
types first, so every tensor is aligned), then by name. Tensors that share memory and
non-contiguous tensors are refused with the library's (torch binding's) errors.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from typing import Any

import ember
from ember.serialization import core_refuses_size

__all__ = ["SafetensorError", "load", "load_file", "safe_open", "save", "save_file"]

# ember dtype name -> (safetensors code, the library's rank used to order the data)
_CODES = {
    "bool": ("BOOL", 0),
    "uint8": ("U8", 4),
    "int8": ("I8", 5),
    "int16": ("I16", 9),
    "float16": ("F16", 11),
    "bfloat16": ("BF16", 12),
    "int32": ("I32", 13),
    "float32": ("F32", 15),
    "float64": ("F64", 17),
    "int64": ("I64", 18),
}
_FROM_CODE = {code: name for name, (code, _) in _CODES.items()}
_MAX_HEADER = 100_000_000  # the library's limit
_MAX_DIMS = 64  # the core's iterators handle at most 64 dimensions
_INT64_MAX = 2**63 - 1


class SafetensorError(Exception):
    """A malformed safetensors buffer or an unsupported request (the library's error type)."""


def _dtype_name(dt) -> str:
    return str(dt).split(".")[-1]


# ---------------------------------------------------------------------------------------------
# Writing


def _check_tensors(tensors: dict) -> None:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, ember.Tensor] but received {type(tensors)}")
    for k, v in tensors.items():
        if not isinstance(k, str):
            raise ValueError(f"Key `{k!r}` is invalid, expected a str")
        if not isinstance(v, ember.Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected ember.Tensor but received {type(v)}")
    # Shared memory: tensors whose byte ranges in one storage overlap (the library's rule).
    groups: dict[Any, list] = {}
    for k, v in tensors.items():
        s = v.untyped_storage()
        if s.nbytes() == 0 or v.numel() == 0:
            continue
        begin = v.data_ptr()
        groups.setdefault(s, []).append((begin, begin + v.numel() * v.element_size(), k))
    failing = []
    for areas in groups.values():
        areas.sort()
        current, last_stop = {areas[0][2]}, areas[0][1]
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                if len(current) > 1:
                    failing.append(current)
                current = {name}
            else:
                current.add(name)
            last_stop = max(last_stop, stop)
        if len(current) > 1:
            failing.append(current)
    if failing:
        raise RuntimeError(
            "Some tensors share memory, this will lead to duplicate memory on disk and potential "
            f"differences when loading them again: {failing}. A potential way to correctly save "
            "your model is to save only the full tensors (or clones of the views).")
    for k, v in tensors.items():
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. It "
                "either means you are trying to save tensors which are reference of each other in "
                "which case it's recommended to save only the full tensors, and reslice at load "
                "time, or simply call `.contiguous()` on your tensor to pack it before saving.")
        if v.device.type != "cpu":
            raise ValueError(f"Key `{k}`: only CPU tensors can be saved, got {v.device}")


def _tensor_bytes(t: ember.Tensor) -> memoryview:
    n = t.numel() * t.element_size()
    if n == 0:
        return memoryview(b"")
    begin = t.storage_offset() * t.element_size()
    return memoryview(t.untyped_storage())[begin:begin + n]


def _header(tensors: dict, metadata: dict | None) -> tuple[bytes, list]:
    _check_tensors(tensors)
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("metadata must be a dict of str to str")
    order = sorted(tensors, key=lambda k: (-_CODES[_dtype_name(tensors[k].dtype)][1], k))
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    for k in order:
        t = tensors[k]
        n = t.numel() * t.element_size()
        header[k] = {"dtype": _CODES[_dtype_name(t.dtype)][0], "shape": list(t.shape),
                     "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw, [tensors[k] for k in order]


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of `tensors` (a dict of name -> contiguous tensor)."""
    head, order = _header(tensors, metadata)
    return b"".join([head, *(_tensor_bytes(t) for t in order)])


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Writes `tensors` to `filename` in the safetensors format.

    >>> import ember, tempfile, os
    >>> from ember.utils.safetensors import save_file, load_file
    >>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> save_file({"w": ember.ones(2, 2)}, path, metadata={"format": "pt"})
    >>> load_file(path)["w"].sum().item()
    4.0
    """
    head, order = _header(tensors, metadata)
    with open(filename, "wb") as f:
        f.write(head)
        for t in order:
            f.write(_tensor_bytes(t))


# ---------------------------------------------------------------------------------------------
# Reading


def _parse(buf, total: int) -> tuple[int, dict, dict | None]:
    """Validates the header at the start of `buf` (a buffer of `total` bytes): returns where the
    data starts, {name: (dtype name, shape, begin, end)} and the metadata."""
    if total < 8:
        raise SafetensorError("Error while deserializing header: HeaderTooSmall (the buffer is "
                              f"{total} bytes, fewer than the 8-byte header length)")
    (n,) = struct.unpack("<Q", bytes(buf[:8]))
    if n > _MAX_HEADER:
        raise SafetensorError(f"Error while deserializing header: HeaderTooLarge ({n} bytes)")
    if 8 + n > total:
        raise SafetensorError(
            f"Error while deserializing header: InvalidHeaderLength (the header claims {n} "
            f"bytes but the buffer holds {total - 8} after the length)")
    raw = bytes(buf[8:8 + n])
    if not raw.startswith(b"{"):
        raise SafetensorError("Error while deserializing header: InvalidHeaderStart (the header "
                              "must be a JSON object starting with '{')")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorError(
            f"Error while deserializing header: InvalidHeaderDeserialization ({e})") from None
    if not isinstance(header, dict):
        raise SafetensorError("Error while deserializing header: InvalidHeaderDeserialization")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(v, str) for v in metadata.values())):
        raise SafetensorError("Error while deserializing header: __metadata__ must map str to str")
    entries = {}
    for name, info in header.items():
        try:
            code, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        except (TypeError, KeyError, ValueError):
            raise SafetensorError(
                f"Error while deserializing header: TensorInvalidInfo for tensor '{name}' "
                "(it needs dtype, shape and data_offsets=[begin, end])") from None
        if code not in _FROM_CODE:
            raise SafetensorError(
                f"Error while deserializing header: unsupported dtype {code!r} for tensor "
                f"'{name}' (ember reads {', '.join(sorted(_FROM_CODE))})")
        # type(...) is int: JSON's true/false are bools, which isinstance(..., int) accepts
        if not (isinstance(shape, list) and len(shape) <= _MAX_DIMS
                and all(type(s) is int and s >= 0 for s in shape)):
            raise SafetensorError(f"Error while deserializing header: bad shape {shape!r} for "
                                  f"tensor '{name}'")
        if not all(type(o) is int and o >= 0 for o in (begin, end)) or end < begin:
            raise SafetensorError(
                f"Error while deserializing header: InvalidOffset for tensor '{name}' "
                f"({[begin, end]})")
        dtype = _FROM_CODE[code]
        # exact (Python integers): the bytes, and the strides of the tensor (empty dims count
        # as 1 there), must be counts the core holds in an int64, and the core must be able
        # to create a tensor of that shape
        itemsize = getattr(ember, dtype).itemsize
        need = math.prod(shape) * itemsize
        if (math.prod(max(s, 1) for s in shape) * itemsize > _INT64_MAX
                or core_refuses_size(shape)):
            raise SafetensorError(
                f"Error while deserializing header: ValidationOverflow for tensor '{name}' "
                f"(shape {shape} of {code} needs more bytes than an int64 counts)")
        if end - begin != need:
            raise SafetensorError(
                f"Error while deserializing header: TensorInvalidInfo for tensor '{name}': "
                f"{code} {shape} needs {need} bytes, data_offsets span {end - begin}")
        entries[name] = (dtype, shape, begin, end)
    # The data must be covered exactly, without gaps or overlaps (the library's validation).
    pos = 0
    for name, (_, _, begin, end) in sorted(entries.items(), key=lambda kv: kv[1][2:]):
        if begin != pos:
            raise SafetensorError(
                f"Error while deserializing header: InvalidOffset for tensor '{name}' (it starts "
                f"at {begin}, the previous tensor ends at {pos})")
        pos = end
    start = 8 + n
    if start + pos != total:
        raise SafetensorError(
            f"Error while deserializing header: MetadataIncompleteBuffer (the tensors span {pos} "
            f"bytes, the buffer holds {total - start} after the header)")
    return start, entries, metadata


def _make(entry, buf, start: int, borrow: bool = False) -> ember.Tensor:
    dtype, shape, begin, end = entry
    dt = getattr(ember, dtype)
    lo, hi = start + begin, start + end
    if borrow and hi > lo and lo % 8 == 0:
        # a view of the (copy-on-write) mapping: no copy; the mapping lives as long as the tensor
        storage = ember.UntypedStorage._from_buffer(buf[lo:hi])
        return ember.empty(0, dtype=dt).set_(storage, 0, shape)
    t = ember.empty(shape, dtype=dt)
    if hi > lo:
        memoryview(t.untyped_storage())[:] = buf[lo:hi]
    return t


def _check_device(device) -> None:
    if str(device) != "cpu":
        raise SafetensorError(f"device {device!r} is not available in this build; use 'cpu'")


def load(data: bytes) -> dict:
    """Tensors from safetensors bytes (each tensor owns a copy of its bytes)."""
    buf = memoryview(data).cast("B")
    start, entries, _ = _parse(buf, buf.nbytes)
    return {k: _make(e, buf, start) for k, e in entries.items()}


def load_file(filename, device="cpu") -> dict:
    """Tensors from a safetensors file, in the file's (data) order; they view the memory-mapped
    file (copy-on-write) rather than copying it."""
    with safe_open(filename, framework="pt", device=device) as f:
        return {k: f.get_tensor(k) for k in f.offset_keys()}


class safe_open:  # noqa: N801 - the library's name
    """Lazy access to a safetensors file through a memory map: ``keys()``,
    ``get_tensor(name)``, ``metadata()``; a context manager. Tensors view the mapped file
    (copy-on-write: writing to one never changes the file) when their bytes are aligned."""

    def __init__(self, filename, framework: str = "pt", device="cpu"):
        if framework not in ("pt", "torch", "ember", "np", "numpy"):
            raise SafetensorError(f"framework {framework!r} is not supported: use 'pt' or 'np'")
        _check_device(device)
        self._numpy = framework in ("np", "numpy")
        with open(os.fspath(filename), "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            # ACCESS_COPY: private pages, so tensors viewing them may be written to safely
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY) if size else b""
        self._buf = memoryview(self._map)
        self._start, self._entries, self._metadata = _parse(self._buf, size)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        # Tensors from get_tensor may still view the mapping: then it is unmapped with the last
        # of them rather than now.
        self._buf.release()
        if isinstance(self._map, mmap.mmap):
            try:
                self._map.close()
            except BufferError:
                pass

    def keys(self) -> list:
        return sorted(self._entries)

    def offset_keys(self) -> list:
        return sorted(self._entries, key=lambda k: self._entries[k][2])

    def metadata(self) -> dict | None:
        return self._metadata

    def get_tensor(self, name: str):
        try:
            entry = self._entries[name]
        except KeyError:
            raise SafetensorError(f"File does not contain tensor {name}") from None
        t = _make(entry, self._buf, self._start, borrow=True)
        return t.numpy() if self._numpy else t
