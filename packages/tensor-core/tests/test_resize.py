"""Tensor.resize_ / resize_as_ (PyTorch's semantics): contiguous strides for a new shape, the
storage kept when large enough and grown in place otherwise (old bytes kept, views follow), the
version bumped only when the shape changes, and refusals: storages ember's allocator did not
make, bytes another library still points into, tensors that require grad, bad sizes."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import ember


def test_shrink_keeps_the_storage_and_the_leading_values():
    x = ember.arange(12.0)
    nbytes, ptr = x._storage_nbytes(), x.data_ptr()
    assert x.resize_(2, 3) is x
    assert tuple(x.shape) == (2, 3) and x.stride() == (3, 1)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert x._storage_nbytes() == nbytes and x.data_ptr() == ptr


def test_grow_keeps_the_values_and_views_follow():
    x = ember.arange(4.0)
    v = x[:2]
    handle = x.untyped_storage()
    v.resize_(10)
    assert tuple(v.shape) == (10,) and v.stride() == (1,)
    assert v._storage_nbytes() == 40 and handle.nbytes() == 40  # the same StorageImpl grew
    assert v[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and x._shares_storage(v)
    v[3] = 7.0  # x reads the new bytes too
    assert x[3].item() == 7.0


def test_grow_counts_the_storage_offset():
    w = ember.arange(8.0)[2:]
    w.resize_(7)
    assert w.storage_offset() == 2 and w._storage_nbytes() == (2 + 7) * 4
    assert w[:6].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]


def test_same_shape_keeps_strides_unless_a_memory_format_is_given():
    x = ember.arange(6.0).reshape(2, 3).t()
    x.resize_(3, 2)
    assert x.stride() == (1, 3) and x._version == 0
    x.resize_(3, 2, memory_format="contiguous")
    assert x.stride() == (2, 1)
    e = ember.arange(3.0).expand(2, 3)
    e.resize_(2, 3)
    assert e.stride() == (0, 1)
    e.resize_(3, 2)
    assert e.stride() == (2, 1) and e._storage_nbytes() == 24


def test_version_moves_with_the_shape_only():
    q = ember.zeros(6)
    versions = []
    for shape in [(6,), (2, 3), (2, 3), (3,), (10,), (10,)]:
        q.resize_(*shape)
        versions.append(q._version)
    assert versions == [0, 1, 1, 2, 3, 3]
    base = ember.zeros(6)
    view = base[:3]
    view.resize_(2)
    assert base._version == view._version == 1


@pytest.mark.parametrize("args,shape", [(((2, 2),), (2, 2)), (([2, 2],), (2, 2)),
                                        ((ember.Size([4]),), (4,)), (((),), ()), (([],), ()),
                                        ((0,), (0,)), ((2, 0, 3), (2, 0, 3)),
                                        ((np.int64(3),), (3,))])
def test_size_arguments(args, shape):
    y = ember.arange(4.0)
    y.resize_(*args)
    assert tuple(y.shape) == shape and y.numel() == int(np.prod(shape))


def test_bad_arguments():
    y = ember.arange(4.0)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        y.resize_(-1)
    with pytest.raises(TypeError):
        y.resize_(2.0)
    with pytest.raises(TypeError, match="missing 1 required positional"):
        y.resize_()
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        y.resize_(2, foo=1)
    assert tuple(y.shape) == (4,) and y._version == 0


def test_storages_not_made_by_ember_cannot_grow():
    a = np.arange(4.0)
    n = ember.from_numpy(a)
    assert not n.untyped_storage().resizable()
    assert ember.empty(3).untyped_storage().resizable()
    n.resize_(2)  # shrinking needs no new bytes
    assert n.tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        n.resize_(10)
    assert tuple(n.shape) == (2,)
    s = ember.zeros(3)
    s.share_memory_()
    with pytest.raises(RuntimeError, match="not resizable"):
        s.resize_(100)


@pytest.mark.parametrize("export", ["numpy", "memoryview", "storage-memoryview", "dlpack"])
def test_bytes_held_by_another_library_stay_in_place(export):
    """An ndarray, memoryview or DLPack capsule over the bytes pins them: growing would leave it
    over freed memory. Once it is gone, the storage may grow again."""
    x = ember.arange(4.0)
    holder = {"numpy": lambda: x.numpy(), "memoryview": lambda: memoryview(x),
              "storage-memoryview": lambda: memoryview(x.untyped_storage()),
              "dlpack": lambda: x.__dlpack__()}[export]()
    x.resize_(3)  # no new bytes: allowed
    with pytest.raises(RuntimeError, match="exported"):
        x.resize_(1000)
    assert tuple(x.shape) == (3,)
    if export in ("memoryview", "storage-memoryview"):
        holder.release()
    del holder
    gc.collect()
    x.resize_(1000)
    assert x[:3].tolist() == [0.0, 1.0, 2.0]


def test_dlpack_consumer_pins_until_it_lets_go():
    x = ember.arange(4.0)
    y = np.from_dlpack(x)
    with pytest.raises(RuntimeError, match="exported"):
        x.resize_(100)
    del y
    gc.collect()
    x.resize_(100)


def test_printing_does_not_pin():
    x = ember.arange(4.0)
    repr(x)
    str(x[1:])
    x.resize_(1000)
    assert x[:4].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_requires_grad_is_refused():
    pytest.importorskip("ember.autograd")
    g = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        g.resize_(2)
    with ember.no_grad(), pytest.raises(RuntimeError, match="require grad"):
        g.resize_(2)
    assert tuple(g.detach().resize_(2).shape) == (2,)


def test_resize_as():
    z = ember.arange(10.0)
    assert z.resize_as_(ember.empty(2, 3, dtype=ember.int64)) is z
    assert tuple(z.shape) == (2, 3) and z.dtype == ember.float32
    assert ember.resize_as_(z, ember.empty(5)) is z and tuple(z.shape) == (5,)
    t = ember.arange(6.0).reshape(2, 3).t()
    t.resize_as_(ember.empty(3, 2))
    assert t.stride() == (1, 3)  # the same shape: strides kept


def test_out_resize_grows_in_place():
    """out= of matrix products, cat and random ops resizes through resize_ (the storage grows
    in place, as PyTorch's); an empty elementwise out= gets a fresh storage of the result's size
    (which cannot alias an input)."""
    o = ember.empty(1)
    handle = o.untyped_storage()
    assert tuple(ember.mm(ember.ones(2, 3), ember.ones(3, 2), out=o).shape) == (2, 2)
    assert handle.nbytes() == 16 and o.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    c = ember.empty(0)
    handle = c.untyped_storage()
    ember.cat([ember.ones(2), ember.zeros(3)], out=c)
    assert handle.nbytes() == 20 and c.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    out = ember.empty(0)
    ember.exp(ember.zeros(5), out=out)
    assert out.tolist() == [1.0] * 5


def test_out_grown_over_an_input_is_refused():
    x = ember.arange(6.0)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        ember.cat([x[3:], x[:3]], out=x[:0])
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_matches_torch():
    torch = pytest.importorskip("torch")
    steps = [("resize_", (2, 3)), ("resize_", (4,)), ("resize_", (5, 5)), ("t", ()),
             ("resize_", (5, 5)), ("resize_", (3, 2)), ("resize_", (0,)), ("resize_", (7,))]
    e, t = ember.arange(6.0), torch.arange(6.0)
    for name, args in steps:
        e, t = getattr(e, name)(*args), getattr(t, name)(*args)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride(), name
        assert e._version == t._version, (name, args)
        assert e._storage_nbytes() == t.untyped_storage().nbytes()
        if e.is_contiguous():  # the bytes written so far (the rest is uninitialised)
            n = min(e.numel(), 6)
            assert e.reshape(-1)[:n].tolist() == t.reshape(-1)[:n].tolist()
