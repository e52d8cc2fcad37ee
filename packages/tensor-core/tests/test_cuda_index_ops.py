"""Ops driven by index tensors on CUDA tensors (advanced indexing, index_put_, index_select,
gather, scatter, index_add, index_fill, masked_fill/select, nonzero) against the same ops on the
CPU, errors included. Simulated devices where there is no GPU (see test_cuda_tensors.py)."""


import numpy as np
import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices
from ember.cuda._testing import assert_same_error as same_error

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


def data(*shape, dtype="float32", seed=0):
    return ember.from_numpy(
        np.random.default_rng(seed).integers(-9, 9, shape).astype(dtype))


def same(gpu, cpu):
    if isinstance(cpu, (tuple, list)):
        assert len(gpu) == len(cpu)
        for g, c in zip(gpu, cpu):
            same(g, c)
        return
    assert gpu.is_cuda and gpu.dtype == cpu.dtype and tuple(gpu.shape) == tuple(cpu.shape)
    np.testing.assert_array_equal(gpu.cpu().numpy(), cpu.numpy())


def on_gpu(v):
    if isinstance(v, ember.Tensor):
        return v.cuda()
    if isinstance(v, tuple):
        return tuple(on_gpu(a) for a in v)
    return v


def both(fn, x, *args, **kwargs):
    """fn(x, ...) on the CPU and on the device (x and tensor arguments moved; index tensors too)."""
    cpu = fn(x.clone(), *args, **kwargs)
    gpu = fn(x.cuda(), *(on_gpu(a) for a in args), **kwargs)
    return cpu, gpu


IDX = ember.tensor([2, 0, -1, 2])
MASK = ember.tensor([True, False, True])

GETITEMS = [
    lambda x: x[IDX],
    lambda x: x[:, IDX[:3] % 4],
    lambda x: x[IDX[:2], 1:, ember.tensor([0, 3])],
    lambda x: x[1:, ..., ember.tensor([[1], [0]])],
    lambda x: x[MASK],
    lambda x: x[x > 0],
    lambda x: x[None, MASK, 2],
    lambda x: x[:, ember.tensor([1, 3]), :, None],
]


@pytest.mark.parametrize("index", GETITEMS)
def test_advanced_indexing_matches_the_cpu(index):
    x = data(3, 4, 5)
    same(index(x.cuda()), index(x))


@pytest.mark.parametrize("accumulate", [False, True])
def test_setitem_and_index_put_match_the_cpu(accumulate):
    x, v = data(3, 4, 5), data(4, 5, seed=1)
    for cpu_t, gpu_t in [(x.clone(), x.cuda())]:
        cpu_t[IDX] = v if not accumulate else cpu_t[IDX]
        gpu_t[IDX.cuda()] = v.cuda() if not accumulate else gpu_t[IDX]
        same(gpu_t, cpu_t)
    # A position written twice keeps the last write on the CPU; on a GPU which one wins is
    # undefined (docs/cuda.md), so there the writes go to distinct positions.
    first = [0, 2, 1] if REAL_GPU and not accumulate else [0, 2, 0]
    idx = (ember.tensor(first), ember.tensor([1, 1, 1]))
    vals = data(3, 5, seed=2)
    cpu, gpu = both(lambda t, i, w: t.index_put_(i, w, accumulate=accumulate), x, idx, vals)
    same(gpu, cpu)
    cpu, gpu = both(lambda t, i, w: ember.index_put(t, i, w, accumulate), x, idx, vals)
    same(gpu, cpu)
    y = x.cuda()
    y[y < 0] = 0.5  # a mask and a number
    c = x.clone()
    c[c < 0] = 0.5
    same(y, c)
    y[:, 1] = ember.tensor(7.0)  # basic indexing: a copy on the device
    c[:, 1] = ember.tensor(7.0)
    same(y, c)


def test_cpu_index_tensors_may_index_a_cuda_tensor():
    x = data(5, 3)
    same(x.cuda()[ember.tensor([4, 0])], x[ember.tensor([4, 0])])


@pytest.mark.parametrize("index", [
    lambda x: x[ember.tensor([3])],
    lambda x: x[:, ember.tensor([0, -6])],
    lambda x: x[ember.tensor([True, False])],
    lambda x: x[ember.tensor([1.0])],
])
def test_indexing_errors_are_the_cpus(index):
    same_error(index, data(3, 4, 5))


def test_index_select_gather_and_their_errors():
    x = data(4, 5)
    for dim in (0, 1, -1):
        same(*reversed(both(ember.index_select, x, dim, ember.tensor([3, 0, 0]))))
    same(*reversed(both(ember.index_select, x, 0, ember.tensor([1], dtype=ember.int32))))
    g = ember.tensor([[0, 4, 1], [3, 3, 0]])
    same(*reversed(both(ember.gather, x, 1, g)))
    same(*reversed(both(ember.gather, x, 0, g % 4)))
    same_error(ember.index_select, x, 0, ember.tensor([4]))
    same_error(ember.gather, x, 1, ember.tensor([[5]]))
    same_error(ember.gather, x, 1, ember.tensor([[1.0]]))


@pytest.mark.parametrize("inplace", [False, True])
def test_scatter_family_matches_the_cpu(inplace):
    x = data(4, 5)
    idx = ember.tensor([[0, 1, 2], [3, 0, 1]])
    src = data(2, 4, seed=3)
    sfx = "_" if inplace else ""

    def call(name, *a, **k):
        return lambda t, *b: getattr(t, name + sfx)(*b, **k)

    same(*reversed(both(call("scatter"), x, 1, idx, src)))
    same(*reversed(both(call("scatter", value=2.5), x, 0, idx % 4)))
    same(*reversed(both(call("scatter_add"), x, 1, ember.tensor([[0, 0, 2], [1, 1, 1]]), src)))
    same(*reversed(both(call("index_add", alpha=2), x, 0, ember.tensor([1, 1, 3]), data(3, 5))))
    same(*reversed(both(call("index_fill"), x, 1, ember.tensor([0, 4]), -1.0)))
    mask = ember.tensor([[True], [False], [True], [True]])
    same(*reversed(both(call("masked_fill"), x, mask, 3.0)))
    same(*reversed(both(call("masked_fill"), x, mask, ember.tensor(4.0))))
    same_error(call("scatter_add"), x, 1, ember.tensor([[7]]), src)
    same_error(call("index_add"), x, 0, ember.tensor([9]), data(1, 5))
    same_error(call("masked_fill"), x, ember.tensor([1, 0, 1, 1]).reshape(4, 1), 1.0)


def test_masked_select_and_nonzero_match_the_cpu():
    x = data(3, 4)
    same(*reversed(both(ember.masked_select, x, x > 0)))
    same(*reversed(both(ember.masked_select, x, ember.tensor([True, False, False, True]))))
    same(*reversed(both(ember.nonzero, x)))
    same(*reversed(both(lambda t: ember.nonzero(t, as_tuple=True), x)))
    same(*reversed(both(ember.nonzero, ember.tensor(3.0))))
