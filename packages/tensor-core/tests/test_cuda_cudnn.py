"""ember's cuDNN path (ember/cuda/_cudnn.py): what it does on a GPU with cuDNN beyond the CPU
comparisons of test_cuda_nn_kernels.py (which run each convolution and batch norm case on cuDNN
too), and how it reports itself where there is no GPU or no cuDNN."""

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.cuda import _cudnn
from ember.cuda._testing import traced_device_ops

on_cudnn = pytest.mark.skipif(not _cudnn.available(),
                              reason=f"cuDNN: {_cudnn.unavailable_reason()}")


def rand(*shape, dtype="float64", seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def rel_error(got, want):
    got, want = got.cpu().numpy().astype(np.float64), want.cpu().numpy().astype(np.float64)
    return np.linalg.norm(got - want) / np.linalg.norm(want)


def test_the_algorithm_results_read_with_the_c_layout():
    # cudnnConvolution*AlgoPerf_t: int algo, int status, float time, size_t memory,
    # int determinism, int mathType, int reserved[3]
    assert ctypes.sizeof(_cudnn._AlgoPerf) == 48
    assert _cudnn._AlgoPerf.memory.offset == 16 and _cudnn._AlgoPerf.mathType.offset == 28


def test_a_missing_library_is_a_reason_not_an_error():
    code = "from ember.cuda import _cudnn; print(_cudnn._load() is None, _cudnn._state['reason'])"
    env = dict(os.environ, EMBER_CUDNN="/nonexistent/libcudnn.so.9")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("True cuDNN 9 not found") and "/nonexistent/libcudnn.so.9" in out


def test_without_a_gpu_the_flags_say_so():
    if ember.cuda.is_available():
        pytest.skip("a GPU is here")
    assert not _cudnn.available() and _cudnn.version() is None
    assert not _cudnn.usable(ember.ones(2))


@on_cudnn
def test_tf32_is_torchs_default_and_can_be_turned_off():
    x, w = rand(4, 16, 12, 12, dtype="float32"), rand(32, 16, 3, 3, dtype="float32", seed=1)
    want = ember.conv2d(x.double(), w.double(), padding=1)
    with ember.backends.cudnn.flags(enabled=True, allow_tf32=False):
        full = ember.conv2d(x.cuda(), w.cuda(), padding=1)
    assert rel_error(full, want) < 1e-6
    with ember.backends.cudnn.flags(enabled=True, allow_tf32=True):
        fast = ember.conv2d(x.cuda(), w.cuda(), padding=1)
    assert rel_error(fast, want) < 5e-3  # TF32 keeps 10 mantissa bits


@on_cudnn
def test_benchmark_and_deterministic_algorithms():
    x, w = rand(8, 8, 20, 20, dtype="float32"), rand(8, 8, 5, 5, dtype="float32", seed=1)
    go = rand(8, 8, 16, 16, dtype="float32", seed=2)
    want = ember.convolution_backward(go, x, w, [8], [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
                                      [True, True, True])
    with ember.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=True,
                                    allow_tf32=False):
        runs = [ember.convolution_backward(go.cuda(), x.cuda(), w.cuda(), [8], [1, 1], [0, 0],
                                           [1, 1], False, [0, 0], 1, [True, True, True])
                for _ in range(2)]
    for a, b, c in zip(runs[0], runs[1], want):
        assert np.array_equal(a.cpu().numpy(), b.cpu().numpy())  # bit for bit, run to run
        assert rel_error(a, c) < 1e-5


@on_cudnn
def test_half_precision_batch_norm_keeps_float32_statistics():
    x = rand(4, 6, 5, 5, dtype="float16")
    w, b = rand(6, dtype="float32", seed=1), rand(6, dtype="float32", seed=2)
    rm, rv = ember.zeros(6), ember.ones(6)
    want = ember.native_batch_norm(x.float(), w, b, rm.clone(), rv.clone(), True, 0.1, 1e-5)
    rm_g, rv_g = rm.cuda(), rv.cuda()
    got = ember.native_batch_norm(x.cuda(), w.cuda(), b.cuda(), rm_g, rv_g, True, 0.1, 1e-5)
    assert got[0].dtype == ember.float16 and got[1].dtype == ember.float32
    assert rel_error(got[0], want[0]) < 2e-3
    assert rel_error(got[2], want[2]) < 1e-4


# ---- the path's logic without a GPU: ember's simulated device and a stand-in library ------------


@pytest.fixture
def fake_cudnn(monkeypatch):
    """ember.cuda's simulated device with _cudnn believing a library is loaded whose every call
    succeeds and does nothing (no algorithm, no engine configuration): records the calls."""
    from ember.cuda._testing import REAL_GPU, devices

    if REAL_GPU:
        pytest.skip("the stand-in library is for machines without a GPU")
    calls = []

    def fake(name):
        return lambda *args: calls.append(name) or 0

    monkeypatch.setattr(_cudnn, "available", lambda: True)
    monkeypatch.setattr(_cudnn, "_functions", {n: fake(n) for n in _cudnn._SIGNATURES})
    # the caches would hold the stand-in's (null) descriptors: emptied after
    saved = [dict(c) for c in (_cudnn._plans, _cudnn._tensor_descs, _cudnn._bn_descs,
                               _cudnn._constants, _cudnn._bn_workspaces)]
    with devices(64 << 20):
        yield calls
        for cache, before in zip((_cudnn._plans, _cudnn._tensor_descs, _cudnn._bn_descs,
                                  _cudnn._constants, _cudnn._bn_workspaces), saved):
            cache.clear()  # (the device memory of the cached constants goes with them)
            cache.update(before)


def test_batch_norm_without_affine_parameters_copies_nothing_from_the_host(fake_cudnn):
    # a copy from host memory waits for the stream: the GPU and the host would run in turn
    x = ember.randn(4, 3, 5, 5).cuda()
    with traced_device_ops() as seen:
        out, mean, invstd = ember.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
        ember.native_batch_norm_backward(out, x, None, None, None, mean, invstd, True, 1e-5,
                                         [True, True, True])
        ember.native_batch_norm_backward(out, x, None, None, None, mean, invstd, True, 1e-5,
                                         [True, False, False])
    assert "_copy_from" not in seen
    assert seen.count("fill_") == 2  # the cached ones and zeros, made once on the device
    assert fake_cudnn.count("cudnnBatchNormalizationForwardTraining") == 1
    assert fake_cudnn.count("cudnnBatchNormalizationBackwardEx") == 2


def test_a_convolution_cudnn_cannot_plan_falls_back_to_embers_kernels(fake_cudnn):
    # the stand-in offers no engine configuration (graph path) and no algorithm (legacy calls):
    # ember's own kernels give the result, and why the graph path refused is kept
    x, w = rand(2, 3, 6, 6), rand(4, 3, 3, 3, seed=1)
    failures = len(_cudnn.graph_failures)
    got = ember.conv2d(x.cuda(), w.cuda(), padding=1)
    np.testing.assert_allclose(got.cpu().numpy(), ember.conv2d(x, w, padding=1).numpy(),
                               rtol=1e-12, atol=1e-12)
    assert "cudnnGetConvolutionForwardAlgorithm_v7" in fake_cudnn
    assert len(_cudnn.graph_failures) == failures + 1
    assert "engine configurations" in _cudnn.graph_failures[-1][2]


def test_variant_packs_are_kept_per_pointer_set(fake_cudnn):
    # a pack built in Python costs about what the execute does: one per set of pointers, reused
    # while the allocator hands back the same addresses, at most PACKS_PER_PLAN per plan
    plan = _cudnn._GraphPlan.__new__(_cudnn._GraphPlan)
    plan.plan, plan.workspace, plan.packs = None, 0, {}
    plan.uids = _cudnn._int64s([1, 2, 3])
    a, b = ember.randn(4).cuda(), ember.randn(4).cuda()
    outs = [ember.empty(4).cuda() for _ in range(plan.PACKS_PER_PLAN + 2)]
    handle = _cudnn._VOIDP()
    for _ in range(3):
        plan.execute(handle, 0, a, b, outs[0])
    assert fake_cudnn.count("cudnnBackendExecute") == 3
    assert fake_cudnn.count("cudnnBackendCreateDescriptor") == 1
    for c in outs:
        plan.execute(handle, 0, a, b, c)
    assert fake_cudnn.count("cudnnBackendCreateDescriptor") == len(outs)
    assert fake_cudnn.count("cudnnBackendDestroyDescriptor") == 2
    assert len(plan.packs) == plan.PACKS_PER_PLAN
    assert (a.data_ptr(), b.data_ptr(), outs[-1].data_ptr(), 0) in plan.packs
    assert (a.data_ptr(), b.data_ptr(), outs[0].data_ptr(), 0) not in plan.packs
