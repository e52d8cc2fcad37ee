"""Sorting, selection, searching, counting and scan ops on CUDA tensors (ember/cuda/_sort_ops.py)
against the same calls on the CPU: values, dtypes, shapes, the index chosen among equal values,
NaN placement and errors. Simulated devices where there is no GPU (see test_cuda_tensors.py)."""

import math

import numpy as np
import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices, on_gpu
from ember.cuda._testing import assert_same_error as same_error

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


FLOATS = ["float32", "float64", "float16"]
INTS = ["int64", "int32", "int8", "uint8"]


def data(*shape, dtype="float32", seed=0, special=True):
    """Few distinct values (ties), and for floats NaN, -0.0/+0.0 and infinities."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return ember.from_numpy(rng.integers(0, 2, shape).astype(bool))
    a = rng.integers(0 if dtype == "uint8" else -4, 5, shape).astype(dtype)
    if np.dtype(dtype).kind == "f" and special and a.size:
        flat = a.reshape(-1)
        picks = rng.choice(flat.size, size=min(flat.size, max(1, flat.size // 5)), replace=False)
        for j, p in enumerate(picks):
            flat[p] = [np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan][j % 6]
    return ember.from_numpy(a)


def distinct(*shape, dtype="float32", seed=0):
    """No two equal values: every selection has one answer."""
    n = int(np.prod(shape))
    a = np.random.default_rng(seed).permutation(n).astype(dtype).reshape(shape)
    return ember.from_numpy(a)


def same(gpu, cpu, signs=True):
    if isinstance(cpu, (tuple, list)):
        assert type(gpu) is type(cpu) and len(gpu) == len(cpu)
        for g, c in zip(gpu, cpu):
            same(g, c, signs)
        return
    assert gpu.is_cuda and gpu.device == ember.device("cuda", 0)
    assert gpu.dtype == cpu.dtype and tuple(gpu.shape) == tuple(cpu.shape)
    g, c = gpu.cpu().numpy(), cpu.numpy()
    np.testing.assert_array_equal(g, c)
    if c.dtype.kind == "f" and signs:
        np.testing.assert_array_equal(np.signbit(g), np.signbit(c))  # -0.0 read back as on the CPU


def check(fn, x, *args, **kwargs):
    """fn on the CPU and on the device (tensor arguments moved), compared; returns both."""
    cpu = fn(x, *args, **kwargs)
    gpu = fn(x.cuda(), *(on_gpu(a) for a in args), **{k: on_gpu(v) for k, v in kwargs.items()})
    same(gpu, cpu)
    return cpu, gpu


# A GPU adds floats in another order than the CPU's loop (a parallel scan for cumsum, atomics for
# weighted histograms and bincount), so their last bits may differ (docs/cuda.md): there such
# results are compared within a few ulps of the largest magnitude.
SUM_TOL = {"float16": 1e-2, "bfloat16": 1e-2, "float32": 1e-5, "float64": 1e-12}


def check_sums(fn, x, *args, **kwargs):
    """check() for results that sum floats."""
    if not REAL_GPU:
        return check(fn, x, *args, **kwargs)
    cpu = fn(x, *args, **kwargs)
    gpu = fn(x.cuda(), *(on_gpu(a) for a in args), **{k: on_gpu(v) for k, v in kwargs.items()})
    pairs = zip(gpu, cpu) if isinstance(cpu, tuple) else [(gpu, cpu)]
    for g, c in pairs:
        assert g.dtype == c.dtype and tuple(g.shape) == tuple(c.shape)
        gn, cn = g.cpu().numpy(), c.numpy()
        if cn.dtype.kind != "f":
            np.testing.assert_array_equal(gn, cn)
            continue
        tol = SUM_TOL[str(c.dtype).split(".")[-1]]
        scale = np.abs(cn[np.isfinite(cn)]).astype(np.float64).max(initial=0.0)
        np.testing.assert_allclose(gn.astype(np.float64), cn.astype(np.float64), rtol=tol,
                                   atol=tol * scale)
    return cpu, gpu


def like(cpu):
    """Device tensors shaped as the CPU result `cpu` (a tensor or a tuple), for out= (CUDA
    storages do not grow)."""
    if isinstance(cpu, tuple):
        return tuple(like(t) for t in cpu)
    return ember.empty(tuple(cpu.shape), dtype=cpu.dtype, device="cuda")


def layouts(x):
    """x itself and non-contiguous views of it."""
    yield x
    if x.dim() >= 2:
        yield x.transpose(0, -1)
    if x.dim() >= 1 and x.shape[-1] > 2:
        yield x[..., ::2]


# ---- sort / argsort ------------------------------------------------------------------------------

T = ember.Tensor


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_argsort_match_the_cpu_on_ties_and_nan(dtype, descending):
    for shape in [(9,), (4, 7), (3, 4, 5)]:
        for x in layouts(data(*shape, dtype=dtype)):
            for dim in range(-x.dim(), x.dim()):
                check(T.sort, x, dim, descending)
                check(ember.sort, x, dim=dim, descending=descending, stable=True)
                check(T.argsort, x, dim, descending)
                check(ember.argsort, x, dim=dim, descending=descending, stable=True)


def test_sort_long_rows_and_edge_cases():
    check(T.sort, data(3, 2000, dtype="float32", seed=1))
    check(T.sort, data(3000, dtype="int64", seed=2), 0, descending=True)
    for x in [ember.tensor(2.5), ember.zeros(0), ember.zeros(3, 0), ember.zeros(0, 4)]:
        check(T.sort, x)
        check(T.argsort, x, 0)
    same_error(T.sort, data(3, 4), 2)
    same_error(T.argsort, data(3, 4), -3)


def test_sort_out_and_a_tensor_requiring_grad():
    pytest.importorskip("ember.autograd")  # requires_grad needs it
    x = data(4, 6)
    v, i = like(ember.sort(x, 1))
    r = ember.sort(x.cuda(), 1, out=(v, i))
    same(r, ember.sort(x, 1))
    assert r.values is v and r.indices is i
    with pytest.raises(RuntimeError, match="same device"):
        ember.sort(x.cuda(), out=(ember.empty(4, 6), ember.empty(4, 6, dtype=ember.int64)))
    same_error(lambda t: ember.sort(t, out=(ember.empty(4, 6).to(t.device),
                                            ember.empty(4, 6).to(t.device))), x)
    g = x.cuda().requires_grad_()
    same(g.argsort(1), x.argsort(1))  # no gradient: nothing recorded
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.sort(g, out=(v, i))


# ---- topk / kthvalue -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int16"])
def test_topk_and_kthvalue_match_the_cpu_without_ties(dtype):
    for x in layouts(distinct(5, 40, dtype=dtype)):
        for dim in (0, 1, -1):
            n = x.shape[dim]
            for k in (0, 1, 3, n):
                check(T.topk, x, k, dim)
                check(T.topk, x, k, dim, largest=False)
            for k in (1, n // 2, n):
                check(T.kthvalue, x, k, dim)
                check(ember.kthvalue, x, k, dim, keepdim=True)


def test_topk_and_kthvalue_on_ties_give_the_cpu_values_and_valid_indices():
    x = data(6, 50, dtype="float32", seed=3)
    for largest in (True, False):
        cpu = x.topk(7, 1, largest=largest)
        gpu = x.cuda().topk(7, 1, largest=largest)
        same(gpu.values, cpu.values, signs=False)  # which of -0.0 and +0.0 is a tie choice
        same(x.cuda().gather(1, gpu.indices), gpu.values.cpu())
        # unsorted: the same set of values
        unsorted = x.cuda().topk(7, 1, largest=largest, sorted=False)
        same(unsorted.values.sort(1).values, cpu.values.sort(1).values, signs=False)
    cpu, gpu = x.kthvalue(20, 1), x.cuda().kthvalue(20, 1)
    same(gpu.values, cpu.values, signs=False)
    same(x.cuda().gather(1, gpu.indices[:, None])[:, 0], gpu.values.cpu())
    i = x.cuda().topk(3, 1, largest=True).indices  # among equal values: the first index first
    v = x.numpy()
    for r in range(6):
        order = sorted(range(50), key=lambda j, r=r: (not np.isnan(v[r, j]), -v[r, j], j))
        assert i.cpu().numpy()[r].tolist() == order[:3]  # NaN first, then by value, then index


def test_topk_kthvalue_edge_cases_and_errors():
    check(T.topk, ember.tensor(3.0), 1)
    assert tuple(ember.tensor(3.0).cuda().topk(0).values.shape) == ()  # the CPU's shape
    check(T.kthvalue, ember.tensor(3.0), 1)
    check(T.topk, ember.zeros(3, 0), 0, 1)
    check(T.topk, ember.zeros(3, 0), 2, 0)
    same_error(T.topk, data(4), 5)
    same_error(T.topk, data(4), -1)
    same_error(T.topk, data(4, 3), 1, 2)
    same_error(T.topk, data(4, dtype="bool"), 1)
    same_error(T.kthvalue, data(4), 0)
    same_error(T.kthvalue, data(4), 5, 0)
    same_error(T.kthvalue, data(4, dtype="bool"), 1)
    same_error(T.kthvalue, ember.zeros(3, 0), 1, 1)
    x = distinct(3, 5)
    same(ember.topk(x.cuda(), 2, out=like(x.topk(2))), x.topk(2))
    same(ember.kthvalue(x.cuda(), 2, 0, out=like(x.kthvalue(2, 0))), x.kthvalue(2, 0))


# ---- median / mode -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "int8", "uint8"])
def test_median_and_nanmedian_match_the_cpu_indices_on_ties_and_nan(dtype):
    for x in layouts(data(5, 8, dtype=dtype, seed=4)):
        for fn in (ember.median, ember.nanmedian):
            check(fn, x)
            for dim in (0, 1, -1):
                check(fn, x, dim)
                check(fn, x, dim, keepdim=True)
    if dtype in FLOATS:
        x = ember.tensor([[np.nan, np.nan, 1.0], [np.nan, np.nan, np.nan], [2.0, 1.0, 1.0]],
                         dtype=getattr(ember, dtype))
        for fn in (ember.median, ember.nanmedian):
            check(fn, x)
            check(fn, x, 1)


def test_median_edge_cases_and_errors():
    for fn in (ember.median, ember.nanmedian):
        check(fn, ember.tensor(1.5))
        check(fn, ember.tensor(1.5), 0)
        check(fn, ember.zeros(0))  # NaN
        check(fn, ember.zeros(3, 0), 0)
        same_error(fn, ember.zeros(0, dtype=ember.int64))
        same_error(fn, data(3, dtype="bool"))
        same_error(fn, ember.zeros(0, 3), 0)
        same_error(fn, data(3, 3), 2)
    x = data(4, 5)
    with pytest.raises(TypeError):  # as torch's, median(input) takes no out=
        ember.median(x.cuda(), out=like(ember.median(x)))
    same(ember.nanmedian(x.cuda(), 1, out=like(ember.nanmedian(x, 1))), ember.nanmedian(x, 1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "bool"])
def test_mode_matches_the_cpu(dtype):
    # rows of up to 16 elements: the CPU's index too (the last occurrence)
    for x in layouts(data(6, 12, dtype=dtype, seed=5, special=False)):
        for dim in (0, 1):
            check(T.mode, x, dim)
            check(ember.mode, x, dim, keepdim=True)
    # longer rows: the CPU's value, and an index of it
    x = data(4, 100, dtype=dtype, seed=6, special=False)
    cpu, gpu = x.mode(1), x.cuda().mode(1)
    same(gpu.values, cpu.values)
    same(x.cuda().gather(1, gpu.indices[:, None])[:, 0], cpu.values)


def test_mode_edge_cases():
    check(T.mode, ember.tensor(4))
    check(T.mode, ember.zeros(3, 0), 0)
    same_error(T.mode, ember.zeros(3, 0), 1)
    same_error(T.mode, data(3, 3), 3)
    x = data(3, 7, dtype="int64", special=False)
    same(ember.mode(x.cuda(), 1, out=like(x.mode(1))), x.mode(1))


# ---- cummax / cummin -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
def test_cummax_cummin_match_the_cpu_on_ties_and_nan(dtype):
    for x in layouts(data(6, 9, dtype=dtype, seed=7)):
        for dim in (0, 1, -1):
            check(T.cummax, x, dim)
            check(ember.cummin, x, dim)
    x = ember.tensor([1.0, np.nan, 3.0, np.nan, 0.0, 2.0])
    check(T.cummax, x, 0)
    check(T.cummin, x, 0)


def test_cummax_cummin_edge_cases():
    for fn in (ember.cummax, ember.cummin):
        check(fn, ember.tensor(2.0), 0)
        check(fn, ember.zeros(2, 0), 1)
        check(fn, data(1000, seed=8), 0)
        same_error(fn, data(3, 3), 2)
        x = data(3, 4)
        same(fn(x.cuda(), 1, out=like(fn(x, 1))), fn(x, 1))


# ---- quantile ------------------------------------------------------------------------------


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_quantile_and_nanquantile_match_the_cpu(interpolation, dtype):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((5, 11)).astype(dtype)
    a[1, 3] = a[2, :] = np.nan
    x = ember.from_numpy(a)
    qs = [0.0, 0.3, 0.5, 1.0, ember.tensor(0.25, dtype=x.dtype),
          ember.tensor([0.0, 0.1, 0.5, 0.77, 1.0], dtype=x.dtype)]
    kw = {"interpolation": interpolation}
    for fn in (ember.quantile, ember.nanquantile):
        for q in qs:  # a tensor q moves to the device with x
            for t in layouts(x):
                check(fn, t, q, **kw)
                for dim in (0, 1, -1):
                    check(fn, t, q, dim, **kw)
                    check(fn, t, q, dim, keepdim=True, **kw)
            check(fn, x, q, keepdim=True, **kw)
    # a 0-d CPU q joins a CUDA call, as in PyTorch
    same(ember.quantile(x.cuda(), qs[4], 1), ember.quantile(x, qs[4], 1))
    check(T.quantile, ember.tensor(2.0, dtype=x.dtype), 0.4)
    check(T.quantile, ember.tensor(2.0, dtype=x.dtype), 0.4, 0)


def test_quantile_interpolation_rounds_as_the_cpu():
    # many interpolations between random neighbours: the CPU's rounding (a fused multiply-add
    # where its compiler contracts one) is reproduced
    rng = np.random.default_rng(21)
    for dtype in ("float32", "float64"):
        x = ember.from_numpy(rng.standard_normal((400, 7)).astype(dtype))
        q = ember.from_numpy(rng.random(9).astype(dtype))
        check(ember.quantile, x, q, 1)


def test_quantile_errors_and_out():
    x = data(4, 5, special=False)
    same_error(T.quantile, ember.zeros(0), 0.5)
    same_error(T.quantile, data(4, dtype="int64"), 0.5)
    same_error(T.quantile, x, 1.5)
    same_error(T.quantile, x, ember.tensor([0.5, 1.5]))
    same_error(T.quantile, x, ember.tensor([0.5], dtype=ember.float64))
    same_error(T.quantile, x, ember.tensor([[0.5]]))
    same_error(T.quantile, x, 0.5, 2)
    same_error(T.quantile, x, 0.5, interpolation="cubic")
    out = like(ember.quantile(x, 0.5, 1))
    assert ember.quantile(x.cuda(), 0.5, 1, out=out) is out
    same(out, ember.quantile(x, 0.5, 1))


# ---- unique --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
def test_unique_flat_matches_the_cpu(dtype):
    for x in layouts(data(6, 7, dtype=dtype, seed=10)):
        for fn in (ember.unique, ember.unique_consecutive):
            for inv in (False, True):
                for counts in (False, True):
                    check(fn, x, return_inverse=inv, return_counts=counts)
    x = ember.tensor([1.0, np.nan, np.nan, -0.0, 0.0, 1.0, np.nan])
    check(T.unique, x, return_inverse=True, return_counts=True)
    check(T.unique_consecutive, x, return_inverse=True, return_counts=True)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_unique_along_a_dim_matches_the_cpu(dtype):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 2, (8, 3, 4)).astype(dtype)
    a[5] = a[1]
    a[6] = a[1]
    a[:, 2] = a[:, 0]
    if dtype == "float32":
        a[3, 0, 0] = a[7, 0, 0] = np.nan
    for x in layouts(ember.from_numpy(a)):
        for dim in (0, 1, 2, -1):
            for fn in (ember.unique, ember.unique_consecutive):
                check(fn, x, return_inverse=True, return_counts=True, dim=dim)
                check(fn, x, dim=dim)


def test_unique_edge_cases_and_errors():
    pytest.importorskip("ember.autograd")  # requires_grad needs it
    for fn in (ember.unique, ember.unique_consecutive):
        check(fn, ember.tensor(3.0), return_inverse=True, return_counts=True)
        check(fn, ember.zeros(0), return_inverse=True, return_counts=True)
        check(fn, ember.zeros(2, 0, 3), return_inverse=True, return_counts=True, dim=1)
        same_error(fn, ember.zeros(2, 0, 3), dim=0)
        same_error(fn, ember.tensor(3.0), dim=0)
        same_error(fn, data(2, 3), dim=3)
    g = data(3, 4).cuda().requires_grad_()
    same(g.unique(), data(3, 4).unique())


# ---- searchsorted / bucketize --------------------------------------------------------------


def test_searchsorted_matches_the_cpu():
    rng = np.random.default_rng(12)
    seq = ember.from_numpy(np.sort(rng.integers(-5, 6, 12)).astype("float32"))
    vals = data(4, 5, seed=13)
    for kw in [{}, {"right": True}, {"side": "right"}, {"side": "left"}, {"out_int32": True}]:
        check(ember.searchsorted, seq, vals, **kw)
        check(ember.searchsorted, seq, vals[:, ::2], **kw)
        check(ember.searchsorted, seq, 2.0, **kw)
        check(ember.searchsorted, seq.to(ember.int64), 3, **kw)
        check(ember.searchsorted, seq, ember.tensor(1.5), **kw)
    # batched, with a sorter, mixed dtypes, NaN in the sequence and the values
    raw = ember.from_numpy(rng.integers(-5, 6, (3, 2, 9)).astype("float64"))
    raw[0, 0, 4] = float("nan")
    sorter = raw.argsort(-1)
    v = data(3, 2, 6, dtype="float32", seed=14)
    for right in (False, True):
        check(ember.searchsorted, raw, v, right=right, sorter=sorter)
        check(ember.searchsorted, raw.sort(-1).values, v, right=right)
        check(ember.searchsorted, raw.sort(-1).values.int(), v.to(ember.int8), right=right)
    check(ember.searchsorted, ember.zeros(0), vals)
    check(ember.searchsorted, seq, ember.zeros(0, 3))
    out = like(ember.searchsorted(seq, vals))
    assert ember.searchsorted(seq.cuda(), vals.cuda(), out=out) is out
    same(out, ember.searchsorted(seq, vals))


def test_searchsorted_errors():
    seq, vals = ember.arange(6.0), data(2, 3)
    ss = ember.searchsorted
    same_error(ss, ember.tensor(1.0), vals)
    same_error(ss, seq.reshape(2, 3), data(3, 3))
    same_error(ss, seq.reshape(2, 3), data(2))
    same_error(ss, seq, vals, sorter=ember.tensor([0, 1, 2]))
    same_error(ss, seq, vals, sorter=ember.arange(6).int())
    same_error(ss, seq, vals, sorter=ember.tensor([0, 1, 2, 3, 4, 6]))
    same_error(ss, seq.bool(), vals.bool())
    same_error(ss, seq, vals, side="middle")
    same_error(ss, seq, vals, out_int32=True, out=ember.empty(2, 3))
    with pytest.raises(RuntimeError, match="same device"):
        ember.searchsorted(seq.cuda(), vals)


def test_bucketize_matches_the_cpu():
    b = ember.tensor([-2.0, 0.0, 0.0, 1.5, 3.0])
    x = data(4, 6, seed=15)
    for kw in [{}, {"right": True}, {"out_int32": True}]:
        check(ember.bucketize, x, b, **kw)
        check(ember.bucketize, x.t(), b, **kw)
        same(ember.bucketize(0.0, b.cuda(), **kw), ember.bucketize(0.0, b, **kw))
    same_error(ember.bucketize, x, b.reshape(1, 5))
    out = like(ember.bucketize(x, b, out_int32=True))
    assert ember.bucketize(x.cuda(), b.cuda(), out_int32=True, out=out) is out
    same(out, ember.bucketize(x, b, out_int32=True))


# ---- histc / histogram / bincount ----------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc_matches_the_cpu(dtype):
    rng = np.random.default_rng(16)
    a = (rng.standard_normal((20, 30)) * 3).astype(dtype)
    a[0, :5] = [np.nan, np.inf, -np.inf, 2.0, -2.0]
    x = ember.from_numpy(a)
    for t in layouts(x):
        check(ember.histc, t, bins=7, min=-2, max=2)
        check(ember.histc, t, bins=50, min=-1.5, max=4.25)
        check(ember.histc, t, bins=1, min=-3, max=3)
    y = ember.from_numpy(a[1:])  # finite: the range is the data's
    check(T.histc, y)
    check(T.histc, y[:, ::3], 13)
    check(T.histc, ember.full((5,), 2.0, dtype=x.dtype), 4)
    check(T.histc, ember.zeros(0, dtype=x.dtype), 4)


def test_histc_errors():
    x = data(10)
    same_error(T.histc, data(10, dtype="int64"))
    same_error(T.histc, x, 0)
    same_error(T.histc, x, 5, 3, 1)
    same_error(T.histc, x, 5)  # the data's range has NaN / inf
    same_error(T.histc, x, 5, 1, float("inf"))
    y = data(10, special=False)
    out = like(ember.histc(y, 6))
    assert ember.histc(y.cuda(), 6, out=out) is out
    same(out, ember.histc(y, 6))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogram_matches_the_cpu(dtype):
    rng = np.random.default_rng(17)
    x = ember.from_numpy(rng.standard_normal((6, 40)).astype(dtype))
    w = ember.from_numpy(rng.random((6, 40)).astype(dtype))
    edges = ember.tensor([-2.0, -0.5, 0.0, 0.1, 1.0, 3.0], dtype=x.dtype)
    hist = ember.histogram
    for density in (False, True):
        check(hist, x, 10, density=density)
        check(hist, x.t(), 9, range=(-1.0, 1.5), density=density)
        check(hist, x, edges, density=density)
        check_sums(hist, x, 8, weight=w, density=density)
        check_sums(hist, x, edges, weight=w, density=density)
        check(T.histogram, ember.full((4,), 1.0, dtype=x.dtype), 5, density=density)
    check(hist, ember.zeros(0, dtype=x.dtype), 4)
    same_error(hist, x, edges[:1])  # one edge is no bin, as in torch


def test_histogram_errors_and_out():
    x, w = data(3, 4, special=False), data(3, 4, seed=1, special=False)
    hist = ember.histogram
    same_error(hist, data(5, dtype="int64"), 3)
    same_error(hist, x, 3, weight=w[:2])
    same_error(hist, x, 3, weight=w.double())
    same_error(hist, x, ember.zeros(2, 2))
    same_error(hist, x, ember.zeros(3, dtype=ember.float64))
    same_error(hist, x, ember.zeros(0))
    same_error(hist, x, 0)
    same_error(hist, x, 3, range=(2.0, 1.0))
    same_error(hist, data(10), 3)  # NaN in the data's range
    h, e = like(ember.histogram(x, 4))
    r = ember.histogram(x.cuda(), 4, out=(h, e))
    assert r.hist is h and r.bin_edges is e
    same(r, ember.histogram(x, 4))


def test_bincount_matches_the_cpu():
    rng = np.random.default_rng(18)
    for dtype in ["int64", "int32", "uint8", "int8"]:
        x = ember.from_numpy(rng.integers(0, 9, 50).astype(dtype))
        check(T.bincount, x)
        check(T.bincount, x, minlength=20)
        check(T.bincount, x[::3])
        for wd in ["float32", "float64", "int64", "float16"]:
            w = ember.from_numpy(rng.random(50).astype(wd) if wd != "int64"
                                 else rng.integers(0, 5, 50))
            check_sums(ember.bincount, x, w, minlength=3)
    check(T.bincount, ember.zeros(0, dtype=ember.int64), minlength=4)
    same_error(T.bincount, ember.tensor([1.0, 2.0]))
    same_error(T.bincount, ember.tensor([True]))
    same_error(T.bincount, ember.tensor([[1, 2]]))
    same_error(T.bincount, ember.tensor([1, -2, 3]))
    same_error(T.bincount, ember.tensor([1, 2]), minlength=-1)
    same_error(T.bincount, ember.tensor([1, 2]), ember.ones(3))


# ---- cumsum / cumprod ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
def test_cumsum_cumprod_match_the_cpu(dtype):
    x = data(5, 6, dtype=dtype, seed=19, special=False)
    if dtype in FLOATS:
        x = ember.from_numpy(np.random.default_rng(19).standard_normal((5, 6)).astype(dtype))
    for t in layouts(x):
        for dim in (0, 1, -1):
            check_sums(T.cumsum, t, dim)
            check_sums(ember.cumprod, t, dim)
            for out_dtype in (ember.float64, ember.int8, ember.float16):
                check_sums(T.cumsum, t, dim, dtype=out_dtype)
                check_sums(ember.cumprod, t, dim, dtype=out_dtype)


def test_cumsum_cumprod_long_rows_edge_cases_and_errors():
    x = ember.from_numpy(np.random.default_rng(20).standard_normal(3000).astype("float32"))
    check_sums(T.cumsum, x, 0)
    check_sums(T.cumprod, x[:200] / 1.5 + 1, 0)
    for fn in (ember.cumsum, ember.cumprod):
        check(fn, ember.tensor(3), 0)
        check(fn, ember.zeros(2, 0, dtype=ember.int32), 1)
        same_error(fn, data(3, 3), 2)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumsum_cumprod_in_place_and_out(name):
    x = data(4, 5, special=False)
    g = x.cuda()
    assert getattr(g, name + "_")(1) is g
    same(g, getattr(x.clone(), name + "_")(1))
    same(getattr(ember, name + "_")(x.cuda().t(), 1), getattr(ember, name + "_")(x.clone().t(), 1))
    same_error(getattr(T, name + "_"), x.clone(), 0, dtype=ember.float64)
    i = data(4, 5, dtype="int64", special=False)
    fn = getattr(ember, name)
    for out in (ember.empty(4, 5, dtype=ember.float64), ember.empty(4, 5, dtype=ember.int64)):
        same(fn(i.cuda(), 0, out=out.cuda()), fn(i, 0, out=out.clone()))
    for xx in (x.double(), i):  # accumulated in out's dtype
        out = ember.empty(4, 5, dtype=ember.float32)
        same(fn(xx.cuda(), 1, out=out.cuda()), fn(xx, 1, out=out))
    with pytest.raises(RuntimeError, match="same device"):
        fn(x.cuda(), 0, out=ember.empty(4, 5))


def test_cumsum_of_a_tensor_requiring_grad_in_place():
    pytest.importorskip("ember.autograd")  # requires_grad needs it
    x = data(3, 4, special=False).double()
    g = x.cuda().requires_grad_()
    y = g * 1
    y.cumsum_(1)
    y.sum().backward()
    expected = np.arange(4, 0, -1, dtype=np.float64) * np.ones((3, 1))
    np.testing.assert_array_equal(g.grad.cpu().numpy(), expected)
    assert g.grad.is_cuda
    assert math.isclose(float(y.sum()), float(x.cumsum(1).sum()))
