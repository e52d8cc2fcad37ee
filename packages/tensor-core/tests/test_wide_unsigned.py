"""uint16 / uint32 / uint64: torch's unsigned types beyond uint8, with torch's (limited) support.

They are created, converted, viewed, indexed, compared for equality, multiplied, masked bitwise,
summed into int64, sorted, made unique, saved and hashed; the other arithmetic refuses them with
NotImplementedError, and they promote only with themselves and with the floating types. NumPy
is the oracle for values (its unsigned arithmetic wraps as theirs does); torch's behaviour for the
refusals is written out by hand.
"""

import io

import numpy as np
import pytest

import ember

WIDE = [(ember.uint16, np.uint16), (ember.uint32, np.uint32), (ember.uint64, np.uint64)]
IDS = ["uint16", "uint32", "uint64"]


def sample(np_dtype, n=12, seed=0):
    """Values across the whole range, the largest included."""
    info = np.iinfo(np_dtype)
    rng = np.random.default_rng(seed)
    v = rng.integers(0, info.max, size=n, dtype=np_dtype, endpoint=True)
    v[0], v[1], v[2] = 0, info.max, 1
    return v


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_dtype_properties(dtype, np_dtype):
    assert dtype.itemsize == np.dtype(np_dtype).itemsize
    assert not dtype.is_signed and not dtype.is_floating_point and not dtype.is_complex
    assert repr(dtype) == f"ember.{np.dtype(np_dtype).name}"
    assert ember.iinfo(dtype).max == np.iinfo(np_dtype).max and ember.iinfo(dtype).min == 0
    t = ember.zeros(2, dtype=dtype)
    assert t.type() == f"ember.UInt{dtype.itemsize * 8}Tensor" and not t.is_signed()
    assert t.element_size() == dtype.itemsize


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_creation_and_python_values(dtype, np_dtype):
    v = sample(np_dtype)
    t = ember.tensor(v.tolist(), dtype=dtype)  # Python ints up to the type's max (2**64 - 1)
    assert t.dtype == dtype and t.tolist() == v.tolist()
    assert t[1].item() == int(np.iinfo(np_dtype).max)
    assert ember.full((3,), 7, dtype=dtype).tolist() == [7] * 3
    assert ember.ones(2, 2, dtype=dtype).numpy().dtype == np_dtype
    # negative Python ints wrap, as torch's tensor() does, but into uint64, whose values torch
    # reads as unsigned ints (OverflowError); beyond the range is an error
    if dtype == ember.uint64:
        with pytest.raises(OverflowError, match="can't convert negative int to unsigned"):
            ember.tensor([-1], dtype=dtype)
    else:
        assert ember.tensor([-1], dtype=dtype).item() == int(np.iinfo(np_dtype).max)
    with pytest.raises((RuntimeError, OverflowError)):
        ember.tensor([int(np.iinfo(np_dtype).max) + 1], dtype=dtype)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.zeros(1, dtype=dtype).fill_(int(np.iinfo(np_dtype).max) + 1) if dtype != \
            ember.uint64 else ember.zeros(1, dtype=dtype).fill_(-2.0 ** 70)
    assert "dtype=ember." + np.dtype(np_dtype).name in repr(t)


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_numpy_buffer_and_dlpack_round_trips(dtype, np_dtype):
    a = sample(np_dtype).reshape(3, 4)
    t = ember.from_numpy(a)
    assert t.dtype == dtype and np.shares_memory(t.numpy(), a)
    np.testing.assert_array_equal(np.asarray(memoryview(t)), a)
    np.testing.assert_array_equal(np.from_dlpack(t), a)
    np.testing.assert_array_equal(ember.from_dlpack(a.__dlpack__()).numpy(), a)
    np.testing.assert_array_equal(ember.tensor(a).numpy(), a)


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
@pytest.mark.parametrize("target", [ember.float64, ember.float32, ember.int64, ember.int32,
                                    ember.uint8, ember.bool, ember.complex128,
                                    ember.uint16, ember.uint32, ember.uint64])
def test_conversions_from_unsigned(dtype, np_dtype, target):
    a = sample(np_dtype)
    got = ember.from_numpy(a).to(target)
    want = a.astype(np.dtype(target.name) if target != ember.bool else np.bool_)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_conversions_into_unsigned(dtype, np_dtype):
    ints = np.array([0, 1, 7, -1, -5, 300, 70000], dtype=np.int64)
    np.testing.assert_array_equal(ember.from_numpy(ints).to(dtype).numpy(), ints.astype(np_dtype))
    # floats truncate towards zero through int64, as torch converts them (-1.5 -> 2**n - 1)
    floats = np.array([0.0, 2.9, 65535.0, -1.5], dtype=np.float64)
    want = floats.astype(np.int64).astype(np_dtype)
    np.testing.assert_array_equal(ember.from_numpy(floats).to(dtype).numpy(), want)
    if dtype == ember.uint64:  # the upper half of uint64, beyond int64
        big = np.array([2.0 ** 63, 2.0 ** 64 - 2.0 ** 11], dtype=np.float64)
        np.testing.assert_array_equal(ember.from_numpy(big).to(dtype).numpy(),
                                      big.astype(np.uint64))


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_views_indexing_and_copies(dtype, np_dtype):
    a = sample(np_dtype).reshape(3, 4)
    t = ember.from_numpy(a.copy())
    np.testing.assert_array_equal(t.t().contiguous().numpy(), a.T)
    np.testing.assert_array_equal(t[1:, ::2].clone().numpy(), a[1:, ::2])
    np.testing.assert_array_equal(t[ember.tensor([2, 0])].numpy(), a[[2, 0]])
    np.testing.assert_array_equal(ember.cat([t, t]).numpy(), np.concatenate([a, a]))
    np.testing.assert_array_equal(ember.stack([t, t], 1).numpy(), np.stack([a, a], 1))
    mask = a > a.mean()
    np.testing.assert_array_equal(
        ember.where(ember.from_numpy(mask), t, ember.zeros_like(t)).numpy(), np.where(mask, a, 0))
    signed = {2: np.int16, 4: np.int32, 8: np.int64}[a.itemsize]
    np.testing.assert_array_equal(t.view(getattr(ember, np.dtype(signed).name)).numpy(),
                                  a.view(signed))
    u = t.clone()
    u[0] = 5
    assert u[0].tolist() == [5] * 4 and t[0].tolist() == a[0].tolist()


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_arithmetic_torch_has(dtype, np_dtype):
    a, b = sample(np_dtype, seed=1), sample(np_dtype, seed=2)
    x, y = ember.from_numpy(a), ember.from_numpy(b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal((x * y).numpy(), a * b)  # wraps modulo 2**n
        np.testing.assert_array_equal((x * 3).numpy(), a * np_dtype(3))
    np.testing.assert_array_equal((x & y).numpy(), a & b)
    np.testing.assert_array_equal((x | 6).numpy(), a | np_dtype(6))
    np.testing.assert_array_equal((x ^ y).numpy(), a ^ b)
    np.testing.assert_array_equal((x == y).numpy(), a == b)
    np.testing.assert_array_equal((x != x).numpy(), np.zeros(a.shape, bool))
    assert (x == int(a[1])).tolist() == (a == a[1]).tolist()  # 2**64 - 1 for uint64
    biggest = int(np.iinfo(np_dtype).max)
    if dtype == ember.uint64:  # a number in uint64's upper half: for uint64 tensors only
        with np.errstate(over="ignore"):
            assert (x * biggest).tolist() == (a * np.uint64(biggest)).tolist()
        with pytest.raises(OverflowError, match="int too big to convert"):
            ember.ones(2, dtype=ember.int64) + biggest
        assert (ember.ones(2) + biggest).tolist() == [float(biggest)] * 2  # its nearest float
        with pytest.raises(OverflowError, match="int too big to convert"):
            ember.ones(2).add(2**70)  # beyond uint64 too: torch's parser refuses it
        with pytest.raises(RuntimeError, match="value cannot be converted to type int64"):
            ember.full((2,), biggest)
        assert ember.full((2,), biggest, dtype=dtype).tolist() == [biggest] * 2
    # the floating ops compute in the default float type
    np.testing.assert_allclose((x / 2).numpy(), (a.astype(np.float64) / 2).astype(np.float32))
    np.testing.assert_allclose(x.sqrt().numpy(), np.sqrt(a.astype(np.float32)), rtol=1e-6)
    np.testing.assert_allclose((x * 2.5).numpy(), a.astype(np.float32) * np.float32(2.5),
                               rtol=1e-6)
    assert x.isnan().tolist() == [False] * a.size and x.isfinite().all().item()
    assert x.floor().dtype == dtype and x.floor().tolist() == a.tolist()
    out = ember.empty(a.size, dtype=dtype)
    with np.errstate(over="ignore"):
        assert ember.mul(x, y, out=out) is out and out.tolist() == (a * b).tolist()


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_reductions_into_int64(dtype, np_dtype):
    a = sample(np_dtype).reshape(3, 4)
    x = ember.from_numpy(a)
    as64 = a.astype(np.int64)  # uint64's upper half wraps into int64, as torch accumulates it
    with np.errstate(over="ignore"):
        assert x.sum().dtype == ember.int64 and x.sum().item() == as64.sum()
        np.testing.assert_array_equal(x.sum(1).numpy(), as64.sum(1))
        np.testing.assert_array_equal(x.prod(0).numpy(), as64.prod(0))
        np.testing.assert_array_equal(x.cumsum(1).numpy(), as64.cumsum(1))
    assert x.nansum().item() == x.sum().item()
    assert x.any().item() and not x.all().item()
    np.testing.assert_array_equal(x.all(1).numpy(), a.all(1))
    with pytest.raises(NotImplementedError, match=f"\"sum_cpu\" not implemented for "
                                                  f"'UInt{dtype.itemsize * 8}'"):
        x.sum(dtype=dtype)


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_unique(dtype, np_dtype, descending):
    a = np.concatenate([sample(np_dtype, 40, seed=3), sample(np_dtype, 20, seed=3)])
    x = ember.from_numpy(a)
    values, indices = ember.sort(x, descending=descending, stable=True)
    order = np.argsort(-a.astype(np.float64) if descending else a, kind="stable")
    if not descending:
        np.testing.assert_array_equal(indices.numpy(), order)
    np.testing.assert_array_equal(values.numpy(), np.sort(a)[::-1] if descending else np.sort(a))
    np.testing.assert_array_equal(a[indices.numpy()], values.numpy())
    uniq, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    u, inv, c = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(uniq.numpy(), u)
    np.testing.assert_array_equal(inverse.numpy(), inv)
    np.testing.assert_array_equal(counts.numpy(), c)


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_unique_along_a_dim_and_consecutive(dtype, np_dtype):
    rows = np.array([[3, 1], [3, 1], [0, 2], [np.iinfo(np_dtype).max, 0]], dtype=np_dtype)
    x = ember.from_numpy(rows)
    uniq, inverse, counts = ember.unique(x, dim=0, return_inverse=True, return_counts=True)
    u, inv, c = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(uniq.numpy(), u)
    np.testing.assert_array_equal(inverse.numpy(), inv.reshape(-1))
    np.testing.assert_array_equal(counts.numpy(), c)
    values, counts = ember.unique_consecutive(x, dim=0, return_counts=True)
    assert values.tolist() == [[3, 1], [0, 2], [int(rows[3, 0]), 0]] and counts.tolist() == [2, 1, 1]


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_random_from_a_range(dtype, np_dtype):
    """torch draws these types' integers from a given range (random_(to), random_(from, to),
    and random_(from) up to the type's largest value but for uint64's, which is past an
    int64); random_() with no range, its default, is not implemented for them."""
    ember.manual_seed(3)
    assert set(ember.zeros(400, dtype=dtype).random_(2).tolist()) == {0, 1}
    drawn = ember.zeros(400, dtype=dtype).random_(5, 9).numpy()
    assert drawn.dtype == np_dtype and set(drawn.tolist()) == {5, 6, 7, 8}
    top = np.iinfo(np_dtype).max
    if np_dtype != np.uint64:
        high = ember.zeros(400, dtype=dtype).random_(3, None).numpy()
        assert high.min() >= 3 and high.max() <= top and high.max() > top // 2
        with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
            ember.zeros(2, dtype=dtype).random_(0, 2 ** 40)
    else:
        assert ember.zeros(400, dtype=dtype).random_(0, 2 ** 40).numpy().max() > 2 ** 32
        with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
            ember.zeros(2, dtype=dtype).random_(3, None)
    with pytest.raises(RuntimeError, match="from is out of bounds"):
        ember.zeros(2, dtype=dtype).random_(-1, 5)
    with pytest.raises(NotImplementedError, match="not implemented for 'UInt"):
        ember.zeros(2, dtype=dtype).random_()


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_topk_trace_and_ldexp_refuse_them_as_torch(dtype, np_dtype):
    """torch's topk and trace kernels and ldexp's exponent have none of these types; topk
    checks its k first."""
    name = f"UInt{dtype.itemsize * 8}"
    x = ember.tensor([3, 1, 2, 0], dtype=dtype)
    with pytest.raises(NotImplementedError, match=f"\"topk_cpu\" not implemented for '{name}'"):
        x.topk(2)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(5)
    with pytest.raises(NotImplementedError, match=f"\"trace\" not implemented for '{name}'"):
        x.reshape(2, 2).trace()
    with pytest.raises(NotImplementedError, match=f"\"ldexp_cpu_exp\" not implemented for "
                                                  f"'{name}'"):
        ember.ones(4).ldexp_(x)


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_refusals_match_torch(dtype, np_dtype):
    x = ember.ones(3, dtype=dtype)
    name = f"UInt{dtype.itemsize * 8}"
    for call, op in [(lambda: x + x, "add"), (lambda: x - 1, "sub"), (lambda: x < x, "lt"),
                     (lambda: x // 2, "floor_divide"), (lambda: x.abs(), "abs"),
                     (lambda: -x, "neg"), (lambda: x.logical_not(), "logical_not"),
                     (lambda: ~x, "bitwise_not")]:
        with pytest.raises(NotImplementedError, match=f"\"{op}_cpu\" not implemented for '{name}'"):
            call()
    with pytest.raises(NotImplementedError, match=f"not implemented for '{name}'"):
        x.max()
    # promotion: only with the same type and the floating types (torch's message)
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not "
                                           f"supported, attempted to promote {name} and Long"):
        x * ember.ones(3, dtype=ember.int64)
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types"):
        ember.promote_types(dtype, ember.uint8)
    assert ember.promote_types(dtype, dtype) == dtype
    assert ember.promote_types(dtype, ember.float16) == ember.float16
    assert (x * ember.ones(3, dtype=ember.float64)).dtype == ember.float64
    # a 0-d int64 tensor or a Python int does not decide the type (torch's tiers)
    assert (x * ember.tensor(2)).dtype == dtype and (x * 2).dtype == dtype


@pytest.mark.parametrize("dtype,np_dtype", WIDE, ids=IDS)
def test_save_load_as_torch_writes_them(dtype, np_dtype):
    a = sample(np_dtype).reshape(3, 4)
    for protocol in (2, 4):
        buf = io.BytesIO()
        ember.save({"x": ember.from_numpy(a)[1:, 1:], "f": ember.ones(2)}, buf,
                   pickle_protocol=protocol)
        data = buf.getvalue()
        # torch's form for these types: untyped bytes, rebuilt with the dtype beside them
        assert b"_rebuild_tensor_v3" in data and b"UntypedStorage" in data
        loaded = ember.load(io.BytesIO(data), weights_only=True)
        assert loaded["x"].dtype == dtype
        np.testing.assert_array_equal(loaded["x"].numpy(), a[1:, 1:])
        assert loaded["f"].tolist() == [1.0, 1.0]


# ---- hash_tensor: xor of each element's 64 bits (float64 for floats, int64 otherwise) ----

def numpy_hash(a, axis=None, keepdims=False):
    bits = (a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64)).view(np.uint64)
    return np.bitwise_xor.reduce(bits, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.float16, np.int64, np.int8,
                                      np.bool_, np.uint8])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (-1, True), ((0, 2), False),
                                         ((), False), ([1], True)])
def test_hash_tensor_matches_xor_of_bits(np_dtype, dim, keepdim):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((3, 5, 4)) * 50).astype(np_dtype)
    axis = None if dim is None or dim == () else dim if isinstance(dim, int) else tuple(dim)
    got = ember.hash_tensor(ember.from_numpy(a), dim, keepdim=keepdim)
    want = numpy_hash(a, axis, keepdim and axis is not None)
    if keepdim and axis is None:
        want = want.reshape((1,) * a.ndim)
    assert got.dtype == ember.uint64
    np.testing.assert_array_equal(got.numpy(), want)
    assert ember.from_numpy(a).hash_tensor(dim, keepdim=keepdim).tolist() == got.tolist()


def test_hash_tensor_values_and_errors():
    # torch's values: 1.0 and 2.0 as float64 bits, xor-ed
    assert ember.hash_tensor(ember.tensor([1.0, 2.0])).item() == 0x3FF0000000000000 ^ 0x4000000000000000
    assert ember.hash_tensor(ember.tensor(3.0)).item() == 0x4008000000000000
    assert ember.hash_tensor(ember.zeros(0, 2), 1).shape == (0,)
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        ember.hash_tensor(ember.zeros(2, 0), 1)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        ember.hash_tensor(ember.zeros(0))
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        ember.hash_tensor(ember.zeros(0, 3), 0)
    with pytest.raises(RuntimeError, match="Unknown hash_tensor mode: 1"):
        ember.hash_tensor(ember.ones(2), mode=1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.hash_tensor(ember.ones(2, 3), 2)
    with pytest.raises(NotImplementedError, match="\"xor_sum_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        ember.hash_tensor(ember.ones(2, dtype=ember.complex64))
    with pytest.raises(NotImplementedError, match="'UInt32'"):
        ember.hash_tensor(ember.ones(2, dtype=ember.uint32))


def test_checks_in_torchs_order():
    """Found by the fuzzer against torch: promotion before the kernel's dtype check (gcd/lcm),
    a bad dim before a refused dtype (sum/nansum/prod), hash_tensor's out= dtype."""
    u16 = ember.ones(3, dtype=ember.uint16)
    with pytest.raises(RuntimeError, match="attempted to promote Int and UInt16"):
        ember.gcd(ember.ones(3, dtype=ember.int32), u16)
    with pytest.raises(RuntimeError, match="attempted to promote ComplexFloat and UInt16"):
        ember.lcm(ember.ones(3, dtype=ember.complex64), u16)
    with pytest.raises(NotImplementedError, match="\"gcd_cpu\" not implemented for 'UInt16'"):
        ember.gcd(u16, u16)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Short"):
        ember.ones(2, dtype=ember.int16).gcd_(ember.ones(2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.nansum(ember.ones(1), (1, 2), dtype=ember.uint32)
    with pytest.raises(IndexError, match="Dimension out of range"):
        u16.prod(3)
    with pytest.raises(RuntimeError, match="Expected result to be of dtype uint64, but got Half"):
        ember.hash_tensor(ember.ones(2, 3), out=ember.empty(0, dtype=ember.float16))
    out = ember.empty(0, dtype=ember.uint64)
    assert ember.hash_tensor(ember.ones(2, 3), 1, out=out) is out and out.shape == (2,)
    assert out.tolist() == [0x3FF0000000000000] * 2  # three equal values xor to one of them
