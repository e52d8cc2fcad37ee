"""ember.optim's fused updates (``_C._fused_sgd_``, ``_C._fused_adam_``) on CUDA tensors,
registered in ``_dispatch.OPS``.

The composed update (``_sgd_foreach``) launches five kernels per parameter: 805 launches per
ResNet-50 step, 4.5 ms of host time on an H200 against torch's 1 ms. Here one kernel launch
updates a whole parameter group. The core checks the arguments (the CPU kernels' checks and
errors), increments Adam's step counters, computes its per-parameter scalars in double, builds
the table of the tensors' addresses (one row per parameter, ``blockIdx.y``; a strided gradient
copied dense first) and bumps the versions (python/bind_optim.cpp); this hook copies the table
to the device, keeping it while the addresses stay the same (a training step allocates in the
same order every step), and launches. The arithmetic is the CPU kernels'
(ops/optim_kernels.cpp), in the parameters' dtype.

Over ember.cuda's simulated devices (host memory) NumPy runs the same expressions.
"""

from __future__ import annotations

import numpy

from ember.cuda._ops import _on_current_stream, view, xp

_BLOCK = 256
_MAX_BLOCKS_X = 256  # per parameter; a block loops over the rest (grid-stride)

_PRELUDE = r"""
typedef TYPE T;
#define MAXIMIZE_G(k) (maximize ? -g[k] : g[k])
"""
_SGD = r"""
extern "C" __global__ void ember_fused_sgd(const long long* __restrict__ table, const double lr_,
    const double wd_, const double mom_, const double damp_, const int nesterov,
    const int maximize) {
  const long long* row = table + 5 * blockIdx.y;
  T* __restrict__ p = (T*)row[0];
  const T* __restrict__ g = (const T*)row[1];
  T* __restrict__ buf = (T*)row[2];
  const long long n = row[3];
  const bool first = row[4] != 0;
  const T lr = (T)lr_, wd = (T)wd_, mom = (T)mom_, damp = (T)damp_;
  for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n;
       k += (long long)gridDim.x * blockDim.x) {
    T d = MAXIMIZE_G(k);
    if (wd != T(0)) d += wd * p[k];
    if (mom != T(0)) {
      const T m = first ? d : mom * buf[k] + (T(1) - damp) * d;
      buf[k] = m;
      d = nesterov ? d + mom * m : m;
    }
    p[k] -= lr * d;
  }
}
"""
_ADAM = r"""
extern "C" __global__ void ember_fused_adam(const long long* __restrict__ table,
    const double* __restrict__ scalars, const double beta1, const double beta2,
    const double eps_, const double wd_, const double lr, const int mode, const int amsgrad,
    const int maximize) {
  const long long* row = table + 6 * blockIdx.y;
  T* __restrict__ p = (T*)row[0];
  const T* __restrict__ g = (const T*)row[1];
  T* __restrict__ ea = (T*)row[2];
  T* __restrict__ eas = (T*)row[3];
  T* __restrict__ mx = (T*)row[4];
  const long long n = row[5];
  const T ss = (T)scalars[2 * blockIdx.y], bc = (T)scalars[2 * blockIdx.y + 1];
  const T b1 = (T)(1.0 - beta1), b2 = (T)beta2, one_b2 = (T)(1.0 - beta2), eps = (T)eps_,
          wd = (T)wd_, decay = (T)(1.0 - lr * wd_);
  for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n;
       k += (long long)gridDim.x * blockDim.x) {
    T d = MAXIMIZE_G(k);
    T pk = p[k];
    if (mode == 1) d += wd * pk;
    if (mode == 2) pk *= decay;
    const T a = ea[k] + b1 * (d - ea[k]);
    T s = eas[k] * b2 + one_b2 * d * d;
    ea[k] = a;
    eas[k] = s;
    if (amsgrad) {
      s = mx[k] > s ? mx[k] : s;
      mx[k] = s;
    }
    const T denom = sqrt(s) / bc + eps;
    p[k] = pk - ss * (a / denom);
  }
}
"""
_TYPES = {"float32": "float", "float64": "double"}
_kernels: dict = {}
_tables: dict = {}  # (kernel, device, table bytes) -> the table's device copy, oldest first
_TABLES_KEPT = 16


def _kernel(name: str, source: str, dtype_name: str):
    key = (name, dtype_name)
    k = _kernels.get(key)
    if k is None:
        import cupy

        k = _kernels[key] = cupy.RawKernel(
            _PRELUDE.replace("TYPE", _TYPES[dtype_name]) + source, name)
    return k


def _device_table(kind: str, device: int, raw: bytes):
    """The int64 table ``raw`` on the device (flat). The copies of the last few tables are kept
    (one per parameter group and optimizer of a training loop), so a step whose addresses
    repeat copies nothing."""
    key = (kind, device, raw)
    table = _tables.get(key)
    if table is None:
        if len(_tables) >= _TABLES_KEPT:
            _tables.pop(next(iter(_tables)))
        table = _tables[key] = xp().asarray(numpy.frombuffer(raw, dtype=numpy.int64))
    return table


def _launch(kernel, device: int, count: int, max_numel: int, prepare) -> None:
    """Runs ``prepare()`` (the uploads; returns args(start), the kernel's arguments for the
    rows from ``start``) and the launches on ember's current stream of ``device``."""
    blocks = min(max(-(-max_numel // _BLOCK), 1), _MAX_BLOCKS_X)
    with _on_current_stream(device):
        args = prepare()
        for start in range(0, count, 65535):  # gridDim.y's limit
            kernel((blocks, min(count - start, 65535)), (_BLOCK,), args(start))


def _host_arrays(*lists):
    return [[view(t) for t in ts] for ts in lists]


def _fused_sgd_(name, args, kwargs):
    params, grads, bufs = args
    if not params:
        return None
    lr, wd, mom = kwargs["lr"], kwargs["weight_decay"], kwargs["momentum"]
    damp, nesterov, maximize = kwargs["dampening"], kwargs["nesterov"], kwargs["maximize"]
    first = list(kwargs["first"]) if mom != 0 else [False] * len(params)
    bufs = list(bufs) if mom != 0 else []
    if xp() is numpy:  # simulated devices: the kernel's expressions, element-wise in NumPy
        ps, gs, bs = _host_arrays(params, grads, bufs)
        for i, (p, g) in enumerate(zip(ps, gs)):
            t = p.dtype.type
            d = -g if maximize else g.copy()
            if wd != 0:
                d += t(wd) * p
            if mom != 0:
                m = d.copy() if first[i] else t(mom) * bs[i] + (t(1) - t(damp)) * d
                bs[i][...] = m
                d = d + t(mom) * m if nesterov else m
            p -= t(lr) * d
        return None
    raw = kwargs["table"]
    device = params[0].get_device()
    kernel = _kernel("ember_fused_sgd", _SGD, params[0].dtype.name)

    def prepare():
        table = _device_table("sgd", device, raw)
        return lambda s: (table[5 * s:], numpy.float64(lr), numpy.float64(wd),
                          numpy.float64(mom), numpy.float64(damp), numpy.int32(nesterov),
                          numpy.int32(maximize))

    _launch(kernel, device, len(params), kwargs["max_numel"], prepare)
    return None


def _fused_adam_(name, args, kwargs):
    params, grads, m1, m2, mx = args
    if not params:
        return None
    lr, beta1, beta2, eps = kwargs["lr"], kwargs["beta1"], kwargs["beta2"], kwargs["eps"]
    wd, amsgrad = kwargs["weight_decay"], kwargs["amsgrad"]
    maximize, decoupled = kwargs["maximize"], kwargs["decoupled"]
    scalars = numpy.frombuffer(kwargs["scalars"], dtype=numpy.float64)
    mx = list(mx) if amsgrad else []
    mode = 0 if wd == 0 else 2 if decoupled else 1
    if xp() is numpy:  # simulated devices: the kernel's expressions, element-wise in NumPy
        ps, gs, a1, a2, ax = _host_arrays(params, grads, m1, m2, mx)
        for i, (p, g) in enumerate(zip(ps, gs)):
            t = p.dtype.type
            ss, bc = t(scalars[2 * i]), t(scalars[2 * i + 1])
            d = -g if maximize else g.copy()
            pk = p.copy()
            if mode == 1:
                d += t(wd) * pk
            if mode == 2:
                pk *= t(1.0 - lr * wd)
            a = a1[i] + t(1.0 - beta1) * (d - a1[i])
            v = a2[i] * t(beta2) + t(1.0 - beta2) * d * d
            a1[i][...] = a
            a2[i][...] = v
            if amsgrad:
                v = numpy.maximum(ax[i], v)
                ax[i][...] = v
            p[...] = pk - ss * (a / (numpy.sqrt(v) / bc + t(eps)))
        return None
    raw = kwargs["table"]
    device = params[0].get_device()
    kernel = _kernel("ember_fused_adam", _ADAM, params[0].dtype.name)

    def prepare():
        table = _device_table("adam", device, raw)
        scal = xp().asarray(scalars)  # new values every step
        return lambda s: (table[6 * s:], scal[2 * s:], numpy.float64(beta1),
                          numpy.float64(beta2), numpy.float64(eps), numpy.float64(wd),
                          numpy.float64(lr), numpy.int32(mode), numpy.int32(amsgrad),
                          numpy.int32(maximize))

    _launch(kernel, device, len(params), kwargs["max_numel"], prepare)
    return None


OPTIM_OPS = {"_fused_sgd_": _fused_sgd_, "_fused_adam_": _fused_adam_}
