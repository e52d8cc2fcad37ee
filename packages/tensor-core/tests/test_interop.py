"""Zero-copy interop: from_numpy / Tensor.numpy / __array__, the buffer protocol, and DLPack
both ways (NumPy always; PyTorch when it is installed).

"Shares memory" is checked by writing through one side and reading through the other;
lifetimes by deleting the producer, collecting garbage, and reading the consumer's values.
"""

import copy
import ctypes
import gc
import importlib
import pickle
import re
import sys
import warnings
import weakref

import numpy as np
import pytest

import ember

NUMPY_DTYPES = [
    (np.bool_, ember.bool),
    (np.uint8, ember.uint8),
    (np.int8, ember.int8),
    (np.int16, ember.int16),
    (np.int32, ember.int32),
    (np.int64, ember.int64),
    (np.float16, ember.float16),
    (np.float32, ember.float32),
    (np.float64, ember.float64),
    (np.uint16, ember.uint16),
    (np.uint32, ember.uint32),
    (np.uint64, ember.uint64),
]
NUMPY_DTYPE_IDS = [np.dtype(d).name for d, _ in NUMPY_DTYPES]

UNSUPPORTED_MSG = (
    "can't convert np.ndarray of type {}. The only supported types are: float64, float32, "
    "float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, uint16, uint8, "
    "and bool."
)
NEGATIVE_STRIDES_MSG = (
    "At least one stride in the given numpy array is negative, and tensors with negative strides "
    "are not currently supported. (You can probably work around this by making a copy of your "
    "array with array.copy().)"
)


def sample(np_dtype, shape=(3, 4)):
    """Distinct, exactly representable values of the given dtype."""
    n = int(np.prod(shape))
    if np_dtype is np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) % 100).astype(np_dtype).reshape(shape)


def one_value(np_dtype):
    return True if np_dtype is np.bool_ else 7


@pytest.fixture
def grad_tensor():
    """A float tensor that requires grad, also when ember-autograd is not installed (a pass-through
    hook stands in for it: these tests only need the flag, never a backward pass)."""
    saved = ember._C._get_autograd_hook()
    if saved is None:
        try:
            importlib.import_module("ember.autograd")
        except ImportError:
            ember._C._set_autograd_hook(lambda name, fn, args, kwargs: fn(*args, **kwargs))
    try:
        yield ember.ones(3).requires_grad_(True)
    finally:
        if saved is None and "ember.autograd" not in sys.modules:
            ember._C._set_autograd_hook(None)


def collect():
    for _ in range(2):
        gc.collect()


# ---------------------------------------------------------------------------------------------
# from_numpy


@pytest.mark.parametrize("np_dtype,dtype", NUMPY_DTYPES, ids=NUMPY_DTYPE_IDS)
def test_from_numpy_dtypes_and_sharing(np_dtype, dtype):
    a = sample(np_dtype)
    t = ember.from_numpy(a)
    assert t.dtype == dtype
    assert t.shape == a.shape
    assert t.data_ptr() == a.ctypes.data
    assert t.tolist() == a.tolist()
    # writes are visible both ways
    t[1, 2] = one_value(np_dtype)
    assert a[1, 2] == one_value(np_dtype)
    a[2, 3] = 0
    assert t[2, 3].item() == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.T,
        lambda a: a[::2],
        lambda a: a[:, 1::3],
        lambda a: a[1:, ::2].T,
        lambda a: a[:, None, :],
        lambda a: a[1],
        lambda a: a[:, 2],
    ],
    ids=["T", "rows_step", "cols_step", "mixed", "newaxis", "row", "col"],
)
def test_from_numpy_strided_views(make):
    base = np.arange(48, dtype=np.float64).reshape(6, 8)
    a = make(base)
    t = ember.from_numpy(a)
    assert t.shape == a.shape
    for d in range(a.ndim):
        if a.shape[d] > 1:  # the stride of a size-1 dimension never addresses memory
            assert t.stride(d) == a.strides[d] // a.itemsize
    assert t.tolist() == a.tolist()
    assert t.data_ptr() == a.ctypes.data
    # write through the strided tensor lands in the right place of the base array
    idx = (0,) * a.ndim
    t[idx] = -1.0
    assert a[idx] == -1.0


def test_from_numpy_strides_in_elements():
    a = np.zeros((4, 6), dtype=np.int32)[::2, ::3]
    t = ember.from_numpy(a)
    assert t.stride() == (12, 3)
    assert not t.is_contiguous()


def test_from_numpy_broadcast_zero_stride():
    a = np.broadcast_to(np.arange(3.0), (4, 3))  # read-only, stride 0
    with pytest.warns(UserWarning, match="not writable"):
        t = ember.from_numpy(a)
    assert t.stride() == (0, 1)
    assert t.tolist() == a.tolist()


def test_from_numpy_zero_size():
    for shape in [(0,), (0, 3), (2, 0, 4)]:
        a = np.zeros(shape, dtype=np.float32)
        t = ember.from_numpy(a)
        assert t.shape == shape
        assert t.numel() == 0
        assert t.tolist() == a.tolist()
    # strides of an empty array never address memory: even reversed views are accepted
    t = ember.from_numpy(np.zeros(0)[::-1])
    assert t.shape == (0,)


def test_from_numpy_zero_dim():
    a = np.array(3.5, dtype=np.float64)
    t = ember.from_numpy(a)
    assert t.shape == ()
    assert t.item() == 3.5
    t.fill_(2.0)
    assert a[()] == 2.0


def test_from_numpy_negative_strides():
    a = np.arange(6.0)
    with pytest.raises(ValueError, match=re.escape(NEGATIVE_STRIDES_MSG)):
        ember.from_numpy(a[::-1])
    with pytest.raises(ValueError, match=re.escape(NEGATIVE_STRIDES_MSG)):
        ember.from_numpy(np.arange(12).reshape(3, 4)[:, ::-2])
    # a reversed size-1 dimension never addresses memory with its stride
    t = ember.from_numpy(np.arange(4.0).reshape(1, 4)[::-1])
    assert t.tolist() == [[0.0, 1.0, 2.0, 3.0]]


def test_from_numpy_stride_not_multiple_of_itemsize():
    raw = np.zeros(16, dtype=np.uint8)
    a = np.ndarray(shape=(3,), dtype=np.int32, buffer=raw, strides=(3,))
    with pytest.raises(ValueError, match="strides not a multiple of the element byte size"):
        ember.from_numpy(a)


def test_from_numpy_unaligned_data():
    raw = np.arange(33, dtype=np.uint8)
    a = np.frombuffer(raw.data, dtype=np.float32, count=8, offset=1)  # misaligned
    # Refused (the kernels' typed loads need alignment); an aligned copy works.
    with pytest.raises(ValueError, match="not aligned"):
        ember.from_numpy(a)
    t = ember.from_numpy(np.require(a, requirements="A"))
    assert t.tolist() == a.tolist()
    assert ember.tensor(a).tolist() == a.tolist()  # ember.tensor copies, so it accepts it


@pytest.mark.parametrize(
    "arr,name",
    [
        (np.zeros(2, dtype=object), "numpy.object_"),
        (np.zeros(2, dtype=np.clongdouble), "numpy.clongdouble"),
        (np.array(["a", "b"]), "numpy.str_"),
        (np.zeros(2, dtype="datetime64[s]"), "numpy.datetime64"),
        (np.zeros(2, dtype=[("x", np.int32)]), "numpy.void"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_from_numpy_unsupported_dtypes(arr, name):
    with pytest.raises(TypeError, match=re.escape(UNSUPPORTED_MSG.format(name))):
        ember.from_numpy(arr)


def test_from_numpy_unsupported_message_exact():
    with pytest.raises(TypeError) as info:
        ember.from_numpy(np.array([None, 1]))
    assert str(info.value) == UNSUPPORTED_MSG.format("numpy.object_")


def test_from_numpy_long_double():
    if np.dtype(np.longdouble).itemsize == 8:
        pytest.skip("longdouble is float64 on this platform")
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.longdouble"):
        ember.from_numpy(np.zeros(2, dtype=np.longdouble))


def test_from_numpy_byte_swapped():
    other = ">" if sys.byteorder == "little" else "<"
    a = np.arange(4, dtype=other + "f4")
    with pytest.raises(ValueError, match="byte order"):
        ember.from_numpy(a)
    # the fix the error suggests works
    assert ember.from_numpy(a.astype(np.float32)).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_from_numpy_not_writable_warns_and_shares():
    a = np.arange(4.0)
    a.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        t = ember.from_numpy(a)
    assert t.data_ptr() == a.ctypes.data
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_from_numpy_rejects_non_arrays():
    with pytest.raises(TypeError, match=re.escape("expected np.ndarray (got list)")):
        ember.from_numpy([1, 2, 3])
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy(ember.ones(2))


def test_from_numpy_subclass_and_scalar_array():
    m = np.ma.masked_array([1.0, 2.0, 3.0])
    t = ember.from_numpy(m)
    assert t.tolist() == [1.0, 2.0, 3.0]


def test_from_numpy_keeps_array_alive():
    a = np.arange(10.0)
    ref = weakref.ref(a)
    t = ember.from_numpy(a)
    del a
    collect()
    assert ref() is not None
    assert t.tolist() == [float(i) for i in range(10)]
    v = t[2:5]  # a view keeps the storage, and so the array, alive
    del t
    collect()
    assert ref() is not None
    assert v.tolist() == [2.0, 3.0, 4.0]
    del v
    collect()
    assert ref() is None


def test_from_numpy_then_numpy_round_trip():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    n = ember.from_numpy(a).numpy()
    assert np.shares_memory(a, n)
    n[0, 0] = 99
    assert a[0, 0] == 99


# ---------------------------------------------------------------------------------------------
# Tensor.numpy / __array__


@pytest.mark.parametrize("np_dtype,dtype", NUMPY_DTYPES, ids=NUMPY_DTYPE_IDS)
def test_numpy_dtypes_and_sharing(np_dtype, dtype):
    t = ember.tensor(sample(np_dtype).tolist(), dtype=dtype)
    n = t.numpy()
    assert n.dtype == np.dtype(np_dtype)
    assert n.shape == tuple(t.shape)
    assert n.tolist() == t.tolist()
    assert n.ctypes.data == t.data_ptr()
    assert n.flags.writeable
    n[0, 1] = one_value(np_dtype)
    assert t[0, 1].item() == one_value(np_dtype)
    t[2, 2] = 0
    assert n[2, 2] == 0


def test_numpy_strided_views():
    t = ember.arange(24, dtype=ember.float32).reshape(4, 6)
    for v in [t.t(), t[::2, 1::2], t[1], t[:, 3], t.unsqueeze(1), t.expand(2, 4, 6)]:
        n = v.numpy()
        assert n.shape == tuple(v.shape)
        assert n.strides == tuple(s * 4 for s in v.stride())
        assert n.tolist() == v.tolist()
    n = t.t().numpy()
    n[0, 1] = -1  # element (1, 0) of t
    assert t[1, 0].item() == -1


def test_numpy_zero_dim_and_zero_size():
    t = ember.tensor(2.5)
    n = t.numpy()
    assert n.shape == () and n[()] == 2.5
    n[()] = 4.0
    assert t.item() == 4.0
    for shape in [(0,), (3, 0)]:
        e = ember.zeros(shape)
        assert e.numpy().shape == shape
        assert e.numpy().dtype == np.float32


def test_numpy_bfloat16_unsupported():
    t = ember.ones(3, dtype=ember.bfloat16)
    with pytest.raises(TypeError, match="^Got unsupported ScalarType BFloat16$"):
        t.numpy()
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        np.asarray(t)


def test_numpy_requires_grad(grad_tensor):
    t = grad_tensor
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
        ),
    ):
        t.numpy()
    n = t.numpy(force=True)
    assert n.tolist() == [1.0, 1.0, 1.0]
    assert t.detach().numpy().ctypes.data == t.data_ptr()
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(t)


def test_numpy_force_keyword_only():
    t = ember.ones(2)
    assert t.numpy(force=True).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError):
        t.numpy(True)


def test_numpy_keeps_storage_alive():
    t = ember.arange(6, dtype=ember.float64)
    n = t.numpy()
    base = n.base
    assert base is not None
    del t
    collect()
    assert n.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    n[:] = 1.0  # still valid memory
    assert n.sum() == 6.0


def test_numpy_storage_refcount():
    t = ember.ones(4)
    before = ember._C._storage_use_count(t)
    n = t.numpy()
    assert ember._C._storage_use_count(t) == before + 1
    del n
    collect()
    assert ember._C._storage_use_count(t) == before


def test_array_protocol():
    t = ember.arange(6, dtype=ember.int64).reshape(2, 3)
    a = t.__array__()
    assert a.dtype == np.int64 and np.shares_memory(a, t.numpy())
    assert np.asarray(t).ctypes.data == t.data_ptr()  # no copy
    c = np.array(t)  # copy
    assert c.ctypes.data != t.data_ptr() and c.tolist() == t.tolist()
    c2 = t.__array__(copy=True)
    assert c2.ctypes.data != t.data_ptr() and c2.tolist() == t.tolist()
    f = np.asarray(t, dtype=np.float64)
    assert f.dtype == np.float64 and f.tolist() == t.tolist()
    same = t.__array__(np.int64, copy=False)
    assert same.ctypes.data == t.data_ptr()
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        t.__array__(np.float32, copy=False)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        with pytest.raises((TypeError, ValueError)):
            np.array(ember.ones(2, dtype=ember.bfloat16), dtype=np.float32, copy=False)
    # NumPy functions accept tensors
    assert np.concatenate([ember.ones(2), ember.zeros(1)]).tolist() == [1.0, 1.0, 0.0]
    assert np.sin(ember.zeros(3)).tolist() == [0.0, 0.0, 0.0]


def test_array_protocol_bfloat16_with_dtype():
    t = ember.tensor([1.5, -2.0, 0.25], dtype=ember.bfloat16)
    a = np.asarray(t, dtype=np.float32)
    assert a.dtype == np.float32 and a.tolist() == [1.5, -2.0, 0.25]


# ---------------------------------------------------------------------------------------------
# The buffer protocol

BUFFER_FORMATS = {
    ember.bool: "?",
    ember.uint8: "B",
    ember.int8: "b",
    ember.int16: "h",
    ember.int32: "i",
    ember.int64: ("l", "q"),
    ember.float16: "e",
    ember.float32: "f",
    ember.float64: "d",
    ember.uint16: "H",
    ember.uint32: "I",
    ember.uint64: ("L", "Q"),
}


@pytest.mark.parametrize("np_dtype,dtype", NUMPY_DTYPES, ids=NUMPY_DTYPE_IDS)
def test_memoryview(np_dtype, dtype):
    t = ember.tensor(sample(np_dtype).tolist(), dtype=dtype)
    m = memoryview(t)
    assert m.format in BUFFER_FORMATS[dtype]
    assert m.itemsize == t.element_size()
    assert m.shape == (3, 4)
    assert m.strides == (4 * t.element_size(), t.element_size())
    assert not m.readonly
    assert m.nbytes == t.nbytes
    a = np.asarray(m)
    assert a.dtype == np.dtype(np_dtype)
    assert a.tolist() == t.tolist()
    a[0, 0] = one_value(np_dtype)  # writes through the buffer
    assert t[0, 0].item() == one_value(np_dtype)
    m.release()


def test_buffer_strided_and_lifetime():
    t = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    v = t.t()
    m = memoryview(v)
    assert m.shape == (4, 3)
    assert m.strides == (4, 16)
    assert not m.c_contiguous and m.f_contiguous
    assert np.asarray(m).tolist() == v.tolist()
    del t, v
    collect()
    assert m.tolist() == [[float(r * 4 + c) for r in range(3)] for c in range(4)]


def test_buffer_zero_dim_and_empty():
    m = memoryview(ember.tensor(3, dtype=ember.int32))
    assert m.shape == () and m.ndim == 0
    assert np.asarray(m)[()] == 3
    m = memoryview(ember.zeros(0, 5))
    assert m.shape == (0, 5) and m.nbytes == 0


def test_frombuffer_and_bytes():
    t = ember.arange(5, dtype=ember.float32)
    a = np.frombuffer(t, dtype=np.float32)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert a.ctypes.data == t.data_ptr()
    raw = np.frombuffer(t, dtype=np.uint8)
    assert raw.size == 20
    assert bytes(t) == np.arange(5, dtype=np.float32).tobytes()
    # a non-contiguous tensor cannot be exported as a flat buffer
    with pytest.raises(BufferError, match="contiguous"):
        np.frombuffer(ember.ones(3, 4).t(), dtype=np.float32)


def test_buffer_bfloat16_and_requires_grad(grad_tensor):
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(ember.ones(2, dtype=ember.bfloat16))
    t = grad_tensor
    with pytest.raises(BufferError, match="requires grad"):
        memoryview(t)


def test_buffer_release_drops_storage_reference():
    t = ember.ones(4)
    before = ember._C._storage_use_count(t)
    m = memoryview(t)
    assert ember._C._storage_use_count(t) == before + 1
    m.release()
    assert ember._C._storage_use_count(t) == before


# ---------------------------------------------------------------------------------------------
# DLPack


def capsule_name(cap):
    return re.search(r'capsule object "([a-z_]+)"', repr(cap)).group(1)


def test_dlpack_device():
    assert ember.ones(2).__dlpack_device__() == (1, 0)


def test_dlpack_capsules_and_consumption():
    t = ember.arange(4, dtype=ember.float32)
    legacy = t.__dlpack__()
    assert capsule_name(legacy) == "dltensor"
    versioned = t.__dlpack__(max_version=(1, 0))
    assert capsule_name(versioned) == "dltensor_versioned"
    assert capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"
    assert capsule_name(t.__dlpack__(max_version=(1, 3))) == "dltensor_versioned"
    a = ember.from_dlpack(legacy)
    b = ember.from_dlpack(versioned)
    assert capsule_name(legacy) == "used_dltensor"
    assert capsule_name(versioned) == "used_dltensor_versioned"
    assert a.data_ptr() == b.data_ptr() == t.data_ptr()
    with pytest.raises(ValueError, match="already been consumed"):
        ember.from_dlpack(legacy)
    assert capsule_name(ember.to_dlpack(t)) == "dltensor"


def test_dlpack_unconsumed_capsules_are_freed():
    t = ember.ones(8)
    before = ember._C._storage_use_count(t)
    caps = [t.__dlpack__(), t.__dlpack__(max_version=(1, 0))]
    assert ember._C._storage_use_count(t) == before + 2
    del caps
    collect()
    assert ember._C._storage_use_count(t) == before


def test_dlpack_consumed_capsule_ownership():
    t = ember.ones(8)
    before = ember._C._storage_use_count(t)
    cap = t.__dlpack__(max_version=(1, 0))
    u = ember.from_dlpack(cap)
    del cap  # consumed: destroying the capsule must not free what u now owns
    collect()
    assert ember._C._storage_use_count(t) == before + 1
    assert u.tolist() == [1.0] * 8
    del u
    collect()
    assert ember._C._storage_use_count(t) == before


def test_dlpack_export_options():
    t = ember.arange(3, dtype=ember.float64)
    c = ember.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=True))
    assert c.data_ptr() != t.data_ptr() and c.tolist() == t.tolist()
    s = ember.from_dlpack(t.__dlpack__(max_version=(1, 0), copy=False, dl_device=(1, 0)))
    assert s.data_ptr() == t.data_ptr()
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match="stream"):
        t.__dlpack__(stream="default")
    assert ember.from_dlpack(t, copy=True).data_ptr() != t.data_ptr()


def test_dlpack_requires_grad(grad_tensor):
    t = grad_tensor
    with pytest.raises(RuntimeError, match="Can't export tensors that require gradient"):
        t.__dlpack__()
    assert ember.from_dlpack(t.detach()).tolist() == [1.0, 1.0, 1.0]


def test_from_dlpack_rejects_other_objects():
    with pytest.raises(TypeError, match="__dlpack__"):
        ember.from_dlpack([1, 2])


def test_from_dlpack_legacy_producer_fallback():
    class Legacy:
        """A producer from before DLPack 1.0: __dlpack__ takes no max_version."""

        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    t = ember.arange(5, dtype=ember.int16)
    u = ember.from_dlpack(Legacy(t))
    assert u.dtype == ember.int16 and u.data_ptr() == t.data_ptr()


class _ForeignDevice:
    def __init__(self, device):
        self.device = device

    def __dlpack__(self, **kw):  # pragma: no cover - never reached
        raise AssertionError

    def __dlpack_device__(self):
        return self.device


def test_from_dlpack_rejects_foreign_devices():
    with pytest.raises(BufferError, match="device type 7"):  # kDLVulkan
        ember.from_dlpack(_ForeignDevice((7, 0)))


@pytest.mark.skipif(ember.cuda.is_available(), reason="needs a machine without a GPU")
def test_from_dlpack_of_cuda_memory_without_a_gpu():
    with pytest.raises(RuntimeError, match="from_dlpack of a cuda:0 tensor"):
        ember.from_dlpack(_ForeignDevice((2, 0)))


@pytest.mark.parametrize("np_dtype,dtype", NUMPY_DTYPES, ids=NUMPY_DTYPE_IDS)
def test_dlpack_numpy_round_trip(np_dtype, dtype):
    # ember -> NumPy
    t = ember.tensor(sample(np_dtype).tolist(), dtype=dtype)
    n = np.from_dlpack(t)
    assert n.dtype == np.dtype(np_dtype)
    assert n.tolist() == t.tolist()
    assert n.ctypes.data == t.data_ptr()
    # NumPy -> ember
    a = sample(np_dtype)
    u = ember.from_dlpack(a)
    assert u.dtype == dtype and u.tolist() == a.tolist()
    assert u.data_ptr() == a.ctypes.data


def test_dlpack_numpy_shares_memory_and_lifetime():
    t = ember.zeros(2, 3)
    n = np.from_dlpack(t)
    n[1, 2] = 5.0
    assert t[1, 2].item() == 5.0
    t[0, 0] = -1.0
    assert n[0, 0] == -1.0
    del t
    collect()
    assert n.tolist() == [[-1.0, 0.0, 0.0], [0.0, 0.0, 5.0]]

    a = np.arange(6.0).reshape(2, 3)
    ref = weakref.ref(a)
    u = ember.from_dlpack(a)
    u[0, 1] = 42.0
    assert a[0, 1] == 42.0
    del a
    collect()
    assert ref() is not None  # the producer's buffer is owned by u's storage
    assert u.tolist() == [[0.0, 42.0, 2.0], [3.0, 4.0, 5.0]]
    del u
    collect()
    assert ref() is None  # ... and handed back when the storage dies


def test_dlpack_numpy_strided_zero_dim_and_empty():
    base = np.arange(40, dtype=np.int64).reshape(5, 8)
    for a in [base.T, base[::2, 1::3], base[3], np.array(7), np.zeros((0, 4))]:
        u = ember.from_dlpack(a)
        assert u.shape == a.shape and u.tolist() == a.tolist()
    t = ember.arange(40, dtype=ember.int64).reshape(5, 8)
    for v in [t.t(), t[::2, 1::3], t[3], ember.tensor(7), ember.zeros(0, 4)]:
        n = np.from_dlpack(v)
        assert n.shape == tuple(v.shape) and n.tolist() == v.tolist()


def test_dlpack_numpy_read_only_array_warns():
    a = np.arange(3.0)
    a.flags.writeable = False
    try:
        cap = a.__dlpack__(max_version=(1, 0))
    except (TypeError, BufferError):
        pytest.skip("this NumPy cannot export read-only arrays")
    with pytest.warns(UserWarning, match="read-only"):
        u = ember.from_dlpack(cap)
    assert u.tolist() == [0.0, 1.0, 2.0]


def test_dlpack_unsupported_dtype_leaves_capsule_unconsumed():
    a = np.zeros(3, dtype=np.uint16)
    ref = weakref.ref(a)
    cap = a.__dlpack__()
    # a 24-bit unsigned type, which nothing exports: DLTensor.dtype.bits sits at byte 21 (after
    # the data pointer, the device's two int32s, ndim and dtype.code)
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    ctypes.c_uint8.from_address(get_pointer(cap, b"dltensor") + 21).value = 24
    with pytest.raises(BufferError, match="unsupported DLPack dtype"):
        ember.from_dlpack(cap)
    assert capsule_name(cap) == "dltensor"
    del a, cap
    collect()
    assert ref() is None  # the capsule's destructor handed the array back


# ---------------------------------------------------------------------------------------------
# DLPack with PyTorch

TORCH_DTYPES = [
    ("bool", ember.bool),
    ("uint8", ember.uint8),
    ("int8", ember.int8),
    ("int16", ember.int16),
    ("int32", ember.int32),
    ("int64", ember.int64),
    ("float16", ember.float16),
    ("bfloat16", ember.bfloat16),
    ("float32", ember.float32),
    ("float64", ember.float64),
]


@pytest.mark.parametrize("name,dtype", TORCH_DTYPES, ids=[n for n, _ in TORCH_DTYPES])
def test_dlpack_torch_round_trip(name, dtype):
    torch = pytest.importorskip("torch")
    tdt = getattr(torch, name)
    values = (
        [[True, False, True], [False, False, True]] if name == "bool" else [[1, 2, 3], [4, 5, 6]]
    )
    # ember -> torch
    t = ember.tensor(values, dtype=dtype)
    tt = torch.from_dlpack(t)
    assert tt.dtype == tdt
    assert tt.tolist() == t.tolist()
    assert tt.data_ptr() == t.data_ptr()
    # torch -> ember
    src = torch.tensor(values, dtype=tdt)
    u = ember.from_dlpack(src)
    assert u.dtype == dtype and u.tolist() == src.tolist()
    assert u.data_ptr() == src.data_ptr()


def test_dlpack_torch_shares_memory_and_lifetime():
    torch = pytest.importorskip("torch")
    t = ember.zeros(3, 4)
    tt = torch.from_dlpack(t)
    tt[1, 1] = 3.0
    assert t[1, 1].item() == 3.0
    t[2, 3] = 7.0
    assert tt[2, 3].item() == 7.0
    del t
    collect()
    assert tt.sum().item() == 10.0
    tt.add_(1)  # memory still valid and writable
    assert tt[2, 3].item() == 8.0

    src = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    u = ember.from_dlpack(src)
    u[0, 0] = -5.0
    assert src[0, 0].item() == -5.0
    src[2, 2] = 100.0
    assert u[2, 2].item() == 100.0
    del src
    collect()
    expected = [float(i) for i in range(12)]
    expected[0], expected[10] = -5.0, 100.0
    assert u.reshape(12).tolist() == expected


def test_dlpack_torch_strided_and_zero_dim():
    torch = pytest.importorskip("torch")
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    for src in [base.t(), base[::2, 1::2], base[1], torch.tensor(5.0), torch.zeros(0, 3)]:
        u = ember.from_dlpack(src)
        assert tuple(u.shape) == tuple(src.shape) and u.tolist() == src.tolist()
    t = ember.arange(24, dtype=ember.float64).reshape(4, 6)
    for v in [t.t(), t[::2, 1::2], t[1], ember.tensor(5.0), ember.zeros(0, 3)]:
        tt = torch.from_dlpack(v)
        assert tuple(tt.shape) == tuple(v.shape) and tt.tolist() == v.tolist()
        if v.numel() > 1:
            assert tt.stride() == v.stride()


def test_dlpack_torch_capsules():
    torch = pytest.importorskip("torch")
    t = ember.arange(3, dtype=ember.int32)
    assert torch.from_dlpack(t.__dlpack__()).tolist() == [0, 1, 2]
    src = torch.arange(3)
    assert ember.from_dlpack(torch.utils.dlpack.to_dlpack(src)).tolist() == [0, 1, 2]


# ---------------------------------------------------------------------------------------------
# ember.tensor / ember.as_tensor on arrays


def test_tensor_from_ndarray_copies():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ember.tensor(a)
    assert t.dtype == ember.float32 and t.tolist() == a.tolist()
    t[0, 0] = 100.0
    assert a[0, 0] == 0.0


def test_tensor_from_non_contiguous_ndarray():
    a = np.arange(24, dtype=np.int64).reshape(4, 6)
    for v in [a.T, a[::2, 1::3], a[:, ::-1], a[::-1]]:
        t = ember.tensor(v)
        assert t.tolist() == v.tolist()
        assert t.is_contiguous()


def test_tensor_from_ndarray_dtype_conversion():
    a = np.array([[1.5, -2.25], [3.0, 0.5]])
    t = ember.tensor(a, dtype=ember.bfloat16)
    assert t.dtype == ember.bfloat16
    assert t.float().tolist() == a.tolist()
    assert ember.tensor(a.T, dtype=ember.bfloat16).float().tolist() == a.T.tolist()
    assert ember.tensor(np.array([1, 2]), dtype=ember.float16).tolist() == [1.0, 2.0]


def test_as_tensor_shares_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = ember.as_tensor(a)
    assert t.data_ptr() == a.ctypes.data
    t[0, 0] = 9.0
    assert a[0, 0] == 9.0
    c = ember.as_tensor(a, dtype=ember.float32)  # a conversion has to copy
    assert c.dtype == ember.float32 and c.tolist() == a.tolist()


def test_tensor_from_zero_dim_ndarray():
    t = ember.tensor(np.array(3))
    assert t.shape == () and t.item() == 3


def test_tensor_from_read_only_ndarray_does_not_warn():
    a = np.arange(3.0)
    a.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = ember.tensor(a)
    assert t.tolist() == [0.0, 1.0, 2.0]


def test_tensor_from_byte_swapped_ndarray():
    other = ">" if sys.byteorder == "little" else "<"
    t = ember.tensor(np.arange(3, dtype=other + "f4"))
    assert t.dtype == ember.float32 and t.tolist() == [0.0, 1.0, 2.0]


def test_private_from_numpy_is_quiet():
    a = np.arange(3.0)
    a.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = ember._C._from_numpy(a)
    assert t.data_ptr() == a.ctypes.data
    with pytest.warns(UserWarning, match="not writable"):
        ember._C._from_numpy(a, True)


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_dtypes_pickle_to_the_same_object(protocol):
    for name in ("bool", "uint8", "int64", "float16", "bfloat16", "float32", "float64"):
        dt = getattr(ember, name)
        assert pickle.loads(pickle.dumps(dt, protocol=protocol)) is dt
    assert copy.deepcopy(ember.float32) is ember.float32
