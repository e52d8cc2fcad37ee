"""Autograd over CUDA tensors, on ember.cuda's simulated devices (the host backend: device memory
is host memory and ops run through NumPy, along the same dispatch path CuPy takes on a GPU)."""

import numpy as np
import pytest

import ember
from ember import cuda
from ember.autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.skipif(
    cuda.is_available(), reason="runs on the simulated devices; a real GPU has its own tests"
)


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    cuda._use_host_backend(256 << 20)
    yield
    import gc

    gc.collect()
    cuda._use_host_backend(0)


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
