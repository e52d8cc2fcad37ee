"""Vectorised element-wise kernels for the common case of a binary op on a GPU: operands and
result contiguous, of one shape and one dtype.

CuPy's ufuncs move one element per thread per load (4 bytes for float32). That leaves bandwidth
unused: on an H100 an add of 256M float32 ran at about 2.35 TB/s through ``cupy.add`` against
torch's 2.95. These kernels load and store 16 bytes per thread, as torch's vectorised CUDA loop
does, and measured 3.0 TB/s there. Anything else (broadcasting, strides, misaligned views, other
dtypes, NumPy over the host backend) returns False and takes the general path.

One table (``_EXPRESSIONS``) declares the ops; a kernel is compiled by CuPy (NVRTC) on first use
of each (op, dtype) and cached.
"""

from __future__ import annotations

import numpy

# r = expression of x (first operand), y (second) and w (a number, for the fused ops). U is T
# for floats and T's unsigned type for integers, which wrap as the CPU kernels do (signed
# overflow is undefined in C++).
_EXPRESSIONS = {
    "add": "(T)((U)x + (U)y)",
    "sub": "(T)((U)x - (U)y)",
    "mul": "(T)((U)x * (U)y)",
    "fma": "fma(y, w, x)",  # x + w * y rounded once: add/sub with alpha (floats only)
}
# dtype -> (T, U) of the expressions.
_TYPES = {
    "float32": ("float", "float"),
    "float64": ("double", "double"),
    "int32": ("int", "unsigned int"),
    "int64": ("long long", "unsigned long long"),
}
_BLOCK = 256
_SOURCE = r"""
template <typename T, int N> struct alignas(sizeof(T) * N) Pack { T v[N]; };
extern "C" __global__ void ember_vec_NAME(const T* __restrict__ a, const T* __restrict__ b,
                                          T* __restrict__ r, const T w, const long long n) {
  constexpr int V = 16 / sizeof(T);
  typedef Pack<T, V> P;
  const long long nvec = n / V;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nvec) {
    const P xs = reinterpret_cast<const P*>(a)[i], ys = reinterpret_cast<const P*>(b)[i];
    P out;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const T x = xs.v[j], y = ys.v[j];
      out.v[j] = EXPR;
    }
    reinterpret_cast<P*>(r)[i] = out;
  }
  const long long tail = nvec * V + i;  // the last n % V elements, one per thread of the first V
  if (i < V && tail < n) {
    const T x = a[tail], y = b[tail];
    r[tail] = EXPR;
  }
}
"""
_kernels: dict = {}


def _source(op: str, dtype_name: str) -> str:
    t, u = _TYPES[dtype_name]
    body = _SOURCE.replace("NAME", f"{op}_{dtype_name}").replace("EXPR", _EXPRESSIONS[op])
    return f"typedef {t} T;\ntypedef {u} U;\n{body}"


def _kernel(op: str, dtype_name: str):
    key = (op, dtype_name)
    k = _kernels.get(key)
    if k is None:
        import cupy

        source = _source(op, dtype_name)
        k = _kernels[key] = cupy.RawKernel(source, f"ember_vec_{op}_{dtype_name}",
                                           options=("-std=c++17",))
    return k


def _eligible(arr, shape, dtype) -> bool:
    return (arr.shape == shape and arr.dtype == dtype and arr.flags.c_contiguous
            and arr.data.ptr % 16 == 0)


def binary(op: str, x, y, out, w: float = 0.0) -> bool:
    """out = op(x, y) (for "fma": x + w * y) through a vectorised kernel, if the arrays qualify
    (CuPy arrays, contiguous, one shape and dtype, 16-byte aligned). Returns whether it ran."""
    if type(out) is numpy.ndarray or type(x) is not type(out) or type(y) is not type(out):
        return False
    dt = out.dtype
    name = dt.name
    if name not in _TYPES or (op == "fma" and dt.kind != "f"):
        return False
    shape = out.shape
    if not (_eligible(out, shape, dt) and _eligible(x, shape, dt) and _eligible(y, shape, dt)):
        return False
    n = out.size
    if n == 0:
        return True
    per_thread = 16 // dt.itemsize
    blocks = max(-(-(n // per_thread) // _BLOCK), 1)
    _kernel(op, name)((blocks,), (_BLOCK,), (x, y, out, dt.type(w), numpy.int64(n)))
    return True
