"""Gradients of the index-driven and element-moving shape ops through CUDA tensors: finite
differences in float64, the inputs crossing to the device inside the checked function (so the
forward, the gradient formula and its double backward all run on the device). Simulated devices
where there is no GPU (ember.cuda._testing)."""

import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.cuda._testing import GPU_WITHOUT_CUPY, devices

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


def on_device(fn):
    return lambda *ts: fn(*(t.cuda() for t in ts)).cpu()


def randn(*shape, seed=0):
    ember.manual_seed(seed)
    return ember.randn(*shape, dtype=ember.float64, requires_grad=True)


IDX = ember.tensor([[0, 2, 0, 1], [1, 1, 2, 2]])


@pytest.mark.parametrize("reduce", ["sum", "amax", "mean", "prod", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradcheck(reduce, include_self):
    x, src = randn(3, 4), randn(2, 4, seed=1)
    idx = IDX.cuda()
    fn = on_device(lambda a, s: a.scatter_reduce(0, idx, s, reduce, include_self=include_self))
    assert gradcheck(fn, (x, src))
    if reduce in ("sum", "amax"):
        assert gradgradcheck(fn, (x, src))


def test_scatter_reduce_in_place_gradcheck():
    x, src = randn(3, 4), randn(2, 4, seed=1)
    fn = on_device(lambda a, s: (a * 1).scatter_reduce_(0, IDX.cuda(), s, "sum"))
    assert gradcheck(fn, (x, src))


def test_take_along_dim_and_take_gradcheck():
    x = randn(3, 4)
    idx = ember.tensor([[0, 3, 3], [1, 0, -1], [2, 2, 2]]).cuda()
    flat = ember.tensor([[0, 3, 11], [1, 0, 7]]).cuda()  # (no dim: no negative index, as torch)
    for fn in (lambda a: a.take_along_dim(idx, 1), lambda a: a.take_along_dim(flat),
               lambda a: a.take_along_dim(idx[:1], 1),  # broadcast along dim 0
               lambda a: a.take(idx)):
        assert gradcheck(on_device(fn), (x,))
        assert gradgradcheck(on_device(fn), (x,))


def test_repeat_interleave_gradcheck():
    x = randn(3, 2)
    reps = ember.tensor([2, 0, 3]).cuda()
    for fn in (lambda a: a.repeat_interleave(2), lambda a: a.repeat_interleave(3, dim=1),
               lambda a: a.repeat_interleave(reps, dim=0)):
        assert gradcheck(on_device(fn), (x,))
        assert gradgradcheck(on_device(fn), (x,))


def test_roll_gradcheck():
    x = randn(3, 4)
    for fn in (lambda a: a.roll(1, 0), lambda a: a.roll((2, -1), (1, 0)), lambda a: a.roll(5)):
        assert gradcheck(on_device(fn), (x,))
        assert gradgradcheck(on_device(fn), (x,))


def test_masked_scatter_gradcheck():
    x, src = randn(3, 4), randn(10, seed=1)
    mask = ember.tensor([[True, False, True, True], [False] * 4, [True, True, False, True]])
    fn = on_device(lambda a, s: a.masked_scatter(mask.cuda(), s))
    assert gradcheck(fn, (x, src))
    assert gradgradcheck(fn, (x, src))
    fn = on_device(lambda a, s: (a * 1).masked_scatter_(mask.cuda(), s))
    assert gradcheck(fn, (x, src))


def test_index_copy_diag_embed_and_inplace_tril_gradcheck():
    x, src = randn(4, 3), randn(2, 3, seed=1)
    idx = ember.tensor([3, 1]).cuda()
    assert gradcheck(on_device(lambda a, s: a.index_copy(0, idx, s)), (x, src))
    assert gradcheck(on_device(lambda a: ember.diag_embed(a, 1)), (x,))
    assert gradcheck(on_device(lambda a: ember.diag(a[0])), (x,))
    assert gradcheck(on_device(lambda a: (a * 1).tril_(-1)), (x,))
    assert gradcheck(on_device(lambda a: (a * 1).triu_(1)), (x,))


def test_gradients_stay_on_the_device():
    x = ember.randn(3, 4, dtype=ember.float64).cuda().requires_grad_()
    src = ember.randn(2, 4, dtype=ember.float64).cuda().requires_grad_()
    y = x.scatter_reduce(0, IDX.cuda(), src, "amax").roll(1, 1).repeat_interleave(2, dim=0)
    y.take_along_dim(ember.tensor([[1], [0]] * 3).cuda(), 1).sum().backward()
    assert x.grad.device == ember.device("cuda", 0)
    assert src.grad.device == ember.device("cuda", 0)


def test_take_along_dim_gradient_takes_negative_indices_on_the_cpu_too():
    x = randn(3, 4)
    idx = ember.tensor([[0, -1], [-4, 2], [3, -2]])
    assert gradcheck(lambda a: a.take_along_dim(idx, 1), (x,))
