"""ember.compile on CUDA tensors: the fused groups run as CuPy kernels (forward and backward)
and give eager's values and gradients. Needs a GPU with CuPy: ember's simulated devices run
CUDA tensors through NumPy, where the groups stay eager ops (checked on the CPU too)."""

import gc

import numpy as np
import pytest
from test_compile import Block, GeluMLP, Norms

import ember
from ember import _dynamo
from ember._inductor import cpp
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices

pytestmark = [pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy"),
              pytest.mark.skipif(cpp.compiler() is None, reason="no C++ compiler")]

RTOL = 1e-5  # CuPy's kernels call CUDA's exp/tanh/erf; the eager kernels the op table's


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_COMPILE_CACHE_DIR", str(tmp_path / "cache"))
    _dynamo.reset()
    yield
    _dynamo.reset()  # the captured graphs hold device tensors (example values)
    # a traced model is freed by the cycle collector, its leaves' gradients by a second pass
    # (their autograd slots form a cycle of their own once the tensor is gone): both before
    # the module's simulated devices are switched off
    gc.collect()


def _close(a, b, rtol=RTOL):
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    assert a.shape == b.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    scale = max(np.abs(b[np.isfinite(b)]).max(initial=0.0), 1e-30)
    diff = np.abs(np.where(np.isfinite(b), a - b, 0.0)).max(initial=0.0)
    assert diff <= rtol * scale, f"max difference {diff} > {rtol} * {scale}"


def _fused_on_cuda(compiled) -> int:
    """How many fused CUDA kernels the compiled function's graphs call."""
    count = 0
    for e in _dynamo.compiled_state(compiled).entries():
        if e.compiled is None:
            continue
        for node in e.compiled.graph_module.graph.nodes:
            if node.op == "call_function" and getattr(node.target, "cuda", None) is not None:
                count += 1
    return count


@pytest.mark.parametrize("make, shape", [(GeluMLP, (16, 32)), (Block, (2, 8, 32)),
                                         (Norms, (6, 48))])
def test_models_match_eager_on_cuda(make, shape):
    model = make().cuda()
    model.eval()
    x = ember.randn(*shape, device="cuda", requires_grad=True)
    compiled = ember.compile(model)
    _close(compiled(x), model(x))
    (compiled(x) ** 2).mean().backward()
    got = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    (model(x) ** 2).mean().backward()
    for a, b in zip(got, [p.grad for p in model.parameters()] + [x.grad]):
        _close(a, b)
    if REAL_GPU:
        assert _fused_on_cuda(compiled) > 0, _dynamo.compiled_state(compiled).report()
    else:  # NumPy stands in for CuPy: the groups are eager ops
        assert _fused_on_cuda(compiled) == 0


@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_fused_reductions_on_cuda(op, keepdim):
    def f(x, b):
        return getattr((x * b).tanh() + 1.0, op)(-1, keepdim=keepdim)

    x = ember.randn(5, 7, 33, device="cuda", dtype=ember.float64)
    b = ember.randn(33, device="cuda", dtype=ember.float64)
    compiled = ember.compile(f, fullgraph=True)
    with ember.no_grad():
        _close(compiled(x, b), f(x, b), 1e-12)
    if op == "amax":
        return  # no gradient kernel: amax groups are not formed under autograd
    x.requires_grad_(True)
    b.requires_grad_(True)
    compiled(x, b).sum().backward()
    got = [x.grad.clone(), b.grad.clone()]
    x.grad = b.grad = None
    f(x, b).sum().backward()
    _close(got[0], x.grad, 1e-12)
    _close(got[1], b.grad, 1e-12)


def test_non_contiguous_broadcast_inputs_and_streams():
    def f(x, b):
        return (x * 2.0 + b).sigmoid() * x

    x = ember.randn(64, 48, device="cuda").t()  # strides (1, 48): CuPy reads them as they are
    b = ember.randn(64, device="cuda")
    compiled = ember.compile(f, fullgraph=True)
    stream = ember.cuda.Stream()
    with ember.no_grad(), ember.cuda.stream(stream):
        got = compiled(x, b)
    stream.synchronize()
    _close(got, f(x, b))


def test_training_steps_match_eager_on_cuda():
    ember.manual_seed(0)
    model = GeluMLP().cuda()
    eager = GeluMLP().cuda()
    eager.load_state_dict(model.state_dict())
    compiled = ember.compile(model)
    opts = [ember.optim.SGD(m.parameters(), lr=0.1) for m in (model, eager)]
    x = ember.randn(32, 32, device="cuda")
    for _ in range(4):
        for m, opt in zip((compiled, eager), opts):
            opt.zero_grad()
            loss = (m(x) ** 2).mean()
            loss.backward()
            opt.step()
    for p, q in zip(model.parameters(), eager.parameters()):
        _close(p, q, 1e-4)


def test_infinite_constants_in_a_cuda_group():
    def f(x):
        return (x + 1.0) * 2.0 + x / float("inf") + (x * 0.0 + float("-inf")).exp()

    x = ember.randn(300, device="cuda")
    compiled = ember.compile(f, fullgraph=True)
    with ember.no_grad():
        _close(compiled(x), f(x))
