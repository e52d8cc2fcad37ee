"""Autograd over CUDA tensors: on a GPU, and where there is none on ember.cuda's simulated
devices (the host backend: device memory is host memory and ops run through NumPy, along the
same dispatch path CuPy takes on a GPU)."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.cuda._testing import GPU_WITHOUT_CUPY, devices

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


def test_to_device_round_trip_gradcheck():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda t: (t.cuda() * 2).sin().cpu(), (x,))
    assert gradgradcheck(lambda t: (t.cuda() ** 2).cpu(), (x,))


def test_gradient_of_a_cuda_leaf_stays_on_the_device():
    w = ember.randn(4, 3, dtype=ember.float64).cuda().requires_grad_()
    x = ember.randn(5, 4, dtype=ember.float64).cuda()
    loss = (x @ w).tanh().sum()
    loss.backward()
    assert w.grad.device == ember.device("cuda", 0)
    xn, wn = x.cpu().numpy(), w.detach().cpu().numpy()
    expected = xn.T @ (1 - np.tanh(xn @ wn) ** 2)  # d/dW sum(tanh(XW)), by hand
    np.testing.assert_allclose(w.grad.cpu().numpy(), expected, rtol=1e-12)


def test_gradient_crosses_devices_back_to_the_cpu_input():
    x = ember.randn(6, dtype=ember.float64, requires_grad=True)
    y = x.to("cuda").exp().sum()
    y.backward()
    assert x.grad.device == ember.device("cpu")
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()), rtol=1e-12)
    assert type(x.to("cuda").grad_fn).__name__ == "ToCopyBackward0"


# The nn kernels on the device, through their gradient formulas: finite differences in float64
# (inputs cross to the device inside the checked function, so gradcheck sees CPU tensors).

def _cuda_fn(fn):
    return lambda *ts: fn(*(t.cuda() for t in ts)).cpu()


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_gradcheck_on_the_device(transposed):
    x = ember.randn(2, 4, 5, 6, dtype=ember.float64, requires_grad=True)
    wshape = (4, 3, 3, 2) if transposed else (6, 2, 3, 2)
    w = ember.randn(*wshape, dtype=ember.float64, requires_grad=True)
    b = ember.randn(6, dtype=ember.float64, requires_grad=True)
    kw = dict(stride=[2, 1], padding=[1, 1], dilation=[1, 2], transposed=transposed,
              output_padding=[1, 0] if transposed else [0, 0], groups=2)
    fn = _cuda_fn(lambda a, ww, bb: ember.convolution(a, ww, bb, **kw))
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_pooling_gradcheck_on_the_device():
    x = ember.randn(2, 3, 7, 6, dtype=ember.float64, requires_grad=True)
    for fn in (lambda a: ember.max_pool2d(a, 3, stride=2, padding=1),
               lambda a: ember.avg_pool2d(a, (3, 2), stride=2, padding=1, ceil_mode=True),
               lambda a: ember.adaptive_avg_pool2d(a, (3, 4)),
               lambda a: ember.adaptive_max_pool2d(a, (2, 3))[0]):
        assert gradcheck(_cuda_fn(fn), (x,))
        assert gradgradcheck(_cuda_fn(fn), (x,))


def test_loss_norm_and_embedding_gradcheck_on_the_device():
    x = ember.randn(5, 4, dtype=ember.float64, requires_grad=True)
    t = ember.tensor([0, 3, 1, 1, 2]).cuda()
    w = ember.rand(4, dtype=ember.float64) + 0.5
    loss = _cuda_fn(lambda a: ember.nll_loss(a.log_softmax(1), t, w.cuda(), reduction=1,
                                             ignore_index=1))
    assert gradcheck(loss, (x,))
    assert gradgradcheck(loss, (x,))
    g = ember.randn(4, dtype=ember.float64, requires_grad=True)
    h = ember.randn(4, dtype=ember.float64, requires_grad=True)
    xb = ember.randn(3, 4, 5, dtype=ember.float64, requires_grad=True)
    bn = _cuda_fn(lambda a, ww, bb: ember.native_batch_norm(a, ww, bb, None, None, True, 0.1,
                                                            1e-5)[0])
    assert gradcheck(bn, (xb, g, h))
    ln = _cuda_fn(lambda a, ww, bb: ember.native_layer_norm(a.transpose(1, 2), [4], ww, bb,
                                                            1e-5)[0])
    assert gradcheck(ln, (xb, g, h))
    emb = ember.randn(6, 3, dtype=ember.float64, requires_grad=True)
    idx = ember.tensor([[0, 5], [2, 2]]).cuda()
    assert gradcheck(_cuda_fn(lambda e: ember.embedding(e, idx)), (emb,))


def test_modifying_a_saved_cuda_tensor_in_place_is_refused():
    a = ember.ones(3, dtype=ember.float64, device="cuda", requires_grad=True)
    b = a.exp()  # ExpBackward saves its result
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
# Sorting, order statistics and scans (ember/cuda/_sort_ops.py): their formulas scatter the
# gradient back along the device indices. Distinct values, so every selection is smooth.

def test_sort_topk_and_order_statistics_gradcheck_on_the_device():
    x = (ember.randperm(20).to(ember.float64) / 7).reshape(4, 5).requires_grad_()
    for fn in (lambda a: a.sort(1, descending=True).values,
               lambda a: a.topk(3, 0).values,
               lambda a: a.topk(2, 1, largest=False).values,
               lambda a: a.kthvalue(2, 1).values,
               lambda a: a.median(0).values,
               lambda a: a.median(),
               lambda a: a.cummax(1).values,
               lambda a: a.quantile(ember.tensor([0.3, 0.8], dtype=ember.float64, device=a.device), 1)):
        assert gradcheck(_cuda_fn(fn), (x,))


def test_cumsum_cumprod_gradcheck_on_the_device():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    for fn in (lambda a: a.cumsum(1), lambda a: a.cumsum(0, dtype=ember.float64),
               lambda a: a.cumprod(1), lambda a: (a * 1).cumsum_(0), lambda a: (a * 1).cumprod_(1)):
        assert gradcheck(_cuda_fn(fn), (x,))
        assert gradgradcheck(_cuda_fn(fn), (x,))
