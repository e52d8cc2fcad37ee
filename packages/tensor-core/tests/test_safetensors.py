"""ember.utils.safetensors: the format written natively, byte-compatible with the safetensors
library (checked where it is installed), and its malformed-header errors."""

from __future__ import annotations

import importlib
import json
import struct
import sys

import numpy as np
import pytest

import ember
from ember.utils import safetensors as st

ALL_DTYPES = ["bool", "uint8", "int8", "int16", "float16", "bfloat16", "int32", "float32",
              "float64", "int64"]


def make(dtype: str, shape=(2, 3)) -> ember.Tensor:
    vals = (np.arange(int(np.prod(shape))) % 5 - 1).reshape(shape)
    if dtype == "bool":
        return ember.tensor(vals > 0)
    if dtype == "uint8":
        return ember.tensor(np.abs(vals).astype(np.uint8))
    return ember.tensor(vals.astype(np.float64)).to(getattr(ember, dtype))


def as_np(t):
    return np.asarray((t.float() if t.dtype == ember.bfloat16 else t).contiguous())


def all_tensors():
    d = {f"t_{dt}": make(dt) for dt in ALL_DTYPES}
    d["scalar"] = ember.tensor(2.5)
    d["empty"] = ember.empty(0, 4)
    return d


def raw(header: dict, data: bytes = b"", pad: bool = True) -> bytes:
    h = json.dumps(header).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def test_roundtrip_bytes_every_dtype():
    d = all_tensors()
    r = st.load(st.save(d, metadata={"a": "b"}))
    assert set(r) == set(d)
    for k, v in d.items():
        assert r[k].dtype == v.dtype and r[k].shape == v.shape, k
        np.testing.assert_array_equal(as_np(r[k]), as_np(v))


def test_roundtrip_file_and_safe_open(tmp_path):
    d = all_tensors()
    p = tmp_path / "m.safetensors"
    st.save_file(d, p, metadata={"format": "pt"})
    r = st.load_file(p)
    for k, v in d.items():
        np.testing.assert_array_equal(as_np(r[k]), as_np(v))
    with st.safe_open(p, framework="pt") as f:
        assert f.keys() == sorted(d)
        assert f.metadata() == {"format": "pt"}
        np.testing.assert_array_equal(as_np(f.get_tensor("t_int16")), as_np(d["t_int16"]))
        with pytest.raises(st.SafetensorError, match="does not contain tensor nope"):
            f.get_tensor("nope")
    with st.safe_open(str(p), framework="np") as f:
        np.testing.assert_array_equal(f.get_tensor("t_float32"), as_np(d["t_float32"]))
    st.save_file({}, p)
    assert st.load_file(p) == {}
    with st.safe_open(p, "pt") as f:
        assert f.metadata() is None


def test_header_layout():
    data = st.save({"b": ember.ones(3, dtype=ember.int8), "a": ember.ones(2, dtype=ember.float64),
                    "c": ember.ones(1, dtype=ember.float64)})
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0 and len(data) == 8 + n + 27
    header = json.loads(data[8:8 + n])
    # wider dtypes first, then by name; offsets from the end of the header
    assert header == {"a": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]},
                      "c": {"dtype": "F64", "shape": [1], "data_offsets": [16, 24]},
                      "b": {"dtype": "I8", "shape": [3], "data_offsets": [24, 27]}}
    assert list(header) == ["a", "c", "b"]


def test_views_that_do_not_overlap_are_saved():
    base = ember.arange(10.0)
    r = st.load(st.save({"lo": base[:5], "hi": base[5:]}))
    np.testing.assert_array_equal(as_np(r["hi"]), np.arange(5.0, 10.0))
    assert not r["lo"]._shares_storage(r["hi"])


def test_refuses_shared_and_non_contiguous():
    base = ember.arange(10.0)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        st.save({"a": base, "b": base[2:4]})
    with pytest.raises(RuntimeError, match="share memory"):
        st.save({"a": base, "b": base})
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        st.save({"t": ember.ones(2, 3).t()})
    with pytest.raises(ValueError, match="expected ember.Tensor"):
        st.save({"t": np.ones(2)})
    with pytest.raises(ValueError, match="dict"):
        st.save([ember.ones(1)])
    with pytest.raises(ValueError, match="metadata"):
        st.save({"t": ember.ones(1)}, metadata={"a": 1})


@pytest.mark.parametrize("blob, match", [
    (b"\x01\x02", "HeaderTooSmall"),
    (struct.pack("<Q", 1000) + b"{}", "InvalidHeaderLength"),
    (struct.pack("<Q", 10**9) + b"{}", "HeaderTooLarge"),
    (raw({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4),
     "MetadataIncompleteBuffer"),
    (raw({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}}, b"\0" * 16),
     "TensorInvalidInfo"),
    (raw({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
     "InvalidOffset"),
    (raw({"a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}}, b"\0" * 8),
     "InvalidOffset"),
    (raw({"a": {"dtype": "C128", "shape": [1], "data_offsets": [0, 16]}}, b"\0" * 16),
     "unsupported dtype 'C128'"),
    (raw({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
     "bad shape"),
    (raw({"a": {"shape": [1]}}), "TensorInvalidInfo"),
    (raw({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4),
     "InvalidOffset"),
    (struct.pack("<Q", 8) + b"[1, 2]  ", "InvalidHeaderStart"),
    (struct.pack("<Q", 8) + b"{not js}", "InvalidHeaderDeserialization"),
    (raw({"__metadata__": {"a": 1}}), "__metadata__"),
    # hostile shapes: counts past int64 (a wrapped product would match the empty span), JSON
    # booleans, more dimensions than the core iterates, offsets that are not integers
    (raw({"a": {"dtype": "F32", "shape": [2**62, 4], "data_offsets": [0, 0]}}),
     "ValidationOverflow"),
    (raw({"a": {"dtype": "F32", "shape": [2**32, 2**32], "data_offsets": [0, 0]}}),
     "ValidationOverflow"),
    (raw({"a": {"dtype": "U8", "shape": [2**70], "data_offsets": [0, 0]}}), "ValidationOverflow"),
    (raw({"a": {"dtype": "U8", "shape": [2**62, 2**62, 0], "data_offsets": [0, 0]}}),
     "ValidationOverflow"),
    (raw({"a": {"dtype": "U8", "shape": [2**61, 0], "data_offsets": [0, 0]}}),
     "ValidationOverflow"),  # more elements than the core makes a tensor of
    (raw({"a": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, b"\0" * 4),
     "bad shape"),
    (raw({"a": {"dtype": "U8", "shape": [1] * 65, "data_offsets": [0, 1]}}, b"\0" * 8),
     "bad shape"),
    (raw({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0.0, 4]}}, b"\0" * 4),
     "InvalidOffset"),
    (raw({"a": {"dtype": "F32", "shape": [1], "data_offsets": [False, 4]}}, b"\0" * 4),
     "InvalidOffset"),
])
def test_malformed(blob, match):
    with pytest.raises(st.SafetensorError, match=match):
        st.load(blob)


def test_malformed_file(tmp_path):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(struct.pack("<Q", 100) + b"{}")
    with pytest.raises(st.SafetensorError, match="InvalidHeaderLength"):
        st.load_file(p)
    with pytest.raises(st.SafetensorError, match="device"):
        st.load_file(p, device="cuda")


def test_utils_namespace():
    assert ember.utils.safetensors is st
    if "ember.utils.data" not in sys.modules:
        try:
            importlib.import_module("ember.utils.data")
        except ImportError:
            with pytest.raises(ImportError, match="ember-data"):
                _ = ember.utils.data
    with pytest.raises(AttributeError):
        _ = ember.utils.nothing_here


# ---------------------------------------------------------------------------------------------
# The safetensors library (where installed)


def _torch_dict(torch, d):
    return {k: torch.tensor(as_np(v)).to(getattr(torch, str(v.dtype).split(".")[-1]))
            for k, v in d.items()}


def test_bytes_identical_to_the_library(torch):
    lib = pytest.importorskip("safetensors.torch")
    d = all_tensors()
    td = _torch_dict(torch, d)
    assert st.save(d) == lib.save(td)
    assert st.save(d, metadata={"format": "pt"}) == lib.save(td, metadata={"format": "pt"})
    assert st.save({}) == lib.save({})


def test_library_reads_ember_files(torch, tmp_path):
    lib_np = pytest.importorskip("safetensors.numpy")
    lib_pt = pytest.importorskip("safetensors.torch")
    d = all_tensors()
    p = tmp_path / "e.safetensors"
    st.save_file(d, p, metadata={"k": "v"})
    r = lib_pt.load_file(str(p))
    for k, v in d.items():
        got = r[k].float().numpy() if r[k].dtype == torch.bfloat16 else r[k].numpy()
        np.testing.assert_array_equal(got, as_np(v))
    nd = {k: v for k, v in d.items() if v.dtype != ember.bfloat16}
    rn = lib_np.load(st.save(nd))
    for k, v in nd.items():
        np.testing.assert_array_equal(rn[k], as_np(v))
    safetensors = pytest.importorskip("safetensors")
    with safetensors.safe_open(str(p), framework="np") as f:
        assert f.metadata() == {"k": "v"}


def test_ember_reads_library_files(torch, tmp_path):
    lib_pt = pytest.importorskip("safetensors.torch")
    lib_np = pytest.importorskip("safetensors.numpy")
    td = _torch_dict(torch, all_tensors())
    p = tmp_path / "t.safetensors"
    lib_pt.save_file(td, str(p), metadata={"a": "b"})
    r = st.load_file(p)
    for k, v in td.items():
        ref = v.float().numpy() if v.dtype == torch.bfloat16 else v.numpy()
        np.testing.assert_array_equal(as_np(r[k]), ref)
        assert str(r[k].dtype).split(".")[-1] == str(v.dtype).split(".")[-1]
    with st.safe_open(p) as f:
        assert f.metadata() == {"a": "b"}
    arrays = {"x": np.arange(6, dtype=np.int32).reshape(2, 3), "y": np.ones(3, np.float16)}
    r = st.load(lib_np.save(arrays))
    np.testing.assert_array_equal(as_np(r["x"]), arrays["x"])
    np.testing.assert_array_equal(as_np(r["y"]), arrays["y"])


def test_load_file_views_the_mapping_copy_on_write(tmp_path):
    p = tmp_path / "w.safetensors"
    st.save_file({"a": ember.arange(6.0), "b": ember.ones(3, dtype=ember.int8)}, p)
    r = st.load_file(p)
    r["a"][0] = 42.0  # private pages: the file is untouched
    assert st.load_file(p)["a"][0].item() == 0.0
    f = st.safe_open(p)
    t = f.get_tensor("a")
    f.close()  # the tensor keeps the mapping alive
    np.testing.assert_array_equal(as_np(t), np.arange(6.0))
    del r, t


def test_another_distribution_extends_ember_utils(tmp_path):
    # Another distribution, installed from another folder (an editable install), adds a
    # sub-package to ember.utils, as ember-data does with ember.utils.data. A made-up name is
    # used, so the test holds whether or not ember-data is installed here.
    import os
    import subprocess

    pkg = tmp_path / "ember" / "utils" / "_probe_extension"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("MARK = 'the extension'\n")
    site = str(os.path.dirname(os.path.dirname(ember.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([site, str(tmp_path)]))
    code = ("import ember, ember.utils._probe_extension as p; print(p.MARK); "
            "print(ember.utils.safetensors.__name__)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["the", "extension", "ember.utils.safetensors"]
