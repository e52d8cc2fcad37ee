"""Test support shared by the CUDA test files of every package: the same tests run on a real GPU
(through CuPy) and, where there is none, on ember.cuda's simulated devices.

    pytestmark = pytest.mark.skipif(GPU_WITHOUT_CUPY, reason="a GPU without CuPy")

    @pytest.fixture(autouse=True, scope="module")
    def simulated_gpu():
        with devices(256 << 20):
            yield
"""

from __future__ import annotations

import contextlib
import gc

from ember import _C, cuda


def _cupy_missing() -> bool:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return True
    return False


REAL_GPU = cuda.is_available()
# On a GPU the ops need CuPy: the tests skip without it.
GPU_WITHOUT_CUPY = REAL_GPU and _cupy_missing()


@contextlib.contextmanager
def devices(capacity: int, count: int = 1):
    """The real GPU where there is one; otherwise `count` simulated devices of `capacity` bytes
    for the duration. One switch per test module: a failing test's traceback may hold a device
    tensor for a while, and the backend cannot change while device memory is allocated."""
    if REAL_GPU:
        # comparisons with the CPU are in full float32: cuDNN's TF32 off (as torch's tests do)
        from ember.backends import cudnn

        with cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark,
                         deterministic=cudnn.deterministic, allow_tf32=False):
            yield
        return
    cuda._use_host_backend(capacity, count)
    try:
        yield
    finally:
        gc.collect()
        cuda._use_host_backend(0)


def on_gpu(v):
    """v with every tensor in it (also in tuples and lists) copied to the current CUDA device."""
    if isinstance(v, _C.Tensor):
        return v.cuda()
    if isinstance(v, (tuple, list)):
        return type(v)(on_gpu(a) for a in v)
    return v


def assert_matches_cpu(gpu, cpu, tol=None, device="cuda:0"):
    """`gpu` (a tensor, or a tuple/list/namedtuple of them) is on `device` and holds what `cpu`
    holds: the same container type, dtype, shape and values. Values are equal, or for a floating
    dtype named in `tol` (e.g. {"float32": 1e-5}) within that relative and absolute tolerance."""
    import numpy as np

    if isinstance(cpu, (tuple, list)):
        assert type(gpu) is type(cpu) and len(gpu) == len(cpu)
        for g, c in zip(gpu, cpu):
            assert_matches_cpu(g, c, tol, device)
        return
    assert str(gpu.device) == device, gpu.device
    assert gpu.dtype == cpu.dtype and tuple(gpu.shape) == tuple(cpu.shape)
    g, c = gpu.cpu().numpy(), cpu.numpy()
    t = (tol or {}).get(c.dtype.name) if c.dtype.kind == "f" else None
    if t is None:
        np.testing.assert_array_equal(g, c)
    else:
        np.testing.assert_allclose(g.astype(np.float64), c.astype(np.float64), rtol=t, atol=t)


def _cloned(v):
    """v with every tensor in it (also in tuples and lists) cloned."""
    if isinstance(v, _C.Tensor):
        return v.clone()
    if isinstance(v, (tuple, list)):
        return type(v)(_cloned(a) for a in v)
    return v


def assert_same_error(fn, *args, **kwargs):
    """fn raises on the device the exception type and message it raises on the CPU. The CPU call
    gets clones of the tensor arguments and the device call copies, so an in-place op writes
    neither of the caller's tensors."""
    import pytest

    with pytest.raises(Exception) as cpu:
        fn(*_cloned(args), **{k: _cloned(v) for k, v in kwargs.items()})
    with pytest.raises(type(cpu.value)) as gpu:
        fn(*on_gpu(args), **{k: on_gpu(v) for k, v in kwargs.items()})
    assert str(gpu.value) == str(cpu.value)


@contextlib.contextmanager
def traced_device_ops():
    """``with traced_device_ops() as seen:``: the names of the ops the device hook runs inside
    the block, in order (the hook is restored after)."""
    from ember.cuda import _dispatch

    seen, run = [], _dispatch.dispatch

    def hook(name, args, kwargs):
        seen.append(name)
        return run(name, args, kwargs)

    _C._set_device_hook(hook)
    try:
        yield seen
    finally:
        _C._set_device_hook(run)
