"""Storages (UntypedStorage, untyped_storage, set_) and ember.save / ember.load (PyTorch's zip
checkpoint format), with torch interop both ways where torch is installed."""

from __future__ import annotations

import collections
import importlib
import io
import pickle
import sys
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember

ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
              "float32", "float64"]


def sample(dtype_name: str, shape=(3, 4)) -> ember.Tensor:
    n = int(np.prod(shape))
    vals = (np.arange(n) % 7 - 2).reshape(shape)
    dt = getattr(ember, dtype_name)
    if dtype_name == "bool":
        return ember.tensor(vals > 0)
    if dtype_name == "uint8":
        return ember.tensor(np.abs(vals).astype(np.uint8))
    return ember.tensor(vals.astype(np.float64)).to(dt)


def as_np(t: ember.Tensor) -> np.ndarray:
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.asarray(t.contiguous())


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kwargs)


@pytest.fixture
def grad_hook():
    """requires_grad=True also without ember-autograd (a pass-through hook stands in)."""
    saved = ember._C._get_autograd_hook()
    if saved is None:
        try:
            importlib.import_module("ember.autograd")
        except ImportError:
            ember._C._set_autograd_hook(lambda name, fn, args, kwargs: fn(*args, **kwargs))
    yield
    if saved is None and "ember.autograd" not in sys.modules:
        ember._C._set_autograd_hook(None)


# ---------------------------------------------------------------------------------------------
# Storages


def test_untyped_storage_is_a_view_of_the_bytes():
    t = ember.arange(12, dtype=ember.float32)
    s = t.untyped_storage()
    assert isinstance(s, ember.UntypedStorage)
    assert s.nbytes() == len(s) == s.size() == 48
    assert s.data_ptr() == t.data_ptr()
    assert str(s.device) == "cpu"
    assert s == t[3:].untyped_storage() and hash(s) == hash(t.view(3, 4).untyped_storage())
    assert s != ember.arange(12, dtype=ember.float32).untyped_storage()
    m = memoryview(s)
    assert m.format == "B" and m.nbytes == 48 and not m.readonly
    m[0:4] = np.float32(7).tobytes()
    assert t[0].item() == 7.0  # writes through, no copy
    assert bytes(s)[4:8] == np.float32(1).tobytes()


def test_untyped_storage_new_and_bytes_access():
    s = ember.UntypedStorage(8)
    memoryview(s)[:] = bytes(range(8))
    assert s.tolist() == list(range(8)) and s[-1] == 7 and s[2] == 2
    s[0] = 255
    assert s[0] == 255
    with pytest.raises(IndexError):
        s[8]
    with pytest.raises(ValueError):
        s[0] = 256
    c = s.clone()
    assert c != s and c.tolist() == s.tolist()
    s.fill_(1)
    assert s.tolist() == [1] * 8
    s.copy_(c)
    assert s.tolist() == c.tolist()
    assert len(ember.UntypedStorage(0)) == 0 and bytes(ember.UntypedStorage(0)) == b""
    assert "nbytes=8" in repr(s)
    with pytest.raises(RuntimeError):
        ember.UntypedStorage(-1)


def test_uint8_view_of_storage_and_borrowed_buffer():
    t = ember.tensor([1.0, 2.0], dtype=ember.float32)
    u = ember.empty(0, dtype=ember.uint8).set_(t.untyped_storage())
    assert u.shape == (8,) and u._shares_storage(t)
    assert bytes(np.asarray(u)) == np.array([1, 2], np.float32).tobytes()
    buf = bytearray(16)
    s = ember.UntypedStorage._from_buffer(buf)
    x = ember.empty(0, dtype=ember.int32).set_(s)
    x.fill_(3)
    assert np.frombuffer(buf, np.int32).tolist() == [3, 3, 3, 3]
    with pytest.raises(ValueError, match="writable"):
        ember.UntypedStorage._from_buffer(b"read-only bytes")


def test_set_views_a_storage():
    t = ember.arange(12, dtype=ember.float32)
    u = ember.empty(0).set_(t.untyped_storage(), 2, (2, 3), (3, 1))
    assert u.storage_offset() == 2 and u.stride() == (3, 1)
    np.testing.assert_array_equal(as_np(u), np.arange(2, 8).reshape(2, 3))
    v = ember.empty(0).set_(t.untyped_storage(), 1, (3, 2), (1, 3))  # non-contiguous
    np.testing.assert_array_equal(as_np(v), 1 + np.arange(3)[:, None] + 3 * np.arange(2))
    w = ember.empty(0).set_(t)
    assert w.is_set_to(t) and w.shape == (12,)
    e = ember.ones(3).set_()
    assert e.shape == (0,)
    before = t._version
    t.set_(t.untyped_storage(), 0, (12,), (1,))
    assert t._version > before


def test_set_bounds_and_errors():
    s = ember.arange(12, dtype=ember.float32).untyped_storage()
    with pytest.raises(RuntimeError, match=r"setStorage: sizes \[4, 3\], strides \[3, 1\], storage "
                       r"offset 2, and itemsize 4 requiring a storage size of 56 are out of "
                       r"bounds for storage of size 48"):
        ember.empty(0).set_(s, 2, (4, 3), (3, 1))
    with pytest.raises(RuntimeError, match="storage offset"):
        ember.empty(0).set_(s, -1, (1,), (1,))
    with pytest.raises(RuntimeError, match="Negative strides"):
        ember.empty(0).set_(s, 5, (2,), (-1,))
    with pytest.raises(RuntimeError, match="mismatch"):
        ember.empty(0).set_(s, 0, (2,), (1, 1))
    with pytest.raises(TypeError):
        ember.empty(0).set_([1, 2])
    with pytest.raises(RuntimeError, match="Could not set tensor"):
        ember.empty(0, dtype=ember.int64).set_(ember.ones(2))
    # an empty view needs no bytes, even past the end
    assert ember.empty(0).set_(s, 100, (0, 3), (3, 1)).numel() == 0
    # float64 view of 48 bytes: 6 elements
    assert ember.empty(0, dtype=ember.float64).set_(s).shape == (6,)


# ---------------------------------------------------------------------------------------------
# save / load


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_roundtrip_every_dtype(dtype):
    t = sample(dtype)
    r = roundtrip(t)
    assert r.dtype == t.dtype and r.shape == t.shape
    np.testing.assert_array_equal(as_np(r), as_np(t))


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (5,), (2, 3, 4)])
def test_roundtrip_shapes(shape):
    t = ember.tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    r = roundtrip(t)
    assert r.shape == t.shape
    np.testing.assert_array_equal(as_np(r), as_np(t))


def test_views_stay_views():
    base = ember.arange(24, dtype=ember.float64).view(4, 6)
    obj = {"base": base, "t": base.t(), "row": base[2], "cols": base[:, 1:5:2],
           "other": ember.ones(2)}
    r = roundtrip(obj)
    for k in ("t", "row", "cols"):
        assert r[k]._shares_storage(r["base"]), k
        assert r[k].stride() == obj[k].stride() and r[k].storage_offset() == obj[k].storage_offset()
        np.testing.assert_array_equal(as_np(r[k]), as_np(obj[k]))
    assert not r["other"]._shares_storage(r["base"])
    r["base"][2, 1] = -1.0
    assert r["row"][1].item() == -1.0  # one storage on load too
    # a view alone saves its whole storage, as torch does
    v = roundtrip(base[1:2, 2:4])
    assert v.untyped_storage().nbytes() == 24 * 8 and v.storage_offset() == 8


def test_same_tensor_twice_is_one_object():
    t = ember.ones(3)
    r = roundtrip([t, t])
    assert r[0] is r[1]


def test_non_contiguous_and_expanded():
    t = ember.arange(6.0).view(2, 3).t()
    r = roundtrip(t)
    assert not r.is_contiguous() and r.stride() == (1, 3)
    e = ember.arange(3.0).expand(4, 3)
    re = roundtrip(e)
    assert re.stride() == (0, 1)
    np.testing.assert_array_equal(as_np(re), as_np(e))


Point = collections.namedtuple("Point", "x y")


def test_nested_containers_and_primitives():
    obj = collections.OrderedDict(
        a=[ember.ones(2), (ember.zeros(1, dtype=ember.int64), {"z": ember.tensor(True)})],
        n=3, f=2.5, s="text", none=None, flag=True, big=2**40,
        dt=ember.float16, shape=ember.Size([2, 3]), dev=ember.device("cpu"),
    )
    r = roundtrip(obj)
    assert isinstance(r, collections.OrderedDict) and list(r) == list(obj)
    assert r["n"] == 3 and r["f"] == 2.5 and r["s"] == "text" and r["none"] is None
    assert r["flag"] is True and r["big"] == 2**40
    assert r["dt"] is ember.float16 and r["shape"] == (2, 3) and isinstance(r["shape"], ember.Size)
    assert str(r["dev"]) == "cpu"
    assert isinstance(r["a"][1], tuple) and r["a"][1][1]["z"].item() is True
    # namedtuples are arbitrary classes: only a full (trusted) load rebuilds them
    p = roundtrip({"p": Point(ember.ones(1), 2)}, weights_only=False)["p"]
    assert isinstance(p, Point) and p.y == 2


def test_paths_and_file_objects(tmp_path):
    t = ember.arange(5.0)
    p = tmp_path / "ckpt.pt"
    ember.save(t, p)  # PathLike
    np.testing.assert_array_equal(as_np(ember.load(p)), np.arange(5.0))
    ember.save({"t": t}, str(p))  # str
    with open(p, "rb") as fh:  # binary file object
        np.testing.assert_array_equal(as_np(ember.load(fh)["t"]), np.arange(5.0))
    with open(p, "wb") as fh:
        ember.save([t], fh)
    assert zipfile.is_zipfile(p)


def test_file_layout_and_alignment():
    buf = io.BytesIO()
    ember.save({"a": ember.ones(3), "b": ember.zeros(5, dtype=ember.int16)}, buf)
    zf = zipfile.ZipFile(buf)
    names = zf.namelist()
    assert names[0] == "archive/data.pkl"
    assert {"archive/version", "archive/byteorder", "archive/data/0", "archive/data/1"} <= set(names)
    for info in zf.infolist():
        assert info.compress_type == zipfile.ZIP_STORED
        if info.filename.startswith("archive/data/"):
            raw = buf.getbuffer()[info.header_offset:info.header_offset + 30]
            name_len, extra_len = np.frombuffer(bytes(raw[26:30]), "<u2")
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0


def test_mmap_load(tmp_path):
    p = tmp_path / "m.pt"
    src = {"w": ember.arange(100, dtype=ember.float32).view(10, 10), "i": ember.arange(3)}
    ember.save(src, p)
    r = ember.load(p, mmap=True)
    np.testing.assert_array_equal(as_np(r["w"]), np.arange(100).reshape(10, 10))
    r["w"][0, 0] = 5.0  # copy-on-write: the file is untouched
    assert ember.load(p)["w"][0, 0].item() == 0.0
    with pytest.raises(ValueError, match="file path"):
        ember.load(io.BytesIO(), mmap=True)


def test_requires_grad_preserved(grad_hook):
    t = ember.ones(2).requires_grad_(True)
    r = roundtrip({"p": t, "q": ember.ones(1)})
    assert r["p"].requires_grad and not r["q"].requires_grad


def test_requires_grad_without_autograd_loads(grad_hook):
    # A file whose tensor requires grad loads (flag off) when no autograd package can be imported.
    buf = _saved(ember.ones(2).requires_grad_(True))
    if "ember.autograd" in sys.modules:
        assert ember.load(buf).requires_grad
        return
    saved = ember._C._get_autograd_hook()
    ember._C._set_autograd_hook(None)
    try:
        r = ember.load(buf)
    finally:
        ember._C._set_autograd_hook(saved)
    assert not r.requires_grad
    np.testing.assert_array_equal(as_np(r), [1.0, 1.0])


CALLS: list = []


def _record(arg):
    CALLS.append(arg)
    return arg


class _Evil:
    def __reduce__(self):
        return (_record, ("called",))


def _archive(pkl: bytes) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/version", "3\n")
    buf.seek(0)
    return buf


def test_weights_only_refuses_os_system():
    evil = _archive(b"cos\nsystem\n(S'echo pwned'\ntR.")
    with pytest.raises(pickle.UnpicklingError,
                       match=r"(?s)Weights only load failed.*weights_only.*GLOBAL os\.system "
                             r"whose module os is blocked"):  # torch's words
        ember.load(evil)
    evil = _archive(b"cbuiltins\neval\n(S'1'\ntR.")
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL builtins.eval"):
        ember.load(evil, weights_only=True)


def test_weights_only_false_loads_any_pickle():
    buf = _saved({"x": ember.ones(1), "evil": _Evil()})
    CALLS.clear()
    with pytest.raises(pickle.UnpicklingError, match="test_serialization._record"):
        ember.load(buf)
    assert CALLS == []
    buf.seek(0)
    r = ember.load(buf, weights_only=False)
    assert CALLS == ["called"] and r["evil"] == "called"


def test_load_errors(tmp_path):
    with pytest.raises(RuntimeError, match="zip"):
        ember.load(io.BytesIO(pickle.dumps({"a": 1})))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/version", "3")
    buf.seek(0)
    with pytest.raises(RuntimeError, match="data.pkl"):
        ember.load(buf)
    with pytest.raises(AttributeError):
        ember.save(ember.ones(1), 12)
    with pytest.raises(RuntimeError, match="different types"):
        t = ember.ones(2)
        ember.save([t, t.view(ember.int32)], io.BytesIO())
    with pytest.raises(RuntimeError, match="map_location"):
        ember.load(_saved(ember.ones(1)), map_location="cuda")


def _saved(obj) -> io.BytesIO:
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return buf


def test_map_location_forms():
    for loc in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s):
        r = ember.load(_saved({"a": ember.ones(2)}), map_location=loc)
        np.testing.assert_array_equal(as_np(r["a"]), [1, 1])


# ---------------------------------------------------------------------------------------------
# torch interop


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_torch_loads_ember_files(torch, dtype):
    t = sample(dtype)
    base = ember.arange(12, dtype=ember.float32).view(3, 4)
    buf = _saved({"t": t, "base": base, "view": base.t()[1:], "dt": ember.float16,
                  "size": ember.Size([1, 2])})
    r = torch.load(buf, weights_only=True)
    ref = as_np(t)
    got = r["t"].float().numpy() if dtype == "bfloat16" else r["t"].numpy()
    assert str(r["t"].dtype) == f"torch.{dtype}"
    np.testing.assert_array_equal(got, ref)
    assert r["view"].untyped_storage().data_ptr() == r["base"].untyped_storage().data_ptr()
    assert r["view"].stride() == (1, 4) and r["view"].storage_offset() == 1
    assert r["dt"] is torch.float16 and r["size"] == torch.Size([1, 2])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_ember_loads_torch_files(torch, dtype):
    tdt = getattr(torch, dtype)
    base = torch.arange(24).view(4, 6).to(tdt)
    obj = {"base": base, "t": base.t(), "slice": base[1:, ::2], "n": 3,
           "od": collections.OrderedDict(w=torch.ones(2, dtype=tdt)), "dtype": tdt}
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    r = ember.load(buf)
    assert r["n"] == 3 and r["dtype"] is getattr(ember, dtype)
    assert r["t"]._shares_storage(r["base"]) and r["slice"]._shares_storage(r["base"])
    for k in ("base", "t", "slice"):
        ref = obj[k].float().numpy() if dtype == "bfloat16" else obj[k].numpy()
        assert r[k].stride() == obj[k].stride()
        np.testing.assert_array_equal(as_np(r[k]), ref)
    assert isinstance(r["od"], collections.OrderedDict)


def test_torch_state_dict_and_parameters(torch):
    model = torch.nn.Linear(3, 2)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    sd = ember.load(buf)
    assert list(sd) == ["weight", "bias"]
    np.testing.assert_allclose(as_np(sd["weight"]), model.weight.detach().numpy())
    buf = io.BytesIO()
    torch.save({"p": model.weight}, buf)  # an nn.Parameter: _rebuild_parameter
    buf.seek(0)
    p = ember.load(buf, weights_only=True)["p"]
    np.testing.assert_allclose(as_np(p.detach()), model.weight.detach().numpy())


def test_torch_file_on_disk_with_mmap(torch, tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"x": torch.arange(1000, dtype=torch.float64)}, path)
    r = ember.load(path, mmap=True)
    np.testing.assert_array_equal(as_np(r["x"]), np.arange(1000.0))


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_same_dtype_twice(protocol):
    # the pure-Python pickler (protocols 4, 5) memoized the dtype's stand-in twice
    buf = io.BytesIO()
    ember.save({"a": ember.float16, "b": ember.float16, "t": ember.ones(1, dtype=ember.float16)},
               buf, pickle_protocol=protocol)
    buf.seek(0)
    r = ember.load(buf)
    assert r["a"] is r["b"] is ember.float16 and r["t"].dtype == ember.float16


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_pickle_protocols(protocol, torch):
    buf = io.BytesIO()
    ember.save({"a": ember.arange(4.0), "s": "x"}, buf, pickle_protocol=protocol)
    buf.seek(0)
    np.testing.assert_array_equal(as_np(ember.load(buf)["a"]), np.arange(4.0))
    buf.seek(0)
    # torch's own weights_only unpickler reads protocol 2 only (it refuses its own protocol-4 files)
    got = torch.load(buf, weights_only=protocol == 2)["a"]
    np.testing.assert_array_equal(got.numpy(), np.arange(4.0))


def test_user_data_that_looks_like_a_placeholder_global(torch):
    # The fast path renames ember's globals to torch's in the pickle bytes; a user string with
    # the same bytes must survive (the pure-Python pickler takes over).
    s = "cember.serialization\n_rebuild_tensor_v2\n"
    buf = _saved({"s": s, "t": ember.ones(2), "b": s.encode()})
    r = ember.load(buf)
    assert r["s"] == s and r["b"] == s.encode()
    np.testing.assert_array_equal(as_np(r["t"]), [1, 1])
    buf.seek(0)
    assert torch.load(buf, weights_only=False)["s"] == s


def test_globals_are_torchs(tmp_path):
    buf = _saved({"t": ember.ones(2, dtype=ember.float16), "d": ember.int8, "s": ember.Size([1]),
                  "dev": ember.device("cpu")})
    pkl = zipfile.ZipFile(buf).read("archive/data.pkl")
    assert b"ember" not in pkl
    for line in (b"ctorch._utils\n_rebuild_tensor_v2\n", b"ctorch\nHalfStorage\n",
                 b"ctorch\nint8\n", b"ctorch\nSize\n", b"ctorch\ndevice\n",
                 b"ccollections\nOrderedDict\n"):
        assert pkl.count(line) == 1, line


def test_torch_files_with_unsupported_dtypes_and_attributes(torch):
    buf = io.BytesIO()
    torch.save({"c": torch.ones(2, dtype=torch.complex32)}, buf)  # ember has no complex32
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="complex32"):
        ember.load(buf)
    # complex tensors load (and save for torch) as torch's ComplexFloat/DoubleStorage
    z = torch.tensor([1 + 2j, -3j], dtype=torch.complex128)
    buf = io.BytesIO()
    torch.save({"z": z, "w": z.to(torch.complex64)[1:]}, buf)
    buf.seek(0)
    got = ember.load(buf)
    assert got["z"].dtype is ember.complex128 and got["w"].dtype is ember.complex64
    assert got["z"].tolist() == z.tolist() and got["w"].tolist() == [-3j]
    buf = io.BytesIO()
    ember.save({"z": got["z"]}, buf)
    buf.seek(0)
    assert torch.load(buf)["z"].tolist() == z.tolist()
    t = torch.arange(3.0)
    t.note = "attribute"  # torch pickles this through _rebuild_from_type_v2
    buf = io.BytesIO()
    torch.save({"t": t}, buf)
    buf.seek(0)
    np.testing.assert_array_equal(as_np(ember.load(buf, weights_only=False)["t"]), [0, 1, 2])


def test_set_on_a_tensor_that_requires_grad(grad_hook):
    w = ember.ones(2).requires_grad_(True)
    s = ember.zeros(2).untyped_storage()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.set_(s, 0, (2,), (1,))
    with ember.no_grad():
        w.set_(s, 0, (2,), (1,))
    assert w.requires_grad and w.untyped_storage() == s


def test_safe_globals_allow_a_class():
    from ember import serialization

    buf = _saved({"p": Point(ember.ones(1), 2)})
    with pytest.raises(pickle.UnpicklingError, match="add_safe_globals"):
        ember.load(buf)
    buf.seek(0)
    with serialization.safe_globals([Point]):
        assert Point in serialization.get_safe_globals()
        p = ember.load(buf)["p"]
    assert isinstance(p, Point) and p.y == 2
    assert Point not in serialization.get_safe_globals()
    serialization.add_safe_globals([(Point, "test_serialization.Point")])
    try:
        buf.seek(0)
        assert ember.load(buf)["p"].y == 2
    finally:
        serialization.clear_safe_globals()
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        ember.load(buf)


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_storages_saved_by_themselves(torch):
    t = ember.arange(4, dtype=ember.int32)
    s = t.untyped_storage()
    r = roundtrip({"s": s, "u8": ember.empty(0, dtype=ember.uint8).set_(s)})
    assert isinstance(r["s"], ember.UntypedStorage) and bytes(r["s"]) == bytes(s)
    assert r["u8"].untyped_storage() == r["s"]  # one storage in the file, one after loading
    with pytest.raises(RuntimeError, match="different types"):
        ember.save([t, s], io.BytesIO())
    got = torch.load(_saved(s), weights_only=False)  # torch allowlists no UntypedStorage
    assert bytes(got.tolist()) == bytes(s)  # torch itself loads it as a uint8 TypedStorage
    buf = io.BytesIO()
    torch.save(torch.arange(3, dtype=torch.int16).untyped_storage(), buf)
    buf.seek(0)
    back = ember.load(buf)
    assert isinstance(back, ember.UntypedStorage)
    assert np.frombuffer(bytes(back), np.int16).tolist() == [0, 1, 2]


@st.composite
def _views(draw):
    """A tensor of random shape and dtype, and a random (transposed, sliced, strided) view."""
    shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple))
    base = sample(draw(st.sampled_from(ALL_DTYPES)), shape)
    t = base
    if t.ndim >= 2 and draw(st.booleans()):
        t = t.transpose(0, t.ndim - 1)
    for d in range(t.ndim):
        start = draw(st.integers(0, t.shape[d]))
        t = t.narrow(d, start, t.shape[d] - start)
        step = draw(st.integers(1, 3))
        t = t[(slice(None),) * d + (slice(None, None, step),)]
    return base, t


@settings(max_examples=60, deadline=None)
@given(_views())
def test_random_views_roundtrip(pair):
    base, view = pair
    r = roundtrip({"base": base, "view": view})
    assert r["view"].shape == view.shape and r["view"].stride() == view.stride()
    assert r["view"].storage_offset() == view.storage_offset()
    assert r["view"]._shares_storage(r["base"])
    np.testing.assert_array_equal(as_np(r["view"]), as_np(view))


def test_torch_environment_variables_override_weights_only(monkeypatch):
    # torch.load's rules: TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD only changes calls that do not pass
    # weights_only (with a warning); TORCH_FORCE_WEIGHTS_ONLY_LOAD wins over an explicit False
    buf = io.BytesIO()
    ember.save(np.arange(3.0), buf)  # numpy's globals: refused by the safe loader

    def load(**kwargs):
        buf.seek(0)
        return ember.load(buf, **kwargs)

    with pytest.raises(pickle.UnpicklingError):
        load()
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected") as record:
        assert load().tolist() == [0.0, 1.0, 2.0]
    assert record[0].filename == __file__  # the warning names the caller's line
    buf.seek(0)
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected") as record:
        assert ember.serialization.load(buf).tolist() == [0.0, 1.0, 2.0]
    assert record[0].filename == __file__
    with pytest.raises(pickle.UnpicklingError):
        load(weights_only=True)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "true")
    with pytest.raises(RuntimeError, match="Only one of"):
        load()
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    with pytest.raises(pickle.UnpicklingError):
        load(weights_only=False)
