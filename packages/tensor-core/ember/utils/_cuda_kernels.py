"""User CUDA kernels on ember tensors: ``cuda_kernel`` and ``cuda_module`` of
``ember.utils.cpp_extension``.

ember compiles no CUDA at install time; a user's CUDA C++ source is compiled at run time by
NVRTC through CuPy's RawKernel / RawModule (cached by CuPy, per source and options), and
launched on ember's current stream of the tensors' device, so it orders with ember's own
kernels and with ``ember.cuda.stream(...)`` regions. Tensor arguments are passed as pointers to
their first element (their bytes are not copied; pass sizes and strides yourself, or make them
contiguous first); numbers must carry their C type (``numpy.float32(0.5)``, ``numpy.int64(n)``),
as CuPy requires.
"""

from __future__ import annotations

from ember import _C


def _cuda_ops():
    from ember.cuda import _ops

    return _ops


def _cupy():
    ops = _cuda_ops()
    mod = ops.xp()
    if mod.__name__ != "cupy":
        raise RuntimeError("ember.utils.cpp_extension.cuda_kernel: user CUDA kernels need a GPU "
                           "and CuPy (pip install cupy-cuda12x); ember.cuda is running on "
                           f"{_C._cuda_backend_name()!r}")
    return mod


def _launch_args(args) -> tuple[int, tuple]:
    """The kernel's arguments with tensors as arrays over their bytes, and the one device that
    all tensor arguments share (the current device when none is a tensor)."""
    ops = _cuda_ops()
    device = None
    converted = []
    for i, a in enumerate(args):
        if isinstance(a, _C.Tensor):
            if a.device.type != "cuda":
                raise ValueError(f"cuda kernel argument {i} is a tensor on {a.device}; kernels "
                                 "take CUDA tensors (move it with .cuda())")
            if device is None:
                device = a.device.index
            elif a.device.index != device:
                raise ValueError(f"cuda kernel arguments are on cuda:{device} and "
                                 f"{a.device}: a kernel runs on one device")
            converted.append(ops.view(a))
        else:
            converted.append(a)
    if device is None:
        import ember.cuda

        device = ember.cuda.current_device()
    return device, tuple(converted)


class CudaKernel:
    """One ``__global__`` function compiled from CUDA source; call it as
    ``kernel(grid, block, args, shared_mem=0)``, CuPy's RawKernel convention."""

    def __init__(self, raw) -> None:
        self._raw = raw

    def __call__(self, grid, block, args, shared_mem: int = 0) -> None:
        device, converted = _launch_args(args)
        with _cuda_ops()._on_current_stream(device):
            self._raw(tuple(grid) if not isinstance(grid, int) else (grid,),
                      tuple(block) if not isinstance(block, int) else (block,),
                      converted, shared_mem=shared_mem)

    @property
    def attributes(self) -> dict:
        return self._raw.attributes


class CudaModule:
    """Several kernels (and device functions) compiled from one source: ``get_function(name)``
    gives a CudaKernel."""

    def __init__(self, raw) -> None:
        self._raw = raw

    def get_function(self, name: str) -> CudaKernel:
        return CudaKernel(self._raw.get_function(name))


def cuda_kernel(source: str, name: str, options=(), backend: str = "nvrtc") -> CudaKernel:
    """Compiles the ``extern "C" __global__`` function `name` of `source` for ember tensors.

        >>> scale = cuda_kernel(r'''
        ... extern "C" __global__ void scale(const float* x, float a, float* y, long long n) {
        ...   long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
        ...   if (i < n) y[i] = a * x[i];
        ... }''', "scale")  # doctest: +SKIP
        >>> args = (x, numpy.float32(2), y, numpy.int64(n))
        >>> scale(((n + 255) // 256,), (256,), args)  # doctest: +SKIP
    """
    cp = _cupy()
    return CudaKernel(cp.RawKernel(source, name, options=tuple(options), backend=backend))


def cuda_module(source: str, options=(), backend: str = "nvrtc",
                name_expressions=None) -> CudaModule:
    """Compiles a whole CUDA source (several kernels, templates through `name_expressions`)."""
    cp = _cupy()
    return CudaModule(cp.RawModule(code=source, options=tuple(options), backend=backend,
                                   name_expressions=name_expressions))
