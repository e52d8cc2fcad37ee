"""ember.load(weights_only=True) on crafted files: each refusal, with torch's exception class
(and torch's own verdict on the same bytes where torch is installed), and the checks that keep
real checkpoints loading. The random form of these files is test_checkpoint_fuzz.py."""

from __future__ import annotations

import io
import pickle
import struct
import zipfile

import numpy as np
import pytest
from checkpoint_craft import (
    Build,
    Call,
    Global,
    NewObj,
    PersId,
    Raw,
    StackGlobal,
    archive,
    changes,
    dumps,
    ember_snapshot,
    float_records,
    ordered_dict,
    storage,
    tensor,
)

import ember
from ember import serialization

R5 = float_records(5)  # one float32 record "0" of 5 elements


def load(data: bytes, **kwargs):
    return ember.load(io.BytesIO(data), **kwargs)


@pytest.fixture
def unchanged_ember():
    """Fails the test if it changed any attribute of ember's classes or modules."""
    load(archive(tensor(storage()), R5))  # imports what a first load imports
    before = ember_snapshot()
    zero_ = ember.Tensor.zero_
    yield
    assert ember.Tensor.zero_ is zero_
    assert changes(before, ember_snapshot()) == []


def _patch_sizes(data: bytes, name: str, file_size: int, compress_size: int | None = None):
    """The archive with the sizes of record `name` rewritten in its local header and in the
    central directory (a lying archive)."""
    buf = bytearray(data)
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    comp = info.compress_size if compress_size is None else compress_size
    struct.pack_into("<II", buf, info.header_offset + 18, comp, file_size)
    pos = 0
    while True:
        pos = bytes(buf).find(b"PK\x01\x02", pos)
        if pos < 0:
            break
        name_len = struct.unpack_from("<H", buf, pos + 28)[0]
        if bytes(buf[pos + 46:pos + 46 + name_len]) == name.encode():
            struct.pack_into("<II", buf, pos + 20, comp, file_size)
        pos += 4
    return bytes(buf)


# ---------------------------------------------------------------------------------------------
# The crafted files. Each: (id, bytes, ember's exception class, a regex of its message, whether
# torch 2.13 raises the same class for the same bytes).

_TENSOR_CLASS = Global("torch", "Tensor")
CASES = [
    # BUILD: never on a class (a file replaced ember.Tensor.zero_ for the whole process), never
    # on an object the allowlist does not name as buildable
    ("build-tensor-class-slots", archive(Build(_TENSOR_CLASS, (None, {"zero_": "pwned"}))),
     pickle.UnpicklingError, "Can only build", True),
    ("build-tensor-class-dict", archive(Build(_TENSOR_CLASS, {"zero_": "pwned"})),
     pickle.UnpicklingError, "Can only build", True),
    ("build-dtype", archive(Build(Global("torch", "float32"), (None, {"itemsize": 1}))),
     pickle.UnpicklingError, "Can only build", True),
    ("build-storage-type", archive(Build(Global("torch", "FloatStorage"), {"dtype": None})),
     pickle.UnpicklingError, "Can only build", True),
    ("build-rebuild-function",
     archive(Build(Global("torch._utils", "_rebuild_tensor_v2"), (None, {"__code__": 1}))),
     pickle.UnpicklingError, "Can only build", True),
    ("build-size", archive(Build(Call(Global("torch", "Size"), [1]), {"a": 1})),
     pickle.UnpicklingError, "Can only build", False),  # torch: AttributeError
    ("build-tensor", archive(Build(tensor(storage()), (None, {"zero_": 1})), R5),
     pickle.UnpicklingError, "Can only build", False),  # torch calls set_(*state)
    ("build-ordered-dict-slots", archive(Build(ordered_dict(), (None, {"a": 1}))),
     pickle.UnpicklingError, "must be a dict", False),  # torch: TypeError
    ("build-ordered-dict-shadows-keys", archive(Build(ordered_dict(), {"keys": [1]})),
     pickle.UnpicklingError, "may only add attributes, not set 'keys'", False),  # torch: sets it
    ("build-ordered-dict-class", archive(Build(ordered_dict(), {"__class__": 1})),
     pickle.UnpicklingError, "may only add attributes", False),
    # REDUCE: only the allowlisted callables
    ("reduce-tensor-class", archive(Call(_TENSOR_CLASS, 2**40)),
     pickle.UnpicklingError, "reduce for unrecognized function", False),  # torch calls it
    ("reduce-storage-type", archive(Call(Global("torch", "FloatStorage"), 10)),
     pickle.UnpicklingError, "reduce for unrecognized function", False),
    ("reduce-dtype", archive(Call(Global("torch", "float32"))),
     pickle.UnpicklingError, "reduce for unrecognized function", False),  # torch: TypeError
    ("reduce-result-of-reduce", archive(Call(Call(Global("torch", "Size"), [1]))),
     pickle.UnpicklingError, "reduce for unrecognized function", True),
    ("encode-other-codec", archive(Call(Global("_codecs", "encode"), "abc", "rot13")),
     pickle.UnpicklingError, "latin1", False),  # torch allows any codec
    ("bytearray-of-a-size", archive(Call(Global("builtins", "bytearray"), 2**40)),
     pickle.UnpicklingError, "bytearray", False),  # torch allocates it
    ("rebuild-from-type-other-function",
     archive(Call(Global("torch._tensor", "_rebuild_from_type_v2"), Global("torch", "Size"),
                  _TENSOR_CLASS, ([1],), {})),
     pickle.UnpicklingError, "not a tensor rebuild function", False),
    # GLOBAL: dictionary lookups only, never an attribute or an import
    ("global-os-system", archive(Call(Global("os", "system"), "true")),
     pickle.UnpicklingError, "module os is blocked", True),
    ("global-getattr", archive(Global("builtins", "getattr")),
     pickle.UnpicklingError, "Unsupported global: GLOBAL builtins.getattr", True),
    ("global-ember-module", archive(Global("ember", "Tensor")),
     pickle.UnpicklingError, "Unsupported global: GLOBAL ember.Tensor", True),
    ("global-attribute-of-allowed", archive(Global("torch", "Tensor.zero_")),
     pickle.UnpicklingError, "Unsupported global", True),
    ("global-module-of-allowed", archive(Global("torch._utils", "__dict__")),
     pickle.UnpicklingError, "Unsupported global", True),
    ("stack-global-attribute", archive(StackGlobal("torch", "Tensor.zero_"), protocol=4),
     pickle.UnpicklingError, "Unsupported global", True),  # torch: no STACK_GLOBAL at all
    ("global-serialization-internals", archive(Global("ember.serialization", "_USER_SAFE")),
     pickle.UnpicklingError, "Unsupported global", True),
    # NEWOBJ, INST, OBJ, EXT: no construction of classes outside the allowlist
    ("newobj-tensor", archive(NewObj(_TENSOR_CLASS, 2**40)),
     pickle.UnpicklingError, "Can only create new object", False),  # torch constructs it
    ("newobj-size", archive(NewObj(Global("torch", "Size"), [1])),
     pickle.UnpicklingError, "Can only create new object", False),
    ("inst", archive(b"\x80\x02(ibuiltins\nprint\n."),
     pickle.UnpicklingError, "Unsupported operand", True),
    ("obj", archive(dumps(Raw(b"(" + pickle.GLOBAL + b"torch\nTensor\n" + pickle.OBJ))),
     pickle.UnpicklingError, "Unsupported operand", True),
    ("ext1", archive(dumps(Raw(pickle.EXT1 + b"\x01"))),
     pickle.UnpicklingError, "Unsupported operand", True),
    ("persid-text", archive(b"\x80\x02Pstorage\n."),
     pickle.UnpicklingError, "Unsupported operand", True),
    ("next-buffer", archive(dumps(Raw(pickle.NEXT_BUFFER), 5)),
     pickle.UnpicklingError, "Unsupported operand", True),
    # containers: the pickle's own only
    ("append-to-tuple", archive(dumps(Raw(pickle.EMPTY_TUPLE + pickle.NONE + pickle.APPEND))),
     pickle.UnpicklingError, "Can only append to lists", True),
    ("setitem-on-tensor", archive(dumps(Raw(dumps(tensor(storage()))[2:-1]
                                            + dumps(0)[2:-1] + dumps(1.0)[2:-1]
                                            + pickle.SETITEM)), R5),
     pickle.UnpicklingError, "Can only SETITEM", True),
    ("setitems-on-class", archive(dumps(Raw(dumps(_TENSOR_CLASS)[2:-1] + pickle.MARK
                                            + dumps("zero_")[2:-1] + dumps(1)[2:-1]
                                            + pickle.SETITEMS))),
     pickle.UnpicklingError, "Can only SETITEMS", True),
    # persistent ids
    ("persid-int", archive(PersId(3)), pickle.UnpicklingError, "persistent_load id", False),
    ("persid-not-storage", archive(PersId(("module", "os"))),
     pickle.UnpicklingError, "Only persistent_load of storage", True),
    ("persid-short", archive(PersId(("storage", Global("torch", "FloatStorage"), "0", "cpu"))),
     pickle.UnpicklingError, "persistent id", False),  # torch: ValueError
    ("persid-type-not-storage",
     archive(PersId(("storage", Global("torch", "Size"), "0", "cpu", 5)), R5),
     pickle.UnpicklingError, "unsupported storage type", False),  # torch: AttributeError
    ("persid-negative-numel", archive(tensor(storage(numel=-1)), R5),
     pickle.UnpicklingError, "element count", False),  # torch: TypeError
    ("persid-float-key", archive(tensor(storage(key=0.5)), R5),
     pickle.UnpicklingError, "key and location", False),
    ("persid-missing-key", archive(tensor(storage(key="7")), R5),
     RuntimeError, "data/7", True),
    ("persid-unsupported-dtype", archive(tensor(storage(stype="ComplexHalfStorage")), R5),
     RuntimeError, "ComplexHalfStorage", False),
    # records: exactly numel * itemsize bytes, as torch checks
    ("record-short", archive(tensor(storage(numel=6)), R5),
     RuntimeError, r"record size \(20 bytes\) does not match expected size \(24 bytes", True),
    ("record-long", archive(tensor(storage(numel=4), size=(4,)), R5),
     RuntimeError, "record size", True),
    ("numel-absurd", archive(tensor(storage(numel=2**62)), R5),
     RuntimeError, "record size", False),  # torch: TypeError
    # geometry (issue: a stride of 2**60 over 5 elements, a size of (2**62, 4) on nothing)
    ("stride-2**60", archive(tensor(storage(), 0, (5,), (2**60,)), R5),
     RuntimeError, r"Storage size calculation overflowed with sizes=\[5\] and "
                   r"strides=\[1152921504606846976\]", True),
    ("size-2**62x4-empty", archive(tensor(storage(numel=0), 0, (2**62, 4), (4, 1)), {"0": b""}),
     RuntimeError, "numel: integer multiplication overflow", True),
    ("stride-int64-max", archive(tensor(storage(), 0, (2, 2), (2**63 - 1, 1)), R5),
     RuntimeError, "Storage size calculation overflowed", True),
    ("offset-2**62", archive(tensor(storage(), 2**62, (1,), (1,)), R5),
     RuntimeError, r"Storage size calculation overflowed with sizes=\[1\] and strides=\[1\]",
     True),
    ("offset-negative", archive(tensor(storage(), -1, (1,), (1,)), R5),
     RuntimeError, "invalid storage offset -1", True),
    ("offset-past-int64", archive(tensor(storage(), 2**63, (1,), (1,)), R5),
     ValueError, "Overflow when unpacking long long", True),
    ("out-of-bounds", archive(tensor(storage(), 3, (3,), (1,)), R5),
     RuntimeError, "out of bounds for storage of size 20", True),
    ("size-negative", archive(tensor(storage(), 0, (-1,), (1,)), R5),
     RuntimeError, "negative dimension", True),
    ("stride-negative", archive(tensor(storage(), 4, (5,), (-1,)), R5),
     RuntimeError, "Negative strides", True),
    ("size-stride-lengths", archive(tensor(storage(), 0, (2, 2), (1,)), R5),
     RuntimeError, r"unequal size length \(2\) and stride length \(1\)", True),
    ("size-past-int64", archive(tensor(storage(), 0, (2**64,), (1,)), R5),
     TypeError, "Overflow when unpacking long long", True),
    ("size-float", archive(tensor(storage(), 0, (5.0,), (1,)), R5), TypeError, "float", True),
    ("size-bool", archive(tensor(storage(), 0, (True,), (1,)), R5), TypeError, "bool", True),
    ("size-not-tuple", archive(tensor(storage(), 0, "abc", (1,)), R5), TypeError, "str", True),
    ("too-many-dims", archive(tensor(storage(), 0, (1,) * 65, (1,) * 65), R5),
     RuntimeError, "65 dimensions", False),  # torch loads it
    # the core makes tensors of at most 2**60 elements (counted left to right, as it counts):
    # clone() of these would raise, so they do not load (torch loads them)
    ("expanded-past-the-core", archive(tensor(storage(), 0, (2**62,), (0,)), R5),
     ValueError, r"tensor of size \[4611686018427387904\] is too large", False),
    ("empty-past-the-core", archive(tensor(storage(), 0, (2**62 + 5, 0, 0), (1, 1, 1)), R5),
     ValueError, "is too large", False),
    ("empty-with-overflowing-stride", archive(tensor(storage(), 0, (2, 0), (2**63 - 1, 1)), R5),
     RuntimeError, "Storage size calculation overflowed", False),  # torch loads it
    ("v3-dtype-not-a-dtype",
     archive(Call(Global("torch._utils", "_rebuild_tensor_v3"), storage(), 0, (5,), (1,), False,
                  ordered_dict(), Global("torch", "Size")), R5),
     pickle.UnpicklingError, "expected a dtype", False),
    # the pickle stream itself
    ("empty-pickle", archive(b""), EOFError, "Ran out of input", True),
    ("stack-underflow", archive(b"\x80\x02t."), pickle.UnpicklingError, "MARK", False),
    ("memo-miss", archive(b"\x80\x02h\x05."), pickle.UnpicklingError, "Memo value not found",
     False),  # torch: KeyError
    ("truncated-unicode", archive(b"\x80\x02X\xff\xff\xff\x7fab"), pickle.UnpicklingError,
     "truncated", False),
    ("protocol-6", archive(b"\x80\x06N."), ValueError, "unsupported pickle protocol", False),
]


@pytest.mark.parametrize("data, exc, match", [pytest.param(d, e, m, id=i)
                                              for i, d, e, m, _ in CASES])
def test_refused(data, exc, match, unchanged_ember):
    with pytest.raises(exc, match=match) as info:
        load(data)
    assert type(info.value) is exc or exc is pickle.UnpicklingError
    if exc is pickle.UnpicklingError:
        assert "Weights only load failed" in str(info.value)  # torch's preamble


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("data, exc", [pytest.param(d, e, id=i) for i, d, e, _, same in CASES
                                       if same])
def test_torch_refuses_the_same_files_alike(torch, data, exc):
    with pytest.raises(exc):
        torch.load(io.BytesIO(data), weights_only=True)


def test_build_on_the_tensor_class_changes_nothing(unchanged_ember):
    # the reproducer: BUILD with a slot state on the allowed global for the Tensor class
    pkl = b"\x80\x02ctorch\nTensor\nN}X\x05\x00\x00\x00zero_X\x05\x00\x00\x00pwneds\x86b."
    with pytest.raises(pickle.UnpicklingError, match="Can only build"):
        load(archive(pkl))
    assert callable(ember.Tensor.zero_) and ember.zeros(2).fill_(1).zero_().sum().item() == 0


def test_full_load_validates_geometry_too():
    # weights_only=False runs code by design, but its tensors are checked all the same
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        load(archive(tensor(storage(), 0, (5,), (2**60,)), R5), weights_only=False)


# ---------------------------------------------------------------------------------------------
# Archives that lie about their sizes: refused before the size is allocated


def test_record_that_claims_more_bytes_than_the_archive_holds():
    good = archive(tensor(storage(numel=2**29), 0, (1,), (1,)), R5)
    lying = _patch_sizes(good, "archive/data/0", 2**31, 2**31)  # stored: both sizes
    with pytest.raises(RuntimeError, match="the archive ends before its data"):
        load(lying)
    stored_mismatch = _patch_sizes(good, "archive/data/0", 2**31)
    with pytest.raises(RuntimeError, match="is stored with 20 bytes but declares"):
        load(stored_mismatch)


def test_deflated_record_that_claims_more_than_deflate_gives():
    good = archive(tensor(storage(numel=2**29), 0, (1,), (1,)), R5,
                   compression=zipfile.ZIP_DEFLATED)
    comp = zipfile.ZipFile(io.BytesIO(good)).getinfo("archive/data/0").compress_size
    lying = _patch_sizes(good, "archive/data/0", 2**31)
    with pytest.raises(RuntimeError, match=f"more than its {comp} compressed bytes hold"):
        load(lying)


def test_truncated_archives_raise():
    data = archive(tensor(storage()), R5)
    for cut in (len(data) // 4, len(data) // 2, len(data) - 30, len(data) - 1):
        with pytest.raises((zipfile.BadZipFile, RuntimeError, EOFError)):
            load(data[:cut])


# ---------------------------------------------------------------------------------------------
# What a checkpoint needs still loads


def test_checks_pass_on_the_extremes_they_allow():
    # the last element of the storage, an expanded (stride 0) view, an empty tensor past the
    # end, a v3 tensor over an untyped storage viewed as float32
    r = load(archive([tensor(storage(), 4, (1,), (1,)), tensor(storage(), 0, (3, 5), (0, 1)),
                      tensor(storage(), 100, (0, 3), (3, 1)),
                      tensor(storage(), 0, (2, 2), (2, 1)), tensor(storage(), 1, (2, 2), (1, 2))],
                     R5))
    np.testing.assert_array_equal(np.asarray(r[0]), [4.0])
    np.testing.assert_array_equal(np.asarray(r[1]), np.tile(np.arange(5.0), (3, 1)))
    assert r[2].shape == (0, 3) and r[2].numel() == 0
    np.testing.assert_array_equal(np.asarray(r[4]), [[1, 3], [2, 4]])
    untyped = PersId(("storage", Global("torch", "UntypedStorage"), "0", "cpu", 20))
    v3 = Call(Global("torch._utils", "_rebuild_tensor_v3"), untyped, 1, (2,), (2,), False,
              ordered_dict(), Global("torch", "float32"))
    np.testing.assert_array_equal(np.asarray(load(archive(v3, R5))), [1.0, 3.0])


def test_ordered_dict_state_and_builtin_forms():
    # a state_dict's `_metadata` (BUILD on an OrderedDict), and what protocol 2 writes for bytes,
    # bytearray, set, frozenset, complex and Counter
    od = Build(ordered_dict(), {"_metadata": {"": {"version": 1}}})
    obj = {"od": od, "b": Call(Global("_codecs", "encode"), "\xff\x00", "latin1"),
           "e": Call(Global("__builtin__", "bytes")),
           "ba": Call(Global("builtins", "bytearray"), b"xy"),
           "s": Call(Global("builtins", "set"), [1, 2]),
           "fs": Call(Global("builtins", "frozenset"), [3]),
           "c": Call(Global("builtins", "complex"), 1.0, 2.0),
           "n": Call(Global("collections", "Counter"), {"a": 2})}
    r = load(archive(obj))
    assert r["od"]._metadata == {"": {"version": 1}}
    assert r["b"] == b"\xff\x00" and r["e"] == b"" and r["ba"] == bytearray(b"xy")
    assert r["s"] == {1, 2} and r["fs"] == frozenset([3]) and r["c"] == 1 + 2j
    assert r["n"]["a"] == 2


def test_deeply_nested_containers_load():
    depth = 20_000  # no recursion in the unpickler
    pkl = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    r = load(archive(pkl))
    for _ in range(depth - 1):
        r = r[0]
    assert r == []


class _Allowed:
    def __init__(self, x):
        self.x = x


def test_safe_globals_build_instances_not_classes(unchanged_ember):
    name = f"{__name__}._Allowed"
    instance = Build(NewObj(Global(__name__, "_Allowed")), {"x": 5})
    with serialization.safe_globals([_Allowed]):
        r = load(archive(instance))
        assert type(r) is _Allowed and r.x == 5
        with pytest.raises(pickle.UnpicklingError, match="Can only build"):
            load(archive(Build(Global(__name__, "_Allowed"), (None, {"__init__": None}))))
    assert "__init__" in vars(_Allowed)
    with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {name}"):
        load(archive(instance))


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_torch_checkpoints_load(torch, protocol, tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    obj = {"model": model.state_dict(), "opt": opt.state_dict(), "params": list(model.parameters()),
           "misc": {"b": b"x", "ba": bytearray(b"y"), "s": {1}, "c": 1j, "big": 2**100}}
    path = tmp_path / "t.pt"
    torch.save(obj, path, pickle_protocol=protocol)
    for mmap in (False, True):
        r = ember.load(path, mmap=mmap)
        assert list(r["model"]) == list(obj["model"])
        assert r["model"]._metadata == obj["model"]._metadata
        for k, v in obj["model"].items():
            np.testing.assert_array_equal(np.asarray(r["model"][k]), v.detach().numpy())
        exp_avg = obj["opt"]["state"][0]["exp_avg"].numpy()
        np.testing.assert_array_equal(np.asarray(r["opt"]["state"][0]["exp_avg"]), exp_avg)
        assert r["opt"]["param_groups"][0]["lr"] == obj["opt"]["param_groups"][0]["lr"]
        assert r["misc"] == obj["misc"]


def _seven_byte_float32_file() -> io.BytesIO:
    s = ember.UntypedStorage(7)  # a float32 view of 7 bytes: one whole element
    memoryview(s)[:4] = np.float32(2.5).tobytes()
    buf = io.BytesIO()
    ember.save(ember.empty(0).set_(s, 0, (1,), (1,)), buf)
    buf.seek(0)
    return buf


def test_ember_saves_whole_elements_only():
    # the record holds numel * itemsize bytes, what both loaders require
    buf = _seven_byte_float32_file()
    assert zipfile.ZipFile(buf).getinfo("archive/data/0").file_size == 4
    buf.seek(0)
    assert ember.load(buf).item() == 2.5


def test_torch_reads_a_storage_with_a_partial_element(torch):
    assert torch.load(_seven_byte_float32_file(), weights_only=True).item() == 2.5


@pytest.mark.parametrize("mmap", [False, True])
def test_bool_bytes_other_than_0_and_1_load_as_true(tmp_path, mmap):
    """A crafted file may hold any byte in a bool storage; the kernels read bools as C++ bools,
    where another byte is undefined behaviour (UBSan stopped the checkpoint fuzzer on it): the
    loader makes every nonzero byte 1, as NumPy reads such a byte as True."""
    import zipfile

    path = tmp_path / "bools.pt"
    ember.save({"b": ember.zeros(5, dtype=ember.bool), "u": ember.zeros(5, dtype=ember.uint8)},
               path)
    crafted = tmp_path / "crafted.pt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(crafted, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if "/data/" in info.filename and len(data) == 5:
                data = bytes([0, 1, 2, 140, 255])
            dst.writestr(info, data)
    loaded = ember.load(crafted, mmap=mmap)
    assert loaded["b"].tolist() == [False, True, True, True, True]
    assert loaded["b"].sum().item() == 4 and loaded["b"].logical_not().tolist() == [
        True, False, False, False, False]
    assert loaded["u"].tolist() == [0, 1, 2, 140, 255]  # other dtypes keep their bytes
