"""More index-driven ops on CUDA tensors against the same ops on the CPU, errors included:
scatter_reduce and scatter(reduce=), index_copy, masked_scatter, take, take_along_dim, and the
shape ops roll, repeat_interleave, diag_embed (diag, diagflat) and in-place tril_/triu_. Also the
CPU's checks of the older index ops (dims in range, negative indices, shape messages).
Simulated devices where there is no GPU (ember.cuda._testing)."""
# ruff: noqa: B023  (every checked lambda runs within its own loop iteration)

import re
import warnings

import numpy as np
import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, devices
from ember.cuda._testing import assert_same_error as same_error

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


def data(*shape, dtype="float32", seed=0):
    a = np.random.default_rng(seed).integers(-9, 9, shape)
    if dtype == "bool":
        a = a > 0
    elif dtype == "uint8":
        a = a + 9
    return ember.from_numpy(a.astype(dtype))


def index(shape, high, seed=0):
    return ember.from_numpy(np.random.default_rng(seed).integers(0, high, shape).astype("int64"))


def same(gpu, cpu):
    if isinstance(cpu, (tuple, list)):
        assert len(gpu) == len(cpu)
        for g, c in zip(gpu, cpu):
            same(g, c)
        return
    assert gpu.device == ember.device("cuda", 0)
    assert gpu.dtype == cpu.dtype and tuple(gpu.shape) == tuple(cpu.shape)
    np.testing.assert_array_equal(gpu.cpu().numpy(), cpu.numpy())


def moved(args, to_gpu):
    out = []
    for a in args:
        if isinstance(a, ember.Tensor):
            out.append(a.cuda() if to_gpu else a.clone())
        elif isinstance(a, tuple):
            out.append(tuple(moved(a, to_gpu)))
        else:
            out.append(a)
    return out


def check(fn, *args):
    """fn on CPU tensors and on their CUDA copies: equal results; an in-place op returns its
    first argument on both."""
    cpu_args, gpu_args = moved(args, False), moved(args, True)
    cpu, gpu = fn(*cpu_args), fn(*gpu_args)
    same(gpu, cpu)
    if cpu is cpu_args[0]:
        assert gpu is gpu_args[0]
    return gpu


def _on(x, t):
    """t on x's device (for tensors made inside a checked call)."""
    return t.cuda() if x.is_cuda else t


# ---- scatter_reduce ------------------------------------------------------------------------------

REDUCES = ["sum", "prod", "mean", "amax", "amin"]
DTYPES = ["float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_the_cpu(dtype, include_self):
    x = data(4, 5, dtype=dtype)
    src = data(6, 5, dtype=dtype, seed=1)
    for reduce in REDUCES:
        if reduce == "mean" and dtype == "bool":
            continue
        for dim, idx in [(0, index((6, 4), 4, seed=2)),  # repeated indices along dim 0
                         (1, index((3, 7), 5, seed=3)), (-1, index((4, 2), 5, seed=4))]:
            s = src if dim == 0 else data(4, 7, dtype=dtype, seed=5)
            check(lambda t, i, v: t.scatter_reduce(dim, i, v, reduce, include_self=include_self),
                  x, idx, s)
            check(lambda t, i, v: t.scatter_reduce_(dim, i, v, reduce, include_self=include_self),
                  x, idx, s)


def test_scatter_reduce_special_cases():
    x = ember.tensor([[1.0, float("nan"), 3.0], [4.0, 5.0, 6.0]])
    src = ember.tensor([[float("nan"), 2.0, 9.0], [0.5, -1.0, 7.0]])
    idx = ember.tensor([[0, 0, 1], [1, 0, 1]])
    for reduce in REDUCES:
        for inc in (True, False):
            check(lambda t, i, v: ember.scatter_reduce(t, 0, i, v, reduce, include_self=inc),
                  x, idx, src)
    # integer mean rounds toward -inf, as the CPU does
    xi, si = ember.tensor([[-7, 3], [5, 1]]), ember.tensor([[-4, 0], [2, -9]])
    check(lambda t, i, v: t.scatter_reduce(0, i, v, "mean"), xi, ember.tensor([[0, 0], [0, 0]]),
          si)
    # a non-contiguous self (written in place through its strides), 0-d and empty tensors
    base = data(5, 4, seed=7)
    check(lambda t, i, v: t.t().scatter_reduce_(1, i, v, "amax"), base,
          index((4, 6), 5, seed=8), data(4, 6, seed=9))
    check(lambda t, i, v: t.scatter_reduce(0, i, v, "sum"), ember.tensor(2.0),
          ember.tensor(0), ember.tensor(5.0))
    check(lambda t, i, v: t.scatter_reduce(0, i, v, "prod"), data(3, 2),
          ember.zeros(0, 2, dtype=ember.int64), data(1, 2))
    check(lambda t, i, v: t.scatter_reduce(1, i, v, "mean"), data(0, 3),
          ember.zeros(0, 2, dtype=ember.int64), data(0, 2))
    # out=
    out_c, out_g = ember.empty(2, 3), ember.empty(2, 3, device="cuda")
    ember.scatter_reduce(x, 0, idx, src, "amin", out=out_c)
    r = ember.scatter_reduce(x.cuda(), 0, idx.cuda(), src.cuda(), "amin", out=out_g)
    assert r is out_g
    same(out_g, out_c)


def test_scatter_legacy_reduce_matches_the_cpu():
    x, src = data(3, 4), data(3, 4, seed=1)
    idx = ember.tensor([[0, 0, 2, 1], [2, 2, 2, 0]])
    for reduce in ("add", "multiply"):
        check(lambda t, i: t.scatter(0, i, 1.5, reduce=reduce), x, idx)
        check(lambda t, i: t.scatter_(0, i, -2, reduce=reduce), x, idx)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            check(lambda t, i, v: t.scatter(0, i, v, reduce=reduce), x, idx, src)
        messages = [str(w.message) for w in got]
        assert len(messages) == 2 and messages[0] == messages[1]
    xi = data(3, 4, dtype="int32")
    check(lambda t, i: ember.scatter(t, 1, i, value=3, reduce="multiply"), xi, idx % 3)
    check(lambda t, i: ember.scatter(t, 1, i, 2.7), xi, idx)  # the value takes self's dtype


SCATTER_ERRORS = [
    lambda x, i, s: x.scatter_reduce(0, i, s, "max"),
    lambda x, i, s: x.bool().scatter_reduce(0, i, s.bool(), "mean"),
    lambda x, i, s: x.scatter_reduce(0, i.float(), s, "sum"),
    lambda x, i, s: x.scatter_reduce(0, i, s.double(), "sum"),
    lambda x, i, s: x.scatter_reduce(2, i, s, "sum"),
    lambda x, i, s: x.scatter_reduce(0, i[0], s, "sum"),
    lambda x, i, s: x.scatter_reduce(0, i, s[0], "sum"),
    lambda x, i, s: x.scatter_reduce(1, _on(x, ember.zeros(2, 5, dtype=ember.int64)), s, "sum"),
    lambda x, i, s: x.scatter_reduce(0, _on(x, ember.zeros(5, 1, dtype=ember.int64)), s, "sum"),
    lambda x, i, s: x.scatter_reduce_(0, i + 2, s, "amax"),
    lambda x, i, s: x.scatter_reduce_(1, i - 1, s, "amax"),
    lambda x, i, s: x.scatter(0, i, 1.0, reduce="sum"),
    lambda x, i, s: x.scatter(0, i, "a"),
    lambda x, i, s: x.scatter_(0, i, value="a"),
    lambda x, i, s: x.scatter(0, i, s.int()),
    lambda x, i, s: x.scatter(0, i - 3, s),
    lambda x, i, s: x.scatter_add(0, i * 9, s),
    lambda x, i, s: x.scatter_add_(-3, i, s),
    lambda x, i, s: x.scatter_add(1, i.int() - 1, s),
]


@pytest.mark.parametrize("fn", SCATTER_ERRORS)
def test_scatter_errors_are_the_cpus(fn):
    same_error(fn, data(3, 4), ember.tensor([[0, 2], [1, 1]]), data(2, 3, seed=1))


# ---- the older ops: the CPU's checks ------------------------------------------------------------

OLDER_ERRORS = [
    lambda x, i: x.gather(1, i - 1),  # negative indices: refused, as on the CPU
    lambda x, i: x.gather(2, i),
    lambda x, i: x.gather(0, i.reshape(1, 2, 2)),
    lambda x, i: x.gather(1, _on(x, ember.zeros(5, 1, dtype=ember.int64))),
    lambda x, i: x.index_select(0, _on(x, ember.tensor([-1]))),
    lambda x, i: x.index_select(0, _on(x, ember.tensor([1.0]))),
    lambda x, i: x.index_select(2, _on(x, ember.tensor([0]))),
    lambda x, i: x.index_add(0, _on(x, ember.tensor([-1, 0])), x[:2]),
    lambda x, i: x.index_add(0, _on(x, ember.tensor([[1, 0]])), x[:2]),
    lambda x, i: x.index_add(0, _on(x, ember.tensor([1, 0], dtype=ember.int16)), x[:2]),
    lambda x, i: x.index_add(0, _on(x, ember.tensor([1, 0])), x[:2].double()),
    lambda x, i: x.index_add(0, _on(x, ember.tensor([1, 0])), x),
    lambda x, i: x.index_add(0, _on(x, ember.tensor([1, 0])), x[:2, :3]),
    lambda x, i: x.index_add(3, _on(x, ember.tensor([1, 0])), x[:2]),
    lambda x, i: x.to(ember.uint8).index_add(0, _on(x, ember.tensor([1])), x[:1].to(ember.uint8),
                                             alpha=300),
    lambda x, i: x.index_fill(4, _on(x, ember.tensor([0])), 1.0),
]


@pytest.mark.parametrize("fn", OLDER_ERRORS)
def test_older_index_ops_take_the_cpus_checks(fn):
    same_error(fn, data(3, 4), ember.tensor([[0, 2], [1, 1]]))


def test_older_index_ops_on_non_contiguous_and_0d_tensors():
    x = data(4, 6)
    check(lambda t, i: t.t().gather(0, i), x, index((3, 4), 6))
    check(lambda t, i: t[:, ::2].scatter_(1, i, 7.0), x, index((4, 2), 3))
    check(lambda t, i, s: t.t().index_add_(1, i, s), x, ember.tensor([3, 3, 0]), data(6, 3))
    check(lambda t, i: t.gather(0, i), ember.tensor(4.0), ember.tensor(0))
    check(lambda t, i: t.index_fill(0, i, 2.0), ember.tensor(4.0), ember.tensor([0, -1]))
    # a float alpha of an integer tensor truncates (torch's conversion into the dtype)
    check(lambda t, i, s: t.index_add(0, i, s, alpha=1.5), ember.zeros(3, dtype=ember.int64),
          ember.tensor([0, 1]), ember.tensor([3, 3]))


def test_scatter_family_out_on_the_device():
    # no position written twice: which write wins is undefined on a GPU (docs/cuda.md)
    x, idx, src = data(3, 4), ember.tensor([[0, 2], [1, 0]]), data(2, 3, seed=1)
    for fn in (lambda t, i, s, out: ember.scatter(t, 1, i, s, out=out),
               lambda t, i, s, out: ember.scatter_add(t, 0, i, s, out=out),
               lambda t, i, s, out: ember.index_add(t, 1, i[0], t[:, :2], alpha=3, out=out)):
        out_c, out_g = ember.empty(3, 4), ember.empty(3, 4, device="cuda")
        fn(x, idx, src, out_c)
        assert fn(x.cuda(), idx.cuda(), src.cuda(), out_g) is out_g
        same(out_g, out_c)


# ---- index_copy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_index_copy_matches_the_cpu(dtype):
    x = data(4, 5, dtype=dtype)
    for dim, idx, src in [(0, ember.tensor([3, 0]), data(2, 5, dtype=dtype, seed=1)),
                          (1, ember.tensor([4, 1, 2]), data(4, 3, dtype=dtype, seed=2)),
                          (-1, ember.tensor(2), data(4, 1, dtype=dtype, seed=3))]:
        check(lambda t, i, s: t.index_copy(dim, i, s), x, idx, src)
        check(lambda t, i, s: t.index_copy_(dim, i, s), x, idx, src)
    check(lambda t, i, s: t.t().index_copy_(0, i, s), x, ember.tensor([1]),
          data(1, 4, dtype=dtype, seed=4))
    check(lambda t, i, s: ember.index_copy(t, 0, i, s), ember.tensor(1.0), ember.tensor([0]),
          ember.tensor(5.0))
    check(lambda t, i, s: t.index_copy(0, i, s), data(3), ember.tensor([2]), ember.tensor(5.0))
    check(lambda t, i, s: t.index_copy(1, i, s), data(3, 4),
          ember.zeros(0, dtype=ember.int64), data(3, 0))
    out_c, out_g = ember.empty(3, 2), ember.empty(3, 2, device="cuda")
    ember.index_copy(data(3, 2), 0, ember.tensor([1]), data(1, 2, seed=5), out=out_c)
    r = ember.index_copy(data(3, 2).cuda(), 0, ember.tensor([1]).cuda(), data(1, 2, seed=5).cuda(),
                         out=out_g)
    assert r is out_g
    same(out_g, out_c)


INDEX_COPY_ERRORS = [
    lambda x, s: x.index_copy(0, _on(x, ember.tensor([[0]])), s),
    lambda x, s: x.index_copy(0, _on(x, ember.tensor([0], dtype=ember.int32)), s),
    lambda x, s: x.index_copy(0, _on(x, ember.tensor([0])), s.double()),
    lambda x, s: x.index_copy(0, _on(x, ember.tensor([0])), s.reshape(1, 4, 1)),
    lambda x, s: x.index_copy(0, _on(x, ember.tensor([0])), s[:, :3]),
    lambda x, s: x.index_copy(0, _on(x, ember.tensor([0, 1])), s),
    lambda x, s: x.index_copy_(0, _on(x, ember.tensor([3])), s),
    lambda x, s: x.index_copy_(1, _on(x, ember.tensor([-1])), s.reshape(4, 1)[:3]),
    lambda x, s: x.index_copy(2, _on(x, ember.tensor([0])), s),
    lambda x, s: x[0, 0].index_copy(0, _on(x, ember.tensor([0])), s.reshape(2, 2)),
]


@pytest.mark.parametrize("fn", INDEX_COPY_ERRORS)
def test_index_copy_errors_are_the_cpus(fn):
    same_error(fn, data(3, 4), data(1, 4, seed=1))


# ---- masked_scatter -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_masked_scatter_matches_the_cpu(dtype):
    x, src = data(3, 4, dtype=dtype), data(5, 4, dtype=dtype, seed=1)
    for mask in [data(3, 4, dtype="bool", seed=2), ember.tensor([True, False, True, True]),
                 ember.tensor([[True], [False], [True]])]:
        check(lambda t, m, s: t.masked_scatter(m, s), x, mask, src)
        check(lambda t, m, s: t.masked_scatter_(m, s), x, mask, src)
    # self broadcast to the mask (out of place only); non-contiguous self; 0-d; empty
    check(lambda t, m, s: t.masked_scatter(m, s), data(4, dtype=dtype), data(2, 4, dtype="bool"),
          src)
    check(lambda t, m, s: t.t().masked_scatter_(m, s), x, data(4, 3, dtype="bool", seed=3), src)
    check(lambda t, m, s: t.masked_scatter(m, s), ember.tensor(1.0), ember.tensor(True),
          ember.tensor([7.0, 8.0]))
    check(lambda t, m, s: t.masked_scatter(m, s), data(0, 4), ember.ones(0, 4, dtype=ember.bool),
          data(0))


MASKED_SCATTER_ERRORS = [
    lambda x, s: x.masked_scatter(_on(x, ember.tensor([1, 0, 1, 1])), s),
    lambda x, s: x.masked_scatter(x > 0, s.double()),
    lambda x, s: x.masked_scatter(_on(x, ember.ones(3, dtype=ember.bool)), s),
    lambda x, s: x.masked_scatter_(_on(x, ember.ones(2, 3, 4, dtype=ember.bool)), s),
    lambda x, s: x.masked_scatter_(_on(x, ember.ones(3, dtype=ember.bool)), s),
    lambda x, s: x.masked_scatter(x > -20, s[:2]),
]


@pytest.mark.parametrize("fn", MASKED_SCATTER_ERRORS)
def test_masked_scatter_errors_are_the_cpus(fn):
    same_error(fn, data(3, 4), data(3, 3))


# ---- take / take_along_dim ----------------------------------------------------------------------


def test_take_matches_the_cpu():
    x = data(3, 4, dtype="int32")
    for idx in [ember.tensor([0, 11, -1, -12, 5]), ember.tensor([[3, 3], [0, -2]]),
                ember.tensor(7), ember.zeros(0, dtype=ember.int64)]:
        check(lambda t, i: t.take(i), x, idx)
        check(lambda t, i: ember.take(t.t(), i), x, idx)
    check(lambda t, i: t.take(i), data(0, 2), ember.zeros(0, 3, dtype=ember.int64))
    out_c, out_g = ember.empty(2, dtype=ember.int32), ember.empty(2, dtype=ember.int32,
                                                                  device="cuda")
    ember.take(x, ember.tensor([1, 2]), out=out_c)
    assert ember.take(x.cuda(), ember.tensor([1, 2]).cuda(), out=out_g) is out_g
    same(out_g, out_c)


def test_take_along_dim_matches_the_cpu():
    x = data(3, 4)
    cases = [
        (ember.tensor([[0, 3, -1], [2, 2, 0], [1, -4, 3]]), 1),
        (ember.tensor([[2, 0, 1, -3]]), 0),  # broadcast along dim 1's other dim
        (ember.tensor([[1], [0], [3]]), -1),
        (ember.tensor([[1, 2], [0, 0], [3, 3]]), None),  # over the flattened input
        (ember.tensor([0, 1, 11]), None),
        (ember.zeros(3, 0, dtype=ember.int64), 1),
    ]
    for idx, dim in cases:
        check(lambda t, i: t.take_along_dim(i, dim), x, idx)
        check(lambda t, i: ember.take_along_dim(t.t().t(), i, dim=dim), x, idx)
    # without a dim, gather's bounds: no negative index (torch's)
    for device in ("cpu", "cuda"):
        with pytest.raises(RuntimeError, match="index -12 is out of bounds"):
            x.to(device).take_along_dim(ember.tensor([0, -12]).to(device))
    x3 = data(2, 1, 5)
    check(lambda t, i: t.take_along_dim(i, 2), x3, index((1, 3, 2), 5))  # both broadcast
    check(lambda t, i: t.take_along_dim(i, 0), ember.tensor(3.0), ember.tensor(-1))
    check(lambda t, i: t.take_along_dim(i), ember.tensor(3.0), ember.tensor([0, 0]))
    out_c, out_g = ember.empty(3, 1), ember.empty(3, 1, device="cuda")
    ember.take_along_dim(x, ember.tensor([[1], [0], [3]]), 1, out=out_c)
    assert ember.take_along_dim(x.cuda(), ember.tensor([[1], [0], [3]]).cuda(), 1,
                                out=out_g) is out_g
    same(out_g, out_c)


TAKE_ERRORS = [
    lambda x: x.take(_on(x, ember.tensor([12]))),
    lambda x: x.take(_on(x, ember.tensor([-13]))),
    lambda x: x.take(_on(x, ember.tensor([1], dtype=ember.int32))),
    lambda x: x[:0].take(_on(x, ember.tensor([0]))),
    lambda x: x.take_along_dim(_on(x, ember.tensor([[4]])), 1),
    lambda x: x.take_along_dim(_on(x, ember.tensor([[-5]])), 1),
    lambda x: x.take_along_dim(_on(x, ember.tensor([12]))),
    lambda x: x[:0].take_along_dim(_on(x, ember.tensor([0]))),
    lambda x: x.take_along_dim(_on(x, ember.tensor([[1]], dtype=ember.int32)), 1),
    lambda x: x.take_along_dim(_on(x, ember.tensor([1])), 0),
    lambda x: x.take_along_dim(_on(x, ember.tensor([[1], [0]])), 1),
    lambda x: x.take_along_dim(_on(x, ember.tensor([[1]])), 2),
]


@pytest.mark.parametrize("fn", TAKE_ERRORS)
def test_take_errors_are_the_cpus(fn):
    same_error(fn, data(3, 4))


# ---- roll / repeat_interleave / diag_embed / tril_ / triu_ ---------------------------------------


def test_roll_matches_the_cpu():
    x = data(3, 4, 5, dtype="int64")
    for shifts, dims in [(1, 0), (-2, 1), (7, -1), ((1, 2), (0, 2)), ((1, 3), (1, 1)),
                         (5, None), (-13, None), ((0,), (0,))]:
        check(lambda t: t.roll(shifts, dims), x)
        check(lambda t: ember.roll(t.transpose(0, 2), shifts, dims), x)
    check(lambda t: t.roll(3), ember.tensor(2.0))
    same_error(lambda t: t.roll(1, 0), ember.tensor(2.0))  # a 0-d tensor has no dim 0 (torch)
    check(lambda t: t.roll((1, 1), (0, 1)), data(0, 3))
    for shifts, dims in [((), ()), ((1, 2), None), ((1, 2), (0,)), (1, 3)]:
        same_error(lambda t: t.roll(shifts, dims), x)


def test_repeat_interleave_matches_the_cpu():
    x = data(3, 4, dtype="float64")
    for repeats, dim in [(2, None), (0, 1), (3, -1), (ember.tensor([1, 0, 2]), 0),
                         (ember.tensor([2, 1, 1, 0], dtype=ember.int32), 1),
                         (ember.tensor(2), 1), (ember.tensor([1] * 12), None)]:
        check(lambda t, *r: t.repeat_interleave(r[0] if r else repeats, dim), x,
              *([repeats] if isinstance(repeats, ember.Tensor) else []))
        check(lambda t: ember.repeat_interleave(t.t(), 2, dim=dim), x)
    check(lambda t, r: t.repeat_interleave(r, 0, output_size=4), x, ember.tensor([2, 2, 0]))
    check(lambda t: t.repeat_interleave(3), ember.tensor(2.0))
    check(lambda t: t.repeat_interleave(2, 0), data(0, 3))
    # the one-argument form: each position i, counts[i] times
    check(lambda r: ember.repeat_interleave(r), ember.tensor([2, 0, 3, 1]))
    check(lambda r: ember.repeat_interleave(r, output_size=3),
          ember.tensor([1, 2], dtype=ember.int32))
    check(lambda r: ember.repeat_interleave(r), ember.zeros(0, dtype=ember.int64))


REPEAT_ERRORS = [
    lambda x: x.repeat_interleave(-1),
    lambda x: x.repeat_interleave(_on(x, ember.tensor([1, -1, 1])), 0),
    lambda x: x.repeat_interleave(_on(x, ember.tensor([1, 1])), 0),
    lambda x: x.repeat_interleave(_on(x, ember.tensor([[1]])), 0),
    lambda x: x.repeat_interleave(_on(x, ember.tensor([1.0, 1.0, 1.0])), 0),
    lambda x: x.repeat_interleave(2, 2),
    lambda x: x.repeat_interleave(2, 0, output_size=5),
    lambda x: x.repeat_interleave("a"),
    lambda x: ember.repeat_interleave(_on(x, ember.tensor([[1]]))),
    lambda x: ember.repeat_interleave(_on(x, ember.tensor([1, 2])), output_size=2),
    lambda x: ember.repeat_interleave(_on(x, ember.tensor([1.0]))),
    lambda x: ember.repeat_interleave(_on(x, ember.tensor([-1]))),
]


@pytest.mark.parametrize("fn", REPEAT_ERRORS)
def test_repeat_interleave_errors_are_the_cpus(fn):
    same_error(fn, data(3, 4))


def test_diag_embed_diag_and_diagflat_match_the_cpu():
    x = data(2, 3, dtype="int32")
    for offset, d1, d2 in [(0, -2, -1), (1, 0, 2), (-2, 2, 0), (3, 1, 0)]:
        check(lambda t: t.diag_embed(offset, d1, d2), x)
        check(lambda t: ember.diag_embed(t.t(), offset, d1, d2), x)
    same_error(lambda t: ember.diag_embed(t), ember.tensor(2.0))
    check(lambda t: ember.diag_embed(t, 1), data(0, 3))
    for k in (0, 2, -1):
        check(lambda t: ember.diag(t, k), data(4))
        check(lambda t: ember.diag(t, k), data(3, 4))
        check(lambda t: ember.diagflat(t, k), data(2, 2))
    for args in [(0, 1, 1), (0, 3, 0)]:
        same_error(lambda t: t.diag_embed(*args), x)


def test_inplace_tril_triu_match_the_cpu():
    x = data(2, 4, 5, dtype="float16")
    for k in (0, 1, -2, 9):
        check(lambda t: t.tril_(k), x)
        check(lambda t: t.triu_(k), x)
        check(lambda t: ember.tril_(t.transpose(1, 2), k), x)
        check(lambda t: ember.triu_(t[:, ::2], k), x)
    check(lambda t: t.tril_(), data(0, 3))
    same_error(lambda t: t.tril_(), data(4))
    same_error(lambda t: t.triu_(), data(4))


# ---- devices, and the segmented reduction CuPy uses -----------------------------------------------


def test_index_tensors_on_another_device_are_refused():
    x = data(3, 4)
    idx = ember.tensor([[0, 1]])
    for fn in (lambda t, i: t.gather(1, i), lambda t, i: t.scatter_reduce(1, i, t, "sum"),
               lambda t, i: t.take(i), lambda t, i: t.take_along_dim(i, 1)):
        for t, i in ((x.cuda(), idx), (x, idx.cuda())):
            with pytest.raises(RuntimeError, match="same device"):
                fn(t, i)


def test_cuda_indices_of_a_cpu_tensor_get_torchs_errors():
    """Advanced indexing takes CPU indices for a CUDA tensor, not the reverse (torch's message);
    the dim-wise and mask ops call it a device mix. None reaches the CPU kernels' refusal."""
    x, i = data(3), ember.tensor([0, 1]).cuda()
    on_cpu = "indices should be either on cpu or on the same device as the indexed tensor (cpu)"
    for fn in (lambda: x[i], lambda: x.index_put_((i,), ember.tensor(2.0)),
               lambda: x.index_put((i,), ember.tensor(2.0)), lambda: x.__setitem__(i, 1.0)):
        with pytest.raises(RuntimeError, match=re.escape(on_cpu)):
            fn()
    mask = ember.tensor([True, False, True]).cuda()
    for fn in (lambda: x.index_fill(0, i, 2.0), lambda: x.index_fill_(0, i, 2.0),
               lambda: x.index_select(0, i), lambda: x.masked_fill(mask, 1.0),
               lambda: x.masked_fill_(mask, 1.0), lambda: x.masked_select(mask)):
        with pytest.raises(RuntimeError, match="found at least two devices, cpu and cuda:0"):
            fn()
    np.testing.assert_array_equal(x.numpy(), data(3).numpy())  # nothing was written
    # the other way round is fine: CPU indices of a CUDA tensor
    same(x.cuda()[ember.tensor([2, 0])], x[ember.tensor([2, 0])])
    same(x.cuda().index_select(0, ember.tensor([2, 0])), x.index_select(0, ember.tensor([2, 0])))

@pytest.mark.parametrize("ufunc", ["add", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "bool"])
def test_segmented_scatter_equals_ufunc_at(ufunc, dtype):
    """The segmented reduction that stands in for ufunc.at on CuPy, on the array module in use
    (CuPy on a GPU, NumPy over the simulated devices), against NumPy's ufunc.at."""
    from ember.cuda import _ops

    mod = _ops.xp()
    rng = np.random.default_rng(0)
    for n, size in [(1, 1), (50, 7), (300, 1), (257, 300), (0, 3)]:
        pos = rng.integers(0, size, n)
        vals = rng.normal(0, 2, n) if dtype.startswith("float") else rng.integers(-3, 4, n)
        vals = vals.astype(dtype)
        if dtype.startswith("float") and n > 3:
            vals[3] = np.nan
        base = rng.integers(-2, 3, size).astype(dtype)
        want, got = base.copy(), base.copy()
        with np.errstate(all="ignore"):
            getattr(np, ufunc).at(want, pos, vals)
            on_device = mod.asarray(got)
            _ops._segmented_scatter(on_device, mod.asarray(pos), mod.asarray(vals), ufunc)
            got = on_device.get() if hasattr(on_device, "get") else on_device
        if dtype.startswith("float") and ufunc in ("add", "multiply"):  # another summation order
            np.testing.assert_allclose(got, want, rtol=1e-5)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_index_add_with_alpha_adds_in_the_cpus_precision(dtype):
    """float16 adds `src * alpha` in float32 and rounds once per element, as the CPU kernel does
    (a non-repeating index, so the order of the adds cannot matter). float32 may differ in the
    last bit: the compiler may fuse the CPU kernel's a + b * alpha into one FMA."""
    rng = np.random.default_rng(3)
    x = ember.from_numpy((rng.random((5, 256)) * 3).astype(dtype))
    src = ember.from_numpy((rng.random((3, 256)) * 3).astype(dtype))
    idx = ember.tensor([4, 0, 2])
    gpu = x.cuda().index_add(0, idx.cuda(), src.cuda(), alpha=0.1)
    cpu = x.index_add(0, idx, src, alpha=0.1)
    if dtype == "float16":
        same(gpu, cpu)
    else:
        np.testing.assert_allclose(gpu.cpu().numpy(), cpu.numpy(), rtol=2e-7, atol=0)
