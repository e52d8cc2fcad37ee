"""ember.func and checkpoint with CUDA tensors: the CUDA generator's state is replayed by
checkpoint and watched by vmap's randomness modes. On a GPU, and where there is none on
ember.cuda's simulated devices (see test_cuda_autograd.py)."""

import gc

import numpy as np
import pytest

import ember
from ember.cuda._testing import GPU_WITHOUT_CUPY, devices
from ember.func import grad, vmap
from ember.utils.checkpoint import checkpoint

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield
        gc.collect()  # no device tensor may outlive the simulated devices


def _drop(h):
    return h * (ember.rand_like(h) > 0.5) * 2.0


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_replays_the_cuda_generator(reentrant):
    x = ember.ones(256, dtype=ember.float64, device="cuda").requires_grad_()
    y = checkpoint(_drop, x, use_reentrant=reentrant)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), y.detach().cpu().numpy())
    x.grad = None
    y = checkpoint(_drop, x, use_reentrant=reentrant, preserve_rng_state=False)
    y.sum().backward()
    assert not np.array_equal(x.grad.cpu().numpy(), y.detach().cpu().numpy())


def test_vmap_randomness_sees_the_cuda_generator():
    x = ember.zeros(3, 4, dtype=ember.float64, device="cuda")
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: a + ember.rand_like(a))(x)
    same = vmap(lambda a: a + ember.rand_like(a), randomness="same")(x).cpu().numpy()
    assert (same == same[0]).all()


def test_per_sample_gradients_on_the_device():
    w = ember.tensor([0.5, -1.0], dtype=ember.float64, device="cuda")
    xs = ember.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=ember.float64, device="cuda")
    per = vmap(grad(lambda w, x: (x @ w).tanh()), in_dims=(None, 0))(w, xs)
    assert per.device.type == "cuda"
    xn, wn = xs.cpu().numpy(), w.cpu().numpy()
    want = (1 - np.tanh(xn @ wn) ** 2)[:, None] * xn  # d tanh(x.w)/dw, by hand
    np.testing.assert_allclose(per.cpu().numpy(), want, rtol=1e-12)
