"""View ops, basic indexing (get and set), as_strided, contiguous/clone/detach, dtype
conversions, item/tolist and the version counter that views share.

NumPy is the reference for values and for strides (NumPy's byte strides divided by the item
size are PyTorch's element strides for the same view).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing.opdb import ALL_DTYPES, FLOAT_DTYPES, NP_DTYPE, edtype, is_float, to_numpy


def arange(shape, dtype="float32"):
    n = int(np.prod(shape))
    arr = np.arange(n, dtype=np.float64).reshape(shape)
    return ember.tensor(arr.tolist(), dtype=edtype(dtype)).reshape(shape), arr


def np_strides(a: np.ndarray) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


def check_view(view: ember.Tensor, base: ember.Tensor, expected: np.ndarray, strides=None):
    """`view` holds `expected`, shares `base`'s storage and version counter, and (when given)
    has these element strides."""
    assert tuple(view.shape) == expected.shape
    np.testing.assert_array_equal(to_numpy(view), expected)
    assert view._shares_storage(base)
    if strides is not None:
        assert view.stride() == tuple(strides), (view.stride(), strides)
    v = base._version
    view._bump_version()
    assert base._version == v + 1, "a view shares its base's version counter"


class _Index:
    def __getitem__(self, idx):
        return idx


IX = _Index()


# ---------------------------------------------------------------------------------------------
# view / reshape


@pytest.mark.parametrize("shape,new", [
    ((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((2, 3, 4), (4, -1)), ((2, 3, 4), (2, 3, 2, 2)),
    ((6,), (1, 6, 1)), ((1,), ()), ((), (1, 1)), ((0, 3), (3, 0)), ((0, 3), (-1, 3)),
])  # fmt: skip
def test_view_and_reshape(shape, new):
    t, a = arange(shape)
    exp = a.reshape(new)
    check_view(t.view(new), t, exp, np_strides(exp) if exp.size else None)
    check_view(t.view(*new) if new else t.view(()), t, exp)
    check_view(t.reshape(new), t, exp)
    check_view(ember.reshape(t, new), t, exp)


def test_view_of_non_contiguous_tensors():
    t, a = arange((2, 3, 4))
    p = t.permute(1, 0, 2)  # (3, 2, 4): the last dim is still contiguous
    check_view(p.view(3, 2, 2, 2), t, a.transpose(1, 0, 2).reshape(3, 2, 2, 2))
    s = t[:, :, ::2]  # every other element: splitting a strided dim works
    check_view(s.view(2, 3, 2, 1), t, a[:, :, ::2].reshape(2, 3, 2, 1))
    with pytest.raises(RuntimeError, match=r"Use \.reshape\(\.\.\.\) instead"):
        t.transpose(0, 2).view(-1)


def test_reshape_copies_only_when_it_must():
    t, a = arange((2, 3, 4))
    tt = t.transpose(0, 2)
    r = tt.reshape(-1)
    np.testing.assert_array_equal(to_numpy(r), a.transpose(2, 1, 0).reshape(-1))
    assert not r._shares_storage(t) and r.is_contiguous()
    r2 = tt.reshape(4, 6)
    np.testing.assert_array_equal(to_numpy(r2), a.transpose(2, 1, 0).reshape(4, 6))
    assert r2.stride() == (6, 1)
    assert t.reshape(4, 6)._shares_storage(t)


def test_view_as_reshape_as():
    t, a = arange((2, 6))
    check_view(t.view_as(ember.empty(3, 4)), t, a.reshape(3, 4))
    check_view(t.reshape_as(ember.empty(4, 3)), t, a.reshape(4, 3))


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"),
                                     ("int16", "float16"), ("float16", "bfloat16"),
                                     ("uint8", "int8"), ("int8", "bool"), ("float64", "int64")])
def test_view_as_dtype_of_the_same_size(src, dst):
    vals = [[1, 0], [2, 3]] if "bool" not in (src, dst) else [[1, 0], [0, 1]]
    t = ember.tensor(vals, dtype=edtype(src))
    v = t.view(edtype(dst))
    assert v.dtype == edtype(dst) and v._shares_storage(t)
    if "bfloat16" not in (src, dst):
        exp = np.array(vals, dtype=NP_DTYPE[src]).view(NP_DTYPE[dst])
        np.testing.assert_array_equal(to_numpy(v), exp)


# ---------------------------------------------------------------------------------------------
# transpose / permute / squeeze / unsqueeze / expand / flatten / narrow / select


def test_transpose_family():
    t, a = arange((2, 3, 4))
    for d0, d1 in [(0, 1), (0, 2), (-1, -2), (1, 1), (2, -3)]:
        exp = np.swapaxes(a, d0, d1)
        check_view(t.transpose(d0, d1), t, exp, np_strides(exp))
        check_view(ember.transpose(t, d0, d1), t, exp)
        check_view(t.swapaxes(d0, d1), t, exp)
        check_view(ember.swapdims(t, d0, d1), t, exp)
    m, am = arange((3, 5))
    check_view(m.t(), m, am.T, np_strides(am.T))
    check_view(ember.t(m), m, am.T)
    check_view(m.T, m, am.T)
    check_view(t.mT, t, np.swapaxes(a, -1, -2), np_strides(np.swapaxes(a, -1, -2)))
    check_view(t.T, t, a.transpose(2, 1, 0))
    v, av = arange((4,))
    check_view(v.t(), v, av)
    s = ember.tensor(2.0)
    assert s.t().tolist() == 2.0 and s.transpose(0, -1).tolist() == 2.0


@pytest.mark.parametrize("dims", [(2, 0, 1), (0, 1, 2), (-1, 0, 1), (1, 2, 0)])
def test_permute(dims):
    t, a = arange((2, 3, 4))
    exp = a.transpose(dims)
    check_view(t.permute(*dims), t, exp, np_strides(exp))
    check_view(t.permute(dims), t, exp)
    check_view(ember.permute(t, dims), t, exp)


def test_squeeze_unsqueeze():
    t, a = arange((1, 3, 1, 2))
    check_view(t.squeeze(), t, a.squeeze())
    check_view(t.squeeze(0), t, a.squeeze(0))
    check_view(t.squeeze(2), t, a.squeeze(2))
    check_view(t.squeeze(-2), t, a.squeeze(-2))
    check_view(t.squeeze(1), t, a)  # not of size 1: unchanged
    check_view(t.squeeze((0, 2)), t, a.squeeze((0, 2)))
    check_view(ember.squeeze(t, 0), t, a.squeeze(0))
    for d in range(-5, 5):
        exp = np.expand_dims(a, d)
        check_view(t.unsqueeze(d), t, exp, np_strides(exp)[:d % 5] + t.unsqueeze(d).stride()[
            d % 5:d % 5 + 1] + np_strides(exp)[d % 5 + 1:])
    z = ember.tensor(3.0)
    assert tuple(z.squeeze().shape) == () and tuple(z.squeeze(0).shape) == ()
    assert tuple(z.unsqueeze(0).shape) == (1,) and tuple(z.unsqueeze(-1).shape) == (1,)


def test_unsqueeze_strides_match_pytorch():
    t, _ = arange((2, 3))
    assert t.unsqueeze(0).stride() == (6, 3, 1)
    assert t.unsqueeze(1).stride() == (3, 3, 1)
    assert t.unsqueeze(2).stride() == (3, 1, 1)
    assert t.t().unsqueeze(0).stride() == (3, 1, 3)


def test_expand():
    t, a = arange((3, 1))
    exp = np.broadcast_to(a, (2, 3, 4))
    e = t.expand(2, 3, 4)
    np.testing.assert_array_equal(to_numpy(e), exp)
    assert e.stride() == (0, 1, 0) and e._shares_storage(t)
    check_view(t.expand(-1, 4), t, np.broadcast_to(a, (3, 4)))
    check_view(t.expand((3, 5)), t, np.broadcast_to(a, (3, 5)))
    check_view(t.expand_as(ember.empty(2, 3, 2)), t, np.broadcast_to(a, (2, 3, 2)))
    check_view(t.expand(3, 1), t, a)
    z = ember.tensor([7.0]).expand(0)
    assert tuple(z.shape) == (0,)
    s = ember.tensor(1.5).expand(2, 2)
    assert s.tolist() == [[1.5, 1.5], [1.5, 1.5]] and s.stride() == (0, 0)
    with pytest.raises(RuntimeError, match="single memory location"):
        t.expand(3, 4).add_(1)
    t.expand(3, 4).fill_(1)  # one value: defined, as torch allows it
    assert t.tolist() == [[1.0]] * 3
    with pytest.raises(RuntimeError, match="single memory location"):
        t.expand(3, 4).copy_(ember.zeros(3, 4))


def test_expand_reads_correctly_in_ops():
    t, a = arange((3, 1))
    e = t.expand(3, 4)
    np.testing.assert_array_equal(to_numpy(e + 1), np.broadcast_to(a, (3, 4)) + 1)
    np.testing.assert_array_equal(to_numpy(e.contiguous()), np.broadcast_to(a, (3, 4)))
    np.testing.assert_array_equal(to_numpy(e.clone()), np.broadcast_to(a, (3, 4)))


def test_flatten_unflatten():
    t, a = arange((2, 3, 4))
    check_view(t.flatten(), t, a.reshape(-1))
    check_view(ember.flatten(t, 1), t, a.reshape(2, 12))
    check_view(t.flatten(0, 1), t, a.reshape(6, 4))
    check_view(t.flatten(-2, -1), t, a.reshape(2, 12))
    check_view(t.flatten(1, 1), t, a)
    z = ember.tensor(5.0).flatten()
    assert tuple(z.shape) == (1,)
    # a non-contiguous input is copied
    f = t.transpose(0, 1).flatten(0, 1)
    np.testing.assert_array_equal(to_numpy(f), a.transpose(1, 0, 2).reshape(6, 4))
    u, au = arange((2, 12))
    check_view(u.unflatten(1, (3, 4)), u, au.reshape(2, 3, 4))
    check_view(u.unflatten(-1, (-1, 2)), u, au.reshape(2, 6, 2))
    check_view(ember.unflatten(u, 0, (1, 2)), u, au.reshape(1, 2, 12))


def test_narrow_and_select():
    t, a = arange((4, 5))
    check_view(t.narrow(1, 1, 3), t, a[:, 1:4], (5, 1))
    check_view(ember.narrow(t, 0, 2, 2), t, a[2:4])
    check_view(t.narrow(-1, -2, 2), t, a[:, -2:])
    check_view(t.narrow(0, 4, 0), t, a[4:4])
    check_view(t.select(1, -1), t, a[:, -1], (5,))
    check_view(ember.select(t, 0, 2), t, a[2], (1,))
    assert t.narrow(1, 1, 3).storage_offset() == 1
    assert t.select(0, 2).storage_offset() == 10


# ---------------------------------------------------------------------------------------------
# basic indexing

GET_INDICES = [
    IX[1], IX[-1], IX[0, 2], IX[-2, -3], IX[1:], IX[:-1], IX[::2], IX[1::2], IX[::3, 1:4:2],
    IX[-2:, :-1, -4:-1], IX[5:10], IX[2:100], IX[2:1], IX[..., 1], IX[0, ..., 1:3], IX[...],
    IX[None], IX[None, 1, None, :, None], IX[..., None], IX[:, None, ::2], IX[()], IX[0, 0, 0],
    IX[:, :, ::4], IX[-1, None], IX[1, 1:3, None, 2], IX[np.int64(1)],
    IX[:, np.int32(-1)], IX[0, 1, ...], IX[..., 0, 1, 2],
]  # fmt: skip


@pytest.mark.parametrize("idx", GET_INDICES, ids=repr)
def test_getitem_matches_numpy(idx):
    t, a = arange((3, 4, 5))
    exp = a[idx]
    got = t[idx]
    assert tuple(got.shape) == exp.shape
    np.testing.assert_array_equal(to_numpy(got), exp)
    assert got._shares_storage(t)
    if exp.size > 1 and exp.ndim:
        assert got.stride()[-1] == np_strides(exp)[-1] or exp.shape[-1] == 1


def test_getitem_offsets_and_data_ptr():
    t, _ = arange((10, 4))
    v = t[1::3, 1::2]
    assert v.stride() == (12, 2)
    assert v.storage_offset() == 5
    assert v.data_ptr() - t.data_ptr() == 5 * 4
    w = v[1]
    assert w.storage_offset() == 17 and w.tolist() == [17.0, 19.0]


def test_getitem_with_a_zero_dim_integer_tensor():
    t, a = arange((3, 4))
    np.testing.assert_array_equal(to_numpy(t[ember.tensor(1)]), a[1])
    np.testing.assert_array_equal(to_numpy(t[:, ember.tensor(-1, dtype=ember.int8)]), a[:, -1])


def test_getitem_on_zero_dim_tensors():
    z = ember.tensor(5.0)
    assert z[...].tolist() == 5.0 and z[...]._shares_storage(z)
    assert tuple(z[None].shape) == (1,)
    assert tuple(z[None, None].shape) == (1, 1)
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        z[0]


def test_iteration_yields_views():
    t, a = arange((3, 2))
    rows = list(t)
    assert len(rows) == 3 and len(t) == 3
    for r, ar in zip(rows, a):
        np.testing.assert_array_equal(to_numpy(r), ar)
        assert r._shares_storage(t)


SET_INDICES = [
    IX[1], IX[-1, 2], IX[1:, ::2], IX[..., 0], IX[:, :, 1::2], IX[None, 0], IX[...], IX[0, ..., -1],
    IX[2:1], IX[::2, ::3, ::2], IX[np.int64(2)],
]  # fmt: skip


@pytest.mark.parametrize("idx", SET_INDICES, ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "bool"])
def test_setitem_matches_numpy(idx, dtype):
    t, _ = arange((3, 4, 5), dtype)
    a = to_numpy(t).copy()
    t[idx] = 1
    a[idx] = 1
    np.testing.assert_array_equal(to_numpy(t), a)
    # a tensor value broadcast into the selection
    target_shape = a[idx].shape
    if target_shape:
        vals = (np.arange(target_shape[-1]) % 2 + 2).astype(NP_DTYPE[dtype])
        t[idx] = ember.tensor(vals.tolist(), dtype=edtype(dtype))
        a[idx] = vals
        np.testing.assert_array_equal(to_numpy(t), a)


def test_setitem_converts_and_bumps_the_version():
    t = ember.zeros(2, 3, dtype=ember.int32)
    v = t._version
    t[0] = 2.7  # a float into an int tensor truncates
    t[1, 1:] = ember.tensor([1.9, -1.9])
    assert t.tolist() == [[2, 2, 2], [0, 1, -1]]
    assert t._version == v + 2
    t[0, 0] = True
    assert t[0, 0].item() == 1
    f = ember.zeros(3)
    f[1:] = [4.0, 5.0]  # a sequence is converted like ember.tensor(...)
    assert f.tolist() == [0.0, 4.0, 5.0]


def test_setitem_through_a_view_and_with_overlap():
    t, a = arange((5,))
    t[1:] = t[:-1]  # the source is read before it is overwritten
    assert t.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0]
    m, am = arange((3, 4))
    mt = m.t()
    mt[0] = -1.0  # column 0 of m
    am[:, 0] = -1.0
    np.testing.assert_array_equal(to_numpy(m), am)


def test_inplace_ops_with_overlapping_operands_match_numpy():
    """An operand that overlaps the written tensor is read as it was before the op (NumPy's
    semantics; PyTorch refuses some of these)."""
    t, a = arange((5,))
    t[1:] += t[:-1]
    a[1:] += a[:-1].copy()
    np.testing.assert_array_equal(to_numpy(t), a)
    m, am = arange((3, 3))
    m.add_(m.t())
    am += am.T.copy()
    np.testing.assert_array_equal(to_numpy(m), am)
    n, an = arange((3, 3))
    ember.neg(n, out=n.t())
    np.negative(an.copy(), out=an.T)
    np.testing.assert_array_equal(to_numpy(n), an)
    x, ax = arange((4,))
    ember.mul(x[1::2], 10, out=x[::2])
    ax[::2] = ax[1::2] * 10
    np.testing.assert_array_equal(to_numpy(x), ax)


def test_setitem_with_an_expanded_value():
    t = ember.zeros(3, 4)
    t[:] = ember.tensor([1.0, 2.0, 3.0, 4.0]).expand(3, 4)
    assert t.tolist() == [[1.0, 2.0, 3.0, 4.0]] * 3


# ---------------------------------------------------------------------------------------------
# as_strided / contiguous / clone / detach


@pytest.mark.parametrize("size,stride,offset", [
    ((2, 2), (3, 1), 1), ((3, 3), (1, 1), 0), ((4,), (2,), 0), ((2, 3), (0, 1), 2),
    ((0, 5), (5, 1), 0), ((), (), 3), ((3, 2), (1, 3), None),
])  # fmt: skip
def test_as_strided_matches_numpy(size, stride, offset):
    t, a = arange((9,))
    off = 0 if offset is None else offset
    exp = np.lib.stride_tricks.as_strided(a[off:], shape=size,
                                          strides=tuple(s * a.itemsize for s in stride))
    got = t.as_strided(size, stride, offset) if offset is not None else t.as_strided(size, stride)
    assert got.stride() == stride and got.storage_offset() == off
    np.testing.assert_array_equal(to_numpy(got), exp)
    np.testing.assert_array_equal(to_numpy(ember.as_strided(t, size, stride, off)), exp)
    assert got._shares_storage(t)


def test_as_strided_offset_is_relative_to_the_storage():
    t, a = arange((9,))
    v = t[3:]
    assert v.as_strided((2,), (1,)).tolist() == [3.0, 4.0]  # default: the view's own offset
    assert v.as_strided((2,), (1,), 0).tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 36"):
        v.as_strided((4,), (3,), 0)


def test_contiguous():
    t, a = arange((2, 3))
    assert t.contiguous() is t
    c = t.t().contiguous()
    assert c.is_contiguous() and c.stride() == (2, 1)
    np.testing.assert_array_equal(to_numpy(c), a.T)
    assert not c._shares_storage(t)
    p, ap = arange((2, 3, 4))
    c = p.permute(2, 0, 1).contiguous()
    assert c.stride() == (6, 3, 1)
    np.testing.assert_array_equal(to_numpy(c), ap.transpose(2, 0, 1))
    s = p[:, ::2].contiguous()
    assert s.is_contiguous()
    np.testing.assert_array_equal(to_numpy(s), ap[:, ::2])


def test_is_contiguous():
    t, _ = arange((2, 3))
    assert t.is_contiguous()
    assert not t.t().is_contiguous()
    assert ember.empty(2, 1).t().is_contiguous()  # size-1 dims don't count
    assert not arange((6,))[0][::2].is_contiguous()
    assert arange((6,))[0][1:4].is_contiguous()
    assert ember.empty(0, 3).t().is_contiguous()


def test_clone():
    t, a = arange((2, 3, 4))
    c = t.clone()
    assert not c._shares_storage(t) and c._version == 0
    np.testing.assert_array_equal(to_numpy(c), a)
    c.add_(1)
    np.testing.assert_array_equal(to_numpy(t), a)
    # a dense permuted input keeps its layout (preserve_format); a sliced one becomes contiguous
    p = t.permute(2, 0, 1)
    assert p.clone().stride() == p.stride()
    assert ember.clone(p).stride() == p.stride()
    s = t[:, ::2]
    assert s.clone().is_contiguous()
    np.testing.assert_array_equal(to_numpy(s.clone()), a[:, ::2])
    e = ember.empty(0, 3).clone()
    assert tuple(e.shape) == (0, 3)


def test_detach():
    t, a = arange((2, 3))
    d = t.detach()
    assert d is not t and d._shares_storage(t) and d.data_ptr() == t.data_ptr()
    assert not d.requires_grad
    d[0, 0] = 100.0
    assert t[0, 0].item() == 100.0
    assert ember.detach(t)._shares_storage(t)
    base = ember.zeros(3)
    assert base.detach_() is base
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):  # t is a view, as torch
        t.detach_()


# ---------------------------------------------------------------------------------------------
# conversions


CONVERSION_VALUES = [0.0, 1.0, -1.0, 2.5, -2.5, 100.75, 0.125, 3.0]


@pytest.mark.parametrize("src", ALL_DTYPES)
@pytest.mark.parametrize("dst", ALL_DTYPES)
def test_to_dtype_matches_numpy_astype(src, dst):
    vals = np.array(CONVERSION_VALUES)
    if src == "uint8" or dst == "uint8":
        vals = np.abs(vals)  # negative float -> uint8 is undefined in C and NumPy alike
    t = ember.tensor(vals.tolist(), dtype=edtype(src))
    held = to_numpy(t)
    r = t.to(edtype(dst))
    assert r.dtype == edtype(dst)
    if dst == "bfloat16":
        from ember.testing.opdb import round_to

        exp = round_to(held.astype(np.float64), "bfloat16")
    elif src == "bfloat16":
        exp = held.astype(NP_DTYPE[dst])
    else:
        exp = held.astype(NP_DTYPE[dst])
    np.testing.assert_array_equal(to_numpy(r), exp)
    if src == dst:
        assert r is t
    else:
        assert not r._shares_storage(t)


def test_to_forms():
    t = ember.tensor([1.5, -2.5])
    assert t.to(ember.float32) is t
    c = t.to(ember.float32, copy=True)
    assert c is not t and not c._shares_storage(t)
    assert t.to(dtype=ember.int8).tolist() == [1, -2]
    assert t.to(ember.ones(1, dtype=ember.float64)).dtype == ember.float64
    assert t.to("cpu") is t
    assert t.to("cpu", ember.int16).dtype == ember.int16
    assert t.to(device="cpu", dtype=ember.float16).dtype == ember.float16
    assert t.to(ember.device("cpu")) is t
    assert t.to(float).dtype == ember.float64
    assert t.to(int).dtype == ember.int64
    assert t.to(bool).tolist() == [True, True]
    assert t.to(ember.float64, non_blocking=True).dtype == ember.float64
    assert t.cpu() is t
    with pytest.raises(TypeError, match=r"to\(\) received an invalid combination of arguments"):
        t.to(bogus=1)  # (torch's message: no form of to() takes bogus)


def test_type_method():
    t = ember.tensor([1.7, -1.7])
    assert t.type() == "ember.FloatTensor"
    assert t.type(ember.int32).tolist() == [1, -1]
    assert t.type(ember.float32) is t
    assert ember.ones(1, dtype=ember.int64).type() == "ember.LongTensor"
    assert ember.ones(1, dtype=ember.bool).type() == "ember.BoolTensor"


@pytest.mark.parametrize("method,dtype", [
    ("float", "float32"), ("double", "float64"), ("half", "float16"), ("bfloat16", "bfloat16"),
    ("int", "int32"), ("long", "int64"), ("short", "int16"), ("char", "int8"),
    ("byte", "uint8"), ("bool", "bool"),
])  # fmt: skip
def test_dtype_shortcut_methods(method, dtype):
    t = ember.tensor([0.0, 1.9, 2.25, 100.0])
    r = getattr(t, method)()
    assert r.dtype == edtype(dtype)
    exp = np.array([0.0, 1.9, 2.25, 100.0])
    if dtype == "bool":
        exp = exp != 0
    elif not is_float(dtype):
        exp = np.trunc(exp)
    np.testing.assert_allclose(to_numpy(r).astype(np.float64), exp, rtol=1e-2)
    assert getattr(r, method)() is r  # already that dtype: no copy


def test_float_to_int_truncates_and_half_rounds():
    t = ember.tensor([1.9, -1.9, 0.5, -0.5, 2.5])
    assert t.int().tolist() == [1, -1, 0, 0, 2]
    h = ember.tensor([65519.0, 65520.0, 1e-8, 0.1]).half()
    assert h.tolist()[:3] == [65504.0, float("inf"), 0.0]
    assert h.tolist()[3] == float(np.float16(0.1))
    b = ember.tensor([1.00390625, 1.01171875]).bfloat16()  # ties to even
    assert b.tolist() == [1.0, 1.015625]
    assert ember.tensor([float("nan")]).half().isnan().item()
    assert ember.tensor([0.0, -0.0, 1e-30, float("nan")]).bool().tolist() == [False, False, True,
                                                                               True]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_item_and_tolist(dtype):
    vals = [[0, 1, 2], [3, 4, 5]] if dtype != "bool" else [[True, False, True], [False, True, True]]
    t = ember.tensor(vals, dtype=edtype(dtype))
    lst = t.tolist()
    assert lst == vals
    py_type = bool if dtype == "bool" else float if is_float(dtype) else int
    assert all(type(x) is py_type for row in lst for x in row)
    item = t[1, 2].item()
    assert type(item) is py_type and item == vals[1][2]
    assert t.t().tolist() == [list(r) for r in zip(*vals)]  # non-contiguous
    assert t[:, ::2].tolist() == [r[::2] for r in vals]
    assert ember.tensor(vals[0][1], dtype=edtype(dtype)).tolist() == vals[0][1]  # 0-d: a number
    assert ember.ones(2, 0, dtype=edtype(dtype)).tolist() == [[], []]


def test_item_of_the_half_types_is_exact():
    assert ember.tensor(0.1, dtype=ember.float16).item() == float(np.float16(0.1))
    assert ember.tensor(0.1, dtype=ember.bfloat16).item() == 0.10009765625
    assert ember.tensor([[3]]).item() == 3  # any one-element tensor


def test_python_number_protocols():
    assert int(ember.tensor(2.7)) == 2
    assert int(ember.tensor([-2.7])) == -2
    assert float(ember.tensor(2)) == 2.0
    assert bool(ember.tensor([0.0])) is False and bool(ember.tensor(3)) is True
    assert [10, 11, 12][ember.tensor(2)] == 12
    assert complex(ember.tensor(1.5)) == 1.5 + 0j
    assert f"{ember.tensor(2.5):.2f}" == "2.50"
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2][ember.tensor(1.0)]


# ---------------------------------------------------------------------------------------------
# metadata


def test_metadata():
    t = ember.zeros(2, 3, 4, dtype=ember.float64)
    assert t.dim() == t.ndim == t.ndimension() == 3
    assert t.numel() == t.nelement() == 24
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert isinstance(t.size(), ember.Size) and t.shape == (2, 3, 4)
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12 and t.stride(-1) == 1
    assert t.element_size() == t.itemsize == 8 and t.nbytes == 192
    assert t.is_floating_point() and t.is_signed() and not t.is_complex()
    assert not ember.zeros(1, dtype=ember.uint8).is_signed()
    assert str(t.device) == "cpu" and t.is_cpu and not t.is_cuda
    assert t.storage_offset() == 0 and t.get_device() == -1
    for dt in FLOAT_DTYPES:
        assert edtype(dt).is_floating_point
    assert not ember.int64.is_floating_point and ember.int8.is_signed
    assert [edtype(d).itemsize for d in ALL_DTYPES] == [1, 1, 1, 2, 4, 8, 2, 2, 4, 8]


def test_version_is_shared_by_every_view():
    t = ember.zeros(4, 4)
    views = [t[1], t.t(), t.view(16), t[::2, 1:], t.unsqueeze(0), t.expand(2, 4, 4), t.detach(),
             t.as_strided((2,), (5,)), t.narrow(0, 1, 2), t.select(1, 0), t.reshape(2, 8),
             t.flatten(), t.permute(1, 0), t.squeeze(), t[...]]
    assert all(v._version == 0 for v in views)
    t[0, 0] = 1.0
    assert all(v._version == 1 for v in views)
    views[3].mul_(2)
    assert t._version == 2 and all(v._version == 2 for v in views)
    # a copy has its own counter
    c = t.clone()
    c.add_(1)
    assert t._version == 2 and c._version == 1


def test_base_of_views():
    t = ember.zeros(2, 3)
    assert t._base is None and not t._is_view()
    v = t[0]
    assert v._base is t and v._is_view()
    assert v[1:]._base is t  # a view of a view points to the root
    assert t.clone()._base is None
