"""torch names that real programs reach: copies and scatters written with views (narrow_copy,
as_strided_scatter, nonzero_static, index_reduce, cholesky_inverse, empty_permuted), the in-place
samplers composed from uniform_/normal_ (cauchy_, log_normal_, geometric_), layout queries
(to_dense, dim_order) and process-wide settings (warn-always, inter-op threads, what the build
has, typename, anomaly mode). Oracles: NumPy and hand-computed values; torch where installed."""

import subprocess
import sys

import numpy as np
import pytest

import ember


def t(a, dtype=None):
    return ember.from_numpy(np.array(a, dtype=dtype))


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ---- copies and scatters ------------------------------------------------------------------------


def test_narrow_copy_is_a_contiguous_copy():
    a = rand(3, 5)
    x = t(a)
    got = ember.narrow_copy(x, 1, 1, 3)
    np.testing.assert_array_equal(got.numpy(), a[:, 1:4])
    assert got.is_contiguous() and got.data_ptr() != x.data_ptr()
    got[0, 0] = 100.0
    assert x[0, 1].item() == a[0, 1]  # a copy, not a view
    np.testing.assert_array_equal(x.narrow_copy(0, 2, 1).numpy(), a[2:3])
    out = ember.empty(0, dtype=ember.float64)
    ember.narrow_copy(x, 0, 0, 2, out=out)
    np.testing.assert_array_equal(out.numpy(), a[:2])
    with pytest.raises(IndexError):
        ember.narrow_copy(x, 2, 0, 1)


def test_as_strided_scatter_writes_through_the_strided_view_of_a_copy():
    base = np.arange(8.0)
    src = np.array([[10.0, 11.0], [12.0, 13.0]])
    got = ember.as_strided_scatter(t(base), t(src), (2, 2), (3, 1), 1)
    want = base.copy()
    for i in range(2):
        for j in range(2):
            want[1 + 3 * i + j] = src[i, j]
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(t(base).as_strided_scatter(t(src), (2, 2), (3, 1), 1).numpy(),
                                  want)
    with pytest.raises(RuntimeError, match="src to have a size equal to the slice"):
        ember.as_strided_scatter(t(base), t(np.ones(3)), (2, 2), (3, 1))


def test_as_strided_scatter_follows_the_inputs_layout():
    # a transposed input keeps its strides, and the strided positions are positions in its
    # storage: storage index 2 of a (3, 3) transposed view is element (2, 0)
    x = ember.zeros(3, 3).t()
    got = ember.as_strided_scatter(x, t([5.0, 6.0], "float32"), (2,), (1,), 1)
    assert tuple(got.stride()) == (1, 3)
    want = np.zeros((3, 3), dtype=np.float32)
    want[1, 0], want[2, 0] = 5.0, 6.0
    np.testing.assert_array_equal(got.numpy(), want)
    torch = pytest.importorskip("torch")
    for make in (lambda m: m.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),
                 lambda m: m.arange(12.0).reshape(3, 4)[1:]):
        ours = ember.as_strided_scatter(make(ember), ember.ones(2, 2) * -1, (2, 2), (3, 1), 1)
        theirs = torch.as_strided_scatter(make(torch), -torch.ones(2, 2), (2, 2), (3, 1), 1)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert tuple(ours.stride()) == tuple(theirs.stride())


@pytest.mark.parametrize("values,size,fill", [([0, 3, 0, 4, 5], 2, -1), ([0, 3, 0, 4], 5, -1),
                                              ([0, 0], 3, 7), ([1, 2], 0, -1)])
def test_nonzero_static_cuts_or_pads_to_size(values, size, fill):
    got = ember.nonzero_static(t(values), size=size, fill_value=fill)
    found = np.argwhere(np.array(values))
    want = np.full((size, 1), fill, dtype=np.int64)
    want[:min(size, len(found))] = found[:size]
    assert got.dtype == ember.int64 and tuple(got.shape) == (size, 1)
    np.testing.assert_array_equal(got.numpy(), want)
    two_d = ember.nonzero_static(t([[0, 1], [2, 0]]), size=3)
    np.testing.assert_array_equal(two_d.numpy(), [[0, 1], [1, 0], [-1, -1]])
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.nonzero_static(t(values), size=-1)


def _index_reduce_oracle(a, dim, index, src, reduce, include_self):
    out = np.moveaxis(a.copy(), dim, 0)
    s = np.moveaxis(src, dim, 0)
    groups = {}
    for k, i in enumerate(index):
        groups.setdefault(i, []).append(s[k])
    for i, parts in groups.items():
        stack = ([out[i]] if include_self else []) + parts
        fn = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
        out[i] = fn(np.stack(stack), axis=0)
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_reduce_matches_a_loop(reduce, include_self, dim):
    a, src = rand(4, 3, seed=1), rand(4, 3, seed=2)
    n = a.shape[dim]
    index = np.array([n - 1, 0, n - 1, 1])[:src.shape[dim]]
    want = _index_reduce_oracle(a, dim % 2, index, src, reduce, include_self)
    got = ember.index_reduce(t(a), dim, t(index), t(src), reduce, include_self=include_self)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    x = t(a)
    x.index_reduce_(dim, t(index), t(src), reduce, include_self=include_self)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-12)


def test_index_reduce_errors_are_torchs():
    x, src = ember.zeros(3, 2), ember.ones(2, 2)
    with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean, amax or amin"):
        ember.index_reduce(x, 0, ember.tensor([0, 1]), src, "sum")
    with pytest.raises(IndexError, match="Number of indices"):
        ember.index_reduce(x, 0, ember.tensor([0, 1, 2]), src, "prod")
    with pytest.raises(RuntimeError, match="int32/int64"):
        ember.index_reduce(x, 0, ember.tensor([0.0, 1.0]), src, "prod")


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse_is_the_inverse_of_the_product(upper):
    a = rand(3, 4, 4, seed=3)
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    lower = np.linalg.cholesky(spd)
    factor = np.swapaxes(lower, -1, -2) if upper else lower
    got = ember.cholesky_inverse(t(factor), upper)
    np.testing.assert_allclose(got.numpy(), np.linalg.inv(spd), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(t(factor[0]).cholesky_inverse(upper).numpy(),
                               np.linalg.inv(spd[0]), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="square matrices"):
        ember.cholesky_inverse(t(np.ones((2, 3))))


def test_empty_permuted_lays_dims_out_in_the_order_given():
    x = ember.empty_permuted((2, 3, 4), (0, 2, 1), dtype=ember.float64)
    assert tuple(x.shape) == (2, 3, 4) and x.dtype == ember.float64
    assert tuple(x.stride()) == (12, 1, 3)  # dim 1 innermost, then dim 2, then dim 0
    y = ember.empty_permuted((2, 3), (1, 0), requires_grad=True)
    assert tuple(y.stride()) == (1, 2) and y.requires_grad
    with pytest.raises(RuntimeError, match="physical_layout"):
        ember.empty_permuted((2, 3), (0, 0))


# ---- samplers ------------------------------------------------------------------------------------


def draw(method, *args, dtype=ember.float64, n=40000, seed=5, **kwargs):
    g = ember.Generator().manual_seed(seed)
    return getattr(ember.empty(n, dtype=dtype), method)(*args, generator=g, **kwargs).numpy()


def test_cauchy_has_its_median_and_quartiles():
    v = draw("cauchy_", 2.0, 0.5)
    # quartiles of a Cauchy(median, sigma): median -+ sigma
    np.testing.assert_allclose(np.percentile(v, [25, 50, 75]), [1.5, 2.0, 2.5], atol=0.03)
    assert np.array_equal(v, draw("cauchy_", 2.0, 0.5))  # the generator's stream: reproducible
    with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0"):
        ember.empty(2).cauchy_(0.0, 0.0)


def test_log_normal_is_the_exp_of_a_normal():
    v = draw("log_normal_", 1.0, 0.5)
    assert (v > 0).all()
    logs = np.log(v)
    assert abs(logs.mean() - 1.0) < 0.01 and abs(logs.std() - 0.5) < 0.01
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0"):
        ember.empty(2).log_normal_(0.0, -1.0)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64])
def test_geometric_counts_trials_to_the_first_success(dtype):
    v = draw("geometric_", 0.25, dtype=dtype)
    assert v.min() >= 1 and np.array_equal(v, np.round(v))
    assert abs(v.mean() - 4.0) < 0.06  # mean 1/p
    assert abs((v == 1).mean() - 0.25) < 0.01  # P(1) = p
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\)"):
        ember.empty(2).geometric_(1.5)


# ---- layout queries --------------------------------------------------------------------------------


def test_to_dense_of_a_strided_tensor_is_itself():
    x = ember.ones(2, 3)
    assert x.to_dense() is x
    assert x.to_dense(ember.float64).dtype == ember.float64


@pytest.mark.parametrize("shape,perm", [((2, 3, 4), (0, 1, 2)), ((2, 3, 4), (2, 0, 1)),
                                        ((2, 3, 4, 5), (0, 2, 3, 1)), ((1, 3, 1), (0, 1, 2)),
                                        ((4, 1, 2), (1, 2, 0))])
def test_dim_order_lists_dims_outermost_first(shape, perm):
    x = ember.empty(*[shape[p] for p in perm]).permute(*np.argsort(perm))
    assert tuple(x.shape) == shape
    got = x.dim_order()
    strides = x.stride()
    assert sorted(got) == list(range(len(shape)))
    assert all(strides[a] >= strides[b] for a, b in zip(got, got[1:]))
    torch = pytest.importorskip("torch")
    y = torch.empty(*[shape[p] for p in perm]).permute(*np.argsort(perm).tolist())
    assert got == y.dim_order()


# ---- process-wide settings -------------------------------------------------------------------------


def test_warn_always_is_read_back():
    before = ember.is_warn_always_enabled()
    try:
        ember.set_warn_always(True)
        assert ember.is_warn_always_enabled() is True
    finally:
        ember.set_warn_always(before)


def test_interop_threads_are_set_once():
    code = ("import os, ember\n"
            "assert ember.get_num_interop_threads() == (os.cpu_count() or 1)\n"
            "ember.set_num_interop_threads(3)\n"
            "assert ember.get_num_interop_threads() == 3\n"
            "ember.init_num_threads()\n"
            "try:\n"
            "    ember.set_num_interop_threads(2)\n"
            "except RuntimeError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "cannot set number of interop threads" in out.stdout
    with pytest.raises(TypeError):
        ember.set_num_interop_threads(1.5)


def test_what_the_build_has_and_typename():
    assert ember.has_lapack is True and ember.has_mkl is False and ember.has_openmp is False
    assert ember.typename(ember.ones(2)) == "ember.FloatTensor"
    assert ember.typename(ember.ones(2, dtype=ember.int64)) == "ember.LongTensor"
    assert ember.typename(3) == "int" and ember.typename(int) == "int"
    assert ember.typename(ember.Generator) == "ember._C.Generator" or \
        ember.typename(ember.Generator).endswith("Generator")
    assert ember.is_distributed(ember.ones(2)) is False


def test_anomaly_mode_is_autograds():
    pytest.importorskip("ember.autograd")
    assert ember.is_anomaly_enabled() is False
    try:
        ember.set_anomaly_enabled(True, check_nan=False)
        assert ember.is_anomaly_enabled() is True
        assert ember.is_anomaly_check_nan_enabled() is False
        assert ember.autograd.is_anomaly_enabled() is True
    finally:
        ember.set_anomaly_enabled(False)
    assert ember.is_anomaly_enabled() is False


def test_clip_in_place_is_clamp_in_place():
    x = t([-3.0, 0.5, 3.0])
    assert ember.clip_(x, -1, 1) is x
    np.testing.assert_array_equal(x.numpy(), [-1.0, 0.5, 1.0])


# ---- gradient (NumPy's numpy.gradient is the oracle) -----------------------------------------------


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("spacing", ["default", "number", "per-dim", "coordinates"])
def test_gradient_matches_numpy(edge_order, spacing):
    a = rand(4, 5, seed=7)
    coords = [np.array([0.0, 0.5, 2.0, 2.5]), np.array([-1.0, 0.0, 0.3, 1.0, 3.0])]
    kwargs, np_args = {}, ()
    if spacing == "number":
        kwargs, np_args = {"spacing": 0.5}, (0.5,)
    elif spacing == "per-dim":
        kwargs, np_args = {"spacing": [2.0, 0.25]}, (2.0, 0.25)
    elif spacing == "coordinates":
        kwargs, np_args = {"spacing": [t(c) for c in coords]}, tuple(coords)
    got = ember.gradient(t(a), edge_order=edge_order, **kwargs)
    want = np.gradient(a, *np_args, edge_order=edge_order)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12)


def test_gradient_of_chosen_dims_integers_and_errors():
    a = np.array([[1, 4, 9, 16], [2, 3, 5, 7]])
    (got,) = ember.gradient(t(a), dim=1)
    assert got.dtype == ember.float32  # integers: the default float dtype
    np.testing.assert_allclose(got.numpy(), np.gradient(a.astype(np.float64), axis=1))
    (got,) = ember.gradient(t(a, "float64"), spacing=[3.0], dim=[-2])
    np.testing.assert_allclose(got.numpy(), np.gradient(a.astype(np.float64), 3.0, axis=0))
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        ember.gradient(t(a, "float64"), edge_order=3)
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        ember.gradient(t([1.0, 2.0]), edge_order=2)
    with pytest.raises(RuntimeError, match="same length"):
        ember.gradient(t(a, "float64"), spacing=[1.0, 2.0, 3.0])


def test_device_modules_and_the_top_level_grad_scaler():
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cuda", 0)) is ember.cuda
    assert ember.get_device_module() is (ember.cuda if ember.cuda.is_available() else ember.cpu)
    with pytest.raises(RuntimeError):
        ember.get_device_module("xyz")
    assert ember.GradScaler is ember.amp.GradScaler


# ---- memory formats --------------------------------------------------------------------------------


def test_channels_last_strides_and_queries():
    a = rand(2, 3, 4, 5)
    x = t(a)
    y = x.contiguous(memory_format=ember.channels_last)
    assert tuple(y.stride()) == (60, 1, 15, 3)  # C innermost, then W, H, N
    np.testing.assert_array_equal(y.numpy(), a)
    assert y.is_contiguous(memory_format=ember.channels_last) and not y.is_contiguous()
    assert y.contiguous(memory_format=ember.channels_last) is y  # already so: itself
    assert tuple(y.contiguous().stride()) == (60, 20, 5, 1)
    assert y.is_contiguous(memory_format=ember.contiguous_format) is False
    # size-1 dims may have any stride
    assert ember.ones(2, 3, 1, 1).is_contiguous(memory_format=ember.channels_last)
    assert ember.ones(2, 1, 4, 4).is_contiguous(memory_format=ember.channels_last)
    assert not ember.ones(2, 3, 4).is_contiguous(memory_format=ember.channels_last)
    z = ember.ones(2, 3, 4, 5, 6).contiguous(memory_format=ember.channels_last_3d)
    assert tuple(z.stride()) == (360, 1, 90, 18, 3)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        ember.ones(2, 3, 4).contiguous(memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        x.is_contiguous(memory_format=ember.preserve_format)


def test_clone_and_to_take_a_memory_format():
    x = ember.ones(2, 3, 4, 5)
    y = x.contiguous(memory_format=ember.channels_last)
    assert tuple(y.clone().stride()) == (60, 1, 15, 3)  # preserve_format: the layout kept
    assert tuple(y.clone(memory_format=ember.contiguous_format).stride()) == (60, 20, 5, 1)
    assert tuple(x.clone(memory_format=ember.channels_last).stride()) == (60, 1, 15, 3)
    assert tuple(x.to(memory_format=ember.channels_last).stride()) == (60, 1, 15, 3)
    d = x.to(ember.float64, memory_format=ember.channels_last)
    assert d.dtype == ember.float64 and tuple(d.stride()) == (60, 1, 15, 3)
    assert x.to(memory_format=ember.preserve_format) is x


def test_memory_format_objects_and_factories():
    import pickle

    assert repr(ember.channels_last) == "ember.channels_last"
    assert isinstance(ember.channels_last, ember.memory_format)
    assert ember.legacy_contiguous_format is ember.contiguous_format
    assert pickle.loads(pickle.dumps(ember.channels_last_3d)) is ember.channels_last_3d
    assert ember.empty(2, 3, memory_format=ember.contiguous_format).is_contiguous()
    assert ember.zeros_like(ember.ones(2, 2), memory_format=ember.preserve_format).is_contiguous()
    with pytest.raises(NotImplementedError, match="contiguous\\(memory_format=ember.channels_last"):
        ember.rand_like(ember.ones(2, 3, 4, 5), memory_format=ember.channels_last)


def test_memory_formats_match_torch():
    torch = pytest.importorskip("torch")
    for shape, fmt in (((2, 3, 4, 5), "channels_last"), ((1, 3, 1, 5), "channels_last"),
                       ((2, 3, 2, 4, 5), "channels_last_3d")):
        ours = ember.ones(*shape).contiguous(memory_format=getattr(ember, fmt))
        theirs = torch.ones(*shape).contiguous(memory_format=getattr(torch, fmt))
        assert tuple(ours.stride()) == tuple(theirs.stride())
        assert ours.is_contiguous() == theirs.is_contiguous()


# ---- asarray and frombuffer -----------------------------------------------------------------------


def test_asarray_shares_what_it_can_and_copies_when_asked():
    x = ember.ones(3)
    assert ember.asarray(x) is x
    c = ember.asarray(x, copy=True)
    assert c.data_ptr() != x.data_ptr() and np.array_equal(c.numpy(), x.numpy())
    assert ember.asarray(x, dtype=ember.float64).dtype == ember.float64
    with pytest.raises(ValueError, match="can't alias tensor with dtype 'Float' into dtype"):
        ember.asarray(x, dtype=ember.float64, copy=False)
    a = np.ones(3)
    shared = ember.asarray(a)
    shared[0] = 5.0
    assert a[0] == 5.0 and shared.dtype == ember.float64  # NumPy's memory, NumPy's dtype
    assert ember.asarray(a, copy=True).data_ptr() != shared.data_ptr()
    with pytest.raises(ValueError, match="can't alias arbitrary sequence"):
        ember.asarray([1, 2], copy=False)
    assert ember.asarray([1, 2]).dtype == ember.int64
    assert ember.asarray([1.0, 2.0]).dtype == ember.float32
    assert tuple(ember.asarray(3.5).shape) == ()
    assert ember.asarray([1.0], requires_grad=True).requires_grad
    # a copy of a tensor with history keeps it (torch 2.13's default)
    w = ember.ones(2, requires_grad=True)
    assert ember.asarray(w, copy=True).grad_fn is not None


def test_frombuffer_views_a_buffer():
    raw = bytearray(np.array([1.0, 2.0, 3.0], dtype=np.float32).tobytes())
    x = ember.frombuffer(raw, dtype=ember.float32)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
    x[0] = 7.0  # the buffer's memory
    assert np.frombuffer(raw, dtype=np.float32)[0] == 7.0
    part = ember.frombuffer(raw, dtype=ember.uint8, count=3, offset=1)
    assert part.dtype == ember.uint8 and list(part.numpy()) == list(raw[1:4])
    bf = ember.frombuffer(bytearray(b"\x80\x3f\x00\x40"), dtype=ember.bfloat16)
    np.testing.assert_array_equal(bf.float().numpy(), [1.0, 2.0])
    with pytest.warns(UserWarning, match="buffer is not writable"):
        ember.frombuffer(bytes(8), dtype=ember.float32)
    with pytest.raises(ValueError, match="must not be greater than actual buffer length"):
        ember.frombuffer(raw, dtype=ember.float32, count=4)
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        ember.frombuffer(bytearray(3), dtype=ember.float32)
    with pytest.raises(ValueError, match="buffer protocol"):
        ember.frombuffer([1, 2], dtype=ember.float32)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 4)])
def test_lu_unpack_rebuilds_the_matrix(shape):
    a = rand(*shape, seed=11)
    LU, pivots = ember.linalg.lu_factor(t(a))
    P, L, U = ember.lu_unpack(LU, pivots)
    m, n = shape[-2:]
    k = min(m, n)
    assert tuple(P.shape[-2:]) == (m, m) and tuple(L.shape[-2:]) == (m, k)
    assert tuple(U.shape[-2:]) == (k, n)
    np.testing.assert_allclose((P @ L @ U).numpy(), a, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.triu(L.numpy(), 1), 0)
    np.testing.assert_array_equal(np.diagonal(L.numpy(), axis1=-2, axis2=-1), 1)
    np.testing.assert_array_equal(np.tril(U.numpy(), -1), 0)
    # P is a permutation matrix
    p = P.numpy()
    assert set(np.unique(p)) <= {0.0, 1.0} and np.all(p.sum(-1) == 1) and np.all(p.sum(-2) == 1)
    P2, L2, U2 = ember.lu_unpack(LU, pivots, unpack_data=False)
    assert L2.numel() == 0 and U2.numel() == 0 and np.array_equal(P2.numpy(), p)
    with pytest.raises(RuntimeError, match="int32"):
        ember.lu_unpack(LU, pivots.long())


@pytest.mark.parametrize("rate", [0.7, 12.0])
def test_poisson_draws_follow_the_pmf(rate):
    import math

    g = ember.Generator().manual_seed(3)
    n = 40000
    v = ember.poisson(ember.full((n,), rate, dtype=ember.float64), generator=g).numpy()
    assert np.array_equal(v, np.round(v)) and v.min() >= 0
    for k in range(int(rate) + 3):
        pmf = math.exp(-rate) * rate**k / math.factorial(k)
        # within 5 standard errors of the binomial count
        assert abs((v == k).mean() - pmf) < 5 * math.sqrt(pmf * (1 - pmf) / n) + 1e-4
    g2 = ember.Generator().manual_seed(3)
    again = ember.poisson(ember.full((n,), rate, dtype=ember.float64), generator=g2).numpy()
    assert np.array_equal(v, again)


def test_poisson_edges_and_errors():
    got = ember.poisson(ember.tensor([0.0, float("inf"), 3.0]))
    assert got.dtype == ember.float32 and got[0].item() == 0.0 and got[1].item() == float("inf")
    with pytest.raises(RuntimeError, match="expected rate to be non-negative"):
        ember.poisson(ember.tensor([-1.0]))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        ember.poisson(ember.tensor([1, 2]))
    x = ember.tensor([2.0, 5.0, float("inf")], requires_grad=True)
    drawn = ember.poisson(x)
    assert drawn[2].item() == float("inf")  # the gradient's zero must not make it NaN
    drawn[:2].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])  # torch's zero gradient


# ---- randomized low-rank factorizations ---------------------------------------------------------


@pytest.mark.parametrize("shape", [(30, 20), (20, 30), (3, 25, 12)])
def test_svd_lowrank_recovers_a_low_rank_matrix(shape):
    rng = np.random.default_rng(0)
    *batch, m, n = shape
    a = rng.standard_normal((*batch, m, 4)) @ rng.standard_normal((*batch, 4, n))  # rank 4
    ember.manual_seed(0)
    U, S, V = ember.svd_lowrank(t(a), q=6)
    assert tuple(U.shape) == (*batch, m, 6) and tuple(V.shape) == (*batch, n, 6)
    np.testing.assert_allclose((U @ ember.diag_embed(S) @ V.mT).numpy(), a, atol=1e-10)
    np.testing.assert_allclose(S.numpy()[..., :4], np.linalg.svd(a, compute_uv=False)[..., :4],
                               rtol=1e-10)
    np.testing.assert_allclose((U.mT @ U).numpy(), np.broadcast_to(np.eye(6), (*batch, 6, 6)),
                               atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 6, 4)])
def test_svd_lowrank_of_a_complex_matrix(shape):
    # torch's svd_lowrank takes complex input: A = U diag(S) V^H (the conjugate transpose)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    k = min(shape[-2:])
    U, S, V = ember.svd_lowrank(t(a), q=k)
    assert U.dtype == ember.complex128 and S.dtype == ember.float64
    us = U.numpy() * S.numpy()[..., None, :]
    np.testing.assert_allclose(us @ np.conj(np.swapaxes(V.numpy(), -1, -2)), a, atol=1e-12)
    np.testing.assert_allclose(np.sort(S.numpy())[..., ::-1],
                               np.linalg.svd(a, compute_uv=False), rtol=1e-10)


def test_pca_lowrank_centres_the_rows():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((100, 3)) @ rng.standard_normal((3, 8)) + 5.0
    ember.manual_seed(0)
    U, S, V = ember.pca_lowrank(t(x), q=3)
    centred = x - x.mean(0)
    np.testing.assert_allclose((U @ ember.diag(S) @ V.mT).numpy(), centred, atol=1e-10)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(centred, compute_uv=False)[:3],
                               rtol=1e-10)
    U0, S0, _ = ember.pca_lowrank(t(x), q=3, center=False)
    assert S0[0].item() > S[0].item()  # the mean is the leading direction without centering
    with pytest.raises(ValueError, match="q\\(=9\\) must be non-negative integer"):
        ember.pca_lowrank(t(x), q=9)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.svd_lowrank(-2)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.pca_lowrank(ember.ones(3))


# ---- histogramdd (NumPy's numpy.histogramdd is the oracle) and Tensor.prelu ----------------------


@pytest.mark.parametrize("case", ["ints", "per-dim", "edges", "range", "weights-density"])
def test_histogramdd_matches_numpy(case):
    rng = np.random.default_rng(4)
    pts = rng.standard_normal((200, 3))
    kwargs, np_kwargs = {"bins": 4}, {"bins": 4}
    if case == "per-dim":
        kwargs = np_kwargs = {"bins": [2, 3, 5]}
    elif case == "edges":
        edges = [np.array([-3.0, -1.0, 0.0, 0.5, 3.0]), np.array([-2.0, 2.0]),
                 np.array([-1.0, 0.0, 1.0])]
        kwargs, np_kwargs = {"bins": [t(e) for e in edges]}, {"bins": edges}
    elif case == "range":
        kwargs = {"bins": 3, "range": [-1.0, 1.0, -0.5, 0.5, 0.0, 2.0]}
        np_kwargs = {"bins": 3, "range": [(-1.0, 1.0), (-0.5, 0.5), (0.0, 2.0)]}
    elif case == "weights-density":
        w = rng.uniform(0.5, 2.0, 200)
        kwargs = {"bins": [3, 2, 4], "weight": t(w), "density": True}
        np_kwargs = {"bins": [3, 2, 4], "weights": w, "density": True}
    hist, edges_got = ember.histogramdd(t(pts), **kwargs)
    want, edges_want = np.histogramdd(pts, **np_kwargs)
    np.testing.assert_allclose(hist.numpy(), want, rtol=1e-12)
    for e, w_ in zip(edges_got, edges_want):
        np.testing.assert_allclose(e.numpy(), w_, rtol=1e-12)


def test_histogramdd_edges_and_errors():
    hist, edges = ember.histogramdd(ember.tensor([[1.0, 1.0], [1.0, 1.0]]), bins=2)
    np.testing.assert_array_equal(hist.numpy(), [[0, 0], [0, 2]])  # equal min and max: +-0.5
    np.testing.assert_array_equal(edges[0].numpy(), [0.5, 1.0, 1.5])
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ember.histogramdd(ember.tensor([[1, 2]]), bins=2)
    with pytest.raises(RuntimeError, match="size of bins must be equal to the innermost"):
        ember.histogramdd(ember.ones(3, 2), bins=[2, 2, 2])
    with pytest.raises(RuntimeError, match="expected 2 sequences of bin edges"):
        ember.histogramdd(ember.ones(3, 2), bins=[ember.ones(2)] * 3)


def test_prelu_method_has_one_weight_per_channel_or_one_for_all():
    x = t([[-1.0, 2.0], [3.0, -4.0]])
    np.testing.assert_allclose(x.prelu(t([0.1, 0.2])).numpy(), [[-0.1, 2.0], [3.0, -0.8]])
    np.testing.assert_allclose(x.prelu(t([0.5])).numpy(), [[-0.5, 2.0], [3.0, -2.0]])
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        x.prelu(t([0.1, 0.2, 0.3]))


# ---- LAPACK's packed QR ---------------------------------------------------------------------------


def _q_from_reflectors(packed, tau):
    """Q = H_1 ... H_k (m x m), H_i = I - tau_i v_i v_i^T with v_i = (0, ..., 1, packed[i+1:, i])."""
    *batch, m, _ = packed.shape
    q = np.zeros((*batch, m, m))
    for idx in np.ndindex(*batch):
        h = np.eye(m)
        for i in range(tau.shape[-1]):
            v = np.zeros(m)
            v[i] = 1.0
            v[i + 1:] = packed[idx][i + 1:, i]
            h = h @ (np.eye(m) - tau[idx][i] * np.outer(v, v))
        q[idx] = h
    return q


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 6), (2, 5, 2)])
def test_geqrf_packs_r_and_householder_product_rebuilds_q(shape):
    a = rand(*shape, seed=13)
    packed, tau = ember.geqrf(t(a))
    *batch, m, n = shape
    k = min(m, n)
    assert tuple(tau.shape) == (*batch, k)
    r = np.triu(packed.numpy())[..., :k, :]
    q = _q_from_reflectors(packed.numpy(), tau.numpy())[..., :, :k]
    np.testing.assert_allclose(q @ r, a, atol=1e-12)  # A = Q R
    if m >= n:
        got = ember.linalg.householder_product(packed, tau)
        np.testing.assert_allclose(got.numpy(), q[..., :, :n], atol=1e-12)
        np.testing.assert_allclose(ember.orgqr(packed, tau).numpy(), q[..., :, :n], atol=1e-12)


def test_householder_product_checks_its_shapes():
    with pytest.raises(RuntimeError, match="input.shape\\[-2\\] must be greater than or equal"):
        ember.linalg.householder_product(ember.ones(2, 3), ember.ones(1))
    with pytest.raises(RuntimeError, match="input.shape\\[-1\\] must be greater than or equal"):
        ember.linalg.householder_product(ember.ones(4, 2), ember.ones(3))
    with pytest.raises(RuntimeError, match="batch dimensions of tau"):
        ember.linalg.householder_product(ember.ones(2, 4, 2), ember.ones(3, 2))


# ---- LDL^T of symmetric indefinite matrices ----------------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 5)])
def test_ldl_factor_and_solve(shape):
    rng = np.random.default_rng(17)
    a = rng.standard_normal(shape)
    sym = a + np.swapaxes(a, -1, -2)  # symmetric, indefinite
    LD, pivots = ember.linalg.ldl_factor(t(sym))
    assert pivots.dtype == ember.int32 and np.all(np.triu(LD.numpy(), 1) == 0)
    b = rng.standard_normal((*shape[:-1], 3))
    x = ember.linalg.ldl_solve(LD, pivots, t(b))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(sym, b), rtol=1e-9, atol=1e-10)
    ex = ember.linalg.ldl_factor_ex(t(sym))
    assert np.all(ex.info.numpy() == 0) and np.array_equal(ex.LD.numpy(), LD.numpy())
    torch = pytest.importorskip("torch")
    theirs = torch.linalg.ldl_factor(torch.from_numpy(sym))
    np.testing.assert_allclose(LD.numpy(), theirs.LD.numpy(), rtol=1e-12, atol=1e-14)
    assert np.array_equal(pivots.numpy(), theirs.pivots.numpy())


def test_ldl_blocks_singularity_and_bad_pivots():
    swap = t([[0.0, 1.0], [1.0, 0.0]])  # needs a 2 x 2 block of D
    LD, pivots = ember.linalg.ldl_factor(swap)
    assert pivots.tolist() == [-2, -2]
    np.testing.assert_allclose(ember.linalg.ldl_solve(LD, pivots, t([[1.0], [2.0]])).numpy(),
                               [[2.0], [1.0]])
    singular = t([[1.0, 1.0], [1.0, 1.0]])
    assert ember.linalg.ldl_factor_ex(singular).info.item() == 2
    with pytest.raises(ember.linalg.LinAlgError, match="not invertible"):
        ember.linalg.ldl_factor(singular)
    with pytest.raises(RuntimeError, match="pivots must lie in"):
        ember.linalg.ldl_solve(LD, ember.tensor([3, 1], dtype=ember.int32), t([[1.0], [1.0]]))
    with pytest.raises(RuntimeError, match="must repeat in the next entry"):
        ember.linalg.ldl_solve(LD, ember.tensor([1, -2], dtype=ember.int32), t([[1.0], [1.0]]))
    with pytest.raises(RuntimeError, match="square matrices"):
        ember.linalg.ldl_factor(ember.ones(2, 3))


def test_set_flush_denormal_reaches_the_pools_workers():
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64", "aarch64", "arm64"):
        pytest.skip("flushes denormals on x86-64 (FTZ/DAZ) and aarch64 (FPCR.FZ) only")
    threads = ember.get_num_threads()
    small = ember.tensor([1e-320], dtype=ember.float64)  # a subnormal double
    big = ember.full((1 << 20,), 1e-320, dtype=ember.float64)  # split over the workers
    try:
        ember.set_num_threads(2)
        assert ember.set_flush_denormal(True) is True
        assert (small * 1.0).item() == 0.0
        assert (big * 1.0).count_nonzero().item() == 0
        assert ember.set_flush_denormal(False) is True
        assert (small * 1.0).item() == 1e-320
        assert (big * 1.0).count_nonzero().item() == big.numel()
    finally:
        ember.set_flush_denormal(False)
        ember.set_num_threads(threads)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_applies_q_without_forming_it(left, transpose):
    a = rand(2, 5, 3, seed=21)
    packed, tau = ember.geqrf(t(a))
    q = _q_from_reflectors(packed.numpy(), tau.numpy())  # the full 5 x 5 Q
    other = rand(2, 5, 4, seed=22) if left else rand(2, 4, 5, seed=22)
    op = np.swapaxes(q, -1, -2) if transpose else q
    got = ember.ormqr(packed, tau, t(other), left=left, transpose=transpose)
    np.testing.assert_allclose(got.numpy(), op @ other if left else other @ op, atol=1e-12)
    with pytest.raises(RuntimeError, match="must be equal to input.shape\\[-2\\]"):
        ember.ormqr(packed, tau, ember.ones(2, 4, 2, dtype=ember.float64))
    # torch's rule: as many reflectors as Q's size or input's columns allow, no fewer
    with pytest.raises(RuntimeError, match="tau.shape\\[-1\\] must be equal to min\\(other"):
        ember.ormqr(packed, tau[..., :2], t(other), left=left, transpose=transpose)


def test_polygamma_of_a_huge_order_returns_at_once():
    # n! is not computed exactly for a huge n (that took forever: a hang the fuzzer found)
    x = ember.tensor([0.5, 3.0], dtype=ember.float64)
    assert ember.polygamma(2147483648, ember.arange(0.0)).numel() == 0
    got = ember.polygamma(201, x)
    assert np.all(np.isinf(got.numpy()))
    np.testing.assert_allclose(ember.polygamma(3, x).numpy(), [97.40909103400242, 0.11893940226683],
                               rtol=1e-9)


def test_isin_and_numel_refuse_non_tensors_with_a_type_error():
    # found by the fuzzer: these raised AttributeError ('int' object has no attribute ...)
    with pytest.raises(TypeError, match="isin\\(\\) received an invalid combination"):
        ember.isin(float("nan"), 2, invert=True)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.numel(0)
    assert ember.isin(2, ember.tensor([1, 2])).item() is True  # one number is fine, as torch
