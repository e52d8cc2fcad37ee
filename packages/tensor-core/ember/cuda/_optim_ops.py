"""ember.optim's fused updates (``_C._fused_sgd_``, ``_C._fused_adam_``) on CUDA tensors,
registered in ``_ops.OPS``.

The composed update (``_sgd_foreach``) launches five kernels per parameter: 805 launches per
ResNet-50 step, 4.5 ms of host time on an H200 against torch's 1 ms. Here one kernel launch
updates a whole parameter group: a table of the tensors' addresses (one row per parameter,
``blockIdx.y``) is copied to the device, and kept while the addresses stay the same (a training
step allocates in the same order every step). The arithmetic is the CPU kernels'
(ops/optim_kernels.cpp): the same expressions in the parameters' dtype, per-parameter Adam
scalars computed in double on the host.

Over ember.cuda's simulated devices (host memory, NumPy) the CPU kernels run on the same memory.
"""

from __future__ import annotations

import math

import numpy

from ember import _C
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
_tables: dict = {}  # (kernel, device) -> (host table bytes, its device copy): the last one


def _kernel(name: str, source: str, dtype_name: str):
    key = (name, dtype_name)
    k = _kernels.get(key)
    if k is None:
        import cupy

        k = _kernels[key] = cupy.RawKernel(
            _PRELUDE.replace("TYPE", _TYPES[dtype_name]) + source, name)
    return k


def _device_table(kind: str, device: int, host: numpy.ndarray):
    """``host`` on the device, reusing the last copy while the addresses are the same."""
    key = (kind, device)
    raw = host.tobytes()
    cached = _tables.get(key)
    if cached is not None and cached[0] == raw:
        return cached[1]
    table = xp().asarray(host)
    _tables[key] = (raw, table)
    return table


def _check(op: str, params, named) -> int:
    """The CPU kernels' checks, for one CUDA device: returns the device."""
    device = None
    for i, p in enumerate(params):
        if p is None:
            raise ValueError(f"{op}: params[{i}] is None")
        if p.dtype not in (_C.float32, _C.float64):
            raise TypeError(f"{op}: params[{i}] must be float32 or float64, got "
                            f"{p.dtype._torch_name}")
        if p.dtype != params[0].dtype:
            raise TypeError(f"{op}: all parameters of one call must share a dtype")
        if device is None:
            device = p.get_device()
        if p.get_device() != device or device < 0:
            raise ValueError(f"{op}: params[{i}] must be on cuda:{max(device, 0)}, got "
                             f"{p.device}")
        if not p.is_contiguous():
            raise ValueError(f"{op}: params[{i}] must be contiguous")
    for what, ts, strided_ok in named:
        if len(ts) != len(params):
            raise ValueError(f"{op}: expected {len(params)} {what}, got {len(ts)}")
        for i, (t, p) in enumerate(zip(ts, params)):
            if t is None:
                raise ValueError(f"{op}: {what}[{i}] is None")
            if t.get_device() != device:
                raise ValueError(f"{op}: {what}[{i}] must be on cuda:{device}, got {t.device}")
            if t.dtype != p.dtype:
                raise TypeError(f"{op}: {what}[{i}] has dtype {t.dtype._torch_name} but the "
                                f"parameter has {p.dtype._torch_name}")
            if tuple(t.shape) != tuple(p.shape):
                raise ValueError(f"{op}: {what}[{i}] has shape {list(t.shape)} but the "
                                 f"parameter has {list(p.shape)}")
            if not strided_ok and not t.is_contiguous():
                raise ValueError(f"{op}: {what}[{i}] must be contiguous")
    return device if device is not None else -1


def _on_host(t):
    """A CPU tensor over a simulated device's memory (host memory): the CPU kernels write it."""
    return _C.from_numpy(view(t))


def _launch(kernel, device: int, count: int, sizes, args) -> None:
    blocks = min(max(-(-max(sizes, default=1) // _BLOCK), 1), _MAX_BLOCKS_X)
    with _on_current_stream(device):
        for start in range(0, count, 65535):  # gridDim.y's limit
            n = min(count - start, 65535)
            kernel((blocks, n), (_BLOCK,), args(start))


def _fused_sgd_(name, args, kwargs):
    params, grads, bufs = args
    bufs = list(bufs) if bufs is not None else []
    first = list(kwargs["first"])
    lr, wd, mom = kwargs["lr"], kwargs["weight_decay"], kwargs["momentum"]
    damp, nesterov, maximize = kwargs["dampening"], kwargs["nesterov"], kwargs["maximize"]
    named = [("grads", grads, True)] + ([("momentum_buffers", bufs, False)] if mom != 0 else [])
    device = _check(name, params, named)
    if mom != 0 and len(first) != len(params):
        raise ValueError(f"{name}: expected {len(params)} first-step flags, got {len(first)}")
    if not params:
        return None
    grads = [g if g.is_contiguous() else g.contiguous() for g in grads]
    if xp() is numpy:  # simulated devices: the CPU kernel on the same memory
        _C._fused_sgd_([_on_host(p) for p in params], [_on_host(g) for g in grads],
                       [_on_host(b) for b in bufs] if mom != 0 else None, first, lr=lr,
                       weight_decay=wd, momentum=mom, dampening=damp, nesterov=nesterov,
                       maximize=maximize)
    else:
        host = numpy.array([[p.data_ptr(), g.data_ptr(), bufs[i].data_ptr() if mom != 0 else 0,
                             p.numel(), int(bool(first[i])) if mom != 0 else 0]
                            for i, (p, g) in enumerate(zip(params, grads))], dtype=numpy.int64)
        table = _device_table("sgd", device, host)
        kernel = _kernel("ember_fused_sgd", _SGD, params[0].dtype.name)
        _launch(kernel, device, len(params), [p.numel() for p in params], lambda s: (
            table[s:], numpy.float64(lr), numpy.float64(wd), numpy.float64(mom),
            numpy.float64(damp), numpy.int32(nesterov), numpy.int32(maximize)))
    for t in params + (bufs if mom != 0 else []):
        t._bump_version()
    return None


def _fused_adam_(name, args, kwargs):
    params, grads, m1, m2, mx, steps = args
    mx = list(mx) if mx is not None else []
    lr, beta1, beta2, eps = kwargs["lr"], kwargs["beta1"], kwargs["beta2"], kwargs["eps"]
    wd, amsgrad = kwargs["weight_decay"], kwargs["amsgrad"]
    maximize, decoupled = kwargs["maximize"], kwargs["decoupled"]
    named = [("grads", grads, True), ("exp_avgs", m1, False), ("exp_avg_sqs", m2, False)]
    if amsgrad:
        named.append(("max_exp_avg_sqs", mx, False))
    device = _check(name, params, named)
    if len(steps) != len(params):
        raise ValueError(f"{name}: expected {len(params)} step tensors, got {len(steps)}")
    for i, s in enumerate(steps):
        if not (s.numel() == 1 and s.get_device() < 0 and s.dtype in (_C.float32, _C.float64)):
            raise ValueError(f"{name}: steps[{i}] must be a one-element float CPU tensor")
    grads = [g if g.is_contiguous() else g.contiguous() for g in grads]
    if xp() is numpy:  # simulated devices: the CPU kernel on the same memory
        _C._fused_adam_([_on_host(p) for p in params], [_on_host(g) for g in grads],
                        [_on_host(t) for t in m1], [_on_host(t) for t in m2],
                        [_on_host(t) for t in mx] if amsgrad else None, list(steps), lr=lr,
                        beta1=beta1, beta2=beta2, eps=eps, weight_decay=wd, amsgrad=amsgrad,
                        maximize=maximize, decoupled=decoupled)
    else:
        scalars = []
        for s in steps:  # the CPU kernel's per-parameter scalars, in double
            with_step = s.add_(1).item()
            scalars.append((lr / (1.0 - beta1 ** with_step), math.sqrt(1.0 - beta2 ** with_step)))
        if params:
            host = numpy.array([[p.data_ptr(), g.data_ptr(), a.data_ptr(), b.data_ptr(),
                                 mx[i].data_ptr() if amsgrad else 0, p.numel()]
                                for i, (p, g, a, b) in enumerate(zip(params, grads, m1, m2))],
                               dtype=numpy.int64)
            table = _device_table("adam", device, host)
            scal = xp().asarray(numpy.array(scalars, dtype=numpy.float64))
            mode = 0 if wd == 0 else 2 if decoupled else 1
            kernel = _kernel("ember_fused_adam", _ADAM, params[0].dtype.name)
            _launch(kernel, device, len(params), [p.numel() for p in params], lambda s: (
                table[s:], scal[s:], numpy.float64(beta1), numpy.float64(beta2),
                numpy.float64(eps), numpy.float64(wd), numpy.float64(lr), numpy.int32(mode),
                numpy.int32(amsgrad), numpy.int32(maximize)))
    for t in params + list(m1) + list(m2) + (mx if amsgrad else []):
        t._bump_version()
    return None


OPTIM_OPS = {"_fused_sgd_": _fused_sgd_, "_fused_adam_": _fused_adam_}
