import collections

import numpy as np
import pytest

import ember
from ember.utils.data import default_collate, default_convert
from ember.utils.data._collate import _stack_fallback, collate, default_collate_fn_map

Point = collections.namedtuple("Point", "x y")


def test_tensors_stack():
    b = default_collate([ember.ones(2, 3) * i for i in range(4)])
    assert b.shape == (4, 2, 3)
    np.testing.assert_array_equal(b.numpy()[:, 0, 0], [0, 1, 2, 3])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([ember.ones(2), ember.ones(3)])


def test_stack_fallback_noncontiguous():
    src = [ember.arange(6).reshape(2, 3).t() for _ in range(2)]
    out = _stack_fallback(src, ember.empty((2, 3, 2), dtype=ember.int64))
    np.testing.assert_array_equal(out.numpy(), np.stack([np.arange(6).reshape(2, 3).T] * 2))


def test_numpy_arrays_and_scalars():
    b = default_collate([np.full((2,), i, np.float32) for i in range(3)])
    assert isinstance(b, ember.Tensor) and b.dtype == ember.float32 and b.shape == (3, 2)
    s = default_collate([np.float32(1), np.float32(2)])
    assert s.dtype == ember.float32 and s.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([np.zeros(2), np.zeros(3)])
    zero_d = default_collate([np.array(1.5), np.array(2.5)])
    assert zero_d.shape == (2,) and zero_d.dtype == ember.float64


def test_numbers_and_strings():
    f = default_collate([1.0, 2.5])
    assert f.dtype == ember.float64 and f.tolist() == [1.0, 2.5]
    i = default_collate([1, 2])
    assert i.dtype == ember.int64 and i.tolist() == [1, 2]
    assert default_collate([True, False]).dtype == ember.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]


def test_containers():
    d = default_collate([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}])
    assert d["a"].tolist() == [1, 2] and d["b"] == ["x", "y"]
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3] and p.y.dtype == ember.float64
    t = default_collate([(1, "a"), (2, "b")])
    assert isinstance(t, list) and t[0].tolist() == [1, 2] and list(t[1]) == ["a", "b"]
    lst = default_collate([[1, 2], [3, 4]])
    assert [x.tolist() for x in lst] == [[1, 3], [2, 4]]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])


def test_collate_fn_map_extension():
    class Box:
        pass

    fn_map = {**default_collate_fn_map, Box: lambda batch, *, collate_fn_map: len(batch)}
    assert collate([Box(), Box()], collate_fn_map=fn_map) == 2


def test_default_convert():
    a = default_convert(np.arange(3))
    assert isinstance(a, ember.Tensor) and a.tolist() == [0, 1, 2]
    assert isinstance(default_convert(np.float64(2)), ember.Tensor)
    d = default_convert({"x": np.ones(2), "s": "str"})
    assert isinstance(d["x"], ember.Tensor) and d["s"] == "str"
    p = default_convert(Point(np.ones(1), 3))
    assert isinstance(p, Point) and isinstance(p.x, ember.Tensor) and p.y == 3
    assert isinstance(default_convert((np.ones(1), 2)), list)
    assert default_convert("abc") == "abc"
    s = np.array(["a"])
    assert default_convert(s) is s
    t = ember.ones(2)
    assert default_convert(t) is t


def test_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as tcollate

    batch = [{"img": np.full((2, 2), i, np.float32), "label": i, "w": 0.5 * i, "n": "s"}
             for i in range(3)]
    ours, theirs = default_collate(batch), tcollate(batch)
    for k in ("img", "label", "w"):
        np.testing.assert_array_equal(ours[k].numpy(), theirs[k].numpy())
        assert str(ours[k].dtype).split(".")[-1] == str(theirs[k].dtype).split(".")[-1]
    assert ours["n"] == theirs["n"]
    assert torch is not None


def test_mixed_dtypes_promote():
    b = default_collate([ember.ones(2, dtype=ember.float32), ember.ones(2, dtype=ember.float64)])
    assert b.dtype == ember.float64 and b.shape == (2, 2)
    b = default_collate([np.ones(2, np.int32), np.ones(2, np.float32)])
    assert b.dtype == ember.float32


def test_bfloat16_and_empty():
    b = default_collate([ember.ones(3, dtype=ember.bfloat16)] * 2)
    assert b.dtype == ember.bfloat16 and b.shape == (2, 3)
    e = default_collate([ember.empty((0, 2))] * 3)
    assert e.shape == (3, 0, 2)
