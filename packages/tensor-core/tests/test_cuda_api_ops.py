"""The aliases and the compositions of ember/_composite_ops/ on CUDA tensors: the result is on
the device and equals the same call on the CPU (the table's special functions are in
test_cuda_tensors.py's sweep of the op table). Simulated devices where there is no GPU."""

import numpy as np
import pytest

import ember
from ember import special
from ember.cuda._testing import GPU_WITHOUT_CUPY, assert_matches_cpu, devices, on_gpu

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


def data(*shape, dtype="float32", seed=0, lo=-2.0, hi=2.0):
    a = np.random.default_rng(seed).uniform(lo, hi, shape)
    return ember.from_numpy(a.astype(dtype))


def check(fn, *args):
    cpu = fn(*args)
    gpu = fn(*on_gpu(args))
    for g, c in zip(gpu if isinstance(gpu, tuple) else (gpu,),
                    cpu if isinstance(cpu, tuple) else (cpu,)):
        assert g.is_cuda
        assert_matches_cpu(g, c, {"float32": 1e-5, "float64": 1e-12})


CASES = {
    "arccos": (ember.arccos, data(3, 4, lo=-0.9, hi=0.9)),
    "subtract": (lambda a, b: ember.subtract(a, b, alpha=2), data(3, 4), data(4, seed=1)),
    "true_divide": (ember.true_divide, data(3, 4), data(4, seed=1, lo=1, hi=2)),
    "addcmul": (lambda a, b, c: ember.addcmul(a, b, c, value=0.5), data(3, 4), data(4, seed=1),
                data(3, 1, seed=2)),
    "addcdiv_": (lambda a, b, c: a.clone().addcdiv_(b, c), data(3, 4), data(4, seed=1),
                 data(3, 4, seed=2, lo=1, hi=2)),
    "addr": (lambda m, u, v: ember.addr(m, u, v, beta=2), data(3, 4), data(3, seed=1),
             data(4, seed=2)),
    "cdist": (ember.cdist, data(5, 3), data(4, 3, seed=1)),
    "cov": (ember.cov, data(3, 7, dtype="float64")),
    "renorm": (lambda x: ember.renorm(x, 2, 0, 1.0), data(3, 4)),
    "aminmax": (lambda x: tuple(ember.aminmax(x, dim=1)), data(3, 4)),
    "logcumsumexp": (lambda x: ember.logcumsumexp(x, 1), data(3, 4)),
    "new_zeros": (lambda x: x.new_zeros(2, 3), data(2)),
    "new_full": (lambda x: x.new_full((2,), 3.5), data(2)),
    "polygamma": (lambda x: ember.polygamma(2, x), data(5, dtype="float64", lo=0.5, hi=3)),
    "zeta": (lambda q: special.zeta(3.0, q), data(5, dtype="float64", lo=0.5, hi=3)),
    "block_diag": (lambda a, b: ember.block_diag(a, b), data(2, 2), data(1, 3, seed=1)),
    "isin": (lambda a, b: ember.isin(a, b), ember.tensor([1, 4, 2, 9]), ember.tensor([2, 9])),
    "trapezoid": (ember.trapezoid, data(3, 5)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_the_cpu(name):
    fn, *args = CASES[name]
    check(fn, *args)


def test_gradient_through_a_composition_on_the_device():
    a = data(3, 4).cuda().requires_grad_()
    ember.addcmul(a, a, a).sum().backward()
    assert a.grad.is_cuda
    np.testing.assert_allclose(a.grad.cpu().numpy(), 1 + 2 * a.detach().cpu().numpy(), rtol=1e-6)
