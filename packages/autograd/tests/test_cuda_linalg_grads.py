"""Gradients through ember.linalg on CUDA tensors (simulated devices): the primitives are recorded
as on the CPU and their forward runs the CPU kernel on host copies; the backward formulas compose
ops that run on the device. gradcheck in float64, and the gradients equal the CPU's."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.cuda._testing import GPU_WITHOUT_CUPY, devices

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")

LA = ember.linalg
CUDA0 = ember.device("cuda", 0)


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


def data(*shape, seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape))


def sym(a):
    return (a + a.mT) / 2


def spd(a):
    return a.matmul(a.mT) + ember.eye(a.shape[-1], dtype=a.dtype, device=a.device)


# (function of the inputs, input shapes): each result reduced to one that depends on all of it
CASES = {
    "inv": (lambda a: LA.inv(a), [(2, 3, 3)]),
    "det": (lambda a: LA.det(a), [(2, 3, 3)]),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, [(3, 3)]),
    "logdet": (lambda a: ember.logdet(spd(a)), [(3, 3)]),
    "solve": (lambda a, b: LA.solve(a, b), [(2, 3, 3), (3, 2)]),
    "solve_triangular": (lambda a, b: LA.solve_triangular(a.triu() + 3 * ember.eye(
        3, dtype=a.dtype, device=a.device), b, upper=True), [(3, 3), (3, 2)]),
    "lu": (lambda a: LA.lu(a)[1:], [(3, 4)]),
    "lu_solve": (lambda a, b: LA.lu_solve(*LA.lu_factor(a), b), [(3, 3), (3, 2)]),
    "cholesky": (lambda a: LA.cholesky(spd(a)), [(2, 3, 3)]),
    "cholesky_solve": (lambda a, b: ember.cholesky_solve(b, LA.cholesky(spd(a))),
                       [(3, 3), (3, 2)]),
    "qr": (lambda a: LA.qr(a), [(4, 3)]),
    "svd": (lambda a: (lambda u, s, vh: (u.abs(), s, vh.abs()))(*LA.svd(a, full_matrices=False)),
            [(3, 3)]),
    "svdvals": (lambda a: LA.svdvals(a), [(2, 4, 3)]),
    "eigh": (lambda a: (lambda w, v: (w, v.abs()))(*LA.eigh(sym(a))), [(3, 3)]),
    "eigvalsh": (lambda a: LA.eigvalsh(sym(a)), [(2, 3, 3)]),
    "pinv": (lambda a: LA.pinv(a), [(4, 3)]),
    "lstsq": (lambda a, b: LA.lstsq(a, b).solution, [(4, 3), (4, 2)]),
    "matrix_norm_nuc": (lambda a: LA.matrix_norm(a, "nuc"), [(3, 3)]),
    "matrix_exp": (lambda a: LA.matrix_exp(a), [(3, 3)]),
}


@pytest.mark.parametrize("name", CASES)
def test_gradcheck_on_cuda(name):
    fn, shapes = CASES[name]
    inputs = [data(*s, seed=i).cuda().requires_grad_() for i, s in enumerate(shapes)]
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("name", CASES)
def test_gradients_equal_the_cpus(name):
    fn, shapes = CASES[name]

    def grads(device):
        xs = [data(*s, seed=i).to(device).requires_grad_() for i, s in enumerate(shapes)]
        out = fn(*xs)
        outs = out if isinstance(out, tuple) else (out,)
        sum(o.sum() for o in outs).backward()
        return [x.grad for x in xs]

    for g, c in zip(grads("cuda"), grads("cpu")):
        assert g.device == CUDA0
        np.testing.assert_allclose(g.cpu().numpy(), c.numpy(), rtol=1e-9, atol=1e-9)
