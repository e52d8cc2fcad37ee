"""The fused optimizer updates on CUDA tensors (ember/cuda/_optim_ops.py): one launch per
parameter group, the CPU kernels' arithmetic. The CPU is the oracle. Runs on ember.cuda's
simulated devices where there is no GPU (the CPU kernels then run on the device memory)."""

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember import _C
from ember.cuda._testing import GPU_WITHOUT_CUPY, REAL_GPU, devices, traced_device_ops

pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")


@pytest.fixture(autouse=True, scope="module")
def simulated_gpu():
    with devices(256 << 20):
        yield


@pytest.fixture
def device_ops():
    with traced_device_ops() as seen:
        yield seen


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 9), nn.Tanh(), nn.Linear(9, 4))


def _train(model, opt, x, steps=3):
    for _ in range(steps):
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()


def _compare(make_opt, device_ops, dtype=ember.float32, rtol=1e-6):
    cpu = _model().to(dtype)
    gpu = _model().to(dtype).cuda()
    x = ember.randn(5, 6, dtype=dtype)
    _train(cpu, make_opt(cpu.parameters()), x)
    _train(gpu, make_opt(gpu.parameters()), x.cuda())
    for p, q in zip(cpu.parameters(), gpu.parameters()):
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().numpy(), rtol=rtol,
                                   atol=rtol)


SGD_OPTIONS = [dict(), dict(momentum=0.9), dict(momentum=0.9, nesterov=True),
               dict(momentum=0.8, dampening=0.3, weight_decay=0.01),
               dict(momentum=0.9, maximize=True, weight_decay=0.1)]


@pytest.mark.parametrize("options", SGD_OPTIONS)
def test_fused_sgd_on_cuda_matches_the_cpu(options, device_ops):
    _compare(lambda ps: ember.optim.SGD(ps, lr=0.05, **options), device_ops)
    assert device_ops.count("_fused_sgd_") == 3  # one launch per group and step
    assert "mul_" not in device_ops and "add_" not in device_ops


ADAM_OPTIONS = [(ember.optim.Adam, dict()), (ember.optim.Adam, dict(amsgrad=True)),
                (ember.optim.Adam, dict(weight_decay=0.1, maximize=True)),
                (ember.optim.AdamW, dict(weight_decay=0.05)),
                (ember.optim.AdamW, dict(weight_decay=0.05, amsgrad=True))]


@pytest.mark.parametrize("cls, options", ADAM_OPTIONS)
def test_fused_adam_on_cuda_matches_the_cpu(cls, options, device_ops):
    _compare(lambda ps: cls(ps, lr=0.01, **options), device_ops, rtol=2e-6)
    assert device_ops.count("_fused_adam_") == 3


def test_float64_and_a_strided_gradient(device_ops):
    _compare(lambda ps: ember.optim.SGD(ps, lr=0.1, momentum=0.9), device_ops,
             dtype=ember.float64, rtol=1e-12)
    p = ember.randn(4, 3, device="cuda")
    g = ember.randn(3, 4, device="cuda").t()  # autograd may leave a transposed gradient
    expected = p.cpu() - 0.5 * g.cpu()
    _C._fused_sgd_([p], [g], None, [], lr=0.5, weight_decay=0.0, momentum=0.0, dampening=0.0,
                   nesterov=False, maximize=False)
    np.testing.assert_allclose(p.cpu().numpy(), expected.numpy(), rtol=1e-6)


def test_capturable_adam_keeps_its_counters_on_the_device(device_ops):
    m = nn.Linear(3, 2, device="cuda")
    opt = ember.optim.Adam(m.parameters(), capturable=True)
    m(ember.randn(4, 3, device="cuda")).sum().backward()
    opt.step()
    assert "_fused_adam_" not in device_ops  # the composed update reads device counters


def test_the_fused_updates_refuse_what_the_cpu_kernels_refuse():
    p = ember.randn(3, device="cuda")
    kw = dict(lr=0.1, weight_decay=0.0, momentum=0.0, dampening=0.0, nesterov=False,
              maximize=False)
    with pytest.raises(ValueError, match=r"grads\[0\] must be on the parameters' device "
                                         r"\(cuda:0\), got cpu"):
        _C._fused_sgd_([p], [ember.randn(3)], None, [], **kw)
    with pytest.raises(ValueError, match="has shape"):
        _C._fused_sgd_([p], [ember.randn(4, device="cuda")], None, [], **kw)
    with pytest.raises(TypeError, match="must be float32 or float64"):
        _C._fused_sgd_([p.to(ember.int64)], [p.to(ember.int64)], None, [], **kw)
    with pytest.raises(ValueError, match="first-step flags"):
        _C._fused_sgd_([p], [p.clone()], [p.clone()], [], **{**kw, "momentum": 0.9})
    with pytest.raises(ValueError, match="must be contiguous"):
        q = ember.randn(3, 4, device="cuda").t()
        _C._fused_sgd_([q], [q.clone()], None, [], **kw)
    before = p.clone()
    with pytest.raises(ValueError, match="one-element float CPU tensor"):
        _C._fused_adam_([p], [p.clone()], [p.clone()], [p.clone()], None,
                        [ember.zeros(1, device="cuda")], lr=0.1, beta1=0.9, beta2=0.99,
                        eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
                        decoupled=False)
    np.testing.assert_array_equal(p.cpu().numpy(), before.cpu().numpy())  # nothing written


def test_the_address_table_is_copied_once_while_it_stays_the_same():
    from ember.cuda import _optim_ops

    host = np.arange(10, dtype=np.int64)
    first = _optim_ops._device_table("test", 0, host.tobytes())
    assert _optim_ops._device_table("test", 0, host.copy().tobytes()) is first
    other = _optim_ops._device_table("test", 0, (host + 1).tobytes())
    assert other is not first
    np.testing.assert_array_equal(ember.cuda._ops.xp().asnumpy(other) if REAL_GPU
                                  else other, host + 1)
    # two parameter groups alternating each step: both copies are kept
    assert _optim_ops._device_table("test", 0, host.tobytes()) is first
    assert _optim_ops._device_table("test", 0, (host + 1).tobytes()) is other


def test_the_cpu_kernels_refuse_a_mix_of_devices():
    p = ember.randn(3)
    with pytest.raises(ValueError, match=r"params\[1\] must be on cpu as params\[0\], got cuda:0"):
        _C._fused_sgd_([p, p.cuda()], [p, p.cuda()], None, [], lr=0.1, weight_decay=0.0,
                       momentum=0.0, dampening=0.0, nesterov=False, maximize=False)


def test_the_core_builds_the_address_table_with_dense_gradients(monkeypatch):
    from ember.cuda import _dispatch

    p = ember.randn(4, 3, device="cuda")
    g = ember.randn(3, 4, device="cuda").t()  # strided: read through a dense copy
    tables = []
    run = _dispatch.OPS["_fused_sgd_"]
    monkeypatch.setitem(_dispatch.OPS, "_fused_sgd_",
                        lambda name, args, kwargs: tables.append(kwargs["table"])
                        or run(name, args, kwargs))
    _C._fused_sgd_([p], [g], None, [], lr=0.5, weight_decay=0.0, momentum=0.0, dampening=0.0,
                   nesterov=False, maximize=False)
    row = np.frombuffer(tables[0], dtype=np.int64)
    assert row[0] == p.data_ptr() and row[1] not in (0, g.data_ptr())
    assert row[2] == 0 and row[3] == 12 and row[4] == 0  # no buffer, 12 elements, not first
