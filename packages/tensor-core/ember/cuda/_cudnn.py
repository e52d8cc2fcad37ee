"""cuDNN's convolutions and batch norm for CUDA tensors, through its C API loaded at run time.

CuPy 14 dropped its cuDNN bindings, so ember calls the library itself: ``libcudnn.so.9`` from the
``nvidia-cudnn-cu12``/``-cu13`` wheel (which PyTorch and JAX install too), or ``$EMBER_CUDNN``, or
the system's. Nothing here is needed: without cuDNN, or where it refuses a case, the ops of
``_nn_ops.py`` run their im2col + cuBLAS kernels instead, and ``ember.backends.cudnn`` reports
what happened (``is_available()``, ``version()``, ``_unavailable_reason()``).

- Convolution: the legacy descriptor API (still cuDNN 9's), one plan per shape signature that
  holds the descriptors and, per direction (forward, backward data, backward filter), the
  algorithm: cuDNN's heuristics, or with ``ember.backends.cudnn.benchmark`` its timed search, as
  torch. float32 may use TF32 tensor cores unless ``ember.backends.cudnn.allow_tf32`` is False
  (torch's default and flag); ``deterministic`` (or ``ember.use_deterministic_algorithms``) keeps
  to deterministic algorithms. A transposed convolution is the backward-data pass of the plain
  one, as in torch.
- Batch norm: cuDNN's spatial batch norm (training forward with the running statistics updated
  in place, inference forward, training backward from the saved mean and inverse std).

Workspaces come from ember's caching allocator, and every call runs on ember's current stream.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading

from ember import _C
from ember._global_flags import are_deterministic_algorithms_enabled
from ember.backends import cudnn as flags

_c_int_p = ctypes.POINTER(ctypes.c_int)
_VOIDP, _INT, _DBL, _SIZE = ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_size_t

# cudnn_graph.h / cudnn_ops.h / cudnn_cnn.h enumerations (stable C ABI values)
_DATA = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 9}
_DEFAULT_MATH, _TENSOR_OP_MATH, _TENSOR_OP_MATH_ALLOW_CONVERSION, _FMA_MATH = 0, 1, 2, 3
_NCHW, _CROSS_CORRELATION, _BATCHNORM_SPATIAL, _DETERMINISTIC = 0, 1, 1, 1


class _AlgoPerf(ctypes.Structure):
    """cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t (one layout for the three)."""

    _fields_ = [("algo", _INT), ("status", _INT), ("time", ctypes.c_float), ("memory", _SIZE),
                ("determinism", _INT), ("mathType", _INT), ("reserved", _INT * 3)]


# name -> argument types (every function returns cudnnStatus_t)
_SIGNATURES = {
    "cudnnGetVersion": [],
    "cudnnCreate": [ctypes.POINTER(_VOIDP)],
    "cudnnSetStream": [_VOIDP, _VOIDP],
    "cudnnCreateTensorDescriptor": [ctypes.POINTER(_VOIDP)],
    "cudnnSetTensorNdDescriptor": [_VOIDP, _INT, _INT, _c_int_p, _c_int_p],
    "cudnnCreateFilterDescriptor": [ctypes.POINTER(_VOIDP)],
    "cudnnSetFilterNdDescriptor": [_VOIDP, _INT, _INT, _INT, _c_int_p],
    "cudnnCreateConvolutionDescriptor": [ctypes.POINTER(_VOIDP)],
    "cudnnSetConvolutionNdDescriptor": [_VOIDP, _INT, _c_int_p, _c_int_p, _c_int_p, _INT, _INT],
    "cudnnSetConvolutionGroupCount": [_VOIDP, _INT],
    "cudnnSetConvolutionMathType": [_VOIDP, _INT],
    "cudnnGetConvolutionForwardAlgorithm_v7":
        [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT, _c_int_p, ctypes.POINTER(_AlgoPerf)],
    "cudnnFindConvolutionForwardAlgorithm":
        [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT, _c_int_p, ctypes.POINTER(_AlgoPerf)],
    "cudnnGetConvolutionForwardWorkspaceSize":
        [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT, ctypes.POINTER(_SIZE)],
    "cudnnConvolutionForward": [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT,
                                _VOIDP, _SIZE, _VOIDP, _VOIDP, _VOIDP],
    "cudnnGetConvolutionBackwardDataAlgorithm_v7":
        [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT, _c_int_p, ctypes.POINTER(_AlgoPerf)],
    "cudnnFindConvolutionBackwardDataAlgorithm":
        [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT, _c_int_p, ctypes.POINTER(_AlgoPerf)],
    "cudnnGetConvolutionBackwardDataWorkspaceSize":
        [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT, ctypes.POINTER(_SIZE)],
    "cudnnConvolutionBackwardData": [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP,
                                     _INT, _VOIDP, _SIZE, _VOIDP, _VOIDP, _VOIDP],
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7":
        [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT, _c_int_p, ctypes.POINTER(_AlgoPerf)],
    "cudnnFindConvolutionBackwardFilterAlgorithm":
        [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT, _c_int_p, ctypes.POINTER(_AlgoPerf)],
    "cudnnGetConvolutionBackwardFilterWorkspaceSize":
        [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _INT, ctypes.POINTER(_SIZE)],
    "cudnnConvolutionBackwardFilter": [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP,
                                       _INT, _VOIDP, _SIZE, _VOIDP, _VOIDP, _VOIDP],
    "cudnnConvolutionBackwardBias": [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP],
    "cudnnAddTensor": [_VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP],
    "cudnnDeriveBNTensorDescriptor": [_VOIDP, _VOIDP, _INT],
    "cudnnBatchNormalizationForwardTraining":
        [_VOIDP, _INT, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP,
         _DBL, _VOIDP, _VOIDP, _DBL, _VOIDP, _VOIDP],
    "cudnnBatchNormalizationForwardInference":
        [_VOIDP, _INT, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP,
         _VOIDP, _VOIDP, _DBL],
    "cudnnBackendCreateDescriptor": [_INT, ctypes.POINTER(_VOIDP)],
    "cudnnBackendDestroyDescriptor": [_VOIDP],
    "cudnnBackendSetAttribute": [_VOIDP, _INT, _INT, ctypes.c_int64, _VOIDP],
    "cudnnBackendGetAttribute": [_VOIDP, _INT, _INT, ctypes.c_int64,
                                 ctypes.POINTER(ctypes.c_int64), _VOIDP],
    "cudnnBackendFinalize": [_VOIDP],
    "cudnnBackendExecute": [_VOIDP, _VOIDP, _VOIDP],
    "cudnnGetBatchNormalizationBackwardExWorkspaceSize":
        [_VOIDP, _INT, _INT, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP,
         ctypes.POINTER(_SIZE)],
    "cudnnGetBatchNormalizationTrainingExReserveSpaceSize":
        [_VOIDP, _INT, _INT, _VOIDP, _VOIDP, ctypes.POINTER(_SIZE)],
    "cudnnBatchNormalizationBackwardEx":
        [_VOIDP, _INT, _INT, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP,
         _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP,
         _VOIDP, _DBL, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _SIZE, _VOIDP, _SIZE],
    "cudnnBatchNormalizationBackward":
        [_VOIDP, _INT, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP,
         _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _DBL, _VOIDP, _VOIDP],
}

_state = {"lib": None, "reason": None, "version": None}
_functions: dict = {}  # name -> the library's function, its argument types set
_local = threading.local()  # handles: one per thread and device (cuDNN's rule)
_lock = threading.Lock()


def _candidates():
    env = os.environ.get("EMBER_CUDNN")
    if env:
        yield env
        return
    try:
        import nvidia.cudnn as wheel  # nvidia-cudnn-cu12 / -cu13
        for d in list(getattr(wheel, "__path__", [])):
            yield os.path.join(d, "lib", "libcudnn.so.9")
    except ImportError:
        pass
    yield "libcudnn.so.9"


def _preload_beside(path: str) -> None:
    """libcudnn.so.9 opens its sub-libraries (graph, ops, cnn, engines) by name: load the ones
    in its folder first, globally, with the CUDA libraries they need from NVIDIA's wheels."""
    try:
        import nvidia
        for pkg in ("cublas", "cuda_nvrtc"):
            for d in getattr(nvidia, "__path__", []):
                for lib in sorted(glob.glob(os.path.join(d, pkg, "lib", "lib*.so*"))):
                    try:
                        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
                    except OSError:
                        pass
    except ImportError:
        pass
    folder = os.path.dirname(path)
    if not folder:
        return
    order = ("graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops",
             "cnn", "adv")
    for part in order:
        for lib in glob.glob(os.path.join(folder, f"libcudnn_{part}.so*")):
            try:
                ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass


def _load():
    if _state["lib"] is not None:  # every op asks: no lock once loaded
        return _state["lib"]
    with _lock:
        if _state["lib"] is not None or _state["reason"] is not None:
            return _state["lib"]
        errors = []
        for path in _candidates():
            if os.path.sep in path and not os.path.exists(path):
                errors.append(f"{path}: not found")
                continue
            try:
                _preload_beside(path)
                lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                for name, argtypes in _SIGNATURES.items():
                    fn = getattr(lib, name)
                    fn.argtypes = argtypes
                    fn.restype = _SIZE if name == "cudnnGetVersion" else _INT
                    _functions[name] = fn
                lib.cudnnGetErrorString.argtypes = [_INT]
                lib.cudnnGetErrorString.restype = ctypes.c_char_p
            except (OSError, AttributeError) as e:
                errors.append(f"{path}: {e}")
                continue
            _state["lib"], _state["version"] = lib, int(lib.cudnnGetVersion())
            return lib
        _state["reason"] = "cuDNN 9 not found (pip install nvidia-cudnn-cu12 or -cu13, or set " \
                           "EMBER_CUDNN to libcudnn.so.9): " + "; ".join(errors)
        return None


def available() -> bool:
    """cuDNN loads, and the CUDA backend is a real GPU (not ember's simulated devices)."""
    if _C._cuda_backend_name() != "cudart":
        return False
    return _load() is not None


def version():
    """cuDNN's version as torch.backends.cudnn.version() gives it (e.g. 91900), or None."""
    return _state["version"] if available() else None


def unavailable_reason() -> str:
    backend = _C._cuda_backend_name()
    if backend == "host":
        return "ember.cuda runs on simulated devices (no GPU)"
    if backend != "cudart":
        return "no CUDA GPU"
    _load()
    return _state["reason"] or ""


class Unsupported(RuntimeError):
    """cuDNN does not do this case (a CUDNN_STATUS_NOT_SUPPORTED* status, or no algorithm): the
    callers run ember's own kernels instead."""


def _check(status: int, what: str) -> None:
    if status != 0:
        message = _state["lib"].cudnnGetErrorString(status).decode()
        kind = Unsupported if 3000 <= status < 4000 else RuntimeError
        raise kind(f"cuDNN error: {message} (status {status}, in {what})")


def _call(name: str, *args) -> None:
    _check(_functions[name](*args), name)


class _on_device:
    """Makes `device` the current CUDA device for the duration (cuDNN works on the current one)."""

    __slots__ = ("device", "previous")

    def __init__(self, device: int) -> None:
        self.device, self.previous = device, None

    def __enter__(self):
        current = _C._cuda_get_device()
        if current != self.device:
            self.previous = current
            _C._cuda_set_device(self.device)

    def __exit__(self, *exc):
        if self.previous is not None:
            _C._cuda_set_device(self.previous)
        return False


def _on_its_device(fn):
    """fn(..., device) run with `device` current."""

    @functools.wraps(fn)
    def run(*args):
        with _on_device(args[-1]):
            return fn(*args)

    return run


def _ints(values):
    return (_INT * len(values))(*values)


def _handle(device: int):
    """This thread's handle for `device`, set to ember's current stream. The op's device is the
    current one: the callers run inside ``_on_device``."""
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    entry = handles.get(device)
    if entry is None:
        h = _VOIDP()
        _call("cudnnCreate", ctypes.byref(h))
        entry = handles[device] = [h, None]
    stream = _C._cuda_current_stream(device)
    if entry[1] != stream:
        _call("cudnnSetStream", entry[0], _VOIDP(stream))
        entry[1] = stream
    return entry[0]


# ---- descriptors -------------------------------------------------------------------------------

_tensor_descs: dict = {}


def _contiguous_strides(shape):
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return strides[::-1]


def _tensor_desc(dtype_name: str, shape):
    """A packed NCHW (or NCDHW) descriptor; cached, as descriptors are only host structures."""
    key = (dtype_name, tuple(shape))
    d = _tensor_descs.get(key)
    if d is None:
        d = _VOIDP()
        _call("cudnnCreateTensorDescriptor", ctypes.byref(d))
        _call("cudnnSetTensorNdDescriptor", d, _DATA[dtype_name], len(shape), _ints(shape),
              _ints(_contiguous_strides(shape)))
        _tensor_descs[key] = d
    return d


_ONE_ZERO = {ctypes.c_float: (ctypes.c_float(1.0), ctypes.c_float(0.0)),
             ctypes.c_double: (ctypes.c_double(1.0), ctypes.c_double(0.0))}


def _scalars(dtype_name: str):
    """(one, zero) as the host scalars cuDNN's alpha/beta point to: double for double data."""
    one, zero = _ONE_ZERO[ctypes.c_double if dtype_name == "float64" else ctypes.c_float]
    return ctypes.byref(one), ctypes.byref(zero)


# ---- convolution -------------------------------------------------------------------------------

_FWD, _BWD_DATA, _BWD_FILTER = "Forward", "BackwardData", "BackwardFilter"


class _ConvPlan:
    """Descriptors of one convolution (big: the plain convolution's input side, small: its output
    side) and the algorithm chosen per direction."""

    def __init__(self, key, big, w, small, padding, stride, dilation, groups, dtype_name, math,
                 deterministic):
        self.key = key
        self.deterministic = deterministic
        self.dtype = dtype_name
        self.big = _tensor_desc(dtype_name, big)
        self.small = _tensor_desc(dtype_name, small)
        self.w = _VOIDP()
        _call("cudnnCreateFilterDescriptor", ctypes.byref(self.w))
        _call("cudnnSetFilterNdDescriptor", self.w, _DATA[dtype_name], _NCHW, len(w), _ints(w))
        self.geometry = (padding, stride, dilation, groups)
        self.shapes = (list(big), list(w), list(small))
        self.math = math
        self.algos = {}  # direction -> (conv descriptor, algo, workspace bytes)
        self.graphs = {}  # direction -> _GraphPlan, or False where the graph API refused it

    def _conv_desc(self, math: int):
        padding, stride, dilation, groups = self.geometry
        d = _VOIDP()
        _call("cudnnCreateConvolutionDescriptor", ctypes.byref(d))
        compute = _DATA["float64"] if self.dtype == "float64" else _DATA["float32"]
        _call("cudnnSetConvolutionNdDescriptor", d, len(padding), _ints(padding), _ints(stride),
              _ints(dilation), _CROSS_CORRELATION, compute)
        _call("cudnnSetConvolutionGroupCount", d, groups)
        _call("cudnnSetConvolutionMathType", d, math)
        return d

    def _operands(self, direction):
        """The descriptors of direction's (a, b -> c)."""
        if direction == _FWD:
            return (self.big, self.w, self.small)
        if direction == _BWD_DATA:
            return (self.w, self.small, self.big)
        return (self.big, self.small, self.w)

    def choose(self, handle, direction: str, skip: int = 0):
        """The algorithm for `direction` (cached): cuDNN's heuristics or its timed search, the
        first one that succeeded, is deterministic when asked, and honours allow_tf32."""
        got = self.algos.get(direction)
        if got is not None and skip == 0:
            return got
        probe = self._conv_desc(self.math)
        a, b, c = self._operands(direction)
        count = 16
        results = (_AlgoPerf * count)()
        returned = _INT(0)
        how = "Find" if flags.benchmark else "Get"
        fn = f"cudnn{how}Convolution{direction}Algorithm" + ("" if flags.benchmark else "_v7")
        _call(fn, handle, a, b, probe, c, count, ctypes.byref(returned), results)
        usable = []
        for r in results[:returned.value]:
            if r.status != 0 or (self.deterministic and r.determinism != _DETERMINISTIC):
                continue
            if self.math == _FMA_MATH and r.mathType in (_TENSOR_OP_MATH,
                                                         _TENSOR_OP_MATH_ALLOW_CONVERSION):
                continue  # TF32 not allowed
            usable.append(r)
        if len(usable) <= skip:
            raise Unsupported(f"cuDNN: no usable {direction} algorithm for this convolution")
        r = usable[skip]
        desc = self._conv_desc(r.mathType)
        size = _SIZE(0)
        _call(f"cudnnGetConvolution{direction}WorkspaceSize", handle, a, b, desc, c, r.algo,
              ctypes.byref(size))
        got = self.algos[direction] = (desc, r.algo, size.value)
        return got


_plans: dict = {}


def _math_for(dtype_name: str) -> int:
    if dtype_name == "float32":
        return _DEFAULT_MATH if flags.allow_tf32 else _FMA_MATH
    if dtype_name == "float64":
        return _DEFAULT_MATH
    return _TENSOR_OP_MATH


def _plan(big, w, small, padding, stride, dilation, groups, dtype_name):
    math = _math_for(dtype_name)
    deterministic = bool(flags.deterministic or are_deterministic_algorithms_enabled())
    key = (tuple(big), tuple(w), tuple(small), tuple(padding), tuple(stride), tuple(dilation),
           groups, dtype_name, math, flags.benchmark, deterministic)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _ConvPlan(key, big, w, small, padding, stride, dilation, groups,
                                       dtype_name, math, deterministic)
    return plan


# ---- the graph API: an execution plan per convolution, built once ------------------------------
# cuDNN 9's legacy calls above rebuild much of their plan on every call (about 0.1 ms of host
# time each, measured on an H200), which leaves a training step host-bound. The graph (backend)
# API builds an execution plan once per shape; a call is then one variant pack and one execute,
# as torch's cuDNN v8+ path does. The legacy calls remain for what the graph path does not take
# (benchmark mode, misaligned pointers, a graph cuDNN refuses).

# cudnnBackendDescriptorType_t, cudnnBackendAttributeType_t, cudnnBackendAttributeName_t
_B_ENGINE, _B_ENGINECFG, _B_ENGINEHEUR, _B_PLAN = 2, 3, 4, 5
_B_CONVOLUTION, _B_OPGRAPH, _B_VARIANT_PACK, _B_TENSOR = 1, 15, 16, 17
_B_OPERATION = {"Forward": 10, "BackwardFilter": 11, "BackwardData": 12}
_T_HANDLE, _T_DATA_TYPE, _T_INT64, _T_FLOAT, _T_DOUBLE, _T_VOID_PTR = 0, 1, 3, 4, 5, 6
_T_CONV_MODE, _T_HEUR_MODE, _T_NUMERICAL_NOTE, _T_DESCRIPTOR = 7, 8, 11, 15
_A_CONV_COMP_TYPE, _A_CONV_MODE, _A_CONV_DILATIONS, _A_CONV_STRIDES = 100, 101, 102, 103
_A_CONV_POST_PAD, _A_CONV_PRE_PAD, _A_CONV_SPATIAL_DIMS = 104, 105, 106
_A_HEUR_MODE, _A_HEUR_GRAPH, _A_HEUR_RESULTS, _A_CFG_ENGINE = 200, 201, 202, 300
_A_PLAN_HANDLE, _A_PLAN_CFG, _A_PLAN_WORKSPACE = 400, 401, 402
_A_GRAPH_HANDLE, _A_GRAPH_OPS, _A_ENGINE_NUMERICAL_NOTE = 800, 801, 1303
_A_TENSOR_ALIGNMENT, _A_TENSOR_DATA_TYPE, _A_TENSOR_DIMS = 900, 901, 902
_A_TENSOR_STRIDES, _A_TENSOR_UID = 903, 906
_A_PACK_UIDS, _A_PACK_POINTERS, _A_PACK_WORKSPACE = 1000, 1001, 1003
# the operation's attributes: alpha, beta, conv descriptor, then its tensors by role
_A_OPERATION = {"Forward": (700, 701, 702, {"w": 703, "big": 704, "small": 705}),
                "BackwardData": (706, 707, 708, {"w": 709, "big": 710, "small": 711}),
                "BackwardFilter": (712, 713, 714, {"w": 715, "big": 716, "small": 717})}
_NOTE_TENSOR_CORE, _NOTE_DOWN_CONVERT, _NOTE_REDUCED_REDUCTION = 0, 1, 2
_NOTE_NONDETERMINISTIC = 4
_UID = {"big": 1, "w": 2, "small": 3}
# the (a, b, c) operands of _run per direction, as roles
_ROLES = {"Forward": ("big", "w", "small"), "BackwardData": ("w", "small", "big"),
          "BackwardFilter": ("big", "small", "w")}
_ALIGNMENT = 16
graph_failures: list = []  # why the graph path refused a convolution (for diagnosis)


def _backend(kind: int):
    d = _VOIDP()
    _call("cudnnBackendCreateDescriptor", kind, ctypes.byref(d))
    return d


def _set(desc, name: int, kind: int, values) -> None:
    """Sets attribute `name` to `values` (a ctypes array, or one ctypes value)."""
    count = len(values) if isinstance(values, ctypes.Array) else 1
    ref = values if isinstance(values, ctypes.Array) else ctypes.byref(values)
    _call("cudnnBackendSetAttribute", desc, name, kind, count, ref)


def _int64s(values):
    return (ctypes.c_int64 * len(values))(*values)


class _GraphPlan:
    """One direction of one convolution as a finalized cuDNN execution plan."""

    def __init__(self, conv: _ConvPlan, direction: str, handle) -> None:
        dt = _DATA[conv.dtype]
        compute = _DATA["float64"] if conv.dtype == "float64" else _DATA["float32"]
        keep = []  # descriptors referenced by others stay alive with the plan
        tensors = {}
        for role, shape in zip(("big", "w", "small"), conv.shapes):
            t = _backend(_B_TENSOR)
            _set(t, _A_TENSOR_DATA_TYPE, _T_DATA_TYPE, _INT(dt))
            _set(t, _A_TENSOR_DIMS, _T_INT64, _int64s(shape))
            _set(t, _A_TENSOR_STRIDES, _T_INT64, _int64s(_contiguous_strides(shape)))
            _set(t, _A_TENSOR_UID, _T_INT64, ctypes.c_int64(_UID[role]))
            _set(t, _A_TENSOR_ALIGNMENT, _T_INT64, ctypes.c_int64(_ALIGNMENT))
            _call("cudnnBackendFinalize", t)
            tensors[role] = t
            keep.append(t)
        padding, stride, dilation, _ = conv.geometry
        c = _backend(_B_CONVOLUTION)
        _set(c, _A_CONV_COMP_TYPE, _T_DATA_TYPE, _INT(compute))
        _set(c, _A_CONV_MODE, _T_CONV_MODE, _INT(_CROSS_CORRELATION))
        _set(c, _A_CONV_SPATIAL_DIMS, _T_INT64, ctypes.c_int64(len(padding)))
        _set(c, _A_CONV_DILATIONS, _T_INT64, _int64s(dilation))
        _set(c, _A_CONV_STRIDES, _T_INT64, _int64s(stride))
        _set(c, _A_CONV_PRE_PAD, _T_INT64, _int64s(padding))
        _set(c, _A_CONV_POST_PAD, _T_INT64, _int64s(padding))
        _call("cudnnBackendFinalize", c)
        keep.append(c)
        alpha_attr, beta_attr, conv_attr, roles = _A_OPERATION[direction]
        op = _backend(_B_OPERATION[direction])
        scalar, kind = (ctypes.c_double, _T_DOUBLE) if conv.dtype == "float64" else \
            (ctypes.c_float, _T_FLOAT)
        _set(op, alpha_attr, kind, scalar(1.0))
        _set(op, beta_attr, kind, scalar(0.0))
        _set(op, conv_attr, _T_DESCRIPTOR, c)
        for role, attr in roles.items():
            _set(op, attr, _T_DESCRIPTOR, tensors[role])
        _call("cudnnBackendFinalize", op)
        keep.append(op)
        graph = _backend(_B_OPGRAPH)
        _set(graph, _A_GRAPH_OPS, _T_DESCRIPTOR, op)
        _set(graph, _A_GRAPH_HANDLE, _T_HANDLE, handle)
        _call("cudnnBackendFinalize", graph)
        keep.append(graph)
        self.plan, self.workspace = self._first_plan(graph, conv, handle, keep)
        self.uids = _int64s([_UID[r] for r in _ROLES[direction]])
        self.keep = keep
        self.packs: dict = {}  # (pointers of a, b, c, workspace) -> a finalized variant pack

    @staticmethod
    def _first_plan(graph, conv: _ConvPlan, handle, keep):
        """The first engine configuration of cuDNN's heuristics that obeys the flags and
        finalizes into a plan: (plan, workspace bytes)."""
        heur = _backend(_B_ENGINEHEUR)
        _set(heur, _A_HEUR_GRAPH, _T_DESCRIPTOR, graph)
        _set(heur, _A_HEUR_MODE, _T_HEUR_MODE, _INT(0))  # CUDNN_HEUR_MODE_INSTANT, as torch
        _call("cudnnBackendFinalize", heur)
        keep.append(heur)
        count = ctypes.c_int64(0)
        _call("cudnnBackendGetAttribute", heur, _A_HEUR_RESULTS, _T_DESCRIPTOR, 0,
              ctypes.byref(count), None)
        n = min(count.value, 32)
        cfgs = (_VOIDP * max(n, 1))()
        for i in range(n):
            cfgs[i] = _backend(_B_ENGINECFG)
        keep.extend(cfgs[:n])
        got = ctypes.c_int64(0)
        _call("cudnnBackendGetAttribute", heur, _A_HEUR_RESULTS, _T_DESCRIPTOR, n,
              ctypes.byref(got), cfgs)
        full_precision = conv.dtype in ("float32", "float64")
        for i in range(got.value):
            cfg = _VOIDP(cfgs[i])
            engine = _backend(_B_ENGINE)
            keep.append(engine)
            notes = (_INT * 16)()
            found = ctypes.c_int64(0)
            try:
                _call("cudnnBackendGetAttribute", cfg, _A_CFG_ENGINE, _T_DESCRIPTOR, 1,
                      ctypes.byref(found), ctypes.byref(engine))
                _call("cudnnBackendGetAttribute", engine, _A_ENGINE_NUMERICAL_NOTE,
                      _T_NUMERICAL_NOTE, 16, ctypes.byref(found), notes)
            except RuntimeError:
                continue
            noted = set(notes[:found.value])
            if full_precision and noted & {_NOTE_DOWN_CONVERT, _NOTE_REDUCED_REDUCTION}:
                continue
            if conv.math == _FMA_MATH and _NOTE_TENSOR_CORE in noted:
                continue  # TF32 not allowed
            if conv.deterministic and _NOTE_NONDETERMINISTIC in noted:
                continue
            plan = _backend(_B_PLAN)
            try:
                _set(plan, _A_PLAN_HANDLE, _T_HANDLE, handle)
                _set(plan, _A_PLAN_CFG, _T_DESCRIPTOR, cfg)
                _call("cudnnBackendFinalize", plan)
                size = ctypes.c_int64(0)
                _call("cudnnBackendGetAttribute", plan, _A_PLAN_WORKSPACE, _T_INT64, 1,
                      ctypes.byref(found), ctypes.byref(size))
            except RuntimeError:
                _functions["cudnnBackendDestroyDescriptor"](plan)
                continue
            return plan, size.value
        raise Unsupported(f"cuDNN's graph API: none of {got.value} engine configurations fits")

    # A variant pack (the call's pointers) costs about as much host time as the execute itself
    # when built from Python (measured on an H200: 19 us of 40). A training step allocates its
    # tensors in the same order every step, so the caching allocator hands back the same
    # addresses: packs are kept per pointer set, a few per plan, the oldest dropped.
    PACKS_PER_PLAN = 8

    def execute(self, handle, device: int, a, b, c) -> None:
        ws = _C._cuda_empty([self.workspace], _C.uint8, device) if self.workspace else None
        wp = ws.data_ptr() if ws is not None else 0
        key = (a.data_ptr(), b.data_ptr(), c.data_ptr(), wp)
        pack = self.packs.get(key)
        if pack is None:
            pack = self._pack(*key)
            if len(self.packs) >= self.PACKS_PER_PLAN:
                _functions["cudnnBackendDestroyDescriptor"](self.packs.pop(next(iter(self.packs))))
            self.packs[key] = pack
        _call("cudnnBackendExecute", handle, self.plan, pack)

    def _pack(self, pa: int, pb: int, pc: int, pw: int):
        pack = _backend(_B_VARIANT_PACK)
        try:
            _set(pack, _A_PACK_UIDS, _T_INT64, self.uids)
            _set(pack, _A_PACK_POINTERS, _T_VOID_PTR, (_VOIDP * 3)(pa, pb, pc))
            _set(pack, _A_PACK_WORKSPACE, _T_VOID_PTR, _VOIDP(pw or None))
            _call("cudnnBackendFinalize", pack)
        except BaseException:
            _functions["cudnnBackendDestroyDescriptor"](pack)
            raise
        return pack


def _graph_plan(plan: _ConvPlan, direction: str, handle):
    """The graph path's plan for this direction, built on first use; None where it refuses."""
    g = plan.graphs.get(direction)
    if g is None:
        if flags.benchmark:  # cuDNN's timed search is the legacy calls' (cudnnFind...)
            return None
        try:
            g = _GraphPlan(plan, direction, handle)
        except RuntimeError as e:
            graph_failures.append((plan.key, direction, str(e)))
            g = False
        plan.graphs[direction] = g
    return g or None


def _run(plan: _ConvPlan, device: int, direction: str, a, b, c) -> None:
    """c = direction's op of (a, b): Forward (x, w -> y), BackwardData (w, dy -> dx),
    BackwardFilter (x, dy -> dw). Tensors contiguous, c written (beta = 0)."""
    handle = _handle(device)
    graph = _graph_plan(plan, direction, handle)
    if graph is not None and not (a.data_ptr() | b.data_ptr() | c.data_ptr()) % _ALIGNMENT:
        try:
            graph.execute(handle, device, a, b, c)
            return
        except RuntimeError as e:  # the legacy calls below, from now on
            graph_failures.append((plan.key, direction, f"execute: {e}"))
            plan.graphs[direction] = False
    one, zero = _scalars(plan.dtype)
    skip = 0
    while True:
        desc, algo, size = plan.choose(handle, direction, skip)
        try:
            ws = _C._cuda_empty([size], _C.uint8, device) if size else None
            break
        except _C.OutOfMemoryError:  # a workspace too big for what is free: the next algorithm
            skip += 1
            plan.algos.pop(direction, None)
    ad, bd, cd = plan._operands(direction)
    _call(f"cudnnConvolution{direction}", handle, one, ad, _VOIDP(a.data_ptr()), bd,
          _VOIDP(b.data_ptr()), desc, algo, _VOIDP(ws.data_ptr() if ws is not None else None),
          size, zero, cd, _VOIDP(c.data_ptr()))


def _as_2d(shape, k: int):
    """1-d convolutions run as 2-d ones with a height of 1."""
    shape = list(shape)
    return shape[:2] + [1] + shape[2:] if k == 1 else shape


def _geometry(stride, padding, dilation, k: int):
    if k == 1:
        return [0] + list(padding), [1] + list(stride), [1] + list(dilation)
    return list(padding), list(stride), list(dilation)


def usable(*tensors) -> bool:
    """cuDNN may take this call: a GPU with cuDNN, ember.backends.cudnn.enabled, one floating
    dtype cuDNN has, and no empty tensor."""
    if not flags.enabled or not available():
        return False
    dtype = None
    for t in tensors:
        if t is None:
            continue
        if t.dtype.name not in _DATA or (dtype is not None and t.dtype != dtype) or \
                t.numel() == 0:
            return False
        dtype = t.dtype
    return True


def _batched(t, k: int):
    return t if t.dim() == k + 2 else t.unsqueeze(0)


@_on_its_device
def convolution(x, w, b, stride, padding, dilation, transposed, groups, out, device: int) -> None:
    """Writes the convolution of x with w (+ b) into `out` (allocated with the op's shape)."""
    k = w.dim() - 2
    xb, ob = _batched(x, k).contiguous(), _batched(out, k)
    wc = w.contiguous()
    pad, st, dil = _geometry(stride, padding, dilation, k)
    dtype = x.dtype.name
    if transposed:
        plan = _plan(_as_2d(ob.shape, k), _as_2d(wc.shape, k), _as_2d(xb.shape, k), pad, st, dil,
                     groups, dtype)
        _run(plan, device, _BWD_DATA, wc, xb, ob)
    else:
        plan = _plan(_as_2d(xb.shape, k), _as_2d(wc.shape, k), _as_2d(ob.shape, k), pad, st, dil,
                     groups, dtype)
        _run(plan, device, _FWD, xb, wc, ob)
    if b is not None:
        one, _ = _scalars(dtype)
        channels = ob.shape[1]
        bias_shape = [1, channels] + [1] * (max(k, 2))
        _call("cudnnAddTensor", _handle(device), one, _tensor_desc(dtype, bias_shape),
              _VOIDP(b.contiguous().data_ptr()), one, _tensor_desc(dtype, _as_2d(ob.shape, k)),
              _VOIDP(ob.data_ptr()))


@_on_its_device
def convolution_backward(go, x, w, stride, padding, dilation, transposed, groups, mask,
                         device: int):
    """(grad_input, grad_weight, grad_bias) per output_mask, each a new tensor or None."""
    k = w.dim() - 2
    gob, xb = _batched(go, k).contiguous(), _batched(x, k).contiguous()
    wc = w.contiguous()
    pad, st, dil = _geometry(stride, padding, dilation, k)
    dtype = x.dtype.name
    big, small = (gob, xb) if transposed else (xb, gob)
    plan = _plan(_as_2d(big.shape, k), _as_2d(wc.shape, k), _as_2d(small.shape, k), pad, st, dil,
                 groups, dtype)
    gi = gw = gb = None
    if mask[0]:
        gi = _C._cuda_empty(list(x.shape), x.dtype, device)
        gib = _batched(gi, k)
        if transposed:  # the input gradient of a transposed convolution: a plain one
            _run(plan, device, _FWD, gob, wc, gib)
        else:
            _run(plan, device, _BWD_DATA, wc, gob, gib)
    if mask[1]:
        gw = _C._cuda_empty(list(w.shape), w.dtype, device)
        _run(plan, device, _BWD_FILTER, big, small, gw)
    if mask[2]:
        gb = _C._cuda_empty([gob.shape[1]], go.dtype, device)
        one, zero = _scalars(dtype)
        _call("cudnnConvolutionBackwardBias", _handle(device), one,
              _tensor_desc(dtype, _as_2d(gob.shape, k)), _VOIDP(gob.data_ptr()), zero,
              _tensor_desc(dtype, [1, gob.shape[1]] + [1] * max(k, 2)), _VOIDP(gb.data_ptr()))
    return gi, gw, gb


# ---- batch norm ----------------------------------------------------------------------------------

_bn_descs: dict = {}


def _bn_shape(x):
    """(N, C, *spatial) as cuDNN's 4-d or 5-d tensor."""
    shape = list(x.shape)
    while len(shape) < 4:
        shape.append(1)
    return shape


def _bn_descriptors(dtype_name: str, shape):
    key = (dtype_name, tuple(shape))
    pair = _bn_descs.get(key)
    if pair is None:
        xd = _tensor_desc(dtype_name, shape)
        bd = _VOIDP()
        _call("cudnnCreateTensorDescriptor", ctypes.byref(bd))
        _call("cudnnDeriveBNTensorDescriptor", bd, xd, _BATCHNORM_SPATIAL)
        pair = _bn_descs[key] = (xd, bd)
    return pair


def bn_param_dtype(x):
    return _C.float64 if x.dtype == _C.float64 else _C.float32


def batch_norm_usable(x, params) -> bool:
    """cuDNN's batch norm takes x (2-d to 5-d) with per-channel tensors of its parameter dtype
    (float32, float64 for float64 data), contiguous."""
    if not usable(x) or not 2 <= x.dim() <= 5 or x.shape[0] == 0:
        return False
    pd = bn_param_dtype(x)
    return all(p is None or (p.dtype == pd and p.is_contiguous() and p.get_device() >= 0)
               for p in params)


def _ptr(t):
    return _VOIDP(t.data_ptr() if t is not None else None)


_constants: dict = {}


def _constant(value: float, channels: int, dtype, device: int):
    """A read-only per-channel vector of `value` on the device (cached): the scale or shift of a
    batch norm without affine parameters. Made on the device: a copy from host memory would wait
    for the stream, serialising the host with the GPU."""
    key = (value, channels, dtype, device)
    t = _constants.get(key)
    if t is None:
        t = _constants[key] = _C._cuda_empty([channels], dtype, device).fill_(value)
    return t


@_on_its_device
def batch_norm(x, w, b, rm, rv, training: bool, momentum: float, eps: float, device: int):
    """(out, save_mean, save_invstd); the running statistics updated in place in training."""
    xc = x.contiguous()
    shape = _bn_shape(xc)
    dtype = x.dtype.name
    pd = bn_param_dtype(x)
    xd, bd = _bn_descriptors(dtype, shape)
    w = _constant(1.0, shape[1], pd, device) if w is None else w
    b = _constant(0.0, shape[1], pd, device) if b is None else b
    out = _C._cuda_empty(list(x.shape), x.dtype, device)
    one, zero = _scalars(dtype)
    handle = _handle(device)
    if not training:
        _call("cudnnBatchNormalizationForwardInference", handle, _BATCHNORM_SPATIAL, one, zero,
              xd, _ptr(xc), xd, _ptr(out), bd, _ptr(w), _ptr(b), _ptr(rm), _ptr(rv), float(eps))
        empty = _C._cuda_empty([0], pd, device)
        return out, empty, _C._cuda_empty([0], pd, device)
    mean = _C._cuda_empty([shape[1]], pd, device)
    invstd = _C._cuda_empty([shape[1]], pd, device)
    _call("cudnnBatchNormalizationForwardTraining", handle, _BATCHNORM_SPATIAL, one, zero, xd,
          _ptr(xc), xd, _ptr(out), bd, _ptr(w), _ptr(b), float(momentum), _ptr(rm), _ptr(rv),
          float(eps), _ptr(mean), _ptr(invstd))
    for running in (rm, rv):
        if running is not None:  # written in place, as the CPU's copy_ would have bumped it
            running._bump_version()
    return out, mean, invstd


_BN_OPS_BN = 0  # cudnnBatchNormOps_t: batch norm alone
_bn_workspaces: dict = {}


def _bn_backward_workspace(handle, dtype_name: str, shape):
    """The workspace bytes of cudnnBatchNormalizationBackwardEx for this shape, or None where
    only the plain call applies (the Ex form would want a reserve space from an Ex forward). The
    Ex form takes its workspace from ember's allocator; the plain one is measured to take about
    0.2 ms of host time per call on an H200."""
    key = (dtype_name, tuple(shape))
    if key not in _bn_workspaces:
        xd, bd = _bn_descriptors(dtype_name, shape)
        size, reserve = _SIZE(0), _SIZE(0)
        try:
            _call("cudnnGetBatchNormalizationTrainingExReserveSpaceSize", handle,
                  _BATCHNORM_SPATIAL, _BN_OPS_BN, None, xd, ctypes.byref(reserve))
            _call("cudnnGetBatchNormalizationBackwardExWorkspaceSize", handle, _BATCHNORM_SPATIAL,
                  _BN_OPS_BN, xd, None, xd, None, xd, bd, None, ctypes.byref(size))
            _bn_workspaces[key] = size.value if reserve.value == 0 else None
        except RuntimeError:
            _bn_workspaces[key] = None
    return _bn_workspaces[key]


@_on_its_device
def batch_norm_backward(go, x, w, save_mean, save_invstd, eps: float, mask, device: int):
    """(grad_input, grad_weight, grad_bias) of training-mode batch norm, per output_mask."""
    xc, gc = x.contiguous(), go.contiguous()
    shape = _bn_shape(xc)
    dtype = x.dtype.name
    pd = bn_param_dtype(x)
    xd, bd = _bn_descriptors(dtype, shape)
    scale = _constant(1.0, shape[1], pd, device) if w is None else w
    gi = _C._cuda_empty(list(x.shape), x.dtype, device)
    gw = _C._cuda_empty([shape[1]], pd, device)
    gb = _C._cuda_empty([shape[1]], pd, device)
    one, zero = _scalars(dtype)
    handle = _handle(device)
    workspace = _bn_backward_workspace(handle, dtype, shape)
    if workspace is not None:
        ws = _C._cuda_empty([workspace], _C.uint8, device) if workspace else None
        _call("cudnnBatchNormalizationBackwardEx", handle, _BATCHNORM_SPATIAL, _BN_OPS_BN, one,
              zero, one, zero, xd, _ptr(xc), None, None, xd, _ptr(gc), None, None, xd, _ptr(gi),
              bd, _ptr(scale), None, _ptr(gw), _ptr(gb), float(eps), _ptr(save_mean),
              _ptr(save_invstd), None, _ptr(ws), workspace, None, 0)
    else:
        _call("cudnnBatchNormalizationBackward", handle, _BATCHNORM_SPATIAL, one, zero, one,
              zero, xd, _ptr(xc), xd, _ptr(gc), xd, _ptr(gi), bd, _ptr(scale), _ptr(gw),
              _ptr(gb), float(eps), _ptr(save_mean), _ptr(save_invstd))
    out_dtype = w.dtype if w is not None else x.dtype
    if mask[1] and gw.dtype != out_dtype:
        gw = gw.to(out_dtype)
    if mask[2] and gb.dtype != out_dtype:
        gb = gb.to(out_dtype)
    return (gi if mask[0] else None, gw if mask[1] else None, gb if mask[2] else None)
